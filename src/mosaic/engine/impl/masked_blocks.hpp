// A block of samples with missing entries cut into runs (ALGORITHM.md 7.7.3):
// the maximal runs of complete samples (every entry finite, every
// coordinate already seen) take the exact blocked form of section 6, the
// maximal runs of two or more samples that miss the same coordinates (a
// channel outage, also one that has lasted since the stream's start, its
// coordinates not yet seen) 7.7.2's shared-mask blocked form, the other samples the
// masked sequential step (7.3, impl/masked_step.hpp). The results are the
// sequential masked steps' up to rounding, as section 6's.
//
// The streams of a batch cut their blocks at different samples, so the
// engine's loop (MosaicEngine::step_masked_block) advances each stream by
// one run per round: one blocked launch for the streams whose next sample
// starts a complete run (each stream its own run length, the others sit the
// launch out), one shared-mask blocked launch for those whose next sample
// starts a shared-mask run, then one masked sequential launch for the
// streams whose next sample is masked otherwise (or an isolated complete
// one). Where the streams of a launch start at different samples, their
// samples are gathered into a block of their own first (GatherRuns);
// where they start at the same one, the launch reads the block as it lies.
// A shared-mask launch always gathers (SharedMaskRunStart): its missing
// entries become mu0 (D_M = 0), and the U0 rows it must leave unchanged
// are saved, to be put back after the launch (SharedMaskRunEnd; the blocked
// form writes U0 A + D B on every row).
//
// Only a B x n byte per block crosses to the host (what each sample is),
// never a mask.
#pragma once

#include <cstdint>
#include <vector>

#include <Kokkos_Core.hpp>

#include "mosaic/engine/backend.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/util/kokkos_compat.hpp"
#include "mosaic/util/team_loops.hpp"

namespace mosaic {
namespace detail {

// Offset of entry i of sample row j of stream b in a B x n x d View of
// samples with strides (s0, s1, s2), split as row(b, j) + i * s2, so that
// the loops below can run over i with the stride known to be 1.
template <class V>
KOKKOS_INLINE_FUNCTION long sample_row_offset(const V& X, int b, int j) {
  return long(b) * long(X.stride(0)) + long(j) * long(X.stride(1));
}

// f(j, i, ix) for every entry of a team's n x d samples, ix = i * xs the
// entry's offset along a sample row of stride xs: on devices one entry per
// thread (coalesced along i); on host spaces a thread per sample, its
// entries a plain loop, with a unit stride a loop of its own that
// vectorizes (the flattened index's division per entry made a gathered
// block cost about as much as its steps; through the strided View's index
// the loop stayed scalar).
template <class ExecSpace, class Member, class F>
KOKKOS_INLINE_FUNCTION void for_each_sample_entry(const Member& m, int n, int d, long xs, const F& f) {
  if constexpr (is_host_space<ExecSpace>) {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, n), [&](const int j) {
      if (xs == 1)
        for (int i = 0; i < d; ++i) f(j, i, long(i));
      else
        for (int i = 0; i < d; ++i) f(j, i, i * xs);
    });
  } else {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, n * d), [&](const int e) {
      const int j = e / d, i = e - j * d;
      f(j, i, i * xs);
    });
  }
}

// The sum over i < d of f(i, ix) (0 or 1 each), ix = i * xs as above, for
// the whole team: on devices over the team's threads; on host spaces each
// thread a contiguous share, a unit stride in a loop of its own that
// vectorizes. Ends with a team barrier (a caller may count again at once).
template <class ExecSpace, class Member, class F>
KOKKOS_INLINE_FUNCTION int count_sample_entries(const Member& m, int d, long xs, const F& f) {
  int total = 0;
  if constexpr (is_host_space<ExecSpace>) {
    const int ts = m.team_size();
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(m, ts),
        [&](const int part, int& acc) {
          const int lo = int((long(d) * part) / ts), hi = int((long(d) * (part + 1)) / ts);
          int c = 0;
          if (xs == 1)
            for (int i = lo; i < hi; ++i) c += f(i, long(i));
          else
            for (int i = lo; i < hi; ++i) c += f(i, i * xs);
          acc += c;
        },
        total);
  } else {
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(m, d), [&](const int i, int& acc) { acc += f(i, i * xs); }, total);
  }
  m.team_barrier();
  return total;
}

