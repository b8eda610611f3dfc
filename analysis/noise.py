"""noise: the isotropic noise model against noise: diagonal (ALGORITHM.md
section 8) on streams with heterogeneous noise, from runs of a synthetic
source with source.noise_range (which knows its truth), such as
inputs/noise_study.yaml.

Per run (one stream: per_rank 1), over the diagnostics entries whose
sample_index lies in the window [--window-start, --window-end) (default
4000-8000, ALGORITHM.md 8.6's), the means of the accuracy the mini-app
reports in data coordinates (8.4; src/mosaic/sources/stream_source.hpp):
- the projector distance to the truth, 1 - ||B^T V||_F^2 / r with B an
  orthonormal basis of span(Psi^1/2 U) (U itself when isotropic);
- the noise estimate's relative error, |s2 mean(psi) - mean sigma_j^2| /
  mean sigma_j^2 (s2 when isotropic);
- the debiased spectrum's relative error (the eigenvalues of
  Psi^1/2 U (S - s2 I)_+ U^T Psi^1/2 against the truth's).

Runs that differ only in run.seed are one point: mean and standard
deviation over the seeds. Prints a Markdown table with a row per d, rank
and missing fraction: each measure for algorithm.noise isotropic and
diagonal, and the ratio diagonal / isotropic of the distance (below 1: the
whitening recovered efficiency). Runs without heterogeneous noise are left
out with a note. Writes noise_study.png (the distance against d, a line per
model and missing fraction, mean and sd over the seeds) unless --no-plots.

--reference FILE compares each seed with the host reference study's output
(bench/run_reference_masked_study.sh: its hetero-<model>-d<d> and
hetero-mcar20-<model>-d<d> rows) and prints the largest difference of the
distance, and for the noise error how many runs agree with the study's
|s2 bias| to its printed digits (5e-5): the window mean of |error| equals
the size of the window mean of the signed bias only where the bias keeps
its sign over the window, and is never below it (a run where it is, is
listed). The mini-app runs the engine, the study the host reference, on the
same stream.

    python3 -m analysis.noise mosaic_result_noise_study.json --out figures/
"""

import argparse
import os
import sys
from collections import OrderedDict

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from analysis import common as C
from analysis import missing

MODELS = ["isotropic", "diagonal"]
MEASURES = [("distance", "projector_distance_mean"), ("noise", "noise_rel_error_mean"),
            ("spectrum", "spectrum_rel_error_mean")]


class Run:
    """One run's window means (None where it has no entry in the window)."""

    def __init__(self, rec, start, end):
        deck = rec.resolved_deck
        src, alg = deck["source"], deck["algorithm"]
        self.rec = rec
        self.d, self.r = rec.d, rec.r
        self.fraction = float(src.get("missing_rate", 0.0))
        self.model = str(alg.get("noise", "isotropic"))
        self.seed = int(deck["run"]["seed"])
        window = [e for e in rec.series if start <= e.get("sample_index", -1) < end and e.get("accuracy")]
        self.points = len(window)
        self.values = {}
        for name, field in MEASURES:
            self.values[name] = sum(e["accuracy"][field] for e in window) / len(window) if window else None

    def key(self):
        return (self.d, self.r, self.fraction)

    def identity(self):
        """The study point and seed: what matches a run across two results of one deck."""
        return self.key() + (self.model, self.seed)

    def kernel(self):
        return "%s (block_size %d)" % (self.rec.kernel, self.rec.block_size)

    def label(self):
        """The reference study's --label for the same point, or None (bench/run_reference_masked_study.sh)."""
        if self.fraction == 0.0:
            return "hetero-%s-d%d" % (self.model, self.d)
        if self.fraction == 0.2:
            return "hetero-mcar20-%s-d%d" % (self.model, self.d)
        return None


def collect(records, start, end):
    runs, notes = [], []
    for rec in records:
        src = rec.resolved_deck.get("source", {})
        if src.get("type") != "synthetic":
            continue
        if not src.get("noise_range"):
            notes.append("%s run %d: homogeneous noise (no source.noise_range)" % (rec.file, rec.run_index))
            continue
        run = Run(rec, start, end)
        if run.values["distance"] is None:
            notes.append("%s run %d: no diagnostics entry with sample_index in [%d, %d)" %
                         (rec.file, rec.run_index, start, end))
            continue
        runs.append(run)
    return runs, notes


def points(runs):
    """OrderedDict (d, r, fraction) -> {model: [Run]} over the seeds, sorted."""
    pts = OrderedDict()
    for run in sorted(runs, key=lambda x: (x.key(), x.model, x.seed)):
        pts.setdefault(run.key(), {}).setdefault(run.model, []).append(run)
    return pts


def table(runs):
    pts = points(runs)
    headers = ["d", "r", "missing", "seeds"]
    for name, _ in MEASURES:
        headers += ["%s %s" % (name, m) for m in MODELS]
    headers.append("distance diagonal / isotropic")
    rows = []
    for (d, r, f), by_model in pts.items():
        seeds = "/".join(str(len(by_model.get(m, []))) for m in MODELS)
        row = [str(d), str(r), "%g%%" % (100 * f), seeds]
        means = {}
        for name, _ in MEASURES:
            for m in MODELS:
                mean, sd = missing.mean_sd([x.values[name] for x in by_model.get(m, [])])
                means[(name, m)] = mean
                row.append(missing.fmt(mean, sd))
        iso, diag = means[("distance", "isotropic")], means[("distance", "diagonal")]
        row.append("%.3f" % (diag / iso) if iso and diag is not None else "n/a")
        rows.append(row)
    return C.md_table(headers, rows)


