// The on-disk format of a checkpoint (checkpoint.hpp has its description):
// directory and file names, the per-stream fields of a rank file and their
// serialization, the manifest's checksum and reading, the build a
// checkpoint records.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/engine/transfer.hpp"
#include "mosaic/io/build_info.hpp"
#include "mosaic/util/fnv1a.hpp"

namespace mosaic {

// A checkpoint that cannot be used; what() names the file.
struct CheckpointError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace ckpt {

// 2: unresolved_residual_steps; 3: seen and section 7's counters; 4: section
// 8's noise state; 5: section 4's prequential sums; 6: residual_recomputations
constexpr int kFormatVersion = 6;
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
// (state, counters, breakdown record, maintained factor, section 7's seen
// flags and counters, section 8's noise profile, leverages, accumulators and
// re-whitening count: B x 0 views under isotropic noise, written as empty
// fields). A view added to
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
  f("residual_recomputations", sb.residual_recomputations);
  f("status", sb.status);
  f("prequential", sb.prequential);
  f("Rfac", sb.Rfac);
  f("factor_age", sb.factor_age);
  f("refactors", sb.refactors);
  f("solve_drift", sb.solve_drift);
  f("seen", sb.seen);
  f("skipped_steps", sb.skipped_steps);
  f("dropped_samples", sb.dropped_samples);
  f("missing_entries", sb.missing_entries);
  f("psi", sb.psi);
  f("leverage", sb.leverage);
  f("noise_residuals", sb.noise_residuals);
  f("noise_counts", sb.noise_counts);
  f("rewhitenings", sb.rewhitenings);
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
  std::size_t per = 1;
  for (int k = 1; k < rank; ++k) per *= v.extent(k);
  // (section 8's fields are empty under isotropic noise: a checkpoint of
  // the other noise model has another size.)
  if (f.bytes.size() != B * per * sizeof(T))
    throw CheckpointError("checkpoint field '" + f.name + "' holds " + std::to_string(f.bytes.size() / sizeof(T)) +
                          " values for " + std::to_string(B) + " streams, this run's state has " + std::to_string(per) +
                          " per stream (written with another algorithm.noise?)");
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
    decltype(none->steps) steps, clamped_steps, breakdown_step, reorthonormalizations, unresolved_residual_steps,
        residual_recomputations;
    decltype(none->status) status;
    decltype(none->prequential) prequential;
    decltype(none->Rfac) Rfac;
    decltype(none->factor_age) factor_age, refactors;
    decltype(none->solve_drift) solve_drift;
    decltype(none->seen) seen;
    decltype(none->skipped_steps) skipped_steps, dropped_samples, missing_entries;
    decltype(none->psi) psi, leverage;
    decltype(none->noise_residuals) noise_residuals;
    decltype(none->noise_counts) noise_counts;
    decltype(none->rewhitenings) rewhitenings;
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
      {"format_version", kFormatVersion},
      {"rank", rank},
      {"nranks", nranks},
      {"dtype", rec.dtype},
      {"d", rec.d},
      {"r", rec.r},
      {"stream_ids", rec.ids},
      {"fields", fields},
      {"data_errors", rec.data_errors},
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
  if (hl > bytes.size() - 16)
    bad("truncated: the header needs " + std::to_string(hl) + " bytes, the file has " +
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
  for (const char* k : {"resolved_deck", "position", "files", "dtype", "d", "r", "nranks", "total_streams", "segments",
                        "diagnostics_series"})
    if (!m.contains(k)) throw CheckpointError(path + ": garbled manifest (no '" + std::string(k) + "')");
  return m;
}

}  // namespace ckpt
}  // namespace mosaic
