#!/bin/sh
# Regenerates tests/asm/golden/*.expected from the current assembler (LLVM update_*_checks
# style). Review the diff before committing: it IS the behaviour change.
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" >/dev/null
cmake --build "$build" -j2 --target asm_tests
NISA_REGEN_GOLDEN=1 "$build/tests/asm/asm_tests" --gtest_filter='Files/Golden.*'
git -C "$root" diff --stat -- tests/asm/golden || true
