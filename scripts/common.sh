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
# root. Oversubscribe so 2 ranks run on any laptop.
mpi_flags=(--oversubscribe)
[[ "$(id -u)" == 0 ]] && mpi_flags+=(--allow-run-as-root)
