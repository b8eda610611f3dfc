#!/usr/bin/env bash
# Reproduces its set of result files in results/cpu/ (results/README.md) and
# the tables in results/ and plots in results/plots/ made from them
# on a CPU machine (OpenMP build), with the committed decks scaled down by
# --set overrides so that the whole set finishes in minutes on 2 cores. The
# overrides are part of each file name's suffix and are recorded in each
# result file (command_line, overrides, resolved_deck).
#
#   results/run_cpu_results.sh          (from the repository root)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/common.sh   # bootstrap + build the openmp preset; sets mpi_flags, build_dir
app="$build_dir/miniapp/mosaic_miniapp"
out=results/cpu
mkdir -p "$out" results/plots
# Only this script's own files: the other result files in results/cpu come
# from the bench scripts named in results/README.md.
rm -f "$out"/{smoke_cpu,single_gpu_steps300,single_gpu_steps300_sequential,rank_sweep_steps200,weak_perrank4_steps200_omp1,strong_total8_steps200_omp1,sustained_steps2000,accuracy_drift,ablation}_np*.json \
  results/plots/{scaling,stability,sweep,breakdown}_*.png results/plots/accuracy_*.png

# run NRANKS THREADS DECK OUTPUT [--set ...]. Single-rank decks use both
# cores (1 rank x 2 OpenMP threads). The weak and strong series use 1 thread
# per rank, so N ranks use N cores and the efficiencies measure scaling from
# 1 to 2 cores (not 1 x 2 threads against 2 x 1 on the same two cores).
run() {
  local n="$1" threads="$2" deck="$3" file="$4"; shift 4
  echo "== OMP_NUM_THREADS=$threads mpirun -np $n $app $deck --output $out/$file $*"
  OMP_NUM_THREADS=$threads OMP_PROC_BIND=false \
    mpirun -np "$n" "${mpi_flags[@]}" -x OMP_NUM_THREADS -x OMP_PROC_BIND \
    "$app" "$deck" --output "$out/$file" "$@"
}

run 2 1 inputs/smoke_cpu.yaml smoke_cpu_np2.json
run 1 2 inputs/single_gpu.yaml single_gpu_steps300_np1.json \
  --set run.steps=300 --set run.warmup_steps=20
# The same d ladder with the sequential kernel: analysis.sweep pairs the two
# (blocked vs sequential).
run 1 2 inputs/single_gpu.yaml single_gpu_steps300_sequential_np1.json \
  --set run.steps=300 --set run.warmup_steps=20 --set algorithm.block_size=1
run 1 2 inputs/rank_sweep.yaml rank_sweep_steps200_np1.json \
  --set run.steps=200 --set run.warmup_steps=10
for n in 1 2; do
  run "$n" 1 inputs/weak_8gpu.yaml "weak_perrank4_steps200_omp1_np$n.json" \
    --set streams.per_rank=4 --set run.steps=200 --set run.warmup_steps=10
  run "$n" 1 inputs/strong_8gpu.yaml "strong_total8_steps200_omp1_np$n.json" \
    --set streams.total=8 --set run.steps=200 --set run.warmup_steps=10
done
run 1 2 inputs/sustained.yaml sustained_steps2000_np1.json \
  --set run.steps=2000 --set run.diagnostics_every=200
run 1 2 inputs/accuracy_drift.yaml accuracy_drift_np1.json
run 1 2 inputs/ablation.yaml ablation_np1.json

py=/usr/bin/python3
$py -m analysis.collect "$out" --csv results/all_runs.csv > results/all_runs.md
$py -m analysis.scaling "$out"/weak_*.json "$out"/strong_*.json --out results/plots > results/scaling.md
$py -m analysis.sweep "$out"/single_gpu_steps300*.json "$out"/rank_sweep_*.json --out results/plots > results/sweep.md
$py -m analysis.stability "$out"/accuracy_drift_np1.json "$out"/ablation_np1.json "$out"/sustained_*.json \
  --out results/plots > results/stability.md
$py -m analysis.breakdown "$out"/*_np*.json --out results/plots > results/breakdown.md
# The accuracy map's files come from bench/run_accuracy_runs.sh (docs/ACCURACY.md).
$py -m analysis.accuracy "$out"/accuracy_map_*.json --out results/plots > results/accuracy.md
echo "done: $(ls "$out" | wc -l) result files, $(ls results/plots | wc -l) plots"
