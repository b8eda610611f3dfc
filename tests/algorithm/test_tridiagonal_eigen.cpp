// tridiagonal_eigen.hpp (Householder + implicit QL) against its reference
// twin host::symmetric_eigen (cyclic Jacobi): eigenvalues, residuals,
// orthonormality and invariant subspaces, on the host and, one thread per
// matrix, on the default execution space.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "mosaic/algorithm/host_linalg.hpp"
#include "mosaic/algorithm/tridiagonal_eigen.hpp"
#include "test_reference_helpers.hpp"

namespace {

using namespace mosaic;

// The layout of host::symmetric_eigen: eigenvalues in descending order,
// column j of `vectors` (row-major n x n) the eigenvector of values[j].
// Returns false as tridiagonal_ql_eigen does (run on the host).
bool ql_eigen_descending(std::vector<double> A, int n, std::vector<double>& values, std::vector<double>& vectors) {
  using matrix = Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
  using vector_view = Kokkos::View<double*, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
  std::vector<double> w(static_cast<std::size_t>(n)), e(static_cast<std::size_t>(n));
  const matrix a(A.data(), n, n);
  if (!tridiagonal_ql_eigen(a, vector_view(w.data(), n), vector_view(e.data(), n), n, true)) return false;
  values.resize(std::size_t(n));
  vectors.assign(std::size_t(n) * n, 0.0);
  for (int j = 0; j < n; ++j) {
    const int src = n - 1 - j;
    values[std::size_t(j)] = w[std::size_t(src)];
    for (int i = 0; i < n; ++i) vectors[std::size_t(i) * n + j] = a(i, src);
  }
  return true;
}

// Symmetric test matrices of size n: "random" (Gaussian, symmetrized),
// "gram" (a rank-deficient Gram matrix: rank n/2), "clustered" (eigenvalues
// 1, 1 + 1e-12, ..., in a random basis), "identity", "zero", "diagonal",
// "constant" (every entry 0.75: rank one, the Gram matrix of identical
// samples; before hypot_safe the QL iteration squared its tiny trailing
// entries to 0 and did not converge from n = 48 on).
std::vector<double> test_matrix(const std::string& kind, int n, std::uint64_t seed) {
  test::TestRng rng(seed);
  std::vector<double> A(std::size_t(n) * n, 0.0);
  if (kind == "random") {
    const std::vector<double> G = rng.normals(A.size());
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) A[i * n + j] = G[i * n + j] + G[j * n + i];
  } else if (kind == "gram") {
    const int k = std::max(1, n / 2);
    const std::vector<double> Y = rng.normals(std::size_t(k) * n);  // k x n
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        for (int l = 0; l < k; ++l) A[i * n + j] += Y[l * n + i] * Y[l * n + j];
  } else if (kind == "clustered") {
    std::vector<double> Q = rng.normals(A.size());
    host::orthonormalize_columns(Q, n, n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        for (int l = 0; l < n; ++l) A[i * n + j] += Q[i * n + l] * (1.0 + 1e-12 * l) * Q[j * n + l];
  } else if (kind == "identity") {
    for (int i = 0; i < n; ++i) A[i * n + i] = 1.0;
  } else if (kind == "constant") {
    std::fill(A.begin(), A.end(), 0.75);
  } else if (kind == "diagonal") {
    for (int i = 0; i < n; ++i) A[i * n + i] = double((i * 7) % n) - 3.0;
  }
  return A;
}

double frobenius(const std::vector<double>& A) {
  double s = 0;
  for (const double v : A) s += v * v;
  return std::sqrt(s);
}

// ||A V - V diag(w)||_F and ||V^T V - I||_F of a decomposition in
// symmetric_eigen's layout.
void expect_decomposition(const std::vector<double>& A, int n, const std::vector<double>& w,
                          const std::vector<double>& V, double tol, const std::string& what) {
  const double norm = std::max(frobenius(A), 1.0);
  double res = 0, orth = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double av = 0, vv = 0;
      for (int k = 0; k < n; ++k) {
        av += A[i * n + k] * V[k * n + j];
        vv += V[k * n + i] * V[k * n + j];
      }
      res += (av - V[i * n + j] * w[j]) * (av - V[i * n + j] * w[j]);
      orth += (vv - (i == j ? 1.0 : 0.0)) * (vv - (i == j ? 1.0 : 0.0));
    }
  EXPECT_LE(std::sqrt(res), tol * norm) << what;
  EXPECT_LE(std::sqrt(orth), tol) << what;
}

