// The synthetic drifting anisotropic stream of ALGORITHM.md section 5 for a
// whole batch, generated on the device, and the accuracy of a batch of states
// against its closed-form truth.
//
// Each stream's truth (V0, W0, mean, noise std) is built on the execution
// space (build_truth): its pointwise parts by synthetic.hpp's functions, the
// ones the host truth make_synthetic_truth calls, and [V0 W0] as the Q
// factor of the same Gaussian matrix by Cholesky-QR (gemm and trsm, the
// vendor library's), where the host truth uses modified Gram-Schmidt: the two
// agree to rounding (test SyntheticSource.TruthMatchesTheHostTruth), and
// truths_on_host() copies this one back. The device generator (SynthFunctor)
// computes each element with the operations of synthetic_element()
// (synthetic.hpp), the host generator synthetic_sample() it is tested
// against, in the same order, with cos/sin(omega t) evaluated on the host and
// passed in, so on a host backend generate() is bitwise equal to
// synthetic_sample() on truths_on_host() (a GPU compiler may fuse a multiply
// and an add into one rounding, so there the last bits can differ). Stream
// s's sample at step t depends only on (seed, s, t): not on the batch or
// block it sits in. The kernels are in impl/synthetic_kernels.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <KokkosBlas3_trsm.hpp>
#include <Kokkos_Core.hpp>

#include "mosaic/algorithm/host_linalg.hpp"
#include "mosaic/algorithm/rounded.hpp"
#include "mosaic/algorithm/synthetic.hpp"
#include "mosaic/algorithm/tridiagonal_eigen.hpp"
#include "mosaic/engine/backend.hpp"
#include "mosaic/engine/batch_diagnostics.hpp"
#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/engine/transfer.hpp"
#include "mosaic/sources/impl/synthetic_kernels.hpp"
#include "mosaic/sources/stream_source.hpp"
#include "mosaic/util/host_parallel.hpp"
#include "mosaic/util/kokkos_compat.hpp"

namespace mosaic {

template <class Scalar, class ExecSpace = Kokkos::DefaultExecutionSpace>
class SyntheticDriftSource final : public StreamSource<Scalar, ExecSpace> {
 public:
  using execution_space = ExecSpace;
  using memory_space = typename ExecSpace::memory_space;
  // Samples on every backend with one row of d contiguous per stream and
  // sample: the generator's stores and the blocked pack's reads run along
  // it (coalesced on a device), and a stream's rows are one span to copy.
  using sample_view = Kokkos::View<Scalar**, Kokkos::LayoutRight, memory_space>;      // B x d
  using out_block_view = Kokkos::View<Scalar***, Kokkos::LayoutRight, memory_space>;  // B x n x d
  using typename StreamSource<Scalar, ExecSpace>::init_view;
  using typename StreamSource<Scalar, ExecSpace>::block_view;

  SyntheticDriftSource(const SyntheticSpec& spec, std::vector<std::uint64_t> stream_ids)
      : spec_(spec), ids_(std::move(stream_ids)) {
    spec_.validate();
    offsets_.assign(ids_.size(), 0);
    no_offsets_ = offsets_;
    offsets_d_ = offsets_view("synthetic::row_offsets", ids_.size());
    no_offsets_d_ = offsets_view("synthetic::no_row_offsets", ids_.size());
    build_truth();
    work_.reserve(batch(), spec_.r, 1);  // generate() allocates nothing
  }

  const SyntheticSpec& spec() const { return spec_; }
  int batch() const override { return int(ids_.size()); }
  std::string describe(int b) const override { return "stream " + std::to_string(ids_.at(std::size_t(b))); }
  const std::vector<std::uint64_t>& stream_ids() const { return ids_; }
  // max |[V0 W0]^T [V0 W0] - I| of each stream's truth, as its construction
  // measured it.
  const std::vector<double>& truth_orthonormality_error() const { return truth_orth_error_; }

