#!/bin/bash
# The mosaic_bench runs behind docs/PERFORMANCE.md's "block_size: auto"
# (the rule and the tile widths on AVX2): the sequential kernel and the blocked update
# for several k in the same run (float, 8 streams, 2 OpenMP threads, the
# default reorthonormalize_every: auto), over d in {256 .. 8192} and r in
# {8 .. 128}. Build first:
#   cmake --preset openmp && cmake --build --preset openmp --target mosaic_bench
# Optional: OLD_BENCH=path/to/another/mosaic_bench also prints that binary's
# sgemm reference (one thread and two), for a before/after comparison of the
# tile kernel. Prints the commit and uptime around every run; takes about 10
# minutes on 2 cores.
set -e
cd "$(dirname "$0")/.."
B=build/openmp/bench/mosaic_bench
export OMP_NUM_THREADS=2 OMP_PROC_BIND=spread OMP_PLACES=threads
run() { echo "### $*"; echo "# start $(date -u +%FT%TZ) $(uptime)"; "$@"; echo "# end $(date -u +%FT%TZ) $(uptime)"; }
echo "# commit $(git rev-parse --short=12 HEAD)"
lscpu | grep -E "Model name|^CPU\(s\)|L2 cache" || true
echo "# AVX-512: $(grep -c avx512f /proc/cpuinfo || true) of $(nproc) cores"
sgemm_only=(--d 256 --r 8 --streams 1 --seconds 0.05 --ref-steps 1)
if [ -n "${OLD_BENCH:-}" ]; then
  OMP_NUM_THREADS=1 run "$OLD_BENCH" "${sgemm_only[@]}"
  run "$OLD_BENCH" "${sgemm_only[@]}"
fi
OMP_NUM_THREADS=1 run $B "${sgemm_only[@]}"
run $B --d 256,1024 --r 8,32 --streams 8 --block-size 8,16,32,64,128 --seconds 0.5 --ref-steps 10
run $B --d 4096,8192 --r 32,64 --streams 8 --block-size 16,32,64,128 --seconds 1 --ref-steps 5
run $B --d 8192 --r 128 --streams 8 --block-size 32,64,128 --seconds 1 --ref-steps 3
run $B --d 8192 --r 64 --streams 8 --block-size 64,128 --reorth 0 --seconds 1 --ref-steps 3
