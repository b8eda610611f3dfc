// The exact blocked update (algorithm.block_size = k > 1, blocked_step.hpp)
// and the maintained precision solve against the sequential kernel
// (batched_engine.hpp) on the same samples: basis-free quantities after
// 10,000 steps, clamp counts, breakdown step and code, team-size and GEMM
// kernel independence; on data with large offsets (the centred block of
// ALGORITHM.md section 6), the unresolved-residual counter, and the
// orthonormality of a long float run (issue 12).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "mosaic/algorithm/reference.hpp"
#include "mosaic/engine/batch_diagnostics.hpp"
#include "mosaic/engine/batched_engine.hpp"
#include "mosaic/sources/synthetic_source.hpp"
#include "test_reference_helpers.hpp"

namespace {

using namespace mosaic;
using Exec = Kokkos::DefaultExecutionSpace;

// The GEMM kernels of the blocked update on Exec (tiled: host spaces only).
std::vector<BlockGemm> gemm_kernels() {
  if (is_host_space<Exec>) return {BlockGemm::vendor, BlockGemm::tiled, BlockGemm::kokkos_batched};
  return {BlockGemm::vendor, BlockGemm::kokkos_batched};
}
using Mem = Exec::memory_space;

constexpr int kD = 32, kR = 4, kSteps = 10000;
const std::vector<std::uint64_t> kIds = {3, 11};

// Samples with a decaying spectrum, a per-stream mean and a slowly rotating
// leading pair of axes: a pure function of (stream, step, i).
double sample_value(std::uint64_t stream, std::int64_t step, int i) {
  const double scale = 2.0 / (1.0 + 0.5 * i);
  const double mean = 0.3 * counter_normal(77, RngDomain::mean, stream, 0, i);
  if (i < 2) {
    const double a = 0.002 * double(step);
    const double n0 = counter_normal(77, RngDomain::noise, stream, std::uint64_t(step), 0);
    const double n1 = counter_normal(77, RngDomain::noise, stream, std::uint64_t(step), 1);
    return mean + 2.0 * (i == 0 ? std::cos(a) * n0 - std::sin(a) * n1 : std::sin(a) * n0 + std::cos(a) * n1);
  }
  return mean + scale * counter_normal(77, RngDomain::noise, stream, std::uint64_t(step), i);
}

// The synthetic stream family of these tests (drift 1e-3 rad/step).
SyntheticSpec drifting_spec(int d, int r, std::uint64_t seed) {
  SyntheticSpec spec;
  spec.d = d;
  spec.r = r;
  spec.lambda_max = 4.0;
  spec.lambda_min = 0.5;
  spec.noise = 0.1;
  spec.drift = 1e-3;
  spec.seed = seed;
  return spec;
}

// samples: sample_value; synthetic: SyntheticDriftSource(drifting_spec);
// subspace: subspace_value (zero noise: rho^2 at rounding level);
// wide_spectrum: wide_spectrum_value (||y||^2 / rho^2 ~ 1e10).
enum class Source { samples, synthetic, subspace, wide_spectrum };
const char* name(Source s) {
  return s == Source::samples     ? "samples"
         : s == Source::synthetic ? "synthetic"
         : s == Source::subspace  ? "subspace"
                                  : "wide_spectrum";
}
// Parameter values in test names (gtest, and ctest via gtest_discover_tests).
void PrintTo(Source s, std::ostream* os) { *os << name(s); }

// Samples lying exactly (up to the rounding to T) in an r-dimensional affine
// subspace: mean + sum_j q_j (2 / (1 + j)) n_j(step), no noise; q_j a fixed
// (non-orthonormal) Gaussian basis. A pure function of (stream, step, i).
double subspace_value(std::uint64_t stream, std::int64_t step, int i, int d, int r) {
  double v = 0.3 * counter_normal(77, RngDomain::mean, stream, 0, i);
  for (int j = 0; j < r; ++j)
    v += counter_normal(77, RngDomain::basis, stream, std::uint64_t(j), i) / std::sqrt(double(d)) * (2.0 / (1.0 + j)) *
         counter_normal(77, RngDomain::noise, stream, std::uint64_t(step), j);
  return v;
}

// Samples whose spectrum spans 1e6 with tiny noise: mean + sum_j q_j
// sqrt(lambda_j) n_j(step) + 1e-4 n_i(step), lambda_j log-spaced from 1e3
// down to 1e-3, q_j a fixed Gaussian basis of norm about 1. A pure function
// of (stream, step, i).
double wide_spectrum_value(std::uint64_t stream, std::int64_t step, int i, int d, int r) {
  double v = 0.3 * counter_normal(77, RngDomain::mean, stream, 0, i) +
             1e-4 * counter_normal(79, RngDomain::noise, stream, std::uint64_t(step), i);
  for (int j = 0; j < r; ++j) {
    const double lambda = std::pow(10.0, 3.0 - 6.0 * j / std::max(1, r - 1));
    v += counter_normal(77, RngDomain::basis, stream, std::uint64_t(j), i) / std::sqrt(double(d)) * std::sqrt(lambda) *
         counter_normal(77, RngDomain::noise, stream, std::uint64_t(step), j);
  }
  return v;
}

// The samples of a run: shape, stream ids and a constant offset per stream
// and coordinate added to every sample, offset[b] * (1 + 0.1 n_i(id)) for
// the stream ids[b] (a pure function of (stream, i); offset empty = none).
struct Problem {
  int d = kD, r = kR;
  std::vector<std::uint64_t> ids = kIds;
  std::vector<double> offset;
  double offset_at(std::size_t b, int i) const {
    if (offset.empty() || offset[b] == 0.0) return 0.0;
    return offset[b] * (1.0 + 0.1 * counter_normal(78, RngDomain::mean, ids[b], 1, std::uint64_t(i)));
  }
};

// Writes samples first .. first+n-1 of every stream into X (B x n x d).
template <class T>
struct Feeder {
  Source source;
  Problem pr;
  SyntheticSpec spec;
  std::unique_ptr<SyntheticDriftSource<T, Exec>> synth;
  explicit Feeder(Source s, Problem problem = Problem())
      : source(s), pr(std::move(problem)), spec(drifting_spec(pr.d, pr.r, 99)) {
    if (s == Source::synthetic) synth = std::make_unique<SyntheticDriftSource<T, Exec>>(spec, pr.ids);
  }
  void block(std::int64_t first, int n, Kokkos::View<T***, Kokkos::LayoutRight, Mem> X) const {
    if (synth) {
      synth->generate_block(first, n, X);
      if (pr.offset.empty()) return;
    }
    auto h = Kokkos::create_mirror_view(X);
    if (synth) Kokkos::deep_copy(h, X);
    for (std::size_t b = 0; b < pr.ids.size(); ++b)
      for (int k = 0; k < n; ++k)
        for (int i = 0; i < pr.d; ++i) {
          const double v = synth                             ? double(h(b, k, i))
                           : source == Source::subspace      ? subspace_value(pr.ids[b], first + k, i, pr.d, pr.r)
                           : source == Source::wide_spectrum ? wide_spectrum_value(pr.ids[b], first + k, i, pr.d, pr.r)
                                                             : sample_value(pr.ids[b], first + k, i);
          h(b, k, i) = T(v + pr.offset_at(b, i));
        }
    Kokkos::deep_copy(X, h);
  }
};

struct Outcome {
  std::vector<ReferenceState<double>> states;  // widened to double
  std::vector<int> status;
  std::vector<std::int64_t> breakdown_step;
  std::vector<double> drift;
  std::vector<std::int64_t> refactors;
  std::vector<std::int64_t> unresolved;  // StreamBatch::unresolved_residual_steps
  std::vector<std::int64_t> recomputed;  // StreamBatch::residual_recomputations
  BatchDiagnostics diag;                 // compute_diagnostics of the final batch
};

template <class T>
ReferenceState<double> widen(const ReferenceState<T>& s) {
  ReferenceState<double> o(s.d, s.r);
  for (std::size_t i = 0; i < s.mu.size(); ++i) o.mu[i] = s.mu[i];
  for (std::size_t i = 0; i < s.U.size(); ++i) o.U[i] = s.U[i];
  for (std::size_t i = 0; i < s.S.size(); ++i) o.S[i] = s.S[i];
  o.s2 = s.s2;
  o.steps = s.steps;
  o.clamped_steps = s.clamped_steps;
  o.reorthonormalizations = s.reorthonormalizations;
  o.prequential = s.prequential;
  return o;
}

// Runs `steps` steps of the streams of `pr` with p.block_size: sequential
// step() when the engine's resolved block size is 1, else step_block in
// blocks of k (the last one shorter). init: random (seed 4242), or, when
// p.init is data and no `start` is given, init: data from the first n0
// samples, the steps then taking samples n0 .. n0+steps-1. `poison`:
// (stream, step) whose sample gets poison_value in one entry (none if stream < 0).
template <class T>
Outcome run_on(const Problem& pr, MosaicParams p, Source source, int steps, int team_size = -1,
               BlockGemm gemm = BlockGemm::automatic, std::pair<int, std::int64_t> poison = {-1, 0},
               const ReferenceState<T>* start = nullptr, T poison_value = std::numeric_limits<T>::quiet_NaN()) {
  const int B = int(pr.ids.size()), d = pr.d, r = pr.r;
  Feeder<T> feed(source, pr);
  StreamBatch<T, Exec> sb(B, d, r, pr.ids);
  MosaicEngine<T, Exec> eng(p, B, d, r);
  if (team_size >= 0) eng.set_team_size(team_size);
  eng.set_block_gemm(gemm);
  std::int64_t first = 0;  // sample index of step 0
  if (p.init == InitMode::data && !start) {
    const int n0 = p.resolved_init_samples(r);
    Kokkos::View<T***, Kokkos::LayoutRight, Mem> X0("X0", B, n0, d);
    feed.block(0, n0, X0);
    eng.init_data(sb, X0);
    first = n0;
  } else {
    eng.init_random(sb, 4242);
  }
  if (start)
    for (int b = 0; b < B; ++b) sb.from_host(b, *start);
  const int k = eng.block_size();
  for (std::int64_t t = 0; t < steps; t += k) {
    const int n = int(std::min<std::int64_t>(k, steps - t));
    Kokkos::View<T***, Kokkos::LayoutRight, Mem> Xc("Xc", B, n, d);
    feed.block(first + t, n, Xc);
    if (poison.first >= 0 && poison.second >= t && poison.second < t + n) {
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), Xc);
      h(poison.first, int(poison.second - t), 5) = poison_value;
      Kokkos::deep_copy(Xc, h);
    }
    if (eng.blocked()) {
      eng.step_block(sb, Xc);
    } else {
      eng.step(sb, Kokkos::subview(Xc, Kokkos::ALL(), 0, Kokkos::ALL()));
    }
  }
  Outcome o;
  auto st = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sb.status);
  auto bs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sb.breakdown_step);
  auto dr = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sb.solve_drift);
  auto rf = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sb.refactors);
  auto ur = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sb.unresolved_residual_steps);
  auto rc = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sb.residual_recomputations);
  for (int b = 0; b < B; ++b) {
    o.states.push_back(widen(sb.to_host(b)));
    o.status.push_back(st(b));
    o.breakdown_step.push_back(bs(b));
    o.drift.push_back(dr(b));
    o.refactors.push_back(rf(b));
    o.unresolved.push_back(ur(b));
    o.recomputed.push_back(rc(b));
  }
  o.diag = compute_diagnostics(sb);
  return o;
}

