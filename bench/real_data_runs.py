#!/usr/bin/python3
"""Issue 31's real-data comparison, end to end, one dataset at a time:

1. builds the dataset from its Debian package (analysis/datasets/<builder>,
   into inputs/real_data/<builder>/; a dataset is reused when its .npy
   files are exactly those its builder's sidecar lists for it, each with
   the sha256 recorded there; --rebuild builds it again; a builder that
   makes several datasets, video and music, runs at most once per
   invocation),
2. runs its deck inputs/real/<name>.yaml on one rank: the normative update
   and its ablations (the deck's sweep over covariance_update x
   subspace_direction),
3. runs the baselines on the same stream(s), the same rows and the same
   prequential measure (analysis/baselines.py --like the MOSAIC result; a
   dataset of several streams, music_tracks with one per track, gives
   every file: each baseline runs on each stream on its own and the
   measures are pooled over the streams as the mini-app pools them),
4. writes the table and the figure (analysis/real_data.py).

Into OUTDIR, per dataset NAME: NAME_mosaic.json (the mini-app's result),
NAME_baselines.json, NAME.md (the table), NAME.png (the figure), and
NAME.log (every command with its start and end time, uptime and output).

    /usr/bin/python3 bench/real_data_runs.py OUTDIR [--datasets wind,dj30]
        [--miniapp build/openmp/miniapp/mosaic_miniapp] [--mpiexec mpirun]
        [--rebuild] [--check]

--check (ctest's mpi.real_data_small) exits non-zero unless each dataset's
files verify against their sidecar (above), every MOSAIC run and every
baseline evaluated samples, with finite means, and, for data without gaps,
the same number of them: each MOSAIC run's and each baseline's (pooled)
count equals the run's steps.timed_samples (every stream's timed steps;
plus the warm-up steps of every stream, which the prequential measure
scores too).
"""

import argparse
import collections
import datetime
import fnmatch
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
DATA = os.path.join(ROOT, "inputs", "real_data")

# name: (builder module, the stream files under inputs/real_data/ the deck
# reads, deck, whether the data have gaps); the baselines run on the same
# files. With gaps MOSAIC skips the masked steps that its own
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


def recorded_sha256(sidecar, data=DATA):
    """{path under data (builder/.../name.npy): sha256} of the arrays the
    builder's sidecar records (it names them relative to its own directory)."""
    with open(sidecar) as f:
        meta = json.load(f)
    base = os.path.dirname(os.path.abspath(sidecar))
    found = {}

    def walk(node):
        if isinstance(node, dict):
            name = node.get("npy") or node.get("file")
            digest = node.get("npy_sha256") or node.get("sha256")
            if isinstance(name, str) and isinstance(digest, str) and name.endswith(".npy"):
                found[relative(os.path.join(base, name), data)] = digest
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    walk(meta)
    return found


def relative(path, data=DATA):
    return os.path.normpath(os.path.relpath(os.path.abspath(path), os.path.abspath(data))).replace(os.sep, "/")


def matches(rel, patterns):
    """Whether rel (a path under data) matches one of the dataset's glob
    patterns, component by component (a * does not cross a /, as in glob)."""
    parts = rel.split("/")
    for pattern in patterns:
        pat = pattern.split("/")
        if len(pat) == len(parts) and all(fnmatch.fnmatchcase(a, b) for a, b in zip(parts, pat)):
            return True
    return False


def stream_files(ds, data=DATA):
    paths = []
    for pattern in ds.files:
        paths += sorted(glob.glob(os.path.join(data, pattern)))
    return paths


def verified(ds, data=DATA):
    """The dataset's files, if they are exactly the .npy files its builder's
    sidecars list for it (those matching its patterns) and each has the
    sha256 recorded there; [] if one is missing, unlisted or differs."""
    paths = stream_files(ds, data)
    if not paths:
        return []
    sums = {}
    for sidecar in sorted(glob.glob(os.path.join(data, ds.builder, "*.json"))):
        sums.update(recorded_sha256(sidecar, data))
    listed = set(rel for rel in sums if matches(rel, ds.files))
    found = [relative(p, data) for p in paths]
    if set(found) != listed:
        return []
    for p, rel in zip(paths, found):
        if sums[rel] != sha256_file(p):
            return []
    return paths


