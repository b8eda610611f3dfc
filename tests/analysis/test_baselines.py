"""analysis.baselines: the prequential evaluation against dense Gaussians and
against MOSAIC's NumPy twin (tests/mpi/numpy_mosaic.py), the fits (window
refits see only past rows, the Gram trick, missing entries), the
Wilson-Hilferty quantile, the command line and its errors."""

import json
import math
import os
import sys
import unittest

import numpy as np

from analysis_test_support import REPO, TempDirTest, run_main

from analysis import baselines as B
from analysis import common as C

sys.path.insert(0, os.path.join(REPO, "tests", "mpi"))
import numpy_mosaic as twin  # noqa: E402


def random_model(rng, d, r, s2=0.3, seen=None):
    U, _ = np.linalg.qr(rng.standard_normal((d, r)))
    A = rng.standard_normal((r, r))
    mu = rng.standard_normal(d)
    if seen is not None:
        mu[~seen] = np.nan
    return B.Model(mu, U, A @ A.T + 0.5 * np.eye(r), s2)


def dense(model, x):
    """(nll per coordinate, m2, rho2, ||y_O||^2, n) from the dense n x n Gaussian of the observed rows."""
    d = model.d
    o = np.isfinite(x) & np.isfinite(model.mu)
    y = (x - model.mu)[o]
    n = int(o.sum())
    P = model.U @ model.U.T
    sigma = model.U @ model.S @ model.U.T + model.s2 * (np.eye(d) - P)
    so = sigma[np.ix_(o, o)]
    sign, logdet = np.linalg.slogdet(so)
    assert sign > 0
    m2 = float(y @ np.linalg.solve(so, y))
    uo = model.U[o]
    z = np.linalg.lstsq(uo, y, rcond=None)[0]
    e = y - uo @ z
    return 0.5 * (n * math.log(2 * math.pi) + logdet + m2) / n, m2, float(e @ e), float(y @ y), n


def low_rank_stream(rng, n, d, r, noise=0.3, basis=None, mean=None):
    if basis is None:
        basis, _ = np.linalg.qr(rng.standard_normal((d, r)))
    a = rng.standard_normal((n, r)) * np.sqrt(np.geomspace(10.0, 2.0, r))
    m = rng.standard_normal(d) if mean is None else mean
    return m + a @ basis.T + noise * rng.standard_normal((n, d))


