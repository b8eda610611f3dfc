// gemm::TeamBatched, the blocked update's GEMM kernel on devices without a
// vendor BLAS: D formed in a d x k array, KokkosBatched::TeamGemm
// (Algo::Gemm::Blocked) for G^T, H and the new U (blocked_step.hpp).
#pragma once

#include <string>

#include <KokkosBatched_Gemm_Decl.hpp>
#include <KokkosBatched_Gemm_Team_Impl.hpp>
#include <Kokkos_Core.hpp>

#include "mosaic/engine/backend.hpp"
#include "mosaic/engine/impl/blocked_step_decl.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/util/kokkos_compat.hpp"
#include "mosaic/util/team_loops.hpp"

namespace mosaic {
namespace detail {

template <class Scalar, class ExecSpace>
struct BlockGemmWork<Scalar, ExecSpace, gemm::TeamBatched> {
  template <class DataType>
  using view_t = Kokkos::View<DataType, Kokkos::LayoutRight, typename ExecSpace::memory_space>;
  view_t<Scalar***> wX;                                     // B x d x k: D
  view_t<Scalar***> wG;                                     // B x k x r: G^T
  view_t<Scalar***> wH;                                     // B x k x k
  view_t<Scalar***> wAs;                                    // B x r x r: A in the scalar type; U0^T U0 before the steps
  view_t<Scalar***> wBs;                                    // B x k x r: B in the scalar type
  typename StreamBatch<Scalar, ExecSpace>::basis_view wUn;  // B x d x r: new U

