// The collectives of mpi_collectives.hpp whose result depends on more than
// one rank's values, over the ranks of MPI_COMM_WORLD: the exclusive prefix
// of parallel-in-time segments' certificate (ALGORITHM.md 9.4), the packed
// reduction of mixed operations, and the communication ledger's classes.
// ctest runs it on one rank (mosaic_gtest MPI) and run_mpi_checks.py's
// mpi_collectives on 3 ranks.
// Every rank knows what every other rank contributes (a function of its
// rank), so each checks its own result against the sequential one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
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

// Rank k's values: reals whose sum depends on the order of the operands
// (on 3 ranks 1e16, 1.25, -1e16: 2 in rank order, whatever the grouping;
// 1.25 when rank 2's term meets rank 0's first), and integers beyond 2^53,
// which a double would round.
double real_of(int k) { return k == 0 ? 1e16 : k == 2 ? -1e16 : 1.0 + 0.25 * k; }
long long integer_of(int k) { return (1LL << 60) + 3 * k - 5 * (k % 2); }

// Every sum of the ranks' reals lo .. hi - 1 in rank order, in any grouping
// (MPI keeps a non-commutative operation's operands in rank order; the
// grouping is the library's).
std::vector<double> rank_ordered_sums(int lo, int hi) {
  if (hi - lo == 1) return {real_of(lo)};
  std::vector<double> sums;
  for (int split = lo + 1; split < hi; ++split)
    for (const double left : rank_ordered_sums(lo, split))
      for (const double right : rank_ordered_sums(split, hi)) sums.push_back(left + right);
  return sums;
}

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
  double real_max = real_of(0), real_min = -real_of(0);
  long long integer_max = integer_of(0), integer_min = integer_of(0), integer_sum = integer_of(0) - (1LL << 60),
            integer_total = integer_of(0) >> 3;
  for (int k = 1; k < n; ++k) {
    real_max = std::max(real_max, real_of(k));
    real_min = std::min(real_min, -real_of(k));
    integer_max = std::max(integer_max, integer_of(k));
    integer_min = std::min(integer_min, integer_of(k));
    integer_sum += integer_of(k) - (1LL << 60);
    integer_total += integer_of(k) >> 3;
  }
  EXPECT_EQ(p.real("real max"), real_max);
  EXPECT_EQ(p.real("real min"), real_min);
  const std::vector<double> sums = rank_ordered_sums(0, n);
  EXPECT_NE(std::find(sums.begin(), sums.end(), p.real("real sum")), sums.end())
      << "rank " << rank << " of " << n << ": " << p.real("real sum") << " is no rank-ordered sum";
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

// A NaN on any rank is the max and the min of every rank (std::max alone
// keeps or drops it by operand order).
TEST(PackedAllreduce, NaNWinsMaxAndMin) {
  const int rank = my_rank(), n = ranks();
  mosaic::detail::PackedAllreduce p;
  const double mine = rank == n - 1 ? std::nan("") : double(rank);
  p.max("max", mine);
  p.min("min", mine);
  p.reduce(MPI_COMM_WORLD);
  EXPECT_TRUE(std::isnan(p.real("max")));
  EXPECT_TRUE(std::isnan(p.real("min")));
}

// The communication ledger: a collective counts into the class current on
// its thread (the innermost CommClass), with its bytes; none outside every
// class; the class before a scope is current again after it.
TEST(CommLedger, ClassesNestAndCount) {
  using mosaic::detail::CommClass;
  const int n = ranks();
  mosaic::detail::CommLedger ledger;
  mosaic::detail::allreduce(1.0, MPI_SUM, MPI_COMM_WORLD);  // outside every class: not counted
  {
    const CommClass outer(ledger, "outer");
    EXPECT_EQ(mosaic::detail::allreduce(2LL, MPI_SUM, MPI_COMM_WORLD), 2LL * n);
    {
      const CommClass inner(ledger, "inner");
      mosaic::detail::PackedAllreduce p;
      p.max("a", 1.0);
      p.sum("b", 3LL);
      p.reduce(MPI_COMM_WORLD);
      mosaic::detail::gather_to_root(std::vector<double>(5, 1.0), MPI_DOUBLE, MPI_COMM_WORLD);
    }
    mosaic::detail::broadcast_string("abc", 0, MPI_COMM_WORLD);
  }
  mosaic::detail::allreduce(1.0, MPI_SUM, MPI_COMM_WORLD);
  ASSERT_EQ(ledger.size(), 2u);
  // outer: the allreduce of one long long, the two broadcasts (the length, the 3 characters).
  EXPECT_EQ(ledger["outer"].calls, 3);
  EXPECT_EQ(ledger["outer"].bytes, 8 + 8 + 3);
  // inner: the packed reduction (its bytes as it says), the gather's count and its 5 doubles.
  mosaic::detail::PackedAllreduce two;
  two.max("a", 1.0);
  two.sum("b", 3LL);
  EXPECT_EQ(ledger["inner"].calls, 3);
  EXPECT_EQ(ledger["inner"].bytes, (long long)two.bytes() + 4 + 5 * 8);
  EXPECT_GE(ledger["outer"].seconds, 0.0);
  EXPECT_EQ(mosaic::detail::current_comm_tally, nullptr);
}

}  // namespace
