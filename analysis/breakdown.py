"""breakdown: where each run's wall time goes. For every run (every runs[]
entry of every file), the seconds of each timed phase (runs[].timers, in
execution order: setup, init, warmup, generate, update, verify, diagnostics,
checkpoint, reduce, output) and their share of the run's wall time (the
`total` timer), the time in no timer (total minus the phases), the accounted
fraction (the phases over the total: runs[].timer_coverage) and end-to-end
against update-only samples/s.

The timers hold the max, min and mean over the ranks of each phase. The
seconds shown are the mean over the ranks (timers.<phase>.mean_s), the
statistic timer_coverage uses, so that the phases and the time in no timer
add up to the total; --stat max shows the slowest rank of each phase (maxima
of different phases can come from different ranks, so they need not add up).
Files written before the mini-app timed setup, verify, checkpoint, output and
the total lack those timers: they are shown as n/a, not as zero, and without
a total a run has no shares (its bar in the figure is then a share of the
sum of its phases, marked *).

Markdown table on stdout (one row per run; the configuration fields of
common.CONFIGURATION_FIELDS that differ between the runs as columns, as in
analysis.collect); figure breakdown_time.png: a horizontal stacked bar per
run, a segment per phase in execution order and one for the time in no timer.

    python3 -m analysis.breakdown results/cpu/*.json --out figures/
"""

import argparse
import math
import os
import sys
from collections import OrderedDict

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from analysis import common as C

# In execution order (src/mosaic/app/timers.hpp, kTimerPhases); "total" is the run's wall time.
PHASES = ("setup", "init", "warmup", "generate", "update", "segments", "verify", "diagnostics", "checkpoint", "reduce",
          "output")
TOTAL = "total"
UNACCOUNTED = "not in a timer"
STATS = OrderedDict([("mean", "mean_s"), ("max", "max_s")])
STAT_TEXT = {"mean": "mean over the ranks", "max": "max over the ranks"}


class Breakdown:
    """One run's phases: seconds (None: no such timer in the file) and shares."""

    def __init__(self, rec, phases, stat="mean"):
        field = STATS[stat]
        self.rec = rec
        self.seconds = OrderedDict((p, float(rec.timers[p][field]) if p in rec.timers else None) for p in phases)
        self.total = float(rec.timers[TOTAL][field]) if TOTAL in rec.timers else None
        self.in_phases = sum(s for s in self.seconds.values() if s is not None)
        if self.total:
            self.accounted = self.in_phases / self.total
            self.unaccounted = self.total - self.in_phases
        else:
            self.accounted = self.unaccounted = None

    def percent(self, phase):
        """% of the total (None without a total or without the timer)."""
        s = self.unaccounted if phase == UNACCOUNTED else self.seconds[phase]
        if s is None or not self.total:
            return None
        return 100.0 * s / self.total

    def bar(self):
        """(segment, % for the figure): of the total, or, without a total, of
        the phases' sum; the time in no timer last (never below 0)."""
        base = self.total or self.in_phases
        out = [(p, 100.0 * s / base if base else 0.0) for p, s in self.seconds.items() if s is not None]
        if self.total:
            out.append((UNACCOUNTED, max(0.0, 100.0 * self.unaccounted / self.total)))
        return out


def phase_columns(records):
    """PHASES, then any other phase a (newer) file times, in its order."""
    extra = OrderedDict()
    for r in records:
        for p in r.timers:
            if p not in PHASES and p != TOTAL:
                extra[p] = True
    return PHASES + tuple(extra)


def fmt_seconds(s):
    return "n/a" if s is None else "%.4g" % s


def fmt_percent(x):
    if x is None:
        return "n/a"
    if 0 < abs(x) < 0.05:
        return "<0.1%"
    return "%.1f%%" % x


def cell(seconds, percent):
    if seconds is None:
        return "n/a"
    return fmt_seconds(seconds) + ("" if percent is None else " (%s)" % fmt_percent(percent))


def short_label(rec, records):
    """File stem and sweep point ("d=8192", the last part of each key; keys
    with one value in all the file's runs among `records` left out; "#k" for
    a run of a file without a sweep point)."""
    stem = os.path.splitext(rec.file)[0]
    same_file = [r for r in records if r.path == rec.path]
    point = [(k, v) for k, v in rec.sweep_point.items()
             if len(same_file) < 2 or len({C.compact(r.sweep_point.get(k)) for r in same_file}) > 1]
    if point:
        return "%s %s" % (stem, ", ".join("%s=%s" % (k.rsplit(".", 1)[-1], C.compact(v)) for k, v in point))
    return "%s #%d" % (stem, rec.run_index) if rec.run_count > 1 else stem


def table(rows, phases, shown):
    headers = ["file", "sweep point", "d", "r", "dtype", "ranks"] + list(shown) + list(phases) + [
        UNACCOUNTED, "total [s]", "accounted", "end-to-end samples/s", "update samples/s (FOM)",
        "end-to-end / update"]
    out = []
    for b in rows:
        r = b.rec
        configuration = dict(r.configuration)
        accounted = "n/a" if b.accounted is None else "%.4f" % b.accounted
        if b.accounted is not None and r.timer_coverage is not None and abs(r.timer_coverage - b.accounted) > 1e-9:
            accounted += " (timer_coverage %.4f)" % r.timer_coverage
        ratio = r.end_to_end / r.fom if r.fom > 0 and not C.isnan(r.end_to_end) else math.nan
        out.append([r.label(), r.sweep_label, r.d, r.r, r.dtype, r.ranks] + [configuration[f] for f in shown]
                   + [cell(b.seconds[p], b.percent(p)) for p in phases]
                   + [cell(b.unaccounted, b.percent(UNACCOUNTED)), fmt_seconds(b.total), accounted,
                      C.fmt_rate(r.end_to_end), C.fmt_rate(r.fom), "n/a" if C.isnan(ratio) else "%.3f" % ratio])
    return C.md_table(headers, out)


