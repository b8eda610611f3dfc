"""Builders of real, naturally ordered datasets from Debian packages, for the
mini-app's npy source: each fetches its package (apt-get download, or the
.deb given with --deb), converts its data to .npy files of shape
(samples, features) in time order and writes a provenance sidecar (.json)
beside it (analysis/datasets/debian.py). The data are never committed: the
default output is inputs/real_data/<dataset>.

    /usr/bin/python3 -m analysis.datasets.wind  [OUTDIR] [--deb PATH] [--cache DIR]
    /usr/bin/python3 -m analysis.datasets.dj30  [OUTDIR] [--deb PATH] [--cache DIR]
    /usr/bin/python3 -m analysis.datasets.pm10  [OUTDIR] [--deb PATH] [--cache DIR]
    /usr/bin/python3 -m analysis.datasets.eop   [OUTDIR] [--deb PATH] [--cache DIR]
    /usr/bin/python3 -m analysis.datasets.video [OUTDIR] [--deb PATH] [--cache DIR] [--width W --height H]
    /usr/bin/python3 -m analysis.datasets.music [OUTDIR] [--deb PATH] [--cache DIR] [--n-fft N] [--hop H]

wind: daily mean wind speeds at 12 Irish stations, 1961-1978 (r-cran-gstat).
dj30: daily log returns of the 30 Dow Jones stocks, 1991-2001 (r-cran-fbasics).
pm10: daily PM10 at 70 German stations, 1998-2009, 51% missing (r-cran-spacetime).
eop: IERS EOP 14 C04 Earth orientation, daily, 1962-2022 (python3-astropy).
video: vtest.avi (fixed camera) and box.mp4 (hand-held) as 96 x 72 grey
  frames, float32 (opencv-doc; decoded by ffmpeg).
music: the 41 tracks of wesnoth-1.16-music as log-magnitude STFT frames
  (d = 257), one float32 file per track and their concatenation (ffmpeg).
"""
