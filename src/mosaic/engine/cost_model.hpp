// The blocked update's cost per phase (issue 28 item 4): flops, memory
// traffic, Kokkos launches, vendor-library calls and fences for one block of
// k samples on B streams of dimension d and rank r, as the code of
// blocked_step.hpp (gemm::Vendor) and batched_engine.hpp (launch_block)
// does them, and the time they predict from a machine's rates.
//
// The counts follow the code, not the algorithm's minimum:
//  - pack: reads U0 (d r), the samples (d k) and mu0 (d), writes
//    Y = [U0 | D] (d (r + k)); d k subtractions.
//  - products: W0 = U0^T U0 when a Cholesky-QR may be due (2 d r^2), and
//    per panel of P columns [t0, t1) of D: [U0 | D_{<t1}]^T D_{t0..t1}
//    (2 d (r + t1)(t1 - t0)); reads Y once per GEMM.
//  - coefficients, per step t (T = t columns used), dense precision solve,
//    subspace_direction precision with gamma > 0 (the defaults):
//      two r x r Cholesky factorizations (S; S + gamma s2 I): 2 r^3 / 3,
//      the two solves (forward and backward each): 4 r^2,
//      the small products of coef_step (G c, H c, A^T G c + B^T H c,
//      alpha, beta, G beta, H beta): 4 r^2 + 8 r T + 4 T^2,
//      the rotation of A, At, B, Bt and their products with gh: 6 r^2 + 6 r T,
//      S' = e^-eta (S + c z z^T), its transport and symmetrization: 9 r^2;
//    precision_solve maintained replaces the first factorization by O(r^2)
//    updates of the kept factor (two rank-one Cholesky updates, R gh and a
//    Givens re-triangularization: about 13 r^2); gamma = 0 or oja drops the
//    second factorization and its solve. The work arrays (about
//    5 r^2 + 3 r k + k^2 doubles per stream) stay in cache: the traffic
//    counted is G and H in, A and B out.
//  - bases: U = Y W (2 d (r + k) r); reads Y, writes U.
// Launches per block (Kokkos kernels; the tools test library counts them,
// mpi.launch_budget): all streams at once (devices; host with fewer streams
// than threads): pack 1, coefficients 1, and the GEMMs as one library call
// each (1 + ceil(k / P) + 1 with W0, strided-batched over the streams);
// one stream per thread (host): pack with products 1, coefficients 1,
// bases 1, and every stream's GEMMs as its own library calls. No fence
// inside the update; one at the block's end when the caller times it.
#pragma once

#include <algorithm>
#include <cmath>

#include "mosaic/engine/team_cholesky.hpp"