// What sample j of stream b's block is (SampleKinds), a set of flags:
// sample_complete when every entry is finite and every coordinate of the
// stream has been seen (7.6); sample_shareable when it has missing (NaN)
// entries but no infinite one and at least r + 1 observed (7.5);
// sample_same_mask when it misses exactly the coordinates sample j - 1
// misses (j >= 1). A coordinate not yet seen is missing (7.6) and stays
// unseen while every sample misses it, so samples up to the first that
// has an entry in an unseen coordinate keep their kinds (a channel dead
// since the stream's start is an outage like any other: its runs take the
// shared-mask form); from that sample on, the block's samples are masked,
// and the masked step's seen rule applies as in the sequential kernel.
enum SampleKind : std::uint8_t { sample_complete = 1, sample_shareable = 2, sample_same_mask = 4 };

template <class Scalar, class ExecSpace>
struct SampleKinds {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using memory_space = typename ExecSpace::memory_space;
  Kokkos::View<const Scalar***, Kokkos::LayoutStride, memory_space> Xb;  // B x n x d
  Kokkos::View<const std::uint8_t**, Kokkos::LayoutRight, memory_space> seen;
  Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, memory_space> kind;  // B x (>= n)
  int n = 0, d = 0, r = 0;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& m) const {
    const int b = m.league_rank();
    int unseen = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(m, d), [&](const int i, int& u) { u += seen(b, i) == 0 ? 1 : 0; }, unseen);
    m.team_barrier();  // the counts below reduce again (team reductions share one buffer)
    const long xs = long(Xb.stride(2));
    bool revealed = false;  // some sample so far has an entry in an unseen coordinate
    for (int j = 0; j < n; ++j) {
      const Scalar* const x = Xb.data() + sample_row_offset(Xb, b, j);
      if (unseen > 0 && !revealed)
        revealed = count_sample_entries<ExecSpace>(m, d, xs, [&](const int i, const long ix) {
                     return int(seen(b, i) == 0 && !kmath::isnan(x[ix]));
                   }) > 0;
      // entries that are NaN, infinite, and NaN where sample j - 1's are not (or the reverse)
      int nan = 0, inf = 0, changed = 0;
      if (!revealed) {
        nan = count_sample_entries<ExecSpace>(m, d, xs, [&](int, const long ix) { return int(kmath::isnan(x[ix])); });
        inf = count_sample_entries<ExecSpace>(m, d, xs, [&](int, const long ix) { return int(kmath::isinf(x[ix])); });
        if (j > 0) {
          const Scalar* const xp = Xb.data() + sample_row_offset(Xb, b, j - 1);
          changed = count_sample_entries<ExecSpace>(
              m, d, xs, [&](int, const long ix) { return int(kmath::isnan(x[ix]) != kmath::isnan(xp[ix])); });
        }
      }
      Kokkos::single(Kokkos::PerTeam(m), [&]() {
        int k = 0;
        if (!revealed && unseen == 0 && nan == 0 && inf == 0) k |= sample_complete;
        if (!revealed && nan > 0 && inf == 0 && d - nan >= r + 1) k |= sample_shareable;
        if (!revealed && j > 0 && changed == 0) k |= sample_same_mask;
        kind(b, j) = std::uint8_t(k);
      });
    }
  }
};

