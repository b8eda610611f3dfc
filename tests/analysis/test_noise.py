"""analysis.noise: the window means of the data-coordinate accuracy, the
seeds' mean and spread per noise model, the distance ratio, and the runs
left out, on hand-made series whose answers are known."""

import copy
import os

from analysis_test_support import TempDirTest, load_fixture, md_row_starting, run_main

from analysis import noise


def measure(d, f, model, seed, k):
    """The k-th measure (0 distance, 1 noise, 2 spectrum) inside the window."""
    return (0.01 + 0.001 * k) * (0.8 if model == "diagonal" else 1.0) + 0.0001 * seed + d * 1e-6 + 0.002 * f


def run_entry(template, d, f, model, seed, heterogeneous=True):
    run = copy.deepcopy(template)
    deck = run["resolved_deck"]
    deck["problem"]["d"] = d
    deck["source"]["missing_rate"] = f
    deck["source"]["noise_range"] = [0.05, 0.5] if heterogeneous else None
    deck["algorithm"]["noise"] = model
    deck["run"]["seed"] = seed
    series = []
    for idx in range(100, 8200, 100):
        e = copy.deepcopy(template["diagnostics"]["series"][-1])
        e["sample_index"] = idx
        inside = 4000 <= idx < 8000  # outside the default window the values are far off
        for k, field in enumerate(("projector_distance_mean", "noise_rel_error_mean", "spectrum_rel_error_mean")):
            e["accuracy"][field] = measure(d, f, model, seed, k) if inside else 0.9
        series.append(e)
    run["diagnostics"]["series"] = series
    run["diagnostics"]["final"] = series[-1]
    return run


class NoiseStudy(TempDirTest):
    def write_study(self):
        doc = load_fixture("synthetic_drift_np1.json")
        template = doc["runs"][0]
        doc["runs"] = [run_entry(template, d, f, model, seed) for d in (64, 256) for f in (0.0, 0.2)
                       for model in ("isotropic", "diagonal") for seed in (1, 2, 3)]
        doc["runs"].append(run_entry(template, 64, 0.0, "isotropic", 1, heterogeneous=False))
        return self.write_doc("study.json", doc)

    def test_same_as_gives_the_largest_relative_difference(self):
        first = self.write_study()
        doc = load_fixture("synthetic_drift_np1.json")
        template = doc["runs"][0]
        doc["runs"] = [run_entry(template, d, f, model, seed) for d in (64, 256) for f in (0.0, 0.2)
                       for model in ("isotropic", "diagonal") for seed in (1, 2)]
        # One run's spectrum error moved by a relative 3e-6 inside the window.
        for e in doc["runs"][5]["diagnostics"]["series"]:
            e["accuracy"]["spectrum_rel_error_mean"] *= 1 + 3e-6
        second = self.write_doc("other.json", doc)
        rc, out, err = run_main(noise, [first, "--same-as", second, "--no-plots"])
        self.assertEqual(rc, 0, err)
        line = next(x for x in out.splitlines() if x.startswith("Against " + second))
        self.assertIn("16 runs matched", line)
        self.assertIn("distance 0.0e+00, noise 0.0e+00, spectrum 3.0e-06", line)
        # Seed 3 is in the first result only.
        self.assertIn("in one result only: d=64 r=", out)
        self.assertIn("seed 3", out)

    def test_window_means_over_seeds_and_ratio(self):
        rc, out, err = run_main(noise, [self.write_study(), "--no-plots"])
        self.assertEqual(rc, 0, err)
        row = md_row_starting(out, "256", "8", "20%")
        self.assertEqual(row[3], "3/3")
        # Seeds 1-3: mean at seed 2, sd 0.0001.
        self.assertEqual(row[4], "%.4f ± 0.0001" % measure(256, 0.2, "isotropic", 2, 0))
        self.assertEqual(row[5], "%.4f ± 0.0001" % measure(256, 0.2, "diagonal", 2, 0))
        self.assertEqual(row[9], "%.4f ± 0.0001" % measure(256, 0.2, "diagonal", 2, 2))
        ratio = measure(256, 0.2, "diagonal", 2, 0) / measure(256, 0.2, "isotropic", 2, 0)
        self.assertEqual(row[10], "%.3f" % ratio)
        self.assertIn("homogeneous noise (no source.noise_range)", out)

    def test_window_without_entries_is_an_error(self):
        rc, out, err = run_main(noise, [self.write_study(), "--no-plots", "--window-start", "9000", "--window-end", "9500"])
        self.assertEqual(rc, 2)
        self.assertIn("no synthetic run with heterogeneous noise", err)

    def test_against_the_reference_study(self):
        ref = os.path.join(self.tmp, "study.txt")
        with open(ref, "w", encoding="utf-8") as f:
            f.write("hetero-diagonal-d256: d 256 r 8 noise [0.05, 0.5] drift 0.0001 ...\n")
            for seed in (1, 2, 3):
                # The study's s2 bias is signed; the mini-app's noise error is its size.
                f.write("  seed%d  dist %.4f  s2_bias %+.4f  eig_r_bias -0.0400  dist_end 0.0130  kept nan\n" %
                        (seed, measure(256, 0.0, "diagonal", seed, 0) + (0.002 if seed == 2 else 0.0),
                         -measure(256, 0.0, "diagonal", seed, 1)))
        rc, out, err = run_main(noise, [self.write_study(), "--no-plots", "--reference", ref])
        self.assertEqual(rc, 0, err)
        self.assertIn("3 runs compared; largest difference of the distance 2.0e-03; noise error equal to the "
                      "study's |s2 bias| to 5e-5 in 3 runs, below it in 0", out)
        absent = next(l for l in out.splitlines() if l.startswith("not in the reference study: "))
        self.assertIn("hetero-isotropic-d256", absent)
        self.assertIn("hetero-mcar20-diagonal-d64", absent)
        self.assertNotIn("hetero-diagonal-d256,", absent + ",")

    def test_figure(self):
        rc, out, err = run_main(noise, [self.write_study(), "--out", self.tmp])
        self.assertEqual(rc, 0, err)
        self.assertPng(os.path.join(self.tmp, "noise_study.png"))
