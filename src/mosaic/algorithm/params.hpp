// Options of one MOSAIC update (../shared/ALGORITHM.md sections 2-4), shared
// by the host reference and the Kokkos engine. Defaults are the normative ones.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace mosaic {

enum class CovarianceUpdate { exact, first_order };
enum class SubspaceDirection { precision, oja };
enum class InitMode { data, random };
// How w = S^{-1} z is solved (docs/ALGORITHM.md, "Maintained precision
// factorization"): dense = factor S afresh every step (normative);
// maintained = keep a Cholesky factor of S up to date in O(r^2) per step and
// refactor every refactor_every steps.
enum class PrecisionSolve { dense, maintained };
// Missing entries (ALGORITHM.md section 7; a NaN of a sample is a missing
// entry): error = a NaN is an input error (sections 1-6); posterior = the
// masked step of 7.3; project = GROUSE-style least squares (7.9, ablation);
// drop, zero_fill = baselines (7.9).
enum class MissingMode { error, posterior, project, drop, zero_fill };
// The frame rotation of a masked step (7.3 part 6).
enum class MissingRotation { observed, geodesic };
// Section 8: isotropic noise, or the whitened diagonal-noise model.
enum class NoiseModel { isotropic, diagonal };

inline const char* to_string(CovarianceUpdate c) { return c == CovarianceUpdate::exact ? "exact" : "first_order"; }
inline const char* to_string(SubspaceDirection s) { return s == SubspaceDirection::precision ? "precision" : "oja"; }
inline const char* to_string(InitMode m) { return m == InitMode::data ? "data" : "random"; }
inline const char* to_string(PrecisionSolve p) { return p == PrecisionSolve::dense ? "dense" : "maintained"; }
inline const char* to_string(MissingMode m) {
  switch (m) {
    case MissingMode::error: return "error";
    case MissingMode::posterior: return "posterior";
    case MissingMode::project: return "project";
    case MissingMode::drop: return "drop";
    case MissingMode::zero_fill: return "zero_fill";
  }
  return "?";
}
inline const char* to_string(MissingRotation m) { return m == MissingRotation::observed ? "observed" : "geodesic"; }
inline const char* to_string(NoiseModel m) { return m == NoiseModel::isotropic ? "isotropic" : "diagonal"; }

// algorithm.block_size and algorithm.reorthonormalize_every: `auto`, the
// input deck's default (resolved by MosaicEngine for its backend and scalar
// type; the struct's own defaults below are the plain sequential kernel).
constexpr int kAuto = -1;

struct MosaicParams {
  double eta_mu = 0.01;
  double eta_S = 0.01;
  double eta_U = 0.005;
  double eta_s = 0.01;
  double gamma = 1.0;     // noise-regularization weight of the precision direction
  double max_step = 1.0;  // affine-invariant trust radius of the covariance step
  CovarianceUpdate covariance_update = CovarianceUpdate::exact;
  SubspaceDirection subspace_direction = SubspaceDirection::precision;
  // Cholesky-QR of U every K steps; 0 = never; kAuto = at every block end
  // for float blocked runs, never otherwise (ALGORITHM.md section 6).
  int reorthonormalize_every = 0;
  InitMode init = InitMode::data;
  int init_samples = 0;      // 0 = default 2r
  int init_max_samples = 0;  // 0 = default 64 * init_samples: the largest init window (section 3)
  double init_scale = 1.0;   // s0 of init: random (S = s0 I, s2 = s0)
  // Implementation options of the Kokkos engine (the host reference ignores
  // them; both change only the rounding, not the algorithm):
  // k samples per block (ALGORITHM.md section 6); 0 or 1 = sequential
  // kernel; kAuto = auto_block_size (batched_engine.hpp).
  int block_size = 0;
  PrecisionSolve precision_solve = PrecisionSolve::dense;
  int refactor_every = 64;  // maintained solve: fresh Cholesky of S every this many steps
  // Sections 7-8 (the host reference, reference_masked.hpp; defaults of the
  // table before section 7).
  MissingMode missing = MissingMode::error;
  MissingRotation missing_rotation = MissingRotation::observed;
  double missing_cond_max = 1e4;  // guard on tr(C^-1) (7.5)
  NoiseModel noise = NoiseModel::isotropic;
  int rewhiten_every = 1000;     // steps between re-whitenings (8.3 part 4)
  int rewhiten_min_count = 100;  // accumulated residuals a coordinate needs to be re-whitened
  double rewhiten_fmax = 4.0;    // bound of one re-whitening's factor, [1/fmax, fmax]
  double leverage_floor = 0.1;   // coordinates with 1 - l_j below it do not accumulate

