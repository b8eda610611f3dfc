// ALGORITHM.md section 9 (../shared/ALGORITHM-9-segments.md) in the
// mini-app: each of the run's S streams is cut into P time segments, and
// the segments are slots of the ranks' batched engines (segment q of stream
// s is slot s P + q of the run, the slots cut over the ranks as
// SegmentLayout says), so one long stream fills a batch the way many
// streams do.
//
// A pass steps every slot of a rank that runs in it in lockstep, block by
// block, with the run's kernel and block size (9.9): slot i reads its own
// rows of its stream (a source over the slots, each slot with its row
// offset), and blocks end wherever any segment of the run could end its
// warm-up or its segment in that pass, or needs a cut at its global step
// index (MosaicEngine::block_length's schedule): PassBlocks, the same cuts
// on every rank, running or not. At a warm-up's end the slot's state Z_q is
// copied to the host and its counters start again from 0 (9.3's warm-up
// counters are kept apart); at a segment's end its state E_q is copied to
// the host and the slot stops (status stream_ended, which every kernel
// skips). Pass 1 starts slot 0 from the stream's own init, a slot whose
// warm-up would start at or before step 0 from the same init (a trivial
// boundary), every other slot cold (9.3: section 3 on the init_samples rows
// before its warm-up, the window growing backwards, init: random where that
// fails). Pass k >= 2 restarts every uncertified slot from its
// predecessor's end state, copied slot to slot on the execution space, or
// from the state the rank before sent, bit for bit. After each pass the certificate (9.4), the rotations and the
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
// The final state (segment P - 1's, or the one the stream ended at), with
// the counters of every segment's final run added up and, when certified
// and segment_gauge: carry, mapped to the sequential frame (9.6), goes into
// the batch of the stream's owner; the run's diagnostics, checksums, state
// files and verification then apply to it unchanged.
//
// Ranks. The slots of all the run's streams lie on the ranks as
// SegmentLayout cuts them (app/decomposition.hpp): one stream's segments
// on consecutive ranks, a stream owned (started and reported) by the rank
// of its segment 0. After each pass a rank sends the end state of its last
// segment of a stream that goes on to the next rank (every per-stream view
// packed, bit for bit: StreamBatch::pack_stream), one message per
// neighbour; the next rank judges that boundary and restarts from that
// state as it would from a slot of its own. The certificate's AND over the
// ranks is an exclusive scan (exscan_and), where each stream ends and
// whether it is done one reduction. At the end the counters and the gauge
// pass along the stream's ranks in segment order, so that the sums and the
// product have the bits of one rank's, and the final state goes to the
// owner. Whatever the number of ranks, a stream's states, passes and
// certificate are those of one rank.
//
// Bitwise claims: a segment restarted from its predecessor's end repeats
// the sequential steps exactly when its blocks are cut where the sequential
// run's are. With the sequential kernel (block_size 1) there is nothing to
// cut, and a run certified by restarts only is bitwise the run with
// time_segments: 1. The blocked kernel's result depends on where its
// blocks end (ALGORITHM.md section 6), and a segment's blocks start at its
// boundary and end wherever any segment of the run could end its warm-up or
// its segment (or, with an explicit reorthonormalize_every, wherever any
// segment's re-orthonormalization step falls: blocks then shrink to about
// reorthonormalize_every / P for streams of one length, less for streams
// of several): there the restart chain equals time_segments: 1 to the
// blocked kernel's two-run floor, not bitwise. Those cuts do not depend on
// the ranks: a result is bitwise the same on any number of them.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <list>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <Kokkos_Core.hpp>

#include "mosaic/algorithm/params.hpp"
#include "mosaic/algorithm/reference.hpp"
#include "mosaic/algorithm/segments.hpp"
#include "mosaic/app/decomposition.hpp"
#include "mosaic/app/init_windows.hpp"
#include "mosaic/app/timers.hpp"
#include "mosaic/engine/batched_engine.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/sources/npy.hpp"
#include "mosaic/sources/stream_source.hpp"
#include "mosaic/util/mpi_collectives.hpp"

