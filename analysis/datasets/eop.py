#!/usr/bin/python3
"""The EOP stream: the IERS C04 series of Earth orientation parameters, one
row per day since 1962-01-01 (22,248 days to 2022-11-29 in astropy 5.2.1),
as a .npy file the mini-app reads (source.type: npy).

Debian's python3-astropy ships, for astropy.utils.iers (IERS-B), the IERS
Earth Orientation Centre's (Paris Observatory) combined series
astropy/utils/iers/data/eopc04_IAU2000.62-now ("EOP (IERS) 14 C04", its
header says; described byte by byte in ReadMe.eopc04_IAU2000 beside it) and
the leap-second table Leap_Second.dat (TAI-UTC from 1972-01-01, with its
expiry date). Each C04 line is a day at 0h UTC: year, month, day, MJD, then
12 numbers: the pole x and y (arcsec), UT1-UTC (s), the excess length of day
LOD (s), the celestial pole offsets dX and dY with respect to IAU 2000A
nutation (arcsec), and the errors of these six. This command fetches the
package (the .deb in --cache, else apt-get download into it, or the .deb
given with --deb), unpacks it with dpkg -x into a temporary directory, reads
both files and writes into OUTDIR (default inputs/real_data/eop)

    eop.npy    float64, shape (22248, 12): one row per day in date order;
               columns PM_x, PM_y, UT1_TAI, LOD, dX_2000A, dY_2000A,
               e_PM_x, e_PM_y, e_UT1_UTC, e_LOD, e_dX_2000A, e_dY_2000A in
               the file's units (arcsec, s); the date columns (year, month,
               day, MJD) are dropped: the row is the day
    eop.json   provenance: the package, its version and sha256, the licence
               and copyright lines of its copyright file (and the stanza
               that covers the data files), the conversion, each column's
               name, unit and source field, the TAI-UTC table used, the
               dates, the .npy's sha256 and NaN fraction

Leap seconds. UT1-UTC is the Earth's rotation angle (UT1) against UTC, a
clock stepped by convention: by a whole second at each of the 28 leap
seconds since 1972, and before by steps of 0.05-0.1 s (the last one
+0.107758 s on 1972-01-01) and changes of rate. The steps are bookkeeping,
not geophysics, yet in the raw column they are its largest feature (a
sawtooth of +-0.9 s against millisecond daily changes): a subspace tracker
would spend a direction on them and flag each as a surprise. The third
column is therefore UT1-TAI = UT1-UTC - (TAI-UTC), UT1 against uniform
atomic time, which is continuous: its daily change is minus the LOD column
(within the series' noise). TAI-UTC comes from the package's Leap_Second.dat
from 1972-01-01 and, before, from the published 1960-1971 table (USNO
tai-utc.dat, ERFA's eraDat): TAI-UTC = offset + (MJD - reference MJD) x
rate, written below as PRE_1972. Differencing UT1-UTC instead would also
remove the jumps but give a copy of -LOD and drop the accumulated rotation
angle. UT1-TAI keeps a real trend (about -1.8 s in 1962, -37 s in 2022: the
day longer than 86,400 SI seconds). The raw value is exactly UT1_TAI +
(TAI-UTC) with the table in the sidecar; e_UT1_UTC is also UT1-TAI's error
(TAI-UTC is exact). The builder refuses a result that still steps by more
than STEP_LIMIT s in a day (a leap second the table lacks). dX and dY are 0
in the file before 1984 (not estimated then); they are kept as the file has
them and the sidecar gives the first day they are not. The columns' scales
differ by orders of magnitude (errors of 1e-5 arcsec, UT1-TAI of tens of
seconds): a run may want them standardized first.

The data are never committed (inputs/real_data/ is ignored by git):

    /usr/bin/python3 -m analysis.datasets.eop [OUTDIR] [--deb PATH] [--cache DIR]
"""

import datetime
import fnmatch
import os
import re
import sys

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from analysis import common as C
from analysis.datasets import debian as D

