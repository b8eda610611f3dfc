"""Issue 15: runs are repeats of one configuration only when the update kernel
(update, block size, block GEMM, re-orthonormalization), the precision solve,
the backend and its concurrency (threads per rank with OpenMP) and the stream
mode agree as well; runs that differ in one of them are separate scaling
groups and sweep curves, never one median. So are runs of two deck files,
or of one deck at two algorithm settings (eta_U, ...): single_gpu.yaml
(eta_U 0.001) and seed_d_ladder.yaml (the default 0.005) are two curves.
Files without these fields (the synthetic fixtures, older result files)
load with the documented defaults and group as they did before."""

import csv
import os
import unittest

import analysis_test_support as S
from analysis import collect, saturation, scaling, stability, sweep
from analysis import common as C

WEAK_NP1, WEAK_NP2 = "synthetic_weak_np1.json", "synthetic_weak_np2.json"


def edit_all(*edits):
    def edit(doc):
        for e in edits:
            e(doc)
    return edit


def kernel(update, block_size):
    def edit(doc):
        for run in doc["runs"]:
            run["kernel"] = {"update": update, "block_size": block_size, "block_size_from": "deck",
                             "block_gemm": "tiled" if update == "blocked" else None, "reorthonormalize": "never"}
    return edit


def concurrency(n):
    def edit(doc):
        doc["environment"]["kokkos_default_concurrency"] = n
    return edit


def precision_solve(solve):
    def edit(doc):
        for run in doc["runs"]:
            run["resolved_deck"]["algorithm"]["precision_solve"] = solve
    return edit


def fom(*values):
    """FOMs of runs[0], runs[1], ... in that order."""
    def edit(doc):
        for run, value in zip(doc["runs"], values):
            run["figure_of_merit"]["value"] = value
            run["throughput"]["update_samples_per_second"] = value
    return edit


def deck(path, **algorithm):
    """Another deck file and, in every run, these resolved_deck.algorithm settings."""
    def edit(doc):
        doc["deck_path"] = path
        for run in doc["runs"]:
            run["resolved_deck"]["algorithm"].update(algorithm)
    return edit


def keep_runs(*indices):
    def edit(doc):
        doc["runs"] = [doc["runs"][k] for k in indices]
    return edit


def strong_mode(doc):
    for run in doc["runs"]:
        run["decomposition"]["mode"] = "strong"


def point_foms(group):
    """[(ranks, runs, median FOM)] of a scaling group."""
    return [(p.ranks, len(p.records), p.fom) for p in group.points]