// run_on with the default problem (kD, kR, kIds, no offset).
template <class T>
Outcome run(MosaicParams p, Source source, int steps, int team_size = -1, BlockGemm gemm = BlockGemm::automatic,
            std::pair<int, std::int64_t> poison = {-1, 0}, const ReferenceState<T>* start = nullptr,
            T poison_value = std::numeric_limits<T>::quiet_NaN()) {
  return run_on<T>(Problem(), p, source, steps, team_size, gemm, poison, start, poison_value);
}

// Basis-free gaps with explicit d x d projectors and covariances (small d):
// mu and s2 relative, the projector distance ||P_a - P_b||_F and its
// subspace form |r - ||U_a^T U_b||_F^2| (= ||P_a - P_b||_F^2 / 2 for
// orthonormal bases), ||U_a S_a U_a^T - U_b S_b U_b^T||_F / ||U_b S_b U_b^T||_F.
struct Gap {
  double mu = 0, s2 = 0, projector = 0, subspace = 0, cov = 0;
  void fold(const Gap& g) {  // componentwise max (a NaN sticks)
    auto up = [](double& m, double v) {
      if (!(v <= m)) m = v;
    };
    up(mu, g.mu);
    up(s2, g.s2);
    up(projector, g.projector);
    up(subspace, g.subspace);
    up(cov, g.cov);
  }
};
Gap compare(const ReferenceState<double>& a, const ReferenceState<double>& b) {
  const int d = a.d, r = a.r;
  Gap g;
  double mu_scale = 0;
  for (int i = 0; i < d; ++i) {
    g.mu = std::max(g.mu, std::fabs(a.mu[i] - b.mu[i]));
    mu_scale = std::max(mu_scale, std::fabs(b.mu[i]));
  }
  g.mu /= std::max(mu_scale, 1e-300);
  g.s2 = std::fabs(a.s2 - b.s2) / std::fabs(b.s2);
  double dp = 0, dc = 0, nc = 0;
  for (int i = 0; i < d; ++i)
    for (int k = 0; k < d; ++k) {
      double pa = 0, pb = 0, ca = 0, cb = 0;
      for (int x = 0; x < r; ++x) {
        pa += a.u(i, x) * a.u(k, x);
        pb += b.u(i, x) * b.u(k, x);
        for (int y = 0; y < r; ++y) {
          ca += a.u(i, x) * a.S[x * r + y] * a.u(k, y);
          cb += b.u(i, x) * b.S[x * r + y] * b.u(k, y);
        }
      }
      dp += (pa - pb) * (pa - pb);
      dc += (ca - cb) * (ca - cb);
      nc += cb * cb;
    }
  g.projector = std::sqrt(dp);
  g.cov = std::sqrt(dc / nc);
  double overlap = 0;  // ||U_a^T U_b||_F^2
  for (int x = 0; x < r; ++x)
    for (int y = 0; y < r; ++y) {
      double v = 0;
      for (int i = 0; i < d; ++i) v += a.u(i, x) * b.u(i, y);
      overlap += v * v;
    }
  g.subspace = std::fabs(double(r) - overlap);
  return g;
}

