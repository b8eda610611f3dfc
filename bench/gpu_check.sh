#!/usr/bin/env bash
# One-shot GPU check for collaborators (issue 13): on one NVIDIA GPU of the
# target machine, with a Cuda build, run the test suite, a few mini-app runs
# with JSON results and a short mosaic_bench ladder, and collect logs,
# results, nvidia-smi output and the peak device memory into one directory
# to send back. It is meant to run before any scaling run
# (docs/MULTIGPU_EXPERIMENTS.md, "Run the one-shot GPU check first").
#
#   bench/gpu_check.sh OUTDIR [BUILD_DIR]
#
# BUILD_DIR defaults to build/cuda of this repository (what
# `MOSAIC_PRESET=cuda scripts/run-tests` builds); it must hold
# miniapp/mosaic_miniapp and bench/mosaic_bench. Its tests run through ctest
# where it is a build tree, else (the build/ of a bench/gpu_bundle.sh bundle,
# for a node without this machine's libraries) each tests/test_* executable
# through bench/run_gtests.sh. OUTDIR must not exist or be
# empty: a previous check is never overwritten. Exit status: 0 if every step
# passed, 1 if any failed, 2 for a usage error; OUTDIR/SUMMARY.md is written
# in every case except a usage error. At the end, python3 -m analysis.report
# makes OUTDIR/report/README.md (one page per run: command, hardware,
# software, commit, throughput, diagnostics, memory, accuracy, verdict) and
# its figures from OUTDIR/results; a report that fails is said (report.log,
# SUMMARY.md) and changes neither the verdict nor the exit status, and one
# that no longer fits in the budget (less than 30 s left) is skipped with a
# note saying how to make it afterwards.
#
# The whole check stays under 10 minutes: every step runs under `timeout`,
# and each step's limit is also cut to what is left of a global budget (the
# results page, and its retry without figures, included).
# First a JIT warm-up (<= 150 s in all): where the build carries only PTX
# for this GPU (a Kokkos arch older than the GPU), the driver compiles each
# kernel at its first launch and keeps the result in its JIT cache
# (CUDA_CACHE_PATH, CUDA_CACHE_MAXSIZE; set here unless the caller set
# them), so tiny runs of the mini-app (float and double, blocked and
# sequential) and of the bench launch every kernel once before anything is
# timed. Then tests <= 240 s, mini-app runs <= 60 s each (150 s for the
# 64-stream one), the bitwise checks (run to run, restart, rank count:
# docs/REPRODUCIBILITY.md; fifteen runs <= 60 s each), the allocation
# tracker's host cost per launch (<= 60 s), the bench ladder
# whatever is left (at most 240 s); ladder
# points that no longer fit are skipped and listed as such (not failures).
# The summary's Diagnosis names the first failing step's class: a build or
# driver problem (the binaries could not run kernels on this GPU), a device
# code fault (a bug that shows only on a GPU: report it), or a wrong result
# (the code ran and a check failed).
#
# Environment (all optional):
#   GPU_CHECK_SKIP_TESTS=1  skip the ctest step (e.g. a build dir that holds
#                           only copied binaries, no CTestTestfile); the
#                           summary says the tests were skipped.
#   GPU_CHECK_QUICK=1       tiny problem sizes and short runs, only to try the
#                           script itself (e.g. on a CPU build); the summary
#                           says this is NOT a valid GPU check.
#   GPU_CHECK_BUDGET_S=N    total time budget in seconds (default 570).
#   CUDA_CACHE_PATH, CUDA_CACHE_MAXSIZE
#                           the driver's JIT cache (default here:
#                           OUTDIR/cuda-jit-cache and 4294967296, the
#                           driver's maximum); a path of your own that
#                           survives between jobs saves the warm-up's JIT.
#   GPU_CHECK_LAUNCH="..."  launcher prefix for the mini-app, e.g.
#                           "mpirun -np 1" or "srun -n 1" where a plain
#                           (singleton MPI) start is not allowed; default none.
#   GPU_CHECK_MPIRUN="..."  the launcher of the two-rank run (it appends
#                           "-np 2"), e.g. "srun"; default mpirun from PATH,
#                           and without one that run is skipped (not failed).
#
# Where nvidia-smi is missing the script still runs (so it can be tried on a
# CPU build), warns, and its summary says "no GPU: not a GPU check".
set -euo pipefail

