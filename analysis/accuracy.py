"""accuracy: where MOSAIC tracks and where it fails. From runs of a synthetic
source (which knows its truth), the steady-state projector distance to the
truth, 1 - ||U^T V||_F^2 / k (0: the truth's subspace is captured, 1:
orthogonal to it), over the subspace learning rate eta_U, for every
dimension d, state rank r and drift; against a uniformly random subspace's
distance, 1 - r/d (what an estimator that learned nothing scores).

Steady state: the mean over the diagnostics entries in the last half of the
timed steps of each entry's projector distance (mean over the streams);
runs without at least two such entries are left out (with a note).

Writes a Markdown table per (r, drift, dtype): one row per d, one column
per eta_U, then the best eta_U, its distance, the random baseline and
whether the best point tracks (distance <= --threshold, default 0.3, the
default of run.tracking_threshold); a least-squares fit of log(best eta_U)
against log(d) per (r, drift) where at least three d have an interior best
eta_U; and two PNG figures with a panel per (r, drift, dtype):
accuracy_map.png, the distance against eta_U with a line per d, and
accuracy_vs_d.png, the best distance of each d (lowest over eta_U, the
table's "best eta_U" and "its distance") against d, each point labelled
with its eta_U, with the random baseline 1 - r/d dashed and the threshold
dotted. --no-plots: the tables only.

    python3 -m analysis.accuracy results/cpu/accuracy_map_np1.json --out figures/
"""

import argparse
import math
import os
import sys
from collections import OrderedDict

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from analysis import common as C


def steady_state(rec):
    """Mean projector distance over the last half of the run, or None."""
    half = rec.steps / 2.0
    values = [(e.get("accuracy") or {}).get("projector_distance_mean") for e in rec.series
              if e.get("step", 0) > half]
    values = [v for v in values if v is not None]
    if len(values) < 2 or any(not math.isfinite(v) for v in values):
        return None
    return sum(values) / len(values)


class Point:
    def __init__(self, rec):
        deck = rec.resolved_deck
        self.rec = rec
        self.d, self.r, self.dtype = rec.d, rec.r, rec.dtype
        self.eta_U = float(deck["algorithm"]["eta_U"])
        self.drift = float(deck["source"]["drift"])
        self.distance = steady_state(rec)
        self.random = 1.0 - float(self.r) / float(self.d)


def collect_points(records):
    points, skipped = [], []
    for rec in records:
        if rec.resolved_deck.get("source", {}).get("type") != "synthetic":
            continue
        p = Point(rec)
        if p.distance is None:
            skipped.append("%s run %d (d=%d, r=%d): fewer than 2 truth diagnostics in the last half" %
                           (rec.file, rec.run_index, rec.d, rec.r))
            continue
        points.append(p)
    return points, skipped


def panels(points):
    """OrderedDict (r, drift, dtype) -> {d: {eta_U: [distances]}}."""
    out = OrderedDict()
    for p in sorted(points, key=lambda p: (p.r, p.drift, p.dtype, p.d, p.eta_U)):
        out.setdefault((p.r, p.drift, p.dtype), OrderedDict()).setdefault(p.d, OrderedDict()).setdefault(
            p.eta_U, []).append(p.distance)
    return out


def best_eta(by_eta):
    eta = min(by_eta, key=lambda e: C.median(by_eta[e]))
    return eta, C.median(by_eta[eta])


class Best:
    """The best eta_U of one d of a panel (lowest median steady-state distance):
    the report's table and the figure accuracy_vs_d.png show these."""

    def __init__(self, r, d, by_eta):
        self.d = d
        self.eta, self.distance = best_eta(by_eta)
        self.random = 1.0 - float(r) / d
        self.interior = self.eta not in (min(by_eta), max(by_eta))

    @property
    def eta_text(self):
        return C.compact(self.eta) + ("" if self.interior else " (edge)")


def best_points(r, by_d):
    """[Best] of a panel's {d: {eta_U: [distances]}}, by d."""
    return [Best(r, d, by_eta) for d, by_eta in by_d.items()]


def fit_rule(rows):
    """Least squares log(eta) = a + b log(d) over (d, eta) with an interior
    best eta (not at either end of the swept range); None below 3 points."""
    pts = [(math.log(d), math.log(eta)) for d, eta, interior in rows if interior]
    if len(pts) < 3:
        return None
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if sxx == 0:
        return None
    b = sum((x - mx) * (y - my) for x, y in pts) / sxx
    a = my - b * mx
    resid = max(abs(y - (a + b * x)) for x, y in pts)
    return math.exp(a), b, math.exp(resid)


def report(points, threshold):
    lines = []
    for (r, drift, dtype), by_d in panels(points).items():
        etas = sorted({e for by_eta in by_d.values() for e in by_eta})
        lines.append("\n### r = %d, drift = %s rad/step, %s\n" % (r, C.compact(drift), dtype))
        headers = ["d"] + ["eta_U=%s" % C.compact(e) for e in etas] + ["best eta_U", "its distance",
                                                                        "random 1-r/d", "tracks"]
        rows, best = [], best_points(r, by_d)
        for b, by_eta in zip(best, by_d.values()):
            rows.append([b.d] + [C.fmt_sci(C.median(by_eta[e])) if e in by_eta else "" for e in etas] +
                        [b.eta_text, C.fmt_sci(b.distance), "%.4f" % b.random,
                         "yes" if b.distance <= threshold else "no"])
        lines.append(C.md_table(headers, rows))
        fit = fit_rule([(b.d, b.eta, b.interior) for b in best])
        if fit:
            c, b, spread = fit
            lines.append("\nfit of the best eta_U: eta_U ~ %.3g * d^%.3f (worst point off the fit by a factor %.2f)" %
                         (c, b, spread))
        else:
            lines.append("\nno fit of the best eta_U: fewer than 3 d with the best eta_U inside the swept range")
    return "\n".join(lines)


