#!/usr/bin/env bash
# Installs the Debian 12 packages nisa needs, only those missing.
# Called by `make demo` / `make test`; safe to run repeatedly.
# `--bench` adds the optional benchmark packages (python3-torch for bench/torch_compare.py;
# Debian 12 has 1.13.1): only `make bench-torch` asks for them, never `make test`.
set -euo pipefail
PKGS=(cmake make g++ antlr4 libantlr4-runtime-dev libfmt-dev libboost-program-options-dev
      googletest libgtest-dev libgmock-dev libbenchmark-dev libopenblas-dev libreadline-dev
      clang-format tmux nlohmann-json3-dev pybind11-dev python3-dev python3-numpy python3-pytest
      python3-hypothesis
      python3-setuptools python3-wheel python3-build python3-venv python3-pip  # the wheel (setup.py)
      openmpi-bin libopenmpi-dev
      help2man man-db dpkg-dev)  # the man page, its test, the .deb (packaging/CMakeLists.txt)
BENCH_PKGS=(python3-torch)
for a in "$@"; do
  case "$a" in
    --bench) PKGS+=("${BENCH_PKGS[@]}") ;;
    *) echo "bootstrap: unknown option '$a' (known: --bench)" >&2; exit 1 ;;
  esac
done
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "bootstrap: installing ${missing[*]}"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
