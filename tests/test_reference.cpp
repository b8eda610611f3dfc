#include <gtest/gtest.h>

#include "mosaic/reference.hpp"
#include "mosaic/synthetic.hpp"

namespace {
using namespace mosaic;

TEST(ReferenceSmoke, StepKeepsInvariants) {
  SyntheticSpec spec;
  spec.d = 64;
  spec.r = 4;
  spec.seed = 3;
  const SyntheticTruth truth = make_synthetic_truth(spec, 0);
  MosaicParams p;
  const int n0 = p.resolved_init_samples(spec.r);
  std::vector<double> X(std::size_t(n0) * spec.d);
  for (int t = 0; t < n0; ++t) synthetic_sample(spec, truth, 0, t, X.data() + std::size_t(t) * spec.d);
  auto st = reference_init_data(X.data(), n0, spec.d, spec.r, p);
  std::vector<double> x(spec.d);
  for (int t = n0; t < n0 + 200; ++t) {
    synthetic_sample(spec, truth, 0, t, x.data());
    reference_step(st, x.data(), p);
  }
  const Invariants inv = reference_invariants(st);
  EXPECT_LT(inv.orthonormality_error, 1e-12);
  EXPECT_GT(inv.s_min_eig, 0.0);
  EXPECT_TRUE(inv.all_finite);
}
}  // namespace
