#!/bin/bash
# The mosaic_bench runs behind docs/PERFORMANCE.md's "Blocked update" tables
# (sequential vs blocked update, float, 8 streams, 2 OpenMP threads). Build
# first: cmake --preset openmp && cmake --build --preset openmp --target mosaic_bench
# Prints the commit and uptime around every run; takes about 20 minutes.
set -e
cd "$(dirname "$0")/.."
B=build/openmp/bench/mosaic_bench
export OMP_NUM_THREADS=2 OMP_PROC_BIND=spread OMP_PLACES=threads
run() { echo "### $*"; echo "# start $(date -u +%FT%TZ) $(uptime)"; $B "$@"; echo "# end $(date -u +%FT%TZ) $(uptime)"; }
echo "# commit $(git rev-parse --short=12 HEAD)"
for i in 1 2 3; do run --d 8192 --r 64 --streams 8 --block-size 32,64,96,128 --seconds 2 --ref-steps 10; done
run --d 2048,4096,8192 --r 64 --streams 8 --block-size 32,64,96,128 --seconds 1 --ref-steps 10
run --d 8192 --r 32,128 --streams 8 --block-size 32,64,96,128 --seconds 1 --ref-steps 5
run --d 8192 --r 64,128 --streams 8 --block-size 64,96,128 --solve maintained --seconds 2 --ref-steps 5
run --d 8192 --r 64 --streams 8 --block-size 64,96 --gemm kokkos_batched --seconds 2 --ref-steps 5
