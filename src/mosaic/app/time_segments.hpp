// ALGORITHM.md section 9 (../shared/ALGORITHM-9-segments.md) in the
// mini-app: each of a rank's S streams is cut into P time segments, and the
// segments are slots of one batched engine (slot s P + q holds segment q of
// stream s), so one long stream fills the batch the way many streams do.
//
// A pass steps every slot that runs in it in lockstep, block by block, with
// the run's kernel and block size (9.9): slot i reads its own rows of its
// stream (a source over the slots, each slot with its row offset), and
// blocks end wherever some slot's warm-up or segment ends (and where the
// kernel's schedule needs it at the slot's own global step index:
// MosaicEngine::block_length). At a warm-up's end the slot's state Z_q is
// copied to the host and its counters start again from 0 (9.3's warm-up
// counters are kept apart); at a segment's end its state E_q is copied to
// the host and the slot stops (status stream_ended, which every kernel
// skips). Pass 1 starts slot 0 from the stream's own init, a slot whose
// warm-up would start at or before step 0 from the same init (a trivial
// boundary), every other slot cold (9.3: section 3 on the init_samples rows
// before its warm-up, the window growing backwards, init: random where that
// fails). Pass k >= 2 restarts every uncertified slot from its
// predecessor's end state, copied slot to slot on the execution space, bit
// for bit. After each pass the certificate (9.4), the rotations and the
// record (9.7) are those of the host reference (algorithm/segments.hpp:
// certify_pass, SegmentedRun), on host copies of the states.
//
// A slot that breaks down (or meets a bad row of a file: the source stages
// it as +inf, and the engine freezes the slot) ends no certified result: its
// end state counts as not a number (9.4: never certified), unless its start
// was certified, where the sequential run breaks down at the same step: the
// stream then ends there, with that slot's state and breakdown, as a
// sequential stream would.
//
// The final state (segment P - 1's, or the one the stream ended at) is
// copied into the run's batch of S streams with the counters of every
// segment's final run added up and, when certified and segment_gauge:
// carry, mapped to the sequential frame (9.6); the run's diagnostics,
// checksums, state files and verification then apply to it unchanged.
//
// Bitwise claims: a segment restarted from its predecessor's end repeats
// the sequential steps exactly when its blocks are cut where the sequential
// run's are. With the sequential kernel (block_size 1) there is nothing to
// cut, and a run certified by restarts only is bitwise the run with
// time_segments: 1. The blocked kernel's result depends on where its
// blocks end (ALGORITHM.md section 6), and a segment's blocks start at its
// boundary and end wherever another slot's warm-up or segment ends (or, with
// an explicit reorthonormalize_every, another slot's re-orthonormalization
// step falls: blocks then shrink to about reorthonormalize_every / P):
// there the restart chain equals time_segments: 1 to the blocked kernel's
// two-run floor, not bitwise.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <Kokkos_Core.hpp>

#include "mosaic/algorithm/params.hpp"
#include "mosaic/algorithm/reference.hpp"
#include "mosaic/algorithm/segments.hpp"
#include "mosaic/app/init_windows.hpp"
#include "mosaic/app/timers.hpp"
#include "mosaic/engine/batched_engine.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/sources/npy.hpp"
#include "mosaic/sources/stream_source.hpp"

namespace mosaic {

// What the driver adds to a stream's SegmentedRun: where it stopped early.
struct SegmentedStreamEnd {
  int segment = -1;  // the segment whose certified run broke down (-1: the stream ran to its end)
};

template <class Scalar, class Exec>
class TimeSegments {
 public:
  using Batch = StreamBatch<Scalar, Exec>;
  using Source = StreamSource<Scalar, Exec>;

  // Throws std::invalid_argument for a stream with fewer steps than
  // segments.
  TimeSegments(const MosaicParams& p, const ResolvedSegments& rs, int d, int r, std::vector<SegmentedStream> streams,
               std::uint64_t seed)
      : p_(p), rs_(rs), d_(d), r_(r), P_(rs.segments), streams_(std::move(streams)), seed_(seed) {
    for (const SegmentedStream& s : streams_)
      if (s.steps < P_)
        throw std::invalid_argument("stream " + std::to_string(s.id) + " has " + std::to_string(s.steps) +
                                    " steps, fewer than algorithm.time_segments = " + std::to_string(P_));
  }

