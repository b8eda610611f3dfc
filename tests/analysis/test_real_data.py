"""analysis.real_data: the table and figure of MOSAIC's runs against the
baselines of analysis.baselines, on small hand-made result files (a copy of
the synthetic fixture with prequential numbers chosen here), and the refusals
when the files did not evaluate the same rows."""

import copy
import json
import os

import numpy as np

from analysis_test_support import TempDirTest, load_fixture, md_row_starting, run_main

from analysis import baselines, real_data

START, ROWS, STEPS = 16, 600, [200, 400, 600]


def interval(samples, nll, rf, surprise):
    return {"samples": samples, "zero_norm_samples": 0, "nll_mean": nll, "residual_fraction_mean": rf,
            "surprise_rate": surprise}


def mosaic_run(template, update="exact", direction="precision", nll=(2.0, 1.5, 1.25), rf=(0.5, 0.3, 0.2),
               ups=5000.0, samples=ROWS, sweep=None, start=START, steps=STEPS, rows=ROWS):
    run = copy.deepcopy(template)
    run["resolved_deck"]["algorithm"].update(covariance_update=update, subspace_direction=direction,
                                             init_samples=start)
    run["steps"] = {"timed": rows, "warmup": 0, "init_samples": start}
    run["throughput"]["update_samples_per_second"] = ups
    if sweep:
        run["sweep_point"] = sweep
    series, prev = [], 0
    per = [samples * k // rows - samples * p // rows for p, k in zip([0] + steps[:-1], steps)]
    for k, n, a, b in zip(steps, per, nll, rf):
        e = copy.deepcopy(template["diagnostics"]["series"][-1])
        e["step"], e["sample_index"] = k, start + k - 1
        e["prequential"] = {"interval": interval(n, a, b, 0.01)}
        series.append(e)
        prev = k
    assert prev == rows
    run["diagnostics"]["series"] = series
    total_nll = sum(n * a for n, a in zip(per, nll)) / samples
    run["prequential"] = {"samples": samples, "zero_norm_samples": 0, "nll_mean": total_nll,
                          "residual_fraction_mean": sum(n * b for n, b in zip(per, rf)) / samples,
                          "surprise_rate": 0.01, "nll_interval_median": sorted(nll)[1],
                          "residual_fraction_interval_median": sorted(rf)[1], "surprise_rate_interval_median": 0.01,
                          "surprise_rate_calibrated": 0.001, "definition": "test"}
    return run


def baselines_doc(samples=ROWS, start=START, steps=STEPS, rows=ROWS, d=None, rank=None):
    template = load_fixture("synthetic_drift_np1.json")["runs"][0]["resolved_deck"]["problem"]
    d = template["d"] if d is None else d
    rank = template["rank"] if rank is None else rank
    methods = {}
    for name, nll, us in (("window", 3.0, 40.0), ("incremental", 9.5, 25.0), ("static", 1.0, 3.0)):
        per = [samples * k // rows - samples * p // rows for p, k in zip([0] + steps[:-1], steps)]
        methods[name] = {
            "parameters": {"rank": rank, "window": 200, "refit_every": 50, "batch": 50},
            "prequential": {"samples": samples, "zero_norm_samples": 0, "nll_mean": nll, "nll_interval_median": nll,
                            "residual_fraction_mean": 0.25, "surprise_rate": 0.002, "skipped_samples": rows - samples,
                            "rows": rows},
            "series": [{"step": k, "sample_index": start + k - 1, "prequential": {"interval": interval(n, nll, 0.25,
                                                                                                        0.002)}}
                       for k, n in zip(steps, per)],
            "seconds_per_sample": us * 1e-6}
    return {"program": "mosaic_baselines", "start": start, "end": start + rows, "steps": steps,
            "input": {"file": "stream.npy", "d": d, "rows": start + rows, "missing_fraction": 0.0},
            "parameters": {"rank": rank}, "missing_data": "zero-filled",
            "environment": {"hostname": "baseline-host", "cpu_model": "Test CPU", "blas_threads": 1},
            "methods": methods}


class RealData(TempDirTest):
    def setUp(self):
        super().setUp()
        self.doc = load_fixture("synthetic_drift_np1.json")
        self.template = self.doc["runs"][0]

    def result(self, name, runs):
        doc = copy.deepcopy(self.doc)
        doc["runs"] = runs
        return self.write_doc(name, doc)

    def run_cmd(self, results, bdoc, extra=()):
        b = self.write_doc("baselines.json", bdoc)
        table, figure = os.path.join(self.tmp, "out", "t.md"), os.path.join(self.tmp, "out", "f.png")
        rc, out, err = run_main(real_data, ["--name", "Test data", "--result"] + results +
                                ["--baselines", b, "--table", table, "--figure", figure] + list(extra))
        return rc, out, err, table, figure

    def test_table_and_figure(self):
        t = self.template
        r1 = self.result("a.json", [mosaic_run(t), mosaic_run(t, update="first_order", ups=4000.0)])
        r2 = self.result("b.json", [mosaic_run(t, direction="oja", nll=(4.0, 3.0, 2.0), ups=2000.0)])
        rc, out, err, table, figure = self.run_cmd([r1, r2], baselines_doc())
        self.assertEqual(rc, 0, err)
        with open(table, encoding="utf-8") as f:
            text = f.read()
        self.assertIn(text.strip(), out)
        # MOSAIC: interval means 2.0, 1.5, 1.25 over 200 samples each; 1e6 / 5000 update samples/s.
        self.assertEqual(md_row_starting(text, "MOSAIC"),
                         ["MOSAIC", "600", "1.5833", "1.5000", "0.3333", "0.0100", "200.0"])
        self.assertEqual(md_row_starting(text, "MOSAIC first_order")[6], "250.0")
        self.assertEqual(md_row_starting(text, "MOSAIC oja")[2:4], ["3.0000", "3.0000"])
        self.assertEqual(md_row_starting(text, "sliding-window PPCA (W=200, M=50)"),
                         ["sliding-window PPCA (W=200, M=50)", "600", "3.0000", "3.0000", "0.2500", "0.0020", "40.0"])
        self.assertEqual(md_row_starting(text, "IncrementalPCA (batch 50)")[6], "25.0")
        self.assertEqual(md_row_starting(text, "static PCA (in-sample)")[2], "1.0000")
        self.assertIn("Rows [16, 616) of stream.npy", text)
        self.assertNotIn("pooled", text)
        self.assertIn("# Test data: MOSAIC against online baselines (prequential accuracy)\n", text)
        self.assertIn("Test CPU on baseline-host", text)
        self.assertIn("Synthetic CPU Model 9000 (test fixture) on synthetic-cpu-host", text)
        self.assertPng(figure, ["synthetic-cpu-host"])

    def test_labels_name_the_ablations(self):
        label = real_data.mosaic_label
        self.assertEqual(label({"algorithm": {}}), "MOSAIC")
        self.assertEqual(label({"algorithm": {"covariance_update": "first_order", "subspace_direction": "oja"}}),
                         "MOSAIC first_order oja")
        self.assertEqual(label({"algorithm": {"missing": "posterior"}}), "MOSAIC")
        self.assertEqual(label({"algorithm": {"missing": "zero_fill"}}), "MOSAIC missing: zero_fill")

    def test_runs_with_one_label_are_told_apart_by_their_sweep_point(self):
        t = self.template
        r = self.result("sweep.json", [mosaic_run(t, sweep={"algorithm.eta_U": 0.01}),
                                       mosaic_run(t, sweep={"algorithm.eta_U": 0.02}, ups=1000.0)])
        rc, out, err, table, _ = self.run_cmd([r], baselines_doc())
        self.assertEqual(rc, 0, err)
        self.assertEqual(md_row_starting(out, "MOSAIC (algorithm.eta_U=0.02)")[6], "1,000.0")
        md_row_starting(out, "MOSAIC (algorithm.eta_U=0.01)")

    def test_refuses_files_that_scored_other_rows(self):
        t = self.template
        good = self.result("good.json", [mosaic_run(t)])
        cases = [
            ([self.result("start.json", [mosaic_run(t, start=32)])], baselines_doc(),
             "differ in the first evaluated row (init_samples / start): 32 against 16"),
            ([good], baselines_doc(rows=500, steps=[200, 400, 500]),
             "differ in the rows evaluated (warm-up + timed steps / end - start): 600 against 500"),
            ([good], baselines_doc(steps=[300, 600]), "different interval boundaries"),
            ([good, self.result("steps.json", [mosaic_run(t, steps=[100, 300, 600])])], baselines_doc(),
             "different interval boundaries (steps since the first row): [200, 400, 600] against [100, 300, 600]"),
            ([good], baselines_doc(rank=7), "differ in the rank"),
            ([good], baselines_doc(samples=590), "evaluated 600 samples, baselines.json window 590 (of 600 rows)"),
        ]
        for results, bdoc, message in cases:
            rc, _, err, table, _ = self.run_cmd(results, bdoc)
            self.assertEqual(rc, 2, message)
            self.assertIn(message, err)
            self.assertFalse(os.path.exists(table))
        rc, out, err, _, _ = self.run_cmd([good], baselines_doc(samples=590), ["--allow-sample-difference"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(md_row_starting(out, "static PCA (in-sample)")[1], "590")
        self.assertIn("did not score", out)

    def test_refuses_unusable_inputs(self):
        t = self.template
        old = mosaic_run(t)
        del old["prequential"]
        multi = mosaic_run(t)
        multi["decomposition"]["total_streams"] = 4
        good = self.result("good.json", [mosaic_run(t)])
        for results, bdoc, message in (
                ([self.result("old.json", [old])], baselines_doc(), "no runs[].prequential"),
                ([self.result("multi.json", [multi])], baselines_doc(), "4 streams; the baselines score one stream"),
                ([good], {"program": "mosaic_miniapp"}, "not an analysis.baselines file")):
            rc, _, err, _, _ = self.run_cmd(results, bdoc)
            self.assertEqual(rc, 2, message)
            self.assertIn(message, err)

    def test_no_plots_and_a_missing_figure_argument(self):
        good = self.result("good.json", [mosaic_run(self.template)])
        b = self.write_doc("baselines.json", baselines_doc())
        table = os.path.join(self.tmp, "t.md")
        argv = ["--name", "x", "--result", good, "--baselines", b, "--table", table]
        rc, _, err = run_main(real_data, argv)
        self.assertEqual(rc, 2)
        self.assertIn("--figure OUT.png is required (or --no-plots)", err)
        rc, out, err = run_main(real_data, argv + ["--no-plots"])
        self.assertEqual(rc, 0, err)
        self.assertNotIn("figure:", out)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["baselines.json", "good.json", "t.md"])

    def test_with_the_output_of_analysis_baselines(self):
        # The baselines command's own file, on a stream of the fixture's d and rank, with --like
        # taking the rows and steps from the result: the files agree and the table reads it.
        problem = self.template["resolved_deck"]["problem"]
        d, r = problem["d"], problem["rank"]
        rng = np.random.default_rng(1)
        basis, _ = np.linalg.qr(rng.standard_normal((d, r)))
        X = rng.standard_normal((START + ROWS, r)) @ basis.T * 3.0 + 0.5 * rng.standard_normal((START + ROWS, d))
        npy = os.path.join(self.tmp, "stream.npy")
        np.save(npy, X)
        result = self.result("r.json", [mosaic_run(self.template)])
        bpath = os.path.join(self.tmp, "b.json")
        rc, _, err = run_main(baselines, [npy, "--like", result, "--window", "100", "-o", bpath])
        self.assertEqual(rc, 0, err)
        with open(bpath, encoding="utf-8") as f:
            bdoc = json.load(f)
        self.assertEqual(bdoc["steps"], STEPS)
        rc, out, err, _, figure = self.run_cmd([result], bdoc)
        self.assertEqual(rc, 0, err)
        row = md_row_starting(out, "static PCA (in-sample)")
        self.assertEqual(row[1], "600")
        self.assertEqual(row[2], "%.4f" % bdoc["methods"]["static"]["prequential"]["nll_mean"])
        md_row_starting(out, "sliding-window PPCA (W=100, M=25)")
        self.assertPng(figure)

    def test_several_streams_pooled(self):
        # Three streams of unequal length (run.steps: all): the baselines command on the three
        # files with --like the three-stream result; the table and figure say they are pooled.
        problem = self.template["resolved_deck"]["problem"]
        d, r = problem["d"], problem["rank"]
        rng = np.random.default_rng(2)
        basis, _ = np.linalg.qr(rng.standard_normal((d, r)))
        lengths = (START + ROWS, START + 250, START + 420)
        paths = []
        for i, n in enumerate(lengths):
            paths.append(os.path.join(self.tmp, "track%d.npy" % i))
            np.save(paths[-1], rng.standard_normal((n, r)) @ basis.T * 3.0 + 0.5 * rng.standard_normal((n, d)))
        timed_samples = sum(n - START for n in lengths)
        run = mosaic_run(self.template, samples=timed_samples)
        run["decomposition"]["total_streams"] = 3
        run["steps"].update(timed_samples=timed_samples, ended_streams=2)
        result = self.result("r3.json", [run])
        bpath = os.path.join(self.tmp, "b.json")
        rc, _, err = run_main(baselines, paths + ["--like", result, "--window", "100", "--methods", "window,static",
                                                  "-o", bpath])
        self.assertEqual(rc, 0, err)
        with open(bpath, encoding="utf-8") as f:
            bdoc = json.load(f)
        self.assertEqual((bdoc["streams"], bdoc["steps"], bdoc["end"] - bdoc["start"]), (3, STEPS, ROWS))
        rc, out, err, _, figure = self.run_cmd([result], bdoc)
        self.assertEqual(rc, 0, err)
        self.assertIn("# Test data: MOSAIC against online baselines (prequential accuracy, pooled over 3 streams)",
                      out)
        self.assertIn("Rows [16, end) of each of 3 streams (track0.npy, track1.npy, track2.npy), end being the "
                      "stream's own number of rows (266 to 616); d = 256, rank 8; %d rows in all" % timed_samples, out)
        self.assertEqual(md_row_starting(out, "static PCA (in-sample)")[1], str(timed_samples))
        self.assertEqual(md_row_starting(out, "MOSAIC")[6], "200.0")  # 1e6 / update samples per second
        meta = self.assertPng(figure)
        self.assertIn("pooled over 3 streams", meta.get("Title", ""))
        # A one-stream baselines file (or one pooled over another count) is refused.
        for streams, message in ((None, "3 streams; the baselines score one stream"),
                                 (2, "3 streams; the baselines were pooled over 2")):
            other = copy.deepcopy(bdoc)
            if streams is None:
                del other["streams"]
            else:
                other["streams"] = streams
            rc, _, err, _, _ = self.run_cmd([result], other)
            self.assertEqual(rc, 2, message)
            self.assertIn(message, err)




class AxisStub:
    """What clip_outliers sets on a matplotlib axis."""

    def __init__(self):
        self.ylim, self.texts = None, []

    def set_ylim(self, low, high):
        self.ylim = (low, high)

    def text(self, x, y, s, **kwargs):
        self.texts.append(s)

    transAxes = None


class ClipOutliers(TempDirTest):
    def test_a_few_huge_values_do_not_set_the_axis(self):
        ax = AxisStub()
        values = [1.0 + 0.01 * i for i in range(40)] + [3.7e4, 12.0]
        real_data.clip_outliers(ax, values)
        self.assertIsNotNone(ax.ylim)
        self.assertLess(ax.ylim[1], 12.0)
        self.assertGreater(ax.ylim[1], 1.39)
        self.assertLessEqual(ax.ylim[0], 1.0)
        self.assertEqual(ax.texts, ["2 interval means above the axis (up to 3.7e+04)"])

    def test_values_without_outliers_keep_the_automatic_axis(self):
        ax = AxisStub()
        real_data.clip_outliers(ax, [-6.0, -5.5, -5.0, -4.0, -3.0])
        self.assertIsNone(ax.ylim)
        self.assertEqual(ax.texts, [])


if __name__ == "__main__":
    import unittest
    unittest.main()
