#!/usr/bin/env bash
# Packs a Cuda build of this machine into one self-contained folder that runs
# on a GPU node whose system lacks the libraries it was built against
# (Debian's yaml-cpp, Open MPI, hwloc, libevent, PMIx): a vendor CUDA image,
# a container, a cluster node with another distribution.
#
#   bench/gpu_bundle.sh BUILD_DIR OUTDIR
#
# OUTDIR (new or empty) receives
#   build/miniapp/mosaic_miniapp, build/bench/mosaic_bench   (what
#                  bench/gpu_check.sh takes as its BUILD_DIR: OUTDIR/build)
#   build/tests/<name>   every GoogleTest executable of BUILD_DIR/tests
#   lib/           the shared libraries those need, taken from this machine
#                  (Debian's packages), except the C library, the C++
#                  runtime, the CUDA driver and cuBLAS (hundreds of MB; the
#                  node's CUDA toolkit provides it, env.sh finds it)
#   lib-fallback/  libstdc++ and libgcc_s, used only where the node has none
#   ompi/, pmix/, bin/orterun, bin/orted   Open MPI's components and help
#                  text, so that a singleton start and `orterun -np N` on
#                  one node work without Open MPI installed there
#   env.sh         `source OUTDIR/env.sh` sets LD_LIBRARY_PATH and Open
#                  MPI's locations for this folder and says what it found
#   MANIFEST.txt   the build's commit, compiler, and each library's package
# Binaries are stripped of symbols (the GPU code in them is kept).
# Only Debian's own binaries are copied: nothing is built here.
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 BUILD_DIR OUTDIR" >&2; exit 2; }
build="$(cd "$1" && pwd)"
out="$2"
[[ -x "$build/miniapp/mosaic_miniapp" && -x "$build/bench/mosaic_bench" ]] \
  || { echo "gpu_bundle: $build lacks miniapp/mosaic_miniapp or bench/mosaic_bench" >&2; exit 2; }
if [[ -d "$out" && -n "$(ls -A "$out")" ]]; then
  echo "gpu_bundle: $out exists and is not empty" >&2
  exit 2
fi
mkdir -p "$out"/{build/miniapp,build/bench,build/tests,lib,lib-fallback,bin,ompi,pmix}
out="$(cd "$out" && pwd)"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

strip_copy() { cp "$1" "$2" && strip --strip-unneeded "$2"; }
strip_copy "$build/miniapp/mosaic_miniapp" "$out/build/miniapp/mosaic_miniapp"
strip_copy "$build/bench/mosaic_bench" "$out/build/bench/mosaic_bench"
[[ ! -x "$build/bench/mosaic_tracker_cost" ]] ||
  strip_copy "$build/bench/mosaic_tracker_cost" "$out/build/bench/mosaic_tracker_cost"
while IFS= read -r t; do
  strip_copy "$t" "$out/build/tests/$(basename "$t")"
done < <(find "$build/tests" -path '*/CMakeFiles' -prune -o -type f -name 'test_*' -perm -u+x -print | sort)

# Open MPI as Debian installs it (libdir .../openmpi/lib, components in
# .../openmpi/lib/openmpi3, help text in /usr/share/openmpi).
multiarch="$(gcc -print-multiarch)"
ompi_lib="/usr/lib/$multiarch/openmpi/lib"
ompi_components="$(dirname "$(readlink -f "$ompi_lib/openmpi3/mca_ess_singleton.so")")"
cp -L /usr/bin/orterun /usr/bin/orted "$out/bin/"
cp -rL /usr/share/openmpi "$out/ompi/share"
mkdir -p "$out/ompi/components"
cp -L "$ompi_components"/mca_*.so "$out/ompi/components/"
cp -L "/usr/lib/$multiarch/pmix2/lib/pmix/"*.so "$out/pmix/"

