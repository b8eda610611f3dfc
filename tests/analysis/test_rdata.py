"""analysis.rdata: R workspaces written here byte by byte in R's XDR format
(vectors with attributes, NA in each type, a symbol referenced twice, an S4
object, each compression R uses), and refusals of what is not one."""

import bz2
import gzip
import lzma
import math
import os
import re
import struct
import unittest

import analysis_test_support as S

from analysis import common as C
from analysis import rdata

NA_REAL = struct.unpack(">d", bytes.fromhex("7ff00000000007a2"))[0]


class Writer:
    """Just enough of R's serialize() (version 2) for the tests."""

    def __init__(self):
        self.out, self.symbols = bytearray(), {}

    def int(self, v):
        self.out += struct.pack(">i", v)

    def flags(self, t, attr=False, tag=False, obj=False):
        self.int(t | (1 << 8 if obj else 0) | (1 << 9 if attr else 0) | (1 << 10 if tag else 0))

    def charsxp(self, s):
        if s is None:
            self.int(9)
            self.int(-1)
            return
        b = s.encode()
        self.int(9 | (1 << 15))  # UTF-8 flag in the levels, ignored by the reader
        self.int(len(b))
        self.out += b

    def symbol(self, name):
        if name in self.symbols:  # REFSXP with the index packed in the flags
            self.int(255 | (self.symbols[name] << 8))
            return
        self.symbols[name] = len(self.symbols) + 1
        self.int(1)
        self.charsxp(name)

    def attrs(self, pairs):
        for name, writer in pairs:
            self.flags(2, tag=True)
            self.symbol(name)
            writer()
        self.int(254)

    def vector(self, t, fmt, values, attrs=()):
        self.flags(t, attr=bool(attrs))
        self.int(len(values))
        if t == 16:
            for v in values:
                self.charsxp(v)
        else:
            self.out += struct.pack(">%d%s" % (len(values), fmt), *values)
        if attrs:
            self.attrs(attrs)

    def workspace(self, items):
        self.out += b"RDX2\nX\n"
        self.int(2)
        self.int(0x040200)
        self.int(0x020300)
        self.attrs(items)
        return bytes(self.out)


def sample_workspace():
    w = Writer()
    return w.workspace([
        ("x", lambda: w.vector(14, "d", [1.0, NA_REAL, float("nan"), 4.0],
                               [("dim", lambda: w.vector(13, "i", [2, 2]))])),
        ("i", lambda: w.vector(13, "i", [7, -(2 ** 31)], [("dim", lambda: w.vector(13, "i", [1, 2]))])),
        ("s", lambda: w.vector(16, None, ["a", None])),
        ("p", lambda: (w.flags(25, attr=True, obj=True),
                       w.attrs([("coords", lambda: w.vector(14, "d", [0.5])),
                                ("class", lambda: w.vector(16, None, ["SpatialPoints"]))]))),
    ])


