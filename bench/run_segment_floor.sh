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
source "$(dirname "$0")/host_study_log.sh"
{
  study_log_header
  echo "\$ mosaic_segment_floor --seeds 3"
  "$floor" --seeds 3
  echo "# uptime after: $(uptime)"
} > "$out"
