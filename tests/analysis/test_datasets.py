"""analysis.datasets and rdata.load_lazy: R lazy-load databases written here
byte by byte (each compression R uses, a persisted environment that refers
to itself), the licence lines of both kinds of Debian copyright file, the
wind and DJ30 conversions, the .deb cache, the sidecar and .npy writers and
the shared command line, and both builders end to end on fake packages
built with dpkg-deb (no network)."""

import argparse
import bz2
import gzip
import hashlib
import json
import lzma
import math
import os
import shutil
import struct
import tempfile
import types
import unittest
import zlib
from unittest import mock

import analysis_test_support as S
from test_rdata import NA_REAL, Writer

from analysis import common as C
from analysis import rdata
from analysis.datasets import debian as D
from analysis.datasets import dj30, wind

NA_INT = -(2 ** 31)


def serialized(write):
    """The bytes serialize() writes (version 2, XDR) for the item write(w) writes."""
    w = Writer()
    w.out += b"X\n"
    w.int(2)
    w.int(0x040200)
    w.int(0x020300)
    write(w)
    return bytes(w.out)


def named_list(w, items):
    """list(name = value, ...): items are (name, write) pairs."""
    w.flags(19, attr=True)
    w.int(len(items))
    for _, write in items:
        write(w)
    w.attrs([("names", lambda: w.vector(16, None, [name for name, _ in items]))])


def data_frame(w, columns, rows):
    w.flags(19, attr=True, obj=True)
    w.int(len(columns))
    for _, write in columns:
        write(w)
    w.attrs([("names", lambda: w.vector(16, None, [name for name, _ in columns])),
             ("class", lambda: w.vector(16, None, ["data.frame"])),
             ("row.names", lambda: w.vector(13, "i", [NA_INT, -rows]))])


def compress_entry(data, level, kind=None):
    """One .rdb entry as R_compress1 (level 1), 2 or 3 write it."""
    size = struct.pack(">I", len(data))
    if level == 1:
        return size + zlib.compress(data)
    kind = kind or {2: b"2", 3: b"Z"}[level]
    body = {b"0": lambda b: b, b"1": zlib.compress, b"2": bz2.compress,
            b"Z": lambda b: lzma.compress(b, format=lzma.FORMAT_RAW, filters=[{"id": lzma.FILTER_LZMA2,
                                                                               "preset": 6}])}[kind](data)
    return size + kind + body


def write_lazy_db(folder, stem, variables, references=(), level=1, kind=None):
    """stem.rdb and stem.rdx in folder: variables and references are
    (name, serialized bytes) pairs; the index is gzip'd as saveRDS writes it."""
    rdb, keys = bytearray(), {}
    for name, data in list(variables) + list(references):
        entry = compress_entry(data, level, kind)
        keys[name] = (len(rdb), len(entry))
        rdb += entry

    def key_list(names):
        return lambda w: named_list(w, [(n, lambda w, n=n: w.vector(13, "i", list(keys[n]))) for n in names])

    index = serialized(lambda w: named_list(w, [
        ("variables", key_list([n for n, _ in variables])),
        ("references", key_list([n for n, _ in references])),
        ("compressed", lambda w: w.vector(10, "i", [1]) if level == 1 else w.vector(13, "i", [level]))]))
    paths = os.path.join(folder, stem + ".rdb"), os.path.join(folder, stem + ".rdx")
    with open(paths[0], "wb") as f:
        f.write(rdb)
    with open(paths[1], "wb") as f:
        f.write(gzip.compress(index))
    return paths


def double_vector(values, names=None):
    return lambda w: w.vector(14, "d", values, [("names", lambda: w.vector(16, None, names))] if names else ())


