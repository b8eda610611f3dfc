// The sequential MOSAIC kernel (MosaicEngine::step, batched_engine.hpp):
// one call advances every stream of a StreamBatch by one sample, exactly
// as ALGORITHM.md section 2 and the host reference (reference.hpp) do,
// with one Kokkos team per stream.
//
// Per team (stream b), in order; nothing is written to the stream's state
// until every check has passed, so a stream that breaks down keeps the state
// it had before the failed step (as reference_step does) and is frozen:
//   1. y = x - mu (and e = y), count non-finite sample entries.
//   2. z = U^T y: a team reduction over i in NC fixed chunks (each chunk
//      summed in increasing i by one thread, the NC partial r-vectors then
//      added in chunk order). KokkosBatched's TeamGemv computes U^T y as one
//      dot product per output j, which for row-major U on the host (see
//      stream_batch.hpp) strides through memory, so this product is written
//      as the axpy form instead.
//   3. e = y - U z: the Kokkos Kernels team GEMV (NoTranspose, Blocked:
//      several rows per thread, each row summed in increasing j; through
//      kokkos_compat.hpp, since its home moved between Kokkos Kernels 3.4 and
//      4.x), in place on e; rho^2 = ||e||^2 by the same fixed-chunk reduction.
//   4. w = S^{-1} z: a team Cholesky of a copy of S written here (Kokkos
//      Kernels 3.4 has no batched Cholesky; it follows host::cholesky's
//      operation order, so the factor is the reference's, bit for bit), then
//      two KokkosBatched::TeamTrsv. A non-positive or non-finite pivot is the
//      reference's breakdown test.
//   5. q, ell, eta and the clamp; S' (exact or first_order).
//   6. g: precision (second Cholesky/TeamTrsv on S + gamma s2 I, or w when
//      gamma == 0) or oja.
//   7. rotation angle, gh, transport of S', symmetrization; s2'; finiteness
//      of all new scalars and of S' is checked here.
//   8. writes: U <- U + ((cos-1) U gh + sin e/rho) gh^T (one fused pass per
//      row), S, s2, mu, counters, and section 4's prequential sums of the
//      state before the step (||y||^2 by one more fixed-order sum, log det S
//      from step 4's factor: algorithm/prequential.hpp).
//   9. every reorthonormalize_every steps: Cholesky-QR of U with S rotated
//      (KokkosBatched::TeamGemm for U^T U, the team Cholesky for its factor).
// Formula order follows reference.hpp term by term (including cos(theta)-1
// as -2 sin^2(theta/2) and the rotation_tiny threshold), so in double the
// engine differs from the reference only by the summation order of the
// length-d reductions (z, rho^2) and of the back substitution.
//
// Determinism: every reduction has a fixed order that depends neither on the
// team size nor on the thread count (chunk count NC is a per-backend constant
// of backend.hpp's tuning points, and
// every r-length or r x r quantity is computed by one thread per output), so
// Serial and OpenMP with any number of threads give bitwise-identical states.
//
// Memory: all work arrays are allocated once in the constructor (B x ...
// views); step() allocates nothing and never copies to the host.
#pragma once

#include <cstdint>
#include <type_traits>

#include <KokkosBatched_Gemm_Decl.hpp>
#include <KokkosBatched_Trsv_Decl.hpp>
#include <Kokkos_Core.hpp>

#include "mosaic/algorithm/prequential.hpp"
#include "mosaic/engine/backend.hpp"
#include "mosaic/engine/frame_rotation.hpp"
#include "mosaic/engine/impl/team_gram.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/util/kokkos_compat.hpp"
#include "mosaic/util/team_loops.hpp"

namespace mosaic {
namespace detail {

// Raw access to one stream's d x r basis with the storage order fixed at
// compile time (unit-stride inner loops, no runtime strides).
template <class Scalar, bool ColumnMajor>
struct BasisRef {
  Scalar* p;
  int d, r;
  KOKKOS_INLINE_FUNCTION Scalar& operator()(int i, int j) const {
    return ColumnMajor ? p[std::size_t(j) * d + i] : p[std::size_t(i) * r + j];
  }
};

template <class Scalar, class ExecSpace>
struct StepFunctor {
  using scalar_type = Scalar;
  using execution_space = ExecSpace;
  using memory_space = typename ExecSpace::memory_space;
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  static constexpr bool column_major = BasisLayout<ExecSpace>::column_major;
  using Basis = BasisRef<Scalar, column_major>;
  template <class DataType>
  using view_t = Kokkos::View<DataType, Kokkos::LayoutRight, memory_space>;

