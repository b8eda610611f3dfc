"""Shared pieces of the analysis commands: reading result files into flat run
records, grouping runs for scaling, formatting tables, and figure captions.

A *record* is one entry of a result file's runs[] (one sweep point of one
invocation) together with the file-level data it needs (environment, deck).

Runs are repeats of one configuration only when everything that changes their
performance agrees: the problem and decomposition fields each command keys on,
and the *configuration* fields (CONFIGURATION_FIELDS, Record.configuration):
the update kernel, block size, block GEMM, re-orthonormalization, the
precision solve, the Kokkos backend and its concurrency; and the *deck
fields* (Record.deck_fields): the deck file's name and every other setting
of resolved_deck.algorithm (the rates eta_*, gamma, ...), so that runs of
two decks, or of one deck at two rates, are never one median. Fields that
older result files lack get the defaults documented in Record.
"""

import argparse
import csv
import gzip
import io
import json
import math
import os
import sys
import textwrap
from collections import OrderedDict

# The schema_version docs/result.schema.json describes, and the versions
# load_records reads (docs/RESULT-FORMAT.md): version 1 files lack the
# memory peak fields (Record.peak_allocated_* None) and are not validated.
SCHEMA_VERSION = 2
SUPPORTED_SCHEMA_VERSIONS = (1, 2)
GPU_SPACES = ("Cuda", "HIP", "SYCL", "OpenMPTarget")
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA_PATH = os.path.join(REPO_ROOT, "docs", "result.schema.json")


class AnalysisError(Exception):
    """A problem with the input files, reported as one line and exit status 2."""


# ---------------------------------------------------------------------------
# Reading result files


def _num(v):
    """JSON number (or null, which the writer uses for inf/nan) -> float."""
    if v is None:
        return math.nan
    return float(v)


def compact(v):
    """A JSON value written the way the mini-app's sweep descriptions write it."""
    if isinstance(v, str):
        return v
    return json.dumps(v, separators=(",", ":"))


def machine_label(env):
    """The device the run's kernels ran on: the GPU model when Kokkos' default
    execution space is a GPU space, else the CPU model."""
    space = str(env.get("kokkos_default_execution_space", ""))
    gpus = env.get("gpus") or []
    if is_gpu_run(env):
        models = list(OrderedDict.fromkeys(str(g.get("model", "?")) for g in gpus))
        return " / ".join(models) if models else space + " device"
    cpu = str(env.get("cpu_model", "")).strip()
    return cpu if cpu else "unknown CPU"


def is_gpu_run(env):
    """True when Kokkos' default execution space is a GPU space."""
    space = str(env.get("kokkos_default_execution_space", ""))
    return any(s in space for s in GPU_SPACES)


def _count(v):
    """An integer JSON value (not a boolean) >= 1, else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 1 else None


def run_threads(env):
    """The threads per rank of a run on a host backend: Kokkos' default
    execution space's concurrency (environment.kokkos_default_concurrency,
    or, where that is absent, environment.ranks[].concurrency when every rank
    has the same); None when not recorded."""
    threads = _count(env.get("kokkos_default_concurrency"))
    if threads is None:
        ranks = env.get("ranks") if isinstance(env.get("ranks"), list) else []
        values = {_count(r.get("concurrency")) for r in ranks if isinstance(r, dict)}
        threads = values.pop() if len(values) == 1 else None
    return threads


def machine_with_cores(env, ranks=None):
    """machine_label(), with what the run used when its kernels ran on the
    CPU: its MPI ranks (`ranks`, the run's decomposition.ranks; else the
    length of environment.ranks) x the threads per rank (run_threads),
    "Intel(R) Xeon(R) Processor, 2 ranks x 1 thread". Not the machine's
    cores (environment.cpu_cores_online): a run may use fewer. What a file
    does not record is left out ("..., 2 ranks"; just the model when
    neither is recorded); a GPU run is its GPU model."""
    text = machine_label(env)
    if is_gpu_run(env):
        return text
    if _count(ranks) is None:
        listed = env.get("ranks")
        ranks = len(listed) if isinstance(listed, list) and listed else None
    threads = run_threads(env)
    parts = []
    if ranks is not None:
        parts.append("%d rank%s" % (ranks, "" if ranks == 1 else "s"))
    if threads is not None:
        parts.append("%d thread%s" % (threads, "" if threads == 1 else "s"))
    return text + (", " + " x ".join(parts) if parts else "")


def kernel_from_deck(alg):
    """The runs[].kernel object of a file written before the mini-app recorded
    it: an integer algorithm.block_size k > 1 ran the blocked update with k,
    anything else (0, 1, absent) the sequential kernel (k = 1); the block GEMM
    was not recorded (None); re-orthonormalization followed an integer
    algorithm.reorthonormalize_every K (K > 0: "every K steps", else "never"),
    which is how the mini-app words it in runs[].kernel."""
    k = alg.get("block_size")
    blocked = isinstance(k, int) and k > 1
    every = alg.get("reorthonormalize_every")
    return {"update": "blocked" if blocked else "sequential", "block_size": k if blocked else 1, "block_gemm": None,
            "reorthonormalize": "every %d steps" % every if isinstance(every, int) and every > 0 else "never"}


def accuracy_note(text):
    """What a PASSED verdict adds about the accuracy, from
    runs[].verification.accuracy: "" for "checked" (every accuracy check
    judged) and for None (older files do not record it: nothing is said);
    "accuracy not checked" for "not checked (...)" (run.accuracy:
    throughput_only); "accuracy not judged: ..." for "not judged; ..." (no
    check could be judged); "accuracy partly judged: <text>" otherwise
    ("clamped steps only; the source has no truth to track")."""
    if text is None or text == "checked":
        return ""
    if text.startswith("not checked"):
        return "accuracy not checked"
    if text.startswith("not judged"):
        return "accuracy not judged: " + text[len("not judged"):].lstrip(";: ")
    return "accuracy partly judged: " + text


# The kinds of accuracy verdict of a PASSED run (accuracy_kind), in the order
# summaries name them.
ACCURACY_KINDS = OrderedDict([
    ("checked", "PASSED with accuracy checked"),
    ("not checked", "PASSED throughput-only (accuracy not checked)"),
    ("partly", "PASSED with accuracy partly judged"),
    ("not judged", "PASSED with accuracy asked for but not judged"),
    ("not recorded", "PASSED, accuracy verdict not recorded (older files)"),
])


def accuracy_kind(text):
    """The ACCURACY_KINDS key of a runs[].verification.accuracy text (None:
    not recorded)."""
    if text is None:
        return "not recorded"
    if text == "checked":
        return "checked"
    if text.startswith("not checked"):
        return "not checked"
    if text.startswith("not judged"):
        return "not judged"
    return "partly"


def not_recorded(v):
    """A configuration value for keys and tables: None (not applicable, as the
    block GEMM of the sequential kernel, or not recorded) as "n/a"."""
    return "n/a" if v is None else str(v)


# ---------------------------------------------------------------------------
# Checked access to result documents: a field that is missing or of another
# JSON type than expected is a FieldError naming its path in the document
# ("runs[0].resolved_deck.streams: expected an object, found an array"),
# which load_records reports with the file's name, never a Python error.


class FieldError(AnalysisError):
    """A missing or mistyped field of a result document; the message starts
    with the field's path in the document (load_records adds the file)."""