void expect_agree(const Outcome& a, const Outcome& ref, double tol, const std::string& what, bool same_clamps = true) {
  for (std::size_t b = 0; b < ref.states.size(); ++b) {
    const Gap g = compare(a.states[b], ref.states[b]);
    if (std::getenv("MOSAIC_TEST_GAPS"))
      std::printf(
          "%s stream %zu: mu %.2e s2 %.2e P %.2e r-|UaUb|^2 %.2e C %.2e clamps %lld/%lld s2 %g/%g steps %lld/%lld status %d/%d\n",
          what.c_str(), b, g.mu, g.s2, g.projector, g.subspace, g.cov, (long long)a.states[b].clamped_steps,
          (long long)ref.states[b].clamped_steps, a.states[b].s2, ref.states[b].s2, (long long)a.states[b].steps,
          (long long)ref.states[b].steps, a.status[b], ref.status[b]);
    EXPECT_LE(g.mu, tol) << what << " stream " << b;
    EXPECT_LE(g.s2, tol) << what << " stream " << b;
    EXPECT_LE(g.projector, tol) << what << " stream " << b;
    EXPECT_LE(g.subspace, tol) << what << " stream " << b;
    EXPECT_LE(g.cov, tol) << what << " stream " << b;
    EXPECT_EQ(a.states[b].steps, ref.states[b].steps) << what;
    if (same_clamps) EXPECT_EQ(a.states[b].clamped_steps, ref.states[b].clamped_steps) << what;
    EXPECT_EQ(a.status[b], ref.status[b]) << what;
    // Section 4's sums (the surprises exactly where the clamps are: both
    // are thresholds on q).
    const double preq = test::prequential_gap(a.states[b], ref.states[b], same_clamps, ref.states[b].steps > 0, what);
    EXPECT_LE(preq, tol) << what << " stream " << b << ": prequential sums";
    EXPECT_EQ(a.breakdown_step[b], ref.breakdown_step[b]) << what;
  }
}

MosaicParams base_params(int reorth) {
  MosaicParams p;  // normative defaults: exact, precision, gamma = 1
  p.init = InitMode::random;
  p.max_step = 0.05;  // a trust radius that clamps now and then (q > ~6)
  p.reorthonormalize_every = reorth;
  return p;
}

// ---- blocked vs sequential, 10,000 steps -------------------------------------
// One test per (source, reorth) and scalar type, looping over k, so the
// sequential baseline is run once per test process.

using BlockCase = std::tuple<Source, int /*reorth*/>;
class BlockedVsSequential : public ::testing::TestWithParam<BlockCase> {};

std::string case_name(int k, const BlockCase& c) {
  return "k=" + std::to_string(k) + "/" + name(std::get<0>(c)) + "/reorth=" + std::to_string(std::get<1>(c));
}

const int kBlockSizes[] = {2, 16, 64, 100};  // 64 does not divide 10,000 (partial last block)

TEST_P(BlockedVsSequential, Double1e10) {
  const auto [source, reorth] = GetParam();
  const Outcome seq = run<double>(base_params(reorth), source, kSteps);
  EXPECT_GT(seq.states[0].clamped_steps, 0);  // the clamp is exercised
  for (int k : kBlockSizes) {
    MosaicParams p = base_params(reorth);
    p.block_size = k;
    expect_agree(run<double>(p, source, kSteps), seq, 1e-10, "double " + case_name(k, GetParam()));
  }
}

TEST_P(BlockedVsSequential, Float1e3) {
  const auto [source, reorth] = GetParam();
  const Outcome seq = run<float>(base_params(reorth), source, kSteps);
  for (int k : kBlockSizes) {
    MosaicParams p = base_params(reorth);
    p.block_size = k;
    const Outcome blk = run<float>(p, source, kSteps);
    // The blocked path does its r x r algebra in double, the sequential float
    // kernel in float: a clamp decision within float rounding of max_step may
    // differ, so clamp counts must agree exactly in double only.
    expect_agree(blk, seq, 1e-3, "float " + case_name(k, GetParam()), false);
    for (int b = 0; b < 2; ++b)
      EXPECT_NEAR(double(blk.states[b].clamped_steps), double(seq.states[b].clamped_steps), 2.0);
  }
}

INSTANTIATE_TEST_SUITE_P(Blocks, BlockedVsSequential,
                         ::testing::Combine(::testing::Values(Source::samples, Source::synthetic),
                                            ::testing::Values(0, 50)));

// ---- offset data (issue 12) ---------------------------------------------------
// Samples with a constant offset per stream and coordinate (Problem::offset:
// 0, 30, 300 and 1000 times 1 + 0.1 n_i): the centred block D = [x_t - mu0]
// of ALGORITHM.md section 6 keeps the terms of rho^2 at the size of ||y||^2,
// so blocked equals sequential as without offset, and no residual is at
// rounding level. (The raw block [mu0, x_1..x_k] gave, with offset 300, s2
// off by 0.87 in float and 2.6e-10 in double.)
// Grid, chosen to keep these tests at a few seconds each: the four offsets
// are four streams of one batch (ids 21..24), so one run covers them all and
// the sequential baseline is run once per (shape, scalar type); per shape,
// k in {2, 16, 50, 64} (16 and 50 divide 5,000, 64 leaves a short last
// block) with the deck default reorthonormalize_every: auto (float blocked:
// at every block end; sequential and double: never), and in float also
// k = 64 with no re-orthonormalization at all (the case that lost s2 and
// orthonormality before). Shapes: d and r not multiples of the tile widths
// (r = 7, 5, 13; d = 300, 97, 64), sample_value or the synthetic source; init: data (the deck default:
// mu starts at the offset), 5,000 steps after the start. The trust radius
// is scaled with r (offset_params) so that the clamp acts now and then, as
// base_params does for r = 4, instead of at nearly every step.
// Float: the sequential float kernel is the less accurate of the two at
// large offsets (it forms y = x - mu and mu += eta_mu y at the size of the
// offset every step; the blocked kernel once per block, with its
// coefficients in double), so the float test also prints both against the
// double sequential run (that part is not asserted).

using OffsetCase = std::tuple<int /*d*/, int /*r*/, Source>;
class BlockedVsSequentialOffset : public ::testing::TestWithParam<OffsetCase> {};

const std::vector<double> kOffsets = {0.0, 30.0, 300.0, 1000.0};
constexpr int kOffsetSteps = 5000;

Problem offset_problem(int d, int r) {
  Problem pr;
  pr.d = d;
  pr.r = r;
  pr.ids = {21, 22, 23, 24};
  pr.offset = kOffsets;
  return pr;
}

// base_params with the clamp threshold at q = 1.5 r (ell = eta_S sqrt((q-1)^2 + r-1)).
MosaicParams offset_params(int r, InitMode init) {
  MosaicParams p = base_params(kAuto);
  p.init = init;
  p.max_step = p.eta_S * std::sqrt((1.5 * r - 1) * (1.5 * r - 1) + (r - 1));
  return p;
}

