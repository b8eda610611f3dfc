"""analysis.breakdown: the per-run wall-time breakdown equals the files' timers,
the shares add up to the total with the time in no timer as its own segment,
older files show absent timers as n/a, and the figure is written."""

import copy
import os
import unittest

import analysis_test_support as S
import make_synthetic_fixtures as M
from analysis import breakdown
from analysis import common as C

FULL = "synthetic_breakdown.json"  # every timer, timer_coverage, a kernel object
OLD = "synthetic_weak_np1.json"    # the six timers files had before issue 15, no total


def seconds(cell):
    """The seconds of a table cell "0.5 (5.0%)"."""
    return float(cell.split(" (")[0])


def percent(cell):
    return float(cell.split(" (")[1].rstrip("%)"))


class BreakdownTest(S.TempDirTest):
    def table(self, names, *extra):
        rc, out, err = S.run_main(breakdown, S.fixture(*names) + ["--no-plots"] + list(extra))
        self.assertEqual(rc, 0, err)
        header = S.md_rows(out)[0]
        return out, header

    def test_table_values_are_the_fixture_timers(self):
        out, header = self.table([FULL])
        doc = S.load_fixture(FULL)
        self.assertIn("mean over the ranks (timers.<phase>.mean_s)", out)
        for k, run in enumerate(doc["runs"]):
            row = dict(zip(header, S.md_row_starting(out, "%s #%d" % (FULL, k))))
            timers, total = run["timers"], run["timers"]["total"]["mean_s"]
            for phase in breakdown.PHASES:
                self.assertEqual(seconds(row[phase]), timers[phase]["mean_s"], (k, phase))
                self.assertAlmostEqual(percent(row[phase]), 100 * timers[phase]["mean_s"] / total, places=1)
            self.assertEqual(float(row["total [s]"]), total)
            self.assertEqual(row["accounted"], "%.4f" % run["timer_coverage"]["accounted_fraction"])
            self.assertEqual(row["update samples/s (FOM)"], C.fmt_rate(run["figure_of_merit"]["value"]))
            self.assertEqual(row["end-to-end samples/s"],
                             C.fmt_rate(run["throughput"]["end_to_end_samples_per_second"]))
            self.assertEqual(row["sweep point"], "problem.d=%d" % run["resolved_deck"]["problem"]["d"])
        # The numbers chosen in make_synthetic_fixtures.py.
        row = dict(zip(header, S.md_row_starting(out, FULL + " #0")))
        self.assertEqual((row["setup"], row["update"], row["checkpoint"], row["not in a timer"], row["accounted"]),
                         ("0.5 (5.0%)", "4 (40.0%)", "0 (0.0%)", "1.5 (15.0%)", "0.8500"))
        self.assertEqual(row["end-to-end / update"], "0.625")  # 1000 / 1600
        row = dict(zip(header, S.md_row_starting(out, FULL + " #1")))
        self.assertEqual((row["checkpoint"], row["not in a timer"], row["total [s]"], row["accounted"]),
                         ("1 (5.0%)", "2 (10.0%)", "20", "0.9000"))

    def test_phases_in_execution_order(self):
        _out, header = self.table([FULL])
        self.assertEqual(header[header.index("setup"):header.index("total [s]")],
                         ["setup", "init", "warmup", "generate", "update", "segments", "verify", "diagnostics",
                          "checkpoint", "reduce", "output", "not in a timer"])

    def test_shares_add_up_with_the_unaccounted_segment(self):
        recs = C.load_records(S.fixture(FULL))
        _text, rows, figs = breakdown.analyse(recs, self.tmp, plots=False)
        self.assertEqual(figs, [])
        for b, unaccounted in zip(rows, (15.0, 10.0)):
            bar = b.bar()
            self.assertEqual([seg for seg, _w in bar], list(breakdown.PHASES) + [breakdown.UNACCOUNTED])
            self.assertAlmostEqual(bar[-1][1], unaccounted)
            self.assertAlmostEqual(sum(w for _seg, w in bar), 100.0)
            self.assertAlmostEqual(b.percent(breakdown.UNACCOUNTED), unaccounted)
        out, header = self.table([FULL])
        for k in range(2):
            row = dict(zip(header, S.md_row_starting(out, "%s #%d" % (FULL, k))))
            cells = [row[p] for p in breakdown.PHASES] + [row["not in a timer"]]
            self.assertAlmostEqual(sum(percent(c) for c in cells), 100.0, delta=0.05 * len(cells))

    def test_older_file_shows_absent_timers_as_n_a(self):
        out, header = self.table([FULL, OLD])
        row = dict(zip(header, S.md_row_starting(out, OLD)))
        for col in ("setup", "verify", "checkpoint", "output", "not in a timer", "total [s]", "accounted"):
            self.assertEqual(row[col], "n/a", col)
        timers = S.load_fixture(OLD)["runs"][0]["timers"]
        self.assertEqual(seconds(row["init"]), timers["init"]["mean_s"])
        self.assertEqual(row["warmup"], "0")  # zero, recorded: not n/a, and no share without a total
        self.assertIn("n/a: no such timer in the file (written before the mini-app timed setup, segments, verify, checkpoint, "
                      "output, total), not zero.", out)
        # The configuration fields that differ are columns, as in collect.
        self.assertEqual((row["kernel"], dict(zip(header, S.md_row_starting(out, FULL + " #0")))["kernel"]),
                         ("sequential", "blocked"))
        recs = C.load_records(S.fixture(OLD))
        b = breakdown.analyse(recs, self.tmp, plots=False)[1][0]
        self.assertIsNone(b.total)
        self.assertIsNone(b.percent("update"))
        self.assertNotIn(breakdown.UNACCOUNTED, [seg for seg, _w in b.bar()])
        self.assertAlmostEqual(sum(w for _seg, w in b.bar()), 100.0)  # a share of its phases

    def test_max_over_ranks(self):
        out, header = self.table([FULL], "--stat", "max")
        self.assertIn("max over the ranks (timers.<phase>.max_s)", out)
        self.assertIn("need not add up", out)
        run = S.load_fixture(FULL)["runs"][0]
        row = dict(zip(header, S.md_row_starting(out, FULL + " #0")))
        self.assertEqual(seconds(row["update"]), run["timers"]["update"]["max_s"])
        self.assertEqual(float(row["total [s]"]), run["timers"]["total"]["max_s"])
        self.assertEqual(row["update"], "5 (45.5%)")  # 5 / 11

    def test_runs_without_timers(self):
        def no_timers(doc):
            for run in doc["runs"]:
                del run["timers"]
        path = self.variant(OLD, "no_timers.json", no_timers)
        rc, _out, err = S.run_main(breakdown, [path, "--no-plots"])
        self.assertEqual(rc, 2)
        self.assertIn("analysis.breakdown: error: no run has timers (runs[].timers) in: no_timers.json", err)
        rc, out, err = S.run_main(breakdown, [path] + S.fixture(FULL) + ["--no-plots"])
        self.assertEqual(rc, 0, err)
        self.assertIn("left out: no_timers.json: no timers", out)
        self.assertEqual(len(S.md_rows(out)), 1 + 2)

    def test_png(self):
        rc, out, err = S.run_main(breakdown, S.fixture(FULL, OLD) + ["--out", self.tmp])
        self.assertEqual(rc, 0, err)
        path = os.path.join(self.tmp, "breakdown_time.png")
        self.assertIn("Figure: " + path, out)
        meta = self.assertPng(path, ["Synthetic CPU Model 9000 (test fixture) on synthetic-cpu-host",
                                     "Synthetic GPU X1 on synthetic-gpu-node-1", "git " + M.COMMIT_CPU])
        self.assertIn("Wall-time breakdown per run (phase seconds: mean over the ranks)", meta["Title"])
        self.assertIn("* no total timer", meta["Title"])  # the old file's bar is marked
        _w, h_small = S.png_size(path)

        def many(doc):  # 24 runs: the figure grows to fit them
            doc["runs"] = [copy.deepcopy(doc["runs"][k % 2]) for k in range(24)]
        big = self.variant(FULL, "many.json", many)
        out_dir = os.path.join(self.tmp, "many")
        rc, _out, err = S.run_main(breakdown, [big, "--out", out_dir])
        self.assertEqual(rc, 0, err)
        _w, h_big = S.png_size(os.path.join(out_dir, "breakdown_time.png"))
        self.assertGreater(h_big, 2.5 * h_small)

    def test_short_labels(self):
        recs = C.load_records(S.fixture(FULL, OLD))
        self.assertEqual([breakdown.short_label(r, recs) for r in recs],
                         ["synthetic_breakdown d=128", "synthetic_breakdown d=256", "synthetic_weak_np1"])


if __name__ == "__main__":
    unittest.main()
