#!/usr/bin/python3
"""The mini-app's communication on this machine (issue 36 item 3;
docs/PERFORMANCE.md, "Communication"): a deck (by default the smoke deck,
inputs/smoke_cpu.yaml) on 1, 2 and 4 MPI ranks of one thread each (more
ranks than cores are oversubscribed, and the table says so), --repeat times
each, under the PMPI library bench/mpi_call_counter.cpp (LD_PRELOAD), for
the build under test and, with --baseline, another build of the mini-app
(an older commit, built in a worktree) in the same session, the runs of the
two builds interleaved.

Per build and rank count (medians over the repeats): the run's wall time
(timers.total.max_s), the `reduce` timer's max over the ranks and its share
of the wall time, the `update` and `verify` timers' max and min over the
ranks (a rank waits at a collective for the slower one), and per MPI
operation the calls, bytes sent and seconds
inside the calls of rank 0 and of the rank with the most seconds in that
operation (medians over the repeats, as every figure), and the
result's own ledger by class (runs[].communication). Writes, under
OUT_DIR, communication_<commit><tag>.txt: the machine, the commits, every
command and the tables. With --split-wait each blocking collective is
preceded by a barrier whose time is counted apart ("<operation>_wait"):
what the rank waited for the slowest one, leaving the transfer in the
operation's own seconds.

    /usr/bin/python3 bench/run_communication.py BUILD_DIR OUT_DIR [--baseline OLD_BUILD_DIR]
        [--deck inputs/smoke_cpu.yaml] [--ranks 1,2,4] [--repeat 5] [--set key=value ...] [--split-wait]
        [--tag TEXT] [--checkpoint-every STEPS]
"""
import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COUNTER = re.compile(r"^mpi call counter: rank (\d+) (\S+) calls (\d+) bytes (\d+) received (\d+) seconds (\S+)$",
                     re.M)


def commit_of(build):
    """The commit a build's mini-app was built from (its --version line)."""
    out = subprocess.run([os.path.join(build, "miniapp", "mosaic_miniapp"), "--version"], capture_output=True,
                         text=True).stdout
    m = re.search(r"\(git ([0-9a-f]{7,40}(-dirty)?)\)", out)
    return m.group(1) if m else "unknown"


def run_once(build, ranks, deck, sets, workdir, log):
    """One run: (the result's run, {operation: {rank: (calls, bytes, seconds)}})."""
    counter = os.path.join(build, "bench", "libmosaic_mpi_call_counter.so")
    if not os.path.exists(counter):  # a baseline older than the counter: the build under test's
        counter = os.path.join(ARGS.build, "bench", "libmosaic_mpi_call_counter.so")
    out = os.path.join(workdir, "result.json")
    checkpoints = os.path.join(workdir, "checkpoints")
    shutil.rmtree(checkpoints, ignore_errors=True)  # --checkpoint-every writes a fresh set per run
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks), "-x", "LD_PRELOAD=" + counter,
           "-x", "OMP_NUM_THREADS=1", "-x", "OMP_PROC_BIND=false"]
    if ARGS.split_wait:
        cmd += ["-x", "MOSAIC_MPI_COUNTER_WAIT=barrier"]
    cmd += [os.path.join(build, "miniapp", "mosaic_miniapp"), deck, "--output", out]
    for s in sets:
        cmd += ["--set", s]
    if ARGS.checkpoint_every:
        cmd += ["--set", "output.checkpoint.dir=" + checkpoints,
                "--set", "output.checkpoint.every_steps=%d" % ARGS.checkpoint_every]
    log.append(" ".join(cmd))
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        sys.exit("run_communication: %s exited %d\n%s" % (" ".join(cmd), proc.returncode, proc.stderr[-2000:]))
    with open(out, encoding="utf-8") as f:
        run = json.load(f)["runs"][0]
    ops = {}
    for rank, op, calls, sent, _received, seconds in COUNTER.findall(proc.stderr):
        ops.setdefault(op, {})[int(rank)] = (int(calls), int(sent), float(seconds))
    return run, ops


def median(values):
    return statistics.median(values) if values else float("nan")


