"""scaling: strong- and weak-scaling tables (Markdown, stdout) and PNG plots
(throughput vs ranks with the ideal line; parallel efficiency vs ranks), and,
for strong scaling, the check that every stream's verification checksum is the
same for every rank count.

Runs are grouped by (mode, d, r, dtype, streams per rank [weak] or total
streams [strong], timed steps, algorithm variant, the configuration fields
of common.CONFIGURATION_FIELDS [update kernel, block size, block GEMM,
re-orthonormalization, precision solve, backend, concurrency], the deck
fields [the deck file, the resolved_deck.algorithm settings such as eta_U],
device model); inside a group they differ only in the MPI rank count.
Headings, file names and the single-rank-count table name the configuration
and deck fields that differ between the series of a mode; the configuration
fields they share are said once per mode. Repeats at
one rank count: the median FOM is used. With N0 the smallest rank count
present (the base; said so when it is not 1):

    ideal(N)      = FOM(N0) * N / N0
    efficiency(N) = FOM(N) / ideal(N) = (FOM(N)/N) / (FOM(N0)/N0)

strong: speedup FOM(N)/FOM(N0) over N/N0 (= FOM(N) / (N * FOM(1)) for N0 = 1);
weak:   per-rank throughput over the base's (= (FOM(N)/N) / FOM(1) for N0 = 1).

Exit status: 0; 1 if some strong-scaling group's checksums disagree; 2 on
unusable input.

    python3 -m analysis.scaling results/strong_*.json results/weak_*.json --out figures/
"""

import argparse
import math
import os
import sys

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from analysis import common as C


def _verification(point):
    return C.verification_summary(point.records)


def group_table(g):
    if g.mode == "strong":
        headers = ["ranks", "runs", "streams/rank", "FOM (update samples/s)", "speedup vs base",
                   "ideal FOM", "efficiency", "end-to-end samples/s", "verification"]
        rows = [[p.ranks, len(p.records),
                 str(p.spr_min) if p.spr_min == p.spr_max else "%d-%d" % (p.spr_min, p.spr_max),
                 C.fmt_rate(p.fom), "%.3f" % p.speedup, C.fmt_rate(p.ideal), C.fmt_eff(p.efficiency),
                 C.fmt_rate(p.end_to_end), _verification(p)] for p in g.points]
    else:
        headers = ["ranks", "runs", "total streams", "FOM (update samples/s)", "FOM per rank",
                   "ideal FOM", "efficiency", "end-to-end samples/s", "verification"]
        rows = [[p.ranks, len(p.records), p.streams_total, C.fmt_rate(p.fom), C.fmt_rate(p.fom / p.ranks),
                 C.fmt_rate(p.ideal), C.fmt_eff(p.efficiency), C.fmt_rate(p.end_to_end), _verification(p)]
                for p in g.points]
    return C.md_table(headers, rows)


def base_note(g):
    if g.base_ranks == 1:
        return "Base: 1 rank."
    return ("Base: %d ranks (the smallest rank count present; no 1-rank run): speedup, ideal and "
            "efficiency are relative to %d ranks." % (g.base_ranks, g.base_ranks))


def describe(g, shown=()):
    """The series in words; `shown`: the configuration and deck fields to
    name (those that tell it from the other series)."""
    k = dict(g.key)
    streams = ("%s streams/rank" % k["streams/rank"]) if g.mode == "weak" else ("%s streams in all" % k["total streams"])
    text = "d=%s, r=%s, %s, %s, %s steps, %s" % (k["d"], k["r"], k["dtype"], streams, k["steps"], k["algorithm"])
    configuration = C.key_text([kv for kv in g.key if kv[0] in shown])
    return text + ", " + configuration if configuration else text


# Short forms of the configuration fields in file names (a deck field: its
# name without "algorithm.", then its value; the deck: its file name).
FILE_TAGS = {"kernel": "%s", "block size": "k%s", "block GEMM": "gemm-%s", "reorthonormalize": "reorth-%s",
             "precision solve": "solve-%s", "backend": "%s", "concurrency": "conc%s", C.DECK_FIELD: "%s"}


def file_tag(field, value):
    if field in FILE_TAGS:
        return FILE_TAGS[field] % value
    return field[len(C.ALGORITHM_PREFIX):] + value if field.startswith(C.ALGORITHM_PREFIX) else value


