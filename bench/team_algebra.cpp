// mosaic_team_algebra: the coefficient steps' r x r routines on one host
// thread, each host form beside the device form it must equal bitwise
// (team_cholesky.hpp, util/team_loops.hpp; the CPU suite checks the bits,
// tests/engine/test_team_cholesky.cpp): the Cholesky factorization, the
// triangular solve of r right-hand sides (Y = R^-T Delta) and A + s Y^T Y,
// the posterior's two r^3 products of ALGORITHM.md 7.3 part 2, and the
// Cholesky-QR's S L (L = R^T) and x R^-1 on 2r rows (the blocked update's
// r + k coefficient rows at k = r; frame_rotation.hpp,
// block_reorthonormalize.hpp), and the transport's matrix-vector product
// u = S' gh (rows_dot, frame_rotation.hpp), and the coefficient steps'
// matrix-vector products y = sum_j M(j, :) x(j) over 2r rows of r entries
// (rows_times, impl/team_rows_times.hpp: z = A^T G c + B^T H c and the
// others, whose rows number r, the step index t or r + t). Not a test:
// it times, on one thread of a one-thread team, in cache (each matrix of
// r = 64 is 32 KiB), and prints us per call and the ratio of the forms; it
// exits 1 if the forms' results differ in any entry.
//
//   OMP_NUM_THREADS=1 mosaic_team_algebra [--reps N] [r ...]   (default r: 32 64 128)
#include <cstdio>
#include <vector>

#include <Kokkos_Core.hpp>

#include "mosaic/engine/impl/team_rows_times.hpp"
#include "mosaic/engine/team_cholesky.hpp"
#include "mosaic/util/team_loops.hpp"
#include "order_args.hpp"

