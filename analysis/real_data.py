"""real_data: MOSAIC against the online baselines on one real data set, by
the prequential (truth-free) accuracy both report (docs/ALGORITHM.md section
5): mini-app result files (--result, one or more; every runs[] entry of each,
so a sweep's file gives one row per point) and the baselines file that
analysis.baselines wrote for the same stream (--baselines).

Each mini-app run is labelled by its deck's algorithm: "MOSAIC" (exact
covariance update, precision direction), "MOSAIC first_order" (covariance_update:
first_order), "MOSAIC oja" (subspace_direction: oja), both words for both,
and "missing: project" (or zero_fill, drop) for an ablation of section 7's
posterior; runs that share a label are told apart by their sweep point (or their
file and run index).

Writes a Markdown table (--table; also printed), one row per method:

    method | samples | NLL mean | NLL interval median | residual fraction mean |
    surprise rate | time per sample (us)

(runs[].prequential of a result; methods[].prequential of the baselines),
and a PNG (--figure; --no-plots: none) with two panels, the interval means of the NLL and of
the residual fraction against the step (rows evaluated since the first
one, at the end of each interval), one line per method.

Time per sample: MOSAIC's is its update timer per sample,
1e6 / throughput.update_samples_per_second (for one stream: timers.update /
timed steps; for several, the update time over every stream's timed samples,
steps.timed_samples, with the streams batched over the threads): the timed
steps' update kernels with the prequential evaluation inside them, without
init, I/O and diagnostics. A baseline's is its seconds_per_sample: fits and
evaluation after the model of the first evaluated row was built
(analysis.baselines; over several streams, summed over them, one after
another). They ran on the machines the notes under the table name; compare
them as such.

Several streams (a run over several .npy files, e.g. run.steps: all, and
analysis.baselines given the same files): the measures of both sides are
pooled over the streams (an interval's means over every stream's samples of
step index in it), the heading and the figure say so, and the runs must have
as many streams as the baselines file.

The files must describe the same evaluated rows, or the command refuses
(exit status 2): as many streams per run as the baselines', the same d and
rank, the same first row (algorithm.init_samples = the baselines' start)
and number of rows (warm-up + timed steps; several streams: the longest
stream's), the same interval boundaries (warm-up + each series entry's step
= the baselines' steps), and the same number of evaluated samples. The last can differ with missing data for a reason
(MOSAIC skips a step whose tr(C^-1) exceeds missing_cond_max, which depends
on its own frame, in every missing mode):
--allow-sample-difference accepts that and the table shows each count.

    python3 -m analysis.real_data --name PM10 --result results/cpu/pm10.json --baselines pm10_baselines.json \\
        --table pm10.md --figure pm10.png
"""

import argparse
import math
import os
import sys
from collections import OrderedDict

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from analysis import common as C

BASELINE_LABELS = OrderedDict([("window", "sliding-window PPCA"), ("incremental", "IncrementalPCA"),
                               ("static", "static PCA (in-sample)")])
HEADERS = ["method", "samples", "NLL mean", "NLL interval median", "residual fraction mean", "surprise rate",
           "time per sample (us)"]


class Method:
    """One row of the table and one line of the figure."""

    def __init__(self, label, prequential, points, us_per_sample, start, rows, d, rank, source, record=None):
        self.label = label
        self.preq = prequential
        self.points = points  # [(step since start, interval dict)]
        self.us = us_per_sample
        self.start, self.rows, self.d, self.rank = start, rows, d, rank
        self.source = source  # "file" or "file #k", for messages
        self.record = record

    @property
    def steps(self):
        return [k for k, _ in self.points]

    def row(self):
        p = self.preq
        return [self.label, str(p["samples"]), fmt(p.get("nll_mean")), fmt(p.get("nll_interval_median")),
                fmt(p.get("residual_fraction_mean")), fmt(p.get("surprise_rate")), fmt_us(self.us)]


def fmt(v, digits=4):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    return "%.*f" % (digits, v)


def fmt_us(v):
    if v is None or not math.isfinite(v):
        return "n/a"
    return "{:,.1f}".format(v) if v < 1e4 else "{:,.0f}".format(v)


def mosaic_label(deck):
    alg = deck.get("algorithm", {})
    words = ["MOSAIC"]
    if str(alg.get("covariance_update", "exact")) != "exact":
        words.append(str(alg["covariance_update"]))
    if str(alg.get("subspace_direction", "precision")) != "precision":
        words.append(str(alg["subspace_direction"]))
    if str(alg.get("missing", "error")) not in ("error", "posterior"):
        words.append("missing: " + str(alg["missing"]))
    return " ".join(words)


