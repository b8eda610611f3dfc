// The final states of a run as a state set: one NumPy file per array,
// gathered to rank 0, with a manifest written last (output.state_dir;
// analysis/states.py reads it).
#pragma once

#include <mpi.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mosaic/config/run_config.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/engine/transfer.hpp"
#include "mosaic/io/checkpoint.hpp"
#include "mosaic/io/environment.hpp"
#include "mosaic/io/result_writer.hpp"
#include "mosaic/sources/npy.hpp"
#include "mosaic/util/atomic_file.hpp"
#include "mosaic/util/mpi_collectives.hpp"

namespace mosaic::detail {

// The manifest of a state set, written last (write_state_files).
constexpr const char* kStateManifestName = "states.json";

// The staging directory of a state set being written (write_state_files).
constexpr const char* kStagingName = ".incoming";

// Every file name a state set may hold: a name of the previous set that the
// new one lacks (psi.npy after a noise: diagonal run) is removed at the swap.
inline const std::vector<std::string>& state_file_names() {
  static const std::vector<std::string> names = {"mu.npy",         "U.npy",     "S.npy",      "s2.npy",
                                                 "stream_ids.npy", "steps.npy", "status.npy", "psi.npy"};
  return names;
}

// Replaces the state set in `dir` by the complete one staged in `staging`
// (its files listed in `files`, its manifest written): renames only.
inline void swap_in_state_set(const std::filesystem::path& staging, const std::string& dir,
                              const nlohmann::json& files) {
  namespace fs = std::filesystem;
  const fs::path target(dir);
  // Past the old manifest's removal a failure leaves `dir` without a
  // manifest (incomplete, refused by readers): the message says what is where.
  auto rename = [&](const fs::path& from, const fs::path& to) {
    if (::rename(from.c_str(), to.c_str()) != 0)
      throw std::runtime_error(from.string() + ": cannot move the new state file into place as " + to.string() + " (" +
                               std::strerror(errno) + "); " + dir +
                               " now holds an incomplete set (no manifest), the new set's remaining files are in " +
                               staging.string());
  };
  const fs::path manifest = target / kStateManifestName;
  if (::unlink(manifest.c_str()) != 0 && errno != ENOENT)
    throw std::runtime_error(manifest.string() + ": cannot remove the previous state set's manifest (" +
                             std::strerror(errno) + "); the previous set is kept, the new one is in " +
                             staging.string());
  fsync_directory(dir);
  for (const std::string& name : state_file_names()) {
    bool in_new_set = false;
    for (const auto& f : files) in_new_set = in_new_set || f["name"].get<std::string>() == name;
    if (in_new_set) {
      rename(staging / name, target / name);
    } else if (::unlink((target / name).c_str()) != 0 && errno != ENOENT) {
      throw std::runtime_error((target / name).string() + ": cannot remove the previous set's file (" +
                               std::strerror(errno) + "); " + dir + " now holds an incomplete set (no manifest)");
    }
  }
  fsync_directory(dir);  // every file in place before the manifest says so
  rename(staging / kStateManifestName, target / kStateManifestName);
  fsync_directory(dir);
  std::error_code ec;
  fs::remove(staging, ec);
}

// The final state of every stream, gathered to rank 0 (rank order = stream id
// order: each rank owns a contiguous block of ids) and written by rank 0 into
// `dir` as NumPy files, each atomically: mu (streams, d), U (streams, d, r)
// row-major, S (streams, r, r), s2 (streams,), stream_ids (uint64), steps
// (int64: MOSAIC steps taken, init excluded), status (int64: 0 = healthy,
// else the BreakdownCode that froze the stream, or stream_ended for a
// stream whose data ended before the run's) and, with noise: diagonal,
// psi (streams, d): the noise profile that U, S and s2 are whitened by
// (ALGORITHM.md 8.2; a coordinate's noise variance is s2 psi_j, the
// data-coordinate subspace span(Psi^1/2 U)). Collective. Returns
// {"directory", "files", "manifest"} on rank 0.
//
// The set is replaced as a whole, never destroyed by a failed write: the new
// files and their manifest states.json (the run that wrote the set; each
// file's name, shape, size and CRC-32) are written first into the staging
// directory dir/.incoming beside the previous set, which stays complete and
// readable if that fails (a full disk, a quota, a crash). Only a complete
// staged set is swapped in: the old manifest removed, durably, each file
// renamed over its old one, the manifest renamed in last. Renames within one
// file system need no space, so a full disk cannot stop the swap half-way; a
// crash inside it leaves a directory without a manifest, which readers
// refuse as incomplete (analysis/states.py), and the new set's rest with
// its manifest in .incoming. Files rather than the directory are swapped: a
// directory cannot be renamed over a non-empty one atomically (only
// renameat2 RENAME_EXCHANGE, which NFS lacks), and the state directory also
// holds its lock file (dir_lock.hpp) and, for a sweep, the other points'
// directories.
template <class Scalar, class Exec>
nlohmann::json write_state_files(const StreamBatch<Scalar, Exec>& batch, const RunConfig& cfg, const std::string& dir,
                                 MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const int B = batch.batch, d = batch.d, r = batch.r;
  const long long per_stream = (long long)d * r;
  const long long total_streams = allreduce((long long)B, MPI_SUM, comm);
  if (total_streams * per_stream > (long long)INT_MAX)
    throw std::runtime_error("output.state_dir: the states of " + std::to_string(total_streams) + " streams (d x r = " +
                             std::to_string(per_stream) + ") are too large to gather to rank 0 in one message");
  std::vector<Scalar> mu, U, S, s2, psi;
  std::vector<std::int64_t> steps, status;
  const auto h_status = transfer::to_host(batch.status);
  const auto h_psi = transfer::to_host(batch.psi);  // B x 0 with isotropic noise
  for (int b = 0; b < B; ++b) {
    const ReferenceState<Scalar> st = batch.to_host(b);
    for (std::size_t i = 0; i < h_psi.extent(1); ++i) psi.push_back(h_psi(b, i));
    mu.insert(mu.end(), st.mu.begin(), st.mu.end());
    U.insert(U.end(), st.U.begin(), st.U.end());
    S.insert(S.end(), st.S.begin(), st.S.end());
    s2.push_back(st.s2);
    steps.push_back(st.steps);
    status.push_back(h_status(b));
  }
  std::vector<std::uint64_t> ids(batch.stream_ids.begin(), batch.stream_ids.end());
  const auto all_mu = gather_to_root(mu, mpi_type<Scalar>(), comm);
  const auto all_U = gather_to_root(U, mpi_type<Scalar>(), comm);
  const auto all_S = gather_to_root(S, mpi_type<Scalar>(), comm);
  const auto all_s2 = gather_to_root(s2, mpi_type<Scalar>(), comm);
  const auto all_steps = gather_to_root(steps, mpi_type<std::int64_t>(), comm);
  const auto all_status = gather_to_root(status, mpi_type<std::int64_t>(), comm);
  const auto all_ids = gather_to_root(ids, mpi_type<std::uint64_t>(), comm);
  const auto all_psi = gather_to_root(psi, mpi_type<Scalar>(), comm);
  if (rank != 0) return nlohmann::json::object();
  const std::int64_t n = std::int64_t(all_ids.size());
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot create the state directory: " + ec.message());
  const fs::path staging = fs::path(dir) / kStagingName;
  fs::remove_all(staging, ec);  // a crashed run's leftovers (the directory lock makes them nobody's)
  fs::create_directory(staging, ec);
  if (ec) throw std::runtime_error(staging.string() + ": cannot create the staging directory: " + ec.message());
  nlohmann::json files = nlohmann::json::array();
  try {
    auto put = [&](const char* name, const std::vector<std::int64_t>& shape, const auto* data) {
      const NpyWritten w = write_npy((staging / name).string(), shape, data);
      files.push_back({{"name", name}, {"shape", shape}, {"bytes", w.bytes}, {"crc32", w.crc32}});
    };
    put("mu.npy", {n, d}, all_mu.data());
    put("U.npy", {n, d, r}, all_U.data());
    put("S.npy", {n, r, r}, all_S.data());
    put("s2.npy", {n}, all_s2.data());
    put("stream_ids.npy", {n}, all_ids.data());
    put("steps.npy", {n}, all_steps.data());
    put("status.npy", {n}, all_status.data());
    if (batch.diagonal_noise()) put("psi.npy", {n, d}, all_psi.data());
    const nlohmann::json m = {
        {"format", "mosaic-states"},
        {"format_version", 1},
        {"written_utc", utc_timestamp()},
        {"run",
         {{"deck_path", cfg.deck_path},
          {"host", host_name()},
          {"pid", (long long)::getpid()},
          {"build", ckpt::build_info()},
          {"resolved_deck", cfg.resolved}}},
        {"dtype", to_string(cfg.problem.dtype)},
        {"streams", n},
        {"d", d},
        {"r", r},
        {"checksum", "crc32 (zlib.crc32) of every byte of each file"},
        {"files", files},
    };
    write_json_atomically((staging / kStateManifestName).string(), m);
    fsync_directory(staging.string());
  } catch (const std::exception& e) {
    fs::remove_all(staging, ec);
    throw std::runtime_error(std::string(e.what()) + "; the new state set was not completed, and the previous set in " +
                             dir + " (if any) is kept unchanged");
  }
  swap_in_state_set(staging, dir, files);
  nlohmann::json names = nlohmann::json::array();
  for (const auto& f : files) names.push_back(f["name"]);
  return {{"directory", dir}, {"files", names}, {"manifest", kStateManifestName}};
}

// The directory a run writes its states into: output.state_dir itself, or
// state_dir/point_<index> for each point of a sweep of more than one point.
inline std::string state_dir_for(const RunConfig& cfg) {
  if (cfg.output.state_dir.empty()) return "";
  const auto& sw = cfg.resolved.contains("sweep") ? cfg.resolved["sweep"] : nlohmann::json();
  if (sw.is_object() && sw.value("count", std::size_t(1)) > 1)
    return (std::filesystem::path(cfg.output.state_dir) / ("point_" + std::to_string(sw["index"].get<std::size_t>())))
        .string();
  return cfg.output.state_dir;
}

}  // namespace mosaic::detail