def table(label, runs, ranks, cores):
    """The lines of one build's table at one rank count."""
    total = [r["timers"]["total"]["max_s"] for r, _ in runs]
    reduce_max = [r["timers"]["reduce"]["max_s"] for r, _ in runs]
    share = [r["timers"]["reduce"]["max_s"] / r["timers"]["total"]["max_s"] for r, _ in runs]
    lines = ["%s, %d rank%s%s: wall %.4f s, reduce max %.4f s, reduce share %.1f%% (medians of %d; shares %s)" % (
        label, ranks, "" if ranks == 1 else "s", " (oversubscribed: %d cores)" % cores if ranks > cores else "",
        median(total), median(reduce_max), 100 * median(share), len(runs),
        ", ".join("%.1f%%" % (100 * s) for s in share))]
    timer = lambda name, stat: median([r["timers"][name][stat] for r, _ in runs])  # noqa: E731
    lines.append("timers, max / min over the ranks (medians): update %.4f / %.4f s, verify %.4f / %.4f s" % (
        timer("update", "max_s"), timer("update", "min_s"), timer("verify", "max_s"), timer("verify", "min_s")))
    # "max rank": in each run the rank with the most seconds in the operation.
    lines.append("| MPI operation | calls (rank 0) | bytes sent (rank 0) | seconds in calls (rank 0) | "
                 "calls (max rank) | bytes sent (max rank) | seconds in calls (max rank) |")
    lines.append("|---|---|---|---|---|---|---|")
    names = sorted({op for _, ops in runs for op in ops})
    for op in names:
        rank0 = [ops.get(op, {}).get(0, (0, 0, 0.0)) for _, ops in runs]
        top = [max(ops.get(op, {0: (0, 0, 0.0)}).values(), key=lambda v: v[2]) for _, ops in runs]
        lines.append("| %s | %d | %d | %.6f | %d | %d | %.6f |" % (
            op, median([v[0] for v in rank0]), median([v[1] for v in rank0]), median([v[2] for v in rank0]),
            median([v[0] for v in top]), median([v[1] for v in top]), median([v[2] for v in top])))
    ledgers = [r["communication"]["classes"] for r, _ in runs if "communication" in r]
    if ledgers:  # the result's own ledger (builds since it exists)
        lines += ["", "| class (the result's runs[].communication) | calls | bytes sent | seconds max | seconds min |",
                  "|---|---|---|---|---|"]
        for cls in ledgers[0]:
            lines.append("| %s | %d | %d | %.6f | %.6f |" % (
                cls, median([c[cls]["calls"] for c in ledgers]), median([c[cls]["bytes_sent"] for c in ledgers]),
                median([c[cls]["seconds_max"] for c in ledgers]), median([c[cls]["seconds_min"] for c in ledgers])))
    return lines


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("build")
    p.add_argument("out_dir")
    p.add_argument("--baseline", help="another build directory of the mini-app, run in the same session")
    p.add_argument("--deck", default=os.path.join(ROOT, "inputs", "smoke_cpu.yaml"))
    p.add_argument("--ranks", default="1,2,4")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--set", action="append", default=[], dest="sets")
    p.add_argument("--split-wait", action="store_true",
                   help="a barrier before each blocking collective, its time counted apart as the wait "
                        "(MOSAIC_MPI_COUNTER_WAIT=barrier; this changes the run's timing)")
    p.add_argument("--tag", default="", help="appended to the output file's name")
    p.add_argument("--checkpoint-every", type=int, default=0, metavar="STEPS",
                   help="checkpoints every STEPS timed steps, into a fresh directory per run")
    ARGS = p.parse_args()
    # The runs' working directory is a temporary one.
    ARGS.build = os.path.abspath(ARGS.build)
    ARGS.baseline = ARGS.baseline and os.path.abspath(ARGS.baseline)
    ARGS.deck = os.path.abspath(ARGS.deck)
    if ARGS.repeat < 1:
        sys.exit("run_communication: --repeat must be at least 1")
    ranks = [int(r) for r in ARGS.ranks.split(",")]
    builds = [("this build", ARGS.build)] + ([("baseline", ARGS.baseline)] if ARGS.baseline else [])
    commits = {label: commit_of(b) for label, b in builds}
    cores = os.cpu_count() or 1
    log, results = [], {}
    with tempfile.TemporaryDirectory() as workdir:
        for n in ranks:
            for _ in range(ARGS.repeat):
                for label, build in builds:  # interleaved: the same machine state for both
                    results.setdefault((label, n), []).append(run_once(build, n, ARGS.deck, ARGS.sets, workdir, log))
    model = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], capture_output=True,
                           text=True).stdout.strip()
    lines = ["# The mini-app's communication: bench/run_communication.py",
             "machine: %s, %d cores, %s" % (model, cores, platform.platform()),
             "builds: " + ", ".join("%s %s (%s)" % (label, commits[label], b) for label, b in builds),
             "deck: %s %s" % (os.path.relpath(ARGS.deck, ROOT), " ".join("--set " + s for s in ARGS.sets)),
             "wait split off by a barrier before each blocking collective: %s" % ("yes" if ARGS.split_wait else "no"),
             "checkpoints every %s timed steps" % (ARGS.checkpoint_every or "no"),
             "command: " + " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]), ""]
    for n in ranks:
        for label, _ in builds:
            lines += table("%s (%s)" % (label, commits[label]), results[(label, n)], n, cores) + [""]
    lines += ["## commands", ""] + log
    os.makedirs(ARGS.out_dir, exist_ok=True)
    path = os.path.join(ARGS.out_dir, "communication_%s%s.txt" % (commits["this build"], ARGS.tag))
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines[:5]) + "\nwrote " + path)


if __name__ == "__main__":
    main()