class LoadLazy(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)

    def test_each_compression(self):
        variables = [("y", serialized(double_vector([9.0]))),
                     ("x", serialized(double_vector([1.5, NA_REAL, 3.0], ["a", "b", "c"])))]
        for level, kind in ((1, None), (2, b"2"), (2, b"0"), (3, b"Z"), (3, b"1")):
            with self.subTest(level=level, kind=kind):
                rdb, rdx = write_lazy_db(self.tmp, "Rdata", variables, level=level, kind=kind)
                x = rdata.load_lazy(rdb, rdx, "x")
                self.assertEqual((x.rtype, x[0], x[2], x.attrs["names"]), ("double", 1.5, 3.0, ["a", "b", "c"]))
                self.assertTrue(math.isnan(x[1]))
                self.assertEqual(list(rdata.load_lazy(rdb, rdx, "y")), [9.0])

    def test_a_persisted_environment_is_rebuilt_once(self):
        def persistent(w):  # PERSISTSXP: 0, then a string vector of one name
            w.int(247)
            w.int(0)
            w.int(1)
            w.charsxp("env::1")

        def two_references(w):  # list(e, e): the second is a reference to the first
            w.flags(19)
            w.int(2)
            persistent(w)
            w.int(255 | (1 << 8))

        env = serialized(lambda w: named_list(w, [
            ("bindings", lambda w: named_list(w, [("k", double_vector([2.0]))])),
            ("enclos", persistent)]))
        rdb, rdx = write_lazy_db(self.tmp, "Rdata", [("f", serialized(two_references))], [("env::1", env)])
        f = rdata.load_lazy(rdb, rdx, "f")
        self.assertIs(f[0], f[1])
        self.assertEqual(f[0].rtype, "environment")
        self.assertEqual({k: list(v) for k, v in f[0].fields["frame"].items()}, {"k": [2.0]})
        self.assertIs(f[0].fields["enclos"], f[0])

    def test_refusals(self):
        rdb, rdx = write_lazy_db(self.tmp, "Rdata", [("x", serialized(double_vector([1.0]))),
                                                     ("y", serialized(double_vector([2.0])))])
        with self.assertRaisesRegex(rdata.RDataError, r"Rdata.rdb: no object 'z' \(it has: x, y\)"):
            rdata.load_lazy(rdb, rdx, "z")
        rdb, rdx = write_lazy_db(self.tmp, "Rdata", [("x", serialized(double_vector([1.0])))], level=2, kind=b"0")
        with open(rdb, "r+b") as f:
            f.write(struct.pack(">I", 5))
        with self.assertRaisesRegex(rdata.RDataError, "Rdata.rdb: entry at 0 is 30 bytes decompressed, its header "
                                                      "says 5"):
            rdata.load_lazy(rdb, rdx, "x")
        with open(rdb, "r+b") as f:
            f.seek(4)
            f.write(b"Q")
        with self.assertRaisesRegex(rdata.RDataError, "entry at 0 has compression type b'Q'"):
            rdata.load_lazy(rdb, rdx, "x")
        with open(rdx, "wb") as f:
            f.write(gzip.compress(serialized(double_vector([1.0]))))
        with self.assertRaisesRegex(rdata.RDataError, "not a lazy-load index"):
            rdata.load_lazy(rdb, rdx, "x")


DEP5 = """Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: gstat

Files: *
Copyright: 2014-2021 Edzer Pebesma,
 Benedikt Graeler
License: GPL-2+

License: GPL-2+
 This program is free software; you can redistribute it and/or modify
 .
 Copyright: not a field, part of the licence text
"""

FREE_FORM = """This is the Debian GNU/Linux r-cran-fbasics package of fBasics.

Copyright (C) 1999 - 2008 Diethelm Wuertz
Copyright (C) 1999 - 2008 Rmetrics Foundation

License: GPL

   License: GPL Version 2 or later
"""


class Licence(unittest.TestCase):
    def test_machine_readable_and_free_form_copyright_files(self):
        self.assertEqual(D.licence(DEP5), ["Copyright: 2014-2021 Edzer Pebesma, Benedikt Graeler", "License: GPL-2+",
                                           "License: GPL-2+"])
        self.assertEqual(D.licence(FREE_FORM), ["Copyright (C) 1999 - 2008 Diethelm Wuertz",
                                                "Copyright (C) 1999 - 2008 Rmetrics Foundation", "License: GPL"])


def wind_frame(years=(61, 61, 62), months=(12, 12, 1), days=(30, 31, 1)):
    return rdata.RVector([rdata.RVector(list(years), "integer"), rdata.RVector(list(months), "integer"),
                          rdata.RVector(list(days), "integer"), rdata.RVector([1.0, NA_REAL, 3.0], "double"),
                          rdata.RVector([4, None, 6], "integer")], "list",
                         {"names": ["year", "month", "day", "RPT", "VAL"], "class": ["data.frame"]})


