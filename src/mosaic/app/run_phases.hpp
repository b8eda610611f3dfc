// The phases of one run before its output, in the order run.hpp calls them,
// each under its timer: setup (the batch and the engine), start (init, or
// the checkpoint's state when resuming), warm-up, the timed loop and its
// end. The work of one block is in run_block.hpp.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include "mosaic/algorithm/segments.hpp"
#include "mosaic/app/init_windows.hpp"
#include "mosaic/app/progress.hpp"
#include "mosaic/app/run_block.hpp"
#include "mosaic/app/run_context.hpp"
#include "mosaic/app/segments_report.hpp"
#include "mosaic/app/time_segments.hpp"
#include "mosaic/io/checkpoint.hpp"
#include "mosaic/io/environment.hpp"
#include "mosaic/util/mpi_collectives.hpp"

namespace mosaic::detail {

// setup: the batch of this rank's streams and the engine.
template <class Scalar>
void setup(RunContext<Scalar>& run) {
  run.timers.time("setup", [&] {
    run.batch.emplace(run.B, run.d, run.r, run.decomp.local_ids, run.params.noise);
    run.engine.emplace(run.params, run.B, run.d, run.r);
  });
}

// init: the streams' first state (init: data from the source's first
// samples, each stream's window grown where its start is not yet
// informative, init_windows.hpp; or init: random). A stream whose init: data
// failed (e.g. samples that span fewer than r directions within
// init_max_samples) is an input error on every rank: the lowest rank's
// message.
template <class Scalar>
void initialize_streams(RunContext<Scalar>& run) {
  const CommClass comm_class(run.comm_ledger, "init");
  using Mem = typename RunContext<Scalar>::Exec::memory_space;
  std::string init_error;
  std::vector<std::int64_t> used;  // by stream id: the samples each init: data consumed
  run.timers.time("init", [&] {
    if (run.params.init == InitMode::data) {
      const int n0 = run.params.resolved_init_samples(run.r);
      Kokkos::View<Scalar***, Kokkos::LayoutRight, Mem> X0("mosaic::init_samples", run.B, n0, run.d);
      run.source.read_init(n0, X0);
      used.assign(std::size_t(run.decomp.total_streams), 0);
      init_error = grow_init_windows(run, run.engine->init_data_streams(*run.batch, X0), used);
      run.t = n0;
    } else {
      run.engine->init_random(*run.batch, run.cfg.run.seed);
    }
  });
  std::string agreed = agree_on_error(init_error, run.comm);
  if (!agreed.empty()) throw RunInputError(agreed);
  if (run.params.init != InitMode::data) return;
  run.timers.time("reduce", [&] {
    counted_mpi((long long)(used.size() * sizeof(std::int64_t)), [&] {
      return MPI_Allreduce(MPI_IN_PLACE, used.data(), int(used.size()), MPI_INT64_T, MPI_MAX, run.comm);
    });
  });
  agreed = apply_init_windows(run, used);
  if (!agreed.empty()) throw RunInputError(agreed);
}

// checkpoint (resuming): the streams, the source's position and the
// statistics so far, from the checkpoint.
template <class Scalar>
void resume_streams(RunContext<Scalar>& run) {
  const CommClass comm_class(run.comm_ledger, "checkpoint");
  const ckpt::RestartPlan& restart = *run.restart;
  std::string window_error;
  run.timers.time("checkpoint", [&] {
    const ckpt::LoadedSources loaded = ckpt::load_streams(restart, *run.batch);
    const auto& pos = restart.manifest.at("position");
    run.t = pos.at("sample_index").get<std::int64_t>();
    run.warm = pos.at("warmup_done").get<std::int64_t>();
    run.k = pos.at("timed_done").get<std::int64_t>();
    SourcePosition earlier{loaded.frozen, {}, {}};
    for (const auto& e : loaded.data_errors)
      earlier.data_errors.push_back(SourceDataError{e.at("stream_id").get<std::uint64_t>(),
                                                    e.at("path").get<std::string>(), e.at("row").get<std::int64_t>(),
                                                    e.at("message").get<std::string>()});
    if (run.params.init == InitMode::data) {
      // The windows of the run that wrote the checkpoint (init_samples
      // everywhere for a checkpoint from before section 3's windows).
      std::vector<std::int64_t> used(std::size_t(run.decomp.total_streams), run.params.resolved_init_samples(run.r));
      if (restart.manifest.contains("init_samples_used"))
        used = restart.manifest.at("init_samples_used").get<std::vector<std::int64_t>>();
      if (used.size() != std::size_t(run.decomp.total_streams))
        throw CheckpointError(restart.dir + ": init_samples_used lists " + std::to_string(used.size()) +
                              " streams, the checkpoint holds " + std::to_string(run.decomp.total_streams));
      window_error = apply_init_windows(run, used);
    }
    if (window_error.empty()) run.source.resume_at(run.t, std::move(earlier));
  });
  if (!window_error.empty()) throw RunInputError(window_error);
  run.segments = restart.manifest.at("segments");
  run.series = restart.manifest.at("diagnostics_series");
}

// start: the streams' state (initialized, or resumed), then the reference
// cross-check (carried over from a checkpoint) and the checkpoint policy.
template <class Scalar>
void start(RunContext<Scalar>& run) {
  if (run.restart) resume_streams(run);
  else initialize_streams(run);
  run.warm0 = run.warm;
  run.k0 = run.k;
  const nlohmann::json earlier_check = run.restart && run.restart->manifest.contains("reference_check")
                                           ? run.restart->manifest["reference_check"]
                                           : nlohmann::json();
  {
    const CommClass comm_class(run.comm_ledger, "reference_check");
    run.reference_check.emplace(run.cfg, run.decomp, run.k, earlier_check, run.comm);
  }
  if (run.cfg.segments.segments > 1)
    run.reference_check->skip(
        "algorithm.time_segments > 1 (the segments' boundaries are certified instead: time_segments in the result)");
  run.policy.emplace(run.cfg.output.checkpoint, run.comm);
}

// warmup: run.warmup_steps untimed steps; a signal stops them (and is
// checkpointed when checkpoints are on).
template <class Scalar>
void warm_up(RunContext<Scalar>& run) {
  run.timers.time("warmup", [&] {
    while (run.warm < run.cfg.run.warmup_steps && !run.stop) {
      const auto Xn = next_block(run, run.cfg.run.warmup_steps - run.warm);
      run.engine->advance(*run.batch, Xn);
      run.warm += std::int64_t(Xn.extent(1));
      run.t += std::int64_t(Xn.extent(1));
      const CommClass comm_class(run.comm_ledger, "agreement");
      run.stop = run.policy->after_step(-1).signal;
    }
  });
  run.last_checkpoint_at = run.restart ? run.t : -1;
  if (run.stop && run.policy->enabled()) write_checkpoint(run);
}

// The timed loop: block by block until run.steps timed steps are done or a
// signal stops it. A block ends at every diagnostics point, every_steps
// checkpoint and stream end (run.hpp: where blocks end).
template <class Scalar>
void timed_loop(RunContext<Scalar>& run) {
  const auto& rc = run.cfg.run;
  const std::int64_t streams = run.decomp.total_streams;
  ProgressReporter progress(run.rank == 0, rc.progress_every_s, rc.steps);
  progress.resume(run.k0, run.ends.total_samples(run.k0, streams));
  const std::int64_t every = rc.diagnostics_every;
  run.loop_start = std::chrono::steady_clock::now();
  const std::int64_t ck_every = run.cfg.output.checkpoint.every_steps;
  if (!run.stop)
    run.timers.time("verify", [&] {
      const CommClass comm_class(run.comm_ledger, "reference_check");
      run.reference_check->start(*run.batch);
    });
  while (run.k < rc.steps && !run.stop) {
    std::int64_t limit = rc.steps - run.k;
    if (every > 0) limit = std::min(limit, every - run.k % every);
    if (ck_every > 0) limit = std::min(limit, ck_every - run.k % ck_every);
    limit = run.ends.cut(run.k, limit);
    const auto Xn = generate_and_update(run, limit);
    check_block(run, Xn);
    if (every > 0 && run.k % every == 0 && run.k < rc.steps) run.series.push_back(diagnose(run, run.k).first);
    progress.update(run.k, run.ends.total_samples(run.k, streams), run.timers.seconds("update"));
    agree_at_block_end(run);
  }
}

// The warm-up and the timed steps in ALGORITHM.md section 9's time segments
// (algorithm.time_segments > 1, app/time_segments.hpp), in place of warm_up
// and timed_loop: each stream's T = run.warmup_steps + its timed steps,
// from the row after its init window, in P segments stepped as slots of
// one batch, the slots of all streams spread over the ranks (SegmentLayout);
// the final states land in the owners' batches, whose diagnostics and
// output follow as in any run. The loop's clock covers the whole of it. A
// stream with fewer steps than segments is an input error on every rank.
template <class Scalar>
void step_in_time_segments(RunContext<Scalar>& run) {
  const CommClass comm_class(run.comm_ledger, "time_segments");
  using Exec = typename RunContext<Scalar>::Exec;
  const RunSection& rc = run.cfg.run;
  const ResolvedSegments rs = resolve_segments<Scalar>(run.cfg.segments, run.params);
  std::vector<SegmentedStream> streams;  // every stream of the run, by id
  std::int64_t rows = 0;
  for (std::int64_t s = 0; s < run.decomp.total_streams; ++s) {
    const std::uint64_t id = std::uint64_t(s);
    const std::int64_t timed = rc.stream_steps.empty() ? rc.steps : std::min(rc.stream_steps[id], rc.steps);
    const std::int64_t first = run.init_used.empty() ? 0 : run.init_used[id];
    streams.push_back({id, rc.warmup_steps + timed, first});
    rows = std::max(rows, rc.warmup_steps + timed);
  }
  std::string error;
  std::optional<TimeSegments<Scalar, Exec>> segments;
  try {
    segments.emplace(run.params, rs, run.d, run.r, streams, rc.seed, run.comm);
  } catch (const std::invalid_argument& e) {
    error = e.what();
  }
  error = agree_on_error(error, run.comm);
  if (!error.empty()) throw RunInputError(error + " (ALGORITHM.md 9.2: every segment needs a step)");
  run.timers.time("setup", [&] { run.slot_source = run.make_slot_source(segments->slot_ids(), rows); });
  run.segmented_streams = streams;
  const SegmentLayout layout(std::int64_t(streams.size()), rs.segments, run.nranks);
  run.slots_per_rank = {layout.slots_on(run.nranks - 1), layout.slots_on(0)};
  for (const SegmentRange& l : segments->ranges()) {
    const std::vector<std::int64_t> b = segments->boundaries(l.stream);
    run.segment_steps += b[std::size_t(l.q_end)] - b[std::size_t(l.q_begin)];
  }
  run.loop_start = std::chrono::steady_clock::now();
  std::vector<SegmentedStreamEnd> ends;
  const auto records = segments->run(*run.batch, *run.slot_source, run.timers, ends);
  run.warm = rc.warmup_steps;
  run.k = rc.steps;
  run.t += run.warm + run.k;
  run.ends.mark(*run.batch, run.k);
  std::vector<nlohmann::json> local;
  for (std::size_t j = 0; j < segments->ranges().size(); ++j) {
    const SegmentRange& l = segments->ranges()[j];
    local.push_back(segmented_stream_json(streams[std::size_t(l.stream)], segments->boundaries(l.stream), records[j],
                                          ends[j], l.q_begin, l.q_end, run.rank));
  }
  run.timers.time("reduce", [&] { run.time_segments = segments_record(rs, local, run.comm); });
}

// The loop's end: a signal during the last block; the reference check's
// last comparison; the end of the run checkpointed too (a later run can
// extend it, with a larger run.steps, from there); the final diagnostics.
template <class Scalar>
void finish_loop(RunContext<Scalar>& run) {
  run.timers.time("reduce", [&] {
    const CommClass comm_class(run.comm_ledger, "agreement");
    const int late = run.policy->finish();
    if (!run.stop) run.stop = late;
  });
  if (!run.stop && run.reference_check->open())
    run.timers.time("verify", [&] {
      const CommClass comm_class(run.comm_ledger, "reference_check");
      run.reference_check->at_block_end(*run.batch, run.k, true);
    });
  if (run.policy->enabled() && run.last_checkpoint_at != run.t) write_checkpoint(run);
  run.loop_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - *run.loop_start).count();
  auto final_result = diagnose(run, run.k);
  run.final_diag = final_result.first;
  run.diag = final_result.second;
  run.series.push_back(run.final_diag);
  if (run.control) {
    run.control->stop_signal = run.stop;
    run.control->last_checkpoint = run.last_checkpoint;
  }
}

// The device memory in use as `phase` ends (the result's
// memory.device_used_bytes_at_phase; -1 where the backend has no query or
// it failed). Every rank notes every phase, so that the ranks reduce the
// same values. Outside the timers: the query is the device's, not the
// phase's work.
template <class Scalar>
void note_device_used(RunContext<Scalar>& run, const char* phase) {
  run.device_used_at_phase.emplace_back(phase, device_memory_used_bytes());
}

}  // namespace mosaic::detail
