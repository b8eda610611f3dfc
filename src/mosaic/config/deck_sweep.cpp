// The sweep expanded into points, each resolved into a RunConfig with the
// checks across keys (impl/deck_loader.hpp).
#include "mosaic/config/impl/deck_loader.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <glob.h>

namespace mosaic::deck {

std::vector<SweepPoint> Loader::expand() {
  std::size_t count = 1;
  for (const auto& e : sweep_) {
    count *= e.values.size();
    if (count > kMaxSweepPoints) fail(e.origin, "sweep: more than " + std::to_string(kMaxSweepPoints) + " points");
  }
  // A checkpoint holds the state of one run: no checkpoints, and no
  // restart, across the points of a sweep.
  for (const char* p : {"output.checkpoint.dir", "run.restart_from"}) {
    const auto it = checked_.find(p);
    const bool set = it != checked_.end() && !it->second.value.get<std::string>().empty();
    bool swept = false;
    for (const auto& e : sweep_) swept = swept || e.path == p;
    if ((set || swept) && count > 1)
      fail(set ? it->second.origin : sweep_.front().origin,
           std::string(p) +
               ": expected a deck without a sweep (a checkpoint holds the state of one run), "
               "found a sweep of " +
               std::to_string(count) + " points");
  }
  // One result file holds every point of a sweep (the driver writes it once,
  // at output.result): a swept result path would be ignored after the
  // first point while each point's resolved deck named its own.
  for (const auto& e : sweep_)
    if (e.path == "output.result")
      fail(e.origin,
           "output.result: expected one result path for the whole sweep (one file holds every point), found "
           "the key in the sweep; set output.result (or --output) once");
  std::vector<SweepPoint> points;
  points.reserve(count);
  for (std::size_t idx = 0; idx < count; ++idx) {
    // Mixed radix, the last sweep key fastest.
    std::vector<std::size_t> digit(sweep_.size());
    std::size_t rest = idx;
    for (std::size_t j = sweep_.size(); j-- > 0;) {
      digit[j] = rest % sweep_[j].values.size();
      rest /= sweep_[j].values.size();
    }
    std::map<std::string, Value> eff;
    for (const auto& k : schema()) eff[k.path()] = Value{k.def, Origin{}, false};
    for (const auto& [p, v] : checked_) eff[p] = v;
    SweepPoint sp;
    std::string desc;
    for (std::size_t j = 0; j < sweep_.size(); ++j) {
      const Value& v = sweep_[j].values[digit[j]];
      eff[sweep_[j].path] = v;
      sp.point[sweep_[j].path] = v.value;
      desc += (j ? ", " : "") + sweep_[j].path + "=" + compact(v.value);
    }
    context_.clear();
    if (!sweep_.empty())
      context_ = "sweep point " + std::to_string(idx + 1) + " of " + std::to_string(count) + " (" + desc + "): ";
    sp.config = resolve(eff);
    sp.config.resolved["sweep"] = {{"index", idx}, {"count", count}, {"point", sp.point}};
    points.push_back(std::move(sp));
  }
  context_.clear();
  return points;
}

void Loader::resolve_npy_source(std::map<std::string, Value>& eff, RunConfig& c) const {
  const Value& v = eff.at("source.paths");
  if (v.value.is_null())
    fail(eff.at("source.type").origin,
         "source.paths: required when source.type is npy (expected " + find_key("source.paths")->expected() + ")");
  const std::filesystem::path base =
      v.origin.kind == Origin::file ? std::filesystem::path(deck_).parent_path() : std::filesystem::path();
  auto resolve_path = [&](const std::string& p) {
    const std::filesystem::path q(p);
    return (q.is_relative() && !base.empty() ? base / q : q).lexically_normal().string();
  };
  std::vector<std::string> out;
  if (v.value.is_string()) {
    const std::string pattern = resolve_path(v.value.get<std::string>());
    if (pattern.find_first_of("*?[") == std::string::npos) {
      out.push_back(pattern);
    } else {
      glob_t g{};
      const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
      if (rc == 0)
        for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
      ::globfree(&g);
      if (rc == GLOB_NOMATCH || (rc == 0 && out.empty()))
        fail(v.origin, "source.paths: the pattern '" + pattern + "' matches no files");
      if (rc != 0)
        fail(v.origin, "source.paths: cannot expand the pattern '" + pattern + "' (" +
                           (rc == GLOB_ABORTED ? "a directory could not be read" : "out of memory") + ")");
      std::sort(out.begin(), out.end());
    }
  } else {
    for (const auto& p : v.value) out.push_back(resolve_path(p.get<std::string>()));
  }
  c.source.paths = out;
  c.source.chunk_rows = int(eff.at("source.chunk_rows").value.get<std::int64_t>());
  eff["source.paths"] = Value{json(out), v.origin, v.explicit_};
}

RunConfig Loader::resolve(std::map<std::string, Value>& eff) const {
  auto num = [&](const char* p) { return eff.at(p).value.get<double>(); };
  auto i64 = [&](const char* p) { return eff.at(p).value.get<std::int64_t>(); };
  auto str = [&](const char* p) { return eff.at(p).value.get<std::string>(); };
  auto origin = [&](const char* p) { return eff.at(p).origin; };
  auto show = [](double v) {
    std::ostringstream os;
    os << v;
    return os.str();
  };

  RunConfig c;
  c.deck_path = deck_;
  const std::int64_t d = i64("problem.d"), r = i64("problem.rank");
  if (r >= d)
    fail(origin("problem.rank"), "problem.rank: expected an integer in [1, d-1] = [1, " + std::to_string(d - 1) +
                                     "] for problem.d = " + std::to_string(d) + ", found " + std::to_string(r));
  c.problem.d = int(d);
  c.problem.rank = int(r);
  c.problem.dtype = str("problem.dtype") == "float" ? Dtype::float32 : Dtype::float64;

  c.source.type = str("source.type");
  const bool npy = c.source.type == "npy";
  if (npy) resolve_npy_source(eff, c);
  // npy: the files are the streams, divided over the ranks (strong mode)
  // unless the deck asks for weak mode explicitly.
  if (npy && !eff.at("streams.mode").explicit_)
    eff["streams.mode"] = Value{json("strong"), origin("source.type"), false};
  c.streams.mode = str("streams.mode") == "strong" ? StreamMode::strong : StreamMode::weak;
  c.streams.per_rank = int(i64("streams.per_rank"));
  if (npy && c.streams.mode == StreamMode::strong) {
    const std::int64_t files = std::int64_t(c.source.paths.size());
    if (eff.at("streams.total").value.is_null())
      eff["streams.total"] = Value{json(files), origin("source.paths"), false};
    else if (i64("streams.total") != files)
      fail(origin("streams.total"), "streams.total: expected the number of files in source.paths (" +
                                        std::to_string(files) + ") with source.type npy, found " +
                                        std::to_string(i64("streams.total")) +
                                        "; each file is one stream (leave streams.total out to use the file count)");
  }
  if (c.streams.mode == StreamMode::strong) {
    if (eff.at("streams.total").value.is_null())
      fail(origin("streams.mode"),
           "streams.total: required when streams.mode is strong "
           "(expected an integer >= 1: the number of streams divided "
           "over the MPI ranks)");
  }
  if (!eff.at("streams.total").value.is_null()) c.streams.total = int(i64("streams.total"));

  SyntheticSpec& s = c.source.synthetic;
  s.d = int(d);
  // The synthetic-only keys are accepted and ignored with type npy (their
  // own type and range are still checked), as streams.total is in weak
  // mode, so a deck can sweep source.type; their cross-key rules apply
  // only to the synthetic source.
  if (eff.at("source.rank").value.is_null()) {
    if (!npy && 2 * r > d)
      fail(origin("problem.rank"), "source.rank: defaults to problem.rank = " + std::to_string(r) +
                                       ", which must be in [1, d/2] = [1, " + std::to_string(d / 2) +
                                       "] for problem.d = " + std::to_string(d) +
                                       " (the truth needs 2*rank orthonormal columns); set source.rank explicitly");
    eff["source.rank"] = Value{json(r), origin("problem.rank"), false};
  }
  const std::int64_t sr = i64("source.rank");
  if (!npy && 2 * sr > d)
    fail(origin("source.rank"), "source.rank: expected an integer in [1, d/2] = [1, " + std::to_string(d / 2) +
                                    "] for problem.d = " + std::to_string(d) + ", found " + std::to_string(sr));
  s.r = int(sr);
  s.lambda_max = num("source.lambda_max");
  s.lambda_min = num("source.lambda_min");
  if (!npy && s.lambda_min > s.lambda_max) {
    const bool min_explicit = eff.at("source.lambda_min").explicit_;
    fail(origin(min_explicit ? "source.lambda_min" : "source.lambda_max"),
         std::string(min_explicit ? "source.lambda_min" : "source.lambda_max") +
             ": expected 0 < source.lambda_min <= source.lambda_max, found lambda_min = " + show(s.lambda_min) +
             ", lambda_max = " + show(s.lambda_max));
  }
  if (!eff.at("source.noise_range").value.is_null()) {
    s.noise_min = eff.at("source.noise_range").value[0].get<double>();
    s.noise_max = eff.at("source.noise_range").value[1].get<double>();
    eff["source.noise"].value = nullptr;  // not used: heterogeneous noise
  } else {
    s.noise = num("source.noise");
  }
  s.drift = num("source.drift");
  s.mean_scale = num("source.mean_scale");
  s.seed = eff.at("run.seed").value.get<std::uint64_t>();
  MissingSpec& ms = s.missing;
  ms.mcar_rate = num("source.missing_rate");
  ms.outage_first = int(i64("source.outage_first"));
  ms.outage_count = int(i64("source.outage_count"));
  ms.outage_start = std::uint64_t(i64("source.outage_start"));
  ms.outage_steps = std::uint64_t(i64("source.outage_steps"));
  ms.block_rate = num("source.missing_block_rate");
  ms.block_coords = int(i64("source.missing_block_coords"));
  ms.block_steps = std::uint64_t(i64("source.missing_block_steps"));
  if (!npy && ms.outage_count > 0 && std::int64_t(ms.outage_first) + ms.outage_count > d)
    fail(origin(eff.at("source.outage_count").explicit_ ? "source.outage_count" : "source.outage_first"),
         "source.outage_first, source.outage_count: the outage's coordinates [" + std::to_string(ms.outage_first) +
             ", " + std::to_string(std::int64_t(ms.outage_first) + ms.outage_count) +
             ") must lie in [0, problem.d = " + std::to_string(d) + ")");

  MosaicParams& a = c.algorithm;
  a.covariance_update =
      str("algorithm.covariance_update") == "exact" ? CovarianceUpdate::exact : CovarianceUpdate::first_order;
  a.subspace_direction =
      str("algorithm.subspace_direction") == "precision" ? SubspaceDirection::precision : SubspaceDirection::oja;
  a.eta_mu = num("algorithm.eta_mu");
  a.eta_S = num("algorithm.eta_S");
  a.eta_U = num("algorithm.eta_U");
  a.eta_s = num("algorithm.eta_s");
  a.gamma = num("algorithm.gamma");
  a.max_step = num("algorithm.max_step");
  auto int_or_auto = [&](const char* key) { return eff.at(key).value.is_string() ? kAuto : int(i64(key)); };
  a.reorthonormalize_every = int_or_auto("algorithm.reorthonormalize_every");
  a.init = str("algorithm.init") == "data" ? InitMode::data : InitMode::random;
  if (eff.at("algorithm.init_samples").value.is_null())
    eff["algorithm.init_samples"] = Value{json(2 * r), origin("problem.rank"), false};
  const std::int64_t n0 = i64("algorithm.init_samples");
  if (a.init == InitMode::data && n0 < r + 1)
    fail(origin("algorithm.init_samples"),
         "algorithm.init_samples: expected an integer >= problem.rank + 1 = " + std::to_string(r + 1) +
             " with algorithm.init: data, found " + std::to_string(n0));
  a.init_samples = int(n0);
  if (eff.at("algorithm.init_max_samples").value.is_null())
    eff["algorithm.init_max_samples"] =
        Value{json(std::min<std::int64_t>(64 * n0, kIntMax)), origin("algorithm.init_samples"), false};
  const std::int64_t n_max = i64("algorithm.init_max_samples");
  if (a.init == InitMode::data && n_max < n0)
    fail(origin("algorithm.init_max_samples"),
         "algorithm.init_max_samples: expected an integer >= algorithm.init_samples = " + std::to_string(n0) +
             " with algorithm.init: data (the largest window section 3 grows to), found " + std::to_string(n_max));
  a.init_max_samples = int(n_max);
  a.init_scale = num("algorithm.init_scale");
  a.block_size = int_or_auto("algorithm.block_size");
  a.precision_solve = str("algorithm.precision_solve") == "dense" ? PrecisionSolve::dense : PrecisionSolve::maintained;
  a.refactor_every = int(i64("algorithm.refactor_every"));
  const std::string missing = str("algorithm.missing");
  a.missing = missing == "error"       ? MissingMode::error
              : missing == "posterior" ? MissingMode::posterior
              : missing == "project"   ? MissingMode::project
              : missing == "drop"      ? MissingMode::drop
                                       : MissingMode::zero_fill;
  a.missing_rotation =
      str("algorithm.missing_rotation") == "observed" ? MissingRotation::observed : MissingRotation::geodesic;
  a.missing_cond_max = num("algorithm.missing_cond_max");
  const std::string noise = str("algorithm.noise");
  a.noise = noise == "isotropic" ? NoiseModel::isotropic : NoiseModel::diagonal;
  // The rewhiten_* and leverage_floor keys are used only with noise:
  // diagonal and accepted (range-checked) otherwise, as refactor_every is
  // without precision_solve: maintained, so a deck can sweep algorithm.noise.
  a.rewhiten_every = int(i64("algorithm.rewhiten_every"));
  a.rewhiten_min_count = int(i64("algorithm.rewhiten_min_count"));
  a.rewhiten_fmax = num("algorithm.rewhiten_fmax");
  a.leverage_floor = num("algorithm.leverage_floor");
  if (!npy && ms.outage_count > 0 && ms.outage_steps == 0)
    fail(origin("source.outage_count"),
         "source.outage_steps: expected an integer >= 1 (the outage's length in steps) when source.outage_count = " +
             std::to_string(ms.outage_count) + ", found 0");
  if (!npy && s.missing.any() && a.missing == MissingMode::error) {
    const char* key = eff.at("source.missing_rate").explicit_   ? "source.missing_rate"
                      : eff.at("source.outage_count").explicit_ ? "source.outage_count"
                                                                : "source.missing_block_rate";
    fail(origin(key), std::string(key) +
                          ": the synthetic stream has missing entries, but algorithm.missing is 'error' (a missing "
                          "entry stops its stream); set algorithm.missing to posterior (or project, drop, zero_fill)");
  }
  if (a.missing != MissingMode::error && a.precision_solve == PrecisionSolve::maintained)
    fail(origin("algorithm.precision_solve"),
         "algorithm.precision_solve: 'maintained' has no masked form yet; with algorithm.missing: " + missing +
             " use dense");
  if (a.noise == NoiseModel::diagonal && a.precision_solve == PrecisionSolve::maintained)
    fail(origin("algorithm.precision_solve"),
         "algorithm.precision_solve: 'maintained' has no whitened form yet; with algorithm.noise: diagonal use dense");

  // Section 9.1's segments. `auto` stays kAuto (resolve_segments settles it
  // for the run's dtype); what 9.1 and 9.9 refuse with time_segments > 1 is
  // refused here.
  SegmentParams& sg = c.segments;
  const auto is_auto = [&](const char* key) { return eff.at(key).value.is_string(); };
  sg.segments = int(i64("algorithm.time_segments"));
  sg.warmup = is_auto("algorithm.segment_warmup") ? kAuto : i64("algorithm.segment_warmup");
  sg.warmup_init = str("algorithm.segment_warmup_init") == "data" ? InitMode::data : InitMode::random;
  sg.tolerance = is_auto("algorithm.segment_tolerance") ? kAuto : num("algorithm.segment_tolerance");
  sg.max_passes = int_or_auto("algorithm.segment_max_passes");
  sg.gauge_carry = str("algorithm.segment_gauge") == "carry";
  if (sg.segments > 1) {
    const std::string P = "algorithm.time_segments: " + std::to_string(sg.segments);
    try {
      if (c.problem.dtype == Dtype::float32) (void)resolve_segments<float>(sg, a);
      else (void)resolve_segments<double>(sg, a);
    } catch (const std::invalid_argument& e) {
      fail(origin(is_auto("algorithm.segment_tolerance") ? "algorithm.time_segments" : "algorithm.segment_tolerance"),
           P + " with problem.dtype " + to_string(c.problem.dtype) + ": " + e.what());
    }
    if (a.missing != MissingMode::error)
      fail(origin("algorithm.missing"),
           P + " needs algorithm.missing: error, found " + missing +
               " (ALGORITHM.md 9.9: the certificate does not cover section 7's extra state; use time_segments: 1)");
    if (a.noise == NoiseModel::diagonal)
      fail(origin("algorithm.noise"),
           P + " needs algorithm.noise: isotropic, found diagonal (ALGORITHM.md 9.9: the certificate does not cover "
               "section 8's noise profile; use time_segments: 1)");
    if (a.precision_solve == PrecisionSolve::maintained)
      fail(origin("algorithm.precision_solve"),
           P + " needs algorithm.precision_solve: dense, found maintained (its factor of S is state that 9.4's "
               "boundary states do not carry: a segment restarted from its predecessor's end would factor afresh "
               "where the sequential run does not)");
  }

  if (eff.at("run.steps").value.is_string()) {  // `all`
    if (!npy)
      fail(origin("run.steps"),
           "run.steps: 'all' (every row of the input files) needs source.type npy; "
           "give a number of steps (an integer >= 1) for source.type " +
               c.source.type);
    c.run.steps_all = true;
    c.run.steps = 0;
  } else {
    c.run.steps = i64("run.steps");
  }
  c.run.warmup_steps = i64("run.warmup_steps");
  c.run.diagnostics_every = i64("run.diagnostics_every");
  c.run.progress_every_s = num("run.progress_every_s");
  c.run.check_accuracy = str("run.accuracy") == "checked";
  c.run.tracking_threshold = num("run.tracking_threshold");
  c.run.max_clamped_fraction = num("run.max_clamped_fraction");
  c.run.reference_check_steps = i64("run.reference_check_steps");
  c.run.reference_check_stream = std::uint64_t(i64("run.reference_check_stream"));
  c.run.seed = s.seed;

  c.output.result = str("output.result");
  c.output.state_dir = str("output.state_dir");
  CheckpointConfig& ck = c.output.checkpoint;
  ck.dir = str("output.checkpoint.dir");
  const bool by_steps = !eff.at("output.checkpoint.every_steps").value.is_null();
  const bool by_seconds = !eff.at("output.checkpoint.every_seconds").value.is_null();
  if (by_steps && by_seconds)
    fail(origin("output.checkpoint.every_seconds"),
         "output.checkpoint.every_seconds: cannot be combined with output.checkpoint.every_steps (given at " +
             where(origin("output.checkpoint.every_steps")) + "); give one of the two");
  for (const char* p : {"output.checkpoint.every_steps", "output.checkpoint.every_seconds"})
    if (!eff.at(p).value.is_null() && ck.dir.empty())
      fail(origin(p), "output.checkpoint.dir: required when " + std::string(p) +
                          " is given (expected the directory the checkpoints are written into)");
  if (by_steps) ck.every_steps = i64("output.checkpoint.every_steps");
  if (by_seconds) ck.every_seconds = num("output.checkpoint.every_seconds");
  ck.keep = int(i64("output.checkpoint.keep"));
  c.run.restart_from = str("run.restart_from");
  if (c.run.restart_from == "auto" && ck.dir.empty())
    fail(origin("run.restart_from"),
         "run.restart_from: 'auto' resumes from output.checkpoint.dir, which is not set; give "
         "output.checkpoint.dir or a checkpoint directory");

  // What a run in time segments does not do (yet): its segments reach their
  // steps out of order, so there is no diagnostics point nor checkpoint
  // position between the start and the end.
  if (sg.segments > 1) {
    const std::string P = "algorithm.time_segments: " + std::to_string(sg.segments);
    if (c.run.diagnostics_every > 0)
      fail(origin("run.diagnostics_every"),
           "run.diagnostics_every: expected 0 with " + P + ", found " + std::to_string(c.run.diagnostics_every) +
               " (the segments reach their steps out of order: only the final states are diagnosed)");
    if (!ck.dir.empty())
      fail(origin("output.checkpoint.dir"),
           "output.checkpoint.dir: a run with " + P +
               " is not checkpointed (no position between its start and its end that a restart could resume "
               "from); remove output.checkpoint or use time_segments: 1");
    if (!c.run.restart_from.empty())
      fail(origin("run.restart_from"), "run.restart_from: a run with " + P +
                                           " cannot resume from a checkpoint (it writes none); use time_segments: 1");
  }

  // Safety net: the library's own validation must agree.
  try {
    a.validate(c.problem.d, c.problem.rank);
  } catch (const std::invalid_argument& e) {
    fail(Origin{}, std::string("algorithm: ") + e.what());
  }
  if (!npy) {
    try {
      s.validate();
    } catch (const std::invalid_argument& e) {
      fail(Origin{}, std::string("source: ") + e.what());
    }
  }

  json& j = c.resolved;
  j = json::object();
  for (const auto& k : schema()) {
    const auto dot = k.name.find('.');  // a key group's leaf: nested
    if (dot == std::string::npos) j[k.section][k.name] = eff.at(k.path()).value;
    else j[k.section][k.name.substr(0, dot)][k.name.substr(dot + 1)] = eff.at(k.path()).value;
  }
  j["input"] = {{"deck", deck_}, {"overrides", overrides_}};
  return c;
}

}  // namespace mosaic::deck
