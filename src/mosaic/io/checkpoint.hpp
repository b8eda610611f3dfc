// Checkpoints of a run and restarts from them (docs/CHECKPOINT.md).
//
// Layout under output.checkpoint.dir (ROOT):
//   ROOT/ckpt_<sample index, 12 digits>/rank_<k>.bin   one file per writing rank
//   ROOT/ckpt_<...>/MANIFEST.json                      written last, by rank 0
//   ROOT/mosaic.lock                                   rank 0's lock while a run uses ROOT (dir_lock.hpp)
// A checkpoint is complete iff its MANIFEST.json exists; it is good iff the
// manifest parses, its own checksum matches, and every rank file it lists
// has the recorded size and FNV-1a 64-bit checksum.
//
// Rank file (little-endian):
//   8 bytes   magic "MOSCKPT1"
//   8 bytes   u64 H: length of the header
//   H bytes   header, JSON: format_version, rank, nranks, dtype, d, r,
//             stream_ids (global ids, in the order of the data), fields
//             [{name, type (f4 f8 i4 i8 u1), per_stream}], data_errors
//   data      every field in header order, each stream after stream, each
//             stream's values in row-major order of the view's trailing
//             indices (U(b, i, j): i-major whatever the device layout)
// Every per-stream view of StreamBatch is stored (for_each_state_view), so a
// stream resumes bit for bit, and per stream, keyed by its global id, so a
// strong-mode restart on another number of ranks redistributes the streams.
//
// Writing (write_checkpoint, collective): rank 0 prepares the directory;
// every rank writes its file atomically (temporary name, fsync, rename,
// fsync of the directory: write_file_atomically); the sizes and checksums
// are gathered to rank 0, which then writes the manifest atomically: the
// commit point. The manifest also records the fingerprint of every input
// file of an npy run ("inputs"), which a restart checks (check_input). Only after that are older checkpoints removed (prune). A
// rank that fails throws; the driver turns that into MPI_Abort with the rank
// and the reason, so the other ranks never wait forever.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include "mosaic/util/atomic_file.hpp"
#include "mosaic/io/build_info.hpp"
#include "mosaic/io/environment.hpp"
#include "mosaic/util/fnv1a.hpp"
#include "mosaic/util/mpi_collectives.hpp"
#include "mosaic/sources/npy.hpp"
#include "mosaic/io/result_writer.hpp"
#include "mosaic/config/run_config.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/sources/stream_source.hpp"
#include "mosaic/engine/transfer.hpp"

