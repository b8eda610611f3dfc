// The resolved configuration of one run of the mini-app: what the YAML input
// deck (docs/INPUT_DECK.md) says after defaults and --set overrides. Parsing
// and validation live in config.hpp; this header is only the data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mosaic/algorithm/params.hpp"
#include "mosaic/algorithm/segments.hpp"
#include "mosaic/algorithm/synthetic.hpp"

namespace mosaic {

enum class Dtype { float32, float64 };
enum class StreamMode { weak, strong };

inline const char* to_string(Dtype t) { return t == Dtype::float32 ? "float" : "double"; }
inline const char* to_string(StreamMode m) { return m == StreamMode::weak ? "weak" : "strong"; }

struct ProblemConfig {
  int d = 256;
  int rank = 8;
  Dtype dtype = Dtype::float64;
};

struct StreamsConfig {
  StreamMode mode = StreamMode::weak;
  int per_rank = 1;  // weak mode: streams on every rank
  int total = 0;     // strong mode: streams divided over the ranks
};

struct SourceConfig {
  std::string type = "synthetic";  // "synthetic" or "npy"
  // Synthetic source parameters. spec.d is problem.d; spec.r is source.rank
  // (default problem.rank); spec.seed is run.seed.
  SyntheticSpec synthetic;
  // npy source: one .npy file per stream, global stream id = position in the
  // list (already glob-expanded and resolved against the deck's directory),
  // and the rows staged per chunk per stream.
  std::vector<std::string> paths;
  int chunk_rows = 1024;
};

struct RunSection {
  std::int64_t steps = 1000;  // timed MOSAIC steps per stream (after init)
  // run.steps: all (npy sources only): every stream to the end of its own
  // file. `steps` is then 0 until the driver has read the file headers
  // (preflight_npy_streams, app/npy_preflight.hpp) and set it to the
  // longest stream's timed steps, and `stream_steps` to every stream's
  // (its file's rows - init - warm-up; by stream id). A stream with fewer
  // ends there (app/stream_ends.hpp). Empty otherwise: every stream runs
  // `steps`.
  bool steps_all = false;
  std::vector<std::int64_t> stream_steps;
  std::int64_t warmup_steps = 0;       // untimed steps before the timed ones
  std::int64_t diagnostics_every = 0;  // device diagnostics every K steps; 0 = at the end only
  double progress_every_s = 10.0;      // rank 0 progress line period
  // Verification beyond the invariants (run.hpp): accuracy against the
  // truth (sources that know it) unless the deck says throughput_only, with
  // the projector-distance and clamped-step thresholds; the reference
  // cross-check of one stream over the first timed steps (0 = off).
  bool check_accuracy = true;
  double tracking_threshold = 0.3;
  double max_clamped_fraction = 0.5;
  std::int64_t reference_check_steps = 200;
  std::uint64_t reference_check_stream = 0;
  std::uint64_t seed = 1;
  // Resume from a checkpoint (docs/CHECKPOINT.md): a checkpoint directory
  // (the newest complete checkpoint under it, or one ckpt_<n> directory), or
  // "auto": output.checkpoint.dir if it holds a complete checkpoint, else a
  // fresh start. Empty = fresh start. --restart DIR overrides it.
  std::string restart_from;
};

// output.checkpoint (docs/CHECKPOINT.md): empty dir = no checkpoints. With a
// dir, a checkpoint is written every `every_steps` timed steps or every
// `every_seconds` seconds (at most one of the two; neither = only when a
// SIGTERM/SIGINT stops the run and at its end), and the `keep` newest
// complete ones are kept.
struct CheckpointConfig {
  std::string dir;
  std::int64_t every_steps = 0;  // 0 = not by steps
  double every_seconds = 0;      // 0 = not by time
  int keep = 2;
};

struct OutputConfig {
  std::string result = "mosaic_result.json";  // result file (JSON), written atomically by rank 0
  std::string state_dir;                      // final states as .npy; empty = none
  CheckpointConfig checkpoint;
};

struct RunConfig {
  std::string deck_path;
  ProblemConfig problem;
  StreamsConfig streams;
  SourceConfig source;
  MosaicParams algorithm;
  SegmentParams segments;  // algorithm.time_segments and segment_* (ALGORITHM.md 9.1)
  RunSection run;
  OutputConfig output;
  nlohmann::json resolved;  // the whole resolved deck, every key with its value, for the result file
};

// One point of a sweep: its configuration and the swept values that made it,
// e.g. {"problem.d": 2048, "problem.rank": 32}. A deck without `sweep:` is one
// point with an empty object.
struct SweepPoint {
  RunConfig config;
  nlohmann::json point = nlohmann::json::object();
};

}  // namespace mosaic
