"""report: the page a collaborator sends back, made from mosaic_miniapp
result files alone: REPORT_DIR/README.md (one Markdown page) and the PNG
figures beside it.

    python3 -m analysis.report RESULT_DIR [RESULT_DIR_OR_FILE ...] --out REPORT_DIR [--no-plots] [--validate]

The page starts with every warning (a file built from a tree with
uncommitted changes, files of different commits, failed or interrupted
runs, failed checks, the runs' own warnings, files skipped), a table of
every run (a PASSED run whose accuracy was not checked, or only in part,
says so), the throughput figure, the scaling efficiencies (where the inputs
hold a weak or strong series at two or more rank counts: analysis.scaling's
sections), the streams-per-device saturation (the runs of a
streams.per_rank sweep: analysis.saturation's section), the throughput
sweeps over d and r (analysis.sweep's figures) and the diagnostics time
series (analysis.stability's figures).
Then, per result file: the exact command, deck, time, hardware, software and
git commit; and per run (sweep point): the configuration, throughput,
numerical-stability diagnostics, memory, accuracy (truth-based and
prequential), the verdict and every warning, each value with the field of
the result file it comes from. A field a file does not hold (older files
lack many) is "not recorded", never a guess.

Exit status: 0 when the page is written (whatever the runs' verdicts: the
page says them); 2 for unusable input or an unusable --out (one line on
stderr). Figures need matplotlib; --no-plots writes the page alone and needs
neither numpy nor matplotlib.
"""

import argparse
import math
import os
import re
import shlex
import sys
from collections import OrderedDict

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from analysis import breakdown, saturation, scaling, stability, sweep
from analysis import common as C

NOT_RECORDED = "not recorded"
PAGE = "README.md"
THROUGHPUT_FIGURE = "report_throughput.png"

# A field the document does not hold (C.field's default): shown as NOT_RECORDED.
ABSENT = type("Absent", (), {"__repr__": lambda self: "ABSENT"})()


# ---------------------------------------------------------------------------
# Checked access to the fields only the report reads


def get(parent, key, kinds, where):
    """parent[key] of its JSON type (C.field: FieldError naming where.key
    when it has another); ABSENT when the key, or its parent, is not there."""
    if parent is ABSENT or parent is None:
        return ABSENT
    return C.field(parent, key, kinds, where, ABSENT)


def show(value, fmt=str, null="null"):
    """A value for the page: NOT_RECORDED when ABSENT, `null` for a JSON null."""
    if value is ABSENT:
        return NOT_RECORDED
    if value is None:
        return null
    return fmt(value)


def code(text):
    """Inline code; backticks in the text are replaced, so the span stays one."""
    return "`%s`" % str(text).replace("`", "'")


def fmt_bytes(n):
    n = int(n)
    if n < 0:
        return "%d" % n
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return "{:,} B ({:.2f} {})".format(n, n / size, unit)
    return "{:,} B".format(n)


def fmt_bandwidth(x):
    return "{:.2f} MiB/s ({:,.0f} B/s)".format(x / (1 << 20), x)


def fmt_value(x):
    """A number as the file has it, shortened: integers whole, others to 6
    significant digits; a string as it is."""
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) < 1e15):
        return "{:,}".format(int(x)) if abs(x) >= 10000 else str(int(x))
    return "%.6g" % x


def fmt_seconds(x):
    return "%.4g s" % x


def fmt_rate_exact(x):
    """Samples/s as the tables show them, and the file's full value."""
    if C.isnan(x):
        return "non-finite (null)"
    return "%s samples/s (%r)" % (C.fmt_rate(x), float(x))


def listed(items, limit=5):
    items = list(items)
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + ", and %d more" % (len(items) - limit)


def field_table(rows):
    """rows: (quantity, value, field) -> a Markdown table; the field is the
    value's path in the result file."""
    return C.md_table(["quantity", "value", "field"], [[q, v, code(f) if f else ""] for q, v, f in rows])


# ---------------------------------------------------------------------------
# Per file: invocation, hardware, software, git


def invocation(rec):
    doc = rec.document
    cmd = get(doc, "command_line", "array", "")
    if cmd is not ABSENT:
        cmd = [C.expect(a, "string", "command_line[%d]" % i) for i, a in enumerate(cmd)]
    ranks = get(doc, "mpi_ranks", "integer", "")
    lines = ["### Invocation", ""]
    if cmd is ABSENT:
        lines += ["Command: %s (`command_line`)." % NOT_RECORDED, ""]
    else:
        lines += ["Command (`command_line`, rank 0's arguments%s):" % (
            "; the MPI launcher that started the %s ranks is not recorded" % show(ranks, fmt_value)
            if ranks is not ABSENT and ranks > 1 else ""), "", "```sh", " ".join(shlex.quote(a) for a in cmd), "```",
            ""]
    rows = [
        ("deck", code(rec.deck_path), "deck_path"),
        ("overrides (--set)", ", ".join(code(o) for o in rec.overrides) if rec.overrides else "none", "overrides"),
        ("MPI ranks", show(ranks, fmt_value), "mpi_ranks"),
        ("started (UTC)", show(get(doc, "timestamp_utc", "string", "")), "timestamp_utc"),
        ("finished (UTC)", show(get(doc, "finished_utc", "string", "")), "finished_utc"),
        ("status", rec.status, "status"),
    ]
    stop = get(doc, "interrupted", "object", "")
    if stop is not ABSENT:
        rows.append(("interrupted by", "%s; checkpoint: %s" % (
            show(get(stop, "signal_name", "string", "interrupted")),
            show(get(stop, "checkpoint", ("string", "null"), "interrupted"), null="none (cannot be resumed)")),
            "interrupted"))
    failed = get(doc, "failed_points", "array", "")
    if failed is not ABSENT:
        rows.append(("failed sweep points", "%d: %s" % (len(failed), "; ".join(
            "#%s: %s" % (show(get(C.expect(f, "object", "failed_points[%d]" % i), "index", "integer",
                                  "failed_points[%d]" % i)),
                         show(get(f, "error", "string", "failed_points[%d]" % i)))
            for i, f in enumerate(failed)) or "none"), "failed_points"))
    rows.append(("mini-app version", show(get(rec.env, "mosaic_version", "string", "environment")),
                 "environment.mosaic_version"))
    return lines + [field_table(rows), ""]


