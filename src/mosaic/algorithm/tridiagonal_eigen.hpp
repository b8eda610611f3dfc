// Symmetric eigen-decomposition by Householder tridiagonalization and the
// implicit QL iteration (the EISPACK tred2/tql2 pair, in the 0-based form of
// JAMA's EigenvalueDecomposition), in double, callable on the host and on a
// device (one thread per matrix).
//
// It is the fast twin of host::symmetric_eigen (cyclic Jacobi, the
// reference's oracle): about 4 n^3 flops with vectors against Jacobi's ~6 n^3
// per sweep over ~10 sweeps, and its loops run along rows. Both are backward
// stable, so their eigenvalues agree to a few ulps of ||A|| and their
// eigenvectors span the same invariant subspaces up to eps ||A|| / gap
// (tests/algorithm/test_tridiagonal_eigen.cpp compares them). It serves init: data's
// n0 x n0 Gram matrices (init_data.hpp) and the eigenvalues of S in the
// diagnostics, one thread per matrix on the execution space; the reference
// keeps Jacobi.
#pragma once

#include <math.h>

#include <Kokkos_Core.hpp>

#include "mosaic/util/kokkos_compat.hpp"

namespace mosaic {

namespace detail {

// The even power of two e with max_abs 2^-e in [1, 4) (0 when max_abs is
// 0 or not finite). A symmetric matrix times 2^-e (exact) has entries of
// order 1, so an eigen-solve's squares neither overflow nor underflow in any
// units of the data (init: data on samples of 1e-100 or 1e100 did not
// converge); its eigenvalues scale back by 2^e exactly, its eigenvectors do
// not change. Even, so that square roots of the scaled quantities scale
// exactly too. (::ilogb and ::ldexp are the C library's on the host and
// CUDA's device functions.)
KOKKOS_INLINE_FUNCTION int balancing_exponent(double max_abs) {
  if (!(max_abs > 0.0) || !kmath::isfinite(max_abs)) return 0;
  const int e = ::ilogb(max_abs);
  return e - (e & 1);  // floor to even, negative ones too
}
KOKKOS_INLINE_FUNCTION double times_power_of_two(double v, int e) { return ::ldexp(v, e); }

template <class Mat>
KOKKOS_INLINE_FUNCTION void transpose_in_place(const Mat& a, const int n) {
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) {
      const double t = a(i, j);
      a(i, j) = a(j, i);
      a(j, i) = t;
    }
}

// sqrt(a^2 + b^2): the plain form where a^2 + b^2 neither underflows nor
// overflows (the QL iteration's rounding there is EISPACK's), else scaled
// by the larger magnitude (EISPACK's pythag): the QL iteration meets both
// on a rank-deficient Gram matrix, whose tiny trailing entries square to 0.
KOKKOS_INLINE_FUNCTION double hypot_safe(double a, double b) {
  const double s = a * a + b * b;
  if (s > 1e-280 && s < 1e280) return kmath::sqrt(s);
  const double fa = kmath::fabs(a), fb = kmath::fabs(b);
  const double big = fa > fb ? fa : fb, small = fa > fb ? fb : fa;
  if (big == 0.0) return 0.0;
  const double q = small / big;
  return big * kmath::sqrt(1.0 + q * q);
}

}  // namespace detail