def mosaic_methods(paths, streams=1):
    """The runs of the result files; each must have run `streams` streams
    (the baselines' count)."""
    records = C.load_records(paths)
    docs = {}
    out = []
    for rec in records:
        if rec.path not in docs:
            docs[rec.path] = C.load_document(rec.path)
        run = docs[rec.path]["runs"][rec.run_index]
        where = "%s run %d" % (rec.file, rec.run_index)
        preq = run.get("prequential")
        if not isinstance(preq, dict) or "samples" not in preq:
            raise C.AnalysisError("%s: no runs[].prequential (a result written before the prequential accuracy "
                                  "was reported, or a run that evaluated nothing)" % where)
        if rec.streams_total != streams and streams == 1:
            raise C.AnalysisError("%s: %d streams; the baselines score one stream, so compare a run of one "
                                  "(streams.total: 1)" % (where, rec.streams_total))
        if rec.streams_total != streams:
            raise C.AnalysisError("%s: %d streams; the baselines were pooled over %d" %
                                  (where, rec.streams_total, streams))
        try:
            steps = run["steps"]
            start = C.first_stepped_row(steps, where)
            warm = int(steps.get("warmup", 0))
            rows = warm + int(steps["timed"])
            points = [(warm + int(e["step"]), e["prequential"]["interval"]) for e in rec.series
                      if "prequential" in e]
            ups = float(run["throughput"]["update_samples_per_second"])
        except (KeyError, TypeError, ValueError) as e:
            raise C.AnalysisError("%s: missing or malformed field %s" % (where, e))
        us = 1e6 / ups if ups > 0 else None
        out.append(Method(mosaic_label(rec.resolved_deck), preq, points, us, start, rows, rec.d, rec.r, where, rec))
    # Labels shared by several runs: add the sweep point, else the file and run index.
    for m in out:
        same = [x for x in out if x.label == m.label]
        if len(same) > 1:
            for x in same:
                x.suffix = x.record.sweep_label if x.record.sweep_label != "-" else x.source
            if len({x.suffix for x in same}) < len(same):
                for x in same:
                    x.suffix = x.source
    for m in out:
        if hasattr(m, "suffix"):
            m.label = "%s (%s)" % (m.label, m.suffix)
    return out


def baseline_methods(path):
    doc = C.load_document(path)
    if not isinstance(doc, dict) or doc.get("program") != "mosaic_baselines":
        raise C.AnalysisError("%s: not an analysis.baselines file (no \"program\": \"mosaic_baselines\")" % path)
    out = []
    try:
        start, end = int(doc["start"]), int(doc["end"])
        d = int(doc["input"]["d"])
        rank = int(doc["parameters"]["rank"])
        for name, m in doc["methods"].items():
            par = m.get("parameters", {})
            label = BASELINE_LABELS.get(name, name)
            if name == "window":
                label += " (W=%s, M=%s)" % (par.get("window"), par.get("refit_every"))
            elif name == "incremental":
                label += " (batch %s%s)" % (par.get("batch"), ", s2 from the total variance"
                                            if par.get("noise") == "total" else "")
            points = [(int(e["step"]), e["prequential"]["interval"]) for e in m["series"]]
            out.append(Method(label, m["prequential"], points, 1e6 * float(m["seconds_per_sample"]), start,
                              end - start, d, rank, "%s %s" % (os.path.basename(path), name)))
    except (KeyError, TypeError, ValueError) as e:
        raise C.AnalysisError("%s: missing or malformed field %s" % (path, e))
    if not out:
        raise C.AnalysisError("%s: no methods" % path)
    return doc, out


def check_same_rows(methods, allow_sample_difference):
    """Refuses files that did not evaluate the same rows."""
    ref = methods[0]
    for m in methods[1:]:
        for what, a, b in (("d", ref.d, m.d), ("rank", ref.rank, m.rank),
                           ("first evaluated row (init_samples / start)", ref.start, m.start),
                           ("rows evaluated (warm-up + timed steps / end - start)", ref.rows, m.rows)):
            if a != b:
                raise C.AnalysisError("%s and %s differ in the %s: %s against %s; they did not evaluate the "
                                      "same rows" % (ref.source, m.source, what, a, b))
        if ref.steps != m.steps:
            raise C.AnalysisError("%s and %s have different interval boundaries (steps since the first row): "
                                  "%s against %s; rerun analysis.baselines with --like RESULT or --steps" %
                                  (ref.source, m.source, short(ref.steps), short(m.steps)))
        if ref.preq["samples"] != m.preq["samples"] and not allow_sample_difference:
            raise C.AnalysisError("%s evaluated %d samples, %s %d (of %d rows): with missing data MOSAIC's skipped "
                                  "steps and its missing mode decide which rows it scores; "
                                  "--allow-sample-difference accepts that" %
                                  (ref.source, ref.preq["samples"], m.source, m.preq["samples"], ref.rows))


