#!/bin/bash
# Issue 31's comparison on every real dataset (docs/REAL_DATA.md): builds
# each from its Debian package, runs its deck inputs/real/<name>.yaml
# (MOSAIC and its ablations) and the baselines on the same rows and
# measure, and writes the tables and figures (bench/real_data_runs.py) into
# results/cpu/real_data_<commit>/, with the log of every command. About
# two minutes on 2 cores once the datasets are built (the music builder
# takes under a minute, the download of its 150 MB package aside).
#   bench/run_real_data.sh [--datasets wind,dj30,...]
# Build first: cmake --preset openmp && cmake --build --preset openmp.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/miniapp_runs_env.sh
out="results/cpu/real_data_$commit"
/usr/bin/python3 bench/real_data_runs.py "$out" --miniapp "$M" --check "$@"
