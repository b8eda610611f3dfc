"""sweep: throughput versus the problem size d and versus the retained rank r
(log axes), from any mix of result files; Markdown tables on stdout, PNGs in
--out. A curve is drawn for every set of runs that differ only in that one
parameter (same device model, dtype, stream mode, algorithm variant, the
configuration fields of common.CONFIGURATION_FIELDS [update kernel, block
size, block GEMM, re-orthonormalization, precision solve, backend,
concurrency], the deck fields [the deck file and the settings of
resolved_deck.algorithm, such as eta_U: two decks, or one deck at two rates,
are two curves], timed steps, rank count and total streams) and that has at
least two values of it. Repeats at one value: the median FOM.

Runs of a sweep over streams.per_rank (a saturation deck such as
inputs/saturation.yaml) are left to analysis.saturation, which finds their
saturation point and memory per stream; the output says how many.

Seed figures (analysis/seed.py): where a curve over d or r holds runs in the
seed project's configuration (one rank, 8 streams, float) at a d and r the
seed published, its table gains the seed's figure beside this code's FOM and
their ratio, and the figure draws the seed's points at the curve's r (over
d) or d (over r) as reference points, seed.PLOT_LABEL: its d ladder at
r = 64 and its rank ladder at d = 8192.
Headings and legends name the stream mode and the configuration and deck
fields only where they differ between a section's curves; the configuration
fields they share are said once per section.

Blocked vs sequential: where a d or r section holds a blocked and a
sequential curve whose keys agree on everything but the kernel (update
kernel, block size, block GEMM, re-orthonormalization), a table of the blocked / sequential FOM
ratio at each d or r they share and sweep_blocked_vs_sequential_vs_<d|r>.png
(both FOM curves, and the ratio below). Nothing when there is no such pair.

    python3 -m analysis.sweep results/single_gpu.json results/rank_sweep.json --out figures/
"""

import os
import sys
import textwrap
from collections import OrderedDict

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from analysis import common as C
from analysis import seed as S

Y_LABEL = "throughput, all ranks [samples/s (update only)]"

# The curves live in common.py (analysis.saturation uses them too).
curves = C.curves


def seed_column(curve):
    """[(x, seed figure or None)] for the curve's points when some point has a
    seed figure (analysis.seed: one rank, 8 streams, float, the seed's d and
    r); [] otherwise (no seed column)."""
    figures = [(x, S.seed_figure_for(rs[0])) for x, _f, rs in curve.points]
    return figures if any(v is not None for _x, v in figures) else []


def this_code_text(records):
    """'this code, <machine>' for headings: the CPU model and its cores, or the GPU model."""
    return "this code, " + "; ".join(OrderedDict.fromkeys(r.machine_text for r in records))


def table(curve, xname):
    # Under block_size: auto each point's resolved k is a column after x.
    block_header = ["block size"] if curve.block_size_auto else []

    def block_cell(rs):
        return [rs[0].block_size] if curve.block_size_auto else []
    seeds = dict(seed_column(curve))
    if seeds:
        # This code's FOM, the seed's at the same point and their ratio.
        fom_headers = ["FOM (update samples/s), %s" % this_code_text(curve.records),
                       "%s (samples/s)" % S.LABEL, "this code / seed"]

        def fom_cells(x, f):
            v = seeds[x]
            return [C.fmt_rate(f), "n/a" if v is None else C.fmt_rate(v),
                    "n/a" if v is None or C.isnan(f) else "%.3f" % (f / v)]
    else:
        fom_headers = ["FOM (update samples/s)"]

        def fom_cells(_x, f):
            return [C.fmt_rate(f)]
    headers = [xname] + block_header + ["runs"] + fom_headers + [
        "per-stream samples/s", "end-to-end samples/s", "verification"]
    rows = [[x] + block_cell(rs) + [len(rs)] + fom_cells(x, f) + [
                C.fmt_rate(f / rs[0].streams_total),
                C.fmt_rate(C.median_or_nan([r.end_to_end for r in rs])), C.verification_summary(rs)]
            for x, f, rs in curve.points]
    return C.md_table(headers, rows)


