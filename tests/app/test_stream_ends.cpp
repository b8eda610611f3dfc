// Streams of unequal length (app/stream_ends.hpp): where blocks are cut, which
// streams stop after a block, and the samples counted as work.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include <Kokkos_Core.hpp>

#include "mosaic/app/stream_ends.hpp"
#include "mosaic/engine/transfer.hpp"

namespace {

using namespace mosaic;
using Exec = Kokkos::DefaultExecutionSpace;

// Every stream's timed steps 30, 10, 50, 10, 40 (by id); the run lasts 50.
RunSection five_streams() {
  RunSection run;
  run.steps = 50;
  run.stream_steps = {30, 10, 50, 10, 40};
  return run;
}

TEST(StreamEnds, BlocksAreCutAtEveryStreamsEndNotOnlyThisRanks) {
  const StreamEnds<Exec> ends(five_streams(), {2});  // this rank holds only the longest stream
  ASSERT_TRUE(ends.any());
  EXPECT_EQ(ends.cut(0, 64), 10);
  EXPECT_EQ(ends.cut(8, 64), 2);
  EXPECT_EQ(ends.cut(10, 64), 20);
  EXPECT_EQ(ends.cut(10, 7), 7);
  EXPECT_EQ(ends.cut(35, 64), 5);
  EXPECT_EQ(ends.cut(40, 64), 64);  // the run's own end is the caller's limit
}

TEST(StreamEnds, OnlyExistingSamplesCount) {
  const StreamEnds<Exec> ends(five_streams(), {0, 1});
  EXPECT_EQ(ends.total_samples(50, 5), 30 + 10 + 50 + 10 + 40);
  EXPECT_EQ(ends.total_samples(20, 5), 20 + 10 + 20 + 10 + 20);
  EXPECT_EQ(ends.local_samples(50, 2), 30 + 10);
  EXPECT_EQ(ends.local_samples(5, 2), 5 + 5);
}

TEST(StreamEnds, EqualLengthsCountStepsTimesStreams) {
  RunSection run;
  run.steps = 40;
  const StreamEnds<Exec> none(run, {0, 1, 2});
  EXPECT_FALSE(none.any());
  EXPECT_EQ(none.cut(3, 64), 64);
  EXPECT_EQ(none.total_samples(40, 7), 280);
  EXPECT_EQ(none.local_samples(40, 3), 120);
  run.stream_steps = {40, 40, 40};  // run.steps: all over files of one length: nothing ends early
  const StreamEnds<Exec> same(run, {0, 1, 2});
  EXPECT_FALSE(same.any());
  EXPECT_EQ(same.total_samples(40, 3), 120);
}

TEST(StreamEnds, AStreamStopsAfterTheBlockThatReachesItsEndAndABreakdownStays) {
  const std::vector<std::uint64_t> ids = {0, 1, 2, 4};  // timed steps 30, 10, 50, 40
  const StreamEnds<Exec> ends(five_streams(), ids);
  StreamBatch<double, Exec> batch(4, 6, 2, ids);
  {
    auto h = transfer::host_buffer(batch.status);
    for (int b = 0; b < 4; ++b) h(b) = b == 0 ? breakdown_s_not_spd : breakdown_none;
    transfer::copy_from_host(batch.status, h);
  }
  const auto status_after = [&](std::int64_t timed_done) {
    ends.mark(batch, timed_done);
    const auto h = transfer::to_host(batch.status);
    return std::vector<int>{h(0), h(1), h(2), h(3)};
  };
  EXPECT_EQ(status_after(9), (std::vector<int>{breakdown_s_not_spd, 0, 0, 0}));
  EXPECT_EQ(status_after(10), (std::vector<int>{breakdown_s_not_spd, stream_ended, 0, 0}));
  EXPECT_EQ(status_after(40), (std::vector<int>{breakdown_s_not_spd, stream_ended, 0, stream_ended}));
  // The longest stream lasts the run: never marked.
  EXPECT_EQ(status_after(50), (std::vector<int>{breakdown_s_not_spd, stream_ended, 0, stream_ended}));
}

}  // namespace
