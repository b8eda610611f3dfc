// The controlled drifting anisotropic stream of ALGORITHM.md section 5, and its
// closed-form truth. Every random number is a counter-based draw of
// (seed, stream id, step, index), so a stream's samples are the same whatever
// batch, rank or backend generates them. The per-element formula lives in
// `synthetic_element`, the host generator's (synthetic_sample); the device
// generator (synthetic_source.hpp) does the same operations in the same
// order, blocked over samples.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "mosaic/algorithm/counter_rng.hpp"
#include "mosaic/algorithm/host_linalg.hpp"
#include "mosaic/algorithm/rounded.hpp"
#include "mosaic/algorithm/synthetic_missing.hpp"

namespace mosaic {

struct SyntheticSpec {
  int d = 0;
  int r = 0;                // rank of the true signal subspace
  double lambda_max = 1.0;  // largest signal eigenvalue
  double lambda_min = 0.1;  // smallest signal eigenvalue (geometric ladder)
  double noise = 0.1;       // homogeneous noise standard deviation
  double noise_min = 0.0;   // heterogeneous noise: per-coordinate std log-uniform
  double noise_max = 0.0;   //   in [noise_min, noise_max] when noise_max > 0
  double drift = 0.0;       // omega, rad/step
  double mean_scale = 1.0;  // per-stream mean m_s ~ mean_scale * N(0, I)
  std::uint64_t seed = 1;
  MissingSpec missing;  // entries generated as NaN (ALGORITHM.md section 7; none by default)

  KOKKOS_INLINE_FUNCTION bool heterogeneous() const { return noise_max > 0.0; }

  void validate() const {
    auto fail = [](const std::string& m) { throw std::invalid_argument("synthetic source: " + m); };
    if (d < 2) fail("d must be >= 2, got " + std::to_string(d));
    if (r < 1 || 2 * r > d)
      fail("rank must be in [1, d/2] (V0 and W0 are mutually orthogonal), got " + std::to_string(r) +
           " with d=" + std::to_string(d));
    if (!(lambda_max > 0) || !(lambda_min > 0) || lambda_min > lambda_max)
      fail("need 0 < lambda_min <= lambda_max, got lambda_min=" + std::to_string(lambda_min) +
           ", lambda_max=" + std::to_string(lambda_max));
    if (heterogeneous()) {
      if (!(noise_min > 0) || noise_min > noise_max)
        fail("need 0 < noise_range[0] <= noise_range[1], got [" + std::to_string(noise_min) + ", " +
             std::to_string(noise_max) + "]");
    } else if (!(noise > 0)) {
      fail("noise must be > 0, got " + std::to_string(noise));
    }
    if (!std::isfinite(drift)) fail("drift must be finite");
    if (!(mean_scale >= 0) || !std::isfinite(mean_scale)) fail("mean_scale must be >= 0");
    missing.validate(d);
  }

  // Signal eigenvalue j (descending geometric ladder).
  double lambda(int j) const {
    return r == 1 ? lambda_max : lambda_max * std::pow(lambda_min / lambda_max, double(j) / double(r - 1));
  }
};

// The latent coordinate a_j and the noise draw n_i of x_t (standard normal).
KOKKOS_INLINE_FUNCTION double synthetic_latent(const SyntheticSpec& spec, std::uint64_t stream, std::uint64_t step,
                                               int j) {
  return counter_normal(spec.seed, RngDomain::latent, stream, step, std::uint64_t(j));
}
KOKKOS_INLINE_FUNCTION double synthetic_noise(const SyntheticSpec& spec, std::uint64_t stream, std::uint64_t step,
                                              int i) {
  return counter_normal(spec.seed, RngDomain::noise, stream, step, std::uint64_t(i));
}

// The truth's pointwise parts, shared by the host truth (make_synthetic_truth)
// and the execution space's (synthetic_source.hpp): entry i of the mean m_s,
// the noise std of coordinate i, and entries 4g .. 4g + 3 (flat, row-major)
// of the d x 2r Gaussian matrix whose orthonormalized columns are [V0 W0].
KOKKOS_INLINE_FUNCTION double synthetic_mean(const SyntheticSpec& spec, std::uint64_t stream, int i) {
  return spec.mean_scale * counter_normal(spec.seed, RngDomain::mean, stream, 0, std::uint64_t(i));
}
KOKKOS_INLINE_FUNCTION double synthetic_noise_std(const SyntheticSpec& spec, std::uint64_t stream, int i) {
  if (!spec.heterogeneous()) return spec.noise;
  const double u = counter_uniform(spec.seed, RngDomain::noise_std, stream, 0, std::uint64_t(i));
  return spec.noise_min * kmath::pow(spec.noise_max / spec.noise_min, u);
}
KOKKOS_INLINE_FUNCTION void synthetic_basis_normals(const SyntheticSpec& spec, std::uint64_t stream, std::uint64_t g,
                                                    double (&z)[4]) {
  counter_normal4(spec.seed, RngDomain::basis, stream, 0, g, z);
}

// Element i of x_t = m + V(t) (sqrt(lambda) .* a_t) + noise_t, given the mean
// m_i, the rows V0_i and W0_i, the drift-scaled latents (computed once per
// sample by scaled_latents) and the noise std of coordinate i:
// m_i + sum_j (V0_ij lc_j + W0_ij ls_j) + noise_std_i n_i, with
// lc_j = cos(omega t) sqrt(lambda_j) a_j and ls_j = sin(omega t) sqrt(lambda_j) a_j,
// summed in increasing j (the device generator's order: a product of
// [V0 W0] with the latents, GEMM form).
template <class RowV, class RowW, class Latents>
KOKKOS_INLINE_FUNCTION double synthetic_element(const SyntheticSpec& spec, std::uint64_t stream, std::uint64_t step,
                                                int i, double mean_i, const RowV& v0_i, const RowW& w0_i,
                                                const Latents& lc, const Latents& ls, double noise_std_i) {
  double x = mean_i;
  for (int j = 0; j < spec.r; ++j) {
    x = rounded::mul_add(v0_i(j), lc(j), x);
    x = rounded::mul_add(w0_i(j), ls(j), x);
  }
  return rounded::mul_add(noise_std_i, synthetic_noise(spec, stream, step, i), x);
}

// The drift-scaled latents of synthetic_element: lc_j = cos_t (sqrt_lambda_j a_j),
// ls_j = sin_t (sqrt_lambda_j a_j), rounded in that order.
KOKKOS_INLINE_FUNCTION void scaled_latents(double sqrt_lambda_j, double a_j, double cos_t, double sin_t, double& lc_j,
                                           double& ls_j) {
  const double scaled = sqrt_lambda_j * a_j;
  lc_j = cos_t * scaled;
  ls_j = sin_t * scaled;
}

// Closed-form truth of one stream, on the host (double).
struct SyntheticTruth {
  int d = 0, r = 0;
  std::vector<double> V0, W0;       // d x r row-major, [V0 W0] orthonormal
  std::vector<double> sqrt_lambda;  // r
  std::vector<double> mean;         // d
  std::vector<double> noise_std;    // d
  double noise_variance = 0;        // mean of noise_std^2: what s2 should estimate