def dj30_frame(closes=((10.0, 20.0), (11.0, 20.0), (12.1, 10.0)), dates=("1990-12-31", "1991-01-02", "1991-01-03")):
    factor = rdata.RVector(list(range(1, len(dates) + 1)), "integer", {"levels": list(dates), "class": ["factor"]})
    return rdata.RVector([factor] + [rdata.RVector([row[s] for row in closes], "double") for s in range(2)], "list",
                         {"names": ["X.Y..m..d", "AA", "AXP"], "class": ["data.frame"]})


class Conversions(unittest.TestCase):
    def test_wind_one_row_per_day_without_the_date_columns(self):
        x, stations, days = wind.stations_by_day(wind_frame())
        self.assertEqual(stations, ["RPT", "VAL"])
        self.assertEqual([str(d) for d in days], ["1961-12-30", "1961-12-31", "1962-01-01"])
        self.assertEqual((x.shape, x.dtype.name), ((3, 2), "float64"))
        self.assertEqual((x[0, 0], x[0, 1], x[2, 0], x[2, 1]), (1.0, 4.0, 3.0, 6.0))
        self.assertTrue(math.isnan(x[1, 0]) and math.isnan(x[1, 1]))
        with self.assertRaisesRegex(C.AnalysisError, r"not increasing at row 3 \(1961-12-30 after 1961-12-31\)"):
            wind.stations_by_day(wind_frame(days=(30, 31, 30), months=(12, 12, 12), years=(61, 61, 61)))
        with self.assertRaisesRegex(C.AnalysisError, "row 2 has no valid date"):
            wind.stations_by_day(wind_frame(months=(12, 13, 1)))
        with self.assertRaisesRegex(C.AnalysisError, "expected a data frame with columns year, month, day"):
            wind.stations_by_day(rdata.RVector([1.0], "double"))

    def test_dj30_log_returns_in_date_order(self):
        closes, tickers, days = dj30.closes_by_day(dj30_frame())
        self.assertEqual((tickers, str(days[0]), str(days[-1])), (["AA", "AXP"], "1990-12-31", "1991-01-03"))
        r = dj30.log_returns(closes)
        self.assertEqual(r.shape, (2, 2))
        for got, want in zip(r.ravel(), [math.log(1.1), 0.0, math.log(1.1), math.log(0.5)]):
            self.assertAlmostEqual(got, want, places=14)
        with self.assertRaisesRegex(C.AnalysisError, r"close <= 0 \(0\) at row 2, column 2"):
            dj30.log_returns([[1.0, 1.0], [1.0, 0.0]])
        with self.assertRaisesRegex(C.AnalysisError, "row 2 is '1991-02-30', not a YYYY-MM-DD date"):
            dj30.closes_by_day(dj30_frame(dates=("1990-12-31", "1991-02-30", "1991-03-01")))


class Cache(unittest.TestCase):
    def test_a_cached_deb_is_used_without_apt_get(self):
        with tempfile.TemporaryDirectory() as cache:
            deb = os.path.join(cache, "r-cran-x_1.0-1_all.deb")
            open(deb, "wb").close()
            with mock.patch("subprocess.run", side_effect=AssertionError("apt-get ran")):
                self.assertEqual(D.fetch_deb("r-cran-x", cache), deb)
            open(os.path.join(cache, "r-cran-x_0.9-1_all.deb"), "wb").close()
            with self.assertRaisesRegex(C.AnalysisError, "found 2 .*r-cran-x_0.9-1_all.deb, r-cran-x_1.0-1_all.deb"):
                D.fetch_deb("r-cran-x", cache)


