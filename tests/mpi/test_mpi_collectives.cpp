// The collectives of mpi_collectives.hpp whose result depends on more than
// one rank's values, over the ranks of MPI_COMM_WORLD: the exclusive prefix
// of parallel-in-time segments' certificate (ALGORITHM.md 9.4) and the
// packed reduction of mixed operations. ctest runs it on one rank
// (mosaic_gtest MPI) and run_mpi_checks.py's mpi_collectives on 3 ranks.
// Every rank knows what every other rank contributes (a function of its
// rank), so each checks its own result against the sequential one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include <mpi.h>

#include "mosaic/util/mpi_collectives.hpp"

namespace {

constexpr int streams = 3;

// Rank k's flag of stream s: false for (k, s) = (1, 0) and (2, 2) only.
int flag_of(int k, int s) { return (k == 1 && s == 0) || (k == 2 && s == 2) ? 0 : 1; }

int my_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int ranks() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
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

// Rank k's values: reals whose sum depends on the order of the additions
// (1e16 on rank 0 absorbs a 1 added after it, not 1 + 1 before it), and
// integers beyond 2^53, which a double would round.
double real_of(int k) { return k == 0 ? 1e16 : 1.0 + 0.25 * k; }
long long integer_of(int k) { return (1LL << 60) + 3 * k - 5 * (k % 2); }

TEST(PackedAllreduce, EveryOperationInRankOrder) {
  const int rank = my_rank(), n = ranks();
  mosaic::detail::PackedAllreduce p;
  p.max("real max", real_of(rank));
  p.min("real min", -real_of(rank));
  p.sum("real sum", real_of(rank));
  p.max("integer max", integer_of(rank));
  p.min("integer min", integer_of(rank));
  p.sum("integer sum", integer_of(rank) - (1LL << 60));
  p.sum("integer total", integer_of(rank) >> 3);
  EXPECT_EQ(p.size(), 7u);
  p.reduce(MPI_COMM_WORLD);
  double real_max = real_of(0), real_min = -real_of(0), real_sum = real_of(0);
  long long integer_max = integer_of(0), integer_min = integer_of(0), integer_sum = integer_of(0) - (1LL << 60),
            integer_total = integer_of(0) >> 3;
  for (int k = 1; k < n; ++k) {
    real_max = std::max(real_max, real_of(k));
    real_min = std::min(real_min, -real_of(k));
    real_sum = real_sum + real_of(k);  // rank order: ((r0 + r1) + r2) ...
    integer_max = std::max(integer_max, integer_of(k));
    integer_min = std::min(integer_min, integer_of(k));
    integer_sum += integer_of(k) - (1LL << 60);
    integer_total += integer_of(k) >> 3;
  }
  EXPECT_EQ(p.real("real max"), real_max);
  EXPECT_EQ(p.real("real min"), real_min);
  EXPECT_EQ(p.real("real sum"), real_sum) << "rank " << rank << " of " << n;
  EXPECT_EQ(p.integer("integer max"), integer_max);
  EXPECT_EQ(p.integer("integer min"), integer_min);
  EXPECT_EQ(p.integer("integer sum"), integer_sum);
  EXPECT_EQ(p.integer("integer total"), integer_total);
  // By position, in the order added.
  EXPECT_EQ(p.name(3), "integer max");
  EXPECT_TRUE(p.is_integer(3));
  EXPECT_FALSE(p.is_integer(2));
  EXPECT_EQ(p.integer(3), integer_max);
  EXPECT_THROW(p.real("no such value"), std::logic_error);
}

}  // namespace
