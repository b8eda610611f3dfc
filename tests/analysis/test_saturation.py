"""analysis.saturation: the streams-per-device saturation point, FOM per stream
and memory per stream, on small synthetic result files written here (with
make_synthetic_fixtures' run_entry and document, so they follow the schema)."""

import json
import os
import unittest

import analysis_test_support as S
import make_synthetic_fixtures as M
from analysis import common as C
from analysis import saturation

MIB = 2 ** 20
STREAMS = (1, 2, 4, 8, 16, 32)
# Rising, then flat: the best is 820 at 32 streams, 90% of it 738, so the
# saturation point is 16 streams (800); 8 streams (600) is 0.732 of the best.
FOMS = (100.0, 190.0, 350.0, 600.0, 800.0, 820.0)
# Each point's peak RSS (VmHWM), MiB: the 8-stream point's is below the
# 4-stream point's, so in one file it is only an upper bound.
RSS_MIB = (100, 104, 112, 110, 160, 224)


def state_bytes(d, r, dtype="float"):
    """make_synthetic_fixtures' state_bytes_per_stream."""
    return (d + d * r + r * r + 1) * (4 if dtype == "float" else 8)


def peak_allocated(state, p, factor=1):
    """make_synthetic_fixtures' peak_allocated_bytes_per_rank[0] of one
    rank with p streams (3 x the state of each, and 4 KiB), x factor."""
    return factor * (3 * state * p + 4096)


def saturation_doc(d=1024, r=16, dtype="float", foms=FOMS, streams=STREAMS, rss_mib=RSS_MIB, env="gpu1",
                   deck="inputs/saturation.yaml", peak_factor=1, version=2):
    """version 1: the file as schema_version 1 wrote it (no peak allocated)."""
    runs = []
    for k, (p, fom) in enumerate(zip(streams, foms)):
        run = M.run_entry(deck=deck, overrides=[], d=d, r=r, dtype=dtype, mode="weak", ranks=1, per_rank=p,
                          fom=fom, sweep_point={"streams.per_rank": p}, sweep_index=k, sweep_count=len(streams),
                          result="saturation.json", space=M.SPACES[env])
        run["memory"]["peak_rss_bytes_per_rank"] = [rss_mib[k] * MIB]
        run["memory"]["peak_allocated_bytes_per_rank"] = [peak_factor * v
                                                          for v in run["memory"]["peak_allocated_bytes_per_rank"]]
        runs.append(run)
    doc = M.document("saturation.json", env, deck, [], 1, runs)
    return M.version1(doc) if version == 1 else doc


