#!/usr/bin/python3
"""The music streams: the log-magnitude spectrograms of Battle for Wesnoth's
music tracks, one row per STFT frame in time order, as .npy files the
mini-app reads (source.type: npy).

Debian's wesnoth-1.16-music (GPL-2+: its free-form copyright file's License:
section, "GNU General Public License version 2 or at your option any later
version"; David White and the other Wesnoth authors) ships the game's music as
Ogg Vorbis files in usr/share/games/wesnoth/1.16/data/core/music/ (41 tracks,
about 2 h 8 min, 44.1 kHz stereo). This command fetches the package (the .deb
in --cache, else apt-get download into it, or the .deb given with --deb),
unpacks it with dpkg -x into a temporary directory and, one track at a time
in sorted file-name order,

  - decodes it with ffmpeg (Debian's ffmpeg package) to 32-bit float PCM at
    22,050 Hz (-ar: libswresample's default resampler), piped raw (f32le),
    every channel kept; ffprobe gives its channels, rate and duration;
  - averages the channels to mono, (left + right) / 2 (ffmpeg's own -ac 1
    would weight each by 1/sqrt(2));
  - takes the STFT in NumPy: a periodic Hann window of --n-fft samples
    (w[n] = 0.5 - 0.5 cos(2 pi n / n_fft)), hop --hop, no padding, so
    floor((n - n_fft) / hop) + 1 frames of n_fft / 2 + 1 bins (numpy's rfft,
    unnormalised: a full-scale sine peaks near n_fft / 4); frame t covers
    samples [t hop, t hop + n_fft), bin k is k * 22050 / n_fft Hz;
  - keeps log(|X| + 1e-6) (natural log): the floor 1e-6 makes digital
    silence finite, log(1e-6) = -13.8155.

It writes into OUTDIR (default inputs/real_data/music)

    tracks/NN_<name>.npy  float32, shape (frames, n_fft / 2 + 1): one track,
                          NN its 1-based place in sorted file-name order,
                          zero-padded so that sorting the file names keeps
                          that order (older NN_*.npy there are removed first)
    music_all.npy         float32: every track's rows, in that order
                          (about 331,000 x 257 at the defaults), written by
                          appending the track files' rows after its header
    music.json            provenance: the package, its version and sha256,
                          the licence and copyright lines of its copyright
                          file, the ffmpeg version and commands, the STFT's
                          parameters, for each track its file, sha256,
                          duration, samples, frames, rows in music_all.npy
                          and .npy's sha256; music_all.npy's sha256 and track
                          boundaries (row offsets)

The data are never committed (inputs/real_data/ is ignored by git):

    /usr/bin/python3 -m analysis.datasets.music [OUTDIR] [--deb PATH] [--cache DIR] [--n-fft N] [--hop H]
"""

import argparse
import glob
import json
import os
import re
import statistics
import sys

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from analysis import common as C
from analysis.datasets import debian as D
from analysis.datasets import ffmpeg as F

MODULE = "analysis.datasets.music"
DATASET = "music"
PACKAGE = "wesnoth-1.16-music"
MUSIC_DIR = "usr/share/games/wesnoth/1.16/data/core/music"
EXTENSION = ".ogg"
SAMPLE_RATE = 22050
N_FFT = 512
HOP = 512
FLOOR = 1e-6
CHUNK = 4096  # STFT frames computed at once
CONCATENATION = "music_all.npy"
TRACKS = "tracks"


def periodic_hann(n):
    np = D.numpy()
    return 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n)


def frame_count(samples, n_fft, hop):
    """floor((samples - n_fft) / hop) + 1, 0 when samples < n_fft."""
    return 0 if samples < n_fft else (samples - n_fft) // hop + 1