  // Every stream's truth copied to the host (checks and tests; the run never
  // needs it there).
  std::vector<SyntheticTruth> truths_on_host() const {
    const int B = batch(), d = spec_.d, r = spec_.r;
    const auto hV = transfer::to_host(V0_);
    const auto hW = transfer::to_host(W0_);
    const auto hm = transfer::to_host(mean_);
    const auto hn = transfer::to_host(noise_std_);
    const auto hl = transfer::to_host(sqrt_lambda_);
    std::vector<SyntheticTruth> out(static_cast<std::size_t>(B));
    for (int b = 0; b < B; ++b) {
      SyntheticTruth& t = out[std::size_t(b)];
      t.d = d;
      t.r = r;
      t.V0.resize(std::size_t(d) * r);
      t.W0.resize(std::size_t(d) * r);
      for (int i = 0; i < d; ++i)
        for (int j = 0; j < r; ++j) {
          t.V0[std::size_t(i) * r + j] = hV(b, i, j);
          t.W0[std::size_t(i) * r + j] = hW(b, i, j);
        }
      t.sqrt_lambda.assign(hl.data(), hl.data() + r);
      for (int i = 0; i < d; ++i) {
        t.mean.push_back(hm(b, i));
        t.noise_std.push_back(hn(b, i));
      }
      t.noise_variance = noise_variance_[std::size_t(b)];
    }
    return out;
  }

  // X(b, :) = x_{step + offset_b} of stream b (set_row_offsets). No
  // allocation (one host-to-device copy of every stream's cos/sin).
  void generate(std::int64_t step, sample_view X) const {
    check(X.extent(0), X.extent(1), "generate");
    launch(step, offsets_, offsets_d_, 1, X, "mosaic::synthetic_generate", work_);
  }

  // X(b, k, :) = x_{first_step + offset_b + k} of stream b, k < n. Work
  // arrays grow to the largest n asked for and are reused.
  void generate_block(std::int64_t first_step, int n, out_block_view X) const {
    check_block(n, X, "generate_block");
    launch(first_step, offsets_, offsets_d_, n, X, "mosaic::synthetic_generate_block", work_);
  }

