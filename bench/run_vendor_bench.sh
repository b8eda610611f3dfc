#!/bin/bash
# The runs behind docs/PERFORMANCE.md's "mosaic_bench: the update kernels"
# (its table: bench/bench_table.py on this script's output): mosaic_bench (float and double, 8 streams, 2 OpenMP
# threads) at the target point twice, the tiled kernel at the same point,
# the d ladder at r = 64, the r sweep at d = 8192, the maintained solve,
# and the mini-app's own FOM at the target point. Build first:
#   cmake --preset openmp && cmake --build --preset openmp
# Prints the commit and uptime around every run; took 2 minutes on the
# 2-core AVX-512 Xeon (results/cpu/vendor_bench_9af4afeb65e1.txt), about 15 on
# the AVX2 EPYC of earlier sessions.
set -e
cd "$(dirname "$0")/.."
source bench/bench_runs.sh
for i in 1 2; do run $B --d 8192 --r 64 --streams 8 --block-size 32,64,128 --seconds 3 --ref-steps 10; done
run $B --d 8192 --r 64 --streams 8 --block-size 32,64,128 --seconds 3 --ref-steps 10 --gemm tiled
for t in float double; do
  run $B --d 2048,4096,8192,16384 --r 64 --streams 8 --block-size 64,128 --seconds 1 --ref-steps 5 --dtype $t
  run $B --d 8192 --r 32,128 --streams 8 --block-size 64,128 --seconds 1 --ref-steps 5 --dtype $t
  run $B --d 8192 --r 64 --streams 8 --block-size 64,128 --seconds 2 --ref-steps 5 --dtype $t --solve maintained
done
miniapp_fom_at_target_point
