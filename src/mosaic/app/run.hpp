// One run (one sweep point) of the mini-app on one MPI rank: set up the
// rank's streams, initialize, warm up, advance them for the timed steps with
// diagnostics every K steps, then reduce statistics across ranks. Only
// statistics cross ranks (counts, times, diagnostics, per-stream checksums)
// during the run; stream states do only between the time segments of one
// stream (below), and at the very end: with output.state_dir set, the final
// states are gathered to rank 0 and written as .npy files with their
// manifest (write_state_files).
//
// The data come from a StreamSource (stream_source.hpp): the synthetic
// source or .npy files (source.type: npy, npy_source.hpp); one loop
// (run_with_source) serves both.
//
// Blocks. The loop advances the streams a block at a time (engine.advance:
// the blocked kernel for block_size k > 1, one sequential step per block for
// k = 1). A block is at most k samples and ends wherever
// the run needs a boundary: the end of the warm-up, a diagnostics step, an
// every_steps checkpoint, a multiple of an explicit reorthonormalize_every,
// the end of the run, the end of any stream's data (streams of unequal
// length, stream_ends.hpp), or the end of the source's staged data (a chunk
// of an npy file). Where a block ends is a function of the position and the deck
// alone, so a run resumed from a checkpoint cuts the same blocks as the run
// that was never stopped (and gives bitwise its results). Signals and
// every_seconds checkpoints are acted on at block ends, on more than one
// rank one block after they were seen (CheckpointPolicy). The reference
// cross-check (reference_check.hpp) closes at a block end too and adds none.
//
// The phases, each under its timer (timers.hpp): setup, start (init, or the
// checkpoint's state when resuming), warm-up, the timed loop (per block:
// generate, update, verify, diagnostics, the agreement on signals and
// checkpoints; run_block.hpp), the loop's end, then output: what is
// gathered over the ranks, the state files and the result document with
// the verification (verification.hpp). RunContext (run_context.hpp) carries
// the run from one phase to the next. With algorithm.time_segments > 1 the
// warm-up and the timed loop are one phase instead: each stream's steps in
// time segments, slots of the ranks' batches (one stream's segments on one
// or more consecutive ranks, SegmentLayout), whose final states then go
// through the same end and output on the streams' owners
// (step_in_time_segments, run_phases.hpp; time_segments.hpp).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include "mosaic/app/decomposition.hpp"
#include "mosaic/app/npy_preflight.hpp"
#include "mosaic/app/run_checkpoint.hpp"
#include "mosaic/app/run_context.hpp"
#include "mosaic/app/run_output.hpp"
#include "mosaic/app/run_phases.hpp"
#include "mosaic/app/timers.hpp"
#include "mosaic/config/run_config.hpp"
#include "mosaic/sources/npy_source.hpp"
#include "mosaic/sources/synthetic_source.hpp"
#include "mosaic/util/allocation_tracker.hpp"

