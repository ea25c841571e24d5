#!/usr/bin/env bash
# `make vsix`: packages editors/vscode into BUILD/nisa-nasm-<version>.vsix with @vscode/vsce,
# installed by this script into BUILD/vsce from the npm registry (never needed by `make test`),
# then checks the file's manifest (packaging/tests/vsix.py). The grammar packed is the one
# `nisa isa --format tmlanguage` writes from the ISA table (python.pytest checks that the
# committed copy is that output).
set -euo pipefail
BUILD=$(cd "${1:?usage: vsix.sh BUILD_DIR}" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
VERSION=$(sed -n 's/^project(nisa VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
[ -n "$VERSION" ] || { echo "vsix: no project(nisa VERSION x.y.z) in CMakeLists.txt" >&2; exit 1; }

if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  echo "vsix: installing nodejs and npm (Debian)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm
fi
# vsce 3.9 wants Node.js >= 20; Debian 12's own is 18, for which 2.32 (>= 16) is the last.
NODE_MAJOR=$(node -p 'process.versions.node.split(".")[0]')
VSCE_VERSION=3.9.2
[ "$NODE_MAJOR" -ge 20 ] || VSCE_VERSION=2.32.0
VSCE="$BUILD/vsce/node_modules/.bin/vsce"
if [ ! -x "$VSCE" ] || [ "$("$VSCE" --version)" != "$VSCE_VERSION" ]; then
  echo "vsix: installing @vscode/vsce@$VSCE_VERSION into $BUILD/vsce"
  mkdir -p "$BUILD/vsce"
  npm install --prefix "$BUILD/vsce" --no-audit --no-fund --silent "@vscode/vsce@$VSCE_VERSION"
fi

# A staging copy: the extension's files, the grammar from this build's nisa.
cmake --build "$BUILD" --target nisa >/dev/null
STAGE="$BUILD/vsix/nisa-nasm"
rm -rf "$STAGE" && mkdir -p "$STAGE"
cp -r "$SRC/editors/vscode/." "$STAGE/"
"$BUILD/cli/nisa" isa --format tmlanguage > "$STAGE/syntaxes/nasm.tmLanguage.json"
OUT="$BUILD/nisa-nasm-$VERSION.vsix"
rm -f "$OUT"
# No LICENSE (the project states none: packaging/copyright) and no repository URL yet.
(cd "$STAGE" && "$VSCE" package --skip-license --allow-missing-repository --out "$OUT")
python3=/usr/bin/python3; [ -x "$python3" ] || python3=python3
"$python3" "$SRC/packaging/tests/vsix.py" "$OUT" "$VERSION" "$SRC/editors/vscode"
