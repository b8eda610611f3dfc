"""sweep: throughput versus the problem size d and versus the retained rank r
(log axes), and the streams-per-device saturation curve (FOM versus streams
per rank), from any mix of result files; Markdown tables on stdout, PNGs in
--out. A curve is drawn for every set of runs that differ only in that one
parameter (same device model, dtype, stream mode, algorithm variant, the
configuration fields of common.CONFIGURATION_FIELDS [update kernel, block
size, block GEMM, re-orthonormalization, precision solve, backend,
concurrency], timed steps, rank count and, for d and r, total streams) and
that has at least two values of it. Repeats at one value: the median FOM.
Headings and legends name the stream mode and configuration fields only where
they differ between a section's curves; the others are said once per section.

Blocked vs sequential: where a d or r section holds a blocked and a
sequential curve whose keys agree on everything but the kernel (update
kernel, block size, block GEMM, re-orthonormalization), a table of the blocked / sequential FOM
ratio at each d or r they share and sweep_blocked_vs_sequential_vs_<d|r>.png
(both FOM curves, and the ratio below). Nothing when there is no such pair.

    python3 -m analysis.sweep results/single_gpu.json results/rank_sweep.json --out figures/
"""

import argparse
import os
import sys
from collections import OrderedDict

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from analysis import common as C

SATURATION_FRACTION = 0.9
# Key fields named in a curve's heading and legend only where they differ between the curves.
SHOWN_WHEN_VARYING = ("mode",) + C.CONFIGURATION_FIELDS


def _key(rec, without):
    # block_size: auto resolves k from d and r (auto_block_size), so a curve
    # over d or r keys on the setting "auto"; the repeats at one point still
    # agree on the resolved k (curves()).
    configuration = tuple((f, "auto" if f == "block size" and rec.block_size_from == "auto" else v)
                          for f, v in rec.configuration)
    items = ((("d", str(rec.d)), ("r", str(rec.r)), ("dtype", rec.dtype), ("mode", rec.mode),
              ("ranks", str(rec.ranks)), ("total streams", str(rec.streams_total)), ("steps", str(rec.steps)),
              ("algorithm", rec.algorithm)) + configuration + (("device", rec.machine),))
    return tuple(kv for kv in items if kv[0] not in without)


class Curve:
    def __init__(self, key, points):
        """points: {(x, resolved block size): records}."""
        self.key = key
        self.block_size_auto = dict(key).get("block size") == "auto"
        self.points = []  # (x, median FOM, records), by x and then block size
        for x, block_size in sorted(points):
            recs = points[(x, block_size)]
            self.points.append((x, C.median_or_nan([r.fom for r in recs]), recs))

    @property
    def records(self):
        return [r for _x, _f, rs in self.points for r in rs]


def curves(records, xattr, without):
    """Curves of FOM vs record.<xattr> over runs whose key (without `without`)
    agrees and that span at least two values of it. Runs that were given
    block_size: auto and resolved it to different k at one x (another rule in
    another build) are separate points at that x, not repeats."""
    groups = OrderedDict()
    for r in records:
        point = (getattr(r, xattr), r.block_size)
        groups.setdefault(_key(r, without), OrderedDict()).setdefault(point, []).append(r)
    return [Curve(k, points) for k, points in groups.items() if len({x for x, _k in points}) >= 2]


def _ver(recs):
    return C.verification_summary(recs)


def _top(curve):
    """The curve's largest median FOM (NaN when no point has one)."""
    return max([f for _x, f, _r in curve.points if not C.isnan(f)], default=float("nan"))


def saturation_point(curve, fraction=SATURATION_FRACTION):
    """Smallest streams/rank whose FOM reaches `fraction` of the curve's maximum."""
    top = _top(curve)
    for x, f, _r in curve.points:
        if f >= fraction * top:
            return x
    return None


def table(curve, xname, saturation=False):
    # Under block_size: auto each point's resolved k is a column after x.
    block_header = ["block size"] if curve.block_size_auto else []

    def block_cell(rs):
        return [rs[0].block_size] if curve.block_size_auto else []
    if saturation:
        top = _top(curve)
        headers = ["streams/rank"] + block_header + [
            "total streams", "runs", "FOM (update samples/s)", "FOM per rank", "per-stream samples/s",
            "fraction of max", "verification"]
        rows = [[C.fmt_count(x)] + block_cell(rs) + [
                    rs[0].streams_total, len(rs), C.fmt_rate(f), C.fmt_rate(f / rs[0].ranks),
                    C.fmt_rate(f / rs[0].streams_total), "%.3f" % (f / top if top > 0 else 0.0), _ver(rs)]
                for x, f, rs in curve.points]
    else:
        headers = [xname] + block_header + [
            "runs", "FOM (update samples/s)", "per-stream samples/s", "end-to-end samples/s", "verification"]
        rows = [[x] + block_cell(rs) + [
                    len(rs), C.fmt_rate(f), C.fmt_rate(f / rs[0].streams_total),
                    C.fmt_rate(C.median_or_nan([r.end_to_end for r in rs])), _ver(rs)]
                for x, f, rs in curve.points]
    return C.md_table(headers, rows)


