// The states of a batch of B independent MOSAIC streams (ALGORITHM.md
// section 1), resident in the memory of one Kokkos execution space.
//
// Memory layout (one team per stream works on one stream at a time):
//   mu  B x d      LayoutRight: a stream's mean is contiguous, and the team's
//                  threads over i read consecutive addresses (coalesced).
//   S   B x r x r  LayoutRight: a stream's r x r block is contiguous.
//   U   B x d x r  LayoutStride, always indexed U(b, i, j), each stream's
//                  d x r block contiguous, with the order *inside* the block
//                  chosen per execution space by BasisLayout below:
//     - host spaces (Serial, OpenMP, Threads): row-major inside the stream,
//       U(b,i,j) at b*d*r + i*r + j. The engine's hot loops walk a row i and
//       run over j (dot product with a length-r vector, rank-one row
//       update), so the inner loop is unit-stride and vectorizes, and a team
//       thread owning a block of rows streams through contiguous memory.
//     - device spaces (anything that cannot touch host memory, e.g. Cuda,
//       HIP): column-major inside the stream ("column j of U contiguous"),
//       U(b,i,j) at b*d*r + j*d + i. There the team's threads run over i,
//       so at fixed j consecutive threads read consecutive addresses and
//       every pass over U is coalesced. LayoutRight B x d x r would make
//       neighbouring threads stride by r instead.
// Both cases are the same View type, so every kernel is written once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <Kokkos_Core.hpp>

#include "mosaic/algorithm/reference.hpp"
#include "mosaic/algorithm/reference_masked.hpp"
#include "mosaic/engine/backend.hpp"
#include "mosaic/engine/transfer.hpp"

namespace mosaic {

// Storage order of U inside one stream for an execution space.
template <class ExecSpace>
struct BasisLayout {
  // True where the execution space is a GPU-like device (it cannot read host
  // memory): then column-major within the stream, else row-major.
  static constexpr bool column_major = !is_host_space<ExecSpace>;

  static Kokkos::LayoutStride layout(int batch, int d, int r) {
    const std::size_t per = std::size_t(d) * std::size_t(r);
    return column_major ? Kokkos::LayoutStride(batch, per, d, 1, r, std::size_t(d))
                        : Kokkos::LayoutStride(batch, per, d, std::size_t(r), r, 1);
  }
};

// The first element of stream b's block of a batch View whose leading index
// is the stream (U, mu, S, ...): host code takes it with data() and the
// stride, never by evaluating the View at (b, 0, ...), which on a device
// aborts from host code.
template <class V>
KOKKOS_INLINE_FUNCTION typename V::pointer_type stream_block_data(const V& v, int b) {
  return v.data() + std::size_t(b) * std::size_t(v.stride(0));
}

// Stream status codes (0 = healthy; anything else freezes the stream). All
// but stream_ended are breakdowns; stream_ended is the normal end of a
// stream whose data ran out before the run's last step (run.steps: all over
// files of unequal length, app/stream_ends.hpp): its state is final, not
// broken.
enum BreakdownCode : int {
  breakdown_none = 0,
  breakdown_nonfinite_sample = 1,     // the sample had a NaN/Inf entry
  breakdown_s_not_spd = 2,            // S failed to factor (non-positive or non-finite LU pivot)
  breakdown_regularized_not_spd = 3,  // S + gamma s2 I failed to factor
  breakdown_nonfinite_update = 4,     // the step would have produced non-finite numbers
  breakdown_reorthonormalize = 5,     // U^T U failed to factor during Cholesky-QR
  stream_ended = 6,                   // the stream's data ended (not a breakdown)
};

inline const char* breakdown_name(int code) {
  switch (code) {
    case breakdown_none: return "none";
    case breakdown_nonfinite_sample: return "nonfinite_sample";
    case breakdown_s_not_spd: return "S_not_spd";
    case breakdown_regularized_not_spd: return "S_plus_gamma_s2_not_spd";
    case breakdown_nonfinite_update: return "nonfinite_update";
    case breakdown_reorthonormalize: return "reorthonormalize_failed";
    case stream_ended: return "stream_ended";
    default: return "unknown";
  }
}

template <class Scalar, class ExecSpace = Kokkos::DefaultExecutionSpace>
struct StreamBatch {
  using execution_space = ExecSpace;
  using memory_space = typename ExecSpace::memory_space;
  using scalar_type = Scalar;
  using basis_view = Kokkos::View<Scalar***, Kokkos::LayoutStride, memory_space>;