def legend_below(ax, n_entries, fontsize=7):
    """The axis' legend under it, outside the data (the figure is saved with
    bbox_inches "tight", so it stays on the canvas)."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    return ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.16), fontsize=fontsize,
                     ncol=1 if n_entries > 2 or max(len(t) for t in labels) > 45 else n_entries, frameon=False)


def wrap_label(text, width=90):
    return "\n".join(textwrap.wrap(text, width)) or text


def seed_points(curve_list, xattr):
    """The seed's figures to draw as reference points beside curves over d
    or r: for each curve in the seed's configuration (one rank, 8 streams,
    float; analysis.seed), the seed's points at the curve's r (over d; the
    seed's d ladder is at r = 64) or d (over r; its rank ladder is at
    d = 8192). [(fixed value, [(x, samples/s)])], [] when none."""
    if xattr not in ("d", "r"):
        return []
    fixed_name = "r" if xattr == "d" else "d"
    found = OrderedDict()
    for c in curve_list:
        rec = c.records[0]
        fixed = getattr(rec, fixed_name)
        points = S.ladder(xattr, fixed) if S.matches_seed_configuration(rec) else []
        if points:
            found[fixed] = points
    return list(found.items())


def curve_labels(curve_list):
    """Legend labels: 'this code, <machine>' for one curve, else what tells
    each curve from the others; and the key fields they all share (for the
    title), less the device (the caption names it)."""
    keys = [c.key for c in curve_list]
    constant = C.constant_fields(keys, C.key_fields(keys))
    # The deck and its settings are left to the caption (its deck files).
    shared = C.key_text([kv for kv in keys[0] if kv[0] in constant and kv[0] != "device"
                         and not C.is_deck_field(kv[0])])
    if len(curve_list) == 1:
        return [this_code_text(curve_list[0].records)], shared
    return ["this code: " + C.key_text(c.key, skip=constant) for c in curve_list], shared


def plot(curve_list, path, title, xlabel, xattr=None):
    plt = C.pyplot()
    labels, shared = curve_labels(curve_list)
    # The legend goes under the axis: the figure grows with it.
    legend_lines = sum(len(wrap_label(t).split("\n")) for t in labels) + 1
    fig, ax = plt.subplots(figsize=(7.2, 4.4 + 0.16 * legend_lines))
    for c, label in zip(curve_list, labels):
        xs = [x for x, _f, _r in c.points]
        ax.plot(xs, [f for _x, f, _r in c.points], "o-", label=wrap_label(label))
    seeds = seed_points(curve_list, xattr)
    fixed_name = "r" if xattr == "d" else "d"
    for i, (fixed, points) in enumerate(seeds):
        # Several ladders (curves at another r or d) are told apart by the value.
        ax.plot([x for x, _v in points], [v for _x, v in points], "*:", color="k", ms=12, lw=0.8,
                markerfacecolor="k" if i == 0 else "none",
                label=S.PLOT_LABEL + (", %s=%s" % (fixed_name, fixed) if len(seeds) > 1 else ""))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    C.label_x_ticks(ax, sorted({x for c in curve_list for x, _f, _r in c.points}
                               | {x for _fixed, points in seeds for x, _v in points}))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(Y_LABEL)
    C.plain_log_labels(ax)
    ax.grid(True, which="both", alpha=0.3)
    legend_below(ax, len(ax.get_legend_handles_labels()[0]))
    return C.save_figure(fig, path, title + ("\n" + shared if shared else ""),
                         [r for c in curve_list for r in c.records], decks=True, tight=True)


# What the update kernel is: a blocked and a sequential curve pair when they
# differ in these only. The re-orthonormalization is part of it:
# reorthonormalize_every: auto resolves to every block end for a float
# blocked run and to never for a sequential one, so the deck defaults of the
# two kernels differ in it.
KERNEL_FIELDS = ("kernel", "block size", "block GEMM", "reorthonormalize")


def non_kernel_key(curve, also=()):
    """The curve's key without KERNEL_FIELDS (and the fields in `also`)."""
    return tuple(kv for kv in curve.key if kv[0] not in KERNEL_FIELDS + tuple(also))