  int segments() const { return P_; }
  int slot_count() const { return int(streams_.size()) * P_; }
  // The stream of each slot (by index into the streams), and its id.
  int stream_of(int slot) const { return slot / P_; }
  std::vector<std::uint64_t> slot_ids() const {
    std::vector<std::uint64_t> ids;
    for (int i = 0; i < slot_count(); ++i) ids.push_back(streams_[std::size_t(stream_of(i))].id);
    return ids;
  }
  // b_0 .. b_P of 9.2 for stream s.
  std::vector<std::int64_t> boundaries(int s) const {
    std::vector<std::int64_t> b;
    for (int q = 0; q <= P_; ++q) b.push_back(segment_begin(q, streams_[std::size_t(s)].steps, P_));
    return b;
  }

  // Runs the passes. `streams`: the S streams after their own init (section
  // 3), in the order given; each gets its final state. `source`: a source
  // over slot_ids() (slot i reads the data of stream stream_of(i)). Timed
  // under generate (the source), update (the engine) and segments (starts,
  // host copies, the certificate). Returns each stream's record;
  // `ends` gets where a stream stopped early.
  std::vector<SegmentedRun<Scalar>> run(Batch& streams, Source& source, TimerSet& timers,
                                        std::vector<SegmentedStreamEnd>& ends) {
    const int S = int(streams_.size());
    const std::size_t nS = streams_.size();
    Batch slots(slot_count(), d_, r_, slot_ids(), p_.noise);
    MosaicEngine<Scalar, Exec> engine(p_, slots.batch, d_, r_);
    std::vector<SegmentedRun<Scalar>> out(nS);
    ends.assign(nS, SegmentedStreamEnd{});
    std::vector<std::vector<ReferenceState<Scalar>>> Z(nS), E(nS);
    std::vector<std::vector<bool>> c(nS, std::vector<bool>(std::size_t(P_), false));
    std::vector<bool> done(nS, false);
    for (int s = 0; s < S; ++s) {
      Z[std::size_t(s)].assign(std::size_t(P_), ReferenceState<Scalar>(d_, r_));
      E[std::size_t(s)].assign(std::size_t(P_), ReferenceState<Scalar>(d_, r_));
      out[std::size_t(s)].rotations.assign(std::size_t(P_), detail::identity_matrix(r_));
      out[std::size_t(s)].cold_init_samples.assign(std::size_t(P_), 0);
    }
    for (int pass = 1; std::count(done.begin(), done.end(), false) > 0; ++pass) {
      const auto t_start = std::chrono::steady_clock::now();
      std::vector<SlotRun> plan(std::size_t(slots.batch));
      timers.time("segments", [&] {
        if (pass == 1) start_first_pass(streams, slots, source, plan, out);
        else restart_uncertified(slots, c, done, plan);
      });
      step_pass(slots, engine, source, timers, plan, Z, E, out);
      timers.time("segments", [&] {
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
        for (int s = 0; s < S; ++s) {
          if (done[std::size_t(s)]) continue;
          auto& cs = c[std::size_t(s)];
          std::vector<ReferenceState<Scalar>> Ec = E[std::size_t(s)];  // broken runs as not a number
          std::int64_t worker_steps = 0;
          for (int q = 0; q < P_; ++q) {
            const SlotRun& run = plan[std::size_t(s * P_ + q)];
            if (!run.active) continue;
            worker_steps = std::max(worker_steps, run.warm + run.length);
            if (run.broke) Ec[std::size_t(q)].s2 = std::numeric_limits<Scalar>::quiet_NaN();
          }
          const auto delta = certify_pass(Z[std::size_t(s)], Ec, rs_.tolerance, cs, out[std::size_t(s)].rotations);
          out[std::size_t(s)].record_pass(delta, cs, worker_steps, seconds);
          // A run that broke down and stays certified started exactly from
          // its predecessor's end (certify_pass): the sequential stream
          // breaks down at the same step, and ends there.
          int end = -1;
          for (int q = P_ - 1; q >= 0; --q) {
            const SlotRun& run = plan[std::size_t(s * P_ + q)];
            if (run.active && run.broke && cs[std::size_t(q)]) end = q;
            if (run.active && run.broke && !run.started_broken && !cs[std::size_t(q)])
              out[std::size_t(s)].broken_runs += 1;
          }
          if (end >= 0) ends[std::size_t(s)].segment = end;
          const int last = end >= 0 ? end : P_ - 1;
          const std::vector<bool> kept(cs.begin(), cs.begin() + last + 1);
          if (std::count(kept.begin(), kept.end(), true) == last + 1 || pass >= rs_.max_passes) {
            done[std::size_t(s)] = true;
            out[std::size_t(s)].finish(kept, streams_[std::size_t(s)].steps);
          }
        }
      });
    }
    timers.time("segments", [&] {
      for (int s = 0; s < S; ++s) assemble(streams, slots, s, ends[std::size_t(s)], E[std::size_t(s)], out);
    });
    return out;
  }