class Writing(unittest.TestCase):
    """The pieces of debian.write_dataset that the media builders use on
    their own, and the command line the builders share."""

    PKG = types.SimpleNamespace(name="r-cran-x", version="1.0-1", deb="/cache/r-cran-x_1.0-1_all.deb",
                                sha256="ab" * 32, copyright_file="usr/share/doc/r-cran-x/copyright",
                                licence=["Copyright: 2020 A", "License: GPL-2+"])

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)

    def test_package_fields(self):
        self.assertEqual(list(D.package_fields("x", self.PKG).items()), [
            ("dataset", "x"), ("package", "r-cran-x"), ("version", "1.0-1"), ("deb", "r-cran-x_1.0-1_all.deb"),
            ("deb_sha256", "ab" * 32), ("copyright_file", "usr/share/doc/r-cran-x/copyright"),
            ("licence", ["Copyright: 2020 A", "License: GPL-2+"])])

    def test_save_array_in_c_order_as_dtype(self):
        import numpy as np
        x = np.asfortranarray(np.arange(6, dtype=np.int64).reshape(2, 3))
        npy = os.path.join(self.tmp, "a", "b", "x.npy")
        sha = D.save_array(npy, x, np.float32)
        with open(npy, "rb") as f:
            self.assertEqual(sha, hashlib.sha256(f.read()).hexdigest())
        y = np.load(npy)
        self.assertEqual((y.dtype.str, y.flags["C_CONTIGUOUS"], y.tolist()), ("<f4", True, x.tolist()))

    def test_write_dataset_from_its_pieces(self):
        import numpy as np
        x = [[1.0, np.nan], [3.0, 4.0]]
        npy, meta = D.write_dataset(os.path.join(self.tmp, "out"), "x", x, self.PKG, {"columns": ["a", "b"]})
        self.assertEqual(list(meta), ["dataset", "package", "version", "deb", "deb_sha256", "copyright_file",
                                      "licence", "columns", "npy", "shape", "dtype", "order", "npy_sha256",
                                      "nan_fraction"])
        self.assertEqual((meta["npy"], meta["shape"], meta["dtype"], meta["order"], meta["nan_fraction"]),
                         ("x.npy", [2, 2], "float64", "C", 0.25))
        self.assertEqual(np.load(npy).dtype.str, "<f8")
        with open(os.path.join(self.tmp, "out", "x.json"), encoding="utf-8") as f:
            text = f.read()
        self.assertEqual(text, json.dumps(meta, indent=1) + "\n")
        self.assertEqual(meta, dict(D.package_fields("x", self.PKG), columns=["a", "b"],
                                    **D.array_fields(npy, (2, 2), "float64", D.sha256_file(npy), 0.25)))
        npy, meta = D.write_dataset(os.path.join(self.tmp, "out32"), "x", x, self.PKG, {}, dtype="float32")
        self.assertEqual((np.load(npy).dtype.str, meta["dtype"], meta["npy_sha256"]),
                         ("<f4", "float32", D.sha256_file(npy)))
        with self.assertRaisesRegex(C.AnalysisError, r"x: expected a non-empty \(samples, features\) array"):
            D.write_dataset(os.path.join(self.tmp, "empty"), "x", np.zeros((0, 3)), self.PKG, {})
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "empty")))

    def test_write_sidecar(self):
        path = os.path.join(self.tmp, "x.json")
        D.write_sidecar(path, {"b": 1, "a": [1.5, "é"]})
        with open(path, encoding="utf-8") as f:
            self.assertEqual(f.read(), '{\n "b": 1,\n "a": [\n  1.5,\n  "\\u00e9"\n ]\n}\n')

    def test_argument_parser_and_positive(self):
        def outdir_help(parser):
            return " ".join(parser.format_help().split())
        parser = D.argument_parser("analysis.datasets.x", "doc", "r-cran-x", "x")
        self.assertIn("outdir directory for x.npy and x.json, created (default: ", outdir_help(parser))
        parser = D.argument_parser("analysis.datasets.x", "doc", "r-cran-x", "x", "a.npy and b.npy")
        self.assertIn("outdir directory for a.npy and b.npy, created (default: ", outdir_help(parser))
        self.assertEqual(parser.parse_args([]).outdir, os.path.join(D.DATA_ROOT, "x"))
        self.assertEqual([D.positive(t) for t in ("1", "96")], [1, 96])
        for text in ("0", "-3", "1.5", "x"):
            with self.assertRaisesRegex(argparse.ArgumentTypeError, "expected a positive integer, got %r" % text):
                D.positive(text)


