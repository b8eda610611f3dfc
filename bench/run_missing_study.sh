#!/bin/bash
# Issue 30 item 5 by the mini-app: the missing-fraction sweep of
# inputs/missing_study.yaml (d 256 and 1024, MCAR 0-80%, the four
# algorithm.missing modes, seeds 1-3) and ALGORITHM.md 7.11's outage case
# (10% of the channels, 26 of 256, missing for samples 4000-5999 of the
# stream; posterior with each rotation, zero_fill, drop; the warm-up of 84
# puts a diagnostics entry on sample 5999, the outage's last), then
# analysis.missing over both, compared with the host reference study's
# output. Writes results/cpu/missing_study_<commit>.json,
# results/cpu/missing_outage_<commit>.json (and _geodesic_), gzip-compressed
# at the end, and results/cpu/missing_study_<commit>.txt (commands, uptime,
# the analysis).
#   bench/run_missing_study.sh [REFERENCE_STUDY_OUTPUT]
# (default: the newest results/cpu/reference_masked_study_*.txt). About a
# minute on 2 cores. Build first: cmake --preset openmp && cmake --build --preset openmp.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/miniapp_runs_env.sh
ref="${1:-$(ls -t results/cpu/reference_masked_study_*.txt | head -1)}"
out=results/cpu
run() {
  echo "\$ mpirun -np 1 $M $*"
  echo "# start $(date -u +%FT%TZ) $(uptime)"
  mpirun -np 1 "${mpi_flags[@]}" -x OMP_NUM_THREADS -x OMP_PROC_BIND "$M" "$@" | grep -E '^\[mosaic\] result'
  echo "# end $(date -u +%FT%TZ) $(uptime)"
}
outage=(--set source.outage_first=0 --set source.outage_count=26 --set source.outage_start=4000
        --set source.outage_steps=2000 --set run.warmup_steps=84 --set 'sweep.problem.d=[256]'
        --set 'sweep.source.missing_rate=[0]')
{
  echo "# binary $M, built from $commit; checkout $(git rev-parse --short=12 HEAD); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores"
  run inputs/missing_study.yaml --output "$out/missing_study_$commit.json"
  run inputs/missing_study.yaml "${outage[@]}" --set 'sweep.algorithm.missing=[posterior, zero_fill, drop]' \
    --set algorithm.missing_rotation=observed --output "$out/missing_outage_$commit.json"
  run inputs/missing_study.yaml "${outage[@]}" --set 'sweep.algorithm.missing=[posterior]' \
    --set algorithm.missing_rotation=geodesic --output "$out/missing_outage_geodesic_$commit.json"
  echo "\$ /usr/bin/python3 -m analysis.missing $out/missing_study_$commit.json $out/missing_outage_$commit.json $out/missing_outage_geodesic_$commit.json --reference $ref --out results/plots"
  /usr/bin/python3 -m analysis.missing "$out/missing_study_$commit.json" "$out/missing_outage_$commit.json" \
    "$out/missing_outage_geodesic_$commit.json" --reference "$ref" --out results/plots
} 2>&1 | tee "$out/missing_study_$commit.txt"
# Kept compressed under results/ (analysis reads .json.gz as it reads .json).
gzip -9 -n -f "$out/missing_study_$commit.json" "$out/missing_outage_$commit.json" \
  "$out/missing_outage_geodesic_$commit.json"