 private:
  // What slot i does in a pass: whether it runs, its first step's global
  // index (its row offset is first_row + start), its warm-up and segment
  // lengths, and whether it broke down (or froze on a bad row).
  struct SlotRun {
    bool active = false;
    std::int64_t start = 0, warm = 0, length = 0;
    bool broke = false;
    bool started_broken = false;  // restarted from a predecessor that broke down (it does not step)
  };

  // 9.3's pass 1.
  void start_first_pass(Batch& streams, Batch& slots, Source& source, std::vector<SlotRun>& plan,
                        std::vector<SegmentedRun<Scalar>>& out) {
    MosaicParams cold_params = p_;
    cold_params.init = InitMode::data;
    for (int s = 0; s < int(streams_.size()); ++s) {
      const std::vector<std::int64_t> b = boundaries(s);
      std::optional<detail::OneStreamInit<Scalar, Exec>> cold;  // cold starts, on a batch of one
      for (int q = 0; q < P_; ++q) {
        const int i = s * P_ + q;
        SlotRun& run = plan[std::size_t(i)];
        run.active = true;
        run.length = b[std::size_t(q) + 1] - b[std::size_t(q)];
        const std::int64_t w = b[std::size_t(q)] - rs_.warmup;
        if (q == 0 || w <= 0) {  // the stream's own start
          slots.copy_stream(streams, s, i);
          run.warm = b[std::size_t(q)];
          if (q > 0) out[std::size_t(s)].trivial_boundaries += 1;
          continue;
        }
        if (!cold) cold.emplace(cold_params, d_, r_, streams_[std::size_t(s)].id);
        cold_start(*cold, source, i, streams_[std::size_t(s)].first_row + w, out[std::size_t(s)], q);
        slots.copy_stream(cold->batch, 0, i);
        slots.set_step_count(i, w);  // re-orthonormalization at the global step index (9.3)
        run.start = w;
        run.warm = b[std::size_t(q)] - w;
      }
    }
  }

  // 9.3's cold state into `cold.batch`: section 3 on the rows before `end`,
  // the window growing backwards; init: random where no window within
  // init_max_samples (and the stream's start) gives one, or where the
  // options ask for it. Never the stream's error: a cold state changes only
  // the passes.
  void cold_start(detail::OneStreamInit<Scalar, Exec>& cold, Source& source, int slot, std::int64_t end,
                  SegmentedRun<Scalar>& out, int q) {
    if (rs_.warmup_init == InitMode::data) {
      try {
        const auto grown = detail::grow_init_window(
            [&](int m) {
              cold.start(source, slot, end - m, m);
              return m;
            },
            end, r_, cold.engine.params());
        out.cold_data_starts += 1;
        out.cold_init_samples[std::size_t(q)] = grown.samples_used;
        return;
      } catch (const std::invalid_argument&) {  // the start's own errors (InitRankDeficient among them)
      } catch (const NpyValueError&) {          // a bad value in the window (a file's fault stops the run)
      }
    }
    out.cold_random_starts += 1;
    cold.engine.init_random(cold.batch, seed_);
  }

  // 9.5: every uncertified slot of a stream still running starts again
  // from its predecessor's end state (from the last slot down, so that each
  // reads its predecessor before that one is overwritten in turn).
  void restart_uncertified(Batch& slots, const std::vector<std::vector<bool>>& c, const std::vector<bool>& done,
                           std::vector<SlotRun>& plan) {
    for (int s = 0; s < int(streams_.size()); ++s) {
      if (done[std::size_t(s)]) continue;
      const std::vector<std::int64_t> b = boundaries(s);
      for (int q = P_ - 1; q >= 1; --q) {
        if (c[std::size_t(s)][std::size_t(q)]) continue;
        const int i = s * P_ + q;
        slots.copy_stream(slots, i - 1, i);
        const int status = slots.stream_status(i);
        if (status == stream_ended) slots.set_status(i, breakdown_none, -1);
        SlotRun& run = plan[std::size_t(i)];
        run.started_broken = status != stream_ended && status != breakdown_none;
        run.active = true;
        run.start = b[std::size_t(q)];
        run.length = b[std::size_t(q) + 1] - b[std::size_t(q)];
      }
    }
  }

