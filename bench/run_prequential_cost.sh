#!/bin/bash
# The cost of section 4's prequential accuracy (evaluated in every step
# since commit b5795d4): mosaic_bench of a build from before it (607c972,
# the parent of the first prequential commit) against the current build,
# alternated in one sitting (A B A B A B), sequential and blocked (k = 64),
# float, 8 streams, at a shape where the coefficient steps dominate (d 256,
# r 16) and at the call's shape (d 8192, r 64). Writes
# results/cpu/prequential_cost_<commit>.txt.
#   git worktree add /tmp/old607 607c972 && ln -s "$PWD/.deps" /tmp/old607/.deps
#   (cd /tmp/old607 && cmake --preset openmp && cmake --build --preset openmp --target mosaic_bench)
#   bench/run_prequential_cost.sh /tmp/old607/build/openmp/bench/mosaic_bench
set -euo pipefail
cd "$(dirname "$0")/.."
old="${1:?usage: bench/run_prequential_cost.sh OLD_MOSAIC_BENCH}"
new=build/openmp/bench/mosaic_bench
commit=$(git rev-parse --short=12 HEAD)
export OMP_NUM_THREADS=2 OMP_PROC_BIND=false
rates() {  # sequential and blocked samples/s of one mosaic_bench run
  "$1" --d "$2" --r "$3" --streams 8 --seconds 3 --block-size 1,64 2>&1 |
    awk -F'|' '/^\| *[0-9]+ *\| *[0-9]+ *\| *[0-9.]+ *\| *[0-9]+ *\| *[0-9]+ *\| *[0-9.]+ *\| *[0-9.]+x/ {
      gsub(/ /, ""); print $4, $7 }'
}
{
  echo "# prequential cost: $new (HEAD $commit) against $old (built from 607c972); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores, OMP_NUM_THREADS=2; $(uptime)"
  echo "# d r build round sequential_samples_per_s blocked_k64_samples_per_s"
  for shape in "256 16" "8192 64"; do
    for round in 1 2 3; do
      for which in old new; do
        bin=$old; [[ $which == new ]] && bin=$new
        echo "$shape $which $round $(rates "$bin" $shape)"
      done
    done
  done
  echo "# end $(uptime)"
} | tee "results/cpu/prequential_cost_$commit.txt"
