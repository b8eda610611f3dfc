"""A NumPy twin of ALGORITHM.md sections 2-4 for one complete stream, written
from the spec (not from the C++): init: data and section 3's growing
window, the section-2 step with the default options (covariance_update:
exact, subspace_direction: precision, no re-orthonormalization), and section
4's prequential quantities of each sample with the state before its step.
The mpi checks `prequential` and `init_window` compare the mini-app's
reported sums with these (run_mpi_checks.py)."""
import math

import numpy as np

Z_0999 = 3.090232306167813  # the standard normal 0.999 quantile


def chi2_quantile_0999(k):
    """Wilson-Hilferty's 0.999 quantile of chi-square with k degrees of freedom."""
    a = 2.0 / (9.0 * k)
    return k * (1.0 - a + Z_0999 * math.sqrt(a)) ** 3


def init_data(x0, r):
    """Section 3 on the rows x0 (n0 x d): mean, frame, S and s2 in double."""
    n0, d = x0.shape
    mu = x0.mean(axis=0)
    y = (x0 - mu).T
    lam, v = np.linalg.eigh(y.T @ y / n0)
    lam, v = lam[::-1], v[:, ::-1]
    u = y @ v[:, :r] / np.sqrt(n0 * lam[:r])
    s = np.diag(lam[:r])
    floor = 1e-6 * lam[:r].mean()
    s2 = max(np.clip(lam[r:], 0.0, None).sum() / (d - r), floor)
    return mu, u, s, s2


def init_window(x, r, n0, max_samples):
    """Section 3's growing window: the rows init: data consumes, n0, 2 n0,
    4 n0, ... until the Gram's eigenvalues pass the rank check lambda_r >
    1e3 n eps lambda_1 (double), within min(max_samples, rows); None where
    no window passes."""
    m = n0
    while m <= min(max_samples, len(x)):
        y = x[:m] - x[:m].mean(axis=0)
        lam = np.linalg.eigvalsh(y @ y.T / m)[::-1]
        if lam[r - 1] > 1e3 * m * np.finfo(float).eps * lam[0]:
            return m
        m *= 2
    return None


def run_stream(x, r, n0, eta_mu=0.01, eta_s_cov=0.01, eta_u=0.005, eta_s=0.01, gamma=1.0, max_step=1.0):
    """Init on the first n0 rows, then a step per further row. Returns one
    row per step: [nll, residual fraction (nan when ||y|| = 0), surprise]."""
    d = x.shape[1]
    mu, u, s, s2 = init_data(x[:n0], r)
    out = []
    threshold = chi2_quantile_0999(d)
    for xt in x[n0:]:
        y = xt - mu
        z = u.T @ y
        e = y - u @ z
        rho2 = e @ e
        chol = np.linalg.cholesky(s)
        w = np.linalg.solve(s, z)
        q = z @ w
        # Section 4, before the state moves.
        yy = y @ y
        m2 = q + rho2 / s2
        logdet = 2.0 * np.log(np.diag(chol)).sum()
        nll = 0.5 * (d * math.log(2 * math.pi) + logdet + (d - r) * math.log(s2) + m2) / d
        out.append([nll, rho2 / yy if yy > 0 else math.nan, 1.0 if m2 > threshold else 0.0])
        # Section 2.
        ell = eta_s_cov * math.sqrt((q - 1) ** 2 + (r - 1))
        eta = eta_s_cov if ell <= max_step else eta_s_cov * max_step / ell
        c = math.expm1(eta * q) / q if q > 0 else eta
        s_new = math.exp(-eta) * (s + c * np.outer(z, z))
        g = np.linalg.solve(s + gamma * s2 * np.eye(r), z)
        gnorm = np.linalg.norm(g)
        rho = math.sqrt(rho2)
        if rho * gnorm > np.finfo(float).tiny / np.finfo(float).eps:
            theta = math.atan(eta_u * rho * gnorm)
            gh = g / gnorm
            u = u + np.outer((math.cos(theta) - 1) * (u @ gh) + math.sin(theta) * e / rho, gh)
            m = np.eye(r) + (math.cos(theta) - 1) * np.outer(gh, gh)
            s_new = m.T @ s_new @ m + s2 * math.sin(theta) ** 2 * np.outer(gh, gh)
        s = 0.5 * (s_new + s_new.T)
        s2 = (1 - eta_s) * s2 + eta_s * rho2 / (d - r)
        mu = mu + eta_mu * (xt - mu)
    return np.array(out)