std::string offset_case_name(const OffsetCase& c) {
  return "d=" + std::to_string(std::get<0>(c)) + "/r=" + std::to_string(std::get<1>(c)) + "/" + name(std::get<2>(c));
}

void print_gap(const std::string& what, const Gap& g) {
  std::printf("%s: mu %.2e s2 %.2e P %.2e r-|UaUb|^2 %.2e C %.2e\n", what.c_str(), g.mu, g.s2, g.projector, g.subspace,
              g.cov);
}

template <class T>
void blocked_vs_sequential_offset(const OffsetCase& c, double tol) {
  const auto [d, r, source] = c;
  const Problem pr = offset_problem(d, r);
  const std::size_t B = pr.ids.size();
  const bool is_double = sizeof(T) == 8;
  MosaicParams p = offset_params(r, InitMode::data);
  const std::string type = is_double ? "double " : "float ";
  const Outcome seq = run_on<T>(pr, p, source, kOffsetSteps);
  Outcome dseq;  // float: the same problem in double, sequential (printed only)
  if (!is_double) dseq = run_on<double>(pr, p, source, kOffsetSteps);
  for (std::size_t b = 0; b < B; ++b) {
    ASSERT_EQ(seq.status[b], 0) << "sequential baseline, offset " << kOffsets[b];
    EXPECT_GT(seq.states[b].clamped_steps, 0) << "offset " << kOffsets[b];  // the clamp is exercised
    EXPECT_EQ(seq.unresolved[b], 0);                                        // the sequential kernel never counts
  }
  std::vector<std::pair<int, int>> cases = {{2, kAuto}, {16, kAuto}, {50, kAuto}, {64, kAuto}};
  if (!is_double) cases.push_back({64, 0});
  std::vector<Gap> worst(B), worst_vs_double(B);
  for (const auto& [k, reorth] : cases) {
    p.block_size = k;
    p.reorthonormalize_every = reorth;
    const std::string what = type + offset_case_name(c) + "/k=" + std::to_string(k) +
                             "/reorth=" + (reorth == kAuto ? std::string("auto") : std::to_string(reorth));
    const Outcome blk = run_on<T>(pr, p, source, kOffsetSteps);
    // Clamp counts as in BlockedVsSequential: exact in double, within 2 in float.
    expect_agree(blk, seq, tol, what, is_double);
    for (std::size_t b = 0; b < B; ++b) {
      worst[b].fold(compare(blk.states[b], seq.states[b]));
      EXPECT_EQ(blk.unresolved[b], 0) << what << " offset " << kOffsets[b];
      if (!is_double)
        EXPECT_NEAR(double(blk.states[b].clamped_steps), double(seq.states[b].clamped_steps), 2.0) << what;
    }
    EXPECT_EQ(blk.diag.unresolved_residual_steps, 0) << what;
    if (!is_double)
      for (std::size_t b = 0; b < B; ++b) worst_vs_double[b].fold(compare(blk.states[b], dseq.states[b]));
  }
  for (std::size_t b = 0; b < B; ++b) {
    const std::string head = type + offset_case_name(c) + " offset " + std::to_string(int(kOffsets[b]));
    print_gap(head + ", blocked vs sequential, max over k", worst[b]);
    if (!is_double) {
      print_gap(head + ", blocked vs double sequential, max over k", worst_vs_double[b]);
      print_gap(head + ", sequential vs double sequential", compare(seq.states[b], dseq.states[b]));
    }
  }
}

TEST_P(BlockedVsSequentialOffset, Double1e10) { blocked_vs_sequential_offset<double>(GetParam(), 1e-10); }
TEST_P(BlockedVsSequentialOffset, Float1e3) { blocked_vs_sequential_offset<float>(GetParam(), 1e-3); }

INSTANTIATE_TEST_SUITE_P(Offsets, BlockedVsSequentialOffset,
                         ::testing::Values(OffsetCase{300, 7, Source::samples}, OffsetCase{97, 5, Source::synthetic},
                                           OffsetCase{64, 13, Source::samples}));

// init: random with offset data (double): mu starts at 0, so for hundreds
// of steps y = x - mu is of the size of the offset and mostly inside
// span(U) (U turns to the offset direction first): ||y||^2 / rho^2 ~ 1e5 -
// 1e6, the regime where the blocked rho^2 carries its largest error
// (eps ||y||^2, ALGORITHM.md section 6; the centring at mu0 does not help
// while mu0 is far from the data). In double that is still ~1e-10 of rho^2.
// (Measured with base_params' max_step = 0.05 instead, the clamp acting at
// nearly every step for r = 13 and the transient lasting longer: projector
// gaps up to 3.5e-10, so the tolerance here is that of the data, not a
// margin. In float this transient is not resolved at offsets >= 300 by
// either kernel, see the report of issue 12; the counter flags it.)
TEST(Blocked, OffsetTransientFromInitRandomDouble) {
  const OffsetCase c{64, 13, Source::samples};
  const Problem pr = offset_problem(64, 13);
  MosaicParams p = offset_params(13, InitMode::random);
  const Outcome seq = run_on<double>(pr, p, Source::samples, kOffsetSteps);
  std::vector<Gap> worst(pr.ids.size());
  for (int k : {16, 64}) {
    p.block_size = k;
    const Outcome blk = run_on<double>(pr, p, Source::samples, kOffsetSteps);
    expect_agree(blk, seq, 1e-10, "init: random, double " + offset_case_name(c) + "/k=" + std::to_string(k));
    for (std::size_t b = 0; b < pr.ids.size(); ++b) {
      worst[b].fold(compare(blk.states[b], seq.states[b]));
      EXPECT_EQ(blk.unresolved[b], 0) << "k=" << k << " offset " << kOffsets[b];
    }
  }
  for (std::size_t b = 0; b < pr.ids.size(); ++b)
    print_gap("init: random, double " + offset_case_name(c) + " offset " + std::to_string(int(kOffsets[b])) +
                  ", blocked vs sequential, max over k (clamps " + std::to_string(seq.states[b].clamped_steps) + ")",
              worst[b]);
}

// The counter can fail: float samples lying in an r-dimensional affine
// subspace up to their rounding to float (Source::subspace, no noise). From
// init: data U spans it, so every residual is rounding noise: rho^2 ~
// eps^2 ||y||^2, below 64 eps ||y||^2. The blocked kernel counts such steps;
// the sequential kernel (dense solve) computes e directly and never counts.
TEST(Blocked, UnresolvedResidualsCountedOnNoiseFreeSamples) {
  Problem pr;
  pr.d = 64;
  pr.r = 4;
  pr.ids = {5};
  MosaicParams p = base_params(kAuto);
  p.init = InitMode::data;
  const int steps = 1000;
  const Outcome seq = run_on<float>(pr, p, Source::subspace, steps);
  p.block_size = 16;
  const Outcome blk = run_on<float>(pr, p, Source::subspace, steps);
  std::printf("noise-free float d=64 r=4 k=16, %d steps: unresolved blocked %lld, sequential %lld (status %d/%d)\n",
              steps, (long long)blk.unresolved[0], (long long)seq.unresolved[0], blk.status[0], seq.status[0]);
  EXPECT_GT(blk.unresolved[0], 0);
  EXPECT_EQ(blk.diag.unresolved_residual_steps, blk.unresolved[0]);
  EXPECT_EQ(blk.recomputed[0], blk.unresolved[0]);  // section 6's resolve rule: every one recomputed
  EXPECT_EQ(blk.diag.residual_recomputations, blk.recomputed[0]);
  EXPECT_EQ(seq.unresolved[0], 0);
  EXPECT_EQ(seq.diag.unresolved_residual_steps, 0);
  EXPECT_EQ(seq.recomputed[0], 0);
}

