"""saturation: the saturation point of streams per device (the call's
experiment 2), from result files of a deck that sweeps streams.per_rank
(1, 2, 4, ..., 256) at fixed d and r, e.g. inputs/saturation.yaml (several d
in one file or in several files are several curves).

A curve is every set of runs that differ only in the streams per rank (same
d, r, dtype, stream mode, rank count, timed steps, algorithm variant, the
configuration fields of common.CONFIGURATION_FIELDS, the deck fields [deck
file, resolved_deck.algorithm settings] and device model; common.curves)
with at least two stream counts; repeats at one stream count: the median
FOM. This is the one analysis of such sweeps: analysis.sweep leaves their
runs to it, and analysis.report's saturation section is this. Per
curve, a Markdown table (stdout):

    streams/rank, total streams, runs,
    FOM              runs[].figure_of_merit.value: update samples/s, all ranks
    FOM per stream   FOM / total streams
    FOM / best FOM   FOM / the largest FOM of the curve
    state per stream runs[].memory.state_bytes_per_stream: the bytes of one
                     stream's state (mu, U, S, ...), from the sizes
    peak RSS, largest rank   max over the ranks of runs[].memory.
                     peak_rss_bytes_per_rank (VmHWM: the process's peak
                     resident memory since it started)
    peak RSS per stream      that over the streams per rank (it holds the
                     process's fixed memory too, shared by its streams)
    peak allocated per stream   the largest of runs[].memory.
                     peak_allocated_bytes_per_rank (each rank's high-water
                     mark of the bytes allocated through Kokkos in the
                     memory space runs[].memory.peak_allocated_space names,
                     the point's own: no CUDA context, no other process)
                     over the streams per rank; the column is there when a
                     run recorded it (schema_version 2 files, host backends
                     too; version 1 files' device_bytes_in_use_max, read at
                     the end of the run, was not a peak and is not used)

and the SATURATION POINT: the smallest streams per rank whose FOM reaches
90% of the largest FOM measured on the curve (common.SATURATION_FRACTION).
VmHWM never decreases within a process, so in a sweep a point's peak RSS is
its own only when it exceeds that of every point run before it (runs[]
order) in its file; otherwise it is an upper bound, written "<= ...".

Figure per curve (unless --no-plots): the FOM (top, linear) and the FOM per
stream (bottom, log) against streams per rank on a log2 axis, the saturation
point a vertical line with its annotation, 90% of the best FOM a dotted
line, and the seed project's figure at 8 streams where the curve's 8-stream
point is in its configuration (seed.seed_figure_for).

    python3 -m analysis.saturation results/saturation.json --out figures/ [--no-plots]
"""

import os
import sys
from collections import OrderedDict

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from analysis import common as C
from analysis import seed as S

FRACTION = C.SATURATION_FRACTION
X_LABEL = "streams per rank (per device) [count]"
DEFINITION = ("Saturation point: the smallest streams per rank whose FOM (update samples/s, all ranks; "
              "median of repeats) reaches %d%% of the largest FOM measured on the curve." % round(100 * FRACTION))
MEMORY_NOTE = (
    "Memory (MiB = 2^20 bytes; medians of repeats): *state per stream* is runs[].memory.state_bytes_per_stream, "
    "one stream's state arrays; *peak RSS, largest rank* the largest of runs[].memory.peak_rss_bytes_per_rank "
    "(each rank's VmHWM: peak resident memory since the process started) and *peak RSS per stream* that over "
    "the streams per rank (it includes the process's fixed memory, shared by its streams); a value marked <= is "
    "an upper bound (an earlier point of the same file had reached it, and VmHWM never decreases).")
PEAK_NOTE = ("*peak allocated per stream* is the largest of runs[].memory.peak_allocated_bytes_per_rank (each "
             "rank's high-water mark of the bytes allocated through Kokkos, Views and kokkos_malloc, in the memory "
             "space runs[].memory.peak_allocated_space names (here: %s), during the point: its own peak, without "
             "the CUDA context or other processes) over the streams per rank; n/a for a run that did not record it "
             "(schema_version 1 files).")