  // state
  view_t<Scalar**> mu;
  typename StreamBatch<Scalar, ExecSpace>::basis_view U;
  view_t<Scalar***> S;
  view_t<Scalar*> s2;
  view_t<std::int64_t*> steps, clamped_steps, breakdown_step, reorths, unresolved_residual_steps,
      residual_recomputations;
  view_t<int*> status;
  view_t<double**> prequential;  // B x preq_columns: section 4's running sums
  // sample (a row of a staged block: any strides)
  Kokkos::View<const Scalar**, Kokkos::LayoutStride, memory_space> X;
  // work
  view_t<Scalar**> wy, we;  // B x d
  view_t<Scalar***> wzp;    // B x NC x r
  view_t<Scalar***> wvec;   // B x 6 x r: z, w, g, gh, u, spare
  view_t<Scalar****> wmat;  // B x 4 x r x r
  view_t<Scalar**> wpart;   // B x NC
  // sizes and options
  int d = 0, r = 0, nc = 0;
  Scalar eta_mu, eta_S, eta_U, eta_s, gamma, max_step, tiny;
  bool exact = true, precision = true, gamma_zero = false;
  int reorth_every = 0;

  KOKKOS_INLINE_FUNCTION void chunk(int n, int c, int& begin, int& end, int& stride) const {
    if (column_major) {  // interleaved: consecutive threads, consecutive rows
      begin = c;
      end = n;
      stride = nc;
    } else {  // contiguous blocks of rows
      const int len = (n + nc - 1) / nc;
      begin = c * len;
      end = begin + len < n ? begin + len : n;
      stride = 1;
    }
  }

