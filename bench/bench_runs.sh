# Shared by the benchmark scripts (bench/run_vendor_bench.sh,
# bench/run_blocked_phases.sh); sourced from the repository root after
# `set -e`. B and M are the openmp build's bench and mini-app, 2 OpenMP
# threads; `run` prints the command and uptime around it; the commit (and
# whether src/ or bench/ differ from it) is printed at once.
B=build/openmp/bench/mosaic_bench
M=build/openmp/miniapp/mosaic_miniapp
export OMP_NUM_THREADS=2 OMP_PROC_BIND=spread OMP_PLACES=threads
run() { echo "### $*"; echo "# start $(date -u +%FT%TZ) $(uptime)"; "$@"; echo "# end $(date -u +%FT%TZ) $(uptime)"; }
echo "# commit $(git rev-parse --short=12 HEAD)$(git diff --quiet HEAD -- src bench || echo ' (modified)')"

# The mini-app's own FOM at the target point: inputs/single_gpu.yaml at
# d = 8192, 8,192 steps, one rank.
miniapp_fom_at_target_point() {
  local out
  out=$(mktemp -d)
  local mpi_flags=(--bind-to none)
  [[ "$(id -u)" == 0 ]] && mpi_flags+=(--allow-run-as-root)
  run mpirun -np 1 "${mpi_flags[@]}" -x OMP_NUM_THREADS -x OMP_PROC_BIND -x OMP_PLACES $M inputs/single_gpu.yaml \
    --set 'sweep.problem.d=[8192]' --set run.steps=8192 --output "$out/single_gpu_d8192.json"
  grep -o '"update_samples_per_second[^,]*' "$out/single_gpu_d8192.json" || true
  rm -rf "$out"
}
