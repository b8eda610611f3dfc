// The batched MOSAIC engine: MosaicEngine advances every stream of a
// StreamBatch, a block of samples at a time (advance), by the sequential
// kernel (k = 1: impl/sequential_step.hpp, StepFunctor, one step per launch)
// or the exact blocked update (k > 1, or precision_solve: maintained:
// blocked_step.hpp), with one Kokkos team per stream; init: data and
// init: random; the blocked update's GEMM kernel and tuning points.
//
// Memory: all work arrays are allocated once (the constructor, the first
// block of a size); a step allocates nothing and never copies to the host.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <KokkosBatched_Gemm_Decl.hpp>
#include <KokkosBatched_Trsv_Decl.hpp>
#include <Kokkos_Core.hpp>

#include "mosaic/algorithm/params.hpp"
#include "mosaic/algorithm/reference.hpp"
#include "mosaic/engine/backend.hpp"
#include "mosaic/engine/blocked_step.hpp"
#include "mosaic/engine/frame_rotation.hpp"
#include "mosaic/engine/impl/block_noise.hpp"
#include "mosaic/engine/impl/masked_blocks.hpp"
#include "mosaic/engine/impl/masked_step.hpp"
#include "mosaic/engine/impl/sequential_step.hpp"
#include "mosaic/engine/init_data.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/engine/transfer.hpp"
#include "mosaic/engine/vendor_blas.hpp"
#include "mosaic/util/kokkos_compat.hpp"
#include "mosaic/util/team_loops.hpp"

namespace mosaic {

// MosaicEngine::init_data failed for the stream at index `stream` of the
// batch (the reference's message: a rank-deficient start, non-finite samples).
struct StreamInitError : std::invalid_argument {
  int stream;
  StreamInitError(int b, const std::string& what) : std::invalid_argument(what), stream(b) {}
};

// algorithm.block_size: auto. The samples per block of the blocked update:
// k = 2r clamped to [32, 128]. Measured on the host (docs/PERFORMANCE.md,
// "block_size: auto": float, 8 streams, d = 256 .. 8192, r = 8 .. 128) it
// was within 5% of the best k of {8, 16, 32, 64, 128} at every point; the
// flop model d (4r + k + 2r^2/k) alone would put it at sqrt(2) r, and the
// O(k^2 + r k) per-step coefficient work pulls it down at small d. Devices
// use the same rule, not yet measured on a GPU.
template <class ExecSpace>
int auto_block_size(int d, int r) {
  (void)d;
  return std::min(128, std::max(32, 2 * r));
}

// The samples per launch an engine with these options uses: block_size,
// auto following auto_block_size (a masked run's blocks are cut into runs,
// impl/masked_blocks.hpp).
template <class ExecSpace>
int resolved_block_size(const MosaicParams& p, int d, int r) {
  return p.block_size == kAuto ? auto_block_size<ExecSpace>(d, r) : std::max(1, p.block_size);
}

// Wall seconds of the phases of the blocked update with gemm vendor (the
// other kernels are one launch), summed since
// MosaicEngine::set_phase_timing(true): pack [U0 | D], the products (G, H,
// W0), the coefficient steps, the new bases; for a masked engine's blocks
// also the classification of the samples (with the copy of the kinds to the
// host), and a shared-mask run's start (the gather with mu0 in the missing
// entries, U0's missing rows saved) and end (the rows put back). The phases
// are separated by fences while timing is on; when each host thread packs
// and multiplies whole streams in one launch, its wall time is split by the
// streams' own seconds in each.
struct BlockPhases {
  double pack = 0, products = 0, coefficients = 0, materialize = 0;
  double kinds = 0, run_start = 0, run_end = 0;
};

// What a masked engine's blocks were cut into (ALGORITHM.md 7.7.3), summed
// over the streams since the engine was built (frozen streams included):
// samples taken by blocked runs of complete samples, by shared-mask blocked
// runs (7.7.2) and by masked sequential steps, and the launches of each kind
// (gathered: whose streams started at different samples; a shared-mask
// launch always gathers).
struct MaskedRunCounts {
  std::int64_t run_samples = 0, shared_samples = 0, step_samples = 0;
  std::int64_t blocked_launches = 0, shared_launches = 0, masked_launches = 0, gathered_launches = 0;
};

namespace detail {
// 8.2's start of every stream's noise model after init_data_batch wrote
// the states: psi = 1, l_i = ||U_i||^2, no accumulated residuals. (A free
// function: nvcc refuses an extended lambda in a private member.)
template <class Scalar, class ExecSpace>
void start_noise_profiles(StreamBatch<Scalar, ExecSpace>& sb) {
  const auto U = sb.U;
  const auto psi = sb.psi, lev = sb.leverage;
  const auto a = sb.noise_residuals;
  const auto cnt = sb.noise_counts;
  const int d = sb.d, r = sb.r;
  Kokkos::parallel_for(
      "mosaic::start_noise_profiles", Kokkos::RangePolicy<ExecSpace>(0, sb.batch * d), KOKKOS_LAMBDA(const int bi) {
        const int b = bi / d, i = bi % d;
        Scalar l = 0;
        for (int j = 0; j < r; ++j) l += U(b, i, j) * U(b, i, j);
        psi(b, i) = Scalar(1);
        lev(b, i) = l;
        a(b, i) = 0.0;
        cnt(b, i) = 0;
      });
  Kokkos::deep_copy(sb.rewhitenings, std::int64_t(0));
}
}  // namespace detail

template <class Scalar, class ExecSpace = Kokkos::DefaultExecutionSpace>
class MosaicEngine {
 public:
  using execution_space = ExecSpace;
  using memory_space = typename ExecSpace::memory_space;
  using batch_type = StreamBatch<Scalar, ExecSpace>;
  using sample_view = Kokkos::View<const Scalar**, Kokkos::LayoutStride, memory_space>;  // B x d
  using block_view = Kokkos::View<const Scalar***, Kokkos::LayoutStride, memory_space>;  // B x n x d
  using functor_type = detail::StepFunctor<Scalar, ExecSpace>;

