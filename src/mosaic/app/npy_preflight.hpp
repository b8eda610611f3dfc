// The checks of an npy run's input files before anything runs, agreed over
// the ranks (the driver calls it for every sweep point before the memory
// check; run_point for a point whose run.steps: all is still unresolved).
#pragma once

#include <mpi.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "mosaic/app/decomposition.hpp"
#include "mosaic/config/run_config.hpp"
#include "mosaic/sources/npy_source.hpp"
#include "mosaic/util/mpi_collectives.hpp"

namespace mosaic {

// The descriptors a rank needs besides its .npy files: MPI's, Kokkos',
// stdio, the result, state and checkpoint files it writes (a margin; Open
// MPI on one node held about 30 in the runs here).
constexpr long long kOtherOpenFiles = 64;

// A rank's source holds each of its `files` .npy files open for the whole
// run (NpyStreamSource); "" when they fit under the process's open-file
// limit (RLIMIT_NOFILE, `ulimit -n`) with kOtherOpenFiles to spare, else
// the refusal naming the limit.
inline std::string open_file_limit_problem(std::size_t files, int rank) {
  struct rlimit lim {};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return "";
  const long long need = (long long)files + kOtherOpenFiles, have = (long long)lim.rlim_cur;
  if (need <= have) return "";
  return "rank " + std::to_string(rank) + " reads " + std::to_string(files) +
         " .npy files (one per stream, and one per time segment it holds with algorithm.time_segments > 1, each kept "
         "open for the run), but the open-file limit is " +
         std::to_string(have) + " (ulimit -n) and about " + std::to_string(kOtherOpenFiles) +
         " more are needed for MPI, Kokkos and the outputs: raise it to " + std::to_string(need) +
         " or more (ulimit -n " + std::to_string(need) + "; the hard limit is " +
         (lim.rlim_max == RLIM_INFINITY ? std::string("unlimited") : std::to_string((long long)lim.rlim_max)) +
         "), or spread the streams over more ranks";
}

// The checks of an npy run's files, before any step (collective over comm):
// every rank opens the files of its own streams and checks each one
// (preflight_npy_file: a readable little-endian float32/float64 2-D .npy
// with problem.d features, enough rows, finite init rows). Then the ranks
// agree: the message of the lowest rank that found a problem is returned on
// every rank ("" when all is well). With run.steps: all, sets
// cfg.run.stream_steps to every stream's rows minus init_samples and
// warmup_steps (known on every rank) and cfg.run.steps to the largest of
// them; a stream whose init window grows has fewer (apply_init_windows,
// init_windows.hpp, after the init). Does nothing for other sources.
inline std::string preflight_npy_streams(RunConfig& cfg, MPI_Comm comm) {
  if (cfg.source.type != "npy") return "";
  int rank = 0, nranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  const StreamDecomposition decomp = decompose_streams(cfg.streams, rank, nranks, cfg.segments.segments);
  const std::int64_t n0 =
      cfg.algorithm.init == InitMode::data ? cfg.algorithm.resolved_init_samples(cfg.problem.rank) : 0;
  const std::int64_t w = cfg.run.warmup_steps;
  const bool all = cfg.run.steps_all;
  const std::int64_t need = n0 + w + (all ? 1 : cfg.run.steps);
  const std::string what =
      "algorithm.init_samples (" + std::to_string(n0) + ") + run.warmup_steps (" + std::to_string(w) + ") + " +
      (all ? std::string("at least one step (run.steps: all)") : "run.steps (" + std::to_string(cfg.run.steps) + ")");
  const bool nan_ok = cfg.algorithm.missing != MissingMode::error;  // a NaN is a missing entry (section 7)
  // (With time segments a rank also opens a file for each segment it holds.)
  const int P = cfg.segments.segments;
  const std::size_t slots = P > 1 ? std::size_t(SegmentLayout(decomp.total_streams, P, nranks).slots_on(rank)) : 0;
  std::string error = open_file_limit_problem(decomp.local_ids.size() + slots, rank);
  std::vector<long long> rows_of(std::size_t(decomp.total_streams), 0);  // by stream id; other ranks' 0 here
  for (auto id : decomp.local_ids) {
    if (!error.empty()) break;
    if (id >= cfg.source.paths.size()) {
      error = "stream " + std::to_string(id) + " has no file: source.paths lists " +
              std::to_string(cfg.source.paths.size());
      break;
    }
    try {
      const std::string& path = cfg.source.paths[id];
      const std::int64_t rows = cfg.problem.dtype == Dtype::float32
                                    ? preflight_npy_file<float>(path, cfg.problem.d, need, what, n0, nan_ok)
                                    : preflight_npy_file<double>(path, cfg.problem.d, need, what, n0, nan_ok);
      rows_of[std::size_t(id)] = rows;
    } catch (const NpyValueError& e) {
      error = e.what();
      if (!nan_ok && error.find("NaN") != std::string::npos)
        error += " (a NaN is a missing entry with algorithm.missing: posterior, project, drop or zero_fill)";
      break;
    } catch (const std::exception& e) {
      error = e.what();
      break;
    }
  }
  const std::string agreed = detail::agree_on_error(error, comm);
  if (!agreed.empty()) return agreed;
  if (!all) return "";
  MPI_Allreduce(MPI_IN_PLACE, rows_of.data(), int(rows_of.size()), MPI_LONG_LONG, MPI_MAX, comm);
  cfg.run.stream_steps.clear();
  for (const long long rows : rows_of) cfg.run.stream_steps.push_back(std::int64_t(rows) - n0 - w);
  cfg.run.steps = *std::max_element(cfg.run.stream_steps.begin(), cfg.run.stream_steps.end());
  return "";
}

}  // namespace mosaic
