// The run's output phase: what is gathered and reduced over the ranks at
// the end (per-stream checksums and breakdowns, peak memory, I/O, the
// segments' statistics), the state files, and the result document (its
// fields: docs/result.schema.json) with the verification.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "mosaic/app/memory_estimate.hpp"
#include "mosaic/app/prequential_report.hpp"
#include "mosaic/app/run_checkpoint.hpp"
#include "mosaic/app/run_context.hpp"
#include "mosaic/app/run_statistics.hpp"
#include "mosaic/app/segments_report.hpp"
#include "mosaic/app/time_segments.hpp"
#include "mosaic/app/verification.hpp"
#include "mosaic/io/environment.hpp"
#include "mosaic/io/state_files.hpp"
#include "mosaic/util/allocation_tracker.hpp"
#include "mosaic/util/mpi_collectives.hpp"

namespace mosaic::detail {

// What the ranks hand to rank 0 at the end of a run.
struct GatheredOutputs {
  std::vector<unsigned long long> ids;    // stream ids, rank order
  std::vector<double> checksums;          // per stream, the same order
  std::vector<long long> breakdowns;      // (stream id, step, code) triples
  std::vector<long long> rss;             // each rank's peak resident memory
  std::vector<long long> peak_allocated;  // each rank's peak bytes in the execution space's memory
  nlohmann::json device_used_at_phase;    // by phase, max over the ranks (null: not a device)
  long long run_samples = 0, shared_samples = 0,
            step_samples = 0;           // a masked blocked engine's cuts, sum over the ranks
  nlohmann::json state_files;           // output.state_dir's set (rank 0)
  nlohmann::json communication;         // the collectives by class, reduced over the ranks
  std::optional<SourceIoStats> io_end;  // a file source's I/O accounting
  nlohmann::json total;                 // the segments' statistics combined
};

// A segmented run's I/O (ALGORITHM.md section 9): the streams' source read
// the init windows, the slots' source the rows after them, some more than
// once (a warm-up reads rows of the segment before it; a slot's source stages
// whole chunks, past its segment's end too), from a file per slot. The files
// are the streams'; a stream's data error is the first bad row any slot met
// among the rows of the stream's steps (`streams`: where they lie), where
// the sequential run freezes the stream and reads no further.
inline SourceIoStats with_slot_io(SourceIoStats io, const SourceIoStats& slots,
                                  const std::vector<SegmentedStream>& streams) {
  io.bytes_read += slots.bytes_read;
  io.read_seconds += slots.read_seconds;
  io.stall_seconds += slots.stall_seconds;
  io.copy_seconds += slots.copy_seconds;
  io.chunks += slots.chunks;
  io.chunk_rows = slots.chunk_rows;
  for (const SourceDataError& e : slots.data_errors) {
    const auto stream =
        std::find_if(streams.begin(), streams.end(), [&](const SegmentedStream& s) { return s.id == e.stream_id; });
    if (stream == streams.end() || e.row >= stream->first_row + stream->steps) continue;
    auto same = std::find_if(io.data_errors.begin(), io.data_errors.end(),
                             [&](const SourceDataError& x) { return x.stream_id == e.stream_id; });
    if (same == io.data_errors.end()) io.data_errors.push_back(e);
    else if (e.row < same->row) *same = e;
  }
  return io;
}

// Collective: the per-stream verification checksums and breakdown records
// and the memory figures (reduce), the state files (output; not for a run
// a signal stopped: output.state_dir holds final states only), then this
// process's statistics added to those of the segments before it (a run
// that was never stopped has one segment). The timers are read last:
// everything before is in them.
template <class Scalar>
GatheredOutputs gather_outputs(RunContext<Scalar>& run) {
  GatheredOutputs g;
  run.timers.time("reduce", [&] {
    const CommClass comm_class(run.comm_ledger, "result");
    std::vector<unsigned long long> ids(run.decomp.local_ids.begin(), run.decomp.local_ids.end());
    g.ids = gather_to_root(ids, MPI_UNSIGNED_LONG_LONG, run.comm);
    g.checksums = gather_to_root(run.diag.per_stream_checksum, MPI_DOUBLE, run.comm);
    std::vector<long long> breaks;
    for (const auto& b : run.diag.breakdowns)
      breaks.insert(breaks.end(), {(long long)b.stream_id, (long long)b.step, (long long)b.code});
    g.breakdowns = gather_to_root(breaks, MPI_LONG_LONG, run.comm);
    g.rss = gather_to_root(std::vector<long long>{peak_rss_bytes()}, MPI_LONG_LONG, run.comm);
    using ExecMemory = typename RunContext<Scalar>::Exec::memory_space;
    g.peak_allocated = gather_to_root(std::vector<long long>{AllocationTracker::peak_bytes(ExecMemory::name())},
                                      MPI_LONG_LONG, run.comm);
    // Every rank noted the same phases, in the same order.
    PackedAllreduce p;
    for (const auto& [phase, bytes] : run.device_used_at_phase) p.max("device used " + phase, bytes);
    const MaskedRunCounts& cuts = run.engine->masked_run_counts();
    p.sum("run_samples", (long long)cuts.run_samples);
    p.sum("shared_samples", (long long)cuts.shared_samples);
    p.sum("step_samples", (long long)cuts.step_samples);
    p.reduce(run.comm);
    nlohmann::json phases = nlohmann::json::array();
    bool queried = false;
    for (const auto& noted : run.device_used_at_phase) {
      const std::string& phase = noted.first;
      const long long used = p.integer("device used " + phase);
      queried = queried || used >= 0;
      phases.push_back({{"phase", phase}, {"bytes", used >= 0 ? nlohmann::json(used) : nlohmann::json()}});
    }
    // Null where no rank could query its device at any phase (a host backend).
    if (queried) g.device_used_at_phase = phases;
    g.run_samples = p.integer("run_samples");
    g.shared_samples = p.integer("shared_samples");
    g.step_samples = p.integer("step_samples");
  });
  if (!run.cfg.output.state_dir.empty() && !run.stop)
    run.timers.time("output", [&] {
      const CommClass comm_class(run.comm_ledger, "result");
      g.state_files = write_state_files(*run.batch, run.cfg, state_dir_for(run.cfg), run.comm);
    });
  nlohmann::json io_now;
  run.timers.time("reduce", [&] {
    const CommClass comm_class(run.comm_ledger, "timers_io");
    g.io_end = run.source.io_report();
    if (g.io_end && run.slot_source)
      g.io_end = with_slot_io(*g.io_end, *run.slot_source->io_report(), run.segmented_streams);
    if (g.io_end) io_now = reduce_io(*g.io_end, run.comm);
  });
  // (In time segments the update steps the warm-up too, ALGORITHM.md 9.2's
  // T, and a rank those of the segments it holds.)
  const double update_samples =
      run.cfg.segments.segments > 1 ? double(run.segment_steps) : timed_samples_since_start(run);
  {
    const CommClass comm_class(run.comm_ledger, "timers_io");
    run.segments.push_back(segment_stats(run.timers, run.comm, run.k - run.k0, run.warm - run.warm0, run.loop_s,
                                         update_samples, reduce_timers(run.timers, run.comm, run.nranks), io_now));
  }
  g.total = combine_segments(run.segments);
  // The ledger as it stands (its own reduction is not in it), after the
  // timers were read: this reduction's seconds are in no timer.
  g.communication = reduce_comm_ledger(CommLedger(run.comm_ledger), run.comm);
  return g;
}

// Section 3's init windows over the streams: the samples init: data
// consumed (min, max) and the streams whose window grew; null for
// init: random.
template <class Scalar>
nlohmann::json init_samples_used(const RunContext<Scalar>& run) {
  if (run.init_used.empty()) return nullptr;
  const std::int64_t n0 = run.params.resolved_init_samples(run.r);
  nlohmann::json grown = nlohmann::json::array();
  for (std::size_t id = 0; id < run.init_used.size(); ++id)
    if (run.init_used[id] != n0) grown.push_back({{"stream_id", id}, {"samples", run.init_used[id]}});
  const auto [lo, hi] = std::minmax_element(run.init_used.begin(), run.init_used.end());
  return {{"min", *lo},
          {"max", *hi},
          {"grown_streams", grown},
          {"definition",
           "the samples each stream's init: data consumed (ALGORITHM.md section 3): init_samples, or the window "
           "it grew to (2, 4, ... times init_samples, within init_max_samples) where the first init_samples spanned "
           "fewer than problem.rank directions; the stream's steps start after them"}};
}

// The result document of the run (rank 0).
template <class Scalar>
nlohmann::json result_document(const RunContext<Scalar>& run, const GatheredOutputs& g) {
  using Exec = typename RunContext<Scalar>::Exec;
  const RunConfig& cfg = run.cfg;
  const MosaicParams& params = run.params;
  const auto& engine = *run.engine;
  const nlohmann::json& total = g.total;
  const nlohmann::json timer_stats = total["timers"];
  const double loop_max_s = total["loop_max_s"];
  const double update_max = timer_stats["update"]["max_s"];
  const double samples = run.ends.total_samples(run.k, run.decomp.total_streams);
  // In time segments the update steps the warm-up too (ALGORITHM.md 9.2's T).
  const bool segmented = cfg.segments.segments > 1;
  const double update_samples = samples + (segmented ? double(run.warm) * double(run.decomp.total_streams) : 0.0);
  const char* const update_samples_definition =
      segmented ? "the streams' steps (run.warmup_steps and the timed steps, each stream's up to its end; T of "
                  "ALGORITHM.md 9.2) / max over ranks of the update time of every pass of the time segments (cold "
                  "segments' warm-ups and re-runs included)"
                : "timed samples (timed steps x total streams; each stream's steps up to its end when streams of "
                  "unequal length end early) / max over ranks of the update-only time";

  nlohmann::json checksums = nlohmann::json::array();
  for (std::size_t i = 0; i < g.ids.size(); ++i)
    checksums.push_back({{"stream_id", g.ids[i]}, {"checksum", g.checksums[i]}});
  std::sort(checksums.begin(), checksums.end(), [](const auto& a, const auto& b) {
    return a["stream_id"].template get<unsigned long long>() < b["stream_id"].template get<unsigned long long>();
  });
  nlohmann::json breakdowns = nlohmann::json::array();
  for (std::size_t i = 0; i + 2 < g.breakdowns.size(); i += 3)
    breakdowns.push_back(
        {{"stream_id", g.breakdowns[i]}, {"step", g.breakdowns[i + 1]}, {"code", g.breakdowns[i + 2]}});

  const nlohmann::json& ref_check = run.reference_check->result();
  const Verification v = verify_run(cfg, std::is_same<Scalar, float>::value, run.final_diag, ref_check,
                                    double(run.warm) * double(run.decomp.total_streams) + samples, run.warm + run.k);
  nlohmann::json warnings = nlohmann::json::array();
  if (update_max < 10.0)
    warnings.push_back("the timed update lasted " + std::to_string(update_max) +
                       " s (< 10 s): the figure of merit is noisy; raise run.steps for a number to report");

  const std::int64_t init_samples = params.init == InitMode::data ? params.resolved_init_samples(run.r) : 0;
  const long long broken = run.final_diag["breakdown_streams"];
  const std::size_t state_bytes = run.batch->state_bytes_per_stream();
  const MemoryEstimate estimate = estimate_rank_memory<Exec>(
      cfg, run.B, run.decomp.total_streams, true, init_samples + cfg.run.warmup_steps + cfg.run.steps,
      segmented ? SegmentLayout(run.decomp.total_streams, cfg.segments.segments, run.nranks).slots_on(0) : 0);
  const long long peak_rank0 = g.peak_allocated.at(0);
  nlohmann::json result = {
      {"sweep_point", nlohmann::json::object()},
      {"resolved_deck", cfg.resolved},
      {"dtype", to_string(cfg.problem.dtype)},
      {"decomposition",
       {{"ranks", run.nranks},
        {"mode", to_string(cfg.streams.mode)},
        {"total_streams", run.decomp.total_streams},
        {"streams_per_rank_min", run.decomp.min_per_rank},
        {"streams_per_rank_max", run.decomp.max_per_rank},
        {"imbalance", run.decomp.imbalance},
        {"slots_per_rank_min", segmented ? nlohmann::json(run.slots_per_rank.first) : nlohmann::json()},
        {"slots_per_rank_max", segmented ? nlohmann::json(run.slots_per_rank.second) : nlohmann::json()},
        {"policy",
         segmented ? "ALGORITHM.md section 9's time segments: the slots of streams x time_segments cut over the ranks "
                     "(slots_per_rank), a stream owned by the rank of its segment 0; one stream's boundary states go "
                     "point to point between consecutive ranks and are certified, never averaged"
                   : "each stream is owned whole by one rank; stream states are never split, exchanged or averaged; "
                     "only statistics cross ranks"}}},
      {"kernel",
       {{"update", engine.blocked() ? "blocked" : "sequential"},
        {"block_size", engine.block_size()},
        {"block_size_from", params.block_size == kAuto ? "auto" : "deck"},
        {"block_gemm", engine.blocked() ? nlohmann::json(to_string(engine.block_gemm_resolved())) : nlohmann::json()},
        {"block_gemm_streams",
         engine.blocked() && engine.block_gemm_resolved() == BlockGemm::vendor
             ? nlohmann::json(engine.vendor_gemm_over_streams() ? "one thread per stream" : "all streams at once")
             : nlohmann::json()},
        {"reorthonormalize", engine.reorthonormalize_at_block_end() ? nlohmann::json("every block end")
                             : engine.reorthonormalize_every() > 0
                                 ? nlohmann::json("every " + std::to_string(engine.reorthonormalize_every()) + " steps")
                                 : nlohmann::json("never")},
        {"masked_blocks",
         params.missing != MissingMode::error && engine.blocked()
             ? nlohmann::json{{"samples_in_blocked_runs", g.run_samples},
                              {"samples_in_shared_mask_runs", g.shared_samples},
                              {"samples_in_masked_steps", g.step_samples},
                              {"definition",
                               "the blocks cut into runs (ALGORITHM.md 7.7.3): samples of runs of >= 2 complete "
                               "samples taken by the blocked update, of runs of >= 2 samples missing the same "
                               "coordinates by the shared-mask blocked form (7.7.2; missing: posterior with "
                               "missing_rotation: observed only, 0 otherwise), the others by the masked "
                               "sequential step; warm-up included, init excluded, summed over the ranks, this "
                               "process only (a resumed run counts from its restart)"}}
             : nlohmann::json()}}},
      {"steps",
       {{"timed", run.k},
        {"warmup", run.warm},
        {"timed_planned", cfg.run.steps},
        {"init_samples", init_samples},
        {"init_samples_used", init_samples_used(run)},
        {"timed_samples", std::int64_t(samples)},
        {"ended_streams", run.final_diag["ended_streams"]}}},
      {"timers", timer_stats},
      {"timer_coverage",
       {{"accounted_fraction", timer_coverage(timer_stats)},
        {"definition", "sum over the phases of their mean seconds over the ranks, over the mean total"}}},
      {"figure_of_merit",
       {{"name", "update_samples_per_second"},
        {"value", update_max > 0 ? update_samples / update_max : 0.0},
        {"definition", update_samples_definition}}},
      {"throughput",
       {{"update_samples_per_second", update_max > 0 ? update_samples / update_max : 0.0},
        {"end_to_end_samples_per_second", loop_max_s > 0 ? update_samples / loop_max_s : 0.0},
        {"per_rank_update_samples_per_second_min", total["per_rank_update_samples_per_second_min"].get<double>()},
        {"per_rank_update_samples_per_second_max", total["per_rank_update_samples_per_second_max"].get<double>()},
        {"communication_seconds_max", timer_stats["reduce"]["max_s"]}}},
      {"communication",
       {{"classes", g.communication},
        {"definition",
         "this process's MPI calls of the run by class (init: the init windows; agreement: the per-block "
         "stop/checkpoint agreement; diagnostics: the diagnostics points; reference_check; checkpoint: written "
         "and read; time_segments; timers_io: the timers' and I/O statistics; result: the final gathers and "
         "state files; other): calls and bytes_sent of the rank with the most, seconds inside the calls max "
         "and min over the ranks (the wait for the slowest rank included; docs/PERFORMANCE.md, "
         "\"Communication\")"}}},
      {"diagnostics", {{"final", run.final_diag}, {"series", run.series}}},
      {"prequential", prequential_summary(run.final_diag, run.series)},
      {"memory",
       {{"state_bytes_per_stream", state_bytes},
        {"state_bytes_total", state_bytes * std::size_t(run.decomp.total_streams)},
        {"peak_allocated_bytes_per_rank", g.peak_allocated},
        {"peak_allocated_space", Exec::memory_space::name()},
        {"peak_allocated_definition",
         "each rank's high-water mark of the bytes allocated through Kokkos (Views, kokkos_malloc) in the "
         "execution space's memory space during this point, from Kokkos Tools' allocate/deallocate events "
         "(util/allocation_tracker.hpp): exact, without the CUDA context or other processes"},
        {"estimate_over_peak_allocated",
         peak_rank0 > 0 ? nlohmann::json(double(estimate.execution_space_bytes()) / double(peak_rank0))
                        : nlohmann::json()},
        {"device_used_bytes_at_phase", g.device_used_at_phase},
        {"device_used_definition",
         "the device's used memory (cudaMemGetInfo total - free: the CUDA context and every other process on "
         "the device included) as each phase ended, max over the ranks; null where no rank could query it "
         "(host backends; only Cuda is queried)"},
        {"peak_rss_bytes_per_rank", g.rss},
        {"peak_rss_definition",
         "each rank's VmHWM (/proc/self/status): the peak resident memory of the process "
         "since it started, so a sweep point's includes the points before it"},
        {"estimate_rank0", estimate.to_json()}}},
      {"counts",
       {{"clamped_steps", run.final_diag["clamped_steps"]},
        {"breakdown_streams", broken},
        {"breakdowns", breakdowns},
        {"missing",
         {{"mode", to_string(cfg.algorithm.missing)},
          {"missing_fraction", run.final_diag["missing_fraction"]},
          {"skipped_steps", run.final_diag["skipped_steps"]},
          {"dropped_samples", run.final_diag["dropped_samples"]},
          {"unseen_coordinates", run.final_diag["unseen_coordinates"]}}},
        {"noise",
         {{"model", to_string(cfg.algorithm.noise)},
          {"rewhitenings", run.final_diag["rewhitenings"]},
          {"noise_profile_min", run.final_diag["noise_profile_min"]},
          {"noise_profile_max", run.final_diag["noise_profile_max"]}}}}},
      {"verification",
       {{"passed", v.passed},
        {"verdict", v.verdict},
        {"accuracy", v.accuracy},
        {"checks", v.checks},
        {"reference_check", ref_check},
        {"per_stream_checksums", checksums}}},
      {"warnings", warnings},
      {"time_segments", segmented ? run.time_segments : unsegmented_record()},
  };
  if (g.io_end) result["io"] = total["io"];
  if (!g.state_files.is_null()) result["state_files"] = g.state_files;
  if (run.restart || run.segments.size() > 1)
    result["restart"] = {{"restarted_from", run.restart ? nlohmann::json(run.restart->dir) : nlohmann::json()},
                         {"segments", run.segments.size()},
                         {"per_segment", run.segments}};
  if (run.policy->enabled()) {
    const auto& ck = cfg.output.checkpoint;
    result["checkpoints"] = {
        {"dir", ck.dir},
        {"written", run.checkpoints_written},
        {"last", run.last_checkpoint.empty() ? nlohmann::json() : nlohmann::json(run.last_checkpoint)},
        {"keep", ck.keep},
        {"every_steps", ck.every_steps},
        {"every_seconds", ck.every_seconds}};
  }
  return result;
}

}  // namespace mosaic::detail