  void allocate(int B, int d, int r, int K) {
    wX = view_t<Scalar***>("mosaic::block_X", B, d, K);
    wG = view_t<Scalar***>("mosaic::block_G", B, K, r);
    wH = view_t<Scalar***>("mosaic::block_H", B, K, K);
    wAs = view_t<Scalar***>("mosaic::block_As", B, r, r);
    wBs = view_t<Scalar***>("mosaic::block_Bs", B, K, r);
    wUn = decltype(wUn)(Kokkos::view_alloc(std::string("mosaic::block_Unew")), BasisLayout<ExecSpace>::layout(B, d, r));
  }
  // No scratch memory.
  template <class Policy>
  Policy with_scratch(Policy p) const {
    return p;
  }
};

template <class Base, class Gemm>
KOKKOS_INLINE_FUNCTION int BlockFunctor<Base, Gemm>::form_gh(gemm::TeamBatched, const member_type& m, int b,
                                                             bool with_w0) const {
  const int first_bad = copy_x(m, b);
  if (first_bad > 0) form_gh_kb(m, b, first_bad, with_w0);
  return first_bad;
}

template <class Base, class Gemm>
KOKKOS_INLINE_FUNCTION int BlockFunctor<Base, Gemm>::copy_x(const member_type& m, int b) const {
  int first_bad = n;
  Kokkos::parallel_reduce(
      Kokkos::TeamThreadRange(m, base.d),
      [&](const int i, int& fb) {
        const Scalar mu0 = base.mu(b, i);
        for (int t = 0; t < n; ++t) {
          const Scalar x = Xb(b, t, i);
          gw.wX(b, i, t) = x - mu0;
          if (!kmath::isfinite(x) && t < fb) fb = t;
        }
      },
      Kokkos::Min<int>(first_bad));  // the reducer's identity (INT_MAX) when all are finite
  m.team_barrier();
  return first_bad < n ? first_bad : n;
}

template <class Base, class Gemm>
KOKKOS_INLINE_FUNCTION void BlockFunctor<Base, Gemm>::form_gh_kb(const member_type& m, int b, int K,
                                                                 bool with_w0) const {
  using namespace KokkosBatched;
  auto Xv = Kokkos::subview(gw.wX, b, Kokkos::ALL(), Kokkos::make_pair(0, K));
  auto U0 = Kokkos::subview(base.U, b, Kokkos::ALL(), Kokkos::ALL());
  auto Gv = Kokkos::subview(gw.wG, b, Kokkos::make_pair(0, K), Kokkos::ALL());
  auto Hv = Kokkos::subview(gw.wH, b, Kokkos::make_pair(0, K), Kokkos::make_pair(0, K));
  TeamGemm<member_type, Trans::Transpose, Trans::NoTranspose, Algo::Gemm::Blocked>::invoke(m, Scalar(1), Xv, U0,
                                                                                           Scalar(0), Gv);
  TeamGemm<member_type, Trans::Transpose, Trans::NoTranspose, Algo::Gemm::Blocked>::invoke(m, Scalar(1), Xv, Xv,
                                                                                           Scalar(0), Hv);
  if (with_w0) {
    auto W0 = Kokkos::subview(gw.wAs, b, Kokkos::ALL(), Kokkos::ALL());
    TeamGemm<member_type, Trans::Transpose, Trans::NoTranspose, Algo::Gemm::Blocked>::invoke(m, Scalar(1), U0, U0,
                                                                                             Scalar(0), W0);
  }
  m.team_barrier();
  const int r = base.r;
  if (with_w0) for_each_entry(m, r, r, [&](const int a, const int c) { dM(b, bm_W0, a, c) = double(gw.wAs(b, a, c)); });
  Kokkos::parallel_for(Kokkos::TeamThreadRange(m, K), [&](const int j) {
    for (int a = 0; a < r; ++a) dG(b, j, a) = double(gw.wG(b, j, a));
    for (int l = 0; l < K; ++l) dH(b, j, l) = double(gw.wH(b, j, l));
  });
  m.team_barrier();
}

template <class Base, class Gemm>
KOKKOS_INLINE_FUNCTION void BlockFunctor<Base, Gemm>::materialize(gemm::TeamBatched, const member_type& m, int b,
                                                                  int K) const {
  const int d = base.d, r = base.r;
  const Basis Ub{&base.U(b, 0, 0), d, r};
  for_each_entry(m, r, r, [&](const int a, const int e) { gw.wAs(b, a, e) = Scalar(dA(b, a, e)); });
  for_each_entry(m, K, r, [&](const int a, const int e) { gw.wBs(b, a, e) = Scalar(dB(b, a, e)); });
  m.team_barrier();
  using namespace KokkosBatched;
  auto U0 = Kokkos::subview(base.U, b, Kokkos::ALL(), Kokkos::ALL());
  auto Unv = Kokkos::subview(gw.wUn, b, Kokkos::ALL(), Kokkos::ALL());
  auto As = Kokkos::subview(gw.wAs, b, Kokkos::ALL(), Kokkos::ALL());
  auto Bs = Kokkos::subview(gw.wBs, b, Kokkos::make_pair(0, K), Kokkos::ALL());
  auto Xv = Kokkos::subview(gw.wX, b, Kokkos::ALL(), Kokkos::make_pair(0, K));
  TeamGemm<member_type, Trans::NoTranspose, Trans::NoTranspose, Algo::Gemm::Blocked>::invoke(m, Scalar(1), U0, As,
                                                                                             Scalar(0), Unv);
  m.team_barrier();
  TeamGemm<member_type, Trans::NoTranspose, Trans::NoTranspose, Algo::Gemm::Blocked>::invoke(m, Scalar(1), Xv, Bs,
                                                                                             Scalar(1), Unv);
  m.team_barrier();
  const Basis Un{&gw.wUn(b, 0, 0), d, r};
  Kokkos::parallel_for(Kokkos::TeamThreadRange(m, d), [&](const int i) {
    for (int a = 0; a < r; ++a) Ub(i, a) = Un(i, a);
    double s = 0;
    for (int j = 0; j < K; ++j) s += double(gw.wX(b, i, j)) * dv(b, bv_m, j);
    base.mu(b, i) = Scalar(double(base.mu(b, i)) + s);
  });
  m.team_barrier();
}

}  // namespace detail
}  // namespace mosaic