def peak_note(sats):
    """PEAK_NOTE with the memory spaces of the curves' runs."""
    spaces = sorted({r.peak_allocated_space for s in sats for r in s.records if r.peak_allocated_space is not None})
    return PEAK_NOTE % (", ".join(spaces) or "not recorded")


def saturation_curves(records):
    """The curves of FOM against streams per rank (common.curves)."""
    return C.curves(records, "streams_per_rank", ("total streams",))


def _rss_max(rec):
    return max(rec.peak_rss_bytes_per_rank) if rec.peak_rss_bytes_per_rank else None


def rss_upper_bounds(records):
    """The (path, run index) of every run whose largest peak RSS is no new
    high in its file: not above that of a run before it in runs[] order
    (VmHWM is the process's high-water mark, so the run's own peak may be
    lower)."""
    by_file = OrderedDict()
    for r in records:
        by_file.setdefault(r.path, []).append(r)
    bounds = set()
    for path, recs in by_file.items():
        high = None
        for r in sorted(recs, key=lambda r: r.run_index):
            v = _rss_max(r)
            if v is None:
                continue
            if high is not None and v <= high:
                bounds.add((path, r.run_index))
            high = v if high is None else max(high, v)
    return bounds


class Point:
    """One stream count of a curve: the median FOM and memory of its repeats."""

    def __init__(self, x, fom, records, top, bounds):
        self.x = x
        self.records = records
        self.fom = fom
        self.streams_total = records[0].streams_total
        self.fom_per_stream = fom / self.streams_total if self.streams_total else float("nan")
        self.fraction = fom / top if top > 0 else float("nan")
        self.state = C.median([r.state_bytes_per_stream for r in records])
        self.rss_rank = C.median([_rss_max(r) for r in records])
        self.rss_stream = C.median([_rss_max(r) / r.streams_per_rank for r in records
                                    if _rss_max(r) is not None and r.streams_per_rank > 0])
        self.rss_upper_bound = any((r.path, r.run_index) in bounds for r in records)
        self.peak_allocated_stream = C.median([r.peak_allocated_bytes_max / r.streams_per_rank for r in records
                                               if r.peak_allocated_bytes_max is not None and r.streams_per_rank > 0])


class Saturation:
    """A curve, its points and its saturation point."""

    def __init__(self, curve, bounds):
        self.curve = curve
        self.key = curve.key
        self.top = C.curve_top(curve)
        self.points = [Point(x, f, rs, self.top, bounds) for x, f, rs in curve.points]
        self.x = C.saturation_point(curve)
        self.best_x = next((p.x for p in self.points if p.fom == self.top), None)
        self.has_peak_allocated = any(p.peak_allocated_stream is not None for p in self.points)
        # The seed's 8 streams on one GB10, where the curve's 8-stream point is in its configuration.
        self.seed_point = next((p for p in self.points if p.streams_total == S.STREAMS), None)
        self.seed = S.seed_figure_for(self.seed_point.records[0]) if self.seed_point is not None else None

    @property
    def records(self):
        return self.curve.records

    @property
    def point(self):
        """The saturation point's Point (None when no point has a FOM)."""
        return next((p for p in self.points if p.x == self.x), None)


def table(sat):
    block = ["block size"] if sat.curve.block_size_auto else []
    headers = (["streams/rank"] + block +
               ["total streams", "runs", "FOM (update samples/s)", "FOM per stream (update samples/s)",
                "FOM / best FOM", "state per stream [MiB]", "peak RSS, largest rank [MiB]",
                "peak RSS per stream [MiB]"] +
               (["peak allocated per stream [MiB]"] if sat.has_peak_allocated else []) + ["verification"])
    rows = []
    for p in sat.points:
        bound = "<= " if p.rss_upper_bound else ""
        rows.append([C.fmt_count(p.x)] + ([p.records[0].block_size] if block else []) + [
            p.streams_total, len(p.records), C.fmt_rate(p.fom), C.fmt_rate(p.fom_per_stream),
            "n/a" if C.isnan(p.fraction) else "%.3f" % p.fraction, C.fmt_mib(p.state),
            bound + C.fmt_mib(p.rss_rank) if p.rss_rank is not None else "n/a",
            bound + C.fmt_mib(p.rss_stream) if p.rss_stream is not None else "n/a"] +
            ([C.fmt_mib(p.peak_allocated_stream)] if sat.has_peak_allocated else []) +
            [C.verification_summary(p.records)])
    return C.md_table(headers, rows)


