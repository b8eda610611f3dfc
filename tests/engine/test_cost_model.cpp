// The cost model (cost_model.hpp) against independent counts: the GEMM
// flops panel by panel, the coefficient steps' leading terms, and the
// launches per block that mpi.launch_budget measures with the tools
// library (2 all streams at once, 3 one stream per thread).
#include <gtest/gtest.h>

#include "mosaic/engine/cost_model.hpp"

namespace {

mosaic::cost::Shape shape(int k, bool w0) {
  mosaic::cost::Shape s;
  s.d = 1000;
  s.r = 16;
  s.k = k;
  s.streams = 8;
  s.with_w0 = w0;
  return s;
}

TEST(CostModel, ProductFlopsArePanelByPanel) {
  // k = 70, panels of 32: [0, 32), [32, 64), [64, 70).
  const auto s = shape(70, true);
  const double d = 1000, r = 16;
  const double expected = 2 * d * r * r + 2 * d * (r + 32) * 32 + 2 * d * (r + 64) * 32 + 2 * d * (r + 70) * 6;
  EXPECT_DOUBLE_EQ(mosaic::cost::product_flops(s), expected);
  EXPECT_DOUBLE_EQ(mosaic::cost::product_flops(shape(70, false)), expected - 2 * d * r * r);
  EXPECT_DOUBLE_EQ(mosaic::cost::bases_flops(s), 2 * d * (r + 70) * r);
  EXPECT_DOUBLE_EQ(mosaic::cost::block_cost(s).products.flops, 8 * expected);
}

TEST(CostModel, CoefficientStepsGrowAsTheirFactorizations) {
  // Dense, two factorizations: r^3 leading; maintained drops one; each
  // doubling of r at fixed k multiplies the flops by about 8 at large r.
  auto s = shape(1, false);
  s.r = 512;
  const double dense = mosaic::cost::coefficient_flops(s);
  EXPECT_NEAR(dense / (2.0 * 512 * 512 * 512 / 3), 1.0, 0.1);
  s.r = 1024;
  const double dense1024 = mosaic::cost::coefficient_flops(s);
  EXPECT_NEAR(dense1024 / dense, 8.0, 0.5);
  s.maintained = true;  // one factorization left: about half
  EXPECT_NEAR(mosaic::cost::coefficient_flops(s) / dense1024, 0.5, 0.05);
  // The samples' terms: k steps of 14 r t + 4 t^2.
  auto a = shape(10, false), b = shape(11, false);
  const double step11 = mosaic::cost::coefficient_flops(b) - mosaic::cost::coefficient_flops(a);
  const double r = 16;
  EXPECT_DOUBLE_EQ(step11, 2 * r * r * r / 3 + (4 + 19) * r * r + 14 * r * 11 + 4 * 121.0);
}

TEST(CostModel, LaunchesPerBlockAreThoseTheToolsCount) {
  auto s = shape(70, true);
  auto c = mosaic::cost::block_cost(s);
  EXPECT_EQ(c.pack.launches + c.products.launches + c.coefficients.launches + c.bases.launches, 2);
  EXPECT_EQ(c.products.library_calls + c.bases.library_calls, 1 + 3 + 1);  // W0, 3 panels, bases
  s.all_streams_at_once = false;
  c = mosaic::cost::block_cost(s);
  EXPECT_EQ(c.pack.launches + c.products.launches + c.coefficients.launches + c.bases.launches, 3);
  EXPECT_EQ(c.products.library_calls + c.bases.library_calls, 8 * (1 + 3) + 8);
}

TEST(CostModel, PredictionAddsThePhases) {
  const auto s = shape(64, false);
  const auto c = mosaic::cost::block_cost(s);
  mosaic::cost::Rates host;
  host.copy_gbs = 10;
  host.gemm_gflops = 100;
  host.small_gflops = 5;
  host.threads = 2;
  const auto t = mosaic::cost::predict(s, c, host, false);
  EXPECT_DOUBLE_EQ(t.pack, c.pack.bytes / 10e9);
  EXPECT_DOUBLE_EQ(t.products, c.products.flops / 100e9);
  EXPECT_DOUBLE_EQ(t.coefficients, 4 * mosaic::cost::coefficient_flops(s) / 5e9);  // 8 streams on 2 threads
  EXPECT_DOUBLE_EQ(t.total(), t.pack + t.products + t.coefficients + t.bases);
  mosaic::cost::Rates dev = host;
  dev.launch_us = 5;
  dev.dependent_op_ns = 20;
  const auto g = mosaic::cost::predict(s, c, dev, true);
  EXPECT_DOUBLE_EQ(g.coefficients, 64 * mosaic::cost::device_dependent_ops_per_step(s) * 20e-9 + 5e-6);
  EXPECT_DOUBLE_EQ(g.products, c.products.flops / 100e9 + 5e-6 * c.products.library_calls);
}

TEST(CostModel, DeviceChainOfTheTeamFactorization) {
  // One thread: the chain is every operation of the plain loops: per pivot
  // 4 + its row's r - j - 1 divisions, every (entry, earlier pivot) update
  // (row c gets r - c entries from each of its c pivots), a barrier per pass.
  for (int r : {1, 4, 5, 13, 64}) {
    double plain = 0;
    for (int j = 0; j < r; ++j) plain += 4 + (r - j - 1);
    for (int c = 0; c < r; ++c) plain += double(c) * (r - c);
    plain += (r + 3) / 4;
    EXPECT_DOUBLE_EQ(mosaic::cost::device_factor_chain(r, 1), plain) << "r = " << r;
    double solve = 0;
    for (int k = 0; k < r; ++k) solve += 2 * (3 + (r - k - 1));
    EXPECT_DOUBLE_EQ(mosaic::cost::device_solve_chain(r, 1), solve) << "r = " << r;
  }
  // Wider teams shorten it. With r threads: 5 per pivot, 1 per later row of
  // the panel, per pass a 64th of the n (n + 1) / 2 entries of the n trailing
  // rows (spread in two dimensions) for each of its 4 pivots, 1 per pass.
  EXPECT_LT(mosaic::cost::device_factor_chain(64, 32), mosaic::cost::device_factor_chain(64, 8));
  double wide = 0;
  for (int j0 = 0; j0 < 64; j0 += 4) {
    const int n = 64 - j0 - 4;
    wide += 4 * 5 + (1 + 2 + 3) + 4 * ((n * (n + 1) / 2 + 63) / 64) + 1;
  }
  EXPECT_DOUBLE_EQ(mosaic::cost::device_factor_chain(64, 64), wide - 1 * 1);  // the last pivot has no row left to scale
}

}  // namespace
