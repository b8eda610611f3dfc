"""analysis.report: the page made from committed CPU result files and the
synthetic fixtures holds the files' own numbers (commit, command, FOM,
efficiency, diagnostics, memory, accuracy, verdict), says "no GPU" and "not
recorded" where the files say so, warns about a dirty tree and differing
commits, skips non-result JSON, refuses broken input in one line, and
--no-plots draws nothing (and needs no matplotlib).

The committed CPU files are found by pattern (results/cpu/weak_perrank4_*_np1.json
and _np2.json, strong_total8_*, whichever set exists; the one with the most
steps when there are several) and every expected value is read from them
here: no number, commit or host name of a result file is written into this
test, so that the files can be regenerated."""

import copy
import glob
import gzip
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

import analysis_test_support as S
import make_synthetic_fixtures as M
from analysis import common as C
from analysis import report, scaling, sweep

CPU = os.path.join(S.REPO, "results", "cpu")
SMOKE = "smoke_cpu_np2.json"
PM10 = "pm10_b5795d48fad6.json"
OTHERS = [SMOKE, PM10]
OLD = "setup_init_diagnostics_10k_block64_3d52c31798e5.json"  # no git_dirty, timestamps, kernel, warnings
GZ = "missing_outage_geodesic_1a749c296e82.json.gz"


def scaling_pair(prefix):
    """[np1 file, np2 file] of results/cpu/<prefix>_*_np1.json and _np2.json:
    of the sets present at both rank counts, the one with the most timed
    steps (its "steps<N>" tag), so that a newer set is taken while an older
    one is still there."""
    found = {}
    for path in glob.glob(os.path.join(CPU, prefix + "_*_np[12].json")):
        m = re.match(re.escape(prefix) + r"_(.+)_np([12])\.json$", os.path.basename(path))
        if m:
            found.setdefault(m.group(1), {})[m.group(2)] = os.path.basename(path)
    tags = [t for t, f in found.items() if set(f) == {"1", "2"}]
    if not tags:
        raise AssertionError("no results/cpu/%s_*_np1.json with its _np2.json: the report test needs a weak and a "
                             "strong pair of committed CPU results" % prefix)

    def steps(tag):
        m = re.search(r"steps([0-9]+)", tag)
        return (int(m.group(1)) if m else 0, tag)
    tag = max(tags, key=steps)
    return [found[tag]["1"], found[tag]["2"]]


def cpu_files():
    """(weak pair, strong pair, every file the shared report reads)."""
    weak, strong = scaling_pair("weak_perrank4"), scaling_pair("strong_total8")
    return weak, strong, weak + strong + OTHERS


def cpu(*names):
    return [os.path.join(CPU, n) for n in names]


def load(path):
    if path.endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def run_section(page, file_name, index=0):
    """The text of the run section of runs[index] of file_name."""
    heading = [line for line in page.splitlines()
               if line.startswith("### Run ") and " `%s` runs[%d]" % (file_name, index) in line]
    if len(heading) != 1:
        raise AssertionError("expected one run heading for %s runs[%d], found %r" % (file_name, index, heading))
    return S.section(page, heading[0])


def file_section(page, file_name):
    return S.section(page, "## File: `%s`" % file_name)


def row(text, quantity):
    """The cells after the first of the one table row whose first cell is `quantity`."""
    return S.md_row_starting(text, quantity)[1:]


def by_field(text, field):
    """(quantity, value) of the one table row whose field cell is `field`."""
    found = [r[:2] for r in S.md_rows(text) if r[-1] == "`%s`" % field]
    if len(found) != 1:
        raise AssertionError("expected one row of field %s, found %d in:\n%s" % (field, len(found), text))
    return found[0]


def same_commit(a, b):
    return a.startswith(b) or b.startswith(a)


def commit_count(docs):
    """The number of different commits among the documents (a 12-digit and
    a 40-digit commit that begins with it are one)."""
    seen = []
    for doc in docs:
        c = doc["environment"]["git_commit"]
        if not any(same_commit(c, k) for k in seen):
            seen.append(c)
    return len(seen)


def accuracy_text(run):
    """runs[].verification.accuracy, None where a file lacks it."""
    return run["verification"].get("accuracy")


def expected_verification(run, status="completed"):
    """The verdict the page gives a run, from the file: PASSED or FAILED, and
    what a PASSED verdict says about the accuracy."""
    text = "PASSED" if run["verification"]["passed"] else "FAILED"
    acc = accuracy_text(run)
    if run["verification"]["passed"] and acc not in (None, "checked"):
        if acc.startswith("not checked"):
            text += " (accuracy not checked)"
        elif acc.startswith("not judged"):
            text += " (accuracy not judged: %s)" % acc[len("not judged"):].lstrip(";: ")
        else:
            text += " (accuracy partly judged: %s)" % acc
    return text + ("" if status == "completed" else " (%s)" % status)


