// One run (one sweep point) of the mini-app on one MPI rank: set up the
// rank's streams, initialize, warm up, advance them for the timed steps with
// diagnostics every K steps, then reduce statistics across ranks. Only
// statistics cross ranks (counts, times, diagnostics, per-stream checksums);
// stream states never do.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include "batch_diagnostics.hpp"
#include "batched_engine.hpp"
#include "decomposition.hpp"
#include "environment.hpp"
#include "run_config.hpp"
#include "stream_batch.hpp"
#include "synthetic_source.hpp"
#include "timers.hpp"

namespace mosaic {

// Rank 0's progress lines: at most one every `period_s` seconds.
class ProgressReporter {
 public:
  ProgressReporter(bool enabled, double period_s, std::int64_t total_steps, std::int64_t streams)
      : enabled_(enabled), period_s_(period_s), total_(total_steps), streams_(streams),
        start_(clock::now()), last_(start_) {}
  void update(std::int64_t done) {
    if (!enabled_) return;
    const auto now = clock::now();
    if (seconds(last_, now) < period_s_ || done >= total_) return;
    const double rate_steps = (done - last_done_) / seconds(last_, now);
    const double eta = rate_steps > 0 ? (total_ - done) / rate_steps : 0.0;
    std::printf("[mosaic] step %lld/%lld (%5.1f%%)  %.4g samples/s  ETA %.0f s\n", (long long)done,
                (long long)total_, 100.0 * done / total_, rate_steps * streams_, eta);
    std::fflush(stdout);
    last_ = now;
    last_done_ = done;
  }

 private:
  using clock = std::chrono::steady_clock;
  static double seconds(clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  }
  bool enabled_;
  double period_s_;
  std::int64_t total_, streams_, last_done_ = 0;
  clock::time_point start_, last_;
};

namespace detail {

inline double allreduce(double v, MPI_Op op, MPI_Comm comm) {
  double out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, op, comm);
  return out;
}
inline long long allreduce(long long v, MPI_Op op, MPI_Comm comm) {
  long long out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_LONG_LONG, op, comm);
  return out;
}

// Reduces one rank's batch diagnostics (and truth accuracy) over all ranks.
inline nlohmann::json reduce_diagnostics(const BatchDiagnostics& d, const TruthAccuracy* acc,
                                         std::int64_t local_streams, std::int64_t total_streams,
                                         MPI_Comm comm) {
  nlohmann::json j = {
      {"orthonormality_error_max", allreduce(d.orthonormality_error_max, MPI_MAX, comm)},
      {"symmetry_error_max", allreduce(d.symmetry_error_max, MPI_MAX, comm)},
      {"s_min_eig_min", allreduce(d.s_min_eig_min, MPI_MIN, comm)},
      {"s_max_eig_max", allreduce(d.s_max_eig_max, MPI_MAX, comm)},
      {"s_condition_max", allreduce(d.s_condition_max, MPI_MAX, comm)},
      {"s2_min", allreduce(d.s2_min, MPI_MIN, comm)},
      {"nonfinite_count", allreduce((long long)d.nonfinite_count, MPI_SUM, comm)},
      {"clamped_steps", allreduce((long long)d.clamped_steps, MPI_SUM, comm)},
      {"breakdown_streams", allreduce((long long)d.breakdown_streams, MPI_SUM, comm)},
  };
  if (acc) {
    const double w = double(local_streams) / double(total_streams);
    j["accuracy"] = {
        {"projector_distance_max", allreduce(acc->projector_distance_max, MPI_MAX, comm)},
        {"projector_distance_mean", allreduce(acc->projector_distance_mean * w, MPI_SUM, comm)},
        {"noise_rel_error_max", allreduce(acc->noise_rel_error_max, MPI_MAX, comm)},
        {"noise_rel_error_mean", allreduce(acc->noise_rel_error_mean * w, MPI_SUM, comm)},
        {"spectrum_rel_error_max", allreduce(acc->spectrum_rel_error_max, MPI_MAX, comm)},
        {"spectrum_rel_error_mean", allreduce(acc->spectrum_rel_error_mean * w, MPI_SUM, comm)},
    };
  }
  return j;
}

// Gathers a per-rank vector to rank 0 (concatenated in rank order).
template <class T>
std::vector<T> gather_to_root(const std::vector<T>& local, MPI_Datatype type, MPI_Comm comm) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  int count = int(local.size());
  std::vector<int> counts(nranks), displs(nranks);
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  int total = 0;
  for (int k = 0; k < nranks; ++k) {
    displs[k] = total;
    total += counts[k];
  }
  std::vector<T> all(rank == 0 ? total : 0);
  MPI_Gatherv(local.data(), count, type, all.data(), counts.data(), displs.data(), type, 0, comm);
  return all;
}