  // StreamSource: the samples are a pure function of (seed, stream, row), so
  // the streams have no end and the source has no position of its own. The
  // init block is rows [0, n) of every stream, whatever the offsets.
  std::int64_t rows(int) const override { return std::numeric_limits<std::int64_t>::max(); }
  void read_init(int n, init_view X) override {
    check_block(n, X, "read_init");
    launch(0, no_offsets_, no_offsets_d_, n, X, "mosaic::synthetic_generate_init", work_);
  }
  void set_row_offsets(const std::vector<std::int64_t>& offsets) override {
    if (int(offsets.size()) != batch())
      throw std::invalid_argument("SyntheticDriftSource::set_row_offsets: " + std::to_string(offsets.size()) +
                                  " offsets for " + std::to_string(batch()) + " streams");
    for (const std::int64_t o : offsets)
      if (o < 0) throw std::invalid_argument("SyntheticDriftSource::set_row_offsets: negative offset");
    offsets_ = offsets;
    auto h = transfer::host_buffer(offsets_d_);
    for (int b = 0; b < batch(); ++b) h(b) = std::uint64_t(offsets_[std::size_t(b)]);
    transfer::copy_from_host(offsets_d_, h);
  }
  // Generates rows [first, first + n) of stream b alone on the execution
  // space, by the kernels that make the run's rows (so they are those rows,
  // bit for bit), with work arrays of its own: the memory of one stream's n
  // rows, whatever the batch.
  void read_stream_rows(int b, std::int64_t first, int n, Scalar* out) override {
    if (b < 0 || b >= batch() || first < 0 || n < 1)
      throw std::invalid_argument("SyntheticDriftSource::read_stream_rows: stream " + std::to_string(b) + ", rows [" +
                                  std::to_string(first) + ", +" + std::to_string(n) + ")");
    const out_block_view X(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("synthetic::stream_rows")), 1, n,
                           spec_.d);
    LaunchWork work;
    work.reserve(1, spec_.r, n);
    launch(first, no_offsets_, no_offsets_d_, n, X, "mosaic::synthetic_generate_rows", work, b);
    const auto h = transfer::to_host(X);
    for (int k = 0; k < n; ++k)
      for (int i = 0; i < spec_.d; ++i) out[std::size_t(k) * spec_.d + i] = h(0, k, i);
  }
  block_view next_block(std::int64_t first, int max_n) override {
    if (int(block_.extent(1)) < max_n)
      block_ = out_block_view(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("synthetic::block")), batch(),
                              max_n, spec_.d);
    // A B x max_n x d view over the buffer's memory (LayoutRight: contiguous).
    const out_block_view X(block_.data(), batch(), max_n, spec_.d);
    generate_block(first, max_n, X);
    return X;
  }
  SourcePosition position_at(std::int64_t) const override { return {}; }
  void resume_at(std::int64_t, SourcePosition) override {}
  std::optional<SourceIoStats> io_report() override { return std::nullopt; }
  std::optional<TruthAccuracy> accuracy(const StreamBatch<Scalar, ExecSpace>& sb, std::int64_t step) const override {
    return truth_accuracy(sb, step);
  }

  // Accuracy of the batch's states against the truth at `step` (the step
  // index of the last sample consumed; stream b's truth at step + offset_b), on the execution space: P = U^T V(t)
  // by gemm over chunks of rows of U and of V(t) = cos(omega t) V0 +
  // sin(omega t) W0 in double (batch_diagnostics.hpp's basis_gram_rows), the
  // eigenvalues of S's symmetric part by QL per stream; the host gets P (B x
  // r x r) and the eigenvalues. A frozen (broken-down) stream is included
  // with its frozen state. With noise: diagonal (ALGORITHM.md 8.4) the
  // measures are in data coordinates: the rows of U scaled by sqrt(psi)
  // (B = Psi^1/2 U), the projector distance of span(B) (P = B^T V(t) and
  // G = B^T B = L L^T on the device, ||L^-1 P||_F^2 on the host), the
  // debiased spectrum as the eigenvalues of L^T (S - s2 I)_+ L (those of
  // B (S - s2 I)_+ B^T) and the noise estimate s2 mean(psi), per stream on
  // the host (r x r, at report time only).
  TruthAccuracy truth_accuracy(const StreamBatch<Scalar, ExecSpace>& sb, std::int64_t step) const {
    if (sb.batch != batch() || sb.d != spec_.d)
      throw std::invalid_argument("SyntheticDriftSource::accuracy: batch has B=" + std::to_string(sb.batch) +
                                  ", d=" + std::to_string(sb.d) + ", source has B=" + std::to_string(batch()) +
                                  ", d=" + std::to_string(spec_.d));
    using work_view = Kokkos::View<double***, Kokkos::LayoutRight, memory_space>;
    const int B = batch(), d = spec_.d, rs = spec_.r, rt = sb.r, k = std::min(rs, rt);
    const int rows = std::min(d, detail::basis_gram_rows);
    // cos/sin(omega t) of each stream's step, on the host (as the generator's).
    if (int(truth_cs_.extent(0)) != B)
      truth_cs_ = Kokkos::View<double**, Kokkos::LayoutRight, memory_space>("mosaic::truth_cos_sin", B, 2);
    auto cs_host = transfer::host_buffer(truth_cs_);
    for (int b = 0; b < B; ++b) {
      const double a = spec_.drift * double(step + offsets_[std::size_t(b)]);
      cs_host(b, 0) = std::cos(a);
      cs_host(b, 1) = std::sin(a);
    }
    transfer::copy_from_host(truth_cs_, cs_host);
    const Kokkos::View<double**, Kokkos::LayoutRight, memory_space> cs = truth_cs_;
    // Work arrays kept between calls (as the diagnostics' DiagnosticsWork).
    accuracy_work_.reserve(B, d, rt);
    if (int(truth_rows_.extent(1)) != rows || int(products_.extent(1)) != rt) {
      truth_rows_ =
          work_view(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("mosaic::truth_rows")), B, rows, rs);
      products_ =
          work_view(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("mosaic::truth_products")), B, rt, rs);
      converged_ = Kokkos::View<int*, Kokkos::LayoutRight, memory_space>("mosaic::truth_eigen_converged", B);
    }
    const work_view W = accuracy_work_.basis_rows, Vt = truth_rows_, P = products_;
    const basis_view V0 = V0_, W0 = W0_;
    const std::ptrdiff_t js = std::ptrdiff_t(V0.stride(2));
    for (int i0 = 0; i0 < d; i0 += rows) {
      const int n = std::min(rows, d - i0);
      detail::widen_basis_rows<decltype(sb.U), ExecSpace>(sb.U, i0, n, W);
      if (sb.diagonal_noise()) {
        const auto psi = sb.psi;
        Kokkos::parallel_for(
            "mosaic::truth_data_basis", Kokkos::RangePolicy<ExecSpace>(0, B * n), KOKKOS_LAMBDA(const int bi) {
              const int b = bi / n, i = bi % n;
              const double sq = kmath::sqrt(double(psi(b, i0 + i)));
              for (int j = 0; j < rt; ++j) W(b, i, j) *= sq;
            });
        detail::gemm_rows_per_stream<ExecSpace>(W, W, n, i0 == 0 ? 0.0 : 1.0, accuracy_work_.gram);
      }
      Kokkos::parallel_for(
          "mosaic::truth_basis_at", Kokkos::RangePolicy<ExecSpace>(0, B * n), KOKKOS_LAMBDA(const int bi) {
            const int b = bi / n, i = bi % n;
            const double c = cs(b, 0), s = cs(b, 1);
            const double* v = &V0(b, i0 + i, 0);
            const double* w = &W0(b, i0 + i, 0);
            double* out = &Vt(b, i, 0);
            // Unit stride (the host layout) as its own loop, as in
            // widen_basis_rows.
            if (js == 1)
              for (int j = 0; j < rs; ++j) out[j] = c * v[j] + s * w[j];
            else
              for (int j = 0; j < rs; ++j) out[j] = c * v[j * js] + s * w[j * js];
          });
      detail::gemm_rows_per_stream<ExecSpace>(W, Vt, n, i0 == 0 ? 0.0 : 1.0, P);
    }
    const work_view A = accuracy_work_.eigen_work, eig = accuracy_work_.eigen;
    const Kokkos::View<int*, Kokkos::LayoutRight, memory_space> converged = converged_;
    const auto S = sb.S;
    Kokkos::parallel_for(
        "mosaic::truth_spectrum", Kokkos::RangePolicy<ExecSpace>(0, B), KOKKOS_LAMBDA(const int b) {
          converged(b) = detail::symmetric_part_eigenvalues(Kokkos::subview(S, b, Kokkos::ALL(), Kokkos::ALL()),
                                                            Kokkos::subview(A, b, Kokkos::ALL(), Kokkos::ALL()),
                                                            Kokkos::subview(eig, b, 0, Kokkos::ALL()),
                                                            Kokkos::subview(eig, b, 1, Kokkos::ALL()), rt)
                             ? 1
                             : 0;
        });
    const auto hP = transfer::to_host(P);
    const auto hEig = transfer::to_host(eig);
    const auto hConv = transfer::to_host(converged);
    const auto hs2 = transfer::to_host(sb.s2);
    std::vector<double> lambda(k);
    double lnorm = 0;
    for (int j = 0; j < k; ++j) {
      lambda[j] = spec_.lambda(j);
      lnorm += lambda[j] * lambda[j];
    }
    lnorm = std::sqrt(lnorm);
    if (sb.diagonal_noise()) return data_coordinate_accuracy(sb, hP, lambda, lnorm);
    TruthAccuracy acc;
    for (int b = 0; b < B; ++b) {
      double pf = 0;
      for (int a = 0; a < rt; ++a)
        for (int j = 0; j < rs; ++j) pf += hP(b, a, j) * hP(b, a, j);
      const double proj = 1.0 - pf / double(k);
      const double noise_variance = noise_variance_[std::size_t(b)];
      const double noise = std::fabs(double(hs2(b)) - noise_variance) / noise_variance;
      // A non-finite S (the QL iteration does not converge) has no spectrum.
      double spec_err = std::numeric_limits<double>::quiet_NaN();
      if (hConv(b)) {
        // eig(b, 0, :) ascending: the j-th largest is rt - 1 - j.
        double diff = 0;
        for (int j = 0; j < k; ++j) {
          const double deb = std::max(hEig(b, 0, rt - 1 - j) - double(hs2(b)), 0.0);
          diff += (deb - lambda[j]) * (deb - lambda[j]);
        }
        spec_err = std::sqrt(diff) / lnorm;
      }
      acc.add_stream(proj, noise, spec_err, B);
    }
    return acc;
  }

 private:
  // truth_accuracy's measures in data coordinates (noise: diagonal), from
  // P = B^T V(t) and G = B^T B (both column-major per stream, on the
  // device in products_ and accuracy_work_.gram).
  template <class HostP>
  TruthAccuracy data_coordinate_accuracy(const StreamBatch<Scalar, ExecSpace>& sb, const HostP& hP,
                                         const std::vector<double>& lambda, double lnorm) const {
    const int B = batch(), d = spec_.d, rs = spec_.r, rt = sb.r, k = std::min(rs, rt);
    const auto hG = transfer::to_host(accuracy_work_.gram);
    const auto hS = transfer::to_host(sb.S);
    const auto hs2 = transfer::to_host(sb.s2);
    const auto hpsi = transfer::to_host(sb.psi);
    TruthAccuracy acc;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (int b = 0; b < B; ++b) {
      const double* P = hP.data() + std::size_t(b) * hP.stride(0);  // rt x rs, column-major
      const double* g = hG.data() + std::size_t(b) * hG.stride(0);
      std::vector<double> G(g, g + std::size_t(rt) * rt), L;
      double psi_mean = 0;
      for (int i = 0; i < d; ++i) psi_mean += double(hpsi(b, i)) / d;
      const double s2 = double(hs2(b)), noise_variance = noise_variance_[std::size_t(b)];
      const double noise = std::fabs(s2 * psi_mean - noise_variance) / noise_variance;
      if (!host::cholesky(G, rt, L)) {  // a frozen, non-finite basis has no data-coordinate subspace
        acc.add_stream(1.0, noise, nan, B);
        continue;
      }
      double pf = 0;  // ||L^-1 P||_F^2, column by column
      std::vector<double> y(static_cast<std::size_t>(rt));
      for (int j = 0; j < rs; ++j)
        for (int a = 0; a < rt; ++a) {
          double v = P[a + std::size_t(j) * rt];
          for (int c = 0; c < a; ++c) v -= L[std::size_t(a) * rt + c] * y[std::size_t(c)];
          y[std::size_t(a)] = v / L[std::size_t(a) * rt + a];
          pf += y[std::size_t(a)] * y[std::size_t(a)];
        }
      // (S - s2 I)_+ = Q (Lambda - s2)_+ Q^T, then L^T (S - s2 I)_+ L.
      std::vector<double> Sb(std::size_t(rt) * rt), ls, Q;
      for (int a = 0; a < rt; ++a)
        for (int c = 0; c < rt; ++c) Sb[std::size_t(a) * rt + c] = 0.5 * (double(hS(b, a, c)) + double(hS(b, c, a)));
      host::symmetric_eigen(Sb, rt, ls, Q);
      std::vector<double> QL(std::size_t(rt) * rt, 0.0), M(std::size_t(rt) * rt, 0.0), ev, vec;
      for (int c = 0; c < rt; ++c)  // QL = Q^T L scaled by sqrt((lambda_c - s2)_+) per row c
        for (int j = 0; j < rt; ++j) {
          double v = 0;
          for (int a = j; a < rt; ++a) v += Q[std::size_t(a) * rt + c] * L[std::size_t(a) * rt + j];
          QL[std::size_t(c) * rt + j] = v * std::sqrt(std::max(ls[std::size_t(c)] - s2, 0.0));
        }
      for (int a = 0; a < rt; ++a)
        for (int j = 0; j < rt; ++j) {
          double v = 0;
          for (int c = 0; c < rt; ++c) v += QL[std::size_t(c) * rt + a] * QL[std::size_t(c) * rt + j];
          M[std::size_t(a) * rt + j] = v;
        }
      host::symmetric_eigen(M, rt, ev, vec);  // descending
      double diff = 0;
      for (int j = 0; j < k; ++j) diff += (ev[std::size_t(j)] - lambda[j]) * (ev[std::size_t(j)] - lambda[j]);
      acc.add_stream(1.0 - pf / double(k), noise, std::sqrt(diff) / lnorm, B);
    }
    return acc;
  }

  using basis_view = Kokkos::View<double***, Kokkos::LayoutStride, memory_space>;
  using mat_view = Kokkos::View<double**, Kokkos::LayoutRight, memory_space>;
  using offsets_view = Kokkos::View<std::uint64_t*, Kokkos::LayoutRight, memory_space>;

  // The truth on the execution space (file comment): Q = the Gaussian
  // matrix, rows padded to the generator's groups of 4 (zero past d), its
  // columns orthonormalized in place; V0 and W0 are its first and last r
  // columns.
  void build_truth() {
    const int B = batch(), d = spec_.d, r = spec_.r, k = 2 * r;
    const int d_pad = (d + 3) / 4 * 4;
    const basis_view Q(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("synthetic::V0_W0")),
                       BasisLayout<ExecSpace>::layout(B, d_pad, k));
    mean_ = mat_view("synthetic::mean", B, d_pad);
    noise_std_ = mat_view("synthetic::noise_std", B, d_pad);
    sqrt_lambda_ = decltype(sqrt_lambda_)("synthetic::sqrt_lambda", r);
    ids_d_ = decltype(ids_d_)("synthetic::ids", B);
    {
      const auto hl = transfer::host_buffer(sqrt_lambda_);
      const auto hi = transfer::host_buffer(ids_d_);
      for (int j = 0; j < r; ++j) hl(j) = std::sqrt(spec_.lambda(j));
      for (int b = 0; b < B; ++b) hi(b) = ids_[std::size_t(b)];
      transfer::copy_from_host(sqrt_lambda_, hl);
      transfer::copy_from_host(ids_d_, hi);
    }
    detail::fill_truth_entries<ExecSpace>(spec_, ids_d_, Q, mean_, noise_std_);
    truth_orth_error_ = detail::cholesky_qr_per_stream<ExecSpace>(Q, d, ids_);
    V0_ = Kokkos::subview(Q, Kokkos::ALL(), Kokkos::ALL(), Kokkos::pair<int, int>(0, r));
    W0_ = Kokkos::subview(Q, Kokkos::ALL(), Kokkos::ALL(), Kokkos::pair<int, int>(r, k));
    const auto hn = transfer::to_host(noise_std_);
    noise_variance_.resize(std::size_t(B));
    for (int b = 0; b < B; ++b) noise_variance_[std::size_t(b)] = synthetic_noise_variance(stream_block_data(hn, b), d);
  }

  // Samples per generator pass (its tile width): the latents are padded to a
  // multiple of it.
  static constexpr int samples_per_pass = Tuning<ExecSpace>::synthetic_samples_per_pass;
  static int padded(int n) { return (n + samples_per_pass - 1) / samples_per_pass * samples_per_pass; }

  void check_block(int n, const out_block_view& X, const char* what) const {
    if (n < 1 || int(X.extent(1)) != n)
      throw std::invalid_argument(std::string("SyntheticDriftSource::") + what +
                                  ": X must be B x n x d with n = " + std::to_string(n));
    check(X.extent(0), X.extent(2), what);
    work_.reserve(batch(), spec_.r, n);
  }

  // The work arrays of one launch: cos/sin(omega t) of every stream's
  // samples (on the host, where they are evaluated, and on the execution
  // space) and the drift-scaled latents (streams x 2r x n_pad).
  struct LaunchWork {
    Kokkos::View<double***, Kokkos::LayoutRight, memory_space> cs;
    transfer::HostCopy<Kokkos::View<double***, Kokkos::LayoutRight, memory_space>> cs_host;
    Kokkos::View<double***, Kokkos::LayoutRight, memory_space> latent;
    // For `streams` streams of n samples: grown, never shrunk.
    void reserve(int streams, int r, int n) {
      if (int(cs.extent(0)) >= streams && int(cs.extent(2)) >= n) return;
      cs = Kokkos::View<double***, Kokkos::LayoutRight, memory_space>("synthetic::cs_block", streams, 2, n);
      cs_host = transfer::host_buffer(cs);
      latent = Kokkos::View<double***, Kokkos::LayoutRight, memory_space>("synthetic::latent_block", streams, 2 * r,
                                                                          padded(n));
    }
  };

  // Samples first_step + offsets[b] .. + n - 1 of the streams b0 ..
  // b0 + X.extent(0) - 1 into X (n <= the work arrays' capacity; offsets_d:
  // the same offsets on the execution space, copied when they were set):
  // cos/sin(omega t) evaluated on the host (see the file comment; once for
  // streams at the offset of the one before), the drift-scaled latents, then
  // the samples. The kernels see the streams' slices of the truth.
  template <class OutView>
  void launch(std::int64_t first_step, const std::vector<std::int64_t>& offsets, const offsets_view& offsets_d, int n,
              const OutView& X, const char* label, LaunchWork& work, int b0 = 0) const {
    const int streams = int(X.extent(0));
    for (int b = 0; b < streams; ++b)
      for (int k = 0; k < n; ++k) {
        if (b > 0 && offsets[std::size_t(b0 + b)] == offsets[std::size_t(b0 + b) - 1]) {
          work.cs_host(b, 0, k) = work.cs_host(b - 1, 0, k);
          work.cs_host(b, 1, k) = work.cs_host(b - 1, 1, k);
          continue;
        }
        const double a =
            spec_.drift * double(std::uint64_t(first_step + offsets[std::size_t(b0 + b)]) + std::uint64_t(k));
        work.cs_host(b, 0, k) = std::cos(a);
        work.cs_host(b, 1, k) = std::sin(a);
      }
    transfer::copy_from_host(work.cs, work.cs_host);
    const int n_pad = padded(n);
    // A streams x 2r x n_pad view over the work array's memory (LayoutRight).
    const Kokkos::View<double***, Kokkos::LayoutRight, memory_space> latent(work.latent.data(), streams, 2 * spec_.r,
                                                                            n_pad);
    const auto range = std::make_pair(b0, b0 + streams);
    const auto ids = Kokkos::subview(ids_d_, range);
    const auto offs = Kokkos::subview(offsets_d, range);
    Kokkos::parallel_for("mosaic::synthetic_latent", Kokkos::RangePolicy<ExecSpace>(0, streams * spec_.r * n_pad),
                         detail::SynthLatentFunctor<ExecSpace>{spec_, sqrt_lambda_, ids, offs, work.cs, latent,
                                                               std::uint64_t(first_step), n, n_pad});
    const int groups = (spec_.d + 3) / 4;
    const auto all = Kokkos::ALL();
    Kokkos::parallel_for(label, Kokkos::RangePolicy<ExecSpace>(0, streams * groups),
                         detail::SynthFunctor<Scalar, ExecSpace, OutView>{
                             spec_, Kokkos::subview(V0_, range, all, all), Kokkos::subview(W0_, range, all, all),
                             Kokkos::subview(mean_, range, all), Kokkos::subview(noise_std_, range, all), latent, ids,
                             offs, X, std::uint64_t(first_step), n, groups, spec_.missing.any()});
  }

  void check(std::size_t b, std::size_t d, const char* what) const {
    if (int(b) != batch() || int(d) != spec_.d)
      throw std::invalid_argument(std::string("SyntheticDriftSource::") + what + ": X is " + std::to_string(b) +
                                  " x .. x " + std::to_string(d) + ", expected B=" + std::to_string(batch()) +
                                  ", d=" + std::to_string(spec_.d));
  }

  SyntheticSpec spec_;
  std::vector<std::uint64_t> ids_;
  basis_view V0_, W0_;                    // the first and last r columns of one B x d_pad x 2r array
  std::vector<double> noise_variance_;    // per stream: what s2 should estimate
  std::vector<double> truth_orth_error_;  // per stream: max |[V0 W0]^T [V0 W0] - I|
  mat_view mean_, noise_std_;
  Kokkos::View<double*, Kokkos::LayoutRight, memory_space> sqrt_lambda_;
  Kokkos::View<std::uint64_t*, Kokkos::LayoutRight, memory_space> ids_d_;
  // Per stream: set_row_offsets' offsets (zero until set), on the host and
  // the execution space; and zeros (read_init, read_stream_rows).
  std::vector<std::int64_t> offsets_, no_offsets_;
  offsets_view offsets_d_, no_offsets_d_;
  // The work arrays of generate / generate_block (grown on demand) and
  // next_block's buffer.
  mutable LaunchWork work_;
  out_block_view block_;
  // truth_accuracy's work arrays: the rows of U widened and their eigenvalue
  // work (the diagnostics' kind), the rows of V(t), U^T V(t).
  mutable DiagnosticsWork<ExecSpace> accuracy_work_;
  mutable Kokkos::View<double***, Kokkos::LayoutRight, memory_space> truth_rows_, products_;
  mutable Kokkos::View<int*, Kokkos::LayoutRight, memory_space> converged_;
  mutable Kokkos::View<double**, Kokkos::LayoutRight, memory_space> truth_cs_;  // B x 2: cos, sin of each stream's step
};

}  // namespace mosaic
