// The result's time_segments record (ALGORITHM.md 9.7): the resolved
// options, and per stream its passes, certificate, boundary mismatches,
// starts, counters and modelled speedup (SegmentedRun), gathered from every
// rank and joined where a stream's segments lie on several ranks; with
// time_segments: 1 only passes: 1 and certified: true (9.12.1).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <map>
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

// One stream's record as far as the segments [q_begin, q_end) that `rank`
// holds go (TimeSegments::run's records; merge_stream_records joins them).
template <class T>
nlohmann::json segmented_stream_json(const SegmentedStream& stream, const std::vector<std::int64_t>& boundaries,
                                     const SegmentedRun<T>& rec, const SegmentedStreamEnd& end, int q_begin, int q_end,
                                     int rank) {
  nlohmann::json first = nlohmann::json::array(), last = nlohmann::json::array();
  for (const auto& m : rec.first_pass_components) first.push_back(detail::mismatch_json(m));
  for (const auto& m : rec.last_pass_components) last.push_back(detail::mismatch_json(m));
  return {{"stream_id", stream.id},
          {"segments_held", {q_begin, q_end}},
          {"rank", rank},
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

// One stream's record from the records of the ranks that hold its
// segments (each with its segments_held): per segment or boundary what its
// rank recorded, per pass the certified segments added up and the longest
// worker and pass, the start and counter counts added up; passes, the
// stream's end and its certificate are the same on every rank (each
// partial record's `certified` says whether its own segments up to the
// end are). segment_ranks: the rank of each segment.
inline nlohmann::json merge_stream_records(std::vector<nlohmann::json> parts) {
  std::sort(parts.begin(), parts.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["segments_held"][0].get<int>() < b["segments_held"][0].get<int>();
  });
  nlohmann::json out = parts.front();
  const int P = int(out["boundaries"].size()) - 1, passes = out["passes"].get<int>();
  std::vector<int> ranks(std::size_t(P), 0);
  out["certified"] = true;
  out["first_uncertified"] = nullptr;
  for (const char* key : {"segments_certified", "worker_steps_per_pass"})
    for (auto& v : out[key]) v = 0;
  for (auto& v : out["pass_seconds"]) v = 0.0;
  for (const char* key : {"trivial_boundaries", "cold_data_starts", "cold_random_starts", "broken_runs"}) out[key] = 0;
  for (const char* key : {"counters", "warmup_counters"})
    for (auto& [name, v] : out[key].items()) v = 0;
  std::int64_t worker_steps = 0;
  for (const nlohmann::json& part : parts) {
    const int q_begin = part["segments_held"][0].get<int>(), q_end = part["segments_held"][1].get<int>();
    for (int q = q_begin; q < q_end; ++q) {
      ranks[std::size_t(q)] = part["rank"].get<int>();
      out["cold_init_samples"][std::size_t(q)] = part["cold_init_samples"][std::size_t(q)];
      if (q == 0) continue;
      const std::size_t b = std::size_t(q) - 1;
      for (int k = 0; k < passes; ++k)
        out["boundary_mismatch"][std::size_t(k)][b] = part["boundary_mismatch"][std::size_t(k)][b];
      out["boundary_mismatch_first_pass"][b] = part["boundary_mismatch_first_pass"][b];
      out["boundary_mismatch_last_pass"][b] = part["boundary_mismatch_last_pass"][b];
    }
    if (!part["certified"].get<bool>()) out["certified"] = false;
    if (!part["first_uncertified"].is_null() &&
        (out["first_uncertified"].is_null() ||
         part["first_uncertified"].get<int>() < out["first_uncertified"].get<int>()))
      out["first_uncertified"] = part["first_uncertified"];
    for (int k = 0; k < passes; ++k) {
      const std::size_t pk = std::size_t(k);
      out["segments_certified"][pk] =
          out["segments_certified"][pk].get<int>() + part["segments_certified"][pk].get<int>();
      out["worker_steps_per_pass"][pk] = std::max(out["worker_steps_per_pass"][pk].get<std::int64_t>(),
                                                  part["worker_steps_per_pass"][pk].get<std::int64_t>());
      out["pass_seconds"][pk] = std::max(out["pass_seconds"][pk].get<double>(), part["pass_seconds"][pk].get<double>());
    }
    for (const char* key : {"trivial_boundaries", "cold_data_starts", "cold_random_starts", "broken_runs"})
      out[key] = out[key].get<int>() + part[key].get<int>();
    for (const char* key : {"counters", "warmup_counters"})
      for (auto& [name, v] : out[key].items()) v = v.get<std::int64_t>() + part[key][name].get<std::int64_t>();
  }
  for (const auto& w : out["worker_steps_per_pass"]) worker_steps += w.get<std::int64_t>();
  out["modelled_speedup"] = double(out["steps"].get<std::int64_t>()) / double(worker_steps);
  out.erase("segments_held");
  out.erase("rank");
  out["segment_ranks"] = ranks;
  return out;
}

// The record over every rank's streams (collective; meaningful on rank 0):
// `local` holds this rank's streams' records (segmented_stream_json).
inline nlohmann::json segments_record(const ResolvedSegments& rs, const std::vector<nlohmann::json>& local,
                                      MPI_Comm comm) {
  nlohmann::json mine = nlohmann::json::array();
  for (const auto& s : local) mine.push_back(s);
  std::map<std::uint64_t, std::vector<nlohmann::json>> parts;  // by stream id
  for (const std::string& text : detail::gather_strings(mine.dump(), comm))
    for (auto& s : nlohmann::json::parse(text)) parts[s["stream_id"].get<std::uint64_t>()].push_back(std::move(s));
  nlohmann::json streams = nlohmann::json::array();
  for (auto& [id, of_stream] : parts) streams.push_back(merge_stream_records(std::move(of_stream)));
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
  return {
      {"time_segments", rs.segments},
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
       "P-1; null where not a number; segment_ranks: the MPI rank of each segment), re-run from the predecessor's end state until certified or "
       "segment_max_passes; worker_steps_per_pass: the most steps one slot took in the pass; modelled_speedup "
       "= T / their sum (communication and the certificate left out); pass_seconds: the wall time of the "
       "pass (steps, starts and host copies; the boundary messages and the certificate left out) over all of "
       "the rank's streams, the longest of the stream's ranks; counters: the segments' final runs, warmup_counters: pass 1's "
       "warm-ups; stopped_at_segment: the segment whose certified run broke down (the stream ends there, as "
       "a sequential run would); an uncertified run (certified: false) is not the sequential result"}};
}

// time_segments: 1 (9.12.1).
inline nlohmann::json unsegmented_record() { return {{"time_segments", 1}, {"passes", 1}, {"certified", true}}; }

}  // namespace mosaic
