// One run (one sweep point) of the mini-app on one MPI rank: set up the
// rank's streams, initialize, warm up, advance them for the timed steps with
// diagnostics every K steps, then reduce statistics across ranks. Only
// statistics cross ranks (counts, times, diagnostics, per-stream checksums)
// during the run; stream states never do. The one exception is at the very
// end: with output.state_dir set, the final states are gathered to rank 0
// and written as .npy files with their manifest (write_state_files).
//
// The data come from a StreamSource (stream_source.hpp): the synthetic
// source or .npy files (source.type: npy, npy_source.hpp); one loop
// (run_with_source) serves both.
//
// Blocks. The loop advances the streams a block at a time (engine.advance:
// the blocked kernel for block_size k > 1, one sequential step per block for
// k = 1). A block is at most k samples and ends wherever
// the run needs a boundary: the end of the warm-up, a diagnostics step, an
// every_steps checkpoint, a multiple of an explicit reorthonormalize_every,
// the end of the run, or the end of the source's staged data (a chunk of an
// npy file). Where a block ends is a function of the position and the deck
// alone, so a run resumed from a checkpoint cuts the same blocks as the run
// that was never stopped (and gives bitwise its results). Signals and
// every_seconds checkpoints are acted on at block ends, on more than one
// rank one block after they were seen (CheckpointPolicy). The reference
// cross-check (reference_check.hpp) closes at a block end too and adds none.
#pragma once

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include "mosaic/util/atomic_file.hpp"
#include "mosaic/engine/batch_diagnostics.hpp"
#include "mosaic/engine/batched_engine.hpp"
#include "mosaic/app/decomposition.hpp"
#include "mosaic/io/environment.hpp"
#include "mosaic/app/memory_estimate.hpp"
#include "mosaic/sources/npy.hpp"
#include "mosaic/sources/npy_source.hpp"
#include "mosaic/app/reference_check.hpp"
#include "mosaic/io/result_writer.hpp"
#include "mosaic/app/run_checkpoint.hpp"
#include "mosaic/config/run_config.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/sources/synthetic_source.hpp"
#include "mosaic/app/timers.hpp"
#include "mosaic/engine/transfer.hpp"

namespace mosaic {

// Rank 0's progress lines: at most one every `period_s` seconds.
class ProgressReporter {
 public:
  ProgressReporter(bool enabled, double period_s, std::int64_t total_steps, std::int64_t streams)
      : enabled_(enabled), period_s_(period_s), total_(total_steps), streams_(streams),
        start_(clock::now()), last_(start_) {}
  // `update_s`: rank 0's update timer so far.
  void update(std::int64_t done, double update_s) {
    if (!enabled_) return;
    const auto now = clock::now();
    if (seconds(last_, now) < period_s_ || done >= total_) return;
    const double rate_steps = (done - last_done_) / seconds(last_, now);
    const double update_rate = update_s > last_update_s_ ? (done - last_done_) / (update_s - last_update_s_) : 0.0;
    const double eta = rate_steps > 0 ? (total_ - done) / rate_steps : 0.0;
    std::printf("[mosaic] step %lld/%lld (%5.1f%%)  end-to-end %.4g samples/s  update %.4g samples/s "
                "(rank 0's update timer)  ETA %.0f s\n",
                (long long)done, (long long)total_, 100.0 * done / total_, rate_steps * streams_,
                update_rate * streams_, eta);
    std::fflush(stdout);
    last_ = now;
    last_done_ = done;
    last_update_s_ = update_s;
  }
  // A restarted run: `done` steps were done before this process started.
  void resume(std::int64_t done) { last_done_ = done; }

