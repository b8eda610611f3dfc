#!/usr/bin/python3
"""End-to-end checks of mosaic_miniapp under mpiexec, run by ctest.

Each check runs the real mini-app on tests/decks/mpi_small.yaml (seconds on
two cores) and inspects what it wrote. Usage:

  run_mpi_checks.py --miniapp PATH --mpiexec PATH --schema docs/result.schema.json \
      --deck tests/decks/mpi_small.yaml --workdir DIR CHECK [--ranks N]

CHECK is one of: weak, strong_invariance, sweep, unwritable_output, bad_deck,
npy_stream, npy_bad_file. The npy checks write their .npy files into the
workdir with numpy (system python3).
"""
import argparse
import json
import os
import shutil
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


# ---------------------------------------------------------------- npy sources

NPY_ROWS = [330, 300, 345, 310, 320]  # stream k's file has NPY_ROWS[k] rows


def write_npy_streams(args, d=48):
    """Five ordered streams of shape (rows, d): a slowly rotating rank-3
    signal plus noise; stream 1 is float32, stream 3 Fortran order."""
    import numpy as np
    paths = []
    for k, rows in enumerate(NPY_ROWS):
        rng = np.random.default_rng(100 + k)
        basis, _ = np.linalg.qr(rng.standard_normal((d, 3)))
        t = np.arange(rows)[:, None]
        latent = rng.standard_normal((rows, 3)) * np.array([2.0, 1.0, 0.5])
        x = latent @ basis.T + 0.1 * rng.standard_normal((rows, d)) + np.cos(0.01 * t)
        if k == 1:
            x = x.astype(np.float32)
        if k == 3:
            x = np.asfortranarray(x)
        path = os.path.join(args.workdir, f"stream_{k}.npy")
        np.save(path, x)
        paths.append(path)
    return paths


def npy_args(paths, state_dir):
    return ["--set", "source.type=npy", "--set", "source.paths=[" + ", ".join(paths) + "]",
            "--set", "streams.mode=strong", "--set", f"streams.total={len(paths)}",
            "--set", "source.chunk_rows=64", "--set", "run.steps=all",
            "--set", f"output.state_dir={state_dir}"]


def load_states(state_dir):
    import numpy as np
    return {name: np.load(os.path.join(state_dir, name + ".npy"))
            for name in ("mu", "U", "S", "s2", "stream_ids", "steps", "status")}


def check_npy_stream(args):
    import numpy as np
    paths = write_npy_streams(args)
    states = {}
    for n in (2, 1):
        state_dir = os.path.join(args.workdir, f"states_{n}")
        doc, proc = run_ok(args, n, npy_args(paths, state_dir), f"npy_{n}.json")
        run = doc["runs"][0]
        n0, warmup = run["steps"]["init_samples"], run["steps"]["warmup"]
        timed = min(NPY_ROWS) - n0 - warmup
        if run["steps"]["timed"] != timed:
            fail(f"steps: all ran {run['steps']['timed']} steps, expected min rows - init - warmup = {timed}")
        if run["decomposition"]["total_streams"] != len(paths):
            fail(f"{run['decomposition']['total_streams']} streams for {len(paths)} files")
        if run["resolved_deck"]["run"]["steps"] != "all" or run["resolved_deck"]["source"]["paths"] != paths:
            fail("resolved deck does not show steps: all and the file list")
        if "accuracy" in run["diagnostics"]["final"]:
            fail("an npy run reported accuracy against a truth it does not have")
        if not run["verification"]["passed"]:
            fail("verification failed: " + json.dumps(run["verification"]["checks"]))
        io = run["io"]
        used = n0 + warmup + timed
        expect_bytes = sum(used * 48 * (4 if k == 1 else 8) for k in range(len(paths)))
        if io["bytes_read"] != expect_bytes:
            fail(f"io.bytes_read {io['bytes_read']}, expected {expect_bytes}")
        if io["chunk_rows"] != 64 or io["files"] != len(paths) or io["nonfinite_rows"]:
            fail(f"io {io}")
        if not (io["read_seconds"] > 0 and io["read_bandwidth_bytes_per_s"] > 0):
            fail(f"no read time or bandwidth: {io}")
        if "npy input" not in proc.stdout:
            fail("summary lacks the npy input line")
        st = load_states(state_dir)
        S, d, r = len(paths), 48, 3
        shapes = {"mu": (S, d), "U": (S, d, r), "S": (S, r, r), "s2": (S,), "stream_ids": (S,), "steps": (S,),
                  "status": (S,)}
        for name, shape in shapes.items():
            if st[name].shape != shape:
                fail(f"{name}.npy has shape {st[name].shape}, expected {shape}")
        if st["stream_ids"].dtype != np.uint64 or list(st["stream_ids"]) != list(range(S)):
            fail(f"stream_ids.npy {st['stream_ids']!r}")
        if st["steps"].dtype != np.int64 or list(st["steps"]) != [warmup + timed] * S:
            fail(f"steps.npy {st['steps']!r}, expected {warmup + timed} each")
        if st["U"].dtype != np.float64 or list(st["status"]) != [0] * S:
            fail("U.npy dtype or status.npy")
        orth = max(np.abs(u.T @ u - np.eye(r)).max() for u in st["U"])
        if orth > 1e-8:
            fail(f"U.npy is not orthonormal per stream: {orth}")
        sums = {c["stream_id"]: c["checksum"] for c in run["verification"]["per_stream_checksums"]}
        if sorted(sums) != list(range(S)):
            fail(f"checksum ids {sorted(sums)}")
        states[n] = st
    for name in ("mu", "U", "S", "s2"):
        if not np.array_equal(states[1][name], states[2][name]):
            fail(f"{name}.npy differs between 1 and 2 ranks")
    print("npy: state files identical at 1 and 2 ranks; steps", list(states[1]["steps"]))


