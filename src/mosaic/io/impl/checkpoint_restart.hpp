// Restarting from a checkpoint: choosing one, checking it against the deck
// and the input files, and loading the streams of this rank (collective;
// docs/CHECKPOINT.md).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "mosaic/config/run_config.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/io/impl/checkpoint_format.hpp"
#include "mosaic/sources/npy.hpp"
#include "mosaic/util/fnv1a.hpp"
#include "mosaic/util/mpi_collectives.hpp"

namespace mosaic {
namespace ckpt {

// ---------------------------------------------------------------- restart

// The checkpoint a run resumes from, verified.
struct RestartPlan {
  std::string dir;  // the ckpt_<n> directory
  nlohmann::json manifest;
  std::vector<std::string> notes;  // for rank 0 to print (skipped incomplete checkpoints, build differences)
};

// The checkpoint `where` names: a directory with a MANIFEST.json, or the
// newest complete one under it. Throws CheckpointError. `skipped`: the
// incomplete checkpoints that are newer than the one chosen.
inline std::filesystem::path choose_checkpoint(const std::string& where, std::vector<std::string>* skipped = nullptr) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(where, ec)) throw CheckpointError(where + ": no such checkpoint directory");
  if (is_complete(where)) return fs::path(where);
  const auto all = list_checkpoints(where);
  for (const auto& [n, path] : all) {
    if (is_complete(path)) return path;
    if (skipped) skipped->push_back(path.string());
  }
  if (!all.empty())
    throw CheckpointError(where + ": no complete checkpoint (" + std::to_string(all.size()) + " incomplete, without " +
                          kManifestName + ", e.g. " + all.front().second.string() + ")");
  throw CheckpointError(where + ": no checkpoint (neither " + kManifestName + " nor ckpt_* directories)");
}