  // sum_{i<n} f(i) in a fixed order (see the file comment); every thread of
  // the team gets the result.
  template <class F>
  KOKKOS_INLINE_FUNCTION Scalar team_sum(const member_type& m, int b, int n, const F& f) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, nc), [&](const int c) {
      int begin, end, stride;
      chunk(n, c, begin, end, stride);
      Scalar s = 0;
      for (int i = begin; i < end; i += stride) s += f(i);
      wpart(b, c) = s;
    });
    m.team_barrier();
    Scalar t = 0;
    for (int c = 0; c < nc; ++c) t += wpart(b, c);
    m.team_barrier();
    return t;
  }

  KOKKOS_INLINE_FUNCTION void fail(const member_type& m, int b, int code, std::int64_t at) const {
    Kokkos::single(Kokkos::PerTeam(m), [&]() {
      status(b) = code;
      breakdown_step(b) = at;
    });
  }

  // Cholesky A = L L^T in place (lower triangle of A becomes L; the upper
  // triangle is left as it was), in exactly host::cholesky's operation order,
  // rows of each column spread over the team. Returns false (same decision
  // on every thread) on a non-positive or non-finite pivot, like the
  // reference's failed factorization. There is no batched Cholesky in Kokkos
  // Kernels 3.4 (and KokkosBatched::TeamLU's element loop, with an integer
  // division per update, was the largest cost of a step at r >= 64).
  template <class A>
  KOKKOS_INLINE_FUNCTION bool cholesky(const member_type& m, const A& a) const {
    m.team_barrier();
    for (int j = 0; j < r; ++j) {
      Scalar diag = a(j, j);
      for (int k = 0; k < j; ++k) diag -= a(j, k) * a(j, k);
      if (!(diag > Scalar(0)) || !kmath::isfinite(diag)) {
        m.team_barrier();
        return false;
      }
      const Scalar ljj = kmath::sqrt(diag);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, j + 1, r), [&](const int i) {
        Scalar v = a(i, j);
        for (int k = 0; k < j; ++k) v -= a(i, k) * a(j, k);
        a(i, j) = v / ljj;
      });
      m.team_barrier();  // everyone has read a(j, j) before it is overwritten
      Kokkos::single(Kokkos::PerTeam(m), [&]() { a(j, j) = ljj; });
      m.team_barrier();
    }
    return true;
  }

  // x <- (L L^T)^{-1} x with KokkosBatched::TeamTrsv.
  template <class A, class V>
  KOKKOS_INLINE_FUNCTION void cholesky_solve(const member_type& m, const A& l, const V& x) const {
    using namespace KokkosBatched;
    m.team_barrier();
    TeamTrsv<member_type, Uplo::Lower, Trans::NoTranspose, Diag::NonUnit, Algo::Trsv::Unblocked>::invoke(m, Scalar(1),
                                                                                                         l, x);
    m.team_barrier();
    TeamTrsv<member_type, Uplo::Lower, Trans::Transpose, Diag::NonUnit, Algo::Trsv::Unblocked>::invoke(m, Scalar(1), l,
                                                                                                       x);
    m.team_barrier();
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& m) const {
    const int b = m.league_rank();
    if (status(b) != 0) return;  // frozen after a breakdown
    const std::int64_t step_index = steps(b);
    auto y = Kokkos::subview(wy, b, Kokkos::ALL());
    auto e = Kokkos::subview(we, b, Kokkos::ALL());

    // 1. Centre with the old mean; reject a non-finite sample.
    int bad = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(m, d),
        [&](const int i, int& nb) {
          const Scalar xi = X(b, i);
          const Scalar yi = xi - mu(b, i);
          y(i) = yi;
          e(i) = yi;
          if (!kmath::isfinite(xi)) nb += 1;
        },
        bad);
    m.team_barrier();
    if (bad != 0) {
      fail(m, b, breakdown_nonfinite_sample, step_index);
      return;
    }
    section_two(m, b, step_index);
  }

  // Steps 2-9 on the centred sample in wy(b, :) (and its copy in we(b, :)).
  KOKKOS_INLINE_FUNCTION void section_two(const member_type& m, int b, std::int64_t step_index) const {
    section_two(m, b, step_index, CentredSample{wy, b}, true);
  }
  // The same with the mean moved by eta_mu data_y(i): wy(b, i) in section 2,
  // the data-unit x_i - mu_i where wy holds a whitened sample (ALGORITHM.md
  // 8.3: mu lives in data units). `evaluate`: the sample is scored for
  // section 4's prequential sums from this step's quantities; else
  // `scored` is added at the commit (a zero-filled sample, whose likelihood
  // on its observed rows the caller computed; n = 0: none).
  // `logdet_psi`: a whitened sample's sum of log psi_j, which puts its
  // likelihood in data units.
  template <class DataY>
  KOKKOS_INLINE_FUNCTION void section_two(const member_type& m, int b, std::int64_t step_index, const DataY& data_y,
                                          bool evaluate, double logdet_psi = 0.0,
                                          const PrequentialSample& scored = PrequentialSample()) const {
    auto z = Kokkos::subview(wvec, b, 0, Kokkos::ALL());
    auto w = Kokkos::subview(wvec, b, 1, Kokkos::ALL());
    auto g = Kokkos::subview(wvec, b, 2, Kokkos::ALL());
    auto gh = Kokkos::subview(wvec, b, 3, Kokkos::ALL());
    auto u = Kokkos::subview(wvec, b, 4, Kokkos::ALL());
    auto A1 = Kokkos::subview(wmat, b, 0, Kokkos::ALL(), Kokkos::ALL());
    auto Sp = Kokkos::subview(wmat, b, 2, Kokkos::ALL(), Kokkos::ALL());

    // 2. z = U^T y. 3. e = y - U z, rho = ||e||.
    project(m, b, z);
    const Scalar rho2 = residual(m, b, z);
    const Scalar rho = kmath::sqrt(rho2);
    const Scalar s2_old = s2(b);
    PrequentialSample preq = scored;
    if (evaluate) {
      preq.n = d;
      preq.r = r;
      preq.yy = double(team_sum(m, b, d, [&](const int i) { return wy(b, i) * wy(b, i); }));
      preq.rho2 = double(rho2);
      preq.s2 = double(s2_old);
      preq.logdet_psi = logdet_psi;
    }

    // 4. Precision solve w = S^{-1} z.
    for_each_entry(m, r, r, [&](const int a, const int c) { A1(a, c) = S(b, a, c); });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { w(j) = z(j); });
    if (!cholesky(m, A1)) {
      fail(m, b, breakdown_s_not_spd, step_index);
      return;
    }
    cholesky_solve(m, A1, w);
    Scalar q = 0;
    for (int j = 0; j < r; ++j) q += z(j) * w(j);
    if (evaluate) {
      preq.quad = double(q);
      preq.logdet_sd = logdet_from_factor(r, &A1(0, 0), long(A1.stride(0)));
    }

    // 5. Step length, clamp, covariance update in the old frame.
    const CovarianceStep cs = covariance_step(m, b, z, q, Sp);

    // 6. Subspace direction g (old S).
    if (!direction(m, b, z, w, g, s2_old, step_index)) return;
    const Scalar gnorm = direction_norm<Scalar>(g, r);

    // 7. Rotation angle and transport of S' to the new frame.
    const FrameRotation<Scalar> rot =
        rotate_frame_transport_S<Scalar>(m, r, rho, gnorm, tiny, eta_U, s2_old, Scalar(0), g, gh, u, Sp);
    const Scalar s2_new = (1 - eta_s) * s2_old + eta_s * rho2 / Scalar(d - r);

    // Never write non-finite numbers: check before the state is touched.
    if (!step_update_is_finite<Scalar>(m, r, Sp, rho2, q, gnorm, rot.theta, s2_new)) {
      fail(m, b, breakdown_nonfinite_update, step_index);
      return;
    }

    // 8. Writes: frame rotation (fused U gh and rank-one update per row), S, s2, mu.
    if (rot.rotate) rotate_rows(m, b, gh, gh, rho, rot, AllRows());
    commit(m, b, Sp, s2_new, step_index, cs.clamped, data_y, preq);
  }

  // The centred sample y = wy(b, :) as the mean's step.
  struct CentredSample {
    view_t<Scalar**> wy;
    int b;
    KOKKOS_INLINE_FUNCTION Scalar operator()(int i) const { return wy(b, i); }
  };

  // z = U^T y, y in wy(b, :) (fixed-chunk axpy form, see the file comment).
  template <class Z>
  KOKKOS_INLINE_FUNCTION void project(const member_type& m, int b, const Z& z) const {
    const Basis Ub{&U(b, 0, 0), d, r};
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, nc), [&](const int c) {
      Scalar* zp = &wzp(b, c, 0);
      for (int j = 0; j < r; ++j) zp[j] = Scalar(0);
      int begin, end, stride;
      chunk(d, c, begin, end, stride);
      for (int i = begin; i < end; i += stride) {
        const Scalar yi = wy(b, i);
        for (int j = 0; j < r; ++j) zp[j] += Ub(i, j) * yi;
      }
    });
    m.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) {
      Scalar s = 0;
      for (int c = 0; c < nc; ++c) s += wzp(b, c, j);
      z(j) = s;
    });
    m.team_barrier();
  }

  // e <- e - U z in we(b, :) (e = y on entry), then e_i = 0 on the rows
  // with !keep(i) (7.3's e_M = 0); returns ||e||^2.
  struct AllRows {
    KOKKOS_INLINE_FUNCTION bool operator()(int) const { return true; }
  };
  template <class Z, class Keep = AllRows>
  KOKKOS_INLINE_FUNCTION Scalar residual(const member_type& m, int b, const Z& z, const Keep& keep = Keep()) const {
    auto e = Kokkos::subview(we, b, Kokkos::ALL());
    team_gemv_blocked(m, Scalar(-1), Kokkos::subview(U, b, Kokkos::ALL(), Kokkos::ALL()), z, Scalar(1), e);
    m.team_barrier();
    if constexpr (!std::is_same_v<Keep, AllRows>) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, d), [&](const int i) {
        if (!keep(i)) e(i) = Scalar(0);
      });
      m.team_barrier();
    }
    return team_sum(m, b, d, [&](const int i) { return e(i) * e(i); });
  }

  struct CovarianceStep {
    Scalar eta;
    bool clamped;
  };
  // Step 5: the clamp and S' in the old frame (exact or first_order) from z and q.
  template <class Z, class M>
  KOKKOS_INLINE_FUNCTION CovarianceStep covariance_step(const member_type& m, int b, const Z& z, Scalar q,
                                                        const M& Sp) const {
    const Scalar ell = eta_S * kmath::sqrt((q - 1) * (q - 1) + Scalar(r - 1));
    CovarianceStep cs{eta_S, false};
    if (ell > max_step) {
      cs.eta = eta_S * max_step / ell;
      cs.clamped = true;
    }
    const Scalar eta = cs.eta;
    if (exact) {
      const Scalar cc = q > Scalar(0) ? kmath::expm1(eta * q) / q : eta;
      const Scalar decay = kmath::exp(-eta);
      for_each_entry(m, r, r, [&](const int a, const int c) { Sp(a, c) = decay * (S(b, a, c) + cc * z(a) * z(c)); });
    } else {
      for_each_entry(m, r, r, [&](const int a, const int c) { Sp(a, c) = (1 - eta) * S(b, a, c) + eta * z(a) * z(c); });
    }
    return cs;
  }

  // Step 6: g from the old S (precision: the second Cholesky on
  // S + gamma s2 I, or w when gamma == 0; oja). False (the stream frozen)
  // when S + gamma s2 I does not factor.
  template <class Z, class W, class G>
  KOKKOS_INLINE_FUNCTION bool direction(const member_type& m, int b, const Z& z, const W& w, const G& g, Scalar s2_old,
                                        std::int64_t step_index) const {
    auto A2 = Kokkos::subview(wmat, b, 1, Kokkos::ALL(), Kokkos::ALL());
    if (precision) {
      if (gamma_zero) {
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { g(j) = w(j); });
      } else {
        copy_shift_diagonal(m, r, Kokkos::subview(S, b, Kokkos::ALL(), Kokkos::ALL()), A2, Scalar(gamma * s2_old));
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r), [&](const int j) { g(j) = z(j); });
        if (!cholesky(m, A2)) {
          fail(m, b, breakdown_regularized_not_spd, step_index);
          return false;
        }
        cholesky_solve(m, A2, g);
      }
    } else {
      oja_direction<Scalar>(
          m, r, [&](const int j) { return S(b, j, j); }, z, g);
    }
    m.team_barrier();
    return true;
  }

  // Step 8's rotation of the rows i with rotates(i):
  // U_i <- U_i + ((cos-1) U_i vh + sin e_i / rho) gh^T (vh = gh in section 2;
  // 7.3's observed rotation has vh = C^-1 g / beta). A row left alone gets a
  // zero coefficient (U_i + 0 gh^T is U_i exactly).
  template <class Vh, class Gh, class Rotates>
  KOKKOS_INLINE_FUNCTION void rotate_rows(const member_type& m, int b, const Vh& vh, const Gh& gh, Scalar rho,
                                          const FrameRotation<Scalar>& rot, const Rotates& rotates) const {
    const Basis Ub{&U(b, 0, 0), d, r};
    auto e = Kokkos::subview(we, b, Kokkos::ALL());
    const Scalar sn = rot.sn, cm1 = rot.cm1;
    // Host (row-major): four rows at a time, four independent dot-product
    // chains (each still summed in increasing j, as in the reference).
    // Device (column-major): one row per thread, so neighbouring threads
    // touch neighbouring addresses.
    constexpr int rows_per = Tuning<ExecSpace>::rotation_rows_per_thread;
    const int nq = (d + rows_per - 1) / rows_per;
    auto coef = [&](int i, Scalar uvh) { return rotates(i) ? cm1 * uvh + sn * e(i) / rho : Scalar(0); };
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, nq), [&](const int q4) {
      const int i0 = rows_per * q4;
      if (!column_major && i0 + 4 <= d) {
        Scalar g0 = 0, g1 = 0, g2 = 0, g3 = 0;
        for (int j = 0; j < r; ++j) {
          const Scalar vj = vh(j);
          g0 += Ub(i0, j) * vj;
          g1 += Ub(i0 + 1, j) * vj;
          g2 += Ub(i0 + 2, j) * vj;
          g3 += Ub(i0 + 3, j) * vj;
        }
        const Scalar c0 = coef(i0, g0), c1 = coef(i0 + 1, g1), c2 = coef(i0 + 2, g2), c3 = coef(i0 + 3, g3);
        for (int j = 0; j < r; ++j) {
          const Scalar ghj = gh(j);
          Ub(i0, j) += c0 * ghj;
          Ub(i0 + 1, j) += c1 * ghj;
          Ub(i0 + 2, j) += c2 * ghj;
          Ub(i0 + 3, j) += c3 * ghj;
        }
      } else {
        const int i1 = i0 + rows_per < d ? i0 + rows_per : d;
        for (int i = i0; i < i1; ++i) {
          Scalar uvh = 0;
          for (int j = 0; j < r; ++j) uvh += Ub(i, j) * vh(j);
          const Scalar c = coef(i, uvh);
          for (int j = 0; j < r; ++j) Ub(i, j) += c * gh(j);
        }
      }
    });
  }

  // The rest of step 8 and step 9: S <- sym(S'), mu += eta_mu y (y =
  // data_y(i) in data units, 0 on rows that must not move), s2, the
  // counters, the prequential sums (preq.n = 0: the sample is not
  // evaluated), and the Cholesky-QR when due.
  template <class M, class DataY>
  KOKKOS_INLINE_FUNCTION void commit(const member_type& m, int b, const M& Sp, Scalar s2_new, std::int64_t step_index,
                                     bool clamped, const DataY& data_y, const PrequentialSample& preq) const {
    symmetrize(m, r, Sp, Kokkos::subview(S, b, Kokkos::ALL(), Kokkos::ALL()));
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, d), [&](const int i) { mu(b, i) += eta_mu * data_y(i); });
    Kokkos::single(Kokkos::PerTeam(m), [&]() {
      s2(b) = s2_new;
      steps(b) = step_index + 1;
      if (clamped) clamped_steps(b) += 1;
      if (preq.n > 0) preq.add_to(&prequential(b, 0));
    });
    m.team_barrier();
    if (reorth_every > 0 && (step_index + 1) % reorth_every == 0) reorthonormalize(m, b, step_index);
  }

  // reference_reorthonormalize: the Cholesky-QR, counted.
  KOKKOS_INLINE_FUNCTION void reorthonormalize(const member_type& m, int b, std::int64_t step_index) const {
    if (!cholesky_qr(m, b, step_index)) return;
    Kokkos::single(Kokkos::PerTeam(m), [&]() { reorths(b) += 1; });
    m.team_barrier();
  }

  // U^T U = L L^T, U <- U L^{-T}, S <- L^T S L (detail::cholesky_qr of
  // reference.hpp). False (the stream frozen, U and S as they were) when
  // U^T U does not factor.
  KOKKOS_INLINE_FUNCTION bool cholesky_qr(const member_type& m, int b, std::int64_t step_index) const {
    const Basis Ub{&U(b, 0, 0), d, r};
    auto Ub_view = Kokkos::subview(U, b, Kokkos::ALL(), Kokkos::ALL());
    auto L = Kokkos::subview(wmat, b, 0, Kokkos::ALL(), Kokkos::ALL());  // U^T U, then its factor
    auto SL = Kokkos::subview(wmat, b, 2, Kokkos::ALL(), Kokkos::ALL());
    auto out = Kokkos::subview(wmat, b, 3, Kokkos::ALL(), Kokkos::ALL());
    // U^T U's lower triangle (all cholesky reads): on host spaces by
    // rank-one updates row after row (unit stride: a column-by-column
    // TeamGemm reads a row-major U with stride r, r^2 / 2 times over), on
    // devices by TeamGemm.
    if constexpr (is_host_space<execution_space>) {
      team_gram_lower<execution_space>(
          m, r, d, [&](const int k) { return &Ub(k, 0); }, [&](const int k, const int a) { return Ub(k, a); }, L);
    } else {
      using namespace KokkosBatched;
      TeamGemm<member_type, Trans::Transpose, Trans::NoTranspose, Algo::Gemm::Unblocked>::invoke(m, Scalar(1), Ub_view,
                                                                                                 Ub_view, Scalar(0), L);
    }
    if (!cholesky(m, L)) {  // only the lower triangle (L) is read below
      fail(m, b, breakdown_reorthonormalize, step_index);
      return false;
    }
    // U <- U L^-T row by row: u_a = (u_a - sum_{k < a} L(a, k) u_k) / L(a, a),
    // the subtractions in increasing k. Host spaces: right-looking over a
    // row (u_c -= L(c, a) u_a for c > a once u_a is final: the same
    // operations in the same order), unit stride through Lt = L^T, several
    // rows interleaved (rows_times_inverse_upper).
    if constexpr (is_host_space<execution_space>) {
      auto Lt = Kokkos::subview(wmat, b, 1, Kokkos::ALL(), Kokkos::ALL());
      for_each_entry(m, r, r, [&](const int a, const int c) { Lt(a, c) = c >= a ? L(c, a) : Scalar(0); });
      m.team_barrier();
      rows_times_inverse_upper(m, &Lt(0, 0), long(Lt.stride(0)), r, d, [&](const int i) { return &Ub(i, 0); });
    } else {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, d), [&](const int i) {
        for (int a = 0; a < r; ++a) {
          Scalar v = Ub(i, a);
          for (int k = 0; k < a; ++k) v -= L(a, k) * Ub(i, k);
          Ub(i, a) = v / L(a, a);
        }
      });
    }
    rotate_S_by_factor<Scalar>(m, r, L, Kokkos::subview(S, b, Kokkos::ALL(), Kokkos::ALL()), SL, out);
    m.team_barrier();
    return true;
  }
};

}  // namespace detail
}  // namespace mosaic
