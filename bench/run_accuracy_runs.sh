#!/bin/bash
# The runs behind docs/ACCURACY.md and docs/PERFORMANCE.md's timer table
# (issue 15): the headline deck at the point issue 15 item 1 names
# (inputs/single_gpu.yaml at d=8192, 10,000 steps with diagnostics every
# 1,000: setup_init_diagnostics_10k), the accuracy map
# (inputs/accuracy_map.yaml, 80 points) and its extension to a smaller eta_U
# (2.5e-4, 20,000 steps, diagnostics every
# 2,000: the map's best eta_U was its smallest everywhere). Writes
# results/cpu/<run>_<commit>.json and the printed output with the commit and
# uptime around each run (results/cpu/accuracy_runs_<only>_<commit>.txt).
# With an argument, only the runs whose output name contains it (e.g.
# eta2.5e-4). MOSAIC_MINIAPP=path runs another binary (one built from an
# earlier commit, for a before/after pair in one session); <commit> is then
# that binary's own (its --version), with "-dirty" for a modified tree.
# Build first: cmake --preset openmp && cmake --build --preset openmp.
# Takes about 35 minutes on 2 cores.
set -e
cd "$(dirname "$0")/.."
source bench/miniapp_runs_env.sh
only="${1:-}"
# run NAME DECK [--set ...]: writes results/cpu/NAME_<commit>.json.
run() {
  local name="$1" deck="$2"; shift 2
  [[ -z "$only" || "$name" == *"$only"* ]] || return 0
  echo "### $deck $* --output results/cpu/${name}_$commit.json"; echo "# start $(date -u +%FT%TZ) $(uptime)"
  mpirun -np 1 "${mpi_flags[@]}" -x OMP_NUM_THREADS -x OMP_PROC_BIND "$M" "$deck" "$@" \
    --output "results/cpu/${name}_$commit.json" || true
  echo "# end $(date -u +%FT%TZ) $(uptime)"
}
{
  echo "# binary $M, built from $commit; checkout $(git rev-parse --short=12 HEAD)$(git diff --quiet HEAD -- src miniapp inputs || echo ' (modified)')"
  run setup_init_diagnostics_10k inputs/single_gpu.yaml --set 'sweep.problem.d=[8192]' \
    --set run.diagnostics_every=1000
  run accuracy_map inputs/accuracy_map.yaml
  run accuracy_map_eta2.5e-4 inputs/accuracy_map.yaml --set 'sweep.algorithm.eta_U=[0.00025]' \
    --set run.steps=20000 --set run.diagnostics_every=2000
} 2>&1 | tee "results/cpu/accuracy_runs_${only:-all}_$commit.txt"