// Section 6's resolve rule (issue 32 item 6): float samples whose spectrum
// spans 1e6 with noise 1e-4 (Source::wide_spectrum): ||y||^2 / rho^2 ~
// 1e10, far past float's 1 / (64 eps) = 1.3e5, so the coefficient rho^2 of
// (nearly) every blocked step is rounding noise. Each is recomputed from
// the explicit residual U0 alpha + D beta, and the blocked float run keeps
// the order of the sequential float kernel's accuracy, itself limited by
// the data's rounding to float (offset-to-spread ratio ~ 3e5: s2 off by
// about 1e-2): against the double sequential run, the blocked gaps within
// 8x the sequential's. Measured when written: s2 3.3e-2 and 1.7e-2 against
// the sequential's 9.5e-3 and 7.3e-3; with the recomputation removed, s2 off
// by 1.9e2 and 1.8e2 (the rounding noise's s2).
TEST(Blocked, ResolveRuleKeepsTheSequentialAccuracyInFloat) {
  Problem pr;
  pr.d = 64;
  pr.r = 4;
  pr.ids = {2, 9};
  MosaicParams p = base_params(kAuto);
  p.init = InitMode::data;
  const int steps = 2000;
  p.block_size = 1;
  const Outcome exact = run_on<double>(pr, p, Source::wide_spectrum, steps);
  const Outcome seq = run_on<float>(pr, p, Source::wide_spectrum, steps);
  p.block_size = 16;
  const Outcome blk = run_on<float>(pr, p, Source::wide_spectrum, steps);
  for (std::size_t b = 0; b < pr.ids.size(); ++b) {
    const Gap gs = compare(seq.states[b], exact.states[b]), gb = compare(blk.states[b], exact.states[b]);
    std::printf(
        "wide spectrum float d=64 r=4 k=16, stream %zu: unresolved %lld recomputed %lld; against double: "
        "s2 %.3e (sequential %.3e), covariance %.3e (sequential %.3e)\n",
        b, (long long)blk.unresolved[b], (long long)blk.recomputed[b], gb.s2, gs.s2, gb.cov, gs.cov);
    EXPECT_EQ(blk.status[b], 0);
    EXPECT_GT(blk.unresolved[b], steps * 9 / 10);
    EXPECT_EQ(blk.recomputed[b], blk.unresolved[b]);
    EXPECT_LE(gb.s2, 8 * gs.s2);
    EXPECT_LE(gb.cov, std::max(8 * gs.cov, 1e-3));
  }
}

// ---- long-run orthonormality in float (issue 12) ------------------------------
// One stream, d = 1024, r = 32, the deck defaults (init: data, block_size:
// auto = 64 on host, reorthonormalize_every: auto = a Cholesky-QR at every
// block end for float blocked runs), 10^5 blocked steps of the synthetic
// drifting source through MosaicEngine::advance, as the mini-app's driver
// does: ||U^T U - I||_F < 1e-4 at the end, printed with the runtime (about
// 20 s on the 2-core machine, so it is part of the default run) and the
// tracking accuracy against the synthetic truth. Run it alone with
//   OMP_NUM_THREADS=2 OMP_PROC_BIND=false build/openmp/tests/test_blocked \
//     --gtest_filter='BlockedLong.*'
// and add --gtest_also_run_disabled_tests for the same run without any
// re-orthonormalization (reorthonormalize_every = 0; printed, not asserted).

struct LongRun {
  double orthonormality = 0;       // ||U^T U - I||_F (compute_diagnostics)
  double orthonormality_host = 0;  // the same from the host copy (reference_invariants)
  double seconds = 0;              // the stepping loop, data generation included
  std::int64_t steps = 0, reorthonormalizations = 0, unresolved = 0, clamped = 0;
  int status = 0, block_size = 0;
  bool reorth_at_block_end = false;
  TruthAccuracy accuracy;
};

LongRun run_long(int reorthonormalize_every, std::int64_t steps = 100000) {
  const int d = 1024, r = 32;
  const std::vector<std::uint64_t> ids = {1};
  SyntheticDriftSource<float, Exec> src(drifting_spec(d, r, 2024), ids);
  MosaicParams p;  // normative defaults, init: data
  p.block_size = kAuto;
  p.reorthonormalize_every = reorthonormalize_every;
  MosaicEngine<float, Exec> eng(p, 1, d, r);
  StreamBatch<float, Exec> sb(1, d, r, ids);
  const int n0 = p.resolved_init_samples(r);
  Kokkos::View<float***, Kokkos::LayoutRight, Mem> X0("X0", 1, n0, d);
  src.read_init(n0, X0);
  eng.init_data(sb, X0);
  LongRun o;
  o.block_size = eng.block_size();
  o.reorth_at_block_end = eng.reorthonormalize_at_block_end();
  const auto t0 = std::chrono::steady_clock::now();
  for (std::int64_t t = 0; t < steps;) {
    const int n = int(std::min<std::int64_t>(eng.block_length(t), steps - t));
    eng.advance(sb, src.next_block(n0 + t, n));
    t += n;
  }
  Kokkos::fence();
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const BatchDiagnostics diag = compute_diagnostics(sb);
  const ReferenceState<float> st = sb.to_host(0);
  o.orthonormality = diag.orthonormality_error_max;
  o.orthonormality_host = reference_invariants(st).orthonormality_error;
  o.steps = st.steps;
  o.reorthonormalizations = st.reorthonormalizations;
  o.unresolved = diag.unresolved_residual_steps;
  o.clamped = diag.clamped_steps;
  o.status = diag.breakdown_streams > 0 ? diag.breakdowns[0].code : 0;
  o.accuracy = src.truth_accuracy(sb, n0 + steps - 1);
  return o;
}

void print_long(const char* what, const LongRun& o) {
  std::printf(
      "%s: k=%d, Cholesky-QR at block ends %d, %lld steps: ||U^T U - I||_F = %.3e (host %.3e), "
      "%lld Cholesky-QR passes, unresolved %lld, clamped %lld, status %d, projector distance to "
      "truth %.3e, noise rel. error %.3e, %.1f s\n",
      what, o.block_size, int(o.reorth_at_block_end), (long long)o.steps, o.orthonormality, o.orthonormality_host,
      (long long)o.reorthonormalizations, (long long)o.unresolved, (long long)o.clamped, o.status,
      o.accuracy.projector_distance_max, o.accuracy.noise_rel_error_max, o.seconds);
}