def gpu_text(env):
    gpus = get(env, "gpus", ("array", "null"), "environment")
    if gpus is ABSENT or gpus is None:
        return NOT_RECORDED
    if not gpus:
        return "no GPU (environment.gpus is empty)"
    kinds = OrderedDict()
    for i, g in enumerate(gpus):
        w = "environment.gpus[%d]" % i
        model = show(get(g, "model", "string", w))
        mem = get(g, "memory_bytes", "integer", w)
        cc = get(g, "compute_capability", "string", w)
        text = "%s (%s%s)" % (model, "memory " + show(mem, fmt_bytes),
                              "" if cc is ABSENT else ", compute capability " + cc)
        kinds.setdefault(text, []).append(str(show(get(g, "index", "integer", w))))
    return "%d GPU%s: %s" % (len(gpus), "" if len(gpus) == 1 else "s", "; ".join(
        "%d x %s [index %s]" % (len(ix), text, ", ".join(ix)) for text, ix in kinds.items()))


def rank_devices(env):
    ranks = get(env, "ranks", "array", "environment")
    if ranks is ABSENT:
        return NOT_RECORDED, NOT_RECORDED
    hosts, devices = OrderedDict(), []
    for i, r in enumerate(ranks):
        w = "environment.ranks[%d]" % i
        C.expect(r, "object", w)
        hosts.setdefault(show(get(r, "hostname", "string", w)), []).append(i)
        dev = get(r, "device", ("string", "object"), w)
        if isinstance(dev, dict):
            dev = "GPU %s (%s)" % (show(get(dev, "id", "integer", w + ".device")),
                                   show(get(dev, "model", "string", w + ".device")))
        devices.append("rank %s: %s, concurrency %s" % (show(get(r, "rank", "integer", w)), show(dev),
                                                        show(get(r, "concurrency", "integer", w))))
    return ("; ".join("%s (%d rank%s)" % (h, len(rs), "" if len(rs) == 1 else "s") for h, rs in hosts.items()),
            "; ".join(devices))


def hardware(rec):
    env = rec.env
    hosts, devices = rank_devices(env)
    space = rec.backend or NOT_RECORDED
    where = "a GPU" if C.is_gpu_run(env) else "the host CPU"
    rows = [
        ("host name (rank 0)", rec.hostname, "environment.hostname"),
        ("hosts of the ranks", hosts, "environment.ranks[].hostname"),
        ("GPUs seen on the host", gpu_text(env), "environment.gpus"),
        ("device of each rank", devices, "environment.ranks[].device"),
        ("kernels ran on", "%s (Kokkos' default execution space: %s)" % (where, space)
         if rec.backend else NOT_RECORDED, "environment.kokkos_default_execution_space"),
        ("CPU model", show(get(env, "cpu_model", "string", "environment")), "environment.cpu_model"),
        ("CPU cores online", show(get(env, "cpu_cores_online", "integer", "environment"), fmt_value),
         "environment.cpu_cores_online"),
        ("host memory", show(get(env, "memory_bytes", "integer", "environment"), fmt_bytes),
         "environment.memory_bytes"),
    ]
    return ["### Hardware", "", field_table(rows), ""]


def joined(value, empty):
    if value is ABSENT:
        return NOT_RECORDED
    return ", ".join(str(v) for v in value) if value else empty


def software(rec):
    env, w = rec.env, "environment"

    def s(key, kinds="string"):
        return get(env, key, kinds, w)
    variables = s("environment_variables", "object")
    binding = s("openmp_binding", "object")
    rows = [
        ("Kokkos version", show(s("kokkos_version")), "environment.kokkos_version"),
        ("Kokkos backends", joined(s("kokkos_backends", "array"), "none"), "environment.kokkos_backends"),
        ("Kokkos arch", joined(s("kokkos_arch", "array"), "none set (the host default)"), "environment.kokkos_arch"),
        ("Kokkos default execution space", rec.backend or NOT_RECORDED,
         "environment.kokkos_default_execution_space"),
        ("its concurrency (threads per rank on a host backend)",
         NOT_RECORDED if rec.concurrency is None else str(rec.concurrency), "environment.kokkos_default_concurrency"),
        ("Kokkos Kernels version", show(s("kokkos_kernels_version")), "environment.kokkos_kernels_version"),
        ("Kokkos Kernels TPLs (behind its GEMM)", joined(s("kokkos_kernels_tpls", "array"), "none"),
         "environment.kokkos_kernels_tpls"),
        ("MPI library", show(s("mpi_library")), "environment.mpi_library"),
        ("compiler", show(s("compiler")), "environment.compiler"),
        ("compile flags", show(s("compile_flags"), code), "environment.compile_flags"),
        ("build type", show(s("build_type")), "environment.build_type"),
        ("CUDA runtime", show(s("cuda_runtime_version")), "environment.cuda_runtime_version"),
        ("CUDA driver (newest CUDA it supports)", show(s("cuda_driver_version")), "environment.cuda_driver_version"),
        ("OMP_* and KOKKOS_* variables", NOT_RECORDED if variables is ABSENT else ", ".join(
            code("%s=%s" % (k, v)) for k, v in sorted(variables.items())) or "none set",
         "environment.environment_variables"),
        ("OpenMP binding", NOT_RECORDED if binding is ABSENT else ", ".join(
            "%s=%s" % (k, v) for k, v in sorted(binding.items())), "environment.openmp_binding"),
    ]
    return ["### Software", "", field_table(rows), ""]


def source_code(rec):
    dirty = get(rec.env, "git_dirty", "boolean", "environment")
    text = {True: "**YES: built from a tree with uncommitted changes** (the commit alone does not give the code)",
            False: "no (clean tree)"}.get(dirty, NOT_RECORDED)
    rows = [("git commit", code(rec.git_commit), "environment.git_commit"),
            ("uncommitted changes when the build was configured", text, "environment.git_dirty")]
    return ["### Source code", "", field_table(rows), ""]


# ---------------------------------------------------------------------------
# Per run


def run_heading(rec, number):
    point = "" if rec.sweep_label == "-" else ": " + rec.sweep_label
    return "### Run %d: `%s` runs[%d]%s" % (number, rec.file, rec.run_index, point)


