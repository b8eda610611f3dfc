"""missing: how MOSAIC's accuracy changes with missing data (ALGORITHM.md
section 7), from runs of a synthetic source (which knows its truth) with
missing entries: the missing-fraction sweep of inputs/missing_study.yaml
and the outage runs of bench/run_missing_study.sh.

Per run (one stream: per_rank 1), over the diagnostics entries whose
sample_index lies in the window [--window-start, --window-end) (default
3000-6000, the host reference study's, bench/reference_masked_study.cpp):
- the mean projector distance to the truth, 1 - ||U^T V||_F^2 / r;
- the noise estimate's bias, s2 / sigma^2 - 1 (sigma = source.noise; runs
  with heterogeneous noise, source.noise_range, are left out with a note);
- the smallest debiased eigenvalue's bias, max(min eig(S) - s2, 0) /
  lambda_min - 1 (section 4's debiased spectrum, isotropic noise);
and for an outage run (source.outage_count > 0) the distance at its last
sample, outage_start + outage_steps - 1 (an entry must fall on it).

Runs that differ only in run.seed are one point: mean and standard
deviation over the seeds. Prints a Markdown table of the sweep (a row per
d and missing fraction, a column per algorithm.missing: distance and, in
parentheses, the eigenvalue's bias), a table of every point with all three
measures and the outage table. --reference FILE compares each seed with the
host reference study's output (bench/run_reference_masked_study.sh, its
--label names) and prints the largest difference of each measure: the
mini-app runs the engine, the study the host reference, on the same stream,
so they agree to the study's printed digits. Writes missing_study.png (the
distance against the missing fraction, a line per mode, a panel per d)
unless --no-plots.

    python3 -m analysis.missing mosaic_result_missing_study.json --out figures/
"""

import argparse
import math
import os
import re
import sys
from collections import OrderedDict

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from analysis import common as C

MODES = ["posterior", "project", "zero_fill", "drop"]


class Run:
    """One run's window measures, or None where it has no entry in the window."""

    def __init__(self, rec, start, end):
        deck = rec.resolved_deck
        src, alg = deck["source"], deck["algorithm"]
        self.rec = rec
        self.d, self.r = rec.d, rec.r
        self.fraction = float(src.get("missing_rate", 0.0))
        self.mode = str(alg.get("missing", "error"))
        self.rotation = str(alg.get("missing_rotation", "observed"))
        self.seed = int(deck["run"]["seed"])
        self.outage = int(src.get("outage_count", 0))
        self.outage_end = int(src.get("outage_start", 0)) + int(src.get("outage_steps", 0)) - 1
        noise, lam_min = float(src["noise"]), float(src["lambda_min"])
        window = [e for e in rec.series if start <= e.get("sample_index", -1) < end and e.get("accuracy")]
        self.points = len(window)
        self.distance = self.s2_bias = self.eig_bias = None
        if window:
            n = float(len(window))
            self.distance = sum(e["accuracy"]["projector_distance_mean"] for e in window) / n
            self.s2_bias = sum(e["s2_min"] / noise ** 2 - 1.0 for e in window) / n
            self.eig_bias = sum(max(e["s_min_eig_min"] - e["s2_min"], 0.0) / lam_min - 1.0 for e in window) / n
        self.distance_end = None
        if self.outage > 0:
            at = [e for e in rec.series if e.get("sample_index") == self.outage_end and e.get("accuracy")]
            if at:
                self.distance_end = at[0]["accuracy"]["projector_distance_mean"]

    def key(self):
        return (self.d, self.r, self.outage, self.fraction, self.mode, self.rotation)

    def label(self):
        """The reference study's --label for the same point (bench/run_reference_masked_study.sh)."""
        if self.outage > 0:
            return "outage-geodesic" if self.rotation == "geodesic" else "outage-" + self.mode
        return "sweep-d%d-f%g-%s" % (self.d, self.fraction, self.mode)


