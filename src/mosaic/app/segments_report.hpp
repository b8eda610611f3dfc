// The result's time_segments record (ALGORITHM.md 9.7): the resolved
// options, and per stream its passes, certificate, boundary mismatches,
// starts, counters and modelled speedup (SegmentedRun), gathered from every
// rank; with time_segments: 1 only passes: 1 and certified: true (9.12.1).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mosaic/algorithm/params.hpp"
#include "mosaic/algorithm/segments.hpp"
#include "mosaic/app/time_segments.hpp"
#include "mosaic/util/mpi_collectives.hpp"

namespace mosaic {

namespace detail {

inline nlohmann::json mismatch_json(const BoundaryMismatch& m) {
  return {{"mu", m.mu}, {"s2", m.s2}, {"cov", m.cov}, {"ang", m.ang}, {"delta", m.delta()}};
}
inline nlohmann::json counters_json(const SegmentCounters& c) {
  return {{"clamped_steps", c.clamped_steps}, {"reorthonormalizations", c.reorthonormalizations}};
}

}  // namespace detail

// One stream's record.
template <class T>
nlohmann::json segmented_stream_json(const SegmentedStream& stream, const std::vector<std::int64_t>& boundaries,
                                     const SegmentedRun<T>& rec, const SegmentedStreamEnd& end) {
  nlohmann::json first = nlohmann::json::array(), last = nlohmann::json::array();
  for (const auto& m : rec.first_pass_components) first.push_back(detail::mismatch_json(m));
  for (const auto& m : rec.last_pass_components) last.push_back(detail::mismatch_json(m));
  return {{"stream_id", stream.id},
          {"steps", stream.steps},
          {"first_row", stream.first_row},
          {"boundaries", boundaries},
          {"passes", rec.passes},
          {"certified", rec.certified},
          {"first_uncertified", rec.first_uncertified >= 0 ? nlohmann::json(rec.first_uncertified) : nlohmann::json()},
          {"stopped_at_segment", end.segment >= 0 ? nlohmann::json(end.segment) : nlohmann::json()},
          {"boundary_mismatch", rec.boundary_mismatch},
          {"boundary_mismatch_first_pass", first},
          {"boundary_mismatch_last_pass", last},
          {"segments_certified", rec.segments_certified},
          {"trivial_boundaries", rec.trivial_boundaries},
          {"cold_data_starts", rec.cold_data_starts},
          {"cold_random_starts", rec.cold_random_starts},
          {"cold_init_samples", rec.cold_init_samples},
          {"broken_runs", rec.broken_runs},
          {"worker_steps_per_pass", rec.worker_steps_per_pass},
          {"pass_seconds", rec.pass_seconds},
          {"modelled_speedup", rec.modelled_speedup},
          {"counters", detail::counters_json(rec.counters)},
          {"warmup_counters", detail::counters_json(rec.warmup_counters)}};
}

// The record over every rank's streams (collective; meaningful on rank 0):
// `local` holds this rank's streams' records.
inline nlohmann::json segments_record(const ResolvedSegments& rs, const std::vector<nlohmann::json>& local,
                                      MPI_Comm comm) {
  nlohmann::json mine = nlohmann::json::array();
  for (const auto& s : local) mine.push_back(s);
  nlohmann::json streams = nlohmann::json::array();
  for (const std::string& text : detail::gather_strings(mine.dump(), comm))
    for (auto& s : nlohmann::json::parse(text)) streams.push_back(std::move(s));
  std::sort(streams.begin(), streams.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["stream_id"].get<std::uint64_t>() < b["stream_id"].get<std::uint64_t>();
  });
  int passes = 0;
  bool certified = true;
  nlohmann::json uncertified = nlohmann::json::array();
  double speedup_min = 0;
  for (const auto& s : streams) {
    passes = std::max(passes, s["passes"].get<int>());
    if (!s["certified"].get<bool>()) {
      certified = false;
      uncertified.push_back(s["stream_id"]);
    }
    const double m = s["modelled_speedup"].get<double>();
    speedup_min = speedup_min == 0 ? m : std::min(speedup_min, m);
  }
  return {{"time_segments", rs.segments},
          {"segment_warmup", rs.warmup},
          {"segment_warmup_init", to_string(rs.warmup_init)},
          {"segment_tolerance", rs.tolerance},
          {"segment_max_passes", rs.max_passes},
          {"segment_gauge", rs.gauge_carry ? "carry" : "free"},
          {"passes", passes},
          {"certified", certified},
          {"uncertified_streams", uncertified},
          {"modelled_speedup_min", speedup_min},
          {"streams", streams},
          {"definition",
           "ALGORITHM.md section 9: each stream's steps (run.warmup_steps and run.steps, T) in time_segments "
           "segments b_q + 1 .. b_{q+1} (boundaries), run concurrently as slots of the engine's batch, certified at "
           "each boundary by the four basis-free distances of 9.4 (boundary_mismatch: delta_q per pass, q = 1.."
           "P-1; null where not a number), re-run from the predecessor's end state until certified or "
           "segment_max_passes; worker_steps_per_pass: the most steps one slot took in the pass; modelled_speedup "
           "= T / their sum (communication and the certificate left out); pass_seconds: the wall time of the "
           "rank's pass over all of its streams; counters: the segments' final runs, warmup_counters: pass 1's "
           "warm-ups; stopped_at_segment: the segment whose certified run broke down (the stream ends there, as "
           "a sequential run would); an uncertified run (certified: false) is not the sequential result"}};
}

// time_segments: 1 (9.12.1).
inline nlohmann::json unsegmented_record() { return {{"time_segments", 1}, {"passes", 1}, {"certified", true}}; }

}  // namespace mosaic