  int resolved_init_samples(int r) const { return init_samples > 0 ? init_samples : 2 * r; }
  // Section 3: the window doubles from init_samples on an uninformative start
  // while it stays within this many samples.
  std::int64_t resolved_init_max_samples(int r) const {
    return init_max_samples > 0 ? init_max_samples : 64 * std::int64_t(resolved_init_samples(r));
  }

  // Throws std::invalid_argument naming the offending option.
  void validate(int d, int r) const {
    if (r < 1) throw std::invalid_argument("rank r must be >= 1, got " + std::to_string(r));
    if (r >= d)
      throw std::invalid_argument("rank r must be < d, got r=" + std::to_string(r) + ", d=" + std::to_string(d));
    auto rate = [](const char* name, double v) {
      if (!(v > 0.0 && v < 1.0))
        throw std::invalid_argument(std::string(name) + " must be in (0,1), got " + std::to_string(v));
    };
    rate("eta_mu", eta_mu);
    rate("eta_S", eta_S);
    rate("eta_U", eta_U);
    rate("eta_s", eta_s);
    if (!(gamma >= 0.0) || !std::isfinite(gamma))
      throw std::invalid_argument("gamma must be finite and >= 0, got " + std::to_string(gamma));
    if (!(max_step > 0.0) || !std::isfinite(max_step))
      throw std::invalid_argument("max_step must be finite and > 0, got " + std::to_string(max_step));
    if (reorthonormalize_every < 0 && reorthonormalize_every != kAuto)
      throw std::invalid_argument("reorthonormalize_every must be >= 0 or auto, got " +
                                  std::to_string(reorthonormalize_every));
    if (init_samples < 0)
      throw std::invalid_argument("init_samples must be >= 0 (0 = default 2r), got " + std::to_string(init_samples));
    if (init == InitMode::data && resolved_init_samples(r) < r + 1)
      throw std::invalid_argument("init_samples must be >= r+1 = " + std::to_string(r + 1) + ", got " +
                                  std::to_string(init_samples));
    if (init_max_samples < 0)
      throw std::invalid_argument("init_max_samples must be >= 0 (0 = default 64 init_samples), got " +
                                  std::to_string(init_max_samples));
    if (init == InitMode::data && resolved_init_max_samples(r) < resolved_init_samples(r))
      throw std::invalid_argument(
          "init_max_samples must be >= init_samples = " + std::to_string(resolved_init_samples(r)) + ", got " +
          std::to_string(init_max_samples));
    if (block_size < 0 && block_size != kAuto)
      throw std::invalid_argument("block_size must be >= 0 (0 or 1 = sequential) or auto, got " +
                                  std::to_string(block_size));
    if (refactor_every < 1)
      throw std::invalid_argument("refactor_every must be >= 1, got " + std::to_string(refactor_every));
    if (!(init_scale > 0.0) || !std::isfinite(init_scale))
      throw std::invalid_argument("init_scale must be finite and > 0, got " + std::to_string(init_scale));
    // (tr(C^-1) >= r, so a guard below r skips every masked step: allowed, if useless.)
    if (!(missing_cond_max > 0.0) || !std::isfinite(missing_cond_max))
      throw std::invalid_argument("missing_cond_max must be finite and > 0, got " + std::to_string(missing_cond_max));
    if (rewhiten_every < 1)
      throw std::invalid_argument("rewhiten_every must be >= 1, got " + std::to_string(rewhiten_every));
    if (rewhiten_min_count < 1)
      throw std::invalid_argument("rewhiten_min_count must be >= 1, got " + std::to_string(rewhiten_min_count));
    if (!(rewhiten_fmax > 1.0) || !std::isfinite(rewhiten_fmax))
      throw std::invalid_argument("rewhiten_fmax must be finite and > 1, got " + std::to_string(rewhiten_fmax));
    if (!(leverage_floor > 0.0 && leverage_floor < 1.0))
      throw std::invalid_argument("leverage_floor must be in (0,1), got " + std::to_string(leverage_floor));
  }
};

}  // namespace mosaic