 private:
  using clock = std::chrono::steady_clock;
  static double seconds(clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  }
  bool enabled_;
  double period_s_;
  std::int64_t total_, streams_, last_done_ = 0;
  double last_update_s_ = 0;
  clock::time_point start_, last_;
};

// An input problem found while a run starts (after the deck and the files
// were checked): e.g. a rank-deficient init: data start. Thrown on every
// rank with the same message; the driver reports it and exits 2, like the
// input errors found before the run.
struct RunInputError : std::runtime_error {
  using std::runtime_error::runtime_error;
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
      {"unresolved_residual_steps", allreduce((long long)d.unresolved_residual_steps, MPI_SUM, comm)},
      {"breakdown_streams", allreduce((long long)d.breakdown_streams, MPI_SUM, comm)},
      {"maintained_solve_drift_max", allreduce(d.maintained_solve_drift_max, MPI_MAX, comm)},
      {"maintained_refactorizations", allreduce((long long)d.maintained_refactorizations, MPI_SUM, comm)},
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

// Sends rank `from`'s string to every rank.
inline std::string broadcast_string(std::string s, int from, MPI_Comm comm) {
  long long n = (long long)s.size();
  MPI_Bcast(&n, 1, MPI_LONG_LONG, from, comm);
  s.resize(std::size_t(n));
  if (n > 0) MPI_Bcast(s.data(), int(n), MPI_CHAR, from, comm);
  return s;
}

template <class T>
MPI_Datatype mpi_type() {
  if constexpr (std::is_same<T, float>::value) return MPI_FLOAT;
  else if constexpr (std::is_same<T, double>::value) return MPI_DOUBLE;
  else if constexpr (std::is_same<T, std::int64_t>::value) return MPI_INT64_T;
  else if constexpr (std::is_same<T, std::uint64_t>::value) return MPI_UINT64_T;
  else return MPI_CHAR;
}

// Reduces one rank's I/O accounting of a file source over all ranks.
inline nlohmann::json reduce_io(const SourceIoStats& io, MPI_Comm comm) {
  const long long bytes = allreduce((long long)io.bytes_read, MPI_SUM, comm);
  const double read_max = allreduce(io.read_seconds, MPI_MAX, comm);
  const double rank_bw = io.read_seconds > 0 ? double(io.bytes_read) / io.read_seconds : 0.0;
  nlohmann::json local_errors = nlohmann::json::array();
  for (const auto& e : io.data_errors)
    local_errors.push_back({{"stream_id", e.stream_id}, {"path", e.path}, {"row", e.row}, {"message", e.message}});
  const std::string text = local_errors.dump();
  const auto all = gather_to_root(std::vector<char>(text.begin(), text.end()), MPI_CHAR, comm);
  // gather_to_root concatenates the ranks' JSON arrays: "[...][...]".
  nlohmann::json errors = nlohmann::json::array();
  for (std::size_t pos = 0; pos < all.size();) {
    std::size_t depth = 0, end = pos;
    bool in_string = false, escaped = false;
    for (; end < all.size(); ++end) {
      const char c = all[end];
      if (in_string) {
        if (escaped) escaped = false;
        else if (c == '\\') escaped = true;
        else if (c == '"') in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '[') {
        ++depth;
      } else if (c == ']' && --depth == 0) {
        break;
      }
    }
    for (auto& e : nlohmann::json::parse(all.begin() + long(pos), all.begin() + long(end) + 1)) errors.push_back(e);
    pos = end + 1;
  }
  std::sort(errors.begin(), errors.end(), [](const auto& a, const auto& b) {
    return a["stream_id"].template get<unsigned long long>() < b["stream_id"].template get<unsigned long long>();
  });
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

// The manifest of a state set, written last (write_state_files).
constexpr const char* kStateManifestName = "states.json";

// The final state of every stream, gathered to rank 0 (rank order = stream id
// order: each rank owns a contiguous block of ids) and written by rank 0 into
// `dir` as NumPy files, each atomically: mu (streams, d), U (streams, d, r)
// row-major, S (streams, r, r), s2 (streams,), stream_ids (uint64), steps
// (int64: MOSAIC steps taken, init excluded), status (int64: 0 = healthy,
// else the BreakdownCode that froze the stream). Collective. Returns
// {"directory", "files", "manifest"} on rank 0.
//
// The set is atomic as a whole, not only file by file: the manifest
// states.json (the run that wrote the set; each file's name, shape, size and
// CRC-32) is removed first, durably, and written last, so a set without a
// manifest is incomplete (a crash or a full disk in the middle leaves the
// new mu.npy beside the previous run's U.npy) and readers refuse it
// (analysis/states.py). A manifest is chosen over a staging directory
// renamed into place: a directory cannot be renamed over a non-empty one
// atomically (only renameat2 RENAME_EXCHANGE, which NFS lacks), and the
// state directory also holds its lock file (dir_lock.hpp) and, for a sweep,
// the other points' directories.
template <class Scalar, class Exec>
nlohmann::json write_state_files(const StreamBatch<Scalar, Exec>& batch, const RunConfig& cfg, const std::string& dir,
                                 MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const int B = batch.batch, d = batch.d, r = batch.r;
  const long long per_stream = (long long)d * r;
  const long long total_streams = allreduce((long long)B, MPI_SUM, comm);
  if (total_streams * per_stream > (long long)INT_MAX)
    throw std::runtime_error("output.state_dir: the states of " + std::to_string(total_streams) +
                             " streams (d x r = " + std::to_string(per_stream) +
                             ") are too large to gather to rank 0 in one message");
  std::vector<Scalar> mu, U, S, s2;
  std::vector<std::int64_t> steps, status;
  const auto h_status = transfer::to_host(batch.status);
  for (int b = 0; b < B; ++b) {
    const ReferenceState<Scalar> st = batch.to_host(b);
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
  if (rank != 0) return nlohmann::json::object();
  const std::int64_t n = std::int64_t(all_ids.size());
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot create the state directory: " + ec.message());
  auto file = [&](const char* name) { return (std::filesystem::path(dir) / name).string(); };
  const std::string manifest = file(kStateManifestName);
  if (::unlink(manifest.c_str()) != 0 && errno != ENOENT)
    throw std::runtime_error(manifest + ": cannot remove the previous state set's manifest before writing a new "
                             "set (" + std::strerror(errno) + ")");
  fsync_directory(dir);
  nlohmann::json files = nlohmann::json::array();
  auto put = [&](const char* name, const std::vector<std::int64_t>& shape, const auto* data) {
    const NpyWritten w = write_npy(file(name), shape, data);
    files.push_back({{"name", name}, {"shape", shape}, {"bytes", w.bytes}, {"crc32", w.crc32}});
  };
  put("mu.npy", {n, d}, all_mu.data());
  put("U.npy", {n, d, r}, all_U.data());
  put("S.npy", {n, r, r}, all_S.data());
  put("s2.npy", {n}, all_s2.data());
  put("stream_ids.npy", {n}, all_ids.data());
  put("steps.npy", {n}, all_steps.data());
  put("status.npy", {n}, all_status.data());
  const nlohmann::json m = {
      {"format", "mosaic-states"},
      {"format_version", 1},
      {"written_utc", utc_timestamp()},
      {"run", {{"deck_path", cfg.deck_path},
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
  write_json_atomically(manifest, m);
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

}  // namespace detail

// The checks of an npy run's files, before any step (collective over comm):
// every rank opens the files of its own streams and checks each one
// (preflight_npy_file: a readable little-endian float32/float64 2-D .npy
// with problem.d features, enough rows, finite init rows). Then the ranks
// agree: the message of the lowest rank that found a problem is returned on
// every rank ("" when all is well). With run.steps: all, sets cfg.run.steps
// to the rows of the shortest file (over all ranks) minus init_samples and
// warmup_steps. Does nothing for other sources.
inline std::string preflight_npy_streams(RunConfig& cfg, MPI_Comm comm) {
  if (cfg.source.type != "npy") return "";
  int rank = 0, nranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  const StreamDecomposition decomp = decompose_streams(cfg.streams, rank, nranks);
  const std::int64_t n0 =
      cfg.algorithm.init == InitMode::data ? cfg.algorithm.resolved_init_samples(cfg.problem.rank) : 0;
  const std::int64_t w = cfg.run.warmup_steps;
  const bool all = cfg.run.steps_all;
  const std::int64_t need = n0 + w + (all ? 1 : cfg.run.steps);
  const std::string what = "algorithm.init_samples (" + std::to_string(n0) + ") + run.warmup_steps (" +
                           std::to_string(w) + ") + " +
                           (all ? std::string("at least one step (run.steps: all)")
                                : "run.steps (" + std::to_string(cfg.run.steps) + ")");
  std::string error;
  long long min_rows = LLONG_MAX;
  for (auto id : decomp.local_ids) {
    if (id >= cfg.source.paths.size()) {
      error = "stream " + std::to_string(id) + " has no file: source.paths lists " +
              std::to_string(cfg.source.paths.size());
      break;
    }
    try {
      const std::string& path = cfg.source.paths[id];
      const std::int64_t rows =
          cfg.problem.dtype == Dtype::float32
              ? preflight_npy_file<float>(path, cfg.problem.d, need, what, n0)
              : preflight_npy_file<double>(path, cfg.problem.d, need, what, n0);
      min_rows = std::min<long long>(min_rows, rows);
    } catch (const std::exception& e) {
      error = e.what();
      break;
    }
  }
  const int first_bad = int(detail::allreduce((long long)(error.empty() ? nranks : rank), MPI_MIN, comm));
  if (first_bad < nranks) return detail::broadcast_string(error, first_bad, comm);
  min_rows = detail::allreduce(min_rows, MPI_MIN, comm);
  if (all) cfg.run.steps = std::int64_t(min_rows) - n0 - w;
  return "";
}

namespace detail {

// The run itself, for any StreamSource: `cfg.run.steps` is the resolved
// number of timed steps. With control->restart, the streams, the position
// and the statistics so far come from that checkpoint instead of the init;
// checkpoints and the stop on SIGTERM/SIGINT follow cfg.output.checkpoint
// (run_checkpoint.hpp).
template <class Scalar>
nlohmann::json run_with_source(const RunConfig& cfg, MPI_Comm comm, const StreamDecomposition& decomp,
                               StreamSource<Scalar, Kokkos::DefaultExecutionSpace>& source, TimerSet& timers,
                               RunControl* control = nullptr) {
  using Exec = Kokkos::DefaultExecutionSpace;
  using Mem = typename Exec::memory_space;
  int rank = 0, nranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);

  const int B = int(decomp.local_ids.size());
  const int d = cfg.problem.d, r = cfg.problem.rank;
  const MosaicParams& params = cfg.algorithm;

  std::optional<StreamBatch<Scalar, Exec>> batch_storage;
  std::optional<MosaicEngine<Scalar, Exec>> engine_storage;
  timers.time("setup", [&] {
    batch_storage.emplace(B, d, r, decomp.local_ids);
    engine_storage.emplace(params, B, d, r);
  });
  StreamBatch<Scalar, Exec>& batch = *batch_storage;
  MosaicEngine<Scalar, Exec>& engine = *engine_storage;

  // Sample index of the next sample each stream consumes; warm-up and timed
  // steps done (all non-zero only when resuming from a checkpoint).
  std::int64_t t = 0, warm = 0, k = 0;
  const ckpt::RestartPlan* restart = control ? control->restart : nullptr;
  nlohmann::json segments = nlohmann::json::array();  // of the process runs before this one
  nlohmann::json series = nlohmann::json::array();
  if (restart) {
    timers.time("checkpoint", [&] {
      const ckpt::LoadedSources loaded = ckpt::load_streams(*restart, batch);
      const auto& pos = restart->manifest.at("position");
      t = pos.at("sample_index").get<std::int64_t>();
      warm = pos.at("warmup_done").get<std::int64_t>();
      k = pos.at("timed_done").get<std::int64_t>();
      SourcePosition earlier{loaded.frozen, {}, {}};
      for (const auto& e : loaded.data_errors)
        earlier.data_errors.push_back(SourceDataError{e.at("stream_id").get<std::uint64_t>(),
                                                      e.at("path").get<std::string>(), e.at("row").get<std::int64_t>(),
                                                      e.at("message").get<std::string>()});
      source.resume_at(t, std::move(earlier));
    });
    segments = restart->manifest.at("segments");
    series = restart->manifest.at("diagnostics_series");
  } else {
    std::string init_error;  // a stream whose init: data failed (e.g. a rank-deficient start)
    timers.time("init", [&] {
      if (params.init == InitMode::data) {
        const int n0 = params.resolved_init_samples(r);
        Kokkos::View<Scalar***, Kokkos::LayoutRight, Mem> X0("mosaic::init_samples", B, n0, d);
        source.read_init(n0, X0);
        try {
          engine.init_data(batch, X0);
        } catch (const StreamInitError& e) {
          init_error = source.describe(e.stream) + ": " + e.what();
        }
        t = n0;
      } else {
        engine.init_random(batch, cfg.run.seed);
      }
    });
    // The ranks agree: the lowest rank's message, as an input error everywhere.
    const int first_bad = int(allreduce((long long)(init_error.empty() ? nranks : rank), MPI_MIN, comm));
    if (first_bad < nranks) throw RunInputError(broadcast_string(init_error, first_bad, comm));
  }
  const std::int64_t warm0 = warm, k0 = k;  // where this process started
  ReferenceCrossCheck<Scalar, Exec> reference_check(
      cfg, decomp, k,
      restart && restart->manifest.contains("reference_check") ? restart->manifest["reference_check"] : nlohmann::json(),
      comm);
  CheckpointPolicy policy(cfg.output.checkpoint, comm);
  int stop = 0;  // the agreed SIGTERM/SIGINT that stops the run
  // The next block: at most `limit` samples (the phase's boundaries), cut
  // further by the engine (block size, re-orthonormalization) and the source
  // (end of its staged data). Returns the samples advanced.
  using block_view = typename StreamSource<Scalar, Exec>::block_view;
  auto next_block = [&](std::int64_t limit) {
    return source.next_block(t, int(std::min<std::int64_t>(engine.block_length(warm + k), limit)));
  };
  timers.time("warmup", [&] {
    while (warm < cfg.run.warmup_steps && !stop) {
      const block_view Xn = next_block(cfg.run.warmup_steps - warm);
      engine.advance(batch, Xn);
      warm += std::int64_t(Xn.extent(1));
      t += std::int64_t(Xn.extent(1));
      stop = policy.after_step(-1).signal;
    }
  });

  // A checkpoint of the current position (collective): the statistics of
  // this process so far join those of the segments before it.
  std::string last_checkpoint;
  std::int64_t last_checkpoint_at = restart ? t : -1, checkpoints_written = 0;
  std::optional<std::chrono::steady_clock::time_point> loop_start;
  auto write_checkpoint = [&] {
    timers.time("checkpoint", [&] {
      nlohmann::json io_now;
      if (const auto io = source.io_report()) io_now = detail::reduce_io(*io, comm);
      const double loop_now =
          loop_start ? std::chrono::duration<double>(std::chrono::steady_clock::now() - *loop_start).count() : 0.0;
      nlohmann::json segs = segments;
      segs.push_back(segment_stats(timers, comm, k - k0, warm - warm0, loop_now, B,
                                   detail::reduce_timers(timers, comm, nranks), io_now));
      ckpt::WriteRequest req;
      req.root = cfg.output.checkpoint.dir;
      req.keep = cfg.output.checkpoint.keep;
      req.number = t;
      req.manifest_extra = {{"deck_path", cfg.deck_path},
                            {"resolved_deck", cfg.resolved},
                            {"position", {{"sample_index", t}, {"warmup_done", warm}, {"timed_done", k}}},
                            {"run_steps", cfg.run.steps},
                            {"segments", segs},
                            {"diagnostics_series", series},
                            {"reference_check", reference_check.result()}};
      const SourcePosition at = source.position_at(t);
      nlohmann::json errors = nlohmann::json::array(), inputs = nlohmann::json::array();
      for (const auto& e : at.data_errors)
        errors.push_back({{"stream_id", e.stream_id}, {"path", e.path}, {"row", e.row}, {"message", e.message}});
      for (const auto& in : at.inputs) inputs.push_back(ckpt::input_record(in));
      last_checkpoint = ckpt::write_checkpoint(req, batch, at.frozen, errors, comm, inputs);
    });
    last_checkpoint_at = t;
    ++checkpoints_written;
    policy.written();
  };
  if (stop && policy.enabled()) write_checkpoint();

  DiagnosticsWork<Exec> diagnostics_work;  // kept from one point to the next
  auto diagnose = [&](std::int64_t steps_done) {
    BatchDiagnostics diag;
    std::optional<TruthAccuracy> acc;  // against the truth: synthetic data only
    timers.time("diagnostics", [&] {
      diag = compute_diagnostics(batch, diagnostics_work);
      acc = source.accuracy(batch, t - 1);
    });
    nlohmann::json entry;
    timers.time("reduce", [&] {
      entry = detail::reduce_diagnostics(diag, acc ? &*acc : nullptr, B, decomp.total_streams, comm);
    });
    entry["step"] = steps_done;
    entry["sample_index"] = t - 1;
    return std::make_pair(entry, diag);
  };

  ProgressReporter progress(rank == 0, cfg.run.progress_every_s, cfg.run.steps, decomp.total_streams);
  progress.resume(k0);
  const std::int64_t every = cfg.run.diagnostics_every;
  loop_start = std::chrono::steady_clock::now();
  const std::int64_t ck_every = cfg.output.checkpoint.every_steps;
  if (!stop) timers.time("verify", [&] { reference_check.start(batch); });
  while (k < cfg.run.steps && !stop) {
    std::int64_t limit = cfg.run.steps - k;
    if (every > 0) limit = std::min(limit, every - k % every);
    if (ck_every > 0) limit = std::min(limit, ck_every - k % ck_every);
    block_view Xn;
    timers.time("generate", [&] { Xn = next_block(limit); });
    timers.time("update", [&] { engine.advance(batch, Xn); });
    k += std::int64_t(Xn.extent(1));
    t += std::int64_t(Xn.extent(1));
    if (reference_check.open())
      timers.time("verify", [&] {
        reference_check.consume(Xn);
        reference_check.at_block_end(batch, k);
      });
    if (every > 0 && k % every == 0 && k < cfg.run.steps) series.push_back(diagnose(k).first);
    progress.update(k, timers.seconds("update"));
    CheckpointPolicy::Decision next;
    timers.time("reduce", [&] { next = policy.after_step(k); });
    stop = next.signal;
    if (next.checkpoint) write_checkpoint();
  }
  // A signal during the last block; then the end of the run is checkpointed
  // too: a later run can extend it (a larger run.steps) from there.
  timers.time("reduce", [&] {
    const int late = policy.finish();
    if (!stop) stop = late;
  });
  if (!stop && reference_check.open())
    timers.time("verify", [&] { reference_check.at_block_end(batch, k, true); });
  if (policy.enabled() && last_checkpoint_at != t) write_checkpoint();
  const double loop_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - *loop_start).count();
  // Named members, not a structured binding: the lambdas below capture them
  // (capturing a structured binding is C++20).
  auto final_result = diagnose(k);
  const nlohmann::json& final_diag = final_result.first;
  const BatchDiagnostics& diag = final_result.second;
  series.push_back(final_diag);
  if (control) {
    control->stop_signal = stop;
    control->last_checkpoint = last_checkpoint;
  }

  // Per-stream verification checksums and breakdown records, gathered to rank 0.
  std::vector<unsigned long long> all_ids;
  std::vector<double> all_sums;
  std::vector<long long> all_breaks, all_rss;
  long long device_used = -1;
  timers.time("reduce", [&] {
    std::vector<unsigned long long> ids(decomp.local_ids.begin(), decomp.local_ids.end());
    all_ids = detail::gather_to_root(ids, MPI_UNSIGNED_LONG_LONG, comm);
    all_sums = detail::gather_to_root(diag.per_stream_checksum, MPI_DOUBLE, comm);
    std::vector<long long> breaks;
    for (const auto& b : diag.breakdowns)
      breaks.insert(breaks.end(), {(long long)b.stream_id, (long long)b.step, (long long)b.code});
    all_breaks = detail::gather_to_root(breaks, MPI_LONG_LONG, comm);
    all_rss = detail::gather_to_root(std::vector<long long>{peak_rss_bytes()}, MPI_LONG_LONG, comm);
    device_used = detail::allreduce(device_memory_used_bytes(), MPI_MAX, comm);
  });
  // An interrupted run writes no state files: output.state_dir holds final
  // states only (the checkpoint holds the interrupted ones).
  nlohmann::json state_files;
  if (!cfg.output.state_dir.empty() && !stop)
    timers.time("output", [&] { state_files = detail::write_state_files(batch, cfg, detail::state_dir_for(cfg), comm); });

  // This process's statistics, added to those of the segments before it
  // (a run that was never stopped has one segment: the plain statistics).
  // The timers are read last: everything before is in them.
  nlohmann::json io_now;
  std::optional<SourceIoStats> io_end;
  timers.time("reduce", [&] {
    io_end = source.io_report();
    if (io_end) io_now = detail::reduce_io(*io_end, comm);
  });
  segments.push_back(segment_stats(timers, comm, k - k0, warm - warm0, loop_s, B,
                                   detail::reduce_timers(timers, comm, nranks), io_now));
  const nlohmann::json total = combine_segments(segments);
  const nlohmann::json timer_stats = total["timers"];
  const double loop_max_s = total["loop_max_s"];
  const double update_max = timer_stats["update"]["max_s"];
  const double rank_rate_min = total["per_rank_update_samples_per_second_min"];
  const double rank_rate_max = total["per_rank_update_samples_per_second_max"];
  nlohmann::json io;
  if (io_end) io = total["io"];
  if (rank != 0) return nlohmann::json::object();

  const double samples = double(k) * double(decomp.total_streams);
  nlohmann::json checksums = nlohmann::json::array();
  for (std::size_t k = 0; k < all_ids.size(); ++k)
    checksums.push_back({{"stream_id", all_ids[k]}, {"checksum", all_sums[k]}});
  std::sort(checksums.begin(), checksums.end(), [](const auto& a, const auto& b) {
    return a["stream_id"].template get<unsigned long long>() < b["stream_id"].template get<unsigned long long>();
  });
  nlohmann::json breakdowns = nlohmann::json::array();
  for (std::size_t k = 0; k + 2 < all_breaks.size(); k += 3)
    breakdowns.push_back({{"stream_id", all_breaks[k]}, {"step", all_breaks[k + 1]}, {"code", all_breaks[k + 2]}});

  // Verification (HPCG style), each check with its value and threshold:
  // the invariants of ALGORITHM.md section 4; the reference cross-check
  // (reference_check.hpp); and, unless the deck says run.accuracy:
  // throughput_only, tracking: the projector distance to the truth against
  // run.tracking_threshold and against a random subspace's (1 - r/d), and
  // the share of clamped steps against run.max_clamped_fraction.
  const bool is_float = std::is_same<Scalar, float>::value;
  const double orth_tol = is_float ? 1e-2 : 1e-8;
  const double sym_tol = is_float ? 1e-5 : 1e-12;
  auto check = [](const char* group, const char* name, double value, const char* relation, double threshold,
                  bool ok) {
    return nlohmann::json{{"group", group},         {"name", name},           {"value", value},
                          {"relation", relation},   {"threshold", threshold}, {"passed", ok}};
  };
  const double orth = final_diag["orthonormality_error_max"];
  const double sym = final_diag["symmetry_error_max"];
  const double smin = final_diag["s_min_eig_min"];
  const double s2min = final_diag["s2_min"];
  const long long nonfinite = final_diag["nonfinite_count"];
  const long long broken = final_diag["breakdown_streams"];
  nlohmann::json checks = nlohmann::json::array({
      check("invariant", "orthonormality_error_max", orth, "<=", orth_tol, orth <= orth_tol),
      check("invariant", "symmetry_error_max", sym, "<=", sym_tol, sym <= sym_tol),
      check("invariant", "s_min_eig_min", smin, ">", 0.0, smin > 0.0),
      check("invariant", "s2_min", s2min, ">", 0.0, s2min > 0.0),
      check("invariant", "nonfinite_count", double(nonfinite), "==", 0.0, nonfinite == 0),
      check("invariant", "breakdown_streams", double(broken), "==", 0.0, broken == 0),
  });
  const nlohmann::json& ref_check = reference_check.result();
  if (!ref_check.is_null() && ref_check.value("status", "") == "compared") {
    const double v = ref_check["rel_error"].is_number() ? ref_check["rel_error"].get<double>()
                                                        : std::numeric_limits<double>::infinity();
    checks.push_back(check("reference", "reference_rel_error", v, "<=", ref_check["threshold"].get<double>(),
                           ref_check["passed"].get<bool>()));
  }
  std::string accuracy;
  if (!cfg.run.check_accuracy) {
    accuracy = "not checked (run.accuracy: throughput_only)";
  } else {
    const double steps_taken = double(warm + k) * double(decomp.total_streams);
    const double clamped_steps = final_diag["clamped_steps"];
    const double clamped = steps_taken > 0 ? clamped_steps / steps_taken : 0.0;
    checks.push_back(check("accuracy", "clamped_step_fraction", clamped, "<=", cfg.run.max_clamped_fraction,
                           clamped <= cfg.run.max_clamped_fraction));
    if (final_diag.contains("accuracy")) {
      accuracy = "checked";
      const double proj = final_diag["accuracy"]["projector_distance_max"];
      const double random = 1.0 - double(r) / double(d);  // E[1 - ||U^T V||_F^2 / k], U uniformly random
      checks.push_back(check("accuracy", "projector_distance_max", proj, "<=", cfg.run.tracking_threshold,
                             proj <= cfg.run.tracking_threshold));
      checks.push_back(check("accuracy", "projector_distance_over_random", proj / random, "<=", 0.5,
                             proj / random <= 0.5));
    } else {
      accuracy = "clamped steps only (the source has no truth to track)";
    }
  }
  bool passed = true;
  std::string failed;
  for (const auto& c : checks)
    if (!c["passed"].get<bool>()) {
      passed = false;
      failed += (failed.empty() ? "" : ", ") + c["name"].get<std::string>();
    }
  std::string verdict = passed ? "PASSED" : "FAILED (" + failed + ")";
  verdict += "; accuracy " + accuracy + "; reference cross-check " +
             (ref_check.is_null() ? std::string("not finished (the run stopped first)")
              : ref_check.value("status", "") == "compared" ? std::string("compared")
                                                             : ref_check.value("status", "unknown"));
  nlohmann::json warnings = nlohmann::json::array();
  if (update_max < 10.0)
    warnings.push_back("the timed update lasted " + std::to_string(update_max) +
                       " s (< 10 s): the figure of merit is noisy; raise run.steps for a number to report");

  const std::size_t state_bytes = batch.state_bytes_per_stream();
  nlohmann::json result = {
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
      {"kernel",
       {{"update", engine.blocked() ? "blocked" : "sequential"},
        {"block_size", engine.block_size()},
        {"block_size_from", params.block_size == kAuto ? "auto" : "deck"},
        {"block_gemm", engine.blocked() ? nlohmann::json(to_string(engine.block_gemm_resolved())) : nlohmann::json()},
        {"block_gemm_streams", engine.blocked() && engine.block_gemm_resolved() == BlockGemm::vendor
                                   ? nlohmann::json(engine.vendor_gemm_over_streams() ? "one thread per stream"
                                                                                      : "all streams at once")
                                   : nlohmann::json()},
        {"reorthonormalize", engine.reorthonormalize_at_block_end() ? nlohmann::json("every block end")
                             : engine.reorthonormalize_every() > 0
                                 ? nlohmann::json("every " + std::to_string(engine.reorthonormalize_every()) + " steps")
                                 : nlohmann::json("never")}}},
      {"steps", {{"timed", k}, {"warmup", warm}, {"timed_planned", cfg.run.steps},
                 {"init_samples", params.init == InitMode::data ? params.resolved_init_samples(r) : 0}}},
      {"timers", timer_stats},
      {"timer_coverage",
       {{"accounted_fraction", detail::timer_coverage(timer_stats)},
        {"definition", "sum over the phases of their mean seconds over the ranks, over the mean total"}}},
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
        {"device_bytes_in_use_max", device_used >= 0 ? nlohmann::json(device_used) : nlohmann::json()},
        {"peak_rss_bytes_per_rank", all_rss},
        {"peak_rss_definition", "each rank's VmHWM (/proc/self/status): the peak resident memory of the process "
                                "since it started, so a sweep point's includes the points before it"},
        {"estimate_rank0",
         estimate_rank_memory<Exec>(cfg, B, decomp.total_streams, true,
                                    (params.init == InitMode::data ? params.resolved_init_samples(r) : 0) +
                                        cfg.run.warmup_steps + cfg.run.steps)
             .to_json()}}},
      {"counts", {{"clamped_steps", final_diag["clamped_steps"]},
                  {"breakdown_streams", broken},
                  {"breakdowns", breakdowns}}},
      {"verification", {{"passed", passed},
                        {"verdict", verdict},
                        {"accuracy", accuracy},
                        {"checks", checks},
                        {"reference_check", ref_check},
                        {"per_stream_checksums", checksums}}},
      {"warnings", warnings},
  };
  if (io_end) result["io"] = io;
  if (!state_files.is_null()) result["state_files"] = state_files;
  if (restart || segments.size() > 1)
    result["restart"] = {{"restarted_from", restart ? nlohmann::json(restart->dir) : nlohmann::json()},
                         {"segments", segments.size()},
                         {"per_segment", segments}};
  if (policy.enabled()) {
    const auto& ck = cfg.output.checkpoint;
    result["checkpoints"] = {{"dir", ck.dir},
                             {"written", checkpoints_written},
                             {"last", last_checkpoint.empty() ? nlohmann::json() : nlohmann::json(last_checkpoint)},
                             {"keep", ck.keep},
                             {"every_steps", ck.every_steps},
                             {"every_seconds", ck.every_seconds}};
  }
  return result;
}

}  // namespace detail

// Runs one configuration on this rank; collective over `comm`. Returns the
// run's result object on rank 0 (an empty object elsewhere). An npy run whose
// files were not checked yet (run.steps: all still unresolved) is checked
// here first (preflight_npy_streams); a problem then throws on every rank.
// `control` (optional): resume from a checkpoint, and learn whether a
// SIGTERM/SIGINT stopped the run (RunControl, run_checkpoint.hpp).
// Rank 0's start banner, before any setup: what is about to run.
inline void print_start_banner(const RunConfig& c, const StreamDecomposition& decomp, int nranks) {
  using Exec = Kokkos::DefaultExecutionSpace;
  const int k = c.algorithm.block_size == kAuto ? auto_block_size<Exec>(c.problem.d, c.problem.rank)
                                                : std::max(1, c.algorithm.block_size);
  std::printf("[mosaic] start: deck %s  d=%d r=%d %s  streams %lld (%s, %d-%d per rank)  ranks %d x concurrency "
              "%d (%s)  kernel %s k=%d (%s)  steps %lld + %lld warm-up  accuracy %s\n",
              c.deck_path.c_str(), c.problem.d, c.problem.rank, to_string(c.problem.dtype),
              (long long)decomp.total_streams, to_string(c.streams.mode), decomp.min_per_rank,
              decomp.max_per_rank, nranks, int(Exec().concurrency()), Exec::name(),
              k > 1 ? "blocked" : "sequential", k, c.algorithm.block_size == kAuto ? "auto" : "deck",
              (long long)c.run.steps, (long long)c.run.warmup_steps,
              c.run.check_accuracy ? "checked" : "not checked (throughput_only)");
  std::fflush(stdout);
}

// Runs one configuration on this rank; collective over `comm`. Returns the
// run's result object on rank 0 (an empty object elsewhere). An npy run whose
// files were not checked yet (run.steps: all still unresolved) is checked
// here first (preflight_npy_streams); a problem then throws on every rank.
// `control` (optional): resume from a checkpoint, and learn whether a
// SIGTERM/SIGINT stopped the run (RunControl, run_checkpoint.hpp).
template <class Scalar>
nlohmann::json run_point(const RunConfig& config, MPI_Comm comm, RunControl* control = nullptr) {
  using Exec = Kokkos::DefaultExecutionSpace;
  TimerSet timers;  // the run's wall clock starts here
  int rank = 0, nranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  const StreamDecomposition decomp = decompose_streams(config.streams, rank, nranks);
  if (config.source.type == "npy") {
    RunConfig cfg = config;
    if (cfg.run.steps_all && cfg.run.steps <= 0) {
      std::string error;
      timers.time("setup", [&] { error = preflight_npy_streams(cfg, comm); });
      if (!error.empty()) throw NpyError(error);
    }
    if (rank == 0) print_start_banner(cfg, decomp, nranks);
    const std::int64_t n0 =
        cfg.algorithm.init == InitMode::data ? cfg.algorithm.resolved_init_samples(cfg.problem.rank) : 0;
    std::vector<std::string> paths;
    for (auto id : decomp.local_ids) paths.push_back(cfg.source.paths.at(id));
    std::optional<NpyStreamSource<Scalar, Exec>> source;
    timers.time("setup", [&] {
      source.emplace(paths, decomp.local_ids, cfg.problem.d, cfg.source.chunk_rows,
                     n0 + cfg.run.warmup_steps + cfg.run.steps);
    });
    return detail::run_with_source<Scalar>(cfg, comm, decomp, *source, timers, control);
  }
  if (rank == 0) print_start_banner(config, decomp, nranks);
  std::optional<SyntheticDriftSource<Scalar, Exec>> source;
  timers.time("setup", [&] { source.emplace(config.source.synthetic, decomp.local_ids); });
  return detail::run_with_source<Scalar>(config, comm, decomp, *source, timers, control);
}

// Compiled once per scalar type, in run_float.cpp and run_double.cpp (the
// mosaic library), with the engines and sources they use.
extern template nlohmann::json run_point<float>(const RunConfig&, MPI_Comm, RunControl*);
extern template nlohmann::json run_point<double>(const RunConfig&, MPI_Comm, RunControl*);

}  // namespace mosaic
