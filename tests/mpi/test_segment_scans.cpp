// The two exclusive prefixes of parallel-in-time segments (ALGORITHM.md 9.4's
// certificate and 9.6's gauge) over the ranks of MPI_COMM_WORLD
// (mpi_collectives.hpp): ctest runs it on one rank (mosaic_gtest MPI) and
// run_mpi_checks.py's segment_scans on 3 ranks. Every rank knows what every
// other rank contributes (a function of its rank), so each checks its own
// result against the sequential prefix.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <mpi.h>

#include "mosaic/util/mpi_collectives.hpp"

namespace {

constexpr int streams = 3, n = 3;

// Rank k's flag of stream s: false for (k, s) = (1, 0) and (2, 2) only.
int flag_of(int k, int s) { return (k == 1 && s == 0) || (k == 2 && s == 2) ? 0 : 1; }

// Rank k's matrix of stream s: a rotation by angle 0.3 (k + 1) + 0.1 s in
// the plane of axes (k mod 3, k + 1 mod 3): rotations in different planes do
// not commute, so a product in the wrong order is caught.
std::vector<double> matrix_of(int k, int s) {
  std::vector<double> M(n * n, 0.0);
  for (int i = 0; i < n; ++i) M[i * n + i] = 1.0;
  const int a = k % n, b = (k + 1) % n;
  const double t = 0.3 * (k + 1) + 0.1 * s;
  M[a * n + a] = std::cos(t);
  M[b * n + b] = std::cos(t);
  M[a * n + b] = -std::sin(t);
  M[b * n + a] = std::sin(t);
  return M;
}

std::vector<double> product(const std::vector<double>& A, const std::vector<double>& B) {
  std::vector<double> C(n * n, 0.0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      for (int k = 0; k < n; ++k) C[i * n + j] += A[i * n + k] * B[k * n + j];
  return C;
}

int my_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

TEST(SegmentScans, ExclusiveAndOfTheLowerRanks) {
  const int rank = my_rank();
  std::vector<int> local(streams);
  for (int s = 0; s < streams; ++s) local[s] = flag_of(rank, s);
  const std::vector<int> got = mosaic::detail::exscan_and(local, MPI_COMM_WORLD);
  for (int s = 0; s < streams; ++s) {
    int expected = 1;
    for (int k = 0; k < rank; ++k) expected = expected && flag_of(k, s);
    EXPECT_EQ(got[s], expected) << "rank " << rank << ", stream " << s;
  }
}

TEST(SegmentScans, ExclusiveReverseProductOfTheLowerRanks) {
  const int rank = my_rank();
  std::vector<double> local;
  for (int s = 0; s < streams; ++s) {
    const std::vector<double> M = matrix_of(rank, s);
    local.insert(local.end(), M.begin(), M.end());
  }
  const std::vector<double> got = mosaic::detail::exscan_reverse_product(local, n, streams, MPI_COMM_WORLD);
  ASSERT_EQ(got.size(), std::size_t(streams * n * n));
  for (int s = 0; s < streams; ++s) {
    std::vector<double> expected(n * n, 0.0);  // M_{rank-1} ... M_0, the identity on rank 0
    for (int i = 0; i < n; ++i) expected[i * n + i] = 1.0;
    for (int k = 0; k < rank; ++k) expected = product(matrix_of(k, s), expected);
    for (int e = 0; e < n * n; ++e)
      EXPECT_NEAR(got[s * n * n + e], expected[e], 1e-15) << "rank " << rank << ", stream " << s << ", entry " << e;
  }
  // The order matters: on rank 2, M_1 M_0 differs from M_0 M_1.
  const std::vector<double> a = product(matrix_of(1, 0), matrix_of(0, 0)),
                            b = product(matrix_of(0, 0), matrix_of(1, 0));
  double gap = 0;
  for (int e = 0; e < n * n; ++e) gap = std::max(gap, std::fabs(a[e] - b[e]));
  EXPECT_GT(gap, 0.1);
}

}  // namespace
