# Shared by scripts/run-smoke and scripts/run-tests: bootstrap, configure and
# build one preset. Source it; it sets $root, $preset and $build_dir.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# openmp by default; MOSAIC_PRESET=cuda (with Kokkos_ROOT set) or debug.
preset="${MOSAIC_PRESET:-openmp}"
build_dir="$root/build/$preset"

"$root/scripts/bootstrap"
cmake --preset "$preset" >"$root/build-$preset.log" 2>&1 || {
  cat "$root/build-$preset.log" >&2
  exit 1
}
cmake --build --preset "$preset" -j "$(nproc)" >"$root/build-$preset.log" 2>&1 || {
  cat "$root/build-$preset.log" >&2
  echo "build failed (log: build-$preset.log)" >&2
  exit 1
}

# Open MPI refuses to run as root unless told to; containers and CI run as
# root. Oversubscribe so 2 ranks run on any laptop. Open MPI binds each rank
# to one core by default when there are at most 2 ranks, which would put all
# of a rank's OpenMP threads on that core: leave placement to the OS here.
mpi_flags=(--oversubscribe --bind-to none)
[[ "$(id -u)" == 0 ]] && mpi_flags+=(--allow-run-as-root)
