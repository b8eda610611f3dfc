#!/bin/bash
# The runs behind docs/ACCURACY.md (issue 15): the accuracy map
# (inputs/accuracy_map.yaml, 80 points) and the timer accounting of the
# headline deck at d=8192 (inputs/single_gpu.yaml, 2,048 steps, diagnostics
# every 512). Writes results/cpu/accuracy_map_<commit>.json,
# results/cpu/timer_accounting_<commit>.json and the printed output with the
# commit and uptime around each run (results/cpu/accuracy_runs_<commit>.txt).
# Build first: cmake --preset openmp && cmake --build --preset openmp.
# Takes about 20 minutes on 2 cores.
set -e
cd "$(dirname "$0")/.."
M=build/openmp/miniapp/mosaic_miniapp
commit=$(git rev-parse --short=12 HEAD)
export OMP_NUM_THREADS=2 OMP_PROC_BIND=false
mpi_flags=(--bind-to none)
[[ "$(id -u)" == 0 ]] && mpi_flags+=(--allow-run-as-root)
run() {
  echo "### $*"; echo "# start $(date -u +%FT%TZ) $(uptime)"
  mpirun -np 1 "${mpi_flags[@]}" -x OMP_NUM_THREADS -x OMP_PROC_BIND "$M" "$@"
  echo "# end $(date -u +%FT%TZ) $(uptime)"
}
{
  echo "# commit $commit$(git diff --quiet HEAD -- src miniapp inputs || echo ' (modified)')"
  run inputs/single_gpu.yaml --set 'sweep.problem.d=[8192]' --set run.steps=2048 --set run.diagnostics_every=512 \
    --output "results/cpu/timer_accounting_$commit.json" || true
  run inputs/accuracy_map.yaml --output "results/cpu/accuracy_map_$commit.json" || true
} 2>&1 | tee "results/cpu/accuracy_runs_$commit.txt"