  MosaicEngine(const MosaicParams& params, int batch, int d, int r) : params_(params), batch_(batch), d_(d), r_(r) {
    params_.validate(d, r);
    if (batch < 0) throw std::invalid_argument("MosaicEngine: batch must be >= 0");
    f_.d = d;
    f_.r = r;
    f_.nc = Tuning<ExecSpace>::reduction_chunks;
    f_.eta_mu = Scalar(params.eta_mu);
    f_.eta_S = Scalar(params.eta_S);
    f_.eta_U = Scalar(params.eta_U);
    f_.eta_s = Scalar(params.eta_s);
    f_.gamma = Scalar(params.gamma);
    f_.max_step = Scalar(params.max_step);
    f_.tiny = detail::rotation_tiny<Scalar>();
    f_.exact = params.covariance_update == CovarianceUpdate::exact;
    f_.precision = params.subspace_direction == SubspaceDirection::precision;
    f_.gamma_zero = params.gamma == 0.0;
    // block_size: auto (the deck default) follows auto_block_size; 0 and 1
    // select the sequential kernel.
    block_size_ = resolved_block_size<ExecSpace>(params, d, r);
    // Missing entries (ALGORITHM.md section 7): the masked sequential kernel
    // (impl/masked_step.hpp), and with block_size > 1 the blocked update on
    // the runs of complete samples and 7.7.2's shared-mask form on the runs
    // that miss the same coordinates (7.7.3, impl/masked_blocks.hpp). The
    // diagonal-noise model (section 8) runs the same kernels, whitened (with
    // or without missing entries): the masked sequential step whitens its
    // sample, the blocked runs take 8.5's form (impl/block_noise.hpp).
    const bool diagonal = params.noise == NoiseModel::diagonal;
    if (diagonal && params.precision_solve == PrecisionSolve::maintained)
      throw std::invalid_argument(
          "MosaicEngine: precision_solve: maintained has no whitened form (noise: diagonal); "
          "use dense");
    masked_kernel_ = params.missing != MissingMode::error || diagonal;
    if (masked_kernel_) {
      if (params.precision_solve == PrecisionSolve::maintained)
        throw std::invalid_argument("MosaicEngine: precision_solve: maintained has no masked form (missing: " +
                                    std::string(to_string(params.missing)) + "); use dense");
      auto& mf = masked_;
      mf.mode = params.missing;
      mf.observed_rotation = params.missing_rotation == MissingRotation::observed;
      mf.cond_max = Scalar(params.missing_cond_max);
      mf.diagonal = diagonal;
      mf.rewhiten_every = params.rewhiten_every;
      mf.rewhiten_min_count = params.rewhiten_min_count;
      mf.rewhiten_fmax = params.rewhiten_fmax;
      mf.leverage_floor = params.leverage_floor;
      mf.widx = decltype(mf.widx)("mosaic::masked_rows", batch, d);
      mf.wv = decltype(mf.wv)("mosaic::masked_vec", batch, int(detail::mv_count), r);
      mf.wm = decltype(mf.wm)("mosaic::masked_mat", batch, int(detail::mm_count), r, r);
      mf.gram_step = decltype(mf.gram_step)("mosaic::masked_gram_step", batch);
      mf.gram_reused = decltype(mf.gram_reused)("mosaic::masked_gram_reused", batch);
      mf.gram_count = decltype(mf.gram_count)("mosaic::masked_gram_count", batch);
    }
    // reorthonormalize_every: auto = a Cholesky-QR at every block end for
    // float blocked runs (ALGORITHM.md section 6: G and H are float GEMMs,
    // so U0 A + D B drifts from orthonormality by ~eps_float per block), never
    // otherwise. An explicit K keeps its sequential meaning: after every
    // step whose count is a multiple of K (blocks end there: block_length).
    const bool is_float = sizeof(Scalar) < sizeof(double);
    f_.reorth_every = params.reorthonormalize_every == kAuto ? 0 : params.reorthonormalize_every;
    blk_.reorth_at_block_end = params.reorthonormalize_every == kAuto && is_float && block_size_ > 1;
    f_.wy = decltype(f_.wy)("mosaic::work_y", batch, d);
    f_.we = decltype(f_.we)("mosaic::work_e", batch, d);
    f_.wzp = decltype(f_.wzp)("mosaic::work_zpart", batch, f_.nc, r);
    f_.wvec = decltype(f_.wvec)("mosaic::work_vec", batch, 6, r);
    f_.wmat = decltype(f_.wmat)("mosaic::work_mat", batch, 4, r, r);
    f_.wpart = decltype(f_.wpart)("mosaic::work_part", batch, f_.nc);
    // Host spaces: spread the threads over the streams, but give a team more
    // than one thread only when each thread gets a large share of U between
    // the step's many team barriers. Measured on the 2-core machine with one
    // stream, team of 2 vs 1 thread: d=256, r=8 ran 10x slower, d=8192, r=64
    // 1.7x slower. Results do not depend on the team size (every reduction
    // has a fixed order), only the speed does.
    const int conc = ExecSpace().concurrency();
    constexpr long long basis_entries_per_thread = 1LL << 20;
    if (is_host_space<ExecSpace>)
      team_size_ = int(std::max<long long>(
          1, std::min<long long>(conc / std::max(batch, 1), (long long)d * r / basis_entries_per_thread)));
    if constexpr (Tuning<ExecSpace>::vendor_gemm_over_streams)
      vendor_over_streams_allowed_ = batch >= conc && vendor_blas::host_calls_nest_single_threaded();
    vendor_over_streams_ = vendor_over_streams_allowed_;
    maintained_ = params.precision_solve == PrecisionSolve::maintained;
    if (block_size_ > 1 || maintained_) allocate_block(block_size_);
    if (masked_kernel_ && block_size_ > 1) allocate_masked_runs(block_size_);
    if (diagonal && block_size_ > 1) {
      whitened_.allocate(batch, d, r, block_size_);
      blk_.res_coef = whitened_.coef;
      blk_.res_s2 = whitened_.s2_old;
      blk_.logdet_psi = whitened_.logdet_psi;
    }
    set_block_gemm(BlockGemm::automatic);
  }

  const MosaicParams& params() const { return params_; }
  int batch() const { return batch_; }
  int d() const { return d_; }
  int r() const { return r_; }

