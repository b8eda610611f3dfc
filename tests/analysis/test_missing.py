"""analysis.missing: the window means, the seeds' mean and spread, the sweep
and outage tables and the comparison with the host reference study, on
hand-made series whose answers are known."""

import copy
import gzip
import os

from analysis_test_support import TempDirTest, load_fixture, md_row_starting, run_main

from analysis import missing

NOISE, LAMBDA_MIN = 0.3, 1.0


def distance(d, f, mode, seed):
    return 0.02 + 0.01 * f + (0.05 if mode == "zero_fill" else 0.0) + 0.001 * seed + d * 1e-5


def run_entry(template, d, f, mode, seed, outage=0):
    run = copy.deepcopy(template)
    deck = run["resolved_deck"]
    deck["problem"]["d"] = d
    deck["source"].update({"noise": NOISE, "lambda_min": LAMBDA_MIN, "missing_rate": f, "outage_count": outage,
                           "outage_start": 4000, "outage_steps": 2000})
    deck["algorithm"]["missing"] = mode
    deck["run"]["seed"] = seed
    series = []
    for idx in range(200, 6100, 100):
        e = copy.deepcopy(template["diagnostics"]["series"][-1])
        e["sample_index"] = idx
        e["step"] = idx - 100
        # Outside the window [3000, 6000) the values are far off.
        inside = 3000 <= idx < 6000
        e["accuracy"]["projector_distance_mean"] = distance(d, f, mode, seed) if inside else 0.9
        e["s2_min"] = NOISE ** 2 * (1.05 if inside else 3.0)
        e["s_min_eig_min"] = e["s2_min"] + (0.8 if inside else 5.0)
        series.append(e)
    if outage:
        end = copy.deepcopy(series[-1])
        end["sample_index"] = 5999
        end["accuracy"]["projector_distance_mean"] = 0.125
        series.append(end)
    run["diagnostics"]["series"] = series
    run["diagnostics"]["final"] = series[-1]
    return run


class MissingStudy(TempDirTest):
    def write_study(self, outages=True):
        doc = load_fixture("synthetic_drift_np1.json")
        template = doc["runs"][0]
        doc["runs"] = [run_entry(template, d, f, mode, seed) for d in (256, 1024) for f in (0.0, 0.5)
                       for mode in ("posterior", "zero_fill") for seed in (1, 2, 3)]
        if outages:
            doc["runs"] += [run_entry(template, 256, 0.0, "drop", seed, outage=26) for seed in (1, 2)]
        return self.write_doc("study.json", doc)

    def test_window_means_over_seeds(self):
        rc, out, err = run_main(missing, [self.write_study(), "--no-plots"])
        self.assertEqual(rc, 0, err)
        row = md_row_starting(out, "256", "50%")
        # Mean over seeds 1-3 of the window's distance (the outside 0.9 is not in it), and the
        # debiased eigenvalue's bias (0.8 / 1.0 - 1).
        self.assertEqual(row[2], "%.4f (-0.200)" % distance(256, 0.5, "posterior", 2))
        self.assertEqual(row[4], "%.4f (-0.200)" % distance(256, 0.5, "zero_fill", 2))
        every = md_row_starting(out, "1024", "8", "0%", "zero_fill")
        self.assertEqual(every[4], "3")
        self.assertEqual(every[5], "%.4f ± 0.0010" % distance(1024, 0.0, "zero_fill", 2))
        self.assertEqual(every[6], "+0.0500 ± 0.0000")  # s2 / sigma^2 - 1 in the window
        outage = md_row_starting(out, "256", "26 of 256 from sample 4000 to 5999")
        self.assertEqual(outage[2:], ["drop", "2", "0.1250 ± 0.0000"])

    def test_debiased_eigenvalue_clamped_at_zero(self):
        # An S whose smallest eigenvalue is below s2 has a debiased eigenvalue of 0 (bias -1),
        # as section 4's max(eig(S) - s2, 0) and the host reference study have it.
        doc = load_fixture("synthetic_drift_np1.json")
        run = run_entry(doc["runs"][0], 256, 0.8, "zero_fill", 1)
        for e in run["diagnostics"]["series"]:
            e["s_min_eig_min"] = e["s2_min"] - 0.05
        doc["runs"] = [run]
        rc, out, err = run_main(missing, [self.write_doc("clamp.json", doc), "--no-plots"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(md_row_starting(out, "256", "8", "80%", "zero_fill")[7], "-1.000 ± 0.000")

    def test_against_the_reference_study(self):
        ref = os.path.join(self.tmp, "study.txt")
        with open(ref, "w", encoding="utf-8") as f:
            f.write("sweep-d256-f0.5-posterior: d 256 r 8 noise 0.300000 drift 0.0001 ...\n")
            for seed in (1, 2, 3):
                f.write("  seed%d  dist %.4f  s2_bias +0.0500  eig_r_bias -0.2000  dist_end 0.0250  kept nan\n" %
                        (seed, distance(256, 0.5, "posterior", seed) + (0.001 if seed == 3 else 0.0)))
        rc, out, err = run_main(missing, [self.write_study(), "--no-plots", "--reference", ref])
        self.assertEqual(rc, 0, err)
        self.assertIn("3 runs compared; largest difference: distance 1.0e-03, s2 bias", out)
        absent = next(l for l in out.splitlines() if l.startswith("not in the reference study: "))
        self.assertIn("outage-drop", absent)
        self.assertIn("sweep-d1024-f0-posterior", absent)
        self.assertNotIn("sweep-d256-f0.5-posterior", absent)

    def test_gzip_result_files(self):
        # results/ keeps the large sweeps gzip-compressed: named, or found in a directory.
        path = self.write_study()
        sub = os.path.join(self.tmp, "gz")
        os.makedirs(sub)
        with open(path, "rb") as f, gzip.open(os.path.join(sub, "study.json.gz"), "wb") as g:
            g.write(f.read())
        for arg in (os.path.join(sub, "study.json.gz"), sub):
            rc, out, err = run_main(missing, [arg, "--no-plots"])
            self.assertEqual(rc, 0, err)
            self.assertIn("| 256 | 50%% | %.4f (-0.200) |" % distance(256, 0.5, "posterior", 2), out)
        with open(os.path.join(sub, "broken.json.gz"), "wb") as g:
            g.write(gzip.compress(b'{"program": "mosaic_miniapp"')[:-9])
        rc, out, err = run_main(missing, [os.path.join(sub, "broken.json.gz"), "--no-plots"])
        self.assertEqual(rc, 2)
        self.assertIn("broken.json.gz: not valid JSON", err)

    def test_figure(self):
        rc, out, err = run_main(missing, [self.write_study(), "--out", self.tmp])
        self.assertEqual(rc, 0, err)
        self.assertTrue(os.path.isfile(os.path.join(self.tmp, "missing_study.png")))

    def test_no_window_is_an_error(self):
        rc, out, err = run_main(missing, [self.write_study(outages=False), "--window-start", "7000", "--window-end", "8000"])
        self.assertEqual(rc, 2)
        self.assertIn("no synthetic run with diagnostics in the window [7000, 8000)", err)