namespace mosaic {

// What the driver adds to a stream's SegmentedRun: where it stopped early.
struct SegmentedStreamEnd {
  int segment = -1;  // the segment whose certified run broke down (-1: the stream ran to its end)
};

// The segments q_begin .. q_end - 1 of one stream that a rank holds, in
// its slots first_slot ..; `owned`: the stream's index in the rank's batch
// of streams (-1: another rank owns it).
struct SegmentRange {
  int stream = 0;  // index into the run's streams
  int q_begin = 0, q_end = 0;
  int first_slot = 0;
  int owned = -1;
  int spanning = -1;  // index among the streams whose segments lie on more than one rank (-1: one rank)
};

// Where the blocks of one pass end: at every warm-up end and segment end
// (`events`, pass-local step indices) and wherever the kernel's schedule
// needs it at some slot's global step index (a multiple of each of
// `periods` after one of `starts`: MosaicEngine::block_length), blocks of
// at most block_size steps in between. Built from every slot of the run,
// so a rank cuts its blocks where one rank holding all the slots would.
class PassBlocks {
 public:
  PassBlocks(std::vector<std::int64_t> events, const std::vector<std::int64_t>& starts,
             const std::vector<std::int64_t>& periods, int block_size)
      : events_(std::move(events)), block_size_(block_size) {
    std::sort(events_.begin(), events_.end());
    events_.erase(std::unique(events_.begin(), events_.end()), events_.end());
    for (const std::int64_t every : periods) {
      std::vector<std::int64_t> residues;  // j = residue (mod every): some slot's step count is a multiple
      for (const std::int64_t start : starts) residues.push_back((every - start % every) % every);
      std::sort(residues.begin(), residues.end());
      residues.erase(std::unique(residues.begin(), residues.end()), residues.end());
      periodic_.emplace_back(every, std::move(residues));
    }
  }
  // The length of the block after step j: to the first cut after j.
  std::int64_t length(std::int64_t j) const {
    std::int64_t n = block_size_;
    const auto event = std::upper_bound(events_.begin(), events_.end(), j);
    if (event != events_.end()) n = std::min(n, *event - j);
    for (const auto& [every, residues] : periodic_) {
      const std::int64_t m = (j + 1) % every;
      const auto at = std::lower_bound(residues.begin(), residues.end(), m);
      n = std::min(n, 1 + (at != residues.end() ? *at - m : residues.front() + every - m));
    }
    return n;
  }

 private:
  std::vector<std::int64_t> events_;
  std::vector<std::pair<std::int64_t, std::vector<std::int64_t>>> periodic_;
  std::int64_t block_size_;
};

template <class Scalar, class Exec>
class TimeSegments {
 public:
  using Batch = StreamBatch<Scalar, Exec>;
  using Source = StreamSource<Scalar, Exec>;

  // `streams`: every stream of the run, by its index in the layout (ids in
  // any order); this rank's slots are SegmentLayout's over `comm`. Throws
  // std::invalid_argument for a stream with fewer steps than segments (on
  // every rank: each checks every stream).
  TimeSegments(const MosaicParams& p, const ResolvedSegments& rs, int d, int r, std::vector<SegmentedStream> streams,
               std::uint64_t seed, MPI_Comm comm)
      : p_(p),
        rs_(rs),
        d_(d),
        r_(r),
        P_(rs.segments),
        streams_(std::move(streams)),
        seed_(seed),
        comm_(comm),
        layout_(std::int64_t(streams_.size()), P_, ranks_of(comm)) {
    MPI_Comm_rank(comm_, &rank_);
    for (const SegmentedStream& s : streams_)
      if (s.steps < P_)
        throw std::invalid_argument("stream " + std::to_string(s.id) + " has " + std::to_string(s.steps) +
                                    " steps, fewer than algorithm.time_segments = " + std::to_string(P_));
    for (int k = 1; k < layout_.ranks; ++k) {
      const std::int64_t g = layout_.first_slot(k);
      if (g % P_ != 0 && (spanning_.empty() || spanning_.back() != int(g / P_))) spanning_.push_back(int(g / P_));
    }
    const std::int64_t g0 = layout_.first_slot(rank_), g1 = layout_.first_slot(rank_ + 1);
    int owned = 0;
    for (std::int64_t g = g0; g < g1;) {
      SegmentRange l;
      l.stream = int(g / P_);
      l.q_begin = int(g - std::int64_t(l.stream) * P_);
      l.q_end = int(std::min(g1, std::int64_t(l.stream + 1) * P_) - std::int64_t(l.stream) * P_);
      l.first_slot = int(g - g0);
      l.owned = l.q_begin == 0 ? owned++ : -1;
      const auto at = std::find(spanning_.begin(), spanning_.end(), l.stream);
      l.spanning = at == spanning_.end() ? -1 : int(at - spanning_.begin());
      ranges_.push_back(l);
      g += l.q_end - l.q_begin;
    }
  }