// out(b, j, :) = Xb(b, off(b) + j, :) for j < len(b), 0 for len(b) <= j < n:
// the samples of each stream's run at the front of a block of its own.
template <class Scalar, class ExecSpace>
struct GatherRuns {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using memory_space = typename ExecSpace::memory_space;
  Kokkos::View<const Scalar***, Kokkos::LayoutStride, memory_space> Xb;  // B x (block) x d
  Kokkos::View<const int*, Kokkos::LayoutRight, memory_space> off, len;
  Kokkos::View<Scalar***, Kokkos::LayoutRight, memory_space> out;  // B x (>= n) x d
  int n = 0, d = 0;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& m) const {
    const int b = m.league_rank(), o = off(b), l = len(b);
    const Scalar* const x = Xb.data();
    for_each_sample_entry<ExecSpace>(m, n, d, long(Xb.stride(2)), [&](const int j, const int i, const long ix) {
      out(b, j, i) = j < l ? x[sample_row_offset(Xb, b, o + j) + ix] : Scalar(0);
    });
  }
};

// 7.7.2's launch, before: for each healthy stream b with len(b) > 0, the
// missing rows of its run (the NaN entries of sample off(b)) listed in
// rows(b, 0..missing(b)), U0's rows there saved in saved(b, k, :), and the
// run's samples gathered into out(b, j, :) with mu0 in place of a missing
// entry (D_M = 0 exactly: mu0_i - mu0_i), its count of Cholesky-QRs kept
// in reorths0(b); missing(b) = 0 for the others (a stopped stream's rows
// are neither saved nor put back).
template <class Scalar, class ExecSpace>
struct SharedMaskRunStart {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using memory_space = typename ExecSpace::memory_space;
  Kokkos::View<const Scalar***, Kokkos::LayoutStride, memory_space> Xb;  // B x (block) x d
  Kokkos::View<const int*, Kokkos::LayoutRight, memory_space> off, len;
  Kokkos::View<const int*, Kokkos::LayoutRight, memory_space> status;  // BreakdownCode: nonzero = stopped
  typename StreamBatch<Scalar, ExecSpace>::basis_view U;
  Kokkos::View<const Scalar**, Kokkos::LayoutRight, memory_space> mu;
  Kokkos::View<const std::int64_t*, Kokkos::LayoutRight, memory_space> reorths;
  Kokkos::View<std::int64_t*, Kokkos::LayoutRight, memory_space> reorths0;
  Kokkos::View<int**, Kokkos::LayoutRight, memory_space> rows;       // B x d
  Kokkos::View<int*, Kokkos::LayoutRight, memory_space> missing;     // B
  Kokkos::View<Scalar***, Kokkos::LayoutRight, memory_space> saved;  // B x d x r
  Kokkos::View<Scalar***, Kokkos::LayoutRight, memory_space> out;    // B x (>= n) x d
  int n = 0, d = 0, r = 0;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& m) const {
    const int b = m.league_rank(), o = off(b), l = len(b);
    if (l == 0 || status(b) != 0) {  // a stopped stream's rows stay as they are (the launch skips it)
      Kokkos::single(Kokkos::PerTeam(m), [&]() { missing(b) = 0; });
      return;
    }
    const long xs = long(Xb.stride(2));
    const Scalar* const x = Xb.data();
    const Scalar* const x0 = x + sample_row_offset(Xb, b, o);
    const int count =
        count_sample_entries<ExecSpace>(m, d, xs, [&](int, const long ix) { return int(kmath::isnan(x0[ix])); });
    Kokkos::parallel_scan(Kokkos::TeamThreadRange(m, d), [&](const int i, int& pos, const bool final) {
      const bool take = kmath::isnan(x0[i * xs]);
      if (final && take) rows(b, pos) = i;
      pos += take ? 1 : 0;
    });
    Kokkos::single(Kokkos::PerTeam(m), [&]() {
      missing(b) = count;
      reorths0(b) = reorths(b);
    });
    m.team_barrier();
    if constexpr (is_host_space<ExecSpace>) {
      // A saved row is a row of U (BasisLayout): a contiguous copy. The
      // samples through row pointers, a unit stride in a loop of its own
      // that vectorizes (through the Views' indices the loop stayed
      // scalar, with a branch per entry).
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, count), [&](const int k) {
        const int i = rows(b, k);
        for (int a = 0; a < r; ++a) saved(b, k, a) = U(b, i, a);
      });
      const Scalar* const mu0 = &mu(b, 0);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, n), [&](const int j) {
        Scalar* const y = &out(b, j, 0);
        if (j >= l) {
          for (int i = 0; i < d; ++i) y[i] = Scalar(0);
          return;
        }
        const Scalar* const xj = x + sample_row_offset(Xb, b, o + j);
        if (xs == 1)
          for (int i = 0; i < d; ++i) y[i] = kmath::isnan(xj[i]) ? mu0[i] : xj[i];
        else
          for (int i = 0; i < d; ++i) y[i] = kmath::isnan(xj[i * xs]) ? mu0[i] : xj[i * xs];
      });
    } else {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(m, count * r), [&](const int e) {
        const int k = e / r, a = e - k * r;
        saved(b, k, a) = U(b, rows(b, k), a);
      });
      for_each_sample_entry<ExecSpace>(m, n, d, xs, [&](const int j, const int i, const long ix) {
        const Scalar v = j < l ? x[sample_row_offset(Xb, b, o + j) + ix] : Scalar(0);
        out(b, j, i) = kmath::isnan(v) ? mu(b, i) : v;
      });
    }
  }
};