  int batch = 0, d = 0, r = 0;
  Kokkos::View<Scalar**, Kokkos::LayoutRight, memory_space> mu;  // B x d
  basis_view U;                                                  // B x d x r (see above)
  Kokkos::View<Scalar***, Kokkos::LayoutRight, memory_space> S;  // B x r x r
  Kokkos::View<Scalar*, Kokkos::LayoutRight, memory_space> s2;   // B
  // steps: MOSAIC steps taken (init samples excluded); clamped_steps: steps
  // whose covariance step was shortened to max_step; breakdown_step: value
  // of `steps` when the stream broke down (the 0-based index of the failed
  // step), -1 while healthy; reorthonormalizations: Cholesky-QR passes done;
  // unresolved_residual_steps: blocked steps whose rho^2 from the
  // coefficients was below 64 eps ||y||^2 (residual at rounding level,
  // ALGORITHM.md section 6; always 0 for the sequential kernel, which
  // computes e directly); residual_recomputations: those of them whose
  // rho^2 was recomputed from the explicit residual (section 6's resolve
  // rule: every one, counted where it is done).
  Kokkos::View<std::int64_t*, Kokkos::LayoutRight, memory_space> steps, clamped_steps, breakdown_step,
      reorthonormalizations, unresolved_residual_steps, residual_recomputations;
  Kokkos::View<int*, Kokkos::LayoutRight, memory_space> status;  // BreakdownCode; nonzero = frozen
  // Running sums of section 4's prequential accuracy, B x preq_columns
  // (algorithm/prequential.hpp), in double whatever Scalar is.
  Kokkos::View<double**, Kokkos::LayoutRight, memory_space> prequential;
  // precision_solve: maintained (blocked_step.hpp): upper-triangular R with
  // R^T R = S, kept in double; factor_age = steps since R was last computed
  // afresh (-1 = none yet: the next step factors S); refactors = fresh
  // factorizations that replaced a maintained R; solve_drift = the largest
  // max|R_maintained - R_fresh| / max|R_fresh| seen at those.
  Kokkos::View<double***, Kokkos::LayoutRight, memory_space> Rfac;  // B x r x r
  Kokkos::View<std::int64_t*, Kokkos::LayoutRight, memory_space> factor_age, refactors;
  Kokkos::View<double*, Kokkos::LayoutRight, memory_space> solve_drift;
  // Missing data (ALGORITHM.md section 7; the masked kernel,
  // impl/masked_step.hpp): seen(b, i) = 0 while coordinate i of stream b has
  // never been observed (7.6; 1 from a complete start); skipped_steps (7.5),
  // dropped_samples (missing: drop) and missing_entries (NaN entries of the
  // samples stepped) count per stream.
  Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, memory_space> seen;  // B x d
  Kokkos::View<std::int64_t*, Kokkos::LayoutRight, memory_space> skipped_steps, dropped_samples, missing_entries;
  // Heterogeneous noise (ALGORITHM.md section 8, noise: diagonal; B x 0 with
  // isotropic noise): the noise profile psi, the leverages l of the frame at
  // the last re-whitening, the accumulators a (double) and cnt of 8.3 part
  // 3, and the re-whitenings done (8.3 part 4).
  Kokkos::View<Scalar**, Kokkos::LayoutRight, memory_space> psi, leverage;       // B x d
  Kokkos::View<double**, Kokkos::LayoutRight, memory_space> noise_residuals;     // B x d
  Kokkos::View<std::int64_t**, Kokkos::LayoutRight, memory_space> noise_counts;  // B x d
  Kokkos::View<std::int64_t*, Kokkos::LayoutRight, memory_space> rewhitenings;   // B
  std::vector<std::uint64_t> stream_ids;                                         // global ids, host
  // States written from outside the engine's steps so far (from_host,
  // write_state_values, copy_stream, a checkpoint's restore): an engine's
  // work derived from a stream's basis (the masked step's reused Gram,
  // ALGORITHM.md 7.8) is stale after one.
  std::uint64_t state_writes = 0;