  // Threads per team; 0 = Kokkos::AUTO (device default). Results do not
  // depend on it (see the file comment); exposed for tests and tuning.
  void set_team_size(int team_size) { team_size_ = team_size; }
  int team_size() const { return team_size_; }

  // Samples per block of step_block (0: the engine was built for the
  // sequential kernel only).
  int block_capacity() const { return kcap_; }

  // The resolved algorithm.block_size: k > 1 = the blocked kernel (advance()
  // runs step_block), 1 = the sequential kernel.
  int block_size() const { return block_size_; }
  bool blocked() const { return block_size_ > 1; }
  // The resolved re-orthonormalization: every K steps (K > 0), at every
  // block end, or never (K == 0 and not at block ends).
  int reorthonormalize_every() const { return f_.reorth_every; }
  bool reorthonormalize_at_block_end() const { return blk_.reorth_at_block_end; }

  // The longest block advance() may take next when `steps_done` steps (the
  // streams' step count, warm-up included) are done: block_size(), cut at
  // the next multiple of an explicit reorthonormalize_every, and of
  // rewhiten_every under noise: diagonal, so that the Cholesky-QR and the
  // re-whitening fall on the same steps as in the sequential kernel.
  int block_length(std::int64_t steps_done) const {
    std::int64_t n = block_size_;
    for (const std::int64_t every : block_periods()) n = std::min<std::int64_t>(n, every - steps_done % every);
    return int(n);
  }
  // The periods whose multiples end blocks (block_length).
  std::vector<std::int64_t> block_periods() const {
    std::vector<std::int64_t> every;
    if (blocked() && f_.reorth_every > 0) every.push_back(f_.reorth_every);
    if (blocked() && masked_.diagonal) every.push_back(masked_.rewhiten_every);
    return every;
  }

  // Advances every healthy stream by the n = Xb.extent(1) samples of Xb
  // (B x n x d) with the engine's kernel: step_block (n <= block_size())
  // when blocked, n sequential steps otherwise.
  void advance(batch_type& sb, block_view Xb) const {
    if (blocked()) {
      step_block(sb, Xb);
      return;
    }
    for (int j = 0; j < int(Xb.extent(1)); ++j) step(sb, Kokkos::subview(Xb, Kokkos::ALL(), j, Kokkos::ALL()));
  }

  // GEMM kernel of the blocked update (blocked_step.hpp); automatic = the
  // backend's: vendor where a vendor library serves this space (Kokkos
  // Kernels' BLAS TPL on host spaces, cuBLAS on Cuda: vendor_gemm_tpl), else tiled on host spaces and KokkosBatched::TeamGemm
  // on devices; tiled exists on host spaces only. Allocates the chosen
  // kernel's work arrays (and frees the others').
  void set_block_gemm(BlockGemm g) {
    const BlockGemm resolved = g != BlockGemm::automatic      ? g
                               : vendor_gemm_tpl<ExecSpace>() ? BlockGemm::vendor
                               : is_host_space<ExecSpace>     ? BlockGemm::tiled
                                                              : BlockGemm::kokkos_batched;
    if (resolved == BlockGemm::tiled && !is_host_space<ExecSpace>)
      throw std::invalid_argument(
          std::string("MosaicEngine: block GEMM 'tiled' runs on host execution spaces only, not ") + ExecSpace::name());
    gemm_ = g;
    gemm_resolved_ = resolved;
    if (kcap_ > 0) allocate_block_gemm();
  }
  BlockGemm block_gemm() const { return gemm_; }
  // The kernel automatic stands for on this backend.
  BlockGemm block_gemm_resolved() const { return gemm_resolved_; }
  // Phase timing of the blocked update with gemm vendor (BlockPhases).
  void set_phase_timing(bool on) {
    phase_timing_ = on;
    phases_ = {};
  }
  const BlockPhases& block_phases() const { return phases_; }
  // A masked engine's blocks (step_masked_block) so far.
  const MaskedRunCounts& masked_run_counts() const { return run_counts_; }

  // 7.8's reuse of the masked step's Gram and factors while the missing
  // rows do not change (on unless set off; the results are the same bit for
  // bit, only the time differs), and the masked steps that reused them so
  // far, summed over the streams.
  void set_gram_reuse(bool on) { masked_.reuse_gram = on; }
  std::int64_t gram_reuses() const {
    if (!masked_kernel_) return 0;
    const auto h = transfer::to_host(masked_.gram_reused);
    std::int64_t n = 0;
    for (int b = 0; b < batch_; ++b) n += h(b);
    return n;
  }

  // gemm vendor: columns of D per GEMM of the products (the panels of H;
  // Tuning<ExecSpace>::vendor_panel_cols unless set; the bench's
  // --panel-cols). Any value >= 1 gives the same products up to the
  // library's summation order.
  void set_vendor_panel_cols(int cols) {
    if (cols < 1)
      throw std::invalid_argument("MosaicEngine: vendor panel columns must be >= 1, got " + std::to_string(cols));
    panel_cols_ = cols;
  }
  int vendor_panel_cols() const { return panel_cols_; }

  // gemm vendor: each host thread packs and multiplies whole streams
  // (HostTuning::vendor_gemm_over_streams), else one GEMM at a time.
  bool vendor_gemm_over_streams() const { return vendor_over_streams_; }
  // false: one GEMM at a time whatever the batch; true restores the
  // default where it is allowed (host space, at least as many streams as
  // threads, a BLAS that runs single-threaded inside a parallel region).
  void set_vendor_gemm_over_streams(bool on) { vendor_over_streams_ = on && vendor_over_streams_allowed_; }

  // The blocked update's coefficient steps factor S and S + gamma s2 I in
  // level-0 team scratch where r fits (impl/block_coefficients.hpp,
  // factor_ld; on devices shared memory), else in their global work array.
  // Off (a test's switch) keeps the work array at every r; the results are
  // the same bit for bit.
  void set_factor_in_team_scratch(bool on) { factor_scratch_ = on; }
  bool factor_in_team_scratch() const {
    using coefficients = detail::BlockCoefficients<functor_type>;
    return factor_scratch_ &&
           coefficients::factor_scratch_bytes(r_) <= std::size_t(decltype(team_policy())::scratch_size_max(0));
  }