_REQUIRED = object()
_KIND_TEXT = {"object": "an object", "array": "an array", "string": "a string", "number": "a number",
              "integer": "an integer", "boolean": "a boolean", "null": "null"}


def json_type(value):
    """How a message names a parsed JSON value: its type, and a short text of
    a scalar's value ("a number (0.5)", "null", "an array")."""
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    kind = "a boolean" if isinstance(value, bool) else "a string" if isinstance(value, str) else "a number"
    text = json.dumps(value)
    return "%s (%s)" % (kind, text if len(text) <= 40 else text[:37] + "...")


def _is_kind(value, kind):
    if kind == "null":
        return value is None
    if isinstance(value, bool):
        return kind == "boolean"
    if kind == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    return isinstance(value, {"object": dict, "array": list, "string": str, "number": (int, float),
                              "boolean": bool}[kind])


def expect(value, kinds, where):
    """value when its JSON type is one of `kinds` ("object", "array",
    "string", "number", "integer", "boolean", "null"; a name or a tuple),
    else FieldError "<where>: expected an object, found a number (0.5)"."""
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    if any(_is_kind(value, k) for k in kinds):
        return value
    raise FieldError("%s: expected %s, found %s" % (where, " or ".join(_KIND_TEXT[k] for k in kinds),
                                                    json_type(value)))


def field(parent, key, kinds, where="", default=_REQUIRED):
    """parent[key], checked by expect(), for an object `parent` at path
    `where` ("" for the top level); an absent key gives `default`, or, when
    there is none, FieldError "<where>.<key>: missing"."""
    path = "%s.%s" % (where, key) if where else key
    if key not in parent:
        if default is _REQUIRED:
            raise FieldError("%s: missing" % path)
        return default
    return expect(parent[key], kinds, path)


# The diagnostics series values the commands read (stability, accuracy,
# noise), checked where an entry has them: {name: JSON types}.
SERIES_FIELDS = OrderedDict([
    ("sample_index", ("integer",)), ("orthonormality_error_max", ("number", "null")),
    ("s_condition_max", ("number", "null")), ("clamped_steps", ("integer", "null")),
    ("accuracy", ("object", "null")),
])
SERIES_ACCURACY_FIELDS = ("projector_distance_max", "projector_distance_mean")


def check_series_entry(entry, where):
    """A runs[].diagnostics.series entry: an object with an integer step and
    the SERIES_FIELDS it has of their types; FieldError otherwise."""
    expect(entry, "object", where)
    field(entry, "step", "integer", where)
    for name, kinds in SERIES_FIELDS.items():
        field(entry, name, kinds, where, None)
    acc = entry.get("accuracy")
    if acc is not None:
        for name in SERIES_ACCURACY_FIELDS:
            field(acc, name, ("number", "null"), where + ".accuracy", None)
    return entry


# The key fields, besides the problem and the decomposition, that change the
# performance of a run (Record.configuration). "concurrency" is that of Kokkos'
# default execution space: the threads per rank with OpenMP, not a thread count
# on a GPU.
CONFIGURATION_FIELDS = ("kernel", "block size", "block GEMM", "reorthonormalize", "precision solve", "backend",
                        "concurrency")
# Key fields that headings and legends name only where they differ between
# the groups or curves shown; the others are said once ("Every curve: ...").
SHOWN_WHEN_VARYING = ("mode",) + CONFIGURATION_FIELDS

# The deck fields of a key (Record.deck_fields): the deck file's name and the
# settings of resolved_deck.algorithm that no other key field holds, each as
# "algorithm.<name>". Named in headings and legends only where they differ.
DECK_FIELD = "deck"
ALGORITHM_PREFIX = "algorithm."
# resolved_deck.algorithm settings already in the key under another name: the
# variant ("algorithm"), the precision solve and the kernel's block size and
# re-orthonormalization (runs[].kernel, or kernel_from_deck).
ALGORITHM_IN_KEY = ("covariance_update", "subspace_direction", "precision_solve", "block_size",
                    "reorthonormalize_every")


def first_stepped_row(steps, where):
    """The row at which a run's streams took their first step: the samples
    their init consumed (steps.init_samples, or steps.init_samples_used
    where ALGORITHM.md section 3's window grew). A run whose streams started
    at different rows has no one such row: an AnalysisError."""
    used = steps.get("init_samples_used")
    if isinstance(used, dict) and used.get("min") != used.get("max"):
        raise AnalysisError("%s: the streams' init windows differ (steps.init_samples_used %s to %s samples): "
                            "their steps start at different rows, and this comparison needs one" %
                            (where, used.get("min"), used.get("max")))
    return int(used["min"]) if isinstance(used, dict) else int(steps["init_samples"])


def is_deck_field(name):
    return name == DECK_FIELD or name.startswith(ALGORITHM_PREFIX)


# resolved_deck.algorithm keys added after result files were written, with
# the value those runs had in effect (ALGORITHM.md section 9's keys: a
# sequential run). init_max_samples, also added later, is its default, 64
# init_samples.
ALGORITHM_ADDED = {"time_segments": 1, "segment_warmup": "auto", "segment_warmup_init": "data",
                   "segment_tolerance": "auto", "segment_max_passes": "auto", "segment_gauge": "carry"}


def algorithm_settings(alg, r):
    """(("algorithm.<name>", value text), ...) of resolved_deck.algorithm, by
    name, less ALGORITHM_IN_KEY, with the keys of ALGORITHM_ADDED an older
    file lacks at the values they imply. init_samples, unset in a deck,
    resolves to 2 r, so it follows r along a rank sweep: written "2r" where
    it is 2 r, and a sweep over r is one curve; init_max_samples, unset,
    resolves to 64 init_samples: written "64 init_samples" where it is."""
    alg = dict(ALGORITHM_ADDED, **alg)
    n0 = alg.get("init_samples")
    if "init_max_samples" not in alg and isinstance(n0, int) and not isinstance(n0, bool):
        alg["init_max_samples"] = 64 * n0
    out = []
    for name in sorted(alg):
        if name in ALGORITHM_IN_KEY:
            continue
        v = alg[name]
        plain = isinstance(v, int) and not isinstance(v, bool)
        if name == "init_samples" and plain and v == 2 * r:
            text = "2r"
        elif name == "init_max_samples" and plain and isinstance(n0, int) and v == 64 * n0:
            text = "64 init_samples"
        else:
            text = compact(v)
        out.append((ALGORITHM_PREFIX + name, text))
    return tuple(out)


