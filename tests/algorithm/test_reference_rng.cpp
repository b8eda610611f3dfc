// The counter-based generator of counter_rng.hpp: a pure function of
// (seed, domain, stream, step, index), sensitive to every one of them
// (including the high 32 bits of the 64-bit counters), with standard normal
// moments; the Box-Muller transform's own log and sincos against long
// double libm.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <vector>

#include "mosaic/algorithm/counter_rng.hpp"

namespace {
using namespace mosaic;

constexpr std::uint64_t kSeed = 42, kStream = 3, kStep = 5, kIndex = 7;

double base_draw() { return counter_normal(kSeed, RngDomain::latent, kStream, kStep, kIndex); }

TEST(CounterRng, IsDeterministic) {
  const double a = base_draw();
  // Interleave unrelated draws: there is no hidden state.
  for (std::uint64_t i = 0; i < 100; ++i) (void)counter_normal(i, RngDomain::noise, i, i, i);
  EXPECT_EQ(base_draw(), a);
  EXPECT_EQ(counter_uniform(kSeed, RngDomain::mean, kStream, kStep, kIndex),
            counter_uniform(kSeed, RngDomain::mean, kStream, kStep, kIndex));
  EXPECT_TRUE(std::isfinite(a));
}

TEST(CounterRng, DiffersAcrossEveryCoordinate) {
  const double a = base_draw();
  const std::uint64_t hi = std::uint64_t(1) << 32;
  // seed, low and high words
  EXPECT_NE(counter_normal(kSeed + 1, RngDomain::latent, kStream, kStep, kIndex), a);
  EXPECT_NE(counter_normal(kSeed + hi, RngDomain::latent, kStream, kStep, kIndex), a);
  // stream
  EXPECT_NE(counter_normal(kSeed, RngDomain::latent, kStream + 1, kStep, kIndex), a);
  EXPECT_NE(counter_normal(kSeed, RngDomain::latent, kStream + hi, kStep, kIndex), a);
  // step
  EXPECT_NE(counter_normal(kSeed, RngDomain::latent, kStream, kStep + 1, kIndex), a);
  EXPECT_NE(counter_normal(kSeed, RngDomain::latent, kStream, kStep + hi, kIndex), a);
  // index: same Philox block, next block, high word of the block counter
  EXPECT_NE(counter_normal(kSeed, RngDomain::latent, kStream, kStep, kIndex - 1), a);
  EXPECT_NE(counter_normal(kSeed, RngDomain::latent, kStream, kStep, kIndex + 4), a);
  EXPECT_NE(counter_normal(kSeed, RngDomain::latent, kStream, kStep, kIndex + (hi << 2)), a);
  // every domain gives a different number
  const RngDomain domains[] = {RngDomain::basis,  RngDomain::mean,  RngDomain::noise_std,
                               RngDomain::latent, RngDomain::noise, RngDomain::init_basis};
  std::set<double> seen;
  for (RngDomain dom : domains) seen.insert(counter_normal(kSeed, dom, kStream, kStep, kIndex));
  EXPECT_EQ(seen.size(), std::size(domains));
  // the four lanes of one Philox block are four different numbers
  std::set<double> lanes;
  for (std::uint64_t i = 0; i < 4; ++i) lanes.insert(counter_normal(kSeed, RngDomain::noise, kStream, kStep, 8 + i));
  EXPECT_EQ(lanes.size(), 4u);
}

struct Moments {
  double mean = 0, var = 0, kurtosis = 0;
};
template <class F>
Moments moments(int n, F draw) {
  double s1 = 0, s2 = 0, s4 = 0;
  for (int k = 0; k < n; ++k) {
    const double v = draw(k);
    s1 += v;
    s2 += v * v;
    s4 += v * v * v * v;
  }
  Moments m;
  m.mean = s1 / n;
  m.var = s2 / n - m.mean * m.mean;
  m.kurtosis = (s4 / n) / (m.var * m.var);
  return m;
}

// 1e5 draws along each counter: mean ~ 0, variance ~ 1 (loose: |.| < 0.02, 4-6
// standard errors), and Gaussian tails (kurtosis 3 +- 0.15).
// counter_normal4 (the synthetic generator's noise, the truth's basis) is
// counter_normal of the 4 indices of one Philox block, bitwise.
TEST(CounterRng, Normal4EqualsFourNormals) {
  for (const std::uint64_t seed : {1ull, 1234ull, 0xFFFFFFFFFFFFull})
    for (const RngDomain domain : {RngDomain::basis, RngDomain::noise})
      for (const std::uint64_t g : {0ull, 1ull, 777ull, 1ull << 33}) {
        double z[4];
        counter_normal4(seed, domain, 5, 123456789, g, z);
        for (int q = 0; q < 4; ++q) ASSERT_EQ(z[q], counter_normal(seed, domain, 5, 123456789, 4 * g + q)) << q;
      }
}

TEST(CounterRng, StandardNormalMoments) {
  constexpr int n = 100000;
  const Moments along_index =
      moments(n, [](int k) { return counter_normal(kSeed, RngDomain::noise, kStream, kStep, std::uint64_t(k)); });
  const Moments along_step =
      moments(n, [](int k) { return counter_normal(kSeed, RngDomain::latent, kStream, std::uint64_t(k), 1); });
  const Moments along_stream =
      moments(n, [](int k) { return counter_normal(kSeed, RngDomain::basis, std::uint64_t(k), 0, 2); });
  for (const Moments& m : {along_index, along_step, along_stream}) {
    EXPECT_LT(std::fabs(m.mean), 0.02);
    EXPECT_LT(std::fabs(m.var - 1.0), 0.02);
    EXPECT_LT(std::fabs(m.kurtosis - 3.0), 0.15);
  }
}

// The two normals of one Box-Muller pair, neighbouring pairs, and two domains
// at the same address are uncorrelated.
TEST(CounterRng, NoCorrelationBetweenLanesOrDomains) {
  constexpr int blocks = 25000;
  double c01 = 0, c12 = 0, c_dom = 0;
  for (int b = 0; b < blocks; ++b) {
    double v[4];
    for (int l = 0; l < 4; ++l)
      v[l] = counter_normal(kSeed, RngDomain::noise, kStream, kStep, std::uint64_t(4 * b + l));
    c01 += v[0] * v[1];
    c12 += v[1] * v[2];
    c_dom += v[0] * counter_normal(kSeed, RngDomain::latent, kStream, kStep, std::uint64_t(4 * b));
  }
  EXPECT_LT(std::fabs(c01 / blocks), 0.03);
  EXPECT_LT(std::fabs(c12 / blocks), 0.03);
  EXPECT_LT(std::fabs(c_dom / blocks), 0.03);
}

TEST(CounterRng, UniformIsInOpenUnitInterval) {
  constexpr int n = 100000;
  double s1 = 0, s2 = 0;
  for (int k = 0; k < n; ++k) {
    const double u = counter_uniform(kSeed, RngDomain::noise_std, kStream, kStep, std::uint64_t(k));
    ASSERT_GT(u, 0.0);
    ASSERT_LT(u, 1.0);
    s1 += u;
    s2 += u * u;
  }
  EXPECT_NEAR(s1 / n, 0.5, 0.005);
  EXPECT_NEAR(s2 / n - (s1 / n) * (s1 / n), 1.0 / 12.0, 0.005);
  EXPECT_GT(uniform_open(0u), 0.0);
  EXPECT_LT(uniform_open(0xFFFFFFFFu), 1.0);
}

// The Box-Muller transform's elementary functions (written out so that a loop
// of normals vectorizes) against long double libm on the uniform of each
// word: every word near the ends of (0, 1) and of the eight octants (where
// the reduction mirrors and rotates), and a million spread over the rest.
// A wrong sign, octant or series term is off by far more than the 4 ulp
// allowed.
TEST(CounterRng, BoxMullerLogAndSincosAreAccurate) {
  std::vector<std::uint32_t> words;
  for (std::uint32_t o = 0; o < 8; ++o)
    for (std::uint32_t k = 0; k < 64; ++k) {
      words.push_back((o << 29) + k);
      words.push_back((o << 29) + 0x1FFFFFFFu - k);
    }
  for (std::uint64_t k = 0; k < 1000000; ++k) words.push_back(std::uint32_t(k * 4294967291ull / 1000000 + k % 7));
  const long double two_pi = 6.283185307179586476925286766559005768L;
  double log_err = 0, trig_err = 0;
  for (const std::uint32_t w : words) {
    const long double u = (static_cast<long double>(w) + 0.5L) / 4294967296.0L;
    const long double lg = std::log(u);
    log_err = std::max(log_err, double(std::fabs((detail::log_of_word(w) - lg) / lg)));
    double s, c;
    detail::sincos_turn_of_word(w, s, c);
    trig_err = std::max(trig_err, double(std::fabs(s - std::sin(two_pi * u))));
    trig_err = std::max(trig_err, double(std::fabs(c - std::cos(two_pi * u))));
    ASSERT_EQ(uniform_open(w), double(u)) << w;
  }
  constexpr double eps = 2.220446049250313e-16;
  EXPECT_LE(log_err, 4 * eps) << "relative error of log(u)";
  EXPECT_LE(trig_err, 4 * eps) << "absolute error of sin, cos (2 pi u)";
  if (std::getenv("MOSAIC_TEST_GAPS"))
    std::printf("log rel err %.3g, sincos abs err %.3g (eps %.3g)\n", log_err, trig_err, eps);
}

}  // namespace
