#!/bin/bash
# The runs behind docs/PERFORMANCE.md's "Panels of the products" and "The
# phases against r, in float and double" (issue 28 items 2 and 5):
# mosaic_bench at d = 8192, 8 streams, k = 128, 2 OpenMP threads,
#  - the products' panel width (--panel-cols 32, 64, 128), alternated, twice,
#    at r = 64 in float;
#  - r = 32, 64, 128, 256 in float and in double, with the phases and the
#    cost model beside them;
# then the mini-app's own FOM at the target point (single_gpu.yaml,
# d = 8192). Build first:
#   cmake --preset openmp && cmake --build --preset openmp
# Prints the commit and uptime around every run; about 5 minutes on the
# 2-core AMD EPYC VM.
set -e
cd "$(dirname "$0")/.."
source bench/bench_runs.sh
echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores"
for i in 1 2; do
  for p in 32 64 128; do
    run $B --d 8192 --r 64 --streams 8 --block-size 128 --seconds 3 --ref-steps 3 --panel-cols $p
  done
done
for t in float double; do
  run $B --d 8192 --r 32,64,128,256 --streams 8 --block-size 128 --seconds 2 --ref-steps 3 --dtype $t
done
miniapp_fom_at_target_point
