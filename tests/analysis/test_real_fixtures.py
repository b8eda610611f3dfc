"""The analysis scripts on result files written by the real mini-app
(real_fixtures/real_*.json, made by make_real_fixtures.sh; kept apart
from the synthetic fixtures/ so the tests counting those stay exact): the tables' numbers
must be the ones computed here directly from the raw JSON. The files are of
schema_version 1 (docs/RESULT-FORMAT.md): they must stay readable."""

import contextlib
import copy
import csv
import io
import json
import os
import unittest

import analysis_test_support as S
import make_synthetic_fixtures as M
from analysis import collect, report, scaling
from analysis import common as C

try:
    import jsonschema
except ImportError:  # the schema checks are skipped, not faked
    jsonschema = None

REAL_DIR = os.path.join(S.HERE, "real_fixtures")
REAL = ["real_weak_np1.json", "real_weak_np2.json", "real_strong_np1.json", "real_strong_np2.json"]


def real(*names):
    return [os.path.join(REAL_DIR, n) for n in names]


def load(name):
    with open(os.path.join(REAL_DIR, name), encoding="utf-8") as f:
        return json.load(f)


def raw(name):
    return load(name)["runs"][0]


def schema_version1():
    """docs/result.schema.json with schema_version 2's changes undone
    (docs/RESULT-FORMAT.md): the schema these files were written under."""
    schema = copy.deepcopy(C.load_schema())
    schema["properties"]["schema_version"] = {"const": 1}
    mem = schema["$defs"]["run"]["properties"]["memory"]
    for key in M.VERSION2_MEMORY:
        del mem["properties"][key]
    mem["properties"]["device_bytes_in_use_max"] = {"type": ["integer", "null"]}
    mem["required"] = [k for k in mem["required"] if k not in M.VERSION2_MEMORY] + ["device_bytes_in_use_max"]
    return schema


class RealFixturesTest(S.TempDirTest):
    def test_files_are_valid_and_from_the_miniapp(self):
        for name in REAL:
            doc = load(name)
            self.assertEqual(doc["schema_version"], 1, name)
            self.assertEqual(doc["program"], "mosaic_miniapp")
            self.assertTrue(doc["runs"][0]["verification"]["passed"], name)
            if jsonschema is not None:
                self.assertEqual(list(jsonschema.Draft202012Validator(schema_version1()).iter_errors(doc)), [], name)
            # The current schema is version 2's: a version 1 file is not validated against it, and says so.
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertFalse(C.validate_document(doc, name))
            self.assertEqual(err.getvalue(), "warning: %s: schema_version 1: not validated: docs/result.schema.json "
                             "describes schema_version 2 (docs/RESULT-FORMAT.md); the file is read without that "
                             "check\n" % name)

    def test_version_1_files_load_without_the_peak_fields(self):
        recs = C.load_records(real(*REAL))
        self.assertEqual(len(recs), 4)
        for rec in recs:
            self.assertIn("device_bytes_in_use_max", rec.run["memory"])  # version 1's, no longer read
            self.assertEqual(rec.peak_allocated_bytes_per_rank, [])
            self.assertIsNone(rec.peak_allocated_bytes_max)
            self.assertIsNone(rec.peak_allocated_space)
            self.assertEqual(rec.peak_rss_bytes_per_rank, rec.run["memory"]["peak_rss_bytes_per_rank"])
        # The report says "not recorded" for version 2's fields and shows version 1's for what it was.
        out = os.path.join(self.tmp, "report")
        rc, _stdout, err = S.run_main(report, real("real_weak_np2.json") + ["--out", out, "--no-plots"])
        self.assertEqual(rc, 0, err)
        with open(os.path.join(out, "README.md"), encoding="utf-8") as f:
            page = f.read()
        for field in ("peak_allocated_bytes_per_rank", "peak_allocated_space", "device_used_bytes_at_phase",
                      "estimate_over_peak_allocated"):
            cells = [r for r in S.md_rows(page) if r[-1] == "`runs[0].memory.%s`" % field]
            self.assertEqual(len(cells), 1, field)
            self.assertEqual(cells[0][1], "not recorded", field)
        cells = [r for r in S.md_rows(page) if r[-1] == "`runs[0].memory.device_bytes_in_use_max`"]
        self.assertEqual(cells, [["device memory in use at the end of the run, cudaMemGetInfo, not a peak "
                                  "(schema_version 1)", "-1: no device (a host build; older files wrote -1 where "
                                  "newer ones write null)", "`runs[0].memory.device_bytes_in_use_max`"]])

    def test_collect_csv_carries_the_raw_numbers(self):
        csv_path = os.path.join(self.tmp, "all.csv")
        rc, out, err = S.run_main(collect, real(*REAL) + ["--csv", csv_path])
        self.assertEqual(rc, 0, err)
        with open(csv_path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), 4)
        fom_col = next(k for k in rows[0] if k.lower().startswith("fom"))
        for row in rows:
            name = next(n for n in REAL if os.path.basename(row["file"]) == n)
            run = raw(name)
            self.assertAlmostEqual(float(row[fom_col]), run["figure_of_merit"]["value"],
                                   delta=1e-9 * run["figure_of_merit"]["value"], msg=name)
            self.assertEqual(int(row["d"]), run["resolved_deck"]["problem"]["d"])
            self.assertEqual(int(row["ranks"]), run["decomposition"]["ranks"])

    def test_scaling_efficiencies_match_the_raw_foms(self):
        recs = C.load_records(real(*REAL))
        groups = {g.mode: g for g in C.scaling_groups(recs)}
        self.assertEqual(sorted(groups), ["strong", "weak"])
        strong1 = raw("real_strong_np1.json")["figure_of_merit"]["value"]
        strong2 = raw("real_strong_np2.json")["figure_of_merit"]["value"]
        weak1 = raw("real_weak_np1.json")["figure_of_merit"]["value"]
        weak2 = raw("real_weak_np2.json")["figure_of_merit"]["value"]
        g = groups["strong"]
        self.assertEqual([p.ranks for p in g.points], [1, 2])
        self.assertAlmostEqual(g.points[1].efficiency, strong2 / (2 * strong1), places=12)
        self.assertAlmostEqual(g.points[1].speedup, strong2 / strong1, places=12)
        g = groups["weak"]
        self.assertAlmostEqual(g.points[1].efficiency, (weak2 / 2) / weak1, places=12)

    def test_strong_checksums_agree_across_rank_counts(self):
        a = {c["stream_id"]: c["checksum"] for c in raw("real_strong_np1.json")["verification"]["per_stream_checksums"]}
        b = {c["stream_id"]: c["checksum"] for c in raw("real_strong_np2.json")["verification"]["per_stream_checksums"]}
        self.assertEqual(a, b)  # the mini-app's own guarantee, checked on the raw files
        rc, out, err = S.run_main(scaling, real("real_strong_np1.json", "real_strong_np2.json") + ["--no-plots"])
        self.assertEqual(rc, 0, err)
        self.assertIn("AGREE", out)
        # A one-ulp change to one stream's checksum must be caught.
        doc = load("real_strong_np2.json")
        entry = doc["runs"][0]["verification"]["per_stream_checksums"][0]
        entry["checksum"] = float.fromhex(float(entry["checksum"]).hex()) * (1 + 2.0 ** -52)
        edited = os.path.join(self.tmp, "real_strong_np2_edited.json")
        with open(edited, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        rc, out, err = S.run_main(scaling, real("real_strong_np1.json") + [edited, "--no-plots"])
        self.assertEqual(rc, 1)
        self.assertIn("MISMATCH", out)


if __name__ == "__main__":
    unittest.main()
