"""baselines: online low-rank covariance baselines for a `.npy` stream, scored
with MOSAIC's own prequential (truth-free) measure (docs/ALGORITHM.md
section 5, "Prequential (truth-free) accuracy"; the C++ in
src/mosaic/algorithm/prequential.hpp and reference_masked.hpp), on the same
rows, so that the numbers sit next to a mini-app result's runs[].prequential.

The stream is an array of shape (samples, d) in time order; NaN = missing.
Rows [0, start) only feed the models (start = MOSAIC's
algorithm.init_samples); rows [start, end) are evaluated in order, each with
the model available before it (built from earlier rows only; `static` is the
exception, below). Every model is a PPCA-type covariance

    Sigma = U S U^T + s2 (I - U U^T)     (U d x r orthonormal, S r x r SPD)

with a mean mu, and each row x is scored exactly as MOSAIC scores a sample
with its state before the step (evaluate()):
- y = x - mu on the observed coordinates O (finite entries whose mean the
  model knows; a coordinate the model has no data on is missing, as
  MOSAIC's `seen` rule has it), n = |O|;
- complete rows (n = d): z = U^T y, rho^2 = ||y - U z||^2,
  m2 = z^T S^-1 z + rho^2 / s2,
  nll = 0.5 (d log 2 pi + log det S + (d - r) log s2 + m2) / d;
- rows with missing entries: the likelihood of the observed rows,
  N(y_O; 0, s2 I + U_O (S - s2 I) U_O^T), by the determinant lemma with
  C = U_O^T U_O, Delta = s2 (C^-1 - I), z_ls = C^-1 U_O^T y_O:
  log det Sigma_OO = log det C + log det(S + Delta) + (n - r) log s2,
  m2 = z_ls^T (S + Delta)^-1 z_ls + rho^2 / s2 with rho^2 = ||y_O - U_O z_ls||^2,
  nll = 0.5 (n log 2 pi + log det Sigma_OO + m2) / n; such a row is not
  evaluated (counted in skipped_samples) when n < r + 1, C is not positive
  definite or tr(C^-1) > --missing-cond-max (MOSAIC's section 7.5 rules,
  which skip the step and so its evaluation);
- residual fraction rho^2 / ||y_O||^2 (rows with ||y_O|| = 0 are counted in
  zero_norm_samples and left out of its mean); a surprise when m2 exceeds
  the chi-square 0.999 quantile with n degrees of freedom by
  Wilson-Hilferty, k (1 - 2/(9k) + z sqrt(2/(9k)))^3, z = 3.090232306167813.
All of it is O(d r + r^3) per row and vectorised over the rows that share a
model (no d x d matrix per row).

Methods (--methods, default all three):
- window: sliding-window PPCA. At start and every --refit-every M rows after
  it, refit on the last --window W rows (fewer at the beginning when start <
  W): mu = the window's per-coordinate mean, U and S = diag(eigenvalues) the
  top r eigenpairs of the window covariance (divided by the row count: the
  ML estimate), s2 = the mean of the remaining d - r eigenvalues (PPCA's ML
  noise variance; (trace - sum of the top r) / (d - r)), floored at
  --floor (default 1e-6) times trace / d, the mean eigenvalue; S's entries
  are floored at s2. With d > W the W x W Gram matrix is decomposed instead
  (U = Y^T V / sqrt(W lambda), re-orthonormalised by a QR with S <- R S R^T).
  A window without any variance keeps the previous model.
- incremental: scikit-learn's IncrementalPCA(n_components=r), fed [0, start)
  as one partial_fit and then the evaluated rows in time order in batches of
  M (>= r) after they are scored: the model used at row t is that of the
  batches completed before t. U = components_^T, S = diag(explained_variance_),
  s2 = noise_variance_, mu = mean_, with the same floors (trace = the sum
  of the per-coordinate variances var_). Beware: sklearn's noise_variance_
  is the mean of the last batch SVD's trailing explained variances, i.e.
  that batch's residual energy divided by *all* samples seen, so after the
  first batch it falls like M / (samples seen) and the model grows
  overconfident (a surprise rate near 1). --incremental-noise total takes
  PPCA's noise from the running total variance instead,
  s2 = (sum(var_) n/(n-1) - sum(explained_variance_)) / (d - r) (var_
  divides by n, explained_variance_ by n - 1).
- static: one PPCA (as window's) of all rows [0, end), used for every
  evaluated row: in-sample, so an optimistic bound that no online method
  should be expected to beat on a stationary stream.

Missing data (NaN): a window's (and static's) mean is the per-coordinate
mean of the observed entries, and its covariance is that of the centred data
with the missing entries set to 0 (divided by the row count); a coordinate
without an observed entry in the window has no mean and is missing for the
rows the model scores. IncrementalPCA cannot take NaN: each batch's missing
entries are filled with the running per-coordinate mean of the observed
entries of every row fed so far (this batch included; 0 for a coordinate
never observed, which stays missing for the scoring).

Timing: wall seconds of everything a method does (fits and evaluation, by
time.perf_counter); init_seconds is the part that built the model used at
row start (from rows [0, start) only; static's single fit is not counted
there); seconds_per_sample = (wall - init) / evaluated rows, comparable to
MOSAIC's update timer, which leaves its init out. BLAS threads as
--blas-threads (default 1: the matrices of one refit are small, and threads
only add overhead there; threadpoolctl, which scikit-learn brings, applies
it) unless 0 (the environment's setting).

Writes a JSON file (-o) with, per method, `prequential` (the keys of a
mini-app result's runs[].prequential: samples, zero_norm_samples, nll_mean,
residual_fraction_mean, surprise_rate, surprise_rate_calibrated and the
*_interval_median of the series, plus skipped_samples and rows) and
`series`: entries {step, sample_index, prequential {sums, interval, means}}
as the mini-app's diagnostics series writes them, at the steps (rows
evaluated since start) of --every or --steps and at the end.

Several streams (several NPY paths of one d; a mini-app run over several
files, one stream each, e.g. run.steps: all): each is independent, and every
method runs on each one on its own, with a fresh model (nothing is shared
between streams): rows [0, start) of stream i feed its model and rows
[start, end_i) are scored, end_i = min(end, rows_i) (--end defaults to the
longest stream's rows, so each stream is scored to its own end). The
measures are pooled as the mini-app pools its streams: series step k (rows
scored since start, counted in each stream alike) sums every stream's rows
[start, start + k), a stream that ended contributing all of its rows, so an
interval (k_prev, k] holds every stream's rows of step index in it; the totals
sum every stream's. The output keeps the one-stream keys (prequential and
series pooled; end - start is the longest stream's scored rows, the run's
length; rows_evaluated and prequential.rows the rows scored over all
streams; wall and init seconds summed) and adds `streams` (their number),
`inputs` (each stream's path, rows, end) and, per method, `streams`: each
stream's totals and sums (stream, path, samples, nll_mean, ...). With --like
the files must be the result's streams: as many, the longest one's rows
after start its warm-up + timed steps and their timed steps summing to its
steps.timed_samples; a stream with fewer than start + 1 rows is an error.

    python3 -m analysis.baselines stream.npy --rank 4 --start 512 --window 200 --refit-every 50 -o b.json
    python3 -m analysis.baselines stream.npy --like result.json -o b.json   # rank, start, end, steps, W = 1/eta_U
    python3 -m analysis.baselines tracks/*.npy --like tracks_result.json -o b.json   # pooled over the files
"""