class Evaluation(unittest.TestCase):
    def check_against_dense(self, model, X):
        res = B.evaluate(model, X)
        checked = 0
        for i, x in enumerate(X):
            if not res["evaluated"][i]:
                continue
            nll, m2, rho2, yy, n = dense(model, x)
            self.assertEqual(res["n"][i], n)
            self.assertAlmostEqual(res["nll"][i], nll, delta=1e-12 * abs(nll))
            self.assertAlmostEqual(res["m2"][i], m2, delta=1e-11 * m2)
            self.assertAlmostEqual(res["rho2"][i], rho2, delta=1e-10 * rho2)
            self.assertAlmostEqual(res["yy"][i], yy, delta=1e-12 * yy)
            self.assertEqual(bool(res["surprise"][i]), m2 > twin.chi2_quantile_0999(n))
            checked += 1
        return res, checked

    def test_complete_rows_equal_the_dense_gaussian(self):
        rng = np.random.default_rng(1)
        for d, r in ((7, 1), (12, 3), (40, 6)):
            model = random_model(rng, d, r)
            X = model.mu + 2.0 * rng.standard_normal((30, d))
            X[3] = model.mu + 40.0 * rng.standard_normal(d)  # a surprise
            res, checked = self.check_against_dense(model, X)
            self.assertEqual(checked, 30)
            self.assertTrue(res["surprise"][3])

    def test_rows_with_missing_entries_equal_the_dense_gaussian_of_the_observed_rows(self):
        rng = np.random.default_rng(2)
        for d, r, frac in ((12, 3, 0.3), (40, 6, 0.7), (40, 6, 0.05)):
            model = random_model(rng, d, r)
            X = model.mu + 2.0 * rng.standard_normal((60, d))
            X[rng.random(X.shape) < frac] = np.nan
            res, checked = self.check_against_dense(model, X)
            n = np.isfinite(X).sum(axis=1)
            # Every row with r + 1 observed or more is evaluated (tr(C^-1) stays far below 1e4 here).
            self.assertEqual(checked, int((n >= r + 1).sum()))
            self.assertFalse(res["evaluated"][n < r + 1].any())
            self.assertGreater(checked, 20)

    def test_coordinates_without_a_mean_are_missing(self):
        rng = np.random.default_rng(3)
        seen = np.ones(12, dtype=bool)
        seen[[2, 7]] = False
        model = random_model(rng, 12, 3, seen=seen)
        X = rng.standard_normal((10, 12))  # complete rows, but the model knows nothing of 2 and 7
        res, checked = self.check_against_dense(model, X)
        self.assertEqual(checked, 10)
        self.assertTrue((res["n"] == 10).all())

    def test_the_tr_cinv_guard_skips_rows(self):
        # The frame's first column lives on coordinates 0-1: with both missing, C is singular.
        rng = np.random.default_rng(4)
        d, r = 10, 2
        U = np.zeros((d, r))
        U[0, 0] = U[1, 0] = math.sqrt(0.5)
        U[2:, 1] = 1.0 / math.sqrt(d - 2)
        model = B.Model(np.zeros(d), U, np.diag([4.0, 2.0]), 0.1)
        X = rng.standard_normal((3, d))
        X[0, [0, 1]] = np.nan  # C singular: skipped
        X[1, 0] = np.nan  # C = diag(0.5, 1): tr(C^-1) = 3
        res = B.evaluate(model, X)
        self.assertEqual(res["evaluated"].tolist(), [False, True, True])
        self.assertFalse(B.evaluate(model, X[1:2], missing_cond_max=2.9)["evaluated"][0])
        self.assertTrue(B.evaluate(model, X[1:2], missing_cond_max=3.1)["evaluated"][0])

    def test_equals_mosaics_numpy_twin_on_the_same_model(self):
        # With every learning rate 0 the twin's state stays its init: it scores every row with
        # the model init_data fits on the first n0 rows, as evaluate() does with that model.
        rng = np.random.default_rng(5)
        d, r, n0 = 20, 3, 60
        x = low_rank_stream(rng, 400, d, r)
        x[150] += 30.0  # a surprise
        x[151] = x[150]
        mu, u, s, s2 = twin.init_data(x[:n0], r)
        want = twin.run_stream(x, r, n0, eta_mu=0.0, eta_s_cov=0.0, eta_u=0.0, eta_s=0.0)
        got = B.evaluate(B.Model(mu, u, s, s2), x[n0:])
        np.testing.assert_allclose(got["nll"], want[:, 0], rtol=1e-13, atol=0)
        np.testing.assert_allclose(got["rho2"] / got["yy"], want[:, 1], rtol=1e-12, atol=0)
        np.testing.assert_array_equal(got["surprise"].astype(float), want[:, 2])
        self.assertGreater(want[:, 2].sum(), 0)

    def test_wilson_hilferty(self):
        # Tabulated chi-square 0.999 quantiles; the approximation's error as prequential.hpp states it.
        table = {2: (13.815510557964274, 0.024), 10: (29.58829844507442, 0.007), 30: (59.70306345245266, 0.002),
                 100: (149.44925277903845, 0.0005), 1000: (1143.9168224937564, 2e-5)}
        for k, (q, tol) in table.items():
            got = B.chi2_quantile_0999(k)
            self.assertAlmostEqual(got, twin.chi2_quantile_0999(k), delta=1e-12 * q)
            self.assertGreater(got, q)  # high at every k
            self.assertLess((got - q) / q, tol, k)
        np.testing.assert_allclose(B.chi2_quantile_0999(np.array([2.0, 30.0])),
                                   [B.chi2_quantile_0999(2.0), B.chi2_quantile_0999(30.0)], rtol=1e-15)


