"""analysis.sweep: curves vs d and vs r, their tables and figures; the runs of a
streams.per_rank sweep are left to analysis.saturation."""

import json
import os
import unittest

import analysis_test_support as S
import make_synthetic_fixtures as M
from analysis import common as C
from analysis import seed
from analysis import sweep

SWEEPS = ["synthetic_sweep_d.json", "synthetic_sweep_r.json", "synthetic_saturation.json"]


class SweepTest(S.TempDirTest):
    def test_curves(self):
        recs = C.load_records(S.fixture(*(SWEEPS + ["synthetic_weak_np1.json", "synthetic_strong_np1.json"])))
        text, found, figs = sweep.analyse(recs, self.tmp, plots=False)
        self.assertEqual(figs, [])
        self.assertEqual(list(found), ["Throughput vs d", "Throughput vs r"])
        vs_d, vs_r = found.values()
        self.assertEqual([[(x, f) for x, f, _r in c.points] for c in vs_d],
                         [[(256, 4000.0), (512, 2000.0), (1024, 1000.0)]])
        self.assertEqual([[(x, f) for x, f, _r in c.points] for c in vs_r],
                         [[(8, 3000.0), (32, 1500.0), (64, 600.0)]])
        # The streams.per_rank sweep is analysis.saturation's, in no d or r curve.
        self.assertIn("4 run(s) of a streams.per_rank sweep (synthetic_saturation.json) are left to "
                      "analysis.saturation", text)
        self.assertNotIn("synthetic_saturation.json", {r.file for cs in found.values() for c in cs
                                                        for r in c.records})

    def test_tables(self):
        rc, out, err = S.run_main(sweep, S.fixture(*SWEEPS) + ["--no-plots"])
        self.assertEqual(rc, 0, err)
        d = S.section(out, "# Throughput vs d")
        self.assertEqual(S.md_row_starting(d, "512"), ["512", "1", "2,000", "250", "1,600", "PASSED"])
        self.assertNotIn("seed, GB10, PyTorch", d)  # r=16: the seed has no figure there
        r = S.section(out, "# Throughput vs r")
        # d=4096, r=64, 8 streams, float, one rank: the seed's 9,014 samples/s beside this code's 600.
        self.assertEqual(S.md_row_starting(r, "64"), ["64", "1", "600", "9,014", "0.067", "75", "480", "PASSED"])
        self.assertEqual(S.md_row_starting(r, "8"), ["8", "1", "3,000", "n/a", "n/a", "375", "2,400", "PASSED"])
        self.assertEqual(S.md_rows(r)[0][:6], [
            "r", "runs", "FOM (update samples/s), this code, Synthetic GPU X1", "seed, GB10, PyTorch (samples/s)",
            "this code / seed", "per-stream samples/s"])
        self.assertIn("source: the project's issue 33 and COLLABORATION.md", r)
        self.assertNotIn("# Saturation", out)  # analysis.saturation's, not sweep's
        self.assertNotIn("Saturates", out)

    def test_nothing_to_sweep(self):
        rc, out, _err = S.run_main(sweep, S.fixture("synthetic_weak_np1.json", "synthetic_weak_np2.json")
                                   + ["--out", self.tmp])
        self.assertEqual(rc, 0)
        self.assertIn("No runs that differ only in d.", out)
        self.assertIn("No runs that differ only in r.", out)
        self.assertNotIn("streams/rank", out)
        self.assertEqual(os.listdir(self.tmp), [])

    def test_failed_run_is_flagged_in_the_table(self):
        def fail(doc):
            doc["runs"][1]["verification"]["passed"] = False
        path = self.variant("synthetic_sweep_d.json", "sweep_d_failed.json", fail)
        rc, out, _err = S.run_main(sweep, [path, "--no-plots"])
        self.assertEqual(rc, 0)
        self.assertEqual(S.md_row_starting(S.section(out, "# Throughput vs d"), "512")[-1], "FAILED (1 of 1)")

    def test_interrupted_run_is_labelled_interrupted(self):
        def interrupt(doc):
            doc["status"] = "interrupted"
            doc["interrupted"] = {"signal": 15, "signal_name": "SIGTERM", "checkpoint": None}
        path = self.variant("synthetic_sweep_d.json", "sweep_d_interrupted.json", interrupt)
        rc, out, _err = S.run_main(sweep, [path, "--no-plots"])
        self.assertEqual(rc, 0)
        self.assertEqual(S.md_row_starting(S.section(out, "# Throughput vs d"), "512")[-1], "interrupted (1 of 1)")

    def test_out_that_is_a_file_is_refused_before_any_output(self):
        # Issue 32: the tables were printed, then a FileExistsError traceback.
        figs = os.path.join(self.tmp, "figs")
        open(figs, "w").close()
        for out_dir, what in [(figs, "exists and is not a directory (--out needs a directory for the figures)"),
                              (os.path.join(figs, "sub"), "cannot make this directory: %s is not a directory" % figs)]:
            rc, out, err = S.run_main(sweep, S.fixture(*SWEEPS) + ["--out", out_dir])
            self.assertOneLineError(rc, err, "analysis.sweep", "%s: %s" % (out_dir, what))
            self.assertEqual(out, "")

    def test_pngs(self):
        rc, out, err = S.run_main(sweep, S.fixture(*SWEEPS) + ["--out", self.tmp])
        self.assertEqual(rc, 0, err)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["sweep_throughput_vs_d.png", "sweep_throughput_vs_r.png"])
        # The caption: machine, short commit and deck file.
        short = "git %s |" % M.COMMIT_GPU[:12]
        meta = self.assertPng(os.path.join(self.tmp, "sweep_throughput_vs_d.png"),
                              ["Synthetic GPU X1 on synthetic-gpu-node-1", short, "deck: single_gpu.yaml"])
        self.assertNotIn(M.COMMIT_GPU, meta["Description"])
        self.assertPng(os.path.join(self.tmp, "sweep_throughput_vs_r.png"), ["Synthetic GPU X1", "deck: rank_sweep.yaml"])
        self.assertIn("Figure: " + os.path.join(self.tmp, "sweep_throughput_vs_r.png"), out)


