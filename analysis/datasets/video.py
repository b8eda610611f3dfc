#!/usr/bin/python3
"""The video streams: two of OpenCV's sample videos as grey frames, one row
per frame in time order, as .npy files the mini-app reads (source.type: npy).

Debian's opencv-doc (Files: * of its copyright file: Apache-2.0 AND
BSD-3-Clause; Intel, Willow Garage, OpenCV Foundation and others) ships

    vtest  usr/share/doc/opencv-doc/examples/data/vtest.avi: a fixed camera,
           people walking; 768 x 576, MS-MPEG4v3, 10 frames/s, 795 frames
    box    usr/share/doc/opencv-doc/opencv4/html/box.mp4.gz (gzip'd in the
           package, gunzipped here): hand-held, a box on a table; 640 x 480,
           H.264, 29.97 frames/s, 455 frames decodable (456 packets: the
           first IDR slice is broken, and ffmpeg's default constant-rate
           output would duplicate frames to 457)

This command fetches the package (the .deb in --cache, else apt-get download
into it, or the .deb given with --deb), unpacks it with dpkg -x into a
temporary directory and decodes each video with ffmpeg (Debian's ffmpeg
package) to 8-bit grey frames of --width x --height (default 96 x 72, the 4:3
of both videos): the scale filter with flags=area (area averaging, the
box filter over the source pixels each output pixel covers), then
format=gray (the luma, which libswscale stretches from the limited range
16-235 to 0-255), every decoded frame once in the decoder's output order
(-fps_mode passthrough: no frame duplicated or dropped to a constant rate).
It writes into OUTDIR (default inputs/real_data/video)

    vtest.npy, box.npy    float32, shape (frames, width * height): one row per
                          frame in time order; column r * width + c is the
                          pixel of row r (top to bottom), column c (left to
                          right); the grey byte / 255, so in [0, 1]
    vtest.json, box.json  provenance: the package, its version and sha256, the
                          licence and copyright lines of its copyright file,
                          the source file and its sha256, the ffmpeg version
                          and the exact command, the frame count, the .npy's
                          sha256

The data are never committed (inputs/real_data/ is ignored by git):

    /usr/bin/python3 -m analysis.datasets.video [OUTDIR] [--deb PATH] [--cache DIR] [--width 96 --height 72]
"""

import gzip
import os
import shutil
import sys

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from analysis import common as C
from analysis.datasets import debian as D
from analysis.datasets import ffmpeg as F

MODULE = "analysis.datasets.video"
DATASET = "video"
PACKAGE = "opencv-doc"
# (stream name, file in the package, how it is stored, what it shows)
VIDEOS = [
    ("vtest", "usr/share/doc/opencv-doc/examples/data/vtest.avi", None,
     "fixed camera, people walking (OpenCV's samples/data/vtest.avi)"),
    ("box", "usr/share/doc/opencv-doc/opencv4/html/box.mp4.gz", "gzip",
     "hand-held camera, a box on a table (OpenCV's doc/tutorials box.mp4)"),
]
WIDTH, HEIGHT = 96, 72
SCALE_FLAGS = "area"


def grey_command(ffmpeg, source, width, height):
    """The ffmpeg command that writes the grey frames of `source` to stdout,
    width * height bytes each."""
    return [ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error", "-i", source, "-map", "0:v:0",
            "-fps_mode", "passthrough", "-vf", "scale=%d:%d:flags=%s,format=gray" % (width, height, SCALE_FLAGS),
            "-f", "rawvideo", "-pix_fmt", "gray", "pipe:1"]


def grey_frames(ffmpeg, source, width, height, what):
    """(x, ffmpeg's messages): x float32 (frames, width * height),
    one row per decoded frame in order, the grey byte / 255."""
    np = D.numpy()
    command = grey_command(ffmpeg, source, width, height)
    raw, stderr = F.run_tool(command, what)
    size = width * height
    if not raw or len(raw) % size:
        raise C.AnalysisError("%s: ffmpeg wrote %d bytes, not a whole number (> 0) of %d x %d grey frames%s" % (
            what, len(raw), width, height, ": " + " ".join(F.messages(stderr)[-1:]) if stderr.strip() else ""))
    frames = np.frombuffer(raw, dtype=np.uint8).reshape(-1, size)
    return frames.astype(np.float32) / np.float32(255), F.messages(stderr)


def main(argv=None):
    parser = D.argument_parser(MODULE, __doc__, PACKAGE, DATASET,
                               ", ".join("%s.npy and %s.json" % (v[0], v[0]) for v in VIDEOS))
    parser.add_argument("--width", type=D.positive, default=WIDTH,
                        help="frame width in pixels (default: %(default)s)")
    parser.add_argument("--height", type=D.positive, default=HEIGHT,
                        help="frame height in pixels (default: %(default)s)")
    args = parser.parse_args(argv)
    ffmpeg = F.ffmpeg_tool("ffmpeg")
    version = F.ffmpeg_version(ffmpeg)
    results = []
    with D.unpacked(PACKAGE, args.deb, args.cache) as pkg:
        for name, inside, stored, shows in VIDEOS:
            packed = pkg.path(inside)
            what = "%s in %s" % (inside, os.path.basename(pkg.deb))
            source, shown = packed, inside
            if stored == "gzip":
                shown = inside[:-len(".gz")]
                source = os.path.join(os.path.dirname(pkg.root), os.path.basename(shown))
                try:
                    with gzip.open(packed, "rb") as fin, open(source, "wb") as fout:
                        shutil.copyfileobj(fin, fout)
                except (OSError, EOFError) as e:
                    raise C.AnalysisError("%s: cannot gunzip: %s" % (what, e)) from None
            x, notes = grey_frames(ffmpeg, source, args.width, args.height, what)
            results.append((name, inside, stored, shows, D.sha256_file(packed), shown, x, notes))
    np = D.numpy()
    for name, inside, stored, shows, source_sha, shown, x, notes in results:
        npy = os.path.join(args.outdir, name + ".npy")
        sha = D.save_array(npy, x, np.float32)
        meta = D.package_fields(name, pkg)
        meta.update({
            "source_files": [inside], "source_sha256": source_sha, "content": shows,
            "conversion": {
                "decoder": version, "ffmpeg_path": ffmpeg,
                "command": grey_command("ffmpeg", shown, args.width, args.height),
                "input": ("%s gunzipped to %s" % (inside, os.path.basename(shown))) if stored else inside,
                "scale": {"width": args.width, "height": args.height, "filter": "scale", "flags": SCALE_FLAGS,
                          "interpolation": "area averaging (each output pixel the mean of the source pixels "
                                           "it covers)"},
                "grey": "format=gray: the luma, stretched by libswscale from the limited range 16-235 to 0-255",
                "frames": "every decoded frame once, in the decoder's output order (-fps_mode passthrough)",
                "values": "the grey byte / 255, float32, in [0, 1]",
                "rows": "one per frame, in time order",
                "columns": "pixel (r, c) at column r * width + c: rows top to bottom, columns left to right",
                "ffmpeg_messages": notes},
            "frames": int(x.shape[0])})
        meta.update(D.array_fields(npy, x.shape, x.dtype, sha, np.isnan(x).mean()))
        meta["value_range"] = [float(x.min()), float(x.max())]
        D.write_sidecar(os.path.join(args.outdir, name + ".json"), meta)
        print(D.summary(MODULE, npy, meta))
    return 0


if __name__ == "__main__":
    sys.exit(C.main_wrapper(MODULE, main, sys.argv[1:]))