TEST(BlockedLong, FloatOrthonormalityAfter1e5BlockedSteps) {
  const LongRun o = run_long(kAuto);
  print_long("float d=1024 r=32, defaults", o);
  EXPECT_GT(o.block_size, 1);  // blocked (64 on host)
  EXPECT_TRUE(o.reorth_at_block_end);
  EXPECT_EQ(o.status, 0);
  EXPECT_EQ(o.steps, 100000);
  EXPECT_LT(o.orthonormality, 1e-4);
  EXPECT_LT(o.orthonormality_host, 1e-4);
}

// For the record: the same run with reorthonormalize_every = 0 (no Cholesky-QR).
TEST(BlockedLong, DISABLED_FloatOrthonormalityWithoutReorthonormalization) {
  const LongRun o = run_long(0);
  print_long("float d=1024 r=32, reorthonormalize_every = 0", o);
  EXPECT_EQ(o.reorthonormalizations, 0);
}

// ---- maintained vs dense precision solve -------------------------------------

using SolveCase = std::tuple<int /*reorth*/, CovarianceUpdate>;
class MaintainedVsDense : public ::testing::TestWithParam<SolveCase> {};

template <class T>
void maintained_vs_dense(int reorth, CovarianceUpdate cov, double tol) {
  for (int k : {0, 16, 100}) {
    MosaicParams dense = base_params(reorth);
    dense.covariance_update = cov;
    dense.block_size = k;
    dense.refactor_every = 64;
    MosaicParams maint = dense;
    maint.precision_solve = PrecisionSolve::maintained;
    const std::string what = std::string(sizeof(T) == 8 ? "double" : "float") + " maintained k=" + std::to_string(k) +
                             "/reorth=" + std::to_string(reorth) + "/" + to_string(cov);
    const Outcome a = run<T>(maint, Source::samples, kSteps), ref = run<T>(dense, Source::samples, kSteps);
    expect_agree(a, ref, tol, what, sizeof(T) == 8);
    for (int b = 0; b < 2; ++b) {
      EXPECT_LT(a.drift[b], sizeof(T) == 8 ? 1e-10 : 1e-5) << what;
      EXPECT_EQ(ref.refactors[b], 0);
      if (reorth == 0) {  // (a Cholesky-QR rotates S: the next step takes a fresh factor, no drift)
        EXPECT_EQ(a.refactors[b], (kSteps - 1) / 64) << what;
        EXPECT_GT(a.drift[b], 0.0) << what;  // rounding-level drift, corrected
      }
    }
  }
}

TEST_P(MaintainedVsDense, Double1e10) {
  maintained_vs_dense<double>(std::get<0>(GetParam()), std::get<1>(GetParam()), 1e-10);
}
TEST_P(MaintainedVsDense, Float1e3) {
  maintained_vs_dense<float>(std::get<0>(GetParam()), std::get<1>(GetParam()), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Solves, MaintainedVsDense,
                         ::testing::Combine(::testing::Values(0, 50),
                                            ::testing::Values(CovarianceUpdate::exact, CovarianceUpdate::first_order)));

// ---- breakdowns inside a block, kernels, team size ---------------------------

// The vendor pack's centring loop (block_gemm_vendor.hpp), with the unit
// stride given at compile time (the vectorized loop) and at run time: y =
// x - mu0 on rows [i0, i1) only, a non-finite difference stored as 0 and
// reported, whether x is non-finite or x - mu0 overflows.
template <class T>
void check_centre_rows() {
  const T big = std::numeric_limits<T>::max(), inf = std::numeric_limits<T>::infinity();
  const int n = 37, i0 = 3, i1 = 35;
  for (const int bad : {-1, 1, 4, 17, 34, 35})  // -1: every entry finite; 1 and 35 outside [i0, i1)
    for (const T value : {std::numeric_limits<T>::quiet_NaN(), inf, -inf, big})
      for (const long stride : {1L, 3L}) {
        std::vector<T> mu0(n), x(std::size_t(n) * stride, T(-7)), y(n, T(42));
        for (int i = 0; i < n; ++i) {
          mu0[i] = T(0.25) * T(i) - T(3);
          x[std::size_t(i) * stride] = T(1) / T(1 + i);
        }
        if (bad >= 0) {
          x[std::size_t(bad) * stride] = value;
          if (value == big) mu0[bad] = -big;  // x finite, x - mu0 overflows
        }
        const bool finite = stride == 1
                                ? mosaic::detail::centre_rows<true>(x.data(), stride, mu0.data(), y.data(), i0, i1)
                                : mosaic::detail::centre_rows<false>(x.data(), stride, mu0.data(), y.data(), i0, i1);
        const std::string what = "bad " + std::to_string(bad) + " stride " + std::to_string(stride);
        const bool inside = bad >= i0 && bad < i1;
        EXPECT_EQ(finite, !inside) << what;
        for (int i = 0; i < n; ++i) {
          const T expected = i < i0 || i >= i1 ? T(42) : i == bad ? T(0) : T(x[std::size_t(i) * stride] - mu0[i]);
          EXPECT_EQ(y[i], expected) << what << " row " << i;
        }
      }
}

TEST(Blocked, PackCentringZeroesNonFiniteDifferencesAtEitherStride) {
  check_centre_rows<float>();
  check_centre_rows<double>();
}

// A non-finite entry (NaN, +Inf, -Inf) at step 437 (positions 5 and 37 of
// blocks of 16 and 100), 448 (the first sample of a block of 16) or 447 (the
// last one), with both GEMM kernels.
TEST(Blocked, NonFiniteSampleInsideABlockFreezesAtTheSameStep) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), inf, -inf})
    for (std::int64_t at : {437, 448, 447}) {
      MosaicParams p = base_params(0);
      const std::pair<int, std::int64_t> poison = {1, at};
      const Outcome seq = run<double>(p, Source::samples, 600, -1, BlockGemm::automatic, poison, nullptr, bad);
      ASSERT_EQ(seq.status[1], int(breakdown_nonfinite_sample));
      ASSERT_EQ(seq.breakdown_step[1], at);
      ASSERT_EQ(seq.status[0], 0);
      for (int k : {16, 100})
        for (BlockGemm g : gemm_kernels()) {
          p.block_size = k;
          const Outcome blk = run<double>(p, Source::samples, 600, -1, g, poison, nullptr, bad);
          const std::string what = "value " + std::to_string(bad) + " at " + std::to_string(at) +
                                   " k=" + std::to_string(k) + " " + to_string(g);
          expect_agree(blk, seq, 1e-10, what);
          EXPECT_EQ(blk.states[1].steps, at) << what;
        }
    }
}

TEST(Blocked, IndefiniteCovarianceBreaksDownAtTheFirstStep) {
  ReferenceState<double> st = reference_init_random<double>(kD, kR, base_params(0), 1, 0);
  st.S[0] = -1.0;  // S not positive definite
  for (PrecisionSolve solve : {PrecisionSolve::dense, PrecisionSolve::maintained}) {
    MosaicParams p = base_params(0);
    p.precision_solve = solve;
    const Outcome seq = run<double>(p, Source::samples, 40, -1, BlockGemm::automatic, {-1, 0}, &st);
    p.block_size = 16;
    const Outcome blk = run<double>(p, Source::samples, 40, -1, BlockGemm::automatic, {-1, 0}, &st);
    for (int b = 0; b < 2; ++b) {
      EXPECT_EQ(seq.status[b], int(breakdown_s_not_spd));
      EXPECT_EQ(blk.status[b], int(breakdown_s_not_spd));
      EXPECT_EQ(seq.breakdown_step[b], 0);
      EXPECT_EQ(blk.breakdown_step[b], 0);
      EXPECT_EQ(blk.states[b].S, st.S);
    }
  }
}

