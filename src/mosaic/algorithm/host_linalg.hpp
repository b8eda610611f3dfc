// Small, plain host linear algebra for the reference implementation, the
// initialization and the diagnostics. Dense row-major storage, written for
// clarity rather than speed: these are oracles and O(r^3) helpers, never the
// hot path of the engine.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace mosaic::host {

// Cholesky A = L L^T of an n x n SPD matrix (lower triangle of A is read).
// Returns false if A is not numerically positive definite.
template <class T>
bool cholesky(const std::vector<T>& A, int n, std::vector<T>& L) {
  L.assign(std::size_t(n) * n, T(0));
  for (int j = 0; j < n; ++j) {
    T diag = A[j * n + j];
    for (int k = 0; k < j; ++k) diag -= L[j * n + k] * L[j * n + k];
    if (!(diag > T(0)) || !std::isfinite(diag)) return false;
    const T ljj = std::sqrt(diag);
    L[j * n + j] = ljj;
    for (int i = j + 1; i < n; ++i) {
      T v = A[i * n + j];
      for (int k = 0; k < j; ++k) v -= L[i * n + k] * L[j * n + k];
      L[i * n + j] = v / ljj;
    }
  }
  return true;
}

// Solves L L^T x = b given the Cholesky factor L.
template <class T>
std::vector<T> cholesky_solve(const std::vector<T>& L, int n, const std::vector<T>& b) {
  std::vector<T> x(b);
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < i; ++k) x[i] -= L[i * n + k] * x[k];
    x[i] /= L[i * n + i];
  }
  for (int i = n - 1; i >= 0; --i) {
    for (int k = i + 1; k < n; ++k) x[i] -= L[k * n + i] * x[k];
    x[i] /= L[i * n + i];
  }
  return x;
}

// Eigen-decomposition of a symmetric n x n matrix by cyclic Jacobi rotations.
// Eigenvalues come out in descending order; column j of `vectors` (row-major
// n x n) is the eigenvector of values[j]. Accurate to a few ulps of ||A||:
// the reference's oracle (tridiagonal_eigen.hpp is its fast twin).
template <class T>
void symmetric_eigen(std::vector<T> A, int n, std::vector<T>& values, std::vector<T>& vectors) {
  // The rotations accumulate into V^T, whose columns p and q are rows: at
  // unit stride, the same operations on the same elements.
  std::vector<T> vt(std::size_t(n) * n, T(0));
  for (int i = 0; i < n; ++i) vt[std::size_t(i) * n + i] = T(1);
  for (int sweep = 0; sweep < 100; ++sweep) {
    T off = 0, total = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        total += A[i * n + j] * A[i * n + j];
        if (i != j) off += A[i * n + j] * A[i * n + j];
      }
    if (off <= total * std::numeric_limits<T>::epsilon() * std::numeric_limits<T>::epsilon()) break;
    for (int p = 0; p < n - 1; ++p)
      for (int q = p + 1; q < n; ++q) {
        const T apq = A[p * n + q];
        if (apq == T(0)) continue;
        const T tau = (A[q * n + q] - A[p * n + p]) / (2 * apq);
        const T t = (tau >= 0 ? T(1) : T(-1)) / (std::fabs(tau) + std::sqrt(T(1) + tau * tau));
        const T c = T(1) / std::sqrt(T(1) + t * t), s = t * c;
        for (int k = 0; k < n; ++k) {  // A <- A J (columns p, q)
          const T akp = A[k * n + p], akq = A[k * n + q];
          A[k * n + p] = c * akp - s * akq;
          A[k * n + q] = s * akp + c * akq;
        }
        for (int k = 0; k < n; ++k) {  // A <- J^T A (rows p, q)
          const T apk = A[p * n + k], aqk = A[q * n + k];
          A[p * n + k] = c * apk - s * aqk;
          A[q * n + k] = s * apk + c * aqk;
        }
        T* vp = &vt[std::size_t(p) * n];
        T* vq = &vt[std::size_t(q) * n];
        for (int k = 0; k < n; ++k) {  // V <- V J, on the rows of V^T
          const T vkp = vp[k], vkq = vq[k];
          vp[k] = c * vkp - s * vkq;
          vq[k] = s * vkp + c * vkq;
        }
      }
  }
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return A[a * n + a] > A[b * n + b]; });
  values.resize(n);
  vectors.assign(std::size_t(n) * n, T(0));
  for (int j = 0; j < n; ++j) {
    values[j] = A[order[j] * n + order[j]];
    for (int i = 0; i < n; ++i) vectors[i * n + j] = vt[std::size_t(order[j]) * n + i];
  }
}