namespace mosaic {

namespace detail {

// The run itself, for any StreamSource: `cfg.run.steps` is the resolved
// number of timed steps. With control->restart, the streams, the position
// and the statistics so far come from that checkpoint instead of the init;
// checkpoints and the stop on SIGTERM/SIGINT follow cfg.output.checkpoint
// (run_checkpoint.hpp). Returns the result document on rank 0, an empty
// object elsewhere.
template <class Scalar>
nlohmann::json run_with_source(const RunConfig& cfg, MPI_Comm comm, const StreamDecomposition& decomp,
                               StreamSource<Scalar, Kokkos::DefaultExecutionSpace>& source, TimerSet& timers,
                               RunControl* control, typename RunContext<Scalar>::SlotSourceFactory make_slot_source) {
  RunContext<Scalar> run(cfg, comm, decomp, source, timers, control, std::move(make_slot_source));
  const detail::CommClass outside_every_class(run.comm_ledger, "other");
  setup(run);
  note_device_used(run, "setup");
  start(run);
  note_device_used(run, "start");
  if (cfg.segments.segments > 1) {
    step_in_time_segments(run);
    note_device_used(run, "time_segments");
  } else {
    warm_up(run);
    note_device_used(run, "warmup");
    timed_loop(run);
    note_device_used(run, "timed_loop");
  }
  finish_loop(run);
  note_device_used(run, "loop_end");
  const GatheredOutputs gathered = gather_outputs(run);
  if (run.rank != 0) return nlohmann::json::object();
  return result_document(run, gathered);
}

}  // namespace detail

// Rank 0's start banner, before any setup: what is about to run.
inline void print_start_banner(const RunConfig& c, const StreamDecomposition& decomp, int nranks) {
  using Exec = Kokkos::DefaultExecutionSpace;
  const int k = resolved_block_size<Exec>(c.algorithm, c.problem.d, c.problem.rank);
  std::printf(
      "[mosaic] start: deck %s  d=%d r=%d %s  streams %lld (%s, %d-%d per rank)  ranks %d x concurrency "
      "%d (%s)  kernel %s k=%d (%s)  steps %lld + %lld warm-up  accuracy %s\n",
      c.deck_path.c_str(), c.problem.d, c.problem.rank, to_string(c.problem.dtype), (long long)decomp.total_streams,
      to_string(c.streams.mode), decomp.min_per_rank, decomp.max_per_rank, nranks, int(Exec().concurrency()),
      Exec::name(), k > 1 ? "blocked" : "sequential", k, c.algorithm.block_size == kAuto ? "auto" : "deck",
      (long long)c.run.steps, (long long)c.run.warmup_steps,
      c.run.check_accuracy ? "checked" : "not checked (throughput_only)");
  std::fflush(stdout);
}

// Runs one configuration on this rank; collective over `comm`. Returns the
// run's result object on rank 0 (an empty object elsewhere). An npy run whose
// files were not checked yet (run.steps: all still unresolved) is checked
// here first (preflight_npy_streams); a problem then throws on every rank.
// `control` (optional): resume from a checkpoint, and learn whether a
// SIGTERM/SIGINT stopped the run (RunControl, run_checkpoint.hpp).
template <class Scalar>
nlohmann::json run_point(const RunConfig& config, MPI_Comm comm, RunControl* control = nullptr) {
  using Exec = Kokkos::DefaultExecutionSpace;
  // The point's own allocation high-water mark (a sweep's points run one
  // after another in one Kokkos session).
  AllocationTracker::install();
  AllocationTracker::reset_peak();
  TimerSet timers;  // the run's wall clock starts here
  int rank = 0, nranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  const StreamDecomposition decomp = decompose_streams(config.streams, rank, nranks, config.segments.segments);
  if (config.source.type == "npy") {
    RunConfig cfg = config;
    if (cfg.run.steps_all && cfg.run.steps <= 0) {
      std::string error;
      timers.time("setup", [&] { error = preflight_npy_streams(cfg, comm); });
      if (!error.empty()) throw NpyError(error);
    }
    // The reference check's stream ends where its data do.
    if (!cfg.run.stream_steps.empty() && cfg.run.reference_check_stream < cfg.run.stream_steps.size())
      cfg.run.reference_check_steps =
          std::min(cfg.run.reference_check_steps, cfg.run.stream_steps[cfg.run.reference_check_stream]);
    if (rank == 0) print_start_banner(cfg, decomp, nranks);
    const std::int64_t n0 =
        cfg.algorithm.init == InitMode::data ? cfg.algorithm.resolved_init_samples(cfg.problem.rank) : 0;
    std::vector<std::string> paths;
    for (auto id : decomp.local_ids) paths.push_back(cfg.source.paths.at(id));
    std::optional<NpyStreamSource<Scalar, Exec>> source;
    timers.time("setup", [&] {
      source.emplace(paths, decomp.local_ids, cfg.problem.d, cfg.source.chunk_rows,
                     n0 + cfg.run.warmup_steps + cfg.run.steps, cfg.algorithm.missing != MissingMode::error,
                     !cfg.run.stream_steps.empty());
    });
    // Section 9's slots: each opens its stream's file, for rows of unequal
    // reach (a slot stops at its segment's end; the slots that do not run
    // in a pass are frozen, never read).
    auto slots = [&](const std::vector<std::uint64_t>& slot_ids, std::int64_t rows) {
      std::vector<std::string> slot_paths;
      for (const std::uint64_t id : slot_ids) slot_paths.push_back(cfg.source.paths.at(id));
      return std::unique_ptr<StreamSource<Scalar, Exec>>(std::make_unique<NpyStreamSource<Scalar, Exec>>(
          slot_paths, slot_ids, cfg.problem.d, cfg.source.chunk_rows, rows, false, true));
    };
    return detail::run_with_source<Scalar>(cfg, comm, decomp, *source, timers, control, slots);
  }
  if (rank == 0) print_start_banner(config, decomp, nranks);
  std::optional<SyntheticDriftSource<Scalar, Exec>> source;
  timers.time("setup", [&] { source.emplace(config.source.synthetic, decomp.local_ids); });
  // Section 9's slots: the generator of each slot's stream (a pure function
  // of the stream id, ALGORITHM.md section 5).
  auto slots = [&](const std::vector<std::uint64_t>& slot_ids, std::int64_t) {
    return std::unique_ptr<StreamSource<Scalar, Exec>>(
        std::make_unique<SyntheticDriftSource<Scalar, Exec>>(config.source.synthetic, slot_ids));
  };
  return detail::run_with_source<Scalar>(config, comm, decomp, *source, timers, control, slots);
}

// Compiled once per scalar type, in run_float.cpp and run_double.cpp (the
// mosaic library), with the engines and sources they use.
extern template nlohmann::json run_point<float>(const RunConfig&, MPI_Comm, RunControl*);
extern template nlohmann::json run_point<double>(const RunConfig&, MPI_Comm, RunControl*);

}  // namespace mosaic