import argparse
import contextlib
import json
import math
import os
import platform
import sys
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from analysis import common as C

try:
    import numpy as np
except ImportError:  # main() says so (C.missing_module)
    np = None

Z_0999 = 3.090232306167813  # the standard normal 0.999 quantile
LOG_2PI = 1.8378770664093454836
METHODS = ("window", "incremental", "static")
DEFAULT_FLOOR = 1e-6
DEFAULT_COND_MAX = 1e4
CHUNK_ENTRIES = 1 << 21  # rows x d per evaluation or covariance chunk (16 MiB of doubles)

DEFINITION = (
    "docs/ALGORITHM.md section 5 'Prequential (truth-free) accuracy', as the mini-app evaluates it: each row in "
    "[start, end) scored with the model available before it (static: the in-sample fit of rows [0, end)); "
    "residual fraction rho^2/||y_O||^2 (rows with ||y_O|| = 0 counted apart), negative log-likelihood per "
    "observed coordinate under U S U^T + s2 (I - U U^T) (the observed rows' Sigma_OO with missing data), "
    "surprise = y^T Sigma^-1 y above the chi-square 0.999 quantile with n dof (Wilson-Hilferty); rows with "
    "n < r + 1 observed, C = U_O^T U_O not positive definite or tr(C^-1) above missing_cond_max are not "
    "evaluated (skipped_samples)")

MISSING_TEXT = (
    "window and static: per-coordinate means of the observed entries, covariance of the centred data with "
    "missing entries set to 0 (divided by the row count); incremental: missing entries filled with the running "
    "per-coordinate mean of the observed entries fed so far before partial_fit; a coordinate the model has no "
    "observation of is treated as missing when scoring")

POOLED_TEXT = (
    "each method runs on each stream on its own (a fresh model per stream, rows [start, end_i) of stream i with "
    "end_i = min(end, its rows)); the sums at series step k add every stream's scored rows [start, start + k) "
    "(a stream that ended adds all of its rows), so an interval (k_prev, k] holds every stream's rows of "
    "step index in it, as the mini-app pools its streams; the totals are the sums over every stream")

METHOD_TEXT = {
    "window": "sliding-window PPCA: refit every M rows on the last W rows (window mean; top-r eigenpairs of the "
              "window covariance -> U, S; s2 = mean of the other d - r eigenvalues, floored)",
    "incremental": "scikit-learn IncrementalPCA(n_components=r), partial_fit on [0, start) then on batches of M "
                   "evaluated rows; U = components_^T, S = diag(explained_variance_), s2 = noise_variance_ "
                   "(floored), mu = mean_",
    "incremental/total": "scikit-learn IncrementalPCA(n_components=r), partial_fit on [0, start) then on batches of "
                         "M evaluated rows; U = components_^T, S = diag(explained_variance_), s2 = (sum(var_) - "
                         "sum(explained_variance_)) / (d - r) (floored), mu = mean_",
    "static": "PPCA of all rows [0, end), one model for every row (in-sample: an optimistic bound)",
}


def need_numpy():
    if np is None:
        raise C.missing_module("numpy", figures=False)


def chi2_quantile_0999(k):
    """Wilson-Hilferty's 0.999 quantile of chi-square with k degrees of freedom
    (prequential.hpp's chi2_quantile_0999); k a number or a NumPy array."""
    a = 2.0 / (9.0 * k)
    return k * (1.0 - a + Z_0999 * np.sqrt(a)) ** 3


# ---------------------------------------------------------------------------
# The model and its prequential evaluation


class Model:
    """mu (d; NaN where the model has no data on a coordinate), U (d x r,
    orthonormal columns), S (r x r SPD), s2 > 0; the factors the evaluation
    needs once per model."""

    def __init__(self, mu, U, S, s2):
        self.mu = np.asarray(mu, dtype=np.float64)
        self.U = np.ascontiguousarray(U, dtype=np.float64)
        self.S = 0.5 * (np.asarray(S, dtype=np.float64) + np.asarray(S, dtype=np.float64).T)
        self.s2 = float(s2)
        self.d, self.r = self.U.shape
        if self.mu.shape != (self.d,) or self.S.shape != (self.r, self.r):
            raise ValueError("model shapes: mu %s, U %s, S %s" % (self.mu.shape, self.U.shape, self.S.shape))
        if not (self.s2 > 0 and math.isfinite(self.s2)):
            raise ValueError("model s2 = %r is not a positive number" % self.s2)
        self.seen = np.isfinite(self.mu)
        self.all_seen = bool(self.seen.all())
        self.mu0 = np.where(self.seen, self.mu, 0.0)
        self.L = np.linalg.cholesky(self.S)  # LinAlgError when S is not SPD
        self.logdet_s = 2.0 * float(np.log(np.diag(self.L)).sum())
        self._outer = None

    @property
    def outer(self):
        """(d, r*r): row i is vec(u_i u_i^T), so that C = mask @ outer."""
        if self._outer is None:
            self._outer = (self.U[:, :, None] * self.U[:, None, :]).reshape(self.d, self.r * self.r)
        return self._outer


