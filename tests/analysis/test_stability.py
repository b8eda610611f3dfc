"""analysis.stability: grouping by deck, the series read from the file, the
summary table, and the figures."""

import math
import os
import unittest

import analysis_test_support as S
import make_synthetic_fixtures as M
from analysis import common as C
from analysis import stability

DRIFT = ["synthetic_drift_np1.json", "synthetic_drift_np2.json"]


class StabilityTest(S.TempDirTest):
    def test_runs_sharing_a_deck_are_grouped(self):
        recs = C.load_records(S.fixture(*(DRIFT + ["synthetic_sweep_d.json", "synthetic_failed.json"])
                                        + S.fixture("synthetic_strong_np1.json", "synthetic_strong_mismatch_np2.json")))
        groups = stability.deck_groups(recs)
        # The drift files differ only in output.result: one group. The two strong
        # files share the deck file but not the overrides: two groups.
        self.assertEqual([[r.label() for r in g] for g in groups], [
            ["synthetic_drift_np1.json", "synthetic_drift_np2.json"],
            ["synthetic_sweep_d.json #0", "synthetic_sweep_d.json #1", "synthetic_sweep_d.json #2"],
            ["synthetic_failed.json"],
            ["synthetic_strong_np1.json"],
            ["synthetic_strong_mismatch_np2.json"],
        ])
        self.assertEqual(len(stability.deck_groups(recs, per_run=True)), 8)
        g = groups[0]
        self.assertEqual(stability.run_label(g[1], g), "np=2 (synthetic_drift_np2.json)")
        self.assertEqual(stability.run_label(groups[1][2], groups[1]), "problem.d=1024")

    def test_series_values(self):
        rec = C.load_records(S.fixture("synthetic_drift_np2.json"))[0]
        get, _label, _log, _title, null_nonfinite = stability.PANELS[1]
        xs, ys, nonfinite = stability._series(rec, get, null_nonfinite)
        self.assertEqual(xs, [1000, 2000, 3000, 4000, 5000, 6000])
        self.assertEqual(nonfinite, 1)
        self.assertTrue(math.isnan(ys[2]))  # a gap, not a point
        self.assertEqual(ys[:2] + ys[3:], [11.0, 12.0, 14.0, 15.0, 16.0])
        get, _label, _log, _title, null_nonfinite = stability.PANELS[3]
        self.assertEqual(stability._series(rec, get, null_nonfinite)[1], [0, 0, 2, 3, 3, 5])
        get, _label, _log, _title, null_nonfinite = stability.PANELS[2]
        self.assertAlmostEqual(stability._series(rec, get, null_nonfinite)[1][-1], 0.05, places=15)

    def test_summary_table(self):
        rc, out, err = S.run_main(stability, S.fixture(*(DRIFT + ["synthetic_failed.json"])) + ["--no-plots"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(S.md_row_starting(out, "synthetic_drift_np1.json"),
                         ["synthetic_drift_np1.json", "1", "1", "6000", "6", "6.000e-13", "1.600e+01", "5.000e-02",
                          "5", "PASSED"])
        self.assertEqual(S.md_row_starting(out, "synthetic_drift_np2.json")[6], "non-finite")
        self.assertEqual(S.md_row_starting(out, "synthetic_failed.json")[-1], "FAILED")
        self.assertIn("## accuracy_drift.yaml\n", out)

    def test_pngs(self):
        rc, out, err = S.run_main(stability, S.fixture(*(DRIFT + ["synthetic_sweep_d.json"])) + ["--out", self.tmp])
        self.assertEqual(rc, 0, err)
        pngs = sorted(os.listdir(self.tmp))
        self.assertEqual(len(pngs), 2)  # one per deck
        self.assertIn("stability_accuracy_drift.png", pngs)
        meta = self.assertPng(os.path.join(self.tmp, "stability_accuracy_drift.png"),
                              ["Synthetic CPU Model 9000 (test fixture) on synthetic-cpu-host", "git " + M.COMMIT_CPU])
        self.assertIn("d=256, r=8, double", meta["Title"])
        other = [p for p in pngs if p != "stability_accuracy_drift.png"][0]
        self.assertRegex(other, r"^stability_single_gpu_[0-9a-f]{6}\.png$")
        self.assertPng(os.path.join(self.tmp, other), ["Synthetic GPU X1 on synthetic-gpu-node-1"])
        for p in pngs:
            self.assertIn("Figure: " + os.path.join(self.tmp, p), out)

    def test_null_series_entry_is_one_line(self):
        # Issue 32: a null entry in diagnostics.series was an AttributeError traceback.
        def null_entry(doc):
            doc["runs"][0]["diagnostics"]["series"][1] = None
        bad = self.variant("synthetic_drift_np1.json", "null_entry.json", null_entry)
        rc, out, err = S.run_main(stability, [bad, "--no-plots"])
        self.assertOneLineError(rc, err, "analysis.stability",
                                "%s: runs[0].diagnostics.series[1]: expected an object, found null" % bad)
        self.assertEqual(out, "")


if __name__ == "__main__":
    unittest.main()