// 7.7.2's launch, after: the saved rows of U0 put back (the observed
// rotation leaves U_M unchanged; the blocked form wrote U0_M A there),
// times A_M under the geodesic rotation (U_M = U0_M A_M, A_M in
// dM(b, bm_AM, :, :)), then times R^-1 where the launch ended with the
// Cholesky-QR on the coefficients (the stream's count of them grew past
// reorths0(b); R in dM(b, bm_F2, :, :), impl/block_reorthonormalize.hpp).
template <class Scalar, class ExecSpace>
struct SharedMaskRunEnd {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using memory_space = typename ExecSpace::memory_space;
  typename StreamBatch<Scalar, ExecSpace>::basis_view U;
  Kokkos::View<const std::int64_t*, Kokkos::LayoutRight, memory_space> reorths;
  Kokkos::View<const int**, Kokkos::LayoutRight, memory_space> rows;
  Kokkos::View<const int*, Kokkos::LayoutRight, memory_space> missing;
  Kokkos::View<const Scalar***, Kokkos::LayoutRight, memory_space> saved;
  Kokkos::View<const std::int64_t*, Kokkos::LayoutRight, memory_space> reorths0;
  Kokkos::View<const double****, Kokkos::LayoutRight, memory_space> dM;  // the blocked coefficients' matrices
  int r = 0, r_index = 0, am_index = 0;                                  // bm_F2, bm_AM
  bool geodesic = false;