// Timer statistics over ranks: {"max", "min", "mean"} seconds.
inline nlohmann::json reduce_timers(const TimerSet& timers, MPI_Comm comm, int nranks) {
  static const char* phases[] = {"init", "warmup", "generate", "update", "diagnostics", "reduce"};
  nlohmann::json j = nlohmann::json::object();
  for (const char* p : phases) {
    const double s = timers.seconds(p);
    j[p] = {{"max_s", allreduce(s, MPI_MAX, comm)},
            {"min_s", allreduce(s, MPI_MIN, comm)},
            {"mean_s", allreduce(s, MPI_SUM, comm) / nranks}};
  }
  return j;
}

}  // namespace detail

// Runs one configuration on this rank; collective over `comm`. Returns the
// run's result object on rank 0 (an empty object elsewhere).
template <class Scalar>
nlohmann::json run_point(const RunConfig& cfg, MPI_Comm comm) {
  using Exec = Kokkos::DefaultExecutionSpace;
  using Mem = typename Exec::memory_space;
  int rank = 0, nranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);

  const StreamDecomposition decomp = decompose_streams(cfg.streams, rank, nranks);
  const int B = int(decomp.local_ids.size());
  const int d = cfg.problem.d, r = cfg.problem.rank;
  const MosaicParams& params = cfg.algorithm;
  TimerSet timers;

  StreamBatch<Scalar, Exec> batch(B, d, r, decomp.local_ids);
  MosaicEngine<Scalar, Exec> engine(params, B, d, r);
  const SyntheticDriftSource<Scalar, Exec> source(cfg.source.synthetic, decomp.local_ids);
  Kokkos::View<Scalar**, Mem> X("mosaic::samples", B, d);

  // Sample index of the next sample each stream consumes.
  std::int64_t t = 0;
  timers.time("init", [&] {
    if (params.init == InitMode::data) {
      const int n0 = params.resolved_init_samples(r);
      Kokkos::View<Scalar***, Mem> X0("mosaic::init_samples", B, n0, d);
      source.generate_block(0, n0, X0);
      engine.init_data(batch, X0);
      t = n0;
    } else {
      engine.init_random(batch, cfg.run.seed);
    }
  });
  timers.time("warmup", [&] {
    for (std::int64_t k = 0; k < cfg.run.warmup_steps; ++k, ++t) {
      source.generate(t, X);
      engine.step(batch, X);
    }
  });

  nlohmann::json series = nlohmann::json::array();
  auto diagnose = [&](std::int64_t steps_done) {
    BatchDiagnostics diag;
    TruthAccuracy acc;
    timers.time("diagnostics", [&] {
      diag = compute_diagnostics(batch);
      acc = source.accuracy(batch, t - 1);
    });
    nlohmann::json entry;
    timers.time("reduce", [&] {
      entry = detail::reduce_diagnostics(diag, &acc, B, decomp.total_streams, comm);
    });
    entry["step"] = steps_done;
    entry["sample_index"] = t - 1;
    return std::make_pair(entry, diag);
  };

  ProgressReporter progress(rank == 0, cfg.run.progress_every_s, cfg.run.steps, decomp.total_streams);
  const std::int64_t every = cfg.run.diagnostics_every;
  const auto loop_start = std::chrono::steady_clock::now();
  for (std::int64_t k = 1; k <= cfg.run.steps; ++k, ++t) {
    timers.time("generate", [&] { source.generate(t, X); });
    timers.time("update", [&] { engine.step(batch, X); });
    if (every > 0 && k % every == 0 && k < cfg.run.steps) series.push_back(diagnose(k).first);
    progress.update(k);
  }
  const double loop_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
  auto [final_diag, diag] = diagnose(cfg.run.steps);
  series.push_back(final_diag);

  // Per-stream verification checksums and breakdown records, gathered to rank 0.
  std::vector<unsigned long long> ids(decomp.local_ids.begin(), decomp.local_ids.end());
  const auto all_ids = detail::gather_to_root(ids, MPI_UNSIGNED_LONG_LONG, comm);
  const auto all_sums = detail::gather_to_root(diag.per_stream_checksum, MPI_DOUBLE, comm);
  std::vector<long long> breaks;
  for (const auto& b : diag.breakdowns)
    breaks.insert(breaks.end(), {(long long)b.stream_id, (long long)b.step, (long long)b.code});
  const auto all_breaks = detail::gather_to_root(breaks, MPI_LONG_LONG, comm);
  const auto all_rss = detail::gather_to_root(std::vector<long long>{peak_rss_bytes()}, MPI_LONG_LONG, comm);
  const long long device_used = detail::allreduce(device_memory_used_bytes(), MPI_MAX, comm);

  nlohmann::json timer_stats = detail::reduce_timers(timers, comm, nranks);
  const double loop_max_s = detail::allreduce(loop_s, MPI_MAX, comm);
  const double update_s = timers.seconds("update");
  const double update_max = detail::allreduce(update_s, MPI_MAX, comm);
  const double rank_rate = update_s > 0 ? double(cfg.run.steps) * B / update_s : 0.0;
  const double rank_rate_min = detail::allreduce(rank_rate, MPI_MIN, comm);
  const double rank_rate_max = detail::allreduce(rank_rate, MPI_MAX, comm);
  if (rank != 0) return nlohmann::json::object();

  const double samples = double(cfg.run.steps) * double(decomp.total_streams);
  nlohmann::json checksums = nlohmann::json::array();
  for (std::size_t k = 0; k < all_ids.size(); ++k)
    checksums.push_back({{"stream_id", all_ids[k]}, {"checksum", all_sums[k]}});
  std::sort(checksums.begin(), checksums.end(), [](const auto& a, const auto& b) {
    return a["stream_id"].template get<unsigned long long>() < b["stream_id"].template get<unsigned long long>();
  });
  nlohmann::json breakdowns = nlohmann::json::array();
  for (std::size_t k = 0; k + 2 < all_breaks.size(); k += 3)
    breakdowns.push_back({{"stream_id", all_breaks[k]}, {"step", all_breaks[k + 1]}, {"code", all_breaks[k + 2]}});

  // Verification (HPCG style): each invariant of ALGORITHM.md section 4 with
  // the threshold it is held to.
  const bool is_float = std::is_same<Scalar, float>::value;
  const double orth_tol = is_float ? 1e-2 : 1e-8;
  const double sym_tol = is_float ? 1e-5 : 1e-12;
  auto check = [](const char* name, double value, const char* relation, double threshold, bool ok) {
    return nlohmann::json{{"name", name}, {"value", value}, {"relation", relation},
                          {"threshold", threshold}, {"passed", ok}};
  };
  const double orth = final_diag["orthonormality_error_max"];
  const double sym = final_diag["symmetry_error_max"];
  const double smin = final_diag["s_min_eig_min"];
  const double s2min = final_diag["s2_min"];
  const long long nonfinite = final_diag["nonfinite_count"];
  const long long broken = final_diag["breakdown_streams"];
  nlohmann::json checks = nlohmann::json::array({
      check("orthonormality_error_max", orth, "<=", orth_tol, orth <= orth_tol),
      check("symmetry_error_max", sym, "<=", sym_tol, sym <= sym_tol),
      check("s_min_eig_min", smin, ">", 0.0, smin > 0.0),
      check("s2_min", s2min, ">", 0.0, s2min > 0.0),
      check("nonfinite_count", double(nonfinite), "==", 0.0, nonfinite == 0),
      check("breakdown_streams", double(broken), "==", 0.0, broken == 0),
  });
  bool passed = true;
  for (const auto& c : checks) passed = passed && c["passed"].get<bool>();

  const std::size_t state_bytes = batch.state_bytes_per_stream();
  return {
      {"sweep_point", nlohmann::json::object()},
      {"resolved_deck", cfg.resolved},
      {"dtype", to_string(cfg.problem.dtype)},
      {"decomposition",
       {{"ranks", nranks},
        {"mode", to_string(cfg.streams.mode)},
        {"total_streams", decomp.total_streams},
        {"streams_per_rank_min", decomp.min_per_rank},
        {"streams_per_rank_max", decomp.max_per_rank},
        {"imbalance", decomp.imbalance},
        {"policy", "each stream is owned whole by one rank; stream states are never split, exchanged or averaged; only statistics cross ranks"}}},
      {"steps", {{"timed", cfg.run.steps}, {"warmup", cfg.run.warmup_steps},
                 {"init_samples", params.init == InitMode::data ? params.resolved_init_samples(r) : 0}}},
      {"timers", timer_stats},
      {"figure_of_merit",
       {{"name", "update_samples_per_second"},
        {"value", update_max > 0 ? samples / update_max : 0.0},
        {"definition", "timed steps x total streams / max over ranks of the update-only time"}}},
      {"throughput",
       {{"update_samples_per_second", update_max > 0 ? samples / update_max : 0.0},
        {"end_to_end_samples_per_second", loop_max_s > 0 ? samples / loop_max_s : 0.0},
        {"per_rank_update_samples_per_second_min", rank_rate_min},
        {"per_rank_update_samples_per_second_max", rank_rate_max},
        {"communication_seconds_max", timer_stats["reduce"]["max_s"]}}},
      {"diagnostics", {{"final", final_diag}, {"series", series}}},
      {"memory",
       {{"state_bytes_per_stream", state_bytes},
        {"state_bytes_total", state_bytes * std::size_t(decomp.total_streams)},
        {"device_bytes_in_use_max", device_used},
        {"peak_rss_bytes_per_rank", all_rss}}},
      {"counts", {{"clamped_steps", final_diag["clamped_steps"]},
                  {"breakdown_streams", broken},
                  {"breakdowns", breakdowns}}},
      {"verification", {{"passed", passed}, {"checks", checks}, {"per_stream_checksums", checksums}}},
  };
}

}  // namespace mosaic
