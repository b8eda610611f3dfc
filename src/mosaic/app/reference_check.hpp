// The reference cross-check of a run (docs/INPUT_DECK.md, run.reference_check_*):
// one stream is also advanced by the host reference (reference_masked_step:
// section 2, bit for bit reference_step, on complete samples and under
// missing: error; section 7 on samples with missing entries) over the
// first timed steps, and the engine's state is compared with it, basis-free,
// at the end of the block where the window closes. It is what shows that a
// run on a GPU (or with any kernel, block size or thread count) computed
// ALGORITHM.md and not something else.
//
// The reference runs in double from the engine's state at the window's
// start, widened to double, and consumes the same samples (the engine's
// Scalar values, widened): so it measures the engine's error against the
// exact update of its own inputs, float included. The window ends at the
// first block end at or after `steps` timed steps; block ends are a function
// of the position and the deck alone (run.hpp), so the window does not cut
// blocks and a run resumed inside it ends it where the uninterrupted run
// does. A stream the engine freezes (a non-finite row, a breakdown) is
// compared where both stopped: the reference refuses the same sample.
//
// The tolerance scales with the data (ALGORITHM.md section 6: a check
// states its tolerance through the error models and the data's
// offset-to-spread ratio). Over the window the reference records, from its
// own state before each step, the offset-to-spread ratio max_i |x_i| /
// sqrt(s2 psi_i) (y = x - mu loses eps |x_i| to rounding, against a noise
// scale sqrt(s2 psi_i)) and, for each step it takes, ||y||^2 / rho^2 (the
// relative error of a rho^2 formed from the blocked coefficients is eps
// ||y||^2 / rho^2; section 6's resolve rule recomputes it from the explicit
// residual where ||y||^2 / rho^2 > 1 / (64 eps), so what is kept has an
// error of at most 1 / 64). The tolerance is min(1, max(base, eps kappa))
// (at 1 the data leave no digit to compare), eps of the run's scalar type, kappa the largest offset-to-spread ratio and, when
// the engine forms rho^2 from coefficients (block_size > 1 or
// precision_solve: maintained), the largest ||y||^2 / rho^2 of the steps
// the engine may have kept (those up to twice 1 / (64 eps): the engine
// decides on its own rho^2, which is off by up to 1 / 64 near the line),
// capped at 1 / (64 eps). On data of moderate offset and conditioning eps
// kappa is far below the base, which stays the tolerance.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include "mosaic/algorithm/params.hpp"
#include "mosaic/algorithm/reference.hpp"
#include "mosaic/algorithm/reference_masked.hpp"
#include "mosaic/app/decomposition.hpp"
#include "mosaic/config/run_config.hpp"
#include "mosaic/engine/batched_engine.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/engine/transfer.hpp"
#include "mosaic/util/mpi_collectives.hpp"

namespace mosaic {

// The relative error the cross-check holds a run to on well-conditioned
// data (the base of the tolerance, file comment): the largest of
//   ||C_e - C_r||_F / ||C_r||_F  (C = U S U^T, basis-free),
//   |s2_e - s2_r| / s2_r,
//   max_i |mu_e - mu_r| / (max_i |mu_r| + sqrt(s2_r)),
// e = engine, r = reference.
inline double reference_check_threshold(bool is_float) { return is_float ? 1e-3 : 1e-10; }

// The data's conditioning seen by the cross-check over its window (file
// comment): the largest offset-to-spread ratio, ||y||^2 / rho^2 (inf for a
// residual of exactly 0), and that of the steps whose coefficient rho^2 the
// engine may have kept (capped at `cap` = 1 / (64 eps)).
struct CheckConditioning {
  double cap = 0;
  double offset_to_spread_max = 0, residual_ratio_max = 0, kept_ratio_max = 0;

