// The host reference of ALGORITHM.md section 9 (../shared/ALGORITHM-9-segments.md):
// one stream's parallel-in-time segments, the workers stepped one after
// another by reference_step, with 9.2's partition, 9.3's pass 1 (cold states
// and their fallbacks), 9.4's exchange and certificate, 9.5's later passes
// and 9.6's gauge carry (the certificate, the
// record and the gauge through segments.hpp's certify_pass and SegmentedRun,
// which the mini-app's driver uses too). It is the oracle of the engine's
// segments, and what 9.12's checks run against.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "mosaic/algorithm/params.hpp"
#include "mosaic/algorithm/reference.hpp"
#include "mosaic/algorithm/segments.hpp"

namespace mosaic {

namespace detail {

template <class T>
void zero_counters(ReferenceState<T>& st) {
  st.clamped_steps = 0;
  st.reorthonormalizations = 0;
  st.prequential.fill(0.0);
}

}  // namespace detail

// One stream of `steps` section-2 steps (T of 9.1) after its init, in
// `sp.segments` segments. `rows(first, m, out)` writes the stream's samples
// first .. first + m - 1 (0-based, stream order, sample k at out[k*d ..]);
// `available` is the stream's length in samples. The stream's init is
// p.init (section 3; init: data with its growing window); step t consumes
// sample n0 + t - 1 (0-based). `seed` and `stream_id` draw init: random
// states (the stream's, and 9.3's random cold states).
// Throws what the stream's own init or steps throw (InitRankDeficient,
// NumericalBreakdown, std::invalid_argument), and std::invalid_argument for
// options 9.1 refuses or fewer steps than segments.
template <class T, class Rows>
SegmentedRun<T> reference_run_segments(const Rows& rows, std::int64_t available, std::int64_t steps, int d, int r,
                                       const MosaicParams& p, const SegmentParams& sp, std::uint64_t seed,
                                       std::uint64_t stream_id) {
  const ResolvedSegments rs = resolve_segments<T>(sp, p);
  const int P = rs.segments;
  if (steps < P)
    throw std::invalid_argument("time_segments (" + std::to_string(P) + ") must be <= the stream's steps (" +
                                std::to_string(steps) + ")");
  SegmentedRun<T> out;
  std::vector<T> buffer;
  auto read = [&](std::int64_t first, std::int64_t m) -> const T* {
    buffer.resize(std::size_t(m) * d);
    rows(first, m, buffer.data());
    return buffer.data();
  };

  // The stream's own init (section 3), n0 = the samples it consumed.
  ReferenceState<T> init;
  if (p.init == InitMode::data) {
    GrownInit<ReferenceState<T>> g =
        reference_init_data_grown<T>([&](int m) { return read(0, m); }, available, d, r, p);
    init = std::move(g.state);
    out.init_samples_used = g.samples_used;
  } else {
    init = reference_init_random<T>(d, r, p, seed, stream_id);
  }
  const std::int64_t n0 = out.init_samples_used;
  if (n0 + steps > available)
    throw std::invalid_argument("the stream has " + std::to_string(available) + " samples: fewer than its init (" +
                                std::to_string(n0) + ") and " + std::to_string(steps) + " steps");

  std::vector<T> x(static_cast<std::size_t>(d));
  // Steps t0 + 1 .. t1 of `st`, sample n0 + t - 1 for step t.
  auto step_through = [&](ReferenceState<T>& st, std::int64_t t0, std::int64_t t1) {
    for (std::int64_t t = t0 + 1; t <= t1; ++t) {
      rows(n0 + t - 1, 1, x.data());
      reference_step(st, x.data(), p);
    }
  };
  // 9.3's cold state of worker q for a warm-up from step w: section 3 on
  // the samples before step w + 1, the window growing backwards; init:
  // random where no window within init_max_samples (and the stream's start)
  // gives a start (too few samples, fewer than r directions, non-finite
  // samples), or where the options ask for it. Never the stream's error: a
  // cold state changes only the passes.
  MosaicParams cold_params = p;
  cold_params.init = InitMode::data;
  auto cold_state = [&](int q, std::int64_t w) {
    const std::int64_t end = n0 + w;  // the samples end .. before step w + 1
    if (rs.warmup_init == InitMode::data) {
      try {
        GrownInit<ReferenceState<T>> g =
            reference_init_data_grown<T>([&](int m) { return read(end - m, m); }, end, d, r, cold_params);
        out.cold_data_starts += 1;
        out.cold_init_samples[q] = g.samples_used;
        return std::move(g.state);
      } catch (const std::invalid_argument&) {
      }
    }
    out.cold_random_starts += 1;
    return reference_init_random<T>(d, r, p, seed, stream_id);
  };
  // Steps t0 + 1 .. t1 of a worker's state. A breakdown on the sequential
  // chain is the stream's (as in the sequential run); a run off it that
  // breaks down ends in a state that is not a number (9.4: never certified),
  // which later steps leave as it is.
  auto worker_steps_through = [&](ReferenceState<T>& st, std::int64_t t0, std::int64_t t1, bool sequential_chain) {
    if (std::isnan(double(st.s2))) return;
    try {
      step_through(st, t0, t1);
    } catch (const NumericalBreakdown&) {
      if (sequential_chain) throw;
      out.broken_runs += 1;
      st.s2 = std::numeric_limits<T>::quiet_NaN();
    }
  };

  std::vector<std::int64_t> b(std::size_t(P) + 1);
  for (int q = 0; q <= P; ++q) b[q] = segment_begin(q, steps, P);
  std::vector<ReferenceState<T>> Z(P), E(P);
  std::vector<bool> c(P, false);
  out.rotations.assign(P, detail::identity_matrix(r));
  out.cold_init_samples.assign(P, 0);

  auto clock = [] { return std::chrono::steady_clock::now(); };
  for (int pass = 1;; ++pass) {
    const auto t_start = clock();
    std::int64_t worker_steps = 0;
    const std::vector<ReferenceState<T>> previous_end = E;
    const std::vector<bool> certified_before = c;
    for (int q = 0; q < P; ++q) {
      if (c[q]) continue;
      ReferenceState<T> st;
      std::int64_t taken = 0;
      // On the sequential chain: the stream's own start (worker 0, or a
      // warm-up from step 0), or a restart from a certified predecessor.
      bool sequential_chain = q == 0 || (pass > 1 && certified_before[q - 1]);
      if (pass > 1) {
        st = previous_end[q - 1];  // 9.5: E_{q-1} bit for bit, no warm-up
      } else if (q > 0) {
        const std::int64_t w = b[q] - rs.warmup;
        if (w <= 0) {
          st = init;
          out.trivial_boundaries += 1;
          sequential_chain = true;
        } else {
          st = cold_state(q, w);
          st.steps = w;  // re-orthonormalization at the global step index (9.3)
        }
        const std::int64_t from = std::max<std::int64_t>(w, 0);
        taken += b[q] - from;
        worker_steps_through(st, from, b[q], sequential_chain);
        out.warmup_counters.add(st);
      } else {
        st = init;
      }
      detail::zero_counters(st);
      Z[q] = st;
      taken += b[q + 1] - b[q];
      worker_steps_through(st, b[q], b[q + 1], sequential_chain);
      E[q] = std::move(st);
      worker_steps = std::max(worker_steps, taken);
    }
    // 9.4: the certificate; 9.6: the rotations of boundaries it certified.
    const std::vector<BoundaryMismatch> delta = certify_pass(Z, E, rs.tolerance, c, out.rotations);
    out.record_pass(delta, c, worker_steps, std::chrono::duration<double>(clock() - t_start).count());
    if (out.segments_certified.back() == P || pass >= rs.max_passes) break;
  }

  out.finish(c, steps);
  for (const ReferenceState<T>& e : E) out.counters.add(e);
  out.end_states = E;
  out.final_state = E[P - 1];
  out.final_state.clamped_steps = out.counters.clamped_steps;
  out.final_state.reorthonormalizations = out.counters.reorthonormalizations;
  out.final_state.prequential = out.counters.prequential;
  // 9.6: G_q = R_q G_{q-1}.
  if (rs.gauge_carry) {
    const std::vector<double> G = out.carried_gauge(r);
    if (!G.empty()) apply_gauge(out.final_state, G);
  }
  return out;
}

}  // namespace mosaic
