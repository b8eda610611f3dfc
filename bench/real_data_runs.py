#!/usr/bin/python3
"""Issue 31's real-data comparison, end to end, one dataset at a time:

1. builds the dataset from its Debian package (analysis/datasets/<builder>,
   into inputs/real_data/<builder>/; a dataset whose .npy files match the
   sha256 of their sidecar is reused, --rebuild builds it again),
2. runs its deck inputs/real/<name>.yaml on one rank: the normative update
   and its ablations (the deck's sweep over covariance_update x
   subspace_direction),
3. runs the baselines on the same stream, the same rows and the same
   prequential measure (analysis/baselines.py --like the MOSAIC result),
4. writes the table and the figure (analysis/real_data.py).

Into OUTDIR, per dataset NAME: NAME_mosaic.json (the mini-app's result),
NAME_baselines.json, NAME.md (the table), NAME.png (the figure), and
NAME.log (every command with its start and end time, uptime and output).
A dataset of several streams (music_tracks: one per track) is run by the
mini-app only: the baselines take one stream.

    /usr/bin/python3 bench/real_data_runs.py OUTDIR [--datasets wind,dj30]
        [--miniapp build/openmp/miniapp/mosaic_miniapp] [--mpiexec mpirun]
        [--rebuild] [--check]

--check (ctest's mpi.real_data_small) exits non-zero unless each dataset's
sidecar sha256 matches its .npy, every MOSAIC run and every baseline
evaluated samples, with finite means, and (data without gaps) the same
number of them.
"""

import argparse
import collections
import datetime
import glob
import json
import math
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from analysis.baselines import cpu_model  # noqa: E402
from analysis.datasets.debian import sha256_file  # noqa: E402
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

# name: (builder module, the stream files under inputs/real_data/ the deck
# reads, deck, whether the data have gaps); the baselines run on the file
# when there is one. With gaps MOSAIC skips the masked steps that its own
# subspace cannot resolve (ALGORITHM.md 7.5) and the baselines theirs, so
# the evaluated counts differ and the table shows each.
Dataset = collections.namedtuple("Dataset", "builder files deck gaps")
DATASETS = collections.OrderedDict([
    ("wind", Dataset("wind", ["wind/wind.npy"], "wind.yaml", False)),
    ("dj30", Dataset("dj30", ["dj30/dj30.npy"], "dj30.yaml", False)),
    ("pm10", Dataset("pm10", ["pm10/pm10.npy"], "pm10.yaml", True)),
    ("eop", Dataset("eop", ["eop/eop.npy"], "eop.yaml", False)),
    ("vtest", Dataset("video", ["video/vtest.npy"], "vtest.yaml", False)),
    ("box", Dataset("video", ["video/box.npy"], "box.yaml", False)),
    ("music", Dataset("music", ["music/music_all.npy"], "music.yaml", False)),
    ("music_tracks", Dataset("music", ["music/tracks/*.npy"], "music_tracks.yaml", False)),
])
SMALL = ["wind", "dj30"]


class RunFailed(Exception):
    pass


def recorded_sha256(sidecar):
    """{file name: sha256} the builder's sidecar records for its arrays."""
    with open(sidecar) as f:
        meta = json.load(f)
    found = {}

    def walk(node):
        if isinstance(node, dict):
            name = node.get("npy") or node.get("file")
            digest = node.get("npy_sha256") or node.get("sha256")
            if isinstance(name, str) and isinstance(digest, str) and name.endswith(".npy"):
                found[os.path.basename(name)] = digest
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    walk(meta)
    return found


def stream_files(ds):
    paths = []
    for pattern in ds.files:
        paths += sorted(glob.glob(os.path.join(ROOT, "inputs", "real_data", pattern)))
    return paths


def verified(ds):
    """The dataset's files, each checked against the sha256 its builder's
    sidecar records; [] if any is missing or differs."""
    paths = stream_files(ds)
    if not paths:
        return []
    sums = {}
    for sidecar in glob.glob(os.path.join(ROOT, "inputs", "real_data", ds.builder, "*.json")):
        sums.update(recorded_sha256(sidecar))
    for p in paths:
        if sums.get(os.path.basename(p)) != sha256_file(p):
            return []
    return paths


class Log:
    """A dataset's log file: every command with its start, end, load and output."""

    def __init__(self, path):
        self.f = open(path, "w")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()

    def line(self, text):
        print(text, file=self.f, flush=True)
        print(text, flush=True)

    def run(self, cmd, cwd=ROOT):
        self.line("$ " + " ".join(cmd))
        self.line("# start %s %s" % (now(), load()))
        t0 = time.time()
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        self.f.write(p.stdout)
        self.line("# end %s (%.1f s, exit %d) %s" % (now(), time.time() - t0, p.returncode, load()))
        if p.returncode != 0:
            sys.stdout.write(p.stdout[-4000:])
            raise RunFailed("%s exited with %d (log: %s)" % (cmd[0] if cmd[0] != PYTHON else " ".join(cmd[:3]),
                                                          p.returncode, self.f.name))
        return p.stdout


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def load():
    try:
        with open("/proc/loadavg") as f:
            return "load " + " ".join(f.read().split()[:3])
    except OSError:
        return ""


