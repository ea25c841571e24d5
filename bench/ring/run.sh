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
# fg_allgather, TP = 64, --lnc 2, K = 4096 bf16: M rows per rank (M = 16: the gathered result is
# 1024 x 4096; M = 1024 per rank would hold 64 x 512 MiB of outputs, more than the host's RAM).
for M in 16; do
  "$G" "$W/lhs64.npy" 64 "$M" 4096 1
  run "fg_allgather_tp64_m${M}" kernels_asm/fg_allgather.nasm --ranks 64 --lnc 2 -D M="$M" -D K=4096 \
    -D TP=64 -D NUM_GROUPS=1 -D FORCE_HBM=0 -D DT=bf16 --in lhs="$W/lhs64.npy" --out out="$W/out64.npy"
  rm -f "$W/out64.npy"
done
# fgcc, TP = 4, --lnc 2, M = 1024, K = 4096, N = 1024 bf16 (N = 4096 exceeds the resident RHS).
"$G" "$W/lhs4.npy" 4 1024 4096 2
"$G" "$W/rhs4.npy" 4 4096 1024 3
run fgcc_tp4 kernels_asm/fgcc.nasm --ranks 4 --lnc 2 -D M=1024 -D K=4096 -D N=1024 -D TP=4 \
  -D NUM_GROUPS=1 -D FORCE_HBM=0 -D DT=bf16 --in lhs="$W/lhs4.npy" --in rhs="$W/rhs4.npy" --out out="$W/out4.npy"