class Fits(unittest.TestCase):
    def test_gram_trick_equals_the_covariance(self):
        rng = np.random.default_rng(6)
        d, r, k = 60, 4, 25
        X = low_rank_stream(rng, k, d, r)
        model = B.ppca_fit(X, r)  # d > k: the Gram path
        Y = X - X.mean(axis=0)
        lam, V = np.linalg.eigh(Y.T @ Y / k)
        lam, V = lam[::-1], V[:, ::-1]
        np.testing.assert_allclose(model.mu, X.mean(axis=0), rtol=1e-13)
        np.testing.assert_allclose(model.U @ model.S @ model.U.T, V[:, :r] @ np.diag(lam[:r]) @ V[:, :r].T,
                                   atol=1e-10)
        self.assertAlmostEqual(model.s2, lam[r:].clip(0).sum() / (d - r), delta=1e-12)
        np.testing.assert_allclose(model.U.T @ model.U, np.eye(r), atol=1e-13)

    def test_missing_entries_zero_filled_and_the_floor(self):
        rng = np.random.default_rng(7)
        d, r, k = 8, 2, 40
        X = low_rank_stream(rng, k, d, r)
        X[rng.random(X.shape) < 0.3] = np.nan
        X[:, 5] = np.nan  # never observed: no mean
        model = B.ppca_fit(X, r)
        obs = np.isfinite(X)
        mu = np.array([X[obs[:, j], j].mean() if obs[:, j].any() else np.nan for j in range(d)])
        np.testing.assert_allclose(model.mu, mu, rtol=1e-13)
        self.assertFalse(model.seen[5])
        Y = np.where(obs, X - np.nan_to_num(mu), 0.0)
        lam, V = np.linalg.eigh(Y.T @ Y / k)
        np.testing.assert_allclose(model.U @ model.S @ model.U.T,
                                   V[:, -r:] @ np.diag(lam[-r:]) @ V[:, -r:].T, atol=1e-10)
        self.assertAlmostEqual(model.s2, lam[:-r].clip(0).sum() / (d - r), delta=1e-12)
        # Exactly rank r data: the remaining eigenvalues are 0 and s2 sits on the floor.
        Z = low_rank_stream(rng, k, d, r, noise=0.0)
        tight = B.ppca_fit(Z, r, floor=1e-3)
        Yz = Z - Z.mean(axis=0)
        self.assertAlmostEqual(tight.s2, 1e-3 * np.trace(Yz.T @ Yz / k) / d, delta=1e-12)

    def test_window_refits_use_only_past_rows(self):
        # The stream changes at row t = 400 to data in a subspace orthogonal to the old one, far
        # off the old mean. Rows [400, 450) are scored by the model fit on rows [200, 400): it
        # cannot know (residual fraction near 1, NLL far above before); row 450's model has seen
        # 50 new rows.
        rng = np.random.default_rng(8)
        d, r = 30, 3
        Q, _ = np.linalg.qr(rng.standard_normal((d, 2 * r)))
        X = np.vstack([low_rank_stream(rng, 400, d, r, noise=0.05, basis=Q[:, :r], mean=np.zeros(d)),
                       low_rank_stream(rng, 200, d, r, noise=0.05, basis=Q[:, r:], mean=np.full(d, 0.5))])
        p = B.make_params(r, 100, 600, window=200, refit_every=50)
        scores = B.run_window(X, p)[0]
        rf = scores.rho2 / scores.yy
        t = 400 - p["start"]
        self.assertLess(rf[t - 50:t].mean(), 0.05)
        self.assertGreater(rf[t:t + 50].min(), 0.9)
        self.assertGreater(scores.nll[t:t + 50].min(), scores.nll[t - 50:t].max() + 5.0)
        before = B.evaluate(B.ppca_fit(X[200:400], r), X[400:450])
        np.testing.assert_allclose(scores.nll[t:t + 50], before["nll"], rtol=1e-13)
        after = B.evaluate(B.ppca_fit(X[250:450], r), X[450:500])
        np.testing.assert_allclose(scores.nll[t + 50:t + 100], after["nll"], rtol=1e-13)

    def test_incremental_scores_each_batch_with_the_earlier_batches(self):
        from sklearn.decomposition import IncrementalPCA
        rng = np.random.default_rng(9)
        d, r = 20, 2
        X = low_rank_stream(rng, 300, d, r)
        X[200:] += 5.0
        for noise in ("sklearn", "total"):
            p = B.make_params(r, 100, 300, refit_every=25, incremental_noise=noise)
            scores = B.run_incremental(X, p)[0]
            ipca = IncrementalPCA(n_components=r)
            ipca.partial_fit(X[:100])
            for t in range(100, 200, 25):
                ipca.partial_fit(X[t:t + 25])
            model = B.ipca_model(ipca, np.ones(d, dtype=bool), noise=noise)
            want = B.evaluate(model, X[200:225])
            np.testing.assert_allclose(scores.nll[100:125], want["nll"], rtol=1e-12)
            if noise == "total":
                # PPCA's noise of the same 200 rows (ML, divided by n), on the
                # n - 1 scale of explained_variance_: the trailing eigenvalues' mean.
                rows = X[:200] - X[:200].mean(axis=0)
                eig = np.linalg.eigvalsh(rows.T @ rows / (len(rows) - 1))[::-1]
                self.assertAlmostEqual(model.s2, eig[r:].mean(), delta=1e-3 * eig[r:].mean())  # IPCA is approximate
            else:
                self.assertEqual(model.s2, ipca.noise_variance_)

    def test_incremental_fills_missing_entries_with_the_running_mean(self):
        rm = B.RunningMean(3)
        a = rm.fill(np.array([[1.0, np.nan, np.nan], [3.0, 4.0, np.nan]]))
        np.testing.assert_array_equal(a, [[1.0, 4.0, 0.0], [3.0, 4.0, 0.0]])
        b = rm.fill(np.array([[np.nan, 1.0, 2.0]]))
        np.testing.assert_array_equal(b, [[2.0, 1.0, 2.0]])
        self.assertEqual(rm.seen.tolist(), [True, True, True])

    def test_static_beats_window_in_sample_on_a_stationary_stream(self):
        rng = np.random.default_rng(10)
        X = low_rank_stream(rng, 1500, 25, 3)
        p = B.make_params(3, 100, 1500, window=60, refit_every=15)
        out = B.run_baselines(X, p, ["window", "static"], [700, 1400])
        w, s = out["window"]["prequential"], out["static"]["prequential"]
        self.assertLess(s["nll_mean"], w["nll_mean"])
        self.assertLess(s["residual_fraction_mean"], w["residual_fraction_mean"])
        self.assertEqual(s["samples"], 1400)


