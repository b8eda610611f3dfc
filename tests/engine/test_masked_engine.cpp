// The engine's masked sequential kernel (impl/masked_step.hpp) and its
// blocks cut into runs (7.7.3, impl/masked_blocks.hpp; 7.7.2's shared-mask
// form on outages, with each GEMM kernel) against the host
// reference of ALGORITHM.md section 7 (reference_masked.hpp) on the same
// masked samples: every missing mode and both rotations, float and double,
// the Serial and the default backend, the counters, the seen rule, and the
// unmasked kernels bit for bit where nothing is missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "mosaic/algorithm/reference_masked.hpp"
#include "mosaic/algorithm/synthetic.hpp"
#include "mosaic/algorithm/synthetic_missing.hpp"
#include "mosaic/engine/batched_engine.hpp"
#include "mosaic/engine/impl/masked_blocks.hpp"
#include "mosaic/engine/transfer.hpp"
#include "test_reference_helpers.hpp"

namespace {

using namespace mosaic;

// Basis-free distance between two states: max relative of mu and s2, the
// projector distance r - ||Ua^T Ub||^2 and the covariance distance
// relative to ||S||.
template <class T>
double state_gap(const ReferenceState<T>& a, const ReferenceState<T>& b) {
  const StateDistance dist = reference_distance(a, b);
  double mu_scale = 1e-300, s_scale = 0;
  for (const T v : b.mu) mu_scale = std::max(mu_scale, std::fabs(double(v)));
  for (const T v : b.S) s_scale += double(v) * double(v);
  return std::max(
      {dist.mu / mu_scale, dist.s2 / double(b.s2), std::fabs(dist.projector), dist.covariance / std::sqrt(s_scale)});
}

struct Case {
  MissingMode mode = MissingMode::posterior;
  MissingRotation rotation = MissingRotation::observed;
  CovarianceUpdate update = CovarianceUpdate::exact;
  double gamma = 1.0;
  int reorth = 0;
  int block_size = 0;  // > 1: the engine's blocks, cut into runs
  // Sparse missingness (mostly complete samples, an outage, rare tiles) so
  // that blocks hold runs of complete samples; else 15% MCAR on top.
  bool sparse = false;
  bool outage_only = false;  // only the outage: one mask for 300 steps
  // Stream 1's coordinate d - 1 missing in every sample, init included: a
  // channel dead since the start, never seen (7.6); with revive_at > 0 it
  // reports from that step on (inside a block: the samples before it keep
  // their kinds, the rest of the block takes the masked step).
  bool dead_channel = false;
  int revive_at = 0;
  bool gram_reuse = true;  // 7.8's reuse of the Gram while the mask is unchanged
  BlockGemm gemm = BlockGemm::automatic;
  // noise: diagonal (section 8) on heterogeneous noise, re-whitened every
  // 50 steps; `complete`: no missing entries at all.
  bool diagonal = false, complete = false;
  double cond_max = 0;  // > 0: missing_cond_max (7.5's guard)
  // A spectrum from 1e3 down to 1e-3 with noise 1e-7: ||y||^2 / rho^2 ~
  // 1e15, past double's 1 / (64 eps) = 7e13 (section 6's resolve rule);
  // the outage starts at step 2500, once s2 has come down from init's
  // floor (1e-6 of the mean eigenvalue) to what the residuals say.
  bool wide_spectrum = false;
};

std::string name(const Case& c) {
  return std::string(to_string(c.mode)) + "/" + to_string(c.rotation) + "/" + to_string(c.update) +
         "/gamma=" + std::to_string(c.gamma) + "/reorth=" + std::to_string(c.reorth) +
         "/k=" + std::to_string(c.block_size) + (c.sparse ? "/sparse" : "") + (c.outage_only ? "/outage" : "") +
         (c.dead_channel ? "/dead-channel" : "") + (c.revive_at > 0 ? "/revive=" + std::to_string(c.revive_at) : "") +
         (c.gram_reuse ? "" : "/no-reuse") + "/gemm=" + to_string(c.gemm) + (c.diagonal ? "/diagonal" : "") +
         (c.complete ? "/complete" : "") + (c.cond_max > 0 ? "/cond_max=" + std::to_string(c.cond_max) : "") +
         (c.wide_spectrum ? "/wide" : "");
}

// B streams of the synthetic drifting stream with MCAR, an outage and
// missing-at-random tiles; the masked init on the host (7.6, the
// reference's), then `steps` steps of engine and reference on the same
// samples. Returns the largest state gap and checks the counters; with
// team_size > 0 the engine runs teams of that size, and `states` receives
// the engine's final states, `reuses` the masked steps that reused the
// Gram (7.8) and `cuts` what the blocks were cut into.
template <class T, class Exec>
double run_masked(const Case& c, int d, int r, int steps, const std::string& what, int team_size = 0,
                  std::vector<MaskedReferenceState<T>>* states = nullptr, std::int64_t* reuses = nullptr,
                  MaskedRunCounts* cuts = nullptr) {
  MosaicParams p;
  p.missing = c.mode;
  p.missing_rotation = c.rotation;
  p.covariance_update = c.update;
  p.gamma = c.gamma;
  p.reorthonormalize_every = c.reorth;
  p.block_size = c.block_size;
  if (c.cond_max > 0) p.missing_cond_max = c.cond_max;
  if (c.diagonal) {
    p.noise = NoiseModel::diagonal;
    p.rewhiten_every = 50;
    p.rewhiten_min_count = 20;
  }
  SyntheticSpec spec;
  spec.d = d;
  spec.r = r;
  spec.lambda_max = c.wide_spectrum ? 1e3 : 10;
  spec.lambda_min = c.wide_spectrum ? 1e-3 : 1;
  spec.noise = c.wide_spectrum ? 1e-7 : 0.3;
  if (c.diagonal) {
    spec.noise_min = 0.1;
    spec.noise_max = 1.0;
  }
  spec.drift = c.wide_spectrum ? 0.0 : 1e-3;  // a drifting frame's lag would dominate rho^2
  spec.mean_scale = 2.0;
  spec.seed = 5;
  MissingSpec miss;
  miss.mcar_rate = c.outage_only ? 0.0 : c.sparse ? 0.001 : 0.15;
  miss.outage_first = 2;
  miss.outage_count = d / 5;
  miss.outage_start = c.wide_spectrum ? 2500 : 100;
  miss.outage_steps = 300;
  miss.block_rate = c.outage_only ? 0.0 : c.sparse ? 0.02 : 0.05;
  miss.block_coords = 4;
  miss.block_steps = 20;
  if (c.complete) miss = MissingSpec{};
  const std::vector<std::uint64_t> ids = {0, 1, 2};
  const int B = int(ids.size()), n0 = p.resolved_init_samples(r);
  std::vector<SyntheticTruth> truths;
  for (const auto id : ids) truths.push_back(make_synthetic_truth(spec, id));
  auto sample = [&](int b, std::uint64_t t, T* x) {
    synthetic_sample(spec, truths[std::size_t(b)], ids[std::size_t(b)], t, x);
    apply_synthetic_missing(miss, spec.seed, ids[std::size_t(b)], t, x, d);
    if (c.dead_channel && b == 1 && (c.revive_at == 0 || t < std::uint64_t(c.revive_at)))
      x[d - 1] = std::numeric_limits<T>::quiet_NaN();
  };
  StreamBatch<T, Exec> sb(B, d, r, ids, p.noise);
  MosaicEngine<T, Exec> eng(p, B, d, r);
  EXPECT_EQ(eng.blocked(), c.block_size > 1);
  if (team_size > 0) eng.set_team_size(team_size);
  eng.set_gram_reuse(c.gram_reuse);
  if (c.block_size > 1) eng.set_block_gemm(c.gemm);
  std::vector<MaskedReferenceState<T>> ref;
  for (int b = 0; b < B; ++b) {
    std::vector<T> X(std::size_t(n0) * d);
    for (int t = 0; t < n0; ++t) sample(b, std::uint64_t(t), X.data() + std::size_t(t) * d);
    // Coordinate d - 1 of stream 1 is never observed in the init window: unseen.
    if (b == 1 && !c.complete)
      for (int t = 0; t < n0; ++t) X[std::size_t(t) * d + d - 1] = std::numeric_limits<T>::quiet_NaN();
    ref.push_back(reference_init_data_masked(X.data(), n0, d, r, p));
    sb.from_host(b, ref.back());
  }
  EXPECT_EQ(ref[1].unseen(), c.complete ? 0 : 1) << what;
  // Blocks of the engine's block_length (1 for the sequential kernel).
  const int kmax = std::max(1, eng.block_size());
  Kokkos::View<T***, Kokkos::LayoutRight, typename Exec::memory_space> X("X", B, kmax, d);
  auto hX = transfer::host_buffer(X);
  std::vector<T> x(static_cast<std::size_t>(d));
  for (int s = 0; s < steps;) {
    const int n = std::min(eng.block_length(ref[0].steps), steps - s);
    for (int j = 0; j < n; ++j) {
      const std::uint64_t t = std::uint64_t(n0 + s + j);
      for (int b = 0; b < B; ++b) {
        sample(b, t, x.data());
        for (int i = 0; i < d; ++i) hX(b, j, i) = x[std::size_t(i)];
        (void)reference_masked_step(ref[std::size_t(b)], x.data(), p);
      }
    }
    transfer::copy_from_host(X, hX);
    eng.advance(sb, Kokkos::subview(X, Kokkos::ALL(), Kokkos::make_pair(0, n), Kokkos::ALL()));
    s += n;
  }
  if (c.block_size > 1) {
    // Every sample planned once; sparse masks leave runs of complete
    // samples whose streams start at different samples; the outage's 300
    // samples share one mask (7.7.2 where the options have its form).
    const MaskedRunCounts& rc = eng.masked_run_counts();
    EXPECT_EQ(rc.run_samples + rc.shared_samples + rc.step_samples, std::int64_t(B) * steps) << what;
    if (c.sparse) {
      EXPECT_GT(rc.run_samples, std::int64_t(B) * steps / 8) << what;
      EXPECT_GT(rc.gathered_launches, 0) << what;
    }
    const bool shared_form = c.mode == MissingMode::posterior;
    if (shared_form && (c.sparse || c.outage_only)) EXPECT_GT(rc.shared_samples, std::int64_t(B) * 250) << what;
    if (!shared_form) EXPECT_EQ(rc.shared_samples, 0) << what;
    // The dead channel is an outage of stream 1 from its start: its
    // samples outside the outage share one mask too (but the first of
    // each run, and those cut off at block ends).
    if (shared_form && c.dead_channel && c.revive_at == 0)
      EXPECT_GT(rc.shared_samples, std::int64_t(B) * 250 + (steps - 300) * 3 / 4) << what;
    // Revived inside a block: only that block's samples from the revival on
    // are stepped (the old rule stepped every sample before it too).
    if (c.revive_at > 0) {
      EXPECT_GT(rc.step_samples, 0) << what;
      EXPECT_LT(rc.step_samples, c.block_size) << what;
    }
    if (cuts) *cuts = rc;
    if (std::getenv("MOSAIC_TEST_GAPS"))
      std::printf(
          "%s: %lld samples in runs, %lld in shared-mask runs, %lld masked steps, %lld blocked / %lld "
          "shared / %lld masked / %lld gathered launches\n",
          what.c_str(), (long long)rc.run_samples, (long long)rc.shared_samples, (long long)rc.step_samples,
          (long long)rc.blocked_launches, (long long)rc.shared_launches, (long long)rc.masked_launches,
          (long long)rc.gathered_launches);
  }
  if (reuses) *reuses = eng.gram_reuses();
  const auto status = transfer::to_host(sb.status);
  if (c.wide_spectrum) {  // section 6's resolve rule ran, on every unresolved step
    const auto unresolved = transfer::to_host(sb.unresolved_residual_steps);
    const auto recomputed = transfer::to_host(sb.residual_recomputations);
    for (int b = 0; b < B; ++b) {
      if (std::getenv("MOSAIC_TEST_GAPS"))
        std::printf("%s: stream %d: %lld unresolved, %lld recomputed\n", what.c_str(), b, (long long)unresolved(b),
                    (long long)recomputed(b));
      EXPECT_GT(unresolved(b), 0) << what;
      EXPECT_EQ(recomputed(b), unresolved(b)) << what;
    }
  }
  if (c.dead_channel) EXPECT_EQ(ref[1].unseen(), c.revive_at > 0 ? 0 : 1) << what;  // never seen, or seen since
  double worst = 0;
  for (int b = 0; b < B; ++b) {
    EXPECT_EQ(status(b), 0) << what << " stream " << b;
    const MaskedReferenceState<T> st = sb.to_host_masked(b);
    const MaskedReferenceState<T>& rf = ref[std::size_t(b)];
    EXPECT_EQ(st.steps, rf.steps) << what;
    EXPECT_EQ(st.skipped_steps, rf.skipped_steps) << what;
    EXPECT_EQ(st.dropped_samples, rf.dropped_samples) << what;
    EXPECT_EQ(st.missing_entries, rf.missing_entries) << what;
    EXPECT_EQ(st.clamped_steps, rf.clamped_steps) << what;
    EXPECT_EQ(st.reorthonormalizations, rf.reorthonormalizations) << what;
    EXPECT_EQ(st.seen, rf.seen) << what;
    worst = std::max(worst, state_gap<T>(st, rf));
    // Section 4's sums: every complete sample and every gapped one that the
    // posterior would score, in every mode (whitened ones with noise:
    // diagonal too, in data units).
    worst = std::max(worst, test::prequential_gap<T>(st, rf, std::is_same_v<T, double>, true, what));
    EXPECT_EQ(st.diagonal_noise(), c.diagonal) << what;
    if (c.diagonal) {
      // The profile, leverages and accumulators (relative; the counts
      // exactly) and the re-whitenings: every 50 steps, skipped ones too.
      EXPECT_EQ(st.rewhitenings, rf.steps / 50) << what;
      EXPECT_EQ(st.rewhitenings, rf.rewhitenings) << what;
      EXPECT_EQ(st.counts, rf.counts) << what;
      double psi_lo = 1e300, psi_hi = 0;
      for (int i = 0; i < d; ++i) {
        const auto rel = [](double a, double b) { return std::fabs(a - b) / std::max(std::fabs(b), 1e-300); };
        worst = std::max({worst, rel(st.psi[i], rf.psi[i]), std::fabs(double(st.leverage[i]) - rf.leverage[i]),
                          rel(st.residuals[i], rf.residuals[i])});
        psi_lo = std::min(psi_lo, double(rf.psi[i]));
        psi_hi = std::max(psi_hi, double(rf.psi[i]));
      }
      // The profile has moved (heterogeneous noise over a 10x range of
      // std), but not under missing: drop, which drops most samples here.
      if (c.mode != MissingMode::drop) EXPECT_GT(psi_hi / psi_lo, 4.0) << what;
    }
    if (states) states->push_back(st);
  }
  if (std::getenv("MOSAIC_TEST_GAPS")) std::printf("%s: gap %.2e\n", what.c_str(), worst);  // the margins
  return worst;
}

// `base` in every missing mode, and posterior with the geodesic rotation.
std::vector<Case> every_mode(const Case& base) {
  std::vector<Case> cases;
  for (const MissingMode mode :
       {MissingMode::posterior, MissingMode::project, MissingMode::drop, MissingMode::zero_fill}) {
    Case c = base;
    c.mode = mode;
    cases.push_back(c);
  }
  Case c = base;
  c.rotation = MissingRotation::geodesic;
  cases.push_back(c);
  return cases;
}

TEST(MaskedEngine, DoubleMatchesTheReferenceInEveryMode) {
  std::vector<Case> cases = every_mode(Case{});
  Case c;
  c.update = CovarianceUpdate::first_order;
  c.gamma = 0.0;
  c.reorth = 50;
  cases.push_back(c);
  for (const Case& k : cases) {
    const double gap = run_masked<double, Kokkos::DefaultExecutionSpace>(k, 40, 4, 600, name(k));
    EXPECT_LT(gap, 1e-10) << name(k);
  }
}

// noise: diagonal (section 8): whitened steps, the accumulators and the
// re-whitening every 50 steps, in every missing mode and without missing
// entries (missing: error), against the reference.
TEST(MaskedEngine, DiagonalNoiseMatchesTheReferenceInEveryMode) {
  Case base;
  base.diagonal = true;
  std::vector<Case> cases = every_mode(base);
  Case c = base;
  c.mode = MissingMode::error;
  c.complete = true;
  c.reorth = 30;
  cases.push_back(c);
  for (const Case& k : cases) {
    const double gap = run_masked<double, Kokkos::DefaultExecutionSpace>(k, 40, 4, 600, name(k));
    EXPECT_LT(gap, 1e-10) << name(k);
  }
}

// 8.5: noise: diagonal on the engine's blocks: the runs of complete
// samples and the shared-mask runs on the whitened block, their residuals
// by the extra GEMM, blocks cut at the re-whitening's steps; with each GEMM
// kernel, sparse missingness (every kind of run), the outage alone, and no
// missing entries at all (a Cholesky-QR every 30 steps too).
TEST(MaskedEngine, DiagonalNoiseBlocksMatchTheReference) {
  Case base;
  base.diagonal = true;
  base.block_size = 16;
  base.sparse = true;
  std::vector<Case> cases;
  for (const BlockGemm g : {BlockGemm::vendor, BlockGemm::kokkos_batched, BlockGemm::tiled}) {
    Case c = base;
    c.gemm = g;
    if (g != BlockGemm::tiled || is_host_space<Kokkos::DefaultExecutionSpace>) cases.push_back(c);
  }
  Case c = base;
  c.sparse = false;
  c.outage_only = true;
  cases.push_back(c);
  c = base;
  c.sparse = false;
  c.mode = MissingMode::error;
  c.complete = true;
  c.reorth = 30;
  cases.push_back(c);
  c.reorth = 0;
  c.block_size = 7;  // blocks of 7 cut at every multiple of 50
  cases.push_back(c);
  for (const Case& k : cases) {
    MaskedRunCounts cuts;
    const double gap =
        run_masked<double, Kokkos::DefaultExecutionSpace>(k, 40, 4, 600, name(k), 0, nullptr, nullptr, &cuts);
    EXPECT_LT(gap, 1e-10) << name(k);
    EXPECT_GT(cuts.run_samples + cuts.shared_samples, std::int64_t(3) * 250) << name(k);  // blocked, not stepped
  }
}

TEST(MaskedEngine, FloatDiagonalNoiseMatchesTheReference) {
  Case c;
  c.diagonal = true;
  const double gap = run_masked<float, Kokkos::DefaultExecutionSpace>(c, 40, 4, 600, "float diagonal");
  EXPECT_LT(gap, 1e-4);  // measured 5.3e-6
  c.block_size = 16;     // 8.5's blocks (float GEMMs, a Cholesky-QR at every block end)
  c.sparse = true;
  const double blocked = run_masked<float, Kokkos::DefaultExecutionSpace>(c, 40, 4, 600, "float diagonal blocks");
  EXPECT_LT(blocked, 1e-4);  // measured 4.6e-6
}

TEST(MaskedEngine, FloatMatchesTheReference) {
  Case c;
  const double gap = run_masked<float, Kokkos::DefaultExecutionSpace>(c, 40, 4, 600, "float");
  EXPECT_LT(gap, 1e-4);  // measured 3.5e-7
}

TEST(MaskedEngine, SerialBackendMatchesTheReference) {
  Case c;
  const double gap = run_masked<double, Kokkos::Serial>(c, 40, 4, 300, "serial");
  EXPECT_LT(gap, 1e-10);
}

// Blocks cut into runs (7.7.3): the runs of complete samples by the blocked
// update, the rest by the masked step, each stream its own cuts; the same
// states as the reference's sequential steps up to rounding, the same
// counters exactly (the outage, tiles and unseen coordinate make the
// streams' runs start at different samples, so the gathered launches run).
TEST(MaskedEngine, BlocksCutIntoRunsMatchTheReference) {
  Case c;
  c.block_size = 16;
  c.sparse = true;
  std::vector<Case> cases = every_mode(c);
  c.reorth = 50;  // blocks cut at the Cholesky-QR's steps
  c.update = CovarianceUpdate::first_order;
  cases.push_back(c);
  c = Case{};
  c.block_size = 8;  // dense MCAR: hardly a complete sample
  cases.push_back(c);
  for (const Case& k : cases) {
    const double gap = run_masked<double, Kokkos::DefaultExecutionSpace>(k, 40, 4, 800, name(k));
    EXPECT_LT(gap, 1e-10) << name(k);
  }
}

TEST(MaskedEngine, FloatBlocksCutIntoRunsMatchTheReference) {
  Case c;
  c.block_size = 16;
  c.sparse = true;
  const double gap = run_masked<float, Kokkos::DefaultExecutionSpace>(c, 40, 4, 800, "float blocks");
  EXPECT_LT(gap, 1e-4);
}

TEST(MaskedEngine, SerialBackendBlocksCutIntoRunsMatchTheReference) {
  Case c;
  c.block_size = 16;
  c.sparse = true;
  const double gap = run_masked<double, Kokkos::Serial>(c, 40, 4, 400, "serial blocks");
  EXPECT_LT(gap, 1e-10);
}

// The rounds of a block: each stream takes its next run of >= 2 complete
// samples in the blocked launch, else one sample in the masked launch.
TEST(MaskedEngine, BlockPlanCutsEachStreamAtItsOwnMasks) {
  // complete (1) / masked (0), 3 streams x 6 samples
  const int flags[3][6] = {{1, 1, 1, 1, 1, 1}, {0, 1, 1, 0, 1, 0}, {1, 0, 1, 1, 1, 0}};
  detail::MaskedBlockPlan plan(3, 6, true);
  const auto kind = [&](int b, int j) { return flags[b][j] != 0 ? int(detail::sample_complete) : 0; };
  ASSERT_TRUE(plan.next(kind));  // round 1
  EXPECT_EQ(plan.run_len, (std::vector<int>{6, 0, 0}));
  EXPECT_EQ(plan.step_on, (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(plan.run_n, 6);
  EXPECT_EQ(plan.common_run_off, 0);
  EXPECT_EQ(plan.common_step_off, 0);
  ASSERT_TRUE(plan.next(kind));  // round 2: stream 1 a run of 2 from 1, stream 2 one from 1
  EXPECT_EQ(plan.run_len, (std::vector<int>{0, 2, 0}));
  EXPECT_EQ(plan.run_off[1], 1);
  EXPECT_EQ(plan.step_on, (std::vector<int>{0, 0, 1}));
  EXPECT_EQ(plan.step_off[2], 1);
  ASSERT_TRUE(plan.next(kind));  // round 3: stream 1 masked at 3, stream 2 a run of 3 from 2
  EXPECT_EQ(plan.run_len, (std::vector<int>{0, 0, 3}));
  EXPECT_EQ(plan.run_off[2], 2);
  EXPECT_EQ(plan.step_on, (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(plan.step_off[1], 3);
  ASSERT_TRUE(plan.next(kind));  // round 4: stream 1's lone complete 4, stream 2's masked 5
  EXPECT_EQ(plan.runs, 0);
  EXPECT_EQ(plan.step_on, (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(plan.step_off[1], 4);
  EXPECT_EQ(plan.step_off[2], 5);
  EXPECT_EQ(plan.common_step_off, -1);  // different samples: gathered
  ASSERT_TRUE(plan.next(kind));         // round 5: stream 1's masked 5
  EXPECT_EQ(plan.steps, 1);
  EXPECT_EQ(plan.step_off[1], 5);
  EXPECT_EQ(plan.shared_runs, 0);
  EXPECT_FALSE(plan.next(kind));
}

// 7.7.2's runs: a shareable sample (masked, 7.5's r + 1 observed) starts a
// run that goes on while the next samples are shareable with the same mask;
// a run of one takes the masked step; without the form (`shared` false)
// every masked sample does.
TEST(MaskedEngine, BlockPlanCutsSharedMaskRuns) {
  constexpr int C = detail::sample_complete, S = detail::sample_shareable, E = detail::sample_same_mask;
  // stream 0: complete, then a shared run of 3, a new mask (run of 2);
  // stream 1: a lone shareable sample, complete, then a mask a sample
  // does not share (not shareable: too few observed), then a run of 2
  const int kinds[2][6] = {{C, S, S | E, S | E, S, S | E}, {S, C | E, S, E, S, S | E}};
  const auto kind = [&](int b, int j) { return kinds[b][j]; };
  detail::MaskedBlockPlan plan(2, 6, true);
  ASSERT_TRUE(plan.next(kind));  // round 1: both one masked step at 0
  EXPECT_EQ(plan.step_on, (std::vector<int>{1, 1}));
  EXPECT_EQ(plan.shared_runs, 0);
  ASSERT_TRUE(plan.next(kind));  // round 2: stream 0 shared 1..3, stream 1 lone complete 1
  EXPECT_EQ(plan.shared_len, (std::vector<int>{3, 0}));
  EXPECT_EQ(plan.shared_off[0], 1);
  EXPECT_EQ(plan.shared_n, 3);
  EXPECT_EQ(plan.step_on, (std::vector<int>{0, 1}));
  ASSERT_TRUE(plan.next(kind));  // round 3: stream 0 shared 4..5, stream 1 masked 2
  EXPECT_EQ(plan.shared_len, (std::vector<int>{2, 0}));
  EXPECT_EQ(plan.shared_off[0], 4);
  EXPECT_EQ(plan.step_off[1], 2);
  ASSERT_TRUE(plan.next(kind));  // round 4: stream 1 masked 3 (not shareable)
  EXPECT_EQ(plan.step_off[1], 3);
  ASSERT_TRUE(plan.next(kind));  // round 5: stream 1 shared 4..5
  EXPECT_EQ(plan.shared_len, (std::vector<int>{0, 2}));
  EXPECT_EQ(plan.shared_off[1], 4);
  EXPECT_FALSE(plan.next(kind));

  detail::MaskedBlockPlan without(2, 6, false);
  int shared = 0, steps = 0;
  while (without.next(kind)) {
    shared += without.shared_runs;
    steps += without.steps;
  }
  EXPECT_EQ(shared, 0);
  EXPECT_EQ(steps, 12);
}

// 7.7.2 on an outage (one mask for 300 steps): the runs that share the mask
// by the blocked form with the masked coefficient steps, with each GEMM
// kernel, the option variants, a Cholesky-QR every 50 steps (put back after
// the missing rows), float (a Cholesky-QR at every block end), the Serial
// backend and a channel dead since the start (never seen, 7.6): the
// reference's sequential states up to rounding, its counters exactly.
TEST(MaskedEngine, SharedMaskRunsMatchTheReference) {
  using Exec = Kokkos::DefaultExecutionSpace;
  Case c;
  c.outage_only = true;
  c.block_size = 16;
  std::vector<Case> cases;
  for (const MissingRotation rotation : {MissingRotation::observed, MissingRotation::geodesic}) {
    c.rotation = rotation;
    for (const BlockGemm g : {BlockGemm::vendor, BlockGemm::kokkos_batched, BlockGemm::tiled}) {
      c.gemm = g;
      if (g != BlockGemm::tiled || is_host_space<Exec>) cases.push_back(c);
    }
    c.gemm = BlockGemm::automatic;
    c.reorth = 50;
    c.update = CovarianceUpdate::first_order;
    c.gamma = 0.0;
    cases.push_back(c);
    // 7.5's guard: tr(C^-1) of the outage's first sample is above 5 in
    // streams 0 and 2 (every sample of their outage skipped, the mean
    // moving), below it in stream 1; the counters are checked exactly.
    c.cond_max = 5.0;
    cases.push_back(c);
    c = Case{};
    c.rotation = rotation;
    c.block_size = 16;
    c.sparse = true;  // outage, tiles and MCAR: every kind of run, streams gathered
    cases.push_back(c);
    c = Case{};
    c.rotation = rotation;
    c.outage_only = true;
    c.dead_channel = true;
    c.block_size = 16;
    cases.push_back(c);
    c.revive_at = 158;  // sample 150 of the run after the init's 8: inside a block of 16, in the outage
    cases.push_back(c);
    c = Case{};
    c.outage_only = true;
    c.block_size = 16;
  }
  for (const Case& k : cases) {
    MaskedRunCounts cuts;
    std::vector<MaskedReferenceState<double>> states;
    const double gap = run_masked<double, Exec>(k, 40, 4, 800, name(k), 0, &states, nullptr, &cuts);
    EXPECT_LT(gap, 1e-10) << name(k);
    EXPECT_GT(cuts.shared_launches, 0) << name(k);
    if (k.cond_max > 0) {
      EXPECT_EQ(states[0].skipped_steps, 300) << name(k);
      EXPECT_EQ(states[1].skipped_steps, 0) << name(k);
    }
  }
  for (const MissingRotation rotation : {MissingRotation::observed, MissingRotation::geodesic}) {
    c = Case{};
    c.outage_only = true;
    c.block_size = 16;
    c.rotation = rotation;
    // Section 6's resolve rule inside the outage's shared-mask runs: the
    // unresolved steps' rho^2 recomputed on the observed rows only. The
    // steps the rule keeps have a relative rho^2 error of up to 1 / 64
    // (measured gaps when written: 2.0e-3 observed, 5.5e-4 geodesic);
    // without the recomputation 1.0 and 0.52, with the missing rows
    // counted in the explicit residual 134.
    c.wide_spectrum = true;
    EXPECT_LT((run_masked<double, Exec>(c, 40, 4, 2900, "resolved " + name(c))), 1.0 / 64);
    c.wide_spectrum = false;
    EXPECT_LT((run_masked<float, Exec>(c, 40, 4, 800, "float shared " + name(c))), 1e-4);
    EXPECT_LT((run_masked<double, Kokkos::Serial>(c, 40, 4, 400, "serial shared " + name(c))), 1e-10);
    c.block_size = 0;  // the guard's skips on the sequential kernel
    c.cond_max = 5.0;
    c.reorth = 50;
    std::vector<MaskedReferenceState<double>> states;
    EXPECT_LT((run_masked<double, Exec>(c, 40, 4, 800, name(c), 0, &states)), 1e-10);
    EXPECT_EQ(states[0].skipped_steps, 300) << name(c);
  }
}

// 7.8: during an outage (one mask for 300 steps) the masked step keeps the
// Gram of the missing rows and its factors from the step before: the same
// states bit for bit as computing them afresh, on the sequential kernel and
// on blocks cut into runs (missing: project, whose outage steps are masked
// steps: posterior's take 7.7.2's form), with and without a Cholesky-QR
// every 50 steps.
TEST(MaskedEngine, GramReusedDuringAnOutageChangesNoBit) {
  using Exec = Kokkos::DefaultExecutionSpace;
  for (const int k : {0, 16})
    for (const int reorth : {0, 50}) {
      Case c;
      c.outage_only = true;
      c.block_size = k;
      c.reorth = reorth;
      if (k > 1) c.mode = MissingMode::project;
      std::vector<MaskedReferenceState<double>> kept, fresh;
      std::int64_t reused = 0, none = 0;
      const double gap = run_masked<double, Exec>(c, 40, 4, 600, name(c), 0, &kept, &reused);
      c.gram_reuse = false;
      run_masked<double, Exec>(c, 40, 4, 600, name(c), 0, &fresh, &none);
      EXPECT_LT(gap, 1e-10) << name(c);
      // 3 streams x 300 outage steps, less the first of each outage and
      // the first after each Cholesky-QR.
      EXPECT_GT(reused, 3 * 250) << name(c);
      EXPECT_EQ(none, 0) << name(c);
      ASSERT_EQ(kept.size(), fresh.size());
      for (std::size_t b = 0; b < kept.size(); ++b) {
        EXPECT_EQ(kept[b].U, fresh[b].U) << name(c) << " stream " << b;
        EXPECT_EQ(kept[b].S, fresh[b].S) << name(c) << " stream " << b;
        EXPECT_EQ(kept[b].mu, fresh[b].mu) << name(c) << " stream " << b;
        EXPECT_EQ(kept[b].s2, fresh[b].s2) << name(c) << " stream " << b;
      }
    }
}

// The host form of the missing rows' Gram splits the rows of N among a
// team's threads: the same sums in the same order whatever the team size.
TEST(MaskedEngine, ResultsIndependentOfTeamSize) {
  using Exec = Kokkos::DefaultExecutionSpace;
  if (Exec().concurrency() < 2) GTEST_SKIP() << "a team of 2 needs concurrency >= 2, have " << Exec().concurrency();
  std::vector<MaskedReferenceState<double>> one, two;
  run_masked<double, Exec>(Case{}, 40, 4, 300, "team 1", 1, &one);
  run_masked<double, Exec>(Case{}, 40, 4, 300, "team 2", 2, &two);
  ASSERT_EQ(one.size(), two.size());
  for (std::size_t b = 0; b < one.size(); ++b) {
    EXPECT_EQ(one[b].U, two[b].U) << "stream " << b;
    EXPECT_EQ(one[b].S, two[b].S) << "stream " << b;
    EXPECT_EQ(one[b].mu, two[b].mu) << "stream " << b;
    EXPECT_EQ(one[b].s2, two[b].s2) << "stream " << b;
  }
}

// Nothing missing: the masked engine runs the unmasked kernels (bit for bit
// the unmasked engine's state), sequential (section 2) and blocked (a block
// of complete samples is one run of section 6).
template <class T>
void expect_unmasked_kernel_bitwise(int block_size) {
  using Exec = Kokkos::DefaultExecutionSpace;
  const int d = 32, r = 3, B = 2;
  MosaicParams plain;
  plain.block_size = block_size;
  MosaicParams masked = plain;
  masked.missing = MissingMode::posterior;
  StreamBatch<T, Exec> a(B, d, r, {0, 1}), b(B, d, r, {0, 1});
  MosaicEngine<T, Exec> ea(plain, B, d, r), eb(masked, B, d, r);
  ASSERT_EQ(ea.block_size(), eb.block_size());
  ea.init_random(a, 9);
  eb.init_random(b, 9);
  SyntheticSpec spec;
  spec.d = d;
  spec.r = r;
  spec.seed = 3;
  const SyntheticTruth truth = make_synthetic_truth(spec, 0);
  const int k = std::max(1, block_size);
  Kokkos::View<T***, Kokkos::LayoutRight, Exec::memory_space> X("X", B, k, d);
  auto hX = transfer::host_buffer(X);
  std::vector<T> x(static_cast<std::size_t>(d));
  for (int t = 0; t < 320; t += k) {
    for (int j = 0; j < k; ++j) {
      synthetic_sample(spec, truth, 0, std::uint64_t(t + j), x.data());
      for (int s = 0; s < B; ++s)
        for (int i = 0; i < d; ++i) hX(s, j, i) = x[std::size_t(i)] * T(1 + s);
    }
    transfer::copy_from_host(X, hX);
    ea.advance(a, X);
    eb.advance(b, X);
  }
  for (int s = 0; s < B; ++s) {
    const ReferenceState<T> sa = a.to_host(s), sm = b.to_host(s);
    EXPECT_EQ(sa.steps, 320);
    EXPECT_EQ(sm.steps, 320);
    EXPECT_EQ(sa.U, sm.U) << "k = " << block_size;
    EXPECT_EQ(sa.S, sm.S) << "k = " << block_size;
    EXPECT_EQ(sa.s2, sm.s2) << "k = " << block_size;
    EXPECT_EQ(sa.mu, sm.mu) << "k = " << block_size;
  }
}

TEST(MaskedEngine, CompleteSamplesAreTheUnmaskedKernelsBitwise) {
  expect_unmasked_kernel_bitwise<double>(0);
  expect_unmasked_kernel_bitwise<double>(16);
  expect_unmasked_kernel_bitwise<float>(16);
}

// init: data when only some streams have gaps in their init samples: those
// start on the host (7.6), every other one on the execution space; before
// the fix a complete stream beside a gapped one was left unwritten (all
// zeros) and froze at its first step.
TEST(MaskedEngine, InitDataStartsEveryStreamWhenOnlySomeHaveGaps) {
  using T = double;
  using Exec = Kokkos::DefaultExecutionSpace;
  const int d = 24, r = 3, B = 3;
  MosaicParams p;
  p.missing = MissingMode::posterior;
  const int n0 = p.resolved_init_samples(r);
  SyntheticSpec spec;
  spec.d = d;
  spec.r = r;
  spec.seed = 11;
  StreamBatch<T, Exec> sb(B, d, r, {0, 1, 2});
  MosaicEngine<T, Exec> eng(p, B, d, r);
  Kokkos::View<T***, Kokkos::LayoutRight, Exec::memory_space> X("X", B, n0, d);
  auto hX = transfer::host_buffer(X);
  std::vector<T> x(static_cast<std::size_t>(d));
  for (int b = 0; b < B; ++b) {
    const SyntheticTruth truth = make_synthetic_truth(spec, std::uint64_t(b));
    for (int t = 0; t < n0; ++t) {
      synthetic_sample(spec, truth, std::uint64_t(b), std::uint64_t(t), x.data());
      for (int i = 0; i < d; ++i) hX(b, t, i) = x[std::size_t(i)];
    }
  }
  hX(1, 0, 5) = hX(1, 1, 7) = std::numeric_limits<T>::quiet_NaN();
  transfer::copy_from_host(X, hX);
  eng.init_data(sb, X);
  const auto status = transfer::to_host(sb.status);
  for (int b = 0; b < B; ++b) {
    EXPECT_EQ(status(b), 0) << "stream " << b;
    const MaskedReferenceState<T> ref = reference_init_data_masked(&hX(b, 0, 0), n0, d, r, p);
    EXPECT_LT(state_gap<T>(sb.to_host_masked(b), ref), 1e-10) << "stream " << b;
  }
}

// An infinite entry is an input error (the stream freezes, the others go on);
// the unsupported combinations are refused when the engine is built.
TEST(MaskedEngine, InfiniteEntryFreezesTheStreamAndUnsupportedOptionsAreRefused) {
  using T = double;
  using Exec = Kokkos::DefaultExecutionSpace;
  const int d = 16, r = 2, B = 2;
  MosaicParams p;
  p.missing = MissingMode::posterior;
  p.block_size = 0;
  StreamBatch<T, Exec> sb(B, d, r, {0, 1});
  MosaicEngine<T, Exec> eng(p, B, d, r);
  eng.init_random(sb, 1);
  Kokkos::View<T**, Kokkos::LayoutRight, Exec::memory_space> X("X", B, d);
  auto hX = transfer::host_buffer(X);
  for (int s = 0; s < B; ++s)
    for (int i = 0; i < d; ++i) hX(s, i) = T(0.1 * i);
  hX(0, 3) = std::numeric_limits<T>::infinity();
  hX(1, 3) = std::numeric_limits<T>::quiet_NaN();
  transfer::copy_from_host(X, hX);
  eng.step(sb, X);
  const auto status = transfer::to_host(sb.status);
  EXPECT_EQ(status(0), int(breakdown_nonfinite_sample));
  EXPECT_EQ(status(1), 0);
  EXPECT_EQ(sb.to_host_masked(1).missing_entries, 1);
  MosaicParams q = p;
  q.noise = NoiseModel::diagonal;
  const MosaicEngine<T, Exec> diag(q, B, d, r);
  EXPECT_THROW(diag.step(sb, X), std::invalid_argument);  // sb was built for isotropic noise
  q = p;
  q.precision_solve = PrecisionSolve::maintained;
  EXPECT_THROW((MosaicEngine<T, Exec>(q, B, d, r)), std::invalid_argument);
}

// A stream stopped by an infinite entry sits out a later shared-mask run
// of its batch: its basis stays bit for bit (under the geodesic rotation
// the run's end multiplies the put-back rows by A_M, which such a stream
// never formed), while the other stream's run moves its missing rows.
TEST(MaskedEngine, StoppedStreamKeepsItsBasisThroughASharedMaskRun) {
  using T = double;
  using Exec = Kokkos::DefaultExecutionSpace;
  const int d = 16, r = 2, B = 2, n = 8;
  MosaicParams p;
  p.missing = MissingMode::posterior;
  p.missing_rotation = MissingRotation::geodesic;
  p.block_size = n;
  StreamBatch<T, Exec> sb(B, d, r, {0, 1});
  MosaicEngine<T, Exec> eng(p, B, d, r);
  eng.init_random(sb, 1);
  Kokkos::View<T***, Kokkos::LayoutRight, Exec::memory_space> X("X", B, n, d);
  auto hX = transfer::host_buffer(X);
  for (int round = 0; round < 3; ++round) {
    for (int b = 0; b < B; ++b)
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < d; ++i) {
          const T x = T(std::sin(0.37 * (i + 1) * (round * n + j + 1) + b) * (1 + (i % 3)));
          // round 0: stream 0 stops at an infinite entry; rounds 1-2: both
          // streams miss coordinates 3-5 (one shared-mask run per round)
          hX(b, j, i) = round == 0 && b == 0 && j == 2 && i == 7 ? std::numeric_limits<T>::infinity()
                        : round > 0 && i >= 3 && i <= 5          ? std::numeric_limits<T>::quiet_NaN()
                                                                 : x;
        }
    transfer::copy_from_host(X, hX);
    const auto U_before = transfer::to_host(sb.U);
    eng.advance(sb, X);
    const auto U_after = transfer::to_host(sb.U);
    bool stream0_same = true, stream1_missing_rows_moved = false;
    for (int i = 0; i < d; ++i)
      for (int a = 0; a < r; ++a) {
        stream0_same = stream0_same && U_after(0, i, a) == U_before(0, i, a);
        if (i >= 3 && i <= 5) stream1_missing_rows_moved |= U_after(1, i, a) != U_before(1, i, a);
      }
    if (round > 0) {
      EXPECT_TRUE(stream0_same) << "round " << round;
      EXPECT_TRUE(stream1_missing_rows_moved) << "round " << round;  // the geodesic rotation moves U_M
    }
  }
  const auto status = transfer::to_host(sb.status);
  EXPECT_EQ(status(0), int(breakdown_nonfinite_sample));
  EXPECT_EQ(status(1), 0);
  EXPECT_GT(eng.masked_run_counts().shared_samples, 0);
}

// SharedMaskRunEnd's device form run on a host space (a named functor:
// Cuda's extended lambdas may not sit in a test body).
template <class End>
struct PutBackDeviceForm {
  End end;
  void operator()(const typename End::member_type& m) const { end.put_back(m, typename End::DeviceForm{}); }
};

// SharedMaskRunEnd's two forms on host, the host's row tiles and the
// device's row per thread, in every branch (a copy, the geodesic product,
// times R^-1, both) on 0, 1, 8 and 17 rows (no row, a short tile, one
// whole tile, two and a short one) and team sizes 1 and 2: the same bits
// in every entry of U (rows not put back keep their sentinel).
template <class Scalar>
void put_back_forms_agree() {
  using Host = Kokkos::DefaultHostExecutionSpace;
  using End = detail::SharedMaskRunEnd<Scalar, Host>;
  const int d = 40, r = 13, B = 4;
  const int counts[B] = {1, 8, 17, 0};
  std::mt19937_64 gen(29);
  std::normal_distribution<double> n01;
  Kokkos::View<Scalar***, Kokkos::LayoutRight, Kokkos::HostSpace> saved("saved", B, d, r);
  Kokkos::View<int**, Kokkos::LayoutRight, Kokkos::HostSpace> rows("rows", B, d);
  Kokkos::View<int*, Kokkos::LayoutRight, Kokkos::HostSpace> missing("missing", B);
  Kokkos::View<std::int64_t*, Kokkos::LayoutRight, Kokkos::HostSpace> reorths("reorths", B), reorths0("reorths0", B);
  Kokkos::View<double****, Kokkos::LayoutRight, Kokkos::HostSpace> dM("dM", B, 2, r, r);  // R, A_M
  for (int b = 0; b < B; ++b) {
    missing(b) = counts[b];
    for (int k = 0; k < d; ++k) {
      rows(b, k) = (7 * k + b) % d;  // distinct rows, not in order
      for (int c = 0; c < r; ++c) saved(b, k, c) = Scalar(n01(gen));
    }
    for (int q = 0; q < r; ++q)
      for (int c = 0; c < r; ++c) {
        dM(b, 0, q, c) = c > q    ? n01(gen)
                         : c == q ? 1.0 + std::fabs(n01(gen))
                                  : std::numeric_limits<double>::quiet_NaN();  // never read
        dM(b, 1, q, c) = (q == c ? 1.0 : 0.0) + 0.1 * n01(gen);
      }
  }
  for (const bool geodesic : {false, true})
    for (const bool rotated : {false, true})
      for (const int ts : {1, 2}) {
        if (ts > Host().concurrency()) continue;
        Kokkos::View<Scalar***, Kokkos::LayoutRight, Kokkos::HostSpace> u_host("u_host", B, d, r),
            u_device("u_device", B, d, r);
        Kokkos::deep_copy(u_host, Scalar(-7));
        Kokkos::deep_copy(u_device, Scalar(-7));
        for (int b = 0; b < B; ++b) reorths(b) = rotated ? 1 : 0;
        End end;
        end.reorths = reorths;
        end.rows = rows;
        end.missing = missing;
        end.saved = saved;
        end.reorths0 = reorths0;
        end.dM = dM;
        end.r = r;
        end.r_index = 0;
        end.am_index = 1;
        end.geodesic = geodesic;
        end.U = u_host;
        Kokkos::parallel_for("test::put_back_host", End::policy(Kokkos::TeamPolicy<Host>(B, ts), r), end);
        end.U = u_device;
        Kokkos::parallel_for("test::put_back_device", Kokkos::TeamPolicy<Host>(B, ts), PutBackDeviceForm<End>{end});
        Kokkos::fence();
        const std::string what = std::string(geodesic ? "geodesic" : "observed") + (rotated ? ", rotated" : "") +
                                 ", team size " + std::to_string(ts);
        int put_back = 0;
        for (int b = 0; b < B; ++b)
          for (int i = 0; i < d; ++i)
            for (int c = 0; c < r; ++c) {
              ASSERT_EQ(u_host(b, i, c), u_device(b, i, c))
                  << what << ": stream " << b << ", row " << i << ", entry " << c;
              put_back += u_host(b, i, c) != Scalar(-7);
            }
        EXPECT_EQ(put_back, (1 + 8 + 17) * r) << what;  // every listed row written, no other
      }
}

TEST(MaskedEngine, PutBackFormsGiveTheSameBits) {
  put_back_forms_agree<double>();
  put_back_forms_agree<float>();
}

}  // namespace