class RData(unittest.TestCase):
    def test_vectors_attributes_and_missing_values(self):
        for pack in (lambda b: b, gzip.compress, bz2.compress, lzma.compress):
            objs = rdata.loads(pack(sample_workspace()))
            self.assertEqual(list(objs), ["x", "i", "s", "p"])
            x = objs["x"]
            self.assertEqual(x.rtype, "double")
            self.assertEqual(x.attrs["dim"], [2, 2])
            self.assertEqual((x[0], x[3]), (1.0, 4.0))
            self.assertTrue(math.isnan(x[1]) and math.isnan(x[2]))  # NA_real_ and NaN: both missing
            self.assertEqual(list(objs["i"]), [7, None])
            self.assertEqual(objs["i"].attrs["dim"], [1, 2])  # the symbol "dim" read back through a reference
            self.assertEqual(list(objs["s"]), ["a", None])
            p = objs["p"]
            self.assertEqual((p.rtype, list(p.attrs["coords"]), list(p.attrs["class"])),
                             ("S4", [0.5], ["SpatialPoints"]))
            self.assertTrue(rdata.is_missing(x[1]) and rdata.is_missing(objs["i"][1]))
            self.assertFalse(rdata.is_missing(x[0]))

    def test_special_items_by_r_type_codes(self):
        # serialize.c: BASENAMESPACE_SXP 250 and the other special values
        # read as NULL; PACKAGESXP 248 and NAMESPACESXP 249 as a namespace
        # (0, then its name strings), which a later REFSXP can point at.
        w = Writer()

        def namespace(code, name):
            w.int(code)
            w.int(0)
            w.int(1)
            w.charsxp(name)
        raw = w.workspace([
            ("base", lambda: w.int(250)),
            ("global", lambda: w.int(253)),
            ("empty", lambda: w.int(242)),
            ("pkg", lambda: namespace(248, "stats")),
            ("ns", lambda: namespace(249, "utils")),
            # References count symbols and namespaces in the order read: the
            # tags base, global, empty, pkg (1-4), then the stats namespace (5).
            ("again", lambda: w.int(255 | (5 << 8))),
        ])
        objs = rdata.loads(raw)
        self.assertEqual((objs["base"], objs["global"], objs["empty"]), (None, None, None))
        self.assertEqual((objs["pkg"].rtype, objs["pkg"].fields), ("namespace", {"info": ["stats"]}))
        self.assertEqual((objs["ns"].rtype, objs["ns"].fields), ("namespace", {"info": ["utils"]}))
        self.assertIs(objs["again"], objs["pkg"])

    def test_refusals(self):
        with self.assertRaisesRegex(rdata.RDataError, "not an R workspace"):
            rdata.loads(b"PK\x03\x04 a zip file")
        with self.assertRaisesRegex(rdata.RDataError, "truncated"):
            rdata.loads(sample_workspace()[:-20])
        ascii_format = b"RDA2\nA\n"
        with self.assertRaisesRegex(rdata.RDataError, "not an R workspace"):
            rdata.loads(ascii_format)
        with self.assertRaisesRegex(rdata.RDataError, "only R's XDR"):
            rdata.loads(b"RDX2\nA\n2\n")


class Pm10(unittest.TestCase):
    """analysis.datasets.pm10's conversion of air.rda (its builder end to
    end: test_datasets_pm10_eop)."""

    def test_one_row_per_day_from_the_column_major_matrix(self):
        from analysis.datasets import pm10
        air = rdata.RVector([10.0, 20.0, 11.0, NA_REAL, 12.0, 22.0], "double",
                            {"dim": [2, 3], "dimnames": [["DEA", "DEB"], None]})
        dates = rdata.RVector([10227.0, 10228.0, 10229.0], "double", {"class": ["Date"]})
        x, stations, days = pm10.stations_by_day({"air": air, "dates": dates})
        self.assertEqual(stations, ["DEA", "DEB"])
        self.assertEqual([str(d) for d in days], ["1998-01-01", "1998-01-02", "1998-01-03"])
        self.assertEqual((x.shape, x.dtype.name), ((3, 2), "float64"))
        self.assertEqual(x[0].tolist(), [10.0, 20.0])
        self.assertEqual(x[2].tolist(), [12.0, 22.0])
        self.assertTrue(x[1, 0] == 11.0 and math.isnan(x[1, 1]))
        with self.assertRaisesRegex(C.AnalysisError, r"not increasing at row 2 \(1970-01-03 after 1970-01-04\)"):
            pm10.stations_by_day({"air": air, "dates": rdata.RVector([3.0, 2.0, 1.0], "double", {"class": ["Date"]})})

    def test_the_deck_reads_what_the_builder_writes(self):
        from analysis.datasets import debian as D
        from analysis.datasets import pm10
        with open(os.path.join(S.REPO, "inputs", "real", "pm10.yaml"), encoding="utf-8") as f:
            deck = f.read()
        paths = re.findall(r"^  paths: \[(.*)\]$", deck, flags=re.M)
        self.assertEqual(paths, ["../real_data/pm10/pm10.npy"])
        # source.paths are relative to the deck's directory, inputs/real/; the builder's default OUTDIR
        self.assertEqual(os.path.normpath(os.path.join(S.REPO, "inputs", "real", paths[0])),
                         os.path.join(D.DATA_ROOT, pm10.DATASET, pm10.DATASET + ".npy"))
        self.assertIn("#   /usr/bin/python3 -m analysis.datasets.pm10\n", deck)
        self.assertIn("inputs/real_data/pm10", pm10.__doc__)
        self.assertIn("inputs/real/pm10.yaml", pm10.__doc__)