def plot(curve_list, path, title, xlabel, ylog=True, ylabel="update throughput, all ranks [samples/s]"):
    plt = C.pyplot()
    ticker = C.matplotlib_module("matplotlib.ticker")
    fig, ax = plt.subplots(figsize=(6.8, 4.8))
    constant = C.constant_fields([c.key for c in curve_list], SHOWN_WHEN_VARYING)
    for c in curve_list:
        xs = [x for x, _f, _r in c.points]
        ax.plot(xs, [f for _x, f, _r in c.points], "o-", label=C.key_text(c.key, skip=("device",) + constant))
    ax.set_xscale("log", base=2)
    if ylog:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    C.label_x_ticks(ax, sorted({x for c in curve_list for x, _f, _r in c.points}))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if ylog:
        C.plain_log_labels(ax)
    else:
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _pos: C.fmt_rate(v)))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6)
    return C.save_figure(fig, path, title, [r for c in curve_list for r in c.records])


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
    return C.key_text(rests[i], skip=C.constant_fields(rests, [k for k, _v in rests[0]]))


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
    ax.set_ylabel("update throughput, all ranks [samples/s]")
    C.plain_log_labels(ax)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6)
    ax2.axhline(1.0, color="k", ls=":", lw=0.8)
    ax2.set_ylim(bottom=0)
    ax2.set_ylabel("blocked / sequential FOM [ratio]")
    ax2.set_xlabel(xlabel)
    ax2.grid(True, which="both", alpha=0.3)
    ax2.legend(fontsize=6)
    C.label_x_ticks(ax2, sorted({x for b, q, _r in pairs for c in (b, q) for x, _f, _r in c.points}))
    rests = [non_kernel_key(b, also=("device",)) for b, _q, _r in pairs]
    shared = C.shared_text(rests, [k for k, _v in rests[0]])
    return C.save_figure(fig, path, title + ("\n" + shared if shared else ""),
                         [r for b, q, _r in pairs for c in (b, q) for r in c.records])


SECTIONS = [
    # (name, x attribute, key fields dropped, x header, x axis label, title, file)
    ("Throughput vs d", "d", ("d",), "d", "ambient dimension d [coordinates]",
     "Throughput vs problem size d", "sweep_throughput_vs_d.png"),
    ("Throughput vs r", "r", ("r",), "r", "retained rank r [basis vectors]",
     "Throughput vs retained rank r", "sweep_throughput_vs_r.png"),
    ("Saturation: FOM vs streams per rank", "streams_per_rank", ("total streams",), "streams/rank",
     "streams per rank (per device) [count]", "Streams-per-device saturation", "sweep_saturation.png"),
]


def analyse(records, out_dir, plots=True):
    """Returns (markdown text, {section name: curves}, figure paths)."""
    lines, found, figures = [], OrderedDict(), []
    for name, xattr, without, xhead, xlabel, title, fname in SECTIONS:
        cs = curves(records, xattr, without)
        found[name] = cs
        sat = xattr == "streams_per_rank"
        lines += ["# " + name, ""]
        if not cs:
            lines += ["No runs that differ only in %s." % xhead, ""]
            continue
        keys = [c.key for c in cs]
        shared = C.shared_text(keys, SHOWN_WHEN_VARYING)
        if shared:
            lines += ["Every curve: %s." % shared, ""]
        constant = C.constant_fields(keys, SHOWN_WHEN_VARYING)
        for c in cs:
            lines += ["## " + C.key_text(c.key, skip=constant), "", table(c, xhead, saturation=sat), ""]
            note = C.without_fom_note(c.records)
            if note:
                lines += [note, ""]
            if sat:
                x = saturation_point(c)
                lines += ["Saturates (FOM >= %d%% of its maximum) at %s streams per rank." % (
                    round(100 * SATURATION_FRACTION), C.fmt_count(x)), ""]
        if plots:
            # Saturation: linear throughput axis, so that the plateau shows.
            path = plot(cs, os.path.join(out_dir, fname), title, xlabel, ylog=not sat)
            figures.append(path)
            lines += ["Figure: " + path, ""]
        pairs = [] if sat else kernel_pairs(cs)
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
    p = argparse.ArgumentParser(
        prog="python3 -m analysis.sweep",
        description="Throughput vs d and vs r (log axes) and the streams-per-rank saturation curve from "
                    "mosaic_miniapp result files: Markdown tables on stdout, PNG figures in --out.")
    C.add_common_arguments(p)
    p.add_argument("--no-plots", action="store_true", help="tables only")
    args = p.parse_args(argv)
    if not args.no_plots:
        C.check_output_dir(args.out)
    records = C.load_records(args.inputs, validate=args.validate)
    text, _found, _figs = analyse(records, args.out, not args.no_plots)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(C.main_wrapper("analysis.sweep", main, None))