namespace mosaic {

// A checkpoint that cannot be used; what() names the file.
struct CheckpointError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace ckpt {

constexpr int kFormatVersion = 2;  // 2: unresolved_residual_steps
constexpr char kMagic[8] = {'M', 'O', 'S', 'C', 'K', 'P', 'T', '1'};
constexpr const char* kManifestName = "MANIFEST.json";
constexpr const char* kDirPrefix = "ckpt_";

inline std::string dir_name(std::int64_t sample_index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%012lld", kDirPrefix, (long long)sample_index);
  return buf;
}
inline std::string rank_file_name(int rank) { return "rank_" + std::to_string(rank) + ".bin"; }

// The checkpoints under `root`, (number, path), newest (largest number) first.
inline std::vector<std::pair<std::int64_t, std::filesystem::path>> list_checkpoints(const std::string& root) {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::int64_t, fs::path>> out;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::string prefix = kDirPrefix;
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 18) continue;
    std::error_code dir_ec;
    if (!fs::is_directory(it->path(), dir_ec)) continue;
    out.emplace_back(std::stoll(digits), it->path());
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  return out;
}

inline bool is_complete(const std::filesystem::path& dir) {
  std::error_code ec;
  return std::filesystem::exists(dir / kManifestName, ec);
}

// ---------------------------------------------------------------- fields

struct Field {
  std::string name, type;
  std::int64_t per_stream = 1;
  std::vector<unsigned char> bytes;  // B x per_stream values, stream after stream
};

template <class T>
const char* type_code() {
  if constexpr (std::is_same<T, float>::value) return "f4";
  else if constexpr (std::is_same<T, double>::value) return "f8";
  else if constexpr (std::is_same<T, std::int64_t>::value) return "i8";
  else if constexpr (std::is_same<T, int>::value) return "i4";
  else if constexpr (std::is_same<T, unsigned char>::value) return "u1";
  else static_assert(sizeof(T) == 0, "checkpoint: unsupported element type");
}
inline std::size_t type_size(const std::string& code) {
  if (code == "f4" || code == "i4") return 4;
  if (code == "f8" || code == "i8") return 8;
  if (code == "u1") return 1;
  return 0;
}

// Every per-stream view of a StreamBatch: the complete state of a stream
// (state, counters, breakdown record, maintained factor). A view added to
// StreamBatch must be added here, or a restart would lose it.
template <class Batch, class F>
void for_each_state_view(Batch& sb, F&& f) {
  f("mu", sb.mu);
  f("U", sb.U);
  f("S", sb.S);
  f("s2", sb.s2);
  f("steps", sb.steps);
  f("clamped_steps", sb.clamped_steps);
  f("breakdown_step", sb.breakdown_step);
  f("reorthonormalizations", sb.reorthonormalizations);
  f("unresolved_residual_steps", sb.unresolved_residual_steps);
  f("status", sb.status);
  f("Rfac", sb.Rfac);
  f("factor_age", sb.factor_age);
  f("refactors", sb.refactors);
  f("solve_drift", sb.solve_drift);
}

template <class View>
Field extract_view(const std::string& name, const View& v) {
  using T = typename View::non_const_value_type;
  const auto h = transfer::to_host(v);
  constexpr int rank = int(View::rank);
  const std::size_t B = v.extent(0);
  std::int64_t per = 1;
  for (int k = 1; k < rank; ++k) per *= std::int64_t(v.extent(k));
  Field f{name, type_code<T>(), per, {}};
  f.bytes.resize(B * std::size_t(per) * sizeof(T));
  std::vector<T> vals;
  vals.reserve(B * std::size_t(per));
  for (std::size_t b = 0; b < B; ++b) {
    if constexpr (rank == 1) {
      vals.push_back(h(b));
    } else if constexpr (rank == 2) {
      for (std::size_t i = 0; i < v.extent(1); ++i) vals.push_back(h(b, i));
    } else {
      for (std::size_t i = 0; i < v.extent(1); ++i)
        for (std::size_t j = 0; j < v.extent(2); ++j) vals.push_back(h(b, i, j));
    }
  }
  if (!vals.empty()) std::memcpy(f.bytes.data(), vals.data(), f.bytes.size());
  return f;
}

template <class View>
void restore_view(const Field& f, const View& v) {
  using T = typename View::non_const_value_type;
  constexpr int rank = int(View::rank);
  const std::size_t B = v.extent(0);
  std::vector<T> vals(f.bytes.size() / sizeof(T));
  if (!vals.empty()) std::memcpy(vals.data(), f.bytes.data(), f.bytes.size());
  const auto h = transfer::host_buffer(v);
  std::size_t n = 0;
  for (std::size_t b = 0; b < B; ++b) {
    if constexpr (rank == 1) {
      h(b) = vals[n++];
    } else if constexpr (rank == 2) {
      for (std::size_t i = 0; i < v.extent(1); ++i) h(b, i) = vals[n++];
    } else {
      for (std::size_t i = 0; i < v.extent(1); ++i)
        for (std::size_t j = 0; j < v.extent(2); ++j) h(b, i, j) = vals[n++];
    }
  }
  transfer::copy_from_host(v, h);
}

// The streams of one rank, on the host: the fields of for_each_state_view,
// then source_frozen (u1: an npy stream frozen by a non-finite row), plus
// the non-finite rows met so far (JSON: stream_id, path, row, message).
struct StreamRecords {
  std::string dtype;
  int d = 0, r = 0;
  std::vector<std::uint64_t> ids;
  std::vector<Field> fields;
  nlohmann::json data_errors = nlohmann::json::array();
};

template <class Scalar, class Exec>
StreamRecords records_from_batch(const StreamBatch<Scalar, Exec>& sb, const std::vector<unsigned char>& frozen,
                                 const nlohmann::json& data_errors) {
  StreamRecords rec;
  rec.dtype = std::is_same<Scalar, float>::value ? "float" : "double";
  rec.d = sb.d;
  rec.r = sb.r;
  rec.ids = sb.stream_ids;
  for_each_state_view(sb, [&](const char* name, const auto& v) { rec.fields.push_back(extract_view(name, v)); });
  Field fz{"source_frozen", "u1", 1, std::vector<unsigned char>(std::size_t(sb.batch), 0)};
  for (std::size_t b = 0; b < fz.bytes.size() && b < frozen.size(); ++b) fz.bytes[b] = frozen[b] ? 1 : 0;
  rec.fields.push_back(std::move(fz));
  rec.data_errors = data_errors;
  return rec;
}

// The names and types of the fields a rank file of this build holds.
template <class Scalar, class Exec>
std::vector<std::pair<std::string, std::string>> expected_fields() {
  std::vector<std::pair<std::string, std::string>> out;
  StreamBatch<Scalar, Exec>* none = nullptr;
  auto visit = [&](const char* name, const auto& v) {
    using T = typename std::decay_t<decltype(v)>::non_const_value_type;
    out.emplace_back(name, type_code<T>());
  };
  // Only the types are needed: visit a batch that is never dereferenced.
  struct Types {
    decltype(none->mu) mu;
    decltype(none->U) U;
    decltype(none->S) S;
    decltype(none->s2) s2;
    decltype(none->steps) steps, clamped_steps, breakdown_step, reorthonormalizations, unresolved_residual_steps;
    decltype(none->status) status;
    decltype(none->Rfac) Rfac;
    decltype(none->factor_age) factor_age, refactors;
    decltype(none->solve_drift) solve_drift;
  } t;
  for_each_state_view(t, visit);
  out.emplace_back("source_frozen", "u1");
  return out;
}

// ---------------------------------------------------------------- rank files

inline std::string serialize(const StreamRecords& rec, int rank, int nranks) {
  nlohmann::json fields = nlohmann::json::array();
  std::size_t data_bytes = 0;
  for (const auto& f : rec.fields) {
    fields.push_back({{"name", f.name}, {"type", f.type}, {"per_stream", f.per_stream}});
    data_bytes += f.bytes.size();
  }
  const nlohmann::json header = {
      {"format_version", kFormatVersion}, {"rank", rank},      {"nranks", nranks},
      {"dtype", rec.dtype},               {"d", rec.d},         {"r", rec.r},
      {"stream_ids", rec.ids},            {"fields", fields},   {"data_errors", rec.data_errors},
  };
  const std::string h = header.dump();
  std::string out;
  out.reserve(16 + h.size() + data_bytes);
  out.append(kMagic, 8);
  const std::uint64_t hl = h.size();
  for (int i = 0; i < 8; ++i) out += char((hl >> (8 * i)) & 0xff);
  out += h;
  for (const auto& f : rec.fields) out.append(reinterpret_cast<const char*>(f.bytes.data()), f.bytes.size());
  return out;
}

// Parses a rank file's bytes; throws CheckpointError naming `path`.
inline StreamRecords parse_rank_file(const std::string& path, const std::string& bytes) {
  auto bad = [&](const std::string& what) { throw CheckpointError(path + ": " + what); };
  if (bytes.size() < 16 || std::memcmp(bytes.data(), kMagic, 8) != 0)
    bad("not a MOSAIC checkpoint rank file (bad magic" + std::string(bytes.size() < 16 ? "; file too short)" : ")"));
  std::uint64_t hl = 0;
  for (int i = 0; i < 8; ++i) hl |= std::uint64_t((unsigned char)bytes[8 + i]) << (8 * i);
  if (hl > bytes.size() - 16) bad("truncated: the header needs " + std::to_string(hl) + " bytes, the file has " +
                                  std::to_string(bytes.size() - 16) + " after the preamble");
  nlohmann::json h;
  try {
    h = nlohmann::json::parse(bytes.begin() + 16, bytes.begin() + 16 + long(hl));
  } catch (const std::exception& e) {
    bad(std::string("garbled header: ") + e.what());
  }
  StreamRecords rec;
  try {
    if (h.at("format_version").get<int>() != kFormatVersion)
      bad("format version " + h.at("format_version").dump() + ", this build reads " + std::to_string(kFormatVersion));
    rec.dtype = h.at("dtype").get<std::string>();
    rec.d = h.at("d").get<int>();
    rec.r = h.at("r").get<int>();
    rec.ids = h.at("stream_ids").get<std::vector<std::uint64_t>>();
    rec.data_errors = h.value("data_errors", nlohmann::json::array());
    std::size_t offset = 16 + hl;
    for (const auto& fj : h.at("fields")) {
      Field f;
      f.name = fj.at("name").get<std::string>();
      f.type = fj.at("type").get<std::string>();
      f.per_stream = fj.at("per_stream").get<std::int64_t>();
      const std::size_t sz = type_size(f.type);
      if (sz == 0 || f.per_stream < 0) bad("field '" + f.name + "' has an unknown type '" + f.type + "'");
      const std::size_t n = rec.ids.size() * std::size_t(f.per_stream) * sz;
      if (offset + n > bytes.size())
        bad("truncated: field '" + f.name + "' needs bytes up to " + std::to_string(offset + n) + ", the file has " +
            std::to_string(bytes.size()));
      f.bytes.assign(bytes.begin() + long(offset), bytes.begin() + long(offset + n));
      offset += n;
      rec.fields.push_back(std::move(f));
    }
    if (offset != bytes.size())
      bad(std::to_string(bytes.size() - offset) + " bytes after the last field (the file is not what its header says)");
  } catch (const nlohmann::json::exception& e) {
    bad(std::string("garbled header: ") + e.what());
  }
  return rec;
}

inline std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError(path + ": missing or unreadable (" + std::strerror(errno) + ")");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw CheckpointError(path + ": read error");
  return s;
}