  StreamBatch() = default;
  StreamBatch(int batch_, int d_, int r_, std::vector<std::uint64_t> ids, NoiseModel noise = NoiseModel::isotropic)
      : batch(batch_), d(d_), r(r_), stream_ids(std::move(ids)) {
    // (A batch of no streams: a rank that holds only other ranks' streams'
    // time segments, ALGORITHM.md section 9.)
    if (batch < 0 || d < 1 || r < 1 || r > d)
      throw std::invalid_argument("StreamBatch: need batch >= 0 and 1 <= r <= d, got batch=" + std::to_string(batch) +
                                  ", d=" + std::to_string(d) + ", r=" + std::to_string(r));
    if (int(stream_ids.size()) != batch)
      throw std::invalid_argument("StreamBatch: " + std::to_string(stream_ids.size()) + " stream ids for a batch of " +
                                  std::to_string(batch));
    mu = decltype(mu)("mosaic::mu", batch, d);
    U = basis_view(Kokkos::view_alloc(std::string("mosaic::U")), BasisLayout<ExecSpace>::layout(batch, d, r));
    S = decltype(S)("mosaic::S", batch, r, r);
    s2 = decltype(s2)("mosaic::s2", batch);
    steps = decltype(steps)("mosaic::steps", batch);
    clamped_steps = decltype(clamped_steps)("mosaic::clamped_steps", batch);
    breakdown_step = decltype(breakdown_step)("mosaic::breakdown_step", batch);
    reorthonormalizations = decltype(reorthonormalizations)("mosaic::reorth", batch);
    unresolved_residual_steps = decltype(unresolved_residual_steps)("mosaic::unresolved_residual_steps", batch);
    residual_recomputations = decltype(residual_recomputations)("mosaic::residual_recomputations", batch);
    status = decltype(status)("mosaic::status", batch);
    prequential = decltype(prequential)("mosaic::prequential", batch, int(preq_columns));
    Kokkos::deep_copy(breakdown_step, std::int64_t(-1));
    Rfac = decltype(Rfac)("mosaic::Rfac", batch, r, r);
    factor_age = decltype(factor_age)("mosaic::factor_age", batch);
    refactors = decltype(refactors)("mosaic::refactors", batch);
    solve_drift = decltype(solve_drift)("mosaic::solve_drift", batch);
    Kokkos::deep_copy(factor_age, std::int64_t(-1));
    seen = decltype(seen)("mosaic::seen", batch, d);
    Kokkos::deep_copy(seen, std::uint8_t(1));
    skipped_steps = decltype(skipped_steps)("mosaic::skipped_steps", batch);
    dropped_samples = decltype(dropped_samples)("mosaic::dropped_samples", batch);
    missing_entries = decltype(missing_entries)("mosaic::missing_entries", batch);
    const int dn = noise == NoiseModel::diagonal ? d : 0;
    psi = decltype(psi)("mosaic::psi", batch, dn);
    Kokkos::deep_copy(psi, Scalar(1));
    leverage = decltype(leverage)("mosaic::leverage", batch, dn);
    noise_residuals = decltype(noise_residuals)("mosaic::noise_residuals", batch, dn);
    noise_counts = decltype(noise_counts)("mosaic::noise_counts", batch, dn);
    rewhitenings = decltype(rewhitenings)("mosaic::rewhitenings", batch);
  }

  // noise: diagonal (the batch carries section 8's state).
  bool diagonal_noise() const { return psi.extent(1) > 0; }

  // mu, U, S, s2 of one stream (the fixed-size state of ALGORITHM.md section 1).
  std::size_t state_bytes_per_stream() const {
    return sizeof(Scalar) * (std::size_t(d) + std::size_t(d) * r + std::size_t(r) * r + 1);
  }