class Record:
    """One run (one runs[] entry) of one result file, flattened.

    Every field read is checked for its JSON type (field(), expect()): a
    missing or mistyped one is a FieldError naming its path in the document,
    e.g. "runs[0].timer_coverage: expected an object, found a number (0.5)".
    So are the diagnostics series entries (objects, with an integer step and
    numbers or nulls where the commands read them) and the timers (objects of
    numbers), which the commands read later.

    Defaults for fields that older result files (and the synthetic test
    fixtures) lack: no runs[].kernel -> kernel_from_deck(); no
    kernel.block_gemm -> None; no kernel.block_size_from -> "deck"; no
    algorithm.precision_solve -> "dense" (the only solve before the
    maintained one); no environment.kokkos_default_concurrency -> None; no
    environment.kokkos_default_execution_space -> "" (shown as "n/a"); no
    verification.accuracy -> None (nothing said about the accuracy)."""

    def __init__(self, path, doc, index):
        w = "runs[%d]" % index
        run = expect(doc["runs"][index], "object", w)
        env = field(doc, "environment", "object")
        for i, gpu in enumerate(field(env, "gpus", ("array", "null"), "environment", None) or []):
            expect(gpu, "object", "environment.gpus[%d]" % i)
        deck = field(run, "resolved_deck", "object", w)
        wd = w + ".resolved_deck"
        dec = field(run, "decomposition", "object", w)
        wdec = w + ".decomposition"
        self.path = path
        self.file = os.path.basename(path)
        # The parsed document and this run's entry, for fields no command
        # but analysis.report reads (command line, memory, counts, warnings).
        self.document = doc
        self.run = run
        self.run_index = index
        self.run_count = len(doc["runs"])
        self.deck_path = field(doc, "deck_path", "string")
        self.overrides = [expect(o, "string", "overrides[%d]" % i)
                          for i, o in enumerate(field(doc, "overrides", "array", "", []))]
        self.status = field(doc, "status", "string")
        self.env = env
        self.hostname = field(env, "hostname", "string", "environment")
        self.machine = machine_label(env)
        self.backend = field(env, "kokkos_default_execution_space", "string", "environment", "")
        self.git_commit = field(env, "git_commit", "string", "environment")

        problem = field(deck, "problem", "object", wd)
        self.d = int(field(problem, "d", "integer", wd + ".problem"))
        self.r = int(field(problem, "rank", "integer", wd + ".problem"))
        self.dtype = field(run, "dtype", "string", w)
        self.mode = field(dec, "mode", "string", wdec)
        self.ranks = int(field(dec, "ranks", "integer", wdec))
        if self.ranks < 1:
            raise FieldError("%s.ranks: expected an integer >= 1, found %d" % (wdec, self.ranks))
        self.streams_total = int(field(dec, "total_streams", "integer", wdec))
        self.spr_min = int(field(dec, "streams_per_rank_min", "integer", wdec))
        self.spr_max = int(field(dec, "streams_per_rank_max", "integer", wdec))
        self.imbalance = float(field(dec, "imbalance", "number", wdec))
        # Streams per rank: the deck's per_rank in weak mode, total/ranks in strong mode.
        streams = field(deck, "streams", "object", wd, {})
        per_rank = field(streams, "per_rank", ("number", "null"), wd + ".streams", None)
        if self.mode == "weak" and per_rank is not None:
            self.streams_per_rank = float(per_rank)
        else:
            self.streams_per_rank = self.streams_total / self.ranks
        self.steps = int(field(field(run, "steps", "object", w), "timed", "integer", w + ".steps"))
        self.sweep_point = dict(field(run, "sweep_point", ("object", "null"), w, None) or {})
        self.resolved_deck = deck
        alg = field(deck, "algorithm", "object", wd, {})
        wa = wd + ".algorithm"
        self.algorithm = "%s/%s" % (field(alg, "covariance_update", "string", wa, "exact"),
                                    field(alg, "subspace_direction", "string", wa, "precision"))
        self.precision_solve = field(alg, "precision_solve", "string", wa, "dense")
        self.algorithm_settings = algorithm_settings(alg, self.r)
        kernel = field(run, "kernel", ("object", "null"), w, None)
        wk = w + ".kernel"
        if kernel is None:
            kernel, wk = kernel_from_deck(alg), wa
        self.kernel = field(kernel, "update", "string", wk)
        self.block_size = int(field(kernel, "block_size", "integer", wk))
        self.block_size_from = field(kernel, "block_size_from", "string", wk, "deck")
        self.block_gemm = field(kernel, "block_gemm", ("string", "null"), wk, None)
        self.reorthonormalize = field(kernel, "reorthonormalize", "string", wk)
        concurrency = field(env, "kokkos_default_concurrency", ("integer", "null"), "environment", None)
        self.concurrency = None if concurrency is None else int(concurrency)

        # Seconds per phase, {phase: {"max_s", "min_s", "mean_s"}} over the
        # ranks (analysis.breakdown); older files lack some phases.
        self.timers = dict(field(run, "timers", ("object", "null"), w, None) or {})
        for phase, timer in self.timers.items():
            wt = "%s.timers.%s" % (w, phase)
            for stat in ("max_s", "min_s", "mean_s"):
                field(expect(timer, "object", wt), stat, "number", wt)
        coverage = field(run, "timer_coverage", ("object", "null"), w, None) or {}
        coverage = field(coverage, "accounted_fraction", ("number", "null"), w + ".timer_coverage", None)
        self.timer_coverage = None if coverage is None else float(coverage)

        self.fom = _num(field(field(run, "figure_of_merit", "object", w), "value", ("number", "null"),
                              w + ".figure_of_merit"))
        self.end_to_end = _num(field(field(run, "throughput", "object", w), "end_to_end_samples_per_second",
                                     ("number", "null"), w + ".throughput"))

        diag = field(run, "diagnostics", "object", w)
        wf = w + ".diagnostics.final"
        fin = field(diag, "final", "object", w + ".diagnostics")
        self.orthonormality_error = _num(field(fin, "orthonormality_error_max", ("number", "null"), wf))
        self.s_condition = _num(field(fin, "s_condition_max", ("number", "null"), wf))
        self.clamped_steps = int(field(fin, "clamped_steps", "integer", wf))
        acc = field(fin, "accuracy", ("object", "null"), wf, None) or {}
        self.projector_distance = _num(field(acc, "projector_distance_max", ("number", "null"), wf + ".accuracy",
                                             None))
        self.series = list(field(diag, "series", "array", w + ".diagnostics"))
        for i, entry in enumerate(self.series):
            check_series_entry(entry, "%s.diagnostics.series[%d]" % (w, i))

        # runs[].memory (docs/result.schema.json): the bytes of one stream's
        # state; each rank's peak of the bytes allocated through Kokkos in
        # the execution space's memory space, named by peak_allocated_space
        # ("Host", "Cuda"; the point's own peak, exact: no CUDA context or
        # other process), peak_allocated_bytes_max its max over the ranks,
        # both None in schema_version 1 files (their device_bytes_in_use_max,
        # cudaMemGetInfo at the end of the run, was not a peak and is not
        # read here: docs/RESULT-FORMAT.md); and each rank's peak resident
        # memory (VmHWM since the process started: in a sweep, it includes
        # the points run before).
        wm = w + ".memory"
        memory = field(run, "memory", ("object", "null"), w, None) or {}
        state = field(memory, "state_bytes_per_stream", ("integer", "null"), wm, None)
        self.state_bytes_per_stream = None if state is None else int(state)
        self.peak_allocated_bytes_per_rank = [
            int(expect(v, "integer", "%s.peak_allocated_bytes_per_rank[%d]" % (wm, i)))
            for i, v in enumerate(field(memory, "peak_allocated_bytes_per_rank", ("array", "null"), wm, None) or [])]
        self.peak_allocated_bytes_max = (max(self.peak_allocated_bytes_per_rank)
                                         if self.peak_allocated_bytes_per_rank else None)
        self.peak_allocated_space = field(memory, "peak_allocated_space", ("string", "null"), wm, None)
        self.peak_rss_bytes_per_rank = [
            int(expect(v, "integer", "%s.peak_rss_bytes_per_rank[%d]" % (wm, i)))
            for i, v in enumerate(field(memory, "peak_rss_bytes_per_rank", ("array", "null"), wm, None) or [])]

        wv = w + ".verification"
        ver = field(run, "verification", "object", w)
        self.passed = field(ver, "passed", "boolean", wv)
        # What the accuracy checks covered ("checked", "not checked (...)", "clamped steps only; ...").
        self.accuracy_text = field(ver, "accuracy", "string", wv, None)
        self.failed_checks = []
        for i, c in enumerate(field(ver, "checks", "array", wv)):
            wc = "%s.checks[%d]" % (wv, i)
            if not field(expect(c, "object", wc), "passed", "boolean", wc):
                self.failed_checks.append(field(c, "name", "string", wc))
        self.checksums = OrderedDict()
        for i, c in enumerate(field(ver, "per_stream_checksums", "array", wv)):
            wc = "%s.per_stream_checksums[%d]" % (wv, i)
            sid = int(field(expect(c, "object", wc), "stream_id", "integer", wc))
            self.checksums[sid] = field(c, "checksum", ("number", "string", "null"), wc)

        # Filled by assign_efficiencies().
        self.efficiency = None
        self.efficiency_base_ranks = None

    @property
    def configuration(self):
        """(field, value) pairs of CONFIGURATION_FIELDS, as text, for keys."""
        return tuple(zip(CONFIGURATION_FIELDS, (
            self.kernel, str(self.block_size), not_recorded(self.block_gemm), self.reorthonormalize,
            self.precision_solve, self.backend or "n/a", not_recorded(self.concurrency))))

    @property
    def deck_fields(self):
        """(field, value) pairs of the deck fields, as text, for keys: the
        deck file's name and algorithm_settings()."""
        return ((DECK_FIELD, self.deck_name),) + self.algorithm_settings

    @property
    def machine_text(self):
        """The device in words for table headings: the GPU model, or the CPU
        model with the run's ranks and threads per rank (machine_with_cores),
        e.g. "Intel(R) Xeon(R) Processor, 2 ranks x 1 thread"."""
        return machine_with_cores(self.env, self.ranks)

    @property
    def sweep_label(self):
        if not self.sweep_point:
            return "-"
        return ", ".join("%s=%s" % (k, compact(v)) for k, v in self.sweep_point.items())

    @property
    def accuracy_note(self):
        """accuracy_note() of this run's verification.accuracy."""
        return accuracy_note(self.accuracy_text)

    @property
    def verification(self):
        """PASSED or FAILED; a PASSED run whose accuracy was not (fully)
        checked says so, "PASSED (accuracy not checked)"; "(interrupted)"
        follows for an interrupted file."""
        text = "PASSED" if self.passed else "FAILED"
        if self.passed and self.accuracy_note:
            text += " (%s)" % self.accuracy_note
        if self.status != "completed":
            text += " (%s)" % self.status
        return text

    @property
    def deck_name(self):
        return os.path.basename(self.deck_path) or self.deck_path

    def label(self):
        """Short description for legends."""
        return "%s #%d" % (self.file, self.run_index) if self.run_count > 1 else self.file


