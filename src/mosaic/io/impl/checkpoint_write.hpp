// Writing a checkpoint (collective) and pruning the older ones
// (checkpoint.hpp: "Writing").
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/io/environment.hpp"
#include "mosaic/io/impl/checkpoint_format.hpp"
#include "mosaic/io/result_writer.hpp"
#include "mosaic/sources/npy.hpp"
#include "mosaic/sources/stream_source.hpp"
#include "mosaic/util/atomic_file.hpp"
#include "mosaic/util/fnv1a.hpp"
#include "mosaic/util/mpi_collectives.hpp"

namespace mosaic {
namespace ckpt {

// Removes a checkpoint directory: manifest first, so a crash half-way leaves
// an incomplete checkpoint, never a damaged "complete" one.
inline void remove_checkpoint(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::remove(dir / kManifestName, ec);
  std::filesystem::remove_all(dir, ec);
}

// After the checkpoint numbered `current` is complete: removes the
// checkpoints numbered above it (left by a timeline that was abandoned by a
// restart from an older checkpoint), the incomplete ones below it, and the
// complete ones beyond the `keep` newest.
inline void prune(const std::string& root, std::int64_t current, int keep) {
  int kept = 0;
  for (const auto& [n, path] : list_checkpoints(root)) {
    if (n > current) {
      remove_checkpoint(path);
    } else if (n == current) {
      ++kept;
    } else if (!is_complete(path) || kept >= keep) {
      remove_checkpoint(path);
    } else {
      ++kept;
    }
  }
}

// ---------------------------------------------------------------- writing

// What the driver adds to a checkpoint. `manifest_extra` (used on rank 0):
// resolved_deck, deck_path, position, segments, diagnostics_series.
struct WriteRequest {
  std::string root;
  int keep = 2;
  std::int64_t number = 0;  // the sample index: names the directory
  nlohmann::json manifest_extra;
};

// The manifest's record of one input file (SourcePosition::inputs).
inline nlohmann::json input_record(const SourceInput& in) {
  const NpyFingerprint& f = in.file;
  return {{"stream_id", in.stream_id},
          {"path", f.path},
          {"bytes", f.file_bytes},
          {"mtime_ns", f.mtime_ns},
          {"mtime", file_time_text(f.mtime_ns)},
          {"header_fnv1a64", hex64(f.header_fnv1a64)},
          {"rows", f.rows},
          {"hashed_bytes", f.hashed_bytes},
          {"rows_fnv1a64", hex64(f.rows_fnv1a64)}};
}

// Collective: writes one checkpoint (see the file comment) and returns its
// directory. `frozen` and `data_errors`: this rank's npy source state;
// `inputs`: its input files (input_record); all empty for the synthetic
// source.
template <class Scalar, class Exec>
std::string write_checkpoint(const WriteRequest& req, const StreamBatch<Scalar, Exec>& sb,
                             const std::vector<unsigned char>& frozen, const nlohmann::json& data_errors, MPI_Comm comm,
                             const nlohmann::json& inputs = nlohmann::json::array()) {
  namespace fs = std::filesystem;
  int rank = 0, nranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  const fs::path dir = fs::path(req.root) / dir_name(req.number);
  if (rank == 0) {
    // A directory of that name is an incomplete leftover (or, after a restart
    // from an older checkpoint, one of an abandoned timeline): start afresh.
    std::error_code ec;
    if (fs::exists(dir, ec)) remove_checkpoint(dir);
    fs::create_directories(dir, ec);
    if (ec) throw std::runtime_error(dir.string() + ": cannot create the checkpoint directory: " + ec.message());
  }
  detail::counted_mpi(0, [&] { return MPI_Barrier(comm); });

  const std::string file = (dir / rank_file_name(rank)).string();
  if (const char* f = std::getenv("MOSAIC_TEST_FAIL_CHECKPOINT_RANK"); f && *f && std::atoi(f) == rank)
    throw std::runtime_error("cannot write checkpoint file " + file +
                             ": simulated failure (MOSAIC_TEST_FAIL_CHECKPOINT_RANK=" + f + ")");
  const StreamRecords rec = records_from_batch(sb, frozen, data_errors);
  const std::string bytes = serialize(rec, rank, nranks);
  write_file_atomically(file, bytes);
  const nlohmann::json entry = {{"name", rank_file_name(rank)},
                                {"rank", rank},
                                {"stream_ids", rec.ids},
                                {"bytes", bytes.size()},
                                {"fnv1a64", hex64(fnv1a64(bytes.data(), bytes.size()))}};
  const auto entries = detail::gather_strings(entry.dump(), comm);
  const auto rank_inputs = detail::gather_strings(inputs.dump(), comm);
  if (rank == 0) {
    nlohmann::json m = req.manifest_extra;
    m["format"] = "mosaic-checkpoint";
    m["format_version"] = kFormatVersion;
    m["created_utc"] = utc_timestamp();
    m["build"] = build_info();
    m["dtype"] = rec.dtype;
    m["d"] = rec.d;
    m["r"] = rec.r;
    m["nranks"] = nranks;
    m["checksum"] = "fnv1a64 of every byte of each file";
    nlohmann::json files = nlohmann::json::array();
    std::int64_t total = 0;
    for (const auto& e : entries) {
      files.push_back(nlohmann::json::parse(e));
      total += std::int64_t(files.back()["stream_ids"].size());
    }
    m["files"] = files;
    m["total_streams"] = total;
    nlohmann::json all_inputs = nlohmann::json::array();
    for (const auto& r : rank_inputs)
      for (auto& in : nlohmann::json::parse(r)) all_inputs.push_back(std::move(in));
    std::sort(all_inputs.begin(), all_inputs.end(), [](const auto& a, const auto& b) {
      return a["stream_id"].template get<std::uint64_t>() < b["stream_id"].template get<std::uint64_t>();
    });
    m["inputs"] = all_inputs;
    m["manifest_fnv1a64"] = manifest_checksum(m);
    write_file_atomically((dir / kManifestName).string(), m.dump(1) + "\n");
    prune(req.root, req.number, req.keep);
  }
  return dir.string();
}

}  // namespace ckpt
}  // namespace mosaic
