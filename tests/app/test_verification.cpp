// The verdict's accuracy checks (app/verification.hpp): the chi-square CDF
// behind the calibrated clamp share, the share itself against a Monte Carlo
// of section 2.3's step length, and where the clamped-step check is judged.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "mosaic/app/verification.hpp"

namespace {

using namespace mosaic;

// The exact CDF of chi-square with an even number k of degrees of freedom:
// 1 - exp(-x/2) sum_{j < k/2} (x/2)^j / j!, the terms summed in logs.
double chi2_cdf_even(double x, int k) {
  const double h = x / 2;
  double tail = 0;
  for (int j = 0; j < k / 2; ++j) tail += std::exp(j * std::log(h) - h - std::lgamma(j + 1.0));
  return 1.0 - tail;
}

TEST(Verification, ChiSquareCdfWithinOneThousandthForSixteenDegreesAndMore) {
  for (int k : {16, 32, 64, 128, 256})
    for (double s = -2.5; s <= 3; s += 0.5) {  // x > 0 at k = 16
      const double x = k + s * std::sqrt(2.0 * k);
      EXPECT_NEAR(detail::chi2_cdf(x, k), chi2_cdf_even(x, k), 1e-3) << "k " << k << " x " << x;
    }
  EXPECT_EQ(detail::chi2_cdf(0.0, 8), 0.0);
}

// The share of section 2.3's clamped steps when q is chi-square with r
// degrees of freedom, by Monte Carlo.
double clamped_share_monte_carlo(const MosaicParams& p, int r) {
  std::mt19937_64 gen(7);
  std::chi_squared_distribution<double> chi2(r);
  const int n = 200000;
  int clamped = 0;
  for (int i = 0; i < n; ++i) {
    const double q = chi2(gen);
    clamped += p.eta_S * std::sqrt((q - 1) * (q - 1) + (r - 1)) > p.max_step;
  }
  return double(clamped) / n;
}

TEST(Verification, CalibratedClampedShareMatchesMonteCarlo) {
  const MosaicParams defaults;
  MosaicParams fast;
  fast.eta_S = 0.05;  // clamps about a fifth of a calibrated model's steps at r = 16
  for (const auto& [p, r] : {std::pair{defaults, 32}, std::pair{defaults, 64}, std::pair{defaults, 100},
                             std::pair{defaults, 128}, std::pair{defaults, 256}, std::pair{fast, 16}})
    EXPECT_NEAR(detail::calibrated_clamped_fraction(p, r), clamped_share_monte_carlo(p, r), 5e-3)
        << "eta_S " << p.eta_S << " r " << r;
  EXPECT_LT(detail::calibrated_clamped_fraction(defaults, 64), 0.01);
  EXPECT_GT(detail::calibrated_clamped_fraction(defaults, 128), 0.9);
  EXPECT_GT(detail::calibrated_clamped_fraction(fast, 16), 0.1);
  EXPECT_EQ(detail::calibrated_clamped_fraction(fast, 402), 1.0);  // eta_S sqrt(r - 1) > max_step: every step
}

nlohmann::json final_diagnostics(double clamped_steps, double projector_distance) {
  return {{"orthonormality_error_max", 1e-7},
          {"symmetry_error_max", 0.0},
          {"s_min_eig_min", 0.1},
          {"s2_min", 0.01},
          {"nonfinite_count", 0},
          {"breakdown_streams", 0},
          {"clamped_steps", clamped_steps},
          {"accuracy", {{"projector_distance_max", projector_distance}}}};
}

RunConfig tracking_run(int r) {
  RunConfig cfg;
  cfg.problem.d = 8192;
  cfg.problem.rank = r;
  cfg.problem.dtype = Dtype::float32;
  return cfg;
}

bool has_check(const Verification& v, const std::string& name) {
  for (const auto& c : v.checks)
    if (c["name"] == name) return true;
  return false;
}

// Clamping on 98% of the steps fails at r = 64, where a calibrated model
// clamps almost never, and is not judged at r = 128, where it clamps almost
// always; the tracking is judged in both.
TEST(Verification, ClampedStepsJudgedOnlyWhereACalibratedModelRarelyClamps) {
  const double steps = 800000;
  const auto at64 = verify_run(tracking_run(64), true, final_diagnostics(0.98 * steps, 0.2), nullptr, steps, 100000);
  EXPECT_FALSE(at64.passed);
  EXPECT_EQ(at64.verdict.rfind("FAILED (clamped_step_fraction)", 0), 0u) << at64.verdict;
  EXPECT_EQ(at64.accuracy, "checked");

  const auto at128 = verify_run(tracking_run(128), true, final_diagnostics(0.98 * steps, 0.2), nullptr, steps, 100000);
  EXPECT_TRUE(at128.passed) << at128.verdict;
  EXPECT_FALSE(has_check(at128, "clamped_step_fraction"));
  EXPECT_TRUE(has_check(at128, "projector_distance_max"));
  EXPECT_EQ(at128.accuracy.rfind("tracking only; clamped steps not judged (a model that fits its data clamps 96.", 0),
            0u)
      << at128.accuracy;

  const auto lost = verify_run(tracking_run(128), true, final_diagnostics(0.98 * steps, 0.9), nullptr, steps, 100000);
  EXPECT_EQ(lost.verdict.rfind("FAILED (projector_distance_max, projector_distance_over_random)", 0), 0u)
      << lost.verdict;
}

// The check keeps a margin: it is judged where a calibrated model clamps at
// most half of run.max_clamped_fraction (r = 90: 21% of 0.5), not near it
// (r = 100: 47%), nor under a lowered threshold.
TEST(Verification, ClampedStepsJudgedWithAMarginBelowTheThreshold) {
  const double steps = 100000;
  EXPECT_TRUE(has_check(verify_run(tracking_run(90), true, final_diagnostics(0.3 * steps, 0.2), nullptr, steps, 5000),
                        "clamped_step_fraction"));
  EXPECT_FALSE(has_check(verify_run(tracking_run(100), true, final_diagnostics(0.3 * steps, 0.2), nullptr, steps, 5000),
                         "clamped_step_fraction"));
  auto strict = tracking_run(90);
  strict.run.max_clamped_fraction = 0.1;
  EXPECT_FALSE(has_check(verify_run(strict, true, final_diagnostics(0.3 * steps, 0.2), nullptr, steps, 5000),
                         "clamped_step_fraction"));
}

// What was not judged is said as such, never as a partial check.
TEST(Verification, AccuracyTextNamesWhatWasNotJudged) {
  const auto short_run = verify_run(tracking_run(128), true, final_diagnostics(10, 0.2), nullptr, 8000, 100);
  EXPECT_TRUE(short_run.passed);
  EXPECT_EQ(short_run.accuracy.rfind("not judged; clamped steps not judged (", 0), 0u) << short_run.accuracy;
  EXPECT_NE(short_run.accuracy.find("; tracking not judged: 100 steps < the adaptation time"), std::string::npos)
      << short_run.accuracy;

  auto no_truth = final_diagnostics(10, 0.2);
  no_truth.erase("accuracy");
  const auto real64 = verify_run(tracking_run(64), true, no_truth, nullptr, 8000, 1000);
  EXPECT_EQ(real64.accuracy,
            "clamped steps only; the source has no truth to track (the prequential accuracy is "
            "reported, not checked)");
  const auto real128 = verify_run(tracking_run(128), true, no_truth, nullptr, 8000, 1000);
  EXPECT_EQ(real128.accuracy.rfind("not judged; clamped steps not judged (", 0), 0u) << real128.accuracy;
  EXPECT_EQ(real128.verdict.rfind("PASSED; accuracy not judged; ", 0), 0u) << real128.verdict;
}

}  // namespace