class ScalingGroupingTest(S.TempDirTest):
    def weak_pair(self, tag, *edits, foms=(1000.0, 1900.0)):
        """The weak-scaling fixture at 1 and 2 ranks, edited and given those FOMs."""
        return [self.variant(WEAK_NP1, "%s_np1.json" % tag, edit_all(fom(foms[0]), *edits)),
                self.variant(WEAK_NP2, "%s_np2.json" % tag, edit_all(fom(foms[1]), *edits))]

    def test_sequential_and_blocked_runs_are_not_one_median(self):
        # The numbers: sequential 956, blocked 3,808 samples/s at 2 ranks
        # were "2 repeats, median 2,382".
        paths = (self.weak_pair("seq", kernel("sequential", 1), foms=(500.0, 956.0))
                 + self.weak_pair("blk", kernel("blocked", 64), foms=(2000.0, 3808.0)))
        groups = C.scaling_groups(C.load_records(paths))
        self.assertEqual(sorted(point_foms(g) for g in groups),
                         [[(1, 1, 500.0), (2, 1, 956.0)], [(1, 1, 2000.0), (2, 1, 3808.0)]])
        self.assertEqual(sorted((dict(g.key)["kernel"], dict(g.key)["block size"]) for g in groups),
                         [("blocked", "64"), ("sequential", "1")])
        for g in groups:  # the efficiency math is unchanged: (FOM(2)/2) / FOM(1)
            self.assertAlmostEqual(g.points[1].efficiency, (g.points[1].fom / 2) / g.points[0].fom, places=12)

        rc, out, err = S.run_main(scaling, paths + ["--mode", "weak", "--out", self.tmp])
        self.assertEqual(rc, 0, err)
        heading = ("## d=512, r=16, double, 4 streams/rank, 1000 steps, exact/precision, kernel=blocked, "
                   "block size=64, block GEMM=tiled on Synthetic GPU X1")
        self.assertEqual(S.md_row_starting(S.section(out, heading), "2")[:4], ["2", "1", "8", "3,808"])
        self.assertIn("kernel=sequential, block size=1, block GEMM=n/a on Synthetic GPU X1", out)
        self.assertIn("Configuration of every weak-mode series: reorthonormalize=never, precision solve=dense, "
                      "backend=Cuda, concurrency=135168.", out)
        self.assertNotIn("2,382", out)
        # One pair of figures per series: the names tell them apart, none overwritten.
        pngs = sorted(p for p in os.listdir(self.tmp) if p.endswith(".png"))
        self.assertEqual(len(pngs), 4)
        self.assertEqual(pngs, [
            "scaling_weak_d512_r16_double_4perrank_1000steps_exact-precision_blocked_k64_gemm-tiled_Synthetic_GPU_X1_"
            + what + ".png" for what in ("efficiency", "throughput")] + [
            "scaling_weak_d512_r16_double_4perrank_1000steps_exact-precision_sequential_k1_gemm-n_a_Synthetic_GPU_X1_"
            + what + ".png" for what in ("efficiency", "throughput")])

    def test_concurrency_1_and_2_are_not_merged(self):
        # The 2-rank runs at 1 and 2 threads per rank were one point (median of both).
        paths = self.weak_pair("omp1", concurrency(1)) + [
            self.variant(WEAK_NP2, "omp2_np2.json", edit_all(concurrency(2), fom(4000.0)))]
        groups = C.scaling_groups(C.load_records(paths))
        by_concurrency = {dict(g.key)["concurrency"]: g for g in groups}
        self.assertEqual(sorted(by_concurrency), ["1", "2"])
        self.assertEqual(point_foms(by_concurrency["1"]), [(1, 1, 1000.0), (2, 1, 1900.0)])
        self.assertEqual(point_foms(by_concurrency["2"]), [(2, 1, 4000.0)])

        rc, out, err = S.run_main(scaling, paths + ["--mode", "weak", "--no-plots"])
        self.assertEqual(rc, 0, err)
        row = S.md_row_starting(S.section(out, "## d=512, r=16, double, 4 streams/rank, 1000 steps, exact/precision, "
                                               "concurrency=1 on Synthetic GPU X1"), "2")
        self.assertEqual(row[:4], ["2", "1", "8", "1,900"])
        # The 2-thread run has no 1-rank baseline of its own: listed, with its concurrency.
        self.assertEqual(S.md_row_starting(out, "512", "16", "double", "4", "1000", "exact/precision", "2"),
                         ["512", "16", "double", "4", "1000", "exact/precision", "2", "Synthetic GPU X1", "2", "1",
                          "4,000", "PASSED"])

    def test_two_decks_or_two_rates_are_not_one_series(self):
        # The same weak series from two decks (eta_U 0.005 and 0.001): two series,
        # their headings and figure names telling them apart.
        paths = (self.weak_pair("a") + self.weak_pair("b", deck("inputs/other.yaml", eta_U=0.001),
                                                      foms=(3000.0, 5000.0)))
        groups = C.scaling_groups(C.load_records(paths))
        self.assertEqual(sorted(point_foms(g) for g in groups),
                         [[(1, 1, 1000.0), (2, 1, 1900.0)], [(1, 1, 3000.0), (2, 1, 5000.0)]])
        rc, out, err = S.run_main(scaling, paths + ["--mode", "weak", "--out", self.tmp])
        self.assertEqual(rc, 0, err)
        self.assertIn("## d=512, r=16, double, 4 streams/rank, 1000 steps, exact/precision, deck=other.yaml, "
                      "algorithm.eta_U=0.001 on Synthetic GPU X1", out)
        self.assertIn("deck=weak_8gpu.yaml, algorithm.eta_U=0.005 on Synthetic GPU X1", out)
        pngs = sorted(p for p in os.listdir(self.tmp) if p.endswith("_throughput.png"))
        self.assertEqual(len(pngs), 2)
        self.assertIn("other.yaml_eta_U0.001", pngs[0])
        # One deck at two rates of another setting (eta_S): still two series.
        paths = self.weak_pair("c", deck("inputs/weak_8gpu.yaml", eta_S=0.05)) + S.fixture(WEAK_NP1, WEAK_NP2)
        self.assertEqual(len(C.scaling_groups(C.load_records(paths))), 2)

    def test_precision_solve_dense_and_maintained_are_not_merged(self):
        # A file without algorithm.precision_solve ran the dense solve: it groups with "dense".
        paths = (S.fixture(WEAK_NP1)
                 + [self.variant(WEAK_NP2, "dense_np2.json", precision_solve("dense")),
                    self.variant(WEAK_NP2, "maintained_np2.json", edit_all(precision_solve("maintained"),
                                                                            fom(3000.0)))])
        groups = C.scaling_groups(C.load_records(paths))
        by_solve = {dict(g.key)["precision solve"]: g for g in groups}
        self.assertEqual(sorted(by_solve), ["dense", "maintained"])
        self.assertEqual(point_foms(by_solve["dense"]), [(1, 1, 1000.0), (2, 1, 1900.0)])
        self.assertEqual(point_foms(by_solve["maintained"]), [(2, 1, 3000.0)])

    def test_collect_efficiency_has_no_baseline_from_another_configuration(self):
        paths = self.weak_pair("omp1", concurrency(1)) + [
            self.variant(WEAK_NP2, "omp2_np2.json", edit_all(concurrency(2), fom(4000.0)))]
        csv_path = os.path.join(self.tmp, "runs.csv")
        rc, out, err = S.run_main(collect, paths + ["--csv", csv_path])
        self.assertEqual(rc, 0, err)
        header = S.md_rows(out)[0]
        self.assertEqual(header[10], "concurrency")  # the one configuration field that differs
        col = {h: k for k, h in enumerate(header)}
        self.assertEqual(S.md_row_starting(out, "omp1_np2.json")[col["efficiency"]], "0.950")
        self.assertEqual(S.md_row_starting(out, "omp2_np2.json")[col["efficiency"]], "")
        self.assertEqual(S.md_row_starting(out, "omp2_np2.json")[col["concurrency"]], "2")
        self.assertIn("Every run: kernel=sequential, block size=1, block GEMM=n/a, reorthonormalize=never, "
                      "precision solve=dense, backend=Cuda.", out)
        with open(csv_path, newline="", encoding="utf-8") as f:
            rows = {os.path.basename(r["file"]): r for r in csv.DictReader(f)}
        self.assertEqual(rows["omp2_np2.json"]["concurrency"], "2")
        self.assertEqual(rows["omp2_np2.json"]["efficiency"], "")


