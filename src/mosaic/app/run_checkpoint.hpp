// The driver's side of checkpoint/restart and of SIGTERM/SIGINT
// (docs/CHECKPOINT.md): when to write a checkpoint, when to stop, and how
// the statistics of the segments of a restarted run add up.
//
// A run that was stopped and resumed consists of segments: the process runs
// between a (re)start and the stop. Each checkpoint records the segments so
// far, the last one up to that checkpoint (work done after the last
// checkpoint of a stopped segment is done again by the next segment and is
// not counted twice). The final result's timers and throughputs combine the
// segments (combine_segments).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>

#include <nlohmann/json.hpp>

#include "mosaic/app/stop_signal.hpp"
#include "mosaic/app/timers.hpp"
#include "mosaic/config/run_config.hpp"
#include "mosaic/io/checkpoint.hpp"
#include "mosaic/util/mpi_collectives.hpp"

namespace mosaic {

// What the caller of run_point passes in and gets back.
struct RunControl {
  const ckpt::RestartPlan* restart = nullptr;  // resume from this verified checkpoint
  int stop_signal = 0;                         // out: the signal that stopped the run (0: it completed)
  std::string last_checkpoint;                 // out: the directory of the last checkpoint written ("" = none)
};

// Decides, at every block end, whether to write a checkpoint and whether
// to stop. The ranks must agree on both: the signal may reach only some
// ranks, and every_seconds is measured by rank 0's clock alone. With more
// than one rank they agree without a blocking collective per block: each
// block end starts a non-blocking MPI_Iallreduce (MAX) of two ints and acts
// on the one started at the previous block end, which has long completed by
// then; so a signal or an every_seconds checkpoint takes effect one block
// later than it was seen, on every rank at the same block. every_steps
// checkpoints need no agreement (the driver ends a block at every
// every_steps step). finish() settles the last block with one blocking
// reduction. Steps are counted in the timed phase only.
class CheckpointPolicy {
 public:
  struct Decision {
    int signal = 0;           // agreed stop signal (0 = go on)
    bool checkpoint = false;  // write one now (periodic, or because of the signal)
  };

  CheckpointPolicy(const CheckpointConfig& ck, MPI_Comm comm) : ck_(ck), comm_(comm) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &nranks_);
    last_ = clock::now();
  }
  CheckpointPolicy(const CheckpointPolicy&) = delete;
  CheckpointPolicy& operator=(const CheckpointPolicy&) = delete;
  // A run that ends normally has called finish(). A pending reduction is
  // left alone while an exception unwinds (the driver then aborts the job):
  // MPI forbids freeing it, and waiting could block.
  ~CheckpointPolicy() {
    if (pending_ && std::uncaught_exceptions() == 0) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }

  bool enabled() const { return !ck_.dir.empty(); }

  // timed_done: timed steps done so far, or -1 during the warm-up.
  Decision after_step(std::int64_t timed_done) {
    int seen[2] = {stop_signal_received(), 0};
    if (enabled() && ck_.every_seconds > 0 && timed_done >= 0 && rank_ == 0 &&
        std::chrono::duration<double>(clock::now() - last_).count() >= ck_.every_seconds) {
      seen[1] = 1;
      last_ = clock::now();  // the checkpoint follows when the ranks have agreed
    }
    int agreed[2] = {seen[0], seen[1]};
    if (nranks_ > 1) {
      agreed[0] = agreed[1] = 0;
      if (pending_) {
        detail::counted_mpi(0, [&] { return MPI_Wait(&request_, MPI_STATUS_IGNORE); });
        agreed[0] = received_[0];
        agreed[1] = received_[1];
      }
      sent_[0] = seen[0];
      sent_[1] = seen[1];
      detail::counted_mpi(sizeof sent_,
                          [&] { return MPI_Iallreduce(sent_, received_, 2, MPI_INT, MPI_MAX, comm_, &request_); });
      pending_ = true;
    }
    return decide(agreed, timed_done);
  }

  // After the last block (collective): completes the pending agreement and
  // agrees once more, blocking, on a signal seen since. Returns the agreed
  // stop signal (0 = none).
  int finish() {
    int flags[2] = {stop_signal_received(), 0};
    if (nranks_ > 1) {
      if (pending_) {
        detail::counted_mpi(0, [&] { return MPI_Wait(&request_, MPI_STATUS_IGNORE); });
        pending_ = false;
        flags[0] = std::max(flags[0], received_[0]);
      }
      detail::counted_mpi(sizeof(int), [&] { return MPI_Allreduce(MPI_IN_PLACE, flags, 1, MPI_INT, MPI_MAX, comm_); });
    }
    return flags[0];
  }

  // A checkpoint was written: every_seconds counts from now.
  void written() { last_ = clock::now(); }

 private:
  using clock = std::chrono::steady_clock;
  Decision decide(const int agreed[2], std::int64_t timed_done) const {
    Decision d;
    d.signal = agreed[0];
    d.checkpoint = enabled() && (agreed[0] != 0 || agreed[1] != 0 ||
                                 (ck_.every_steps > 0 && timed_done > 0 && timed_done % ck_.every_steps == 0));
    return d;
  }
  CheckpointConfig ck_;
  MPI_Comm comm_;
  int rank_ = 0, nranks_ = 1;
  clock::time_point last_;
  bool pending_ = false;
  MPI_Request request_ = MPI_REQUEST_NULL;
  int sent_[2] = {0, 0}, received_[2] = {0, 0};
};

