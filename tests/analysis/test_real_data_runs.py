"""bench/real_data_runs.py without the mini-app: which dataset files verify
against their builder's sidecar, each builder run at most once per
invocation, and --check's sample counts (pooled over the streams of a
multi-stream dataset)."""

import hashlib
import importlib.util
import json
import os
import unittest

from analysis_test_support import REPO, TempDirTest

_spec = importlib.util.spec_from_file_location("real_data_runs", os.path.join(REPO, "bench", "real_data_runs.py"))
R = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(R)


class FakeLog:
    """What prepare() uses of a Log: the commands it would run, none run."""

    def __init__(self):
        self.commands, self.lines = [], []

    def run(self, cmd):
        self.commands.append(cmd[-1])
        return ""

    def line(self, text):
        self.lines.append(text)


class Data(TempDirTest):
    """A small inputs/real_data: the video builder's two datasets (one
    sidecar each) and the music builder's (one sidecar for the whole
    array and its tracks, named relative to it)."""

    FILES = {"video/vtest.npy": b"vtest", "video/box.npy": b"box", "music/music_all.npy": b"all",
             "music/tracks/01_a.npy": b"track one", "music/tracks/02_b.npy": b"track two"}

    def setUp(self):
        super().setUp()
        self.data = os.path.join(self.tmp, "real_data")
        for rel, content in self.FILES.items():
            self.write(rel, content)

        def digest(rel):
            return hashlib.sha256(self.FILES[rel]).hexdigest()
        for name in ("vtest", "box"):
            self.write("video/%s.json" % name, json.dumps({"npy": name + ".npy",
                                                         "npy_sha256": digest("video/%s.npy" % name)}).encode())
        self.write("music/music.json", json.dumps({
            "npy": "music_all.npy", "npy_sha256": digest("music/music_all.npy"),
            "tracks": [{"npy": "tracks/%s" % n, "npy_sha256": digest("music/tracks/%s" % n)}
                       for n in ("01_a.npy", "02_b.npy")]}).encode())

    def write(self, rel, content):
        path = self.path(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(content)

    def path(self, rel):
        return os.path.join(self.data, *rel.split("/"))

    def verified(self, name):
        return [os.path.relpath(p, self.data).replace(os.sep, "/") for p in R.verified(R.DATASETS[name], self.data)]

    def test_verified_files(self):
        self.assertEqual(self.verified("vtest"), ["video/vtest.npy"])
        self.assertEqual(self.verified("music"), ["music/music_all.npy"])
        self.assertEqual(self.verified("music_tracks"), ["music/tracks/01_a.npy", "music/tracks/02_b.npy"])
        self.assertEqual(R.recorded_sha256(self.path("music/music.json"), self.data)["music/tracks/02_b.npy"],
                         hashlib.sha256(b"track two").hexdigest())

    def test_a_listed_file_missing_or_different_fails(self):
        os.remove(self.path("music/tracks/02_b.npy"))  # listed in the sidecar, gone: not the whole dataset
        self.assertEqual(self.verified("music_tracks"), [])
        self.assertEqual(self.verified("music"), ["music/music_all.npy"])  # its own file is there
        self.write("music/tracks/02_b.npy", b"track two, changed")
        self.assertEqual(self.verified("music_tracks"), [])
        self.write("music/tracks/02_b.npy", b"track two")
        self.assertEqual(len(self.verified("music_tracks")), 2)
        self.write("music/tracks/03_c.npy", b"not in the sidecar")
        self.assertEqual(self.verified("music_tracks"), [])
        os.remove(self.path("video/box.npy"))  # another dataset of the same builder
        self.assertEqual(self.verified("vtest"), ["video/vtest.npy"])
        self.assertEqual(self.verified("box"), [])
        os.remove(self.path("video/vtest.json"))
        self.assertEqual(self.verified("vtest"), [])

    def test_each_builder_runs_at_most_once(self):
        names = ["vtest", "box", "music", "music_tracks"]
        log, built = FakeLog(), set()
        for name in names:
            self.assertTrue(R.prepare(name, True, built, log, self.data))
        self.assertEqual(log.commands, ["analysis.datasets.video", "analysis.datasets.music"])
        self.assertEqual(len([t for t in log.lines if "built above" in t]), 2)
        log, built = FakeLog(), set()
        for name in names:
            R.prepare(name, False, built, log, self.data)
        self.assertEqual(log.commands, [])
        # Files that do not verify: built once; still wrong after the build, an error.
        os.remove(self.path("video/box.npy"))
        log, built = FakeLog(), set()
        self.assertTrue(R.prepare("vtest", False, built, log, self.data))
        with self.assertRaises(R.RunFailed) as e:
            R.prepare("box", False, built, log, self.data)
        self.assertEqual(log.commands, ["analysis.datasets.video"])
        with self.assertRaises(R.RunFailed) as e:
            R.prepare("box", True, built, log, self.data)
        self.assertIn("box: the files analysis.datasets.video built do not match", str(e.exception))
        self.assertEqual(log.commands, ["analysis.datasets.video"])


class Check(TempDirTest):
    def done(self, name, mosaic_samples, baseline_samples, timed_samples=700, streams=3, warmup=0):
        preq = {"samples": mosaic_samples, "nll_mean": 1.0, "residual_fraction_mean": 0.5, "surprise_rate": 0.01}
        result = self.write_doc(name + "_mosaic.json", {"runs": [{
            "prequential": preq, "decomposition": {"total_streams": streams},
            "steps": {"init_samples": 40, "warmup": warmup, "timed": 370, "timed_samples": timed_samples}}]})
        methods = {m: {"prequential": dict(preq, samples=baseline_samples)} for m in ("window", "static")}
        baselines = self.write_doc(name + "_baselines.json", {"methods": methods})
        return [{"name": name, "result": result, "baselines": baselines}]

    def test_pooled_counts_equal_the_timed_samples(self):
        self.assertEqual(R.check(self.done("music_tracks", 700, 700)), [])
        self.assertEqual(R.check(self.done("music_tracks", 706, 706, warmup=2)), [])  # 3 streams x 2 warm-up
        problems = R.check(self.done("music_tracks", 700, 690))
        self.assertEqual(len(problems), 2)
        self.assertIn("music_tracks: baseline window evaluated 690 samples, MOSAIC ['700'], steps.timed_samples "
                      "(with warm-up) [700]", problems[0])
        problems = R.check(self.done("music_tracks", 690, 690))
        self.assertEqual(len(problems), 3)
        self.assertIn("MOSAIC run 0 evaluated 690 samples, its steps.timed_samples (with warm-up) 700", problems[0])
        self.assertEqual(R.check(self.done("pm10", 690, 650, streams=1)), [])  # gaps: the counts may differ
        # A result without steps.timed_samples (one stream): the timed steps.
        done = self.done("wind", 370, 370, streams=1)
        with open(done[0]["result"]) as f:
            doc = json.load(f)
        del doc["runs"][0]["steps"]["timed_samples"]
        with open(done[0]["result"], "w") as f:
            json.dump(doc, f)
        self.assertEqual(R.check(done), [])

    def test_sweep_points_may_score_different_rows_only_with_gaps(self):
        for name, problems in (("pm10", 0), ("wind", 2)):
            done = self.done(name, 370, 370, timed_samples=370, streams=1)
            with open(done[0]["result"]) as f:
                doc = json.load(f)
            other = json.loads(json.dumps(doc["runs"][0]))
            other["prequential"]["samples"] = 360  # e.g. missing: drop skipping more samples than posterior
            doc["runs"].append(other)
            with open(done[0]["result"], "w") as f:
                json.dump(doc, f)
            found = R.check(done)
            self.assertEqual(len(found), problems, found)
            if problems:
                self.assertIn("wind: the MOSAIC runs evaluated ['360', '370'] samples", found[0])


if __name__ == "__main__":
    unittest.main()