def short(v):
    return "[%s]" % ", ".join(map(str, v)) if len(v) <= 8 else "[%s, ..., %s]" % (
        ", ".join(map(str, v[:3])), ", ".join(map(str, v[-2:])))


def stream_count(bdoc):
    """The number of streams the baselines file pools (1: one stream)."""
    try:
        return int(bdoc.get("streams", 1))
    except (TypeError, ValueError):
        raise C.AnalysisError("baselines file: malformed \"streams\": %r" % bdoc.get("streams")) from None


def markdown(name, methods, bdoc, bpath):
    ref = methods[0]
    mosaic = [m for m in methods if m.record is not None]
    streams = stream_count(bdoc)
    pooled = ", pooled over %d streams" % streams if streams > 1 else ""
    lines = ["# %s: MOSAIC against online baselines (prequential accuracy%s)" % (name, pooled), ""]
    inp = bdoc.get("input", {})
    if streams > 1:
        ends = [int(s["end"]) for s in bdoc.get("inputs", []) if "end" in s]
        lines.append("Rows [%d, end) of each of %s, end being the stream's own number of rows (%s); d = %d, "
                     "rank %d%s; %d rows in all, each scored before it updates its own stream's model "
                     "(docs/ALGORITHM.md section 5, the normative ALGORITHM.md's section 4); each method runs on "
                     "every stream on its own. Pooled over the %d streams: the measures sum every stream's samples, "
                     "an interval ending at step k holds every stream's samples of step index in it, and a stream "
                     "that ended adds nothing after its end." % (
                         ref.start, inp.get("file", "%d streams" % streams),
                         "%d to %d" % (min(ends), max(ends)) if ends else "at most %d" % (ref.start + ref.rows),
                         ref.d, ref.rank, ", %.1f%% of the files' entries missing" % (100 * inp["missing_fraction"])
                         if inp.get("missing_fraction") else "", int(bdoc.get("rows_evaluated", 0)), streams))
    else:
        lines.append("Rows [%d, %d) of %s (d = %d, rank %d%s), each scored before it updates the model "
                     "(docs/ALGORITHM.md section 5, the normative ALGORITHM.md's section 4)." % (
                         ref.start, ref.start + ref.rows, inp.get("file", "the stream"), ref.d, ref.rank,
                         ", %.1f%% of the file's entries missing" % (100 * inp["missing_fraction"])
                         if inp.get("missing_fraction") else ""))
    lines.append("")
    lines.append(C.md_table(HEADERS, [m.row() for m in methods]))
    lines.append("")
    lines.append("- NLL: negative log-likelihood per (observed) coordinate under U S U^T + s2 (I - U U^T); "
                 "interval median: the median of the means over the %d intervals ending at steps %s; residual fraction: "
                 "rho^2 / ||y||^2 off the model's subspace; surprise rate: the share of samples with y^T "
                 "Sigma^-1 y above the chi-square 0.999 quantile (a calibrated model: 0.001)." %
                 (len(ref.steps), short(ref.steps)))
    machines = OrderedDict.fromkeys("%s on %s" % (m.record.machine, m.record.hostname) for m in mosaic)
    env = bdoc.get("environment", {})
    if streams > 1:
        lines.append("- Time per sample: MOSAIC's update timer over its timed samples of every stream (the streams "
                     "batched over its threads; init, I/O and diagnostics excluded), on %s; the baselines' fits "
                     "and evaluation after each stream's first model, over every stream's samples, the streams "
                     "one after another (analysis.baselines, NumPy, %s BLAS thread(s)), on %s on %s." % (
                         "; ".join(machines), env.get("blas_threads", "?"), env.get("cpu_model", "?"),
                         env.get("hostname", "?")))
    else:
        lines.append("- Time per sample: MOSAIC's update timer per step (init, I/O and diagnostics excluded), on "
                     "%s; the baselines' fits and evaluation after the first model (analysis.baselines, NumPy, "
                     "%s BLAS thread(s)), on %s on %s." % (
                         "; ".join(machines), env.get("blas_threads", "?"), env.get("cpu_model", "?"),
                         env.get("hostname", "?")))
    skipped = ["%s %d" % (m.label, m.preq["skipped_samples"]) for m in methods
               if m.record is None and m.preq.get("skipped_samples")]
    if skipped:
        lines.append("- Rows the baselines did not score (fewer than r + 1 observed, or tr(C^-1) above "
                     "missing_cond_max): %s." % ", ".join(skipped))
    if bdoc.get("missing_data") and inp.get("missing_fraction"):
        lines.append("- Missing data in the baselines' fits: %s." % bdoc["missing_data"])
    lines.append("- static PCA is fitted on every row it scores: an in-sample bound, not an online method.")
    lines.append("- Sources: %s; %s." % (", ".join(OrderedDict.fromkeys(m.record.file for m in mosaic)),
                                        os.path.basename(bpath)))
    return "\n".join(lines) + "\n"


