// Section 3's init window in the driver (ALGORITHM.md section 3: a start
// that is not yet informative). Every stream starts on the execution space
// from its first init_samples = n0 samples, all streams at once
// (MosaicEngine::init_data_streams). A stream whose n0 samples span fewer
// than r directions starts again from its first 2 n0, 4 n0, ... samples
// (grow_init_windows), on a batch of its own, with the same kernel; the
// window stops within min(init_max_samples, the stream's rows). Such a stream
// consumed more samples than the others: its steps start after its window,
// so from then on its row j is row j + (used - n0) of its data (the source's
// row offsets), and with run.steps: all it has that many fewer steps
// (apply_init_windows). A start that passes at n0 takes no other path than
// before: a deck whose streams all start at once runs as it did.
//
// The windows are part of the run's position: a checkpoint records them
// (init_samples_used, by stream id) and a resumed run sets them again before
// it reads a row.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

#include "mosaic/algorithm/reference.hpp"
#include "mosaic/app/run_context.hpp"
#include "mosaic/app/stream_ends.hpp"
#include "mosaic/engine/init_data.hpp"
#include "mosaic/engine/transfer.hpp"
#include "mosaic/sources/npy.hpp"
#include "mosaic/util/mpi_collectives.hpp"

namespace mosaic::detail {

// Section 3's start of one stream from m consecutive rows of its data, on a
// batch of its own with the run's kernel (MosaicEngine::init_data_streams,
// as every stream starts): the growing windows below, and the cold starts of
// ALGORITHM.md 9.3, whose windows grow backwards (app/time_segments.hpp).
template <class Scalar, class Exec>
struct OneStreamInit {
  MosaicEngine<Scalar, Exec> engine;
  StreamBatch<Scalar, Exec> batch;  // the stream's state after a start that passed

  OneStreamInit(const MosaicParams& p, int d, int r, std::uint64_t id)
      : engine(p, 1, d, r), batch(1, d, r, {id}, p.noise) {}

  // Starts from rows [first, first + m) of stream b of `source`; throws
  // InitRankDeficient for a window of fewer than r directions (what
  // detail::grow_init_window grows on), std::invalid_argument for the
  // start's other errors and NpyError for a bad value or a file's fault.
  void start(StreamSource<Scalar, Exec>& source, int b, std::int64_t first, int m) {
    Kokkos::View<Scalar***, Kokkos::LayoutRight, typename Exec::memory_space> X("mosaic::init_window", 1, m, batch.d);
    const auto h = transfer::host_buffer(X);
    source.read_stream_rows(b, first, m, h.data());
    transfer::copy_from_host(X, h);
    const InitFailure f = engine.init_data_streams(batch, X).front();
    if (f.rank_deficient()) throw InitRankDeficient(f.message, f.directions);
    if (f.failed()) throw std::invalid_argument(f.message);
  }
};

// Starts again, from growing windows of their own data, this rank's streams
// whose start on the first n0 samples was rank-deficient (`failures`:
// init_data_streams' result). Sets used[id] for each of this rank's streams
// (n0, or the window that passed). Returns "" when every stream started,
// else the first failing stream's message, naming the stream (and its file).
template <class Scalar>
std::string grow_init_windows(RunContext<Scalar>& run, const std::vector<InitFailure>& failures,
                              std::vector<std::int64_t>& used) {
  using Exec = typename RunContext<Scalar>::Exec;
  const int n0 = run.params.resolved_init_samples(run.r);
  for (int b = 0; b < run.B; ++b) {  // an error no window mends first: nothing is grown in vain
    used[std::size_t(run.decomp.local_ids[std::size_t(b)])] = n0;
    const InitFailure& failure = failures[std::size_t(b)];
    if (failure.failed() && !failure.rank_deficient()) return run.source.describe(b) + ": " + failure.message;
  }
  for (int b = 0; b < run.B; ++b) {
    const std::uint64_t id = run.decomp.local_ids[std::size_t(b)];
    if (!failures[std::size_t(b)].rank_deficient()) continue;
    OneStreamInit<Scalar, Exec> one(run.params, run.d, run.r, id);
    const auto start = [&](int m) {
      one.start(run.source, b, 0, m);
      return m;
    };
    try {
      const auto grown = grow_init_window(start, run.source.rows(b), run.r, run.params);
      run.batch->copy_stream(one.batch, 0, b);
      used[std::size_t(id)] = grown.samples_used;
    } catch (const std::invalid_argument& e) {  // the start's own errors
      return run.source.describe(b) + ": " + e.what();
    } catch (const NpyError& e) {  // a bad value in the window's rows past init_samples, or a file's fault
      return run.source.describe(b) + ": reading its init: data window: " + e.what();
    }
  }
  return "";
}

// The run after the init windows (`used`: by stream id, every stream's;
// from the init, or from the checkpoint a run resumes from): each stream's
// rows start after its window (the source's row offsets, used - n0) and,
// with run.steps: all, its timed steps are what its data have left (the run
// lasts the longest stream's). Collective: a stream whose data are then too
// short (its warm-up and steps would pass the end of its file) is an input
// error, the lowest rank's message on every rank ("" when all is well).
template <class Scalar>
std::string apply_init_windows(RunContext<Scalar>& run, const std::vector<std::int64_t>& used) {
  run.init_used = used;
  const std::int64_t n0 = run.params.resolved_init_samples(run.r);
  if (std::all_of(used.begin(), used.end(), [&](std::int64_t u) { return u == n0; })) return "";
  RunSection& rs = run.cfg.run;
  std::string error;
  std::vector<std::int64_t> offsets;
  for (int b = 0; b < run.B; ++b) {
    const std::uint64_t id = run.decomp.local_ids[std::size_t(b)];
    const std::int64_t u = used[std::size_t(id)];
    offsets.push_back(u - n0);
    const std::int64_t steps = rs.steps_all ? 1 : rs.steps;
    const std::int64_t rows = run.source.rows(b);
    if (error.empty() && u > n0 && rows - u - rs.warmup_steps < steps)
      error = run.source.describe(b) + ": its init: data window grew from " + std::to_string(n0) + " to " +
              std::to_string(u) + " samples (ALGORITHM.md section 3: the first " + std::to_string(u / 2) +
              " spanned fewer than r = " + std::to_string(run.r) + " directions), so run.warmup_steps (" +
              std::to_string(rs.warmup_steps) + ") and " +
              (rs.steps_all ? std::string("at least one step (run.steps: all)")
                            : "run.steps (" + std::to_string(rs.steps) + ")") +
              " need " + std::to_string(u + rs.warmup_steps + steps) + " rows; it has " + std::to_string(rows);
  }
  error = agree_on_error(error, run.comm);
  if (!error.empty()) return error;
  run.source.set_row_offsets(offsets);
  if (!rs.stream_steps.empty()) {
    for (std::size_t id = 0; id < rs.stream_steps.size(); ++id) rs.stream_steps[id] -= used[id] - n0;
    if (rs.steps_all) rs.steps = *std::max_element(rs.stream_steps.begin(), rs.stream_steps.end());
    if (rs.reference_check_stream < rs.stream_steps.size())
      rs.reference_check_steps = std::min(rs.reference_check_steps, rs.stream_steps[rs.reference_check_stream]);
  }
  run.ends = StreamEnds<typename RunContext<Scalar>::Exec>(rs, run.decomp.local_ids);
  return "";
}

}  // namespace mosaic::detail