def _expand(paths):
    """Files as given; directories searched recursively for *.json and
    *.json.gz (sorted)."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            found = []
            for root, _dirs, files in os.walk(p):
                found += [os.path.join(root, f) for f in files if f.endswith((".json", ".json.gz"))]
            out += [(f, True) for f in sorted(found)]
        else:
            out.append((p, False))
    return out


def load_document(path):
    """A result file, or one compressed by gzip (its name ending in .gz: the
    large sweeps under results/ are kept so, byte for byte the file the
    mini-app wrote)."""
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8") as f:
                return json.load(f)
        with open(path, "r", encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise AnalysisError("%s: cannot read: %s" % (path, e.strerror or e))
    except (ValueError, EOFError) as e:
        raise AnalysisError("%s: not valid JSON: %s" % (path, e))


def load_schema(path=SCHEMA_PATH):
    """docs/result.schema.json, ready for jsonschema. A relative "$id" (such as
    "mosaic_miniapp/result/1") is dropped: jsonschema 4.10 (Debian 12) joins it
    with itself when it resolves "#/$defs/..." references and fails with
    RefResolutionError; without it the references resolve within the document."""
    with open(path, "r", encoding="utf-8") as f:
        schema = json.load(f)
    if ":" not in str(schema.get("$id", ":")):
        schema = dict(schema)
        del schema["$id"]
    return schema


def validate_document(doc, path):
    """Validates against docs/result.schema.json (schema_version
    SCHEMA_VERSION) when the jsonschema module is available; returns False
    when it is not (nothing checked). An older supported version cannot be
    validated against the current schema: a warning on stderr names the
    file and its version, and False is returned (nothing checked; the file
    is still read, as without --validate: docs/RESULT-FORMAT.md)."""
    version = doc.get("schema_version") if isinstance(doc, dict) else None
    if version != SCHEMA_VERSION and version in SUPPORTED_SCHEMA_VERSIONS:
        print("warning: %s: schema_version %d: not validated: docs/result.schema.json describes schema_version %d "
              "(docs/RESULT-FORMAT.md); the file is read without that check" % (path, version, SCHEMA_VERSION),
              file=sys.stderr)
        return False
    try:
        import jsonschema
    except ImportError:
        return False
    schema = load_schema()
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc),
                    key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = "/".join(str(p) for p in e.absolute_path) or "(top level)"
        raise AnalysisError("%s: does not follow the result schema at %s: %s%s" % (
            path, where, e.message, " (and %d more errors)" % (len(errors) - 1) if len(errors) > 1 else ""))
    return True


def load_records(paths, validate=False, skipped=None):
    """Reads result files (or directories of them) into records, in the order
    given and, within a file, in runs[] order. Raises AnalysisError with a
    one-line message on the first unusable named file; files found by scanning
    a directory that are not mosaic_miniapp results are skipped with a warning
    (and appended to the list `skipped` when one is given)."""
    records = []
    for path, scanned in _expand(paths):
        doc = load_document(path)
        if not isinstance(doc, dict) or doc.get("program") != "mosaic_miniapp":
            if scanned:
                print("warning: %s: not a mosaic_miniapp result file, skipped" % path, file=sys.stderr)
                if skipped is not None:
                    skipped.append(path)
                continue
            raise AnalysisError("%s: not a mosaic_miniapp result file (no \"program\": \"mosaic_miniapp\")" % path)
        version = doc.get("schema_version")
        if isinstance(version, bool) or version not in SUPPORTED_SCHEMA_VERSIONS:
            raise AnalysisError("%s: schema_version %r is not supported (expected %s)" % (
                path, version, " or ".join(str(v) for v in SUPPORTED_SCHEMA_VERSIONS)))
        if validate:
            validate_document(doc, path)
        runs = doc.get("runs")
        if not isinstance(runs, list) or not runs:
            raise AnalysisError("%s: no runs" % path)
        for k in range(len(runs)):
            try:
                records.append(Record(path, doc, k))
            except FieldError as e:
                raise AnalysisError("%s: %s" % (path, e)) from None
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                raise AnalysisError("%s: runs[%d]: missing or malformed field %s" % (path, k, e)) from None
    if not records:
        raise AnalysisError("no result files found in: %s" % " ".join(paths))
    # Files with the same name in different directories are shown by path.
    paths_by_name = {}
    for r in records:
        paths_by_name.setdefault(r.file, set()).add(r.path)
    for r in records:
        if len(paths_by_name[r.file]) > 1:
            r.file = os.path.normpath(r.path)
    return records


# ---------------------------------------------------------------------------
# Scaling groups and efficiencies
#
# Runs are comparable for scaling when they differ only in the number of MPI
# ranks: same mode, d, r, dtype, timed steps, algorithm variant, configuration
# (CONFIGURATION_FIELDS), deck fields (Record.deck_fields: deck file and
# algorithm settings) and device model, and the same streams per rank (weak)
# or total streams (strong). Repeats at one rank count are summarized by the
# median FOM. With N0 the smallest rank count of the group and F(N) the FOM
# (update samples/s over all ranks):
#
#   ideal(N)      = F(N0) * N / N0
#   efficiency(N) = F(N) / ideal(N) = (F(N)/N) / (F(N0)/N0)
#
# For strong scaling (fixed total work) this is speedup F(N)/F(N0) divided by
# N/N0; for weak scaling (fixed work per rank) it is the per-rank throughput
# relative to the base. With N0 = 1 these are FOM(N)/(N*FOM(1)) and
# (FOM(N)/N)/FOM(1).


def scaling_key(rec):
    if rec.mode == "weak":
        streams = ("streams/rank", fmt_count(rec.streams_per_rank))
    else:
        streams = ("total streams", str(rec.streams_total))
    return ((("mode", rec.mode), ("d", str(rec.d)), ("r", str(rec.r)), ("dtype", rec.dtype), streams,
             ("steps", str(rec.steps)), ("algorithm", rec.algorithm)) + rec.configuration
            + rec.deck_fields + (("device", rec.machine),))


def key_text(key, skip=()):
    return ", ".join("%s=%s" % (k, v) for k, v in key if k not in skip)


def key_fields(keys):
    """The field names of `keys`, in order of first appearance: keys of
    records with different resolved_deck.algorithm settings (an older file
    lacks some) need not have the same fields."""
    return tuple(OrderedDict.fromkeys(f for k in keys for f, _v in k))


def deck_fields(keys):
    """The deck fields (is_deck_field) among the fields of `keys`."""
    return tuple(f for f in key_fields(keys) if is_deck_field(f))


def label_skip(keys, fields=SHOWN_WHEN_VARYING):
    """The fields a heading or legend of one of `keys` leaves out: those of
    `fields` and the deck fields that have one value in all `keys` (a field
    a key lacks counts as another value)."""
    return constant_fields(keys, tuple(fields) + deck_fields(keys))


def constant_fields(keys, fields):
    """The names in `fields` that have one value in all `keys`. Labels leave
    them out (they are said once, by shared_text), so that a label shows only
    what tells its group from the others."""
    return tuple(f for f in fields if len({dict(k).get(f) for k in keys}) == 1)


def varying_fields(keys, fields):
    """The names in `fields` whose value differs between some of `keys`."""
    constant = constant_fields(keys, fields)
    return tuple(f for f in fields if f not in constant)


def shared_text(keys, fields):
    """'name=value, ...' of the constant `fields` of (non-empty) `keys`; '' for none."""
    constant = constant_fields(keys, fields)
    return key_text([kv for kv in keys[0] if kv[0] in constant])


def unique_name(base, used):
    """base, or base_2, base_3, ... when `used` (the names taken so far; the
    new one is added) already holds it (slug() shortens long names, so two
    figures' names may meet)."""
    name, n = base, 2
    while name in used:
        name, n = "%s_%d" % (base, n), n + 1
    used.add(name)
    return name


def slug(text):
    out = "".join(c if c.isalnum() or c in "._-" else "_" for c in text)
    while "__" in out:
        out = out.replace("__", "_")
    return out.strip("_")[:120]


def median_or_nan(values):
    """median(), with NaN for none (for the arithmetic of efficiencies)."""
    m = median(values)
    return math.nan if m is None else m


def runs_without_fom(records):
    """The records whose FOM is missing (null: non-finite), which medians leave out."""
    return [r for r in records if isnan(r.fom)]


def without_fom_note(records):
    """'' or a sentence naming the runs whose FOM is null and that the
    medians (scaling, sweep) leave out, so that they are not left out silently."""
    missing = runs_without_fom(records)
    if not missing:
        return ""
    return "No FOM (figure_of_merit.value null: non-finite) in %d run(s), left out of the medians: %s." % (
        len(missing), ", ".join("%s (%d rank%s)" % (r.label(), r.ranks, "" if r.ranks == 1 else "s")
                                for r in missing))


def verification_summary(records):
    """PASSED, or how many of the records failed their verification and how
    many were interrupted (status "interrupted": stopped by a signal, the
    result describes the state at the stop), e.g. "interrupted (1 of 3)".
    PASSED says what the accuracy checks covered where they did not cover
    everything (Record.accuracy_note): "PASSED (accuracy not checked)" when
    every run says so, else "PASSED (accuracy checked in 1 of 3)"."""
    failed = sum(1 for r in records if not r.passed)
    stopped = sum(1 for r in records if r.status != "completed")
    if not failed and not stopped:
        notes = [r.accuracy_note for r in records]
        if not any(notes):
            return "PASSED"
        if len(set(notes)) == 1:
            return "PASSED (%s)" % notes[0]
        checked = sum(1 for r in records if r.accuracy_text == "checked")
        return "PASSED (accuracy checked in %d of %d)" % (checked, len(records))
    parts = []
    if failed:
        parts.append("FAILED (%d of %d)" % (failed, len(records)))
    if stopped:
        statuses = sorted({r.status for r in records if r.status != "completed"})
        parts.append("%s (%d of %d)" % ("/".join(statuses), stopped, len(records)))
    return ", ".join(parts)


def passed_counts(records):
    """[(ACCURACY_KINDS text, count)] of the PASSED, completed runs, by what
    their accuracy checks covered (accuracy_kind); the first two kinds
    always, the others where they occur; and ("not (failed or interrupted)", count)."""
    ok = [r for r in records if r.passed and r.status == "completed"]
    counts = OrderedDict((k, 0) for k in ACCURACY_KINDS)
    for r in ok:
        counts[accuracy_kind(r.accuracy_text)] += 1
    out = [(ACCURACY_KINDS[k], n) for k, n in counts.items() if n or k in ("checked", "not checked")]
    return out + [("not PASSED (failed or interrupted)", len(records) - len(ok))]


class ScalingPoint:
    def __init__(self, ranks, records):
        self.ranks = ranks
        self.records = records
        # Median of the runs with a FOM (null, non-finite, ones left out: without_fom_note).
        self.fom = median_or_nan([r.fom for r in records])
        self.end_to_end = median_or_nan([r.end_to_end for r in records])
        self.streams_total = records[0].streams_total
        self.spr_min = min(r.spr_min for r in records)
        self.spr_max = max(r.spr_max for r in records)
        self.all_passed = all(r.passed and r.status == "completed" for r in records)
        self.speedup = self.ideal = self.efficiency = None


class ScalingGroup:
    def __init__(self, key, records):
        self.key = key
        self.mode = dict(key)["mode"]
        self.records = records
        by_ranks = OrderedDict()
        for r in sorted(records, key=lambda r: r.ranks):
            by_ranks.setdefault(r.ranks, []).append(r)
        self.points = [ScalingPoint(n, rs) for n, rs in by_ranks.items()]
        base = self.points[0]
        self.base_ranks = base.ranks
        self.base_fom = base.fom
        for p in self.points:
            p.speedup = p.fom / base.fom if base.fom > 0 else math.nan
            p.ideal = base.fom * p.ranks / base.ranks
            p.efficiency = p.fom / p.ideal if p.ideal > 0 else math.nan

    @property
    def has_baseline(self):
        """True when at least two rank counts are present."""
        return len(self.points) >= 2

    @property
    def title(self):
        return key_text(self.key)


def scaling_groups(records):
    groups = OrderedDict()
    for r in records:
        groups.setdefault(scaling_key(r), []).append(r)
    return [ScalingGroup(k, rs) for k, rs in groups.items()]


def assign_efficiencies(records):
    """Sets record.efficiency (against the group's median FOM at the smallest
    rank count) for every record whose scaling group spans >= 2 rank counts."""
    groups = scaling_groups(records)
    for g in groups:
        if not g.has_baseline:
            continue
        for r in g.records:
            r.efficiency = (r.fom / r.ranks) / (g.base_fom / g.base_ranks) if g.base_fom > 0 else math.nan
            r.efficiency_base_ranks = g.base_ranks
    return groups


# ---------------------------------------------------------------------------
# Sweep curves (analysis.sweep, analysis.saturation): FOM against one swept
# parameter (d, r, streams per rank) over runs that agree on everything else.
# Repeats at one value: the median FOM.

# The saturation point of a curve of FOM against streams per rank: the
# smallest streams per rank whose (median) FOM reaches this fraction of the
# largest (median) FOM measured on the curve.
SATURATION_FRACTION = 0.9


def curve_key(rec, without):
    """The key of the sweep curve a run belongs to: d, r, dtype, stream mode,
    ranks, total streams, timed steps, algorithm variant, the configuration
    fields, the deck fields (the deck file and its algorithm settings: two
    decks, or one at two rates, are two curves) and the device, less the
    fields named in `without` (the swept one). block_size: auto resolves k
    from d and r, so a curve over d or r keys on the setting "auto";
    curves() keeps the repeats at one point apart by the resolved k."""
    configuration = tuple((f, "auto" if f == "block size" and rec.block_size_from == "auto" else v)
                          for f, v in rec.configuration)
    items = ((("d", str(rec.d)), ("r", str(rec.r)), ("dtype", rec.dtype), ("mode", rec.mode),
              ("ranks", str(rec.ranks)), ("total streams", str(rec.streams_total)), ("steps", str(rec.steps)),
              ("algorithm", rec.algorithm)) + configuration + rec.deck_fields + (("device", rec.machine),))
    return tuple(kv for kv in items if kv[0] not in without)


# The sweep_point key of a deck that sweeps the streams per rank (e.g.
# inputs/saturation.yaml): its runs are analysis.saturation's, not sweep's.
STREAMS_SWEEP = "streams.per_rank"


def is_streams_sweep(rec):
    """True for a run of a sweep over streams.per_rank (its sweep_point
    names it): a saturation sweep, for analysis.saturation."""
    return STREAMS_SWEEP in rec.sweep_point


class Curve:
    def __init__(self, key, points):
        """points: {(x, resolved block size): records}."""
        self.key = key
        self.block_size_auto = dict(key).get("block size") == "auto"
        self.points = []  # (x, median FOM, records), by x and then block size
        for x, block_size in sorted(points):
            recs = points[(x, block_size)]
            self.points.append((x, median_or_nan([r.fom for r in recs]), recs))

    @property
    def records(self):
        return [r for _x, _f, rs in self.points for r in rs]


def curves(records, xattr, without):
    """Curves of FOM vs record.<xattr> over runs whose curve_key (without
    `without`) agrees and that span at least two values of it. Runs that were
    given block_size: auto and resolved it to different k at one x (another
    rule in another build) are separate points at that x, not repeats."""
    groups = OrderedDict()
    for r in records:
        point = (getattr(r, xattr), r.block_size)
        groups.setdefault(curve_key(r, without), OrderedDict()).setdefault(point, []).append(r)
    return [Curve(k, points) for k, points in groups.items() if len({x for x, _k in points}) >= 2]


def curve_top(curve):
    """The curve's largest median FOM (NaN when no point has one)."""
    return max([f for _x, f, _r in curve.points if not isnan(f)], default=math.nan)


def saturation_point(curve, fraction=SATURATION_FRACTION):
    """The smallest x (streams per rank) whose median FOM reaches `fraction`
    of the curve's largest median FOM; None when no point has a FOM."""
    top = curve_top(curve)
    for x, f, _r in curve.points:
        if not isnan(f) and f >= fraction * top:
            return x
    return None


# ---------------------------------------------------------------------------
# Strong scaling: per-stream checksum agreement


class ChecksumReport:
    def __init__(self, group, status, streams, mismatches, message):
        self.group = group
        self.status = status  # "agree", "mismatch" or "single"
        self.streams = streams
        self.mismatches = mismatches
        self.message = message

    @property
    def ok(self):
        return self.status != "mismatch"


def _same(a, b, rtol):
    if a is None or b is None:
        return False  # null = non-finite checksum: never counts as agreement
    if rtol == 0:
        return a == b
    return abs(a - b) <= rtol * max(abs(a), abs(b))


def check_checksums(group, rtol=0.0, max_listed=5):
    """Compares every run's per-stream checksums with those of the first run at
    the smallest rank count. Strong mode runs the same streams on any number of
    ranks, so the checksums must agree (exactly, with rtol = 0)."""
    ref = group.points[0].records[0]
    runs = [r for p in group.points for r in p.records]
    ranks = [p.ranks for p in group.points]
    if len(runs) < 2:
        return ChecksumReport(group, "single", len(ref.checksums), [],
                              "only one run (%d ranks): nothing to compare" % ref.ranks)
    problems = []
    for run in runs:
        for sid in sorted(set(ref.checksums) | set(run.checksums)):
            if sid not in run.checksums or sid not in ref.checksums:
                problems.append((sid, run, run.checksums.get(sid, "missing"), ref.checksums.get(sid, "missing")))
            elif not _same(run.checksums[sid], ref.checksums[sid], rtol):
                problems.append((sid, run, run.checksums[sid], ref.checksums[sid]))
    if not problems:
        what = "bit-identical" if rtol == 0 else "within rtol %g" % rtol
        return ChecksumReport(group, "agree", len(ref.checksums), [],
                              "AGREE: %d streams, %s over %d runs at ranks %s" % (
                                  len(ref.checksums), what, len(runs), ", ".join(map(str, ranks))))
    lines = ["MISMATCH: %d stream checksum(s) differ from %s (%d ranks):" % (len(problems), ref.file, ref.ranks)]
    for sid, run, got, want in problems[:max_listed]:
        lines.append("  stream %d: %s (%d ranks) has %s, reference has %s" % (
            sid, run.file, run.ranks, _fmt_checksum(got), _fmt_checksum(want)))
    if len(problems) > max_listed:
        lines.append("  ... and %d more" % (len(problems) - max_listed))
    return ChecksumReport(group, "mismatch", len(ref.checksums), problems, "\n".join(lines))


def _fmt_checksum(v):
    if v is None:
        return "null (non-finite)"
    if isinstance(v, str):
        return v
    return repr(float(v))


# ---------------------------------------------------------------------------
# Statistics


def median(values):
    """The median of the values that are not missing, None or NaN (the mean
    of the middle two for an even count), so it does not depend on their
    order; None when there are none. The scaling and sweep medians of the FOM
    (a null FOM is NaN in a Record), analysis.accuracy's distances and
    analysis.baselines' interval means use it."""
    v = sorted(x for x in values if not isnan(x))
    if not v:
        return None
    n = len(v)
    return v[n // 2] if n % 2 == 1 else 0.5 * (v[n // 2 - 1] + v[n // 2])


# ---------------------------------------------------------------------------
# Formatting


def isnan(x):
    return x is None or (isinstance(x, float) and math.isnan(x))


def fmt_rate(x):
    """Samples/s: thousands separators from 1000 up, else 4 significant digits."""
    if isnan(x):
        return "n/a"
    if math.isinf(x):
        return "inf"
    return "{:,.0f}".format(x) if abs(x) >= 1000 else "{:.4g}".format(x)


def fmt_eff(x):
    return "" if isnan(x) else "{:.3f}".format(x)


def fmt_sci(x):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "non-finite"
    return "{:.3e}".format(x)


def fmt_count(x):
    if isnan(x):
        return "n/a"
    return str(int(x)) if float(x).is_integer() else "{:.2f}".format(x)


def fmt_mib(n):
    """Bytes as MiB, 3 significant digits ("2.05"); "n/a" for None or NaN."""
    if isnan(n):
        return "n/a"
    mib = n / 2.0 ** 20
    return "{:,.0f}".format(mib) if abs(mib) >= 1000 else "{:.3g}".format(mib)


def md_table(headers, rows):
    def cell(v):
        return str(v).replace("|", "\\|").replace("\n", " ")
    out = ["| " + " | ".join(cell(h) for h in headers) + " |",
           "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(out)


def csv_text(headers, rows):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(headers)
    w.writerows(rows)
    return buf.getvalue()


# ---------------------------------------------------------------------------
# Figures


# How to run the current command ("-m analysis.sweep", set by main_wrapper),
# for missing_module().
_command = None
SYSTEM_PYTHON = "/usr/bin/python3"


def missing_module(module, figures=True):
    """The AnalysisError for a module (numpy, matplotlib) that this interpreter
    lacks: which interpreter, the Debian package, the interpreter that has it
    and, for the figures, --no-plots (every command that draws has it)."""
    text = "%s is not installed for this interpreter (%s): install Debian's python3-%s" % (
        module, sys.executable, module)
    if os.path.realpath(sys.executable or "") != os.path.realpath(SYSTEM_PYTHON):
        text += ", or run %s %s" % (SYSTEM_PYTHON, _command or "instead")
    if figures:
        text += "; --no-plots skips the figures"
    return AnalysisError(text)


def matplotlib_module(name):
    """import matplotlib.<...> (e.g. "matplotlib.ticker"); a missing
    matplotlib is an AnalysisError (missing_module), so tables never need it."""
    import importlib
    try:
        return importlib.import_module(name)
    except ImportError:
        raise missing_module("matplotlib") from None


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed); imported
    here, when a figure is drawn, so that tables work without matplotlib."""
    matplotlib = matplotlib_module("matplotlib")
    matplotlib.use("Agg")
    return matplotlib_module("matplotlib.pyplot")


SHORT_COMMIT = 12


def commit_text(rec, short=False):
    """The run's git commit (short: SHORT_COMMIT hex digits), with " (DIRTY)"
    where the build's tree had uncommitted changes (environment.git_dirty)."""
    commit = rec.git_commit[:SHORT_COMMIT] if short else rec.git_commit
    return commit + (" (DIRTY)" if rec.env.get("git_dirty") is True else "")


def provenance(records, max_items=3, decks=False):
    """'machine: <device> on <host>; ... | git <commit>, ...' for a caption
    (a commit built from a tree with uncommitted changes marked DIRTY).
    decks=True: the run's ranks x threads per rank after a CPU model
    (Record.machine_text), the commit shortened to SHORT_COMMIT hex digits,
    and ' | deck: <deck file names>' added."""
    machines = list(OrderedDict.fromkeys("%s on %s" % (r.machine_text if decks else r.machine, r.hostname)
                                         for r in records))
    commits = list(OrderedDict.fromkeys(commit_text(r, short=decks) for r in records))

    def join(items):
        if len(items) <= max_items:
            return "; ".join(items)
        return "; ".join(items[:max_items]) + "; and %d more" % (len(items) - max_items)
    text = "%s: %s | git %s" % ("machine" if len(machines) == 1 else "machines", join(machines), join(commits))
    if decks:
        names = list(OrderedDict.fromkeys(r.deck_name for r in records))
        text += " | %s: %s" % ("deck" if len(names) == 1 else "decks", join(names))
    return text


def save_figure(fig, path, title, records, decks=False, tight=False):
    """Adds the title and the provenance caption (machine, host, git commit;
    decks=True: the ranks x threads, the short commit and the deck files, see
    provenance()), saves a PNG with the same text in its metadata, and closes
    the figure. tight=True: the PNG is cut to what is drawn (bbox_inches
    "tight"), so that a legend outside the axes stays on the canvas."""
    caption = provenance(records, decks=decks)
    width_chars = int(fig.get_figwidth() * 11)
    title_lines = [w for line in title.split("\n") for w in (textwrap.wrap(line, width_chars) or [""])]
    cap_lines = textwrap.wrap(caption, int(width_chars * 1.8))
    fig.suptitle("\n".join(title_lines), fontsize=10)
    fig.text(0.5, 0.005, "\n".join(cap_lines), ha="center", va="bottom", fontsize=7)
    # tight_layout makes room for the suptitle itself; the caption needs its band.
    bottom = (len(cap_lines) + 0.3) * 7 * 1.3 / 72 / fig.get_figheight()
    fig.tight_layout(rect=(0, bottom, 1, 1))
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        fig.savefig(path, dpi=110, metadata={"Title": title, "Description": caption,
                                             "Software": "mosaic_miniapp analysis"},
                    **({"bbox_inches": "tight", "pad_inches": 0.15} if tight else {}))
    except OSError as e:
        raise AnalysisError("%s: cannot write the figure: %s" % (path, e.strerror or e)) from None
    finally:
        pyplot().close(fig)
    return path


def label_x_ticks(ax, ticks, fmt=None):
    """At most 12 x values: a labelled major tick at each (formatted by fmt,
    default fmt_count) and no minor labels; more are left to the axis."""
    if len(ticks) > 12:
        return
    ax.set_xticks(ticks)
    ax.set_xticklabels([(fmt or fmt_count)(t) for t in ticks])
    ax.xaxis.set_minor_formatter(matplotlib_module("matplotlib.ticker").NullFormatter())


def plain_log_labels(ax, axis="y"):
    """Plain numbers (1,000 rather than 10^3) on a log axis, and enough of
    them to read it: every minor tick labelled when the axis spans less than
    a decade (with ticks at 1.5 and 2.5 times the powers of ten too below a
    factor of 3); labelled ticks at 1, 2, 3 and 5 times the powers of ten when
    it spans up to two decades, at 1, 2 and 5 up to four; the powers of ten
    beyond. Call it after the data are drawn (it reads the axis limits)."""
    ticker = matplotlib_module("matplotlib.ticker")
    FuncFormatter, NullFormatter, LogLocator = ticker.FuncFormatter, ticker.NullFormatter, ticker.LogLocator
    a = ax.yaxis if axis == "y" else ax.xaxis
    lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
    lo, hi = min(lo, hi), max(lo, hi)
    fmt = FuncFormatter(lambda v, _pos: fmt_rate(v))
    span = hi / lo if lo > 0 else math.inf
    if span < 3:
        a.set_minor_locator(LogLocator(base=10, subs=(1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0),
                                       numticks=30))
    elif 10 <= span < 1e4:
        a.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0) if span < 100 else (1.0, 2.0, 5.0),
                                       numticks=30))
        a.set_minor_locator(LogLocator(base=10, subs=tuple(float(k) for k in range(1, 10)), numticks=30))
    a.set_major_formatter(fmt)
    a.set_minor_formatter(fmt if span < 10 else NullFormatter())


