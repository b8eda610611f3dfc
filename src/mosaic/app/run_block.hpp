// The work of one block of the run (run_phases.hpp's loops call these):
// generate and update, the reference check, a diagnostics point, the
// agreement on signals and checkpoints at the block's end, a checkpoint.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "mosaic/app/prequential_report.hpp"
#include "mosaic/app/run_checkpoint.hpp"
#include "mosaic/app/run_context.hpp"
#include "mosaic/app/run_statistics.hpp"
#include "mosaic/io/checkpoint.hpp"

namespace mosaic::detail {

// The next block: at most `limit` samples (the phase's boundaries), cut
// further by the engine (block size, re-orthonormalization) and the source
// (end of its staged data).
template <class Scalar>
typename RunContext<Scalar>::block_view next_block(RunContext<Scalar>& run, std::int64_t limit) {
  return run.source.next_block(run.t, int(std::min<std::int64_t>(run.engine->block_length(run.warm + run.k), limit)));
}

// One block of at most `limit` timed samples: generated (or staged), then
// every stream advanced over it; a stream whose data end with it stops.
// Returns the block.
template <class Scalar>
typename RunContext<Scalar>::block_view generate_and_update(RunContext<Scalar>& run, std::int64_t limit) {
  typename RunContext<Scalar>::block_view Xn;
  run.timers.time("generate", [&] { Xn = next_block(run, limit); });
  run.timers.time("update", [&] {
    run.engine->advance(*run.batch, Xn);
    run.ends.mark(*run.batch, run.k + std::int64_t(Xn.extent(1)));
  });
  run.k += std::int64_t(Xn.extent(1));
  run.t += std::int64_t(Xn.extent(1));
  return Xn;
}

// The reference cross-check, while it is open: the block's samples for the
// host reference, and the comparison when its last step is reached.
template <class Scalar>
void check_block(RunContext<Scalar>& run, const typename RunContext<Scalar>::block_view& Xn) {
  if (!run.reference_check->open()) return;
  run.timers.time("verify", [&] {
    const CommClass comm_class(run.comm_ledger, "reference_check");
    run.reference_check->consume(Xn);
    run.reference_check->at_block_end(*run.batch, run.k);
  });
}

// A diagnostics point after `steps_done` timed steps: this rank's
// diagnostics (and accuracy against the truth, synthetic data only), and
// the entry of the series, reduced over the ranks.
template <class Scalar>
std::pair<nlohmann::json, BatchDiagnostics> diagnose(RunContext<Scalar>& run, std::int64_t steps_done) {
  BatchDiagnostics diag;
  std::optional<TruthAccuracy> acc;
  run.timers.time("diagnostics", [&] {
    diag = compute_diagnostics(*run.batch, run.diagnostics_work);
    acc = run.source.accuracy(*run.batch, run.t - 1);
  });
  nlohmann::json entry;
  run.timers.time("reduce", [&] {
    const CommClass comm_class(run.comm_ledger, "diagnostics");
    entry = reduce_diagnostics(diag, acc ? &*acc : nullptr, run.B, run.decomp.total_streams, run.comm);
    entry["prequential"] = prequential_entry(reduce_prequential(diag, run.comm),
                                             run.series.empty() ? nlohmann::json() : run.series.back());
  });
  entry["step"] = steps_done;
  entry["sample_index"] = run.t - 1;
  return std::make_pair(entry, diag);
}

// This rank's timed samples since this process started (each stream's
// steps up to its end).
template <class Scalar>
double timed_samples_since_start(const RunContext<Scalar>& run) {
  return run.ends.local_samples(run.k, std::size_t(run.B)) - run.ends.local_samples(run.k0, std::size_t(run.B));
}

// A checkpoint of the current position (collective): the statistics of
// this process so far join those of the segments before it.
template <class Scalar>
void write_checkpoint(RunContext<Scalar>& run) {
  const CommClass comm_class(run.comm_ledger, "checkpoint");
  run.timers.time("checkpoint", [&] {
    nlohmann::json io_now;
    if (const auto io = run.source.io_report()) io_now = reduce_io(*io, run.comm);
    const double loop_now =
        run.loop_start ? std::chrono::duration<double>(std::chrono::steady_clock::now() - *run.loop_start).count()
                       : 0.0;
    nlohmann::json segs = run.segments;
    segs.push_back(segment_stats(run.timers, run.comm, run.k - run.k0, run.warm - run.warm0, loop_now,
                                 timed_samples_since_start(run), reduce_timers(run.timers, run.comm, run.nranks),
                                 io_now));
    ckpt::WriteRequest req;
    req.root = run.cfg.output.checkpoint.dir;
    req.keep = run.cfg.output.checkpoint.keep;
    req.number = run.t;
    req.manifest_extra = {{"deck_path", run.cfg.deck_path},
                          {"resolved_deck", run.cfg.resolved},
                          {"position", {{"sample_index", run.t}, {"warmup_done", run.warm}, {"timed_done", run.k}}},
                          {"run_steps", run.cfg.run.steps},
                          {"segments", segs},
                          {"diagnostics_series", run.series},
                          {"reference_check", run.reference_check->result()}};
    if (!run.init_used.empty()) req.manifest_extra["init_samples_used"] = run.init_used;
    const SourcePosition at = run.source.position_at(run.t);
    nlohmann::json errors = nlohmann::json::array(), inputs = nlohmann::json::array();
    for (const auto& e : at.data_errors)
      errors.push_back({{"stream_id", e.stream_id}, {"path", e.path}, {"row", e.row}, {"message", e.message}});
    for (const auto& in : at.inputs) inputs.push_back(ckpt::input_record(in));
    run.last_checkpoint = ckpt::write_checkpoint(req, *run.batch, at.frozen, errors, run.comm, inputs);
  });
  run.last_checkpoint_at = run.t;
  ++run.checkpoints_written;
  run.policy->written();
}

// The block's end in the timed loop: the ranks agree on a stop signal and
// on a checkpoint due (CheckpointPolicy), and the checkpoint is written.
template <class Scalar>
void agree_at_block_end(RunContext<Scalar>& run) {
  CheckpointPolicy::Decision next;
  run.timers.time("reduce", [&] {
    const CommClass comm_class(run.comm_ledger, "agreement");
    next = run.policy->after_step(run.k);
  });
  run.stop = next.signal;
  if (next.checkpoint) write_checkpoint(run);
}

}  // namespace mosaic::detail
