"""The synthetic fixtures follow docs/result.schema.json, and are what
make_synthetic_fixtures.py writes."""

import glob
import os
import unittest

import analysis_test_support as S
from analysis import common as C

import make_synthetic_fixtures as M

try:
    import jsonschema
except ImportError:  # the schema checks are skipped, not faked
    jsonschema = None

FILES = sorted(glob.glob(os.path.join(S.FIXTURES, "*.json")))


class FixtureTest(unittest.TestCase):
    def test_fixtures_present_and_named_synthetic(self):
        self.assertEqual(len(FILES), 15)
        for f in FILES:
            self.assertTrue(os.path.basename(f).startswith("synthetic_"), f)

    def test_fixtures_are_what_the_generator_writes(self):
        expected = M.fixtures()
        self.assertEqual(sorted(expected), sorted(os.path.basename(f) for f in FILES))
        for name, doc in expected.items():
            with open(os.path.join(S.FIXTURES, name), encoding="utf-8") as f:
                self.assertEqual(f.read(), M.render(doc), "%s is stale: rerun make_synthetic_fixtures.py" % name)

    @unittest.skipIf(jsonschema is None, "python3-jsonschema not installed")
    def test_fixtures_validate_against_the_schema(self):
        validator = jsonschema.Draft202012Validator(C.load_schema())
        for f in FILES:
            errors = list(validator.iter_errors(S.load_fixture(os.path.basename(f))))
            self.assertEqual(errors, [], f)

    @unittest.skipIf(jsonschema is None, "python3-jsonschema not installed")
    def test_validation_detects_a_broken_file(self):
        doc = S.load_fixture("synthetic_weak_np1.json")
        del doc["runs"][0]["figure_of_merit"]["value"]
        with self.assertRaisesRegex(C.AnalysisError, r"runs/0/figure_of_merit.*'value' is a required property"):
            C.validate_document(doc, "x.json")
        doc = S.load_fixture("synthetic_weak_np1.json")
        doc["runs"][0]["decomposition"]["mode"] = "diagonal"
        with self.assertRaisesRegex(C.AnalysisError, "decomposition/mode"):
            C.validate_document(doc, "x.json")
        # schema_version 2's memory fields (docs/RESULT-FORMAT.md).
        for edit, where in ((lambda m: m.pop("device_used_bytes_at_phase"), r"runs/0/memory: "
                             r"'device_used_bytes_at_phase' is a required property"),
                            (lambda m: m["device_used_bytes_at_phase"][0].update(phase="compute"),
                             "runs/0/memory/device_used_bytes_at_phase/0/phase"),
                            (lambda m: m.update(peak_allocated_bytes_per_rank=[]),
                             "runs/0/memory/peak_allocated_bytes_per_rank"),
                            (lambda m: m.update(estimate_over_peak_allocated="1.0"),
                             "runs/0/memory/estimate_over_peak_allocated"),
                            (lambda m: m.update(device_bytes_in_use_max=None), None)):
            doc = S.load_fixture("synthetic_weak_np1.json")
            edit(doc["runs"][0]["memory"])
            if where is None:  # a field the schema does not name is allowed, as before
                self.assertTrue(C.validate_document(doc, "x.json"))
                continue
            with self.assertRaisesRegex(C.AnalysisError, where):
                C.validate_document(doc, "x.json")

    def test_memory_follows_the_definitions(self):
        # estimate_over_peak_allocated is rank 0's estimate over its peak; the space is the environment's;
        # a device's used memory is by phase in execution order, null on a host backend.
        for f in FILES:
            doc = S.load_fixture(os.path.basename(f))
            gpu = doc["environment"]["kokkos_default_execution_space"] in C.GPU_SPACES
            self.assertEqual(doc["schema_version"], C.SCHEMA_VERSION)
            for run in doc["runs"]:
                mem = run["memory"]
                peak = mem["peak_allocated_bytes_per_rank"]
                self.assertEqual(len(peak), run["decomposition"]["ranks"], f)
                self.assertEqual(mem["estimate_over_peak_allocated"],
                                 mem["estimate_rank0"]["execution_space_bytes"] / peak[0], f)
                self.assertEqual(mem["peak_allocated_space"], "Cuda" if gpu else "Host", f)
                if gpu:
                    self.assertEqual([p["phase"] for p in mem["device_used_bytes_at_phase"]],
                                     ["setup", "start", "warmup", "timed_loop", "loop_end"])
                    self.assertGreater(mem["device_used_bytes_at_phase"][-1]["bytes"],
                                       max(peak))
                else:
                    self.assertIsNone(mem["device_used_bytes_at_phase"], f)

    def test_record_fields(self):
        recs = C.load_records(S.fixture("synthetic_strong_mismatch_np4.json", "synthetic_sweep_d.json"))
        self.assertEqual(len(recs), 4)
        r = recs[0]
        self.assertEqual((r.d, r.r, r.dtype, r.mode, r.ranks, r.streams_total, r.streams_per_rank, r.steps),
                         (256, 16, "float", "strong", 4, 8, 2.0, 1000))
        self.assertEqual(r.fom, 900.0)
        self.assertEqual(r.end_to_end, 720.0)
        self.assertEqual(r.machine, "Synthetic GPU X1")
        self.assertEqual(r.hostname, "synthetic-gpu-node-1")
        self.assertEqual(r.git_commit, M.COMMIT_GPU)
        self.assertEqual(recs[2].sweep_label, "problem.d=512")
        self.assertEqual(recs[2].label(), "synthetic_sweep_d.json #1")
        # runs[].memory: each rank's peak (2 streams of 18,436 B, x 3, and (rank + 1) x 4 KiB), its max, the space.
        self.assertEqual(r.peak_allocated_bytes_per_rank, [114712, 118808, 122904, 127000])
        self.assertEqual((r.peak_allocated_bytes_max, r.peak_allocated_space), (127000, "Cuda"))
        host = C.load_records(S.fixture("synthetic_breakdown.json"))[1]  # d=256, r=8, double: 18,952 B a stream
        self.assertEqual((host.peak_allocated_bytes_per_rank, host.peak_allocated_bytes_max, host.peak_allocated_space),
                         ([3 * 2 * 18952 + 4096, 3 * 2 * 18952 + 8192], 3 * 2 * 18952 + 8192, "Host"))

    def test_machine_label_cpu_for_host_backend_even_with_gpus(self):
        env = S.load_fixture("synthetic_weak_np1.json")["environment"]
        self.assertEqual(C.machine_label(env), "Synthetic GPU X1")
        env["kokkos_default_execution_space"] = "OpenMP"
        self.assertEqual(C.machine_label(env), "Synthetic CPU Model 9000 (test fixture)")


if __name__ == "__main__":
    unittest.main()