  // Copies stream b out into the reference's row-major form.
  ReferenceState<Scalar> to_host(int b) const {
    check_index(b);
    ReferenceState<Scalar> st(d, r);
    const auto h_mu = transfer::to_host(Kokkos::subview(mu, b, Kokkos::ALL()));
    const auto h_U = transfer::to_host(Kokkos::subview(U, b, Kokkos::ALL(), Kokkos::ALL()));
    const auto h_S = transfer::to_host(Kokkos::subview(S, b, Kokkos::ALL(), Kokkos::ALL()));
    for (int i = 0; i < d; ++i) st.mu[i] = h_mu(i);
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < r; ++j) st.u(i, j) = h_U(i, j);
    for (int a = 0; a < r; ++a)
      for (int c = 0; c < r; ++c) st.S[std::size_t(a) * r + c] = h_S(a, c);
    st.s2 = read_scalar(s2, b);
    st.steps = read_scalar(steps, b);
    st.clamped_steps = read_scalar(clamped_steps, b);
    st.reorthonormalizations = read_scalar(reorthonormalizations, b);
    const auto h_preq = transfer::to_host(Kokkos::subview(prequential, b, Kokkos::ALL()));
    for (int c = 0; c < preq_columns; ++c) st.prequential[c] = h_preq(c);
    return st;
  }

  // Overwrites stream b with a host state (also resets status to healthy).
  void from_host(int b, const ReferenceState<Scalar>& st) {
    write_state_values(b, st);
    auto d_preq = Kokkos::subview(prequential, b, Kokkos::ALL());
    const auto h_preq = transfer::host_buffer(d_preq);
    for (int c = 0; c < preq_columns; ++c) h_preq(c) = st.prequential[c];
    transfer::copy_from_host(d_preq, h_preq);
    write_scalar(steps, b, st.steps);
    write_scalar(clamped_steps, b, st.clamped_steps);
    write_scalar(reorthonormalizations, b, st.reorthonormalizations);
    write_scalar(unresolved_residual_steps, b, std::int64_t(0));
    write_scalar(residual_recomputations, b, std::int64_t(0));
    write_scalar(status, b, 0);
    write_scalar(breakdown_step, b, std::int64_t(-1));
    Kokkos::deep_copy(Kokkos::subview(seen, b, Kokkos::ALL()), std::uint8_t(1));
    write_scalar(skipped_steps, b, std::int64_t(0));
    write_scalar(dropped_samples, b, std::int64_t(0));
    write_scalar(missing_entries, b, std::int64_t(0));
    if (diagonal_noise()) {  // 8.2's start (psi = 1, l_j = ||U_j||^2), as the reference's state makes it
      MosaicParams p;
      p.noise = NoiseModel::diagonal;
      const MaskedReferenceState<Scalar> start(ReferenceState<Scalar>(st), p);
      write_noise_state(b, start.psi, start.leverage, start.residuals, start.counts, start.rewhitenings);
    }
  }

