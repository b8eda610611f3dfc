#!/usr/bin/python3
"""One long stream in time segments (ALGORITHM.md section 9, docs/SEGMENTS.md):
the mini-app on inputs/long_stream_segments.yaml (10^6 steps, d 256, r 8,
double) at time_segments P in {1, 2, 4, 8, 16} for a clear, a small and no
eigengap (the cases of bench/segment_floor.cpp: signal 4 .. 1 of rank r;
rank 2r on a geometric ladder of ratio 1.25; rank 2r, equal eigenvalues;
noise 0.1), and the music stream of inputs/real/music.yaml (331,362 STFT
frames of d 257, one real stream; built by analysis.datasets.music) when its
file exists.

Each layout RxT runs the mini-app on R MPI ranks of T threads each
(--layouts; R > 1 under mpiexec, the stream's segments spread over the
ranks: SegmentLayout); P = 1 runs in the first layout only (it must have
one rank), and is every layout's baseline.

For each point (the fastest of --repeat runs; wall_s_slowest: the slowest):
the passes, whether it certified, the largest pass-1 boundary mismatch, the
modelled speedup (T / the steps of the passes' longest workers), the wall
time of the segments (the loop) and the measured speedup, P = 1's wall time
over P's (wall_ratio_to_P1; on this machine all P
slots share its cores), and the final state's distance to P = 1's (the
covariance U S U^T relative to ||S||_F, the mean's absolute and s2's relative
difference, their largest; and ||U - U_1||_F). Writes, under OUT_DIR,
time_segments_<commit>.txt (the log: machine, commit, every command and the
table), .csv and .png (matplotlib, when present).

    /usr/bin/python3 bench/run_time_segments.py BUILD_DIR OUT_DIR [--steps N] [--segments 1,2,4] [--layouts 1x2,2x1]
        [--repeat 3]
    /usr/bin/python3 bench/run_time_segments.py x x --replot OUT_DIR/time_segments_<commit>.csv
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DECK = os.path.join(ROOT, "inputs", "long_stream_segments.yaml")
MUSIC = os.path.join(ROOT, "inputs", "real_data", "music", "music_all.npy")
CASES = {
    "clear_gap": [],
    "small_gap": ["source.rank=16", "source.lambda_min=%.17g" % (4.0 / 1.25 ** 15)],
    "no_gap": ["source.rank=16", "source.lambda_min=4.0"],
}


def run(cmd, log, env):
    log.write("$ " + " ".join(cmd) + "\n")
    log.flush()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode not in (0, 4):
        sys.stderr.write(proc.stdout + proc.stderr)
        sys.exit(f"run_time_segments.py: {' '.join(cmd)} exited with {proc.returncode}")
    return proc.returncode


def states(path):
    return {n: np.load(os.path.join(path, n + ".npy")) for n in ("mu", "U", "S", "s2")}


def distances(a, b):
    """The largest over the streams of the basis-free distance (covariance
    relative to ||S||, mu, s2 relative) and of ||U_a - U_b||_F."""
    free = frame = 0.0
    for k in range(a["U"].shape[0]):
        ca = a["U"][k] @ a["S"][k] @ a["U"][k].T
        cb = b["U"][k] @ b["S"][k] @ b["U"][k].T
        free = max(free, np.linalg.norm(ca - cb) / np.linalg.norm(a["S"][k]), np.abs(a["mu"][k] - b["mu"][k]).max(),
                   abs(float(a["s2"][k]) - float(b["s2"][k])) / float(a["s2"][k]))
        frame = max(frame, np.linalg.norm(a["U"][k] - b["U"][k]))
    return free, frame


def measure(name, ranks, threads, P, rc, out, state_dir, first):
    """One run's row; `first`: P = 1's wall time and states (None: this is it)."""
    doc = json.load(open(out))["runs"][0]
    ts = doc["time_segments"]
    # The loop's wall time (the deck has no run.warmup_steps: the
    # throughput's samples are the timed ones at every P).
    samples = doc["steps"]["timed_samples"]
    end_to_end = doc["throughput"]["end_to_end_samples_per_second"]
    wall = samples / end_to_end if end_to_end > 0 else float("nan")
    st = states(state_dir)
    free, frame = distances(first[1], st) if first else (0.0, 0.0)
    streams = ts.get("streams", [])
    # (null: a mismatch that is not a number, a run that broke down)
    first_pass = [v for s in streams for v in s["boundary_mismatch"][0]]
    worst = float("nan") if None in first_pass else max(first_pass, default=0.0)
    return {
        "case": name, "ranks": ranks, "threads": threads, "P": P, "steps": samples, "exit": rc,
        "passes": ts["passes"], "certified": ts["certified"],
        "pass1_mismatch_max": worst if P > 1 else "",
        "modelled_speedup": ts.get("modelled_speedup_min", 1.0),
        "wall_s": wall, "wall_ratio_to_P1": (first[0] if first else wall) / wall,
        "basis_free_to_P1": free, "U_to_P1": frame,
        "update_samples_per_s": doc["figure_of_merit"]["value"],
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build")
    p.add_argument("out_dir")
    p.add_argument("--steps", type=int, default=1000000)
    p.add_argument("--segments", default="1,2,4,8,16")
    p.add_argument("--repeat", type=int, default=1, help="runs of each point; the fastest is reported")
    p.add_argument("--layouts", default=f"1x{os.cpu_count()}",
                   help="MPI ranks x threads per rank, comma-separated; the first has one rank")
    p.add_argument("--replot", metavar="CSV", help="only draw the figure of an earlier run's CSV (beside it)")
    args = p.parse_args()
    if args.replot:
        with open(args.replot) as f:
            plot(list(csv.DictReader(f)), os.path.splitext(args.replot)[0] + ".png",
                 os.path.basename(args.replot).rsplit("_", 1)[-1].split(".")[0])
        return
    miniapp = os.path.join(os.path.abspath(args.build), "miniapp", "mosaic_miniapp")
    if not os.access(miniapp, os.X_OK):
        sys.exit(f"run_time_segments.py: {miniapp} not built")
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "diff", "--quiet", "HEAD"]).returncode != 0
    os.makedirs(args.out_dir, exist_ok=True)
    base = os.path.join(args.out_dir, f"time_segments_{commit}")
    layouts = [tuple(int(v) for v in l.split("x")) for l in args.layouts.split(",")]
    if layouts[0][0] != 1:
        sys.exit("run_time_segments.py: the first of --layouts must have one rank (P = 1's)")
    mpiexec = ["mpiexec", "--bind-to", "none"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    cases = dict((name, ["run.steps=%d" % args.steps] + sets) for name, sets in CASES.items())
    if os.path.exists(MUSIC):
        cases["music"] = ["source.type=npy", "source.paths=[%s]" % MUSIC, "problem.d=257", "run.steps=all",
                          "source.chunk_rows=4096"]
    segments = [int(s) for s in args.segments.split(",")]
    if segments[0] != 1:
        sys.exit("run_time_segments.py: --segments must start with 1 (the baseline of the ratios and distances)")
    rows = []
    with open(base + ".txt", "w") as log, tempfile.TemporaryDirectory() as work:
        cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
        log.write(f"# commit {commit}{' (dirty)' if dirty else ''}; {cpu}, {os.cpu_count()} cores; layouts "
                  f"{args.layouts} (MPI ranks x OMP_NUM_THREADS), OMP_PROC_BIND=false\n"
                  f"# uptime before: {os.popen('uptime').read().strip()}\n")
        for name, sets in cases.items():
            first = None
            for ranks, threads in layouts:
                env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_PROC_BIND="false")
                for P in segments:
                    if P < ranks or (P == 1 and first is not None):
                        continue
                    tries = []
                    for k in range(args.repeat):
                        out = os.path.join(work, f"{name}_{ranks}x{threads}_{P}_{k}.json")
                        state_dir = os.path.join(work, f"{name}_{ranks}x{threads}_{P}_{k}_states")
                        cmd = [miniapp, DECK, "--output", out, "--set", f"output.state_dir={state_dir}",
                               "--set", f"algorithm.time_segments={P}"]
                        for s in sets:
                            cmd += ["--set", s]
                        if ranks > 1:
                            cmd = mpiexec + ["-np", str(ranks), "-x", "OMP_NUM_THREADS", "-x", "OMP_PROC_BIND"] + cmd
                        rc = run(cmd, log, env)
                        tries.append((measure(name, ranks, threads, P, rc, out, state_dir, first), state_dir))
                    # The fastest of the repeats (the machine is shared), the slowest beside it.
                    row, state_dir = min(tries, key=lambda t: t[0]["wall_s"])
                    row["wall_s_slowest"] = max(t[0]["wall_s"] for t in tries)
                    rows.append(row)
                    if first is None:
                        first = (rows[-1]["wall_s"], states(state_dir))
                    log.write("  -> " + json.dumps(rows[-1]) + "\n")
                    log.flush()
        log.write(f"# uptime after: {os.popen('uptime').read().strip()}\n\n")
        header = list(rows[0])
        log.write("| " + " | ".join(header) + " |\n|" + "---|" * len(header) + "\n")
        for r in rows:
            log.write("| " + " | ".join(("%.3g" % v) if isinstance(v, float) else str(v) for v in r.values()) + " |\n")
    with open(base + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    plot(rows, base + ".png", commit)


def plot(rows, path, commit):
    """Modelled (solid) and measured (dashed, dotted for a second layout:
    the wall time of P = 1 over P's, on this machine's cores) speedup
    against P, and the passes."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not found: no figure")
        return
    names = list(dict.fromkeys(r["case"] for r in rows))
    segments = sorted({int(r["P"]) for r in rows})
    fig, ax = plt.subplots(1, 2, figsize=(11, 5.5))
    layout = lambda r: "%sx%s" % (r.get("ranks", 1), r.get("threads", "all"))  # (CSVs before layouts: one)
    layouts = list(dict.fromkeys(layout(r) for r in rows))
    for k, name in enumerate(names):
        color = "C%d" % k
        for m, lay in enumerate(layouts):
            # P = 1 (the first layout's) starts every layout's measured line.
            rs = [r for r in rows if r["case"] == name and (layout(r) == lay or int(r["P"]) == 1)]
            P = [int(r["P"]) for r in rs]
            if m == 0:
                ax[0].plot(P, [float(r["modelled_speedup"]) for r in rs], "o-", color=color,
                           label=name + " modelled")
                ax[1].plot(P, [int(r["passes"]) for r in rs], "o-", color=color, label=name)
            ax[0].plot(P, [float(r["wall_ratio_to_P1"]) for r in rs], ("s--", "^:", "v-.")[m % 3], color=color,
                       label=f"{name} measured, {lay} (ranks x threads)")
    ax[0].plot(segments, segments, "k:", label="P")
    ax[0].set(xscale="log", yscale="log", xlabel="time segments P",
              ylabel="speedup (solid: modelled; dashed, dotted: measured)")
    ax[1].set(xscale="log", xlabel="time segments P", ylabel="passes to certify")
    for a in ax:
        a.set_xticks(segments, [str(s) for s in segments])
    # (Below the axes: the lines fill them.)
    ax[0].legend(fontsize=6, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.14))
    ax[1].legend(fontsize=7)
    fig.suptitle(f"one stream in time segments (ALGORITHM.md section 9), {commit}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print("wrote", path)


if __name__ == "__main__":
    main()