def _panel_grid(plt, n):
    """A figure with n panels, two per row."""
    cols = min(2, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, 4.2 * rows), squeeze=False)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    return fig, axes


def panel_title(r, drift, dtype):
    return "r=%d, drift %s rad/step, %s (dashed: random subspace 1-r/d)" % (r, C.compact(drift), dtype)


def plot(points, out_dir, threshold):
    plt = C.pyplot()
    groups = panels(points)
    fig, axes = _panel_grid(plt, len(groups))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, ((r, drift, dtype), by_d) in zip(axes.flat, groups.items()):
        for i, (d, by_eta) in enumerate(by_d.items()):
            col = colors[i % len(colors)]
            etas = sorted(by_eta)
            ax.plot(etas, [C.median(by_eta[e]) for e in etas], "o-", color=col, label="d=%d" % d)
            ax.axhline(1.0 - float(r) / d, color=col, ls="--", lw=0.8)
        ax.axhline(threshold, color="k", ls=":", lw=0.8, label="threshold %.2g" % threshold)
        ax.set_xscale("log")
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("eta_U (subspace learning rate) [dimensionless]")
        ax.set_ylabel("steady-state projector distance [dimensionless]")
        ax.set_title(panel_title(r, drift, dtype), fontsize=9)
        ax.legend(fontsize=7)
    path = os.path.join(out_dir, "accuracy_map.png")
    return C.save_figure(fig, path, "MOSAIC: where it tracks (low) and where it fails (near the dashed lines)",
                         [p.rec for p in points])


def plot_vs_d(points, out_dir, threshold):
    """accuracy_vs_d.png: per panel, the best steady-state distance of each d
    (best_points, as in the report), labelled with its eta_U. Returns (path,
    {(r, drift, dtype): [Best]})."""
    plt = C.pyplot()
    ticker = C.matplotlib_module("matplotlib.ticker")
    groups = panels(points)
    fig, axes = _panel_grid(plt, len(groups))
    shown = OrderedDict()
    for ax, ((r, drift, dtype), by_d) in zip(axes.flat, groups.items()):
        best = shown[(r, drift, dtype)] = best_points(r, by_d)
        ds = [b.d for b in best]
        ax.plot(ds, [b.distance for b in best], "o-", color="tab:blue", label="best over eta_U (label: its eta_U)")
        for b in best:
            ax.annotate(b.eta_text, (b.d, b.distance), textcoords="offset points", xytext=(0, 7), ha="center",
                        fontsize=7)
        ax.plot(ds, [b.random for b in best], "--", color="tab:blue", lw=0.8, label="random subspace 1-r/d")
        ax.axhline(threshold, color="k", ls=":", lw=0.8, label="threshold %.2g" % threshold)
        ax.set_xscale("log", base=2)
        C.label_x_ticks(ax, ds, fmt=str)
        ax.margins(x=0.1)
        # A log axis when the values are positive and span at least a decade (as in analysis.stability).
        values = [b.distance for b in best] + [b.random for b in best] + [threshold]
        if min(values) > 0 and max(values) / min(values) >= 10:
            ax.set_yscale("log")
            ax.set_ylim(min(values) / 1.6, 1.6)
            ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _pos: "%.3g" % v))
            ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        else:
            ax.set_ylim(0, 1.05)
        ax.set_xlabel("ambient dimension d [coordinates]")
        ax.set_ylabel("best steady-state projector distance [dimensionless]", fontsize=8)
        ax.set_title(panel_title(r, drift, dtype), fontsize=9)
        ax.legend(fontsize=7)
    path = os.path.join(out_dir, "accuracy_vs_d.png")
    return C.save_figure(fig, path, "MOSAIC: the best accuracy over eta_U vs d (labels: the best eta_U)",
                         [p.rec for p in points]), shown


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m analysis.accuracy", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    C.add_common_arguments(parser)
    parser.add_argument("--threshold", type=float, default=0.3,
                        help="the distance that counts as tracking (default %(default)s: run.tracking_threshold's default)")
    parser.add_argument("--no-plots", action="store_true", help="tables only")
    args = parser.parse_args(argv)
    if not args.no_plots:
        C.check_output_dir(args.out)
    records = C.load_records(args.inputs, validate=args.validate)
    points, skipped = collect_points(records)
    if not points:
        raise C.AnalysisError("no synthetic run with at least 2 truth diagnostics in its last half")
    print("# Accuracy map: steady-state projector distance to the truth\n")
    print(report(points, args.threshold))
    for s in skipped:
        print("\nleft out: " + s)
    if not args.no_plots:
        print("\nfigure: " + plot(points, args.out, args.threshold))
        print("figure: " + plot_vs_d(points, args.out, args.threshold)[0])
    return 0


if __name__ == "__main__":
    sys.exit(C.main_wrapper("analysis.accuracy", main, None))
