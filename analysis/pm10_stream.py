#!/usr/bin/python3
"""The PM10 stream: real, naturally ordered sensor data with gaps, from a
Debian package, as a .npy file the mini-app reads (source.type: npy).

Debian's r-cran-spacetime (GPL-2+; data by the German Federal Environment
Agency, as the package's documentation of `air` says) ships `data/air.rda`:
daily mean PM10 (ug/m3) at 70 rural background stations in Germany,
1998-01-01 to 2009-12-31 (4,383 days), about half of the entries missing.
This script fetches the package with `apt-get download` (or takes the .deb
given with --deb), unpacks it with `dpkg -x` into a temporary directory,
reads the workspace with analysis/rdata.py and writes into OUTDIR

    pm10_air.npy   float64, shape (4383, 70): one row per day in date order,
                   one column per station; NaN where R has NA (a gap)
    pm10_air.json  provenance: the package, its version and sha256, the
                   licence and copyright lines of its copyright file, the
                   dates, the station codes, the missing fraction

The data are never committed: run this where the mini-app runs.
inputs/pm10.yaml reads OUTDIR = inputs/pm10_data (ignored by git):

    /usr/bin/python3 -m analysis.pm10_stream inputs/pm10_data
    mpirun -np 1 build/openmp/miniapp/mosaic_miniapp inputs/pm10.yaml
"""

import argparse
import datetime
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from analysis import common as C
from analysis import rdata

PACKAGE = "r-cran-spacetime"
RDA = "usr/lib/R/site-library/spacetime/data/air.rda"
COPYRIGHT = "usr/share/doc/r-cran-spacetime/copyright"


def fetch_deb(workdir):
    """apt-get download PACKAGE into workdir; the .deb's path."""
    try:
        subprocess.run(["apt-get", "download", PACKAGE], cwd=workdir, check=True, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    except FileNotFoundError:
        raise C.AnalysisError("apt-get not found: give the package's .deb with --deb")
    except subprocess.CalledProcessError as e:
        raise C.AnalysisError("apt-get download %s failed: %s" % (PACKAGE, e.stderr.strip().splitlines()[-1:]))
    debs = glob.glob(os.path.join(workdir, PACKAGE + "_*.deb"))
    if len(debs) != 1:
        raise C.AnalysisError("apt-get download %s left %d .deb files in %s" % (PACKAGE, len(debs), workdir))
    return debs[0]


def stream_from_workspace(objs):
    """(rows, stations, dates): the air matrix (stations x days, column-major
    in R) as one row per day."""
    air = objs.get("air")
    if not isinstance(air, rdata.RVector) or air.rtype != "double" or list(air.attrs.get("dim") or []) == []:
        raise C.AnalysisError("air.rda has no double matrix 'air'")
    n_st, n_days = air.attrs["dim"]
    stations = list(air.attrs["dimnames"][0])
    days = [datetime.date(1970, 1, 1) + datetime.timedelta(days=int(v)) for v in objs["dates"]]
    if len(days) != n_days or len(stations) != n_st:
        raise C.AnalysisError("air.rda: %d x %d matrix, %d dates, %d station names" % (n_st, n_days, len(days),
                                                                                        len(stations)))
    if days != sorted(days):
        raise C.AnalysisError("air.rda: the dates are not in order")
    rows = [[air[day * n_st + s] for s in range(n_st)] for day in range(n_days)]
    return rows, stations, days


def licence(copyright_text):
    return [line.strip() for line in copyright_text.splitlines() if line.startswith(("Copyright:", "License:"))]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m analysis.pm10_stream", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("outdir", help="directory for pm10_air.npy and pm10_air.json (created)")
    parser.add_argument("--deb", help="the %s .deb to use instead of apt-get download" % PACKAGE)
    args = parser.parse_args(argv)
    try:
        import numpy as np
    except ImportError:
        raise C.AnalysisError(C.missing_module("numpy", figures=False))
    with tempfile.TemporaryDirectory(prefix="pm10_") as tmp:
        deb = os.path.abspath(args.deb) if args.deb else fetch_deb(tmp)
        with open(deb, "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        unpacked = os.path.join(tmp, "x")
        try:
            subprocess.run(["dpkg", "-x", deb, unpacked], check=True, stderr=subprocess.PIPE, universal_newlines=True)
            version = subprocess.run(["dpkg-deb", "-f", deb, "Version"], check=True, stdout=subprocess.PIPE,
                                     universal_newlines=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError) as e:
            raise C.AnalysisError("%s: cannot unpack: %s" % (deb, getattr(e, "stderr", None) or e))
        try:
            objs = rdata.load(os.path.join(unpacked, RDA))
        except (OSError, rdata.RDataError) as e:
            raise C.AnalysisError("%s in %s: %s" % (RDA, os.path.basename(deb), e))
        with open(os.path.join(unpacked, COPYRIGHT), encoding="utf-8") as f:
            lic = licence(f.read())
    rows, stations, days = stream_from_workspace(objs)
    x = np.array(rows, dtype=np.float64)
    missing = float(np.isnan(x).mean())
    os.makedirs(args.outdir, exist_ok=True)
    npy = os.path.join(args.outdir, "pm10_air.npy")
    np.save(npy, x, allow_pickle=False)
    meta = {
        "package": PACKAGE, "version": version, "deb": os.path.basename(deb), "sha256": sha, "file": RDA,
        "licence": lic, "object": "air (PM10 daily means, ug/m3, rural background stations)",
        "rows": "days %s to %s" % (days[0], days[-1]), "shape": list(x.shape), "columns": stations,
        "missing_fraction": missing, "first_day_with_data_per_station": [
            str(days[int(np.argmax(~np.isnan(x[:, s])))]) if not np.isnan(x[:, s]).all() else None
            for s in range(x.shape[1])],
    }
    with open(os.path.join(args.outdir, "pm10_air.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=1)
    finite = x[~np.isnan(x)]
    print("pm10_stream: wrote %s: %d days x %d stations, %.1f%% missing, values %.1f..%.1f ug/m3 (%s %s, %s)" % (
        npy, x.shape[0], x.shape[1], 100 * missing, finite.min(), finite.max(), PACKAGE, version,
        ", ".join(sorted({line for line in lic if line.startswith("License:")}))))
    return 0


if __name__ == "__main__":
    sys.exit(C.main_wrapper("analysis.pm10_stream", main, sys.argv[1:]))