  // Overwrites mu, U, S and s2 of stream b with a host state's and nothing
  // else (its counters, status and step count stay): a state mapped to
  // another frame (ALGORITHM.md 9.6's gauge).
  void write_state_values(int b, const ReferenceState<Scalar>& st) {
    check_index(b);
    if (st.d != d || st.r != r)
      throw std::invalid_argument("StreamBatch: a host state of d=" + std::to_string(st.d) +
                                  ", r=" + std::to_string(st.r) + ", batch is d=" + std::to_string(d) +
                                  ", r=" + std::to_string(r));
    auto d_mu = Kokkos::subview(mu, b, Kokkos::ALL());
    auto d_U = Kokkos::subview(U, b, Kokkos::ALL(), Kokkos::ALL());
    auto d_S = Kokkos::subview(S, b, Kokkos::ALL(), Kokkos::ALL());
    const auto h_mu = transfer::host_buffer(d_mu);
    const auto h_U = transfer::host_buffer(d_U);
    const auto h_S = transfer::host_buffer(d_S);
    for (int i = 0; i < d; ++i) h_mu(i) = st.mu[i];
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < r; ++j) h_U(i, j) = st.u(i, j);
    for (int a = 0; a < r; ++a)
      for (int c = 0; c < r; ++c) h_S(a, c) = st.S[std::size_t(a) * r + c];
    transfer::copy_from_host(d_mu, h_mu);
    transfer::copy_from_host(d_U, h_U);
    transfer::copy_from_host(d_S, h_S);
    write_scalar(s2, b, st.s2);
    write_scalar(factor_age, b, std::int64_t(-1));  // S changed: no maintained factor
    ++state_writes;
  }

  // Stream `to` becomes stream `from` of `src` (a batch of the same shape,
  // noise model and memory space), every per-stream view bit for bit, on
  // the execution space: a state handed from one slot to another
  // (ALGORITHM.md 9.5's restart from E_{q-1}, exactly).
  void copy_stream(const StreamBatch& src, int from, int to) {
    check_index(to);
    src.check_index(from);
    if (src.d != d || src.r != r || src.psi.extent(1) != psi.extent(1))
      throw std::invalid_argument("StreamBatch::copy_stream: batches of different shapes or noise models");
    for_each_stream_view(src, [&](const auto& dv, const auto& sv) {
      transfer::copy_within(stream_slice(dv, to), stream_slice(sv, from));
    });
    ++state_writes;
  }

  // Every per-stream view of stream b, bit for bit, in one host buffer (a
  // state handed to another rank: ALGORITHM.md 9.5's restart from E_{q-1}
  // when segment q - 1 lies on the rank before), and back: unpack_stream
  // makes stream b what copy_stream from the packed stream would.
  std::vector<char> pack_stream(int b) const {
    check_index(b);
    std::vector<char> out;
    out.reserve(packed_stream_bytes());
    for_each_stream_view(*this, [&](const auto& v, const auto&) {
      const auto h = transfer::to_host(stream_slice(v, b));
      const char* p = reinterpret_cast<const char*>(h.data());
      out.insert(out.end(), p, p + h.span() * sizeof(typename decltype(h)::value_type));
    });
    return out;
  }
  void unpack_stream(int b, const std::vector<char>& in) {
    check_index(b);
    if (in.size() != packed_stream_bytes())
      throw std::invalid_argument("StreamBatch::unpack_stream: " + std::to_string(in.size()) +
                                  " bytes, a stream of this batch packs into " + std::to_string(packed_stream_bytes()));
    std::size_t at = 0;
    for_each_stream_view(*this, [&](const auto& v, const auto&) {
      const auto slice = stream_slice(v, b);
      const auto h = transfer::host_buffer(slice);
      const std::size_t n = h.span() * sizeof(typename decltype(h)::value_type);
      std::memcpy(reinterpret_cast<char*>(h.data()), in.data() + at, n);
      at += n;
      transfer::copy_from_host(slice, h);
    });
    ++state_writes;
  }
  // The size of pack_stream's buffer.
  std::size_t packed_stream_bytes() const {
    std::size_t n = 0;
    for_each_stream_view(*this, [&](const auto& v, const auto&) {
      std::size_t elements = 1;
      for (int k = 1; k < int(std::decay_t<decltype(v)>::rank); ++k) elements *= v.extent(unsigned(k));
      n += elements * sizeof(typename std::decay_t<decltype(v)>::non_const_value_type);
    });
    return n;
  }

  // Section 4's counters of stream b (clamped steps, re-orthonormalizations,
  // the blocked kernel's residual counters, the prequential sums) set to 0:
  // a run whose counts are kept apart from what came before it (9.3's
  // warm-up counters).
  void reset_counters(int b) {
    check_index(b);
    write_scalar(clamped_steps, b, std::int64_t(0));
    write_scalar(reorthonormalizations, b, std::int64_t(0));
    write_scalar(unresolved_residual_steps, b, std::int64_t(0));
    write_scalar(residual_recomputations, b, std::int64_t(0));
    Kokkos::deep_copy(Kokkos::subview(prequential, b, Kokkos::ALL()), 0.0);
  }
  // Those counters of stream `from` of `src` added to stream `to`'s, on the
  // execution space (the counts of runs that together make one stream's).
  void add_counters(const StreamBatch& src, int from, int to);

  // The steps stream b has taken, set (a state started at a step other than
  // 0: re-orthonormalization falls on the global step indices).
  void set_step_count(int b, std::int64_t n) {
    check_index(b);
    write_scalar(steps, b, n);
  }
  // Stream b's BreakdownCode and the step it broke down at (-1: none).
  int stream_status(int b) const {
    check_index(b);
    return read_scalar(status, b);
  }
  std::int64_t breakdown_at(int b) const {
    check_index(b);
    return read_scalar(breakdown_step, b);
  }
  // Sets them (a stream stopped or started again by the driver).
  void set_status(int b, int code, std::int64_t at_step) {
    check_index(b);
    write_scalar(status, b, code);
    write_scalar(breakdown_step, b, at_step);
  }

  // Stream b with section 7's additions (the counters; seen only while some
  // coordinate is unseen). The entries counted are missing_entries of d per
  // step (total_entries = d steps).
  MaskedReferenceState<Scalar> to_host_masked(int b) const {
    MaskedReferenceState<Scalar> st;
    static_cast<ReferenceState<Scalar>&>(st) = to_host(b);
    st.skipped_steps = read_scalar(skipped_steps, b);
    st.dropped_samples = read_scalar(dropped_samples, b);
    st.missing_entries = read_scalar(missing_entries, b);
    st.total_entries = st.steps * std::int64_t(d);
    if (diagonal_noise()) {
      st.psi = row_to_host(psi, b);
      st.leverage = row_to_host(leverage, b);
      st.residuals = row_to_host(noise_residuals, b);
      st.counts = row_to_host(noise_counts, b);
      st.rewhitenings = read_scalar(rewhitenings, b);
    }
    const auto h_seen = transfer::to_host(Kokkos::subview(seen, b, Kokkos::ALL()));
    bool all = true;
    for (int i = 0; i < d; ++i) all = all && h_seen(i) != 0;
    if (!all) {
      st.seen.resize(std::size_t(d));
      for (int i = 0; i < d; ++i) st.seen[std::size_t(i)] = h_seen(i);
    }
    return st;
  }

  // Overwrites stream b with a section-7 host state (a masked init's seen).
  // A state with section 8's model needs a batch built for it; an isotropic
  // state on such a batch starts its profile (psi = 1).
  void from_host(int b, const MaskedReferenceState<Scalar>& st) {
    if (st.diagonal_noise() && !diagonal_noise())
      throw std::invalid_argument(
          "StreamBatch::from_host: a noise: diagonal state on a batch built for isotropic noise");
    from_host(b, static_cast<const ReferenceState<Scalar>&>(st));
    if (st.diagonal_noise()) write_noise_state(b, st.psi, st.leverage, st.residuals, st.counts, st.rewhitenings);
    write_scalar(skipped_steps, b, st.skipped_steps);
    write_scalar(dropped_samples, b, st.dropped_samples);
    write_scalar(missing_entries, b, st.missing_entries);
    if (!st.seen.empty()) {
      auto d_seen = Kokkos::subview(seen, b, Kokkos::ALL());
      const auto h_seen = transfer::host_buffer(d_seen);
      for (int i = 0; i < d; ++i) h_seen(i) = st.seen[std::size_t(i)];
      transfer::copy_from_host(d_seen, h_seen);
    }
  }

 private:
  // f(view of this batch, the same view of `other`) for every per-stream
  // view (first extent: the stream): the one list copy_stream, pack_stream
  // and unpack_stream walk.
  template <class F>
  void for_each_stream_view(const StreamBatch& other, F&& f) const {
    f(mu, other.mu);
    f(U, other.U);
    f(S, other.S);
    f(s2, other.s2);
    f(steps, other.steps);
    f(clamped_steps, other.clamped_steps);
    f(breakdown_step, other.breakdown_step);
    f(reorthonormalizations, other.reorthonormalizations);
    f(unresolved_residual_steps, other.unresolved_residual_steps);
    f(residual_recomputations, other.residual_recomputations);
    f(status, other.status);
    f(prequential, other.prequential);
    f(Rfac, other.Rfac);
    f(factor_age, other.factor_age);
    f(refactors, other.refactors);
    f(solve_drift, other.solve_drift);
    f(seen, other.seen);
    f(skipped_steps, other.skipped_steps);
    f(dropped_samples, other.dropped_samples);
    f(missing_entries, other.missing_entries);
    f(psi, other.psi);
    f(leverage, other.leverage);
    f(noise_residuals, other.noise_residuals);
    f(noise_counts, other.noise_counts);
    f(rewhitenings, other.rewhitenings);
  }
  // Stream b of a per-stream view.
  template <class V>
  static auto stream_slice(const V& v, int b) {
    if constexpr (V::rank == 1) return Kokkos::subview(v, b);
    else if constexpr (V::rank == 2) return Kokkos::subview(v, b, Kokkos::ALL());
    else return Kokkos::subview(v, b, Kokkos::ALL(), Kokkos::ALL());
  }
  void write_noise_state(int b, const std::vector<Scalar>& p, const std::vector<Scalar>& lev,
                         const std::vector<double>& a, const std::vector<std::int64_t>& cnt, std::int64_t rewhitened) {
    row_from_host(psi, b, p);
    row_from_host(leverage, b, lev);
    row_from_host(noise_residuals, b, a);
    row_from_host(noise_counts, b, cnt);
    write_scalar(rewhitenings, b, rewhitened);
  }
  template <class V>
  std::vector<typename V::non_const_value_type> row_to_host(const V& v, int b) const {
    const auto h = transfer::to_host(Kokkos::subview(v, b, Kokkos::ALL()));
    std::vector<typename V::non_const_value_type> out(h.extent(0));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = h(i);
    return out;
  }
  template <class V, class T>
  void row_from_host(const V& v, int b, const std::vector<T>& values) {
    auto row = Kokkos::subview(v, b, Kokkos::ALL());
    if (values.size() != row.extent(0))
      throw std::invalid_argument("StreamBatch::from_host: a noise-state row of " + std::to_string(values.size()) +
                                  " entries for d = " + std::to_string(row.extent(0)));
    const auto h = transfer::host_buffer(row);
    for (std::size_t i = 0; i < values.size(); ++i) h(i) = values[i];
    transfer::copy_from_host(row, h);
  }
  void check_index(int b) const {
    if (b < 0 || b >= batch)
      throw std::out_of_range("StreamBatch: stream index " + std::to_string(b) + " outside [0, " +
                              std::to_string(batch) + ")");
  }
  template <class V>
  static typename V::non_const_value_type read_scalar(const V& v, int b) {
    return transfer::to_host(Kokkos::subview(v, b))();
  }
  template <class V, class T>
  static void write_scalar(const V& v, int b, T value) {
    Kokkos::deep_copy(Kokkos::subview(v, b), typename V::non_const_value_type(value));
  }
};

