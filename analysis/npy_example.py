#!/usr/bin/python3
"""Real ordered data through mosaic_miniapp, end to end.

1. Writes an ordered dataset as .npy files: 4 streams of a few thousand rows,
   d = 64, each a slowly rotating rank-4 signal plus isotropic noise,
       x_t = m + V(t) diag(sqrt(lambda)) z_t + sigma n_t,
       V(t) = V0 cos(omega t) + W0 sin(omega t)   (V0, W0 orthonormal, V0 ^ W0),
   one file per stream, shape (rows, 64), float64.
2. Runs the mini-app on them with the deck inputs/npy_stream.yaml (steps: all),
   pointing source.paths and output.state_dir at this example's directory:
       mpirun -np 2 mosaic_miniapp inputs/npy_stream.yaml \\
           --set source.paths=[.../stream_0.npy, ...] --set output.state_dir=.../states
3. Reads the state files back (mu, U, S, s2, stream_ids, steps; through
   analysis/states.py, which checks the set against its manifest) and
   prints, per stream, the principal angles between the recovered subspace U
   and the generating subspace V at the last row, and the noise variance s2
   against sigma^2.

Usage (from the repository root, after building):
    /usr/bin/python3 analysis/npy_example.py [--miniapp build/openmp/miniapp/mosaic_miniapp]
        [--ranks 2] [--rows 4000] [--workdir DIR] [--check]
--check exits non-zero unless every angle is below 10 degrees and s2 is
within 25% of sigma^2 (used by ctest: mpi.npy_example).
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if __package__ in (None, ""):
    sys.path.insert(0, ROOT)
from analysis import common as C
from analysis.states import StateSetError, load_states

try:
    import numpy as np
except ImportError:
    C._command = "analysis/npy_example.py"
    print("npy_example: error: %s" % C.missing_module("numpy", figures=False), file=sys.stderr)
    sys.exit(2)

D, RANK, STREAMS = 64, 4, 4
LAMBDA = np.array([4.0, 2.0, 1.0, 0.5])
SIGMA = 0.1
OMEGA = 5e-5  # rad per row: the subspace turns by about 0.2 rad over 4000 rows


def truth(stream):
    """V0, W0 (orthonormal d x 4 blocks, mutually orthogonal) and the mean."""
    rng = np.random.default_rng(1000 + stream)
    q, _ = np.linalg.qr(rng.standard_normal((D, 2 * RANK)))
    return q[:, :RANK], q[:, RANK:], rng.standard_normal(D)


def basis_at(stream, t):
    V0, W0, _ = truth(stream)
    return V0 * np.cos(OMEGA * t) + W0 * np.sin(OMEGA * t)


def write_dataset(workdir, rows):
    paths = []
    for s in range(STREAMS):
        V0, W0, mean = truth(s)
        rng = np.random.default_rng(2000 + s)
        t = np.arange(rows)[:, None, None]
        V = V0[None] * np.cos(OMEGA * t) + W0[None] * np.sin(OMEGA * t)  # rows x d x r
        z = rng.standard_normal((rows, RANK)) * np.sqrt(LAMBDA)
        x = mean + np.einsum("tij,tj->ti", V, z) + SIGMA * rng.standard_normal((rows, D))
        path = os.path.join(workdir, "stream_%d.npy" % s)
        np.save(path, x)
        paths.append(path)
    return paths


def find_miniapp(given):
    if given:
        return os.path.abspath(given)
    found = sorted(glob.glob(os.path.join(ROOT, "build", "*", "miniapp", "mosaic_miniapp")))
    if not found:
        sys.exit("npy_example: no build/*/miniapp/mosaic_miniapp; build first or pass --miniapp")
    return found[0]


def principal_angles_deg(U, V):
    Qu, _ = np.linalg.qr(U)
    Qv, _ = np.linalg.qr(V)
    c = np.clip(np.linalg.svd(Qu.T @ Qv, compute_uv=False), -1.0, 1.0)
    return np.degrees(np.arccos(c))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--miniapp", help="the mosaic_miniapp binary (default: the first build/*/miniapp/mosaic_miniapp)")
    p.add_argument("--mpiexec", default=shutil.which("mpiexec") or "mpirun")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--rows", type=int, default=4000, help="rows (samples) per stream")
    p.add_argument("--workdir", help="where the data, states and result go (default: a new temporary directory)")
    p.add_argument("--check", action="store_true", help="fail unless the recovered subspaces are close")
    args = p.parse_args()

    workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="mosaic_npy_example_"))
    os.makedirs(workdir, exist_ok=True)
    paths = write_dataset(workdir, args.rows)
    print("wrote %d streams of shape (%d, %d) to %s" % (STREAMS, args.rows, D, workdir))

    state_dir = os.path.join(workdir, "states")
    result = os.path.join(workdir, "result.json")
    cmd = [args.mpiexec, "-np", str(args.ranks), "--oversubscribe"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    cmd += ["-x", "OMP_NUM_THREADS=1", "-x", "OMP_PROC_BIND=false", find_miniapp(args.miniapp),
            os.path.join(ROOT, "inputs", "npy_stream.yaml"),
            "--set", "source.paths=[" + ", ".join(paths) + "]",
            "--set", "output.state_dir=" + state_dir, "--output", result]
    print("+", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, cwd=workdir)
    if proc.returncode != 0:
        sys.exit("npy_example: mosaic_miniapp exited with %d" % proc.returncode)

    run = json.load(open(result))["runs"][0]
    io = run["io"]
    print("\nread %.2f MiB in %.4f s (%.0f MiB/s); %d timed steps per stream"
          % (io["bytes_read"] / 2**20, io["read_seconds"], io["read_bandwidth_bytes_per_s"] / 2**20,
             run["steps"]["timed"]))

    try:
        states, _ = load_states(state_dir)
    except StateSetError as e:
        sys.exit("npy_example: %s" % e)
    st = {k: states[k] for k in ("mu", "U", "S", "s2", "stream_ids", "steps")}
    print("state files: " + ", ".join("%s%s %s" % (k, v.shape, v.dtype) for k, v in st.items()))
    last_row = args.rows - 1  # steps: all consumes every row (all files have the same length)
    worst = 0.0
    ok = True
    print("\nstream  steps  principal angles to V(last row) [deg]      s2 / sigma^2")
    for k, sid in enumerate(st["stream_ids"]):
        angles = principal_angles_deg(st["U"][k], basis_at(int(sid), last_row))
        ratio = st["s2"][k] / SIGMA**2
        worst = max(worst, angles.max())
        ok = ok and angles.max() < 10.0 and abs(ratio - 1) < 0.25
        print("%6d  %5d  %s   %.3f" % (sid, st["steps"][k], "  ".join("%6.2f" % a for a in angles), ratio))
    # For scale: a random 4-dimensional subspace of R^64 is about 75-90 degrees away.
    print("\nlargest principal angle %.2f deg (the tracker lags the rotation slightly)" % worst)
    if args.check and not ok:
        sys.exit("npy_example: the recovered subspaces or noise levels are off")


if __name__ == "__main__":
    main()
