"""stability: the diagnostics time series recorded over the streams' life
(runs[].diagnostics.series, every run.diagnostics_every timed steps plus the
final one) as PNG figures with four panels versus the timed step:
orthonormality error ||U^T U - I||_F, cond(S), the projector distance to the
synthetic truth, and the clamped covariance steps (cumulative; the series
values are already running totals since init, summed over streams). Every
value is the maximum over the streams (the sum for the clamped steps).

One figure per deck: runs that share a deck (same deck file name and the same
--set overrides, output.* ignored) are overlaid: the points of a sweep, or one
deck run at several rank counts. --per-run gives one figure per run. Runs of
one deck whose configuration differs (common.CONFIGURATION_FIELDS: update
kernel, block size, ..., backend, concurrency) stay in one figure, overlaid
as different runs: legends and the summary table name the fields that differ.

    python3 -m analysis.stability results/accuracy_drift.json results/ablation.json --out figures/
"""

import argparse
import hashlib
import math
import os
import sys
from collections import OrderedDict

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from analysis import common as C

PANELS = [
    # (value getter, y label, log scale, title, null means non-finite)
    (lambda e: e.get("orthonormality_error_max"), r"$\|U^\top U - I\|_F$, max over streams [dimensionless]", True,
     "orthonormality error", True),
    (lambda e: e.get("s_condition_max"), "cond(S), max over streams [dimensionless]", True,
     "condition number of S", True),
    # No "accuracy" object: a source without a known truth (not an error).
    (lambda e: (e.get("accuracy") or {}).get("projector_distance_max"),
     r"$1 - \|U^\top V\|_F^2 / k$, max over streams [dimensionless]", True, "projector distance to truth", False),
    (lambda e: e.get("clamped_steps"), "clamped steps, cumulative, all streams [count]", False,
     "clamped covariance steps", True),
]


def deck_key(rec):
    return (rec.deck_name, tuple(o for o in rec.overrides if not o.strip().startswith("output.")))


def deck_groups(records, per_run=False):
    groups = OrderedDict()
    for r in records:
        key = (r.path, r.run_index) if per_run else deck_key(r)
        groups.setdefault(key, []).append(r)
    return list(groups.values())


def varying_configuration(group):
    return C.varying_fields([r.configuration for r in group], C.CONFIGURATION_FIELDS)


def run_label(rec, group):
    parts = []
    if len(set(r.ranks for r in group)) > 1 or len(set(r.path for r in group)) > 1:
        parts.append("np=%d" % rec.ranks)
    if rec.sweep_point:
        parts.append(rec.sweep_label)
    shown = varying_configuration(group)
    if shown:
        parts.append(C.key_text([kv for kv in rec.configuration if kv[0] in shown]))
    text = ", ".join(parts)
    if len(set(r.path for r in group)) > 1:
        text += " (%s)" % rec.file
    return text.strip() or rec.label()


def _series(rec, get, null_is_nonfinite):
    """(steps, values, count of non-finite values) of one panel's quantity."""
    xs, ys, nonfinite = [], [], 0
    for e in rec.series:
        v = get(e)
        if v is None and not null_is_nonfinite:
            continue
        xs.append(int(e["step"]))
        if v is None:  # the writer stores inf/nan as null: a gap in the line
            nonfinite += 1
            ys.append(math.nan)
        else:
            ys.append(float(v))
    return xs, ys, nonfinite


