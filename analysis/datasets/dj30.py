#!/usr/bin/python3
"""The DJ30 stream: daily log returns of the 30 Dow Jones Industrial Average
stocks, 1991-01-02 to 2001-01-02 (2,528 trading days), as a .npy file the
mini-app reads (source.type: npy).

Debian's r-cran-fbasics (Rmetrics' fBasics; GPL, copyright Diethelm Wuertz
and the Rmetrics Foundation) ships its data as R's lazy-load database
data/Rdata.rdb + Rdata.rdx. Its object DowJones30 is a data frame of the
daily closing prices of the 30 stocks of the index (fBasics' ?fBasicsData),
1990-12-31 to 2001-01-02 (2,529 days), the dates in its first column
"X.Y..m..d". This command fetches the package (the .deb in --cache, else
apt-get download into it, or the .deb given with --deb), unpacks it with
dpkg -x into a temporary directory, reads the object with
analysis/rdata.py's load_lazy and writes into OUTDIR (default
inputs/real_data/dj30)

    dj30.npy   float64, shape (2528, 30): the log returns
               log(close_t / close_{t-1}) of each stock, one row per trading
               day t after the first, in date order, one column per stock;
               the first row is all 0: the data's closes of 1990-12-31 are
               those of 1991-01-02
    dj30.json  provenance: the package, its version and sha256, the licence
               and copyright lines of its copyright file, the conversion, the
               tickers, the dates, the .npy's sha256 and NaN fraction

The data are never committed (inputs/real_data/ is ignored by git):

    /usr/bin/python3 -m analysis.datasets.dj30 [OUTDIR] [--deb PATH] [--cache DIR]
"""

import datetime
import os
import sys

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from analysis import common as C
from analysis import rdata
from analysis.datasets import debian as D

DATASET = "dj30"
PACKAGE = "r-cran-fbasics"
RDB = "usr/lib/R/site-library/fBasics/data/Rdata.rdb"
RDX = "usr/lib/R/site-library/fBasics/data/Rdata.rdx"
OBJECT = "DowJones30"
DATE_COLUMN = "X.Y..m..d"  # R's make.names() of the original "%Y-%m-%d"


def closes_by_day(frame):
    """(closes, tickers, days) of the data frame DowJones30: one row per
    day, one column per stock; the first column (a factor or character
    vector of ISO dates) gives the days."""
    np = D.numpy()
    what = "%s: %s" % (os.path.basename(RDB), OBJECT)
    names = list(frame.attrs.get("names") or []) if isinstance(frame, rdata.RVector) else []
    if getattr(frame, "rtype", None) != "list" or names[:1] != [DATE_COLUMN] or len(names) < 2:
        raise C.AnalysisError("%s: expected a data frame with the date column %s then the stocks, found %s" % (
            what, DATE_COLUMN, names or getattr(frame, "rtype", type(frame).__name__)))
    dates = frame[0]
    levels = dates.attrs.get("levels")
    if levels is not None:
        dates = [None if code is None else levels[code - 1] for code in dates]
    days = []
    for row, text in enumerate(dates):
        try:
            days.append(datetime.date.fromisoformat(text))
        except (TypeError, ValueError):
            raise C.AnalysisError("%s$%s: row %d is %r, not a YYYY-MM-DD date" % (
                what, DATE_COLUMN, row + 1, text)) from None
    D.check_increasing(days, what)
    tickers = names[1:]
    closes = np.column_stack([D.numeric_column(col, "%s$%s" % (what, t)) for t, col in zip(tickers, frame[1:])])
    return closes, tickers, days


def log_returns(closes):
    """log(close_t / close_{t-1}) down each column: one row fewer. A NaN
    close makes the two returns around it NaN; a close <= 0 has none."""
    np = D.numpy()
    closes = np.asarray(closes, dtype=np.float64)
    bad = np.argwhere(closes <= 0)
    if len(bad):
        raise C.AnalysisError("%s: close <= 0 (%g) at row %d, column %d: no log return" % (
            OBJECT, closes[tuple(bad[0])], bad[0][0] + 1, bad[0][1] + 1))
    return np.log(closes[1:] / closes[:-1])


def main(argv=None):
    args = D.argument_parser("analysis.datasets.dj30", __doc__, PACKAGE, DATASET).parse_args(argv)
    with D.unpacked(PACKAGE, args.deb, args.cache) as pkg:
        frame = pkg.read(lambda rdb, rdx: rdata.load_lazy(rdb, rdx, OBJECT), RDB, RDX)
    closes, tickers, days = closes_by_day(frame)
    x = log_returns(closes)
    npy, meta = D.write_dataset(args.outdir, DATASET, x, pkg, {
        "source_files": [RDB, RDX], "object": OBJECT,
        "conversion": {"values": "daily closing prices, one column per stock",
                       "transform": "log return: log(close_t / close_{t-1}) per stock, natural log",
                       "rows": "one per trading day t after the first, in date order",
                       "date_column": DATE_COLUMN, "dropped_columns": [DATE_COLUMN],
                       "closes_span": {"first": str(days[0]), "last": str(days[-1]), "days": len(days)},
                       "missing": "R's NA as NaN; a NaN close makes the returns into and out of it NaN"},
        "columns": tickers,
        "time_span": {"first": str(days[1]), "last": str(days[-1]), "days": len(days) - 1},
    })
    print(D.summary("analysis.datasets.dj30", npy, meta))
    return 0


if __name__ == "__main__":
    sys.exit(C.main_wrapper("analysis.datasets.dj30", main, sys.argv[1:]))
