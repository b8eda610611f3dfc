"""What tables and captions say about a run: a PASSED run whose accuracy was
not checked (run.accuracy: throughput_only) or judged only in part says so
(runs[].verification.accuracy; older files lack it and nothing is said), and
a CPU run is labelled with what it used, its ranks x threads per rank
(environment.kokkos_default_concurrency), not the machine's online cores."""

import os
import unittest

import analysis_test_support as S
from analysis import common as C
from analysis import saturation, scaling, sweep

NOT_CHECKED = "not checked (run.accuracy: throughput_only)"
PARTLY = "clamped steps only (the source has no truth to track)"


def accuracy(text, runs=None):
    """Every run (or the runs at these indices) gets verification.accuracy = text."""
    def edit(doc):
        for k, run in enumerate(doc["runs"]):
            if runs is None or k in runs:
                run["verification"]["accuracy"] = text
    return edit


class VerificationTextTest(S.TempDirTest):
    def test_accuracy_note(self):
        self.assertEqual(C.accuracy_note(None), "")
        self.assertEqual(C.accuracy_note("checked"), "")
        self.assertEqual(C.accuracy_note(NOT_CHECKED), "accuracy not checked")
        self.assertEqual(C.accuracy_note(PARTLY), "accuracy partly judged: " + PARTLY)
        self.assertEqual(C.accuracy_note("not judged; the source has no truth to track"),
                         "accuracy not judged: the source has no truth to track")
        newer = "tracking only; clamped steps not judged (a model that fits its data clamps 3.0% of its steps)"
        self.assertEqual(C.accuracy_note(newer), "accuracy partly judged: " + newer)
        self.assertEqual([C.accuracy_kind(t) for t in (None, "checked", NOT_CHECKED, PARTLY, newer, "not judged; x")],
                         ["not recorded", "checked", "not checked", "partly", "partly", "not judged"])

    def test_record_and_summaries(self):
        paths = [self.variant("synthetic_sweep_d.json", "throughput_only.json", accuracy(NOT_CHECKED)),
                 self.variant("synthetic_sweep_d.json", "partly.json", accuracy(PARTLY)),
                 self.variant("synthetic_sweep_d.json", "checked.json", accuracy("checked"))]
        recs = C.load_records(paths + S.fixture("synthetic_sweep_d.json"))
        by_file = {}
        for r in recs:
            by_file.setdefault(r.file, []).append(r)
        self.assertEqual(by_file["throughput_only.json"][0].verification, "PASSED (accuracy not checked)")
        self.assertEqual(by_file["partly.json"][0].verification, "PASSED (accuracy partly judged: %s)" % PARTLY)
        self.assertEqual(by_file["checked.json"][0].verification, "PASSED")
        self.assertEqual(by_file["synthetic_sweep_d.json"][0].verification, "PASSED")  # not recorded: nothing said
        self.assertEqual(C.verification_summary(by_file["throughput_only.json"]), "PASSED (accuracy not checked)")
        self.assertEqual(C.verification_summary(by_file["checked.json"]), "PASSED")
        self.assertEqual(C.verification_summary(by_file["synthetic_sweep_d.json"]), "PASSED")
        self.assertEqual(C.verification_summary(by_file["throughput_only.json"] + by_file["checked.json"][:1]),
                         "PASSED (accuracy checked in 1 of 4)")
        self.assertEqual(C.passed_counts(recs), [
            ("PASSED with accuracy checked", 3), ("PASSED throughput-only (accuracy not checked)", 3),
            ("PASSED with accuracy partly judged", 3), ("PASSED, accuracy verdict not recorded (older files)", 3),
            ("not PASSED (failed or interrupted)", 0)])

    def test_sweep_saturation_and_scaling_tables(self):
        path = self.variant("synthetic_sweep_d.json", "throughput_only.json", accuracy(NOT_CHECKED))
        rc, out, err = S.run_main(sweep, [path, "--no-plots"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(S.md_row_starting(out, "512")[-1], "PASSED (accuracy not checked)")
        path = self.variant("synthetic_saturation.json", "sat.json", accuracy(PARTLY, runs=(2,)))
        rc, out, err = S.run_main(saturation, [path, "--no-plots"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(S.md_row_starting(out, "4")[-1], "PASSED (accuracy partly judged: %s)" % PARTLY)
        self.assertEqual(S.md_row_starting(out, "2")[-1], "PASSED")
        paths = [self.variant(n, n, accuracy(NOT_CHECKED)) for n in ("synthetic_weak_np1.json",
                                                                    "synthetic_weak_np2.json")]
        rc, out, err = S.run_main(scaling, paths + ["--no-plots"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(S.md_row_starting(out, "2", "1", "8")[-1], "PASSED (accuracy not checked)")

    def test_failed_and_interrupted_are_said_first(self):
        def fail(doc):
            accuracy(NOT_CHECKED)(doc)
            doc["runs"][0]["verification"]["passed"] = False
        recs = C.load_records([self.variant("synthetic_sweep_d.json", "failed.json", fail)])
        self.assertEqual(recs[0].verification, "FAILED")
        self.assertEqual(C.verification_summary(recs), "FAILED (1 of 3)")


CPU_ENV = {"cpu_model": "Intel Xeon", "cpu_cores_online": 2, "kokkos_default_execution_space": "OpenMP",
           "kokkos_default_concurrency": 1, "gpus": []}


class MachineTextTest(S.TempDirTest):
    def test_ranks_and_threads_not_the_machines_cores(self):
        self.assertEqual(C.machine_with_cores(CPU_ENV, 2), "Intel Xeon, 2 ranks x 1 thread")
        self.assertEqual(C.machine_with_cores(dict(CPU_ENV, kokkos_default_concurrency=4), 1),
                         "Intel Xeon, 1 rank x 4 threads")
        # Without a rank count: environment.ranks' length.
        env = dict(CPU_ENV, ranks=[{"rank": 0, "concurrency": 1}, {"rank": 1, "concurrency": 1}])
        self.assertEqual(C.machine_with_cores(env), "Intel Xeon, 2 ranks x 1 thread")
        # An older file without kokkos_default_concurrency: the ranks' own concurrency, else nothing.
        old = dict(env)
        del old["kokkos_default_concurrency"]
        self.assertEqual(C.machine_with_cores(old), "Intel Xeon, 2 ranks x 1 thread")
        bare = dict(CPU_ENV)
        del bare["kokkos_default_concurrency"]
        self.assertEqual(C.machine_with_cores(bare, 2), "Intel Xeon, 2 ranks")
        self.assertEqual(C.machine_with_cores(bare), "Intel Xeon")
        # A GPU run: the GPU model; its concurrency is no thread count.
        gpu = {"kokkos_default_execution_space": "Cuda", "kokkos_default_concurrency": 135168,
               "gpus": [{"model": "NVIDIA H100"}]}
        self.assertEqual(C.machine_with_cores(gpu, 2), "NVIDIA H100")

    def test_records_and_captions(self):
        # The drift fixture: OpenMP, concurrency 16, on 1 and 2 ranks, on a host with other cores.
        recs = C.load_records(S.fixture("synthetic_drift_np1.json", "synthetic_drift_np2.json"))
        model = recs[0].env["cpu_model"]
        self.assertEqual([r.machine_text for r in recs], ["%s, 1 rank x 16 threads" % model,
                                                          "%s, 2 ranks x 16 threads" % model])
        caption = C.provenance(recs, decks=True)
        self.assertIn("%s, 1 rank x 16 threads on " % model, caption)
        self.assertIn("%s, 2 ranks x 16 threads on " % model, caption)
        self.assertNotIn("cores", caption)
        # A real file: its own mpi_ranks and concurrency.
        real = C.load_records([os.path.join(S.HERE, "real_fixtures", "real_weak_np2.json")])[0]
        self.assertEqual(real.machine_text, "%s, %d ranks x %d thread%s" % (
            real.env["cpu_model"], real.document["mpi_ranks"], real.concurrency, "" if real.concurrency == 1 else "s"))


if __name__ == "__main__":
    unittest.main()