def summary(sat):
    """The sentences under a curve's table: the saturation point, whether
    the best FOM is at the largest stream count, the seed's figure."""
    lines = []
    p = sat.point
    if p is None:
        return ["No FOM on this curve: no saturation point."]
    lines.append("Saturation point: %s streams per rank (%d in all): FOM %s = %.3f of the best, %s at %s streams "
                 "per rank." % (C.fmt_count(p.x), p.streams_total, C.fmt_rate(p.fom), p.fraction,
                                C.fmt_rate(sat.top), C.fmt_count(sat.best_x)))
    largest = sat.points[-1].x
    if p.x == largest:
        lines.append("The saturation point is the largest stream count measured (%s per rank): the FOM may "
                     "still rise with more streams." % C.fmt_count(largest))
    if sat.seed is not None:
        text = "%s: %s samples/s with %d streams on one GB10" % (S.LABEL, C.fmt_rate(sat.seed), S.STREAMS)
        text += "; this code with %d streams: %s (this code / seed %.3f)" % (
            S.STREAMS, C.fmt_rate(sat.seed_point.fom), sat.seed_point.fom / sat.seed)
        lines.append(text + ". " + S.source_note())
    return lines


def file_stem(sat, shown):
    k = dict(sat.key)
    rest = "_".join(C.slug(k.get(f, "n/a")) for f in shown)
    return C.slug("saturation_d%s_r%s_%s%s_%s" % (k["d"], k["r"], k["dtype"], "_" + rest if rest else "",
                                                  k["device"]))


def plot(sat, path, subtitle):
    plt = C.pyplot()
    ticker = C.matplotlib_module("matplotlib.ticker")
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(7.2, 7.4), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    xs = [p.x for p in sat.points]
    ax.plot(xs, [p.fom for p in sat.points], "o-", label="this code, %s: FOM (median of repeats)"
            % sat.records[0].machine_text)
    ax2.plot(xs, [p.fom_per_stream for p in sat.points], "s-", color="tab:green",
             label="this code: FOM per stream")
    if not C.isnan(sat.top):
        ax.axhline(FRACTION * sat.top, color="tab:gray", ls=":", lw=1.0,
                   label="%d%% of the best FOM" % round(100 * FRACTION))
    seed_x = None
    if sat.seed is not None:
        seed_x = S.STREAMS
        ax.plot([seed_x], [sat.seed], "*", color="k", ms=13, label=S.PLOT_LABEL + ", 8 streams")
        ax2.plot([seed_x], [sat.seed / S.STREAMS], "*", color="k", ms=13)
    p = sat.point
    if p is not None:
        for a in (ax, ax2):
            a.axvline(p.x, color="tab:red", ls="--", lw=1.2,
                      label="saturation point" if a is ax else None)
        last = p.x == xs[-1]
        ax.annotate("saturation: %s streams/rank\n(FOM >= %d%% of the best)" % (C.fmt_count(p.x),
                                                                                 round(100 * FRACTION)),
                    xy=(p.x, 0.35 * sat.top), xytext=(-6 if last else 6, 0), textcoords="offset points",
                    ha="right" if last else "left", va="center", fontsize=8, color="tab:red",
                    bbox={"boxstyle": "round", "fc": "white", "ec": "tab:red", "alpha": 0.9})
    ax.set_xscale("log", base=2)
    tops = [v for v in [sat.top, sat.seed] if v is not None and not C.isnan(v)]
    if tops:
        ax.set_ylim(bottom=0, top=1.12 * max(tops))
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _pos: C.fmt_rate(v)))
    ax.set_ylabel("FOM, all ranks\n[samples/s (update only)]")
    ax.grid(True, which="both", alpha=0.3)
    ax2.set_yscale("log")
    ax2.set_ylabel("FOM per stream\n[samples/s (update only)]")
    ax2.set_xlabel(X_LABEL)
    ax2.grid(True, which="both", alpha=0.3)
    C.plain_log_labels(ax2)
    C.label_x_ticks(ax2, sorted(set(xs) | ({seed_x} if seed_x else set())))
    handles, labels = [], []
    for a in (ax, ax2):
        h, t = a.get_legend_handles_labels()
        handles += h
        labels += t
    ax2.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.25), fontsize=7, ncol=2,
               frameon=False)
    k = dict(sat.key)
    title = "Streams-per-device saturation: d=%s, r=%s, %s\n%s" % (k["d"], k["r"], k["dtype"], subtitle)
    return C.save_figure(fig, path, title, sat.records, decks=True, tight=True)