class SweepGroupingTest(S.TempDirTest):
    def test_sequential_and_blocked_runs_are_separate_curves(self):
        paths = S.fixture("synthetic_sweep_d.json") + [
            self.variant("synthetic_sweep_d.json", "blocked_d.json",
                         edit_all(kernel("blocked", 32), fom(16000.0, 8000.0, 4000.0)))]
        _text, found, _figs = sweep.analyse(C.load_records(paths), self.tmp, plots=False)
        vs_d = found["Throughput vs d"]
        self.assertEqual(sorted([(x, len(rs), f) for x, f, rs in c.points] for c in vs_d), [
            [(256, 1, 4000.0), (512, 1, 2000.0), (1024, 1, 1000.0)],
            [(256, 1, 16000.0), (512, 1, 8000.0), (1024, 1, 4000.0)]])

        rc, out, err = S.run_main(sweep, paths + ["--out", self.tmp])
        self.assertEqual(rc, 0, err)
        d = S.section(out, "# Throughput vs d")
        self.assertIn("Every curve: mode=weak, reorthonormalize=never, precision solve=dense, backend=Cuda, "
                      "concurrency=135168.", d)
        blocked = S.section(d, "## r=16, dtype=float, ranks=1, total streams=8, steps=1000, algorithm=exact/precision, "
                               "kernel=blocked, block size=32, block GEMM=tiled, device=Synthetic GPU X1")
        self.assertEqual(S.md_row_starting(blocked, "512"), ["512", "1", "8,000", "1,000", "1,600", "PASSED"])
        self.assertIn("kernel=sequential, block size=1, block GEMM=n/a, device=Synthetic GPU X1", d)

    def test_concurrency_1_and_2_are_separate_curves(self):
        paths = S.fixture("synthetic_sweep_r.json") + [
            self.variant("synthetic_sweep_r.json", "omp_r.json", edit_all(concurrency(2), fom(6000.0, 3000.0, 1200.0)))]
        _text, found, _figs = sweep.analyse(C.load_records(paths), self.tmp, plots=False)
        vs_r = found["Throughput vs r"]
        self.assertEqual(sorted((dict(c.key)["concurrency"], [(x, len(rs), f) for x, f, rs in c.points])
                                for c in vs_r), [
            ("135168", [(8, 1, 3000.0), (32, 1, 1500.0), (64, 1, 600.0)]),
            ("2", [(8, 1, 6000.0), (32, 1, 3000.0), (64, 1, 1200.0)])])

    def test_two_decks_or_two_rates_are_two_curves(self):
        # single_gpu.yaml (eta_U 0.001) and seed_d_ladder.yaml (eta_U 0.005),
        # otherwise identical: two curves of one run per point, not one of two.
        headline = self.variant("synthetic_sweep_d.json", "headline.json",
                                edit_all(deck("inputs/single_gpu.yaml", eta_U=0.001), fom(5000.0, 2500.0, 1200.0)))
        ladder = self.variant("synthetic_sweep_d.json", "ladder.json", deck("inputs/seed_d_ladder.yaml"))
        _text, found, _figs = sweep.analyse(C.load_records([headline, ladder]), self.tmp, plots=False)
        vs_d = found["Throughput vs d"]
        self.assertEqual(sorted([(x, len(rs), f) for x, f, rs in c.points] for c in vs_d), [
            [(256, 1, 4000.0), (512, 1, 2000.0), (1024, 1, 1000.0)],
            [(256, 1, 5000.0), (512, 1, 2500.0), (1024, 1, 1200.0)]])
        rc, out, err = S.run_main(sweep, [headline, ladder, "--out", self.tmp])
        self.assertEqual(rc, 0, err)
        d = S.section(out, "# Throughput vs d")
        # The headings say what differs: the deck and eta_U; the settings they share are not listed.
        one = S.section(d, "## r=16, dtype=float, ranks=1, total streams=8, steps=1000, algorithm=exact/precision, "
                           "deck=single_gpu.yaml, algorithm.eta_U=0.001, device=Synthetic GPU X1")
        self.assertEqual(S.md_row_starting(one, "512")[:3], ["512", "1", "2,500"])
        two = S.section(d, "## r=16, dtype=float, ranks=1, total streams=8, steps=1000, algorithm=exact/precision, "
                           "deck=seed_d_ladder.yaml, algorithm.eta_U=0.005, device=Synthetic GPU X1")
        self.assertEqual(S.md_row_starting(two, "512")[:3], ["512", "1", "2,000"])
        self.assertNotIn("eta_S", d)
        self.assertEqual(sweep.curve_labels(vs_d)[0], [
            "this code: deck=single_gpu.yaml, algorithm.eta_U=0.001",
            "this code: deck=seed_d_ladder.yaml, algorithm.eta_U=0.005"])
        self.assertPng(os.path.join(self.tmp, "sweep_throughput_vs_d.png"), ["single_gpu.yaml; seed_d_ladder.yaml"])
        # One deck at two values of any other algorithm setting: two curves too.
        other = self.variant("synthetic_sweep_d.json", "gamma.json", deck("inputs/single_gpu.yaml", gamma=0.5))
        vs_d = sweep.curves(C.load_records(S.fixture("synthetic_sweep_d.json") + [other]), "d", ("d",))
        self.assertEqual([[len(rs) for _x, _f, rs in c.points] for c in vs_d], [[1, 1, 1], [1, 1, 1]])
        self.assertEqual(sweep.curve_labels(vs_d)[0], ["this code: algorithm.gamma=1.0",
                                                       "this code: algorithm.gamma=0.5"])

    def test_init_samples_following_r_is_one_curve(self):
        # An unset algorithm.init_samples resolves to 2 r: along a rank sweep it
        # follows r, and the sweep stays one curve.
        def two_r(doc):
            for run in doc["runs"]:
                run["resolved_deck"]["algorithm"]["init_samples"] = 2 * run["resolved_deck"]["problem"]["rank"]
        path = self.variant("synthetic_sweep_r.json", "two_r.json", two_r)
        vs_r = sweep.curves(C.load_records([path]), "r", ("r",))
        self.assertEqual([[x for x, _f, _rs in c.points] for c in vs_r], [[8, 32, 64]])
        self.assertEqual(dict(vs_r[0].key)["algorithm.init_samples"], "2r")

    def test_saturation_from_two_configurations_is_no_curve(self):
        # The "saturates at 8 streams": 4 streams at 1 thread and 8 streams
        # at 2 threads, or 4 streams in weak and 8 in strong mode, or from two
        # decks, are no curve.
        four = self.variant("synthetic_saturation.json", "four.json", edit_all(keep_runs(2), concurrency(1)))
        eight_omp2 = self.variant("synthetic_saturation.json", "eight.json", edit_all(keep_runs(3), concurrency(2)))
        eight_strong = self.variant("synthetic_saturation.json", "eight_strong.json",
                                    edit_all(keep_runs(3), concurrency(1), strong_mode))
        eight_deck = self.variant("synthetic_saturation.json", "eight_deck.json",
                                  edit_all(keep_runs(3), concurrency(1), deck("inputs/saturation.yaml")))
        eight = self.variant("synthetic_saturation.json", "eight_same.json", edit_all(keep_runs(3), concurrency(1)))
        for other in (eight_omp2, eight_strong, eight_deck):
            self.assertEqual(saturation.saturation_curves(C.load_records([four, other])), [], other)
            rc, out, err = S.run_main(saturation, [four, other, "--no-plots"])
            self.assertEqual(rc, 2, other)
            self.assertIn("no runs that differ only in the streams per rank", err)
        self.assertEqual(len(saturation.saturation_curves(C.load_records([four, eight]))), 1)

    def test_block_size_auto_is_one_curve_over_r(self):
        # Under block_size: auto, k follows r (clamp(2r, 32, 128) on the CPU): one
        # curve, the resolved k in its table; another k at the same r (another
        # build's rule) is another point, not a repeat.
        def auto(*ks):
            def edit(doc):
                for run, k in zip(doc["runs"], ks):
                    run["kernel"] = {"update": "blocked", "block_size": k, "block_size_from": "auto",
                                     "block_gemm": "tiled", "reorthonormalize": "every block end"}
            return edit
        paths = [self.variant("synthetic_sweep_r.json", "auto_r.json", auto(32, 64, 128)),
                 self.variant("synthetic_sweep_r.json", "auto_r64.json", edit_all(keep_runs(2), auto(64), fom(900.0)))]
        rc, out, err = S.run_main(sweep, paths + ["--no-plots"])
        self.assertEqual(rc, 0, err)
        r = S.section(out, "# Throughput vs r")
        self.assertIn("block size=auto", r)
        self.assertEqual(S.md_rows(r)[0][:3], ["r", "block size", "runs"])
        # The seed has a figure at d=4096, r=64 only: no seed figure (n/a) at r=32.
        self.assertEqual(S.md_row_starting(r, "32"), ["32", "64", "1", "1,500", "n/a", "n/a", "187.5", "1,200",
                                                      "PASSED"])
        self.assertEqual([row[:4] for row in S.md_rows(r) if row[0] == "64"],
                         [["64", "64", "1", "900"], ["64", "128", "1", "600"]])


