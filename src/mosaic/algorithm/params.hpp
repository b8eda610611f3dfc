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

inline const char* to_string(CovarianceUpdate c) { return c == CovarianceUpdate::exact ? "exact" : "first_order"; }
inline const char* to_string(SubspaceDirection s) { return s == SubspaceDirection::precision ? "precision" : "oja"; }
inline const char* to_string(InitMode m) { return m == InitMode::data ? "data" : "random"; }
inline const char* to_string(PrecisionSolve p) { return p == PrecisionSolve::dense ? "dense" : "maintained"; }

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
  int init_samples = 0;     // 0 = default 2r
  double init_scale = 1.0;  // s0 of init: random (S = s0 I, s2 = s0)
  // Implementation options of the Kokkos engine (the host reference ignores
  // them; both change only the rounding, not the algorithm):
  // k samples per block (ALGORITHM.md section 6); 0 or 1 = sequential
  // kernel; kAuto = auto_block_size (batched_engine.hpp).
  int block_size = 0;
  PrecisionSolve precision_solve = PrecisionSolve::dense;
  int refactor_every = 64;  // maintained solve: fresh Cholesky of S every this many steps

  int resolved_init_samples(int r) const { return init_samples > 0 ? init_samples : 2 * r; }

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
    if (block_size < 0 && block_size != kAuto)
      throw std::invalid_argument("block_size must be >= 0 (0 or 1 = sequential) or auto, got " +
                                  std::to_string(block_size));
    if (refactor_every < 1)
      throw std::invalid_argument("refactor_every must be >= 1, got " + std::to_string(refactor_every));
    if (!(init_scale > 0.0) || !std::isfinite(init_scale))
      throw std::invalid_argument("init_scale must be finite and > 0, got " + std::to_string(init_scale));
  }
};

}  // namespace mosaic
