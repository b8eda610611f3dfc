// A block of samples with missing entries cut into runs (ALGORITHM.md 7.7.3):
// the maximal runs of complete samples (every entry finite, every
// coordinate already seen) take the exact blocked form of section 6, the
// other samples the masked sequential step (7.3, impl/masked_step.hpp). The
// results are the sequential masked steps' up to rounding, as section 6's.
// 7.7.2's shared-mask blocked form (outages) is not written: a run of
// samples that share a mask steps one sample at a time.
//
// The streams of a batch cut their blocks at different samples, so the
// engine's loop (MosaicEngine::step_masked_block) advances each stream by
// one run per round: one blocked launch for the streams whose next sample
// starts a complete run (each stream its own run length, the others sit the
// launch out), then one masked sequential launch for the streams whose next
// sample is masked (or an isolated complete one). Where the streams of a
// launch start at different samples, their samples are gathered into a
// block of their own first (GatherRuns); where they start at the same one,
// the launch reads the block as it lies.
//
// Only a B x n byte per block crosses to the host (which samples are
// complete), never a mask.
#pragma once

#include <cstdint>
#include <vector>

#include <Kokkos_Core.hpp>

#include "mosaic/util/kokkos_compat.hpp"

namespace mosaic {
namespace detail {

// complete(b, j) = 1 when sample j of stream b's block is finite in every
// entry and every coordinate of stream b has been seen (7.6), else 0. A
// coordinate not yet seen makes every sample of the block masked: the
// masked step's seen rule then applies as in the sequential kernel.
template <class Scalar, class ExecSpace>
struct CompleteSamples {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using memory_space = typename ExecSpace::memory_space;
  Kokkos::View<const Scalar***, Kokkos::LayoutStride, memory_space> Xb;  // B x n x d
  Kokkos::View<const std::uint8_t**, Kokkos::LayoutRight, memory_space> seen;
  Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, memory_space> complete;  // B x (>= n)
  int n = 0, d = 0;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& m) const {
    const int b = m.league_rank();
    int unseen = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(m, d), [&](const int i, int& u) { u += seen(b, i) == 0 ? 1 : 0; }, unseen);
    for (int j = 0; j < n; ++j) {
      int bad = 0;
      if (unseen == 0)
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(m, d), [&](const int i, int& nb) { nb += kmath::isfinite(Xb(b, j, i)) ? 0 : 1; },
            bad);
      Kokkos::single(Kokkos::PerTeam(m), [&]() { complete(b, j) = unseen == 0 && bad == 0 ? 1 : 0; });
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
    Kokkos::parallel_for(Kokkos::TeamThreadRange(m, n * d), [&](const int e) {
      const int j = e / d, i = e - j * d;
      out(b, j, i) = j < l ? Xb(b, o + j, i) : Scalar(0);
    });
  }
};

// The rounds of one block (host code): which streams take a blocked run and
// how long, which take one masked step, from where. complete(b, j) is the
// host copy of CompleteSamples. A complete run shorter than min_run samples
// takes the sequential step (section 2 bit for bit in the masked kernel).
class MaskedBlockPlan {
 public:
  static constexpr int min_run = 2;

  // After next(): run_len[b] > 0 for the streams of the blocked launch
  // (their run starts at sample run_off[b]), step_on[b] = 1 for those of
  // the masked launch (sample step_off[b]); runs / steps count them, run_n
  // is the longest run, common_run_off / common_step_off the one start the
  // launch's streams share, or -1.
  std::vector<int> run_off, run_len, step_off, step_on;
  int runs = 0, steps = 0, run_n = 0, common_run_off = -1, common_step_off = -1;

  MaskedBlockPlan(int batch, int n)
      : run_off(std::size_t(batch), 0),
        run_len(std::size_t(batch), 0),
        step_off(std::size_t(batch), 0),
        step_on(std::size_t(batch), 0),
        n_(n),
        pos_(std::size_t(batch), 0) {}

  // The next round; false when every stream has taken all n samples.
  template <class Complete>
  bool next(const Complete& complete) {
    runs = steps = run_n = 0;
    common_run_off = common_step_off = -1;
    bool run_offs_differ = false, step_offs_differ = false;
    for (std::size_t b = 0; b < pos_.size(); ++b) {
      const int p = pos_[b];
      run_len[b] = step_on[b] = 0;
      if (p >= n_) continue;
      int l = 0;
      while (p + l < n_ && complete(int(b), p + l)) ++l;
      if (l >= min_run) {
        run_off[b] = p;
        run_len[b] = l;
        run_n = l > run_n ? l : run_n;
        run_offs_differ = run_offs_differ || (runs > 0 && common_run_off != p);
        common_run_off = p;
        ++runs;
        pos_[b] = p + l;
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
    return runs + steps > 0;
  }

 private:
  int n_;
  std::vector<int> pos_;  // each stream's next sample
};

}  // namespace detail
}  // namespace mosaic