def configuration(rec):
    run, w = rec.run, "runs[%d]" % rec.run_index
    deck = rec.resolved_deck
    wd = w + ".resolved_deck"
    alg = get(deck, "algorithm", "object", wd)
    streams = get(deck, "streams", "object", wd)
    kernel = get(run, "kernel", ("object", "null"), w)
    steps = get(run, "steps", "object", w)
    src = get(deck, "source", "object", wd)
    rdeck = get(deck, "run", "object", wd)
    rows = [
        ("d (dimension)", str(rec.d), wd + ".problem.d"),
        ("r (retained rank)", str(rec.r), wd + ".problem.rank"),
        ("dtype", rec.dtype, w + ".dtype"),
        ("stream mode", rec.mode, w + ".decomposition.mode"),
        ("MPI ranks", str(rec.ranks), w + ".decomposition.ranks"),
        ("streams in all", str(rec.streams_total), w + ".decomposition.total_streams"),
        ("streams per rank", str(rec.spr_min) if rec.spr_min == rec.spr_max else "%d-%d (imbalance %.3g)" % (
            rec.spr_min, rec.spr_max, rec.imbalance), w + ".decomposition.streams_per_rank_min/max"),
        ("streams as the deck asks", "per_rank %s, total %s" % (
            show(get(streams, "per_rank", ("integer", "null"), wd + ".streams"), null="not set"),
            show(get(streams, "total", ("integer", "null"), wd + ".streams"), null="not set")), wd + ".streams"),
    ]
    if kernel is ABSENT or kernel is None:
        rows.append(("update kernel", "%s (inferred from the deck: %s, block size %d, re-orthonormalize %s)" % (
            NOT_RECORDED, rec.kernel, rec.block_size, rec.reorthonormalize), w + ".kernel"))
    else:
        wk = w + ".kernel"
        masked = get(kernel, "masked_blocks", ("object", "null"), wk)
        rows += [
            ("update kernel", rec.kernel, wk + ".update"),
            ("block size k", "%d (from %s)" % (rec.block_size, rec.block_size_from), wk + ".block_size"),
            ("block GEMM", show(get(kernel, "block_gemm", ("string", "null"), wk), null="none (sequential kernel)"),
             wk + ".block_gemm"),
            ("block GEMM over the streams", show(get(kernel, "block_gemm_streams", ("string", "null"), wk),
                                                 null="n/a"), wk + ".block_gemm_streams"),
            ("re-orthonormalization", rec.reorthonormalize, wk + ".reorthonormalize"),
        ]
        if masked not in (ABSENT, None):
            rows.append(("samples in blocked runs / shared-mask runs / masked steps", "%s / %s / %s" % tuple(
                show(get(masked, k, "integer", wk + ".masked_blocks"), fmt_value) for k in (
                    "samples_in_blocked_runs", "samples_in_shared_mask_runs", "samples_in_masked_steps")),
                wk + ".masked_blocks"))
    rows += [
        ("algorithm", rec.algorithm, wd + ".algorithm.covariance_update/subspace_direction"),
        ("precision solve", rec.precision_solve, wd + ".algorithm.precision_solve"),
    ]
    if alg is not ABSENT:
        for key, value in alg.items():
            if key.startswith("eta_"):
                rows.append(("rate " + key, show(C.expect(value, ("number", "string", "null"),
                                                          "%s.algorithm.%s" % (wd, key)), fmt_value),
                             "%s.algorithm.%s" % (wd, key)))
        for key in ("noise", "missing", "init"):
            if key in alg:
                rows.append(("algorithm." + key, C.compact(alg[key]), "%s.algorithm.%s" % (wd, key)))
    else:
        rows.append(("rates eta_*", NOT_RECORDED, wd + ".algorithm"))
    ws = w + ".steps"
    rows += [
        ("timed steps", str(rec.steps), ws + ".timed"),
        ("timed steps planned", show(get(steps, "timed_planned", "integer", ws), fmt_value), ws + ".timed_planned"),
        ("warm-up steps", show(get(steps, "warmup", "integer", ws), fmt_value), ws + ".warmup"),
        ("init samples", show(get(steps, "init_samples", "integer", ws), fmt_value), ws + ".init_samples"),
        ("timed samples, all streams", show(get(steps, "timed_samples", "integer", ws), fmt_value),
         ws + ".timed_samples"),
        ("source", show(get(src, "type", "string", wd + ".source")), wd + ".source.type"),
        ("seed", show(get(rdeck, "seed", ("integer", "string"), wd + ".run"), fmt_value), wd + ".run.seed"),
        ("sweep point", rec.sweep_label, w + ".sweep_point"),
    ]
    return ["#### Configuration", "", field_table(rows), ""]


def throughput(rec):
    run, w = rec.run, "runs[%d]" % rec.run_index
    fom = get(run, "figure_of_merit", "object", w)
    wf = w + ".figure_of_merit"
    rows = [
        ("figure of merit: " + show(get(fom, "name", "string", wf)), "**%s**" % fmt_rate_exact(rec.fom), wf + ".value"),
        ("its definition", show(get(fom, "definition", "string", wf)), wf + ".definition"),
    ]
    tp = get(run, "throughput", "object", w)
    for key, value in tp.items():
        wk = "%s.throughput.%s" % (w, key)
        value = C.expect(value, ("number", "null"), wk)
        if value is None:
            text = "non-finite (null)"
        elif "samples_per_second" in key:
            text = C.fmt_rate(value) + " samples/s"
        elif "seconds" in key:
            text = fmt_seconds(value)
        else:
            text = fmt_value(value)
        rows.append((key.replace("_", " "), text, wk))
    if rec.efficiency is not None:
        eff = "%s (%s scaling, against %d rank%s: (FOM(N)/N) / (FOM(N0)/N0); see Scaling efficiency)" % (
            C.fmt_eff(rec.efficiency) or "n/a", rec.mode, rec.efficiency_base_ranks,
            "" if rec.efficiency_base_ranks == 1 else "s")
    else:
        eff = "none: no run of this series at another rank count in the inputs"
    rows.append(("parallel efficiency", eff, ""))
    for phase in ("total", "update"):
        t = rec.timers.get(phase)
        rows.append(("%s time, max over the ranks" % ("wall (run point)" if phase == "total" else "update"),
                     NOT_RECORDED if t is None else fmt_seconds(t["max_s"]), "%s.timers.%s.max_s" % (w, phase)))
    io = get(run, "io", "object", w)
    if io is not ABSENT:
        wi = w + ".io"
        rows += [
            ("read bandwidth (.npy files)", show(get(io, "read_bandwidth_bytes_per_s", "number", wi),
                                                 fmt_bandwidth), wi + ".read_bandwidth_bytes_per_s"),
            ("time waiting for data, max over ranks", show(get(io, "stall_seconds", "number", wi), fmt_seconds),
             wi + ".stall_seconds"),
        ]
    return ["#### Throughput", "", field_table(rows), ""]