def _rowdot(a, b):
    return np.einsum("ij,ij->i", a, b)


def _evaluate_complete(model, X):
    """Rows with every coordinate observed: section 2's quantities (C = I)."""
    d, r = model.d, model.r
    Y = X - model.mu0
    Z = Y @ model.U
    E = Y - Z @ model.U.T
    rho2 = _rowdot(E, E)
    yy = _rowdot(Y, Y)
    T = np.linalg.solve(model.L, Z.T)  # L^-1 z, so q = z^T S^-1 z = ||L^-1 z||^2
    m2 = (T * T).sum(axis=0) + rho2 / model.s2
    nll = 0.5 * (d * LOG_2PI + model.logdet_s + (d - r) * math.log(model.s2) + m2) / d
    return rho2, yy, m2, nll


def _evaluate_masked(model, X, obs, n, cond_max):
    """Rows with missing entries (n >= r + 1): the observed rows' likelihood;
    ok = False where MOSAIC skips the step (C not PD, tr(C^-1) > cond_max)."""
    r, s2 = model.r, model.s2
    k = X.shape[0]
    Of = obs.astype(np.float64)
    Y0 = np.where(obs, X - model.mu0, 0.0)
    b = Y0 @ model.U
    # C = U_O^T U_O, from the smaller of the observed and the missing rows (as the C++).
    eye = np.eye(r)
    C = np.empty((k, r * r))
    few_missing = (model.d - n) <= n
    if few_missing.any():
        C[few_missing] = eye.reshape(-1) - (1.0 - Of[few_missing]) @ model.outer
    if (~few_missing).any():
        C[~few_missing] = Of[~few_missing] @ model.outer
    C = C.reshape(k, r, r)
    C = 0.5 * (C + np.swapaxes(C, 1, 2))
    ev, V = np.linalg.eigh(C)
    pd = ev[:, 0] > 0
    tr_cinv = np.full(k, np.inf)
    tr_cinv[pd] = (1.0 / ev[pd]).sum(axis=1)
    ok = pd & (tr_cinv <= cond_max)
    rho2, yy, m2, nll = (np.full(k, np.nan) for _ in range(4))
    if ok.any():
        ev, V, b, Y0, Of = ev[ok], V[ok], b[ok], Y0[ok], Of[ok]
        nk = n[ok].astype(np.float64)
        cinv = (V / ev[:, None, :]) @ np.swapaxes(V, 1, 2)
        z_ls = np.einsum("kab,kb->ka", cinv, b)
        SD = model.S[None, :, :] + s2 * (cinv - eye)
        SD = 0.5 * (SD + np.swapaxes(SD, 1, 2))
        Lsd = np.linalg.cholesky(SD)
        w = np.linalg.solve(SD, z_ls[:, :, None])[:, :, 0]
        quad = (z_ls * w).sum(axis=1)
        logdet_sd = 2.0 * np.log(np.diagonal(Lsd, axis1=1, axis2=2)).sum(axis=1)
        logdet_c = np.log(ev).sum(axis=1)
        E = Y0 - (z_ls @ model.U.T) * Of
        rho2[ok] = _rowdot(E, E)
        yy[ok] = _rowdot(Y0, Y0)
        m2[ok] = quad + rho2[ok] / s2
        nll[ok] = 0.5 * (nk * LOG_2PI + logdet_c + logdet_sd + (nk - r) * math.log(s2) + m2[ok]) / nk
    return ok, rho2, yy, m2, nll


def evaluate(model, X, missing_cond_max=DEFAULT_COND_MAX):
    """Scores every row of X (k x d, NaN = missing) with `model`, as MOSAIC
    scores a sample with the state before its step. Returns a dict of arrays
    of length k: evaluated (bool), n (observed coordinates), rho2, yy
    (||y_O||^2), m2 (y_O^T Sigma_OO^-1 y_O), nll (per coordinate), surprise
    (bool); NaN (False) where a row is not evaluated."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[None, :]
    k, d = X.shape
    if d != model.d:
        raise ValueError("rows of %d coordinates for a model of d = %d" % (d, model.d))
    out = {"evaluated": np.zeros(k, dtype=bool), "n": np.zeros(k, dtype=np.int64)}
    for key in ("rho2", "yy", "m2", "nll"):
        out[key] = np.full(k, np.nan)
    chunk = max(16, CHUNK_ENTRIES // max(d, 1))
    for lo in range(0, k, chunk):
        hi = min(k, lo + chunk)
        Xc = X[lo:hi]
        obs = np.isfinite(Xc)
        if not model.all_seen:
            obs &= model.seen
        n = obs.sum(axis=1)
        out["n"][lo:hi] = n
        complete = n == d
        idx = np.flatnonzero(complete)
        if idx.size:
            vals = _evaluate_complete(model, Xc[idx])
            for key, v in zip(("rho2", "yy", "m2", "nll"), vals):
                out[key][lo + idx] = v
            out["evaluated"][lo + idx] = True
        idx = np.flatnonzero(~complete & (n >= model.r + 1))
        if idx.size:
            ok, *vals = _evaluate_masked(model, Xc[idx], obs[idx], n[idx], missing_cond_max)
            for key, v in zip(("rho2", "yy", "m2", "nll"), vals):
                out[key][lo + idx] = v
            out["evaluated"][lo + idx] = ok
    ev = out["evaluated"]
    out["surprise"] = np.zeros(k, dtype=bool)
    out["surprise"][ev] = out["m2"][ev] > chi2_quantile_0999(out["n"][ev].astype(np.float64))
    return out


# ---------------------------------------------------------------------------
# Fits


def _complete_basis(U_good, d, r):
    """U_good's columns (orthonormal) completed to r orthonormal columns."""
    rng = np.random.default_rng(0)
    extra = rng.standard_normal((d, r - U_good.shape[1]))
    Q, _ = np.linalg.qr(np.hstack([U_good, extra]))
    return Q[:, :r]