  int segments() const { return P_; }
  int slot_count() const { return int(layout_.slots_on(rank_)); }
  // This rank's segments, one range per stream, in slot order.
  const std::vector<SegmentRange>& ranges() const { return ranges_; }
  const SegmentedStream& stream(int s) const { return streams_[std::size_t(s)]; }
  // The id of each slot's stream.
  std::vector<std::uint64_t> slot_ids() const {
    std::vector<std::uint64_t> ids;
    for (const SegmentRange& l : ranges_)
      for (int q = l.q_begin; q < l.q_end; ++q) ids.push_back(streams_[std::size_t(l.stream)].id);
    return ids;
  }
  // b_0 .. b_P of 9.2 for stream s.
  std::vector<std::int64_t> boundaries(int s) const {
    std::vector<std::int64_t> b;
    for (int q = 0; q <= P_; ++q) b.push_back(segment_begin(q, streams_[std::size_t(s)].steps, P_));
    return b;
  }

  // Runs the passes (collective over the communicator). `streams`: the
  // streams this rank owns, after their own init (section 3), in the order
  // of ranges() with owned >= 0; each gets its final state. `source`: a
  // source over slot_ids(). Timed under generate (the source), update (the
  // engine) and segments (starts, messages, host copies, the certificate).
  // Returns the record of each of ranges()'s streams as far as this rank's
  // segments go (merge_stream_records, segments_report.hpp, joins them;
  // on one rank each is the stream's); `ends` gets where a stream stopped
  // early.
  std::vector<SegmentedRun<Scalar>> run(Batch& streams, Source& source, TimerSet& timers,
                                        std::vector<SegmentedStreamEnd>& ends) {
    const std::size_t L = ranges_.size();
    Batch slots(slot_count(), d_, r_, slot_ids(), p_.noise);
    MosaicEngine<Scalar, Exec> engine(p_, slots.batch, d_, r_);
    Passes state;
    state.out.resize(L);
    ends.assign(L, SegmentedStreamEnd{});
    state.Z.resize(L);
    state.E.resize(L);
    state.c.assign(L, std::vector<bool>(std::size_t(P_), false));
    state.predecessor.resize(L);
    state.done.assign(L, false);
    for (std::size_t j = 0; j < L; ++j) {
      // (Filled for this rank's segments, and E_{q_begin-1}, only.)
      state.Z[j].assign(std::size_t(P_), ReferenceState<Scalar>());
      state.E[j].assign(std::size_t(P_), ReferenceState<Scalar>());
      state.out[j].rotations.assign(std::size_t(P_), detail::identity_matrix(r_));
      state.out[j].cold_init_samples.assign(std::size_t(P_), 0);
    }
    bool running = true;
    std::optional<PassBlocks> blocks;
    for (int pass = 1; running; ++pass) {
      const auto t_start = std::chrono::steady_clock::now();
      std::vector<SlotRun> plan(std::size_t(slots.batch));
      timers.time("segments", [&] {
        if (pass == 1) start_first_pass(streams, slots, source, plan, state.out);
        else restart_uncertified(slots, state, plan);
      });
      // (Every pass after the first has the same plan.)
      if (pass <= 2) timers.time("segments", [&] { blocks.emplace(pass_blocks(pass, engine)); });
      step_pass(slots, engine, *blocks, source, timers, plan, state);
      timers.time("segments", [&] {
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
        running = certify(pass, seconds, slots, plan, state, ends);
      });
    }
    timers.time("segments", [&] { assemble(streams, slots, ends, state); });
    return state.out;
  }

 private:
  static int ranks_of(MPI_Comm comm) {
    int n = 1;
    MPI_Comm_size(comm, &n);
    return n;
  }

  // What slot i does in a pass: whether it runs, its first step's global
  // index (its row offset is first_row + start), its warm-up and segment
  // lengths, and whether it broke down (or froze on a bad row).
  struct SlotRun {
    bool active = false;
    std::int64_t start = 0, warm = 0, length = 0;
    bool broke = false;
    bool started_broken = false;  // restarted from a predecessor that broke down (it does not step)
  };