# Final diagnostics the stability table shows: (key, what it is, format).
STABILITY_FIELDS = [
    ("orthonormality_error_max", "orthonormality error (Frobenius norm of U^T U - I), max over streams", C.fmt_sci),
    ("symmetry_error_max", "symmetry error of S, max over streams", C.fmt_sci),
    ("s_condition_max", "cond(S), max over streams", C.fmt_sci),
    ("s_min_eig_min", "smallest eigenvalue of S, min over streams", C.fmt_sci),
    ("s_max_eig_max", "largest eigenvalue of S, max over streams", C.fmt_sci),
    ("s2_min", "noise variance s2, min over streams", C.fmt_sci),
    ("nonfinite_count", "non-finite values in the states", fmt_value),
    ("clamped_steps", "clamped covariance steps, all streams", fmt_value),
    ("unresolved_residual_steps", "unresolved-residual blocked steps (ALGORITHM.md section 6), all streams",
     fmt_value),
    ("residual_recomputations", "of those, residuals recomputed explicitly", fmt_value),
    ("breakdown_streams", "streams frozen by a breakdown or a non-finite sample", fmt_value),
    ("ended_streams", "streams whose data ended early", fmt_value),
    ("maintained_solve_drift_max", "maintained solve's drift, max over streams", C.fmt_sci),
    ("maintained_refactorizations", "maintained solve's refactorizations", fmt_value),
]


def stability_table(rec):
    run, w = rec.run, "runs[%d]" % rec.run_index
    wf = w + ".diagnostics.final"
    fin = rec.run["diagnostics"]["final"]
    rows = [("final timed step", show(get(fin, "step", "integer", wf), fmt_value), wf + ".step")]
    for key, what, fmt in STABILITY_FIELDS:
        rows.append((what, show(get(fin, key, ("number", "null"), wf), fmt, null="non-finite (null)"),
                     "%s.%s" % (wf, key)))
    counts = get(run, "counts", "object", w)
    wc = w + ".counts"
    rows.append(("clamped steps (counts)", show(get(counts, "clamped_steps", "integer", wc), fmt_value),
                 wc + ".clamped_steps"))
    bds = get(counts, "breakdowns", "array", wc)
    if bds is ABSENT:
        text = NOT_RECORDED
    elif not bds:
        text = "none"
    else:
        items = []
        for i, b in enumerate(bds):
            wb = "%s.breakdowns[%d]" % (wc, i)
            items.append("stream %s at step %s (code %s)" % tuple(
                show(get(C.expect(b, "object", wb), k, "integer", wb)) for k in ("stream_id", "step", "code")))
        text = "%d: %s" % (len(bds), listed(items))
    rows.append(("breakdowns", text, wc + ".breakdowns"))
    missing = get(counts, "missing", "object", wc)
    if missing is not ABSENT:
        rows.append(("missing data (mode, fraction, skipped steps, dropped samples, unseen coordinates)",
                     ", ".join(show(get(missing, k, ("string", "number"), wc + ".missing"), fmt_value) for k in (
                         "mode", "missing_fraction", "skipped_steps", "dropped_samples", "unseen_coordinates")),
                     wc + ".missing"))
    noise = get(counts, "noise", "object", wc)
    if noise is not ABSENT:
        rows.append(("noise model (model, re-whitenings, profile min, max)", ", ".join(
            show(get(noise, k, ("string", "number"), wc + ".noise"), fmt_value) for k in ("model", "rewhitenings", "noise_profile_min", "noise_profile_max")), wc + ".noise"))
    return ["#### Numerical stability (final diagnostics)", "", field_table(rows), ""]


def per_rank_text(values, where, space=ABSENT):
    """'max B (rank k)[ in SPACE]; per rank: ...' of a per-rank array of
    bytes (the per-rank list only for several ranks); NOT_RECORDED for none."""
    if values is ABSENT or not values:
        return NOT_RECORDED
    values = [C.expect(v, "integer", "%s[%d]" % (where, i)) for i, v in enumerate(values)]
    top = max(range(len(values)), key=lambda i: values[i])
    text = "max %s (rank %d)" % (fmt_bytes(values[top]), top)
    if space is not ABSENT:
        text += " in %s" % space
    if len(values) > 1:
        text += "; per rank: " + ", ".join(fmt_bytes(v) for v in values)
    return text


def the_file_says(definition):
    return "" if definition is ABSENT else "; the file says: " + definition


