#!/usr/bin/python3
"""The PM10 stream: daily mean PM10 at 70 rural background stations in
Germany, 1998-01-01 to 2009-12-31 (4,383 days, about half of the entries
missing), as a .npy file the mini-app reads (source.type: npy): real sensor
data with gaps, for algorithm.missing (inputs/real/pm10.yaml).

Debian's r-cran-spacetime (GPL-2+) ships data/air.rda, from the German
Federal Environment Agency (Umweltbundesamt) as spacetime's ?air says: the
matrix `air` (stations x days, PM10 in ug/m3, NA where a station reported
nothing), its row names the station codes, and the vector `dates` (class
Date: days since 1970-01-01). This command fetches the package (the .deb in
--cache, else apt-get download into it, or the .deb given with --deb),
unpacks it with dpkg -x into a temporary directory, reads the workspace with
analysis/rdata.py and writes into OUTDIR (default inputs/real_data/pm10)

    pm10.npy   float64, shape (4383, 70): one row per day in date order, one
               column per station in the matrix's row order, ug/m3; NaN
               where R has NA (a gap)
    pm10.json  provenance: the package, its version and sha256, the licence
               and copyright lines of its copyright file, the conversion, the
               station codes, the dates, each station's first day with data
               and missing fraction, the .npy's sha256 and NaN (missing)
               fraction

The data are never committed (inputs/real_data/ is ignored by git);
inputs/real/pm10.yaml reads the default OUTDIR:

    /usr/bin/python3 -m analysis.datasets.pm10 [OUTDIR] [--deb PATH] [--cache DIR]
    mpirun -np 1 build/openmp/miniapp/mosaic_miniapp inputs/real/pm10.yaml
"""

import datetime
import os
import sys

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from analysis import common as C
from analysis import rdata
from analysis.datasets import debian as D

DATASET = "pm10"
PACKAGE = "r-cran-spacetime"
RDA = "usr/lib/R/site-library/spacetime/data/air.rda"
OBJECT = "air"
DATES = "dates"
EPOCH = datetime.date(1970, 1, 1)  # R's Date: days since 1970-01-01


def stations_by_day(objs):
    """(x, stations, days) of the workspace's matrix `air` (stations x days,
    column-major in R) and its `dates`: x has one row per day and one
    column per station, NA as NaN."""
    what = "%s: %s" % (os.path.basename(RDA), OBJECT)
    air, dates = objs.get(OBJECT), objs.get(DATES)
    dim = list(air.attrs.get("dim") or []) if isinstance(air, rdata.RVector) else []
    if getattr(air, "rtype", None) not in ("double", "integer") or len(dim) != 2:
        if air is None:
            found = "no such object (the workspace has: %s)" % ", ".join(objs)
        elif isinstance(air, rdata.RVector):
            found = "a %s vector with dim %s" % (air.rtype, dim or "none")
        else:
            found = getattr(air, "rtype", type(air).__name__)
        raise C.AnalysisError("%s: expected a numeric stations x days matrix, found %s" % (what, found))
    n_stations, n_days = dim
    if len(air) != n_stations * n_days:
        raise C.AnalysisError("%s: %d values for a %d x %d matrix" % (what, len(air), n_stations, n_days))
    dimnames = air.attrs.get("dimnames") or [None]
    stations = list(dimnames[0] or [])
    if len(stations) != n_stations:
        raise C.AnalysisError("%s: %d x %d matrix with %d station names (its row names)" % (
            what, n_stations, n_days, len(stations)))
    if not isinstance(dates, rdata.RVector) or "Date" not in (dates.attrs.get("class") or []):
        raise C.AnalysisError("%s: expected a Date vector '%s', found %s" % (
            os.path.basename(RDA), DATES, getattr(dates, "rtype", type(dates).__name__)))
    if len(dates) != n_days:
        raise C.AnalysisError("%s: %d x %d matrix but %d %s" % (what, n_stations, n_days, len(dates), DATES))
    days = []
    for row, v in enumerate(dates):
        try:
            days.append(EPOCH + datetime.timedelta(days=int(v)))
        except (TypeError, ValueError, OverflowError):
            raise C.AnalysisError("%s: %s[%d] is %r, not a day" % (os.path.basename(RDA), DATES, row + 1, v)) from None
    D.check_increasing(days, what)
    # R's column-major stations x days is, read in order, days x stations.
    x = D.numeric_column(air, what).reshape(n_days, n_stations)
    return x, stations, days


def main(argv=None):
    args = D.argument_parser("analysis.datasets.pm10", __doc__, PACKAGE, DATASET).parse_args(argv)
    with D.unpacked(PACKAGE, args.deb, args.cache) as pkg:
        objs = pkg.read(rdata.load, RDA)
    x, stations, days = stations_by_day(objs)
    np = D.numpy()
    missing = np.isnan(x)
    npy, meta = D.write_dataset(args.outdir, DATASET, x, pkg, {
        "source_files": [RDA], "object": OBJECT,
        "conversion": {"rows": "one per day, in date order (the matrix's columns)", "date_vector": DATES,
                       "date_epoch": str(EPOCH), "columns": "the stations, in the matrix's row order",
                       "units": "ug/m3 (daily mean PM10, rural background stations)",
                       "missing": "R's NA as NaN (a gap); nan_fraction is the missing fraction"},
        "columns": stations,
        "time_span": {"first": str(days[0]), "last": str(days[-1]), "days": len(days),
                      "consecutive": (days[-1] - days[0]).days + 1 == len(days)},
        "first_day_with_data_per_station": [
            None if missing[:, s].all() else str(days[int(np.argmin(missing[:, s]))]) for s in range(x.shape[1])],
        "missing_fraction_per_station": [float(f) for f in missing.mean(axis=0)],
    })
    print(D.summary("analysis.datasets.pm10", npy, meta))
    return 0


if __name__ == "__main__":
    sys.exit(C.main_wrapper("analysis.datasets.pm10", main, sys.argv[1:]))
