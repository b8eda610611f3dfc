// Shared helpers of the host-reference tests: a small independent random
// generator (so the tests of counter_rng.hpp do not test themselves), dense
// row-major double matrices built only from host::symmetric_eigen and plain
// loops, and synthetic-stream drivers.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mosaic/algorithm/host_linalg.hpp"
#include "mosaic/algorithm/prequential.hpp"
#include "mosaic/algorithm/reference.hpp"
#include "mosaic/algorithm/synthetic.hpp"

namespace mosaic::test {

// SplitMix64 + Box-Muller: independent of counter_rng.hpp on purpose.
class TestRng {
 public:
  explicit TestRng(std::uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 0x1234567ull) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return (double(next() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
  double normal() {
    const double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  std::vector<double> normals(std::size_t n) {
    std::vector<double> v(n);
    for (auto& x : v) x = normal();
    return v;
  }

 private:
  std::uint64_t state_;
};

using Mat = std::vector<double>;  // row-major

inline Mat matmul(const Mat& A, const Mat& B, int m, int k, int n) {
  Mat C(std::size_t(m) * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int l = 0; l < k; ++l)
      for (int j = 0; j < n; ++j) C[i * n + j] += A[i * k + l] * B[l * n + j];
  return C;
}
inline Mat transpose(const Mat& A, int m, int n) {
  Mat B(std::size_t(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) B[j * m + i] = A[i * n + j];
  return B;
}
inline double frob(const Mat& A) {
  double s = 0;
  for (double v : A) s += v * v;
  return std::sqrt(s);
}
inline double frob_diff(const Mat& A, const Mat& B) {
  double s = 0;
  for (std::size_t k = 0; k < A.size(); ++k) s += (A[k] - B[k]) * (A[k] - B[k]);
  return std::sqrt(s);
}
inline Mat identity(int n) {
  Mat I(std::size_t(n) * n, 0.0);
  for (int i = 0; i < n; ++i) I[i * n + i] = 1.0;
  return I;
}

// f(A) = Q f(Lambda) Q^T of a symmetric matrix, through host::symmetric_eigen.
inline Mat sym_function(const Mat& A, int n, const std::function<double(double)>& f) {
  std::vector<double> lam, Q;
  host::symmetric_eigen(A, n, lam, Q);
  Mat out(std::size_t(n) * n, 0.0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      for (int k = 0; k < n; ++k) out[i * n + j] += Q[i * n + k] * f(lam[k]) * Q[j * n + k];
  return out;
}

inline Mat random_orthonormal(int d, int r, TestRng& rng) {
  Mat Q = rng.normals(std::size_t(d) * r);
  host::orthonormalize_columns(Q, d, r);
  return Q;
}

// SPD with eigenvalues log-uniform in [lo, hi] and a random eigenbasis.
inline Mat random_spd(int r, TestRng& rng, double lo, double hi) {
  const Mat Q = random_orthonormal(r, r, rng);
  Mat S(std::size_t(r) * r, 0.0);
  std::vector<double> lam(r);
  for (auto& l : lam) l = lo * std::pow(hi / lo, rng.uniform());
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < r; ++j)
      for (int k = 0; k < r; ++k) S[i * r + j] += Q[i * r + k] * lam[k] * Q[j * r + k];
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < i; ++j) S[i * r + j] = S[j * r + i];
  return S;
}

template <class T>
std::vector<T> cast(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}
template <class T>
std::vector<double> to_double(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// A random valid state: mu ~ N(0, I), U random orthonormal, S random SPD, s2.
template <class T>
ReferenceState<T> random_state(int d, int r, TestRng& rng, double s2 = 0.05) {
  ReferenceState<T> st(d, r);
  st.mu = cast<T>(rng.normals(std::size_t(d)));
  st.U = cast<T>(random_orthonormal(d, r, rng));
  st.S = cast<T>(random_spd(r, rng, 0.3, 3.0));
  st.s2 = T(s2);
  return st;
}

// Section 4's prequential sums of two streams (an engine's and the
// reference's): the sample counts exactly (and the surprises when
// `exact_surprises`: a float run may put one sample on the other side of
// the threshold), and returns the larger relative gap of the residual
// fraction and NLL sums (the NLL's relative to max(|sum|, samples): a
// per-coordinate NLL can be near 0). Fails when nothing was evaluated and
// `evaluated` says something should have been.
template <class T>
double prequential_gap(const ReferenceState<T>& a, const ReferenceState<T>& b, bool exact_surprises, bool evaluated,
                       const std::string& what) {
  const auto& pa = a.prequential;
  const auto& pb = b.prequential;
  EXPECT_EQ(pa[preq_samples], pb[preq_samples]) << what;
  EXPECT_EQ(pa[preq_zero_norm], pb[preq_zero_norm]) << what;
  if (exact_surprises) EXPECT_EQ(pa[preq_surprises], pb[preq_surprises]) << what;
  if (evaluated) EXPECT_GT(pb[preq_samples], 0.0) << what;
  const double frac =
      std::fabs(pa[preq_residual_fraction] - pb[preq_residual_fraction]) / std::max(pb[preq_residual_fraction], 1e-300);
  const double nll = std::fabs(pa[preq_nll] - pb[preq_nll]) / std::max(std::fabs(pb[preq_nll]), pb[preq_samples]);
  if (pb[preq_samples] == 0) return 0.0;
  return std::max(frac, nll);
}

// A synthetic stream and the state after init: data on its first n0 samples.
template <class T>
struct StreamRun {
  SyntheticSpec spec;
  SyntheticTruth truth;
  std::uint64_t stream = 0;
  MosaicParams params;
  ReferenceState<T> state;
  std::uint64_t next_step = 0;  // index of the next sample of the stream
  std::vector<T> x;

  StreamRun(const SyntheticSpec& s, const MosaicParams& p, std::uint64_t stream_id = 0)
      : spec(s), truth(make_synthetic_truth(s, stream_id)), stream(stream_id), params(p), x(std::size_t(s.d)) {
    const int n0 = p.resolved_init_samples(s.r);
    std::vector<T> X(std::size_t(n0) * s.d);
    for (int t = 0; t < n0; ++t)
      synthetic_sample(spec, truth, stream, std::uint64_t(t), X.data() + std::size_t(t) * s.d);
    state = reference_init_data(X.data(), n0, s.d, s.r, p);
    next_step = std::uint64_t(n0);
  }
  // Draws the next sample into x (does not step).
  const T* draw() {
    synthetic_sample(spec, truth, stream, next_step++, x.data());
    return x.data();
  }
  StepInfo step() { return reference_step(state, draw(), params); }
};

// 1 - ||U^T V||_F^2 / r: normalized projector distance to an orthonormal V.
template <class T>
double projector_distance(const ReferenceState<T>& st, const std::vector<double>& V) {
  const int d = st.d, r = st.r;
  double f = 0;
  for (int a = 0; a < r; ++a)
    for (int b = 0; b < r; ++b) {
      double p = 0;
      for (int i = 0; i < d; ++i) p += double(st.u(i, a)) * V[std::size_t(i) * r + b];
      f += p * p;
    }
  return 1.0 - f / r;
}

template <class T>
double s_norm(const ReferenceState<T>& st) {
  return frob(to_double(st.S));
}

// Runs `stmt`, expects it to throw `Ex` whose what() contains every one of
// `needles`.
template <class Ex, class F>
void expect_throw_with(F&& stmt, std::initializer_list<std::string> needles) {
  try {
    stmt();
    ADD_FAILURE() << "expected an exception, none was thrown";
  } catch (const Ex& e) {
    const std::string what = e.what();
    for (const auto& n : needles)
      EXPECT_NE(what.find(n), std::string::npos) << "message \"" << what << "\" does not mention \"" << n << "\"";
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw the wrong exception type: " << e.what();
  }
}

}  // namespace mosaic::test