  // One pass in lockstep over the slots that run in it (file comment).
  void step_pass(Batch& slots, const MosaicEngine<Scalar, Exec>& engine, Source& source, TimerSet& timers,
                 std::vector<SlotRun>& plan, std::vector<std::vector<ReferenceState<Scalar>>>& Z,
                 std::vector<std::vector<ReferenceState<Scalar>>>& E, std::vector<SegmentedRun<Scalar>>& out) {
    const int B = slots.batch;
    std::vector<std::int64_t> offsets(std::size_t(B), 0);
    SourcePosition position;
    position.frozen.assign(std::size_t(B), 1);
    std::int64_t span = 0;
    for (int i = 0; i < B; ++i) {
      const SlotRun& run = plan[std::size_t(i)];
      offsets[std::size_t(i)] = streams_[std::size_t(stream_of(i))].first_row + run.start;
      if (!run.active) continue;
      position.frozen[std::size_t(i)] = 0;
      span = std::max(span, run.warm + run.length);
    }
    timers.time("generate", [&] {
      source.set_row_offsets(offsets);
      source.resume_at(0, position);  // the slots that do not run: frozen (an npy source reads no rows for them)
    });
    // A slot's start state Z_q, read back from the slot itself (what the
    // certificate judges is what the slot runs from; a restart's is
    // E_{q-1} bit for bit, which 9.4 then finds exactly), its warm-up's
    // counters kept apart.
    const auto segment_starts = [&](int i) {
      const int s = stream_of(i), q = i % P_;
      ReferenceState<Scalar>& z = Z[std::size_t(s)][std::size_t(q)];
      z = slots.to_host(i);
      if (plan[std::size_t(i)].warm > 0) out[std::size_t(s)].warmup_counters.add(z);
      if (slots.stream_status(i) != breakdown_none) {  // broke down in its warm-up, or restarts from a broken state
        plan[std::size_t(i)].broke = true;
        z.s2 = std::numeric_limits<Scalar>::quiet_NaN();
      }
      slots.reset_counters(i);
    };
    const auto segment_ends = [&](int i) {
      E[std::size_t(stream_of(i))][std::size_t(i % P_)] = slots.to_host(i);
      if (slots.stream_status(i) == breakdown_none) slots.set_status(i, stream_ended, -1);
      else plan[std::size_t(i)].broke = true;
    };
    timers.time("segments", [&] {
      for (int i = 0; i < B; ++i)
        if (plan[std::size_t(i)].active && plan[std::size_t(i)].warm == 0) segment_starts(i);
    });
    for (std::int64_t j = 0; j < span;) {
      std::int64_t n = span - j;
      for (int i = 0; i < B; ++i) {
        const SlotRun& run = plan[std::size_t(i)];
        if (!run.active || j >= run.warm + run.length) continue;
        if (j < run.warm) n = std::min(n, run.warm - j);
        n = std::min(n, run.warm + run.length - j);
        n = std::min<std::int64_t>(n, engine.block_length(run.start + j));
      }
      typename Source::block_view X;
      timers.time("generate", [&] { X = source.next_block(j, int(n)); });
      timers.time("update", [&] { engine.advance(slots, X); });
      j += std::int64_t(X.extent(1));
      timers.time("segments", [&] {
        for (int i = 0; i < B; ++i) {
          const SlotRun& run = plan[std::size_t(i)];
          if (!run.active) continue;
          if (run.warm > 0 && j == run.warm) segment_starts(i);
          if (j == run.warm + run.length) segment_ends(i);
        }
      });
    }
  }

  // The final state of stream s into `streams` (file comment).
  void assemble(Batch& streams, Batch& slots, int s, const SegmentedStreamEnd& end,
                const std::vector<ReferenceState<Scalar>>& E, std::vector<SegmentedRun<Scalar>>& out) {
    SegmentedRun<Scalar>& rec = out[std::size_t(s)];
    const int last = end.segment >= 0 ? end.segment : P_ - 1;
    streams.copy_stream(slots, s * P_ + last, s);
    // (The slot stopped at its segment's end; the run marks the streams
    // whose data end before its last step itself.)
    if (streams.stream_status(s) == stream_ended) streams.set_status(s, breakdown_none, -1);
    streams.reset_counters(s);
    for (int q = 0; q <= last; ++q) {
      streams.add_counters(slots, s * P_ + q, s);
      rec.counters.add(E[std::size_t(q)]);
    }
    if (rs_.gauge_carry) {
      const std::vector<double> G = rec.carried_gauge(r_);
      if (!G.empty()) {
        ReferenceState<Scalar> st = streams.to_host(s);
        apply_gauge(st, G);
        streams.write_state_values(s, st);
      }
    }
    rec.end_states = E;
    rec.final_state = streams.to_host(s);
  }

  MosaicParams p_;
  ResolvedSegments rs_;
  int d_, r_, P_;
  std::vector<SegmentedStream> streams_;
  std::uint64_t seed_;
};

}  // namespace mosaic
