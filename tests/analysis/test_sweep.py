"""analysis.sweep: curves vs d, vs r and vs streams per rank, their tables and figures."""

import os
import unittest

import analysis_test_support as S
import make_synthetic_fixtures as M
from analysis import common as C
from analysis import sweep

SWEEPS = ["synthetic_sweep_d.json", "synthetic_sweep_r.json", "synthetic_saturation.json"]


class SweepTest(S.TempDirTest):
    def test_curves(self):
        recs = C.load_records(S.fixture(*(SWEEPS + ["synthetic_weak_np1.json", "synthetic_strong_np1.json"])))
        _text, found, figs = sweep.analyse(recs, self.tmp, plots=False)
        self.assertEqual(figs, [])
        vs_d, vs_r, sat = found.values()
        self.assertEqual([[(x, f) for x, f, _r in c.points] for c in vs_d],
                         [[(256, 4000.0), (512, 2000.0), (1024, 1000.0)]])
        self.assertEqual([[(x, f) for x, f, _r in c.points] for c in vs_r],
                         [[(8, 3000.0), (32, 1500.0), (64, 600.0)]])
        self.assertEqual(len(sat), 1)
        self.assertEqual([x for x, _f, _r in sat[0].points], [1.0, 2.0, 4.0, 8.0])
        self.assertEqual(sweep.saturation_point(sat[0]), 4.0)  # 1000 >= 0.9 * 1050 > 580
        self.assertEqual(sweep.saturation_point(sat[0], fraction=0.99), 8.0)

    def test_tables(self):
        rc, out, err = S.run_main(sweep, S.fixture(*SWEEPS) + ["--no-plots"])
        self.assertEqual(rc, 0, err)
        d = S.section(out, "# Throughput vs d")
        self.assertEqual(S.md_row_starting(d, "512"), ["512", "1", "2,000", "250", "1,600", "PASSED"])
        r = S.section(out, "# Throughput vs r")
        self.assertEqual(S.md_row_starting(r, "64"), ["64", "1", "600", "75", "480", "PASSED"])
        sat = S.section(out, "# Saturation: FOM vs streams per rank")
        self.assertEqual(S.md_row_starting(sat, "4"), ["4", "4", "1", "1,000", "1,000", "250", "0.952", "PASSED"])
        self.assertEqual(S.md_row_starting(sat, "1")[6], "0.286")
        self.assertIn("Saturates (FOM >= 90% of its maximum) at 4 streams per rank.", sat)

    def test_nothing_to_sweep(self):
        rc, out, _err = S.run_main(sweep, S.fixture("synthetic_weak_np1.json", "synthetic_weak_np2.json")
                                   + ["--out", self.tmp])
        self.assertEqual(rc, 0)
        self.assertIn("No runs that differ only in d.", out)
        self.assertIn("No runs that differ only in r.", out)
        self.assertIn("No runs that differ only in streams/rank.", out)
        self.assertEqual(os.listdir(self.tmp), [])

    def test_failed_run_is_flagged_in_the_table(self):
        def fail(doc):
            doc["runs"][1]["verification"]["passed"] = False
        path = self.variant("synthetic_sweep_d.json", "sweep_d_failed.json", fail)
        rc, out, _err = S.run_main(sweep, [path, "--no-plots"])
        self.assertEqual(rc, 0)
        self.assertEqual(S.md_row_starting(S.section(out, "# Throughput vs d"), "512")[-1], "FAILED (1 of 1)")

    def test_pngs(self):
        rc, out, err = S.run_main(sweep, S.fixture(*SWEEPS) + ["--out", self.tmp])
        self.assertEqual(rc, 0, err)
        self.assertEqual(sorted(os.listdir(self.tmp)),
                         ["sweep_saturation.png", "sweep_throughput_vs_d.png", "sweep_throughput_vs_r.png"])
        self.assertPng(os.path.join(self.tmp, "sweep_throughput_vs_d.png"),
                       ["Synthetic GPU X1 on synthetic-gpu-node-1", "git " + M.COMMIT_GPU])
        self.assertPng(os.path.join(self.tmp, "sweep_throughput_vs_r.png"), ["Synthetic GPU X1"])
        meta = self.assertPng(os.path.join(self.tmp, "sweep_saturation.png"),
                              ["Synthetic GPU X2 on synthetic-gpu-node-2", "git " + M.COMMIT_GPU])
        self.assertNotIn("X1", meta["Description"])
        self.assertIn("Figure: " + os.path.join(self.tmp, "sweep_saturation.png"), out)


if __name__ == "__main__":
    unittest.main()