namespace detail {
// dst's section-4 counters of stream `to` += src's of stream `from`: one
// iteration (at namespace scope for nvcc, as the sources' functors).
template <class Counts, class Sums>
struct AddStreamCounters {
  Counts dst[4], src[4];
  Sums dst_sums, src_sums;
  int to, from;
  KOKKOS_INLINE_FUNCTION void operator()(const int) const {
    for (int k = 0; k < 4; ++k) dst[k](to) += src[k](from);
    for (int c = 0; c < int(dst_sums.extent(1)); ++c) dst_sums(to, c) += src_sums(from, c);
  }
};
}  // namespace detail

template <class Scalar, class ExecSpace>
void StreamBatch<Scalar, ExecSpace>::add_counters(const StreamBatch& src, int from, int to) {
  check_index(to);
  src.check_index(from);
  using Functor = detail::AddStreamCounters<decltype(steps), decltype(prequential)>;
  Functor f{{clamped_steps, reorthonormalizations, unresolved_residual_steps, residual_recomputations},
            {src.clamped_steps, src.reorthonormalizations, src.unresolved_residual_steps, src.residual_recomputations},
            prequential,
            src.prequential,
            to,
            from};
  Kokkos::parallel_for("mosaic::add_stream_counters", Kokkos::RangePolicy<ExecSpace>(0, 1), f);
}

}  // namespace mosaic
