#!/usr/bin/env bash
# The issue 12 benchmarks through `nisa run`: wall time and peak RSS (/usr/bin/time), modelled
# makespan (--stats). Usage: bench/ring/run.sh [BUILD_DIR] [WORK_DIR]
set -euo pipefail
B=${1:-build}
W=${2:-$(mktemp -d)}
N="$B/cli/nisa"
G="$B/bench/ring/ring_inputs"
run() { # name, then nisa run arguments
  local name=$1
  shift
  /usr/bin/time -f "$name: wall %e s, peak RSS %M KB" "$N" run "$@" --stats >"$W/$name.stats" 2>"$W/$name.time" || {
    cat "$W/$name.time" "$W/$name.stats"
    return 1
  }
  tail -1 "$W/$name.time"
  grep makespan "$W/$name.stats"
}
# fg_allgather, TP = 64, --lnc 2, K = 4096 bf16: M rows per rank. M = 16: the gathered result is
# 1024 x 4096. M = 1024, the issue's shape: every rank holds the 64 x 1024 x 4096 result (512
# MiB), 32.5 GiB of HBM in all, more than the host's RAM: --hbm-spill (auto) keeps it in files
# of the work directory, and the output .npy is 32 GiB too; skipped with less than 72 GiB free.
# Each rank's gathered result must equal the concatenated inputs (= the data of lhs64.npy).
for M in 16 1024; do
  if [ "$M" = 1024 ] && [ "$(df -k --output=avail "$W" | tail -1)" -lt $((72 << 20)) ]; then
    echo "fg_allgather_tp64_m1024: skipped, less than 72 GiB free in $W"
    continue
  fi
  "$G" "$W/lhs64.npy" 64 "$M" 4096 1
  TMPDIR="$W" run "fg_allgather_tp64_m${M}" kernels_asm/fg_allgather.nasm --ranks 64 --lnc 2 -D M="$M" \
    -D K=4096 -D TP=64 -D NUM_GROUPS=1 -D FORCE_HBM=0 -D DT=bf16 --in lhs="$W/lhs64.npy" \
    --out out="$W/out64.npy"
  bytes=$((M * 4096 * 2 * 64))
  for r in $(seq 0 63); do
    cmp -n "$bytes" -i "128:$((128 + r * bytes))" "$W/lhs64.npy" "$W/out64.npy" >/dev/null ||
      { echo "fg_allgather_tp64_m${M}: rank $r's result differs from the concatenated inputs"; exit 1; }
  done
  echo "fg_allgather_tp64_m${M}: every rank's result equals the concatenated inputs"
  rm -f "$W/out64.npy" "$W/lhs64.npy"
done
# fgcc, TP = 4, --lnc 2, M = 1024, K = 4096 bf16: N = 1024 (RHS resident in SBUF, 2 x 8 MiB) and
# N = 4096, the issue's shape (2 x 32 MiB over the 16 MiB budget: RHS streamed from HBM).
"$G" "$W/lhs4.npy" 4 1024 4096 2
for NN in 1024 4096; do
  "$G" "$W/rhs4.npy" 4 4096 "$NN" 3
  run "fgcc_tp4_n$NN" kernels_asm/fgcc.nasm --ranks 4 --lnc 2 -D M=1024 -D K=4096 -D N="$NN" -D TP=4 \
    -D NUM_GROUPS=1 -D FORCE_HBM=0 -D DT=bf16 --in lhs="$W/lhs4.npy" --in rhs="$W/rhs4.npy" --out out="$W/out4.npy"
  # the result against the matmul in double, on 64 random rows of every rank
  "$B/bench/ring/fgcc_check" "$W/lhs4.npy" "$W/rhs4.npy" "$W/out4.npy" 4 64 1
  rm -f "$W/out4.npy"
done