class CommandLine(TempDirTest):
    def stream(self, X, name="stream.npy"):
        path = os.path.join(self.tmp, name)
        np.save(path, X)
        return path

    def test_writes_the_result_json(self):
        rng = np.random.default_rng(11)
        X = low_rank_stream(rng, 700, 16, 2)
        X[rng.random(X.shape) < 0.1] = np.nan
        out = os.path.join(self.tmp, "b.json")
        rc, text, err = run_main(B, [self.stream(X), "--rank", "2", "--start", "100", "--window", "80",
                                     "--refit-every", "20", "--every", "250", "-o", out])
        self.assertEqual(rc, 0, err)
        self.assertIn("static", text)
        with open(out, encoding="utf-8") as f:
            doc = json.load(f)
        self.assertEqual(doc["program"], "mosaic_baselines")
        self.assertEqual((doc["start"], doc["end"], doc["rows_evaluated"]), (100, 700, 600))
        self.assertEqual(doc["steps"], [250, 500, 600])
        self.assertEqual(sorted(doc["methods"]), ["incremental", "static", "window"])
        self.assertIn("set to 0", doc["missing_data"])
        for name, m in doc["methods"].items():
            pq = m["prequential"]
            for key in ("samples", "zero_norm_samples", "nll_mean", "residual_fraction_mean", "surprise_rate",
                        "surprise_rate_calibrated", "nll_interval_median", "residual_fraction_interval_median",
                        "surprise_rate_interval_median", "definition"):
                self.assertIn(key, pq, name)
            self.assertEqual(pq["surprise_rate_calibrated"], 0.001)
            self.assertEqual(pq["samples"] + pq["skipped_samples"], 600)
            self.assertEqual([e["step"] for e in m["series"]], [250, 500, 600])
            self.assertEqual([e["sample_index"] for e in m["series"]], [349, 599, 699])
            last = m["series"][-1]["prequential"]
            self.assertEqual(last["samples"], pq["samples"])
            self.assertAlmostEqual(last["nll_mean"], pq["nll_mean"], delta=1e-12)
            ints = [e["prequential"]["interval"] for e in m["series"]]
            self.assertEqual(sum(i["samples"] for i in ints), pq["samples"])
            nll = sum(i["nll_mean"] * i["samples"] for i in ints) / pq["samples"]
            self.assertAlmostEqual(nll, pq["nll_mean"], delta=1e-10)
            self.assertEqual(pq["nll_interval_median"], sorted(i["nll_mean"] for i in ints)[1])
            self.assertGreater(m["wall_seconds"], 0)
            self.assertGreater(m["seconds_per_sample"], 0)
        self.assertEqual(doc["methods"]["window"]["parameters"]["window"], 80)
        # The static means are those of evaluate() with the fit of every row.
        res = B.evaluate(B.ppca_fit(X, 2), X[100:])
        ev = res["evaluated"]
        self.assertEqual(doc["methods"]["static"]["prequential"]["samples"], int(ev.sum()))
        self.assertAlmostEqual(doc["methods"]["static"]["prequential"]["nll_mean"], res["nll"][ev].mean(),
                               delta=1e-12)

    def test_like_takes_the_results_rows_and_steps(self):
        rng = np.random.default_rng(12)
        X = low_rank_stream(rng, 400, 10, 2)
        result = {"program": "mosaic_miniapp", "runs": [{
            "resolved_deck": {"problem": {"d": 10, "rank": 2}, "algorithm": {"eta_U": 0.02, "init_samples": 50}},
            "steps": {"init_samples": 50, "warmup": 0, "timed": 300},
            "diagnostics": {"series": [{"step": 100}, {"step": 200}, {"step": 300}]}}]}
        like = self.write_doc("result.json", result)
        out = os.path.join(self.tmp, "b.json")
        rc, _, err = run_main(B, [self.stream(X), "--like", like, "--methods", "window", "-o", out])
        self.assertEqual(rc, 0, err)
        with open(out, encoding="utf-8") as f:
            doc = json.load(f)
        self.assertEqual((doc["start"], doc["end"], doc["steps"]), (50, 350, [100, 200, 300]))
        self.assertEqual(doc["methods"]["window"]["parameters"]["window"], 50)
        self.assertEqual(doc["methods"]["window"]["parameters"]["refit_every"], 12)
        # A grown init window (ALGORITHM.md section 3): the steps start after
        # it; streams whose windows differ have no one start row.
        result["runs"][0]["steps"]["init_samples_used"] = {"min": 64, "max": 64, "grown_streams": [
            {"stream_id": 0, "samples": 64}], "definition": ""}
        like = self.write_doc("grown.json", result)
        rc, _, err = run_main(B, [self.stream(X), "--like", like, "--methods", "window", "-o", out])
        self.assertEqual(rc, 0, err)
        with open(out, encoding="utf-8") as f:
            self.assertEqual(json.load(f)["start"], 64)
        result["runs"][0]["steps"]["init_samples_used"]["min"] = 50
        like = self.write_doc("differ.json", result)
        rc, _, err = run_main(B, [self.stream(X), "--like", like, "--methods", "window", "-o", out])
        self.assertNotEqual(rc, 0)
        self.assertIn("init windows differ", err)

    def test_bad_arguments(self):
        rng = np.random.default_rng(13)
        path = self.stream(low_rank_stream(rng, 300, 10, 2))
        base = ["--start", "50", "--window", "40", "--refit-every", "10", "-o", os.path.join(self.tmp, "x.json")]
        cases = [(["--rank", "10"], "--rank 10 must be in [1, d) with d = 10"),
                 (["--rank", "0"], "must be in [1, d)"),
                 (["--rank", "2", "--window", "2"], "--window 2 must exceed the rank 2"),
                 (["--rank", "2", "--start", "2"], "--start 2 must exceed the rank 2"),
                 (["--rank", "2", "--end", "301"], "need start < end <= rows"),
                 (["--rank", "4", "--refit-every", "3"], "--refit-every 3 must be >= the rank 4"),
                 (["--rank", "2", "--methods", "window,pca"], "--methods: unknown pca"),
                 (["--rank", "2", "--steps", "10,x"], "--steps: expected comma-separated integers"),
                 (["--rank", "2", "--steps", "0,10"], "--steps must lie in [1, 250]")]
        for extra, message in cases:
            rc, _, err = run_main(B, [path] + base + extra)
            self.assertEqual(rc, 2, extra)
            self.assertIn(message, err, extra)
        one_d = self.stream(np.zeros(5), "flat.npy")
        rc, _, err = run_main(B, [one_d] + base + ["--rank", "1"])
        self.assertEqual(rc, 2)
        self.assertIn("expected a (samples, d) array", err)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "x.json")))


