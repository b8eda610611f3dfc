// init: data (ALGORITHM.md section 3) for a whole batch on its execution
// space: the fast twin of reference_init_data (reference.hpp), which the
// tests compare it with (tests/engine/test_engine.cpp, basis-free).
//
// Everything is in double whatever the run's dtype, as the section says:
//  1. one team per stream, one pass over the samples: mu = the mean of the
//     n0 samples (the sum first, then one division: the reference's mu,
//     bitwise), the centred samples Y, the mean squared norm of the
//     uncentred samples; the count of non-finite ones where that norm is
//     not finite;
//  2. the Gram matrices Y^T Y / n0 by the backend's GEMM (strided_gemm.hpp:
//     OpenBLAS on the host, cuBLAS on Cuda);
//  3. per stream, the n0 x n0 eigen-decomposition (n0 = 2r by default:
//     tridiagonal_eigen.hpp, one thread per stream), then on the host the
//     reference's own checks on the eigenvalues and s2
//     (detail::require_init_spectrum, init_noise_variance,
//     require_start_in_range);
//  4. U = Y v_j / sqrt(n0 lambda_j) by gemm, then the state rounded to the
//     run's dtype on the execution space.
// The reference sums in a fixed order with Jacobi eigenvectors, so the two
// starts agree to rounding (relative ~1e-15 in double, at the r-th
// eigenvalue's gap), not bitwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <Kokkos_Core.hpp>

#include "mosaic/algorithm/reference.hpp"
#include "mosaic/algorithm/tridiagonal_eigen.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/engine/strided_gemm.hpp"
#include "mosaic/engine/transfer.hpp"
#include "mosaic/util/kokkos_compat.hpp"

namespace mosaic {

namespace detail {

// Step 1: mu, Y and the per-stream sums of one stream per team.
template <class Scalar, class ExecSpace>
struct InitMomentsFunctor {
  using memory_space = typename ExecSpace::memory_space;
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  Kokkos::View<const Scalar***, Kokkos::LayoutRight, memory_space> X;  // B x n0 x d
  Kokkos::View<double***, Kokkos::LayoutRight, memory_space> Y;        // B x n0 x d centred
  Kokkos::View<double**, Kokkos::LayoutRight, memory_space> mu;        // B x d
  Kokkos::View<double**, Kokkos::LayoutRight, memory_space> sums;      // B x 3: raw2, non-finite, mu outside Scalar
  int n0, d;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& m) const {
    const int b = m.league_rank();
    // One pass over the samples: the mean, the centred samples and the sum
    // of squares of each coordinate.
    double raw = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(m, d),
        [&](const int i, double& acc) {
          double s = 0;
          for (int k = 0; k < n0; ++k) s += double(X(b, k, i));
          const double mean = s / double(n0);
          mu(b, i) = mean;
          for (int k = 0; k < n0; ++k) {
            const double x = double(X(b, k, i));
            Y(b, k, i) = x - mean;
            acc += x * x;
          }
        },
        raw);
    // Kokkos 3.4's Cuda team reduction reuses one scratch buffer: a second
    // reduction that starts before every thread has read the first's result
    // can overwrite it. A barrier after each one keeps them apart.
    m.team_barrier();
    // A non-finite sample makes the sum of squares non-finite: only then are
    // they counted (so are samples whose squares overflow double, of which
    // the count finds none).
    double bad = 0, outside = 0;
    if (!kmath::isfinite(raw))
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(m, d),
          [&](const int i, double& acc) {
            for (int k = 0; k < n0; ++k)
              if (!kmath::isfinite(X(b, k, i))) acc += 1;
          },
          bad);
    m.team_barrier();
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(m, d),
        [&](const int i, double& acc) {
          if (!kmath::isfinite(Scalar(mu(b, i)))) acc += 1;
        },
        outside);
    m.team_barrier();
    Kokkos::single(Kokkos::PerTeam(m), [&]() {
      sums(b, 0) = raw / double(n0);
      sums(b, 1) = bad;
      sums(b, 2) = outside;
    });
  }
};

}  // namespace detail