def log_spectrogram(signal, n_fft=N_FFT, hop=HOP, floor=FLOOR, chunk=CHUNK):
    """log(|STFT| + floor) of the 1-D signal, float32 (frames, n_fft // 2 + 1):
    periodic Hann window of n_fft samples, hop `hop`, no padding; computed
    `chunk` frames at a time."""
    np = D.numpy()
    signal = np.ascontiguousarray(signal, dtype=np.float64)
    frames = frame_count(len(signal), n_fft, hop)
    window = periodic_hann(n_fft)
    out = np.empty((frames, n_fft // 2 + 1), dtype=np.float32)
    windows = np.lib.stride_tricks.as_strided(signal, shape=(frames, n_fft),
                                              strides=(hop * signal.strides[0], signal.strides[0]), writeable=False)
    for start in range(0, frames, chunk):
        spectrum = np.fft.rfft(windows[start:start + chunk] * window, axis=1)
        out[start:start + chunk] = np.log(np.abs(spectrum) + floor)
    return out


def probe(ffprobe, path, what):
    """(codec, sample rate, channels, duration in s) of the first audio stream."""
    raw, _ = F.run_tool([ffprobe, "-v", "error", "-select_streams", "a:0", "-show_entries",
                         "stream=codec_name,sample_rate,channels:format=duration", "-of", "json", path], what)
    try:
        info = json.loads(raw.decode("utf-8", "replace"))
        stream = info["streams"][0]
        duration = info.get("format", {}).get("duration")
        return (stream.get("codec_name"), int(stream["sample_rate"]), int(stream["channels"]),
                float(duration) if duration not in (None, "N/A") else None)
    except (ValueError, KeyError, IndexError, TypeError):
        raise C.AnalysisError("%s: ffprobe found no audio stream" % what) from None


def decode_command(ffmpeg, source):
    """The ffmpeg command that writes `source` as f32le at SAMPLE_RATE, every
    channel interleaved, to stdout."""
    return [ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error", "-i", source, "-map", "0:a:0",
            "-ar", str(SAMPLE_RATE), "-f", "f32le", "-c:a", "pcm_f32le", "pipe:1"]


def mono(ffmpeg, source, channels, what):
    """The track at SAMPLE_RATE, its channels averaged: float64 (samples,)."""
    np = D.numpy()
    raw, _ = F.run_tool(decode_command(ffmpeg, source), what)
    pcm = np.frombuffer(raw, dtype="<f4")
    if len(pcm) % channels:
        raise C.AnalysisError("%s: ffmpeg wrote %d samples, not a whole number of %d-channel frames" % (
            what, len(pcm), channels))
    return pcm.reshape(-1, channels).mean(axis=1, dtype=np.float64)


def track_stem(index, count, source):
    """NN_<name>: the 1-based index zero-padded to at least two digits (all
    the same width), the file name without its extension."""
    width = max(2, len(str(count)))
    return "%0*d_%s" % (width, index, os.path.splitext(os.path.basename(source))[0])


def append_tracks(path, npys, rows, columns, block=1 << 14):
    """Writes the .npy `path`, float32 (rows, columns), C order: the header,
    then the rows of each .npy of `npys` appended in order, `block` rows at a
    time (little memory: no array of all rows, no memory map)."""
    np = D.numpy()
    written = 0
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": np.dtype("<f4").str, "fortran_order": False,
                                                 "shape": (rows, columns)})
        for npy in npys:
            x = np.load(npy, mmap_mode="r")
            if x.dtype != np.dtype("<f4") or x.ndim != 2 or x.shape[1] != columns:
                raise C.AnalysisError("%s: expected float32 rows of %d columns, found %s %s" % (
                    npy, columns, x.dtype, x.shape))
            for start in range(0, x.shape[0], block):
                f.write(np.ascontiguousarray(x[start:start + block]).tobytes())
            written += x.shape[0]
            del x
    if written != rows:
        raise C.AnalysisError("%s: wrote %d rows, expected %d" % (path, written, rows))


def even_positive(text):
    """argparse type: an even positive integer."""
    value = D.positive(text)
    if value % 2:
        raise argparse.ArgumentTypeError("expected an even positive integer, got %r" % text)
    return value