class SeveralStreams(TempDirTest):
    """Several .npy files, each an independent stream scored to its own end,
    pooled as the mini-app pools its streams (run.steps: all)."""

    START, STEPS = 40, [100, 200, 300, 370]

    def setUp(self):
        super().setUp()
        rng = np.random.default_rng(14)
        self.paths, self.lengths = [], (260, 410, 150)  # unequal; the longest scores 370 rows
        for i, n in enumerate(self.lengths):
            X = low_rank_stream(rng, n, 12, 2, noise=0.4)
            if i == 0:
                X[rng.random(X.shape) < 0.05] = np.nan
            X[n // 2] += 25.0  # a surprise
            self.paths.append(os.path.join(self.tmp, "s%d.npy" % i))
            np.save(self.paths[-1], X)

    def result(self, streams=3, timed_samples=None):
        timed = max(self.lengths) - self.START
        if timed_samples is None:
            timed_samples = sum(n - self.START for n in self.lengths)
        return self.write_doc("r%d_%d.json" % (streams, timed_samples), {"program": "mosaic_miniapp", "runs": [{
            "resolved_deck": {"problem": {"d": 12, "rank": 2}, "algorithm": {"eta_U": 1 / 60.0}},
            "decomposition": {"total_streams": streams},
            "steps": {"init_samples": self.START, "warmup": 0, "timed": timed, "timed_samples": timed_samples,
                      "ended_streams": streams - 1},
            "diagnostics": {"series": [{"step": k} for k in self.STEPS]}}]})

    def run_json(self, argv):
        out = os.path.join(self.tmp, "out%d.json" % len(os.listdir(self.tmp)))
        rc, text, err = run_main(B, argv + ["-o", out])
        self.assertEqual(rc, 0, err)
        with open(out, encoding="utf-8") as f:
            return json.load(f), text

    def test_pooled_equals_the_sums_of_the_one_stream_runs(self):
        pooled, text = self.run_json(self.paths + ["--like", self.result()])
        self.assertIn("pooled over 3 streams", text)
        scored = [n - self.START for n in self.lengths]
        self.assertEqual(pooled["streams"], 3)
        self.assertEqual((pooled["start"], pooled["end"], pooled["steps"]), (40, 410, self.STEPS))
        self.assertEqual(pooled["rows_evaluated"], sum(scored))
        self.assertEqual([s["end"] for s in pooled["inputs"]], list(self.lengths))
        # Each stream alone, with the same parameters and series steps up to its own end.
        alone = []
        for path, n in zip(self.paths, scored):
            steps = ",".join(str(k) for k in self.STEPS if k < n)
            doc, _ = self.run_json([path, "--rank", "2", "--start", "40", "--window", "60"] +
                                   (["--steps", steps] if steps else ["--every", "0"]))
            self.assertEqual(doc["rows_evaluated"], n)
            alone.append(doc)
        keys = ("samples", "zero_norm_samples", "residual_fraction", "nll", "surprises")
        for name, m in pooled["methods"].items():
            self.assertEqual(m["parameters"], alone[0]["methods"][name]["parameters"], name)

            def sums_at(doc, k):  # one stream's sums after k rows (all of them past its end)
                series = doc["methods"][name]["series"]
                return next(e for e in series if e["step"] >= min(k, series[-1]["step"]))["prequential"]["sums"]
            prev = dict.fromkeys(keys, 0.0)
            for e in m["series"]:
                want = {key: sum(sums_at(doc, e["step"])[key] for doc in alone) for key in keys}
                got = e["prequential"]["sums"]
                for key in keys:
                    self.assertAlmostEqual(got[key], want[key], delta=1e-12 * max(1.0, abs(want[key])),
                                           msg=(name, e["step"], key))
                self.assertEqual(e["prequential"]["interval"]["samples"], want["samples"] - prev["samples"])
                self.assertAlmostEqual(e["prequential"]["interval"]["nll_mean"],
                                       (want["nll"] - prev["nll"]) / (want["samples"] - prev["samples"]),
                                       delta=1e-12)
                self.assertEqual(e["sample_index"], 40 + e["step"] - 1)
                prev = want
            total = m["prequential"]
            ones = [doc["methods"][name]["prequential"] for doc in alone]
            self.assertEqual(total["samples"], sum(p["samples"] for p in ones))
            self.assertEqual(total["samples"], prev["samples"])
            self.assertEqual(total["rows"], sum(scored))
            self.assertEqual(total["skipped_samples"], sum(p["skipped_samples"] for p in ones))
            self.assertAlmostEqual(total["nll_mean"], prev["nll"] / prev["samples"], delta=1e-12)
            self.assertAlmostEqual(total["surprise_rate"], prev["surprises"] / prev["samples"], delta=1e-15)
            self.assertGreater(prev["surprises"], 0)
            self.assertEqual(total["nll_interval_median"],
                             C.median(e["prequential"]["interval"]["nll_mean"] for e in m["series"]))
            # The per-stream totals are the one-stream runs' totals.
            self.assertEqual([s["path"] for s in m["streams"]], self.paths)
            for s, p in zip(m["streams"], ones):
                self.assertEqual((s["samples"], s["skipped_samples"], s["rows"]),
                                 (p["samples"], p["skipped_samples"], p["rows"]))
                self.assertEqual(s["nll_mean"], p["nll_mean"])
                self.assertEqual(s["surprise_rate"], p["surprise_rate"])
        # Without --like, the same rows and boundaries by hand.
        hand, _ = self.run_json(self.paths + ["--rank", "2", "--start", "40", "--window", "60",
                                              "--steps", "100,200,300", "--methods", "static"])
        self.assertEqual(hand["methods"]["static"]["series"], pooled["methods"]["static"]["series"])

    def test_a_stream_too_short_and_files_that_are_not_the_results(self):
        short = os.path.join(self.tmp, "short.npy")
        np.save(short, np.ones((40, 12)))
        out = os.path.join(self.tmp, "x.json")
        for paths, like, message in (
                (self.paths + [short], self.result(streams=4), "%s: 40 rows, fewer than start + 1 = 41" % short),
                (self.paths, self.result(streams=2), "ran 2 streams, 3 .npy files given"),
                (self.paths, self.result(timed_samples=5), "took 5 timed steps in all (steps.timed_samples), "
                 "these files give 700: not the same files"),
                (self.paths[:1], self.result(), "ran 3 streams: give its 3 .npy files")):
            rc, _, err = run_main(B, paths + ["--like", like, "--methods", "static", "-o", out])
            self.assertEqual(rc, 2, message)
            self.assertIn(message, err)
        self.assertFalse(os.path.exists(out))

if __name__ == "__main__":
    unittest.main()
