// mosaic_reference_study: the host reference of ALGORITHM.md sections 7-8
// (reference_masked.hpp) on the synthetic drifting stream of section 5 with
// a missingness pattern (synthetic_missing.hpp), to set the reference's
// accuracy beside the figures of the spec's sections 7.11 and 8.6. One
// stream per seed, double, the normative rates; not a benchmark of speed.
//
//   mosaic_reference_study [--d 256] [--r 8] [--noise 0.3 | --noise-range 0.05,0.5]
//       [--drift 1e-4] [--steps 6000] [--window 3000] [--every 100] [--seeds 3]
//       [--mcar 0.5] [--outage-fraction 0.1 --outage-start 4000 --outage-steps 2000]
//       [--missing posterior|project|zero_fill|drop] [--rotation observed|geodesic]
//       [--noise-model isotropic|diagonal] [--label TEXT]
//
// Prints one line per seed and their mean and standard deviation:
// - dist: the normalized projector distance 1 - ||B^T V(t)||_F^2 / r of the
//   data-coordinate subspace B = orth(Psi^1/2 U) to the truth, averaged over
//   the steps [window, steps) every --every steps, and at the step
//   outage-start + outage-steps - 1 (dist_end; the outage's last step when
//   there is one);
// - s2_bias: mean_j(s2 psi_j) / mean_j(sigma_j^2) - 1 at the same points;
// - eig_r_bias: the smallest debiased eigenvalue over the truth's
//   (lambda_min), minus 1, at the same points;
// - kept: with an outage, the share of the truth's loading on the dropped
//   channels that the estimate holds at the outage's end,
//   sum_{j in J} ||B_j||^2 / sum_{j in J} ||V_j||^2 (1: kept);
// - skipped, dropped, missing: the counters of 7.10.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "mosaic/algorithm/reference_masked.hpp"
#include "mosaic/algorithm/synthetic.hpp"
#include "mosaic/algorithm/synthetic_missing.hpp"

namespace {

using namespace mosaic;

struct Options {
  int d = 256, r = 8, steps = 6000, window = 3000, every = 100, seeds = 3;
  double noise = 0.3, noise_min = 0, noise_max = 0, drift = 1e-4, mcar = 0.0;
  double outage_fraction = 0.0;
  std::uint64_t outage_start = 4000, outage_steps = 2000;
  MosaicParams params;
  std::string label;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "mosaic_reference_study: %s (see the comment at the top of bench/reference_masked_study.cpp)\n",
               why.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  o.params.missing = MissingMode::posterior;
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (i + 1 >= argc) usage("missing value after " + key);
    const std::string v = argv[++i];
    auto num = [&]() {
      char* end = nullptr;
      const double x = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0') usage(key + ": expected a number, got '" + v + "'");
      return x;
    };
    if (key == "--d") o.d = int(num());
    else if (key == "--r") o.r = int(num());
    else if (key == "--noise") o.noise = num();
    else if (key == "--noise-range") {
      if (std::sscanf(v.c_str(), "%lf,%lf", &o.noise_min, &o.noise_max) != 2) usage("--noise-range: expected LO,HI");
    } else if (key == "--drift") o.drift = num();
    else if (key == "--steps") o.steps = int(num());
    else if (key == "--window") o.window = int(num());
    else if (key == "--every") o.every = int(num());
    else if (key == "--seeds") o.seeds = int(num());
    else if (key == "--mcar") o.mcar = num();
    else if (key == "--outage-fraction") o.outage_fraction = num();
    else if (key == "--outage-start") o.outage_start = std::uint64_t(num());
    else if (key == "--outage-steps") o.outage_steps = std::uint64_t(num());
    else if (key == "--label") o.label = v;
    else if (key == "--missing") {
      if (v == "posterior") o.params.missing = MissingMode::posterior;
      else if (v == "project") o.params.missing = MissingMode::project;
      else if (v == "zero_fill") o.params.missing = MissingMode::zero_fill;
      else if (v == "drop") o.params.missing = MissingMode::drop;
      else usage("--missing: expected posterior, project, zero_fill or drop, got '" + v + "'");
    } else if (key == "--rotation") {
      if (v == "observed") o.params.missing_rotation = MissingRotation::observed;
      else if (v == "geodesic") o.params.missing_rotation = MissingRotation::geodesic;
      else usage("--rotation: expected observed or geodesic, got '" + v + "'");
    } else if (key == "--noise-model") {
      if (v == "isotropic") o.params.noise = NoiseModel::isotropic;
      else if (v == "diagonal") o.params.noise = NoiseModel::diagonal;
      else usage("--noise-model: expected isotropic or diagonal, got '" + v + "'");
    } else {
      usage("unknown option " + key);
    }
  }
  if (o.window < 0 || o.window >= o.steps || o.every < 1 || o.seeds < 1)
    usage("need 0 <= window < steps, every >= 1, seeds >= 1");
  return o;
}

struct Result {
  double dist = 0, s2_bias = 0, eig_bias = 0, dist_end = NAN, kept = NAN;
  std::int64_t skipped = 0, dropped = 0;
  double missing = 0;
};

// The share of V's loading on rows [j0, j1) that B holds there.
double loading_share(const std::vector<double>& B, const std::vector<double>& V, int r, int j0, int j1) {
  double b = 0, v = 0;
  for (int i = j0; i < j1; ++i)
    for (int j = 0; j < r; ++j) {
      b += B[std::size_t(i) * r + j] * B[std::size_t(i) * r + j];
      v += V[std::size_t(i) * r + j] * V[std::size_t(i) * r + j];
    }
  return b / v;
}