def collect(records, start, end):
    runs, notes = [], []
    for rec in records:
        src = rec.resolved_deck.get("source", {})
        if src.get("type") != "synthetic":
            continue
        if src.get("noise_range"):
            notes.append("%s run %d: heterogeneous noise (source.noise_range): not measured here" %
                         (rec.file, rec.run_index))
            continue
        run = Run(rec, start, end)
        if run.distance is None and run.distance_end is None:
            notes.append("%s run %d: no diagnostics entry with sample_index in [%d, %d)" %
                         (rec.file, rec.run_index, start, end))
            continue
        runs.append(run)
    return runs, notes


def mean_sd(values):
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    m = sum(values) / len(values)
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    return m, sd


def points(runs):
    """OrderedDict key -> [Run] over the seeds, sorted."""
    out = OrderedDict()
    for run in sorted(runs, key=lambda r: (r.key(), r.seed)):
        out.setdefault(run.key(), []).append(run)
    return out


def fmt(m, sd=None, signed=False, digits=4):
    if m is None:
        return "n/a"
    text = ("%+.*f" if signed else "%.*f") % (digits, m)
    return text if sd is None else "%s ± %.*f" % (text, digits, sd)


def sweep_table(pts):
    rows = []
    for (d, r, outage, f, mode, rot), runs in pts.items():
        if outage or rot != "observed":
            continue
        row = next((x for x in rows if x[0] == d and x[1] == f), None)
        if row is None:
            row = [d, f] + ["" for _ in MODES]
            rows.append(row)
        if mode in MODES:
            dist, _ = mean_sd([x.distance for x in runs])
            eig, _ = mean_sd([x.eig_bias for x in runs])
            row[2 + MODES.index(mode)] = "%s (%s)" % (fmt(dist), fmt(eig, signed=True, digits=3))
    rows.sort(key=lambda x: (x[0], x[1]))
    return C.md_table(["d", "missing"] + ["`%s`" % m for m in MODES],
                      [[str(d), "%g%%" % (100 * f)] + rest for d, f, *rest in rows])


def point_table(pts):
    rows = []
    for (d, r, outage, f, mode, rot), runs in pts.items():
        if outage:
            continue
        rows.append([str(d), str(r), "%g%%" % (100 * f), mode + ("" if rot == "observed" else ", " + rot),
                     str(len(runs)), fmt(*mean_sd([x.distance for x in runs])),
                     fmt(*mean_sd([x.s2_bias for x in runs]), signed=True),
                     fmt(*mean_sd([x.eig_bias for x in runs]), signed=True, digits=3)])
    return C.md_table(["d", "r", "missing", "mode", "seeds", "projector distance", "s2 bias",
                       "smallest debiased eigenvalue bias"], rows)


def outage_table(pts):
    rows = []
    for (d, r, outage, f, mode, rot), runs in pts.items():
        if not outage:
            continue
        rows.append([str(d), "%d of %d from sample %d to %d" % (outage, d, runs[0].outage_end + 1 - int(
            runs[0].rec.resolved_deck["source"]["outage_steps"]), runs[0].outage_end), mode +
                     ("" if rot == "observed" else ", " + rot), str(len(runs)),
                     fmt(*mean_sd([x.distance_end for x in runs]))])
    return C.md_table(["d", "outage (channels, samples)", "mode", "seeds", "distance at the outage's last sample"],
                      rows) if rows else ""


REF_LINE = re.compile(r"^\s*seed(\d+)\s+dist (\S+)\s+s2_bias (\S+)\s+eig_r_bias (\S+)\s+dist_end (\S+)")


def read_reference(path):
    """{label: {seed: (dist, s2_bias, eig_bias, dist_end)}} from the study's output."""
    out, label = {}, None
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as e:
        raise C.AnalysisError("%s: %s" % (path, e.strerror))
    for line in lines:
        m = re.match(r"^(\S+): d \d+ r \d+ ", line)
        if m:
            label = m.group(1)
            continue
        m = REF_LINE.match(line)
        if m and label:
            out.setdefault(label, {})[int(m.group(1))] = tuple(float(x) for x in m.groups()[1:])
    if not out:
        raise C.AnalysisError("%s: no seed lines of mosaic_reference_study" % path)
    return out