usage() {
  echo "usage: $0 OUTDIR [BUILD_DIR]   (BUILD_DIR defaults to build/cuda of the repository)" >&2
  exit 2
}
[[ $# -ge 1 && $# -le 2 ]] || usage
case "$1" in -h | --help) usage ;; esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The exact command line, quoted so it can be pasted back, with the
# settings that change what the script does.
cmdline=""
for v in GPU_CHECK_SKIP_TESTS GPU_CHECK_QUICK GPU_CHECK_BUDGET_S GPU_CHECK_LAUNCH GPU_CHECK_MPIRUN OMP_NUM_THREADS \
  OMP_PROC_BIND CUDA_VISIBLE_DEVICES; do
  [[ -n "${!v:-}" ]] && cmdline+="$v=$(printf '%q' "${!v}") "
done
cmdline+="$(printf '%q ' "$0" "$@")"
cmdline="${cmdline% }"

build="${2:-$root/build/cuda}"
miniapp="$build/miniapp/mosaic_miniapp"
benchbin="$build/bench/mosaic_bench"
# Check the build before touching OUTDIR, so a refusal leaves nothing behind.
if [[ ! -x "$miniapp" || ! -x "$benchbin" ]]; then
  {
    echo "gpu_check: $build lacks miniapp/mosaic_miniapp or bench/mosaic_bench."
    echo "  Build the Cuda preset first (docs/MULTIGPU_EXPERIMENTS.md, section 1):"
    echo "    export Kokkos_ROOT=/path/to/kokkos-cuda KokkosKernels_ROOT=/path/to/kokkos-kernels-cuda"
    echo "    MOSAIC_PRESET=cuda scripts/run-tests"
    echo "  or pass another build directory as the second argument."
  } >&2
  exit 2
fi
build="$(cd "$build" && pwd)"
miniapp="$build/miniapp/mosaic_miniapp"
benchbin="$build/bench/mosaic_bench"
for tool in timeout awk; do
  command -v "$tool" >/dev/null || { echo "gpu_check: '$tool' is needed and was not found" >&2; exit 2; }
done

out="$1"
if [[ -e "$out" && ! -d "$out" ]]; then
  echo "gpu_check: $out exists and is not a directory; give a new OUTDIR" >&2
  exit 2
fi
if [[ -d "$out" && -n "$(ls -A "$out")" ]]; then
  echo "gpu_check: $out exists and is not empty; refusing to overwrite a previous check (give a new OUTDIR)" >&2
  exit 2
fi
mkdir -p "$out/results" "$out/bench"
out="$(cd "$out" && pwd)"

# The driver's JIT cache for every run below (the caller's, if set).
export CUDA_CACHE_PATH="${CUDA_CACHE_PATH:-$out/cuda-jit-cache}"
export CUDA_CACHE_MAXSIZE="${CUDA_CACHE_MAXSIZE:-4294967296}"

quick="${GPU_CHECK_QUICK:-0}"
skip_tests="${GPU_CHECK_SKIP_TESTS:-0}"
budget="${GPU_CHECK_BUDGET_S:-570}"
[[ "$budget" =~ ^[0-9]+$ ]] || { echo "gpu_check: GPU_CHECK_BUDGET_S must be a whole number of seconds" >&2; exit 2; }
read -r -a launch <<<"${GPU_CHECK_LAUNCH:-}"
host="$(hostname 2>/dev/null || uname -n)"

now() { date +%s.%N; }
t_start="$(now)"
deadline="$(awk -v a="$t_start" -v b="$budget" 'BEGIN { printf "%.3f", a + b }')"
# Seconds left before the global deadline, minus a margin for the summary.
left() { awk -v d="$deadline" -v n="$(now)" 'BEGIN { x = d - n - 5; printf "%d", (x > 0 ? x : 0) }'; }

# --- problem sizes ---------------------------------------------------------
# The ladder is mosaic_bench in float (--dtype double exists) at r=64; the
# points are run in this order, cheap and headline ones first, so a slow host
# loses the expensive ones. The double point, and every point that needs a
# JSON result and the verification section, is a mini-app run.
if [[ "$quick" == 1 ]]; then
  r=16
  ladder=("256 8" "512 8" "256 64" "512 64")
  kblocks=16,32
  bench_seconds=0.05
  mini_d=512
  mini_steps=200 mini_warm=20 mini_steps64=100 mini_warm64=10
else
  r=64
  # d = 8192 at 8 and 128 streams: issue 28's goals (100,000 and 1,000,000
  # samples/s on an H200) and the cost model's prediction beside them.
  ladder=("2048 8" "8192 8" "2048 64" "8192 64" "8192 128" "32768 8" "32768 64")
  # 128 is what block_size: auto picks at r=64 (k = clamp(2r, 32, 128), not
  # yet measured on a GPU); 64 is the neighbour that tells whether the
  # device wants a smaller k. Each k rebuilds the synthetic source on the
  # host, so each one costs as much setup as the sequential run.
  kblocks=64,128
  bench_seconds=1
  mini_d=8192
  # A few thousand steps: enough for a steady rate on a GPU; the CPU
  # reference did 5,000-12,000 samples/s at d=8192, r=64, 8 streams, so even
  # a CPU-speed device finishes in seconds.
  mini_steps=2000 mini_warm=200 mini_steps64=1000 mini_warm64=100
fi

# --- bookkeeping of steps ------------------------------------------------
step_names=() step_rcs=() step_walls=() step_logs=() step_notes=() step_kinds=()
failures=0
time_skips=0 # steps other than ladder points that the budget left out
summary_written=0
monitor_pid=""
mini_runs=()
report_status="not made (the check stopped before it)"
declare -A ladder_status=()

# run_step KIND NAME LOG CAP CMD...: runs CMD under timeout (CAP seconds, or
# less if the budget is nearly spent), output into LOG, and records it.
# Never fails itself: a failing step must not stop the steps after it.
last_rc=0
run_step() {
  local kind="$1" name="$2" log="$3" cap="$4"
  shift 4
  local lim t0 rc=0
  lim="$(left)"
  ((lim > cap)) && lim="$cap"
  if ((lim < 5)); then
    record "$kind" "$name" "-" "0" "-" "skipped: time budget spent"
    last_rc=-1
    return 0
  fi
  {
    echo "# command: $(printf '%q ' "$@")"
    echo "# cwd: $(pwd)   time limit: ${lim} s   start: $(date -u +%FT%TZ)"
  } >"$out/$log"
  t0="$(now)"
  # In the background and waited for, so that Ctrl-C or SIGTERM reaches the
  # script at once (a foreground child would delay the trap until it ends);
  # the trap then stops the step through timeout, which passes the signal on.
  timeout -k 10 "$lim" "$@" >>"$out/$log" 2>&1 &
  current=("$!" "$kind" "$name" "$log" "$t0")
  wait "${current[0]}" || rc=$?
  current=()
  finish_step "$kind" "$name" "$log" "$t0" "$rc" "$( ((rc == 124 || rc == 137)) && echo "timed out after ${lim} s")"
  last_rc=$rc
  return 0
}
current=()
finish_step() {
  local wall
  wall="$(awk -v a="$4" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')"
  echo "# exit status: $5   wall: $wall s   end: $(date -u +%FT%TZ)" >>"$out/$3"
  record "$1" "$2" "$5" "$wall" "$3" "$6"
}
record() {
  step_kinds+=("$1") step_names+=("$2") step_rcs+=("$3") step_walls+=("$4") step_logs+=("$5") step_notes+=("$6")
  # A ladder point cut by the time limit is a budget decision, not a defect.
  if [[ "$3" != "-" && "$3" != 0 ]] && ! [[ "$1" == ladder && ("$3" == 124 || "$3" == 137) ]]; then
    failures=$((failures + 1))
  fi
  if [[ "$3" == "-" && "$1" != ladder && "$1" != warmup && "$6" == skipped:* ]]; then time_skips=$((time_skips + 1)); fi
  echo "gpu_check: $2: ${3/#-/not run} ${6:+($6)} [${4} s]" >&2
}

# --- GPU presence and the memory monitor ---------------------------------
gpu=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then gpu=1; fi
if ((gpu == 0)); then
  {
    echo "gpu_check: WARNING: nvidia-smi is missing or sees no GPU on this machine."
    echo "gpu_check: WARNING: this run is NOT a GPU check; it only exercises the script."
  } >&2
fi

start_monitor() {
  ((gpu == 1)) || return 0
  # Sampled every 500 ms for the benchmark steps: the device's peak is
  # taken from this file (the mini-app's own device_used_bytes_at_phase is
  # read as each phase ends; its peak_allocated_bytes_per_rank counts only
  # what it allocated through Kokkos). The index column tells GPUs apart on
  # shared nodes.
  nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total,utilization.gpu \
    --format=csv -lms 500 >"$out/nvidia-smi-monitor.csv" 2>&1 &
  monitor_pid=$!
}
stop_monitor() {
  if [[ -n "$monitor_pid" ]]; then
    kill "$monitor_pid" 2>/dev/null || true
    wait "$monitor_pid" 2>/dev/null || true
    monitor_pid=""
  fi
}

# --- summary ---------------------------------------------------------------
# Lines "key value" of the mini-app's end-of-run summary, from its log.
mini_field() { grep -m1 -E "^  $2 " "$out/$1" 2>/dev/null | sed -E "s/^  $2 +//" || true; }
# "6/6 passed" (or which failed) from the verification checks of a result.
checks_of() {
  awk '/"checks": \[/ { c = 1; next }
       c && /^ *\],?$/ { c = 0 }
       c && /"name":/ { n = $0; sub(/.*"name": *"/, "", n); sub(/".*/, "", n); tot++ }
       c && /"passed": false/ { bad = bad " " n; nb++ }
       END { if (tot) printf "%d/%d passed%s", tot - nb, tot, (nb ? ";" bad " failed" : "") }' "$out/$1" 2>/dev/null || true
}
# Exit status recorded for a step name ("" if it never ran).
step_rc_of() {
  local i
  for i in "${!step_names[@]}"; do [[ "${step_names[$i]}" != "$1" ]] || echo "${step_rcs[$i]}"; done
}
json_field() { grep -m1 -E "\"$2\":" "$out/$1" 2>/dev/null | sed -E 's/.*": *"?([^",]*)"?,?$/\1/' || true; }
# The integers of the first array named FIELD in a result (the mini-app
# writes one value a line), one a line; of an array of objects, their
# member SUBFIELD's; "null" where FIELD is null, nothing where it is absent.
json_numbers() {  # FILE FIELD [SUBFIELD]
  awk -v key="\"$2\":" -v member="${3:+\"$3\":}" '
    !on && index($0, key) {
      if ($0 ~ /: *null,?$/) { print "null"; exit }
      if ($0 !~ /\[ *$/) exit
      on = 1; depth = 1; next }
    on {
      v = $0; gsub(/[ ,]/, "", v)
      if (member == "" && v ~ /^-?[0-9]+$/) print v
      if (member != "" && index($0, member)) { sub(/.*:/, "", v); print v }
      depth += gsub(/\[/, "[") - gsub(/\]/, "]")
      if (depth <= 0) exit }' "$out/$1" 2>/dev/null || true
}

# The class of a failed step, from its exit status and log, and the log
# line that shows it: "driver" (the binaries could not run kernels on this
# GPU: a build or driver problem), "device" (a fault that shows only on a
# GPU: a bug to report), "wrong" (the code ran and a check failed), "time"
# (stopped by its time limit), or "other".
driver_patterns='CUDA driver version is insufficient|no kernel image is available|unsupported toolchain|PTX was compiled with|cudaErrorNoDevice|no CUDA-capable device|Kokkos::Cuda::initialize|CUDA_ERROR_|error while loading shared libraries|cudaErrorInsufficientDriver|out of memory'
device_patterns='attempt to access inaccessible memory space|deep_copy with no available copy mechanism|illegal memory access|misaligned address|illegal instruction|cudaErrorLaunchFailure|unspecified launch failure'
wrong_patterns='verification +FAILED|\[  FAILED  \]|"passed": false|CHECK FAILED|vendor gemm check failed|sgemm check failed'
classify() {  # RC LOG -> "class<TAB>first matching line"
  local rc="$1" log="$out/$2" line
  if [[ "$rc" == 124 || "$rc" == 137 ]]; then printf 'time\ttimed out\n'; return; fi
  if [[ "$rc" == 126 || "$rc" == 127 ]]; then printf 'driver\texit status %s: not executable or a library missing\n' "$rc"; return; fi
  for c in driver device wrong; do
    local pat="${c}_patterns"
    line="$(grep -m1 -E "${!pat}" "$log" 2>/dev/null || true)"
    if [[ -n "$line" ]]; then printf '%s\t%s\n' "$c" "$line"; return; fi
  done
  printf 'other\texit status %s\n' "$rc"
}

exec_space=""
write_summary() {
  local s="$out/SUMMARY.md" i valid=1 reasons=()
  ((gpu == 1)) || { valid=0; reasons+=("no GPU: not a GPU check (nvidia-smi missing or sees no GPU)"); }
  [[ "$quick" != 1 ]] || { valid=0; reasons+=("GPU_CHECK_QUICK=1: QUICK mode, tiny sizes, not a valid GPU check"); }
  [[ "$skip_tests" != 1 ]] || { valid=0; reasons+=("GPU_CHECK_SKIP_TESTS=1: the test suite was skipped"); }
  ((time_skips == 0)) || { valid=0; reasons+=("incomplete: $time_skips test or mini-app step(s) not run for lack of time"); }
  if [[ -z "$exec_space" ]]; then
    valid=0
    reasons+=("the build's Kokkos execution space is unknown (no mini-app result, no bench header)")
  elif [[ "$exec_space" != Cuda ]]; then
    valid=0
    reasons+=("the build runs on Kokkos execution space '$exec_space', not Cuda: not a GPU check")
  fi
  ((summary_written == 0)) || return 0
  summary_written=1
  {
    echo "# MOSAIC one-shot GPU check"
    echo
    if ((failures > 0)); then
      echo "**Result: $failures step(s) FAILED.**"
    else
      echo "**Result: every step that ran passed.**"
    fi
    if ((valid == 1)); then
      echo "**Validity: a GPU check (GPU present, Cuda build, full sizes, tests run).**"
    else
      echo "**Validity: NOT a valid GPU check:**"
      for i in "${reasons[@]}"; do echo "- $i"; done
    fi
    [[ -z "${interrupted:-}" ]] || echo "- the script was interrupted ($interrupted); the steps below are the ones that ran"
    echo
    echo "## Diagnosis"
    echo
    local verdict="PASS" diag_lines=() seen_driver=0 seen_device=0 seen_wrong=0 seen_time=0 seen_other=0
    for i in "${!step_names[@]}"; do
      local rc="${step_rcs[$i]}" cls msg
      [[ "$rc" != "-" && "$rc" != 0 ]] || continue
      IFS=$'\t' read -r cls msg < <(classify "$rc" "${step_logs[$i]}")
      case "$cls" in
        driver) seen_driver=1; cls="BUILD/DRIVER PROBLEM" ;;
        device) seen_device=1; cls="DEVICE CODE FAULT (report it: a bug, not your setup)" ;;
        wrong) seen_wrong=1; cls="WRONG RESULT" ;;
        time) seen_time=1; cls="INCOMPLETE (time limit)" ;;
        *) seen_other=1; cls="FAILED (unclassified; see the log)" ;;
      esac
      diag_lines+=("- ${step_names[$i]}: $cls: \`${msg//\`/\'}\` (${step_logs[$i]})")
    done
    if ((seen_driver)); then verdict="BUILD/DRIVER PROBLEM: the binaries could not run kernels on this GPU (driver, architecture or libraries; README, \"GPUs: native code, the driver and the JIT cache\")"
    elif ((seen_device)); then verdict="DEVICE CODE FAULT: a fault that shows only on a GPU; please report it with this directory"
    elif ((seen_wrong)); then verdict="WRONG RESULT: the code ran on the GPU and a check failed"
    elif ((seen_other)); then verdict="FAILED: a step failed for a reason not recognized (see below)"
    elif ((seen_time || time_skips > 0)); then verdict="INCOMPLETE: steps were stopped or skipped for time"
    fi
    [[ "$verdict" != PASS || $valid == 1 ]] || verdict="PASS of the steps that ran, but NOT a valid GPU check (above)"
    echo "**Verdict: $verdict.**"
    echo
    for i in "${diag_lines[@]+"${diag_lines[@]}"}"; do echo "$i"; done
    [[ ${#diag_lines[@]} -gt 0 ]] || echo "No step failed."
    echo
    echo "JIT cache: CUDA_CACHE_PATH=$CUDA_CACHE_PATH, CUDA_CACHE_MAXSIZE=$CUDA_CACHE_MAXSIZE; the warm-up steps"
    echo "(JIT warm-up ...) launch every kernel once before anything is timed; their times are not measurements."
    echo
    echo "- host: $host; date (UTC): $(date -u +%FT%TZ); wall time: $(awk -v a="$t_start" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }') s of a ${budget} s budget"
    echo "- commit: $(git -C "$root" rev-parse HEAD 2>/dev/null || echo 'not a git checkout'); uncommitted files: $(git -C "$root" status --porcelain 2>/dev/null | wc -l)"
    echo "- build: $build (Kokkos execution space: ${exec_space:-unknown})"
    echo "- GPU present: $([[ $gpu == 1 ]] && echo yes || echo 'no GPU: not a GPU check')"
    echo "- command line: \`$cmdline\`"
    echo "- provenance: environment.txt (date, host, commit, nproc, --version, nvidia-smi, nvidia-smi -q)"
    echo "- results page (python3 -m analysis.report on results/): $report_status"
    echo
    echo "## Steps"
    echo
    echo "| step | exit status | wall s | log | note |"
    echo "|---|---|---|---|---|"
    for i in "${!step_names[@]}"; do
      echo "| ${step_names[$i]} | ${step_rcs[$i]/#-/not run} | ${step_walls[$i]} | ${step_logs[$i]} | ${step_notes[$i]} |"
    done
    echo
    echo "Exit status 124 or 137: stopped by the step's time limit. Ladder points stopped or skipped"
    echo "for time are not counted as failures; mini-app runs and tests are."
    echo
    echo "## Test suite"
    echo
    if [[ -f "$out/tests.log" ]]; then
      echo '```'
      grep -E 'tests passed|tests failed|Total Test time|No tests were found' "$out/tests.log" || echo "no ctest summary line in tests.log"
      sed -n '/The following tests FAILED:/,/^Errors while running/p' "$out/tests.log"
      echo '```'
      echo "Full output: tests.log; JUnit XML: tests.xml (ctest) or tests/ (one log and XML per executable)."
    else
      echo "Not run$([[ "$skip_tests" == 1 ]] && echo " (GPU_CHECK_SKIP_TESTS=1)")."
    fi
    echo
    echo "## Mini-app runs: verification verdicts"
    echo
    echo "From each run's end-of-run summary (its log) and result JSON (results/); the dry-run"
    echo "memory estimate is the mini-app's own (--dry-run, per rank)."
    echo
    echo "| run | kernel | verification | checks | update samples/s (figure of merit) | end-to-end samples/s | peak allocated, largest rank (bytes) | device used at loop end (bytes) | dry-run estimate | result |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    for m in "${mini_runs[@]+"${mini_runs[@]}"}"; do
      local log="miniapp_$m.log" js="results/$m.json" ver fom e2e peak dev est kern
      kern="$(mini_field "$log" kernel)"
      ver="$(mini_field "$log" verification)"
      fom="$(mini_field "$log" "FIGURE OF MERIT" | awk '{print $1}')"
      e2e="$(mini_field "$log" end-to-end | awk '{print $1}')"
      peak="$(json_numbers "$js" peak_allocated_bytes_per_rank | sort -n | tail -n 1)"
      [[ -z "$peak" ]] || peak="$peak in $(json_field "$js" peak_allocated_space)"
      dev="$(json_numbers "$js" device_used_bytes_at_phase bytes | tail -n 1)"
      [[ "$dev" != null ]] || dev="null (not a device build)"
      est="$(grep -m1 '^# memory:' "$out/miniapp_$m.dry-run.log" 2>/dev/null | sed -E 's/^# memory: about ([^ ]+ MiB).*/\1/' || true)"
      [[ -f "$out/$log" ]] || ver="not run"
      # A run stopped by its time limit still prints a summary and writes a
      # partial result (status interrupted): its verdict is not a pass.
      local rc st
      rc="$(step_rc_of "miniapp $m")"
      st="$(grep -m1 -E '^  "status":' "$out/$js" 2>/dev/null | sed -E 's/.*: *"([^"]*)".*/\1/' || true)"
      if [[ -n "$rc" && "$rc" != 0 && "$rc" != - ]]; then ver="${ver:-no verdict} (run exit $rc${st:+, result status $st})"; fi
      echo "| $m | ${kern:--} | ${ver:-no verdict (see log)} | $(checks_of "$js") | ${fom:--} | ${e2e:--} | ${peak:--} | ${dev:--} | ${est:--} | $([[ -f "$out/$js" ]] && echo "$js" || echo none) |"
    done
    echo
    echo "## Bench ladder (mosaic_bench, float, r=$r, block sizes $kblocks, --seconds $bench_seconds)"
    echo
    echo "Sequential kernel and blocked update in the same process per point; full tables in"
    echo "bench/*.log, every row in results/bench_ladder.csv."
    echo
    echo "| d | streams | status | sequential samples/s | best blocked k | blocked samples/s | speedup | broken streams |"
    echo "|---|---|---|---|---|---|---|---|"
    for p in "${ladder[@]}"; do
      local d="${p% *}" b="${p#* }"
      local st="${ladder_status[$p]:-not reached}" lg="bench/ladder_d${d}_s${b}.log"
      if [[ -f "$out/$lg" ]]; then
        awk -v d="$d" -v b="$b" -v st="$st" -F'|' '
          /^\| [0-9]/ && NF == 15 { seq = $5; broken += $14 }
          /^# blocked: / { sp = $7 + 0; if (sp > best) { best = sp; k = $5; su = $8 }; broken += $12 }
          END { gsub(/ /, "", seq); gsub(/ /, "", k); gsub(/ /, "", su)
                printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", d, b, st, (seq == "" ? "-" : seq),
                       (k == "" ? "-" : k), (best > 0 ? sprintf("%.1f", best) : "-"), (su == "" ? "-" : su), broken + 0 }' \
          "$out/$lg"
      else
        echo "| $d | $b | $st | - | - | - | - | - |"
      fi
    done
    echo
    echo "## Device memory"
    echo
    if ((gpu == 1)) && [[ -s "$out/nvidia-smi-monitor.csv" ]]; then
      echo "nvidia-smi sampled every 500 ms during the mini-app and bench steps (nvidia-smi-monitor.csv);"
      echo "memory.used is the whole GPU's (other processes included); the check itself runs on the"
      echo "first visible device (CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset})."
      echo
      echo "| GPU index | peak memory.used MiB | memory.used at start MiB | memory.total MiB | peak utilization % | samples |"
      echo "|---|---|---|---|---|---|"
      awk -F', *' 'NR > 1 && $2 ~ /^[0-9]+$/ {
          g = $2; u = $3 + 0; t = $4 + 0; z = $5 + 0
          if (!(g in n)) { first[g] = u; order[++ng] = g }
          n[g]++; if (u > peak[g]) peak[g] = u; tot[g] = t; if (z > util[g]) util[g] = z }
        END { for (i = 1; i <= ng; i++) { g = order[i]
                printf "| %s | %d | %d | %d | %d | %d |\n", g, peak[g], first[g], tot[g], util[g], n[g] } }' \
        "$out/nvidia-smi-monitor.csv"
    else
      echo "No device memory measured: $([[ $gpu == 1 ]] && echo 'the monitor wrote nothing' || echo 'no GPU: not a GPU check (no nvidia-smi)')."
    fi
    echo
    echo "The mini-app's own figures (table above; a sweep's first point): *peak allocated* is the"
    echo "largest of runs[].memory.peak_allocated_bytes_per_rank, each rank's high-water mark of the"
    echo "bytes it allocated through Kokkos in peak_allocated_space during the run (exact: without the"
    echo "CUDA context or other processes); *device used at loop end* is the last entry of"
    echo "runs[].memory.device_used_bytes_at_phase, cudaMemGetInfo's total - free as the loop ended"
    echo "(max over the ranks; the whole device, context and other processes included; null on a"
    echo "non-device build). Neither is the nvidia-smi peak above: see docs/RESULT-FORMAT.md."
    echo
    echo "## What to send"
    echo
    echo "\`tar czf gpu_check_$host.tgz -C $(dirname "$out") $(basename "$out")\`, with the commit above,"
    echo "as described in docs/MULTIGPU_EXPERIMENTS.md (\"Run the one-shot GPU check first\") and COLLABORATION.md."
  } >"$s"
}

interrupted=""
on_exit() {
  local rc=$?
  stop_monitor
  write_summary || true
  exit "$rc"
}
on_signal() {
  interrupted="$1"
  trap '' INT TERM
  if ((${#current[@]} > 0)); then
    kill -TERM "${current[0]}" 2>/dev/null || true
    local rc=0
    wait "${current[0]}" 2>/dev/null || rc=$?
    finish_step "${current[1]}" "${current[2]}" "${current[3]}" "${current[4]}" "$rc" "interrupted by $1"
    current=()
  fi
  exit "$2"
}
trap on_exit EXIT
trap 'on_signal SIGINT 130' INT
trap 'on_signal SIGTERM 143' TERM

# --- provenance ------------------------------------------------------------
{
  echo "== date -u"; date -u
  echo "== hostname"; echo "$host"
  echo "== command line"; echo "$cmdline"
  echo "== git rev-parse HEAD"; git -C "$root" rev-parse HEAD 2>&1 || echo "not a git checkout"
  echo "== git status --porcelain | wc -l (uncommitted files; 0 = clean)"
  git -C "$root" status --porcelain 2>/dev/null | wc -l
  # GNU nproc follows OMP_NUM_THREADS; --all is the machine's count.
  echo "== nproc"; echo "$(nproc) (nproc --all: $(nproc --all 2>/dev/null || echo '?'))"
  echo "== uname -a"; uname -a
  echo "== CPU"; (lscpu 2>/dev/null | grep -E '^(Model name|Socket|Core|Thread|CPU\(s\))') || true
  echo "== build dir"; echo "$build"
  echo "== mosaic_miniapp --version"; timeout 60 "$miniapp" --version 2>&1 || echo "(exit status $?)"
  echo "== environment (CUDA_*, OMP_*, KOKKOS_*, GPU_CHECK_*)"
  env | grep -E '^(CUDA_|OMP_|KOKKOS_|Kokkos_|GPU_CHECK_)' | sort || true
  echo "== nvcc --version"; (command -v nvcc >/dev/null && nvcc --version) || echo "nvcc not on PATH"
  echo "== nvidia-smi"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi 2>&1 || echo "(nvidia-smi exit status $?)"
    echo "== nvidia-smi -q"
    nvidia-smi -q 2>&1 || echo "(nvidia-smi -q exit status $?)"
  else
    echo "nvidia-smi: MISSING on this machine: no GPU, this is not a GPU check"
  fi
} >"$out/environment.txt" 2>&1

# --- (0) JIT warm-up ---------------------------------------------------------
# Tiny runs that launch every kernel of the mini-app and the bench once, so
# that the driver's JIT (where the build has no native code for this GPU)
# happens here and lands in the cache, not in a timed step. Not a
# measurement; a failure here is reported like any other step.
warm_deck="$root/inputs/single_gpu.yaml"
warm_sets=(--set problem.d=512 --set problem.rank=16 --set streams.per_rank=2 --set run.steps=64
           --set run.warmup_steps=8 --set run.diagnostics_every=32)
warm_end="$(awk -v n="$(now)" 'BEGIN { printf "%.3f", n + 150 }')"
warm_left() { awk -v e="$warm_end" -v n="$(now)" 'BEGIN { x = e - n; printf "%d", (x > 0 ? x : 0) }'; }
for w in "float auto" "float 1" "double auto" "double 1"; do
  dt="${w% *}" bs="${w#* }"
  run_step warmup "JIT warm-up mini-app $dt block_size=$bs" "warmup_miniapp_${dt}_${bs}.log" "$(warm_left)" \
    ${launch[@]+"${launch[@]}"} "$miniapp" "$warm_deck" "${warm_sets[@]}" --set "problem.dtype=$dt" \
    --set "algorithm.block_size=$bs" --output "$out/warmup_${dt}_${bs}.json"
done
run_step warmup "JIT warm-up bench" "warmup_bench.log" "$(warm_left)" \
  "$benchbin" --d 256 --r 16 --streams 2 --block-size 32 --seconds 0.05 --ref-steps 2

# --- (a) the test suite ----------------------------------------------------
if [[ "$skip_tests" != 1 ]]; then
  # -j1: the tests share the one GPU, and their timing stays readable. An
  # empty test list is an error (a build dir without tests is no check).
  # The project needs CMake >= 3.25, so --test-dir and --output-junit exist.
  if [[ -f "$build/CTestTestfile.cmake" ]]; then
    OMP_PROC_BIND="${OMP_PROC_BIND:-false}" run_step test ctest tests.log 240 \
      ctest --test-dir "$build" --output-on-failure -j1 --timeout 300 --no-tests=error --output-junit "$out/tests.xml"
  else
    # A folder of test executables without a ctest tree (a bundle of
    # bench/gpu_bundle.sh): each GoogleTest executable in turn.
    OMP_PROC_BIND="${OMP_PROC_BIND:-false}" run_step test "unit tests (GoogleTest executables)" tests.log 240 \
      "$root/bench/run_gtests.sh" "$build/tests" "$out/tests" 120
  fi
else
  record test ctest "-" "0" "-" "skipped (GPU_CHECK_SKIP_TESTS=1): not a complete check"
fi

start_monitor

# --- (b) mini-app runs with JSON results -----------------------------------
# inputs/single_gpu.yaml is the d-ladder deck (float, r=64, 8 streams); each
# run pins one d and changes only what the point needs. Its end-of-run
# summary holds the verification verdict; --dry-run first records the
# resolved deck and the mini-app's memory estimate.
deck="$root/inputs/single_gpu.yaml"
mini_point() {
  local name="$1" cap="$2"
  shift 2
  local sets=(--set "problem.d=$mini_d" --set "problem.rank=$r" "$@")
  mini_runs+=("$name")
  run_step miniapp "miniapp $name (dry-run)" "miniapp_$name.dry-run.log" 30 \
    ${launch[@]+"${launch[@]}"} "$miniapp" "$deck" "${sets[@]}" --output "$out/results/$name.json" --dry-run
  run_step miniapp "miniapp $name" "miniapp_$name.log" "$cap" \
    ${launch[@]+"${launch[@]}"} "$miniapp" "$deck" "${sets[@]}" --output "$out/results/$name.json"
}
cd "$out"
s8=(--set streams.per_rank=8 --set "run.steps=$mini_steps" --set "run.warmup_steps=$mini_warm")
s64=(--set streams.per_rank=64 --set "run.steps=$mini_steps64" --set "run.warmup_steps=$mini_warm64")
mini_point "d${mini_d}_r${r}_s8_float_blocked" 60 "${s8[@]}" --set problem.dtype=float --set algorithm.block_size=auto
mini_point "d${mini_d}_r${r}_s8_float_sequential" 60 "${s8[@]}" --set problem.dtype=float --set algorithm.block_size=1
mini_point "d${mini_d}_r${r}_s8_double_blocked" 60 "${s8[@]}" --set problem.dtype=double --set algorithm.block_size=auto
# 64 streams: the synthetic source builds each stream's truth on the host
# (one host thread per stream), so setup grows with the streams; hence the
# longer limit. Each run's verdict includes the reference cross-check: one
# stream recomputed by the host reference in double, which is what shows
# the GPU computed MOSAIC (reference_rel_error in the summary).
mini_point "d${mini_d}_r${r}_s64_float_blocked" 150 "${s64[@]}" --set problem.dtype=float --set algorithm.block_size=auto
# Data with gaps (ALGORITHM.md section 7): 5% of the entries missing at
# random, stepped by the masked kernel (one sample at a time).
mini_point "d${mini_d}_r${r}_s8_float_missing5" 60 "${s8[@]}" --set problem.dtype=float \
  --set source.missing_rate=0.05 --set algorithm.missing=posterior
# Two ranks sharing the one GPU (weak, 4 streams each): the multi-rank path
# (device selection, reductions, the gathered result) on a device build.
read -r -a mpi_launch <<<"${GPU_CHECK_MPIRUN:-$(command -v mpirun || true)}"
if ((${#mpi_launch[@]} > 0)); then
  saved_launch=(${launch[@]+"${launch[@]}"})
  launch=("${mpi_launch[@]}" -np 2)
  mini_point "d${mini_d}_r${r}_2ranks_s4_float_blocked" 60 --set streams.per_rank=4 --set "run.steps=$mini_steps" \
    --set "run.warmup_steps=$mini_warm" --set problem.dtype=float --set algorithm.block_size=auto
  launch=(${saved_launch[@]+"${saved_launch[@]}"})
else
  record miniapp "miniapp two ranks" "-" "0" "-" "not run: no mpirun on PATH (GPU_CHECK_MPIRUN names one)"
fi
exec_space="$(json_field "results/${mini_runs[0]}.json" kokkos_default_execution_space)"

# --- (b2) bitwise: run to run, restart, rank count ----------------------------
# The promises of docs/REPRODUCIBILITY.md, compared byte for byte: the same
# run twice must write the same final states; so must the run stopped at
# step 100 and resumed from its checkpoint, and the run on 2 ranks (strong
# mode). On a GPU a GEMM that accumulates with atomics breaks all three
# (issue 36: Kokkos Kernels' dot-based path for small GEMMs at large d; the
# engine calls cuBLAS itself instead), and a cuBLAS kernel chosen for
# another batch count (4 streams per rank instead of 8) would break the
# third: cuBLAS does not promise the same kernel, so this is where the
# project's promise is tested, not assumed. Short blocks (a diagnostics
# point every 5 steps) at d = 16,384 reach the small shapes; so does the
# maintained solve's one-sample block; the sequential kernel's team
# reductions are the third variant. Each run writes its final states
# (output.state_dir, gathered in stream order whatever the ranks), compared
# with cmp in both directions.
det_d=16384
[[ "$quick" != 1 ]] || det_d="$mini_d"
det_sets=(--set "problem.d=$det_d" --set "problem.rank=$r" --set streams.mode=strong --set streams.total=8
          --set problem.dtype=float --set run.steps=200 --set run.warmup_steps=20 --set run.diagnostics_every=5)
mkdir -p "$out/determinism"
# det_run NAME LAUNCH... -- MINIAPP_ARGS...: one run of the variant, its
# states in determinism/<variant>_NAME.
det_run() {
  local name="$1" cmd=()
  shift
  while [[ "$1" != -- ]]; do cmd+=("$1"); shift; done
  shift
  run_step determinism "bitwise $dname: run $name (d=$det_d)" "determinism/${dname}_$name.log" 60 \
    ${cmd[@]+"${cmd[@]}"} "$miniapp" "$deck" "${det_sets[@]}" "${dsets[@]}" \
    --set "output.state_dir=$out/determinism/${dname}_$name" --output "$out/determinism/${dname}_$name.json" "$@"
}
# det_compare WHAT A B: the same state files in runs A and B, the same bytes.
det_compare() {
  run_step determinism "bitwise $dname: $1" "determinism/${dname}_compare_$2_$3.log" 30 bash -c '
    shopt -s nullglob
    a=("$1"/*.npy) bad=0
    ((${#a[@]} > 0)) || { echo "CHECK FAILED: no state files in $1"; exit 1; }
    for g in "$2"/*.npy; do
      [[ -f "$1/${g##*/}" ]] || { echo "CHECK FAILED: ${g##*/} only in $2"; bad=1; }
    done
    for f in "${a[@]}"; do
      g="$2/${f##*/}"
      if [[ ! -f "$g" ]]; then echo "CHECK FAILED: ${f##*/} missing in $2"; bad=1
      elif cmp -s "$f" "$g"; then echo "identical: ${f##*/} ($(stat -c %s "$f") bytes)"
      else echo "CHECK FAILED: ${f##*/} differs ($(cmp -l "$f" "$g" | wc -l) bytes)"; bad=1; fi
    done
    exit $bad' compare "$out/determinism/${dname}_$2" "$out/determinism/${dname}_$3"
}
for v in "blocked:--set algorithm.block_size=auto" \
         "maintained:--set algorithm.block_size=1 --set algorithm.precision_solve=maintained" \
         "sequential:--set algorithm.block_size=1"; do
  dname="${v%%:*}"
  read -r -a dsets <<<"${v#*:}"
  # det_rc[NAME]: the run's exit status (-1: skipped, the budget spent;
  # "none": not started).
  declare -A det_rc=([a]=none [b]=none [resumed]=none [ranks2]=none)
  det_run a ${launch[@]+"${launch[@]}"} --
  det_rc[a]=$last_rc
  det_run b ${launch[@]+"${launch[@]}"} --
  det_rc[b]=$last_rc
  # Stopped at step 100 (a checkpoint at the end), then resumed to 200.
  det_run stopped ${launch[@]+"${launch[@]}"} -- --set run.steps=100 \
    --set "output.checkpoint.dir=$out/determinism/ckpt_$dname"
  if ((last_rc == 0)); then
    det_run resumed ${launch[@]+"${launch[@]}"} -- --set "output.checkpoint.dir=$out/determinism/ckpt_$dname" \
      --restart "$out/determinism/ckpt_$dname"
    det_rc[resumed]=$last_rc
  else
    det_rc[resumed]=$((last_rc == -1 ? -1 : 1))
  fi
  if ((${#mpi_launch[@]} > 0)); then
    det_run ranks2 "${mpi_launch[@]}" -np 2 --
    det_rc[ranks2]=$last_rc
  fi
  for pair in "run to run:b" "restart:resumed" "rank count (1 and 2 ranks):ranks2"; do
    what="${pair%%:*}" other="${pair#*:}"
    if [[ "${det_rc[a]}" == 0 && "${det_rc[$other]}" == 0 ]]; then
      det_compare "$what" a "$other"
    elif [[ "$other" == ranks2 && ${#mpi_launch[@]} -eq 0 ]]; then
      record determinism "bitwise $dname: $what" "-" "0" "-" "not run: no mpirun on PATH (GPU_CHECK_MPIRUN names one)"
    elif [[ "${det_rc[a]}" == -1 || "${det_rc[$other]}" == -1 ]]; then
      record determinism "bitwise $dname: $what" "-" "0" "-" "skipped: time budget spent"
    else
      record determinism "bitwise $dname: $what" "-" "0" "-" "not compared: a run failed"
    fi
  done
  unset det_rc
done

# --- (b3) the allocation tracker's host cost --------------------------------
# Every run installs the allocation tracker (util/allocation_tracker.hpp);
# with a Kokkos Tools callback set, every launch and allocation takes
# Kokkos' profiling path. Launches with no fence between them time the
# host's launch path, before and after the tracker is installed.
tracker_bin="$build/bench/mosaic_tracker_cost"
if [[ -x "$tracker_bin" ]]; then
  run_step tracker "allocation tracker cost per launch" "tracker_cost.log" 60 "$tracker_bin" 200000 20000 5
else
  record tracker "allocation tracker cost per launch" "-" "0" "-" "not run: no $tracker_bin in this build"
fi

# --- (c) the bench ladder ----------------------------------------------------
# mosaic_bench runs the sequential kernel, then the blocked update for each
# k of --block-size, each for about --seconds, on freshly built streams.
# One process per (d, streams), so a point stopped by its time limit loses
# only itself. Setup (host-side truth of every stream, rebuilt per kernel)
# grows like streams x d; a point whose cost, extrapolated from the points
# already run, does not fit in what is left is skipped rather than started
# and killed.
ladder_end="$(awk -v n="$(now)" 'BEGIN { printf "%.3f", n + 240 }')"
nk=$(awk -v s="$kblocks" 'BEGIN { print split(s, a, ",") }')
fixed=$(awk -v s="$bench_seconds" -v k="$nk" 'BEGIN { printf "%.1f", (k + 1) * s + 5 }')
rate=0 # seconds of setup per (stream x d), the largest seen
for p in "${ladder[@]}"; do
  d="${p% *}" b="${p#* }"
  lim=$(awk -v e="$ladder_end" -v n="$(now)" 'BEGIN { x = e - n; printf "%d", (x > 0 ? x : 0) }')
  g="$(left)"
  ((lim > g)) && lim=$g
  est=$(awk -v f="$fixed" -v r="$rate" -v b="$b" -v d="$d" 'BEGIN { printf "%.0f", f + r * b * d }')
  if ((lim < 10)) || awk -v e="$est" -v l="$lim" -v r="$rate" 'BEGIN { exit !(r > 0 && e > l) }'; then
    if ((lim < 10)); then ladder_status[$p]="skipped: time budget spent"
    else ladder_status[$p]="skipped: about ${est} s needed, ${lim} s left"; fi
    record ladder "bench d=$d streams=$b" "-" "0" "-" "${ladder_status[$p]}"
    continue
  fi
  run_step ladder "bench d=$d streams=$b" "bench/ladder_d${d}_s${b}.log" "$lim" \
    "$benchbin" --d "$d" --r "$r" --streams "$b" --block-size "$kblocks" --seconds "$bench_seconds" --ref-steps 3
  if ((last_rc == 0)); then
    ladder_status[$p]="ok"
    w="${step_walls[-1]}"
    rate=$(awk -v w="$w" -v f="$fixed" -v b="$b" -v d="$d" -v r="$rate" \
      'BEGIN { x = (w - f) / (b * d); if (x < 0) x = 0; printf "%.9f", (x > r ? x : r) }')
  elif ((last_rc == 124 || last_rc == 137)); then
    ladder_status[$p]="stopped at the time limit (partial log)"
  else
    ladder_status[$p]="FAILED (exit $last_rc)"
  fi
  [[ -n "$exec_space" ]] || exec_space="$(grep -m1 -oE 'execution space [A-Za-z]+' "$out/bench/ladder_d${d}_s${b}.log" | awk '{print $3}' || true)"
done
stop_monitor

# Every ladder row in one CSV, for analysis without parsing markdown.
{
  echo "d,r,streams,kernel,k,steps,samples_per_s,speedup_vs_sequential,gflops_model,pct_of_sgemm,clamped,broken"
  for p in "${ladder[@]}"; do
    d="${p% *}" b="${p#* }"
    f="$out/bench/ladder_d${d}_s${b}.log"
    [[ -f "$f" ]] || continue
    awk -v b="$b" -F'|' '
      function t(x) { gsub(/^ +| +$/, "", x); return x }
      /^\| [0-9]/ && NF == 15 { printf "%s,%s,%s,sequential,1,%s,%s,1.00,%s,,%s,%s\n", t($2), t($3), b, t($4), t($5), t($11), t($13), t($14) }
      /^# blocked: / { s = t($8); sub(/x$/, "", s); p = t($10); sub(/%$/, "", p)
                       printf "%s,%s,%s,blocked,%s,%s,%s,%s,%s,%s,%s,%s\n", t($2), t($3), b, t($5), t($6), t($7), s, t($9), p, t($11), t($12) }' "$f"
  done
} >"$out/results/bench_ladder.csv"

# --- (d) the results page ----------------------------------------------------
# analysis.report on the mini-app results: report/README.md, one page with
# each run's command, hardware, software, commit, throughput, diagnostics,
# memory, accuracy and verdict, and its figures. Not a step of the check: a
# report that fails is said (report.log, the summary, stderr) and changes
# neither the verdict nor the exit status. Debian's /usr/bin/python3 has
# matplotlib where another python3 may not; without it, the page alone.
report_python=/usr/bin/python3
[[ -x "$report_python" ]] || report_python="$(command -v python3 || true)"
if [[ -z "$report_python" ]]; then
  report_status="not made: no python3"
elif [[ -z "$(find "$out/results" -name '*.json' -print -quit 2>/dev/null)" ]]; then
  report_status="not made: no mini-app result in results/"
else
  # report_limit: the report's time limit, what is left of the budget less
  # the 5 s that `timeout -k 5` may add (at most 120 s); it is not started
  # with less than 30 s, so that the check keeps its promised time.
  report_limit() {
    local lim
    lim="$(left)"
    lim=$((lim - 5))
    ((lim <= 120)) || lim=120
    echo "$lim"
  }
  report_later="python3 -m analysis.report $out/results --out $out/report"
  report_lim="$(report_limit)"
  if ((report_lim < 30)); then
    report_status="not made: the time budget was spent (${report_lim} s left, the page needs 30 s); run $report_later"
    echo "gpu_check: results page skipped: ${report_lim} s of the time budget left (it needs 30 s); make it afterwards with: $report_later" >&2
  else
    report_rc=0 report_note=""
    (cd "$root" && timeout -k 5 "$report_lim" "$report_python" -m analysis.report "$out/results" --out "$out/report") \
      >"$out/report.log" 2>&1 || report_rc=$?
    if ((report_rc != 0)) && grep -q "is not installed for this interpreter" "$out/report.log"; then
      # The page without figures, only within what is left of the budget.
      report_lim="$(report_limit)"
      if ((report_lim < 30)); then
        report_rc=-1
        report_status="not made: $report_python has no matplotlib, and the time budget left ${report_lim} s (30 s needed) for the page without figures; run $report_later --no-plots"
        echo "gpu_check: results page skipped: no matplotlib, and ${report_lim} s of the time budget left for --no-plots (it needs 30 s)" >&2
      else
        report_rc=0 report_note=" (no figures: $report_python has no matplotlib)"
        (cd "$root" && timeout -k 5 "$report_lim" "$report_python" -m analysis.report "$out/results" --out "$out/report" \
          --no-plots) >>"$out/report.log" 2>&1 || report_rc=$?
      fi
    fi
    if ((report_rc == 0)); then
      report_status="report/README.md$report_note"
    elif ((report_rc > 0)); then
      report_status="FAILED (exit $report_rc, report.log): $(tail -n 1 "$out/report.log" | tr -d '`|')"
    fi
  fi
fi
echo "gpu_check: results page: $report_status" >&2

write_summary
echo
sed -n '1,12p' "$out/SUMMARY.md" | grep -E '^\*\*|^- ' || true
echo
echo "gpu_check: summary in $out/SUMMARY.md"
echo "gpu_check: results page: $report_status"
echo "gpu_check: send this directory (see docs/MULTIGPU_EXPERIMENTS.md and COLLABORATION.md):"
echo "  tar czf gpu_check_$host.tgz -C $(dirname "$out") $(basename "$out")"
((failures == 0))