# A fixed color per phase (tab20), the same in every figure.
COLORS = ("#1f77b4", "#aec7e8", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22",
          "#17becf", "#98df8a", "#ffbb78", "#c5b0d5", "#c49c94")


def segment_style(seg, phases):
    """How a segment is drawn, in the bars and in the legend alike: the time
    in no timer hatched on white, each phase its fixed color."""
    if seg == UNACCOUNTED:
        return {"facecolor": "white", "edgecolor": "0.45", "hatch": "///", "linewidth": 0.6}
    return {"facecolor": COLORS[phases.index(seg) % len(COLORS)], "edgecolor": "white", "linewidth": 0.5}


def plot(rows, phases, out_dir, stat):
    plt = C.pyplot()
    n = len(rows)
    shown = [p for p in phases if any(b.seconds[p] is not None for b in rows)]
    segments = shown + ([UNACCOUNTED] if any(b.total for b in rows) else [])
    legend_rows = -(-len(segments) // 6)
    fig, ax = plt.subplots(figsize=(10.0, max(3.4, 1.9 + 0.24 * legend_rows + 0.34 * n)))
    labels = [short_label(b.rec, [b.rec for b in rows]) for b in rows]
    labels = [(t + " #%d" % b.rec.run_index if labels.count(t) > 1 else t) + ("" if b.total else " *")
              for t, b in zip(labels, rows)]
    widest = 100.0
    for i, b in enumerate(rows):
        left = 0.0
        for seg, width in b.bar():
            ax.barh(i, width, left=left, height=0.7, **segment_style(seg, phases))
            if width >= 6.0:
                ax.text(left + width / 2, i, "%.0f%%" % width, ha="center", va="center", fontsize=7,
                        color="black")
            left += width
        widest = max(widest, left)
    handles = [plt.Rectangle((0, 0), 1, 1, **segment_style(seg, phases)) for seg in segments]
    ax.legend(handles, segments, ncol=min(6, len(segments)), fontsize=7, loc="lower center",
              bbox_to_anchor=(0.5, 1.0), frameon=False)
    ax.set_yticks(range(n))
    ax.set_yticklabels(labels, fontsize=7 if n > 12 else 8)
    ax.set_ylim(n - 0.5, -0.5)  # the first run on top
    ax.set_xlim(0, widest * 1.001)
    ax.set_xlabel("share of the run's wall time (timers.total) [%]")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    title = "Wall-time breakdown per run (phase seconds: %s)" % STAT_TEXT[stat]
    if any(not b.total for b in rows):
        title += "\n* no total timer (an older file): a share of the sum of its phases, no time outside them"
    path = os.path.join(out_dir, "breakdown_time.png")
    return C.save_figure(fig, path, title, [b.rec for b in rows])


def analyse(records, out_dir, stat="mean", plots=True):
    """Returns (markdown text, [Breakdown], figure paths); AnalysisError when
    no run has timers."""
    timed = [r for r in records if r.timers]
    if not timed:
        raise C.AnalysisError("no run has timers (runs[].timers) in: %s" % ", ".join(
            OrderedDict.fromkeys(r.file for r in records)))
    phases = phase_columns(timed)
    rows = [Breakdown(r, phases, stat) for r in timed]
    keys = [r.configuration for r in timed]
    shown = C.varying_fields(keys, C.CONFIGURATION_FIELDS)
    lines = ["# Wall-time breakdown per run", "",
             "Each phase: seconds, %s (timers.<phase>.%s), and its share of the run's total; %s: the total "
             "minus the phases; accounted: the phases over the total (timer_coverage)." % (
                 STAT_TEXT[stat], STATS[stat], UNACCOUNTED), "",
             table(rows, phases, shown), ""]
    absent = sorted({p for b in rows for p, s in list(b.seconds.items()) + [(TOTAL, b.total)] if s is None},
                    key=lambda p: (phases + (TOTAL,)).index(p))
    if absent:
        lines.append("n/a: no such timer in the file (written before the mini-app timed %s), not zero." %
                     ", ".join(absent))
    if stat == "max":
        lines.append("Max over the ranks: the phases' maxima can come from different ranks, so they need not add "
                     "up to the total.")
    shared = C.shared_text(keys, C.CONFIGURATION_FIELDS)
    if shared:
        lines.append("Every run: %s." % shared)
    for r in records:
        if not r.timers:
            lines.append("left out: %s: no timers" % r.label())
    figures = []
    if plots:
        figures.append(plot(rows, phases, out_dir, stat))
        lines += ["", "Figure: " + figures[0]]
    return "\n".join(lines) + "\n", rows, figures


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python3 -m analysis.breakdown",
        description="The wall-time breakdown of every run of mosaic_miniapp result files: the seconds of each "
                    "timed phase (setup, init, warmup, generate, update, verify, diagnostics, checkpoint, reduce, "
                    "output) and their share of the total, the time in no timer, the accounted fraction and "
                    "end-to-end vs update samples/s. Markdown on stdout, breakdown_time.png in --out.")
    C.add_common_arguments(p)
    p.add_argument("--stat", choices=list(STATS), default="mean",
                   help="which statistic over the ranks (default %(default)s: the one timer_coverage uses)")
    p.add_argument("--no-plots", action="store_true", help="table only")
    args = p.parse_args(argv)
    if not args.no_plots:
        C.check_output_dir(args.out)
    records = C.load_records(args.inputs, validate=args.validate)
    text, _rows, _figs = analyse(records, args.out, args.stat, not args.no_plots)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(C.main_wrapper("analysis.breakdown", main, None))
