#!/usr/bin/env bash
# Regenerates tests/analysis/real_fixtures/real_*.json: result files written by the
# real mini-app (small deck, seconds on 2 cores), weak and strong mode at 1
# and 2 ranks. Run from the repository root after building the openmp preset:
#   tests/analysis/make_real_fixtures.sh [path/to/mosaic_miniapp]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
app="${1:-build/openmp/miniapp/mosaic_miniapp}"
out=tests/analysis/real_fixtures
mkdir -p "$out"
flags=(--oversubscribe -x OMP_NUM_THREADS=1 -x OMP_PROC_BIND=false)
[[ "$(id -u)" == 0 ]] && flags+=(--allow-run-as-root)
for n in 1 2; do
  mpirun -np "$n" "${flags[@]}" "$app" tests/decks/mpi_small.yaml \
    --set streams.mode=weak --set streams.per_rank=2 --output "$out/real_weak_np$n.json" >/dev/null
  mpirun -np "$n" "${flags[@]}" "$app" tests/decks/mpi_small.yaml \
    --set streams.mode=strong --set streams.total=4 --output "$out/real_strong_np$n.json" >/dev/null
done
echo "wrote $out/real_{weak,strong}_np{1,2}.json"