namespace detail {

// The statistics of this segment so far, reduced over the ranks
// (collective): timers (max/min/mean over ranks per phase), the timed and
// warm-up steps it did, the timed loop's wall time (max over ranks), the
// per-rank update rates (`local_timed_samples`: this rank's timed samples
// in the segment), and (npy) the reduced I/O accounting `io`.
inline nlohmann::json segment_stats(const TimerSet& timers, MPI_Comm comm, std::int64_t timed_steps,
                                    std::int64_t warmup_steps, double loop_s, double local_timed_samples,
                                    const nlohmann::json& timer_stats, const nlohmann::json& io) {
  int nranks = 1;
  MPI_Comm_size(comm, &nranks);
  const double update_s = timers.seconds("update");
  const double rate = update_s > 0 ? local_timed_samples / update_s : 0.0;
  PackedAllreduce p;
  p.max("loop_max_s", loop_s);
  p.min("rate_min", rate);
  p.max("rate_max", rate);
  p.reduce(comm);
  nlohmann::json s = {{"ranks", nranks},
                      {"timed_steps", timed_steps},
                      {"warmup_steps", warmup_steps},
                      {"timers", timer_stats},
                      {"loop_max_s", p.real("loop_max_s")},
                      {"per_rank_update_samples_per_second_min", p.real("rate_min")},
                      {"per_rank_update_samples_per_second_max", p.real("rate_max")}};
  if (!io.is_null()) s["io"] = io;
  return s;
}

}  // namespace detail

// The segments added up: every timer statistic (max_s, min_s, mean_s of
// each phase) is the sum over the segments of that segment's statistic over
// its ranks, so the update time behind the figure of merit is the sum of
// the per-segment maxima (an upper bound of any rank's total: the FOM of a
// restarted run is never flattered); loop_max_s sums; the per-rank update
// rates are the min / max over the segments that did timed steps; I/O sums
// (bytes, seconds, chunks; per-rank bandwidth: min), its non-finite rows
// are the last segment's (which carries the earlier ones).
inline nlohmann::json combine_segments(const nlohmann::json& segments) {
  nlohmann::json timers = nlohmann::json::object();
  double loop = 0, rate_min = -1, rate_max = 0;
  std::int64_t timed = 0;
  nlohmann::json io;
  for (const auto& s : segments) {
    for (const auto& [phase, t] : s.at("timers").items()) {
      if (!timers.contains(phase)) timers[phase] = {{"max_s", 0.0}, {"min_s", 0.0}, {"mean_s", 0.0}};
      for (const char* k : {"max_s", "min_s", "mean_s"})
        timers[phase][k] = timers[phase][k].get<double>() + t.at(k).get<double>();
    }
    loop += s.at("loop_max_s").get<double>();
    timed += s.at("timed_steps").get<std::int64_t>();
    if (s.at("timed_steps").get<std::int64_t>() > 0) {
      const double lo = s.at("per_rank_update_samples_per_second_min").get<double>();
      rate_min = rate_min < 0 ? lo : std::min(rate_min, lo);
      rate_max = std::max(rate_max, s.at("per_rank_update_samples_per_second_max").get<double>());
    }
    if (s.contains("io")) {
      const auto& x = s["io"];
      if (io.is_null()) {
        io = x;
      } else {
        for (const char* k : {"bytes_read", "chunks_staged_max"})
          io[k] = io[k].get<long long>() + x.at(k).get<long long>();
        for (const char* k : {"read_seconds", "stall_seconds", "copy_seconds"})
          io[k] = io[k].get<double>() + x.at(k).get<double>();
        io["per_rank_read_bandwidth_bytes_per_s_min"] =
            std::min(io["per_rank_read_bandwidth_bytes_per_s_min"].get<double>(),
                     x.at("per_rank_read_bandwidth_bytes_per_s_min").get<double>());
        io["nonfinite_rows"] = x.at("nonfinite_rows");
        io["chunk_rows"] = x.at("chunk_rows");
        io["files"] = x.at("files");
      }
      const double rs = io["read_seconds"].get<double>();
      io["read_bandwidth_bytes_per_s"] = rs > 0 ? io["bytes_read"].get<double>() / rs : 0.0;
    }
  }
  nlohmann::json out = {{"timers", timers},
                        {"loop_max_s", loop},
                        {"timed_steps", timed},
                        {"per_rank_update_samples_per_second_min", rate_min < 0 ? 0.0 : rate_min},
                        {"per_rank_update_samples_per_second_max", rate_max}};
  if (!io.is_null()) out["io"] = io;
  return out;
}

}  // namespace mosaic