TEST(Blocked, GemmKernelsAgree) {
  MosaicParams p = base_params(50);
  p.block_size = 64;
  const std::vector<BlockGemm> kernels = gemm_kernels();
  const Outcome a = run<double>(p, Source::synthetic, 3000, -1, kernels[0]);
  for (std::size_t i = 1; i < kernels.size(); ++i) {
    const Outcome b = run<double>(p, Source::synthetic, 3000, -1, kernels[i]);
    expect_agree(a, b, 1e-11, std::string(to_string(kernels[0])) + " vs " + to_string(kernels[i]));
  }
}

TEST(Blocked, ResultsIndependentOfTeamSize) {
  // A team of 2 on a host space needs 2 threads (Kokkos aborts otherwise,
  // e.g. under OMP_NUM_THREADS=1 outside ctest's environment).
  if (Exec().concurrency() < 2) GTEST_SKIP() << "team size 2 needs concurrency >= 2, have " << Exec().concurrency();
  for (BlockGemm g : gemm_kernels()) {
    MosaicParams p = base_params(0);
    p.block_size = 16;
    p.precision_solve = PrecisionSolve::maintained;
    const Outcome a = run<double>(p, Source::samples, 500, 1, g);
    const Outcome b = run<double>(p, Source::samples, 500, 2, g);
    for (int s = 0; s < 2; ++s) {
      if (g == BlockGemm::tiled) {  // same order of every sum: bitwise
        EXPECT_EQ(a.states[s].U, b.states[s].U);
        EXPECT_EQ(a.states[s].S, b.states[s].S);
        EXPECT_EQ(a.states[s].mu, b.states[s].mu);
      } else {
        expect_agree(a, b, 1e-12, std::string(to_string(g)) + " team size");
      }
    }
  }
}

TEST(Blocked, RejectsBadShapes) {
  MosaicParams p = base_params(0);
  StreamBatch<double, Exec> sb(2, kD, kR, kIds);
  MosaicEngine<double, Exec> seq(p, 2, kD, kR);
  Kokkos::View<double***, Kokkos::LayoutRight, Mem> X("X", 2, 4, kD);
  EXPECT_THROW(seq.step_block(sb, X), std::invalid_argument);  // built sequential
  p.block_size = 3;
  MosaicEngine<double, Exec> blk(p, 2, kD, kR);
  EXPECT_EQ(blk.block_capacity(), 3);
  EXPECT_THROW(blk.step_block(sb, X), std::invalid_argument);  // 4 > k
  Kokkos::View<double***, Kokkos::LayoutRight, Mem> Xd("Xd", 2, 3, kD + 1);
  EXPECT_THROW(blk.step_block(sb, Xd), std::invalid_argument);
  p.block_size = kAuto;  // -1: automatic, a blocked engine
  EXPECT_GT((MosaicEngine<double, Exec>(p, 2, kD, kR)).block_size(), 1);
  p.block_size = -2;
  EXPECT_THROW((MosaicEngine<double, Exec>(p, 2, kD, kR)), std::invalid_argument);
  p.block_size = 0;
  p.refactor_every = 0;
  EXPECT_THROW((MosaicEngine<double, Exec>(p, 2, kD, kR)), std::invalid_argument);
}

// block_gemm tiled exists on host execution spaces only: a device engine
// refuses it with a message, a host engine (Serial here) takes it.
TEST(Blocked, TiledKernelOnlyOnHostSpaces) {
  MosaicParams p = base_params(0);
  p.block_size = 16;
  MosaicEngine<double, Exec> eng(p, 2, kD, kR);
  if (is_host_space<Exec>) {
    EXPECT_NO_THROW(eng.set_block_gemm(BlockGemm::tiled));
    EXPECT_EQ(eng.block_gemm_resolved(), BlockGemm::tiled);
  } else {
    EXPECT_THROW(eng.set_block_gemm(BlockGemm::tiled), std::invalid_argument);
    EXPECT_EQ(eng.block_gemm_resolved(), vendor_gemm_tpl<Exec>() ? BlockGemm::vendor : BlockGemm::kokkos_batched);
  }
  MosaicEngine<double, Kokkos::Serial> host(p, 2, kD, kR);
  // automatic on a host space: the vendor library where Kokkos Kernels has one
  EXPECT_EQ(host.block_gemm_resolved(), vendor_gemm_tpl<Kokkos::Serial>() ? BlockGemm::vendor : BlockGemm::tiled);
  host.set_block_gemm(BlockGemm::kokkos_batched);
  EXPECT_EQ(host.block_gemm_resolved(), BlockGemm::kokkos_batched);
}

}  // namespace

// The tiled kernel's edges (blocked_step.hpp, tile_gemm.hpp): d not a
// multiple of MR, of the packed chunk of form_gh (819 rows in double) or of
// the 192-row chunk of materialize; r and k + 1 not multiples of any tile
// width; a short last block. Both GEMM kernels against the sequential kernel
// on the same synthetic samples, and the tiled kernel with teams of 1 and 2
// threads (two chunks, several Cholesky panels: bitwise the same).
TEST(Blocked, OddShapesMatchSequential) {
  const int d = 1001, r = 13, k = 23, steps = 300;
  const std::vector<std::uint64_t> ids = {7};
  SyntheticDriftSource<double, Exec> src(drifting_spec(d, r, 5), ids);
  auto final_state = [&](int block_size, BlockGemm gemm, int team_size = -1) {
    MosaicParams p = base_params(0);
    p.block_size = block_size;
    StreamBatch<double, Exec> sb(1, d, r, ids);
    MosaicEngine<double, Exec> eng(p, 1, d, r);
    eng.set_block_gemm(gemm);
    if (team_size > 0) eng.set_team_size(team_size);
    eng.init_random(sb, 99);
    const int kb = std::max(1, block_size);
    for (std::int64_t t = 0; t < steps; t += kb) {
      const int n = int(std::min<std::int64_t>(kb, steps - t));
      Kokkos::View<double***, Kokkos::LayoutRight, Mem> X("X", 1, n, d);
      src.generate_block(t, n, X);
      if (block_size > 1) eng.step_block(sb, X);
      else eng.step(sb, Kokkos::subview(X, Kokkos::ALL(), 0, Kokkos::ALL()));
    }
    Outcome o;
    o.states.push_back(widen(sb.to_host(0)));
    auto st = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sb.status);
    auto bs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sb.breakdown_step);
    o.status.push_back(st(0));
    o.breakdown_step.push_back(bs(0));
    return o;
  };
  const Outcome seq = final_state(0, BlockGemm::automatic);
  ASSERT_EQ(seq.status[0], 0);
  ASSERT_GT(seq.states[0].clamped_steps, 0);  // the comparison covers clamped steps
  expect_agree(final_state(k, BlockGemm::kokkos_batched), seq, 1e-10, "odd shapes, kokkos_batched");
  expect_agree(final_state(k, BlockGemm::vendor), seq, 1e-10, "odd shapes, vendor");
  if (!is_host_space<Exec>) return;  // the tiled kernel runs on host spaces only
  const Outcome tiled1 = final_state(k, BlockGemm::tiled, 1);
  expect_agree(tiled1, seq, 1e-10, "odd shapes, tiled");
  if (Exec().concurrency() >= 2) {
    const Outcome tiled2 = final_state(k, BlockGemm::tiled, 2);
    EXPECT_EQ(tiled2.states[0].U, tiled1.states[0].U);
    EXPECT_EQ(tiled2.states[0].S, tiled1.states[0].S);
    EXPECT_EQ(tiled2.states[0].mu, tiled1.states[0].mu);
    EXPECT_EQ(tiled2.states[0].s2, tiled1.states[0].s2);
  }
}