  // init: data from the first n0 samples of every stream (X: B x n0 x d),
  // on the execution space (init_data.hpp), a masked engine's streams whose
  // init samples have missing entries on the host (7.6). Returns one
  // InitFailure per stream, empty where it started; a stream that cannot start
  // keeps its state, the others are written (the driver grows the windows
  // of rank-deficient starts, section 3).
  std::vector<InitFailure> init_data_streams(batch_type& sb,
                                             Kokkos::View<const Scalar***, Kokkos::LayoutRight, memory_space> X) const {
    check_batch(sb);
    if (int(X.extent(0)) != batch_ || int(X.extent(2)) != d_)
      throw std::invalid_argument("MosaicEngine::init_data: X must be B x n0 x d = " + std::to_string(batch_) +
                                  " x n0 x " + std::to_string(d_));
    gram_batch_ = nullptr;  // the reused Gram is stale
    std::vector<InitFailure> errors = init_data_batch(sb, X, params_);
    if (sb.diagonal_noise()) detail::start_noise_profiles(sb);
    if (masked_kernel_) init_masked_streams(sb, X, errors);
    return errors;
  }
  // init_data_streams, throwing StreamInitError naming the batch index of
  // the first stream that cannot start.
  void init_data(batch_type& sb, Kokkos::View<const Scalar***, Kokkos::LayoutRight, memory_space> X) const {
    const std::vector<InitFailure> errors = init_data_streams(sb, X);
    for (int b = 0; b < batch_; ++b)
      if (errors[std::size_t(b)].failed()) throw StreamInitError(b, errors[std::size_t(b)].message);
  }

  // init: random, per stream id (reference_init_random; from_host starts a
  // diagonal-noise batch's profiles).
  void init_random(batch_type& sb, std::uint64_t seed) const {
    check_batch(sb);
    for (int b = 0; b < batch_; ++b)
      sb.from_host(b, reference_init_random<Scalar>(d_, r_, params_, seed, sb.stream_ids[b]));
  }

  // One MOSAIC step of every healthy stream with its sample X(b, :).
  void step(batch_type& sb, sample_view X) const;

  // n <= block_capacity() MOSAIC steps of every healthy stream with the
  // samples Xb(b, 0..n-1, :) (B x n x d), by the exact blocked form
  // (blocked_step.hpp). The state afterwards is the sequential kernel's after
  // the same n steps (up to rounding), with the same clamp counts and the
  // same breakdown step and code. A masked engine cuts the block into runs
  // (step_masked_block).
  void step_block(batch_type& sb, block_view Xb) const;

 private:
  using stream_counts = Kokkos::View<const int*, Kokkos::LayoutRight, memory_space>;

  // The blocked update of the first stream_n(b) samples of Xb for each
  // stream b (all n when stream_n is empty), with the resolved GEMM kernel;
  // with shared_missing, 7.7.2's form for the streams with
  // shared_missing(b) > 0 (launch_shared).
  // With `mean` bound, the launch's mean is that B x d view instead of the
  // batch's (8.5's whitened runs: launch_whitened).
  using mean_view = Kokkos::View<Scalar**, Kokkos::LayoutRight, memory_space>;
  void launch_blocked(batch_type& sb, block_view Xb, stream_counts stream_n, stream_counts shared_missing = {},
                      mean_view mean = {}) const;

  // The one launch of a block with the GEMM kernel Gemm (its functor type).
  template <class Gemm>
  void launch_block(batch_type& sb, block_view Xb, stream_counts stream_n, stream_counts shared_missing, mean_view mean,
                    const detail::BlockGemmWork<Scalar, ExecSpace, Gemm>& work) const;

  // noise: diagonal (8.5, impl/block_noise.hpp): the blocked launch of
  // stream b's first len(b) samples of Xb (n in all) on the whitened block,
  // then finish_whitened; a shared-mask run (shared_missing bound) calls
  // finish_whitened itself, after its end (launch_shared).
  void launch_whitened(batch_type& sb, block_view Xb, stream_counts len, int n,
                       stream_counts shared_missing = {}) const;
  // The residuals, the mean in data units, the accumulators and the
  // re-whitening after a whitened launch; a shared-mask run's mask is the
  // NaN of Xs(b, shared_off(b), :).
  void finish_whitened(batch_type& sb, stream_counts len, int n, stream_counts shared_missing = {},
                       block_view Xs = {}) const;

  // 7.7.2: the shared-mask runs of a round (stream b's len[b] samples of Xb
  // from off[b]; impl/masked_blocks.hpp): gathered with D_M = 0, the
  // blocked update with the masked coefficient steps (and the Cholesky-QR on
  // the coefficients where one is due), U0's missing rows put back (times
  // R^-1 after a Cholesky-QR).
  void launch_shared(batch_type& sb, block_view Xb, const std::vector<int>& off, const std::vector<int>& len,
                     int n) const;

  // The masked sequential step of the streams with active(b) != 0 (all when
  // active is empty) with their samples X(b, :).
  void launch_masked(batch_type& sb, sample_view X, stream_counts active) const;

  // A masked engine's block (ALGORITHM.md 7.7.3): the runs of complete
  // samples by the blocked update, the runs that share a mask by 7.7.2's
  // form, the other samples by the masked step, round by round
  // (impl/masked_blocks.hpp).
  void step_masked_block(batch_type& sb, block_view Xb) const;

  using stream_ints = Kokkos::View<int*, Kokkos::LayoutRight, memory_space>;

  // v = h (one int per stream) through the transfer helper.
  static void upload(const stream_ints& v, const std::vector<int>& h) {
    auto hv = transfer::host_buffer(v);
    for (std::size_t b = 0; b < h.size(); ++b) hv(b) = h[b];
    transfer::copy_from_host(v, hv);
  }

  // A launch's samples when its streams start at different samples of Xb:
  // stream b's len(b) samples from off(b) (off uploaded here, len already
  // on the device), gathered at the front of a block of n (the rest 0).
  block_view gather_runs(block_view Xb, const std::vector<int>& off, const stream_ints& off_dev, const stream_ints& len,
                         int n) const;