def kernel_pairs(curve_list):
    """(blocked curve, sequential curve, [(x, blocked point, sequential point)])
    for every blocked and sequential curve whose keys agree on every field but
    KERNEL_FIELDS and that share an x. Each curve keeps its own medians; a
    curve with two points at one x (block_size: auto resolved to two k) gives
    a row for each."""
    pairs = []
    for b in curve_list:
        if dict(b.key)["kernel"] != "blocked":
            continue
        for q in curve_list:
            if dict(q.key)["kernel"] != "sequential" or non_kernel_key(q) != non_kernel_key(b):
                continue
            rows = [(x, pb, pq) for pb in b.points for pq in q.points for x in [pb[0]] if pq[0] == x]
            if rows:
                pairs.append((b, q, rows))
    return pairs


def pair_label(pairs, i):
    """What tells pair i from the other pairs (key fields beyond the kernel); '' for one pair."""
    rests = [non_kernel_key(b) for b, _q, _r in pairs]
    return C.key_text(rests[i], skip=C.constant_fields(rests, C.key_fields(rests)))


def kernel_text(curve):
    k = dict(curve.key)
    if k["kernel"] != "blocked":
        return k["kernel"]
    return "blocked, k=%s%s, re-orthonormalize %s" % (k["block size"], "" if k["block GEMM"] == "n/a" else
                                                       ", GEMM " + k["block GEMM"], k["reorthonormalize"])


def ratio_table(pair, xname):
    b, _q, rows = pair
    block_header = ["block size"] if b.block_size_auto else []
    headers = [xname] + block_header + ["blocked FOM (update samples/s)", "sequential FOM (update samples/s)",
                                        "blocked / sequential"]
    return C.md_table(headers, [
        [x] + ([pb[2][0].block_size] if b.block_size_auto else []) + [
            C.fmt_rate(pb[1]), C.fmt_rate(pq[1]), "%.3f" % (pb[1] / pq[1]) if pq[1] > 0 else "n/a"]
        for x, pb, pq in rows])


def plot_kernel_pairs(pairs, path, title, xlabel):
    """The blocked (solid) and sequential (dashed) FOM curves of each pair on
    one axis, their ratio on a second."""
    plt = C.pyplot()
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(6.8, 6.8), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (b, q, rows) in enumerate(pairs):
        col = colors[i % len(colors)]
        label = pair_label(pairs, i)
        label = label + ": " if label else ""
        for c, style in ((b, "o-"), (q, "s--")):
            ax.plot([x for x, _f, _r in c.points], [f for _x, f, _r in c.points], style, color=col,
                    label=label + kernel_text(c))
        ax2.plot([x for x, _pb, _pq in rows], [pb[1] / pq[1] for _x, pb, pq in rows], "o-", color=col,
                 label=label + kernel_text(b) + " / sequential")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylabel(Y_LABEL)
    C.plain_log_labels(ax)
    ax.grid(True, which="both", alpha=0.3)
    ax2.axhline(1.0, color="k", ls=":", lw=0.8)
    ax2.set_ylim(bottom=0)
    ax2.set_ylabel("blocked / sequential FOM [ratio]")
    ax2.set_xlabel(xlabel)
    ax2.grid(True, which="both", alpha=0.3)
    C.label_x_ticks(ax2, sorted({x for b, q, _r in pairs for c in (b, q) for x, _f, _r in c.points}))
    # One legend under the ratio panel for both panels: none over the data.
    handles, labels = [], []
    for a in (ax, ax2):
        h, t = a.get_legend_handles_labels()
        handles += h
        labels += [wrap_label(x) for x in t]
    ax2.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.22), fontsize=7, ncol=1, frameon=False)
    rests = [non_kernel_key(b, also=("device",)) for b, _q, _r in pairs]
    shared = C.shared_text(rests, [f for f in C.key_fields(rests) if not C.is_deck_field(f)])
    return C.save_figure(fig, path, title + ("\n" + shared if shared else ""),
                         [r for b, q, _r in pairs for c in (b, q) for r in c.records], decks=True, tight=True)


