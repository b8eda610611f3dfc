// strided_gemm.hpp against a plain triple loop: every transposition, leading
// dimensions larger than the rows, gaps between the problems, alpha and
// beta. The host build runs the problems one by one through KokkosBlas::gemm
// from the same description that a Cuda build hands to cuBLAS's
// strided-batched GEMM in one call, so the pointers, leading dimensions and
// strides the blocked update builds (blocked_step.hpp) are checked here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <vector>

#include <Kokkos_Core.hpp>

#include "mosaic/engine/strided_gemm.hpp"
#include "mosaic/engine/transfer.hpp"
#include "test_reference_helpers.hpp"

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

// over_streams: through strided_gemm_over_streams (host spaces: one problem
// per thread where the BLAS nests single-threaded), else strided_gemm.
template <class Scalar>
void check_against_loops(char ta, char tb, bool over_streams = false) {
  const int m = 5, n = 4, k = 3, count = 3;
  const int a_rows = ta == 'N' ? m : k, a_cols = ta == 'N' ? k : m;
  const int b_rows = tb == 'N' ? k : n, b_cols = tb == 'N' ? n : k;
  mosaic::StridedGemm<Scalar> g;
  g.transa = ta;
  g.transb = tb;
  g.m = m;
  g.n = n;
  g.k = k;
  g.alpha = Scalar(1.5);
  g.beta = Scalar(-0.5);
  g.lda = a_rows + 2;  // two rows of padding per column
  g.ldb = b_rows + 1;
  g.ldc = m + 3;
  g.stride_a = std::ptrdiff_t(g.lda) * a_cols + 7;  // gaps between the problems
  g.stride_b = std::ptrdiff_t(g.ldb) * b_cols + 5;
  g.stride_c = std::ptrdiff_t(g.ldc) * n + 11;
  g.count = count;
  const std::size_t na = std::size_t(g.stride_a) * count, nb = std::size_t(g.stride_b) * count,
                    nc = std::size_t(g.stride_c) * count;
  mosaic::test::TestRng rng(42);
  const std::vector<double> ha = rng.normals(na), hb = rng.normals(nb), hc = rng.normals(nc);
  Kokkos::View<Scalar*, Kokkos::LayoutRight, Mem> A("A", na), B("B", nb), C("C", nc);
  auto fill = [](const auto& v, const std::vector<double>& x) {
    auto h = mosaic::transfer::host_buffer(v);
    for (std::size_t i = 0; i < x.size(); ++i) h(i) = Scalar(x[i]);
    mosaic::transfer::copy_from_host(v, h);
  };
  fill(A, ha);
  fill(B, hb);
  fill(C, hc);
  g.a = A.data();
  g.b = B.data();
  g.c = C.data();
  if (over_streams) mosaic::strided_gemm_over_streams<Exec>(g);
  else mosaic::strided_gemm<Exec>(g);
  const auto out = mosaic::transfer::to_host(C);

  // The expected C: the problems' m x n blocks by loops, every other entry
  // (padding rows, gaps) as it was.
  std::vector<double> expect(hc);
  auto a_at = [&](int p, int i, int l) {  // op(A_p)(i, l)
    const std::size_t at = std::size_t(p) * g.stride_a;
    return ta == 'N' ? ha[at + std::size_t(l) * g.lda + i] : ha[at + std::size_t(i) * g.lda + l];
  };
  auto b_at = [&](int p, int l, int j) {  // op(B_p)(l, j)
    const std::size_t at = std::size_t(p) * g.stride_b;
    return tb == 'N' ? hb[at + std::size_t(j) * g.ldb + l] : hb[at + std::size_t(l) * g.ldb + j];
  };
  for (int p = 0; p < count; ++p)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double s = 0;
        for (int l = 0; l < k; ++l) s += double(Scalar(a_at(p, i, l))) * double(Scalar(b_at(p, l, j)));
        double& c = expect[std::size_t(p) * g.stride_c + std::size_t(j) * g.ldc + i];
        c = 1.5 * s - 0.5 * double(Scalar(c));
      }
  const double tol = std::is_same_v<Scalar, float> ? 1e-5 : 1e-13;
  int bad = 0;
  for (std::size_t i = 0; i < nc; ++i) {
    const double ref = i < expect.size() ? expect[i] : 0.0;
    if (!(std::fabs(double(out(i)) - ref) <= tol * (1.0 + std::fabs(ref)))) ++bad;
  }
  EXPECT_EQ(bad, 0) << "transa=" << ta << " transb=" << tb << (over_streams ? " over streams" : "");
}

TEST(StridedGemm, EqualsLoopsDouble) {
  for (char ta : {'N', 'T'})
    for (char tb : {'N', 'T'}) check_against_loops<double>(ta, tb);
}

TEST(StridedGemm, EqualsLoopsFloat) {
  for (char ta : {'N', 'T'})
    for (char tb : {'N', 'T'}) check_against_loops<float>(ta, tb);
}

// The diagnostics', the init window's and the truth's entry point: every
// problem, whether the streams are spread over the threads or not.
TEST(StridedGemm, OverStreamsEqualsLoops) {
  for (char ta : {'N', 'T'})
    for (char tb : {'N', 'T'}) {
      check_against_loops<double>(ta, tb, true);
      check_against_loops<float>(ta, tb, true);
    }
}

// Cuda, and only Cuda, hands the problems to cuBLAS (docs/REPRODUCIBILITY.md).
TEST(StridedGemm, CublasExactlyOnCuda) {
  EXPECT_FALSE(mosaic::gemm_by_cublas<Kokkos::DefaultHostExecutionSpace>());
#if defined(KOKKOS_ENABLE_CUDA)
  EXPECT_TRUE(mosaic::gemm_by_cublas<Kokkos::Cuda>());
#endif
}

// No problem, or an empty shape: nothing is read or written.
TEST(StridedGemm, EmptyDoesNothing) {
  mosaic::StridedGemm<double> g;
  g.count = 0;
  mosaic::strided_gemm<Exec>(g);  // null pointers: would crash if anything ran
  g.count = 2;
  g.m = 0;
  mosaic::strided_gemm<Exec>(g);
  SUCCEED();
}

}  // namespace