inline std::string show(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// The differences between the run a checkpoint was written by and this one
// that forbid resuming it ("key: the checkpoint has X, this run has Y").
// Compared: every key of problem and algorithm (one added since the
// checkpoint was written as the value it implies); source (the synthetic keys
// only for the synthetic source; source.chunk_rows, which does not change
// the data, is free); streams.mode and the stream set; run.seed,
// run.warmup_steps, run.diagnostics_every. run.steps may differ (a run can
// be extended or shortened) but not fall below the timed steps done.
// Free: run.progress_every_s, run.restart_from, output.*.
inline std::vector<std::string> deck_differences(const nlohmann::json& manifest, const RunConfig& cfg,
                                                 std::int64_t total_streams_now, int nranks_now) {
  std::vector<std::string> out;
  const nlohmann::json& was = manifest.at("resolved_deck");
  const nlohmann::json& now = cfg.resolved;
  auto cmp = [&](const std::string& sec, const std::string& key) {
    const nlohmann::json a = was.contains(sec) && was[sec].contains(key) ? was[sec][key] : nlohmann::json();
    const nlohmann::json b = now.contains(sec) && now[sec].contains(key) ? now[sec][key] : nlohmann::json();
    if (a != b) out.push_back(sec + "." + key + ": the checkpoint has " + show(a) + ", this run has " + show(b));
  };
  auto keys = [&](const std::string& sec) {
    std::set<std::string> k;
    for (const auto* j : {&was, &now})
      if (j->contains(sec) && (*j)[sec].is_object())
        for (const auto& [name, v] : (*j)[sec].items()) k.insert(name);
    return k;
  };
  for (const auto& k : keys("problem")) cmp("problem", k);
  // Keys added after a checkpoint may have been written: a checkpoint
  // without one ran with the value it implies. Without init_max_samples
  // every stream started on init_samples, as its manifest's windows (none)
  // say, whatever the limit now; without the segment keys (section 9) it
  // ran sequentially.
  static const std::map<std::string, nlohmann::json> added = {
      {"init_max_samples", nullptr},   {"time_segments", 1},          {"segment_warmup", "auto"},
      {"segment_warmup_init", "data"}, {"segment_tolerance", "auto"}, {"segment_max_passes", "auto"},
      {"segment_gauge", "carry"}};
  for (const auto& k : keys("algorithm")) {
    const auto implied = added.find(k);
    if (implied == added.end() || (was.contains("algorithm") && was["algorithm"].contains(k))) {
      cmp("algorithm", k);
    } else if (!implied->second.is_null()) {
      const nlohmann::json b =
          now.contains("algorithm") && now["algorithm"].contains(k) ? now["algorithm"][k] : nlohmann::json();
      if (implied->second != b)
        out.push_back("algorithm." + k + ": the checkpoint has " + show(implied->second) +
                      " (written before the key existed), this run has " + show(b));
    }
  }
  const bool npy = now.contains("source") && now["source"].value("type", "") == "npy";
  static const std::set<std::string> synthetic_only = {"rank",        "lambda_max", "lambda_min", "noise",
                                                       "noise_range", "drift",      "mean_scale"};
  for (const auto& k : keys("source")) {
    if (k == "chunk_rows") continue;
    if (npy && synthetic_only.count(k) && was["source"].value("type", "") == "npy") continue;
    cmp("source", k);
  }
  cmp("streams", "mode");
  const std::string mode = now["streams"].value("mode", "");
  if (mode == "weak") cmp("streams", "per_rank");
  else cmp("streams", "total");
  const std::int64_t had = manifest.at("total_streams").get<std::int64_t>();
  if (had != total_streams_now)
    out.push_back("the stream set differs: the checkpoint holds streams 0.." + std::to_string(had - 1) + " (" +
                  std::to_string(had) + " streams on " + show(manifest.at("nranks")) + " ranks), this run has " +
                  std::to_string(total_streams_now) + " streams on " + std::to_string(nranks_now) + " ranks" +
                  (mode == "weak" ? " (weak mode: streams.per_rank x ranks; resume a weak-mode run on the same "
                                    "number of ranks, or use strong mode to change it)"
                                  : ""));
  for (const char* k : {"seed", "warmup_steps", "diagnostics_every"}) cmp("run", k);
  const std::int64_t done = manifest.at("position").at("timed_done").get<std::int64_t>();
  if (cfg.run.steps < done)
    out.push_back("run.steps: " + std::to_string(cfg.run.steps) + ", fewer than the " + std::to_string(done) +
                  " timed steps the checkpoint has already done");
  return out;
}

// Checks an input file against the manifest's record of it (input_record)
// for a restart in `dir`. Returns "" when it is the same file; throws
// CheckpointError (naming the file, the field that differs, recorded and
// found) when its size, header or the hashed content of the rows consumed
// differ, or NpyError when it is no longer a valid input. A file whose only
// difference is its modification time (touched, or rewritten with the same
// bytes) is accepted: the note returned says so.
inline std::string check_input(const nlohmann::json& rec, int d, const std::string& dir) {
  const std::string path = rec.at("path").get<std::string>();
  const std::string intro = path + ": the input file of stream " + show(rec.at("stream_id")) +
                            " is not the data checkpoint " + dir + " was written on: ";
  const std::string outro = "; restore the data the run started with, or start the run afresh";
  std::error_code ec;
  const std::uint64_t bytes = std::filesystem::file_size(path, ec);
  if (!ec && bytes != rec.at("bytes").get<std::uint64_t>())
    throw CheckpointError(intro + "size: the checkpoint recorded " + show(rec["bytes"]) + " bytes, the file has " +
                          std::to_string(bytes) + outro);
  const NpyFingerprint now = NpyStreamReader(path, d).fingerprint(rec.at("rows").get<std::int64_t>());
  if (hex64(now.header_fnv1a64) != rec.at("header_fnv1a64").get<std::string>())
    throw CheckpointError(intro + "header (fnv1a64 of the bytes before the data): the checkpoint recorded " +
                          show(rec["header_fnv1a64"]) + ", the file has " + hex64(now.header_fnv1a64) + outro);
  const std::string what = "the content of rows [0, " + show(rec["rows"]) + ") (fnv1a64 of " +
                           (now.sampled ? std::to_string(kFingerprintBlocks) + " blocks of them, " : "all of them, ") +
                           std::to_string(now.hashed_bytes) + " bytes)";
  if (hex64(now.rows_fnv1a64) != rec.at("rows_fnv1a64").get<std::string>())
    throw CheckpointError(intro + what + ": the checkpoint recorded " + show(rec["rows_fnv1a64"]) + ", the file has " +
                          hex64(now.rows_fnv1a64) + outro);
  if (now.mtime_ns == rec.at("mtime_ns").get<std::int64_t>()) return "";
  return path + ": modified since the checkpoint (at " + file_time_text(now.mtime_ns) + ", the checkpoint recorded " +
         show(rec["mtime"]) + "), but its size, header and " + what + " are those recorded: resuming on it";
}

// Collective: finds, reads and verifies the checkpoint `where` names for
// the run `cfg` on this communicator (see choose_checkpoint and
// deck_differences; every rank file is checked for presence, size,
// checksum, header, dtype, d, r and stream ids, and for an npy run every
// input file against its record (check_input), the files spread over the
// ranks). Returns "" and fills `plan` on every rank, or returns the error
// message (the same on every rank) naming the file at fault.
inline std::string prepare_restart(const RunConfig& cfg, const std::string& where, std::int64_t total_streams_now,
                                   MPI_Comm comm, RestartPlan& plan) {
  namespace fs = std::filesystem;
  int rank = 0, nranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  std::string error, text;
  if (rank == 0) {
    try {
      std::vector<std::string> skipped;
      const fs::path dir = choose_checkpoint(where, &skipped);
      for (const auto& s : skipped)
        plan.notes.push_back("skipping incomplete checkpoint " + s + " (no " + kManifestName + ")");
      nlohmann::json m = read_manifest(dir);
      const std::string mpath = (dir / kManifestName).string();
      const auto diffs = deck_differences(m, cfg, total_streams_now, nranks);
      if (!diffs.empty()) {
        std::string all;
        for (const auto& d : diffs) all += (all.empty() ? "" : "; ") + d;
        throw CheckpointError(mpath + ": the checkpoint does not match this run: " + all);
      }
      if (m.at("d").get<int>() != cfg.problem.d || m.at("r").get<int>() != cfg.problem.rank ||
          m.at("dtype").get<std::string>() != to_string(cfg.problem.dtype))
        throw CheckpointError(mpath + ": the checkpoint holds d=" + show(m["d"]) + ", r=" + show(m["r"]) + ", " +
                              show(m["dtype"]) + " states, this run has d=" + std::to_string(cfg.problem.d) +
                              ", r=" + std::to_string(cfg.problem.rank) + ", " + to_string(cfg.problem.dtype));
      std::set<std::uint64_t> ids;
      for (const auto& f : m.at("files")) {
        const std::string fp = (dir / f.at("name").get<std::string>()).string();
        std::error_code ec;
        if (!fs::exists(fp, ec)) throw CheckpointError(fp + ": missing (listed in " + mpath + ")");
        const auto size = fs::file_size(fp, ec);
        if (ec || size != f.at("bytes").get<std::uint64_t>())
          throw CheckpointError(fp + ": " + std::to_string(size) + " bytes, the manifest records " + show(f["bytes"]) +
                                " (truncated or replaced)");
        for (const auto& id : f.at("stream_ids")) ids.insert(id.get<std::uint64_t>());
      }
      if (std::int64_t(ids.size()) != m["total_streams"].get<std::int64_t>() ||
          (!ids.empty() && std::int64_t(*ids.rbegin()) != std::int64_t(ids.size()) - 1))
        throw CheckpointError(mpath + ": garbled manifest (the files do not hold streams 0.." +
                              show(m["total_streams"]) + " exactly once)");
      const nlohmann::json b = build_info();
      for (const char* k : {"git_commit", "build_type", "kokkos_execution_space"})
        if (m["build"].value(k, "") != b.value(k, ""))
          plan.notes.push_back(std::string("the checkpoint was written by another build (") + k + " " +
                               m["build"].value(k, "?") + ", this build " + b.value(k, "?") +
                               "): the resumed run is not guaranteed to be bitwise equal to an uninterrupted one");
      plan.dir = dir.string();
      text = m.dump();
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  error = detail::agree_on_error(error, comm);
  if (!error.empty()) return error;
  text = detail::broadcast_string(text, 0, comm);
  plan.dir = detail::broadcast_string(plan.dir, 0, comm);
  plan.manifest = nlohmann::json::parse(text);
  // Every file's checksum and header, the files spread over the ranks.
  const auto& files = plan.manifest["files"];
  for (std::size_t i = std::size_t(rank); i < files.size() && error.empty(); i += std::size_t(nranks)) {
    const std::string fp = (fs::path(plan.dir) / files[i]["name"].get<std::string>()).string();
    try {
      const std::string bytes = read_whole_file(fp);
      const std::string sum = hex64(fnv1a64(bytes.data(), bytes.size()));
      if (sum != files[i]["fnv1a64"].get<std::string>())
        throw CheckpointError(fp + ": checksum mismatch (the manifest records " +
                              files[i]["fnv1a64"].get<std::string>() + ", the file has " + sum +
                              "): the file is corrupted");
      const StreamRecords rec = parse_rank_file(fp, bytes);
      if (rec.dtype != plan.manifest["dtype"] || rec.d != plan.manifest["d"] || rec.r != plan.manifest["r"])
        throw CheckpointError(fp + ": holds " + rec.dtype + " d=" + std::to_string(rec.d) + " r=" +
                              std::to_string(rec.r) + " states, the manifest says " + show(plan.manifest["dtype"]) +
                              " d=" + show(plan.manifest["d"]) + " r=" + show(plan.manifest["r"]));
      if (nlohmann::json(rec.ids) != files[i]["stream_ids"])
        throw CheckpointError(fp + ": holds other streams than the manifest lists");
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  error = detail::agree_on_error(error, comm);
  if (!error.empty() || cfg.source.type != "npy") return error;
  // The input files, spread over the ranks too. A checkpoint of a build that
  // did not record them is accepted: refusing it would strand the runs it
  // holds, and the checkpoints written from here on record them.
  const std::string mpath = plan.dir + "/" + kManifestName;
  if (!plan.manifest.contains("inputs")) {
    plan.notes.push_back(mpath +
                         " records no fingerprints of the input files (written by an earlier build): the "
                         "files are not checked against the data the run started with; the checkpoints this run "
                         "writes record them");
    return "";
  }
  const auto& inputs = plan.manifest["inputs"];
  if (!inputs.is_array() || inputs.size() != plan.manifest["total_streams"].get<std::size_t>())
    return mpath + ": garbled manifest ('inputs' does not record one file per stream)";
  std::string notes;
  for (std::size_t i = std::size_t(rank); i < inputs.size() && error.empty(); i += std::size_t(nranks)) {
    try {
      const std::string note = check_input(inputs[i], cfg.problem.d, plan.dir);
      if (!note.empty()) notes += note + "\n";
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  error = detail::agree_on_error(error, comm);
  for (const std::string& rank_notes : detail::gather_strings(notes, comm))
    for (std::size_t from = 0, to; (to = rank_notes.find('\n', from)) != std::string::npos; from = to + 1)
      plan.notes.push_back(rank_notes.substr(from, to - from));
  return error;
}

// What load_streams restores besides the batch: per local stream, whether
// its npy source was frozen by a non-finite row, and the non-finite rows met
// before the checkpoint (JSON: stream_id, path, row, message).
struct LoadedSources {
  std::vector<unsigned char> frozen;
  nlohmann::json data_errors = nlohmann::json::array();
};

// Restores this rank's streams (sb.stream_ids, any subset of the
// checkpoint's streams) from the rank files that hold them. Not collective.
// Throws CheckpointError naming the file.
template <class Scalar, class Exec>
LoadedSources load_streams(const RestartPlan& plan, StreamBatch<Scalar, Exec>& sb) {
  namespace fs = std::filesystem;
  const std::size_t B = std::size_t(sb.batch);
  // Where each local stream is: (file index, position in that file).
  std::vector<std::pair<long, long>> where(B, {-1, -1});
  const auto& files = plan.manifest.at("files");
  std::unordered_map<std::uint64_t, std::size_t> local_index;
  for (std::size_t b = 0; b < B; ++b) local_index[sb.stream_ids[b]] = b;
  for (std::size_t fi = 0; fi < files.size(); ++fi) {
    const auto& ids = files[fi].at("stream_ids");
    for (std::size_t p = 0; p < ids.size(); ++p) {
      const auto it = local_index.find(ids[p].get<std::uint64_t>());
      if (it != local_index.end()) where[it->second] = {long(fi), long(p)};
    }
  }
  for (std::size_t b = 0; b < B; ++b)
    if (where[b].first < 0)
      throw CheckpointError(plan.dir + "/" + kManifestName + ": stream " + std::to_string(sb.stream_ids[b]) +
                            " is in no rank file of the checkpoint");
  const auto expected = expected_fields<Scalar, Exec>();
  std::vector<Field> local;
  for (const auto& [name, type] : expected) local.push_back(Field{name, type, 0, {}});
  LoadedSources out;
  out.frozen.assign(B, 0);
  std::set<long> needed;
  for (const auto& w : where) needed.insert(w.first);
  // Gather field slices stream by stream, in local order.
  std::vector<std::vector<std::vector<unsigned char>>> slices(expected.size(),
                                                              std::vector<std::vector<unsigned char>>(B));
  for (long fi : needed) {
    const std::string fp = (fs::path(plan.dir) / files[std::size_t(fi)].at("name").get<std::string>()).string();
    const std::string bytes = read_whole_file(fp);
    const std::string sum = hex64(fnv1a64(bytes.data(), bytes.size()));
    if (sum != files[std::size_t(fi)].at("fnv1a64").get<std::string>())
      throw CheckpointError(fp + ": checksum mismatch (the manifest records " +
                            files[std::size_t(fi)]["fnv1a64"].get<std::string>() + ", the file has " + sum +
                            "): the file is corrupted");
    const StreamRecords rec = parse_rank_file(fp, bytes);
    if (rec.d != sb.d || rec.r != sb.r || rec.dtype != (std::is_same<Scalar, float>::value ? "float" : "double"))
      throw CheckpointError(fp + ": holds " + rec.dtype + " d=" + std::to_string(rec.d) +
                            " r=" + std::to_string(rec.r) + " states, this run has d=" + std::to_string(sb.d) +
                            " r=" + std::to_string(sb.r));
    if (rec.fields.size() != expected.size())
      throw CheckpointError(fp + ": holds " + std::to_string(rec.fields.size()) + " fields per stream, this build " +
                            std::to_string(expected.size()) + " (written by another version?)");
    for (std::size_t k = 0; k < expected.size(); ++k) {
      const Field& f = rec.fields[k];
      if (f.name != expected[k].first || f.type != expected[k].second)
        throw CheckpointError(fp + ": field " + std::to_string(k) + " is '" + f.name + "' (" + f.type +
                              "), this build expects '" + expected[k].first + "' (" + expected[k].second + ")");
      const std::size_t stride = std::size_t(f.per_stream) * type_size(f.type);
      local[k].per_stream = f.per_stream;
      for (std::size_t b = 0; b < B; ++b)
        if (where[b].first == fi)
          slices[k][b].assign(f.bytes.begin() + long(stride * std::size_t(where[b].second)),
                              f.bytes.begin() + long(stride * std::size_t(where[b].second + 1)));
    }
    for (const auto& e : rec.data_errors) {
      const auto it = local_index.find(e.at("stream_id").get<std::uint64_t>());
      if (it != local_index.end() && where[it->second].first == fi) out.data_errors.push_back(e);
    }
  }
  for (std::size_t k = 0; k < expected.size(); ++k)
    for (std::size_t b = 0; b < B; ++b)
      local[k].bytes.insert(local[k].bytes.end(), slices[k][b].begin(), slices[k][b].end());
  std::size_t k = 0;
  for_each_state_view(sb, [&](const char*, const auto& v) { restore_view(local[k++], v); });
  ++sb.state_writes;
  for (std::size_t b = 0; b < B; ++b) out.frozen[b] = local.back().bytes[b];
  return out;
}

}  // namespace ckpt
}  // namespace mosaic