  // From the reference's state before the step and the sample x (the
  // sample's observed entries: NaN entries are left out).
  template <class State>
  static std::pair<double, double> before_step(const State& st, const double* x) {
    double offset = 0, yy = 0;
    for (int i = 0; i < st.d; ++i) {
      if (std::isnan(x[i])) continue;
      const double noise = st.psi.empty() ? st.s2 : st.s2 * st.psi[std::size_t(i)];
      const double y = x[i] - st.mu[std::size_t(i)];
      if (noise > 0) offset = std::max(offset, std::fabs(x[i]) / std::sqrt(noise));
      yy += st.psi.empty() ? y * y : y * y / st.psi[std::size_t(i)];
    }
    return {offset, yy};
  }
  void add(double offset, double yy, bool stepped, double rho) {
    offset_to_spread_max = std::max(offset_to_spread_max, offset);
    if (!stepped || !(yy > 0)) return;
    const double ratio = rho > 0 ? yy / (rho * rho) : std::numeric_limits<double>::infinity();
    residual_ratio_max = std::max(residual_ratio_max, ratio);
    if (ratio <= 2 * cap) kept_ratio_max = std::max(kept_ratio_max, std::min(ratio, cap));
  }
  // kappa of the file comment.
  double kappa(bool coefficient_rho2) const {
    return std::max(offset_to_spread_max, coefficient_rho2 ? kept_ratio_max : 0.0);
  }
};

template <class Scalar, class ExecSpace>
class ReferenceCrossCheck {
 public:
  using block_view = Kokkos::View<const Scalar***, Kokkos::LayoutStride, typename ExecSpace::memory_space>;

  // Collective: the ranks learn which one owns the stream. `earlier`: the
  // check's result from the checkpoint a run resumed from (null if none or
  // not finished there); `timed_done`: where this process starts.
  ReferenceCrossCheck(const RunConfig& cfg, const StreamDecomposition& decomp, std::int64_t timed_done,
                      const nlohmann::json& earlier, MPI_Comm comm)
      : params_(cfg.algorithm),
        coefficient_rho2_(resolved_block_size<ExecSpace>(cfg.algorithm, cfg.problem.d, cfg.problem.rank) > 1 ||
                          cfg.algorithm.precision_solve == PrecisionSolve::maintained),
        conditioning_{1.0 / (64.0 * double(std::numeric_limits<Scalar>::epsilon()))},
        steps_(cfg.run.reference_check_steps),
        stream_(cfg.run.reference_check_stream),
        comm_(comm) {
    int rank = 0, nranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    const auto it = std::find(decomp.local_ids.begin(), decomp.local_ids.end(), stream_);
    local_ = it == decomp.local_ids.end() ? -1 : int(it - decomp.local_ids.begin());
    int owner = local_ >= 0 ? rank : nranks;
    detail::counted_mpi(sizeof owner, [&] { return MPI_Allreduce(MPI_IN_PLACE, &owner, 1, MPI_INT, MPI_MIN, comm); });
    owner_ = owner;
    if (steps_ <= 0) {
      result_ = {{"status", "off (run.reference_check_steps: 0)"}};
    } else if (!earlier.is_null()) {
      result_ = earlier;  // finished before the restart
    } else if (timed_done >= steps_) {
      result_ = {{"status", "not run: the run resumed at timed step " + std::to_string(timed_done) +
                                " from a checkpoint without the check's result"}};
    }
    from_ = timed_done;
  }

  // Not run, and why (a run whose steps are not one stream of blocks).
  void skip(const std::string& why) {
    if (open()) result_ = {{"status", "not run: " + why}};
  }

  // The check's result so far (null while its window is open).
  const nlohmann::json& result() const { return result_; }
  bool open() const { return result_.is_null(); }

  // At the start of the timed loop: the reference starts from the engine's state.
  void start(const StreamBatch<Scalar, ExecSpace>& batch) {
    if (!open() || local_ < 0) return;
    reference_ = widen(batch.to_host_masked(local_));
    start_steps_ = reference_->steps;
  }

