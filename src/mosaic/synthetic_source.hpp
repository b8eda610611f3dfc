// The synthetic drifting anisotropic stream of ALGORITHM.md section 5 for a
// whole batch, generated on the device, and the accuracy of a batch of states
// against its closed-form truth.
//
// Each stream's truth (V0, W0, mean, noise std) is built once on the host by
// make_synthetic_truth and copied to the device. The device generator
// (SynthFunctor) computes each element with the operations of
// synthetic_element() (synthetic.hpp), the host generator synthetic_sample()
// it is tested against, in the same order, with cos/sin(omega t) evaluated
// on the host and passed in, so on a host backend generate() is bitwise
// equal to synthetic_sample() (on a GPU the counter-based normals go through
// the device's log/sin/cos and can differ in the last bits). Stream s's
// sample at step t depends only on (seed, s, t): not on the batch or block
// it sits in.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

#include "backend.hpp"
#include "host_linalg.hpp"
#include "host_parallel.hpp"
#include "stream_batch.hpp"
#include "stream_source.hpp"
#include "synthetic.hpp"
#include "tridiagonal_eigen.hpp"

namespace mosaic {

namespace detail {

// The scaled latents of samples first_step .. first_step + n - 1 of every
// stream: latent(b, j, k) = sqrt(lambda_j) a_j of sample k (B x r x n, so
// that the generator's inner loop over samples is at unit stride).
template <class ExecSpace>
struct SynthLatentFunctor {
  using memory_space = typename ExecSpace::memory_space;
  SyntheticSpec spec;
  Kokkos::View<double*, memory_space> sqrt_lambda;               // r
  Kokkos::View<std::uint64_t*, memory_space> ids;                // B
  Kokkos::View<double***, Kokkos::LayoutRight, memory_space> latent;
  std::uint64_t first_step = 0;
  int n = 1;

  KOKKOS_INLINE_FUNCTION void operator()(const int item) const {
    const int k = item % n, j = (item / n) % spec.r, b = item / (n * spec.r);
    latent(b, j, k) = sqrt_lambda(j) * synthetic_latent(spec, ids(b), first_step + std::uint64_t(k), j);
  }
};

// Writes samples first_step .. first_step + n - 1 of every stream: Out is
// B x d (n == 1) or B x n x d. Work item (b, g) makes rows 4g .. 4g + 3 of
// stream b for all n samples, kc samples per pass. Each element is
// synthetic_element's formula with its operations in its order (the mean,
// then + (cos V0_ij + sin W0_ij) sqrt(lambda_j) a_j for j = 0 .. r - 1, then
// + noise std x noise), so the samples are bitwise those of the host
// generator synthetic_sample (test SyntheticSource.DeviceEqualsHostBitwise-
// InDouble); the loops are reordered so that a row of V0 and W0 is read once
// per kc samples instead of once per sample, the innermost loop runs over
// the samples at unit stride (it vectorizes), and one Philox call gives the
// noise of the 4 rows (counter_normal4) instead of one each.
template <class Scalar, class ExecSpace, class OutView>
struct SynthFunctor {
  using memory_space = typename ExecSpace::memory_space;
  using basis_view = Kokkos::View<double***, Kokkos::LayoutStride, memory_space>;
  using mat_view = Kokkos::View<double**, Kokkos::LayoutRight, memory_space>;
  static constexpr int rows = 4;  // the noise indices of one Philox call
  static constexpr int kc = Tuning<ExecSpace>::synthetic_samples_per_pass;

  SyntheticSpec spec;
  basis_view V0, W0;
  mat_view mean, noise_std;                                      // B x d
  Kokkos::View<double***, Kokkos::LayoutRight, memory_space> latent;  // B x r x (>= n)
  mat_view cs;                                                   // 2 x (>= n): cos, sin (omega step)
  Kokkos::View<std::uint64_t*, memory_space> ids;                // B
  OutView X;
  std::uint64_t first_step = 0;
  int n = 1, groups = 0;  // groups = ceil(d / 4)

  KOKKOS_INLINE_FUNCTION void store(int b, int k, int i, double v) const {
    if constexpr (OutView::rank == 2) {
      X(b, i) = Scalar(v);
      (void)k;
    } else {
      X(b, k, i) = Scalar(v);
    }
  }

