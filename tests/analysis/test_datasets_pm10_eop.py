"""analysis.datasets.pm10 and analysis.datasets.eop end to end on fake
packages built with dpkg-deb (no network, no apt): PM10's air.rda written
byte by byte in R's format (gaps, a station that never reports), the IERS
C04 file in its Fortran layout across UTC's steps and leap seconds, the
leap-second table, their sidecars, and the refusals of malformed input."""

import datetime
import gzip
import hashlib
import json
import math
import os
import re
import shutil
import tempfile
import unittest

import analysis_test_support as S
from test_rdata import NA_REAL, Writer

from analysis import common as C
from analysis import rdata
from analysis.datasets import debian as D
from analysis.datasets import eop, pm10

SPACETIME_COPYRIGHT = """Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: spacetime

Files: *
Copyright: 2014-2018 Edzer Pebesma,
 Benedikt Graeler
License: GPL-2+

License: GPL-2+
 On Debian systems, the complete text of the GNU General Public
 License can be found in `/usr/share/common-licenses/GPL-2'.
"""

ASTROPY_COPYRIGHT = """Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: astropy

Files: * astropy/io/fits/*
 astropy/extern/configobj/*
Copyright: 2011-2017 Astropy Developers,
 2012-2018 Ole Streicher <olebole@debian.org>
License: BSD-3-Clause
 Redistribution and use in source and binary forms, with or without
 modification, are permitted provided that the following conditions are met:

Files: cextern/expat/*
Copyright: 2001-2007 Expat maintainers
License: Expat
 Permission is hereby granted, free of charge,
"""




# -- PM10 ---------------------------------------------------------------------

def air_workspace(values, stations, dates, dim=None, date_class=("Date",)):
    """air.rda's bytes: the double matrix `air` (stations x days, column-major,
    dimnames list(stations, NULL)), the Date vector `dates` and an S4 object
    standing for spacetime's `stations`."""
    w = Writer()

    def dimnames():
        w.flags(19)
        w.int(2)
        w.vector(16, None, list(stations))
        w.int(254)  # NULL

    dim = dim or [len(stations), len(dates)]
    return w.workspace([
        ("air", lambda: w.vector(14, "d", list(values), [("dim", lambda: w.vector(13, "i", dim)),
                                                         ("dimnames", dimnames)])),
        ("dates", lambda: w.vector(14, "d", list(dates), [("class", lambda: w.vector(16, None, list(date_class)))]
                                   if date_class else ())),
        ("stations", lambda: (w.flags(25, attr=True, obj=True),
                              w.attrs([("class", lambda: w.vector(16, None, ["SpatialPoints"]))]))),
    ])


# Three stations over four days, 1998-12-30 to 1999-01-02 (days 10590-10593
# since 1970): DEC never reports, DEA misses its third day, DEB starts on the
# second. Column-major, so station changes fastest.
PM10_DAYS = [10590.0, 10591.0, 10592.0, 10593.0]
PM10_VALUES = [10.0, NA_REAL, NA_REAL,
               11.0, 21.0, NA_REAL,
               NA_REAL, 22.0, NA_REAL,
               13.0, 23.5, NA_REAL]