// Why one stream's init: data did not start: the reference's message (empty
// where the stream started) and, for a rank-deficient start
// (InitRankDeficient: section 3's window may grow), the directions its
// samples spanned; -1 for every other failure.
struct InitFailure {
  std::string message;
  int directions = -1;
  bool failed() const { return !message.empty(); }
  bool rank_deficient() const { return failed() && directions >= 0; }
  static InitFailure of(const std::invalid_argument& e) {
    const auto* deficient = dynamic_cast<const InitRankDeficient*>(&e);
    return InitFailure{e.what(), deficient ? deficient->directions : -1};
  }
};

// Starts every stream of `sb` from its first n0 samples X (B x n0 x d).
// Returns one InitFailure per stream, empty where the stream started; a stream
// that cannot start keeps its state (a masked engine starts those whose
// samples have missing entries on the host, 7.6: every other stream must
// be written whatever its neighbours' samples). The messages are the
// reference's (a non-finite sample, a rank-deficient start, a start outside
// the dtype's range).
template <class Scalar, class ExecSpace>
std::vector<InitFailure> init_data_batch(
    StreamBatch<Scalar, ExecSpace>& sb,
    Kokkos::View<const Scalar***, Kokkos::LayoutRight, typename ExecSpace::memory_space> X, const MosaicParams& p) {
  using memory_space = typename ExecSpace::memory_space;
  const int B = sb.batch, d = sb.d, r = sb.r, n0 = int(X.extent(1));
  p.validate(d, r);
  detail::require_init_samples(n0, r);
  const std::size_t per_stream = std::size_t(n0) * d;
  // Y(b, k, :) is sample k centred; per stream the same memory is the
  // column-major d x n0 matrix Y of the section.
  // Y, K and U are written whole (the moments kernel, gemms with beta = 0):
  // not zeroed first (tens of MB at d = 8192).
  Kokkos::View<double***, Kokkos::LayoutRight, memory_space> Y(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("mosaic::init_Y")), B, n0, d);
  Kokkos::View<double**, Kokkos::LayoutRight, memory_space> mu("mosaic::init_mu", B, d);
  Kokkos::View<double**, Kokkos::LayoutRight, memory_space> sums("mosaic::init_sums", B, 3);
  Kokkos::parallel_for("mosaic::init_moments", Kokkos::TeamPolicy<ExecSpace>(ExecSpace(), B, Kokkos::AUTO),
                       detail::InitMomentsFunctor<Scalar, ExecSpace>{X, Y, mu, sums, n0, d});
  Kokkos::View<double***, Kokkos::LayoutRight, memory_space> K(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("mosaic::init_gram")), B, n0, n0);
  StridedGemm<double> gram;  // K_b = Y_b^T Y_b / n0, n0 x n0
  gram.transa = 'T';
  gram.m = gram.n = n0;
  gram.k = d;
  gram.alpha = 1.0 / double(n0);
  gram.a = gram.b = Y.data();
  gram.lda = gram.ldb = d;
  gram.stride_a = gram.stride_b = std::ptrdiff_t(per_stream);
  gram.c = K.data();
  gram.ldc = n0;
  gram.stride_c = std::ptrdiff_t(n0) * n0;
  gram.count = B;
  strided_gemm_over_streams<ExecSpace>(gram);
  // Step 3 on the execution space, one thread per stream: K's symmetric
  // part (the mean of both triangles, which the gemm need not round alike)
  // scaled by a power of two to entries of order 1 (balancing_exponent: the
  // solve is then the same in any units of the data), decomposed in place,
  // eigenvalues ascending in w (scaled back), eigenvectors the columns of K.
  // converged(b): 1, 0 (the iteration did not converge), -1 (K has a
  // non-finite entry: the second moments overflow double).
  Kokkos::View<double**, Kokkos::LayoutRight, memory_space> w("mosaic::init_eigenvalues", B, n0),
      ework("mosaic::init_eigen_work", B, n0);
  Kokkos::View<int*, Kokkos::LayoutRight, memory_space> converged("mosaic::init_eigen_converged", B);
  Kokkos::parallel_for(
      "mosaic::init_eigen", Kokkos::RangePolicy<ExecSpace>(0, B), KOKKOS_LAMBDA(const int b) {
        const auto Kb = Kokkos::subview(K, b, Kokkos::ALL(), Kokkos::ALL());
        const auto wb = Kokkos::subview(w, b, Kokkos::ALL());
        double amax = 0;
        for (int a = 0; a < n0; ++a)
          for (int c = a; c < n0; ++c) {
            const double v = c == a ? Kb(a, a) : 0.5 * (Kb(a, c) + Kb(c, a));
            Kb(a, c) = Kb(c, a) = v;
            amax = kmath::fabs(v) > amax || !kmath::isfinite(v) ? kmath::fabs(v) : amax;
          }
        if (!kmath::isfinite(amax)) {
          converged(b) = -1;
          return;
        }
        const int e = detail::balancing_exponent(amax);
        for (int a = 0; a < n0; ++a)
          for (int c = 0; c < n0; ++c) Kb(a, c) = detail::times_power_of_two(Kb(a, c), -e);
        converged(b) = tridiagonal_ql_eigen(Kb, wb, Kokkos::subview(ework, b, Kokkos::ALL()), n0, true) ? 1 : 0;
        for (int j = 0; j < n0; ++j) wb(j) = detail::times_power_of_two(wb(j), e);
      });
  const auto hw = transfer::to_host(w);
  const auto hconv = transfer::to_host(converged);
  const auto hsums = transfer::to_host(sums);

  // Per stream: lambda_1..r and s2 (the host checks the reference's
  // conditions on the n0 eigenvalues: O(n0) per stream).
  Kokkos::View<double**, Kokkos::LayoutRight, memory_space> lam("mosaic::init_lambda", B, r);
  Kokkos::View<double*, Kokkos::LayoutRight, memory_space> s2("mosaic::init_s2", B);
  const auto hlam = transfer::host_buffer(lam);
  const auto hs2 = transfer::host_buffer(s2);
  std::vector<InitFailure> errors(static_cast<std::size_t>(B));
  for (int b = 0; b < B; ++b) {
    try {
      // A stream with a non-finite sample: the reference's message, with
      // the first bad index.
      if (hsums(b, 1) > 0) {
        const auto xb = transfer::to_host(Kokkos::subview(X, b, Kokkos::ALL(), Kokkos::ALL()));
        detail::require_finite(xb.data(), int(per_stream), "init: data samples");  // n0 x d, row-major
      }
      if (hconv(b) < 0) throw std::invalid_argument("init: data: the samples' second moments overflow double");
      if (hconv(b) == 0)
        throw std::invalid_argument("init: data: the eigen-decomposition of the " + std::to_string(n0) + " x " +
                                    std::to_string(n0) + " Gram matrix of the init samples did not converge");
      std::vector<double> lambda(static_cast<std::size_t>(n0));  // descending
      for (int j = 0; j < n0; ++j) lambda[std::size_t(j)] = hw(b, n0 - 1 - j);
      detail::require_init_spectrum<Scalar>(lambda, n0, r, hsums(b, 0));
      const double noise = detail::init_noise_variance(lambda, n0, d, r);
      if constexpr (!std::is_same_v<Scalar, double>)
        detail::require_start_in_range<Scalar>(lambda, r, noise, hsums(b, 2) == 0);
      for (int j = 0; j < r; ++j) hlam(b, j) = lambda[std::size_t(j)];
      hs2(b) = noise;
    } catch (const std::invalid_argument& e) {
      errors[std::size_t(b)] = InitFailure::of(e);
      for (int j = 0; j < r; ++j) hlam(b, j) = 1.0;  // finite placeholders: the stream is not written
      hs2(b) = 1.0;
    }
  }
  Kokkos::View<int*, Kokkos::LayoutRight, memory_space> started("mosaic::init_started", B);
  auto hstarted = transfer::host_buffer(started);
  bool any = false;
  for (int b = 0; b < B; ++b) {
    hstarted(b) = errors[std::size_t(b)].failed() ? 0 : 1;
    any = any || hstarted(b) != 0;
  }
  if (!any) return errors;
  transfer::copy_from_host(started, hstarted);
  transfer::copy_from_host(lam, hlam);
  transfer::copy_from_host(s2, hs2);
  // Vs(b, j, :) = eigenvector j / sqrt(n0 lambda_j), the descending j-th:
  // per stream the column-major n0 x r matrix V_r / sqrt(n0 lambda).
  Kokkos::View<double***, Kokkos::LayoutRight, memory_space> Vs(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("mosaic::init_vectors")), B, r, n0);
  Kokkos::parallel_for(
      "mosaic::init_vectors", Kokkos::RangePolicy<ExecSpace>(0, B * r), KOKKOS_LAMBDA(const int bj) {
        const int b = bj / r, j = bj % r;
        const double scale = 1.0 / kmath::sqrt(double(n0) * lam(b, j));
        for (int k = 0; k < n0; ++k) Vs(b, j, k) = K(b, k, n0 - 1 - j) * scale;
      });
  // Ud(b, j, :) is column j of U in double: the column-major d x r U = Y Vs.
  Kokkos::View<double***, Kokkos::LayoutRight, memory_space> Ud(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("mosaic::init_U")), B, r, d);
  StridedGemm<double> basis;  // U_b = Y_b Vs_b, d x r
  basis.m = d;
  basis.n = r;
  basis.k = n0;
  basis.a = Y.data();
  basis.lda = d;
  basis.stride_a = std::ptrdiff_t(per_stream);
  basis.b = Vs.data();
  basis.ldb = n0;
  basis.stride_b = std::ptrdiff_t(n0) * r;
  basis.c = Ud.data();
  basis.ldc = d;
  basis.stride_c = std::ptrdiff_t(r) * d;
  basis.count = B;
  strided_gemm_over_streams<ExecSpace>(basis);
  const auto smu = sb.mu;
  const auto sU = sb.U;
  const auto sS = sb.S;
  const auto ss2 = sb.s2;
  const auto ssteps = sb.steps, sclamped = sb.clamped_steps, sreorths = sb.reorthonormalizations,
             sunresolved = sb.unresolved_residual_steps, srecomputed = sb.residual_recomputations,
             sbreak = sb.breakdown_step, sage = sb.factor_age;
  const auto sstatus = sb.status;
  const auto spreq = sb.prequential;
  Kokkos::parallel_for(
      "mosaic::init_round", Kokkos::RangePolicy<ExecSpace>(0, B * d), KOKKOS_LAMBDA(const int bi) {
        const int b = bi / d, i = bi % d;
        if (started(b) == 0) return;
        smu(b, i) = Scalar(mu(b, i));
        for (int j = 0; j < r; ++j) sU(b, i, j) = Scalar(Ud(b, j, i));
        if (i < r)
          for (int c = 0; c < r; ++c) sS(b, i, c) = i == c ? Scalar(lam(b, i)) : Scalar(0);
        if (i == 0) {
          ss2(b) = Scalar(s2(b));
          // A fresh start, as StreamBatch::from_host leaves one.
          ssteps(b) = 0;
          sclamped(b) = 0;
          sreorths(b) = 0;
          sunresolved(b) = 0;
          srecomputed(b) = 0;
          sstatus(b) = 0;
          sbreak(b) = -1;
          sage(b) = -1;
          for (int c = 0; c < int(preq_columns); ++c) spreq(b, c) = 0.0;
        }
      });
  Kokkos::fence();
  return errors;
}

}  // namespace mosaic
