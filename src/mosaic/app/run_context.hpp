// What one run of one sweep point on one rank carries from phase to phase
// (run.hpp runs the phases: setup, start, warm-up, the timed loop, its end,
// output): the deck, the rank's streams and their source, the batch and the
// engine, the position in the streams, the checks and the checkpoint policy,
// and what the loop has recorded so far.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include "mosaic/algorithm/segments.hpp"
#include "mosaic/app/decomposition.hpp"
#include "mosaic/app/reference_check.hpp"
#include "mosaic/app/run_checkpoint.hpp"
#include "mosaic/app/stream_ends.hpp"
#include "mosaic/app/timers.hpp"
#include "mosaic/config/run_config.hpp"
#include "mosaic/engine/batch_diagnostics.hpp"
#include "mosaic/engine/batched_engine.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/sources/stream_source.hpp"

namespace mosaic {

// An input problem found while a run starts (after the deck and the files
// were checked): e.g. a rank-deficient init: data start. Thrown on every
// rank with the same message; the driver reports it and exits 2, like the
// input errors found before the run.
struct RunInputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace detail {

template <class Scalar>
struct RunContext {
  using Exec = Kokkos::DefaultExecutionSpace;
  using Source = StreamSource<Scalar, Exec>;
  using block_view = typename Source::block_view;

  // A source over the slots of ALGORITHM.md section 9's segments: slot i
  // reads the data of stream slot_ids[i] (any rank's), `rows` rows from
  // its row offset at most (app/time_segments.hpp).
  using SlotSourceFactory =
      std::function<std::unique_ptr<Source>(const std::vector<std::uint64_t>& slot_ids, std::int64_t rows)>;

  RunContext(const RunConfig& c, MPI_Comm m, const StreamDecomposition& dc, Source& s, TimerSet& tm, RunControl* ctl,
             SlotSourceFactory slot_factory)
      : cfg(c),
        comm(m),
        decomp(dc),
        source(s),
        timers(tm),
        control(ctl),
        restart(ctl ? ctl->restart : nullptr),
        B(int(dc.local_ids.size())),
        d(c.problem.d),
        r(c.problem.rank),
        params(cfg.algorithm),
        ends(c.run, dc.local_ids),
        make_slot_source(std::move(slot_factory)) {
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
  }

  // The run as asked for. `cfg.run.steps` is the resolved number of timed
  // steps (and cfg.run.stream_steps each stream's), after section 3's init
  // windows (apply_init_windows, init_windows.hpp).
  RunConfig cfg;
  MPI_Comm comm;
  const StreamDecomposition& decomp;
  Source& source;
  TimerSet& timers;
  RunControl* control;               // optional: the restart, and what stopped the run
  const ckpt::RestartPlan* restart;  // resuming from this checkpoint, or nullptr
  int rank = 0, nranks = 1;
  const int B, d, r;  // this rank's streams, the dimension, the rank of the states
  const MosaicParams& params;
  StreamEnds<Exec> ends;  // where streams of unequal length end (set again by apply_init_windows)

  // The samples each stream's init: data consumed (section 3: init_samples,
  // or the window it grew to), by stream id over every rank; empty for
  // init: random (start phase).
  std::vector<std::int64_t> init_used;

  // algorithm.time_segments > 1: the slots' source (made after the init, when
  // the streams' lengths are known), and the result's record of the
  // segments (ALGORITHM.md 9.7; segments_report.hpp).
  SlotSourceFactory make_slot_source;
  std::unique_ptr<Source> slot_source;
  std::vector<SegmentedStream> segmented_streams;              // every stream's T and first row, by id
  std::int64_t segment_steps = 0;                              // the steps of this rank's segments
  std::pair<std::int64_t, std::int64_t> slots_per_rank{0, 0};  // the fewest and most slots of a rank
  nlohmann::json time_segments;

  // Set up (setup phase).
  std::optional<StreamBatch<Scalar, Exec>> batch;
  std::optional<MosaicEngine<Scalar, Exec>> engine;

  // The position: the sample index of the next sample each stream consumes;
  // the warm-up and timed steps done, and where this process started them
  // (all non-zero at the start only when resuming from a checkpoint).
  std::int64_t t = 0, warm = 0, k = 0, warm0 = 0, k0 = 0;

  // Checked and agreed from the start on (start phase).
  std::optional<ReferenceCrossCheck<Scalar, Exec>> reference_check;
  std::optional<CheckpointPolicy> policy;
  int stop = 0;  // the agreed SIGTERM/SIGINT that stops the run

  // Recorded by the loop.
  nlohmann::json segments = nlohmann::json::array();  // statistics of the process runs before this one
  nlohmann::json series = nlohmann::json::array();    // the diagnostics points
  std::string last_checkpoint;
  std::int64_t last_checkpoint_at = -1, checkpoints_written = 0;
  std::optional<std::chrono::steady_clock::time_point> loop_start;
  double loop_s = 0;  // the timed loop's wall time, its end settled
  // This rank's device memory in use at the end of each phase, by phase
  // (device_memory_used_bytes: the CUDA context and other processes
  // included; -1 where there is no such query, e.g. a host backend).
  std::vector<std::pair<std::string, long long>> device_used_at_phase;
  // This rank's collectives by class (CommClass scopes; kCommClasses).
  CommLedger comm_ledger;
  DiagnosticsWork<Exec> diagnostics_work;
  nlohmann::json final_diag;  // the diagnostics at the end, reduced over the ranks
  BatchDiagnostics diag;      // and this rank's
};

}  // namespace detail
}  // namespace mosaic