# Libraries the bundle's own files need, resolved on this machine. Never
# carried: the C library (the node's is newer and compatible), the CUDA
# driver, and cuBLAS/cuBLASLt (the node's CUDA toolkit of the same major
# version provides them).
never='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libcuda\.so|libnvidia|libcublas)'
fallback='^(libstdc\+\+\.so|libgcc_s\.so)'
needed() { ldd "$1" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'; }
declare -A have=()
add_libs_of() {
  local name path
  while read -r name path; do
    [[ "$name" =~ $never || -n "${have[$name]:-}" ]] && continue
    have[$name]="$path"
    if [[ "$name" =~ $fallback ]]; then cp -L "$path" "$out/lib-fallback/$name"; else cp -L "$path" "$out/lib/$name"; fi
  done < <(needed "$1")
}
for f in "$out"/build/*/* "$out"/bin/* "$out"/pmix/*.so; do add_libs_of "$f"; done
# A component whose libraries are not all found (UCX, libfabric, verbs,
# PSM, OpenSHMEM: network stacks a single node does not need) is left out,
# so Open MPI never tries to open it.
for c in "$out"/ompi/components/*.so; do
  missing=0 commons=()
  while read -r lib; do
    [[ "$lib" =~ $never || -n "${have[$lib]:-}" ]] && continue
    p="$(ldd "$c" | awk -v l="$lib" '$1 == l && $3 ~ /^\// { print $3 }')"
    if [[ -n "$p" && "$lib" =~ ^libmca_common_ ]]; then commons+=("$lib $p"); else missing=1; fi
  done < <(objdump -p "$c" | awk '/NEEDED/ { print $2 }')
  if ((missing)); then
    rm "$c"
    continue
  fi
  for lp in ${commons[@]+"${commons[@]}"}; do
    read -r lib p <<<"$lp"
    have[$lib]="$p"
    cp -L "$p" "$out/lib/$lib"
  done
done

cat >"$out/env.sh" <<'EOF'
# source this file: it points the dynamic linker and Open MPI at this bundle.
bundle="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ld="$bundle/lib"
# The node's C++ runtime when it has one (newer is compatible), else ours.
ldconfig -p 2>/dev/null | grep -q 'libstdc++\.so\.6 ' || ld="$ld:$bundle/lib-fallback"
# cuBLAS from the node's CUDA toolkit or its Python wheels, unless the
# linker already finds it.
if ! ldconfig -p 2>/dev/null | grep -q 'libcublasLt\.so\.13 '; then
  for d in "${CUDA_HOME:-/usr/local/cuda}/lib64" /usr/local/cuda/lib64 /usr/local/cuda-13*/lib64 \
    /usr/local/lib/python3*/dist-packages/nvidia/cu13/lib /opt/*/.venv/lib/python3*/site-packages/nvidia/cu13/lib \
    /opt/*/.venv/lib/python3*/site-packages/nvidia/cublas/lib; do
    if [[ -e "$d/libcublasLt.so.13" ]]; then ld="$ld:$d"; break; fi
  done
fi
export LD_LIBRARY_PATH="$ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$bundle/bin:$PATH"
export OMPI_MCA_mca_base_component_path="$bundle/ompi/components"
export OPAL_PKGDATADIR="$bundle/ompi/share"
export PMIX_MCA_mca_base_component_path="$bundle/pmix"
# Only the shared-memory and self transports: one node, and no network
# stack's components are in the bundle.
export OMPI_MCA_btl=self,vader
export OMPI_MCA_pml=ob1
# A plain start (no mpirun) runs as a singleton without forking a daemon.
export OMPI_MCA_ess_singleton_isolated=1
echo "gpu bundle: LD_LIBRARY_PATH=$LD_LIBRARY_PATH" >&2
EOF

{
  echo "bundle of $build made $(date -u +%FT%TZ) on $(hostname) by bench/gpu_bundle.sh"
  echo "commit $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"
  grep -E '^CMAKE_CXX_COMPILER:|^CMAKE_BUILD_TYPE:|^Kokkos_DIR:' "$build/CMakeCache.txt" || true
  echo "libraries (file, Debian package):"
  for n in "${!have[@]}"; do
    pkg="$(dpkg -S "${have[$n]}" 2>/dev/null || dpkg -S "$(readlink -f "${have[$n]}")" 2>/dev/null || true)"
    printf '  %s %s\n' "$n" "${pkg%%:*}"
  done | sort
} >"$out/MANIFEST.txt"
du -sh "$out" >&2
