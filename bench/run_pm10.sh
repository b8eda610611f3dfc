#!/bin/bash
# Issue 30's done-when run: the PM10 stream (real daily sensor data, 51%
# missing) end to end with algorithm.missing: posterior. Builds the data
# from Debian's r-cran-spacetime (analysis/datasets/pm10.py: apt-get download,
# dpkg -x; inputs/real_data/pm10, ignored by git), runs inputs/real/pm10.yaml on one
# rank and writes results/cpu/pm10_<commit>.json and its log
# results/cpu/pm10_<commit>.txt (commands, uptime, the data's provenance,
# the mini-app's summary). Seconds on 2 cores.
# Build first: cmake --preset openmp && cmake --build --preset openmp.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/miniapp_runs_env.sh
{
  echo "# binary $M, built from $commit; checkout $(git rev-parse --short=12 HEAD); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores"
  echo "\$ /usr/bin/python3 -m analysis.datasets.pm10"
  /usr/bin/python3 -m analysis.datasets.pm10
  /usr/bin/python3 -c 'import json, sys; m = json.load(open(sys.argv[1])); print("# data:", m["deb"], "sha256", m["deb_sha256"], "| days", m["time_span"]["first"], "to", m["time_span"]["last"], "|", m["shape"], "| missing", round(m["nan_fraction"], 4), "|", "; ".join(sorted(set(m["licence"]))), "| npy sha256", m["npy_sha256"])' inputs/real_data/pm10/pm10.json
  echo "\$ mpirun -np 1 $M inputs/real/pm10.yaml --output results/cpu/pm10_$commit.json"
  echo "# start $(date -u +%FT%TZ) $(uptime)"
  mpirun -np 1 "${mpi_flags[@]}" -x OMP_NUM_THREADS -x OMP_PROC_BIND "$M" inputs/real/pm10.yaml \
    --output "results/cpu/pm10_$commit.json"
  echo "# end $(date -u +%FT%TZ) $(uptime)"
} 2>&1 | tee "results/cpu/pm10_$commit.txt"