def seed_ladder_edit(ds, r, dtype="float", ranks=None):
    """The d sweep fixture (1 rank, 8 streams, float, FOM 4000, 2000, 1000) moved
    to the seed's configuration: d in `ds`, rank r, dtype; optionally 2 ranks."""
    def edit(doc):
        for run, d in zip(doc["runs"], ds):
            run["resolved_deck"]["problem"].update(d=d, rank=r, dtype=dtype)
            run["dtype"] = dtype
            run["sweep_point"] = {"problem.d": d}
            if ranks is not None:
                run["decomposition"]["ranks"] = ranks
    return edit


class SeedColumnTest(S.TempDirTest):
    def test_seed_figures(self):
        self.assertEqual(seed.seed_figure(8192, 64, 8, "float"), 5210.0)
        self.assertEqual(seed.seed_figure(2048, 64, 8, "float32"), 12794.0)
        self.assertEqual(seed.seed_figure(8192, 32, 8, "float"), 9758.0)
        self.assertEqual(seed.seed_figure(8192, 128, 8, "float"), 2444.0)
        self.assertIsNone(seed.seed_figure(8192, 64, 8, "double"))
        self.assertIsNone(seed.seed_figure(8192, 64, 16, "float"))
        self.assertIsNone(seed.seed_figure(8192, 48, 8, "float"))
        self.assertIsNone(seed.seed_figure(1024, 64, 8, "float"))
        self.assertEqual(seed.LABEL, "seed, GB10, PyTorch")
        # The seed's figures do not say what their timer covered: its legend says so.
        self.assertEqual(seed.PLOT_LABEL, "seed, GB10, PyTorch (GPU; timer scope not stated)")
        self.assertIn("timer scope not stated", seed.source_note())
        self.assertEqual(seed.ladder("d", 64), [(2048, 12794.0), (4096, 9014.0), (8192, 5210.0), (16384, 2654.0)])
        self.assertEqual(seed.ladder("r", 8192), [(32, 9758.0), (64, 5210.0), (128, 2444.0)])

    def test_a_float_run_at_the_seed_point_gets_its_figure(self):
        path = self.variant("synthetic_sweep_d.json", "seed_d.json", seed_ladder_edit((2048, 8192, 16384), 64))
        recs = C.load_records([path])
        self.assertEqual([seed.seed_figure_for(r) for r in recs], [12794.0, 5210.0, 2654.0])
        rc, out, err = S.run_main(sweep, [path, "--no-plots"])
        self.assertEqual(rc, 0, err)
        d = S.section(out, "# Throughput vs d")
        header = S.md_rows(d)[0]
        self.assertEqual(header[2:5], ["FOM (update samples/s), this code, Synthetic GPU X1",
                                       "seed, GB10, PyTorch (samples/s)", "this code / seed"])
        self.assertEqual(S.md_row_starting(d, "8192")[:5], ["8192", "1", "2,000", "5,210", "%.3f" % (2000 / 5210)])
        self.assertEqual(S.md_row_starting(d, "16384")[:5], ["16384", "1", "1,000", "2,654", "0.377"])
        self.assertEqual(out.count("Seed figures (seed, GB10, PyTorch)"), 1)
        self.assertEqual(sweep.seed_points(sweep.curves(recs, "d", ("d",)), "d"), [(64, seed.ladder("d", 64))])

    def test_no_seed_figure_for_double_another_rank_or_two_ranks(self):
        for name, edit in (("double.json", seed_ladder_edit((2048, 8192, 16384), 64, dtype="double")),
                           ("r48.json", seed_ladder_edit((2048, 8192, 16384), 48)),
                           ("np2.json", seed_ladder_edit((2048, 8192, 16384), 64, ranks=2))):
            path = self.variant("synthetic_sweep_d.json", name, edit)
            recs = C.load_records([path])
            self.assertEqual([seed.seed_figure_for(r) for r in recs], [None, None, None], name)
            rc, out, err = S.run_main(sweep, [path, "--no-plots"])
            self.assertEqual(rc, 0, err)
            self.assertNotIn("seed, GB10", out, name)
            self.assertEqual(S.md_row_starting(out, "8192")[:4], ["8192", "1", "2,000", "250"], name)
            self.assertEqual(sweep.seed_points(sweep.curves(recs, "d", ("d",)), "d"), [], name)

    def test_png_with_seed_points(self):
        path = self.variant("synthetic_sweep_d.json", "seed_d.json", seed_ladder_edit((2048, 8192, 16384), 64))
        out_dir = os.path.join(self.tmp, "out")
        rc, _out, err = S.run_main(sweep, [path, "--out", out_dir])
        self.assertEqual(rc, 0, err)
        self.assertPng(os.path.join(out_dir, "sweep_throughput_vs_d.png"),
                       ["Synthetic GPU X1 on synthetic-gpu-node-1", "deck: single_gpu.yaml"])