DATASET = "eop"
PACKAGE = "python3-astropy"
SITE = "usr/lib/python3/dist-packages/"
DATA = SITE + "astropy/utils/iers/data/"
C04 = DATA + "eopc04_IAU2000.62-now"
LEAP = DATA + "Leap_Second.dat"
# The C04 file's header states its Fortran layout; the fields below are that
# layout's byte ranges (1-based, inclusive), as ReadMe.eopc04_IAU2000 gives them.
FORMAT = "FORMAT(3(I4),I7,2(F11.6),2(F12.7),2(F11.6),2(F11.6),2(F11.7),2(F12.6))"
DATE_FIELDS = [("year", 1, 4), ("month", 5, 8), ("day", 9, 12), ("MJD", 13, 19)]
# (label, first byte, last byte, unit, meaning), the ReadMe's labels
FIELDS = [
    ("PM_x", 20, 30, "arcsec", "polar motion x"),
    ("PM_y", 31, 41, "arcsec", "polar motion y"),
    ("UT1_UTC", 42, 53, "s", "UT1-UTC"),
    ("LOD", 54, 65, "s", "length of day minus 86400 s"),
    ("dX_2000A", 66, 76, "arcsec", "celestial pole offset dX wrt IAU 2000A nutation"),
    ("dY_2000A", 77, 87, "arcsec", "celestial pole offset dY wrt IAU 2000A nutation"),
    ("e_PM_x", 88, 98, "arcsec", "error in PM_x"),
    ("e_PM_y", 99, 109, "arcsec", "error in PM_y"),
    ("e_UT1_UTC", 110, 120, "s", "error in UT1-UTC (and in UT1-TAI)"),
    ("e_LOD", 121, 131, "s", "error in LOD"),
    ("e_dX_2000A", 132, 143, "arcsec", "error in dX_2000A"),
    ("e_dY_2000A", 144, 155, "arcsec", "error in dY_2000A"),
]
LINE_LENGTH = FIELDS[-1][2]
UT1 = "UT1_UTC"
UT1_COLUMN = "UT1_TAI"
MJD_EPOCH = datetime.date(1858, 11, 17)
# TAI-UTC before leap seconds, 1960-1971 (USNO tai-utc.dat, ERFA's eraDat):
# from each date on, offset + (MJD - reference MJD) * rate seconds.
PRE_1972 = [
    ("1960-01-01", 1.4178180, 37300, 0.0012960),
    ("1961-01-01", 1.4228180, 37300, 0.0012960),
    ("1961-08-01", 1.3728180, 37300, 0.0012960),
    ("1962-01-01", 1.8458580, 37665, 0.0011232),
    ("1963-11-01", 1.9458580, 37665, 0.0011232),
    ("1964-01-01", 3.2401300, 38761, 0.0012960),
    ("1964-04-01", 3.3401300, 38761, 0.0012960),
    ("1964-09-01", 3.4401300, 38761, 0.0012960),
    ("1965-01-01", 3.5401300, 38761, 0.0012960),
    ("1965-03-01", 3.6401300, 38761, 0.0012960),
    ("1965-07-01", 3.7401300, 38761, 0.0012960),
    ("1965-09-01", 3.8401300, 38761, 0.0012960),
    ("1966-01-01", 4.3131700, 39126, 0.0025920),
    ("1968-02-01", 4.2131700, 39126, 0.0025920),
]
LEAP_START = (datetime.date(1972, 1, 1), 10)  # where Leap_Second.dat must begin
STEP_LIMIT = 0.025  # s per day: UT1-TAI moves by |LOD| < 5 ms a day; UTC stepped by 0.05 s or more


def mjd(day):
    return (day - MJD_EPOCH).days


def read_c04(text, name=os.path.basename(C04)):
    """(values, days, series) of the C04 file's text: values has one row per
    data line and one column per FIELDS entry, days the lines' dates (their
    MJD checked against them), series the header's title line."""
    np = D.numpy()
    lines = text.splitlines()
    start = next((k for k, line in enumerate(lines) if line[:4].isdigit()), None)
    if start is None:
        raise C.AnalysisError("%s: no data lines (a line that starts with a 4-digit year)" % name)
    header = [line.strip() for line in lines[:start]]
    if FORMAT not in header:
        found = [h for h in header if h.startswith("FORMAT")]
        raise C.AnalysisError("%s: expected the layout %s in its header, found %s: another C04 release?" % (
            name, FORMAT, found[0] if found else "no FORMAT line"))
    series = next((h for h in header if "C04" in h), None)
    rows, days = [], []
    for number, line in enumerate(lines[start:], start + 1):
        if not line.strip():
            continue
        if len(line.rstrip()) != LINE_LENGTH:
            raise C.AnalysisError("%s line %d: %d characters, expected %d (%s)" % (
                name, number, len(line.rstrip()), LINE_LENGTH, FORMAT))
        try:
            year, month, dom, mjd_field = (int(line[a - 1:b]) for _, a, b in DATE_FIELDS)
            day = datetime.date(year, month, dom)
        except ValueError:
            raise C.AnalysisError("%s line %d: no valid date in %r" % (name, number, line[:19])) from None
        if mjd_field != mjd(day):
            raise C.AnalysisError("%s line %d: MJD %d is not that of %s (%d)" % (
                name, number, mjd_field, day, mjd(day)))
        row = []
        for label, a, b, _, _ in FIELDS:
            field = line[a - 1:b]
            try:
                v = float(field)
            except ValueError:
                v = None
            if v is None or not np.isfinite(v):
                raise C.AnalysisError("%s line %d: %s (bytes %d-%d) is %r, not a number" % (
                    name, number, label, a, b, field.strip()))
            row.append(v)
        rows.append(row)
        days.append(day)
    D.check_increasing(days, name)
    return np.array(rows, dtype=np.float64), days, series