SECTIONS = [
    # (name, x attribute, key fields dropped, x header, x axis label, title, file)
    ("Throughput vs d", "d", ("d",), "d", "d (dimension) [coordinates]",
     "Throughput vs problem size d", "sweep_throughput_vs_d.png"),
    ("Throughput vs r", "r", ("r",), "r", "r (rank) [basis vectors]",
     "Throughput vs retained rank r", "sweep_throughput_vs_r.png"),
]


def analyse(records, out_dir, plots=True):
    """Returns (markdown text, {section name: curves}, figure paths). Runs
    of a streams.per_rank sweep (C.is_streams_sweep) are left out: they are
    analysis.saturation's."""
    lines, found, figures = [], OrderedDict(), []
    left = [r for r in records if C.is_streams_sweep(r)]
    records = [r for r in records if not C.is_streams_sweep(r)]
    if left:
        lines += ["%d run(s) of a streams.per_rank sweep (%s) are left to analysis.saturation (the saturation "
                  "point and memory per stream): `python3 -m analysis.saturation` on the same files." % (
                      len(left), ", ".join(OrderedDict.fromkeys(r.file for r in left))), ""]
    for name, xattr, without, xhead, xlabel, title, fname in SECTIONS:
        cs = curves(records, xattr, without)
        found[name] = cs
        lines += ["# " + name, ""]
        if not cs:
            lines += ["No runs that differ only in %s." % xhead, ""]
            continue
        keys = [c.key for c in cs]
        shared = C.shared_text(keys, C.SHOWN_WHEN_VARYING)
        if shared:
            lines += ["Every curve: %s." % shared, ""]
        skip = C.label_skip(keys)
        for c in cs:
            lines += ["## " + C.key_text(c.key, skip=skip), "", table(c, xhead), ""]
            note = C.without_fom_note(c.records)
            if note:
                lines += [note, ""]
        if any(seed_column(c) for c in cs):
            lines += [S.source_note(), ""]
        if plots:
            path = plot(cs, os.path.join(out_dir, fname), title, xlabel, xattr=xattr)
            figures.append(path)
            lines += ["Figure: " + path, ""]
        pairs = kernel_pairs(cs)
        if pairs:
            lines += ["## Blocked vs sequential update kernel (vs %s)" % xhead, "",
                      "Curves that differ only in the kernel (%s); each kernel's FOM is its own curve's median." %
                      ", ".join(KERNEL_FIELDS), ""]
            for i, pair in enumerate(pairs):
                label = pair_label(pairs, i)
                text = kernel_text(pair[0])
                lines += ["%s / sequential%s:" % (text[0].upper() + text[1:], " (%s)" % label if label else ""),
                          "", ratio_table(pair, xhead), ""]
            if plots:
                path = plot_kernel_pairs(pairs, os.path.join(out_dir, "sweep_blocked_vs_sequential_vs_%s.png" % xhead),
                                         "Blocked vs sequential update kernel: throughput vs %s" % xhead, xlabel)
                figures.append(path)
                lines += ["Figure: " + path, ""]
    return "\n".join(lines), found, figures


def main(argv=None):
    return C.tables_and_figures_main(
        argv, "python3 -m analysis.sweep",
        "Throughput vs d and vs r (log axes) from mosaic_miniapp result files: Markdown tables on stdout, PNG "
        "figures in --out. Runs of a streams.per_rank sweep are left to analysis.saturation.", analyse)


if __name__ == "__main__":
    sys.exit(C.main_wrapper("analysis.sweep", main, None))
