// Streams of unequal length in one run (run.steps: all over .npy files of
// different row counts): the run lasts the longest stream's timed steps;
// every other stream stops at the end of its own data, its state final
// there, and only the samples that exist are counted as work done.
//
// Where a stream ends, every rank cuts its blocks (the ends of all streams,
// not only its own): a stream's blocks then do not depend on which streams
// share its rank, so the results stay the same at any rank count. After the
// block that reaches a stream's end, the stream's status becomes
// stream_ended, which every kernel skips like a frozen stream: the rows the
// source stages past the end of a file (zeros) are never stepped.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include <Kokkos_Core.hpp>

#include "mosaic/config/run_config.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/engine/transfer.hpp"

namespace mosaic {

namespace detail {
// status(b) = stream_ended for a healthy stream whose timed steps are done.
// At namespace scope for nvcc (see npy_source.hpp's NpyCopyRow).
template <class StatusView, class StepsView>
struct MarkEndedStreams {
  StatusView status;
  StepsView last_step;  // a stream's timed steps
  std::int64_t timed_done;
  KOKKOS_INLINE_FUNCTION void operator()(const int b) const {
    if (status(b) == breakdown_none && timed_done >= last_step(b)) status(b) = stream_ended;
  }
};
}  // namespace detail

template <class ExecSpace>
class StreamEnds {
 public:
  using steps_view = Kokkos::View<std::int64_t*, Kokkos::LayoutRight, typename ExecSpace::memory_space>;

  // From the resolved deck (run.stream_steps, by stream id; empty: every
  // stream runs run.steps) and this rank's stream ids.
  StreamEnds(const RunSection& run, const std::vector<std::uint64_t>& local_ids) {
    for (const std::int64_t s : run.stream_steps) all_.push_back(std::min(s, run.steps));
    if (all_.empty()) return;
    for (const auto id : local_ids) local_.push_back(all_.at(std::size_t(id)));
    for (const std::int64_t s : all_)
      if (s < run.steps) ends_.push_back(s);
    std::sort(ends_.begin(), ends_.end());
    ends_.erase(std::unique(ends_.begin(), ends_.end()), ends_.end());
    if (ends_.empty()) return;
    last_step_ = steps_view("mosaic::stream_last_step", local_.size());
    const auto h = transfer::host_buffer(last_step_);
    for (std::size_t b = 0; b < local_.size(); ++b)  // a stream that lasts the run is never marked
      h(b) = local_[b] < run.steps ? local_[b] : std::numeric_limits<std::int64_t>::max();
    transfer::copy_from_host(last_step_, h);
  }

  // Some stream ends before the run's last step.
  bool any() const { return !ends_.empty(); }

  // A block of the timed loop that starts after `timed_done` steps: at most
  // `limit` steps, and none past the next stream end.
  std::int64_t cut(std::int64_t timed_done, std::int64_t limit) const {
    const auto next = std::upper_bound(ends_.begin(), ends_.end(), timed_done);
    return next == ends_.end() ? limit : std::min(limit, *next - timed_done);
  }

  // After a block: the streams whose data ended with it stop.
  template <class Scalar>
  void mark(StreamBatch<Scalar, ExecSpace>& batch, std::int64_t timed_done) const {
    if (!any()) return;
    using Functor = detail::MarkEndedStreams<decltype(batch.status), steps_view>;
    Kokkos::parallel_for("mosaic::mark_ended_streams", Kokkos::RangePolicy<ExecSpace>(0, batch.batch),
                         Functor{batch.status, last_step_, timed_done});
  }

  // The timed samples after `timed_done` steps: each stream's steps up to
  // its end, summed over this rank's streams (local) or every stream (total).
  double local_samples(std::int64_t timed_done, std::size_t local_streams) const {
    return local_.empty() ? double(timed_done) * double(local_streams) : summed(local_, timed_done);
  }
  double total_samples(std::int64_t timed_done, std::int64_t total_streams) const {
    return all_.empty() ? double(timed_done) * double(total_streams) : summed(all_, timed_done);
  }

 private:
  static double summed(const std::vector<std::int64_t>& steps, std::int64_t timed_done) {
    double n = 0;
    for (const std::int64_t s : steps) n += double(std::min(s, timed_done));
    return n;
  }

  std::vector<std::int64_t> all_;    // every stream's timed steps (at most run.steps), by id
  std::vector<std::int64_t> local_;  // this rank's streams'
  std::vector<std::int64_t> ends_;   // the distinct ones before run.steps, ascending
  // local_ on the execution space, the largest int64 for a stream that
  // lasts the run (only when some stream ends early)
  steps_view last_step_;
};

}  // namespace mosaic
