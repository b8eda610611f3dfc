"""Helpers shared by the analysis tests (not a test module itself)."""

import contextlib
import copy
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(HERE, "fixtures")
if REPO not in sys.path:
    sys.path.insert(0, REPO)

os.environ.setdefault("MPLBACKEND", "Agg")

from analysis import common as C  # noqa: E402


def fixture(*names):
    return [os.path.join(FIXTURES, n) for n in names]


def load_fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return json.load(f)


def run_main(module, argv):
    """Runs module.main(argv) in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = C.main_wrapper(module.__name__, module.main, argv)
        except SystemExit as e:  # argparse errors
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


def md_rows(text):
    """Every data row of every Markdown table in text, as lists of cell strings."""
    rows = []
    for line in text.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def md_row_starting(text, *first_cells):
    """The one table row whose first cells are first_cells (fails if not exactly one)."""
    found = [r for r in md_rows(text) if r[:len(first_cells)] == list(first_cells)]
    if len(found) != 1:
        raise AssertionError("expected one row starting with %r, found %d in:\n%s" % (first_cells, len(found), text))
    return found[0]


def section(text, heading):
    """The text from the line `heading` to the next heading of the same or higher level."""
    lines = text.splitlines()
    start = lines.index(heading)
    level = len(heading) - len(heading.lstrip("#"))
    out = [lines[start]]
    for line in lines[start + 1:]:
        if line.startswith("#") and len(line) - len(line.lstrip("#")) <= level:
            break
        out.append(line)
    return "\n".join(out)


def png_text(path):
    """The text chunks (tEXt, zTXt, iTXt) of a PNG file as a dict; raises if
    the file is not a PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise AssertionError("%s is not a PNG file" % path)
    pos, out = 8, {}
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"tEXt":
            k, v = body.split(b"\0", 1)
            out[k.decode("latin-1")] = v.decode("latin-1")
        elif kind == b"zTXt":
            k, v = body.split(b"\0", 1)
            out[k.decode("latin-1")] = zlib.decompress(v[1:]).decode("latin-1")
        elif kind == b"iTXt":
            k, rest = body.split(b"\0", 1)
            compressed = rest[0]
            _lang, _tkey, text = rest[2:].split(b"\0", 2)
            out[k.decode("latin-1")] = (zlib.decompress(text) if compressed else text).decode("utf-8")
    return out


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    return struct.unpack(">II", head[16:24])


class TempDirTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mosaic_analysis_test_")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def write_doc(self, name, doc, subdir=""):
        d = os.path.join(self.tmp, subdir)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, name)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        return path

    def variant(self, fixture_name, name, edit, subdir=""):
        """A modified copy of a fixture: edit(doc) changes it in place."""
        doc = copy.deepcopy(load_fixture(fixture_name))
        edit(doc)
        return self.write_doc(name, doc, subdir)

    def assertOneLineError(self, rc, err, prog, message):
        """The documented error: exit status 2 and exactly the one line
        "<prog>: error: <message>" on stderr (no traceback)."""
        self.assertEqual(rc, 2, err)
        self.assertEqual(err.splitlines(), ["%s: error: %s" % (prog, message)])

    def assertPng(self, path, records_hint=()):
        self.assertTrue(os.path.isfile(path), path)
        self.assertGreater(os.path.getsize(path), 5000, path)
        w, h = png_size(path)
        self.assertGreater(w, 300)
        self.assertGreater(h, 200)
        meta = png_text(path)
        for text in records_hint:
            self.assertIn(text, meta.get("Description", ""), "caption of %s" % path)
        return meta


def build_deb(tmp, package, files, copyright_text, version="9.8-7"):
    """A .deb of `package` (architecture all) built with dpkg-deb in tmp:
    files maps paths in the package to bytes; the copyright file is added.
    Returns its path (the tree it was built from is removed)."""
    root = os.path.join(tmp, "tree_" + package)
    os.makedirs(os.path.join(root, "DEBIAN"))
    os.chmod(os.path.join(root, "DEBIAN"), 0o755)
    with open(os.path.join(root, "DEBIAN", "control"), "w") as f:
        f.write("Package: %s\nVersion: %s\nArchitecture: all\nMaintainer: Test <t@example.org>\n"
                "Description: a test package\n" % (package, version))
    files = dict(files, **{"usr/share/doc/%s/copyright" % package: copyright_text.encode()})
    for inside, data in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, inside)), exist_ok=True)
        with open(os.path.join(root, inside), "wb") as f:
            f.write(data)
    deb = os.path.join(tmp, "%s_%s_all.deb" % (package, version))
    subprocess.run(["dpkg-deb", "--build", root, deb], check=True, stdout=subprocess.DEVNULL)
    shutil.rmtree(root)
    return deb
