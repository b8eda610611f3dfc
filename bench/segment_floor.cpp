// mosaic_segment_floor: the two-run floor of ALGORITHM.md 9.8 on the host
// reference, in double and in float. 9.8 sets segment_tolerance at 1e-12 in
// double, about 300 times the floor of two runs that differ only in rounding,
// and gives float no default until its floor is measured: this measures it,
// the way the spec's study did, on the synthetic stream of section 5.
//
//   mosaic_segment_floor [--d 256] [--r 8] [--steps 6000] [--settle 40000] [--seeds 3]
//
// For each dtype, eigengap case and seed, one line:
// - gauge_end, gauge_max: the boundary mismatch delta of 9.4 (computed in
//   double) between a state and its gauge-rotated twin (U R, R^T S R, R a
//   random orthogonal matrix, the twin rounded to the dtype) after both step
//   the same --steps samples: at the end, and the largest every 100 steps;
// - settled_max: two runs from different starts (the stream's init, and
//   init: data on the 2r samples ending at step 1,000 as a cold worker of 9.3
//   would) stepped to --settle, the largest delta over the last quarter:
//   the floor where the trajectories have contracted by then (W12 of 9.10:
//   about 6,000 steps with a clear gap, 30,000 with the small one), their
//   remaining distance where they have not (no eigengap: never).
// Cases: clear gap (signal 4 .. 1, noise std 0.1), small gap
// (lambda_r / lambda_{r+1} = 1.25: a geometric ladder of rank 2r), no gap
// (rank 2r, equal eigenvalues). Default rates. Not a benchmark of speed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mosaic/algorithm/reference.hpp"
#include "mosaic/algorithm/segments.hpp"
#include "mosaic/algorithm/synthetic.hpp"

namespace {

using namespace mosaic;

struct Options {
  int d = 256, r = 8, seeds = 3;
  std::int64_t steps = 6000, settle = 40000;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "mosaic_segment_floor: %s (see the comment at the top of bench/segment_floor.cpp)\n",
               why.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (i + 1 >= argc) usage("missing value for " + key);
    const char* v = argv[++i];
    char* end = nullptr;
    const long long n = std::strtoll(v, &end, 10);
    if (*end != '\0' || n < 1) usage(key + " needs a positive integer, got '" + v + "'");
    if (key == "--d") o.d = int(n);
    else if (key == "--r") o.r = int(n);
    else if (key == "--steps") o.steps = n;
    else if (key == "--settle") o.settle = n;
    else if (key == "--seeds") o.seeds = int(n);
    else usage("unknown option " + key);
  }
  if (o.settle < 4000) usage("--settle must be at least 4000 (the cold start is at step 1000)");
  if (4 * o.r > o.d) usage("--r must be at most d / 4 (the no-gap and small-gap sources have rank 2r)");
  return o;
}

SyntheticSpec case_spec(const std::string& name, const Options& o, std::uint64_t seed) {
  SyntheticSpec s;
  s.d = o.d;
  s.r = o.r;
  s.lambda_max = 4.0;
  s.lambda_min = 1.0;
  s.noise = 0.1;
  s.seed = seed;
  if (name == "small_gap") {
    s.r = 2 * o.r;
    s.lambda_min = s.lambda_max / std::pow(1.25, double(s.r - 1));
  } else if (name == "no_gap") {
    s.r = 2 * o.r;
    s.lambda_min = s.lambda_max;
  }
  return s;
}

// A random orthogonal r x r matrix from the synthetic generator's own draws.
std::vector<double> random_rotation(int r, std::uint64_t seed) {
  std::vector<double> R(std::size_t(r) * r);
  for (int k = 0; k < r * r; ++k) R[k] = counter_normal(seed, RngDomain::init_basis, 0xF100Dull, 0, std::uint64_t(k));
  host::orthonormalize_columns(R, r, r);
  return R;
}

template <class T>
void measure(const char* dtype, const std::string& name, const Options& o, std::uint64_t seed) {
  const SyntheticSpec spec = case_spec(name, o, seed);
  const SyntheticTruth truth = make_synthetic_truth(spec, 0);
  const MosaicParams p;
  const int d = o.d, r = o.r, n0 = p.resolved_init_samples(r);
  std::vector<T> x(static_cast<std::size_t>(d));
  auto sample = [&](std::int64_t row) {
    synthetic_sample(spec, truth, 0, std::uint64_t(row), x.data());
    return x.data();
  };
  std::vector<T> X(std::size_t(n0) * d);
  auto window_before = [&](std::int64_t end) {
    for (int k = 0; k < n0; ++k) std::copy_n(sample(end - n0 + k), d, X.begin() + std::size_t(k) * d);
    return reference_init_data(X.data(), n0, d, r, p);
  };
  // Gauge-rotated twins.
  ReferenceState<T> a = window_before(n0);
  ReferenceState<T> b = a;
  apply_gauge(b, random_rotation(r, seed));
  double gauge_max = 0;
  for (std::int64_t t = 1; t <= o.steps; ++t) {
    const T* s = sample(n0 + t - 1);
    reference_step(a, s, p);
    reference_step(b, s, p);
    if (t % 100 == 0) gauge_max = std::max(gauge_max, boundary_mismatch(b, a).delta());
  }
  const double gauge_end = boundary_mismatch(b, a).delta();
  // Two starts: the stream's, and a cold one at step 1,000.
  ReferenceState<T> seq = window_before(n0);
  for (std::int64_t t = 1; t <= 1000; ++t) reference_step(seq, sample(n0 + t - 1), p);
  ReferenceState<T> cold = window_before(n0 + 1000);
  cold.steps = 1000;
  double settled_max = 0;
  for (std::int64_t t = 1001; t <= o.settle; ++t) {
    const T* s = sample(n0 + t - 1);
    reference_step(seq, s, p);
    reference_step(cold, s, p);
    if (t > o.settle - o.settle / 4 && t % 100 == 0)
      settled_max = std::max(settled_max, boundary_mismatch(cold, seq).delta());
  }
  std::printf("%-6s %-9s seed %llu  gauge_end %.3g  gauge_max %.3g  settled_max %.3g\n", dtype, name.c_str(),
              static_cast<unsigned long long>(seed), gauge_end, gauge_max, settled_max);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  std::printf(
      "# mosaic_segment_floor: d %d, r %d, gauge twins over %lld steps, two starts settled to step %lld, "
      "default rates\n",
      o.d, o.r, static_cast<long long>(o.steps), static_cast<long long>(o.settle));
  for (const char* name : {"clear_gap", "small_gap", "no_gap"})
    for (int seed = 1; seed <= o.seeds; ++seed) {
      measure<double>("double", name, o, std::uint64_t(seed));
      measure<float>("float", name, o, std::uint64_t(seed));
    }
  return 0;
}
