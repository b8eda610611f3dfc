// The exclusive prefix of parallel-in-time segments' certificate (ALGORITHM.md
// 9.4) over the ranks of MPI_COMM_WORLD
// (mpi_collectives.hpp): ctest runs it on one rank (mosaic_gtest MPI) and
// run_mpi_checks.py's segment_scans on 3 ranks. Every rank knows what every
// other rank contributes (a function of its rank), so each checks its own
// result against the sequential prefix.
#include <gtest/gtest.h>

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

}  // namespace
