"""What the media builders (analysis/datasets/video.py, music.py) share: ffmpeg
and ffprobe (Debian's ffmpeg package) found on PATH, their version line, a
run that turns a failure into an AnalysisError with the tool's last message,
and ffmpeg's messages cleaned for a sidecar."""

import os
import re
import shutil
import subprocess

from analysis import common as C

PACKAGE = "ffmpeg"  # Debian's package of both ffmpeg and ffprobe
MAX_MESSAGES = 20  # ffmpeg's error lines kept in a sidecar


def ffmpeg_tool(name="ffmpeg"):
    """The path of ffmpeg or ffprobe on PATH; missing, an AnalysisError that
    names the Debian package to install."""
    path = shutil.which(name)
    if not path:
        raise C.AnalysisError("%s not found on PATH: install Debian's %s package (apt-get install %s)" % (
            name, PACKAGE, PACKAGE))
    return path


def ffmpeg_version(exe):
    """The first line of `exe -version` ("ffmpeg version 5.1.9-0+deb12u1 ...")."""
    lines = run_tool([exe, "-version"], "%s -version" % os.path.basename(exe))[0].decode("utf-8", "replace")
    return (lines.splitlines() or ["unknown"])[0].strip()


def run_tool(argv, what):
    """(stdout bytes, stderr text) of argv; a failure is an AnalysisError
    naming `what` with the tool's last message line."""
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        raise C.AnalysisError("%s: cannot run %s: %s" % (what, argv[0], e)) from None
    stderr = done.stderr.decode("utf-8", "replace")
    if done.returncode != 0:
        last = stderr.strip().splitlines()[-1:]
        raise C.AnalysisError("%s: %s failed (exit status %d): %s" % (
            what, os.path.basename(argv[0]), done.returncode, " ".join(last) or "no message"))
    return done.stdout, stderr


def messages(stderr):
    """ffmpeg's distinct error lines (first MAX_MESSAGES) without the
    addresses of its "[h264 @ 0x...]" prefixes, for a sidecar."""
    out = []
    for line in stderr.splitlines():
        line = re.sub(r" @ 0x[0-9a-fA-F]+\]", "]", line.strip())
        if line and line not in out:
            out.append(line)
    return out[:MAX_MESSAGES]