namespace {

using Exec = Kokkos::DefaultHostExecutionSpace;
using Matrix = Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace>;
using Member = Kokkos::TeamPolicy<Exec>::member_type;

// The three routines in one form, `reps` times each on the same inputs:
// us per call of each (the Cholesky's and the solve's with the copy of
// their r x r input), and the results (the forms' must be the same bits).
struct Timings {
  double cholesky = 0, lower_solve = 0, plus_gram = 0, times_lower = 0, row_solve = 0, rows_dot = 0, rows_times = 0;
  std::vector<double> results;  // R's upper triangle, Y, P, S L, X R^-1, then S z, then X^T x
};

Timings time_forms(int r, int reps, bool device_forms) {
  Matrix S("S", r, r), Delta("Delta", r, r), F("F", r, r), Y("Y", r, r), P("P", r, r), SL("SL", r, r), X("X", 2 * r, r);
  Kokkos::View<double*, Kokkos::LayoutRight, Kokkos::HostSpace> Sz("Sz", r), Xx("Xx", r), x("x", 2 * r);
  for (int j = 0; j < 2 * r; ++j) x(j) = 1.0 / (1 + j);
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < r; ++j) {
      S(i, j) = (i == j ? double(r) : 0.0) + 1.0 / (1 + i + j);
      Delta(i, j) = 0.1 / (1 + i + j) + (i == j ? 1.0 : 0.0);
    }
  Timings t;
  Kokkos::parallel_for(Kokkos::TeamPolicy<Exec>(1, 1), [&](const Member& m) {
    const auto lower = [&](const int i, const int k) { return F(k, i); };  // R^T of the upper factor
    Kokkos::Timer clock;
    for (int rep = 0; rep < reps; ++rep) {
      for (int i = 0; i < r; ++i)
        for (int j = 0; j < r; ++j) F(i, j) = S(i, j) + Delta(i, j);
      if (device_forms) mosaic::detail::device_cholesky_upper(m, F.data(), r, r);
      else mosaic::detail::team_cholesky_upper(m, F.data(), r, r);
    }
    t.cholesky = clock.seconds();
    clock.reset();
    for (int rep = 0; rep < reps; ++rep) {
      for (int i = 0; i < r; ++i)
        for (int j = 0; j < r; ++j) Y(i, j) = Delta(i, j);
      if (device_forms) mosaic::detail::device_lower_solve_columns(m, r, lower, Y);
      else mosaic::detail::lower_solve_columns(m, r, lower, Y);
    }
    t.lower_solve = clock.seconds();
    clock.reset();
    for (int rep = 0; rep < reps; ++rep) {
      if (device_forms) mosaic::detail::device_plus_gram(m, r, Delta, -1.0, Y, P);
      else mosaic::detail::plus_gram(m, r, Delta, -1.0, Y, P);
    }
    t.plus_gram = clock.seconds();
    const auto upper_transposed = [&](const int i, const int k) { return F(k, i); };  // L = R^T
    clock.reset();
    for (int rep = 0; rep < reps; ++rep) {
      if (device_forms) mosaic::detail::device_times_lower<double>(m, r, S, upper_transposed, SL);
      else mosaic::detail::times_lower<double>(m, r, S, upper_transposed, SL);
    }
    t.times_lower = clock.seconds();
    const auto row = [&](const int p) { return X.data() + long(p) * r; };
    clock.reset();
    for (int rep = 0; rep < reps; ++rep) {
      for (int i = 0; i < 2 * r; ++i)
        for (int j = 0; j < r; ++j) X(i, j) = Delta(i % r, j);
      if (device_forms) mosaic::detail::rows_times_inverse_upper_in_groups<1>(m, F.data(), r, r, 2 * r, row);
      else mosaic::detail::rows_times_inverse_upper(m, F.data(), long(r), r, 2 * r, row);
    }
    t.row_solve = clock.seconds();
    const auto z = Kokkos::subview(X, 0, Kokkos::ALL());  // the first row of X R^-1: any vector
    clock.reset();
    for (int rep = 0; rep < reps; ++rep) {
      if (device_forms) mosaic::detail::rows_dot_in_groups<1, double>(m, r, r, S, z, Sz);
      else mosaic::detail::rows_dot<double>(m, r, r, S, z, Sz);
    }
    t.rows_dot = clock.seconds();
    clock.reset();
    for (int rep = 0; rep < reps; ++rep) {
      if (device_forms) mosaic::detail::cooperative_rows_times(m, r, 2 * r, X.data(), r, x.data(), Xx.data(), false);
      else mosaic::detail::host_rows_times(m, r, 2 * r, X.data(), r, x.data(), Xx.data(), false);
    }
    t.rows_times = clock.seconds();
  });
  for (int i = 0; i < r; ++i)
    for (int j = i; j < r; ++j) t.results.push_back(F(i, j));
  for (const Matrix& M : {Y, P, SL, X})
    for (int i = 0; i < int(M.extent(0)); ++i)
      for (int j = 0; j < r; ++j) t.results.push_back(M(i, j));
  for (int i = 0; i < r; ++i) t.results.push_back(Sz(i));
  for (int i = 0; i < r; ++i) t.results.push_back(Xx(i));
  const double per_call = 1e6 / reps;
  t.cholesky *= per_call;
  t.lower_solve *= per_call;
  t.plus_gram *= per_call;
  t.times_lower *= per_call;
  t.row_solve *= per_call;
  t.rows_dot *= per_call;
  t.rows_times *= per_call;
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  int rc = 0;
  {
    const OrderArgs args = parse_order_args(argc, argv, "mosaic_team_algebra", 2000);
    const std::vector<int>& rs = args.orders;
    const int reps = args.reps;
    if (!args.valid) rc = 2;
    if (rc == 0) {
      std::printf(
          "# the coefficient steps' r x r routines on one host thread (%s), us per call (the Cholesky, the\n"
          "# solve and the row solve with the copy of their input); host forms (the engine's on host) against\n"
          "# the device forms run on host\n",
          Exec::name());
      std::printf("| r | routine | device form (us) | host form (us) | device / host | host GFLOP/s (model flops) |\n");
      std::printf("|---|---|---|---|---|---|\n");
      for (const int r : rs) {
        const Timings dev = time_forms(r, reps, true), host = time_forms(r, reps, false);
        const double r3 = double(r) * r * r;
        const struct {
          const char* name;
          double dev, host, flops;
        } rows[] = {{"cholesky_upper", dev.cholesky, host.cholesky, r3 / 3},
                    {"lower_solve_columns", dev.lower_solve, host.lower_solve, r3},
                    {"plus_gram", dev.plus_gram, host.plus_gram, 2 * r3},
                    {"times_lower", dev.times_lower, host.times_lower, r3},
                    {"rows_times_inverse_upper (2r rows)", dev.row_solve, host.row_solve, 2 * r3},
                    {"rows_dot", dev.rows_dot, host.rows_dot, 2.0 * r * r},
                    {"rows_times (2r rows)", dev.rows_times, host.rows_times, 4.0 * r * r}};
        for (const auto& row : rows)
          std::printf("| %d | %s | %.2f | %.2f | %.2fx | %.1f |\n", r, row.name, row.dev, row.host, row.dev / row.host,
                      row.flops / row.host / 1e3);
        for (std::size_t e = 0; e < dev.results.size(); ++e)
          if (dev.results[e] != host.results[e]) {
            std::printf(
                "# r = %d: the forms' results differ (entry %zu of R, Y, P, S L, X R^-1, S z, X^T x: %.17g and %.17g)\n",
                r, e, dev.results[e], host.results[e]);
            rc = 1;
            break;
          }
      }
    }
  }
  Kokkos::finalize();
  return rc;
}