def read_leap_seconds(text, name=os.path.basename(LEAP)):
    """(steps, expires) of Leap_Second.dat's text: steps is [(date, TAI-UTC
    in s)] from each date on, expires the date its header gives (or None)."""
    steps = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            m, dom, month, year, tai_utc = line.split()
            day = datetime.date(int(year), int(month), int(dom))
            m, tai_utc = float(m), int(tai_utc)
        except ValueError:
            raise C.AnalysisError("%s line %d: %r is not 'MJD day month year TAI-UTC'" % (
                name, number, line.strip())) from None
        if m != mjd(day):
            raise C.AnalysisError("%s line %d: MJD %g is not that of %s (%d)" % (name, number, m, day, mjd(day)))
        if steps and (day <= steps[-1][0] or tai_utc != steps[-1][1] + 1):
            raise C.AnalysisError("%s line %d: %s TAI-UTC %d s does not follow %s %d s by one second" % (
                name, number, day, tai_utc, steps[-1][0], steps[-1][1]))
        steps.append((day, tai_utc))
    if not steps or steps[0] != LEAP_START:
        raise C.AnalysisError("%s: expected the leap-second table to start at %s with TAI-UTC %d s, found %s" % (
            name, LEAP_START[0], LEAP_START[1], "%s %d s" % steps[0] if steps else "no entries"))
    expiry = re.search(r"File expires on\s+(\d{1,2} \w+ \d{4})", text)
    expires = datetime.datetime.strptime(expiry.group(1), "%d %B %Y").date() if expiry else None
    return steps, expires


def tai_minus_utc(days, steps):
    """TAI-UTC in seconds at 0h UTC of each day: PRE_1972 before the first
    leap-second step, the steps from it on."""
    np = D.numpy()
    out = np.empty(len(days))
    pre = [(datetime.date.fromisoformat(d), offset, ref, rate) for d, offset, ref, rate in PRE_1972]
    for k, day in enumerate(days):
        if day >= steps[0][0]:
            out[k] = [v for d, v in steps if d <= day][-1]
        elif day >= pre[0][0]:
            _, offset, ref, rate = [p for p in pre if p[0] <= day][-1]
            out[k] = offset + (mjd(day) - ref) * rate
        else:
            raise C.AnalysisError("%s: no TAI-UTC before %s" % (day, pre[0][0]))
    return out


def continuous_ut1(values, days, steps):
    """(x, tai_utc): values with UT1-UTC replaced by UT1-TAI, refused if
    it still steps by more than STEP_LIMIT s a day."""
    np = D.numpy()
    k = [f[0] for f in FIELDS].index(UT1)
    tai_utc = tai_minus_utc(days, steps)
    x = np.array(values, dtype=np.float64)
    x[:, k] -= tai_utc
    gaps = np.array([(b - a).days for a, b in zip(days, days[1:])], dtype=np.float64)
    step = np.abs(np.diff(x[:, k]))
    bad = np.nonzero(step > STEP_LIMIT * gaps)[0]
    if len(bad):
        i = int(bad[0])
        raise C.AnalysisError("UT1-TAI steps by %.4f s from %s to %s: the TAI-UTC table (%s, and %s before %s) "
                              "does not match the C04 file's UTC there (a leap second missing?)" % (
                                  x[i + 1, k] - x[i, k], days[i], days[i + 1], os.path.basename(LEAP),
                                  "the 1960-1971 table", steps[0][0]))
    return x, tai_utc


