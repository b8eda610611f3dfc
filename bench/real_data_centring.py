#!/usr/bin/python3
"""Why MOSAIC's residual fraction can be higher than a baseline's while its
NLL is lower (docs/REAL_DATA.md): the residual fraction rho^2 / ||y||^2 is
relative to each model's own centring. This holds one subspace fixed (the
static PCA's top-r directions of all rows) and scores rows [start, end)
centred two ways: by the mean of all rows (as the static baseline) and by a
running mean with MOSAIC's update mu <- mu + eta_mu (x - mu), evaluated
before each row's update and started at the mean of rows [0, start) (as
MOSAIC's init). Printed per centring: the mean residual fraction, the mean
rho^2 and the mean ||y||^2 (complete rows only; rows with NaN are left out).

    /usr/bin/python3 bench/real_data_centring.py NPY --rank R --start N --eta-mu E
"""

import argparse
import sys

import numpy as np


def scores(Y, U):
    z = Y @ U
    rho2 = np.einsum("ij,ij->i", Y, Y) - np.einsum("ij,ij->i", z, z)
    norm2 = np.einsum("ij,ij->i", Y, Y)
    ok = norm2 > 0
    return float(np.mean(rho2[ok] / norm2[ok])), float(np.mean(rho2)), float(np.mean(norm2))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("npy")
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--start", type=int, required=True)
    p.add_argument("--eta-mu", type=float, required=True)
    a = p.parse_args(argv)
    x = np.load(a.npy).astype(np.float64)
    x = x[np.isfinite(x).all(axis=1)]
    if not a.rank < x.shape[1] or not 0 < a.start < len(x):
        p.error("%s: %d complete rows of d = %d: need rank < d and 0 < start < complete rows (rank %d, start %d)"
                % (a.npy, len(x), x.shape[1], a.rank, a.start))
    Y = x - x.mean(axis=0)
    _, V = np.linalg.eigh(Y.T @ Y / len(x))
    U = V[:, ::-1][:, :a.rank]
    running = np.empty_like(x[a.start:])
    mu = x[:a.start].mean(axis=0)
    for t in range(a.start, len(x)):
        running[t - a.start] = x[t] - mu
        mu += a.eta_mu * (x[t] - mu)
    print("# %s: rows [%d, %d), static PCA subspace of rank %d" % (a.npy, a.start, len(x), a.rank))
    print("centring | residual fraction mean | rho^2 mean | ||y||^2 mean")
    for name, Yc in (("mean of all rows", Y[a.start:]), ("running mean, eta_mu %g" % a.eta_mu, running)):
        print("%s | %.4f | %.6g | %.6g" % ((name,) + scores(Yc, U)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
