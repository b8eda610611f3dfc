"""analysis.datasets.video and analysis.datasets.music end to end on fake
packages built with dpkg-deb, holding tiny media made here with ffmpeg (no
network): the frames' and spectra's shapes, values and time order, the
concatenation, the sidecars and their sha256s, the STFT against a direct DFT,
the ffmpeg helpers both share (analysis.datasets.ffmpeg), their command lines,
and the errors (no ffmpeg, a package without the files, a file that is not
media)."""

import gzip
import hashlib
import json
import math
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

import analysis_test_support as S

from analysis import common as C
from analysis.datasets import debian as D
from analysis.datasets import ffmpeg as F
from analysis.datasets import music, video

HAVE_TOOLS = all(shutil.which(t) for t in ("ffmpeg", "ffprobe", "dpkg-deb", "dpkg"))
REASON = "needs ffmpeg and ffprobe (Debian's ffmpeg) and dpkg, dpkg-deb"
VERSION = "9.8-7"  # analysis_test_support.build_deb's default
COPYRIGHT = """Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/

Files: *
Copyright: 2000-2022, Example Authors
License: Apache-2.0 AND BSD-3-Clause
"""
FREE_FORM = """Copyright (C) 2003 - 2009 by David White <dave@whitevine.net>

License:
        This program is free software; GNU General Public License version 2
"""
SR = 22050
BIN_LOW, BIN_HIGH = 20, 60  # tones on the bin centres of n_fft 512 at 22,050 Hz
F_LOW, F_HIGH = BIN_LOW * SR / 512, BIN_HIGH * SR / 512
SWITCH = 0.15  # s: the sweep's tone changes from F_LOW to F_HIGH


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def ffmpeg(*args):
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y"] + list(args), check=True)


def grey(y):
    """The grey byte libswscale makes of limited-range luma y, / 255."""
    return min(max(round((y - 16) * 255 / 219), 0), 255) / 255




def read(path):
    with open(path, "rb") as f:
        return f.read()


class NoFfmpeg(unittest.TestCase):
    """Both commands look for ffmpeg first: this runs where there is none."""

    def test_no_ffmpeg(self):
        with tempfile.TemporaryDirectory() as out:
            for module in (video, music):
                with mock.patch("shutil.which", return_value=None):
                    rc, _, err = S.run_main(module, [out, "--deb", os.path.join(out, "absent.deb")])
                self.assertEqual(rc, 2)
                self.assertIn("%s: error: ffmpeg not found on PATH: install Debian's ffmpeg package (apt-get install "
                              "ffmpeg)" % module.__name__, err)
                self.assertEqual(os.listdir(out), [])