def expected_accuracy_judged(run):
    """The page's "accuracy judged" cell, from the file."""
    if run["resolved_deck"].get("run", {}).get("accuracy") == "throughput_only":
        return "**not checked** (run.accuracy: throughput_only)"
    acc = accuracy_text(run)
    return acc if acc is not None else "not recorded"


class ReportOnCpuResults(unittest.TestCase):
    """One run with figures on the committed CPU results (the slow part), shared by the tests."""

    @classmethod
    def setUpClass(cls):
        cls.weak, cls.strong, cls.files = cpu_files()
        cls.tmp = tempfile.mkdtemp(prefix="mosaic_report_test_")
        cls.out = os.path.join(cls.tmp, "report")
        cls.rc, cls.stdout, cls.stderr = S.run_main(report, cpu(*cls.files) + ["--out", cls.out])
        with open(os.path.join(cls.out, "README.md"), encoding="utf-8") as f:
            cls.page = f.read()
        cls.docs = {n: load(p) for n, p in zip(cls.files, cpu(*cls.files))}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, True)

    def test_exit_status_and_summary_line(self):
        self.assertEqual(self.rc, 0, self.stderr)
        runs = sum(len(d["runs"]) for d in self.docs.values())
        self.assertIn("analysis.report: wrote %s: %d run(s) from %d file(s)" % (
            os.path.join(self.out, "README.md"), runs, len(self.docs)), self.stdout)

    def test_commit_command_deck_and_time_of_every_file(self):
        for name, doc in self.docs.items():
            sec = file_section(self.page, name)
            sec = "\n".join(S.section(sec, h) for h in ("### Invocation", "### Hardware", "### Software",
                                                         "### Source code"))
            env = doc["environment"]
            self.assertEqual(row(sec, "git commit")[0], "`%s`" % env["git_commit"])
            dirty = env.get("git_dirty")
            self.assertEqual(row(sec, "uncommitted changes when the build was configured")[0],
                             {True: "**YES: built from a tree with uncommitted changes** (the commit alone does not "
                                    "give the code)", False: "no (clean tree)"}.get(dirty, "not recorded"))
            self.assertIn(" ".join(shlex.quote(a) for a in doc["command_line"]), sec)
            self.assertEqual(row(sec, "deck")[0], "`%s`" % doc["deck_path"])
            self.assertEqual(row(sec, "MPI ranks")[0], str(doc["mpi_ranks"]))
            self.assertEqual(row(sec, "started (UTC)")[0], doc["timestamp_utc"])
            self.assertEqual(row(sec, "compiler")[0], env["compiler"])
            self.assertEqual(row(sec, "Kokkos version")[0], env["kokkos_version"])
            self.assertEqual(row(sec, "MPI library")[0], env["mpi_library"])
            cuda = env.get("cuda_runtime_version", "not recorded")
            self.assertEqual(row(sec, "CUDA runtime")[0], "null" if cuda is None else cuda)
        # Files of more than one commit: the page says so loudly.
        commits = commit_count(self.docs.values())
        if commits > 1:
            self.assertIn("**WARNING: THE FILES COME FROM %d DIFFERENT COMMITS:**" % commits, self.page)
        else:
            self.assertNotIn("DIFFERENT COMMITS", self.page)
        if any(d["environment"].get("git_dirty") is True for d in self.docs.values()):
            self.assertIn("UNCOMMITTED CHANGES", self.page)
        else:
            self.assertNotIn("UNCOMMITTED CHANGES", self.page)

    def test_no_gpu_on_these_cpu_files(self):
        for name in self.files:
            self.assertEqual(row(file_section(self.page, name), "GPUs seen on the host")[0],
                             "no GPU (environment.gpus is empty)")
            self.assertIn("the host CPU", row(file_section(self.page, name), "kernels ran on")[0])

    def test_figure_of_merit_of_every_run(self):
        summary = S.section(self.page, "## Runs")
        for name, doc in self.docs.items():
            rows = [r for r in S.md_rows(summary) if r[1] == name]
            self.assertEqual(len(rows), len(doc["runs"]), name)
            for k, run in enumerate(doc["runs"]):
                fom = run["figure_of_merit"]
                sec = run_section(self.page, name, k)
                # As the report writes it: fmt_rate's text and the file's full value.
                self.assertEqual(row(sec, "figure of merit: " + fom["name"])[0],
                                 "**%s samples/s (%r)**" % (C.fmt_rate(fom["value"]), fom["value"]))
                self.assertEqual(row(sec, "its definition")[0], fom["definition"])
                self.assertEqual(rows[k][11], C.fmt_rate(fom["value"]))

    def test_verification_says_what_the_accuracy_checks_covered(self):
        summary = S.section(self.page, "## Runs")
        for name, doc in self.docs.items():
            rows = [r for r in S.md_rows(summary) if r[1] == name]
            for k, run in enumerate(doc["runs"]):
                want = expected_verification(run, doc["status"])
                self.assertEqual(rows[k][13], want, name)
                self.assertEqual(row(run_section(self.page, name, k), "verification")[0], "**%s**" % want)
        # A throughput-only run is never a bare PASSED.
        weak = self.docs[self.weak[0]]["runs"][0]
        if weak["verification"]["passed"] and (accuracy_text(weak) or "").startswith("not checked"):
            self.assertEqual([r for r in S.md_rows(summary) if r[1] == self.weak[0]][0][13],
                             "PASSED (accuracy not checked)")
        # The header counts the runs whose accuracy was checked apart from the throughput-only ones.
        ok = [r for d in self.docs.values() for r in d["runs"] if r["verification"]["passed"]
              and d["status"] == "completed"]
        checked = sum(1 for r in ok if accuracy_text(r) == "checked")
        throughput = sum(1 for r in ok if (accuracy_text(r) or "").startswith("not checked"))
        header = self.page.split("## Warnings")[0]
        self.assertIn(": %d PASSED with accuracy checked; %d PASSED throughput-only (accuracy not checked)" % (
            checked, throughput), header)
        runs = sum(len(d["runs"]) for d in self.docs.values())
        self.assertIn("; %d not PASSED (failed or interrupted)." % (runs - len(ok)), header)

    def test_scaling_efficiency_is_analysis_scaling_s(self):
        records = C.load_records(cpu(*self.files))
        text, _groups, _reports, _figs = scaling.analyse(records, self.tmp, plots=False)
        ours = S.section(self.page, "## Scaling efficiency")
        weak, strong = self.docs[self.weak[1]], self.docs[self.strong[1]]
        sections = {}
        for which, doc in (("Weak", weak), ("Strong", strong)):
            d = doc["runs"][0]["resolved_deck"]["problem"]["d"]
            theirs = [line for line in text.splitlines() if line.startswith("## d=%d," % d) and
                      ("streams/rank" in line) == (which == "Weak")]
            self.assertEqual(len(theirs), 1, text)
            # The report's sections are scaling's, two levels down.
            heading = "####" + theirs[0][2:]
            sections[which] = S.section(S.section(ours, "### %s scaling" % which), heading)
            self.assertEqual(S.md_row_starting(sections[which], "2"),
                             S.md_row_starting(S.section(text, theirs[0]), "2"))
            self.assertIn(scaling.EFFICIENCY[which.lower()], ours)
        # And by hand from the files: weak (FOM(2)/2) / FOM(1), strong FOM(2) / (2 FOM(1)).
        f = {n: d["runs"][0]["figure_of_merit"]["value"] for n, d in self.docs.items()}
        weak_eff = (f[self.weak[1]] / 2) / f[self.weak[0]]
        strong_eff = f[self.strong[1]] / (2 * f[self.strong[0]])
        weak_row = S.md_row_starting(sections["Weak"], "2")
        self.assertEqual(weak_row[2], str(weak["runs"][0]["decomposition"]["total_streams"]))
        self.assertEqual(weak_row[6], C.fmt_eff(weak_eff))
        self.assertEqual(S.md_row_starting(sections["Strong"], "2")[6], C.fmt_eff(strong_eff))
        self.assertTrue(row(run_section(self.page, self.weak[1]), "parallel efficiency")[0].startswith(
            C.fmt_eff(weak_eff) + " (weak scaling, against 1 rank"))
        self.assertIn("AGREE: %d streams, bit-identical" % strong["runs"][0]["decomposition"]["total_streams"], ours)

    def test_stability_memory_and_accuracy_values(self):
        doc = self.docs[SMOKE]
        run = doc["runs"][0]
        fin = run["diagnostics"]["final"]
        sec = run_section(self.page, SMOKE)
        self.assertEqual(row(sec, "orthonormality error (Frobenius norm of U^T U - I), max over streams"),
                         [C.fmt_sci(fin["orthonormality_error_max"]),
                          "`runs[0].diagnostics.final.orthonormality_error_max`"])
        self.assertEqual(row(sec, "noise variance s2, min over streams")[0], C.fmt_sci(fin["s2_min"]))
        self.assertEqual(row(sec, "clamped covariance steps, all streams")[0], report.fmt_value(fin["clamped_steps"]))
        for key, quantity in (("unresolved_residual_steps", "unresolved-residual blocked steps (ALGORITHM.md "
                                                            "section 6), all streams"),
                              ("residual_recomputations", "of those, residuals recomputed explicitly")):
            want = "not recorded" if key not in fin else report.fmt_value(fin[key])
            self.assertEqual(row(sec, quantity)[0], want, key)
        breakdowns = run["counts"].get("breakdowns")
        if breakdowns == []:
            self.assertEqual(row(sec, "breakdowns")[0], "none")
        mem = run["memory"]
        self.assertTrue(row(sec, "state of one stream: mu, U, S, s2 (d + d r + r^2 + 1 scalars of the dtype)")[0]
                        .startswith("{:,} B".format(mem["state_bytes_per_stream"])))
        # The committed CPU files may be of schema_version 1 or 2 (docs/RESULT-FORMAT.md).
        if "device_bytes_in_use_max" in mem:
            self.assertEqual(doc["schema_version"], 1)
            quantity, value = by_field(sec, "runs[0].memory.device_bytes_in_use_max")
            self.assertEqual(quantity, "device memory in use at the end of the run, cudaMemGetInfo, not a peak "
                                       "(schema_version 1)")
            if mem["device_bytes_in_use_max"] is None:
                self.assertEqual(value, "null: a host backend, no device memory")
        for field in ("peak_allocated_bytes_per_rank", "peak_allocated_space", "device_used_bytes_at_phase",
                      "estimate_over_peak_allocated"):
            value = by_field(sec, "runs[0].memory." + field)[1]
            if field not in mem:
                self.assertEqual(value, "not recorded", field)
        if "peak_allocated_bytes_per_rank" in mem:
            peak = mem["peak_allocated_bytes_per_rank"]
            self.assertTrue(by_field(sec, "runs[0].memory.peak_allocated_bytes_per_rank")[1].startswith(
                "max {:,} B".format(max(peak))))
            self.assertEqual(by_field(sec, "runs[0].memory.peak_allocated_space")[1], mem["peak_allocated_space"])
            if mem["device_used_bytes_at_phase"] is None:
                self.assertEqual(by_field(sec, "runs[0].memory.device_used_bytes_at_phase")[1],
                                 "null: no device queried (a host backend; only Cuda is queried)")
        self.assertIn("max {:,} B".format(max(mem["peak_rss_bytes_per_rank"])), sec)
        self.assertEqual(row(sec, "accuracy judged")[0], expected_accuracy_judged(run))
        if fin.get("accuracy"):
            self.assertEqual(row(sec, "projector distance to the truth, mean over streams")[0],
                             C.fmt_sci(fin["accuracy"]["projector_distance_mean"]))
        self.assertEqual(row(sec, "verification")[0], "**%s**" % expected_verification(run, doc["status"]))
        for text in run.get("warnings", []):
            self.assertIn("- **WARNING:** " + text, sec)
        eta_u = run["resolved_deck"]["algorithm"]["eta_U"]
        self.assertIn("rate eta_U | %s |" % report.fmt_value(eta_u), sec)

        weak = run_section(self.page, self.weak[0])
        self.assertEqual(row(weak, "accuracy judged")[0], expected_accuracy_judged(self.docs[self.weak[0]]["runs"][0]))
        pm10 = run_section(self.page, PM10)
        pre = self.docs[PM10]["runs"][0]["prequential"]
        self.assertEqual(row(pm10, "prequential: negative log-likelihood per coordinate, mean over the run")[0],
                         C.fmt_sci(pre["nll_mean"]))
        self.assertEqual(row(pm10, "prequential: surprise rate (y^T Sigma^-1 y above the chi-square 0.999 "
                                   "quantile)")[0], C.fmt_sci(pre["surprise_rate"]))
        self.assertEqual(row(pm10, "truth-based accuracy")[0], "not recorded (source.type: npy)")

    def test_figures_referenced_with_captions(self):
        pngs = sorted(f for f in os.listdir(self.out) if f.endswith(".png"))
        self.assertIn(report.THROUGHPUT_FIGURE, pngs)
        self.assertEqual(len([p for p in pngs if p.startswith("scaling_")]), 4)  # weak and strong, 2 each
        self.assertTrue(any(p.startswith("stability_") for p in pngs))
        records = {n: C.load_records(cpu(n)) for n in self.docs}
        for png in pngs:
            refs = [line for line in self.page.splitlines() if line.startswith("![") and line.endswith("(%s)" % png)]
            self.assertEqual(len(refs), 1, png)
            captions = [line for line in self.page.splitlines()
                        if line.startswith("*Figure ") and line.endswith("(`%s`)" % png)]
            self.assertEqual(len(captions), 1, png)
            # common.provenance's caption, as on the figure itself.
            self.assertRegex(captions[0], r"\. machines?: .+ on .+ \| git [0-9a-f]{12}.* \| decks?: .+\.\* \(`")
            # The runs a figure shows: their machine (with their ranks x threads), commit and deck are in its caption.
            shown = [n for n, d in self.docs.items() if os.path.basename(d["deck_path"]) in captions[0]]
            self.assertTrue(shown, captions[0])
            for n in shown:
                env = self.docs[n]["environment"]
                self.assertIn("%s, " % env["cpu_model"], captions[0])
                self.assertIn(" on %s" % env["hostname"], captions[0])
                self.assertIn(env["git_commit"][:12], captions[0])
        throughput = [line for line in self.page.splitlines() if line.startswith("*Figure 1: ")][0]
        for n, d in self.docs.items():
            for text in (records[n][0].machine_text, d["environment"]["git_commit"][:12],
                         os.path.basename(d["deck_path"])):
                self.assertIn(text, throughput)
        meta = S.png_text(os.path.join(self.out, report.THROUGHPUT_FIGURE))
        for d in self.docs.values():
            self.assertIn(d["environment"]["git_commit"], meta["Description"])