  // The rows' put-back in two forms, chosen by tag: the host's on host
  // spaces, the device's elsewhere; each stored entry is the same number in
  // both (the CPU suite runs both on host and compares their bits,
  // tests/engine/test_masked_engine.cpp).
  struct HostForm {};
  struct DeviceForm {};

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& m) const {
    if constexpr (is_host_space<ExecSpace>) {
      put_back(m, HostForm{});
    } else {
      put_back(m, DeviceForm{});
    }
  }

  // Each row: y = saved row (times A_M, each entry a running sum in double
  // in increasing q, rounded to Scalar), then x <- y R^-1 (x R = y:
  // forward in the columns, each entry's subtractions in double in
  // increasing q, of the entries already rounded to Scalar and written,
  // then its division).
  template <class Form>
  KOKKOS_INLINE_FUNCTION void put_back(const member_type& m, Form form) const {
    const int b = m.league_rank(), count = missing(b);
    if (count == 0) return;
    const bool rotated = reorths(b) > reorths0(b);
    put_back_rows(m, b, count, rotated, form);
    m.team_barrier();
  }

  // Right-looking, on tiles of tile_rows rows in thread scratch, entry c of
  // the tile's row p at x(c tile_rows + p): entry q final, then subtracted
  // from the later entries along row q of R (contiguous), each step a loop
  // over the tile's rows that vectorizes; the rows' independent chains
  // overlap the divisions' latency, which one row at a time waited on at
  // every entry. Rows past the end of the last tile are zeros, computed
  // and not stored. The A_M product likewise.
  KOKKOS_INLINE_FUNCTION void put_back_rows(const member_type& m, int b, int count, bool rotated, HostForm) const {
    constexpr int nt = tile_rows;
    scratch_row x(m.thread_scratch(0), r * nt);
    const int tiles = (count + nt - 1) / nt;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, tiles), [&](const int t) {
      const int k0 = t * nt, nk = count - k0 < nt ? count - k0 : nt;
      if (!geodesic && !rotated) {
        for (int p = 0; p < nk; ++p)
          for (int c = 0; c < r; ++c) U(b, rows(b, k0 + p), c) = saved(b, k0 + p, c);
        return;
      }
      double v[nt];  // one entry of each of the tile's rows
      if (geodesic) {
        for (int e = 0; e < r * nt; ++e) x(e) = 0.0;
        for (int q = 0; q < r; ++q) {
          for (int p = 0; p < nt; ++p) v[p] = p < nk ? double(saved(b, k0 + p, q)) : 0.0;
          const double* const aq = &dM(b, am_index, q, 0);
          for (int c = 0; c < r; ++c) {
            const double a = aq[c];
            MOSAIC_SIMD_LOOP
            for (int p = 0; p < nt; ++p) x(c * nt + p) += v[p] * a;
          }
        }
        for (int e = 0; e < r * nt; ++e) x(e) = double(Scalar(x(e)));
      } else {
        for (int c = 0; c < r; ++c)
          for (int p = 0; p < nt; ++p) x(c * nt + p) = p < nk ? double(saved(b, k0 + p, c)) : 0.0;
      }
      if (!rotated) {
        for (int p = 0; p < nk; ++p)
          for (int c = 0; c < r; ++c) U(b, rows(b, k0 + p), c) = Scalar(x(c * nt + p));
        return;
      }
      for (int q = 0; q < r; ++q) {
        const double rqq = dM(b, r_index, q, q);
        MOSAIC_SIMD_LOOP
        for (int p = 0; p < nt; ++p) v[p] = double(Scalar(x(q * nt + p) / rqq));
        for (int p = 0; p < nk; ++p) U(b, rows(b, k0 + p), q) = Scalar(v[p]);
        const double* const rq = &dM(b, r_index, q, 0);
        for (int c = q + 1; c < r; ++c) {
          const double rqc = rq[c];
          MOSAIC_SIMD_LOOP
          for (int p = 0; p < nt; ++p) x(c * nt + p) -= v[p] * rqc;
        }
      }
    });
  }

  // One row per thread, each entry its own running sum.
  KOKKOS_INLINE_FUNCTION void put_back_rows(const member_type& m, int b, int count, bool rotated, DeviceForm) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, count), [&](const int k) {
      const int i = rows(b, k);
      if (geodesic)
        for (int c = 0; c < r; ++c) {
          double y = 0.0;
          for (int q = 0; q < r; ++q) y += double(saved(b, k, q)) * dM(b, am_index, q, c);
          U(b, i, c) = Scalar(y);
        }
      for (int c = 0; c < r; ++c) {
        double x = double(geodesic ? U(b, i, c) : saved(b, k, c));
        if (rotated) {
          for (int q = 0; q < c; ++q) x -= double(U(b, i, q)) * dM(b, r_index, q, c);
          x /= dM(b, r_index, c, c);
        }
        U(b, i, c) = Scalar(x);
      }
    });
  }

  // Rows per tile of the host form.
  static constexpr int tile_rows = 8;
  using scratch_row =
      Kokkos::View<double*, Kokkos::LayoutRight, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  // The launch: one team per stream, on host spaces a tile's r x tile_rows
  // doubles of thread scratch (the device form needs none).
  template <class Policy>
  static Policy policy(Policy p, int r) {
    if constexpr (is_host_space<ExecSpace>) {
      return p.set_scratch_size(0, Kokkos::PerThread(scratch_row::shmem_size(r * tile_rows)));
    } else {
      (void)r;
      return p;
    }
  }
};