def ppca_fit(X, r, floor=DEFAULT_FLOOR):
    """PPCA of the rows X (k x d, NaN = missing; see the module docstring):
    a Model, or None when the rows have no variance at all."""
    X = np.asarray(X)
    k, d = X.shape
    chunk = max(16, CHUNK_ENTRIES // max(d, 1))
    total, count = np.zeros(d), np.zeros(d)
    any_missing = False
    for lo in range(0, k, chunk):
        Xc = np.asarray(X[lo:lo + chunk], dtype=np.float64)
        obs = np.isfinite(Xc)
        if obs.all():
            total += Xc.sum(axis=0)
            count += Xc.shape[0]
        else:
            any_missing = True
            total += np.where(obs, Xc, 0.0).sum(axis=0)
            count += obs.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    mu0 = np.where(count > 0, mu, 0.0)

    def centred(lo, hi):
        Xc = np.asarray(X[lo:hi], dtype=np.float64) - mu0
        return np.where(np.isfinite(Xc), Xc, 0.0) if any_missing else Xc

    if d <= k:  # the d x d covariance
        cov = np.zeros((d, d))
        for lo in range(0, k, chunk):
            Y = centred(lo, lo + chunk)
            cov += Y.T @ Y
        cov /= k
        lam, V = np.linalg.eigh(cov)
        trace = float(np.trace(cov))
        lam, U = lam[::-1][:r], V[:, ::-1][:, :r]
        R = None
    else:  # the k x k Gram matrix
        Y = centred(0, k)
        G = Y @ Y.T / k
        lam, V = np.linalg.eigh(G)
        trace = float(np.trace(G))
        lam, V = lam[::-1][:r], V[:, ::-1][:, :r]
        good = lam > max(lam[0], 0.0) * 1e-10 if lam.size else np.zeros(0, dtype=bool)
        U = np.zeros((d, r))
        U[:, good] = Y.T @ V[:, good] / np.sqrt(k * lam[good])
        U, R = np.linalg.qr(U)
        if not good.all():
            U = _complete_basis(U[:, :int(good.sum())], d, r) if good.any() else _complete_basis(np.zeros((d, 0)), d, r)
            R = None
    if not trace > 0:
        return None
    lam = np.clip(lam, 0.0, None)
    s2_floor = floor * trace / d
    s2 = max((trace - lam.sum()) / (d - r), s2_floor)
    S = np.diag(np.maximum(lam, s2))
    if R is not None:
        S = R @ S @ R.T
    return Model(mu, U, S, s2)


class RunningMean:
    """Per-coordinate running mean of the observed entries (for the NaN fill)."""

    def __init__(self, d):
        self.total, self.count = np.zeros(d), np.zeros(d)

    def fill(self, B):
        """Adds B's observed entries, then returns B with its NaN filled."""
        obs = np.isfinite(B)
        if obs.all():
            self.total += B.sum(axis=0)
            self.count += B.shape[0]
            return B
        self.total += np.where(obs, B, 0.0).sum(axis=0)
        self.count += obs.sum(axis=0)
        mean = np.where(self.count > 0, self.total / np.maximum(self.count, 1), 0.0)
        return np.where(obs, B, mean)

    @property
    def seen(self):
        return self.count > 0


def ipca_model(ipca, seen, floor=DEFAULT_FLOOR, noise="sklearn"):
    """The Model of a fitted IncrementalPCA: s2 = noise_variance_ (noise
    "sklearn") or (sum(var_) n/(n-1) - sum(explained_variance_)) / (d - r)
    (noise "total"; var_ divides by the n samples seen, explained_variance_
    by n - 1: without the factor the difference is negative after a short
    first batch and s2 falls to the floor), floored at floor * trace / d."""
    d, r = ipca.components_.shape[1], ipca.components_.shape[0]
    mu = np.where(seen, ipca.mean_, np.nan)
    n = int(ipca.n_samples_seen_)
    trace = float(np.sum(ipca.var_)) * n / (n - 1)
    s2_floor = floor * trace / d if trace > 0 else 0.0
    if noise == "total":
        s2 = max((trace - float(np.sum(ipca.explained_variance_))) / (d - r), s2_floor)
    else:
        s2 = max(float(ipca.noise_variance_), s2_floor)
    if not s2 > 0:
        return None
    return Model(mu, ipca.components_.T, np.diag(np.maximum(ipca.explained_variance_, s2)), s2)


# ---------------------------------------------------------------------------
# The methods


class Scores:
    """Per-row results over rows [start, end)."""

    def __init__(self, rows):
        self.evaluated = np.zeros(rows, dtype=bool)
        self.n = np.zeros(rows, dtype=np.int64)
        self.rho2, self.yy, self.nll = (np.full(rows, np.nan) for _ in range(3))
        self.surprise = np.zeros(rows, dtype=bool)

    def put(self, lo, res):
        hi = lo + res["n"].shape[0]
        self.evaluated[lo:hi] = res["evaluated"]
        self.n[lo:hi] = res["n"]
        self.rho2[lo:hi] = res["rho2"]
        self.yy[lo:hi] = res["yy"]
        self.nll[lo:hi] = res["nll"]
        self.surprise[lo:hi] = res["surprise"]


def run_window(X, p):
    s = Scores(p["end"] - p["start"])
    t0 = time.perf_counter()
    model, refits, kept, init_s = None, 0, 0, 0.0
    t = p["start"]
    while t < p["end"]:
        fitted = ppca_fit(X[max(0, t - p["window"]):t], p["rank"], p["floor"])
        refits += 1
        if fitted is None:
            if model is None:
                raise C.AnalysisError("window: rows [%d, %d) have no variance" % (max(0, t - p["window"]), t))
            kept += 1
        else:
            model = fitted
        if t == p["start"]:
            init_s = time.perf_counter() - t0
        hi = min(t + p["refit_every"], p["end"])
        s.put(t - p["start"], evaluate(model, X[t:hi], p["missing_cond_max"]))
        t = hi
    return s, time.perf_counter() - t0, init_s, {"refits": refits, "refits_without_variance_kept": kept}


def incremental_pca_class():
    """scikit-learn's IncrementalPCA, or the error that says how to get it."""
    try:
        from sklearn.decomposition import IncrementalPCA
    except ImportError:
        raise C.AnalysisError("incremental: scikit-learn is not installed for this interpreter (%s): install "
                              "Debian's python3-sklearn, or leave it out of --methods" % sys.executable) from None
    return IncrementalPCA


def default_refit_every(window):
    """The window's refit period and the incremental batch: a quarter window."""
    return max(1, window // 4)


def run_incremental(X, p):
    IncrementalPCA = incremental_pca_class()
    s = Scores(p["end"] - p["start"])
    d = X.shape[1]
    t0 = time.perf_counter()
    ipca = IncrementalPCA(n_components=p["rank"])
    running = RunningMean(d)
    ipca.partial_fit(running.fill(np.asarray(X[:p["start"]], dtype=np.float64)))
    model = ipca_model(ipca, running.seen, p["floor"], p.get("incremental_noise", "sklearn"))
    if model is None:
        raise C.AnalysisError("incremental: rows [0, %d) have no variance" % p["start"])
    init_s = time.perf_counter() - t0
    batches, t = 1, p["start"]
    while t < p["end"]:
        hi = min(t + p["refit_every"], p["end"])
        B = np.asarray(X[t:hi], dtype=np.float64)
        s.put(t - p["start"], evaluate(model, B, p["missing_cond_max"]))
        if hi < p["end"]:  # the model after the last batch would score nothing
            ipca.partial_fit(running.fill(B))
            batches += 1
            model = ipca_model(ipca, running.seen, p["floor"], p.get("incremental_noise", "sklearn")) or model
        t = hi
    return s, time.perf_counter() - t0, init_s, {"partial_fits": batches}


def run_static(X, p):
    s = Scores(p["end"] - p["start"])
    t0 = time.perf_counter()
    model = ppca_fit(X[:p["end"]], p["rank"], p["floor"])
    if model is None:
        raise C.AnalysisError("static: rows [0, %d) have no variance" % p["end"])
    step = max(1, CHUNK_ENTRIES // X.shape[1])
    for lo in range(p["start"], p["end"], step):
        hi = min(lo + step, p["end"])
        s.put(lo - p["start"], evaluate(model, X[lo:hi], p["missing_cond_max"]))
    return s, time.perf_counter() - t0, 0.0, {"fit_rows": p["end"]}


def make_params(rank, start, end, window=None, refit_every=None, floor=DEFAULT_FLOOR,
                missing_cond_max=DEFAULT_COND_MAX, incremental_noise="sklearn"):
    """The parameters the runners take (refit_every defaults to window // 4)."""
    if refit_every is None and window is not None:
        refit_every = default_refit_every(window)
    return {"rank": rank, "start": start, "end": end, "window": window, "refit_every": refit_every, "floor": floor,
            "missing_cond_max": missing_cond_max, "incremental_noise": incremental_noise}


RUNNERS = {"window": run_window, "incremental": run_incremental, "static": run_static}


# ---------------------------------------------------------------------------
# Sums, series and summary (the mini-app's prequential_report.hpp)


def means(samples, zero_norm, residual_fraction, nll, surprises):
    with_norm = samples - zero_norm
    return {"samples": int(samples), "zero_norm_samples": int(zero_norm),
            "residual_fraction_mean": residual_fraction / with_norm if with_norm > 0 else None,
            "nll_mean": nll / samples if samples > 0 else None,
            "surprise_rate": surprises / samples if samples > 0 else None}


def cumulative_sums(s):
    """Running sums after each row: samples, zero_norm, residual_fraction, nll, surprises."""
    ev = s.evaluated
    zero = ev & (s.yy == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        rf = np.where(ev & ~zero, s.rho2 / np.where(zero | ~ev, 1.0, s.yy), 0.0)
    cols = [ev.astype(np.float64), zero.astype(np.float64), rf, np.where(ev, s.nll, 0.0),
            (ev & s.surprise).astype(np.float64)]
    return [np.concatenate([[0.0], np.cumsum(c)]) for c in cols]


def _pooled(values):
    """One stream's value as it is (so a one-stream run is unchanged), several
    streams' correctly rounded sum."""
    return values[0] if len(values) == 1 else math.fsum(values)


def summarize(s, start, steps):
    """(prequential summary, series) of one method's scores: s is the Scores
    of one stream or a list of them, one per stream, whose rows all begin at
    row `start` of their own stream (a list is pooled: the sums at step k add
    every stream's rows [0, k), a stream that ended contributing its whole
    sums)."""
    streams = s if isinstance(s, (list, tuple)) else [s]
    cums = [cumulative_sums(x) for x in streams]
    lengths = [x.evaluated.shape[0] for x in streams]

    def sums_at(k):
        return [float(_pooled([c[j][min(k, n)] for c, n in zip(cums, lengths)])) for j in range(5)]
    series, prev = [], [0.0] * 5
    for k in steps:
        tot = sums_at(k)
        entry = means(*tot)
        entry["sums"] = {"samples": tot[0], "zero_norm_samples": tot[1], "residual_fraction": tot[2],
                         "nll": tot[3], "surprises": tot[4]}
        entry["interval"] = means(*[a - b for a, b in zip(tot, prev)])
        series.append({"step": int(k), "sample_index": int(start + k - 1), "prequential": entry})
        prev = tot
    rows = sum(lengths)
    total = means(*sums_at(max(lengths)))
    for key, name in (("nll_mean", "nll"), ("residual_fraction_mean", "residual_fraction"),
                      ("surprise_rate", "surprise_rate")):
        total[name + "_interval_median"] = C.median(e["prequential"]["interval"][key] for e in series)
    total["surprise_rate_calibrated"] = 0.001
    total["rows"] = int(rows)
    total["skipped_samples"] = int(rows - total["samples"])
    total["definition"] = DEFINITION
    return total, series


def stream_totals(s):
    """One stream's totals and sums (the per-stream list of a pooled run)."""
    tot = [float(c[-1]) for c in cumulative_sums(s)]
    out = means(*tot)
    out["sums"] = {"samples": tot[0], "zero_norm_samples": tot[1], "residual_fraction": tot[2], "nll": tot[3],
                   "surprises": tot[4]}
    out["rows"] = int(s.evaluated.shape[0])
    out["skipped_samples"] = out["rows"] - out["samples"]
    return out


def step_boundaries(rows, every=None, steps=None):
    """The series' steps (rows evaluated since start): the multiples of
    `every` (0: none) or the given `steps`, and always the last row."""
    if steps:
        out = sorted(set(int(k) for k in steps))
        if out[0] < 1 or out[-1] > rows:
            raise C.AnalysisError("--steps must lie in [1, %d] (the rows evaluated), got %d..%d" %
                                  (rows, out[0], out[-1]))
    else:
        out = list(range(every, rows, every)) if every else []
    if not out or out[-1] != rows:
        out.append(rows)
    return out


# ---------------------------------------------------------------------------
# Command line


def load_stream(path):
    need_numpy()
    try:
        X = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as e:
        raise C.AnalysisError("%s: cannot read as .npy: %s" % (path, e))
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 2:
        raise C.AnalysisError("%s: expected a (samples, d) array with d >= 2, got shape %s" % (path, X.shape))
    if X.dtype.kind != "f":
        raise C.AnalysisError("%s: expected floating-point data, got %s" % (path, X.dtype))
    return X


def like_settings(path):
    """What --like takes from a mini-app result (its runs[0])."""
    doc = C.load_document(path)
    if not isinstance(doc, dict) or doc.get("program") != "mosaic_miniapp" or not doc.get("runs"):
        raise C.AnalysisError("%s: not a mosaic_miniapp result file with runs" % path)
    run = doc["runs"][0]
    try:
        deck, steps = run["resolved_deck"], run["steps"]
        start = C.first_stepped_row(steps, path)
        warmup = int(steps.get("warmup", 0))
        rows = warmup + int(steps["timed"])
        alg = deck["algorithm"]
        streams = (run.get("decomposition") or {}).get("total_streams")
        timed_samples = steps.get("timed_samples")
        return {"d": int(deck["problem"]["d"]), "rank": int(deck["problem"]["rank"]), "start": start,
                "end": start + rows, "window": int(round(1.0 / float(alg["eta_U"]))),
                "missing_cond_max": float(alg.get("missing_cond_max", DEFAULT_COND_MAX)),
                "steps": [warmup + int(e["step"]) for e in run["diagnostics"]["series"]],
                "warmup": warmup, "streams": None if streams is None else int(streams),
                "timed_samples": None if timed_samples is None else int(timed_samples)}
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
        raise C.AnalysisError("%s: runs[0]: missing or malformed field %s" % (path, e))


def check_streams(paths, rows, p, like, like_path):
    """Several streams: each needs start + 1 rows at least (its init rows and
    one scored row), and with --like the files must be the result's streams:
    as many, the longest reaching its end and the timed steps summing to its
    steps.timed_samples. Returns each stream's end, min(end, rows)."""
    for path, n in zip(paths, rows):
        if n < p["start"] + 1:
            raise C.AnalysisError("%s: %d rows, fewer than start + 1 = %d: a stream needs its %d rows before the "
                                  "first scored row and one row to score" % (path, n, p["start"] + 1, p["start"]))
    ends = [min(p["end"], n) for n in rows]
    if like:
        if like["streams"] is not None and like["streams"] != len(paths):
            raise C.AnalysisError("--like %s ran %d streams, %d .npy files given" %
                                  (like_path, like["streams"], len(paths)))
        if max(ends) != like["end"]:
            raise C.AnalysisError("--like %s ran %d steps (warm-up included) after row %d, the longest of these "
                                  "files scores %d rows" % (like_path, like["end"] - like["start"], like["start"],
                                                            max(ends) - p["start"]))
        timed = sum(e - p["start"] - like["warmup"] for e in ends)
        if like["timed_samples"] is not None and timed != like["timed_samples"]:
            raise C.AnalysisError("--like %s: its streams took %d timed steps in all (steps.timed_samples), these "
                                  "files give %d: not the same files" % (like_path, like["timed_samples"], timed))
    return ends


def check_parameters(p, rows, d, methods):
    def bad(text):
        raise C.AnalysisError(text)
    r = p["rank"]
    if r is None or p["start"] is None:
        bad("--rank and --start are required (or --like RESULT)")
    if not 1 <= r < d:
        bad("--rank %d must be in [1, d) with d = %d" % (r, d))
    if not r < p["start"]:
        bad("--start %d must exceed the rank %d (the first fit needs r + 1 rows)" % (p["start"], r))
    if not p["start"] < p["end"] <= rows:
        bad("need start < end <= rows: start %d, end %d, rows %d" % (p["start"], p["end"], rows))
    if "window" in methods or "incremental" in methods:
        if p["window"] is None and "window" in methods:
            bad("--window is required for the window method (or --like RESULT)")
        if p["refit_every"] is None:
            if p["window"] is None:
                bad("--refit-every is required (or --window, whose quarter is the default)")
            p["refit_every"] = default_refit_every(p["window"])
    if "window" in methods and not p["window"] > r:
        bad("--window %d must exceed the rank %d (a window of W rows has at most W - 1 directions)" %
            (p["window"], r))
    if p["refit_every"] is not None and p["refit_every"] < 1:
        bad("--refit-every must be >= 1")
    if "incremental" in methods and p["refit_every"] < r:
        bad("--refit-every %d must be >= the rank %d for incremental (IncrementalPCA's batches)" %
            (p["refit_every"], r))
    if not p["floor"] > 0:
        bad("--floor must be > 0")
    if not p["missing_cond_max"] > 0:
        bad("--missing-cond-max must be > 0")


def cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def versions():
    out = {"python": platform.python_version(), "numpy": np.__version__}
    try:
        import sklearn
        out["sklearn"] = sklearn.__version__
    except ImportError:
        out["sklearn"] = None
    return out


@contextlib.contextmanager
def blas_threads(n):
    """Limits BLAS to n threads (threadpoolctl) for the block; yields what was
    set: n, or "environment" (n = 0, or no threadpoolctl)."""
    if n == 0:
        yield "environment"
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield "environment (no threadpoolctl)"
        return
    with threadpool_limits(limits=n, user_api="blas"):
        yield n


def describe(name, params):
    """A method's text and parameters for the output."""
    parameters = {"rank": params["rank"], "floor": params["floor"], "missing_cond_max": params["missing_cond_max"]}
    if name == "window":
        parameters.update(window=params["window"], refit_every=params["refit_every"])
    elif name == "incremental":
        parameters.update(batch=params["refit_every"], initial_batch=params["start"],
                          noise=params.get("incremental_noise", "sklearn"))
    text = METHOD_TEXT["incremental/total" if name == "incremental" and params.get("incremental_noise") == "total"
                       else name]
    return text, parameters


def run_baselines(X, params, methods, steps):
    """{method: entry} for the rows of params (module docstring)."""
    out = {}
    for name in methods:
        scores, wall, init_s, extra = RUNNERS[name](X, params)
        rows = params["end"] - params["start"]
        total, series = summarize(scores, params["start"], steps)
        text, parameters = describe(name, params)
        out[name] = {"definition": text, "parameters": parameters, "prequential": total,
                     "series": series, "wall_seconds": wall, "init_seconds": init_s,
                     "seconds_per_sample": (wall - init_s) / rows, "counts": extra}
    return out


def run_pooled(streams, params, methods, steps):
    """{method: entry} over several independent streams, each [(path, X,
    end)]: every method runs on every stream on its own (a fresh model per
    stream, rows [start, end) of it) and the measures are pooled over them
    (summarize); each entry also lists every stream's totals."""
    out = {}
    for name in methods:
        scores, per_stream, counts = [], [], {}
        wall = init_s = 0.0
        for i, (path, X, end) in enumerate(streams):
            s, w, t0, extra = RUNNERS[name](X, dict(params, end=end))
            scores.append(s)
            wall += w
            init_s += t0
            for key, v in extra.items():
                counts[key] = counts.get(key, 0) + v
            entry = {"stream": i, "path": path, "file": os.path.basename(path), "end": int(end)}
            entry.update(stream_totals(s))
            entry.update(wall_seconds=w, init_seconds=t0)
            per_stream.append(entry)
        total, series = summarize(scores, params["start"], steps)
        text, parameters = describe(name, params)
        out[name] = {"definition": text + "; run on each stream on its own, pooled over the %d streams" %
                     len(streams), "parameters": parameters, "prequential": total, "series": series,
                     "wall_seconds": wall, "init_seconds": init_s,
                     "seconds_per_sample": (wall - init_s) / total["rows"], "counts": counts, "streams": per_stream}
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m analysis.baselines", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("npy", metavar="NPY", nargs="+", help="the stream: (samples, d), time order, NaN = "
                        "missing; several: independent streams of one d, each run on its own and pooled")
    parser.add_argument("--like", metavar="RESULT", help="a mini-app result on the same stream(s): its runs[0] sets "
                        "--rank, --start (init_samples), --end (start + warm-up + timed steps; several streams: "
                        "the longest's), --steps (its series: warm-up + step), --missing-cond-max and --window "
                        "(round(1/eta_U)) unless given")
    parser.add_argument("--rank", type=int, help="r, the retained rank")
    parser.add_argument("--start", type=int, help="first evaluated row (MOSAIC's algorithm.init_samples)")
    parser.add_argument("--end", type=int, help="end of the evaluated rows (default: every row; several "
                        "streams: each ends at min(END, its rows))")
    parser.add_argument("--window", type=int, help="W, the window method's rows (about 1/eta_U)")
    parser.add_argument("--refit-every", type=int, help="M: the window's refit period and the incremental "
                        "batch (default W/4)")
    parser.add_argument("--every", type=int, default=500, help="series step every E rows (0: only the end; "
                        "default %(default)s)")
    parser.add_argument("--steps", help="comma-separated series steps instead of --every")
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated subset of %s" %
                        ",".join(METHODS))
    parser.add_argument("--floor", type=float, default=DEFAULT_FLOOR,
                        help="s2 >= FLOOR * trace / d (default %(default)g)")
    parser.add_argument("--missing-cond-max", type=float, help="rows with tr(C^-1) above it are not evaluated "
                        "(MOSAIC's algorithm.missing_cond_max; default %g)" % DEFAULT_COND_MAX)
    parser.add_argument("--incremental-noise", choices=("sklearn", "total"), default="sklearn",
                        help="incremental's s2: IncrementalPCA's noise_variance_ (default) or PPCA's from the "
                        "running total variance (see above)")
    parser.add_argument("--blas-threads", type=int, default=1, help="BLAS threads (0: as the environment sets "
                        "them; default %(default)s)")
    parser.add_argument("-o", "--output", metavar="OUT.json", required=True)
    args = parser.parse_args(argv)
    need_numpy()
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise C.AnalysisError("--methods: unknown %s (choose from %s)" % (", ".join(unknown) or "(none)",
                                                                           ",".join(METHODS)))
    if "incremental" in methods:
        incremental_pca_class()
    arrays = [load_stream(path) for path in args.npy]
    several = len(arrays) > 1
    d = arrays[0].shape[1]
    for path, X in zip(args.npy[1:], arrays[1:]):
        if X.shape[1] != d:
            raise C.AnalysisError("%s: d = %d, %s has d = %d: the streams must share d" %
                                  (path, X.shape[1], args.npy[0], d))
    lengths = [int(X.shape[0]) for X in arrays]
    rows = max(lengths)
    like = like_settings(args.like) if args.like else {}
    if like and like["d"] != d:
        raise C.AnalysisError("--like %s has d = %d, the stream d = %d" % (args.like, like["d"], d))
    if like and not several and like["streams"] not in (None, 1):
        raise C.AnalysisError("--like %s ran %d streams: give its %d .npy files" %
                              (args.like, like["streams"], like["streams"]))

    def pick(value, key, default=None):
        return value if value is not None else like.get(key, default)
    params = {"rank": pick(args.rank, "rank"), "start": pick(args.start, "start"),
              "end": pick(args.end, "end", rows), "window": pick(args.window, "window"),
              "refit_every": args.refit_every, "floor": args.floor, "incremental_noise": args.incremental_noise,
              "missing_cond_max": pick(args.missing_cond_max, "missing_cond_max", DEFAULT_COND_MAX)}
    check_parameters(params, rows, d, methods)
    ends = check_streams(args.npy, lengths, params, like, args.like) if several else [params["end"]]
    if args.every < 0:
        raise C.AnalysisError("--every must be >= 0")
    try:
        given = [int(v) for v in args.steps.split(",")] if args.steps else None
    except ValueError:
        raise C.AnalysisError("--steps: expected comma-separated integers, got %r" % args.steps) from None
    if given is None and like and args.every == parser.get_default("every"):
        given = like["steps"]
    n_eval = params["end"] - params["start"]
    steps = step_boundaries(n_eval, args.every, given)
    missing = [int(np.count_nonzero(np.isnan(X[:end]))) for X, end in zip(arrays, ends)]
    if args.blas_threads < 0:
        raise C.AnalysisError("--blas-threads must be >= 0")
    with blas_threads(args.blas_threads) as threads:
        if several:
            results = run_pooled(list(zip(args.npy, arrays, ends)), params, methods, steps)
        else:
            results = run_baselines(arrays[0], params, methods, steps)
    if several:
        names = [os.path.basename(path) for path in args.npy]
        dtypes = sorted(set(str(X.dtype) for X in arrays))
        inp = {"paths": list(args.npy), "file": "%d streams (%s)" % (len(names), short_list(names)),
               "rows": int(sum(lengths)), "d": int(d), "dtype": dtypes[0] if len(dtypes) == 1 else dtypes,
               "missing_entries": sum(missing),
               "missing_fraction": sum(missing) / float(sum(ends) * d)}
        n_scored = sum(end - params["start"] for end in ends)
    else:
        inp = {"path": args.npy[0], "file": os.path.basename(args.npy[0]), "rows": int(rows), "d": int(d),
               "dtype": str(arrays[0].dtype), "missing_entries": missing[0],
               "missing_fraction": missing[0] / float(params["end"] * d)}
        n_scored = n_eval
    doc = {"program": "mosaic_baselines", "format_version": 1, "input": inp,
           "like": args.like, "start": params["start"], "end": params["end"], "rows_evaluated": n_scored,
           "steps": steps, "parameters": params, "missing_data": MISSING_TEXT, "definition": DEFINITION,
           "timing": "wall_seconds: fits and evaluation (time.perf_counter); init_seconds: building the model used "
                     "at row start from rows [0, start); seconds_per_sample = (wall - init) / rows evaluated",
           "environment": {"hostname": platform.node(), "cpu_model": cpu_model(), "cpu_count": os.cpu_count(),
                           "blas_threads": threads, "versions": versions()},
           "methods": results}
    if several:
        doc["streams"] = len(arrays)
        doc["pooled"] = POOLED_TEXT
        doc["inputs"] = [{"stream": i, "path": path, "file": os.path.basename(path), "rows": n, "end": int(end),
                          "rows_evaluated": int(end - params["start"]), "dtype": str(X.dtype),
                          "missing_entries": m}
                         for i, (path, X, n, end, m) in enumerate(zip(args.npy, arrays, lengths, ends, missing))]
        doc["timing"] += "; each a sum over the streams"
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, allow_nan=False)
    if several:
        print("pooled over %d streams (%d rows scored)" % (len(arrays), n_scored))
    for name, res in results.items():
        pq = res["prequential"]
        print("%-11s samples %d (skipped %d), NLL mean %s, residual fraction mean %s, surprise rate %s, "
              "%.1f us/sample" % (name, pq["samples"], pq["skipped_samples"], _g(pq["nll_mean"]),
                                  _g(pq["residual_fraction_mean"]), _g(pq["surprise_rate"]),
                                  1e6 * res["seconds_per_sample"]))
    print("wrote " + args.output)
    return 0


def short_list(names, most=4):
    return ", ".join(names) if len(names) <= most else "%s, ..., %s" % (", ".join(names[:most - 1]), names[-1])


def _g(v):
    return "n/a" if v is None else "%.6g" % v


if __name__ == "__main__":
    sys.exit(C.main_wrapper("analysis.baselines", main, sys.argv[1:]))