def mpi_command(args):
    cmd = [args.mpiexec, "-np", "1"]
    launcher = os.path.basename(args.mpiexec)
    if launcher in ("mpirun", "mpiexec", "orterun"):
        cmd += ["--bind-to", "none", "-x", "OMP_NUM_THREADS", "-x", "OMP_PROC_BIND"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
    return cmd


def run_dataset(name, args, log):
    ds = DATASETS[name]
    paths = [] if args.rebuild else verified(ds)
    if paths:
        log.line("# %s: reusing %d file(s) that match their sidecar's sha256" % (name, len(paths)))
    else:
        log.run([PYTHON, "-m", "analysis.datasets." + ds.builder])
        paths = verified(ds)
        if not paths:
            raise RunFailed("%s: the builder's files do not match its sidecar's sha256" % name)
    for sidecar in sorted(glob.glob(os.path.join(ROOT, "inputs", "real_data", ds.builder, "*.json"))):
        with open(sidecar) as f:
            meta = json.load(f)
        log.line("# data: %s: %s %s (%s), %s" % (
            os.path.relpath(sidecar, ROOT), meta.get("package"), meta.get("version"), meta.get("deb_sha256"),
            "; ".join(sorted(set(l for l in meta.get("licence", []) if l.startswith("License"))))))
    out = lambda suffix: os.path.join(args.outdir, name + suffix)  # noqa: E731
    result = out("_mosaic.json")
    log.run(mpi_command(args) + [args.miniapp, os.path.join("inputs", "real", ds.deck), "--output", result])
    if len(paths) != 1:
        return {"name": name, "result": result}
    baselines = out("_baselines.json")
    # IncrementalPCA's own noise_variance_ falls like 1 / (samples seen)
    # (analysis/baselines.py): PPCA's noise from its running variance instead.
    log.run([PYTHON, "-m", "analysis.baselines", paths[0], "--like", result, "--incremental-noise", "total",
             "-o", baselines])
    log.run([PYTHON, "-m", "analysis.real_data", "--name", name, "--result", result, "--baselines", baselines,
             "--table", out(".md"), "--figure", out(".png")] + (["--allow-sample-difference"] if ds.gaps else []))
    return {"name": name, "result": result, "baselines": baselines, "table": out(".md")}


def unusable(prequential):
    """Why a method's run totals cannot stand in the table: nothing
    evaluated, or a mean that is missing or not finite; None if usable."""
    if not isinstance(prequential, dict) or not prequential.get("samples"):
        return "evaluated no sample"
    for key in ("nll_mean", "residual_fraction_mean", "surprise_rate"):
        v = prequential.get(key)
        if not isinstance(v, (int, float)) or not math.isfinite(v):
            return "%s is %r" % (key, v)
    return None


def check(done):
    problems = []
    for d in done:
        with open(d["result"]) as f:
            runs = json.load(f)["runs"]
        samples = {run.get("prequential", {}).get("samples") for run in runs}
        if len(samples) != 1:
            problems.append("%s: the MOSAIC runs evaluated %s samples" % (d["name"], sorted(map(str, samples))))
        for i, run in enumerate(runs):
            why = unusable(run.get("prequential"))
            if why:
                problems.append("%s: MOSAIC run %d: %s" % (d["name"], i, why))
        if "baselines" not in d:
            continue
        with open(d["baselines"]) as f:
            methods = json.load(f).get("methods")
        if not isinstance(methods, dict) or not methods:
            problems.append("%s: %s holds no methods" % (d["name"], d["baselines"]))
            continue
        for m, entry in methods.items():
            preq = entry.get("prequential") if isinstance(entry, dict) else None
            why = unusable(preq)
            if why:
                problems.append("%s: baseline %s: %s" % (d["name"], m, why))
            elif preq["samples"] not in samples and not DATASETS[d["name"]].gaps:
                problems.append("%s: baseline %s evaluated %s samples, MOSAIC %s" % (
                    d["name"], m, preq["samples"], sorted(samples)))
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("outdir")
    parser.add_argument("--datasets", default=",".join(DATASETS),
                        help="comma-separated subset of %s (default: all)" % ",".join(DATASETS))
    parser.add_argument("--miniapp", default=os.path.join(ROOT, "build", "openmp", "miniapp", "mosaic_miniapp"))
    parser.add_argument("--mpiexec", default="mpirun")
    parser.add_argument("--rebuild", action="store_true", help="build the datasets again even if they verify")
    parser.add_argument("--check", action="store_true", help="fail unless the comparison is consistent (see above)")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.datasets.split(",") if n.strip()]
    unknown = [n for n in names if n not in DATASETS]
    if unknown or not names:
        parser.error("--datasets: unknown %s (choose from %s)" % (", ".join(unknown) or "(none)", ",".join(DATASETS)))
    args.outdir = os.path.abspath(args.outdir)
    args.miniapp = os.path.abspath(args.miniapp)
    os.makedirs(args.outdir, exist_ok=True)
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    os.environ.setdefault("OMP_PROC_BIND", "false")
    try:
        version = subprocess.run([args.miniapp, "--version"], stdout=subprocess.PIPE,
                                 universal_newlines=True).stdout.strip().splitlines()[:1]
    except OSError as e:
        version = []
        print("real_data_runs: error: %s: %s" % (args.miniapp, e), file=sys.stderr)
    if not version:
        print("real_data_runs: error: %s --version printed nothing: build the mini-app first" % args.miniapp,
              file=sys.stderr)
        return 1
    done = []
    try:
        for name in names:
            with Log(os.path.join(args.outdir, name + ".log")) as log:
                log.line("# %s: %s; %s, %d cores; OMP_NUM_THREADS=%s" % (
                    name, version[0], cpu_model(), os.cpu_count(), os.environ["OMP_NUM_THREADS"]))
                done.append(run_dataset(name, args, log))
    except RunFailed as e:
        print("real_data_runs: error: %s" % e, file=sys.stderr)
        return 1
    if args.check:
        problems = check(done)
        for p in problems:
            print("real_data_runs: check failed: %s" % p, file=sys.stderr)
        if problems:
            return 1
        print("real_data_runs: check passed: %s" % ", ".join(d["name"] for d in done))
    return 0


if __name__ == "__main__":
    sys.exit(main())