TEST(TridiagonalEigen, AgreesWithJacobiOnTheHost) {
  for (const std::string kind : {"random", "gram", "clustered", "identity", "zero", "diagonal", "constant"})
    for (const int n : {1, 2, 3, 17, 48, 64, 128}) {
      const std::string what = kind + " n=" + std::to_string(n);
      const std::vector<double> A = test_matrix(kind, n, 5 + n);
      std::vector<double> w, V, wj, Vj;
      ASSERT_TRUE(ql_eigen_descending(A, n, w, V)) << what;
      host::symmetric_eigen(A, n, wj, Vj);
      const double norm = std::max(frobenius(A), 1.0), eps = std::numeric_limits<double>::epsilon();
      for (int j = 0; j < n; ++j) EXPECT_NEAR(w[j], wj[j], 20 * n * eps * norm) << what << " j=" << j;
      for (int j = 0; j + 1 < n; ++j) EXPECT_GE(w[j], w[j + 1]) << what << ": descending";
      expect_decomposition(A, n, w, V, 50 * n * eps, what);
      // The leading half's invariant subspace, where it is separated from
      // the rest (random and gram matrices): the projector distance
      // k - ||V_k^T Vj_k||_F^2 between the two methods' bases.
      if ((kind == "random" || kind == "gram") && n >= 4) {
        const int k = n / 2;
        const double gap = w[k - 1] - w[k];
        if (kind == "gram" && gap < 1e-6 * norm) continue;
        double overlap = 0;
        for (int a = 0; a < k; ++a)
          for (int b = 0; b < k; ++b) {
            double dot = 0;
            for (int i = 0; i < n; ++i) dot += V[i * n + a] * Vj[i * n + b];
            overlap += dot * dot;
          }
        EXPECT_LE(double(k) - overlap, 1e3 * n * eps * norm / gap) << what;
      }
    }
}

TEST(TridiagonalEigen, NonFiniteMatrixIsReported) {
  std::vector<double> A = test_matrix("random", 8, 3), w, V;
  A[2 * 8 + 5] = A[5 * 8 + 2] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(ql_eigen_descending(A, 8, w, V));
  A[2 * 8 + 5] = A[5 * 8 + 2] = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(ql_eigen_descending(A, 8, w, V));
}

// One matrix per thread on the execution space (a free function: Cuda's
// extended lambdas cannot live in a test body), matrices < `with_vectors`
// with eigenvectors.
template <class Mat3, class Mat2, class Flags>
void decompose_on_device(const Mat3& A, const Mat2& W, const Mat2& E, const Flags& ok, int n, int with_vectors) {
  Kokkos::parallel_for(
      "test::tridiagonal_eigen", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, int(A.extent(0))),
      KOKKOS_LAMBDA(const int b) {
        const auto a = Kokkos::subview(A, b, Kokkos::ALL(), Kokkos::ALL());
        const auto w = Kokkos::subview(W, b, Kokkos::ALL());
        const auto e = Kokkos::subview(E, b, Kokkos::ALL());
        ok(b) = tridiagonal_ql_eigen(a, w, e, n, b < with_vectors) ? 1 : 0;
      });
}

// The same routine in a kernel on the default execution space, one matrix
// per thread, with and without vectors: the values match the host's.
TEST(TridiagonalEigen, RunsOnTheExecutionSpace) {
  using Exec = Kokkos::DefaultExecutionSpace;
  const int n = 48, batch = 3;
  const std::vector<std::string> kinds = {"random", "gram", "clustered"};
  Kokkos::View<double***, Kokkos::LayoutRight, Exec::memory_space> A("A", 2 * batch, n, n);
  Kokkos::View<double**, Kokkos::LayoutRight, Exec::memory_space> W("W", 2 * batch, n), E("E", 2 * batch, n);
  Kokkos::View<int*, Kokkos::LayoutRight, Exec::memory_space> ok("ok", 2 * batch);
  auto hA = Kokkos::create_mirror_view(A);
  for (int b = 0; b < 2 * batch; ++b) {
    const std::vector<double> M = test_matrix(kinds[b % batch], n, 40 + b % batch);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) hA(b, i, j) = M[i * n + j];
  }
  Kokkos::deep_copy(A, hA);
  decompose_on_device(A, W, E, ok, n, batch);
  auto hW = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), W);
  auto hok = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ok);
  auto hV = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A);
  for (int b = 0; b < 2 * batch; ++b) {
    const std::string what = kinds[b % batch] + (b < batch ? " with vectors" : " values only");
    ASSERT_EQ(hok(b), 1) << what;
    const std::vector<double> M = test_matrix(kinds[b % batch], n, 40 + b % batch);
    std::vector<double> w, V;
    ASSERT_TRUE(ql_eigen_descending(M, n, w, V));
    const double norm = frobenius(M), eps = std::numeric_limits<double>::epsilon();
    for (int j = 0; j < n; ++j) EXPECT_NEAR(hW(b, j), w[std::size_t(n - 1 - j)], 20 * n * eps * norm) << what;
    if (b < batch) {
      std::vector<double> Vd(static_cast<std::size_t>(n) * n), wd(static_cast<std::size_t>(n));
      for (int j = 0; j < n; ++j) {
        wd[std::size_t(j)] = hW(b, n - 1 - j);
        for (int i = 0; i < n; ++i) Vd[std::size_t(i) * n + j] = hV(b, i, n - 1 - j);
      }
      expect_decomposition(M, n, wd, Vd, 50 * n * eps, what);
    }
  }
}

}  // namespace