@unittest.skipUnless(shutil.which("dpkg-deb") and shutil.which("dpkg"), "needs dpkg and dpkg-deb")
class Builders(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.out = os.path.join(self.tmp, "out")

    def check_sidecar(self, dataset, deb, shape):
        import numpy as np
        with open(os.path.join(self.out, dataset + ".json"), encoding="utf-8") as f:
            meta = json.load(f)
        npy = os.path.join(self.out, dataset + ".npy")
        with open(npy, "rb") as f:
            self.assertEqual(meta["npy_sha256"], hashlib.sha256(f.read()).hexdigest())
        with open(deb, "rb") as f:
            self.assertEqual(meta["deb_sha256"], hashlib.sha256(f.read()).hexdigest())
        x = np.load(npy)
        self.assertEqual((meta["dataset"], meta["shape"], meta["dtype"], meta["order"], meta["version"], meta["deb"]),
                         (dataset, list(shape), "float64", "C", "9.8-7", os.path.basename(deb)))
        self.assertEqual((list(x.shape), x.dtype.name, x.flags["C_CONTIGUOUS"]), (list(shape), "float64", True))
        self.assertAlmostEqual(meta["nan_fraction"], float(np.isnan(x).mean()))
        return meta, x

    def pm10_deb(self, rda):
        return S.build_deb(self.tmp, "r-cran-spacetime", {pm10.RDA: gzip.compress(rda)}, SPACETIME_COPYRIGHT)

    def test_pm10(self):
        import numpy as np
        deb = self.pm10_deb(air_workspace(PM10_VALUES, ["DEA", "DEB", "DEC"], PM10_DAYS))
        rc, stdout, err = S.run_main(pm10, [self.out, "--deb", deb])
        self.assertEqual(rc, 0, err)
        self.assertIn("pm10.npy: 4 x 3, 50.00% NaN, 1998-12-30 to 1999-01-02 (r-cran-spacetime 9.8-7; "
                      "License: GPL-2+)", stdout)
        meta, x = self.check_sidecar("pm10", deb, (4, 3))
        nan = float("nan")
        want = np.array([[10.0, nan, nan], [11.0, 21.0, nan], [nan, 22.0, nan], [13.0, 23.5, nan]])
        self.assertTrue(np.array_equal(x, want, equal_nan=True), x)
        self.assertEqual(meta["nan_fraction"], 0.5)
        self.assertEqual((meta["columns"], meta["object"], meta["source_files"], meta["package"]),
                         (["DEA", "DEB", "DEC"], "air", [pm10.RDA], "r-cran-spacetime"))
        self.assertEqual(meta["time_span"],
                         {"first": "1998-12-30", "last": "1999-01-02", "days": 4, "consecutive": True})
        self.assertEqual(meta["first_day_with_data_per_station"], ["1998-12-30", "1998-12-31", None])
        self.assertEqual(meta["missing_fraction_per_station"], [0.25, 0.25, 1.0])
        self.assertEqual(meta["licence"], D.licence(SPACETIME_COPYRIGHT))
        self.assertEqual(meta["licence"][:2], ["Copyright: 2014-2018 Edzer Pebesma, Benedikt Graeler",
                                               "License: GPL-2+"])

    def test_pm10_refusals(self):
        cases = [
            ("a package without air.rda", None,
             re.escape("r-cran-spacetime_9.8-7_all.deb (r-cran-spacetime 9.8-7) has no file %s" % pm10.RDA)),
            ("not a matrix", air_workspace(PM10_VALUES, ["DEA", "DEB", "DEC"], PM10_DAYS, dim=[12]),
             r"air.rda: air: expected a numeric stations x days matrix, found a double vector with dim \[12\]"),
            ("a date too few", air_workspace(PM10_VALUES, ["DEA", "DEB", "DEC"], PM10_DAYS[:3], dim=[3, 4]),
             "air.rda: air: 3 x 4 matrix but 3 dates"),
            ("a value too few", air_workspace(PM10_VALUES[:11], ["DEA", "DEB", "DEC"], PM10_DAYS),
             "air.rda: air: 11 values for a 3 x 4 matrix"),
            ("a station name too few", air_workspace(PM10_VALUES, ["DEA", "DEB"], PM10_DAYS, dim=[3, 4]),
             r"air.rda: air: 3 x 4 matrix with 2 station names \(its row names\)"),
            ("dates that are not Dates", air_workspace(PM10_VALUES, ["DEA", "DEB", "DEC"], PM10_DAYS, date_class=()),
             "air.rda: expected a Date vector 'dates', found double"),
            ("dates out of order", air_workspace(PM10_VALUES, ["DEA", "DEB", "DEC"], [10590.0, 10592.0, 10591.0,
                                                                                     10593.0]),
             r"air.rda: air: the dates are not increasing at row 3 \(1998-12-31 after 1999-01-01\)"),
        ]
        for what, rda, message in cases:
            with self.subTest(what):
                sub = os.path.join(self.tmp, what.replace(" ", "_"))
                os.makedirs(sub)
                deb = S.build_deb(sub, "r-cran-spacetime", {pm10.RDA: gzip.compress(rda)} if rda else {},
                                SPACETIME_COPYRIGHT)
                out = os.path.join(sub, "out")
                rc, _, err = S.run_main(pm10, [out, "--deb", deb])
                self.assertEqual(rc, 2, err)
                self.assertRegex(err, "^analysis.datasets.pm10: error: .*" + message)
                self.assertFalse(os.path.exists(os.path.join(out, "pm10.npy")))

    # -- EOP ------------------------------------------------------------------

    def eop_deb(self, c04_text, leap_text=None):
        files = {eop.C04: c04_text.encode()}
        if leap_text is not False:
            files[eop.LEAP] = (leap_text or LEAP_SECONDS).encode()
        return S.build_deb(self.tmp, "python3-astropy", files, ASTROPY_COPYRIGHT)

    def test_eop(self):
        import numpy as np
        days = EOP_DAYS
        deb = self.eop_deb(c04_text(eop_rows(days)))
        rc, stdout, err = S.run_main(eop, [self.out, "--deb", deb])
        self.assertEqual(rc, 0, err)
        self.assertIn("eop.npy: 12 x 12, 0.00% NaN, 1968-01-30 to 1972-07-02 (python3-astropy 9.8-7; "
                      "License: BSD-3-Clause, License: Expat)", stdout)
        meta, x = self.check_sidecar("eop", deb, (12, 12))
        self.assertEqual(meta["columns"], ["PM_x", "PM_y", "UT1_TAI", "LOD", "dX_2000A", "dY_2000A", "e_PM_x",
                                           "e_PM_y", "e_UT1_UTC", "e_LOD", "e_dX_2000A", "e_dY_2000A"])
        # UT1-TAI is the smooth truth the file's UT1-UTC was made from, across
        # 1968-02-01's -0.1 s, 1972-01-01's +0.107758 s and the leap second of 1972-07-01
        self.assertLess(np.abs(x[:, 2] - [ut1_tai(d) for d in days]).max(), 1e-6)
        raw = np.array([[float(v) for v in line.split()[4:]] for line in c04_text(eop_rows(days)).splitlines()[-12:]])
        self.assertGreater(np.abs(np.diff(raw[:, 2])).max(), 0.99)  # the raw column does jump
        others = [k for k in range(12) if k != 2]
        self.assertTrue(np.array_equal(x[:, others], raw[:, others]))  # the other columns as the file has them
        tai_utc = meta["conversion"]["tai_minus_utc"]
        self.assertEqual(tai_utc["from_leap_second_file"], {"1972-01-01": 10, "1972-07-01": 11, "1973-01-01": 12})
        self.assertEqual(tai_utc["leap_second_file_expires"], "2023-06-28")
        self.assertEqual(tai_utc["before_1972-01-01"]["table"][-1],
                         {"from": "1968-02-01", "offset_s": 4.21317, "reference_MJD": 39126, "rate_s_per_day": 0.002592})
        self.assertEqual(tai_utc["range_s"][1], 11.0)
        self.assertAlmostEqual(tai_utc["range_s"][0], 4.2131700 + (39887 - 39126) * 0.002592, places=12)
        # raw = UT1_TAI + TAI-UTC, with TAI-UTC from the sidecar's table
        self.assertLess(abs(raw[-1, 2] - (x[-1, 2] + 11)), 1e-12)
        steps = meta["conversion"]["max_abs_daily_step_s"]
        self.assertGreater(steps["UT1_UTC"], 0.99)
        self.assertLess(steps["UT1_TAI"], 0.0031)
        self.assertEqual(meta["conversion"]["celestial_pole_offsets_first_nonzero"], "1971-12-31")
        self.assertEqual(meta["time_span"], {"first": "1968-01-30", "last": "1972-07-02", "days": 12,
                                             "consecutive": False})
        self.assertEqual((meta["object"], meta["source_files"]), ("EOP (IERS) 14 C04 TIME SERIES", [eop.C04, eop.LEAP]))
        self.assertEqual(meta["licence"], D.licence(ASTROPY_COPYRIGHT))
        self.assertEqual(meta["licence_of_source_files"]["astropy/utils/iers/data/eopc04_IAU2000.62-now"]["license"],
                         "BSD-3-Clause")
        details = meta["column_details"][2]
        self.assertEqual((details["name"], details["unit"], details["source_field"], details["bytes"]),
                         ("UT1_TAI", "s", "UT1_UTC", [42, 53]))
        self.assertEqual([(d["name"], d["unit"]) for d in meta["column_details"]][:4],
                         [("PM_x", "arcsec"), ("PM_y", "arcsec"), ("UT1_TAI", "s"), ("LOD", "s")])

    def test_eop_refusals(self):
        rows = eop_rows(EOP_DAYS)
        short_leap = LEAP_SECONDS.split("    41499.0")[0]  # no 1972-07-01 leap second
        cases = [
            ("a leap second missing from the table", c04_text(rows), short_leap,
             r"UT1-TAI steps by 0.9970 s from 1972-06-30 to 1972-07-01: the TAI-UTC table \(Leap_Second.dat"),
            ("another C04 release", c04_text(rows, fmt="FORMAT(2(I4),I3,2x,F10.2,2(F11.6))"), None,
             r"eopc04_IAU2000.62-now: expected the layout FORMAT\(3\(I4\).* in its header, found "
             r"FORMAT\(2\(I4\),I3,2x,F10.2,2\(F11.6\)\): another C04 release\?"),
            ("a field that is not a number", c04_text(rows, edit=(3, 60, "x")), None,
             r"eopc04_IAU2000.62-now line 18: LOD \(bytes 54-65\) is '0.00x0000', not a number"),
            ("a NaN field", c04_text(rows, edit=(0, 19, "        nan")), None,
             r"line 15: PM_x \(bytes 20-30\) is 'nan', not a number"),
            ("an MJD that is not the date's", c04_text(rows, edit=(1, 18, "0")), None,
             r"line 16: MJD 39880 is not that of 1968-01-31 \(39886\)"),
            ("a short line", c04_text(rows, edit=(2, 154, "")), None,
             "line 17: 154 characters, expected 155"),
            ("dates out of order", c04_text([rows[1], rows[0]] + rows[2:]), None,
             r"eopc04_IAU2000.62-now: the dates are not increasing at row 2 \(1968-01-30 after 1968-01-31\)"),
            ("a date before 1960", c04_text(eop_rows([datetime.date(1959, 12, 31)])), None,
             "1959-12-31: no TAI-UTC before 1960-01-01"),
            ("no data lines", "\n".join(C04_HEADER) + "\n", None, "eopc04_IAU2000.62-now: no data lines"),
            ("a leap-second table from elsewhere", c04_text(rows), LEAP_SECONDS.replace("    41317.0    1  1 1972       10\n", ""),
             "Leap_Second.dat: expected the leap-second table to start at 1972-01-01 with TAI-UTC 10 s, "
             "found 1972-07-01 11 s"),
            ("a leap second of two seconds", c04_text(rows), LEAP_SECONDS.replace("1973       12", "1973       13"),
             "Leap_Second.dat line 16: 1973-01-01 TAI-UTC 13 s does not follow 1972-07-01 11 s by one second"),
            ("a leap-second line with a wrong MJD", c04_text(rows), LEAP_SECONDS.replace("41499.0", "41500.0"),
             r"Leap_Second.dat line 15: MJD 41500 is not that of 1972-07-01 \(41499\)"),
            ("a package without Leap_Second.dat", c04_text(rows), False,
             "python3-astropy_9.8-7_all.deb \\(python3-astropy 9.8-7\\) has no file " + eop.LEAP),
        ]
        for what, c04, leap, message in cases:
            with self.subTest(what):
                sub = os.path.join(self.tmp, what.replace(" ", "_"))
                os.makedirs(sub)
                files = {eop.C04: c04.encode()}
                if leap is not False:
                    files[eop.LEAP] = (leap or LEAP_SECONDS).encode()
                deb = S.build_deb(sub, "python3-astropy", files, ASTROPY_COPYRIGHT)
                out = os.path.join(sub, "out")
                rc, _, err = S.run_main(eop, [out, "--deb", deb])
                self.assertEqual(rc, 2, err)
                self.assertRegex(err, "^analysis.datasets.eop: error: .*" + message)
                self.assertFalse(os.path.exists(os.path.join(out, "eop.npy")))


# -- the fake C04 and leap-second files ----------------------------------------------

C04_HEADER = [
    "               EARTH ORIENTATION PARAMETER (EOP) PRODUCT CENTER CENTER (PARIS OBSERVATORY)",
    "                      INTERNATIONAL EARTH ROTATION AND REFERENCE SYSTEMS SERVICE",
    "                                    EOP (IERS) 14 C04 TIME SERIES                 ",
    "               Description: https://hpiers.obspm.fr/eoppc/eop/eopc04/C04.guide.pdf",
    "                            contact: christian.bizouard@obspm.fr",
    "",
    "  ",
    "             %s",
    "#" * 82,
    "  ",
    "      Date      MJD      x          y        UT1-UTC       LOD         dX        dY        x Err     y Err   "
    "UT1-UTC Err  LOD Err     dX Err       dY Err  ",
    '                         "          "           s           s          "         "           "          "     '
    '     s         s            "           "',
    "     (0h UTC)",
    "",
]
LINE = "%4d%4d%4d%7d%11.6f%11.6f%12.7f%12.7f%11.6f%11.6f%11.6f%11.6f%11.7f%11.7f%12.6f%12.6f"
# Three runs of four days: over UTC's -0.1 s step of 1968-02-01, the end of
# the rubber seconds on 1972-01-01 and the first leap second, 1972-07-01.
EOP_DAYS = [datetime.date(y, m, d) + datetime.timedelta(days=k)
            for y, m, d in ((1968, 1, 30), (1971, 12, 30), (1972, 6, 29)) for k in range(4)]
LOD = 0.003  # s: UT1-TAI falls by 3 ms a day


def mjd(day):
    return (day - datetime.date(1858, 11, 17)).days


def ut1_tai(day):
    return -5.0 - LOD * (mjd(day) - 39885)


def tai_utc(day):
    """TAI-UTC written out by hand for the test's days (not eop's table)."""
    if day >= datetime.date(1972, 7, 1):
        return 11.0
    if day >= datetime.date(1972, 1, 1):
        return 10.0
    if day >= datetime.date(1968, 2, 1):
        return 4.2131700 + (mjd(day) - 39126) * 0.002592
    return 4.3131700 + (mjd(day) - 39126) * 0.002592


def eop_rows(days):
    """(day, 12 numbers) per day: UT1-UTC = UT1-TAI + TAI-UTC; dX zero
    before 1971-12-31 and dY before 1972-01-01 (C04 has both zero before 1984)."""
    rows = []
    for k, day in enumerate(days):
        dx, dy = day >= datetime.date(1971, 12, 31), day >= datetime.date(1972, 1, 1)
        rows.append((day, [0.1 + 0.001 * k, 0.3 - 0.002 * k, ut1_tai(day) + tai_utc(day), LOD,
                           0.0002 * dx, -0.0001 * dy, 0.03, 0.03, 0.002, 0.0014, 0.004774, 0.002]))
    return rows


def c04_text(rows, fmt=eop.FORMAT, edit=None):
    """The C04 file: its header (layout fmt), then one line per row; edit =
    (row, byte, text) replaces the row's line from that 0-based byte on by
    text (to its end if text is empty)."""
    lines = [h % fmt if "%s" in h else h for h in C04_HEADER]
    for k, (day, values) in enumerate(rows):
        line = LINE % ((day.year, day.month, day.day, mjd(day)) + tuple(values))
        if edit and edit[0] == k:
            line = line[:edit[1]] + edit[2] + (line[edit[1] + len(edit[2]):] if edit[2] else "")
        lines.append(line)
    return "\n".join(lines) + "\n"


LEAP_SECONDS = """#  Value of TAI-UTC in second valid beetween the initial value until
#  the epoch given on the next line. The last line reads that NO
#  leap second was introduced since the corresponding date
#  Updated through IERS Bulletin 64 issued in July 2022
#
#
#  File expires on 28 June 2023
#
#
#    MJD        Date        TAI-UTC (s)
#           day month year
#    ---    --------------   ------
#
    41317.0    1  1 1972       10
    41499.0    1  7 1972       11
    41683.0    1  1 1973       12
"""


class Pieces(unittest.TestCase):
    """eop's readers and helpers on their own."""

    def test_the_pre_1972_table_meets_the_leap_seconds(self):
        # TAI-UTC just before 1972-01-01 by the 1960-1971 formula is the
        # published 9.892242 s; on it, 10 s.
        steps = [(datetime.date(1972, 1, 1), 10)]
        got = eop.tai_minus_utc([datetime.date(1971, 12, 31), datetime.date(1972, 1, 1), datetime.date(1962, 1, 1),
                                 datetime.date(1963, 11, 1)], steps)
        self.assertAlmostEqual(got[0], 9.892242 - 0.002592, places=9)
        self.assertEqual(got[1], 10.0)
        self.assertAlmostEqual(got[2], 1.8458580, places=12)
        self.assertAlmostEqual(got[3], 1.9458580 + (38334 - 37665) * 0.0011232, places=12)

    def test_c04_values_by_byte_range(self):
        values, days, series = eop.read_c04(c04_text(eop_rows(EOP_DAYS[:2])))
        self.assertEqual(series, "EOP (IERS) 14 C04 TIME SERIES")
        self.assertEqual(days, EOP_DAYS[:2])
        self.assertEqual(values.shape, (2, 12))
        self.assertEqual(values[1, :2].tolist(), [0.101, 0.298])
        self.assertAlmostEqual(values[0, 2], ut1_tai(EOP_DAYS[0]) + tai_utc(EOP_DAYS[0]), places=7)
        self.assertEqual(values[0, 6:].tolist(), [0.03, 0.03, 0.002, 0.0014, 0.004774, 0.002])
        # fields that touch (no blank between them) are still read by their bytes
        line = LINE % (1999, 1, 1, 51179, -123.456789, -123.456789, -123.4567891, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        values, _, _ = eop.read_c04(c04_text([]) + line + "\n")
        self.assertEqual(values[0, :3].tolist(), [-123.456789, -123.456789, -123.4567891])

    def test_the_licence_stanza_of_a_file(self):
        text = ASTROPY_COPYRIGHT + "\nFiles: astropy/utils/iers/data/*\nCopyright: IERS\nLicense: public-domain\n"
        self.assertEqual(eop.stanza_licence(text, "astropy/utils/iers/data/Leap_Second.dat"),
                         {"files": "astropy/utils/iers/data/*", "license": "public-domain"})
        self.assertEqual(eop.stanza_licence(text, "cextern/expat/lib/xmlparse.c"),
                         {"files": "cextern/expat/*", "license": "Expat"})
        self.assertEqual(eop.stanza_licence(ASTROPY_COPYRIGHT, "astropy/utils/iers/data/Leap_Second.dat")["license"],
                         "BSD-3-Clause")
        self.assertIsNone(eop.stanza_licence("Files: debian/*\nLicense: GPL-2+\n", "astropy/x.py"))

    def test_pm10_missing_values_are_nan(self):
        objs = rdata.loads(air_workspace(PM10_VALUES, ["DEA", "DEB", "DEC"], PM10_DAYS))
        x, stations, days = pm10.stations_by_day(objs)
        self.assertEqual(int(sum(math.isnan(v) for v in x.ravel())), 6)
        with self.assertRaisesRegex(C.AnalysisError, r"found no such object \(the workspace has: dates\)"):
            pm10.stations_by_day({"dates": objs["dates"]})


if __name__ == "__main__":
    unittest.main()