def memory(rec):
    """runs[].memory: the states' bytes, the peak allocated through Kokkos
    (schema_version 2), the device's used memory by phase (2), each rank's
    peak RSS and rank 0's estimate; a version 1 file's
    device_bytes_in_use_max, labelled as what it was (docs/RESULT-FORMAT.md)."""
    run, w = rec.run, "runs[%d]" % rec.run_index
    mem = get(run, "memory", "object", w)
    wm = w + ".memory"
    peak = get(mem, "peak_allocated_bytes_per_rank", "array", wm)
    space = get(mem, "peak_allocated_space", "string", wm)
    peak_text = per_rank_text(peak, wm + ".peak_allocated_bytes_per_rank", space)
    ratio = get(mem, "estimate_over_peak_allocated", ("number", "null"), wm)
    phases = get(mem, "device_used_bytes_at_phase", ("array", "null"), wm)
    if phases is ABSENT:
        phases_text = NOT_RECORDED
    elif phases is None:
        phases_text = "null: no device queried (a host backend; only Cuda is queried)"
    else:
        items = []
        for i, entry in enumerate(phases):
            wp = "%s.device_used_bytes_at_phase[%d]" % (wm, i)
            entry = C.expect(entry, "object", wp)
            items.append("%s %s" % (show(get(entry, "phase", "string", wp)),
                                    show(get(entry, "bytes", ("integer", "null"), wp), fmt_bytes, "not queried")))
        phases_text = "; ".join(items) if items else "none"
    rows = [
        ("state of one stream: mu, U, S, s2 (d + d r + r^2 + 1 scalars of the dtype)",
         show(get(mem, "state_bytes_per_stream", "integer", wm), fmt_bytes), wm + ".state_bytes_per_stream"),
        ("states of all streams (state of one stream x streams in all)",
         show(get(mem, "state_bytes_total", "integer", wm), fmt_bytes), wm + ".state_bytes_total"),
        ("peak allocated through Kokkos in the execution space's memory space, each rank's high-water mark during "
         "this point (exact: no CUDA context, no other process)"
         + the_file_says(get(mem, "peak_allocated_definition", "string", wm)), peak_text,
         wm + ".peak_allocated_bytes_per_rank"),
        ("memory space of the peak allocated (Kokkos' name)", show(space), wm + ".peak_allocated_space"),
        ("device's used memory as each phase ended, max over ranks (cudaMemGetInfo total - free: the CUDA context "
         "and every other process included)" + the_file_says(get(mem, "device_used_definition", "string", wm)),
         phases_text, wm + ".device_used_bytes_at_phase"),
    ]
    dev = get(mem, "device_bytes_in_use_max", ("integer", "null"), wm)
    if dev is not ABSENT:
        if dev is None:
            dev_text = "null: a host backend, no device memory"
        elif dev < 0:
            dev_text = "%d: no device (a host build; older files wrote -1 where newer ones write null)" % dev
        else:
            dev_text = fmt_bytes(dev)
        rows.append(("device memory in use at the end of the run, cudaMemGetInfo, not a peak (schema_version 1)",
                     dev_text, wm + ".device_bytes_in_use_max"))
    rows.append(("peak resident memory of each rank (VmHWM: the process's high-water mark since it started)"
                 + the_file_says(get(mem, "peak_rss_definition", "string", wm)),
                 per_rank_text(get(mem, "peak_rss_bytes_per_rank", "array", wm), wm + ".peak_rss_bytes_per_rank"),
                 wm + ".peak_rss_bytes_per_rank"))
    est = get(mem, "estimate_rank0", "object", wm)
    if est is not ABSENT:
        we = wm + ".estimate_rank0"
        rows.append(("rank 0's estimate before the run: execution-space / host-only memory", "%s / %s" % (
            show(get(est, "execution_space_bytes", "integer", we), fmt_bytes),
            show(get(est, "host_only_bytes", "integer", we), fmt_bytes)), we))
    rows.append(("rank 0's estimate over its peak allocated (execution-space estimate / "
                 "peak_allocated_bytes_per_rank[0])", show(ratio, "{:.3f}".format, null="null: a peak of 0"),
                 wm + ".estimate_over_peak_allocated"))
    return ["#### Memory", "", field_table(rows), ""]


def accuracy_setting(rec):
    """(run.accuracy of the deck, verification.accuracy) as recorded."""
    w = "runs[%d]" % rec.run_index
    setting = get(get(rec.resolved_deck, "run", "object", w + ".resolved_deck"), "accuracy", "string",
                  w + ".resolved_deck.run")
    said = get(rec.run["verification"], "accuracy", "string", w + ".verification")
    return setting, said


TRUTH_FIELDS = [
    ("projector_distance_max",
     "projector distance to the truth, 1 - (Frobenius norm of U^T V)^2 / k, max over streams"),
    ("projector_distance_mean", "projector distance to the truth, mean over streams"),
    ("noise_rel_error_max", "noise estimate's relative error, max over streams"),
    ("noise_rel_error_mean", "noise estimate's relative error, mean over streams"),
    ("spectrum_rel_error_max", "spectrum's relative error, max over streams"),
    ("spectrum_rel_error_mean", "spectrum's relative error, mean over streams"),
]
PREQUENTIAL_FIELDS = [
    ("nll_mean", "negative log-likelihood per coordinate, mean over the run", C.fmt_sci),
    ("nll_interval_median", "NLL per coordinate, median of the interval means", C.fmt_sci),
    ("residual_fraction_mean", "residual fraction rho^2 / (norm of y)^2, mean", C.fmt_sci),
    ("residual_fraction_interval_median", "residual fraction, median of the interval means", C.fmt_sci),
    ("surprise_rate", "surprise rate (y^T Sigma^-1 y above the chi-square 0.999 quantile)", C.fmt_sci),
    ("surprise_rate_interval_median", "surprise rate, median of the interval means", C.fmt_sci),
    ("surprise_rate_calibrated", "surprise rate of a calibrated model", C.fmt_sci),
    ("samples", "samples evaluated, all streams", fmt_value),
    ("zero_norm_samples", "of those, with y = 0", fmt_value),
]


def accuracy(rec):
    run, w = rec.run, "runs[%d]" % rec.run_index
    setting, said = accuracy_setting(rec)
    if setting == "throughput_only":
        status = "**not checked** (run.accuracy: throughput_only)"
    elif said is not ABSENT:
        status = said
    elif setting is not ABSENT:
        status = "run.accuracy: %s" % setting
    else:
        status = NOT_RECORDED
    rows = [("accuracy judged", status, w + ".verification.accuracy")]
    wa = w + ".diagnostics.final.accuracy"
    truth = get(rec.run["diagnostics"]["final"], "accuracy", ("object", "null"), w + ".diagnostics.final")
    src = get(get(rec.resolved_deck, "source", "object", w + ".resolved_deck"), "type", "string",
              w + ".resolved_deck.source")
    if truth in (ABSENT, None):
        rows.append(("truth-based accuracy", "%s (source.type: %s)" % (NOT_RECORDED, show(src)), wa))
    else:
        for key, what in TRUTH_FIELDS:
            rows.append((what, show(get(truth, key, ("number", "null"), wa), C.fmt_sci, null="non-finite (null)"),
                         "%s.%s" % (wa, key)))
        rows.append(("a random subspace's projector distance, 1 - r/d", C.fmt_sci(1.0 - float(rec.r) / rec.d),
                     "from d and r"))
    pre = get(run, "prequential", "object", w)
    wp = w + ".prequential"
    if pre is ABSENT:
        rows.append(("prequential accuracy (NLL, residual fraction, surprise rate)", NOT_RECORDED, wp))
    else:
        for key, what, fmt in PREQUENTIAL_FIELDS:
            rows.append(("prequential: " + what, show(get(pre, key, ("number", "null"), wp), fmt,
                                                      null="null (no sample evaluated)"), "%s.%s" % (wp, key)))
    for c in checks(rec):
        if c["group"] == "accuracy":
            rows.append(("check " + c["name"], c["text"], c["where"]))
    return ["#### Accuracy", "", field_table(rows), ""]