  // V(t) = cos(omega t) V0 + sin(omega t) W0, row-major d x r.
  std::vector<double> basis_at(const SyntheticSpec& spec, std::uint64_t step) const {
    const double c = std::cos(spec.drift * double(step)), s = std::sin(spec.drift * double(step));
    std::vector<double> V(V0.size());
    for (std::size_t k = 0; k < V.size(); ++k) V[k] = c * V0[k] + s * W0[k];
    return V;
  }
};

// The mean of noise_std^2 over the d coordinates, summed in increasing i.
inline double synthetic_noise_variance(const double* noise_std, int d) {
  double var_sum = 0;
  for (int i = 0; i < d; ++i) var_sum += noise_std[i] * noise_std[i];
  return var_sum / d;
}

// The host truth, the oracle of the execution space's (synthetic_source.hpp):
// the same pointwise parts bitwise; [V0 W0] the Q factor of the same Gaussian
// matrix by modified Gram-Schmidt (host::orthonormalize_columns) where the
// execution space's is by Cholesky-QR, so the two agree to rounding (eps
// times the matrix's condition number).
inline SyntheticTruth make_synthetic_truth(const SyntheticSpec& spec, std::uint64_t stream) {
  spec.validate();
  const int d = spec.d, r = spec.r;
  SyntheticTruth t;
  t.d = d;
  t.r = r;
  std::vector<double> Q(std::size_t(d) * 2 * r);
  for (std::size_t g = 0; 4 * g < Q.size(); ++g) {
    double z[4];
    synthetic_basis_normals(spec, stream, g, z);
    for (std::size_t q = 0; q < 4 && 4 * g + q < Q.size(); ++q) Q[4 * g + q] = z[q];
  }
  host::orthonormalize_columns(Q, d, 2 * r);
  t.V0.resize(std::size_t(d) * r);
  t.W0.resize(std::size_t(d) * r);
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < r; ++j) {
      t.V0[std::size_t(i) * r + j] = Q[std::size_t(i) * 2 * r + j];
      t.W0[std::size_t(i) * r + j] = Q[std::size_t(i) * 2 * r + r + j];
    }
  t.sqrt_lambda.resize(r);
  for (int j = 0; j < r; ++j) t.sqrt_lambda[j] = std::sqrt(spec.lambda(j));
  t.mean.resize(d);
  t.noise_std.resize(d);
  for (int i = 0; i < d; ++i) {
    t.mean[i] = synthetic_mean(spec, stream, i);
    t.noise_std[i] = synthetic_noise_std(spec, stream, i);
  }
  t.noise_variance = synthetic_noise_variance(t.noise_std.data(), d);
  return t;
}

// The row accessor synthetic_sample passes to synthetic_element: a struct with
// a host-and-device call operator (not a host lambda, which nvcc warns about
// when it is called from a host-and-device function).
struct ArrayRow {
  const double* p;
  KOKKOS_INLINE_FUNCTION double operator()(int j) const { return p[j]; }
};

// x_t of one stream on the host, into x (length d), its missing entries
// (spec.missing) NaN.
template <class T>
void synthetic_sample(const SyntheticSpec& spec, const SyntheticTruth& truth, std::uint64_t stream, std::uint64_t step,
                      T* x) {
  const int r = spec.r;
  const double c = std::cos(spec.drift * double(step)), s = std::sin(spec.drift * double(step));
  std::vector<double> lc(r), ls(r);
  for (int j = 0; j < r; ++j)
    scaled_latents(truth.sqrt_lambda[j], synthetic_latent(spec, stream, step, j), c, s, lc[j], ls[j]);
  for (int i = 0; i < spec.d; ++i) {
    const ArrayRow v0{truth.V0.data() + std::size_t(i) * r}, w0{truth.W0.data() + std::size_t(i) * r};
    x[i] = T(synthetic_element(spec, stream, step, i, truth.mean[i], v0, w0, ArrayRow{lc.data()}, ArrayRow{ls.data()},
                               truth.noise_std[i]));
  }
  if (spec.missing.any()) apply_synthetic_missing(spec.missing, spec.seed, stream, step, x, spec.d);
}

}  // namespace mosaic
