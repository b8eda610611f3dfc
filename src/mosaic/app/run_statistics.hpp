// The statistics of a run reduced over its ranks (collective; app/run.hpp
// puts them in the result): the batch diagnostics and the accuracy against
// the truth, the phase timers, a file source's I/O accounting.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "mosaic/app/timers.hpp"
#include "mosaic/engine/batch_diagnostics.hpp"
#include "mosaic/sources/stream_source.hpp"
#include "mosaic/util/mpi_collectives.hpp"

namespace mosaic::detail {

// Reduces one rank's batch diagnostics (and truth accuracy) over all ranks.
inline nlohmann::json reduce_diagnostics(const BatchDiagnostics& d, const TruthAccuracy* acc,
                                         std::int64_t local_streams, std::int64_t total_streams, MPI_Comm comm) {
  nlohmann::json j = {
      {"orthonormality_error_max", allreduce(d.orthonormality_error_max, MPI_MAX, comm)},
      {"symmetry_error_max", allreduce(d.symmetry_error_max, MPI_MAX, comm)},
      {"s_min_eig_min", allreduce(d.s_min_eig_min, MPI_MIN, comm)},
      {"s_max_eig_max", allreduce(d.s_max_eig_max, MPI_MAX, comm)},
      {"s_condition_max", allreduce(d.s_condition_max, MPI_MAX, comm)},
      {"s2_min", allreduce(d.s2_min, MPI_MIN, comm)},
      {"nonfinite_count", allreduce((long long)d.nonfinite_count, MPI_SUM, comm)},
      {"clamped_steps", allreduce((long long)d.clamped_steps, MPI_SUM, comm)},
      {"unresolved_residual_steps", allreduce((long long)d.unresolved_residual_steps, MPI_SUM, comm)},
      {"residual_recomputations", allreduce((long long)d.residual_recomputations, MPI_SUM, comm)},
      {"breakdown_streams", allreduce((long long)d.breakdown_streams, MPI_SUM, comm)},
      {"ended_streams", allreduce((long long)d.ended_streams, MPI_SUM, comm)},
      {"maintained_solve_drift_max", allreduce(d.maintained_solve_drift_max, MPI_MAX, comm)},
      {"maintained_refactorizations", allreduce((long long)d.maintained_refactorizations, MPI_SUM, comm)},
      {"skipped_steps", allreduce((long long)d.skipped_steps, MPI_SUM, comm)},
      {"dropped_samples", allreduce((long long)d.dropped_samples, MPI_SUM, comm)},
      {"missing_entries", allreduce((long long)d.missing_entries, MPI_SUM, comm)},
      {"unseen_coordinates", allreduce((long long)d.unseen_coordinates, MPI_SUM, comm)},
      {"rewhitenings", allreduce((long long)d.rewhitenings, MPI_SUM, comm)},
      {"noise_profile_min", allreduce(d.noise_profile_min, MPI_MIN, comm)},
      {"noise_profile_max", allreduce(d.noise_profile_max, MPI_MAX, comm)},
  };
  const long long stepped = allreduce((long long)d.stepped_entries, MPI_SUM, comm);
  j["missing_fraction"] = stepped > 0 ? double(j["missing_entries"].get<long long>()) / double(stepped) : 0.0;
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

// Timer statistics over ranks: {"max", "min", "mean"} seconds of every
// phase (kTimerPhases, in execution order) and of `total`, the wall time of
// the run point so far on each rank.
inline nlohmann::json reduce_timers(const TimerSet& timers, MPI_Comm comm, int nranks) {
  nlohmann::json j = nlohmann::json::object();
  auto put = [&](const char* name, double s) {
    j[name] = {{"max_s", allreduce(s, MPI_MAX, comm)},
               {"min_s", allreduce(s, MPI_MIN, comm)},
               {"mean_s", allreduce(s, MPI_SUM, comm) / nranks}};
  };
  for (const char* p : kTimerPhases) put(p, timers.seconds(p));
  put("total", timers.total_seconds());
  return j;
}

// The share of the wall time the phases account for: the phases' mean
// seconds over the ranks, summed, over the mean total.
inline double timer_coverage(const nlohmann::json& timers) {
  double phases = 0;
  for (const char* p : kTimerPhases)
    if (timers.contains(p)) phases += timers[p]["mean_s"].get<double>();
  const double total = timers.contains("total") ? timers["total"]["mean_s"].get<double>() : 0.0;
  return total > 0 ? phases / total : 0.0;
}

// Reduces one rank's I/O accounting of a file source over all ranks.
inline nlohmann::json reduce_io(const SourceIoStats& io, MPI_Comm comm) {
  const long long bytes = allreduce((long long)io.bytes_read, MPI_SUM, comm);
  const double read_max = allreduce(io.read_seconds, MPI_MAX, comm);
  const double rank_bw = io.read_seconds > 0 ? double(io.bytes_read) / io.read_seconds : 0.0;
  nlohmann::json local_errors = nlohmann::json::array();
  for (const auto& e : io.data_errors)
    local_errors.push_back({{"stream_id", e.stream_id}, {"path", e.path}, {"row", e.row}, {"message", e.message}});
  // Every rank's array, parsed on rank 0 (empty elsewhere).
  nlohmann::json errors = nlohmann::json::array();
  for (const std::string& rank_errors : gather_strings(local_errors.dump(), comm))
    for (auto& e : nlohmann::json::parse(rank_errors)) errors.push_back(e);
  // A stream's first bad row: with time segments several ranks may read
  // the same stream's rows (ALGORITHM.md section 9), each reporting the first
  // bad one it met.
  const auto key = [](const nlohmann::json& e) {
    return std::make_pair(e["stream_id"].template get<unsigned long long>(), e["row"].template get<long long>());
  };
  std::sort(errors.begin(), errors.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
  errors.erase(std::unique(errors.begin(), errors.end(),
                           [&](const auto& a, const auto& b) { return key(a).first == key(b).first; }),
               errors.end());
  return {
      {"bytes_read", bytes},
      {"read_seconds", read_max},
      {"read_bandwidth_bytes_per_s", read_max > 0 ? double(bytes) / read_max : 0.0},
      {"per_rank_read_bandwidth_bytes_per_s_min", allreduce(rank_bw, MPI_MIN, comm)},
      {"stall_seconds", allreduce(io.stall_seconds, MPI_MAX, comm)},
      {"copy_seconds", allreduce(io.copy_seconds, MPI_MAX, comm)},
      {"chunks_staged_max", allreduce((long long)io.chunks, MPI_MAX, comm)},
      {"chunk_rows", io.chunk_rows},
      {"files", allreduce((long long)io.files, MPI_SUM, comm)},
      {"nonfinite_rows", errors},
  };
}

}  // namespace mosaic::detail
