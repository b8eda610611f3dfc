#!/usr/bin/env bash
# Reproduces its set of result files in results/cpu/ (results/README.md) and
# the tables in results/ and plots in results/plots/ made from them, on a CPU
# machine (OpenMP build): the headline decks (tracking settings, accuracy
# checked) at full length where this CPU allows it (the weak and strong
# series with fewer streams and steps, named in their file names), the seed
# project's d and r ladders like for like, the 800,000-observation sustained
# runs at r = 64 and 128, a 10^7-sample long run and the streams-per-rank
# saturation sweep. Every result file records its command line, overrides,
# resolved deck, machine and commit. About 30 minutes on 2 cores.
#
#   results/run_cpu_results.sh           (from the repository root)
#   results/run_cpu_results.sh --tables  (only the tables and plots, from the
#                                         result files already in results/cpu)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=results/cpu
mkdir -p "$out" results/plots
tables_only=0 failed_runs=()
case "${1:-}" in
  "") ;;
  --tables) tables_only=1 ;;
  *) echo "usage: results/run_cpu_results.sh [--tables]" >&2; exit 2 ;;
esac
if ((!tables_only)); then
source scripts/common.sh   # bootstrap + build the openmp preset; sets mpi_flags, build_dir
app="$build_dir/miniapp/mosaic_miniapp"
# Only this script's own files: the other result files in results/cpu come
# from the bench scripts named in results/README.md.
rm -f "$out"/{smoke_cpu,single_gpu,single_gpu_sequential,rank_sweep,seed_d_ladder,seed_r_ladder,saturation_d1024,saturation_d8192,long_run}_np*.json \
  "$out"/{weak_perrank4_steps4000_omp1,strong_total8_steps4000_omp1,sustained,sustained_r128,accuracy_drift,ablation}_np*.json
uptime

# run NRANKS THREADS DECK OUTPUT [--set ...]. Single-rank decks use both
# cores (1 rank x 2 OpenMP threads). The weak and strong series use 1 thread
# per rank, so N ranks use N cores and the efficiencies measure scaling from
# 1 to 2 cores (not 1 x 2 threads against 2 x 1 on the same two cores).
run() {
  local n="$1" threads="$2" deck="$3" file="$4"; shift 4
  echo "== OMP_NUM_THREADS=$threads mpirun -np $n $app $deck --output $out/$file $*"
  OMP_NUM_THREADS=$threads OMP_PROC_BIND=false \
    mpirun -np "$n" "${mpi_flags[@]}" -x OMP_NUM_THREADS -x OMP_PROC_BIND \
    "$app" "$deck" --output "$out/$file" "$@" || {
    local rc=$?
    echo "== exit status $rc: $out/$file (a failed verdict still writes its result; the runs go on)"
    failed_runs+=("$file (exit $rc)")
  }
}

run 2 1 inputs/smoke_cpu.yaml smoke_cpu_np2.json
# The headline decks: the d ladder with the blocked update and with the
# sequential kernel (analysis.sweep pairs the two), the rank ladder.
run 1 2 inputs/single_gpu.yaml single_gpu_np1.json
run 1 2 inputs/single_gpu.yaml single_gpu_sequential_np1.json --set algorithm.block_size=1
run 1 2 inputs/rank_sweep.yaml rank_sweep_np1.json
for n in 1 2; do
  run "$n" 1 inputs/weak_8gpu.yaml "weak_perrank4_steps4000_omp1_np$n.json" \
    --set streams.per_rank=4 --set run.steps=4000 --set run.warmup_steps=100
  run "$n" 1 inputs/strong_8gpu.yaml "strong_total8_steps4000_omp1_np$n.json" \
    --set streams.total=8 --set run.steps=4000 --set run.warmup_steps=100
done
# 800,000 observations (8 streams x 100,000 steps) at r = 64 and at r = 128.
run 1 2 inputs/sustained.yaml sustained_np1.json
run 1 2 inputs/sustained.yaml sustained_r128_np1.json --set problem.rank=128
# The seed's ladders at ALGORITHM.md's default rates (like for like).
run 1 2 inputs/seed_d_ladder.yaml seed_d_ladder_np1.json
run 1 2 inputs/seed_r_ladder.yaml seed_r_ladder_np1.json
# One process per d: a process's peak RSS is a high-water mark, so each d's
# stream counts rise from 1 in a fresh process.
for d in 1024 8192; do
  run 1 2 inputs/saturation.yaml "saturation_d${d}_np1.json" --set problem.d=$d
done
run 1 2 inputs/long_run.yaml long_run_np1.json
run 1 2 inputs/accuracy_drift.yaml accuracy_drift_np1.json
run 1 2 inputs/ablation.yaml ablation_np1.json
uptime
if ((${#failed_runs[@]})); then
  printf 'runs that exited non-zero (the tables below go on without them): %s\n' "${failed_runs[@]}" >&2
fi
fi

# The plots are removed only now: tracked files removed before the build
# configures would mark the build (and every result file) dirty.
rm -f results/plots/{scaling,stability,sweep,breakdown,saturation}_*.png results/plots/accuracy_*.png
py=/usr/bin/python3
$py -m analysis.collect "$out" --csv results/all_runs.csv > results/all_runs.md
$py -m analysis.scaling "$out"/weak_*.json "$out"/strong_*.json --out results/plots > results/scaling.md
$py -m analysis.sweep "$out"/{single_gpu,single_gpu_sequential,rank_sweep,seed_d_ladder,seed_r_ladder}_np1.json \
  --out results/plots > results/sweep.md
$py -m analysis.saturation "$out"/saturation_d*_np1.json --out results/plots > results/saturation.md
$py -m analysis.stability "$out"/{accuracy_drift,ablation,sustained,sustained_r128,long_run}_np1.json \
  --out results/plots > results/stability.md
$py -m analysis.breakdown "$out"/*_np*.json --out results/plots > results/breakdown.md
# The page a collaborator sends (analysis.report), for this script's runs.
rm -rf results/report
$py -m analysis.report "$out"/{smoke_cpu_np2,single_gpu_np1,single_gpu_sequential_np1,rank_sweep_np1}.json \
  "$out"/{weak_perrank4_steps4000_omp1,strong_total8_steps4000_omp1}_np{1,2}.json \
  "$out"/{sustained,sustained_r128,seed_d_ladder,seed_r_ladder,saturation_d1024,saturation_d8192,long_run}_np1.json \
  "$out"/{accuracy_drift,ablation}_np1.json --out results/report
# The accuracy map's files come from bench/run_accuracy_runs.sh (docs/ACCURACY.md).
$py -m analysis.accuracy "$out"/accuracy_map_*.json --out results/plots > results/accuracy.md
echo "done: $(ls "$out" | wc -l) result files, $(ls results/plots | wc -l) plots"
((${#failed_runs[@]} == 0)) || exit 1