def kernel_edit(update, block_size, foms, concurrency=None, reorthonormalize="never"):
    """Every run gets a runs[].kernel object and the FOMs; optionally another concurrency."""
    def edit(doc):
        for run, value in zip(doc["runs"], foms):
            run["kernel"] = {"update": update, "block_size": block_size, "block_size_from": "deck",
                             "block_gemm": "tiled" if update == "blocked" else None,
                             "reorthonormalize": reorthonormalize}
            run["figure_of_merit"]["value"] = value
            run["throughput"]["update_samples_per_second"] = value
        if concurrency is not None:
            doc["environment"]["kokkos_default_concurrency"] = concurrency
    return edit


def foms(path):
    """{d: FOM} of a result file, read directly from the JSON."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    return {run["resolved_deck"]["problem"]["d"]: run["figure_of_merit"]["value"] for run in doc["runs"]}


class BlockedVsSequentialTest(S.TempDirTest):
    def files(self):
        seq = self.variant("synthetic_sweep_d.json", "seq.json", kernel_edit("sequential", 1, (4000.0, 2000.0, 1000.0)))
        # The blocked kernel's float default re-orthonormalizes at every block
        # end, the sequential one's never: part of the kernel, still a pair.
        blk = self.variant("synthetic_sweep_d.json", "blk.json",
                           kernel_edit("blocked", 64, (6000.0, 5000.0, 4500.0), reorthonormalize="every block end"))
        # Blocked at another concurrency: it differs from the sequential curve
        # in more than the kernel and pairs with nothing.
        other = self.variant("synthetic_sweep_d.json", "blk_conc4.json",
                             kernel_edit("blocked", 64, (9000.0, 9000.0, 9000.0), concurrency=4))
        return seq, blk, other

    def test_ratio_is_the_fom_ratio_of_the_matching_curves_only(self):
        seq, blk, other = self.files()
        rc, out, err = S.run_main(sweep, [seq, blk, other, "--no-plots"])
        self.assertEqual(rc, 0, err)
        part = S.section(out, "## Blocked vs sequential update kernel (vs d)")
        rows = [r for r in S.md_rows(part) if r[0] != "d"]
        b, q = foms(blk), foms(seq)
        self.assertEqual(rows, [[str(d), C.fmt_rate(b[d]), C.fmt_rate(q[d]), "%.3f" % (b[d] / q[d])]
                                for d in (256, 512, 1024)])
        self.assertEqual([r[3] for r in rows], ["1.500", "2.500", "4.500"])
        self.assertIn("Blocked, k=64, GEMM tiled, re-orthonormalize every block end / sequential:", part)
        self.assertEqual(part.count("blocked / sequential |"), 1)  # one pair: one table
        recs = C.load_records([seq, blk, other])
        pairs = sweep.kernel_pairs(sweep.curves(recs, "d", ("d",)))
        self.assertEqual([(p[0].records[0].file, p[1].records[0].file) for p in pairs], [("blk.json", "seq.json")])

    def test_no_pair_no_section_no_figure(self):
        seq, _blk, other = self.files()
        out_dir = os.path.join(self.tmp, "out")
        rc, out, err = S.run_main(sweep, [seq, other, "--out", out_dir])
        self.assertEqual(rc, 0, err)
        self.assertNotIn("Blocked vs sequential", out)
        self.assertEqual(os.listdir(out_dir), ["sweep_throughput_vs_d.png"])

    def test_png(self):
        seq, blk, _other = self.files()
        out_dir = os.path.join(self.tmp, "out")
        rc, out, err = S.run_main(sweep, [seq, blk, "--out", out_dir])
        self.assertEqual(rc, 0, err)
        path = os.path.join(out_dir, "sweep_blocked_vs_sequential_vs_d.png")
        self.assertIn("Figure: " + path, out)
        meta = self.assertPng(path, ["Synthetic GPU X1 on synthetic-gpu-node-1", "git " + M.COMMIT_GPU[:12]])
        self.assertIn("Blocked vs sequential update kernel: throughput vs d", meta["Title"])
        self.assertEqual(sorted(os.listdir(out_dir)), ["sweep_blocked_vs_sequential_vs_d.png",
                                                      "sweep_throughput_vs_d.png"])


if __name__ == "__main__":
    unittest.main()
