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
out with a note. Tables only (no figure).

    python3 -m analysis.noise mosaic_result_noise_study.json
"""

import argparse
import math
import os
import sys
from collections import OrderedDict

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from analysis import common as C

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


def mean_sd(values):
    if not values:
        return None, None
    m = sum(values) / len(values)
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    return m, sd


def fmt(m, sd):
    return "n/a" if m is None else "%.4f ± %.4f" % (m, sd)


def table(runs):
    pts = OrderedDict()
    for run in sorted(runs, key=lambda x: (x.key(), x.model, x.seed)):
        pts.setdefault(run.key(), {}).setdefault(run.model, []).append(run)
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
                mean, sd = mean_sd([x.values[name] for x in by_model.get(m, [])])
                means[(name, m)] = mean
                row.append(fmt(mean, sd))
        iso, diag = means[("distance", "isotropic")], means[("distance", "diagonal")]
        row.append("%.3f" % (diag / iso) if iso and diag is not None else "n/a")
        rows.append(row)
    return C.md_table(headers, rows)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m analysis.noise", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    C.add_common_arguments(parser, out=False)
    parser.add_argument("--window-start", type=int, default=4000, help="first sample index (default %(default)s)")
    parser.add_argument("--window-end", type=int, default=8000, help="end sample index (default %(default)s)")
    args = parser.parse_args(argv)
    records = C.load_records(args.inputs, validate=args.validate)
    runs, notes = collect(records, args.window_start, args.window_end)
    if not runs:
        raise C.AnalysisError("no synthetic run with heterogeneous noise and diagnostics in the window [%d, %d)" %
                              (args.window_start, args.window_end))
    print("# Heterogeneous noise: isotropic model vs noise: diagonal over samples [%d, %d)\n" %
          (args.window_start, args.window_end))
    print("Mean ± sd over the seeds (seeds: isotropic/diagonal runs); data coordinates (ALGORITHM.md 8.4):\n")
    print(table(runs))
    for n in notes:
        print("\nleft out: " + n)
    return 0


if __name__ == "__main__":
    sys.exit(C.main_wrapper("analysis.noise", main, sys.argv[1:]))
