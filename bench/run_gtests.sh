#!/usr/bin/env bash
# Runs every GoogleTest executable of a folder, one after another, where no
# ctest tree is at hand (a bundle made by bench/gpu_bundle.sh on a node
# without this repository's build): each under its own time limit, its
# output in LOGDIR/<name>.log and its JUnit XML in LOGDIR/<name>.xml, then
# a last line in ctest's words ("N% tests passed, M tests failed out of K",
# counting test cases) and the failed cases, so bench/gpu_check.sh's summary
# reads it as it reads ctest's. Exit status 0 only when every case passed
# and every executable ended normally.
#
#   bench/run_gtests.sh TESTS_DIR LOGDIR [PER_EXECUTABLE_LIMIT_S]
set -uo pipefail
[[ $# -ge 2 && $# -le 3 ]] || { echo "usage: $0 TESTS_DIR LOGDIR [PER_EXECUTABLE_LIMIT_S]" >&2; exit 2; }
dir="$1" logs="$2" limit="${3:-120}"
mkdir -p "$logs"
total=0 failed=0 broken=()
failed_cases=()
for t in "$dir"/test_*; do
  [[ -x "$t" && -f "$t" ]] || continue
  name="$(basename "$t")"
  start="$(date +%s.%N)"
  timeout -k 5 "$limit" "$t" --gtest_output="xml:$logs/$name.xml" >"$logs/$name.log" 2>&1
  rc=$?
  wall="$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"
  # Cases from GoogleTest's own closing lines ("[  PASSED  ] N tests.",
  # "[  FAILED  ] Suite.Case" once per failed case after the summary).
  passed="$(grep -Eo '^\[  PASSED  \] [0-9]+' "$logs/$name.log" | awk '{ print $NF }' | tail -1)"
  mapfile -t bad < <(sed -n '/^\[  FAILED  \] [0-9]* tests\?, listed below:/,$p' "$logs/$name.log" \
    | grep -E '^\[  FAILED  \] [A-Za-z_]' | sed -E 's/^\[  FAILED  \] //; s/,.*//')
  total=$((total + ${passed:-0} + ${#bad[@]}))
  failed=$((failed + ${#bad[@]}))
  for b in ${bad[@]+"${bad[@]}"}; do failed_cases+=("$name: $b"); done
  if ((rc != 0)) && ((${#bad[@]} == 0)); then broken+=("$name (exit status $rc$( ((rc == 124 || rc == 137)) && echo ", stopped at the ${limit} s limit"))"); fi
  printf '%-28s exit %3d  %6s s  passed %s  failed %d\n' "$name" "$rc" "$wall" "${passed:-0}" "${#bad[@]}"
done
pct=100
((total > 0)) && pct=$(((total - failed) * 100 / total))
((total > 0)) || echo "No tests were found in $dir"
if ((${#failed_cases[@]} + ${#broken[@]} > 0)); then
  echo "The following tests FAILED:"
  for c in ${failed_cases[@]+"${failed_cases[@]}"}; do echo "  [  FAILED  ] $c"; done
  for c in ${broken[@]+"${broken[@]}"}; do
    echo "  $c: ended abnormally; the end of its log:"
    tail -n 5 "$logs/${c%% *}.log" | sed 's/^/    /'
  done
  echo "Errors while running the GoogleTest executables"
fi
echo "$pct% tests passed, $failed tests failed out of $total (GoogleTest cases; ${#broken[@]} executable(s) ended abnormally)"
((total > 0 && failed == 0 && ${#broken[@]} == 0))