  // Per range of ranges_: its start and end states Z_q, E_q (E_{q_begin-1}
  // from the rank before), the certificate, the packed end state of segment
  // q_begin - 1 from the rank before (the next restart's start), whether it
  // is done, its record.
  struct Passes {
    std::vector<std::vector<ReferenceState<Scalar>>> Z, E;
    std::vector<std::vector<bool>> c;
    std::vector<std::vector<char>> predecessor;
    std::vector<bool> predecessor_broke;
    std::vector<bool> done;
    std::vector<SegmentedRun<Scalar>> out;
  };

  // Message tags, one per kind (messages of one kind between two ranks go
  // in the order of the streams on both sides).
  enum Tag : int { tag_start = 9001, tag_boundary, tag_chain, tag_final };

  int slot_of(const SegmentRange& l, int q) const { return l.first_slot + (q - l.q_begin); }
  int rank_of(int s, int q) const { return layout_.rank_of_slot(std::int64_t(s) * P_ + q); }
  // What segment q of stream s does in pass `pass` if it runs: in pass 1
  // (9.3) from the stream's own start (segment 0, and a trivial boundary:
  // a warm-up that would begin at or before step 0) or from a cold state W
  // steps before its segment; in later passes (9.5) from its segment's
  // first step.
  SlotRun planned(int s, int q, int pass) const {
    const std::int64_t T = streams_[std::size_t(s)].steps, b = segment_begin(q, T, P_);
    SlotRun run;
    run.active = true;
    run.length = segment_begin(q + 1, T, P_) - b;
    if (pass > 1) {
      run.start = b;
    } else if (q == 0 || b - rs_.warmup <= 0) {
      run.warm = b;
    } else {
      run.start = b - rs_.warmup;
      run.warm = rs_.warmup;
    }
    return run;
  }
  // Segments 1 .. trivial_end(s) - 1 start from the stream's own start.
  int trivial_end(int s) const {
    int q = 1;
    while (q < P_ && planned(s, q, 1).start == 0) ++q;
    return q;
  }
  // The blocks of pass `pass`: cut for every segment of every stream that
  // could run in it, whichever rank holds it and whether it runs.
  PassBlocks pass_blocks(int pass, const MosaicEngine<Scalar, Exec>& engine) const {
    std::vector<std::int64_t> events, starts;
    for (int s = 0; s < int(streams_.size()); ++s)
      for (int q = pass > 1 ? 1 : 0; q < P_; ++q) {
        const SlotRun run = planned(s, q, pass);
        events.push_back(run.warm);
        events.push_back(run.warm + run.length);
        starts.push_back(run.start);
      }
    return PassBlocks(std::move(events), starts, engine.block_periods(), engine.block_size());
  }

  // A message in pieces of at most 1 GiB (an MPI count is an int; a
  // packed state of d = 2^16, r = 2^11 in double passes 2^31 bytes); the
  // pieces of one message arrive in order (MPI's non-overtaking rule).
  static constexpr std::size_t message_piece = std::size_t(1) << 30;
  void send(std::vector<char> bytes, int to, Tag tag, std::list<std::vector<char>>& buffers,
            std::vector<MPI_Request>& requests) const {
    buffers.push_back(std::move(bytes));
    const std::vector<char>& out = buffers.back();
    for (std::size_t at = 0; at < out.size(); at += message_piece) {
      requests.emplace_back();
      const int piece = int(std::min(message_piece, out.size() - at));
      detail::counted_mpi(piece, [&] {
        return MPI_Isend(out.data() + at, piece, MPI_BYTE, to, tag, comm_, requests.data() + (requests.size() - 1));
      });
    }
  }
  std::vector<char> receive(std::size_t bytes, int from, Tag tag) const {
    std::vector<char> in(bytes);
    for (std::size_t at = 0; at < bytes; at += message_piece)
      detail::counted_mpi(0, [&] {
        return MPI_Recv(in.data() + at, int(std::min(message_piece, bytes - at)), MPI_BYTE, from, tag, comm_,
                        MPI_STATUS_IGNORE);
      });
    return in;
  }
  static void wait_all(std::vector<MPI_Request>& requests) {
    detail::counted_mpi(0, [&] { return MPI_Waitall(int(requests.size()), requests.data(), MPI_STATUSES_IGNORE); });
    requests.clear();
  }