def checks(rec):
    """Every verification check: dicts of name, group, text (value relation
    threshold: passed/FAILED), passed, where."""
    w = "runs[%d].verification" % rec.run_index
    out = []
    for i, c in enumerate(rec.run["verification"]["checks"]):
        wc = "%s.checks[%d]" % (w, i)
        value = get(c, "value", ("number", "null"), wc)
        threshold = get(c, "threshold", "number", wc)
        passed = c["passed"]
        out.append({
            "name": show(get(c, "name", "string", wc)), "group": show(get(c, "group", "string", wc)),
            "passed": passed, "where": wc,
            "text": "%s %s %s: %s" % (show(value, fmt_value, null="non-finite (null)"),
                                      show(get(c, "relation", "string", wc)), show(threshold, fmt_value),
                                      "passed" if passed else "**FAILED**")})
    return out


def run_warnings(rec):
    w = "runs[%d]" % rec.run_index
    ws = get(rec.run, "warnings", "array", w)
    if ws is ABSENT:
        return ABSENT
    return [C.expect(t, "string", "%s.warnings[%d]" % (w, i)) for i, t in enumerate(ws)]


def verdict(rec):
    w = "runs[%d]" % rec.run_index
    ver = rec.run["verification"]
    wv = w + ".verification"
    said = get(ver, "verdict", "string", wv)
    rows = [
        ("verification", "**%s**" % rec.verification, wv + ".passed"),
        ("verdict as the mini-app words it", show(said), wv + ".verdict"),
    ]
    ref = get(ver, "reference_check", ("object", "null"), wv)
    wr = wv + ".reference_check"
    if ref is ABSENT:
        rows.append(("reference cross-check", NOT_RECORDED, wr))
    elif ref is None:
        rows.append(("reference cross-check", "null: its window was still open when the run stopped", wr))
    else:
        status = show(get(ref, "status", "string", wr))
        rel = get(ref, "rel_error", ("number", "null"), wr)
        if rel is not ABSENT:
            status += ": rel_error %s, threshold %s, %s" % (
                show(rel, C.fmt_sci, null="non-finite"), show(get(ref, "threshold", "number", wr), C.fmt_sci),
                {True: "passed", False: "**FAILED**"}.get(get(ref, "passed", "boolean", wr), "passed not recorded"))
        rows.append(("reference cross-check (one stream against the host reference in double)", status, wr))
    table = C.md_table(["group", "check", "value relation threshold: result", "field"],
                       [[c["group"], c["name"], c["text"], code(c["where"])] for c in checks(rec)])
    lines = ["#### Verdict and warnings", "", field_table(rows), "", "Checks (`%s.checks`):" % wv, "", table, ""]
    warnings = run_warnings(rec)
    if warnings is ABSENT:
        lines += ["Warnings (`%s.warnings`): %s." % (w, NOT_RECORDED), ""]
    elif not warnings:
        lines += ["Warnings (`%s.warnings`): none." % w, ""]
    else:
        lines += ["Warnings (`%s.warnings`):" % w, ""] + ["- **WARNING:** " + t for t in warnings] + [""]
    return lines


def run_section(rec, number):
    return ([run_heading(rec, number), ""] + configuration(rec) + throughput(rec) + stability_table(rec)
            + memory(rec) + accuracy(rec) + verdict(rec))


# ---------------------------------------------------------------------------
# The whole page


def by_file(records):
    files = OrderedDict()
    for r in records:
        files.setdefault(r.path, []).append(r)
    return files


def same_commit(a, b):
    """Commits written at different lengths (12 hex digits, 40) are one when
    one is a prefix of the other."""
    return a.startswith(b) or b.startswith(a)


NUMBER = re.compile(r"[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")


def page_warnings(records, files, skipped, mismatches):
    out = []
    dirty = [recs[0] for recs in files.values() if get(recs[0].env, "git_dirty", "boolean", "environment") is True]
    if dirty:
        out.append("**WARNING: UNCOMMITTED CHANGES.** %d of %d file(s) were built from a tree with uncommitted "
                   "changes (`environment.git_dirty`: true), so their commit does not identify the code: %s." % (
                       len(dirty), len(files), listed("%s (commit %s)" % (code(r.file), r.git_commit) for r in dirty)))
    unknown = [recs[0] for recs in files.values() if get(recs[0].env, "git_dirty", "boolean", "environment") is ABSENT]
    if unknown:
        out.append("**WARNING:** whether the tree had uncommitted changes is not recorded (`environment.git_dirty` "
                   "absent: older files) for %d file(s): %s." % (len(unknown), listed(code(r.file) for r in unknown)))
    commits = OrderedDict()
    for recs in files.values():
        c = recs[0].git_commit
        key = next((k for k in commits if same_commit(k, c)), c)
        commits.setdefault(key, []).append(recs[0].file)
    if len(commits) > 1:
        out.append("**WARNING: THE FILES COME FROM %d DIFFERENT COMMITS:** %s." % (len(commits), "; ".join(
            "%s: %s" % (code(c), listed(code(f) for f in fs)) for c, fs in commits.items())))
    for recs in files.values():
        if recs[0].status != "completed":
            out.append("**WARNING:** %s has status %s: its runs describe the state at the stop." % (
                code(recs[0].file), recs[0].status))
        failed = get(recs[0].document, "failed_points", "array", "")
        if failed not in (ABSENT, []):
            out.append("**WARNING:** %s: %d sweep point(s) failed to start (`failed_points`)." % (
                code(recs[0].file), len(failed)))
    for r in records:
        if not r.passed:
            out.append("**WARNING: verification FAILED** in %s runs[%d]: %s." % (
                code(r.file), r.run_index, ", ".join(r.failed_checks) or "verification.passed is false"))
    missing_fom = C.runs_without_fom(records)
    if missing_fom:
        out.append("**WARNING:** no figure of merit (null: non-finite) in %s." % listed(
            "%s runs[%d]" % (code(r.file), r.run_index) for r in missing_fom))
    for m in mismatches:
        out.append("**WARNING: strong-scaling checksums differ** (%s): %s" % (
            scaling.describe(m.group), m.message.replace("\n", ";")))
    # The runs' own warnings, those that differ only in their numbers as one.
    texts = OrderedDict()
    for r in records:
        ws = run_warnings(r)
        for t in ([] if ws is ABSENT else ws):
            texts.setdefault(NUMBER.sub("#", t), []).append((t, "%s runs[%d]" % (code(r.file), r.run_index)))
    for items in texts.values():
        where = [w for _t, w in items]
        text = items[0][0]
        if len({t for t, _w in items}) > 1:
            text += " (the numbers differ between the runs: each run's own are in its section)"
        out.append("**WARNING** (`runs[].warnings`, %d run(s): %s): %s" % (len(where), listed(where, 3), text))
    if skipped:
        out.append("Skipped %d file(s) that are not mosaic_miniapp results: %s." % (
            len(skipped), listed((code(p) for p in skipped), 10)))
    return out