  // The work of step_masked_block for blocks of up to k samples.
  void allocate_masked_runs(int k) {
    auto& w = runs_;
    w.kind = decltype(w.kind)("mosaic::masked_sample_kind", batch_, k);
    w.kind_host = transfer::host_buffer(w.kind);
    w.run_off = decltype(w.run_off)("mosaic::masked_run_off", batch_);
    w.run_len = decltype(w.run_len)("mosaic::masked_run_len", batch_);
    w.step_off = decltype(w.step_off)("mosaic::masked_step_off", batch_);
    w.step_on = decltype(w.step_on)("mosaic::masked_step_on", batch_);
    w.gathered = decltype(w.gathered)("mosaic::masked_gathered", batch_, k, d_);
    // 7.7.2's form: missing: posterior with either rotation (the form of
    // ALGORITHM.md; the other missing modes step sample by sample).
    shared_runs_ = params_.missing == MissingMode::posterior;
    if (shared_runs_) {
      w.shared_off = decltype(w.shared_off)("mosaic::masked_shared_off", batch_);
      w.shared_len = decltype(w.shared_len)("mosaic::masked_shared_len", batch_);
      w.shared_missing = decltype(w.shared_missing)("mosaic::masked_shared_missing", batch_);
      w.shared_rows = decltype(w.shared_rows)("mosaic::masked_shared_rows", batch_, d_);
      w.shared_saved = decltype(w.shared_saved)("mosaic::masked_shared_saved", batch_, d_, r_);
      w.shared_reorths0 = decltype(w.shared_reorths0)("mosaic::masked_shared_reorths0", batch_);
    }
  }

  // 7.6 for the streams whose init samples have missing entries: the host
  // reference's masked init (in double, as the device path; the init is an
  // n0 x n0 problem), replacing what init_data_batch made of them.
  void init_masked_streams(batch_type& sb, Kokkos::View<const Scalar***, Kokkos::LayoutRight, memory_space> X,
                           std::vector<InitFailure>& errors) const {
    const auto h = transfer::to_host(X);
    const int n0 = int(X.extent(1));
    std::vector<Scalar> xs(std::size_t(n0) * d_);
    for (int b = 0; b < batch_; ++b) {
      bool any_nan = false;
      for (int k = 0; k < n0; ++k)
        for (int i = 0; i < d_; ++i) {
          xs[std::size_t(k) * d_ + i] = h(b, k, i);
          any_nan = any_nan || std::isnan(h(b, k, i));
        }
      if (!any_nan) continue;
      try {
        sb.from_host(b, reference_init_data_masked(xs.data(), n0, d_, r_, params_));
        errors[std::size_t(b)] = InitFailure{};
      } catch (const std::invalid_argument& e) {
        errors[std::size_t(b)] = InitFailure::of(e);
      }
    }
  }

  // One team per stream, team_size_ threads (AUTO when 0). Dynamic schedule:
  // streams are independent, so a thread that is slowed down (shared cores)
  // does not hold back the others; results do not depend on which thread
  // runs which stream.
  Kokkos::TeamPolicy<ExecSpace, Kokkos::Schedule<Kokkos::Dynamic>> team_policy() const {
    using policy = Kokkos::TeamPolicy<ExecSpace, Kokkos::Schedule<Kokkos::Dynamic>>;
    return team_size_ > 0 ? policy(ExecSpace(), batch_, team_size_) : policy(ExecSpace(), batch_, Kokkos::AUTO);
  }

  // The masked step's functor bound to the batch (no sample).
  detail::MaskedStepFunctor<Scalar, ExecSpace> bind_masked(batch_type& sb) const {
    detail::MaskedStepFunctor<Scalar, ExecSpace> mf = masked_;
    mf.base = bind(sb);
    mf.seen = sb.seen;
    mf.skipped_steps = sb.skipped_steps;
    mf.dropped_samples = sb.dropped_samples;
    mf.missing_entries = sb.missing_entries;
    if (mf.diagonal && !sb.diagonal_noise())
      throw std::invalid_argument("MosaicEngine: noise: diagonal needs a batch built for it (StreamBatch's noise)");
    mf.psi = sb.psi;
    mf.leverage = sb.leverage;
    mf.noise_residuals = sb.noise_residuals;
    mf.noise_counts = sb.noise_counts;
    mf.rewhitenings = sb.rewhitenings;
    return mf;
  }

  functor_type bind(batch_type& sb) const {
    functor_type f = f_;
    f.mu = sb.mu;
    f.U = sb.U;
    f.S = sb.S;
    f.s2 = sb.s2;
    f.steps = sb.steps;
    f.clamped_steps = sb.clamped_steps;
    f.prequential = sb.prequential;
    f.breakdown_step = sb.breakdown_step;
    f.reorths = sb.reorthonormalizations;
    f.unresolved_residual_steps = sb.unresolved_residual_steps;
    f.residual_recomputations = sb.residual_recomputations;
    f.status = sb.status;
    return f;
  }

  void allocate_block(int k) {
    const int B = batch_, r = r_, K = k;
    kcap_ = k;
    auto& f = blk_;
    f.kcap = k;
    f.maintained = maintained_;
    f.refactor_every = params_.refactor_every;
    f.dG = decltype(f.dG)("mosaic::block_dG", B, K, r);
    f.dH = decltype(f.dH)("mosaic::block_dH", B, K, K);
    f.dA = decltype(f.dA)("mosaic::block_dA", B, r, r);
    f.dB = decltype(f.dB)("mosaic::block_dB", B, K, r);
    f.dQ = decltype(f.dQ)("mosaic::block_dQ", B, K, r);
    f.dBt = decltype(f.dBt)("mosaic::block_dBt", B, r, K);
    f.dM = decltype(f.dM)("mosaic::block_dM", B, int(detail::bm_count), r, r);
    f.dv = decltype(f.dv)("mosaic::block_dv", B, int(detail::bv_count), std::max(r, K));
    f.dsc = decltype(f.dsc)("mosaic::block_dsc", B, 5);
  }

  // The work arrays of the chosen GEMM kernel of the blocked update.
  void allocate_block_gemm() {
    batched_work_ = {};
    vendor_work_ = {};
    if constexpr (is_host_space<ExecSpace>) tiled_work_ = {};
    if (gemm_resolved_ == BlockGemm::kokkos_batched) batched_work_.allocate(batch_, d_, r_, kcap_);
    if (gemm_resolved_ == BlockGemm::vendor) vendor_work_.allocate(batch_, d_, r_, kcap_);
    if constexpr (is_host_space<ExecSpace>)
      if (gemm_resolved_ == BlockGemm::tiled) tiled_work_.allocate(batch_, d_, r_, kcap_);
  }

