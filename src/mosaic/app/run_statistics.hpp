// The statistics of a run reduced over its ranks (collective; app/run.hpp
// puts them in the result): the batch diagnostics and the accuracy against
// the truth, the phase timers, a file source's I/O accounting.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "mosaic/app/timers.hpp"
#include "mosaic/engine/batch_diagnostics.hpp"
#include "mosaic/sources/stream_source.hpp"
#include "mosaic/util/mpi_collectives.hpp"

namespace mosaic::detail {

// The values of a packed reduction from position `first` on, by name, as
// JSON (integers as integers).
inline nlohmann::json packed_values(const PackedAllreduce& p, std::size_t first, std::size_t end) {
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t i = first; i < end; ++i)
    j[p.name(i)] = p.is_integer(i) ? nlohmann::json(p.integer(i)) : nlohmann::json(p.real(i));
  return j;
}

// Reduces one rank's batch diagnostics (and truth accuracy) over all ranks,
// in one collective.
inline nlohmann::json reduce_diagnostics(const BatchDiagnostics& d, const TruthAccuracy* acc,
                                         std::int64_t local_streams, std::int64_t total_streams, MPI_Comm comm) {
  PackedAllreduce p;
  p.max("orthonormality_error_max", d.orthonormality_error_max);
  p.max("symmetry_error_max", d.symmetry_error_max);
  p.min("s_min_eig_min", d.s_min_eig_min);
  p.max("s_max_eig_max", d.s_max_eig_max);
  p.max("s_condition_max", d.s_condition_max);
  p.min("s2_min", d.s2_min);
  p.sum("nonfinite_count", (long long)d.nonfinite_count);
  p.sum("clamped_steps", (long long)d.clamped_steps);
  p.sum("unresolved_residual_steps", (long long)d.unresolved_residual_steps);
  p.sum("residual_recomputations", (long long)d.residual_recomputations);
  p.sum("breakdown_streams", (long long)d.breakdown_streams);
  p.sum("ended_streams", (long long)d.ended_streams);
  p.max("maintained_solve_drift_max", d.maintained_solve_drift_max);
  p.sum("maintained_refactorizations", (long long)d.maintained_refactorizations);
  p.sum("skipped_steps", (long long)d.skipped_steps);
  p.sum("dropped_samples", (long long)d.dropped_samples);
  p.sum("missing_entries", (long long)d.missing_entries);
  p.sum("unseen_coordinates", (long long)d.unseen_coordinates);
  p.sum("rewhitenings", (long long)d.rewhitenings);
  p.min("noise_profile_min", d.noise_profile_min);
  p.max("noise_profile_max", d.noise_profile_max);
  p.sum("stepped_entries", (long long)d.stepped_entries);
  const std::size_t diagnostics_end = p.size();
  if (acc) {
    const double w = double(local_streams) / double(total_streams);
    p.max("projector_distance_max", acc->projector_distance_max);
    p.sum("projector_distance_mean", acc->projector_distance_mean * w);
    p.max("noise_rel_error_max", acc->noise_rel_error_max);
    p.sum("noise_rel_error_mean", acc->noise_rel_error_mean * w);
    p.max("spectrum_rel_error_max", acc->spectrum_rel_error_max);
    p.sum("spectrum_rel_error_mean", acc->spectrum_rel_error_mean * w);
  }
  p.reduce(comm);
  nlohmann::json j = packed_values(p, 0, diagnostics_end);
  const long long stepped = p.integer("stepped_entries");
  j.erase("stepped_entries");
  j["missing_fraction"] = stepped > 0 ? double(p.integer("missing_entries")) / double(stepped) : 0.0;
  if (acc) j["accuracy"] = packed_values(p, diagnostics_end, p.size());
  return j;
}

// The classes of a run's collectives (CommClass scopes; the result lists
// them by name): the start's init windows; the per-block stop/checkpoint agreement;
// the diagnostics points; the reference cross-check; checkpoints written
// and read; time segments' states and certificate; the timers' and I/O
// statistics; the result's gathers and the state files; the rest.
inline const char* const kCommClasses[] = {"init",       "agreement",     "diagnostics", "reference_check",
                                           "checkpoint", "time_segments", "timers_io",   "result",
                                           "other"};

// One rank's ledger reduced over the ranks, per class: the calls and bytes
// of the rank that made or sent the most, the seconds max and min over the
// ranks. A class outside kCommClasses is a programming error.
inline nlohmann::json reduce_comm_ledger(const CommLedger& ledger, MPI_Comm comm) {
  for (const auto& counted : ledger) {
    const std::string& name = counted.first;  // a lambda may capture a structured binding only from C++20
    if (std::find_if(std::begin(kCommClasses), std::end(kCommClasses), [&](const char* c) { return name == c; }) ==
        std::end(kCommClasses))
      throw std::logic_error("collectives counted in class '" + name + "', which is not in kCommClasses");
  }
  PackedAllreduce p;
  for (const std::string name : kCommClasses) {
    const auto it = ledger.find(name);
    const CommTally t = it == ledger.end() ? CommTally{} : it->second;
    p.max(name + ".calls", t.calls);
    p.max(name + ".bytes", t.bytes);
    p.max(name + ".seconds_max", t.seconds);
    p.min(name + ".seconds_min", t.seconds);
  }
  p.reduce(comm);
  nlohmann::json classes = nlohmann::json::object();
  for (const std::string name : kCommClasses)
    classes[name] = {{"calls", p.integer(name + ".calls")},
                     {"bytes_sent", p.integer(name + ".bytes")},
                     {"seconds_max", p.real(name + ".seconds_max")},
                     {"seconds_min", p.real(name + ".seconds_min")}};
  return classes;
}

// Timer statistics over ranks: {"max", "min", "mean"} seconds of every
// phase (kTimerPhases, in execution order) and of `total`, the wall time of
// the run point so far on each rank.
inline nlohmann::json reduce_timers(const TimerSet& timers, MPI_Comm comm, int nranks) {
  std::vector<std::string> names(std::begin(kTimerPhases), std::end(kTimerPhases));
  names.push_back("total");
  PackedAllreduce p;
  for (const std::string& name : names) {
    const double s = name == "total" ? timers.total_seconds() : timers.seconds(name);
    p.max(name + ".max", s);
    p.min(name + ".min", s);
    p.sum(name + ".sum", s);
  }
  p.reduce(comm);
  nlohmann::json j = nlohmann::json::object();
  for (const std::string& name : names)
    j[name] = {
        {"max_s", p.real(name + ".max")}, {"min_s", p.real(name + ".min")}, {"mean_s", p.real(name + ".sum") / nranks}};
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
  PackedAllreduce p;
  p.sum("bytes_read", (long long)io.bytes_read);
  p.max("read_seconds", io.read_seconds);
  p.min("per_rank_read_bandwidth_bytes_per_s_min", io.read_seconds > 0 ? double(io.bytes_read) / io.read_seconds : 0.0);
  p.max("stall_seconds", io.stall_seconds);
  p.max("copy_seconds", io.copy_seconds);
  p.max("chunks_staged_max", (long long)io.chunks);
  p.sum("files", (long long)io.files);
  p.reduce(comm);
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
  nlohmann::json j = packed_values(p, 0, p.size());
  const double read_max = p.real("read_seconds");
  j["read_bandwidth_bytes_per_s"] = read_max > 0 ? double(p.integer("bytes_read")) / read_max : 0.0;
  j["chunk_rows"] = io.chunk_rows;
  j["nonfinite_rows"] = errors;
  return j;
}

}  // namespace mosaic::detail