class SaturationTest(S.TempDirTest):
    def run_ok(self, argv):
        rc, out, err = S.run_main(saturation, argv)
        self.assertEqual(rc, 0, err)
        return out

    def test_saturation_point_is_the_first_stream_count_at_90_percent_of_the_best(self):
        path = self.write_doc("sat.json", saturation_doc())
        sats = saturation.analyse(C.load_records([path]), self.tmp, plots=False)[1]
        self.assertEqual(len(sats), 1)
        self.assertEqual(sats[0].x, 16.0)
        self.assertEqual(sats[0].top, 820.0)
        # The rule is common.saturation_point's.
        self.assertEqual(C.saturation_point(sats[0].curve), 16.0)
        self.assertEqual(C.saturation_point(sats[0].curve, fraction=0.99), 32.0)
        # A point just under 90% of the best does not count: 737.9 < 738.
        foms = (100.0, 190.0, 350.0, 600.0, 737.9, 820.0)
        path = self.write_doc("sat_under.json", saturation_doc(foms=foms))
        self.assertEqual(saturation.analyse(C.load_records([path]), self.tmp, plots=False)[1][0].x, 32.0)

    def test_table(self):
        path = self.write_doc("sat.json", saturation_doc())
        out = self.run_ok([path, "--no-plots"])
        header = S.md_rows(out)[0]
        self.assertEqual(header, ["streams/rank", "total streams", "runs", "FOM (update samples/s)",
                                  "FOM per stream (update samples/s)", "FOM / best FOM", "state per stream [MiB]",
                                  "peak RSS, largest rank [MiB]", "peak RSS per stream [MiB]",
                                  "peak allocated per stream [MiB]", "verification"])
        col = {h: k for k, h in enumerate(header)}
        state = state_bytes(1024, 16)
        for p, fom, rss in zip(STREAMS, FOMS, RSS_MIB):
            row = S.md_row_starting(out, str(p))
            self.assertEqual(row[col["FOM (update samples/s)"]], C.fmt_rate(fom))
            self.assertEqual(row[col["FOM per stream (update samples/s)"]], C.fmt_rate(fom / p))
            self.assertEqual(row[col["FOM / best FOM"]], "%.3f" % (fom / 820.0))
            self.assertEqual(row[col["state per stream [MiB]"]], "%.3g" % (state / MIB))
            bound = "<= " if p == 8 else ""
            self.assertEqual(row[col["peak RSS, largest rank [MiB]"]], bound + "%.3g" % rss)
            self.assertEqual(row[col["peak RSS per stream [MiB]"]], bound + "%.3g" % (rss / p))
            # run_entry's peak allocated: 3 x the state x the streams per rank, and 4 KiB.
            self.assertEqual(row[col["peak allocated per stream [MiB]"]], "%.3g" % (peak_allocated(state, p) / p / MIB))
        self.assertEqual(S.md_row_starting(out, "16"), [
            "16", "16", "1", "800", "50", "0.976", "0.0674", "160", "10", "0.202", "PASSED"])
        self.assertIn("Saturation point: the smallest streams per rank whose FOM (update samples/s, all ranks; "
                      "median of repeats) reaches 90% of the largest FOM measured on the curve.", out)
        self.assertIn("Saturation point: 16 streams per rank (16 in all): FOM 800 = 0.976 of the best, 820 at 32 "
                      "streams per rank.", out)
        self.assertNotIn("may still rise", out)
        self.assertIn("VmHWM", out)
        self.assertIn("*peak allocated per stream* is the largest of runs[].memory.peak_allocated_bytes_per_rank", out)
        self.assertIn("in the memory space runs[].memory.peak_allocated_space names (here: Cuda)", out)
        # 1 stream: 3 x 70,660 B + 4 KiB = 216,076 B = 0.206 MiB; 32 streams: 0.203 MiB.
        self.assertEqual(S.md_row_starting(out, "1")[-2], "0.206")
        self.assertEqual(S.md_row_starting(out, "32")[-2], "0.202")

    def test_peak_allocated_column_on_host_and_only_where_recorded(self):
        # A host backend (schema_version 2) records the peak too, in its Host space.
        path = self.write_doc("sat_cpu.json", saturation_doc(env="cpu"))
        out = self.run_ok([path, "--no-plots"])
        header = S.md_rows(out)[0]
        self.assertEqual(header[-2:], ["peak allocated per stream [MiB]", "verification"])
        state = state_bytes(1024, 16)
        self.assertEqual(S.md_row_starting(out, "16")[-2], "%.3g" % (peak_allocated(state, 16) / 16 / MIB))
        self.assertIn("(here: Host)", out)
        # Version 1 files have no peak: no column, no note (their device_bytes_in_use_max is not used).
        path = self.write_doc("sat_v1.json", saturation_doc(version=1))
        out = self.run_ok([path, "--no-plots"])
        self.assertNotIn("peak allocated", out)
        self.assertNotIn("device memory in use", out)
        self.assertEqual(len(S.md_row_starting(out, "16")), 10)
        # A version 1 and a version 2 file as repeats: the column from the run that recorded it.
        v2 = self.write_doc("sat_v2.json", saturation_doc(peak_factor=2))
        out = self.run_ok([path, v2, "--no-plots"])
        row = S.md_row_starting(out, "16")
        self.assertEqual(row[2], "2")
        self.assertEqual(row[-2], "%.3g" % (peak_allocated(state, 16, 2) / 16 / MIB))

    def test_repeats_are_a_median_and_files_do_not_share_a_high_water_mark(self):
        a = self.write_doc("a.json", saturation_doc())
        b = self.write_doc("b.json", saturation_doc(foms=[2 * f for f in FOMS], rss_mib=[2 * m for m in RSS_MIB],
                                                     peak_factor=2))
        c = self.write_doc("c.json", saturation_doc(foms=[3 * f for f in FOMS], rss_mib=[3 * m for m in RSS_MIB],
                                                     peak_factor=9))
        out = self.run_ok([a, b, c, "--no-plots"])
        row = S.md_row_starting(out, "16")
        self.assertEqual(row[2:5], ["3", "1,600", "100"])
        self.assertEqual(row[7:9], ["320", "20"])
        # The peak allocated: the median of x1, x2 and x9 (the mean would be x4); its own peak, never "<=".
        state = state_bytes(1024, 16)
        self.assertEqual(row[9], "%.3g" % (peak_allocated(state, 16, 2) / 16 / MIB))
        self.assertEqual(S.md_row_starting(out, "8")[7], "<= 220")
        self.assertEqual(S.md_row_starting(out, "8")[9], "%.3g" % (peak_allocated(state, 8, 2) / 8 / MIB))

    def test_several_d_are_several_curves_and_figures(self):
        doc = saturation_doc(d=1024)
        other = saturation_doc(d=2048, foms=(50.0, 100.0, 200.0, 390.0, 400.0, 410.0))
        doc["runs"] += other["runs"]
        path = self.write_doc("two_d.json", doc)
        out_dir = os.path.join(self.tmp, "figs")
        out = self.run_ok([path, "--out", out_dir])
        self.assertIn("## d=1024, r=16", out)
        self.assertIn("## d=2048, r=16", out)
        sats = saturation.analyse(C.load_records([path]), out_dir, plots=False)[1]
        self.assertEqual([(dict(s.key)["d"], s.x) for s in sats], [("1024", 16.0), ("2048", 8.0)])
        self.assertEqual(sorted(os.listdir(out_dir)), ["saturation_d1024_r16_float_Synthetic_GPU_X1.png",
                                                      "saturation_d2048_r16_float_Synthetic_GPU_X1.png"])
        meta = self.assertPng(os.path.join(out_dir, "saturation_d2048_r16_float_Synthetic_GPU_X1.png"),
                              ["Synthetic GPU X1 on synthetic-gpu-node-1", "git " + M.COMMIT_GPU[:12] + " |",
                               "deck: saturation.yaml"])
        self.assertIn("Streams-per-device saturation: d=2048, r=16, float", meta["Title"])
        self.assertIn("Figure: " + os.path.join(out_dir, "saturation_d2048_r16_float_Synthetic_GPU_X1.png"), out)

    def test_saturation_at_the_largest_stream_count_is_flagged(self):
        path = self.write_doc("rising.json", saturation_doc(foms=(100.0, 200.0, 300.0, 400.0, 500.0, 1000.0)))
        out = self.run_ok([path, "--no-plots"])
        self.assertIn("Saturation point: 32 streams per rank", out)
        self.assertIn("The saturation point is the largest stream count measured (32 per rank)", out)

    def test_seed_line_at_the_seed_configuration_only(self):
        path = self.write_doc("seed.json", saturation_doc(d=8192, r=64))
        out = self.run_ok([path, "--no-plots"])
        self.assertIn("seed, GB10, PyTorch: 5,210 samples/s with 8 streams on one GB10; this code with 8 "
                      "streams: 600 (this code / seed 0.115).", out)
        path = self.write_doc("seed_double.json", saturation_doc(d=8192, r=64, dtype="double"))
        self.assertNotIn("seed, GB10", self.run_ok([path, "--no-plots"]))

    def test_other_runs_are_listed_not_mixed_in(self):
        sat = self.write_doc("sat.json", saturation_doc())
        out = self.run_ok([sat] + S.fixture("synthetic_weak_np1.json") + ["--no-plots"])
        self.assertIn("Left out: 1 run(s) on no streams-per-rank curve", out)
        self.assertIn("synthetic_weak_np1.json", out)
        self.assertEqual(out.count("## "), 1)

    def test_directory_skips_non_result_json_with_a_warning(self):
        self.write_doc("sat.json", saturation_doc(), subdir="in")
        other = os.path.join(self.tmp, "in", "notes.json")
        with open(other, "w", encoding="utf-8") as f:
            json.dump({"hello": 1}, f)
        rc, out, err = S.run_main(saturation, [os.path.join(self.tmp, "in"), "--no-plots"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(err.splitlines(), ["warning: %s: not a mosaic_miniapp result file, skipped" % other])
        self.assertIn("Saturation point: 16 streams per rank", out)

    def test_errors(self):
        notes = os.path.join(self.tmp, "notes.json")
        with open(notes, "w", encoding="utf-8") as f:
            json.dump({"hello": 1}, f)
        rc, out, err = S.run_main(saturation, [notes, "--no-plots"])
        self.assertOneLineError(rc, err, "analysis.saturation",
                                '%s: not a mosaic_miniapp result file (no "program": "mosaic_miniapp")' % notes)
        missing = os.path.join(self.tmp, "nope.json")
        rc, out, err = S.run_main(saturation, [missing, "--no-plots"])
        self.assertOneLineError(rc, err, "analysis.saturation", "%s: cannot read: No such file or directory" % missing)
        # One stream count only: no curve.
        rc, out, err = S.run_main(saturation, S.fixture("synthetic_weak_np1.json") + ["--no-plots"])
        self.assertOneLineError(rc, err, "analysis.saturation",
                                "no runs that differ only in the streams per rank among the 1 run(s) read (a curve "
                                "needs at least two values of streams.per_rank with d, r, dtype, stream mode, ranks, "
                                "steps, algorithm, configuration, deck and device equal)")
        self.assertEqual(out, "")
        # A mistyped memory field is named by its path.
        doc = saturation_doc()
        doc["runs"][2]["memory"]["peak_rss_bytes_per_rank"] = [1.5]
        path = self.write_doc("bad.json", doc)
        rc, out, err = S.run_main(saturation, [path, "--no-plots"])
        self.assertOneLineError(rc, err, "analysis.saturation", "%s: runs[2].memory.peak_rss_bytes_per_rank[0]: "
                                "expected an integer, found a number (1.5)" % path)
        for value, found in ((["1"], 'a string ("1")'), (7, "a number (7)")):
            doc = saturation_doc()
            doc["runs"][3]["memory"]["peak_allocated_bytes_per_rank"] = value
            path = self.write_doc("bad_peak.json", doc)
            rc, out, err = S.run_main(saturation, [path, "--no-plots"])
            where = "peak_allocated_bytes_per_rank" + ("[0]: expected an integer" if value == ["1"] else
                                                       ": expected an array or null")
            self.assertOneLineError(rc, err, "analysis.saturation", "%s: runs[3].memory.%s, found %s" % (
                path, where, found))

    def test_out_that_is_a_file_is_refused_before_any_output(self):
        path = self.write_doc("sat.json", saturation_doc())
        figs = os.path.join(self.tmp, "figs")
        open(figs, "w").close()
        rc, out, err = S.run_main(saturation, [path, "--out", figs])
        self.assertOneLineError(rc, err, "analysis.saturation", "%s: exists and is not a directory (--out needs a "
                                "directory for the figures)" % figs)
        self.assertEqual(out, "")

    def test_no_plots_writes_no_figure(self):
        path = self.write_doc("sat.json", saturation_doc())
        out_dir = os.path.join(self.tmp, "figs")
        out = self.run_ok([path, "--no-plots", "--out", out_dir])
        self.assertFalse(os.path.exists(out_dir))
        self.assertNotIn("Figure:", out)

    def test_the_synthetic_fixture(self):
        # tests/analysis/fixtures/synthetic_saturation.json: FOM 300, 580, 1000, 1050 at 1, 2, 4, 8 streams.
        out = self.run_ok(S.fixture("synthetic_saturation.json") + ["--no-plots"])
        self.assertIn("Saturation point: 4 streams per rank (4 in all): FOM 1,000 = 0.952 of the best, 1,050 at 8 "
                      "streams per rank.", out)
        self.assertEqual(S.md_row_starting(out, "2")[3:6], ["580", "290", "0.552"])


if __name__ == "__main__":
    unittest.main()