class FfmpegHelpers(unittest.TestCase):
    """analysis.datasets.ffmpeg on its own, with stand-ins for the tools."""

    def test_ffmpeg_tool(self):
        with mock.patch("analysis.datasets.ffmpeg.shutil.which", return_value="/opt/bin/ffprobe") as which:
            self.assertEqual(F.ffmpeg_tool("ffprobe"), "/opt/bin/ffprobe")
        which.assert_called_once_with("ffprobe")
        with mock.patch("analysis.datasets.ffmpeg.shutil.which", return_value=None):
            with self.assertRaises(C.AnalysisError) as e:
                F.ffmpeg_tool()
        self.assertEqual(str(e.exception), "ffmpeg not found on PATH: install Debian's ffmpeg package "
                                           "(apt-get install ffmpeg)")

    def test_run_tool_and_version(self):
        with tempfile.TemporaryDirectory() as tmp:
            exe = os.path.join(tmp, "fakempeg")
            with open(exe, "w") as f:
                f.write("#!%s\nimport sys\nif sys.argv[1:] == ['-version']:\n"
                        "    print('fakempeg version 9.9-1 Copyright (c) the authors ')\n    print('built with cc')\n"
                        "else:\n    sys.stderr.write('first\\nlast words\\n')\n    sys.exit(3)\n" % sys.executable)
            os.chmod(exe, os.stat(exe).st_mode | stat.S_IXUSR)
            self.assertEqual(F.ffmpeg_version(exe), "fakempeg version 9.9-1 Copyright (c) the authors")
            stdout, stderr = F.run_tool([exe, "-version"], "x")
            self.assertEqual((stdout.splitlines()[1], stderr), (b"built with cc", ""))
            with self.assertRaises(C.AnalysisError) as e:
                F.run_tool([exe, "-i", "a.avi"], "a.avi in x.deb")
            self.assertEqual(str(e.exception), "a.avi in x.deb: fakempeg failed (exit status 3): last words")
            with self.assertRaisesRegex(C.AnalysisError, "^y: cannot run %s: " % re.escape(os.path.join(tmp, "absent"))):
                F.run_tool([os.path.join(tmp, "absent")], "y")

    def test_messages(self):
        stderr = ("[h264 @ 0x55d0c3a2b0c0] error while decoding MB 1 2\n\n"
                  "  [h264 @ 0x55d0c3a2b9f0] error while decoding MB 1 2  \n[mp3float @ 0xABCdef] x\n")
        self.assertEqual(F.messages(stderr), ["[h264] error while decoding MB 1 2", "[mp3float] x"])
        many = "".join("line %d\n" % (i % 30) for i in range(100))
        self.assertEqual(F.messages(many), ["line %d" % i for i in range(F.MAX_MESSAGES)])


class CommandLines(unittest.TestCase):
    """OUTDIR's help names the files each builder writes."""

    def test_outdir_help(self):
        for module, outputs in ((video, "vtest.npy and vtest.json, box.npy and box.json"),
                                (music, "tracks/NN_<name>.npy, music_all.npy and music.json")):
            rc, stdout, _ = S.run_main(module, ["--help"])
            self.assertEqual(rc, 0)
            self.assertIn("outdir directory for %s, created (default: %s)" % (
                outputs, os.path.join(D.DATA_ROOT, module.DATASET)), " ".join(stdout.split()))


class Stft(unittest.TestCase):
    def test_against_a_direct_dft(self):
        import numpy as np
        rng = np.random.default_rng(5)
        signal = rng.standard_normal(100)
        n_fft, hop = 16, 5
        x = music.log_spectrogram(signal, n_fft, hop, chunk=3)
        self.assertEqual((x.shape, x.dtype.name), ((17, 9), "float32"))  # floor((100 - 16) / 5) + 1 frames
        n = np.arange(n_fft)
        window = 0.5 - 0.5 * np.cos(2 * np.pi * n / n_fft)  # periodic: w[0] = 0, w[n_fft / 2] = 1
        for t in range(17):
            frame = signal[t * hop:t * hop + n_fft] * window
            for k in range(9):
                want = math.log(abs(np.sum(frame * np.exp(-2j * np.pi * k * n / n_fft))) + 1e-6)
                self.assertAlmostEqual(float(x[t, k]), want, places=4)
        self.assertEqual(float(music.log_spectrogram(np.zeros(40), 16, 8).max()), float(np.float32(math.log(1e-6))))

    def test_frame_count(self):
        self.assertEqual([music.frame_count(n, 512, 512) for n in (511, 512, 1023, 1024)], [0, 1, 1, 2])
        self.assertEqual(music.frame_count(4096, 2048, 256), 9)

    def test_track_names_sort_in_track_order(self):
        names = [music.track_stem(i, 120, "a/%s.ogg" % n) for i, n in enumerate(["x", "b", "a"] * 40, 1)]
        self.assertEqual(names[:2], ["001_x", "002_b"])
        self.assertEqual(sorted(names), names)
        self.assertEqual(music.track_stem(3, 41, "defeat2.ogg"), "03_defeat2")