def compare(runs, ref):
    """Largest |mini-app - reference| per measure over the seeds both have:
    the window's measures for the sweep, the distance at the end for an outage."""
    worst = [0.0, 0.0, 0.0, 0.0]
    compared, absent = 0, set()
    for run in runs:
        seeds = ref.get(run.label())
        if seeds is None or run.seed not in seeds:
            absent.add(run.label())
            continue
        compared += 1
        # An outage run is compared at the outage's end only (the study's
        # window for it lies after the outage; these runs end there).
        ours = (None, None, None, run.distance_end) if run.outage else (run.distance, run.s2_bias, run.eig_bias, None)
        for i, (a, b) in enumerate(zip(ours, seeds[run.seed])):
            if a is not None and math.isfinite(b):
                worst[i] = max(worst[i], abs(a - b))
    return compared, worst, sorted(absent)


def plot(pts, out_dir):
    plt = C.pyplot()
    ds = sorted({k[0] for k in pts if not k[2]})
    fig, axes = plt.subplots(1, len(ds), figsize=(5.5 * len(ds), 4.2), squeeze=False)
    for ax, d in zip(axes.flat, ds):
        for mode in MODES:
            got = sorted((k[3], mean_sd([x.distance for x in runs]))
                         for k, runs in pts.items() if k[0] == d and not k[2] and k[4] == mode and k[5] == "observed")
            if not got:
                continue
            fr = [100 * f for f, _ in got]
            ax.errorbar(fr, [m for _, (m, _) in got], yerr=[sd for _, (_, sd) in got], marker="o", capsize=3,
                        label=mode)
        ax.set_yscale("log")
        ax.set_xlabel("entries missing at random [%]")
        ax.set_ylabel("mean projector distance [dimensionless]")
        r = next(k[1] for k in pts if k[0] == d)
        ax.set_title("d=%d, r=%d (random subspace: %.3f)" % (d, r, 1 - float(r) / d), fontsize=9)
        ax.legend(fontsize=7)
    path = os.path.join(out_dir, "missing_study.png")
    return C.save_figure(fig, path, "MOSAIC with missing data: accuracy against the missing fraction "
                         "(mean and sd over seeds)", [run.rec for runs in pts.values() for run in runs])


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m analysis.missing", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    C.add_common_arguments(parser)
    parser.add_argument("--window-start", type=int, default=3000, help="first sample index (default %(default)s)")
    parser.add_argument("--window-end", type=int, default=6000, help="end sample index (default %(default)s)")
    parser.add_argument("--reference", metavar="FILE", help="the host reference study's output to compare with")
    parser.add_argument("--no-plots", action="store_true", help="tables only")
    args = parser.parse_args(argv)
    records = C.load_records(args.inputs, validate=args.validate)
    runs, notes = collect(records, args.window_start, args.window_end)
    if not runs:
        raise C.AnalysisError("no synthetic run with diagnostics in the window [%d, %d)" %
                              (args.window_start, args.window_end))
    pts = points(runs)
    print("# Missing data: accuracy over samples [%d, %d)\n" % (args.window_start, args.window_end))
    print("Projector distance (smallest debiased eigenvalue's bias), mean over the seeds:\n")
    print(sweep_table(pts))
    print("\nEvery point (mean ± sd over the seeds):\n")
    print(point_table(pts))
    outages = outage_table(pts)
    if outages:
        print("\nOutages:\n")
        print(outages)
    if args.reference:
        compared, worst, absent = compare(runs, read_reference(args.reference))
        print("\nAgainst the host reference study (%s): %d runs compared; largest difference: distance %.1e, "
              "s2 bias %.1e, eigenvalue bias %.1e, distance at the outage's end %.1e" %
              ((args.reference, compared) + tuple(worst)))
        if absent:
            print("not in the reference study: " + ", ".join(absent))
    for n in notes:
        print("\nleft out: " + n)
    if not args.no_plots:
        print("\nfigure: " + plot(pts, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(C.main_wrapper("analysis.missing", main, sys.argv[1:]))
