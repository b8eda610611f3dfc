"""analysis.report: the page made from committed CPU result files and the
synthetic fixtures holds the files' own numbers (commit, command, FOM,
efficiency, diagnostics, memory, accuracy, verdict), says "no GPU" and "not
recorded" where the files say so, warns about a dirty tree and differing
commits, skips non-result JSON, refuses broken input in one line, and
--no-plots draws nothing (and needs no matplotlib)."""

import copy
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import analysis_test_support as S
from analysis import common as C
from analysis import report, scaling

CPU = os.path.join(S.REPO, "results", "cpu")
WEAK = ["weak_perrank4_steps200_omp1_np1.json", "weak_perrank4_steps200_omp1_np2.json"]
STRONG = ["strong_total8_steps200_omp1_np1.json", "strong_total8_steps200_omp1_np2.json"]
OTHERS = ["smoke_cpu_np2.json", "pm10_b5795d48fad6.json"]
FILES = WEAK + STRONG + OTHERS
OLD = "setup_init_diagnostics_10k_block64_3d52c31798e5.json"  # no git_dirty, timestamps, kernel, warnings
GZ = "missing_outage_geodesic_1a749c296e82.json.gz"


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


class ReportOnCpuResults(unittest.TestCase):
    """One run with figures on the committed CPU results (the slow part), shared by the tests."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="mosaic_report_test_")
        cls.out = os.path.join(cls.tmp, "report")
        cls.rc, cls.stdout, cls.stderr = S.run_main(report, cpu(*FILES) + ["--out", cls.out])
        with open(os.path.join(cls.out, "README.md"), encoding="utf-8") as f:
            cls.page = f.read()
        cls.docs = {n: load(p) for n, p in zip(FILES, cpu(*FILES))}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, True)

    def test_exit_status_and_summary_line(self):
        self.assertEqual(self.rc, 0, self.stderr)
        self.assertIn("analysis.report: wrote %s: 6 run(s) from 6 file(s)" % os.path.join(self.out, "README.md"),
                      self.stdout)

    def test_commit_command_deck_and_time_of_every_file(self):
        for name, doc in self.docs.items():
            sec = file_section(self.page, name)
            sec = "\n".join(S.section(sec, h) for h in ("### Invocation", "### Hardware", "### Software",
                                                         "### Source code"))
            env = doc["environment"]
            self.assertEqual(row(sec, "git commit")[0], "`%s`" % env["git_commit"])
            self.assertEqual(row(sec, "uncommitted changes when the build was configured")[0], "no (clean tree)")
            self.assertIn(" ".join(doc["command_line"]), sec)  # no argument here needs quoting
            self.assertEqual(row(sec, "deck")[0], "`%s`" % doc["deck_path"])
            self.assertEqual(row(sec, "MPI ranks")[0], str(doc["mpi_ranks"]))
            self.assertEqual(row(sec, "started (UTC)")[0], doc["timestamp_utc"])
            self.assertEqual(row(sec, "compiler")[0], env["compiler"])
            self.assertEqual(row(sec, "Kokkos version")[0], env["kokkos_version"])
            self.assertEqual(row(sec, "MPI library")[0], env["mpi_library"])
            self.assertEqual(row(sec, "CUDA runtime")[0], "not recorded")  # CPU builds record no CUDA
        # Three commits among the six files: the page says so loudly.
        self.assertIn("**WARNING: THE FILES COME FROM 2 DIFFERENT COMMITS:**", self.page)
        self.assertNotIn("UNCOMMITTED CHANGES", self.page)

    def test_no_gpu_on_these_cpu_files(self):
        for name in FILES:
            self.assertEqual(row(file_section(self.page, name), "GPUs seen on the host")[0],
                             "no GPU (environment.gpus is empty)")
            self.assertIn("the host CPU", row(file_section(self.page, name), "kernels ran on")[0])

    def test_figure_of_merit_of_every_run(self):
        summary = S.section(self.page, "## Runs")
        for name, doc in self.docs.items():
            fom = doc["runs"][0]["figure_of_merit"]
            sec = run_section(self.page, name)
            self.assertEqual(row(sec, "figure of merit: update_samples_per_second")[0],
                             "**%s samples/s (%r)**" % (C.fmt_rate(fom["value"]), fom["value"]))
            self.assertEqual(row(sec, "its definition")[0], fom["definition"])
            rows = [r for r in S.md_rows(summary) if r[1] == name]
            self.assertEqual(len(rows), 1, name)
            self.assertEqual(rows[0][11], C.fmt_rate(fom["value"]))
        self.assertIn("756,107", run_section(self.page, "smoke_cpu_np2.json"))

    def test_scaling_efficiency_is_analysis_scaling_s(self):
        records = C.load_records(cpu(*FILES))
        text, _groups, _reports, _figs = scaling.analyse(records, self.tmp, plots=False)
        ours = S.section(self.page, "## Scaling efficiency")
        for which in ("Weak", "Strong"):
            theirs = [line for line in text.splitlines() if line.startswith("## ") and "8192" in line and
                      ("streams/rank" in line) == (which == "Weak")]
            self.assertEqual(len(theirs), 1, text)
            heading = "### %s scaling: %s" % (which, theirs[0][3:])
            self.assertEqual(S.md_row_starting(S.section(ours, heading), "2"),
                             S.md_row_starting(S.section(text, theirs[0]), "2"))
        # And by hand from the files: weak (FOM(2)/2) / FOM(1), strong FOM(2) / (2 FOM(1)).
        f = {n: d["runs"][0]["figure_of_merit"]["value"] for n, d in self.docs.items()}
        weak = (f[WEAK[1]] / 2) / f[WEAK[0]]
        strong = f[STRONG[1]] / (2 * f[STRONG[0]])
        self.assertEqual(S.md_row_starting(ours, "2", "1", "8")[6], C.fmt_eff(weak))  # weak: 8 streams in all
        self.assertEqual(S.md_row_starting(ours, "2", "1", "4")[6], C.fmt_eff(strong))  # strong: 4 per rank
        self.assertTrue(row(run_section(self.page, WEAK[1]), "parallel efficiency")[0].startswith(
            C.fmt_eff(weak) + " (weak scaling, against 1 rank"))
        self.assertIn("AGREE: 8 streams, bit-identical", ours)

    def test_stability_memory_and_accuracy_values(self):
        doc = self.docs["smoke_cpu_np2.json"]
        run = doc["runs"][0]
        fin = run["diagnostics"]["final"]
        sec = run_section(self.page, "smoke_cpu_np2.json")
        self.assertEqual(row(sec, "orthonormality error (Frobenius norm of U^T U - I), max over streams"),
                         [C.fmt_sci(fin["orthonormality_error_max"]),
                          "`runs[0].diagnostics.final.orthonormality_error_max`"])
        self.assertEqual(row(sec, "noise variance s2, min over streams")[0], C.fmt_sci(fin["s2_min"]))
        self.assertEqual(row(sec, "clamped covariance steps, all streams")[0], str(fin["clamped_steps"]))
        self.assertEqual(row(sec, "unresolved-residual blocked steps (ALGORITHM.md section 6), all streams")[0],
                         str(fin["unresolved_residual_steps"]))
        self.assertEqual(row(sec, "of those, residuals recomputed explicitly")[0], "not recorded")
        self.assertEqual(row(sec, "breakdowns")[0], "none")
        mem = run["memory"]
        self.assertTrue(row(sec, "state of one stream: mu, U, S, s2 (d + d r + r^2 + 1 scalars of the dtype)")[0]
                        .startswith("{:,} B".format(mem["state_bytes_per_stream"])))
        self.assertIn("null: a host backend", sec)
        self.assertIn("max {:,} B".format(max(mem["peak_rss_bytes_per_rank"])), sec)
        self.assertEqual(row(sec, "accuracy judged")[0], "checked")
        self.assertEqual(row(sec, "projector distance to the truth, mean over streams")[0],
                         C.fmt_sci(fin["accuracy"]["projector_distance_mean"]))
        self.assertEqual(row(sec, "verification")[0], "**PASSED**")
        self.assertIn("- **WARNING:** " + run["warnings"][0], sec)
        self.assertIn("rate eta_U | 0.005 |", sec)

        weak = run_section(self.page, WEAK[0])
        self.assertEqual(row(weak, "accuracy judged")[0], "**not checked** (run.accuracy: throughput_only)")
        pm10 = run_section(self.page, "pm10_b5795d48fad6.json")
        pre = self.docs["pm10_b5795d48fad6.json"]["runs"][0]["prequential"]
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
        machines = {n: "%s on vm" % d["environment"]["cpu_model"] for n, d in self.docs.items()}
        for png in pngs:
            refs = [line for line in self.page.splitlines() if line.startswith("![") and line.endswith("(%s)" % png)]
            self.assertEqual(len(refs), 1, png)
            captions = [line for line in self.page.splitlines()
                        if line.startswith("*Figure ") and line.endswith("(`%s`)" % png)]
            self.assertEqual(len(captions), 1, png)
            self.assertRegex(captions[0], r"\. Machine: .+ on vm\. Commit: [0-9a-f]{12}.*\. Deck: inputs/")
            # The runs a figure shows: their machine, commit and deck are in its caption.
            shown = [n for n, d in self.docs.items() if "/%s" % os.path.basename(d["deck_path"]) in captions[0]]
            self.assertTrue(shown, captions[0])
            for n in shown:
                self.assertIn(machines[n], captions[0])
                self.assertIn(self.docs[n]["environment"]["git_commit"], captions[0])
        throughput = [line for line in self.page.splitlines() if line.startswith("*Figure 1: ")][0]
        for n, d in self.docs.items():
            for text in (machines[n], d["environment"]["git_commit"], d["deck_path"]):
                self.assertIn(text, throughput)
        meta = S.png_text(os.path.join(self.out, report.THROUGHPUT_FIGURE))
        self.assertIn("60e159637613", meta["Description"])
        self.assertIn("b5795d48fad6", meta["Description"])


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
        def dirty(doc):
            doc["environment"]["git_dirty"] = True
        path = self.copy_of("smoke_cpu_np2.json", dirty)
        rc, page, err, _out = self.make([path], "--no-plots")
        self.assertEqual(rc, 0, err)
        warnings = S.section(page, "## Warnings")
        self.assertIn("**WARNING: UNCOMMITTED CHANGES.** 1 of 1 file(s) were built from a tree with uncommitted "
                      "changes (`environment.git_dirty`: true)", warnings)
        self.assertIn("`smoke_cpu_np2.json` (commit 60e159637613)", warnings)
        self.assertIn("**YES: built from a tree with uncommitted changes**", page)
        self.assertNotIn("DIFFERENT COMMITS", page)

        def other_commit(doc):
            doc["environment"]["git_commit"] = "0123456789ab"
        other = self.copy_of("smoke_cpu_np2.json", other_commit, "other.json")
        rc, page, err, _out = self.make(cpu("smoke_cpu_np2.json") + [other], "--no-plots")
        self.assertEqual(rc, 0, err)
        self.assertIn("**WARNING: THE FILES COME FROM 2 DIFFERENT COMMITS:** `60e159637613`: `smoke_cpu_np2.json`; "
                      "`0123456789ab`: `other.json`.", page)
        self.assertNotIn("UNCOMMITTED CHANGES", page)

        def long_commit(doc):  # the same commit written in full is not another one
            doc["environment"]["git_commit"] = "60e159637613" + "0" * 28
        same = self.copy_of("smoke_cpu_np2.json", long_commit, "same.json")
        rc, page, err, _out = self.make(cpu("smoke_cpu_np2.json") + [same], "--no-plots")
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
        rc, page, err, out = self.make(cpu(*FILES), "--no-plots")
        self.assertEqual(rc, 0, err)
        self.assertEqual(os.listdir(out), ["README.md"])
        self.assertIn("Figures not drawn (--no-plots).", page)
        self.assertNotIn("![", page)
        self.assertIn("### Weak scaling: ", page)  # the tables are still there

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
        self.assertTrue(row(run, "device memory in use, max over ranks (cudaMemGetInfo total - free: the whole "
                                 "device, other processes included)")[0].startswith("-1: no device"))
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