@unittest.skipUnless(HAVE_TOOLS, REASON)
class Video(unittest.TestCase):
    """vtest.avi (lossless FFV1): 8 frames at 10 frames/s of 192 x 144, luma
    16 + 20 n on the left half, 60 more on the right; box.mp4 (MPEG-4, q 1),
    gzip'd as in opencv-doc: 5 frames, luma 200 - 30 n."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        avi, mp4 = os.path.join(cls.tmp, "vtest.avi"), os.path.join(cls.tmp, "box.mp4")
        ffmpeg("-f", "lavfi", "-i", "nullsrc=s=192x144:r=10:d=0.8,format=yuv420p,"
               "geq=lum='16+20*N+60*gte(X\\,96)':cb=128:cr=128", "-c:v", "ffv1", avi)
        ffmpeg("-f", "lavfi", "-i", "nullsrc=s=192x144:r=10:d=0.5,format=yuv420p,geq=lum='200-30*N':cb=128:cr=128",
               "-c:v", "mpeg4", "-q:v", "1", mp4)
        cls.files = {video.VIDEOS[0][1]: read(avi), video.VIDEOS[1][1]: gzip.compress(read(mp4))}
        cls.deb = S.build_deb(cls.tmp, "opencv-doc", cls.files, COPYRIGHT)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def setUp(self):
        self.out = tempfile.mkdtemp(dir=self.tmp)

    def sidecar(self, name, shape):
        import numpy as np
        with open(os.path.join(self.out, name + ".json"), encoding="utf-8") as f:
            meta = json.load(f)
        npy = os.path.join(self.out, name + ".npy")
        x = np.load(npy)
        self.assertEqual((x.shape, x.dtype.str, x.flags["C_CONTIGUOUS"]), (shape, "<f4", True))
        self.assertEqual((meta["npy_sha256"], meta["deb_sha256"]), (sha256(npy), sha256(self.deb)))
        self.assertEqual((meta["shape"], meta["dtype"], meta["frames"], meta["version"], meta["package"]),
                         (list(shape), "float32", shape[0], VERSION, "opencv-doc"))
        self.assertEqual(meta["licence"], D.licence(COPYRIGHT))
        self.assertTrue(meta["conversion"]["decoder"].startswith("ffmpeg version "), meta["conversion"]["decoder"])
        self.assertTrue(0 <= x.min() and x.max() <= 1)
        self.assertLess(abs(x * 255 - np.round(x * 255)).max(), 1e-3)  # grey bytes / 255
        self.assertEqual(meta["value_range"], [float(x.min()), float(x.max())])
        return meta, x

    def test_grey_frames_in_time_order(self):
        rc, stdout, err = S.run_main(video, [self.out, "--deb", self.deb])
        self.assertEqual(rc, 0, err)
        self.assertIn("vtest.npy: 8 x 6912, 0.00% NaN (opencv-doc 9.8-7; License: Apache-2.0 AND BSD-3-Clause)",
                      stdout)
        meta, x = self.sidecar("vtest", (8, 6912))
        frames = x.reshape(8, 72, 96)  # column r * 96 + c: pixel row r, column c
        for n in range(8):
            for half, y in ((frames[n, :, :48], 16 + 20 * n), (frames[n, :, 48:], 76 + 20 * n)):
                self.assertLess(abs(half - grey(y)).max(), 1.5 / 255, (n, y))
        self.assertEqual(meta["source_files"], [video.VIDEOS[0][1]])
        self.assertEqual(meta["source_sha256"], hashlib.sha256(self.files[video.VIDEOS[0][1]]).hexdigest())
        conversion = meta["conversion"]
        self.assertEqual(conversion["command"], [
            "ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-i", video.VIDEOS[0][1], "-map", "0:v:0",
            "-fps_mode", "passthrough", "-vf", "scale=96:72:flags=area,format=gray", "-f", "rawvideo",
            "-pix_fmt", "gray", "pipe:1"])
        self.assertEqual((conversion["scale"]["flags"], conversion["scale"]["width"]), ("area", 96))

        meta, x = self.sidecar("box", (5, 6912))
        for n in range(5):
            self.assertLess(abs(x[n] - grey(200 - 30 * n)).max(), 3.5 / 255, n)
        self.assertEqual(meta["source_sha256"], hashlib.sha256(self.files[video.VIDEOS[1][1]]).hexdigest())
        self.assertIn("gunzipped", meta["conversion"]["input"])
        self.assertIn("usr/share/doc/opencv-doc/opencv4/html/box.mp4", meta["conversion"]["command"])

    def test_width_and_height(self):
        rc, _, err = S.run_main(video, [self.out, "--deb", self.deb, "--width", "32", "--height", "24"])
        self.assertEqual(rc, 0, err)
        meta, x = self.sidecar("vtest", (8, 768))
        self.assertIn("scale=32:24:flags=area,format=gray", meta["conversion"]["command"])
        self.assertLess(abs(x.reshape(8, 24, 32)[7, :, :15] - grey(156)).max(), 1.5 / 255)
        rc, _, err = S.run_main(video, [self.out, "--deb", self.deb, "--width", "0"])
        self.assertEqual(rc, 2)
        self.assertIn("expected a positive integer, got '0'", err)

    def test_a_package_without_the_file_or_with_no_video(self):
        deb = S.build_deb(self.out, "opencv-doc", {video.VIDEOS[0][1]: self.files[video.VIDEOS[0][1]]}, COPYRIGHT)
        rc, _, err = S.run_main(video, [self.out, "--deb", deb])
        self.assertEqual(rc, 2)
        self.assertIn("opencv-doc_9.8-7_all.deb (opencv-doc 9.8-7) has no file %s" % video.VIDEOS[1][1], err)
        deb = S.build_deb(self.out, "opencv-doc", dict(self.files, **{video.VIDEOS[0][1]: b"not a video"}), COPYRIGHT)
        rc, _, err = S.run_main(video, [self.out, "--deb", deb])
        self.assertEqual(rc, 2)
        self.assertIn("%s in opencv-doc_9.8-7_all.deb: ffmpeg failed (exit status" % video.VIDEOS[0][1], err)
        self.assertFalse(os.path.exists(os.path.join(self.out, "vtest.npy")))


@unittest.skipUnless(HAVE_TOOLS, REASON)
class Music(unittest.TestCase):
    """Three Ogg Vorbis tracks at 44.1 kHz, in sorted order: a_sweep (stereo,
    both channels 0.5 sin, F_LOW then F_HIGH after SWITCH s; 0.3 s), b_left
    (stereo, 0.5 sin at F_LOW on the left, silence on the right; 0.3 s),
    c_silence (mono, 0.1 s of zeros)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        tone = "0.5*sin(2*PI*t*if(lt(t\\,%g)\\,%r\\,%r))" % (SWITCH, F_LOW, F_HIGH)
        sources = {"a_sweep": "aevalsrc=%s|%s:s=44100:d=0.3" % (tone, tone),
                   "b_left": "aevalsrc=0.5*sin(2*PI*t*%r)|0:s=44100:d=0.3" % F_LOW,
                   "c_silence": "anullsrc=r=44100:cl=mono:d=0.1"}
        cls.files = {}
        for name, graph in sources.items():
            ogg = os.path.join(cls.tmp, name + ".ogg")
            ffmpeg("-f", "lavfi", "-i", graph, "-c:a", "libvorbis", ogg)
            cls.files["%s/%s.ogg" % (music.MUSIC_DIR, name)] = read(ogg)
        cls.files[music.MUSIC_DIR + "/README"] = b"not a track"
        cls.deb = S.build_deb(cls.tmp, "wesnoth-1.16-music", cls.files, FREE_FORM)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def setUp(self):
        self.out = tempfile.mkdtemp(dir=self.tmp)

    def run_music(self, *options):
        rc, stdout, err = S.run_main(music, [self.out, "--deb", self.deb] + list(options))
        self.assertEqual(rc, 0, err)
        with open(os.path.join(self.out, "music.json"), encoding="utf-8") as f:
            return stdout, json.load(f)

    def check_outputs(self, meta, n_fft, hop):
        """The track files, the concatenation and their sidecar agree; returns
        the tracks' arrays."""
        import glob
        import numpy as np
        bins = n_fft // 2 + 1
        tracks = meta["tracks"]
        self.assertEqual([t["name"] for t in tracks], ["a_sweep", "b_left", "c_silence"])
        self.assertEqual([t["npy"] for t in tracks], ["tracks/01_a_sweep.npy", "tracks/02_b_left.npy",
                                                      "tracks/03_c_silence.npy"])
        self.assertEqual(sorted(os.path.relpath(p, self.out) for p in glob.glob(os.path.join(self.out, "tracks",
                                                                                             "*.npy"))),
                         [t["npy"] for t in tracks])
        xs = []
        for t, seconds in zip(tracks, (0.3, 0.3, 0.1)):
            npy = os.path.join(self.out, t["npy"])
            x = np.load(npy)
            self.assertEqual(t["npy_sha256"], sha256(npy))
            self.assertEqual(t["source_sha256"], hashlib.sha256(self.files[t["source"]]).hexdigest())
            self.assertAlmostEqual(t["duration_s"], seconds, delta=0.01)
            self.assertLess(abs(t["samples"] - seconds * SR), 100)  # libvorbis' padding may stay
            self.assertEqual(t["frames"], (t["samples"] - n_fft) // hop + 1)
            self.assertEqual((x.shape, x.dtype.str), ((t["frames"], bins), "<f4"))
            self.assertTrue(np.isfinite(x).all())
            xs.append(x)
        self.assertEqual([(t["sample_rate"], t["channels"], t["codec"]) for t in tracks],
                         [(44100, 2, "vorbis"), (44100, 2, "vorbis"), (44100, 1, "vorbis")])
        offsets = np.cumsum([0] + [len(x) for x in xs]).tolist()
        self.assertEqual(meta["boundaries"], offsets)
        self.assertEqual([t["rows"] for t in tracks], [offsets[i:i + 2] for i in range(3)])
        everything = os.path.join(self.out, "music_all.npy")
        all_rows = np.load(everything)
        self.assertEqual((meta["npy_sha256"], meta["shape"], meta["dtype"]),
                         (sha256(everything), [offsets[-1], bins], "float32"))
        self.assertEqual((all_rows.dtype.str, all_rows.flags["C_CONTIGUOUS"]), ("<f4", True))
        self.assertTrue(np.array_equal(all_rows, np.vstack(xs)))
        frames = [len(x) for x in xs]
        self.assertEqual(meta["frames_per_track"], {"min": min(frames), "median": sorted(frames)[1],
                                                    "max": max(frames), "min_track": "c_silence"})
        self.assertEqual((meta["version"], meta["deb_sha256"], meta["licence"]),
                         (VERSION, sha256(self.deb), D.licence(FREE_FORM)))
        conversion = meta["conversion"]
        self.assertEqual((conversion["n_fft"], conversion["hop"], conversion["bins"], conversion["floor"],
                          conversion["sample_rate"]), (n_fft, hop, bins, 1e-6, SR))
        self.assertEqual(conversion["command"][conversion["command"].index("-ar") + 1], "22050")
        self.assertTrue(conversion["decoder"].startswith("ffmpeg version "), conversion["decoder"])
        return xs

    def test_spectra_in_time_order(self):
        import numpy as np
        stale = os.path.join(self.out, "tracks", "04_old.npy")
        os.makedirs(os.path.dirname(stale))
        np.save(stale, np.zeros((1, 257), np.float32))
        keep = os.path.join(self.out, "tracks", "notes.txt")
        open(keep, "w").close()
        stdout, meta = self.run_music()
        self.assertFalse(os.path.exists(stale))
        self.assertTrue(os.path.exists(keep))
        self.assertIn("music_all.npy: %d x 257, 0.00%% NaN (wesnoth-1.16-music 9.8-7; License:)" % meta["shape"][0],
                      stdout)
        self.assertIn("3 tracks in", stdout)
        sweep, left, silence = self.check_outputs(meta, 512, 512)
        low = [t for t in range(len(sweep)) if 512 * t + 512 <= SWITCH * SR]   # frames before the switch
        high = [t for t in range(len(sweep)) if 512 * t >= SWITCH * SR]       # frames after it
        self.assertEqual((len(low), len(high) >= 5), (6, True))
        self.assertEqual(sweep[low].argmax(axis=1).tolist(), [BIN_LOW] * len(low))
        self.assertEqual(sweep[high].argmax(axis=1).tolist(), [BIN_HIGH] * len(high))
        # the channels' mean: the left-only tone has half the sweep's amplitude
        ratio = left[1:5, BIN_LOW] - sweep[1:5, BIN_LOW]
        self.assertLess(abs(ratio - math.log(0.5)).max(), 0.05, ratio)
        # a 0.5 sine peaks near 0.5 n_fft / 4 in the unnormalised rfft
        self.assertLess(abs(sweep[2, BIN_LOW] - math.log(0.5 * 512 / 4)), 0.05)
        self.assertTrue((silence == np.float32(math.log(1e-6))).all())

    def test_n_fft_and_hop(self):
        _, meta = self.run_music("--n-fft", "2048", "--hop", "256")
        sweep, _, _ = self.check_outputs(meta, 2048, 256)
        self.assertEqual(sweep.shape[1], 1025)
        self.assertEqual(int(sweep[0].argmax()), 4 * BIN_LOW)
        self.assertEqual(int(sweep[-1].argmax()), 4 * BIN_HIGH)

    def test_errors(self):
        rc, _, err = S.run_main(music, [self.out, "--deb", self.deb, "--n-fft", "8192"])
        self.assertEqual(rc, 2)
        self.assertRegex(err, r"a_sweep.ogg in wesnoth-1.16-music_9.8-7_all.deb: \d+ samples at 22050 Hz, fewer than "
                              r"--n-fft 8192: no STFT frame")
        rc, _, err = S.run_main(music, [self.out, "--deb", self.deb, "--n-fft", "511"])
        self.assertEqual(rc, 2)
        self.assertIn("expected an even positive integer, got '511'", err)
        which = shutil.which
        for missing in ("ffmpeg", "ffprobe"):
            with mock.patch("shutil.which", side_effect=lambda name: None if name == missing else which(name)):
                rc, _, err = S.run_main(music, [self.out, "--deb", self.deb])
            self.assertEqual(rc, 2)
            self.assertIn("%s not found on PATH: install Debian's ffmpeg package" % missing, err)
        deb = S.build_deb(self.out, "wesnoth-1.16-music", {music.MUSIC_DIR + "/README": b"no tracks"}, FREE_FORM)
        rc, _, err = S.run_main(music, [self.out, "--deb", deb])
        self.assertEqual(rc, 2)
        self.assertIn("wesnoth-1.16-music_9.8-7_all.deb (wesnoth-1.16-music 9.8-7) has no .ogg files in %s" %
                      music.MUSIC_DIR, err)
        deb = S.build_deb(self.out, "wesnoth-1.16-music", {music.MUSIC_DIR + "/a.ogg": b"not audio"}, FREE_FORM)
        rc, _, err = S.run_main(music, [self.out, "--deb", deb])
        self.assertEqual(rc, 2)
        self.assertIn("%s/a.ogg in wesnoth-1.16-music_9.8-7_all.deb: ffprobe failed (exit status" % music.MUSIC_DIR,
                      err)
        self.assertFalse(os.path.exists(os.path.join(self.out, "music_all.npy")))


if __name__ == "__main__":
    unittest.main()
