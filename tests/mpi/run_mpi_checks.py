#!/usr/bin/python3
"""End-to-end checks of mosaic_miniapp under mpiexec, run by ctest.

Each check runs the real mini-app on tests/decks/mpi_small.yaml (seconds on
two cores) and inspects what it wrote. Usage:

  run_mpi_checks.py --miniapp PATH --mpiexec PATH --schema docs/result.schema.json \
      --deck tests/decks/mpi_small.yaml --workdir DIR CHECK [--ranks N]

CHECK is one of: weak, strong_invariance, sweep, unwritable_output, bad_deck.
"""
import argparse
import json
import os
import subprocess
import sys

import jsonschema


def mpirun(args, ranks, extra, cwd):
    cmd = [args.mpiexec, "-np", str(ranks), "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    cmd += ["-x", "OMP_NUM_THREADS=1", "-x", "OMP_PROC_BIND=false", args.miniapp, args.deck] + extra
    print("+", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    print(proc.stdout)
    print(proc.stderr, file=sys.stderr)
    return proc


def fail(message):
    print("CHECK FAILED:", message, file=sys.stderr)
    sys.exit(1)


def load_valid(args, path):
    with open(path) as f:
        doc = json.load(f)
    with open(args.schema) as f:
        schema = json.load(f)
    jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)
    return doc


def run_ok(args, ranks, extra, name):
    out = os.path.join(args.workdir, name)
    if os.path.exists(out):
        os.remove(out)
    proc = mpirun(args, ranks, extra + ["--output", out], args.workdir)
    if proc.returncode != 0:
        fail(f"mosaic_miniapp exited with {proc.returncode}")
    return load_valid(args, out), proc


def check_weak(args):
    n = args.ranks
    doc, proc = run_ok(args, n, ["--set", "streams.mode=weak", "--set", "streams.per_rank=2"], f"weak_{n}.json")
    run = doc["runs"][0]
    dec = run["decomposition"]
    if doc["mpi_ranks"] != n or dec["ranks"] != n:
        fail(f"ranks recorded {doc['mpi_ranks']}/{dec['ranks']}, expected {n}")
    if dec["total_streams"] != 2 * n or dec["imbalance"] != 0:
        fail(f"weak mode: total_streams {dec['total_streams']} imbalance {dec['imbalance']}, expected {2 * n}, 0")
    ids = [c["stream_id"] for c in run["verification"]["per_stream_checksums"]]
    if ids != list(range(2 * n)):
        fail(f"checksum stream ids {ids}, expected 0..{2 * n - 1}")
    if len(run["memory"]["peak_rss_bytes_per_rank"]) != n:
        fail("peak RSS not reported for every rank")
    if not run["verification"]["passed"]:
        fail("verification failed: " + json.dumps(run["verification"]["checks"]))
    fom = run["figure_of_merit"]["value"]
    steps = run["steps"]["timed"]
    upd = run["timers"]["update"]["max_s"]
    if abs(fom - steps * 2 * n / upd) > 1e-6 * fom:
        fail(f"FOM {fom} != steps x streams / max update time = {steps * 2 * n / upd}")
    series = run["diagnostics"]["series"]
    if [e["step"] for e in series] != [100, 200, 300, 400]:
        fail(f"diagnostics series steps {[e['step'] for e in series]}")
    if "accuracy" not in run["diagnostics"]["final"]:
        fail("synthetic run without accuracy against the truth")
    if "FIGURE OF MERIT" not in proc.stdout or "verification        PASSED" not in proc.stdout:
        fail("summary table missing from rank 0's output")


def checksums(run):
    return {c["stream_id"]: c["checksum"] for c in run["verification"]["per_stream_checksums"]}


def check_strong_invariance(args):
    extra = ["--set", "streams.mode=strong", "--set", "streams.total=5"]
    runs = {}
    for n in (1, 2, 3):
        doc, _ = run_ok(args, n, extra, f"strong_{n}.json")
        runs[n] = doc["runs"][0]
        dec = runs[n]["decomposition"]
        if dec["total_streams"] != 5:
            fail(f"{n} ranks: total_streams {dec['total_streams']}")
        if dec["streams_per_rank_max"] - dec["streams_per_rank_min"] > 1:
            fail(f"{n} ranks: uneven split {dec}")
    expect_imbalance = {1: 0.0, 2: 3 / 2.5 - 1, 3: 2 / (5 / 3) - 1}
    for n, run in runs.items():
        if abs(run["decomposition"]["imbalance"] - expect_imbalance[n]) > 1e-12:
            fail(f"{n} ranks: imbalance {run['decomposition']['imbalance']}, expected {expect_imbalance[n]}")
    base = checksums(runs[1])
    if sorted(base) != [0, 1, 2, 3, 4]:
        fail(f"stream ids {sorted(base)}")
    for n in (2, 3):
        other = checksums(runs[n])
        if other != base:
            diff = {k: (base[k], other.get(k)) for k in base if base[k] != other.get(k)}
            fail(f"per-stream checksums differ between 1 and {n} ranks: {diff}")
    print("strong-mode checksums identical at 1, 2, 3 ranks:", base)


def check_sweep(args):
    doc, _ = run_ok(args, 2, ["--set", "sweep.problem.rank=[2,4]", "--set", "sweep.problem.dtype=[float,double]",
                              "--set", "run.steps=100", "--set", "run.diagnostics_every=0"], "sweep.json")
    points = [r["sweep_point"] for r in doc["runs"]]
    if len(points) != 4:
        fail(f"sweep produced {len(points)} runs, expected 4")
    got = {(p["problem.rank"], p["problem.dtype"]) for p in points}
    if got != {(2, "float"), (2, "double"), (4, "float"), (4, "double")}:
        fail(f"sweep points {points}")
    for r in doc["runs"]:
        if r["resolved_deck"]["problem"]["rank"] != r["sweep_point"]["problem.rank"]:
            fail("resolved deck does not carry the sweep value")
        if r["dtype"] != r["sweep_point"]["problem.dtype"]:
            fail("run dtype does not follow the sweep value")


def check_unwritable_output(args):
    target = os.path.join(args.workdir, "no_such_dir", "result.json")
    proc = mpirun(args, 2, ["--output", target], args.workdir)
    if proc.returncode == 0:
        fail("a non-writable output path did not fail")
    if target not in proc.stderr:
        fail("the error does not name the output path")
    if "[mosaic] step" in proc.stdout or "FIGURE OF MERIT" in proc.stdout:
        fail("the run started although its result could not be written")


def check_bad_deck(args):
    out = os.path.join(args.workdir, "bad_deck.json")
    if os.path.exists(out):
        os.remove(out)
    proc = mpirun(args, 2, ["--set", "problem.rank=48", "--output", out], args.workdir)
    if proc.returncode == 0:
        fail("rank >= d was accepted")
    if "problem.rank" not in proc.stderr:
        fail("the error does not name problem.rank")
    if os.path.exists(out):
        fail("a result file was written for a rejected deck")
    if proc.stderr.count("error:") != 1:
        fail("the error should be printed once (by rank 0), got:\n" + proc.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("check", choices=["weak", "strong_invariance", "sweep", "unwritable_output", "bad_deck"])
    p.add_argument("--miniapp", required=True)
    p.add_argument("--mpiexec", required=True)
    p.add_argument("--schema", required=True)
    p.add_argument("--deck", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--ranks", type=int, default=1)
    args = p.parse_args()
    for name in ("miniapp", "mpiexec", "schema", "deck", "workdir"):
        setattr(args, name, os.path.abspath(getattr(args, name)))
    os.makedirs(args.workdir, exist_ok=True)
    globals()["check_" + args.check](args)
    print("check passed:", args.check)


if __name__ == "__main__":
    main()
