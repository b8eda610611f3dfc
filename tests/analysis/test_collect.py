"""analysis.collect: the Markdown and CSV tables hold the right values."""

import contextlib
import csv
import importlib.util
import io
import os
import unittest

import analysis_test_support as S
import make_synthetic_fixtures as M
from analysis import collect
from analysis import common as C


class CollectTest(S.TempDirTest):
    def run_collect(self, inputs, *extra):
        csv_path = os.path.join(self.tmp, "out", "runs.csv")
        rc, out, err = S.run_main(collect, list(inputs) + ["--csv", csv_path] + list(extra))
        rows = []
        if os.path.exists(csv_path):
            with open(csv_path, newline="", encoding="utf-8") as f:
                rows = list(csv.DictReader(f))
        return rc, out, err, rows

    def test_all_fixtures_markdown(self):
        rc, out, err, _rows = self.run_collect([S.FIXTURES])
        self.assertEqual(rc, 0, err)
        header = S.md_rows(out)[0]
        self.assertEqual(header[:10], ["file", "d", "r", "dtype", "mode", "ranks", "streams total", "streams/rank",
                                       "steps", "sweep point"])
        self.assertEqual(len(S.md_rows(out)), 1 + 23)  # header + every run of the 15 files
        col = {h: k for k, h in enumerate(header)}

        row = S.md_row_starting(out, "synthetic_weak_np2.json")
        self.assertEqual(row[1:10], ["512", "16", "double", "weak", "2", "8", "4", "1000", "-"])
        self.assertEqual(row[col["FOM (update samples/s)"]], "1,900")
        self.assertEqual(row[col["end-to-end samples/s"]], "1,520")
        self.assertEqual(row[col["efficiency"]], "0.950")  # (1900/2) / (1000/1)
        self.assertEqual(row[col["verification"]], "PASSED")

        row = S.md_row_starting(out, "synthetic_strong_np4.json")
        self.assertEqual(row[col["efficiency"]], "0.750")  # 2400 / (4 * 800)
        self.assertEqual(row[col["streams/rank"]], "2")

        # No 1-rank run: the base is 2 ranks, and the table says so.
        row = S.md_row_starting(out, "synthetic_strong_mismatch_np4.json")
        self.assertEqual(row[col["efficiency"]], "0.900 (base 2 ranks)")  # (900/4) / (500/2)

        row = S.md_row_starting(out, "synthetic_sweep_d.json #1")
        self.assertEqual(row[col["d"]], "512")
        self.assertEqual(row[col["sweep point"]], "problem.d=512")
        self.assertEqual(row[col["FOM (update samples/s)"]], "2,000")
        self.assertEqual(row[col["efficiency"]], "")  # no rank-count baseline

        row = S.md_row_starting(out, "synthetic_drift_np2.json")
        self.assertEqual(row[col["orth. err"]], "6.000e-13")
        self.assertEqual(row[col["cond(S)"]], "1.600e+01")
        self.assertEqual(row[col["clamped steps"]], "5")
        self.assertEqual(row[col["proj. dist."]], "5.000e-02")
        self.assertEqual(row[col["efficiency"]], "0.900")

        row = S.md_row_starting(out, "synthetic_failed.json")
        self.assertEqual(row[col["FOM (update samples/s)"]], "12,346")
        self.assertEqual(row[col["verification"]], "FAILED")
        self.assertIn("23 run(s) from 15 file(s); 22 PASSED, 1 FAILED.", out)
        self.assertIn("FAILED: synthetic_failed.json: orthonormality_error_max", out)

    def test_csv_full_precision(self):
        rc, _out, err, rows = self.run_collect(S.fixture(
            "synthetic_strong_mismatch_np2.json", "synthetic_strong_mismatch_np4.json", "synthetic_failed.json",
            "synthetic_saturation.json"))
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(rows), 2 + 1 + 4)
        by = {(os.path.basename(r["file"]), r["run_index"]): r for r in rows}
        r = by[("synthetic_strong_mismatch_np4.json", "0")]
        self.assertEqual(float(r["fom_update_samples_per_s"]), 900.0)
        self.assertAlmostEqual(float(r["efficiency"]), 0.9, places=12)
        self.assertEqual(r["efficiency_base_ranks"], "2")
        self.assertEqual((r["d"], r["r"], r["dtype"], r["mode"], r["ranks"], r["streams_total"]),
                         ("256", "16", "float", "strong", "4", "8"))
        self.assertEqual(r["machine"], "Synthetic GPU X1")
        self.assertEqual(r["verification"], "PASSED")
        r = by[("synthetic_failed.json", "0")]
        self.assertEqual(float(r["fom_update_samples_per_s"]), 12345.678)  # not rounded in the CSV
        self.assertEqual(float(r["orthonormality_error_max"]), 1e-6)
        self.assertEqual(r["verification"], "FAILED")
        self.assertEqual(r["failed_checks"], "orthonormality_error_max")
        self.assertEqual(r["efficiency"], "")
        r = by[("synthetic_saturation.json", "3")]
        self.assertEqual((r["streams_per_rank"], r["streams_total"], r["sweep_point"]),
                         ("8", "8", "streams.per_rank=8"))

    def test_nonfinite_condition_is_reported(self):
        def edit(doc):
            doc["runs"][0]["diagnostics"]["final"]["s_condition_max"] = None
        path = self.variant("synthetic_failed.json", "inf_cond.json", edit)
        rc, out, _err, rows = self.run_collect([path])
        self.assertEqual(rc, 0)
        self.assertIn("non-finite", S.md_row_starting(out, "inf_cond.json"))
        self.assertEqual(rows[0]["s_condition_max"], "")

    def test_same_file_name_in_two_directories_is_shown_by_path(self):
        a = self.variant("synthetic_weak_np1.json", "run.json", lambda d: None, "siteA")
        b = self.variant("synthetic_weak_np2.json", "run.json", lambda d: None, "siteB")
        rc, out, _err, _rows = self.run_collect([a, b])
        self.assertEqual(rc, 0)
        files = [r[0] for r in S.md_rows(out)[1:]]
        self.assertEqual(files, [os.path.normpath(a), os.path.normpath(b)])

    def test_errors(self):
        rc, _out, err, _rows = self.run_collect([os.path.join(self.tmp, "missing.json")])
        self.assertEqual(rc, 2)
        self.assertIn("missing.json: cannot read", err)
        other = self.write_doc("other.json", {"hello": 1})
        rc, _out, err, _rows = self.run_collect([other])
        self.assertEqual(rc, 2)
        self.assertIn("not a mosaic_miniapp result file", err)
        # In a directory scan, foreign JSON files are skipped with a warning.
        self.variant("synthetic_weak_np1.json", "good.json", lambda d: None)
        rc, out, err, rows = self.run_collect([self.tmp])
        self.assertEqual(rc, 0, err)
        self.assertIn("other.json: not a mosaic_miniapp result file, skipped", err)
        self.assertEqual(len(rows), 1)
        for version in (3, 0, True, "2"):
            bad = self.variant("synthetic_weak_np1.json", "v3.json", lambda d: d.update(schema_version=version))
            rc, _out, err, _rows = self.run_collect([bad])
            self.assertOneLineError(rc, err, "analysis.collect", "%s: schema_version %r is not supported (expected 1 "
                                    "or 2)" % (bad, version))

    def test_schema_version_1_is_read_and_not_validated(self):
        # docs/RESULT-FORMAT.md: a version 1 file is read (its peak fields None); --validate checks against the
        # version 2 schema only, so a version 1 file is left unvalidated with a warning naming it, not refused.
        v1 = self.variant("synthetic_weak_np2.json", "v1.json", M.version1)
        v2 = S.fixture("synthetic_weak_np2.json")[0]
        rc, out, err, rows = self.run_collect([v1, v2])
        self.assertEqual(rc, 0, err)
        self.assertEqual(err, "")
        self.assertEqual([float(r["fom_update_samples_per_s"]) for r in rows], [1900.0, 1900.0])
        recs = C.load_records([v1, v2])
        state = (512 + 512 * 16 + 16 * 16 + 1) * 8  # d=512, r=16, double; 4 streams per rank, 2 ranks
        self.assertEqual([(r.peak_allocated_bytes_per_rank, r.peak_allocated_bytes_max, r.peak_allocated_space)
                          for r in recs], [([], None, None), ([3 * state * 4 + 4096, 3 * state * 4 + 8192],
                                                              3 * state * 4 + 8192, "Cuda")])
        if importlib.util.find_spec("jsonschema") is None:
            self.skipTest("python3-jsonschema not installed")
        rc, out, err, rows = self.run_collect([v1, v2], "--validate")
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(rows), 2)
        self.assertEqual(err.splitlines(), [
            "warning: %s: schema_version 1: not validated: docs/result.schema.json describes schema_version 2 "
            "(docs/RESULT-FORMAT.md); the file is read without that check" % v1])
        # The version 2 schema refuses a version 1 file: that is why it is not validated.
        import jsonschema
        doc = M.version1(S.load_fixture("synthetic_weak_np1.json"))
        self.assertTrue(list(jsonschema.Draft202012Validator(C.load_schema()).iter_errors(doc)))
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertFalse(C.validate_document(doc, "v1.json"))
        self.assertIn("warning: v1.json: schema_version 1: not validated", err.getvalue())
        # A version 2 file without a field version 2 requires is refused.
        bad = self.variant("synthetic_weak_np2.json", "nopeak.json",
                           lambda d: d["runs"][0]["memory"].pop("peak_allocated_bytes_per_rank"))
        rc, _out, err, _rows = self.run_collect([bad], "--validate")
        self.assertEqual(rc, 2)
        self.assertIn("'peak_allocated_bytes_per_rank' is a required property", err)

    def test_a_number_where_an_object_belongs_is_one_line(self):
        # Issue 32: runs[0].timer_coverage as a number was an AttributeError traceback, exit 1.
        bad = self.variant("synthetic_weak_np1.json", "cov.json", lambda d: d["runs"][0].update(timer_coverage=0.5))
        rc, out, err, _rows = self.run_collect([bad])
        self.assertOneLineError(rc, err, "analysis.collect", "%s: runs[0].timer_coverage: expected an object or "
                                "null, found a number (0.5)" % bad)
        self.assertEqual(out, "")

    def test_streams_as_a_list_is_one_line_with_and_without_validate(self):
        # Issue 32: the schema does not constrain resolved_deck.streams, so --validate passed it too.
        bad = self.variant("synthetic_weak_np1.json", "streams.json",
                           lambda d: d["runs"][0]["resolved_deck"].update(streams=[]))
        for extra in ([], ["--validate"]):
            rc, _out, err, _rows = self.run_collect([bad], *extra)
            self.assertOneLineError(rc, err, "analysis.collect",
                                    "%s: runs[0].resolved_deck.streams: expected an object, found an array" % bad)

    def test_field_checks(self):
        self.assertEqual(C.expect({}, "object", "x"), {})
        self.assertEqual(C.expect(3.0, "integer", "x"), 3.0)
        for value, kinds, message in [
                (None, "object", "x: expected an object, found null"),
                (True, "number", "x: expected a number, found a boolean (true)"),
                (2.5, "integer", "x: expected an integer, found a number (2.5)"),
                ("a" * 50, ("array", "null"), 'x: expected an array or null, found a string ("%s...)' % ("a" * 36))]:
            with self.assertRaises(C.FieldError) as cm:
                C.expect(value, kinds, "x")
            self.assertEqual(str(cm.exception), message)
        with self.assertRaises(C.FieldError) as cm:
            C.field({}, "value", "number", "runs[0].figure_of_merit")
        self.assertEqual(str(cm.exception), "runs[0].figure_of_merit.value: missing")
        self.assertIsNone(C.field({}, "value", "number", "w", None))

    def test_csv_that_cannot_be_written_is_refused_before_the_work(self):
        # Issue 32: --csv /proc/nope/x.csv was a FileNotFoundError traceback after the work.
        # The input does not exist either: the CSV path is checked first.
        missing_input = os.path.join(self.tmp, "missing.json")
        blocker = os.path.join(self.tmp, "file")
        open(blocker, "w").close()
        cases = [(os.path.join(blocker, "x.csv"), "cannot make its directory: %s is not a directory" % blocker),
                 (self.tmp, "is a directory (expected a file name)")]
        if os.path.isdir("/proc/self"):
            cases.append(("/proc/nope/x.csv", "cannot make its directory /proc/nope: No such file or directory"))
        for path, what in cases:
            rc, out, err = S.run_main(collect, [missing_input, "--csv", path])
            self.assertOneLineError(rc, err, "analysis.collect", "%s: %s" % (path, what))
            self.assertEqual(out, "")

    def test_validate_option_rejects_a_schema_violation(self):
        if importlib.util.find_spec("jsonschema") is None:
            self.skipTest("python3-jsonschema not installed")
        bad = self.variant("synthetic_weak_np1.json", "bad.json", lambda d: d["runs"][0].pop("memory"))
        rc, _out, _err, _rows = self.run_collect([bad])
        self.assertEqual(rc, 0)  # memory is not used by collect
        rc, _out, err, _rows = self.run_collect([bad], "--validate")
        self.assertEqual(rc, 2)
        self.assertIn("'memory' is a required property", err)


if __name__ == "__main__":
    unittest.main()