def figure_lines(path, _sat):
    """The default text for a curve's figure: 'Figure: <path>'."""
    return ["Figure: " + path, ""]


def analyse(records, out_dir, plots=True, level=1, figure_text=figure_lines):
    """Returns (markdown text, [Saturation], figure paths); AnalysisError when
    no runs differ only in the streams per rank. level: the Markdown level
    of the section heading (the curves': one more); figure_text(path, sat):
    the lines that show a curve's figure."""
    cs = saturation_curves(records)
    if not cs:
        raise no_curve_error(records)
    bounds = rss_upper_bounds(records)
    sats = [Saturation(c, bounds) for c in cs]
    keys = [s.key for s in sats]
    skip = C.label_skip(keys)
    shown = tuple(f for f in C.varying_fields(keys, C.key_fields(keys)) if f not in ("d", "r", "dtype", "device"))
    # A figure's subtitle: the key less what its title and caption say and the deck fields all curves share.
    subtitle_skip = ("d", "r", "dtype", "device") + tuple(f for f in skip if C.is_deck_field(f))
    lines = ["%s Saturation: FOM vs streams per rank" % ("#" * level), ""]
    shared = C.shared_text(keys, C.SHOWN_WHEN_VARYING)
    if shared:
        lines += ["Every curve: %s." % shared, ""]
    figures, used = [], set()
    for sat in sats:
        lines += ["%s %s" % ("#" * (level + 1), C.key_text(sat.key, skip=skip)), "",
                  "FOM, FOM per stream and memory per stream against the streams per rank. " + DEFINITION, "",
                  table(sat), ""]
        note = C.without_fom_note(sat.records)
        if note:
            lines += [note, ""]
        for text in summary(sat):
            lines += [text, ""]
        if plots:
            name = C.unique_name(file_stem(sat, shown), used)
            path = plot(sat, os.path.join(out_dir, name + ".png"), C.key_text(sat.key, skip=subtitle_skip))
            figures.append(path)
            lines += figure_text(path, sat)
    lines += [MEMORY_NOTE + (" " + peak_note(sats) if any(s.has_peak_allocated for s in sats) else ""), ""]
    on_curves = {id(r) for s in sats for r in s.records}
    left = [r for r in records if id(r) not in on_curves]
    if left:
        lines += ["Left out: %d run(s) on no streams-per-rank curve (no other stream count with everything else "
                  "equal): %s." % (len(left), ", ".join(r.label() for r in left)), ""]
    return "\n".join(lines), sats, figures


def no_curve_error(records):
    return C.AnalysisError(
        "no runs that differ only in the streams per rank among the %d run(s) read (a curve needs at least two "
        "values of streams.per_rank with d, r, dtype, stream mode, ranks, steps, algorithm, configuration, deck "
        "and device equal)" % len(records))


def main(argv=None):
    return C.tables_and_figures_main(
        argv, "python3 -m analysis.saturation",
        "The saturation point of streams per device from mosaic_miniapp result files of a streams.per_rank sweep: "
        "per curve (d, r, dtype, machine, ...) a Markdown table of FOM, FOM per stream, FOM / best FOM and memory "
        "per stream on stdout, and a PNG figure in --out.", analyse, epilog=DEFINITION)


if __name__ == "__main__":
    sys.exit(C.main_wrapper("analysis.saturation", main, None))
