#!/bin/bash
# The host reference of ALGORITHM.md sections 7-8 on the rows of the spec's
# tables 7.11 and 8.6, and the missing-fraction sweep of issue 30 item 5
# (mosaic_reference_study, 3 seeds each). Output: the whole log with the
# machine, the commit and uptime around it.
#   bench/run_reference_masked_study.sh BUILD_DIR OUT_FILE
set -euo pipefail
build=${1:?usage: run_reference_masked_study.sh BUILD_DIR OUT_FILE}
out=${2:?usage: run_reference_masked_study.sh BUILD_DIR OUT_FILE}
study="$build/bench/mosaic_reference_study"
[ -x "$study" ] || { echo "run_reference_masked_study.sh: $study not built" >&2; exit 2; }
source "$(dirname "$0")/host_study_log.sh"
{
  study_log_header
  run() { echo; echo "\$ mosaic_reference_study $*"; "$study" "$@"; }
  echo; echo "## 7.11, MCAR: d 256, r 8, noise 0.3, steps 3000-6000"
  run --label full --mcar 0
  for mode in posterior project zero_fill drop; do run --label "mcar50-$mode" --mcar 0.5 --missing $mode; done
  echo; echo "## 7.11, outage of 10% of the channels for steps [4000, 6000) of 8000"
  run --label outage-none --steps 8000 --window 6000 --outage-start 4000 --outage-steps 2000
  for mode in posterior zero_fill drop; do
    run --label "outage-$mode" --steps 8000 --window 6000 --outage-fraction 0.1 --outage-start 4000 --outage-steps 2000 --missing $mode
  done
  run --label outage-geodesic --steps 8000 --window 6000 --outage-fraction 0.1 --outage-start 4000 --outage-steps 2000 --rotation geodesic
  echo; echo "## 8.6: noise std log-uniform in [0.05, 0.5], steps 4000-8000 (homogeneous: the same mean variance, std 0.2318)"
  for d in 256 64; do
    run --label "hetero-isotropic-d$d" --d $d --noise-range 0.05,0.5 --steps 8000 --window 4000
    run --label "hetero-diagonal-d$d" --d $d --noise-range 0.05,0.5 --steps 8000 --window 4000 --noise-model diagonal
    run --label "homogeneous-d$d" --d $d --noise 0.2318 --steps 8000 --window 4000
    run --label "hetero-mcar20-isotropic-d$d" --d $d --noise-range 0.05,0.5 --steps 8000 --window 4000 --mcar 0.2
    run --label "hetero-mcar20-diagonal-d$d" --d $d --noise-range 0.05,0.5 --steps 8000 --window 4000 --mcar 0.2 --noise-model diagonal
  done
  echo; echo "## Issue 30 item 5 on the reference: MCAR fraction x mode x d, r 8, noise 0.3, steps 3000-6000"
  for d in 256 1024; do
    for f in 0 0.05 0.2 0.5 0.8; do
      for mode in posterior project zero_fill drop; do run --label "sweep-d$d-f$f-$mode" --d $d --mcar $f --missing $mode; done
    done
  done
  echo
  echo "# uptime after: $(uptime)"
} > "$out" 2>&1
echo "wrote $out"
