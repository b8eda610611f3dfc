# Shared by scripts/run-smoke and scripts/run-tests: bootstrap, configure and
# build one preset. Source it; it sets $root, $preset and $build_dir, and
# defines mosaic_build PRESET [TARGET...] (configure + build one preset, or
# only those of its targets, printing the configure summary; logs in
# build-PRESET-configure.log and build-PRESET.log).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# openmp by default; MOSAIC_PRESET=cuda (Kokkos_ROOT, or the bootstrap's
# .deps/kokkos-cuda where nvcc exists) or debug.
preset="${MOSAIC_PRESET:-openmp}"
build_dir="$root/build/$preset"

"$root/scripts/bootstrap"

mosaic_build() {
  local p="$1" cfg_log="$root/build-$1-configure.log" log="$root/build-$1.log"
  local env_args=() targets=()
  shift
  (($# == 0)) || targets=(--target "$@")
  if [[ "$p" == cuda && -z "${Kokkos_ROOT:-}" ]]; then
    local cuda_prefix
    cuda_prefix="$("$root/scripts/bootstrap" --print-cuda-prefix)"
    if [[ -z "$cuda_prefix" ]]; then
      echo "the cuda preset needs nvcc (on PATH or in \$CUDA_HOME/bin) or Kokkos_ROOT naming a Cuda Kokkos" >&2
      return 1
    fi
    env_args=(Kokkos_ROOT="$cuda_prefix" KokkosKernels_ROOT="$cuda_prefix")
  fi
  if [[ "$p" == cuda ]]; then  # nvcc_wrapper calls nvcc by name
    command -v nvcc >/dev/null || { [[ -n "${CUDA_HOME:-}" ]] && export PATH="$CUDA_HOME/bin:$PATH"; }
  fi
  env "${env_args[@]}" cmake --preset "$p" >"$cfg_log" 2>&1 || {
    cat "$cfg_log" >&2
    return 1
  }
  # The configure summary (Kokkos, backends, arch, MPI, compiler, flags).
  grep -E '^-- mosaic_miniapp' "$cfg_log" | sed 's/^-- //' >&2 || true
  local t0=$SECONDS
  cmake --build --preset "$p" -j "$(nproc)" ${targets[@]+"${targets[@]}"} >"$log" 2>&1 || {
    cat "$log" >&2
    echo "build of preset $p failed (log: build-$p.log)" >&2
    return 1
  }
  # No warning from the project's own code (nvcc's "file(line): warning",
  # g++'s "file:line:col: warning"); third-party headers are not ours. Only
  # the files this build compiled are seen: CI's clean build sees them all.
  if grep -E "^$root/(src|miniapp|bench|tests)/[^:(]*(\(|:)[0-9]+.*warning" "$log" >&2; then
    echo "build of preset $p: warnings in the project's code (above; log: build-$p.log)" >&2
    return 1
  fi
  echo "mosaic_miniapp: preset $p built in $((SECONDS - t0)) s (log: build-$p.log)" >&2
}

mosaic_build "$preset"

# Open MPI refuses to run as root unless told to; containers and CI run as
# root. Oversubscribe so 2 ranks run on any laptop. Open MPI binds each rank
# to one core by default when there are at most 2 ranks, which would put all
# of a rank's OpenMP threads on that core: leave placement to the OS here.
mpi_flags=(--oversubscribe --bind-to none)
[[ "$(id -u)" == 0 ]] && mpi_flags+=(--allow-run-as-root)