def summary_table(records, numbers):
    headers = ["run", "file", "runs[]", "sweep point", "d", "r", "dtype", "mode", "ranks", "streams", "kernel",
               "FOM (update samples/s)", "efficiency", "verification", "warnings"]
    rows = []
    for r in records:
        ws = run_warnings(r)
        kernel = r.kernel + (" k=%d" % r.block_size if r.kernel == "blocked" else "")
        eff = ""
        if r.efficiency is not None:
            eff = C.fmt_eff(r.efficiency) + ("" if r.efficiency_base_ranks == 1 else
                                              " (base %d ranks)" % r.efficiency_base_ranks)
        rows.append([numbers[id(r)], r.file, r.run_index, r.sweep_label, r.d, r.r, r.dtype, r.mode, r.ranks,
                     r.streams_total, kernel, C.fmt_rate(r.fom), eff, r.verification,
                     NOT_RECORDED if ws is ABSENT else len(ws)])
    return C.md_table(headers, rows)


class Figures:
    """The figures drawn for the page, numbered, each with the records it
    shows (for its caption)."""

    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.items = []

    def add(self, path, title, records):
        self.items.append((path, title, records))
        return self.reference(len(self.items))

    def reference(self, number):
        path, title, records = self.items[number - 1]
        rel = os.path.relpath(path, self.out_dir)
        return ["![%s](%s)" % (title.replace("]", ")").replace("[", "("), rel.replace(os.sep, "/")), "",
                "*Figure %d: %s. %s* (`%s`)" % (number, title, caption(records), rel), ""]


def caption(records):
    """Machine, commit and deck of the records a figure shows: the figures'
    own caption (C.provenance), up to 8 of each."""
    return C.provenance(records, max_items=8, decks=True) + "."


def plot_throughput(records, out_dir):
    """Every run's figure of merit (update samples/s) and end-to-end
    samples/s on one axis, a row per run; red: failed or interrupted."""
    plt = C.pyplot()
    n = len(records)
    labels = [breakdown.short_label(r, records) for r in records]
    labels = [t + " #%d" % r.run_index if labels.count(t) > 1 else t for t, r in zip(labels, records)]
    fig, ax = plt.subplots(figsize=(10.0, max(3.4, 1.8 + 0.3 * n)))
    values = []
    drawn = set()
    for i, r in enumerate(records):
        ok = r.passed and r.status == "completed"
        if not C.isnan(r.fom):
            label = "update samples/s (figure of merit)" + ("" if ok else ", verification FAILED or interrupted")
            ax.plot([r.fom], [i], "o", color="tab:blue" if ok else "tab:red",
                    label=None if label in drawn else label)
            drawn.add(label)
            ax.annotate(C.fmt_rate(r.fom), (r.fom, i), textcoords="offset points", xytext=(6, 3), fontsize=7)
            values.append(r.fom)
        if not C.isnan(r.end_to_end):
            label = "end-to-end samples/s"
            ax.plot([r.end_to_end], [i], "s", mfc="none", color="0.3", label=None if label in drawn else label)
            drawn.add(label)
            values.append(r.end_to_end)
    values = [v for v in values if v > 0 and math.isfinite(v)]
    if values and max(values) / min(values) >= 10:
        ax.set_xscale("log")
        ax.set_xlim(min(values) / 1.5, max(values) * 2.5)
        C.plain_log_labels(ax, "x")
    else:
        ax.set_xlim(0, max(values + [1.0]) * 1.25)
        ax.xaxis.set_major_formatter(C.matplotlib_module("matplotlib.ticker").FuncFormatter(
            lambda v, _pos: C.fmt_rate(v)))
    ax.set_yticks(range(n))
    ax.set_yticklabels(labels, fontsize=7 if n > 12 else 8)
    ax.set_ylim(n - 0.5, -0.5)
    ax.tick_params(axis="x", labelsize=8)
    ax.set_xlabel("throughput, all ranks [samples/s]")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    if drawn:
        ax.legend(fontsize=7, loc="lower right")
    title = "Throughput per run: figure of merit and end-to-end samples/s"
    return C.save_figure(fig, os.path.join(out_dir, THROUGHPUT_FIGURE), title, records), title


def scaling_section(records, out_dir, plots, figures):
    """The weak and strong series at two or more rank counts: analysis.scaling's
    sections (scaling.analyse: the same grouping, tables, checksum check and
    figures); returns (lines, checksum reports that disagree)."""
    def figure_text(paths, g, which, shown):
        out = []
        for path, what in zip(paths, ("throughput vs ranks", "parallel efficiency vs ranks")):
            out += figures.add(path, "%s scaling, %s: %s" % (which.capitalize(), what, scaling.describe(g, shown)),
                               g.records)
        return out
    text, _groups, reports, _paths = scaling.analyse(records, out_dir, plots=plots, level=3,
                                                     figure_text=figure_text, series_only=True)
    lines = ["## Scaling efficiency", ""]
    if text:
        lines += text.splitlines() + [""]
    else:
        lines += ["No weak or strong series at two or more rank counts in the inputs (runs that differ only in "
                  "the MPI rank count, grouped as analysis.scaling does): no scaling efficiency.", ""]
    return lines, [r for r in reports if not r.ok]


