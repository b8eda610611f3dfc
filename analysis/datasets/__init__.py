"""Builders of real, naturally ordered datasets from Debian packages, for the
mini-app's npy source: each fetches its package (apt-get download, or the
.deb given with --deb), converts one data file to a float64 .npy of shape
(samples, features) in time order and writes a provenance sidecar (.json)
beside it (analysis/datasets/debian.py). The data are never committed: the
default output is inputs/real_data/<dataset>.

    /usr/bin/python3 -m analysis.datasets.wind  [OUTDIR] [--deb PATH] [--cache DIR]
    /usr/bin/python3 -m analysis.datasets.dj30  [OUTDIR] [--deb PATH] [--cache DIR]

wind: daily mean wind speeds at 12 Irish stations, 1961-1978 (r-cran-gstat).
dj30: daily log returns of the 30 Dow Jones stocks, 1991-2001 (r-cran-fbasics).
"""