def max_daily_step(column, days):
    """The largest |change| of column from one day to the next (over rows
    one day apart), 0 if there are none."""
    np = D.numpy()
    one_day = np.array([(b - a).days == 1 for a, b in zip(days, days[1:])], dtype=bool)
    steps = np.abs(np.diff(column))[one_day]
    return float(steps.max()) if len(steps) else 0.0


def stanza_licence(copyright_text, path):
    """The License: of the machine-readable copyright file's last Files:
    stanza whose patterns match `path` (a path in the source tree), with the
    Files: line, or None."""
    found = None
    for stanza in re.split(r"\n\s*\n", copyright_text):
        fields = re.findall(r"^([A-Za-z-]+):[ \t]*(.*(?:\n[ \t].*)*)", stanza, flags=re.M)
        fields = {k: " ".join(v.split()) for k, v in fields}
        if "Files" in fields and any(fnmatch.fnmatchcase(path, p) for p in fields["Files"].split()):
            found = {"files": fields["Files"], "license": fields.get("License", "").split(" ")[0] or None}
    return found


def main(argv=None):
    args = D.argument_parser("analysis.datasets.eop", __doc__, PACKAGE, DATASET).parse_args(argv)
    with D.unpacked(PACKAGE, args.deb, args.cache) as pkg:
        texts = {}
        for inside in (C04, LEAP, pkg.copyright_file):
            with open(pkg.path(inside), encoding="utf-8", errors="replace") as f:
                texts[inside] = f.read()
    values, days, series = read_c04(texts[C04])
    steps, expires = read_leap_seconds(texts[LEAP])
    x, tai_utc = continuous_ut1(values, days, steps)
    np = D.numpy()
    labels = [f[0] for f in FIELDS]
    k = labels.index(UT1)
    columns = [UT1_COLUMN if label == UT1 else label for label in labels]
    offsets = np.nonzero((values[:, labels.index("dX_2000A")] != 0) | (values[:, labels.index("dY_2000A")] != 0))[0]
    npy, meta = D.write_dataset(args.outdir, DATASET, x, pkg, {
        "source_files": [C04, LEAP], "object": series,
        "licence_of_source_files": {p[len(SITE):]: stanza_licence(texts[pkg.copyright_file], p[len(SITE):])
                                    for p in (C04, LEAP)},
        "conversion": {
            "rows": "one per day (0h UTC), in date order", "layout": FORMAT,
            "dropped_columns": [f[0] for f in DATE_FIELDS],
            "UT1": "column %s is UT1-TAI = UT1_UTC - (TAI-UTC): continuous across leap seconds and the "
                   "1962-1971 UTC steps; UT1_UTC = %s + tai_minus_utc" % (UT1_COLUMN, UT1_COLUMN),
            "tai_minus_utc": {"from_leap_second_file": {str(d): v for d, v in steps},
                              "leap_second_file_expires": str(expires) if expires else None,
                              "before_%s" % steps[0][0]: {
                                  "formula": "offset + (MJD - reference_MJD) * rate, from each date on",
                                  "source": "USNO tai-utc.dat (ERFA eraDat)",
                                  "table": [dict(zip(("from", "offset_s", "reference_MJD", "rate_s_per_day"), p))
                                            for p in PRE_1972]},
                              "range_s": [float(tai_utc.min()), float(tai_utc.max())]},
            "max_abs_daily_step_s": {UT1: max_daily_step(values[:, k], days),
                                     UT1_COLUMN: max_daily_step(x[:, k], days)},
            "celestial_pole_offsets_first_nonzero": str(days[offsets[0]]) if len(offsets) else None,
            "missing": "none: the file has a number in every field (dX_2000A, dY_2000A are 0 before they "
                       "were estimated, kept as 0)"},
        "columns": columns,
        "column_details": [{"name": name, "unit": unit, "source_field": label, "bytes": [a, b], "meaning": (
            "UT1-TAI (from the file's UT1-UTC minus TAI-UTC)" if label == UT1 else meaning)}
            for name, (label, a, b, unit, meaning) in zip(columns, FIELDS)],
        "time_span": {"first": str(days[0]), "last": str(days[-1]), "days": len(days),
                      "consecutive": (days[-1] - days[0]).days + 1 == len(days)},
    })
    print(D.summary("analysis.datasets.eop", npy, meta))
    return 0


if __name__ == "__main__":
    sys.exit(C.main_wrapper("analysis.datasets.eop", main, sys.argv[1:]))
