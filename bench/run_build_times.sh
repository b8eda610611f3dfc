#!/usr/bin/env bash
# Clean and incremental build times of the openmp preset (issue 13, item 4),
# for one or more source trees side by side on the same machine, e.g. the
# commit before the library was compiled separately and the current one:
#   git worktree add /tmp/before <commit>
#   bench/run_build_times.sh /tmp/before .
# Each tree is configured into a fresh /tmp build directory against the same
# Kokkos (Kokkos_ROOT, default this repository's .deps/kokkos-openmp), built
# with -j$(nproc), then rebuilt after touching one file of each kind:
# the driver (miniapp/main.cpp), one test (test_config.cpp) and a kernel
# header (blocked_step.hpp), each where the tree has it (src/mosaic/ was
# split into folders at issue 29). Prints one table row per tree
# and build; the machine should be otherwise idle.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export Kokkos_ROOT="${Kokkos_ROOT:-$root/.deps/kokkos-openmp}"
export KokkosKernels_ROOT="${KokkosKernels_ROOT:-$Kokkos_ROOT}"
jobs="$(nproc)"
echo "# build times: $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), Kokkos_ROOT=$Kokkos_ROOT"
echo "| tree | commit | clean build (s) | after touching miniapp/main.cpp (s) | test_config.cpp (s) | blocked_step.hpp (s) |"
echo "|---|---|---|---|---|---|"
for tree in "$@"; do
  tree="$(cd "$tree" && pwd)"
  commit="$(git -C "$tree" rev-parse --short=12 HEAD)$(git -C "$tree" diff --quiet HEAD -- . 2>/dev/null || echo '+dirty')"
  bdir="$(mktemp -d /tmp/mosaic-build-times.XXXXXX)"
  (cd "$tree" && cmake --preset openmp -B "$bdir" >"$bdir.configure.log" 2>&1)
  timed() {  # seconds of one build of $bdir
    local t0 t1
    t0=$(date +%s.%N)
    cmake --build "$bdir" -j "$jobs" >>"$bdir.build.log" 2>&1
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }'
  }
  clean=$(timed)
  row="| $tree | $commit | $clean"
  for f in miniapp/main.cpp "tests/config/test_config.cpp tests/test_config.cpp" \
           "src/mosaic/engine/blocked_step.hpp src/mosaic/blocked_step.hpp"; do
    for candidate in $f; do
      if [[ -e "$tree/$candidate" ]]; then touch "$tree/$candidate"; break; fi
    done
    row+=" | $(timed)"
  done
  echo "$row |"
  rm -rf "$bdir" "$bdir.configure.log" "$bdir.build.log"
done