class StabilityLabelTest(S.TempDirTest):
    def test_legend_and_table_name_the_differing_configuration(self):
        paths = S.fixture("synthetic_drift_np1.json") + [
            self.variant("synthetic_drift_np2.json", "drift_omp2.json", concurrency(2))]
        group = stability.deck_groups(C.load_records(paths))[0]
        self.assertEqual(stability.run_label(group[1], group), "np=2, concurrency=2 (drift_omp2.json)")
        rc, out, err = S.run_main(stability, paths + ["--no-plots"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(S.md_row_starting(out, "drift_omp2.json")[:5], ["drift_omp2.json", "2", "2", "6000", "2"])


class OldFilesTest(S.TempDirTest):
    def test_fixtures_without_the_fields_load_with_the_defaults(self):
        recs = C.load_records(S.fixture("synthetic_weak_np1.json", "synthetic_drift_np1.json"))
        for r in recs:
            self.assertEqual((r.kernel, r.block_size, r.block_size_from, r.block_gemm, r.reorthonormalize,
                              r.precision_solve), ("sequential", 1, "deck", None, "never", "dense"))
        self.assertEqual([(r.backend, r.concurrency) for r in recs], [("Cuda", 135168), ("OpenMP", 16)])
        real = C.load_records([os.path.join(S.HERE, "real_fixtures", "real_weak_np1.json")])[0]
        self.assertEqual((real.kernel, real.block_size, real.concurrency), ("sequential", 1, 1))  # block_size: 0

    def test_keys_added_since_read_as_the_values_they_imply(self):
        # A file from before init_max_samples and section 9's keys keys its
        # runs as one written now with their defaults; along a rank sweep
        # the default limit follows init_samples (one curve).
        old = {"eta_U": 0.005, "init_samples": 8}
        new = dict(old, init_max_samples=512, time_segments=1, segment_warmup="auto", segment_warmup_init="data",
                   segment_tolerance="auto", segment_max_passes="auto", segment_gauge="carry")
        self.assertEqual(C.algorithm_settings(old, 4), C.algorithm_settings(new, 4))
        at_r8 = dict(new, init_samples=16, init_max_samples=1024)
        self.assertEqual(C.algorithm_settings(new, 4), C.algorithm_settings(at_r8, 8))
        self.assertIn(("algorithm.init_max_samples", "64 init_samples"), C.algorithm_settings(new, 4))
        self.assertNotEqual(C.algorithm_settings(dict(new, init_max_samples=100), 4), C.algorithm_settings(new, 4))

    def test_missing_kernel_follows_the_deck_and_missing_block_gemm_is_none(self):
        def old_blocked(doc):
            doc["runs"][0]["resolved_deck"]["algorithm"].update(block_size=64, reorthonormalize_every=500)
        def no_block_gemm(doc):
            kernel("blocked", 32)(doc)
            del doc["runs"][0]["kernel"]["block_gemm"]
        def no_concurrency(doc):
            del doc["environment"]["kokkos_default_concurrency"]
        r = C.load_records([self.variant(WEAK_NP1, "old_blocked.json", old_blocked)])[0]
        self.assertEqual((r.kernel, r.block_size, r.block_gemm, r.reorthonormalize),
                         ("blocked", 64, None, "every 500 steps"))
        r = C.load_records([self.variant(WEAK_NP1, "no_gemm.json", no_block_gemm)])[0]
        self.assertEqual((r.kernel, r.block_size, r.block_gemm), ("blocked", 32, None))
        r = C.load_records([self.variant(WEAK_NP1, "no_concurrency.json", no_concurrency)])[0]
        self.assertIsNone(r.concurrency)
        self.assertEqual(dict(r.configuration)["concurrency"], "n/a")

    def test_fixtures_group_as_before(self):
        # Every fixture but synthetic_breakdown.json lacks the new fields: the
        # scaling groups over all of them are those the analysis made before it
        # keyed on the configuration, and the two d of synthetic_breakdown.json.
        groups = C.scaling_groups(C.load_records([S.FIXTURES]))
        self.assertEqual(sorted((dict(g.key)["mode"], dict(g.key)["d"], dict(g.key)["r"],
                                 [(p.ranks, len(p.records)) for p in g.points]) for g in groups), sorted([
            ("weak", "256", "8", [(1, 1), (2, 1)]),
            ("weak", "64", "4", [(1, 1)]),
            ("weak", "2048", "16", [(1, 1)]), ("weak", "2048", "16", [(1, 1)]),
            ("weak", "2048", "16", [(1, 1)]), ("weak", "2048", "16", [(1, 1)]),
            ("strong", "256", "16", [(2, 1), (4, 1)]),
            ("strong", "768", "32", [(1, 1), (2, 1), (4, 1)]),
            ("weak", "256", "16", [(1, 1)]), ("weak", "512", "16", [(1, 1)]), ("weak", "1024", "16", [(1, 1)]),
            ("weak", "4096", "8", [(1, 1)]), ("weak", "4096", "32", [(1, 1)]), ("weak", "4096", "64", [(1, 1)]),
            ("weak", "512", "16", [(1, 1), (2, 1), (4, 1)]),
            ("weak", "128", "8", [(2, 1)]), ("weak", "256", "8", [(2, 1)]),
        ]))

    def test_collect_csv_has_the_configuration_columns(self):
        csv_path = os.path.join(self.tmp, "runs.csv")
        paths = S.fixture(WEAK_NP1) + [self.variant(WEAK_NP2, "blocked.json", kernel("blocked", 64))]
        rc, _out, err = S.run_main(collect, paths + ["--csv", csv_path])
        self.assertEqual(rc, 0, err)
        with open(csv_path, newline="", encoding="utf-8") as f:
            rows = {os.path.basename(r["file"]): r for r in csv.DictReader(f)}
        fields = ("kernel", "block_size", "block_gemm", "reorthonormalize", "precision_solve", "concurrency")
        self.assertEqual(tuple(rows[WEAK_NP1][f] for f in fields),
                         ("sequential", "1", "", "never", "dense", "135168"))
        self.assertEqual(tuple(rows["blocked.json"][f] for f in fields),
                         ("blocked", "64", "tiled", "never", "dense", "135168"))
        self.assertEqual(rows["blocked.json"]["efficiency"], "")  # the sequential 1-rank run is not its base


if __name__ == "__main__":
    unittest.main()