def prepare(name, rebuild, built, log, data=DATA):
    """The dataset's verified files: reused, or built first (always with
    rebuild) by its builder, which runs at most once per invocation (built:
    the builders run so far)."""
    ds = DATASETS[name]
    if ds.builder in built or not rebuild:
        paths = verified(ds, data)
        if paths:
            log.line("# %s: %s %d file(s) that match their sidecar's sha256" % (
                name, "analysis.datasets.%s built above" % ds.builder if ds.builder in built else "reusing",
                len(paths)))
            return paths
        if ds.builder in built:
            raise RunFailed("%s: the files analysis.datasets.%s built do not match its sidecar's sha256" %
                            (name, ds.builder))
    log.run([PYTHON, "-m", "analysis.datasets." + ds.builder])
    built.add(ds.builder)
    paths = verified(ds, data)
    if not paths:
        raise RunFailed("%s: the builder's files do not match its sidecar's sha256" % name)
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


def run_dataset(name, args, log, built):
    ds = DATASETS[name]
    paths = prepare(name, args.rebuild, built, log)
    for sidecar in sorted(glob.glob(os.path.join(DATA, ds.builder, "*.json"))):
        with open(sidecar) as f:
            meta = json.load(f)
        log.line("# data: %s: %s %s (%s), %s" % (
            os.path.relpath(sidecar, ROOT), meta.get("package"), meta.get("version"), meta.get("deb_sha256"),
            "; ".join(sorted(set(l for l in meta.get("licence", []) if l.startswith("License"))))))
    out = lambda suffix: os.path.join(args.outdir, name + suffix)  # noqa: E731
    result = out("_mosaic.json")
    log.run(mpi_command(args) + [args.miniapp, os.path.join("inputs", "real", ds.deck), "--output", result])
    baselines = out("_baselines.json")
    # IncrementalPCA's own noise_variance_ falls like 1 / (samples seen)
    # (analysis/baselines.py): PPCA's noise from its running variance instead.
    # Several files: each stream on its own, pooled as the mini-app pools them.
    log.run([PYTHON, "-m", "analysis.baselines"] + paths + ["--like", result, "--incremental-noise", "total",
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


def scored_samples(run):
    """The samples a run scores on data without gaps: every stream's timed
    steps (steps.timed_samples; a result without it: timed x streams) and
    every stream's warm-up steps (the prequential measure scores those too)."""
    steps = run["steps"]
    streams = int((run.get("decomposition") or {}).get("total_streams", 1))
    timed = steps.get("timed_samples")
    timed = int(timed) if timed is not None else int(steps["timed"]) * streams
    return timed + int(steps.get("warmup", 0)) * streams


def check(done):
    problems = []
    for d in done:
        gaps = DATASETS[d["name"]].gaps
        with open(d["result"]) as f:
            runs = json.load(f)["runs"]
        samples = {run.get("prequential", {}).get("samples") for run in runs}
        if len(samples) != 1 and not gaps:  # with gaps each run skips what its own subspace cannot resolve
            problems.append("%s: the MOSAIC runs evaluated %s samples" % (d["name"], sorted(map(str, samples))))
        expected = set()
        for i, run in enumerate(runs):
            why = unusable(run.get("prequential"))
            if why:
                problems.append("%s: MOSAIC run %d: %s" % (d["name"], i, why))
                continue
            try:
                want = scored_samples(run)
            except (KeyError, TypeError, ValueError) as e:
                problems.append("%s: MOSAIC run %d: no steps.%s" % (d["name"], i, e))
                continue
            expected.add(want)
            if not gaps and run["prequential"]["samples"] != want:
                problems.append("%s: MOSAIC run %d evaluated %s samples, its steps.timed_samples (with warm-up) "
                                "%d" % (d["name"], i, run["prequential"]["samples"], want))
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
            elif not gaps and (preq["samples"] not in samples or {preq["samples"]} != expected):
                problems.append("%s: baseline %s evaluated %s samples, MOSAIC %s, steps.timed_samples (with "
                                "warm-up) %s" % (d["name"], m, preq["samples"], sorted(map(str, samples)),
                                                 sorted(expected)))
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
    done, built = [], set()
    try:
        for name in names:
            with Log(os.path.join(args.outdir, name + ".log")) as log:
                log.line("# %s: %s; %s, %d cores; OMP_NUM_THREADS=%s" % (
                    name, version[0], cpu_model(), os.cpu_count(), os.environ["OMP_NUM_THREADS"]))
                done.append(run_dataset(name, args, log, built))
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