// On entry `a` (an n x n accessor, a(i, j)) holds a symmetric matrix, of
// which every entry is read. On return `w` (length n) holds its eigenvalues
// in ascending order and, with `vectors`, column j of `a` the unit
// eigenvector of w(j); without, `a` is overwritten with work values. `e`
// (length n) is work space. Returns false when the QL iteration did not
// converge in 30 n iterations (only for a non-finite matrix).
template <class Mat, class Vec>
KOKKOS_INLINE_FUNCTION bool tridiagonal_ql_eigen(const Mat& a, const Vec& w, const Vec& e, int n, bool vectors) {
  if (n <= 0) return true;
  // tred2: reduce to tridiagonal form (diagonal w, subdiagonal e(1..n-1)),
  // accumulating the orthogonal transformation in a.
  for (int j = 0; j < n; ++j) w(j) = a(n - 1, j);
  for (int i = n - 1; i > 0; --i) {
    double scale = 0, h = 0;
    for (int k = 0; k < i; ++k) scale += kmath::fabs(w(k));
    if (scale == 0.0) {
      e(i) = w(i - 1);
      for (int j = 0; j < i; ++j) {
        w(j) = a(i - 1, j);
        a(i, j) = 0;
        a(j, i) = 0;
      }
    } else {
      for (int k = 0; k < i; ++k) {
        w(k) /= scale;
        h += w(k) * w(k);
      }
      double f = w(i - 1), g = kmath::sqrt(h);
      if (f > 0) g = -g;
      e(i) = scale * g;
      h -= f * g;
      w(i - 1) = f - g;
      for (int j = 0; j < i; ++j) e(j) = 0;
      for (int j = 0; j < i; ++j) {
        f = w(j);
        a(j, i) = f;
        g = e(j) + a(j, j) * f;
        for (int k = j + 1; k <= i - 1; ++k) {
          g += a(k, j) * w(k);
          e(k) += a(k, j) * f;
        }
        e(j) = g;
      }
      f = 0;
      for (int j = 0; j < i; ++j) {
        e(j) /= h;
        f += e(j) * w(j);
      }
      const double hh = f / (h + h);
      for (int j = 0; j < i; ++j) e(j) -= hh * w(j);
      for (int j = 0; j < i; ++j) {
        f = w(j);
        g = e(j);
        for (int k = j; k <= i - 1; ++k) a(k, j) -= (f * e(k) + g * w(k));
        w(j) = a(i - 1, j);
        a(i, j) = 0;
      }
    }
    w(i) = h;
  }
  if (vectors) {
    // The transformation is accumulated, the QL rotations applied and the
    // sort done on V^T (a(j, k) = V(k, j)): the O(n^3) inner loops then run
    // along rows, unit-stride on the host layout, and the updates and
    // rotations vectorize (the dot products g stay sequential sums: no
    // reassociation). The same operations on the same values in the same
    // order as on V, so the results do not change. A false return leaves
    // `a` transposed (it holds work values then).
    detail::transpose_in_place(a, n);
    for (int i = 0; i < n - 1; ++i) {
      a(i, n - 1) = a(i, i);
      a(i, i) = 1;
      const double h = w(i + 1);
      if (h != 0.0) {
        for (int k = 0; k <= i; ++k) w(k) = a(i + 1, k) / h;
        for (int j = 0; j <= i; ++j) {
          double g = 0;
          for (int k = 0; k <= i; ++k) g += a(i + 1, k) * a(j, k);
          for (int k = 0; k <= i; ++k) a(j, k) -= g * w(k);
        }
      }
      for (int k = 0; k <= i; ++k) a(i + 1, k) = 0;
    }
    for (int j = 0; j < n; ++j) {
      w(j) = a(j, n - 1);
      a(j, n - 1) = 0;
    }
    a(n - 1, n - 1) = 1;
  } else {
    for (int j = 0; j < n; ++j) w(j) = a(j, j);
  }
  e(0) = 0;
  // tql2: the implicit QL iteration on the tridiagonal matrix.
  for (int i = 1; i < n; ++i) e(i - 1) = e(i);
  e(n - 1) = 0;
  constexpr double eps = 2.220446049250313e-16;  // 2^-52
  // A subdiagonal entry below eps times the whole matrix's size splits it
  // (EISPACK takes the size of the rows seen so far: on a rank-deficient
  // Gram matrix, whose large rows come last, that iterated on blocks of
  // 1e-180 and lost the eigenvectors' orthogonality to subnormal rotations).
  double f = 0, tst1 = 0;
  for (int l = 0; l < n; ++l) {
    const double size_l = kmath::fabs(w(l)) + kmath::fabs(e(l));
    if (size_l > tst1) tst1 = size_l;
  }
  int iterations = 0;
  for (int l = 0; l < n; ++l) {
    int m = l;
    while (m < n - 1 && !(kmath::fabs(e(m)) <= eps * tst1)) ++m;
    if (m > l) {
      do {
        if (++iterations > 30 * n) return false;
        double g = w(l);
        double p = (w(l + 1) - g) / (2.0 * e(l));
        double r = detail::hypot_safe(p, 1.0);
        if (p < 0) r = -r;
        w(l) = e(l) / (p + r);
        w(l + 1) = e(l) * (p + r);
        const double dl1 = w(l + 1);
        double h = g - w(l);
        for (int i = l + 2; i < n; ++i) w(i) -= h;
        f += h;
        p = w(m);
        double c = 1, c2 = 1, c3 = 1, s = 0, s2 = 0;
        const double el1 = e(l + 1);
        for (int i = m - 1; i >= l; --i) {
          c3 = c2;
          c2 = c;
          s2 = s;
          g = c * e(i);
          h = c * p;
          r = detail::hypot_safe(p, e(i));
          e(i + 1) = s * r;
          s = e(i) / r;
          c = p / r;
          p = c * w(i) - s * g;
          w(i + 1) = h + s * (c * g + s * w(i));
          if (vectors)
            for (int k = 0; k < n; ++k) {  // columns i, i + 1 of V: rows of V^T
              const double vi = a(i, k), vi1 = a(i + 1, k);
              a(i + 1, k) = s * vi + c * vi1;
              a(i, k) = c * vi - s * vi1;
            }
        }
        p = -s * s2 * c3 * el1 * e(l) / dl1;
        e(l) = s * p;
        w(l) = c * p;
      } while (kmath::fabs(e(l)) > eps * tst1);
    }
    w(l) = w(l) + f;
    e(l) = 0;
  }
  // Ascending order (selection sort: n swaps of columns at most).
  for (int i = 0; i < n - 1; ++i) {
    int k = i;
    for (int j = i + 1; j < n; ++j)
      if (w(j) < w(k)) k = j;
    if (k != i) {
      const double t = w(k);
      w(k) = w(i);
      w(i) = t;
      if (vectors)
        for (int j = 0; j < n; ++j) {
          const double v = a(i, j);
          a(i, j) = a(k, j);
          a(k, j) = v;
        }
    }
  }
  if (vectors) detail::transpose_in_place(a, n);
  for (int j = 0; j < n; ++j)
    if (!kmath::isfinite(w(j))) return false;
  return true;
}

}  // namespace mosaic