Result run(const Options& o, std::uint64_t seed) {
  SyntheticSpec s;
  s.d = o.d;
  s.r = o.r;
  s.lambda_max = 10.0;
  s.lambda_min = 1.0;
  s.noise = o.noise;
  s.noise_min = o.noise_min;
  s.noise_max = o.noise_max;
  s.drift = o.drift;
  s.seed = seed;
  const SyntheticTruth truth = make_synthetic_truth(s, 0);
  MissingSpec m;
  m.mcar_rate = o.mcar;
  if (o.outage_fraction > 0) {
    m.outage_first = 0;
    m.outage_count = int(std::lround(o.outage_fraction * o.d));
    m.outage_start = o.outage_start;
    m.outage_steps = o.outage_steps;
  }
  m.validate(o.d);
  const int d = o.d, r = o.r, n0 = o.params.resolved_init_samples(r);
  auto sample = [&](std::uint64_t t, double* x) {
    synthetic_sample(s, truth, 0, t, x);
    apply_synthetic_missing(m, seed, 0, t, x, d);
  };
  std::vector<double> X(std::size_t(n0) * d), x(static_cast<std::size_t>(d));
  for (int t = 0; t < n0; ++t) sample(std::uint64_t(t), X.data() + std::size_t(t) * d);
  MaskedReferenceState<double> st = reference_init_data_masked(X.data(), n0, d, r, o.params);
  Result res;
  int points = 0;
  for (std::uint64_t t = std::uint64_t(n0); t < std::uint64_t(o.steps); ++t) {
    sample(t, x.data());
    (void)reference_masked_step(st, x.data(), o.params);
    const bool at_window = t >= std::uint64_t(o.window) && (t - std::uint64_t(o.window)) % std::uint64_t(o.every) == 0;
    const bool at_outage_end = t + 1 == o.outage_start + o.outage_steps;
    if (!at_window && !at_outage_end) continue;
    const std::vector<double> B = reference_data_basis(st), V = truth.basis_at(s, t);
    if (at_outage_end) {
      res.dist_end = basis_projector_distance(B, V, d, r);
      if (m.outage_count > 0) res.kept = loading_share(B, V, r, m.outage_first, m.outage_first + m.outage_count);
    }
    if (!at_window) continue;
    res.dist += basis_projector_distance(B, V, d, r);
    const std::vector<double> nv = reference_noise_variances(st);
    double est = 0;
    for (const double v : nv) est += v / d;
    res.s2_bias += est / truth.noise_variance - 1.0;
    res.eig_bias += reference_debiased_spectrum(st)[std::size_t(r) - 1] / s.lambda_min - 1.0;
    ++points;
  }
  res.dist /= points;
  res.s2_bias /= points;
  res.eig_bias /= points;
  res.skipped = st.skipped_steps;
  res.dropped = st.dropped_samples;
  res.missing = double(st.missing_entries) / double(st.total_entries);
  return res;
}

void print(const char* who, const Result& r) {
  std::printf(
      "  %-6s dist %.4f  s2_bias %+.4f  eig_r_bias %+.4f  dist_end %.4f  kept %.3f  skipped %lld  dropped %lld  missing %.3f\n",
      who, r.dist, r.s2_bias, r.eig_bias, r.dist_end, r.kept, (long long)r.skipped, (long long)r.dropped, r.missing);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  std::printf(
      "%s: d %d r %d noise %s drift %g steps %d window %d every %d mcar %g outage %g [%llu, +%llu) missing %s rotation %s noise_model %s\n",
      o.label.empty() ? "study" : o.label.c_str(), o.d, o.r,
      o.noise_max > 0 ? ("[" + std::to_string(o.noise_min) + ", " + std::to_string(o.noise_max) + "]").c_str()
                      : std::to_string(o.noise).c_str(),
      o.drift, o.steps, o.window, o.every, o.mcar, o.outage_fraction, (unsigned long long)o.outage_start,
      (unsigned long long)o.outage_steps, to_string(o.params.missing), to_string(o.params.missing_rotation),
      to_string(o.params.noise));
  std::vector<Result> rs;
  try {
    for (int k = 0; k < o.seeds; ++k) {
      rs.push_back(run(o, std::uint64_t(k + 1)));
      print(("seed" + std::to_string(k + 1)).c_str(), rs.back());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mosaic_reference_study: %s\n", e.what());
    return 1;
  }
  auto stat = [&](double Result::*f, double& mean, double& sd) {
    mean = 0;
    for (const auto& r : rs) mean += r.*f / rs.size();
    sd = 0;
    for (const auto& r : rs) sd += (r.*f - mean) * (r.*f - mean);
    sd = rs.size() > 1 ? std::sqrt(sd / (rs.size() - 1)) : 0.0;
  };
  double md, sd_d, ms, sd_s, me, sd_e, mend, sd_end, mk, sd_k;
  stat(&Result::dist, md, sd_d);
  stat(&Result::s2_bias, ms, sd_s);
  stat(&Result::eig_bias, me, sd_e);
  stat(&Result::dist_end, mend, sd_end);
  stat(&Result::kept, mk, sd_k);
  std::printf(
      "  mean   dist %.4f +- %.4f  s2_bias %+.4f +- %.4f  eig_r_bias %+.4f +- %.4f  dist_end %.4f +- %.4f  kept %.3f +- %.3f\n",
      md, sd_d, ms, sd_s, me, sd_e, mend, sd_end, mk, sd_k);
  return 0;
}
