"""analysis.accuracy: the steady state, the best eta_U per d, the tracking
verdict and the fit of the best eta_U against d, on hand-made series whose
answers are known."""

import copy
import math
import os
import unittest

from analysis_test_support import TempDirTest, load_fixture, md_row_starting, run_main

from analysis import accuracy
from analysis import common as C

ETAS = [0.001, 0.004, 0.016, 0.064, 0.256]
# The best eta_U of each d, on the grid and inside it for d <= 4096:
# eta* = 16.384 / d, i.e. exponent -1. At d = 8192 nothing tracks and the
# smallest distance is at the edge of the grid. (512: only the short run.)
BEST = {256: 0.064, 512: 0.032, 1024: 0.016, 4096: 0.004}


def distance(d, eta):
    if d == 8192:
        return 0.99 - 0.01 * ETAS.index(eta)
    return 0.1 + 0.05 * math.log(eta / BEST[d]) ** 2


def run_entry(template, d, eta, steps=10000, every=1000):
    run = copy.deepcopy(template)
    run["resolved_deck"]["problem"]["d"] = d
    run["resolved_deck"]["algorithm"]["eta_U"] = eta
    run["steps"]["timed"] = steps
    series = []
    for k in range(every, steps + 1, every):
        e = copy.deepcopy(template["diagnostics"]["series"][-1])
        e["step"] = k
        # Early entries are far off; the last half holds the steady state.
        e["accuracy"]["projector_distance_mean"] = distance(d, eta) if k > steps / 2 else 0.9
        series.append(e)
    run["diagnostics"]["series"] = series
    run["diagnostics"]["final"] = series[-1]
    return run


class AccuracyMap(TempDirTest):
    def write_map(self, extra_runs=()):
        doc = load_fixture("synthetic_drift_np1.json")
        template = doc["runs"][0]
        doc["runs"] = [run_entry(template, d, eta) for d in (256, 1024, 4096, 8192) for eta in ETAS]
        doc["runs"] += [f(template) for f in extra_runs]
        return self.write_doc("map.json", doc)

    def test_best_eta_fit_and_verdict(self):
        path = self.write_map()
        rc, out, err = run_main(accuracy, [path, "--out", self.tmp])
        self.assertEqual(rc, 0, err)
        row = md_row_starting(out, "1024")
        self.assertEqual(row[1 + ETAS.index(0.016)], "1.000e-01")  # the steady state, not the early 0.9
        self.assertEqual(row[6], "0.016")
        self.assertEqual(row[8], "%.4f" % (1 - 8 / 1024))
        self.assertEqual(row[9], "yes")
        far = md_row_starting(out, "8192")
        self.assertEqual(far[6], "0.256 (edge)")
        self.assertEqual(far[9], "no")
        # Three interior best points on eta* = 16.384 / d: exponent -1.
        self.assertIn("eta_U ~ 16.4 * d^-1.000", out)
        self.assertPng(os.path.join(self.tmp, "accuracy_map.png"))

    def test_accuracy_vs_d_figure_shows_the_reports_best_eta(self):
        path = self.write_map()
        rc, out, err = run_main(accuracy, [path, "--out", self.tmp])
        self.assertEqual(rc, 0, err)
        png = os.path.join(self.tmp, "accuracy_vs_d.png")
        self.assertIn("figure: " + png, out)
        meta = self.assertPng(png, ["Synthetic CPU Model 9000 (test fixture) on synthetic-cpu-host"])
        self.assertIn("best accuracy over eta_U vs d", meta["Title"])
        points, _skipped = accuracy.collect_points(C.load_records([path]))
        _path, shown = accuracy.plot_vs_d(points, os.path.join(self.tmp, "again"), 0.3)
        self.assertEqual(list(shown), [(8, 1e-4, "double")])
        best = shown[(8, 1e-4, "double")]
        self.assertEqual([b.d for b in best], [256, 1024, 4096, 8192])
        for b in best:
            row = md_row_starting(out, str(b.d))
            self.assertEqual((b.eta_text, C.fmt_sci(b.distance), "%.4f" % b.random), (row[6], row[7], row[8]))
            self.assertEqual(b.eta, BEST.get(b.d, 0.256))
        self.assertEqual(best[-1].eta_text, "0.256 (edge)")

    def test_no_plots(self):
        path = self.write_map()
        out_dir = os.path.join(self.tmp, "figures")
        rc, out, err = run_main(accuracy, [path, "--out", out_dir, "--no-plots"])
        self.assertEqual(rc, 0, err)
        self.assertIn("| 1024 |", out)
        self.assertNotIn("figure:", out)
        self.assertFalse(os.path.exists(out_dir))

    def test_short_runs_are_left_out_and_said(self):
        path = self.write_map([lambda t: run_entry(t, 512, 0.016, steps=1500, every=1000)])
        rc, out, err = run_main(accuracy, [path, "--out", self.tmp])
        self.assertEqual(rc, 0, err)
        self.assertIn("left out: map.json run 20 (d=512, r=8)", out)
        self.assertNotIn("| 512 |", out)

    def test_no_synthetic_runs_is_an_error(self):
        doc = load_fixture("synthetic_drift_np1.json")
        doc["runs"][0]["resolved_deck"]["source"]["type"] = "npy"
        path = self.write_doc("npy.json", doc)
        rc, out, err = run_main(accuracy, [path, "--out", self.tmp])
        self.assertEqual(rc, 2)
        self.assertIn("no synthetic run", err)


if __name__ == "__main__":
    unittest.main()
