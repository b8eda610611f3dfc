"""analysis.scaling: grouping, efficiencies from known FOMs, the checksum
agreement check, and the figures."""

import math
import os
import unittest

import analysis_test_support as S
import make_synthetic_fixtures as M
from analysis import common as C
from analysis import scaling

STRONG = ["synthetic_strong_np1.json", "synthetic_strong_np2.json", "synthetic_strong_np4.json"]
MISMATCH = ["synthetic_strong_mismatch_np2.json", "synthetic_strong_mismatch_np4.json"]
WEAK = ["synthetic_weak_np1.json", "synthetic_weak_np2.json", "synthetic_weak_np4.json"]

STRONG_HEADING = "## d=768, r=32, double, 8 streams in all, 1000 steps, exact/precision on Synthetic GPU X1"
MISMATCH_HEADING = "## d=256, r=16, float, 8 streams in all, 1000 steps, exact/precision on Synthetic GPU X1"
WEAK_HEADING = "## d=512, r=16, double, 4 streams/rank, 1000 steps, exact/precision on Synthetic GPU X1"


def set_fom(value):
    def edit(doc):
        run = doc["runs"][0]
        run["figure_of_merit"]["value"] = value
        run["throughput"]["update_samples_per_second"] = value
    return edit


class ScalingNumbersTest(S.TempDirTest):
    def test_groups_and_efficiencies(self):
        recs = C.load_records(S.fixture(*(STRONG + MISMATCH + WEAK)))
        groups = {(g.mode, dict(g.key)["d"]): g for g in C.scaling_groups(recs)}
        self.assertEqual(sorted(groups), [("strong", "256"), ("strong", "768"), ("weak", "512")])

        g = groups[("strong", "768")]
        self.assertEqual([p.ranks for p in g.points], [1, 2, 4])
        self.assertEqual(g.base_ranks, 1)
        for p, speedup, eff, ideal in zip(g.points, [1.0, 1.8, 3.0], [1.0, 0.9, 0.75], [800, 1600, 3200]):
            self.assertAlmostEqual(p.speedup, speedup, places=12)
            self.assertAlmostEqual(p.efficiency, eff, places=12)  # FOM(N) / (N * FOM(1))
            self.assertAlmostEqual(p.ideal, ideal, places=9)

        g = groups[("weak", "512")]
        for p, eff in zip(g.points, [1.0, 0.95, 0.9]):
            self.assertAlmostEqual(p.efficiency, eff, places=12)  # (FOM(N)/N) / FOM(1)

        g = groups[("strong", "256")]
        self.assertEqual(g.base_ranks, 2)
        self.assertAlmostEqual(g.points[1].efficiency, 0.9, places=12)  # (900/500) / (4/2)
        self.assertAlmostEqual(g.points[1].speedup, 1.8, places=12)

    def test_markdown_tables(self):
        rc, out, err = S.run_main(scaling, S.fixture(*(STRONG + MISMATCH + WEAK)) + ["--no-plots"])
        self.assertEqual(rc, 1, err)  # the mismatch group fails the run
        strong = S.section(out, STRONG_HEADING)
        self.assertIn("Base: 1 rank.", strong)
        self.assertEqual(S.md_row_starting(strong, "2"),
                         ["2", "1", "4", "1,440", "1.800", "1,600", "0.900", "1,152", "PASSED"])
        self.assertEqual(S.md_row_starting(strong, "4"),
                         ["4", "1", "2", "2,400", "3.000", "3,200", "0.750", "1,920", "PASSED"])
        weak = S.section(out, WEAK_HEADING)
        self.assertEqual(S.md_row_starting(weak, "4"),
                         ["4", "1", "16", "3,600", "900", "4,000", "0.900", "2,880", "PASSED"])
        self.assertEqual(S.md_row_starting(weak, "2")[6], "0.950")
        mism = S.section(out, MISMATCH_HEADING)
        self.assertIn("Base: 2 ranks (the smallest rank count present; no 1-rank run)", mism)
        self.assertEqual(S.md_row_starting(mism, "4")[3:7], ["900", "1.800", "1,000", "0.900"])

    def test_repeats_use_the_median(self):
        paths = S.fixture(*WEAK[:1])
        for k, fom in enumerate([1700.0, 2500.0, 1800.0]):  # median 1800 at 2 ranks
            paths.append(self.variant("synthetic_weak_np2.json", "rep%d.json" % k, set_fom(fom)))
        rc, out, _err = S.run_main(scaling, paths + ["--no-plots", "--mode", "weak"])
        self.assertEqual(rc, 0)
        row = S.md_row_starting(S.section(out, WEAK_HEADING), "2")
        self.assertEqual(row[:4], ["2", "3", "8", "1,800"])
        self.assertEqual(row[6], "0.900")  # (1800/2) / 1000

    def test_median_leaves_out_a_missing_fom_in_any_order(self):
        # Issue 32: 1-rank FOMs 1000, 1500 and null gave a base of 1,000, 1,500 or n/a by file order.
        import itertools
        reps = {name: self.variant(WEAK[0], "np1_%s.json" % name, set_fom(fom))
                for name, fom in (("a", 1000.0), ("b", 1500.0), ("null", None))}
        for order in itertools.permutations(sorted(reps)):
            rc, out, err = S.run_main(scaling, [reps[n] for n in order] + S.fixture(WEAK[1]) +
                                      ["--no-plots", "--mode", "weak"])
            self.assertEqual(rc, 0, err)
            weak = S.section(out, WEAK_HEADING)
            self.assertEqual(S.md_row_starting(weak, "1")[:4], ["1", "3", "4", "1,250"], order)
            self.assertEqual(S.md_row_starting(weak, "2")[6], "0.760", order)  # (1900/2) / 1250
            self.assertIn("No FOM (figure_of_merit.value null: non-finite) in 1 run(s), left out of the medians: "
                          "np1_null.json (1 rank).", weak)
        self.assertEqual(C.median([math.nan, 3.0, None, 1.0]), 2.0)
        self.assertIsNone(C.median([math.nan, None]))

    def test_interrupted_run_is_labelled_interrupted(self):
        def interrupt(doc):
            doc["status"] = "interrupted"
            doc["interrupted"] = {"signal": 15, "signal_name": "SIGTERM", "checkpoint": None}
        stopped = self.variant(WEAK[0], "np1_interrupted.json", interrupt)
        rc, out, err = S.run_main(scaling, [stopped] + S.fixture(WEAK[1]) + ["--no-plots", "--mode", "weak"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(S.md_row_starting(S.section(out, WEAK_HEADING), "1")[-1], "interrupted (1 of 1)")
        failed = self.variant(WEAK[0], "np1_failed.json", lambda d: d["runs"][0]["verification"].update(passed=False))
        rc, out, err = S.run_main(scaling, [stopped, failed, S.fixture(WEAK[0])[0]] + S.fixture(WEAK[1]) +
                                  ["--no-plots", "--mode", "weak"])
        self.assertEqual(S.md_row_starting(S.section(out, WEAK_HEADING), "1")[-1],
                         "FAILED (1 of 3), interrupted (1 of 3)")

    def test_different_device_is_a_different_group(self):
        def other_gpu(doc):
            for g in doc["environment"]["gpus"]:
                g["model"] = "Another GPU"
        paths = S.fixture(*WEAK[:2]) + [self.variant("synthetic_weak_np4.json", "np4_other.json", other_gpu)]
        groups = C.scaling_groups(C.load_records(paths))
        self.assertEqual(sorted(len(g.points) for g in groups), [1, 2])

    def test_different_step_count_is_a_different_group(self):
        def longer(doc):
            doc["runs"][0]["steps"]["timed"] = 5000
        paths = S.fixture(*WEAK[:2]) + [self.variant("synthetic_weak_np4.json", "np4_long.json", longer)]
        groups = C.scaling_groups(C.load_records(paths))
        self.assertEqual(sorted(len(g.points) for g in groups), [1, 2])

    def test_single_rank_count_groups_are_listed_not_plotted(self):
        rc, out, _err = S.run_main(scaling, S.fixture("synthetic_sweep_r.json") + ["--out", self.tmp])
        self.assertEqual(rc, 0)
        self.assertIn("Runs with a single rank count (no baseline, no scaling plot):", out)
        self.assertEqual(S.md_row_starting(out, "4096", "64"),
                         ["4096", "64", "float", "8", "1000", "exact/precision", "Synthetic GPU X1", "1", "1", "600",
                          "PASSED"])
        self.assertIn("No strong-mode runs.", out)
        self.assertEqual(os.listdir(self.tmp), [])


class ChecksumTest(S.TempDirTest):
    def group(self, paths):
        gs = [g for g in C.scaling_groups(C.load_records(paths)) if g.mode == "strong"]
        self.assertEqual(len(gs), 1)
        return gs[0]

    def test_identical_checksums_agree(self):
        rep = C.check_checksums(self.group(S.fixture(*STRONG)))
        self.assertEqual(rep.status, "agree")
        self.assertTrue(rep.ok)
        self.assertEqual(rep.streams, 8)
        self.assertIn("AGREE: 8 streams, bit-identical over 3 runs at ranks 1, 2, 4", rep.message)

    def test_one_ulp_difference_is_a_mismatch(self):
        rep = C.check_checksums(self.group(S.fixture(*MISMATCH)))
        self.assertEqual(rep.status, "mismatch")
        self.assertFalse(rep.ok)
        self.assertEqual([(sid, run.ranks) for sid, run, _g, _w in rep.mismatches], [(5, 4)])
        self.assertIn("stream 5: synthetic_strong_mismatch_np4.json (4 ranks) has 3.2500000000000004, "
                      "reference has 3.25", rep.message)
        # ... which a relative tolerance accepts.
        self.assertEqual(C.check_checksums(self.group(S.fixture(*MISMATCH)), rtol=1e-12).status, "agree")

    def test_null_or_missing_checksum_is_a_mismatch(self):
        def null5(doc):
            doc["runs"][0]["verification"]["per_stream_checksums"][5]["checksum"] = None
        def drop7(doc):
            doc["runs"][0]["verification"]["per_stream_checksums"].pop(7)
        for edit, text in ((null5, "has null (non-finite)"), (drop7, "stream 7: np4.json (4 ranks) has missing")):
            paths = S.fixture(*STRONG[:2]) + [self.variant(STRONG[2], "np4.json", edit)]
            rep = C.check_checksums(self.group(paths))
            self.assertEqual(rep.status, "mismatch", text)
            self.assertIn(text, rep.message)

    def test_exit_status_and_printed_result(self):
        rc, out, _err = S.run_main(scaling, S.fixture(*STRONG) + ["--no-plots"])
        self.assertEqual(rc, 0)
        self.assertIn("Per-stream checksums across rank counts: AGREE", out)
        rc, out, _err = S.run_main(scaling, S.fixture(*MISMATCH) + ["--no-plots"])
        self.assertEqual(rc, 1)
        self.assertIn("Per-stream checksums across rank counts: MISMATCH: 1 stream checksum(s) differ", out)
        self.assertIn("CHECKSUM MISMATCH in 1 strong-scaling group(s).", out)
        rc, _out, _err = S.run_main(scaling, S.fixture(*MISMATCH) + ["--no-plots", "--checksum-rtol", "1e-12"])
        self.assertEqual(rc, 0)


class ScalingFigureTest(S.TempDirTest):
    def test_pngs(self):
        out_dir = os.path.join(self.tmp, "figs")
        rc, out, err = S.run_main(scaling, S.fixture(*(WEAK + MISMATCH)) + ["--out", out_dir])
        self.assertEqual(rc, 1, err)
        pngs = sorted(os.listdir(out_dir))
        self.assertEqual(pngs, [
            "scaling_strong_d256_r16_float_8total_1000steps_exact-precision_Synthetic_GPU_X1_efficiency.png",
            "scaling_strong_d256_r16_float_8total_1000steps_exact-precision_Synthetic_GPU_X1_throughput.png",
            "scaling_weak_d512_r16_double_4perrank_1000steps_exact-precision_Synthetic_GPU_X1_efficiency.png",
            "scaling_weak_d512_r16_double_4perrank_1000steps_exact-precision_Synthetic_GPU_X1_throughput.png",
        ])
        for name in pngs:
            meta = self.assertPng(os.path.join(out_dir, name),
                                  ["Synthetic GPU X1 on synthetic-gpu-node-1", "git " + M.COMMIT_GPU])
            self.assertIn("scaling", meta["Title"])
            self.assertIn(os.path.join(out_dir, name), out)
        self.assertIn("d=256, r=16, float", S.png_text(os.path.join(out_dir, pngs[0]))["Title"])


if __name__ == "__main__":
    unittest.main()