def clip_outliers(ax, values):
    """A linear axis whose range a few interval means would dominate (a
    baseline's NLL of 10^4 beside values near 1) ends at the 95th
    percentile plus the spread of the bulk, and says how many points and up
    to what value lie above it."""
    ordered = sorted(values)
    low, high = ordered[0], ordered[int(0.95 * (len(ordered) - 1))]
    top = high + max(high - low, 1e-12)
    above = [v for v in values if v > top]
    if not above:
        return
    ax.set_ylim(low - 0.05 * (top - low), top)
    ax.text(0.01, 0.01, "%d interval means above the axis (up to %.4g)" % (len(above), max(above)),
            transform=ax.transAxes, va="bottom", fontsize=7)


def plot(name, methods, path, streams=1):
    plt = C.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(14, 4.6))
    panels = (("nll_mean", "interval mean NLL per coordinate [nats]"),
              ("residual_fraction_mean", "interval mean residual fraction [dimensionless]"))
    for ax, (key, ylabel) in zip(axes, panels):
        values = []
        for m in methods:
            pts = [(k, e.get(key)) for k, e in m.points if e.get(key) is not None]
            if not pts:
                continue
            values += [v for _, v in pts]
            ax.plot([k for k, _ in pts], [v for _, v in pts], marker="o" if len(pts) <= 30 else None,
                    markersize=3, linewidth=1.4 if m.record is not None else 1.0,
                    linestyle="-" if m.record is not None else "--", label=m.label)
        positive = [v for v in values if v > 0]
        if values and len(positive) == len(values) and max(positive) / min(positive) > 30:
            ax.set_yscale("log")
        elif values:
            clip_outliers(ax, values)
        ax.set_xlabel("step (rows scored since row %d%s)" % (methods[0].start, " of each stream" if streams > 1
                                                              else ""))
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
    # One legend for both panels, outside them on the right (in the axes it covered curves).
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        axes[-1].legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                        borderaxespad=0.0, frameon=True)
    records = [m.record for m in methods if m.record is not None]
    return C.save_figure(fig, path, "%s: prequential accuracy per interval, MOSAIC and online baselines%s" % (
        name, ", pooled over %d streams" % streams if streams > 1 else ""), records)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m analysis.real_data", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--name", required=True, help="the data set's name, for the heading and the figure")
    parser.add_argument("--result", nargs="+", required=True, metavar="RESULT",
                        help="mosaic_miniapp result files (every run of each)")
    parser.add_argument("--baselines", required=True, metavar="B.json", help="analysis.baselines' output")
    parser.add_argument("--table", required=True, metavar="OUT.md", help="the Markdown table to write")
    parser.add_argument("--figure", metavar="OUT.png", help="the figure to write (needs matplotlib)")
    parser.add_argument("--no-plots", action="store_true", help="the table only (no --figure)")
    parser.add_argument("--allow-sample-difference", action="store_true",
                        help="accept different numbers of evaluated samples (missing data; see above)")
    args = parser.parse_args(argv)
    if not args.figure and not args.no_plots:
        parser.error("--figure OUT.png is required (or --no-plots)")
    bdoc, baselines = baseline_methods(args.baselines)
    methods = mosaic_methods(args.result, stream_count(bdoc)) + baselines
    check_same_rows(methods, args.allow_sample_difference)
    text = markdown(args.name, methods, bdoc, args.baselines)
    os.makedirs(os.path.dirname(os.path.abspath(args.table)), exist_ok=True)
    with open(args.table, "w", encoding="utf-8") as f:
        f.write(text)
    print(text)
    print("table: %s" % args.table)
    if not args.no_plots:
        print("figure: %s" % plot(args.name, methods, args.figure, stream_count(bdoc)))
    return 0


if __name__ == "__main__":
    sys.exit(C.main_wrapper("analysis.real_data", main, sys.argv[1:]))