def plot(runs, out_dir):
    plt = C.pyplot()
    pts = points(runs)
    fig, ax = plt.subplots(figsize=(6.0, 4.2))
    for f in sorted({k[2] for k in pts}):
        for model in MODELS:
            got = sorted((k[0], missing.mean_sd([x.values["distance"] for x in by_model.get(model, [])]))
                         for k, by_model in pts.items() if k[2] == f and by_model.get(model))
            if not got:
                continue
            ax.errorbar([d for d, _ in got], [m for _, (m, _) in got], yerr=[sd for _, (_, sd) in got], marker="o",
                        capsize=3, linestyle="-" if model == "diagonal" else "--",
                        label="%s, %g%% missing" % (model, 100 * f))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    C.label_x_ticks(ax, sorted({k[0] for k in pts}))
    ax.set_xlabel("dimension d [coordinates]")
    ax.set_ylabel("mean projector distance [dimensionless]")
    C.plain_log_labels(ax)
    ax.legend(fontsize=7)
    path = os.path.join(out_dir, "noise_study.png")
    return C.save_figure(fig, path, "MOSAIC on heterogeneous noise: the isotropic model and noise: diagonal "
                         "(data coordinates; mean and sd over seeds)", [run.rec for run in runs])


def compare(runs, ref):
    """(runs compared, largest |mini-app - reference| distance, runs whose noise
    error equals the study's |s2 bias| to 5e-5, runs where it is below it,
    labels the study does not have)."""
    worst, same_noise, below = 0.0, 0, []
    compared, absent = 0, set()
    for run in runs:
        seeds = ref.get(run.label() or "")
        if seeds is None or run.seed not in seeds:
            absent.add(run.label() or "d%d-f%g-%s" % (run.d, run.fraction, run.model))
            continue
        compared += 1
        dist, s2_bias = seeds[run.seed][0], seeds[run.seed][1]
        worst = max(worst, abs(run.values["distance"] - dist))
        if abs(run.values["noise"] - abs(s2_bias)) <= 5e-5:
            same_noise += 1
        elif run.values["noise"] < abs(s2_bias):
            below.append("%s seed %d" % (run.label(), run.seed))
    return compared, worst, same_noise, below, sorted(absent)


def same_as(runs, other):
    """(runs matched, {measure: largest relative difference of the window
    means}, identities only in one of the two, the kernels of each)."""
    mine = {run.identity(): run for run in runs}
    theirs = {run.identity(): run for run in other}
    worst = {name: 0.0 for name, _ in MEASURES}
    matched = sorted(set(mine) & set(theirs))
    for ident in matched:
        for name, _ in MEASURES:
            a, b = mine[ident].values[name], theirs[ident].values[name]
            worst[name] = max(worst[name], abs(a - b) / max(abs(b), 1e-300))
    unmatched = sorted(set(mine) ^ set(theirs))
    kernels = (sorted({run.kernel() for run in runs}), sorted({run.kernel() for run in other}))
    return len(matched), worst, unmatched, kernels


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m analysis.noise", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    C.add_common_arguments(parser)
    parser.add_argument("--window-start", type=int, default=4000, help="first sample index (default %(default)s)")
    parser.add_argument("--window-end", type=int, default=8000, help="end sample index (default %(default)s)")
    parser.add_argument("--reference", metavar="FILE", help="the host reference study's output to compare with")
    parser.add_argument("--same-as", metavar="FILE",
                        help="another result of the same deck (another kernel, backend or build): the largest "
                        "relative differences of the runs' window means")
    parser.add_argument("--no-plots", action="store_true", help="tables only")
    args = parser.parse_args(argv)
    if not args.no_plots:
        C.check_output_dir(args.out)
    records = C.load_records(args.inputs, validate=args.validate)
    runs, notes = collect(records, args.window_start, args.window_end)
    if not runs:
        raise C.AnalysisError("no synthetic run with heterogeneous noise and diagnostics in the window [%d, %d)" %
                              (args.window_start, args.window_end))
    print("# Heterogeneous noise: isotropic model vs noise: diagonal over samples [%d, %d)\n" %
          (args.window_start, args.window_end))
    print("Mean ± sd over the seeds (seeds: isotropic/diagonal runs); data coordinates (ALGORITHM.md 8.4):\n")
    print(table(runs))
    if args.reference:
        compared, worst, same_noise, below, absent = compare(runs, missing.read_reference(args.reference))
        print("\nAgainst the host reference study (%s): %d runs compared; largest difference of the distance "
              "%.1e; noise error equal to the study's |s2 bias| to 5e-5 in %d runs, below it in %d%s" %
              (args.reference, compared, worst, same_noise, len(below), (": " + ", ".join(below)) if below else ""))
        if absent:
            print("not in the reference study: " + ", ".join(absent))
    if args.same_as:
        other, _ = collect(C.load_records([args.same_as], validate=args.validate), args.window_start,
                           args.window_end)
        matched, worst, unmatched, kernels = same_as(runs, other)
        print("\nAgainst %s (kernels: %s here, %s there): %d runs matched; largest relative difference of the "
              "window means: %s" % (args.same_as, ", ".join(kernels[0]), ", ".join(kernels[1]), matched,
                                    ", ".join("%s %.1e" % (name, worst[name]) for name, _ in MEASURES)))
        if unmatched:
            print("in one result only: " + ", ".join("d=%d r=%d missing=%g %s seed %d" % u for u in unmatched))
    for n in notes:
        print("\nleft out: " + n)
    if not args.no_plots:
        print("\nfigure: " + plot(runs, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(C.main_wrapper("analysis.noise", main, sys.argv[1:]))