def saturation_section(records, out_dir, plots, figures):
    """The runs of a streams.per_rank sweep (C.is_streams_sweep):
    analysis.saturation's section (its tables, saturation point, memory per
    stream and figures); [] when the inputs hold none."""
    runs = [r for r in records if C.is_streams_sweep(r)]
    if not runs:
        return []
    lines = ["## Streams-per-device saturation", "",
             "Runs of a streams.per_rank sweep (%s), as `python3 -m analysis.saturation` shows them." % listed(
                 code(f) for f in OrderedDict.fromkeys(r.file for r in runs)), ""]
    if not saturation.saturation_curves(runs):
        return lines + ["No curve: no runs among them differ only in the streams per rank.", ""]

    def figure_text(path, sat):
        k = dict(sat.key)
        return figures.add(path, "Streams-per-device saturation: d=%s, r=%s, %s" % (k["d"], k["r"], k["dtype"]),
                           sat.records)
    text, _sats, _paths = saturation.analyse(runs, out_dir, plots=plots, level=2, figure_text=figure_text)
    # Its own heading is the section's.
    return lines + text.splitlines()[2:] + [""]


def sweep_section(records, out_dir, figures):
    """analysis.sweep's figures (throughput vs d, vs r, blocked vs
    sequential), where the inputs hold such curves; sweep leaves the runs of
    a streams.per_rank sweep to the saturation section."""
    _text, found, paths = sweep.analyse(records, out_dir, plots=True)
    if not paths:
        return []
    lines = ["## Throughput sweeps", "",
             "Curves of runs that differ only in d or in r (analysis.sweep; its tables: `python3 -m analysis.sweep` "
             "on the same files).", ""]
    # sweep.analyse draws one figure per section with curves, in its order,
    # each followed by its blocked vs sequential figure when it has one.
    sections = [(name, [r for c in cs for r in c.records]) for name, cs in found.items() if cs]
    k = -1
    for path in paths:
        pair = os.path.basename(path).startswith("sweep_blocked_vs_sequential")
        if not pair:
            k += 1
        name, recs = sections[k]
        lines += figures.add(path, name if not pair else "Blocked vs sequential update kernel (%s)" % name, recs)
    return lines


def stability_section(records, out_dir, figures):
    _text, groups, paths = stability.analyse(records, out_dir, plots=True)
    lines = ["## Diagnostics over the run", "",
             "Orthonormality error, cond(S), projector distance to the truth and clamped steps against the timed "
             "step (`runs[].diagnostics.series`), runs of one deck overlaid (analysis.stability).", ""]
    for group, path in zip(groups, paths):
        lines += figures.add(path, "Diagnostics time series, deck %s" % group[0].deck_name, group)
    return lines


def build(records, out_dir, plots, skipped, argv):
    """The page's text; draws the figures (plots) first, so that a missing
    matplotlib stops before anything is written."""
    C.assign_efficiencies(records)
    files = by_file(records)
    numbers = {id(r): k + 1 for k, r in enumerate(records)}
    # Every file's and run's section first: they read (and check) every
    # field, so malformed input is refused before any figure is drawn.
    sections = []
    for path, recs in files.items():
        try:
            text = ["## File: `%s`" % recs[0].file, "", "Path: `%s`; %d run(s)." % (path, len(recs)), ""]
            text += invocation(recs[0]) + hardware(recs[0]) + software(recs[0]) + source_code(recs[0])
            for r in recs:
                text += run_section(r, numbers[id(r)])
        except C.FieldError as e:
            raise C.AnalysisError("%s: %s" % (path, e)) from None
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise C.AnalysisError("%s: missing or malformed field %s" % (path, e)) from None
        sections += text
    figures = Figures(out_dir)
    figure_lines = []
    if plots:
        path, title = plot_throughput(records, out_dir)
        figure_lines = figures.add(path, title, records)
    scaling_lines, mismatches = scaling_section(records, out_dir, plots, figures)
    extra = saturation_section(records, out_dir, plots, figures)
    if plots:
        extra += sweep_section(records, out_dir, figures)
        extra += stability_section(records, out_dir, figures)

    counts = "; ".join("%d %s" % (n, what) for what, n in C.passed_counts(records))
    warnings = page_warnings(records, files, skipped, mismatches)
    lines = [
        "# mosaic_miniapp results report", "",
        "Made by `python3 -m analysis.report %s` from %d result file(s), %d run(s): %s. Every value below is read "
        "from the result files (`docs/result.schema.json`); the field it comes from is named beside it, and a field "
        "a file does not hold is \"%s\"." % (
            " ".join(shlex.quote(a) for a in argv), len(files), len(records), counts, NOT_RECORDED), "",
        "## Warnings", "",
    ]
    lines += ["- " + w for w in warnings] if warnings else ["None."]
    lines += ["", "## Runs", "", summary_table(records, numbers), "",
              "FOM: the figure of merit, update samples/s over all ranks (`runs[].figure_of_merit.value`). "
              "Efficiency: see Scaling efficiency.", "", "## Throughput", ""]
    lines += figure_lines or ["Figures not drawn (--no-plots)." if not plots else ""]
    lines += scaling_lines + extra + sections
    return "\n".join(lines).rstrip("\n") + "\n", figures, warnings


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python3 -m analysis.report",
        description="The results page a collaborator sends: REPORT_DIR/README.md (one Markdown page: per file "
                    "the command, deck, time, hardware, software and git commit; per run the configuration, "
                    "throughput, scaling efficiency, stability diagnostics, memory, accuracy, verdict and "
                    "warnings) and PNG figures beside it, from mosaic_miniapp result files alone.")
    C.add_common_arguments(p, out=False)
    p.add_argument("--out", metavar="REPORT_DIR", required=True,
                   help="directory for README.md and the figures (made if needed; files of the same names are "
                        "replaced)")
    p.add_argument("--no-plots", action="store_true",
                   help="the page only, without figures (needs neither numpy nor matplotlib)")
    args = p.parse_args(argv)
    C.check_output_dir(args.out)
    page = os.path.join(args.out, PAGE)
    if os.path.isdir(page):
        raise C.AnalysisError("%s: is a directory (the report's page goes there)" % page)
    skipped = []
    records = C.load_records(args.inputs, validate=args.validate, skipped=skipped)
    text, figures, warnings = build(records, args.out, not args.no_plots, skipped,
                                    sys.argv[1:] if argv is None else argv)
    C.write_text(page, text)
    print("analysis.report: wrote %s: %d run(s) from %d file(s), %d figure(s), %d warning(s)" % (
        page, len(records), len({r.path for r in records}), len(figures.items), len(warnings)))
    return 0


if __name__ == "__main__":
    sys.exit(C.main_wrapper("analysis.report", main, None))