  KOKKOS_INLINE_FUNCTION void operator()(const int item) const {
    const int b = item / groups, g = item % groups;
    const int i0 = rows * g, nr = spec.d - i0 < rows ? spec.d - i0 : rows;
    const std::uint64_t id = ids(b);
    for (int k0 = 0; k0 < n; k0 += kc) {
      const int nk = n - k0 < kc ? n - k0 : kc;
      const double* c = &cs(0, k0);
      const double* s = &cs(1, k0);
      double acc[rows][kc];
      for (int q = 0; q < nr; ++q) {
        const double m = mean(b, i0 + q);
        for (int kk = 0; kk < nk; ++kk) acc[q][kk] = m;
      }
      for (int j = 0; j < spec.r; ++j) {
        const double* a = &latent(b, j, k0);
        for (int q = 0; q < nr; ++q) {
          const double v = V0(b, i0 + q, j), w = W0(b, i0 + q, j);
          for (int kk = 0; kk < nk; ++kk) acc[q][kk] += (c[kk] * v + s[kk] * w) * a[kk];
        }
      }
      for (int kk = 0; kk < nk; ++kk) {
        double z[rows];
        counter_normal4(spec.seed, RngDomain::noise, id, first_step + std::uint64_t(k0 + kk), std::uint64_t(g), z);
        for (int q = 0; q < nr; ++q) store(b, k0 + kk, i0 + q, acc[q][kk] + noise_std(b, i0 + q) * z[q]);
      }
    }
  }
};

}  // namespace detail

template <class Scalar, class ExecSpace = Kokkos::DefaultExecutionSpace>
class SyntheticDriftSource final : public StreamSource<Scalar, ExecSpace> {
 public:
  using execution_space = ExecSpace;
  using memory_space = typename ExecSpace::memory_space;
  using sample_view = Kokkos::View<Scalar**, memory_space>;   // B x d
  using out_block_view = Kokkos::View<Scalar***, memory_space>;  // B x n x d
  using typename StreamSource<Scalar, ExecSpace>::init_view;
  using typename StreamSource<Scalar, ExecSpace>::block_view;

  SyntheticDriftSource(const SyntheticSpec& spec, std::vector<std::uint64_t> stream_ids)
      : spec_(spec), ids_(std::move(stream_ids)) {
    spec_.validate();
    if (ids_.empty()) throw std::invalid_argument("SyntheticDriftSource: no streams");
    const int B = int(ids_.size()), d = spec_.d, r = spec_.r;
    // The truths are independent pure functions of (spec, id): built on the
    // host's threads, one stream each.
    truths_.resize(ids_.size());
    host_parallel_for("mosaic::synthetic_truth", B,
                      [&](const int b) { truths_[std::size_t(b)] = make_synthetic_truth(spec_, ids_[std::size_t(b)]); });
    V0_ = basis_view(Kokkos::view_alloc(std::string("synthetic::V0")),
                     BasisLayout<ExecSpace>::layout(B, d, r));
    W0_ = basis_view(Kokkos::view_alloc(std::string("synthetic::W0")),
                     BasisLayout<ExecSpace>::layout(B, d, r));
    mean_ = mat_view("synthetic::mean", B, d);
    noise_std_ = mat_view("synthetic::noise_std", B, d);
    sqrt_lambda_ = Kokkos::View<double*, memory_space>("synthetic::sqrt_lambda", r);
    ids_d_ = Kokkos::View<std::uint64_t*, memory_space>("synthetic::ids", B);
    auto hV = Kokkos::create_mirror_view(V0_);
    auto hW = Kokkos::create_mirror_view(W0_);
    auto hm = Kokkos::create_mirror_view(mean_);
    auto hn = Kokkos::create_mirror_view(noise_std_);
    auto hl = Kokkos::create_mirror_view(sqrt_lambda_);
    auto hi = Kokkos::create_mirror_view(ids_d_);
    for (int b = 0; b < B; ++b) {
      const SyntheticTruth& t = truths_[b];
      for (int i = 0; i < d; ++i) {
        for (int j = 0; j < r; ++j) {
          hV(b, i, j) = t.V0[std::size_t(i) * r + j];
          hW(b, i, j) = t.W0[std::size_t(i) * r + j];
        }
        hm(b, i) = t.mean[i];
        hn(b, i) = t.noise_std[i];
      }
      hi(b) = ids_[b];
    }
    for (int j = 0; j < r; ++j) hl(j) = truths_[0].sqrt_lambda[j];
    Kokkos::deep_copy(V0_, hV);
    Kokkos::deep_copy(W0_, hW);
    Kokkos::deep_copy(mean_, hm);
    Kokkos::deep_copy(noise_std_, hn);
    Kokkos::deep_copy(sqrt_lambda_, hl);
    Kokkos::deep_copy(ids_d_, hi);
    reserve_block(1);  // generate() allocates nothing
  }

  const SyntheticSpec& spec() const { return spec_; }
  int batch() const override { return int(ids_.size()); }
  std::string describe(int b) const override { return "stream " + std::to_string(ids_.at(std::size_t(b))); }
  const std::vector<std::uint64_t>& stream_ids() const { return ids_; }
  const std::vector<SyntheticTruth>& truths() const { return truths_; }