def file_stem(g, shown=()):
    k = dict(g.key)
    streams = ("%sperrank" % k["streams/rank"]) if g.mode == "weak" else ("%stotal" % k["total streams"])
    # The shown configuration and deck fields keep the names of series that differ only there apart.
    configuration = "".join("_" + file_tag(f, k.get(f, "n/a")) for f in shown)
    return C.slug("scaling_%s_d%s_r%s_%s_%s_%ssteps_%s%s_%s" % (
        g.mode, k["d"], k["r"], k["dtype"], streams, k["steps"], k["algorithm"].replace("/", "-"), configuration,
        k["device"]))


def figure_name(g, shown, used):
    """file_stem(g, shown), numbered when `used` (the names taken so far; the
    new one is added) already holds it (C.unique_name)."""
    return C.unique_name(file_stem(g, shown), used)


def mode_series(groups, which):
    """(series, shown, shared) of one mode ("strong" or "weak"): its groups
    among `groups` (C.scaling_groups), the configuration and deck fields that
    differ between them (headings and file names name them) and the text of
    the configuration fields they share ('' for none)."""
    gs = [g for g in groups if g.mode == which]
    if not gs:
        return gs, (), ""
    keys = [g.key for g in gs]
    shown = C.varying_fields(keys, C.CONFIGURATION_FIELDS + C.deck_fields(keys))
    return gs, shown, C.shared_text(keys, C.CONFIGURATION_FIELDS)


# The efficiency of each mode in words (scaling's and the report's sections).
EFFICIENCY = {
    "strong": "Efficiency = speedup / rank ratio = (FOM(N)/FOM(N0)) / (N/N0); with N0 = 1: FOM(N) / (N * FOM(1)). "
              "Ideal FOM = FOM(N0) * N / N0.",
    "weak": "Efficiency = per-rank throughput ratio = (FOM(N)/N) / (FOM(N0)/N0); with N0 = 1: (FOM(N)/N) / FOM(1). "
            "Ideal FOM = FOM(N0) * N / N0.",
}


def plot_group(g, out_dir, name, shown=()):
    plt = C.pyplot()
    NullFormatter = C.matplotlib_module("matplotlib.ticker").NullFormatter
    ranks = [p.ranks for p in g.points]
    what = "Strong" if g.mode == "strong" else "Weak"
    subtitle = describe(g, shown)
    paths = []

    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    ax.plot(ranks, [p.fom for p in g.points], "o-", label="measured (median of repeats)")
    ax.plot(ranks, [p.ideal for p in g.points], "k--", label="ideal (linear from %d rank%s)" % (
        g.base_ranks, "" if g.base_ranks == 1 else "s"))
    for p in g.points:
        for r in p.records:
            if len(p.records) > 1:
                ax.plot([p.ranks], [r.fom], "x", color="tab:gray", ms=5)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(ranks)
    ax.set_xticklabels([str(n) for n in ranks])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("MPI ranks (one device each) [count]")
    ax.set_ylabel("update throughput, all ranks [samples/s]")
    C.plain_log_labels(ax)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    paths.append(C.save_figure(fig, os.path.join(out_dir, name + "_throughput.png"),
                               "%s scaling: throughput vs ranks\n%s" % (what, subtitle), g.records))

    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    effs = [p.efficiency for p in g.points]
    ax.plot(ranks, effs, "o-", label="measured")
    ax.axhline(1.0, color="k", ls="--", label="ideal")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ranks)
    ax.set_xticklabels([str(n) for n in ranks])
    ax.xaxis.set_minor_formatter(NullFormatter())
    top = max([1.1] + [1.1 * e for e in effs if math.isfinite(e)])
    ax.set_ylim(0, top)
    ax.set_xlabel("MPI ranks (one device each) [count]")
    ax.set_ylabel("parallel efficiency vs %d rank%s [fraction of ideal]" % (
        g.base_ranks, "" if g.base_ranks == 1 else "s"))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    paths.append(C.save_figure(fig, os.path.join(out_dir, name + "_efficiency.png"),
                               "%s scaling: parallel efficiency vs ranks\n%s" % (what, subtitle), g.records))
    return paths


def figure_lines(paths, _g, _which, _shown):
    """The default text for a series' figures: 'Figures: <paths>'."""
    return ["Figures: " + ", ".join(paths), ""]