  void check_batch(const batch_type& sb) const {
    if (sb.batch != batch_ || sb.d != d_ || sb.r != r_)
      throw std::invalid_argument("MosaicEngine: batch is B=" + std::to_string(sb.batch) +
                                  ", d=" + std::to_string(sb.d) + ", r=" + std::to_string(sb.r) +
                                  ", engine was built for B=" + std::to_string(batch_) + ", d=" + std::to_string(d_) +
                                  ", r=" + std::to_string(r_));
  }

  MosaicParams params_;
  int batch_, d_, r_;
  int team_size_ = 0;
  functor_type f_;
  detail::BlockCoefficients<functor_type> blk_;
  detail::BlockGemmWork<Scalar, ExecSpace, gemm::TeamBatched> batched_work_;
  detail::BlockGemmWork<Scalar, ExecSpace, gemm::Vendor> vendor_work_;
  struct NoHostTiledWork {};
  std::conditional_t<is_host_space<ExecSpace>, detail::BlockGemmWork<Scalar, ExecSpace, gemm::HostTiled>,
                     NoHostTiledWork>
      tiled_work_;
  int kcap_ = 0, block_size_ = 1;
  detail::MaskedStepFunctor<Scalar, ExecSpace> masked_;
  bool masked_kernel_ = false;
  struct MaskedRunsWork {
    Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, memory_space> kind;  // B x k (detail::SampleKind flags)
    transfer::HostCopy<decltype(kind)> kind_host;
    stream_ints run_off, run_len, step_off, step_on;                      // B
    Kokkos::View<Scalar***, Kokkos::LayoutRight, memory_space> gathered;  // B x k x d
    // 7.7.2: the runs, their missing rows (B x d) and U0 there (B x d x r),
    // each stream's count of Cholesky-QRs before the launch
    stream_ints shared_off, shared_len, shared_missing;
    Kokkos::View<int**, Kokkos::LayoutRight, memory_space> shared_rows;
    Kokkos::View<Scalar***, Kokkos::LayoutRight, memory_space> shared_saved;
    Kokkos::View<std::int64_t*, Kokkos::LayoutRight, memory_space> shared_reorths0;
  } runs_;
  bool shared_runs_ = false;                               // 7.7.2's form is taken (allocate_masked_runs)
  detail::WhitenedBlockWork<Scalar, ExecSpace> whitened_;  // noise: diagonal, blocked (8.5)
  bool maintained_ = false, vendor_over_streams_allowed_ = false, vendor_over_streams_ = false, phase_timing_ = false;
  bool factor_scratch_ = true;
  int panel_cols_ = Tuning<ExecSpace>::vendor_panel_cols;
  mutable BlockPhases phases_;
  // Phase timing (BlockPhases): the end of the last phase timed.
  mutable std::chrono::steady_clock::time_point phase_mark_;
  // With phase timing on: fence, add the time since the last mark to phase
  // (nullptr: only move the mark), mark now.
  void lap(double* phase) const {
    if (!phase_timing_) return;
    Kokkos::fence();
    const auto now = std::chrono::steady_clock::now();
    if (phase) *phase += std::chrono::duration<double>(now - phase_mark_).count();
    phase_mark_ = now;
  }
  mutable MaskedRunCounts run_counts_;
  // The batch and its state_writes the masked step's reused Gram belongs to
  // (launch_masked forgets it when either changed).
  mutable const void* gram_batch_ = nullptr;
  mutable std::uint64_t gram_writes_ = 0;
  BlockGemm gemm_ = BlockGemm::automatic, gemm_resolved_ = BlockGemm::kokkos_batched;
};

// The kernels' launches, outside the class so that `extern template` below
// keeps them out of every translation unit but their own.
template <class Scalar, class ExecSpace>
void MosaicEngine<Scalar, ExecSpace>::step(batch_type& sb, sample_view X) const {
  check_batch(sb);
  if (int(X.extent(0)) != batch_ || int(X.extent(1)) != d_)
    throw std::invalid_argument("MosaicEngine::step: X must be B x d = " + std::to_string(batch_) + " x " +
                                std::to_string(d_));
  if (maintained_) {
    // The maintained solve lives in the blocked kernel: a block of one,
    // a B x 1 x d view of X's memory.
    const Kokkos::LayoutStride one(batch_, X.stride(0), 1, X.stride(0), d_, X.stride(1));
    step_block(sb, block_view(X.data(), one));
    return;
  }
  if (masked_kernel_) return launch_masked(sb, X, {});
  functor_type f = bind(sb);
  f.X = X;
  Kokkos::parallel_for("mosaic::step", team_policy(), f);
}

template <class Scalar, class ExecSpace>
void MosaicEngine<Scalar, ExecSpace>::launch_masked(batch_type& sb, sample_view X, stream_counts active) const {
  if (gram_batch_ != sb.U.data() || gram_writes_ != sb.state_writes) {
    Kokkos::deep_copy(masked_.gram_step, std::int64_t(-1));
    gram_batch_ = sb.U.data();
    gram_writes_ = sb.state_writes;
  }
  detail::MaskedStepFunctor<Scalar, ExecSpace> mf = bind_masked(sb);
  mf.base.X = X;
  mf.active = active;
  Kokkos::parallel_for("mosaic::masked_step", team_policy(), mf);
}

template <class Scalar, class ExecSpace>
void MosaicEngine<Scalar, ExecSpace>::step_block(batch_type& sb, block_view Xb) const {
  check_batch(sb);
  const int n = int(Xb.extent(1));
  if (kcap_ < 1)
    throw std::invalid_argument("MosaicEngine::step_block: the engine was built with block_size " +
                                std::to_string(params_.block_size) + " (sequential kernel)");
  if (int(Xb.extent(0)) != batch_ || int(Xb.extent(2)) != d_ || n < 1 || n > kcap_)
    throw std::invalid_argument("MosaicEngine::step_block: X must be B x n x d = " + std::to_string(batch_) +
                                " x n x " + std::to_string(d_) + " with 1 <= n <= " + std::to_string(kcap_));
  if (masked_kernel_) return step_masked_block(sb, Xb);
  launch_blocked(sb, Xb, {});
}

template <class Scalar, class ExecSpace>
void MosaicEngine<Scalar, ExecSpace>::launch_blocked(batch_type& sb, block_view Xb, stream_counts stream_n,
                                                     stream_counts shared_missing, mean_view mean) const {
  if constexpr (is_host_space<ExecSpace>)
    if (gemm_resolved_ == BlockGemm::tiled) return launch_block(sb, Xb, stream_n, shared_missing, mean, tiled_work_);
  if (gemm_resolved_ == BlockGemm::vendor) return launch_block(sb, Xb, stream_n, shared_missing, mean, vendor_work_);
  launch_block(sb, Xb, stream_n, shared_missing, mean, batched_work_);
}

template <class Scalar, class ExecSpace>
void MosaicEngine<Scalar, ExecSpace>::launch_whitened(batch_type& sb, block_view Xb, stream_counts len, int n,
                                                      stream_counts shared_missing) const {
  const auto& w = whitened_;
  detail::WhitenedRunStart<Scalar, ExecSpace> start{Xb, len, sb.mu, sb.psi, sb.U, w, n, d_, r_};
  if (shared_missing.extent(0) > 0) {
    start.missing_rows = runs_.shared_rows;
    start.missing = shared_missing;
  }
  Kokkos::parallel_for("mosaic::whitened_run_start", team_policy(), start);
  launch_blocked(sb, block_view(Kokkos::subview(w.Dw, Kokkos::ALL(), Kokkos::make_pair(0, n), Kokkos::ALL())), len,
                 shared_missing, w.mean);
  if (shared_missing.extent(0) == 0) finish_whitened(sb, len, n);
}

template <class Scalar, class ExecSpace>
void MosaicEngine<Scalar, ExecSpace>::finish_whitened(batch_type& sb, stream_counts len, int n,
                                                      stream_counts shared_missing, block_view Xs) const {
  detail::residual_gemms(whitened_, batch_, d_, r_, n);
  detail::WhitenedRunEnd<Scalar, ExecSpace> end{bind_masked(sb), len, shared_missing, runs_.shared_off, Xs,
                                                whitened_,       n};
  Kokkos::parallel_for("mosaic::whitened_run_end", team_policy(), end);
}

template <class Scalar, class ExecSpace>
void MosaicEngine<Scalar, ExecSpace>::step_masked_block(batch_type& sb, block_view Xb) const {
  const int n = int(Xb.extent(1));
  auto& w = runs_;
  lap(nullptr);
  detail::SampleKinds<Scalar, ExecSpace> kinds{Xb, sb.seen, w.kind, n, d_, r_};
  Kokkos::parallel_for("mosaic::masked_sample_kinds", team_policy(), kinds);
  transfer::copy_to_host(w.kind_host, w.kind);
  lap(&phases_.kinds);
  detail::MaskedBlockPlan plan(batch_, n, shared_runs_);
  const auto kind = [&](int b, int j) { return int(w.kind_host(b, j)); };
  auto& counts = run_counts_;
  while (plan.next(kind)) {
    for (int b = 0; b < batch_; ++b) {
      counts.run_samples += plan.run_len[std::size_t(b)];
      counts.shared_samples += plan.shared_len[std::size_t(b)];
      counts.step_samples += plan.step_on[std::size_t(b)];
    }
    counts.blocked_launches += plan.runs > 0;
    counts.shared_launches += plan.shared_runs > 0;
    counts.masked_launches += plan.steps > 0;
    counts.gathered_launches += (plan.runs > 0 && plan.common_run_off < 0) + (plan.shared_runs > 0) +
                                (plan.steps > 0 && plan.common_step_off < 0);
    if (plan.runs > 0) {
      upload(w.run_len, plan.run_len);
      const block_view runs =
          plan.common_run_off >= 0
              ? block_view(Kokkos::subview(Xb, Kokkos::ALL(),
                                           Kokkos::make_pair(plan.common_run_off, plan.common_run_off + plan.run_n),
                                           Kokkos::ALL()))
              : gather_runs(Xb, plan.run_off, w.run_off, w.run_len, plan.run_n);
      if (masked_.diagonal) launch_whitened(sb, runs, w.run_len, plan.run_n);
      else launch_blocked(sb, runs, w.run_len);
    }
    if (plan.shared_runs > 0) launch_shared(sb, Xb, plan.shared_off, plan.shared_len, plan.shared_n);
    if (plan.steps > 0) {
      upload(w.step_on, plan.step_on);
      const sample_view x = plan.common_step_off >= 0
                                ? sample_view(Kokkos::subview(Xb, Kokkos::ALL(), plan.common_step_off, Kokkos::ALL()))
                                : sample_view(Kokkos::subview(gather_runs(Xb, plan.step_off, w.step_off, w.step_on, 1),
                                                              Kokkos::ALL(), 0, Kokkos::ALL()));
      launch_masked(sb, x, w.step_on);
    }
  }
}

template <class Scalar, class ExecSpace>
void MosaicEngine<Scalar, ExecSpace>::launch_shared(batch_type& sb, block_view Xb, const std::vector<int>& off,
                                                    const std::vector<int>& len, int n) const {
  auto& w = runs_;
  upload(w.shared_off, off);
  upload(w.shared_len, len);
  detail::SharedMaskRunStart<Scalar, ExecSpace> start{Xb,
                                                      w.shared_off,
                                                      w.shared_len,
                                                      sb.status,
                                                      sb.U,
                                                      sb.mu,
                                                      sb.reorthonormalizations,
                                                      w.shared_reorths0,
                                                      w.shared_rows,
                                                      w.shared_missing,
                                                      w.shared_saved,
                                                      w.gathered,
                                                      n,
                                                      d_,
                                                      r_};
  Kokkos::parallel_for("mosaic::masked_shared_start", team_policy(), start);
  lap(&phases_.run_start);
  const block_view gathered(Kokkos::subview(w.gathered, Kokkos::ALL(), Kokkos::make_pair(0, n), Kokkos::ALL()));
  if (masked_.diagonal) launch_whitened(sb, gathered, w.shared_len, n, w.shared_missing);
  else launch_blocked(sb, gathered, w.shared_len, w.shared_missing);
  detail::SharedMaskRunEnd<Scalar, ExecSpace> end;
  end.U = sb.U;
  end.reorths = sb.reorthonormalizations;
  end.rows = w.shared_rows;
  end.missing = w.shared_missing;
  end.saved = w.shared_saved;
  end.reorths0 = w.shared_reorths0;
  end.dM = blk_.dM;
  end.r = r_;
  end.r_index = int(detail::bm_F2);
  end.am_index = int(detail::bm_AM);
  end.geodesic = params_.missing_rotation == MissingRotation::geodesic;
  Kokkos::parallel_for("mosaic::masked_shared_end", decltype(end)::policy(team_policy(), r_), end);
  lap(&phases_.run_end);
  if (masked_.diagonal) finish_whitened(sb, w.shared_len, n, w.shared_missing, Xb);
}

template <class Scalar, class ExecSpace>
auto MosaicEngine<Scalar, ExecSpace>::gather_runs(block_view Xb, const std::vector<int>& off,
                                                  const stream_ints& off_dev, const stream_ints& len, int n) const
    -> block_view {
  upload(off_dev, off);
  detail::GatherRuns<Scalar, ExecSpace> g{Xb, off_dev, len, runs_.gathered, n, d_};
  Kokkos::parallel_for("mosaic::masked_gather", team_policy(), g);
  return block_view(Kokkos::subview(runs_.gathered, Kokkos::ALL(), Kokkos::make_pair(0, n), Kokkos::ALL()));
}

template <class Scalar, class ExecSpace>
template <class Gemm>
void MosaicEngine<Scalar, ExecSpace>::launch_block(batch_type& sb, block_view Xb, stream_counts stream_n,
                                                   stream_counts shared_missing, mean_view mean,
                                                   const detail::BlockGemmWork<Scalar, ExecSpace, Gemm>& work) const {
  using F = detail::BlockFunctor<functor_type, Gemm>;
  F f(blk_, work);
  f.stream_n = stream_n;
  f.shared_missing = shared_missing;
  f.saved_rows = runs_.shared_saved;
  f.missing_rows = runs_.shared_rows;
  f.skipped_steps = sb.skipped_steps;
  f.missing_entries = sb.missing_entries;
  f.cond_max = params_.missing_cond_max;
  f.geodesic = params_.missing_rotation == MissingRotation::geodesic;
  f.base = bind(sb);
  if (mean.extent(0) > 0) f.base.mu = mean;
  f.Rfac = sb.Rfac;
  f.factor_age = sb.factor_age;
  f.refactors = sb.refactors;
  f.solve_drift = sb.solve_drift;
  f.Xb = Xb;
  f.n = int(Xb.extent(1));
  auto pol = team_policy();
  if (factor_in_team_scratch()) {
    f.factor_ld = F::factor_scratch_ld(r_);
    pol.set_scratch_size(0, Kokkos::PerTeam(F::factor_scratch_bytes(r_)));
  }
  if constexpr (!std::is_same_v<Gemm, gemm::Vendor>) {
    Kokkos::parallel_for("mosaic::step_block", work.with_scratch(pol), f);
  } else {
    // Pack and products, the coefficient steps (one launch), the new bases.
    f.with_w0 = blk_.reorth_at_block_end || f_.reorth_every > 0;
    f.time_phases = phase_timing_;
    f.panel_cols = panel_cols_;
    lap(nullptr);
    // Host-only launches (their functor members are host code) exist only
    // where the tuning allows them at all.
    constexpr bool host_streams = Tuning<ExecSpace>::vendor_gemm_over_streams;
    if (host_streams && vendor_over_streams_) {
      if constexpr (host_streams) {
        if (phase_timing_) Kokkos::deep_copy(work.stream_seconds, 0.0);
        using streams = Kokkos::RangePolicy<ExecSpace, Kokkos::Schedule<Kokkos::Dynamic>, typename F::PackGemmTag>;
        Kokkos::parallel_for("mosaic::block_pack_products", streams(ExecSpace(), 0, batch_), f);
        double both = 0;
        lap(&both);
        double pack = 0, products = 0;
        for (int b = 0; phase_timing_ && b < batch_; ++b) {
          pack += work.stream_seconds(b, 0);
          products += work.stream_seconds(b, 1);
        }
        if (pack + products > 0) {
          phases_.pack += both * pack / (pack + products);
          phases_.products += both * products / (pack + products);
        }
      }
    } else {
      const int chunks = (d_ + F::pack_chunk_rows - 1) / F::pack_chunk_rows;
      using pack = Kokkos::TeamPolicy<ExecSpace, typename F::PackTag>;
      Kokkos::parallel_for("mosaic::block_pack",
                           is_host_space<ExecSpace> ? pack(ExecSpace(), batch_ * chunks, 1)
                                                    : pack(ExecSpace(), batch_ * chunks, Kokkos::AUTO),
                           f);
      lap(&phases_.pack);
      f.gemm_products(0, batch_);  // every stream at once (one library call per GEMM on Cuda)
      lap(&phases_.products);
    }
    Kokkos::parallel_for("mosaic::block_coefficients", pol, f);
    lap(&phases_.coefficients);
    if (host_streams && vendor_over_streams_) {
      if constexpr (host_streams) {
        using streams = Kokkos::RangePolicy<ExecSpace, Kokkos::Schedule<Kokkos::Dynamic>, typename F::MaterializeTag>;
        Kokkos::parallel_for("mosaic::block_materialize", streams(ExecSpace(), 0, batch_), f);
      }
    } else {
      f.gemm_materialize(0, batch_);
    }
    lap(&phases_.materialize);
  }
}

// The engines of the default execution space are compiled once, in
// engine_float.cpp and engine_double.cpp (the mosaic library); other spaces
// (the tests' Serial and OpenMP engines) are instantiated where they are used.
extern template class MosaicEngine<float, Kokkos::DefaultExecutionSpace>;
extern template class MosaicEngine<double, Kokkos::DefaultExecutionSpace>;

}  // namespace mosaic