  // X(b, :) = x_step of stream b. No allocation (one 2-double host-to-device
  // copy of cos/sin(omega step)).
  void generate(std::int64_t step, sample_view X) const {
    check(X.extent(0), X.extent(1), "generate");
    launch(std::uint64_t(step), 1, X, "mosaic::synthetic_generate");
  }

  // X(b, k, :) = x_{first_step + k} of stream b, k < n. Work arrays grow
  // to the largest n asked for and are reused.
  void generate_block(std::int64_t first_step, int n, out_block_view X) const {
    if (n < 1 || int(X.extent(1)) != n)
      throw std::invalid_argument("SyntheticDriftSource::generate_block: X must be B x n x d with n = " +
                                  std::to_string(n));
    check(X.extent(0), X.extent(2), "generate_block");
    reserve_block(n);
    launch(std::uint64_t(first_step), n, X, "mosaic::synthetic_generate_block");
  }

  // StreamSource: the samples are a pure function of (seed, stream, row), so
  // the source has no position of its own.
  void read_init(int n, init_view X) override { generate_block(0, n, X); }
  block_view next_block(std::int64_t first, int max_n) override {
    if (int(block_.extent(1)) < max_n)
      block_ = out_block_view(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("synthetic::block")),
                              batch(), max_n, spec_.d);
    // A B x max_n x d view over the buffer's memory (contiguous in either layout).
    const out_block_view X(block_.data(), batch(), max_n, spec_.d);
    generate_block(first, max_n, X);
    return X;
  }
  SourcePosition position_at(std::int64_t) const override { return {}; }
  void resume_at(std::int64_t, SourcePosition) override {}
  std::optional<SourceIoStats> io_report() override { return std::nullopt; }
  std::optional<TruthAccuracy> accuracy(const StreamBatch<Scalar, ExecSpace>& sb,
                                        std::int64_t step) const override {
    return truth_accuracy(sb, step);
  }

  // Accuracy of the batch's states against the truth at `step` (the step
  // index of the last sample consumed). Host-side: copies the states out,
  // then one host thread per stream. A frozen (broken-down) stream is
  // included with its frozen state.
  TruthAccuracy truth_accuracy(const StreamBatch<Scalar, ExecSpace>& sb, std::int64_t step) const {
    if (sb.batch != batch() || sb.d != spec_.d)
      throw std::invalid_argument("SyntheticDriftSource::accuracy: batch has B=" +
                                  std::to_string(sb.batch) + ", d=" + std::to_string(sb.d) +
                                  ", source has B=" + std::to_string(batch()) +
                                  ", d=" + std::to_string(spec_.d));
    const int d = spec_.d, rs = spec_.r, rt = sb.r, k = std::min(rs, rt);
    TruthAccuracy acc;
    std::vector<double> lambda(k);
    double lnorm = 0;
    for (int j = 0; j < k; ++j) {
      lambda[j] = spec_.lambda(j);
      lnorm += lambda[j] * lambda[j];
    }
    lnorm = std::sqrt(lnorm);
    std::vector<ReferenceState<Scalar>> states;
    for (int b = 0; b < batch(); ++b) states.push_back(sb.to_host(b));
    const std::size_t B = std::size_t(batch());
    std::vector<double> projs(B), noises(B), spec_errs(B);
    host_parallel_for("mosaic::truth_accuracy", batch(), [&](const int b) {
      const ReferenceState<Scalar>& st = states[std::size_t(b)];
      const SyntheticTruth& t = truths_[std::size_t(b)];
      const std::vector<double> V = t.basis_at(spec_, std::uint64_t(step));
      // P = U^T V(t), each entry summed over i in increasing order, at unit
      // stride; four rows i per pass over P, each added in its turn (the
      // same sums, a quarter of the loads and stores of P).
      std::vector<double> P(std::size_t(rt) * rs, 0.0);
      int i = 0;
      for (; i + 4 <= d; i += 4) {
        const double* v0 = &V[std::size_t(i) * rs];
        const double *v1 = v0 + rs, *v2 = v1 + rs, *v3 = v2 + rs;
        for (int a = 0; a < rt; ++a) {
          const double u0 = double(st.u(i, a)), u1 = double(st.u(i + 1, a)), u2 = double(st.u(i + 2, a)),
                       u3 = double(st.u(i + 3, a));
          double* pa = &P[std::size_t(a) * rs];
          for (int c = 0; c < rs; ++c) {
            double p = pa[c];
            p += u0 * v0[c];
            p += u1 * v1[c];
            p += u2 * v2[c];
            p += u3 * v3[c];
            pa[c] = p;
          }
        }
      }
      for (; i < d; ++i)
        for (int a = 0; a < rt; ++a) {
          const double u = double(st.u(i, a));
          for (int c = 0; c < rs; ++c) P[std::size_t(a) * rs + c] += u * V[std::size_t(i) * rs + c];
        }
      double pf = 0;
      for (const double p : P) pf += p * p;
      projs[std::size_t(b)] = 1.0 - pf / double(k);
      noises[std::size_t(b)] = std::fabs(double(st.s2) - t.noise_variance) / t.noise_variance;
      std::vector<double> ev, vec;
      if (!host::tridiagonal_eigen(std::vector<double>(st.S.begin(), st.S.end()), rt, ev, vec)) {
        spec_errs[std::size_t(b)] = std::numeric_limits<double>::quiet_NaN();  // a non-finite S
        return;
      }
      double diff = 0;
      for (int j = 0; j < k; ++j) {
        const double deb = std::max(ev[j] - double(st.s2), 0.0);
        diff += (deb - lambda[j]) * (deb - lambda[j]);
      }
      spec_errs[std::size_t(b)] = std::sqrt(diff) / lnorm;
    });
    for (int b = 0; b < batch(); ++b) {
      const double proj = projs[std::size_t(b)], noise = noises[std::size_t(b)], spec_err = spec_errs[std::size_t(b)];
      acc.projector_distance_max = std::max(acc.projector_distance_max, proj);
      acc.noise_rel_error_max = std::max(acc.noise_rel_error_max, noise);
      acc.spectrum_rel_error_max = std::max(acc.spectrum_rel_error_max, spec_err);
      acc.projector_distance_mean += proj / batch();
      acc.noise_rel_error_mean += noise / batch();
      acc.spectrum_rel_error_mean += spec_err / batch();
    }
    return acc;
  }