def analyse(records, out_dir, mode="both", rtol=0.0, plots=True, level=1, figure_text=figure_lines,
            series_only=False):
    """Returns (markdown text, groups, checksum reports, figure paths).
    level: the Markdown level of the mode headings (the series': one more);
    figure_text(paths, group, mode, shown): the lines that show a series'
    figures; series_only: only the modes with a series at two or more rank
    counts, and no table of single-rank-count series (analysis.report)."""
    groups = [g for g in C.scaling_groups(records) if mode in ("both", g.mode)]
    lines, reports, figures, used = [], [], [], set()
    h1, h2 = "#" * level, "#" * (level + 1)
    for which in ("strong", "weak"):
        gs, shown, shared = mode_series(groups, which)
        if mode not in ("both", which):
            continue
        if series_only and not any(g.has_baseline for g in gs):
            continue
        lines += ["%s %s scaling" % (h1, which.capitalize()), "", EFFICIENCY[which], ""]
        if not gs:
            lines += ["No %s-mode runs." % which, ""]
            continue
        if shared:
            lines += ["Configuration of every %s-mode series: %s." % (which, shared), ""]
        for g in [g for g in gs if g.has_baseline]:
            lines.append("%s %s on %s" % (h2, describe(g, shown), dict(g.key)["device"]))
            lines.append("")
            lines.append(base_note(g))
            lines.append("")
            lines.append(group_table(g))
            lines.append("")
            note = C.without_fom_note(g.records)
            if note:
                lines += [note, ""]
            if which == "strong":
                rep = C.check_checksums(g, rtol=rtol)
                reports.append(rep)
                lines.append("Per-stream checksums across rank counts: " + rep.message)
                lines.append("")
            if plots:
                paths = plot_group(g, out_dir, figure_name(g, shown, used), shown)
                figures += paths
                lines += figure_text(paths, g, which, shown)
        single = [g for g in gs if not g.has_baseline]
        if single and not series_only:
            lines.append("Runs with a single rank count (no baseline, no scaling plot):")
            lines.append("")
            lines.append(C.md_table(
                ["d", "r", "dtype", "streams/rank" if which == "weak" else "total streams", "steps", "algorithm"]
                + list(shown) + ["device", "ranks", "runs", "FOM (update samples/s)", "verification"],
                [[k["d"], k["r"], k["dtype"], k["streams/rank" if which == "weak" else "total streams"], k["steps"],
                  k["algorithm"]] + [k.get(f, "n/a") for f in shown]
                 + [k["device"], g.points[0].ranks, len(g.records), C.fmt_rate(g.points[0].fom),
                    _verification(g.points[0])] for g in single for k in [dict(g.key)]]))
            lines.append("")
            note = C.without_fom_note([r for g in single for r in g.records])
            if note:
                lines += [note, ""]
    return "\n".join(lines), groups, reports, figures


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python3 -m analysis.scaling",
        description="Strong- and weak-scaling tables (Markdown on stdout) and PNG plots (throughput vs ranks "
                    "with the ideal line, parallel efficiency vs ranks) from mosaic_miniapp result files, and "
                    "the strong-scaling check that per-stream checksums agree across rank counts. "
                    "Exit status 1 if they do not.",
        epilog="Efficiency: (FOM(N)/N) / (FOM(N0)/N0), N0 = smallest rank count present in the group.")
    C.add_common_arguments(p)
    p.add_argument("--mode", choices=["both", "strong", "weak"], default="both",
                   help="which scaling mode to report (default: %(default)s)")
    p.add_argument("--checksum-rtol", type=float, default=0.0, metavar="RTOL",
                   help="relative tolerance for the checksum comparison (default 0: bit-identical)")
    p.add_argument("--no-plots", action="store_true", help="tables only")
    args = p.parse_args(argv)
    if not args.no_plots:
        C.check_output_dir(args.out)
    records = C.load_records(args.inputs, validate=args.validate)
    text, _groups, reports, _figs = analyse(records, args.out, args.mode, args.checksum_rtol, not args.no_plots)
    print(text)
    bad = [r for r in reports if not r.ok]
    if bad:
        print("CHECKSUM MISMATCH in %d strong-scaling group(s)." % len(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(C.main_wrapper("analysis.scaling", main, None))