// ---------------------------------------------------------------- manifest

inline std::string manifest_checksum(nlohmann::json m) {
  m.erase("manifest_fnv1a64");
  const std::string text = m.dump();
  return hex64(fnv1a64(text.data(), text.size()));
}

inline nlohmann::json build_info() {
  return {{"mosaic_version", build::version()},
          {"git_commit", build::git_commit()},
          {"kokkos_execution_space", Kokkos::DefaultExecutionSpace::name()},
          {"build_type", build::build_type()}};
}

// Reads and checks a manifest (parse, format, own checksum); throws
// CheckpointError naming it.
inline nlohmann::json read_manifest(const std::filesystem::path& dir) {
  const std::string path = (dir / kManifestName).string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError(path + ": missing: the checkpoint is incomplete");
  nlohmann::json m;
  try {
    m = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw CheckpointError(path + ": garbled manifest (not valid JSON: " + std::string(e.what()) + ")");
  }
  if (!m.is_object() || m.value("format", "") != "mosaic-checkpoint")
    throw CheckpointError(path + ": garbled manifest (not a MOSAIC checkpoint manifest)");
  if (m.value("format_version", 0) != kFormatVersion)
    throw CheckpointError(path + ": checkpoint format version " + m.value("format_version", nlohmann::json()).dump() +
                          ", this build reads version " + std::to_string(kFormatVersion));
  if (!m.contains("manifest_fnv1a64") || m["manifest_fnv1a64"] != manifest_checksum(m))
    throw CheckpointError(path + ": checksum mismatch: the manifest was altered or corrupted");
  for (const char* k : {"resolved_deck", "position", "files", "dtype", "d", "r", "nranks", "total_streams",
                        "segments", "diagnostics_series"})
    if (!m.contains(k)) throw CheckpointError(path + ": garbled manifest (no '" + std::string(k) + "')");
  return m;
}

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
                             const std::vector<unsigned char>& frozen, const nlohmann::json& data_errors,
                             MPI_Comm comm, const nlohmann::json& inputs = nlohmann::json::array()) {
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
  MPI_Barrier(comm);

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

// ---------------------------------------------------------------- restart

// The checkpoint a run resumes from, verified.
struct RestartPlan {
  std::string dir;            // the ckpt_<n> directory
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
    throw CheckpointError(where + ": no complete checkpoint (" + std::to_string(all.size()) +
                          " incomplete, without " + kManifestName + ", e.g. " + all.front().second.string() + ")");
  throw CheckpointError(where + ": no checkpoint (neither " + kManifestName + " nor ckpt_* directories)");
}

inline std::string show(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// The differences between the run a checkpoint was written by and this one
// that forbid resuming it ("key: the checkpoint has X, this run has Y").
// Compared: every key of problem and algorithm; source (the synthetic keys
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
  for (const auto& k : keys("algorithm")) cmp("algorithm", k);
  const bool npy = now.contains("source") && now["source"].value("type", "") == "npy";
  static const std::set<std::string> synthetic_only = {"rank", "lambda_max", "lambda_min", "noise",
                                                       "noise_range", "drift", "mean_scale"};
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
    throw CheckpointError(intro + what + ": the checkpoint recorded " + show(rec["rows_fnv1a64"]) +
                          ", the file has " + hex64(now.rows_fnv1a64) + outro);
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
      for (const auto& s : skipped) plan.notes.push_back("skipping incomplete checkpoint " + s + " (no " +
                                                         kManifestName + ")");
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
          throw CheckpointError(fp + ": " + std::to_string(size) + " bytes, the manifest records " +
                                show(f["bytes"]) + " (truncated or replaced)");
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
    plan.notes.push_back(mpath + " records no fingerprints of the input files (written by an earlier build): the "
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
  std::vector<std::vector<std::vector<unsigned char>>> slices(expected.size(), std::vector<std::vector<unsigned char>>(B));
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
      throw CheckpointError(fp + ": holds " + rec.dtype + " d=" + std::to_string(rec.d) + " r=" +
                            std::to_string(rec.r) + " states, this run has d=" + std::to_string(sb.d) +
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
    for (std::size_t b = 0; b < B; ++b) local[k].bytes.insert(local[k].bytes.end(), slices[k][b].begin(), slices[k][b].end());
  std::size_t k = 0;
  for_each_state_view(sb, [&](const char*, const auto& v) { restore_view(local[k++], v); });
  for (std::size_t b = 0; b < B; ++b) out.frozen[b] = local.back().bytes[b];
  return out;
}

}  // namespace ckpt
}  // namespace mosaic
