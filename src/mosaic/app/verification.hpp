// The run's verification (HPCG style): named checks, each with its value,
// relation and threshold, and the verdict over them. The verdict says
// PASSED only about what was checked: it names the accuracy checks that
// ran and the reference cross-check's status.
//   invariant  ALGORITHM.md section 4 at the end of the run: orthonormality
//              of U, symmetry and positive spectrum of S, s2 > 0, no
//              non-finite value, no broken-down stream.
//   reference  the reference cross-check (reference_check.hpp), when it
//              compared.
//   accuracy   unless run.accuracy: throughput_only: the share of clamped
//              steps against run.max_clamped_fraction, where a model that
//              fits its data would clamp at most half that share (at large
//              r section 2.3 clamps almost every step of a calibrated
//              model, so the count says nothing there and is reported "not
//              judged"); and, for a source
//              with a truth, the projector distance to it against
//              run.tracking_threshold and against a random subspace's
//              (1 - r/d), once the streams have taken the adaptation time
//              of the subspace, ceil(1 / eta_U) steps: a shorter run cannot
//              have tracked yet, so it is reported "not judged", not failed.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "mosaic/config/run_config.hpp"

namespace mosaic {

struct Verification {
  bool passed = true;
  std::string verdict;   // "PASSED" or "FAILED (<names>)", then what was checked
  std::string accuracy;  // what the accuracy checks covered
  nlohmann::json checks = nlohmann::json::array();
};

namespace detail {

inline nlohmann::json named_check(const char* group, const char* name, double value, const char* relation,
                                  double threshold, bool ok) {
  return nlohmann::json{{"group", group},       {"name", name},           {"value", value},
                        {"relation", relation}, {"threshold", threshold}, {"passed", ok}};
}

// The invariants of the final diagnostics (reduced over the ranks), with
// the scalar type's tolerances.
inline nlohmann::json invariant_checks(const nlohmann::json& final_diag, bool is_float) {
  const double orth_tol = is_float ? 1e-2 : 1e-8;
  const double sym_tol = is_float ? 1e-5 : 1e-12;
  const double orth = final_diag["orthonormality_error_max"];
  const double sym = final_diag["symmetry_error_max"];
  const double smin = final_diag["s_min_eig_min"];
  const double s2min = final_diag["s2_min"];
  const long long nonfinite = final_diag["nonfinite_count"];
  const long long broken = final_diag["breakdown_streams"];
  return nlohmann::json::array({
      named_check("invariant", "orthonormality_error_max", orth, "<=", orth_tol, orth <= orth_tol),
      named_check("invariant", "symmetry_error_max", sym, "<=", sym_tol, sym <= sym_tol),
      named_check("invariant", "s_min_eig_min", smin, ">", 0.0, smin > 0.0),
      named_check("invariant", "s2_min", s2min, ">", 0.0, s2min > 0.0),
      named_check("invariant", "nonfinite_count", double(nonfinite), "==", 0.0, nonfinite == 0),
      named_check("invariant", "breakdown_streams", double(broken), "==", 0.0, broken == 0),
  });
}

// P(chi-square with k degrees of freedom <= x), by Wilson-Hilferty's cube
// root normal approximation (as chi2_quantile_0999 in prequential.hpp):
// within 1e-3 of the exact CDF for k >= 16 (test_verification).
inline double chi2_cdf(double x, double k) {
  if (x <= 0) return 0.0;
  const double v = 2.0 / (9.0 * k);
  const double t = (std::cbrt(x / k) - (1.0 - v)) / std::sqrt(v);
  return 0.5 * std::erfc(-t / std::sqrt(2.0));
}

// The share of steps ALGORITHM.md section 2.3 clamps when the model fits its
// data: then z ~ N(0, S), q = z^T S^-1 z is chi-square with r degrees of
// freedom, and ell = eta_S sqrt((q - 1)^2 + r - 1) exceeds max_step exactly
// when |q - 1| > sqrt(c), c = (max_step / eta_S)^2 - (r - 1). With the
// default rates (eta_S 0.01, max_step 1) 0.002 at r = 64, 0.5 at r ~ 101, 0.97 at
// r = 128: there the clamp is the rate's cap (eta ~ max_step / r), not a
// sign of a model that lost its data.
inline double calibrated_clamped_fraction(const MosaicParams& p, int r) {
  const double c = (p.max_step / p.eta_S) * (p.max_step / p.eta_S) - double(r - 1);
  if (c <= 0) return 1.0;
  const double root = std::sqrt(c);
  return 1.0 - chi2_cdf(1.0 + root, r) + (root < 1.0 ? chi2_cdf(1.0 - root, r) : 0.0);
}

// The subspace's adaptation time in steps: the basis moves by about eta_U
// of the way to its target per step, so after 1 / eta_U steps a start has
// been mostly forgotten.
inline std::int64_t adaptation_steps(const MosaicParams& p) {
  return p.eta_U > 0 ? std::int64_t(std::ceil(1.0 / p.eta_U)) : std::numeric_limits<std::int64_t>::max();
}

// The accuracy checks into `checks`; returns what they covered.
// `steps_taken`: MOSAIC steps of all streams (warm-up and timed);
// `stream_steps`: of one stream (warm-up and timed).
inline std::string accuracy_checks(const RunConfig& cfg, const nlohmann::json& final_diag, double steps_taken,
                                   std::int64_t stream_steps, nlohmann::json& checks) {
  if (!cfg.run.check_accuracy) return "not checked (run.accuracy: throughput_only)";
  std::string judged, not_judged;  // what was checked; what was not, and why
  const auto add = [](std::string& list, const std::string& item) { list += (list.empty() ? "" : "; ") + item; };

  const double clamped_steps = final_diag["clamped_steps"];
  const double clamped = steps_taken > 0 ? clamped_steps / steps_taken : 0.0;
  const double calibrated = calibrated_clamped_fraction(cfg.algorithm, cfg.problem.rank);
  // Half the threshold: a model that fits its data must stay clear of it
  // (drift and the start-up raise the share above the calibrated one).
  if (calibrated <= cfg.run.max_clamped_fraction / 2) {
    checks.push_back(named_check("accuracy", "clamped_step_fraction", clamped, "<=", cfg.run.max_clamped_fraction,
                                 clamped <= cfg.run.max_clamped_fraction));
    add(judged, "clamped steps");
  } else {
    char share[16];
    std::snprintf(share, sizeof share, "%.1f%%", 100.0 * calibrated);
    add(not_judged, "clamped steps not judged (a model that fits its data clamps " + std::string(share) +
                        " of its steps at r = " + std::to_string(cfg.problem.rank) +
                        ", ALGORITHM.md 2.3, more than half of run.max_clamped_fraction)");
  }

  const std::int64_t adapt = adaptation_steps(cfg.algorithm);
  if (!final_diag.contains("accuracy")) {
    add(not_judged, "the source has no truth to track (the prequential accuracy is reported, not checked)");
  } else if (stream_steps < adapt) {
    add(not_judged, "tracking not judged: " + std::to_string(stream_steps) +
                        " steps < the adaptation time ceil(1/eta_U) = " + std::to_string(adapt) +
                        " steps (the projector distance is reported, not checked)");
  } else {
    const double proj = final_diag["accuracy"]["projector_distance_max"];
    // E[1 - ||U^T V||_F^2 / k] for U uniformly random
    const double random = 1.0 - double(cfg.problem.rank) / double(cfg.problem.d);
    checks.push_back(named_check("accuracy", "projector_distance_max", proj, "<=", cfg.run.tracking_threshold,
                                 proj <= cfg.run.tracking_threshold));
    checks.push_back(
        named_check("accuracy", "projector_distance_over_random", proj / random, "<=", 0.5, proj / random <= 0.5));
    add(judged, "tracking");
  }
  if (not_judged.empty()) return "checked";
  return (judged.empty() ? std::string("not judged") : judged + " only") + "; " + not_judged;
}

}  // namespace detail

// Every check of a finished run and the verdict. `ref_check`: the
// reference cross-check's result (null if the run stopped first).
inline Verification verify_run(const RunConfig& cfg, bool is_float, const nlohmann::json& final_diag,
                               const nlohmann::json& ref_check, double steps_taken, std::int64_t stream_steps) {
  Verification v;
  v.checks = detail::invariant_checks(final_diag, is_float);
  if (!ref_check.is_null() && ref_check.value("status", "") == "compared") {
    const double e = ref_check["rel_error"].is_number() ? ref_check["rel_error"].get<double>()
                                                        : std::numeric_limits<double>::infinity();
    v.checks.push_back(detail::named_check("reference", "reference_rel_error", e, "<=",
                                           ref_check["threshold"].get<double>(), ref_check["passed"].get<bool>()));
  }
  v.accuracy = detail::accuracy_checks(cfg, final_diag, steps_taken, stream_steps, v.checks);
  std::string failed;
  for (const auto& c : v.checks)
    if (!c["passed"].get<bool>()) {
      v.passed = false;
      failed += (failed.empty() ? "" : ", ") + c["name"].get<std::string>();
    }
  v.verdict = v.passed ? "PASSED" : "FAILED (" + failed + ")";
  v.verdict += "; accuracy " + v.accuracy + "; reference cross-check " +
               (ref_check.is_null()                           ? std::string("not finished (the run stopped first)")
                : ref_check.value("status", "") == "compared" ? std::string("compared")
                                                              : ref_check.value("status", "unknown"));
  return v;
}

}  // namespace mosaic