@unittest.skipUnless(shutil.which("dpkg-deb") and shutil.which("dpkg"), "needs dpkg and dpkg-deb")
class Builders(unittest.TestCase):
    """Both commands on .debs built here with dpkg-deb from a fake tree."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)


    def check_sidecar(self, outdir, dataset, deb, shape):
        import numpy as np
        with open(os.path.join(outdir, dataset + ".json"), encoding="utf-8") as f:
            meta = json.load(f)
        npy = os.path.join(outdir, dataset + ".npy")
        with open(npy, "rb") as f:
            self.assertEqual(meta["npy_sha256"], hashlib.sha256(f.read()).hexdigest())
        with open(deb, "rb") as f:
            self.assertEqual(meta["deb_sha256"], hashlib.sha256(f.read()).hexdigest())
        x = np.load(npy)
        self.assertEqual((meta["shape"], meta["dtype"], meta["version"]), (list(shape), "float64", "9.8-7"))
        self.assertEqual((list(x.shape), x.dtype.name, x.flags["C_CONTIGUOUS"]), (list(shape), "float64", True))
        self.assertAlmostEqual(meta["nan_fraction"], float(np.isnan(x).mean()))
        return meta, x

    def test_wind(self):
        w = Writer()
        rda = w.workspace([("wind", lambda: data_frame(w, [
            ("year", lambda w: w.vector(13, "i", [78, 78])), ("month", lambda w: w.vector(13, "i", [12, 12])),
            ("day", lambda w: w.vector(13, "i", [30, 31])), ("RPT", lambda w: w.vector(14, "d", [1.5, NA_REAL])),
            ("VAL", lambda w: w.vector(14, "d", [2.5, 3.5]))], 2))])
        deb = S.build_deb(self.tmp, "r-cran-gstat", {wind.RDA: gzip.compress(rda)}, DEP5)
        out = os.path.join(self.tmp, "out")
        rc, stdout, err = S.run_main(wind, [out, "--deb", deb])
        self.assertEqual(rc, 0, err)
        self.assertIn("2 x 2, 25.00% NaN, 1978-12-30 to 1978-12-31", stdout)
        meta, x = self.check_sidecar(out, "wind", deb, (2, 2))
        self.assertEqual(x[0].tolist(), [1.5, 2.5])
        self.assertEqual((meta["nan_fraction"], meta["columns"], meta["source_files"]),
                         (0.25, ["RPT", "VAL"], [wind.RDA]))
        self.assertEqual(meta["time_span"],
                         {"first": "1978-12-30", "last": "1978-12-31", "days": 2, "consecutive": True})
        self.assertEqual(meta["licence"], D.licence(DEP5))
        self.assertEqual(meta["conversion"]["year_base"], 1900)

    def test_dj30(self):
        frame = serialized(lambda w: data_frame(w, [
            ("X.Y..m..d", lambda w: w.vector(16, None, ["1990-12-31", "1991-01-02", "1991-01-03"])),
            ("AA", lambda w: w.vector(14, "d", [10.0, 11.0, 12.1])),
            ("AXP", lambda w: w.vector(14, "d", [20.0, 20.0, 10.0]))], 3))
        data = os.path.join(self.tmp, "lazy")
        os.makedirs(data)
        rdb, rdx = write_lazy_db(data, "Rdata", [("cars2", serialized(double_vector([1.0]))), ("DowJones30", frame)])
        files = {}
        for inside, path in ((dj30.RDB, rdb), (dj30.RDX, rdx)):
            with open(path, "rb") as f:
                files[inside] = f.read()
        deb = S.build_deb(self.tmp, "r-cran-fbasics", files, FREE_FORM)
        out = os.path.join(self.tmp, "out")
        rc, stdout, err = S.run_main(dj30, [out, "--deb", deb])
        self.assertEqual(rc, 0, err)
        meta, x = self.check_sidecar(out, "dj30", deb, (2, 2))
        self.assertTrue(abs(x - [[math.log(1.1), 0.0], [math.log(1.1), math.log(0.5)]]).max() < 1e-14)
        self.assertEqual(meta["time_span"], {"first": "1991-01-02", "last": "1991-01-03", "days": 2})
        self.assertEqual(meta["licence"], D.licence(FREE_FORM))
        self.assertEqual((meta["object"], meta["columns"]), ("DowJones30", ["AA", "AXP"]))

    def test_a_package_without_the_file(self):
        deb = S.build_deb(self.tmp, "r-cran-gstat", {}, DEP5)
        rc, _, err = S.run_main(wind, [os.path.join(self.tmp, "out"), "--deb", deb])
        self.assertEqual(rc, 2)
        self.assertIn("r-cran-gstat_9.8-7_all.deb (r-cran-gstat 9.8-7) has no file %s" % wind.RDA, err)


if __name__ == "__main__":
    unittest.main()
