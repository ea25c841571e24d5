#!/usr/bin/env bash
# make demo: assemble, disassemble and run the default example, checked against a reference.
set -euo pipefail
BUILD=${1:-build}
OUT="$BUILD/demo"
mkdir -p "$OUT"
exec "$BUILD/tools/nisa-demo" "$BUILD/cli/nisa" "$(pwd)" "$OUT"