def plot_group(group, path, title):
    plt = C.pyplot()
    ticker = C.matplotlib_module("matplotlib.ticker")
    FuncFormatter, MaxNLocator, NullFormatter = ticker.FuncFormatter, ticker.MaxNLocator, ticker.NullFormatter
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.2))
    for ax, (get, ylabel, log, ptitle, null_nonfinite) in zip(axes.flat, PANELS):
        any_data, nonfinite, values = False, 0, []
        for rec in group:
            xs, ys, nf = _series(rec, get, null_nonfinite)
            nonfinite += nf
            if not xs or all(math.isnan(y) for y in ys):
                continue
            any_data = True
            values += [y for y in ys if math.isfinite(y)]
            kw = {"drawstyle": "steps-post"} if not log else {}
            ax.plot(xs, ys, marker="o", ms=3, label=run_label(rec, group), **kw)
        # Log scale when the values are positive and span at least a decade.
        if log and values and min(values) > 0 and max(values) / min(values) >= 10:
            ax.set_yscale("log")
            # Plain "%.3g" labels (no mathtext: faster layout).
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: "%.3g" % v))
            ax.yaxis.set_minor_formatter(NullFormatter())
        elif log:
            ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 4), useOffset=False)
        else:  # counts
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_ylim(0, max([1] + values) * 1.05)
        if not any_data:
            ax.text(0.5, 0.5, "no data in the series", ha="center", va="center", transform=ax.transAxes)
        if nonfinite:
            ptitle += " (%d non-finite value(s) omitted)" % nonfinite
        ax.set_title(ptitle, fontsize=9)
        ax.set_xlabel("timed step [samples per stream]")
        ax.set_ylabel(ylabel, fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if not handles:
        for ax in axes.flat:
            handles, labels = ax.get_legend_handles_labels()
            if handles:
                break
    if len(handles) > 1:
        # Several runs: one legend under the figure, over no data.
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=7, frameon=False)
        return C.save_figure(fig, path, title, group, tight=True)
    if handles:
        axes.flat[0].legend(handles, labels, fontsize=6, loc="best")
    return C.save_figure(fig, path, title, group)


def summary_table(group):
    shown = varying_configuration(group)
    headers = ["run", "ranks", "streams total", "steps"] + list(shown) + [
        "series points", "final orth. err", "max cond(S) over series", "final proj. dist.", "clamped steps (final)",
        "verification"]
    rows = []
    for r in group:
        conds = [e.get("s_condition_max") for e in r.series]
        worst = math.inf if any(c is None for c in conds) else max(float(c) for c in conds)
        configuration = dict(r.configuration)
        rows.append([r.label(), r.ranks, r.streams_total, r.steps] + [configuration[f] for f in shown] + [
            len(r.series), C.fmt_sci(r.orthonormality_error), C.fmt_sci(worst), C.fmt_sci(r.projector_distance),
            r.clamped_steps, r.verification])
    return C.md_table(headers, rows)


def analyse(records, out_dir, per_run=False, plots=True):
    """Returns (markdown text, groups, figure paths)."""
    lines, figures, used = ["# Stability (diagnostics time series)", ""], [], set()
    groups = deck_groups(records, per_run)
    for group in groups:
        first = group[0]
        ov = [o for o in first.overrides if not o.strip().startswith("output.")]
        if per_run:
            name = "%s run %d (deck %s)" % (first.file, first.run_index, first.deck_name)
        else:
            name = first.deck_name + ("  --set " + " --set ".join(ov) if ov else "")
        lines += ["## " + name, "", summary_table(group), ""]
        if plots:
            if per_run:
                base = C.slug("stability_%s_run%d" % (os.path.splitext(first.file)[0], first.run_index))
            else:
                base = C.slug("stability_" + os.path.splitext(first.deck_name)[0])
                if ov:  # same deck, other overrides: a short stable tag
                    base += "_" + hashlib.sha1("\n".join(ov).encode()).hexdigest()[:6]
            fname, k = base, 2
            while fname in used:
                fname, k = "%s_%d" % (base, k), k + 1
            used.add(fname)
            problems = list(OrderedDict.fromkeys("d=%d, r=%d, %s" % (r.d, r.r, r.dtype) for r in group))
            path = plot_group(group, os.path.join(out_dir, fname + ".png"),
                              "Stability: %s\n%s" % (name, "; ".join(problems)))
            figures.append(path)
            lines += ["Figure: " + path, ""]
    return "\n".join(lines), groups, figures


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python3 -m analysis.stability",
        description="Plot the diagnostics time series of mosaic_miniapp result files (orthonormality error, "
                    "cond(S), projector distance to truth, cumulative clamped steps vs timed step): one PNG per "
                    "deck with the runs that share it overlaid, and a Markdown summary on stdout.")
    C.add_common_arguments(p)
    p.add_argument("--per-run", action="store_true", help="one figure per run instead of one per deck")
    p.add_argument("--no-plots", action="store_true", help="summary tables only")
    args = p.parse_args(argv)
    if not args.no_plots:
        C.check_output_dir(args.out)
    records = C.load_records(args.inputs, validate=args.validate)
    text, _groups, _figs = analyse(records, args.out, args.per_run, not args.no_plots)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(C.main_wrapper("analysis.stability", main, None))