  // After each timed block is generated: the reference takes the same samples.
  void consume(const block_view& X) {
    if (!open() || local_ < 0) return;
    const auto rows = Kokkos::subview(X, local_, Kokkos::ALL(), Kokkos::ALL());
    const auto h = transfer::to_host(rows);
    const int n = int(h.extent(0)), d = int(h.extent(1));
    std::vector<double> x(static_cast<std::size_t>(d));
    for (int j = 0; j < n && stopped_.empty(); ++j) {
      for (int i = 0; i < d; ++i) x[std::size_t(i)] = double(h(j, i));
      try {
        const auto [offset, yy] = CheckConditioning::before_step(*reference_, x.data());
        const MaskedStepInfo info = reference_masked_step(*reference_, x.data(), params_);
        conditioning_.add(offset, yy, !info.skipped && !info.dropped, info.rho);
      } catch (const std::exception& e) {  // the engine freezes the stream at this sample too
        stopped_ = e.what();
      }
    }
  }

  // At each timed block end (collective, every rank calls it): closes the
  // window once `timed_done` reached the check's steps, or at the end of a
  // run shorter than them (`run_ended`).
  void at_block_end(const StreamBatch<Scalar, ExecSpace>& batch, std::int64_t timed_done, bool run_ended = false) {
    if (!open() || (timed_done < steps_ && !run_ended)) return;
    std::string text;
    if (local_ >= 0) text = compare(batch.to_host_masked(local_), timed_done).dump();
    long long n = (long long)text.size();
    detail::counted_mpi(sizeof n, [&] { return MPI_Bcast(&n, 1, MPI_LONG_LONG, owner_, comm_); });
    text.resize(std::size_t(n));
    detail::counted_mpi(n, [&] { return MPI_Bcast(text.data(), int(n), MPI_CHAR, owner_, comm_); });
    result_ = nlohmann::json::parse(text);
  }

 private:
  static MaskedReferenceState<double> widen(const MaskedReferenceState<Scalar>& s) {
    MaskedReferenceState<double> w;
    static_cast<ReferenceState<double>&>(w) = ReferenceState<double>(s.d, s.r);
    std::copy(s.mu.begin(), s.mu.end(), w.mu.begin());
    std::copy(s.U.begin(), s.U.end(), w.U.begin());
    std::copy(s.S.begin(), s.S.end(), w.S.begin());
    w.s2 = s.s2;
    w.steps = s.steps;
    w.clamped_steps = s.clamped_steps;
    w.seen = s.seen;
    w.skipped_steps = s.skipped_steps;
    w.dropped_samples = s.dropped_samples;
    // Section 8's model (noise: diagonal): the profile, leverages,
    // accumulators and re-whitening count.
    w.psi.assign(s.psi.begin(), s.psi.end());
    w.leverage.assign(s.leverage.begin(), s.leverage.end());
    w.residuals = s.residuals;
    w.counts = s.counts;
    w.rewhitenings = s.rewhitenings;
    return w;
  }

  // max_i |psi_i - psi_ref_i| / psi_ref_i (0 under isotropic noise).
  template <class T>
  static double psi_rel_error(const MaskedReferenceState<T>& engine, const MaskedReferenceState<double>& ref) {
    double e = 0;
    for (std::size_t i = 0; i < ref.psi.size() && i < engine.psi.size(); ++i)
      e = std::max(e, std::fabs(double(engine.psi[i]) - ref.psi[i]) / ref.psi[i]);
    return ref.psi.size() == engine.psi.size() ? e : std::numeric_limits<double>::quiet_NaN();
  }

  // Both states at a power-of-two scale where the reference's S and s2 are
  // of order 1 (mu, S, s2 by 2^-e/2, 2^-e, 2^-e: exact): the relative errors
  // below do not depend on the data's units, but their norms square
  // entries, which would overflow or underflow for data of 1e+-100.
  static void to_unit_scale(ReferenceState<double>& s, int e) {
    for (double& v : s.mu) v = std::ldexp(v, -e / 2);
    for (double& v : s.S) v = std::ldexp(v, -e);
    s.s2 = std::ldexp(s.s2, -e);
  }

