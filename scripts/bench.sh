#!/usr/bin/env bash
# make bench: every benchmark of bench/, one after the other (figures: docs/performance.md).
set -euo pipefail
BUILD=${1:-build}
for b in "$BUILD"/bench/*/bench_*; do
  [ -x "$b" ] || continue
  # Only the Google Benchmark suites: bench_io_floor takes files (docs/performance.md).
  [ "$(basename "$b")" = bench_io_floor ] && continue
  echo "== $b"
  "$b" --benchmark_min_time=0.2
done