 private:
  using basis_view = Kokkos::View<double***, Kokkos::LayoutStride, memory_space>;
  using mat_view = Kokkos::View<double**, Kokkos::LayoutRight, memory_space>;

  // The cos/sin and latent work arrays of generate_block for n samples.
  void reserve_block(int n) const {
    if (int(csb_.extent(1)) >= n) return;
    csb_ = Kokkos::View<double**, Kokkos::LayoutRight, memory_space>("synthetic::cs_block", 2, n);
    csb_host_ = Kokkos::create_mirror_view(csb_);
    latentb_ = Kokkos::View<double***, Kokkos::LayoutRight, memory_space>("synthetic::latent_block", batch(),
                                                                           spec_.r, n);
  }

  // Samples first_step .. first_step + n - 1 of every stream into X (n <= the
  // work arrays' capacity): cos/sin(omega t) evaluated on the host (see the
  // file comment), the scaled latents, then the samples.
  template <class OutView>
  void launch(std::uint64_t first_step, int n, const OutView& X, const char* label) const {
    for (int k = 0; k < n; ++k) {
      const double a = spec_.drift * double(first_step + std::uint64_t(k));
      csb_host_(0, k) = std::cos(a);
      csb_host_(1, k) = std::sin(a);
    }
    Kokkos::deep_copy(csb_, csb_host_);
    Kokkos::parallel_for("mosaic::synthetic_latent", Kokkos::RangePolicy<ExecSpace>(0, batch() * spec_.r * n),
                         detail::SynthLatentFunctor<ExecSpace>{spec_, sqrt_lambda_, ids_d_, latentb_, first_step, n});
    const int groups = (spec_.d + 3) / 4;
    Kokkos::parallel_for(label, Kokkos::RangePolicy<ExecSpace>(0, batch() * groups),
                         detail::SynthFunctor<Scalar, ExecSpace, OutView>{spec_, V0_, W0_, mean_, noise_std_, latentb_,
                                                                          csb_, ids_d_, X, first_step, n, groups});
  }

  void check(std::size_t b, std::size_t d, const char* what) const {
    if (int(b) != batch() || int(d) != spec_.d)
      throw std::invalid_argument(std::string("SyntheticDriftSource::") + what + ": X is " +
                                  std::to_string(b) + " x .. x " + std::to_string(d) +
                                  ", expected B=" + std::to_string(batch()) +
                                  ", d=" + std::to_string(spec_.d));
  }

  SyntheticSpec spec_;
  std::vector<std::uint64_t> ids_;
  std::vector<SyntheticTruth> truths_;
  basis_view V0_, W0_;
  mat_view mean_, noise_std_;
  Kokkos::View<double*, memory_space> sqrt_lambda_;
  Kokkos::View<std::uint64_t*, memory_space> ids_d_;
  // The work arrays of generate / generate_block (grown on demand) and
  // next_block's buffer.
  mutable Kokkos::View<double**, Kokkos::LayoutRight, memory_space> csb_;
  mutable typename Kokkos::View<double**, Kokkos::LayoutRight, memory_space>::host_mirror_type csb_host_;
  mutable Kokkos::View<double***, Kokkos::LayoutRight, memory_space> latentb_;
  out_block_view block_;
};

}  // namespace mosaic
