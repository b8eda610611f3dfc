// Prequential (truth-free) accuracy, ALGORITHM.md section 4: how well the
// state before a step predicted the sample the step then takes, from the
// step's own quantities (y = x - mu, z = U^T y, rho^2, q = z^T S^-1 z) and
// the log-determinant of the factor the step computed anyway (the masked
// modes project, zero_fill and drop factor S + s2 K for the score alone on
// a sample with gaps). Written once for the host reference and every kernel
// (host and device).
//
// With Sigma = U S U^T + s2 (I - U U^T) = s2 I + U (S - s2 I) U^T on n
// coordinates (n = d; with missing data (7) the observed ones, Sigma_OO):
//   log det Sigma = log det C + log det(S + Delta) + (n - r) log s2,
//   y^T Sigma^-1 y = z_ls^T (S + Delta)^-1 z_ls + rho^2 / s2 = m2,
// (matrix determinant lemma and e_O orthogonal to U_O's columns; C = U_O^T
// U_O, Delta = s2 (C^-1 - I), z_ls = C^-1 U_O^T y_O, so with nothing missing
// C = I, Delta = 0 and m2 = q + rho^2 / s2), and
//   nll = 0.5 (n log(2 pi) + log det Sigma + m2) / n   (per coordinate).
// A sample is a surprise when m2 exceeds the 0.999 quantile of chi-square
// with n degrees of freedom (Wilson-Hilferty's approximation).
// With diagonal noise (8.2) the step sees the whitened y~ = Psi^-1/2 y and
// models Sigma~ as above; in data units Sigma = Psi^1/2 Sigma~ Psi^1/2, so
// m2 is unchanged, log det Sigma gains sum_{j} log psi_j over the n
// coordinates, and the residual fraction is the whitened one.
//
// Per stream the sums below are kept in double (StreamBatch::prequential,
// the reference's ReferenceState::prequential); means per interval and per
// run are differences of those running sums (batch_diagnostics.hpp).
#pragma once

#include <Kokkos_Core.hpp>

#include "mosaic/util/kokkos_compat.hpp"

namespace mosaic {

// Columns of a stream's running prequential sums.
enum PrequentialColumn : int {
  preq_samples = 0,        // samples evaluated (every step but 7.5's skipped ones; gapped samples in every mode)
  preq_zero_norm,          // of those, samples with ||y|| = 0 (no residual fraction)
  preq_residual_fraction,  // sum of rho^2 / ||y||^2 over the others
  preq_nll,                // sum of the per-coordinate negative log-likelihoods
  preq_surprises,          // samples with m2 above the chi-square 0.999 quantile
  preq_columns
};

// The 0.999 quantile of chi-square with k degrees of freedom (Wilson-Hilferty:
// k (1 - 2/(9k) + z sqrt(2/(9k)))^3, z the standard normal 0.999 quantile).
// Against tabulated quantiles it is high by 2.3% at k = 2, 0.6% at 10, 0.17%
// at 30, 0.04% at 100 and 1.5e-5 at 1,000 (tests/algorithm/test_prequential.cpp):
// at small n the surprise count errs on the low side.
KOKKOS_INLINE_FUNCTION double chi2_quantile_0999(double k) {
  constexpr double z = 3.090232306167813;
  const double a = 2.0 / (9.0 * k);
  const double c = 1.0 - a + z * kmath::sqrt(a);
  return k * c * c * c;
}

// One evaluated sample, in double whatever the run's type.
struct PrequentialSample {
  int n = 0;              // coordinates the likelihood is over (d, or |O|)
  int r = 0;              // retained rank
  double yy = 0;          // ||y||^2 on those coordinates
  double rho2 = 0;        // squared residual off the frame
  double quad = 0;        // z_ls^T (S + Delta)^-1 z_ls (q with nothing missing)
  double logdet_sd = 0;   // log det(S + Delta) (log det S with nothing missing)
  double logdet_c = 0;    // log det C (0 with nothing missing)
  double s2 = 0;          // the noise variance before the step
  double logdet_psi = 0;  // sum of log psi_j over the n coordinates (noise: diagonal; 0 otherwise)

  // y^T Sigma^-1 y.
  KOKKOS_INLINE_FUNCTION double m2() const { return quad + rho2 / s2; }

  KOKKOS_INLINE_FUNCTION double nll() const {
    constexpr double log_two_pi = 1.8378770664093454836;
    return 0.5 * (double(n) * log_two_pi + logdet_psi + logdet_c + logdet_sd + double(n - r) * kmath::log(s2) + m2()) /
           double(n);
  }

  // Adds this sample to a stream's running sums acc[0 .. preq_columns).
  KOKKOS_INLINE_FUNCTION void add_to(double* acc) const {
    acc[preq_samples] += 1.0;
    if (yy > 0.0) acc[preq_residual_fraction] += rho2 / yy;
    else acc[preq_zero_norm] += 1.0;
    acc[preq_nll] += nll();
    if (m2() > chi2_quantile_0999(double(n))) acc[preq_surprises] += 1.0;
  }
};

// 2 sum_j log a(j, j): the log-determinant of A = R^T R (or L L^T) from
// the diagonal of its Cholesky factor a, row j at a + j * ld. (A pointer,
// not a functor: the host reference calls it with its vectors, and a host
// lambda in a host-device function is what nvcc warns about.)
template <class T>
KOKKOS_INLINE_FUNCTION double logdet_from_factor(int r, const T* a, long ld) {
  double s = 0;
  for (int j = 0; j < r; ++j) s += kmath::log(double(a[j * (ld + 1)]));
  return 2.0 * s;
}

}  // namespace mosaic