def _nearest_existing(path):
    """path, or its nearest ancestor that exists."""
    p = os.path.abspath(path)
    while not os.path.exists(p) and os.path.dirname(p) != p:
        p = os.path.dirname(p)
    return p


def check_output_dir(path):
    """Before any work: AnalysisError naming `path` (--out) when it cannot
    be the figures' directory: it is not a directory, or the nearest part of
    it that exists is not one or cannot be written in. A directory that does
    not exist yet is made when the first figure is saved."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise AnalysisError("%s: exists and is not a directory (--out needs a directory for the figures)" % path)
    existing = _nearest_existing(path)
    if not os.path.isdir(existing):
        raise AnalysisError("%s: cannot make this directory: %s is not a directory" % (path, existing))
    if not os.access(existing, os.W_OK | os.X_OK):
        raise AnalysisError("%s: cannot write in %s: permission denied" % (path, existing))


def check_output_file(path):
    """Before any work: AnalysisError naming `path` (an output file such as
    collect's --csv) when it cannot be written: a directory, an existing file
    without write permission, or a directory that cannot be made (the file's
    directory is made here, as the write would)."""
    if os.path.isdir(path):
        raise AnalysisError("%s: is a directory (expected a file name)" % path)
    parent = os.path.dirname(os.path.abspath(path))
    existing = _nearest_existing(parent)
    if not os.path.isdir(existing):
        raise AnalysisError("%s: cannot make its directory: %s is not a directory" % (path, existing))
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as e:
        raise AnalysisError("%s: cannot make its directory %s: %s" % (path, parent, e.strerror or e)) from None
    if not os.access(path if os.path.exists(path) else parent, os.W_OK):
        raise AnalysisError("%s: cannot write: permission denied" % path)


def write_text(path, text):
    """Writes an output file; an OSError is an AnalysisError naming it."""
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    except OSError as e:
        raise AnalysisError("%s: cannot write: %s" % (path, e.strerror or e)) from None


def add_common_arguments(parser, out=True):
    parser.add_argument("inputs", nargs="+", metavar="RESULT",
                        help="result JSON files, or directories searched recursively for *.json")
    if out:
        parser.add_argument("--out", metavar="DIR", default="analysis_out",
                            help="directory for the PNG figures (default: %(default)s)")
    parser.add_argument("--validate", action="store_true",
                        help="validate every file against docs/result.schema.json (schema_version %d; a file "
                             "of an older version is read unvalidated, with a warning; needs the "
                             "python3-jsonschema module)" % SCHEMA_VERSION)


def tables_and_figures_main(argv, prog, description, analyse, epilog=None):
    """The main() of a command that takes result files, --out, --validate
    and --no-plots, and prints the text of analyse(records, out_dir, plots)
    (whose first return value is that text)."""
    p = argparse.ArgumentParser(prog=prog, description=description, epilog=epilog)
    add_common_arguments(p)
    p.add_argument("--no-plots", action="store_true", help="tables only")
    args = p.parse_args(argv)
    if not args.no_plots:
        check_output_dir(args.out)
    records = load_records(args.inputs, validate=args.validate)
    print(analyse(records, args.out, not args.no_plots)[0])
    return 0


def main_wrapper(name, fn, argv):
    global _command
    _command = "-m " + name
    try:
        return fn(argv)
    except AnalysisError as e:
        print("%s: error: %s" % (name, e), file=sys.stderr)
        return 2
    except BrokenPipeError:  # stdout closed early (e.g. piped into head)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