def check_npy_bad_file(args):
    import numpy as np
    paths = write_npy_streams(args)
    out = os.path.join(args.workdir, "npy_bad.json")
    state_dir = os.path.join(args.workdir, "states_bad")
    shutil.rmtree(state_dir, ignore_errors=True)  # from an earlier run of this check
    cases = []
    wrong_d = os.path.join(args.workdir, "wrong_d.npy")
    np.save(wrong_d, np.zeros((400, 47)))
    cases.append(("wrong d", wrong_d, ["47 features", "problem.d is 48"]))
    not_npy = os.path.join(args.workdir, "not_npy.npy")
    with open(not_npy, "w") as f:
        f.write("this is not a numpy file\n" * 10)
    cases.append(("bad magic", not_npy, []))
    short = os.path.join(args.workdir, "short.npy")
    np.save(short, np.zeros((20, 48)))
    cases.append(("too few rows", short, ["20 rows"]))
    missing = os.path.join(args.workdir, "missing.npy")
    cases.append(("missing file", missing, []))
    for what, bad, words in cases:
        for stale in (out,):
            if os.path.exists(stale):
                os.remove(stale)
        # The bad file is stream 4: owned by rank 1 of 2, so the message
        # crosses ranks and must still be printed once, by rank 0.
        files = paths[:4] + [bad]
        proc = mpirun(args, 2, npy_args(files, state_dir) + ["--output", out], args.workdir)
        if proc.returncode == 0:
            fail(f"{what}: the run did not fail")
        if bad not in proc.stderr:
            fail(f"{what}: the error does not name the file {bad}")
        for w in words:
            if w not in proc.stderr:
                fail(f"{what}: the error does not say '{w}'")
        if proc.stderr.count("error:") != 1:
            fail(f"{what}: the error should be printed once, got:\n" + proc.stderr)
        if "[mosaic] step" in proc.stdout or "FIGURE OF MERIT" in proc.stdout:
            fail(f"{what}: the run started")
        if os.path.exists(out):
            fail(f"{what}: a result file was written")
        if os.path.exists(os.path.join(state_dir, "mu.npy")):
            fail(f"{what}: state files were written")
    # A non-finite value in the middle of a stream freezes that stream only.
    x = np.load(paths[2])
    x[200, 7] = np.nan
    nan_path = os.path.join(args.workdir, "with_nan.npy")
    np.save(nan_path, x)
    files = paths[:2] + [nan_path] + paths[3:]
    if os.path.exists(out):
        os.remove(out)
    proc = mpirun(args, 2, npy_args(files, state_dir) + ["--output", out], args.workdir)
    if proc.returncode != 3:
        fail(f"a non-finite row should finish the run with verification failed (3), got {proc.returncode}")
    run = load_valid(args, out)["runs"][0]
    rows = run["io"]["nonfinite_rows"]
    if len(rows) != 1 or rows[0]["stream_id"] != 2 or rows[0]["row"] != 200 or rows[0]["path"] != nan_path:
        fail(f"io.nonfinite_rows {rows}")
    n0 = run["steps"]["init_samples"]
    if run["counts"]["breakdowns"] != [{"stream_id": 2, "step": 200 - n0, "code": 1}]:
        fail(f"breakdowns {run['counts']['breakdowns']}")
    st = load_states(state_dir)
    if list(st["status"]) != [0, 0, 1, 0, 0] or st["steps"][2] != 200 - n0:
        fail(f"status.npy {st['status']}, steps.npy {st['steps']}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("check", choices=["weak", "strong_invariance", "sweep", "unwritable_output", "bad_deck",
                                     "npy_stream", "npy_bad_file"])
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
