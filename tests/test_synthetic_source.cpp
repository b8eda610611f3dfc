// The device generator of the synthetic drifting stream
// (synthetic_source.hpp) against the host generator, its independence from
// the batch composition, and the truth-accuracy measure.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "mosaic/batched_engine.hpp"
#include "mosaic/synthetic_source.hpp"

namespace {

using namespace mosaic;

SyntheticSpec test_spec(bool heterogeneous) {
  SyntheticSpec s;
  s.d = 40;
  s.r = 3;
  s.lambda_max = 2.0;
  s.lambda_min = 0.2;
  s.noise = 0.1;
  if (heterogeneous) {
    s.noise_min = 0.05;
    s.noise_max = 0.3;
  }
  s.drift = 0.01;
  s.mean_scale = 0.5;
  s.seed = 1234;
  return s;
}

TEST(SyntheticSource, DeviceEqualsHostBitwiseInDouble) {
  // d = 42: the last group of 4 rows of the device generator is partial.
  for (const auto& [het, d] : {std::pair{false, 40}, std::pair{true, 40}, std::pair{false, 42}}) {
    SyntheticSpec spec = test_spec(het);
    spec.d = d;
    const std::vector<std::uint64_t> ids = {0, 5, 17};
    SyntheticDriftSource<double> src(spec, ids);
    Kokkos::View<double**> X("X", ids.size(), spec.d);
    std::vector<double> host(spec.d);
    for (std::int64_t step : {0, 1, 2, 999, 123456789}) {
      src.generate(step, X);
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), X);
      for (std::size_t b = 0; b < ids.size(); ++b) {
        synthetic_sample(spec, src.truths()[b], ids[b], std::uint64_t(step), host.data());
        for (int i = 0; i < spec.d; ++i)
          ASSERT_EQ(h(b, i), host[i]) << "het=" << het << " step=" << step << " b=" << b << " i=" << i;
      }
    }
  }
}

TEST(SyntheticSource, FloatIsRoundedDouble) {
  const SyntheticSpec spec = test_spec(true);
  SyntheticDriftSource<float> src(spec, {4, 2});
  Kokkos::View<float**> X("X", 2, spec.d);
  src.generate(77, X);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), X);
  std::vector<float> host(spec.d);
  synthetic_sample(spec, make_synthetic_truth(spec, 2), 2, 77, host.data());
  for (int i = 0; i < spec.d; ++i) EXPECT_EQ(h(1, i), host[i]);
}

TEST(SyntheticSource, StreamDoesNotDependOnBatch) {
  const SyntheticSpec spec = test_spec(true);
  SyntheticDriftSource<double> all(spec, {0, 1, 2, 3});
  SyntheticDriftSource<double> one(spec, {2});
  Kokkos::View<double**> Xa("Xa", 4, spec.d), X1("X1", 1, spec.d);
  for (std::int64_t step : {3, 40}) {
    all.generate(step, Xa);
    one.generate(step, X1);
    auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), Xa);
    auto h1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), X1);
    for (int i = 0; i < spec.d; ++i) ASSERT_EQ(ha(2, i), h1(0, i));
    // and different streams really differ
    int same = 0;
    for (int i = 0; i < spec.d; ++i) same += ha(1, i) == ha(2, i);
    EXPECT_LT(same, spec.d);
  }
}

// 70 samples: more than one pass of the host generator's 32 samples, the last
// one partial; d = 42: a partial group of rows.
TEST(SyntheticSource, BlockEqualsSingleSteps) {
  SyntheticSpec spec = test_spec(false);
  spec.d = 42;
  SyntheticDriftSource<double> src(spec, {9, 10});
  const int n = 70;
  Kokkos::View<double***> Xb("Xb", 2, n, spec.d);
  Kokkos::View<double**> X("X", 2, spec.d);
  src.generate_block(100, n, Xb);
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), Xb);
  for (int k = 0; k < n; ++k) {
    src.generate(100 + k, X);
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), X);
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < spec.d; ++i) ASSERT_EQ(hb(b, k, i), h(b, i));
  }
}

TEST(SyntheticSource, AccuracyOfTruthStateIsZero) {
  const SyntheticSpec spec = test_spec(false);
  const std::vector<std::uint64_t> ids = {1, 2};
  SyntheticDriftSource<double> src(spec, ids);
  const int r = spec.r, d = spec.d;
  const std::int64_t step = 250;
  StreamBatch<double> sb(2, d, r, ids);
  for (int b = 0; b < 2; ++b) {
    const auto& t = src.truths()[b];
    ReferenceState<double> st(d, r);
    const auto V = t.basis_at(spec, step);
    st.U = V;
    for (int j = 0; j < r; ++j) st.S[j * r + j] = spec.lambda(j) + t.noise_variance;
    st.s2 = t.noise_variance;
    st.mu = t.mean;
    sb.from_host(b, st);
  }
  const TruthAccuracy acc = src.truth_accuracy(sb, step);
  EXPECT_LT(acc.projector_distance_max, 1e-13);
  EXPECT_LT(acc.noise_rel_error_max, 1e-13);
  EXPECT_LT(acc.spectrum_rel_error_max, 1e-13);
  // The same states judged at another time: the drift moved the truth.
  const TruthAccuracy later = src.truth_accuracy(sb, step + 100);
  EXPECT_GT(later.projector_distance_max, 0.1);
}

TEST(SyntheticSource, EngineTracksTheTruth) {
  // End to end on the device: init from data, run, and the estimate ends up
  // close to the drifting truth (and much closer than a random start).
  SyntheticSpec spec = test_spec(false);
  spec.d = 64;
  spec.r = 2;
  spec.drift = 1e-4;
  spec.lambda_max = 4.0;
  spec.lambda_min = 2.0;
  const std::vector<std::uint64_t> ids = {0, 1, 2};
  MosaicParams p;
  const int B = 3, n0 = p.resolved_init_samples(spec.r);
  SyntheticDriftSource<double> src(spec, ids);
  StreamBatch<double> sb(B, spec.d, spec.r, ids);
  MosaicEngine<double> eng(p, B, spec.d, spec.r);
  eng.init_random(sb, 3);
  const TruthAccuracy at_start = src.truth_accuracy(sb, 0);
  Kokkos::View<double***> X0("X0", B, n0, spec.d);
  src.generate_block(0, n0, X0);
  eng.init_data(sb, X0);
  Kokkos::View<double**> X("X", B, spec.d);
  std::int64_t t = n0;
  for (; t < 3000; ++t) {
    src.generate(t, X);
    eng.step(sb, X);
  }
  const TruthAccuracy acc = src.truth_accuracy(sb, t - 1);
  EXPECT_GT(at_start.projector_distance_mean, 0.5);
  EXPECT_LT(acc.projector_distance_max, 0.1);
  EXPECT_LT(acc.noise_rel_error_max, 0.3);
  EXPECT_LT(acc.spectrum_rel_error_max, 0.5);
}

}  // namespace