  // 9.3's pass 1. The owner of a stream sends its start to the ranks whose
  // first segment of it is a trivial boundary.
  void start_first_pass(Batch& streams, Batch& slots, Source& source, std::vector<SlotRun>& plan,
                        std::vector<SegmentedRun<Scalar>>& out) {
    std::list<std::vector<char>> buffers;
    std::vector<MPI_Request> requests;
    for (const SegmentRange& l : ranges_) {
      if (l.owned < 0) continue;
      const int te = trivial_end(l.stream);
      for (int k = rank_ + 1; k <= rank_of(l.stream, P_ - 1); ++k)
        if (layout_.first_slot(k) - std::int64_t(l.stream) * P_ < te)
          send(streams.pack_stream(l.owned), k, tag_start, buffers, requests);
    }
    Batch start(1, d_, r_, {0}, p_.noise);  // a stream's start from its owner
    MosaicParams cold_params = p_;
    cold_params.init = InitMode::data;
    for (std::size_t j = 0; j < ranges_.size(); ++j) {
      const SegmentRange& l = ranges_[j];
      const SegmentedStream& st = streams_[std::size_t(l.stream)];
      if (l.owned < 0 && l.q_begin < trivial_end(l.stream))
        start.unpack_stream(0, receive(start.packed_stream_bytes(), rank_of(l.stream, 0), tag_start));
      std::optional<detail::OneStreamInit<Scalar, Exec>> cold;  // cold starts, on a batch of one
      for (int q = l.q_begin; q < l.q_end; ++q) {
        const int i = slot_of(l, q);
        SlotRun& run = plan[std::size_t(i)];
        run = planned(l.stream, q, 1);
        if (run.start == 0) {  // the stream's own start
          if (l.owned >= 0) slots.copy_stream(streams, l.owned, i);
          else slots.copy_stream(start, 0, i);
          if (q > 0) out[j].trivial_boundaries += 1;
          continue;
        }
        if (!cold) cold.emplace(cold_params, d_, r_, st.id);
        cold_start(*cold, source, i, st.first_row + run.start, out[j], q);
        slots.copy_stream(cold->batch, 0, i);
        slots.set_step_count(i, run.start);  // re-orthonormalization at the global step index (9.3)
      }
    }
    wait_all(requests);
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
  // reads its predecessor before that one is overwritten in turn); the
  // first segment of a range from the state the rank before sent.
  void restart_uncertified(Batch& slots, const Passes& state, std::vector<SlotRun>& plan) {
    for (std::size_t j = 0; j < ranges_.size(); ++j) {
      if (state.done[j]) continue;
      const SegmentRange& l = ranges_[j];
      for (int q = l.q_end - 1; q >= std::max(l.q_begin, 1); --q) {
        if (state.c[j][std::size_t(q)]) continue;
        const int i = slot_of(l, q);
        if (q > l.q_begin) slots.copy_stream(slots, i - 1, i);
        else slots.unpack_stream(i, state.predecessor[j]);
        const int status = slots.stream_status(i);
        if (status == stream_ended) slots.set_status(i, breakdown_none, -1);
        SlotRun& run = plan[std::size_t(i)];
        run = planned(l.stream, q, 2);
        run.started_broken = status != stream_ended && status != breakdown_none;
      }
    }
  }

  // One pass in lockstep over the slots that run in it (file comment).
  void step_pass(Batch& slots, const MosaicEngine<Scalar, Exec>& engine, const PassBlocks& blocks, Source& source,
                 TimerSet& timers, std::vector<SlotRun>& plan, Passes& state) {
    const int B = slots.batch;
    std::vector<std::int64_t> offsets(std::size_t(B), 0);
    std::vector<int> range_of(std::size_t(B), 0), q_of(std::size_t(B), 0);
    for (std::size_t j = 0; j < ranges_.size(); ++j)
      for (int q = ranges_[j].q_begin; q < ranges_[j].q_end; ++q) {
        range_of[std::size_t(slot_of(ranges_[j], q))] = int(j);
        q_of[std::size_t(slot_of(ranges_[j], q))] = q;
      }
    SourcePosition position;
    position.frozen.assign(std::size_t(B), 1);
    std::int64_t span = 0;
    for (int i = 0; i < B; ++i) {
      const SlotRun& run = plan[std::size_t(i)];
      offsets[std::size_t(i)] =
          streams_[std::size_t(ranges_[std::size_t(range_of[std::size_t(i)])].stream)].first_row + run.start;
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
      const std::size_t j = std::size_t(range_of[std::size_t(i)]);
      ReferenceState<Scalar>& z = state.Z[j][std::size_t(q_of[std::size_t(i)])];
      z = slots.to_host(i);
      if (plan[std::size_t(i)].warm > 0) state.out[j].warmup_counters.add(z);
      if (slots.stream_status(i) != breakdown_none) {  // broke down in its warm-up, or restarts from a broken state
        plan[std::size_t(i)].broke = true;
        z.s2 = std::numeric_limits<Scalar>::quiet_NaN();
      }
      slots.reset_counters(i);
    };
    const auto segment_ends = [&](int i) {
      state.E[std::size_t(range_of[std::size_t(i)])][std::size_t(q_of[std::size_t(i)])] = slots.to_host(i);
      if (slots.stream_status(i) == breakdown_none) slots.set_status(i, stream_ended, -1);
      else plan[std::size_t(i)].broke = true;
    };
    timers.time("segments", [&] {
      for (int i = 0; i < B; ++i)
        if (plan[std::size_t(i)].active && plan[std::size_t(i)].warm == 0) segment_starts(i);
    });
    for (std::int64_t j = 0; j < span;) {
      const std::int64_t n = std::min(span - j, blocks.length(j));
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

  // The end state of a range's last segment to the next rank, for each
  // stream still running that goes on there; E_{q_begin-1} from the rank
  // before (a run that broke down: its state is frozen, not stream_ended).
  void exchange_boundaries(const Batch& slots, Passes& state) {
    std::list<std::vector<char>> buffers;
    std::vector<MPI_Request> requests;
    for (std::size_t j = 0; j < ranges_.size(); ++j)
      if (!state.done[j] && ranges_[j].q_end < P_)
        send(slots.pack_stream(slot_of(ranges_[j], ranges_[j].q_end - 1)), rank_ + 1, tag_boundary, buffers, requests);
    state.predecessor_broke.resize(ranges_.size(), false);
    Batch boundary(1, d_, r_, {0}, p_.noise);
    for (std::size_t j = 0; j < ranges_.size(); ++j) {
      const SegmentRange& l = ranges_[j];
      if (state.done[j] || l.q_begin == 0) continue;
      state.predecessor[j] = receive(boundary.packed_stream_bytes(), rank_ - 1, tag_boundary);
      boundary.unpack_stream(0, state.predecessor[j]);
      state.E[j][std::size_t(l.q_begin) - 1] = boundary.to_host(0);
      state.predecessor_broke[j] = boundary.stream_status(0) != stream_ended;
    }
    wait_all(requests);
  }

  // 9.4 to 9.7 after a pass, for every stream still running: the
  // certificate (each rank its own boundaries, the AND before them over the
  // ranks), where a stream ends, its record. Returns whether any stream of
  // any rank runs another pass.
  bool certify(int pass, double seconds, const Batch& slots, const std::vector<SlotRun>& plan, Passes& state,
               std::vector<SegmentedStreamEnd>& ends) {
    exchange_boundaries(slots, state);
    const std::size_t L = ranges_.size();
    std::vector<std::vector<BoundaryMismatch>> delta(L);
    std::vector<int> local_and(spanning_.size(), 1);
    for (std::size_t j = 0; j < L; ++j) {
      if (state.done[j]) continue;
      const SegmentRange& l = ranges_[j];
      std::vector<ReferenceState<Scalar>> Ec = state.E[j];  // broken runs as not a number
      for (int q = l.q_begin; q < l.q_end; ++q)
        if (plan[std::size_t(slot_of(l, q))].active && plan[std::size_t(slot_of(l, q))].broke)
          Ec[std::size_t(q)].s2 = std::numeric_limits<Scalar>::quiet_NaN();
      std::vector<bool>& c = state.c[j];
      if (l.q_begin > 0) {
        if (state.predecessor_broke[j]) Ec[std::size_t(l.q_begin) - 1].s2 = std::numeric_limits<Scalar>::quiet_NaN();
        c[std::size_t(l.q_begin) - 1] = true;  // the AND of the ranks before follows
      }
      delta[j] = certify_pass(state.Z[j], Ec, rs_.tolerance, c, state.out[j].rotations, std::size_t(l.q_begin),
                              std::size_t(l.q_end));
      if (l.spanning >= 0) local_and[std::size_t(l.spanning)] = c[std::size_t(l.q_end) - 1] ? 1 : 0;
    }
    const std::vector<int> before = detail::exscan_and(local_and, comm_);
    // Per stream of several ranks the first segment that ended a certified
    // run by breaking down (P: none) and the first uncertified one; the
    // last element: whether this rank's other streams are all done.
    std::vector<int> reduced(2 * spanning_.size() + 1, P_);
    reduced.back() = 1;
    std::vector<int> end_of(L, P_), uncertified_of(L, P_);
    for (std::size_t j = 0; j < L; ++j) {
      if (state.done[j]) continue;
      const SegmentRange& l = ranges_[j];
      std::vector<bool>& c = state.c[j];
      if (l.spanning >= 0 && l.q_begin > 0 && !before[std::size_t(l.spanning)]) {
        for (int q = l.q_begin - 1; q < l.q_end; ++q) c[std::size_t(q)] = false;
        for (int q = l.q_begin; q < l.q_end; ++q) state.out[j].rotations[std::size_t(q)] = detail::identity_matrix(r_);
      }
      for (int q = l.q_end - 1; q >= l.q_begin; --q) {
        const SlotRun& run = plan[std::size_t(slot_of(l, q))];
        // A run that broke down and stays certified started exactly from
        // its predecessor's end (certify_pass): the sequential stream
        // breaks down at the same step, and ends there.
        if (run.active && run.broke && c[std::size_t(q)]) end_of[j] = q;
        if (run.active && run.broke && !run.started_broken && !c[std::size_t(q)]) state.out[j].broken_runs += 1;
        if (!c[std::size_t(q)]) uncertified_of[j] = q;
      }
      if (l.spanning >= 0) {
        reduced[2 * std::size_t(l.spanning)] = end_of[j];
        reduced[2 * std::size_t(l.spanning) + 1] = uncertified_of[j];
      }
    }
    std::vector<bool> done_now(L, false);
    const auto finished = [&](int end, int uncertified) {
      return uncertified > (end < P_ ? end : P_ - 1) || pass >= rs_.max_passes;
    };
    for (std::size_t j = 0; j < L; ++j)
      if (!state.done[j] && ranges_[j].spanning < 0 && !finished(end_of[j], uncertified_of[j])) reduced.back() = 0;
    detail::counted_mpi((long long)(reduced.size() * sizeof(int)), [&] {
      return MPI_Allreduce(MPI_IN_PLACE, reduced.data(), int(reduced.size()), MPI_INT, MPI_MIN, comm_);
    });
    bool running = reduced.back() == 0;
    for (std::size_t x = 0; x < spanning_.size(); ++x)
      if (!finished(reduced[2 * x], reduced[2 * x + 1])) running = true;
    for (std::size_t j = 0; j < L; ++j) {
      if (state.done[j]) continue;
      const SegmentRange& l = ranges_[j];
      const int end = l.spanning >= 0 ? reduced[2 * std::size_t(l.spanning)] : end_of[j];
      const int uncertified = l.spanning >= 0 ? reduced[2 * std::size_t(l.spanning) + 1] : uncertified_of[j];
      if (end < P_) ends[j].segment = end;
      // The record of this rank's segments: the certificate and the worker
      // steps of its own (the others' are merged in from their ranks).
      std::vector<bool> mine(std::size_t(P_), false);
      std::int64_t worker_steps = 0;
      for (int q = l.q_begin; q < l.q_end; ++q) {
        mine[std::size_t(q)] = state.c[j][std::size_t(q)];
        const SlotRun& run = plan[std::size_t(slot_of(l, q))];
        if (run.active) worker_steps = std::max(worker_steps, run.warm + run.length);
      }
      state.out[j].record_pass(delta[j], mine, worker_steps, seconds);
      if (finished(end, uncertified)) {
        state.done[j] = true;
        const int last = end < P_ ? end : P_ - 1;
        std::vector<bool> kept(std::size_t(last) + 1, true);  // other ranks' segments: merged in
        for (int q = l.q_begin; q < std::min(l.q_end, last + 1); ++q) kept[std::size_t(q)] = state.c[j][std::size_t(q)];
        state.out[j].finish(kept, streams_[std::size_t(l.stream)].steps);
      }
    }
    return running;
  }

  // The final state of each stream into `streams` on its owner (file
  // comment): the counters of the final runs added in segment order and
  // the gauge carried along the stream's ranks, then the final state built
  // on the rank of the stream's last segment, and sent to the owner.
  void assemble(Batch& streams, Batch& slots, const std::vector<SegmentedStreamEnd>& ends, Passes& state) {
    std::list<std::vector<char>> buffers;
    std::vector<MPI_Request> requests;
    Batch counted(1, d_, r_, {0}, p_.noise);  // the counters of the segments so far
    Batch final_state(1, d_, r_, {0}, p_.noise);
    const std::size_t gauge_bytes = std::size_t(r_) * std::size_t(r_) * sizeof(double);
    std::vector<int> finals_from(ranges_.size(), -1);
    for (std::size_t j = 0; j < ranges_.size(); ++j) {
      const SegmentRange& l = ranges_[j];
      SegmentedRun<Scalar>& rec = state.out[j];
      const int last = ends[j].segment >= 0 ? ends[j].segment : P_ - 1;
      if (l.owned >= 0 && rank_of(l.stream, last) != rank_) finals_from[j] = rank_of(l.stream, last);
      if (l.q_begin > last) continue;  // (the stream ended before this rank's segments)
      std::vector<double> G = detail::identity_matrix(r_);
      bool rotated = false;
      if (l.q_begin > 0) {  // the rank before's counters and gauge
        const std::vector<char> in = receive(counted.packed_stream_bytes() + gauge_bytes + 1, rank_ - 1, tag_chain);
        counted.unpack_stream(0, std::vector<char>(in.begin(), in.end() - std::ptrdiff_t(gauge_bytes) - 1));
        std::memcpy(G.data(), in.data() + counted.packed_stream_bytes(), gauge_bytes);
        rotated = in.back() != 0;
      } else {
        counted.reset_counters(0);
      }
      const int through = std::min(l.q_end, last + 1);
      for (int q = l.q_begin; q < through; ++q) {
        counted.add_counters(slots, slot_of(l, q), 0);
        rec.counters.add(state.E[j][std::size_t(q)]);
      }
      rec.carry_gauge(G, rotated, std::max(l.q_begin, 1), through, r_);
      if (last >= l.q_end) {
        std::vector<char> out = counted.pack_stream(0);
        const char* g = reinterpret_cast<const char*>(G.data());
        out.insert(out.end(), g, g + gauge_bytes);
        out.push_back(rotated ? 1 : 0);
        send(std::move(out), rank_ + 1, tag_chain, buffers, requests);
        continue;
      }
      final_state.copy_stream(slots, slot_of(l, last), 0);
      // (The slot stopped at its segment's end; the run marks the streams
      // whose data end before its last step itself.)
      if (final_state.stream_status(0) == stream_ended) final_state.set_status(0, breakdown_none, -1);
      final_state.reset_counters(0);
      final_state.add_counters(counted, 0, 0);
      if (rs_.gauge_carry && rec.certified && rotated) {
        ReferenceState<Scalar> st = final_state.to_host(0);
        apply_gauge(st, G);
        final_state.write_state_values(0, st);
      }
      if (l.owned >= 0) streams.copy_stream(final_state, 0, l.owned);
      else send(final_state.pack_stream(0), rank_of(l.stream, 0), tag_final, buffers, requests);
    }
    for (std::size_t j = 0; j < ranges_.size(); ++j)
      if (finals_from[j] >= 0)
        streams.unpack_stream(ranges_[j].owned, receive(streams.packed_stream_bytes(), finals_from[j], tag_final));
    wait_all(requests);
    for (std::size_t j = 0; j < ranges_.size(); ++j) {
      state.out[j].end_states = state.E[j];
      if (ranges_[j].owned >= 0) state.out[j].final_state = streams.to_host(ranges_[j].owned);
    }
  }

  MosaicParams p_;
  ResolvedSegments rs_;
  int d_, r_, P_;
  std::vector<SegmentedStream> streams_;
  std::uint64_t seed_;
  MPI_Comm comm_;
  SegmentLayout layout_;
  int rank_ = 0;
  std::vector<int> spanning_;  // the streams whose segments lie on more than one rank
  std::vector<SegmentRange> ranges_;
};

}  // namespace mosaic