namespace mosaic::cost {

struct Phase {
  double flops = 0;          // floating-point operations, all streams
  double bytes = 0;          // memory traffic beyond the caches, all streams
  double launches = 0;       // Kokkos kernel launches
  double library_calls = 0;  // vendor BLAS / cuBLAS calls
};

struct BlockCost {
  Phase pack, products, coefficients, bases;
  double fences = 0;
};

struct Shape {
  int d = 0, r = 0, k = 0, streams = 0;
  int scalar_bytes = 4;             // float 4, double 8 (the GEMMs' type)
  bool with_w0 = false;             // a Cholesky-QR may end the block (float: every block)
  bool maintained = false;          // precision_solve: maintained
  bool second_factor = true;        // gamma > 0 with subspace_direction precision
  bool all_streams_at_once = true;  // devices (and host with fewer streams than threads)
  int panel_cols = 32;              // Tuning<...>::vendor_panel_cols
  bool fenced = true;               // the caller fences at the block's end (timers)
  int team_threads = 32;            // devices: threads per team of the coefficient launch (Kokkos 3.4's AUTO on Cuda)
};

// Flops of one stream's GEMMs for a block: the products and the bases.
inline double product_flops(const Shape& s) {
  double f = s.with_w0 ? 2.0 * s.d * double(s.r) * s.r : 0.0;
  for (int t0 = 0; t0 < s.k; t0 += s.panel_cols) {
    const int t1 = std::min(s.k, t0 + s.panel_cols);
    f += 2.0 * s.d * double(s.r + t1) * (t1 - t0);
  }
  return f;
}
inline double bases_flops(const Shape& s) { return 2.0 * s.d * double(s.r + s.k) * s.r; }

// Flops of one stream's k coefficient steps (see the file comment).
inline double coefficient_flops(const Shape& s) {
  const double r = s.r, k = s.k;
  const double sum_t = k * (k + 1) / 2, sum_t2 = k * (k + 1) * (2 * k + 1) / 6;
  const double factors = (s.maintained ? 0.0 : 1.0) + (s.second_factor ? 1.0 : 0.0);
  const double solves = 1.0 + (s.second_factor ? 1.0 : 0.0);
  const double per_step_r =
      factors * r * r * r / 3 + (2.0 * solves + (s.maintained ? 13.0 : 0.0)) * r * r + (4 + 6 + 9) * r * r;
  return k * per_step_r + 14.0 * r * sum_t + 4.0 * sum_t2;
}

inline BlockCost block_cost(const Shape& s) {
  BlockCost c;
  const double B = s.streams, d = s.d, r = s.r, k = s.k, w = s.scalar_bytes;
  const double panels = std::ceil(k / s.panel_cols);
  const double gemms = panels + (s.with_w0 ? 1 : 0);
  c.pack.flops = B * d * k;
  c.pack.bytes = B * w * (d * r + d * k + d + d * (r + k));
  c.products.flops = B * product_flops(s);
  c.products.bytes = B * w * (gemms * d * (r + k) + (r + k) * (r + k));
  c.coefficients.flops = B * coefficient_flops(s);
  c.coefficients.bytes = B * 8.0 * (r * k + k * k + (r + k) * r);
  c.bases.flops = B * bases_flops(s);
  c.bases.bytes = B * w * (d * (r + k) + (r + k) * r + d * r);
  c.pack.launches = 1;
  c.coefficients.launches = 1;
  if (s.all_streams_at_once) {
    c.products.library_calls = gemms;
    c.bases.library_calls = 1;
  } else {
    c.bases.launches = 1;  // the bases' launch; the products run inside the pack's
    c.products.library_calls = B * gemms;
    c.bases.library_calls = B;
  }
  c.fences = s.fenced ? 1 : 0;
  return c;
}

// A machine's rates, each measured or taken from a data sheet (say which).
struct Rates {
  double copy_gbs = 0;      // streaming bandwidth, read + write, GB/s
  double gemm_gflops = 0;   // the GEMMs at the block's shapes, GFLOP/s
  double small_gflops = 0;  // host: one thread on the r x r coefficient algebra, GFLOP/s
  int threads = 1;          // host: threads over the streams
  double launch_us = 0;     // per kernel launch or library call (devices; 0 on host)
  // Devices: the coefficient steps are a chain of dependent operations of
  // a team's threads (the Cholesky factorizations and solves, with their
  // team barriers); `dependent_op_ns` is one such operation (an L1-hit load
  // and a floating-point operation, or a barrier), and the streams run
  // concurrently.
  double dependent_op_ns = 0;
};

struct PhaseSeconds {
  double pack = 0, products = 0, coefficients = 0, bases = 0;
  double total() const { return pack + products + coefficients + bases; }
};

// The dependent chain of one team's r x r Cholesky factorization
// (team_cholesky.hpp, CP pivots per pass) with T threads, in operations
// of one thread: per pivot, its read and square root, its row's scaling
// (ceil((r - j - 1) / T) divisions) and two barriers; the panel's later rows;
// per pass, a T-th of the trailing triangle's n (n + 1) / 2 entries (n = r -
// j1 rows; one subtraction per entry and pivot of the pass); a barrier per
// pass.
inline double device_factor_chain(int r, int T) {
  constexpr int CP = detail::team_cholesky_pivots_per_pass;
  const auto share = [T](int n) { return double((n + T - 1) / T); };
  double ops = 0;
  for (int j0 = 0; j0 < r; j0 += CP) {
    const int j1 = std::min(r, j0 + CP);
    for (int j = j0; j < j1; ++j) {
      ops += 4 + share(r - j - 1);
      for (int c = j + 1; c < j1; ++c) ops += share(r - c);
    }
    const int n = r - j1;
    ops += (j1 - j0) * share(n * (n + 1) / 2);
    ops += 1;
  }
  return ops;
}

// A solve with that factor: per entry of each substitution, its division,
// the write of the last one, ceil(remaining / T) updates and a barrier.
inline double device_solve_chain(int r, int T) {
  double ops = 0;
  for (int k = 0; k < r; ++k) ops += 2 * (3 + double((r - k - 1 + T - 1) / T));
  return ops;
}

// The dependent operations of one coefficient step on a device: the
// factorizations and solves of the team (team_threads threads) and, with
// the maintained factor, its updates by one thread (about 3 r^2). The
// step's small products and rotations are spread over the team without a
// chain of this length and are not counted.
inline double device_dependent_ops_per_step(const Shape& s) {
  const double factors = (s.maintained ? 0.0 : 1.0) + (s.second_factor ? 1.0 : 0.0);
  const double solves = 1.0 + (s.second_factor ? 1.0 : 0.0);
  return factors * device_factor_chain(s.r, s.team_threads) + solves * device_solve_chain(s.r, s.team_threads) +
         (s.maintained ? 3.0 * double(s.r) * s.r : 0.0);
}

inline PhaseSeconds predict(const Shape& s, const BlockCost& c, const Rates& m, bool device) {
  PhaseSeconds t;
  const double launch = m.launch_us * 1e-6;
  t.pack = c.pack.bytes / (m.copy_gbs * 1e9) + launch * c.pack.launches;
  t.products = c.products.flops / (m.gemm_gflops * 1e9) + launch * (c.products.launches + c.products.library_calls);
  t.bases = c.bases.flops / (m.gemm_gflops * 1e9) + launch * (c.bases.launches + c.bases.library_calls);
  if (device) {
    t.coefficients = s.k * device_dependent_ops_per_step(s) * m.dependent_op_ns * 1e-9 + launch;
  } else {
    // Whole streams per thread: the busiest thread's share.
    const double rounds = std::ceil(double(s.streams) / std::max(1, m.threads));
    t.coefficients = rounds * coefficient_flops(s) / (m.small_gflops * 1e9);
  }
  return t;
}

}  // namespace mosaic::cost