def main(argv=None):
    parser = D.argument_parser(MODULE, __doc__, PACKAGE, DATASET, "tracks/NN_<name>.npy, %s and %s.json" % (
        CONCATENATION, DATASET))
    parser.add_argument("--n-fft", type=even_positive, default=N_FFT,
                        help="STFT length and Hann window length in samples; n_fft / 2 + 1 bins (default: "
                             "%(default)s)")
    parser.add_argument("--hop", type=D.positive, default=HOP, help="STFT hop in samples (default: %(default)s)")
    args = parser.parse_args(argv)
    np = D.numpy()
    ffmpeg, ffprobe = F.ffmpeg_tool("ffmpeg"), F.ffmpeg_tool("ffprobe")
    version = F.ffmpeg_version(ffmpeg)
    bins = args.n_fft // 2 + 1
    tracks_dir = os.path.join(args.outdir, TRACKS)
    tracks = []
    with D.unpacked(PACKAGE, args.deb, args.cache) as pkg:
        sources = sorted(glob.glob(os.path.join(pkg.root, MUSIC_DIR, "*" + EXTENSION)), key=os.path.basename)
        if not sources:
            raise C.AnalysisError("%s (%s %s) has no %s files in %s" % (
                os.path.basename(pkg.deb), pkg.name, pkg.version, EXTENSION, MUSIC_DIR))
        os.makedirs(tracks_dir, exist_ok=True)
        for old in glob.glob(os.path.join(tracks_dir, "[0-9]*_*.npy")):
            if re.match(r"[0-9]+_", os.path.basename(old)):
                os.remove(old)
        row = nans = 0
        for index, source in enumerate(sources, 1):
            inside = os.path.relpath(source, pkg.root)
            what = "%s in %s" % (inside, os.path.basename(pkg.deb))
            codec, rate, channels, duration = probe(ffprobe, source, what)
            signal = mono(ffmpeg, source, channels, what)
            if len(signal) < args.n_fft:
                raise C.AnalysisError("%s: %d samples at %d Hz, fewer than --n-fft %d: no STFT frame" % (
                    what, len(signal), SAMPLE_RATE, args.n_fft))
            x = log_spectrogram(signal, args.n_fft, args.hop)
            stem = track_stem(index, len(sources), source)
            sha = D.save_array(os.path.join(tracks_dir, stem + ".npy"), x, np.float32)
            nans += int(np.isnan(x).sum())
            tracks.append({"index": index, "name": os.path.splitext(os.path.basename(source))[0], "source": inside,
                           "source_sha256": D.sha256_file(source), "codec": codec, "sample_rate": rate,
                           "channels": channels, "duration_s": duration, "samples": len(signal),
                           "decoded_duration_s": len(signal) / SAMPLE_RATE, "frames": int(x.shape[0]),
                           "rows": [row, row + int(x.shape[0])], "npy": os.path.join(TRACKS, stem + ".npy"),
                           "npy_sha256": sha})
            row += int(x.shape[0])
            del signal, x
    total = row
    concatenation = os.path.join(args.outdir, CONCATENATION)
    append_tracks(concatenation, [os.path.join(args.outdir, t["npy"]) for t in tracks], total, bins)
    frames = [t["frames"] for t in tracks]
    meta = D.package_fields(DATASET, pkg)
    meta.update({
        "source_dir": MUSIC_DIR, "source_files": [t["source"] for t in tracks],
        "conversion": {
            "decoder": version, "ffmpeg_path": ffmpeg,
            "command": decode_command("ffmpeg", "<track>"),
            "probe": "ffprobe -v error -select_streams a:0 -show_entries "
                     "stream=codec_name,sample_rate,channels:format=duration -of json <track>",
            "sample_rate": SAMPLE_RATE, "resampler": "ffmpeg -ar (libswresample's default)",
            "mono": "the mean of the decoded channels, (left + right) / 2",
            "window": "periodic Hann, w[n] = 0.5 - 0.5 cos(2 pi n / n_fft), n = 0 .. n_fft - 1",
            "n_fft": args.n_fft, "hop": args.hop, "bins": bins, "padding": "none",
            "frames": "floor((samples - n_fft) / hop) + 1; frame t covers samples [t hop, t hop + n_fft)",
            "transform": "numpy.fft.rfft of the windowed frame, unnormalised",
            "values": "log(|X| + floor), natural log, float32", "floor": FLOOR,
            "rows": "one per STFT frame, in time order; music_all.npy: the tracks in order",
            "columns": "bin k = 0 .. n_fft / 2, frequency k * sample_rate / n_fft Hz",
            "track_order": "sorted file names; tracks/NN_<name>.npy, NN 1-based"},
        "tracks": tracks,
        "frames_per_track": {"min": min(frames), "median": statistics.median(frames), "max": max(frames),
                             "min_track": tracks[frames.index(min(frames))]["name"]},
        "boundaries": [0] + [t["rows"][1] for t in tracks]})
    meta.update(D.array_fields(concatenation, (total, bins), "float32", D.sha256_file(concatenation),
                               nans / (total * bins)))
    meta["duration_s"] = sum(t["duration_s"] or 0.0 for t in tracks)
    D.write_sidecar(os.path.join(args.outdir, DATASET + ".json"), meta)
    print(D.summary(MODULE, concatenation, meta))
    print("%s: %d tracks in %s, %.1f s; frames per track: min %d (%s), median %g, max %d" % (
        MODULE, len(tracks), tracks_dir, meta["duration_s"], min(frames), meta["frames_per_track"]["min_track"],
        statistics.median(frames), max(frames)))
    return 0


if __name__ == "__main__":
    sys.exit(C.main_wrapper(MODULE, main, sys.argv[1:]))
