// Statistical behaviour of the host reference at the normative defaults on the
// synthetic drifting stream of ALGORITHM.md section 5: it must find and track
// the drifting signal subspace and estimate the noise level.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "test_reference_helpers.hpp"

namespace {
using namespace mosaic;
using namespace mosaic::test;

// d = 128, r = 4, small noise (std 0.05), slow drift (1e-4 rad/step), signal
// spectrum 1 .. 0.25, init: data and default parameters: within 5,000 steps the
// normalized projector distance to the true V(t) falls below 0.05, and s2 is
// within 20% of the true noise variance.
TEST(ReferenceTracking, FindsDriftingSubspaceAndNoiseLevelAtDefaults) {
  SyntheticSpec spec;
  spec.d = 128;
  spec.r = 4;
  spec.lambda_max = 1.0;
  spec.lambda_min = 0.25;
  spec.noise = 0.05;
  spec.drift = 1e-4;
  for (std::uint64_t stream : {0u, 1u, 2u}) {
    SCOPED_TRACE("stream " + std::to_string(stream));
    spec.seed = 2024;
    const MosaicParams p;  // defaults, init: data
    StreamRun<double> run(spec, p, stream);
    const double dist0 = projector_distance(run.state, run.truth.basis_at(spec, run.next_step - 1));
    std::int64_t first_below = -1;
    double dist = dist0;
    for (int t = 0; t < 5000; ++t) {
      const std::uint64_t step = run.next_step;
      run.step();
      if (t % 50 == 49 || t == 4999) {
        dist = projector_distance(run.state, run.truth.basis_at(spec, step));
        if (first_below < 0 && dist < 0.05) first_below = t + 1;
      }
    }
    const double s2_rel = run.state.s2 / run.truth.noise_variance - 1.0;
    std::printf(
        "stream %llu: projector distance %.3g at init, %.3g after 5000 steps (first < 0.05 "
        "at step %lld); s2 / truth - 1 = %.3f\n",
        (unsigned long long)stream, dist0, dist, (long long)first_below, s2_rel);
    EXPECT_GT(dist0, 0.05) << "the start should not already be converged";
    EXPECT_LT(dist, 0.05);
    EXPECT_GE(first_below, 0);
    EXPECT_LT(std::fabs(s2_rel), 0.2);
    EXPECT_EQ(run.state.clamped_steps, 0);
  }
}

}  // namespace
