#!/usr/bin/python3
"""The wind stream: daily mean wind speeds at 12 Irish stations, 1961-01-01
to 1978-12-31 (6,574 days, none missing), as a .npy file the mini-app reads
(source.type: npy).

Debian's r-cran-gstat (GPL-2+) ships data/wind.rda, the data frame `wind`
of Haslett and Raftery (1989), "Space-time modelling with long-memory
dependence: assessing Ireland's wind power resource", Applied Statistics 38,
1-50 (from Adrian Raftery, imported to R by Edzer Pebesma, as gstat's ?wind
says): columns year (minus 1900), month, day, then one column per station
(RPT, VAL, ROS, KIL, SHA, BIR, DUB, CLA, MUL, CLO, BEL, MAL), the daily
average wind speed in knots. This command fetches the package (the .deb in
--cache, else apt-get download into it, or the .deb given with --deb),
unpacks it with dpkg -x into a temporary directory, reads the workspace with
analysis/rdata.py and writes into OUTDIR (default inputs/real_data/wind)

    wind.npy   float64, shape (6574, 12): one row per day in date order, one
               column per station in the data frame's order, knots
    wind.json  provenance: the package, its version and sha256, the licence
               and copyright lines of its copyright file, the conversion, the
               station codes, the dates, the .npy's sha256 and NaN fraction

The data are never committed (inputs/real_data/ is ignored by git):

    /usr/bin/python3 -m analysis.datasets.wind [OUTDIR] [--deb PATH] [--cache DIR]
"""

import datetime
import os
import sys

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from analysis import common as C
from analysis import rdata
from analysis.datasets import debian as D

DATASET = "wind"
PACKAGE = "r-cran-gstat"
RDA = "usr/lib/R/site-library/gstat/data/wind.rda"
OBJECT = "wind"
DATE_COLUMNS = ["year", "month", "day"]
YEAR_BASE = 1900  # gstat's ?wind: "year, minus 1900"


def stations_by_day(wind):
    """(x, stations, days) of the data frame `wind`: x has one row per day
    and one column per station; the date columns give the days."""
    np = D.numpy()
    what = "%s: %s" % (os.path.basename(RDA), OBJECT)
    names = list(wind.attrs.get("names") or []) if isinstance(wind, rdata.RVector) else []
    if getattr(wind, "rtype", None) != "list" or names[:3] != DATE_COLUMNS or len(names) < 4:
        raise C.AnalysisError("%s: expected a data frame with columns %s then the stations, found %s" % (
            what, ", ".join(DATE_COLUMNS), names or getattr(wind, "rtype", type(wind).__name__)))
    columns = dict(zip(names, wind))
    days = []
    for row, ymd in enumerate(zip(*(columns[c] for c in DATE_COLUMNS))):
        try:
            days.append(datetime.date(YEAR_BASE + ymd[0], ymd[1], ymd[2]))
        except (TypeError, ValueError):
            raise C.AnalysisError("%s: row %d has no valid date (year, month, day = %s)" % (
                what, row + 1, ymd)) from None
    D.check_increasing(days, what)
    stations = names[3:]
    x = np.column_stack([D.numeric_column(columns[s], "%s$%s" % (what, s)) for s in stations])
    return x, stations, days


def main(argv=None):
    args = D.argument_parser("analysis.datasets.wind", __doc__, PACKAGE, DATASET).parse_args(argv)
    with D.unpacked(PACKAGE, args.deb, args.cache) as pkg:
        objs = pkg.read(rdata.load, RDA)
    x, stations, days = stations_by_day(objs.get(OBJECT))
    npy, meta = D.write_dataset(args.outdir, DATASET, x, pkg, {
        "source_files": [RDA], "object": OBJECT,
        "conversion": {"rows": "one per day, in date order", "date_columns": DATE_COLUMNS, "year_base": YEAR_BASE,
                       "dropped_columns": DATE_COLUMNS, "columns": "the stations, in the data frame's order",
                       "units": "knots (daily average wind speed)", "missing": "R's NA as NaN"},
        "columns": stations,
        "time_span": {"first": str(days[0]), "last": str(days[-1]), "days": len(days),
                      "consecutive": (days[-1] - days[0]).days + 1 == len(days)},
    })
    print(D.summary("analysis.datasets.wind", npy, meta))
    return 0


if __name__ == "__main__":
    sys.exit(C.main_wrapper("analysis.datasets.wind", main, sys.argv[1:]))