def saturation_sweep_doc():
    """A result file of a deck that sweeps d (1024, 8192) and streams.per_rank
    (1, 2, 4) on one rank (make_synthetic_fixtures' run_entry and document)."""
    runs = []
    points = [(d, p) for d in (1024, 8192) for p in (1, 2, 4)]
    for k, (d, p) in enumerate(points):
        run = M.run_entry(deck="inputs/saturation.yaml", overrides=[], d=d, r=16, dtype="float", mode="weak", ranks=1,
                          per_rank=p, fom=(100.0 if d == 1024 else 40.0) * (1, 1.9, 2.0)[p // 2],
                          sweep_point={"problem.d": d, "streams.per_rank": p}, sweep_index=k,
                          sweep_count=len(points), result="saturation.json")
        runs.append(run)
    return M.document("saturation.json", "gpu1", "inputs/saturation.yaml", [], 1, runs)


class ReportTest(S.TempDirTest):
    def make(self, inputs, *extra):
        out = os.path.join(self.tmp, "report")
        rc, stdout, err = S.run_main(report, list(inputs) + ["--out", out] + list(extra))
        page = None
        if os.path.exists(os.path.join(out, "README.md")):
            with open(os.path.join(out, "README.md"), encoding="utf-8") as f:
                page = f.read()
        return rc, page, err, out

    def copy_of(self, name, edit, new_name=None, subdir="in"):
        doc = copy.deepcopy(load(os.path.join(CPU, name)))
        edit(doc)
        return self.write_doc(new_name or name, doc, subdir)

    def test_dirty_tree_and_other_commit_are_warned(self):
        commit = load(os.path.join(CPU, SMOKE))["environment"]["git_commit"]

        def dirty(doc):
            doc["environment"]["git_dirty"] = True
        path = self.copy_of(SMOKE, dirty)
        rc, page, err, _out = self.make([path], "--no-plots")
        self.assertEqual(rc, 0, err)
        warnings = S.section(page, "## Warnings")
        self.assertIn("**WARNING: UNCOMMITTED CHANGES.** 1 of 1 file(s) were built from a tree with uncommitted "
                      "changes (`environment.git_dirty`: true)", warnings)
        self.assertIn("`%s` (commit %s)" % (SMOKE, commit), warnings)
        self.assertIn("**YES: built from a tree with uncommitted changes**", page)
        self.assertNotIn("DIFFERENT COMMITS", page)

        def clean(doc):
            doc["environment"]["git_dirty"] = False
        smoke = self.copy_of(SMOKE, clean, subdir="clean")
        other_commit = "0123456789ab" if not same_commit(commit, "0123456789ab") else "fedcba987654"

        def other(doc):
            clean(doc)
            doc["environment"]["git_commit"] = other_commit
        other = self.copy_of(SMOKE, other, "other.json")
        rc, page, err, _out = self.make([smoke, other], "--no-plots")
        self.assertEqual(rc, 0, err)
        self.assertIn("**WARNING: THE FILES COME FROM 2 DIFFERENT COMMITS:** `%s`: `%s`; `%s`: `other.json`." % (
            commit, SMOKE, other_commit), page)
        self.assertNotIn("UNCOMMITTED CHANGES", page)

        # The same commit written at another length is not another one.
        written = commit[:12] if len(commit) > 12 else commit + "0" * (40 - len(commit))

        def same(doc):
            clean(doc)
            doc["environment"]["git_commit"] = written
        same = self.copy_of(SMOKE, same, "same.json")
        rc, page, err, _out = self.make([smoke, same], "--no-plots")
        self.assertEqual(rc, 0, err)
        self.assertNotIn("DIFFERENT COMMITS", page)

    def test_non_result_json_in_a_directory_is_skipped_with_a_warning(self):
        d = os.path.join(self.tmp, "in")
        os.makedirs(d)
        shutil.copy(os.path.join(CPU, "smoke_cpu_np2.json"), d)
        other = self.write_doc("notes.json", {"hello": 1}, "in")
        rc, page, err, out = self.make([d], "--no-plots")
        self.assertEqual(rc, 0, err)
        self.assertEqual(err.splitlines(), ["warning: %s: not a mosaic_miniapp result file, skipped" % other])
        self.assertIn("Skipped 1 file(s) that are not mosaic_miniapp results: `%s`." % other, page)
        self.assertEqual(os.listdir(out), ["README.md"])  # --no-plots: no PNG

    def test_no_plots_writes_no_png(self):
        rc, page, err, out = self.make(cpu(*cpu_files()[2]), "--no-plots")
        self.assertEqual(rc, 0, err)
        self.assertEqual(os.listdir(out), ["README.md"])
        self.assertIn("Figures not drawn (--no-plots).", page)
        self.assertNotIn("![", page)
        self.assertIn("### Weak scaling", page.splitlines())  # the tables are still there
        self.assertIn("### Strong scaling", page.splitlines())

    def test_a_streams_per_rank_sweep_is_the_saturation_section(self):
        # A saturation deck's sweep (2 d x 3 stream counts, as inputs/saturation.yaml
        # sweeps them) is analysis.saturation's: a curve per d with its saturation
        # point and memory per stream, never a d curve per stream count.
        sat = saturation_sweep_doc()
        path = self.write_doc("saturation.json", sat, "in")
        rc, page, err, out = self.make([path] + S.fixture("synthetic_sweep_d.json"))
        self.assertEqual(rc, 0, err)
        section = S.section(page, "## Streams-per-device saturation")
        for d in (1024, 8192):
            curve = [line for line in section.splitlines() if line.startswith("### d=%d, r=16" % d)]
            self.assertEqual(len(curve), 1, section)
            text = S.section(section, curve[0])
            self.assertIn("FOM per stream (update samples/s)", text)  # analysis.saturation's table
            self.assertIn("peak RSS per stream [MiB]", text)
            self.assertIn("Saturation point: ", text)
        pngs = sorted(f for f in os.listdir(out) if f.endswith(".png"))
        self.assertEqual([p for p in pngs if p.startswith("saturation_")],
                         ["saturation_d1024_r16_float_Synthetic_GPU_X1.png",
                          "saturation_d8192_r16_float_Synthetic_GPU_X1.png"])
        for png in [p for p in pngs if p.startswith("saturation_")]:
            self.assertIn("(%s)" % png, section)
        # The d curves hold the d sweep only; sweep's own saturation figure is gone.
        self.assertNotIn("sweep_saturation.png", pngs)
        self.assertIn("sweep_throughput_vs_d.png", pngs)
        d_recs = [c.records for c in sweep.analyse(C.load_records([path] + S.fixture("synthetic_sweep_d.json")),
                                                    self.tmp, plots=False)[1]["Throughput vs d"]]
        self.assertEqual({r.file for recs in d_recs for r in recs}, {"synthetic_sweep_d.json"})
        # --no-plots: the saturation tables are still there.
        rc, page, err, out = self.make([path], "--no-plots")
        self.assertEqual(rc, 0, err)
        self.assertIn("Saturation point: ", S.section(page, "## Streams-per-device saturation"))

    def test_broken_input_is_one_line_and_exit_2(self):
        bad = os.path.join(self.tmp, "bad.json")
        with open(bad, "w") as f:
            f.write("{ not json")
        rc, page, err, out = self.make([bad])
        self.assertEqual(rc, 2, err)
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertTrue(err.startswith("analysis.report: error: %s: not valid JSON: " % bad), err)
        self.assertFalse(os.path.exists(out))

        # A field only the report reads, of another type: named by its path, nothing written.
        def breakdowns(doc):
            doc["runs"][0]["counts"]["breakdowns"] = 5
        path = self.copy_of("smoke_cpu_np2.json", breakdowns)
        rc, page, err, out = self.make([path])
        self.assertOneLineError(rc, err, "analysis.report",
                                "%s: runs[0].counts.breakdowns: expected an array, found a number (5)" % path)
        self.assertFalse(os.path.exists(out))

        # A named file that is not a result.
        other = self.write_doc("notes.json", {"hello": 1})
        rc, page, err, out = self.make([other])
        self.assertOneLineError(rc, err, "analysis.report", "%s: not a mosaic_miniapp result file (no \"program\": "
                                "\"mosaic_miniapp\")" % other)

    def test_out_is_checked_first(self):
        f = os.path.join(self.tmp, "file")
        open(f, "w").close()
        rc, out, err = S.run_main(report, cpu("smoke_cpu_np2.json") + ["--out", f])
        self.assertOneLineError(rc, err, "analysis.report",
                                "%s: exists and is not a directory (--out needs a directory for the figures)" % f)
        rc, out, err = S.run_main(report, cpu("smoke_cpu_np2.json"))
        self.assertEqual(rc, 2)
        self.assertIn("the following arguments are required: --out", err)

    def test_older_file_says_not_recorded(self):
        rc, page, err, _out = self.make(cpu(OLD), "--no-plots")
        self.assertEqual(rc, 0, err)
        sec = file_section(page, OLD)
        for quantity in ("started (UTC)", "hosts of the ranks", "compile flags", "Kokkos arch",
                         "uncommitted changes when the build was configured", "CUDA runtime"):
            self.assertEqual(row(sec, quantity)[0], "not recorded", quantity)
        run = run_section(page, OLD)
        self.assertTrue(row(run, "update kernel")[0].startswith(
            "not recorded (inferred from the deck: blocked, block size 64"))
        self.assertEqual(row(run, "verdict as the mini-app words it")[0], "not recorded")
        self.assertTrue(row(run, "device memory in use at the end of the run, cudaMemGetInfo, not a peak "
                                 "(schema_version 1)")[0].startswith("-1: no device"))
        for field in ("peak_allocated_bytes_per_rank", "peak_allocated_space", "device_used_bytes_at_phase",
                      "estimate_over_peak_allocated"):
            self.assertEqual(by_field(run, "runs[0].memory." + field)[1], "not recorded", field)
        self.assertIn("Warnings (`runs[0].warnings`): not recorded.", run)
        self.assertIn("(`environment.git_dirty` absent: older files) for 1 file(s)", page)

    def test_gzip_result(self):
        doc = load(os.path.join(CPU, GZ))
        rc, page, err, _out = self.make(cpu(GZ), "--no-plots")
        self.assertEqual(rc, 0, err)
        self.assertIn("## File: `%s`" % GZ, page)
        self.assertEqual(row(file_section(page, GZ), "git commit")[0], "`%s`" % doc["environment"]["git_commit"])
        for k, run in enumerate(doc["runs"]):
            self.assertEqual(row(run_section(page, GZ, k), "figure of merit: update_samples_per_second")[0],
                             "**%s samples/s (%r)**" % (C.fmt_rate(run["figure_of_merit"]["value"]),
                                                         run["figure_of_merit"]["value"]))

    def test_fixtures_gpu_failed_run_and_checksum_mismatch(self):
        rc, page, err, _out = self.make([S.FIXTURES], "--no-plots")
        self.assertEqual(rc, 0, err)
        self.assertEqual(row(file_section(page, "synthetic_strong_np2.json"), "GPUs seen on the host")[0],
                         "4 GPUs: 4 x Synthetic GPU X1 (memory 85,899,345,920 B (80.00 GiB), compute capability "
                         "9.0) [index 0, 1, 2, 3]")
        warnings = S.section(page, "## Warnings")
        self.assertIn("**WARNING: verification FAILED** in `synthetic_failed.json` runs[0]: orthonormality_error_max.",
                      warnings)
        self.assertIn("**WARNING: strong-scaling checksums differ** (d=256, r=16, float, 8 streams in all, 1000 steps, "
                      "exact/precision): MISMATCH: 1 stream checksum(s)", warnings)
        failed = run_section(page, "synthetic_failed.json")
        self.assertEqual(row(failed, "verification")[0], "**FAILED**")
        check = S.md_row_starting(failed, "not recorded", "orthonormality_error_max")  # no group in the fixture
        self.assertTrue(check[2].endswith(": **FAILED**"), check)

    def test_memory_of_schema_version_2(self):
        names = ["synthetic_strong_mismatch_np4.json", "synthetic_failed.json"]
        rc, page, err, _out = self.make(S.fixture(*names), "--no-plots")
        self.assertEqual(rc, 0, err)
        # A GPU run on 4 ranks (make_synthetic_fixtures.memory): 2 streams of 18,436 B each per rank, so
        # 3 x 36,872 B + (rank + 1) x 4 KiB: the largest peak is rank 3's; estimate / peak = 110,616 / 114,712.
        gpu = run_section(page, names[0])
        m = "runs[0].memory."
        quantity, value = by_field(gpu, m + "peak_allocated_bytes_per_rank")
        self.assertTrue(quantity.startswith("peak allocated through Kokkos in the execution space's memory space"))
        self.assertIn("; the file says: each rank's high-water mark of the bytes allocated through Kokkos", quantity)
        self.assertEqual(value, "max 127,000 B (124.02 KiB) (rank 3) in Cuda; per rank: 114,712 B (112.02 KiB), "
                                "118,808 B (116.02 KiB), 122,904 B (120.02 KiB), 127,000 B (124.02 KiB)")
        self.assertEqual(by_field(gpu, m + "peak_allocated_space")[1], "Cuda")
        self.assertEqual(by_field(gpu, m + "estimate_over_peak_allocated")[1], "%.3f" % (110616 / 114712))
        self.assertEqual(by_field(gpu, m + "estimate_rank0")[1], "110,616 B (108.02 KiB) / 36,872 B (36.01 KiB)")
        quantity, value = by_field(gpu, m + "device_used_bytes_at_phase")
        self.assertIn("cudaMemGetInfo total - free: the CUDA context and every other process included", quantity)
        base = M.CUDA_CONTEXT + 127000
        self.assertEqual(value, "; ".join("%s %s" % (p, report.fmt_bytes(b)) for p, b in (
            ("setup", M.CUDA_CONTEXT + 2 * 36872 + 4 * 4096), ("start", base),
            ("warmup", base + M.OUTSIDE_KOKKOS), ("timed_loop", base + M.OUTSIDE_KOKKOS),
            ("loop_end", base + M.OUTSIDE_KOKKOS))))
        self.assertTrue(value.startswith("setup 536,961,040 B (512.09 MiB); start "), value)
        self.assertNotIn("device_bytes_in_use_max", gpu)
        # A host run on 1 rank: its peak (3 x 2 streams x 2,696 B + 4 KiB) in Host, no device.
        host = run_section(page, names[1])
        self.assertEqual(by_field(host, m + "peak_allocated_bytes_per_rank")[1],
                         "max 20,272 B (19.80 KiB) (rank 0) in Host")
        self.assertEqual(by_field(host, m + "peak_allocated_space")[1], "Host")
        self.assertEqual(by_field(host, m + "device_used_bytes_at_phase")[1], "null: no device queried (a host backend; only Cuda is queried)")
        # A peak of 0 (null ratio) and a phase list with a mistyped entry.
        doc = S.load_fixture(names[1])
        doc["runs"][0]["memory"].update(peak_allocated_bytes_per_rank=[0], estimate_over_peak_allocated=None)
        rc, page, err, _out = self.make([self.write_doc("zero.json", doc)], "--no-plots")
        self.assertEqual(rc, 0, err)
        self.assertEqual(by_field(run_section(page, "zero.json"), m + "estimate_over_peak_allocated")[1],
                         "null: a peak of 0")
        doc = S.load_fixture(names[0])
        doc["runs"][0]["memory"]["device_used_bytes_at_phase"][1]["bytes"] = "many"
        path = self.write_doc("bad_phase.json", doc)
        rc, page, err, _out = self.make([path], "--no-plots")
        self.assertOneLineError(rc, err, "analysis.report", "%s: runs[0].memory.device_used_bytes_at_phase[1].bytes: "
                                "expected an integer or null, found a string (\"many\")" % path)


WRAPPER = """
import runpy, sys
sys.modules["matplotlib"] = None
sys.modules["numpy"] = None
sys.argv = ["analysis.report"] + sys.argv[1:]
runpy.run_module("analysis.report", run_name="__main__", alter_sys=True)
"""


class WithoutMatplotlibTest(S.TempDirTest):
    def run_without(self, args):
        env = dict(os.environ, MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1")
        return subprocess.run([sys.executable, "-c", WRAPPER] + args, cwd=S.REPO, env=env, capture_output=True,
                              text=True, timeout=60)

    def test_no_plots_needs_neither_numpy_nor_matplotlib(self):
        out = os.path.join(self.tmp, "r")
        p = self.run_without(cpu("smoke_cpu_np2.json") + ["--out", out, "--no-plots"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(os.listdir(out), ["README.md"])
        p = self.run_without(cpu("smoke_cpu_np2.json") + ["--out", os.path.join(self.tmp, "s")])
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        self.assertIn("analysis.report: error: matplotlib is not installed", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "s")))  # nothing written

    def test_help_as_module_and_script(self):
        for args in (["-m", "analysis.report", "--help"], [os.path.join("analysis", "report.py"), "--help"]):
            p = subprocess.run([sys.executable] + args, cwd=S.REPO, capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("usage: python3 -m analysis.report", p.stdout)
            self.assertIn("--out REPORT_DIR", p.stdout)


if __name__ == "__main__":
    unittest.main()