// gemm vendor's two ways of spreading its GEMMs (blocked_step.hpp): each
// host thread packing and multiplying whole streams, or one GEMM at a time
// with the library's threads; and panels of H of any width (the products
// are the same up to the library's summation order). Several panels of H
// at the default width (k = 80), a short last block, and in float the
// Cholesky-QR at every block end (W0 in the products). The library may sum differently with more threads, so the
// two are held to 1e-13 (double) and 1e-5 (float), not to bitwise equality.
template <class T>
void vendor_modes_agree(double tol) {
  const int d = 700, r = 9, k = 80, steps = 250, B = 4;
  const std::vector<std::uint64_t> ids = {1, 2, 3, 4};
  SyntheticDriftSource<T, Exec> src(drifting_spec(d, r, 5), ids);
  auto final_states = [&](bool over_streams, int panel_cols) {
    MosaicParams p = base_params(kAuto);  // float: a Cholesky-QR at every block end
    p.block_size = k;
    StreamBatch<T, Exec> sb(B, d, r, ids);
    MosaicEngine<T, Exec> eng(p, B, d, r);
    eng.set_block_gemm(BlockGemm::vendor);
    eng.set_vendor_gemm_over_streams(over_streams);
    EXPECT_TRUE(over_streams || !eng.vendor_gemm_over_streams());
    if (panel_cols > 0) eng.set_vendor_panel_cols(panel_cols);
    eng.init_random(sb, 99);
    for (std::int64_t t = 0; t < steps; t += k) {
      const int n = int(std::min<std::int64_t>(k, steps - t));
      Kokkos::View<T***, Kokkos::LayoutRight, Mem> X("X", B, n, d);
      src.generate_block(t, n, X);
      eng.step_block(sb, X);
    }
    Outcome o;
    auto st = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sb.status);
    for (int b = 0; b < B; ++b) {
      o.states.push_back(widen(sb.to_host(b)));
      o.status.push_back(st(b));
      o.breakdown_step.push_back(0);
    }
    return o;
  };
  const Outcome a = final_states(true, 0), b = final_states(false, 0);
  for (int s = 0; s < B; ++s) {
    ASSERT_EQ(a.status[s], 0);
    ASSERT_EQ(a.states[s].steps, steps);
  }
  expect_agree(a, b, tol, "vendor over streams vs one GEMM at a time");
  // Panels of the products: one column, an odd width, all of H in one GEMM
  // (k), wider than the block.
  for (int cols : {1, 7, k, 200})
    for (bool over : {true, false})
      expect_agree(a, final_states(over, cols), tol, "panels of " + std::to_string(cols) + " columns");
  MosaicEngine<T, Exec> eng(base_params(0), B, d, r);
  EXPECT_THROW(eng.set_vendor_panel_cols(0), std::invalid_argument);
}
TEST(Blocked, VendorGemmModesAgreeDouble) { vendor_modes_agree<double>(1e-13); }
TEST(Blocked, VendorGemmModesAgreeFloat) { vendor_modes_agree<float>(1e-5); }

// The coefficient steps' factorizations (S, and S + gamma s2 I) in team
// scratch or in their global work array (MosaicEngine::
// set_factor_in_team_scratch): the same arithmetic in another place, so
// the same bits, with every GEMM kernel, the dense and the maintained
// solve (which factors only the regularized system per step), teams of
// one thread (the host's one-thread solve) and of two (the cooperative
// solve, as on devices), double and float (a Cholesky-QR at every block
// end). A basis too large for the team scratch keeps the work array.
template <class T>
void factor_places_agree() {
  const int d = 300, r = 9, k = 40, steps = 200, B = 3;
  const std::vector<std::uint64_t> ids = {5, 6, 7};
  SyntheticDriftSource<T, Exec> src(drifting_spec(d, r, 5), ids);
  const int most_threads = is_host_space<Exec> ? std::min(2, Exec().concurrency()) : 2;
  for (BlockGemm g : gemm_kernels())
    for (PrecisionSolve solve : {PrecisionSolve::dense, PrecisionSolve::maintained})
      for (int team = 1; team <= most_threads; ++team) {
        std::vector<StreamBatch<T, Exec>> batches;
        batches.reserve(2);
        for (bool scratch : {true, false}) {
          MosaicParams p = base_params(kAuto);
          p.block_size = k;
          p.precision_solve = solve;
          batches.emplace_back(B, d, r, ids);
          MosaicEngine<T, Exec> eng(p, B, d, r);
          eng.set_block_gemm(g);
          eng.set_team_size(team);
          eng.set_factor_in_team_scratch(scratch);
          EXPECT_EQ(eng.factor_in_team_scratch(), scratch);
          eng.init_random(batches.back(), 99);
          for (std::int64_t t = 0; t < steps; t += k) {
            Kokkos::View<T***, Kokkos::LayoutRight, Mem> X("X", B, k, d);
            src.generate_block(t, k, X);
            eng.step_block(batches.back(), X);
          }
        }
        const std::string what = std::string(to_string(g)) +
                                 (solve == PrecisionSolve::dense ? " dense" : " maintained") + ", team size " +
                                 std::to_string(team);
        for (int b = 0; b < B; ++b) {
          const auto a = batches[0].to_host(b), w = batches[1].to_host(b);
          ASSERT_EQ(a.steps, steps) << what;
          EXPECT_EQ(a.U, w.U) << what << ", stream " << b;
          EXPECT_EQ(a.S, w.S) << what << ", stream " << b;
          EXPECT_EQ(a.mu, w.mu) << what << ", stream " << b;
          EXPECT_EQ(a.s2, w.s2) << what << ", stream " << b;
        }
      }
  MosaicEngine<T, Exec> large(base_params(kAuto), 1, 4096, 400);
  EXPECT_FALSE(large.factor_in_team_scratch()) << "a 400 x 400 factor in team scratch";
}
TEST(Blocked, FactorInTeamScratchGivesTheWorkArraysBitsDouble) { factor_places_agree<double>(); }
TEST(Blocked, FactorInTeamScratchGivesTheWorkArraysBitsFloat) { factor_places_agree<float>(); }