  nlohmann::json compare(const MaskedReferenceState<Scalar>& engine_state, std::int64_t timed_done) const {
    ReferenceState<double> ref = *reference_;
    MaskedReferenceState<double> engine = widen(engine_state);
    double amax = std::fabs(ref.s2);
    for (double v : ref.S) amax = std::max(amax, std::fabs(v));
    const int e = detail::balancing_exponent(amax);
    to_unit_scale(ref, e);
    to_unit_scale(engine, e);
    const StateDistance dist = reference_distance(engine, ref);
    // ||U S U^T||_F of the reference: its distance to the same basis with S = 0.
    ReferenceState<double> zero = ref;
    std::fill(zero.S.begin(), zero.S.end(), 0.0);
    const double cov_norm = reference_distance(ref, zero).covariance;
    double mu_scale = std::sqrt(std::max(ref.s2, 0.0));
    for (double v : ref.mu) mu_scale = std::max(mu_scale, std::fabs(v) + std::sqrt(std::max(ref.s2, 0.0)));
    const double cov_rel = dist.covariance / cov_norm;
    const double s2_rel = dist.s2 / ref.s2;
    const double mu_rel = dist.mu / mu_scale;
    const double psi_rel = psi_rel_error(engine, *reference_);
    const double rel = std::max({cov_rel, s2_rel, mu_rel, psi_rel});
    const double base = reference_check_threshold(std::is_same<Scalar, float>::value);
    const double eps = double(std::numeric_limits<Scalar>::epsilon());
    const double model = eps * conditioning_.kappa(coefficient_rho2_);
    // At 1 the data's conditioning leaves no digit to compare (reported as
    // such by the threshold itself); never inf, which JSON cannot hold.
    const double tol = std::isfinite(model) ? std::min(std::max(base, model), 1.0) : 1.0;
    auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
    nlohmann::json j = {
        {"status", "compared"},
        {"stream_id", stream_},
        {"from_timed_step", from_},
        {"to_timed_step", timed_done},
        {"reference_steps", ref.steps - start_steps_},
        {"reference", "host reference (reference_masked.hpp) in double, from the engine's state at from_timed_step"},
        {"covariance_rel_error", cov_rel},
        {"s2_rel_error", s2_rel},
        {"mu_rel_error", mu_rel},
        {"psi_rel_error", std::isfinite(psi_rel) ? nlohmann::json(psi_rel) : nlohmann::json()},
        {"rewhitenings", reference_->rewhitenings},
        {"projector_distance", dist.projector / ref.r},
        {"rel_error", std::isfinite(rel) ? nlohmann::json(rel) : nlohmann::json()},
        {"threshold", tol},
        {"threshold_base", base},
        {"conditioning",
         {{"offset_to_spread_max", number(conditioning_.offset_to_spread_max)},
          {"residual_ratio_max", number(conditioning_.residual_ratio_max)},
          {"kept_residual_ratio_max", conditioning_.kept_ratio_max},
          {"rho2_from_coefficients", coefficient_rho2_},
          {"scalar_eps", eps},
          {"error_model", number(model)},
          {"definition",
           "threshold = min(1, max(threshold_base, scalar_eps * kappa)), kappa = max(offset_to_spread_max, "
           "kept_residual_ratio_max when rho2_from_coefficients); offset_to_spread = max_i |x_i| / sqrt(s2 psi_i), "
           "residual_ratio = ||y||^2 / rho^2 (null: a residual of exactly 0), both from the reference's state "
           "before each step of the window; kept_residual_ratio_max: the largest residual_ratio, capped at "
           "1 / (64 scalar_eps), of the steps at most twice that (those whose coefficient rho^2 the section 6 "
           "resolve rule may keep; docs/INPUT_DECK.md)"}}},
        {"passed", std::isfinite(rel) && rel <= tol},
    };
    if (!stopped_.empty()) j["reference_stopped"] = stopped_;
    return j;
  }
  MosaicParams params_;
  bool coefficient_rho2_;  // the engine forms rho^2 from block coefficients (file comment)
  CheckConditioning conditioning_;
  std::int64_t steps_;
  std::uint64_t stream_;
  MPI_Comm comm_;
  int local_ = -1, owner_ = 0;
  std::int64_t from_ = 0, start_steps_ = 0;
  std::optional<MaskedReferenceState<double>> reference_;
  std::string stopped_;
  nlohmann::json result_;
};

}  // namespace mosaic