// The rounds of one block (host code): which streams take a blocked run,
// which a shared-mask run, and how long, which take one masked step, from
// where. kind(b, j) is the host copy of SampleKinds. A complete run
// shorter than min_run samples takes the sequential step (section 2 bit
// for bit in the masked kernel), a shared-mask one the masked step;
// shared-mask runs only where the engine has 7.7.2's form (`shared`).
class MaskedBlockPlan {
 public:
  static constexpr int min_run = 2;

  // After next(): run_len[b] > 0 for the streams of the blocked launch
  // (their run starts at sample run_off[b]), shared_len[b] > 0 for those
  // of the shared-mask launch (from shared_off[b]), step_on[b] = 1 for
  // those of the masked launch (sample step_off[b]); runs / shared_runs /
  // steps count them, run_n / shared_n are the longest runs,
  // common_run_off / common_step_off the one start the launch's streams
  // share, or -1.
  std::vector<int> run_off, run_len, shared_off, shared_len, step_off, step_on;
  int runs = 0, shared_runs = 0, steps = 0, run_n = 0, shared_n = 0, common_run_off = -1, common_step_off = -1;

  MaskedBlockPlan(int batch, int n, bool shared)
      : run_off(std::size_t(batch), 0),
        run_len(std::size_t(batch), 0),
        shared_off(std::size_t(batch), 0),
        shared_len(std::size_t(batch), 0),
        step_off(std::size_t(batch), 0),
        step_on(std::size_t(batch), 0),
        n_(n),
        shared_(shared),
        pos_(std::size_t(batch), 0) {}

  // The next round; false when every stream has taken all n samples.
  template <class Kind>
  bool next(const Kind& kind) {
    runs = shared_runs = steps = run_n = shared_n = 0;
    common_run_off = common_step_off = -1;
    bool run_offs_differ = false, step_offs_differ = false;
    const auto is = [&](int b, int j, int k) { return (kind(b, j) & k) != 0; };
    for (std::size_t b = 0; b < pos_.size(); ++b) {
      const int p = pos_[b], bi = int(b);
      run_len[b] = shared_len[b] = step_on[b] = 0;
      if (p >= n_) continue;
      int l = 0;
      while (p + l < n_ && is(bi, p + l, sample_complete)) ++l;
      int ls = 0;
      if (l < min_run && shared_ && is(bi, p, sample_shareable)) {
        ls = 1;
        while (p + ls < n_ && is(bi, p + ls, sample_shareable) && is(bi, p + ls, sample_same_mask)) ++ls;
      }
      if (l >= min_run) {
        run_off[b] = p;
        run_len[b] = l;
        run_n = l > run_n ? l : run_n;
        run_offs_differ = run_offs_differ || (runs > 0 && common_run_off != p);
        common_run_off = p;
        ++runs;
        pos_[b] = p + l;
      } else if (ls >= min_run) {
        shared_off[b] = p;
        shared_len[b] = ls;
        shared_n = ls > shared_n ? ls : shared_n;
        ++shared_runs;
        pos_[b] = p + ls;
      } else {
        step_off[b] = p;
        step_on[b] = 1;
        step_offs_differ = step_offs_differ || (steps > 0 && common_step_off != p);
        common_step_off = p;
        ++steps;
        pos_[b] = p + 1;
      }
    }
    if (run_offs_differ) common_run_off = -1;
    if (step_offs_differ) common_step_off = -1;
    return runs + shared_runs + steps > 0;
  }

 private:
  int n_;
  bool shared_;
  std::vector<int> pos_;  // each stream's next sample
};

}  // namespace detail
}  // namespace mosaic