// x . y over n elements in 8 interleaved partial sums (element a into sum
// a mod 8), added pairwise at the end: one fixed order whatever the machine.
template <class T>
T dot8(const T* x, const T* y, int n) {
  T part[8] = {};
  int a = 0;
  for (; a + 8 <= n; a += 8)
    for (int l = 0; l < 8; ++l) part[l] += x[a + l] * y[a + l];
  for (int l = 0; l < 8 && a + l < n; ++l) part[l] += x[a + l] * y[a + l];
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

// R factor of the Householder QR of the row-major m x n matrix A: returns the
// min(m,n) x n upper-trapezoidal R (row-major) with A = Q R, Q orthonormal.
// Backward stable and defined for rank-deficient A (a vanishing column is
// skipped, never divided by), so ||A X A^T||_F = ||R X R^T||_F can be
// evaluated without the cancellation of a difference of squared norms.
template <class T>
std::vector<T> householder_r(const std::vector<T>& A, int m, int n) {
  const int k = std::min(m, n);
  // The columns copied out (column j at Ac[j*m .. j*m + m)): the reflections
  // run along them at unit stride, and their inner products in dot8's order.
  std::vector<T> Ac(std::size_t(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) Ac[std::size_t(j) * m + i] = A[std::size_t(i) * n + j];
  std::vector<T> v(static_cast<std::size_t>(m));
  for (int c = 0; c < k; ++c) {
    const T* x = &Ac[std::size_t(c) * m];
    const T norm2 = dot8(x + c, x + c, m - c);
    if (norm2 == T(0)) continue;
    const T a0 = x[c];
    const T alpha = a0 > T(0) ? -std::sqrt(norm2) : std::sqrt(norm2);
    // v = x - alpha e1; v^T v = 2 (norm2 - alpha a0), no cancellation by the sign choice.
    v[c] = a0 - alpha;
    for (int i = c + 1; i < m; ++i) v[i] = x[i];
    const T vv = 2 * (norm2 - alpha * a0);
    for (int j = c; j < n; ++j) {
      T* aj = &Ac[std::size_t(j) * m];
      const T f = 2 * dot8(v.data() + c, aj + c, m - c) / vv;
      for (int i = c; i < m; ++i) aj[i] -= f * v[i];
    }
  }
  std::vector<T> R(std::size_t(k) * n, T(0));
  for (int i = 0; i < k; ++i)
    for (int j = i; j < n; ++j) R[std::size_t(i) * n + j] = Ac[std::size_t(j) * m + i];
  return R;
}

// Orthonormalizes the k columns of the row-major d x k matrix Q in place by
// modified Gram-Schmidt with selective reorthogonalization (below), so the
// result is orthonormal to working precision. Throws if the columns are
// dependent.
// The columns are copied out into contiguous vectors first (the row-major
// column walk missed cache at every element for d in the thousands), and
// every inner product is summed in 8 interleaved partial sums (dot8): a
// fixed order, so one Q always gives the same result, and one the compiler
// can vectorize (a single running sum cannot be reordered).
template <class T>
void orthonormalize_columns(std::vector<T>& Q, int d, int k) {
  std::vector<T> C(std::size_t(d) * k);  // column j at C[j*d .. j*d + d)
  for (int a = 0; a < d; ++a)
    for (int j = 0; j < k; ++j) C[std::size_t(j) * d + a] = Q[std::size_t(a) * k + j];
  // Column j is projected against columns 0..j-1 in increasing order
  // (modified Gram-Schmidt), and once more where that took more than
  // 1 - 1/sqrt(2) of its length (the Daniel-Gragg-Kaufman-Stewart test:
  // "twice is enough", and once is enough unless cancellation was large),
  // then normalized. Columns are taken four at a time: each earlier column
  // is read once for all four (they only need its final value), then the
  // four finish among themselves in the order of a one-at-a-time loop.
  auto project = [&](int i, int j) {
    const T* qi = &C[std::size_t(i) * d];
    T* qj = &C[std::size_t(j) * d];
    const T dot = dot8(qi, qj, d);
    for (int a = 0; a < d; ++a) qj[a] -= dot * qi[a];
  };
  auto norm_of = [&](int j) { return std::sqrt(dot8(&C[std::size_t(j) * d], &C[std::size_t(j) * d], d)); };
  for (int j0 = 0; j0 < k; j0 += 4) {
    const int j1 = std::min(j0 + 4, k);
    T before[4];
    for (int j = j0; j < j1; ++j) before[j - j0] = norm_of(j);
    for (int i = 0; i < j0; ++i)
      for (int j = j0; j < j1; ++j) project(i, j);
    for (int j = j0; j < j1; ++j) {
      for (int i = j0; i < j; ++i) project(i, j);
      T norm = norm_of(j);
      if (norm < before[j - j0] * T(0.70710678118654752)) {
        for (int i = 0; i < j; ++i) project(i, j);
        norm = norm_of(j);
      }
      if (!(norm > T(0)) || !std::isfinite(norm))
        throw std::runtime_error("orthonormalize_columns: linearly dependent columns");
      T* qj = &C[std::size_t(j) * d];
      for (int a = 0; a < d; ++a) qj[a] /= norm;
    }
  }
  for (int a = 0; a < d; ++a)
    for (int j = 0; j < k; ++j) Q[std::size_t(a) * k + j] = C[std::size_t(j) * d + a];
}

}  // namespace mosaic::host
