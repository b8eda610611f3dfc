#!/bin/bash
# The two-run floor of ALGORITHM.md 9.8 in double and float
# (mosaic_segment_floor, 3 seeds per case). Output: the whole log with the
# machine, the commit and uptime around it.
#   bench/run_segment_floor.sh BUILD_DIR OUT_FILE
set -euo pipefail
build=${1:?usage: run_segment_floor.sh BUILD_DIR OUT_FILE}
out=${2:?usage: run_segment_floor.sh BUILD_DIR OUT_FILE}
floor="$build/bench/mosaic_segment_floor"
[ -x "$floor" ] || { echo "run_segment_floor.sh: $floor not built" >&2; exit 2; }
{
  echo "# $(date -u +%FT%TZ) commit $(git rev-parse --short=12 HEAD)$(git diff --quiet HEAD || echo ' (dirty)')"
  echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores"
  echo "# uptime before: $(uptime)"
  echo "\$ mosaic_segment_floor --seeds 3"
  "$floor" --seeds 3
  echo "# uptime after: $(uptime)"
} > "$out"
