// mosaic_miniapp: reads a YAML input deck, advances many independent ordered
// data streams with the MOSAIC update on Kokkos, across MPI ranks, and writes
// one JSON result file. See README.md and docs/INPUT_DECK.md.
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
#include <omp.h>
#endif

#include "mosaic/app/kokkos_flags.hpp"
#include "mosaic/app/memory_check.hpp"
#include "mosaic/app/node_comm.hpp"
#include "mosaic/app/run.hpp"
#include "mosaic/app/stop_signal.hpp"
#include "mosaic/app/timers.hpp"
#include "mosaic/config/config.hpp"
#include "mosaic/io/dir_lock.hpp"
#include "mosaic/io/environment.hpp"
#include "mosaic/io/result_writer.hpp"

namespace {

// 2 since the result's memory gained peak_allocated_bytes_per_rank and
// device_used_bytes_at_phase in place of device_bytes_in_use_max
// (docs/RESULT-FORMAT.md).
constexpr int kResultSchemaVersion = 2;

#if defined(KOKKOS_ENABLE_OPENMP)
constexpr bool kOpenMPBackend = true;
// The threads the OpenMP backend starts without a flag or KOKKOS_NUM_THREADS.
int default_host_threads() { return omp_get_max_threads(); }
#else
constexpr bool kOpenMPBackend = false;
int default_host_threads() { return 1; }
#endif

const char* kUsage =
    "usage: mosaic_miniapp DECK.yaml [--set key.path=value ...] [--output FILE]\n"
    "                      [--restart DIR|auto] [--dry-run] [--help] [--version] [--kokkos-NAME[=VALUE] ...]\n"
    "\n"
    "  DECK.yaml          input deck (docs/INPUT_DECK.md)\n"
    "  --set k.path=v     override one deck key (repeatable), e.g. --set problem.d=512\n"
    "                     or --set sweep.problem.rank=[8,16]\n"
    "  --output FILE      result file (overrides output.result)\n"
    "  --restart DIR      resume from the newest complete checkpoint under DIR (or the\n"
    "                     checkpoint directory DIR itself); 'auto': from output.checkpoint.dir\n"
    "                     if it holds one, else start afresh (sets run.restart_from;\n"
    "                     docs/CHECKPOINT.md)\n"
    "  --dry-run          validate the deck, print the resolved configuration and the\n"
    "                     memory it needs, and exit\n"
    "  --help             this help, then exit (also --kokkos-help; no deck needed)\n"
    "  --version          what this binary was built from and with, then exit\n"
    "  --kokkos-NAME      Kokkos' own flags, below\n";

// After the Kokkos flags in --help.
const char* kKokkosEnvironmentHelp =
    "\n"
    "Kokkos also reads KOKKOS_NUM_THREADS, KOKKOS_DEVICE_ID, KOKKOS_TOOLS_LIBS, KOKKOS_TOOLS_ARGS, ...\n"
    "(a flag's name in capitals, '_' for '-'; KOKKOS_TOOLS_LIBS also on Kokkos 3.4, which calls it\n"
    "KOKKOS_PROFILE_LIBRARY). Profiling with Kokkos Tools: README.md; the run's phases are the\n"
    "profiling regions mosaic::<phase>.\n";

struct CommandLine {
  std::string deck;
  std::vector<std::string> overrides;
  std::string output;
  std::string restart;
  bool dry_run = false, help = false, version = false;
  mosaic::kokkos_flags::Translation kokkos;  // the --kokkos-* flags, for the Kokkos built against
};

// Throws std::invalid_argument with a usage-level message.
CommandLine parse_command_line(int argc, char** argv) {
  CommandLine cl;
  std::vector<std::string> kokkos_flags;
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    // An empty value (--output '', --restart=) is an error, not "unset".
    auto value = [&](const std::string& flag) -> std::string {
      std::string v;
      if (a.compare(0, flag.size() + 1, flag + "=") == 0) {
        v = a.substr(flag.size() + 1);
      } else {
        if (k + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
        v = argv[++k];
      }
      if (v.empty()) throw std::invalid_argument(flag + " needs a value, found an empty one");
      return v;
    };
    if (a.rfind("--kokkos", 0) == 0) kokkos_flags.push_back(a);  // checked below, all at once
    else if (a == "--help" || a == "-h") cl.help = true;
    else if (a == "--version") cl.version = true;
    else if (a == "--dry-run") cl.dry_run = true;
    else if (a == "--set" || a.rfind("--set=", 0) == 0) cl.overrides.push_back(value("--set"));
    else if (a == "--output" || a.rfind("--output=", 0) == 0) cl.output = value("--output");
    else if (a == "--restart" || a.rfind("--restart=", 0) == 0) cl.restart = value("--restart");
    else if (a.rfind("-", 0) == 0) throw std::invalid_argument("unknown option '" + a + "'");
    else if (cl.deck.empty()) cl.deck = a;
    else throw std::invalid_argument("more than one deck given ('" + cl.deck + "' and '" + a + "')");
  }
  cl.kokkos = mosaic::kokkos_flags::translate(kokkos_flags, KOKKOS_VERSION / 10000);
  cl.help = cl.help || cl.kokkos.help;
  if (!cl.help && !cl.version && cl.deck.empty()) throw std::invalid_argument("no input deck given");
  return cl;
}

// --version: what this binary was built from and with (build_environment).
void print_version() {
  const nlohmann::json b = mosaic::build_environment();
  auto list = [](const nlohmann::json& items, const char* if_empty) {
    std::string s;
    for (const auto& item : items) s += (s.empty() ? "" : ", ") + item.get<std::string>();
    return s.empty() ? std::string(if_empty) : s;
  };
  auto text = [&](const char* key) { return b[key].get<std::string>(); };
  std::printf("mosaic_miniapp %s (git %s%s)\n", text("mosaic_version").c_str(), text("git_commit").c_str(),
              b["git_dirty"].get<bool>() ? "-dirty" : "");
  std::printf("Kokkos %s: backends %s, default execution space %s, arch %s\n", text("kokkos_version").c_str(),
              list(b["kokkos_backends"], "none").c_str(), text("kokkos_default_execution_space").c_str(),
              list(b["kokkos_arch"], "none (host default)").c_str());
  std::printf("Kokkos Kernels %s: TPLs %s\n", text("kokkos_kernels_version").c_str(),
              list(b["kokkos_kernels_tpls"], "none").c_str());
  std::printf("compiler %s, build type %s\n", text("compiler").c_str(), text("build_type").c_str());
  std::printf("compile flags %s\n", text("compile_flags").c_str());
}

void print_summary(const nlohmann::json& run) {
  const auto& fom = run["figure_of_merit"];
  const auto& thr = run["throughput"];
  const auto& dec = run["decomposition"];
  const auto& fin = run["diagnostics"]["final"];
  std::printf("\n=== MOSAIC mini-app summary ===\n");
  std::printf("  d=%d r=%d dtype=%s  ranks=%d  streams=%lld (%s)  steps=%lld\n",
              run["resolved_deck"]["problem"]["d"].get<int>(), run["resolved_deck"]["problem"]["rank"].get<int>(),
              run["dtype"].get<std::string>().c_str(), dec["ranks"].get<int>(), dec["total_streams"].get<long long>(),
              dec["mode"].get<std::string>().c_str(), run["steps"]["timed"].get<long long>());
  const auto& kern = run["kernel"];
  std::printf("  kernel              %s, block_size %d (%s), re-orthonormalize %s\n",
              kern["update"].get<std::string>().c_str(), kern["block_size"].get<int>(),
              kern["block_size_from"].get<std::string>().c_str(), kern["reorthonormalize"].get<std::string>().c_str());
  // The phases in execution order, each with its share of the run's wall time.
  const auto& timers = run["timers"];
  const double total_max = timers["total"]["max_s"].get<double>();
  for (const char* name : mosaic::kTimerPhases) {
    const auto& t = timers[name];
    std::printf("  time %-12s max %10.4f s  min %10.4f s  %5.1f%% of total\n", name, t["max_s"].get<double>(),
                t["min_s"].get<double>(), total_max > 0 ? 100.0 * t["max_s"].get<double>() / total_max : 0.0);
  }
  std::printf("  time %-12s max %10.4f s  min %10.4f s  (the phases account for %.1f%% of it)\n", "total", total_max,
              timers["total"]["min_s"].get<double>(),
              100.0 * run["timer_coverage"]["accounted_fraction"].get<double>());
  const auto& windows = run["steps"]["init_samples_used"];
  if (windows.is_object() && !windows["grown_streams"].empty())
    std::printf(
        "  init windows        %zu streams started on more than init_samples = %lld (up to %lld samples; "
        "ALGORITHM.md section 3: their first samples spanned fewer than rank directions)\n",
        windows["grown_streams"].size(), run["steps"]["init_samples"].get<long long>(),
        windows["max"].get<long long>());
  const auto& segs = run["time_segments"];
  if (segs["time_segments"].get<int>() > 1)
    std::printf(
        "  time segments       %d per stream (ALGORITHM.md section 9): %s after %d passes, modelled speedup >= "
        "%.3g%s\n",
        segs["time_segments"].get<int>(), segs["certified"].get<bool>() ? "certified" : "NOT certified",
        segs["passes"].get<int>(), segs["modelled_speedup_min"].get<double>(),
        segs["certified"].get<bool>() ? "" : " (not the sequential result: exit status 4)");
  if (run["steps"].value("ended_streams", 0) > 0)
    std::printf("  streams ended       %lld before the run's last step (files of unequal length): %lld timed samples\n",
                run["steps"]["ended_streams"].get<long long>(), run["steps"]["timed_samples"].get<long long>());
  std::printf("  end-to-end          %.4g samples/s (timed samples / timed loop wall time)\n",
              thr["end_to_end_samples_per_second"].get<double>());
  std::printf(
      "  orthonormality err  %.3e   min eig(S) %.3e   clamped steps %lld   unresolved residuals %lld (%lld "
      "recomputed)\n",
      fin["orthonormality_error_max"].get<double>(), fin["s_min_eig_min"].get<double>(),
      fin["clamped_steps"].get<long long>(), fin["unresolved_residual_steps"].get<long long>(),
      fin["residual_recomputations"].get<long long>());
  if (fin.contains("accuracy"))
    std::printf("  projector distance to truth (max) %.3e   noise rel. error (max) %.3e\n",
                fin["accuracy"]["projector_distance_max"].get<double>(),
                fin["accuracy"]["noise_rel_error_max"].get<double>());
  const auto& preq = run["prequential"];
  auto value = [](const nlohmann::json& v) { return v.is_null() ? NAN : v.get<double>(); };
  std::printf(
      "  prequential         NLL/coordinate %.4g (interval median %.4g)   residual fraction %.3e   surprise rate "
      "%.3e (calibrated 0.001)   %lld samples evaluated\n",
      value(preq["nll_mean"]), value(preq["nll_interval_median"]), value(preq["residual_fraction_mean"]),
      value(preq["surprise_rate"]), preq["samples"].get<long long>());
  if (run.contains("io")) {
    const auto& io = run["io"];
    std::printf(
        "  npy input           %.4g MiB read in %.4g s (%.4g MiB/s), main thread stalled %.4g s, "
        "%zu non-finite rows\n",
        io["bytes_read"].get<double>() / 1048576.0, io["read_seconds"].get<double>(),
        io["read_bandwidth_bytes_per_s"].get<double>() / 1048576.0, io["stall_seconds"].get<double>(),
        io["nonfinite_rows"].size());
  }
  if (run.contains("state_files"))
    std::printf("  final states        %s/\n", run["state_files"]["directory"].get<std::string>().c_str());
  const auto& mem = run["memory"];
  auto largest_mib = [](const nlohmann::json& per_rank) {
    double m = 0;
    for (const auto& v : per_rank) m = std::max(m, v.get<double>());
    return m / 1048576.0;
  };
  std::printf(
      "  memory              allocated at its peak %.4g MiB in %s (largest rank), estimated %.4g MiB (rank 0: "
      "estimate / peak %.3f); peak RSS %.4g MiB (largest rank)\n",
      largest_mib(mem["peak_allocated_bytes_per_rank"]), mem["peak_allocated_space"].get<std::string>().c_str(),
      mem["estimate_rank0"]["execution_space_bytes"].get<double>() / 1048576.0,
      value(mem["estimate_over_peak_allocated"]), largest_mib(mem["peak_rss_bytes_per_rank"]));
  const auto& ver = run["verification"];
  for (const auto& c : ver["checks"])
    std::printf("  check %-30s %-9s %.3e %s %.3g  %s\n", c["name"].get<std::string>().c_str(),
                c["group"].get<std::string>().c_str(), c["value"].is_number() ? c["value"].get<double>() : NAN,
                c["relation"].get<std::string>().c_str(), c["threshold"].get<double>(),
                c["passed"].get<bool>() ? "ok" : "FAILED");
  std::printf("  verification        %s\n", ver["verdict"].get<std::string>().c_str());
  for (const auto& w : run["warnings"]) std::printf("  warning: %s\n", w.get<std::string>().c_str());
  std::printf("  FIGURE OF MERIT     %.6g %s\n", fom["value"].get<double>(),
              "update samples/s (timed samples / max update time)");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const bool root = rank == 0;
  const std::string started_utc = mosaic::utc_timestamp();
  // SIGTERM/SIGINT from here on stop the run cleanly (stop_signal.hpp).
  mosaic::install_stop_signal_handlers();
  auto fail = [&](const std::string& message, int code) {
    if (root) std::fprintf(stderr, "mosaic_miniapp: error: %s\n", message.c_str());
    MPI_Finalize();
    return code;
  };

  CommandLine cl;
  try {
    cl = parse_command_line(argc, argv);
  } catch (const std::exception& e) {
    if (root) std::fputs(kUsage, stderr);
    return fail(e.what(), 2);
  }
  if (cl.help || cl.version) {
    if (root && cl.help) std::printf("%s\n%s%s", kUsage, mosaic::kokkos_flags::help().c_str(), kKokkosEnvironmentHelp);
    if (root && cl.version) print_version();
    MPI_Finalize();
    return 0;
  }
  // The host threads Kokkos will start: a bad KOKKOS_NUM_THREADS, or more
  // than the OpenMP backend's fixed pool holds (Kokkos::initialize would
  // crash), is refused before anything is read or written.
  try {
    const auto threads = mosaic::kokkos_flags::host_threads(cl.kokkos, default_host_threads());
    if (kOpenMPBackend && threads.count > mosaic::kokkos_flags::kOpenMPMaxThreads)
      throw std::invalid_argument(
          std::to_string(threads.count) + " host threads per rank (" + threads.set_by + ") exceed the " +
          std::to_string(mosaic::kokkos_flags::kOpenMPMaxThreads) +
          " that Kokkos' OpenMP backend can start in one process: run more MPI ranks with fewer threads each "
          "(e.g. one rank per socket or NUMA domain), or set --kokkos-num-threads=" +
          std::to_string(mosaic::kokkos_flags::kOpenMPMaxThreads) + " or fewer");
  } catch (const std::exception& e) {
    return fail(e.what(), 2);
  }

  // Everything about the deck is checked before Kokkos starts or anything is written.
  std::vector<mosaic::SweepPoint> points;
  try {
    points = mosaic::load_deck(cl.deck, cl.overrides);
    for (auto& p : points) {
      if (!cl.output.empty()) {
        p.config.output.result = cl.output;
        p.config.resolved["output"]["result"] = cl.output;
      }
      if (!cl.restart.empty()) {
        if (points.size() > 1)
          throw mosaic::DeckError(cl.deck +
                                  ": --restart: expected a deck without a sweep (a checkpoint holds the "
                                  "state of one run), found a sweep of " +
                                  std::to_string(points.size()) + " points");
        if (cl.restart == "auto" && p.config.output.checkpoint.dir.empty())
          throw mosaic::DeckError(cl.deck + ": --restart auto resumes from output.checkpoint.dir, which is not set");
        p.config.run.restart_from = cl.restart;
        p.config.resolved["run"]["restart_from"] = cl.restart;
      }
      mosaic::validate_against_ranks(p.config, nranks, cl.deck);
    }
  } catch (const std::exception& e) {
    return fail(e.what(), 2);
  }
  const std::string result_path = points.front().config.output.result;

  if (cl.dry_run) {
    if (root) {
      for (std::size_t k = 0; k < points.size(); ++k) {
        const auto& c = points[k].config;
        std::printf("# run %zu of %zu %s\n%s\n", k + 1, points.size(), points[k].point.dump().c_str(),
                    c.resolved.dump(2).c_str());
        std::printf("# memory: %s\n", mosaic::describe_rank0_memory(c, nranks).c_str());
      }
      std::printf("# result file would be: %s\n", result_path.c_str());
    }
    MPI_Finalize();
    return 0;
  }

  // A result path that cannot be written (a directory, the deck itself, a
  // directory without write permission) fails before the run starts.
  int writable = 1;
  std::string why;
  if (root) {
    try {
      std::error_code ec;
      if (std::filesystem::equivalent(result_path, cl.deck, ec))
        throw std::runtime_error("cannot write '" + result_path +
                                 "': it is the deck itself (output.result or --output names the input deck)");
      mosaic::check_writable(result_path);
    } catch (const std::exception& e) {
      writable = 0;
      why = e.what();
    }
  }
  MPI_Bcast(&writable, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!writable) return fail(why, 2);

  // So does a state directory that cannot be created or written.
  const std::string state_dir = points.front().config.output.state_dir;
  if (!state_dir.empty()) {
    if (root) {
      try {
        std::error_code ec;
        std::filesystem::create_directories(state_dir, ec);
        if (ec)
          throw std::runtime_error(state_dir +
                                   ": cannot create the state directory (output.state_dir): " + ec.message());
        mosaic::check_writable((std::filesystem::path(state_dir) / "mu.npy").string());
      } catch (const std::exception& e) {
        writable = 0;
        why = e.what();
      }
    }
    MPI_Bcast(&writable, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!writable) return fail(why, 2);
  }

  // A state or checkpoint directory that another run is using is refused;
  // rank 0 holds their locks until the process ends (dir_lock.hpp).
  std::vector<mosaic::DirectoryLock> directory_locks;
  {
    std::string error;
    if (root) {
      try {
        directory_locks = mosaic::lock_output_directories(points.front().config, cl.deck, started_utc);
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    error = mosaic::detail::broadcast_string(error, 0, MPI_COMM_WORLD);
    if (!error.empty()) return fail(error, 2);
  }

  // npy sources: every rank checks the files of its own streams (header,
  // dtype, d, rows, finite init rows) for every point before anything runs;
  // the first problem is printed once and nothing runs. run.steps: all is
  // resolved here.
  for (auto& p : points) {
    const std::string error = mosaic::preflight_npy_streams(p.config, MPI_COMM_WORLD);
    if (!error.empty()) return fail(error, 2);
  }
  // A run that cannot fit in the node's memory is refused (memory_check.hpp).
  if (const std::string error = mosaic::check_host_memory(points, cl.deck, MPI_COMM_WORLD); !error.empty())
    return fail(error, 2);

  // Checkpoints (docs/CHECKPOINT.md; decks with checkpoints or a restart
  // have one point): the directory (created with its lock, above) must be
  // writable, and a fresh run does not start over checkpoints of an earlier
  // run (it would replace them).
  // A restart finds and verifies its checkpoint (manifest, deck, every rank
  // file's checksum) before anything runs.
  mosaic::ckpt::RestartPlan restart_plan;
  bool restarting = false;
  {
    const mosaic::RunConfig& c = points.front().config;
    const std::string& ck_dir = c.output.checkpoint.dir;
    std::string where = c.run.restart_from;
    std::string error;
    if (root) {
      try {
        if (!ck_dir.empty()) mosaic::check_writable((std::filesystem::path(ck_dir) / "probe").string());
        std::string newest;
        for (const auto& [n, path] : mosaic::ckpt::list_checkpoints(ck_dir.empty() ? "/nonexistent" : ck_dir))
          if (newest.empty() && mosaic::ckpt::is_complete(path)) newest = path.string();
        if (where == "auto") {
          where = newest.empty() ? "" : ck_dir;
          if (newest.empty())
            std::printf("[mosaic] run.restart_from: auto: no complete checkpoint in %s, starting afresh\n",
                        ck_dir.c_str());
        } else if (where.empty() && !newest.empty()) {
          throw std::runtime_error(ck_dir + ": output.checkpoint.dir already holds checkpoints of an earlier run (" +
                                   newest + "); resume with --restart " + ck_dir +
                                   " (or run.restart_from: auto), or remove them, or choose another directory");
        }
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    error = mosaic::detail::broadcast_string(error, 0, MPI_COMM_WORLD);
    if (!error.empty()) return fail(error, 2);
    where = mosaic::detail::broadcast_string(where, 0, MPI_COMM_WORLD);
    if (!where.empty()) {
      const auto total = mosaic::decompose_streams(c.streams, rank, nranks, c.segments.segments).total_streams;
      error = mosaic::ckpt::prepare_restart(c, where, total, MPI_COMM_WORLD, restart_plan);
      if (!error.empty()) return fail(error, 2);
      restarting = true;
      if (root) {
        for (const auto& note : restart_plan.notes) std::printf("[mosaic] note: %s\n", note.c_str());
        const auto& pos = restart_plan.manifest["position"];
        std::printf(
            "[mosaic] restarting from %s (sample index %lld, warm-up steps %lld, timed steps %lld of %lld, "
            "written on %d ranks)\n",
            restart_plan.dir.c_str(), pos["sample_index"].get<long long>(), pos["warmup_done"].get<long long>(),
            pos["timed_done"].get<long long>(), (long long)c.run.steps, restart_plan.manifest["nranks"].get<int>());
        std::fflush(stdout);
      }
    }
  }

  // Kokkos gets its own flags only, in the spelling of the Kokkos built
  // against (kokkos_flags.hpp). One GPU per rank: ranks on a node take the
  // node's devices round-robin by local rank (or at random, for
  // --kokkos-map-device-id-by=random on a Kokkos without that flag), unless
  // a flag or one of Kokkos' variables (KOKKOS_DEVICE_ID, ...) chose: the
  // user's choice wins (kokkos_flags.hpp).
  std::vector<std::string> kokkos_args = {argv[0]};
  kokkos_args.insert(kokkos_args.end(), cl.kokkos.arguments.begin(), cl.kokkos.arguments.end());
#if defined(KOKKOS_ENABLE_CUDA)
  {
    const int local_rank = mosaic::NodeComm(MPI_COMM_WORLD).rank();
    int devices = 0;
    if (!cl.kokkos.device_chosen && cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) {
      const int device = cl.kokkos.map_device_id_by == "random" ? int(std::random_device{}() % unsigned(devices))
                                                                : local_rank % devices;
      kokkos_args.push_back("--kokkos-device-id=" + std::to_string(device));
    }
  }
#endif
  std::vector<char*> kokkos_argv;
  for (auto& a : kokkos_args) kokkos_argv.push_back(a.data());
  int kokkos_argc = int(kokkos_argv.size());
  kokkos_argv.push_back(nullptr);
  // For --kokkos-tools-help Kokkos prints the tool's help and ends the
  // process inside Kokkos::initialize (std::exit): MPI is finalized then too.
  std::atexit([] {
    int finalized = 1;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  });
  // Kokkos 3 throws on conflicting settings (a flag and its environment
  // variable); every rank stops with the message.
  std::string kokkos_error;
  try {
    Kokkos::initialize(kokkos_argc, kokkos_argv.data());
  } catch (const std::exception& e) {
    kokkos_error = e.what();
  }
  kokkos_error = mosaic::detail::agree_on_error(kokkos_error, MPI_COMM_WORLD);
  if (!kokkos_error.empty()) {
    if (Kokkos::is_initialized()) Kokkos::finalize();
    return fail("Kokkos::initialize: " + kokkos_error, 2);
  }
  if (cl.kokkos.print_configuration) Kokkos::print_configuration(std::cout);  // Kokkos 3 lacks the flag
  // Nor one that cannot fit in its device's free memory.
  if (const std::string error = mosaic::check_device_memory(points, cl.deck, MPI_COMM_WORLD); !error.empty()) {
    Kokkos::finalize();
    return fail(error, 2);
  }
  int rc = 0;
  try {
    // Every rank's host and device, on rank 0 (collective).
    nlohmann::json ranks_environment = nlohmann::json::array();
    for (const auto& entry : mosaic::detail::gather_strings(mosaic::rank_environment(rank).dump(), MPI_COMM_WORLD))
      ranks_environment.push_back(nlohmann::json::parse(entry));
    nlohmann::json runs = nlohmann::json::array(), failed_points = nlohmann::json::array();
    mosaic::RunControl control;
    if (restarting) control.restart = &restart_plan;
    for (std::size_t k = 0; k < points.size(); ++k) {
      const auto& c = points[k].config;
      if (root && points.size() > 1)
        std::printf("[mosaic] sweep point %zu/%zu: %s\n", k + 1, points.size(), points[k].point.dump().c_str());
      nlohmann::json run;
      try {
        run = c.problem.dtype == mosaic::Dtype::float32 ? mosaic::run_point<float>(c, MPI_COMM_WORLD, &control)
                                                        : mosaic::run_point<double>(c, MPI_COMM_WORLD, &control);
      } catch (const mosaic::RunInputError& e) {
        // An input problem found as the point started (the same on every
        // rank, e.g. a rank-deficient start): the point is marked failed,
        // the others run, the finished ones are kept, exit 2.
        if (root) {
          if (points.size() > 1)
            std::fprintf(stderr, "mosaic_miniapp: error: sweep point %zu/%zu (%s): %s\n", k + 1, points.size(),
                         points[k].point.dump().c_str(), e.what());
          else std::fprintf(stderr, "mosaic_miniapp: error: %s\n", e.what());
          failed_points.push_back({{"index", k}, {"sweep_point", points[k].point}, {"error", e.what()}});
        }
        rc = 2;
        continue;
      }
      if (root) {
        run["sweep_point"] = points[k].point;
        print_summary(run);
        // An uncertified run in time segments is not the sequential result
        // (ALGORITHM.md 9.7): its own status, before the verdict's.
        if (!run["time_segments"]["certified"].get<bool>() && rc == 0) rc = 4;
        if (!run["verification"]["passed"].get<bool>() && rc == 0) rc = 3;
        runs.push_back(std::move(run));
      }
      if (control.stop_signal) break;  // the points after it do not run
    }
    // Stopped by SIGTERM/SIGINT: the result is marked interrupted and the
    // exit status is 128 + the signal (every rank).
    if (control.stop_signal) rc = 128 + control.stop_signal;
    if (root && runs.empty()) std::printf("[mosaic] no point ran to its end: no result file written\n");
    if (root && !runs.empty()) {
      std::vector<std::string> args(argv, argv + argc);
      nlohmann::json doc = {
          {"schema_version", kResultSchemaVersion},
          {"program", "mosaic_miniapp"},
          {"command_line", args},
          {"deck_path", cl.deck},
          {"overrides", cl.overrides},
          {"mpi_ranks", nranks},
          {"timestamp_utc", started_utc},
          {"finished_utc", mosaic::utc_timestamp()},
          {"environment", mosaic::collect_environment(std::move(ranks_environment))},
          {"status", control.stop_signal ? "interrupted" : "completed"},
          {"runs", runs},
      };
      if (!failed_points.empty()) doc["failed_points"] = failed_points;
      if (control.stop_signal)
        doc["interrupted"] = {
            {"signal", control.stop_signal},
            {"signal_name", mosaic::stop_signal_name(control.stop_signal)},
            {"checkpoint",
             control.last_checkpoint.empty() ? nlohmann::json() : nlohmann::json(control.last_checkpoint)},
            {"resume",
             control.last_checkpoint.empty()
                 ? "no checkpoint (output.checkpoint.dir not set): the run cannot be resumed"
                 : "mosaic_miniapp " + cl.deck + " --restart " + points.front().config.output.checkpoint.dir}};
      mosaic::write_json_atomically(result_path, doc);
      if (control.stop_signal)
        std::printf("[mosaic] stopped by %s: partial result (status interrupted) written to %s%s%s\n",
                    mosaic::stop_signal_name(control.stop_signal), result_path.c_str(),
                    control.last_checkpoint.empty() ? "" : ", checkpoint ", control.last_checkpoint.c_str());
      else if (!failed_points.empty())
        std::printf("[mosaic] result written to %s: %zu of %zu points ran, %zu failed (failed_points)\n",
                    result_path.c_str(), runs.size(), points.size(), failed_points.size());
      else std::printf("[mosaic] result written to %s\n", result_path.c_str());
    }
  } catch (const mosaic::OutOfMemory& e) {
    std::fprintf(stderr, "mosaic_miniapp: rank %d: error: %s; the estimate for rank 0 was %s\n", rank, e.what(),
                 mosaic::describe_rank0_memory(points.front().config, nranks).c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mosaic_miniapp: rank %d: error: %s\n", rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  Kokkos::finalize();
  MPI_Finalize();
  return rc;
}
