// mosaic_stream_lanes: issue 28 item 1's host alternative, measured. The
// coefficient steps' dense part, the Cholesky factorization of an r x r S
// and the solve S^-1 z, for L streams on one host thread in two forms:
//
// - the engine's: each stream in turn, its factor in register tiles
//   (team_cholesky_upper and team_cholesky_solve on a one-thread team,
//   team_cholesky.hpp);
// - the streams in SIMD lanes: the L matrices interleaved entry by entry
//   (entry (i, j) of stream l at ((i r + j) L + l)), every operation of the
//   plain loops applied to the L lanes at once, so each lane follows its
//   own stream's arithmetic; left-looking by panels of P rows in tiles of
//   P x W entries x L lanes kept in registers (the engine's tiles across
//   lanes instead of along a row).
//
// Both forms apply each entry's updates one by one in the plain loops'
// order, so every factor and solution must be the same bits; the program
// exits 1 if any differs. Not a test of speed: it prints us per stream of
// each form (with the copies of S and z into the form's layout, which a
// lane layout would also pay to gather a stream group's matrices) and the
// ratio. Only the program uses the lane form; docs/PERFORMANCE.md ("The
// streams in SIMD lanes") says why the engine keeps its tiles.
//
//   OMP_NUM_THREADS=1 mosaic_stream_lanes [--reps N] [r ...]   (default r: 32 64 128)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <Kokkos_Core.hpp>

#include "mosaic/engine/team_cholesky.hpp"
#include "mosaic/util/team_loops.hpp"
#include "order_args.hpp"

namespace {

using Exec = Kokkos::DefaultHostExecutionSpace;
using Member = Kokkos::TeamPolicy<Exec>::member_type;

// The upper Cholesky factor (R^T R = A, rows of R in A's rows) of L
// interleaved r x r matrices, leading dimension r; false if some lane's
// pivot is not positive and finite.
template <int L, int P, int W>
bool lanes_cholesky_upper(double* A, int r) {
  const auto at = [&](const int row, const int col) { return A + (long(row) * r + col) * L; };
  bool ok = true;
  for (int c0 = 0; c0 < r; c0 += P) {
    const int c1 = c0 + P < r ? c0 + P : r;
    // Rows c0..c1-1 receive the updates of pivots k < c0, in tiles of W
    // columns from the right; a tile that would cross column 0 or the
    // diagonal of a short panel takes plain chains.
    for (int i0 = r - W; c0 > 0 && i0 > c0 - W; i0 -= W) {
      if (c1 - c0 < P || i0 < 0) {
        for (int c = c0; c < c1; ++c)
          for (int i = (i0 > c ? i0 : c); i < i0 + W; ++i)
            for (int k = 0; k < c0; ++k) {
              double* const v = at(c, i);
              const double *const a = at(k, i), *const b = at(k, c);
              MOSAIC_SIMD_LOOP
              for (int l = 0; l < L; ++l) v[l] -= a[l] * b[l];
            }
        continue;
      }
      double acc[P][W][L];
      for (int p = 0; p < P; ++p)
        for (int w = 0; w < W; ++w) {
          const double* const v = at(c0 + p, i0 + w);
          MOSAIC_SIMD_LOOP
          for (int l = 0; l < L; ++l) acc[p][w][l] = v[l];
        }
      for (int k = 0; k < c0; ++k)
        for (int p = 0; p < P; ++p)
          for (int w = 0; w < W; ++w) {
            const double *const a = at(k, i0 + w), *const b = at(k, c0 + p);
            MOSAIC_SIMD_LOOP
            for (int l = 0; l < L; ++l) acc[p][w][l] -= a[l] * b[l];
          }
      for (int p = 0; p < P; ++p)
        for (int w = 0; w < W; ++w)
          if (i0 + w >= c0 + p) {
            double* const v = at(c0 + p, i0 + w);
            MOSAIC_SIMD_LOOP
            for (int l = 0; l < L; ++l) v[l] = acc[p][w][l];
          }
    }
    for (int j = c0; j < c1; ++j) {  // the panel, right-looking
      double rjj[L];
      for (int l = 0; l < L; ++l) {
        const double piv = at(j, j)[l];
        ok = ok && piv > 0.0 && std::isfinite(piv);
        rjj[l] = std::sqrt(piv);
      }
      for (int i = j + 1; i < r; ++i) {
        double* const v = at(j, i);
        MOSAIC_SIMD_LOOP
        for (int l = 0; l < L; ++l) v[l] /= rjj[l];
      }
      for (int l = 0; l < L; ++l) at(j, j)[l] = rjj[l];
      for (int c = j + 1; c < c1; ++c)
        for (int i = c; i < r; ++i) {
          double* const v = at(c, i);
          const double *const a = at(j, i), *const b = at(j, c);
          MOSAIC_SIMD_LOOP
          for (int l = 0; l < L; ++l) v[l] -= a[l] * b[l];
        }
    }
  }
  return ok;
}

// x <- (R^T R)^-1 x for L interleaved factors and right-hand sides: R^T y
// = x by rows of R, then R x = y in blocks of P rows from the bottom, as
// host_cholesky_solve does for one stream.
template <int L, int P>
void lanes_cholesky_solve(const double* R, double* x, int r) {
  const auto at = [&](const int row, const int col) { return R + (long(row) * r + col) * L; };
  for (int k = 0; k < r; ++k) {
    double yk[L];
    MOSAIC_SIMD_LOOP
    for (int l = 0; l < L; ++l) yk[l] = x[k * L + l] /= at(k, k)[l];
    for (int i = k + 1; i < r; ++i) {
      const double* const a = at(k, i);
      MOSAIC_SIMD_LOOP
      for (int l = 0; l < L; ++l) x[i * L + l] -= a[l] * yk[l];
    }
  }
  for (int b1 = r; b1 > 0; b1 -= P) {
    const int b0 = b1 - P > 0 ? b1 - P : 0, nb = b1 - b0;
    double acc[P][L];
    for (int p = 0; p < nb; ++p)
      for (int l = 0; l < L; ++l) acc[p][l] = x[(b0 + p) * L + l];
    for (int j = r - 1; j >= b1; --j)
      for (int p = 0; p < nb; ++p) {
        const double* const a = at(b0 + p, j);
        MOSAIC_SIMD_LOOP
        for (int l = 0; l < L; ++l) acc[p][l] -= a[l] * x[j * L + l];
      }
    for (int j = b1 - 1; j >= b0; --j) {
      double xj[L];
      MOSAIC_SIMD_LOOP
      for (int l = 0; l < L; ++l) x[j * L + l] = xj[l] = acc[j - b0][l] / at(j, j)[l];
      for (int p = 0; p < j - b0; ++p) {
        const double* const a = at(b0 + p, j);
        MOSAIC_SIMD_LOOP
        for (int l = 0; l < L; ++l) acc[p][l] -= a[l] * xj[l];
      }
    }
  }
}

// us per stream of each form: the factorization (with the copy of S) and
// the solve (with the copy of z); the first of three rounds is not timed.
struct Row {
  double tiles_factor = 0, tiles_solve = 0, lanes_factor = 0, lanes_solve = 0;
  long differing = 0;  // entries of R's upper triangles and of the solutions
};

template <int L, int P, int W>
Row time_forms(int r, int reps) {
  const std::size_t rr = std::size_t(r) * r;
  std::vector<std::vector<double>> S(L, std::vector<double>(rr)), z(L, std::vector<double>(r));
  for (int s = 0; s < L; ++s)  // SPD, different in every stream
    for (int i = 0; i < r; ++i) {
      z[s][i] = 1.0 + 0.01 * i + s;
      for (int j = 0; j < r; ++j) S[s][i * r + j] = (i == j ? double(r + s) : 0.0) + 1.0 / (1 + i + j + s);
    }
  std::vector<double> F(rr), x(r), tiles_out(L * (rr + r));
  std::vector<double> FL(rr * L + 8), XL(std::size_t(r) * L + 8);
  double* const fl = FL.data() + (8 - (reinterpret_cast<std::uintptr_t>(FL.data()) / sizeof(double)) % 8) % 8;
  double* const xl = XL.data() + (8 - (reinterpret_cast<std::uintptr_t>(XL.data()) / sizeof(double)) % 8) % 8;
  Row row;
  bool ok = true;
  Kokkos::parallel_for(Kokkos::TeamPolicy<Exec>(1, 1), [&](const Member& m) {
    for (int round = 0; round < 3; ++round) {
      const double keep = round > 0 ? 1.0 : 0.0;
      double f = 0, s = 0;
      for (int rep = 0; rep < reps; ++rep)
        for (int l = 0; l < L; ++l) {
          Kokkos::Timer clock;
          std::memcpy(F.data(), S[l].data(), sizeof(double) * rr);
          ok = mosaic::detail::team_cholesky_upper(m, F.data(), r, r) && ok;
          f += clock.seconds();
          clock.reset();
          std::memcpy(x.data(), z[l].data(), sizeof(double) * r);
          mosaic::detail::team_cholesky_solve(m, F.data(), r, x.data(), r);
          s += clock.seconds();
          std::memcpy(&tiles_out[l * (rr + r)], F.data(), sizeof(double) * rr);
          std::memcpy(&tiles_out[l * (rr + r) + rr], x.data(), sizeof(double) * r);
        }
      row.tiles_factor += keep * f;
      row.tiles_solve += keep * s;
      f = s = 0;
      for (int rep = 0; rep < reps; ++rep) {
        Kokkos::Timer clock;
        for (std::size_t e = 0; e < rr; ++e)
          for (int l = 0; l < L; ++l) fl[e * L + l] = S[l][e];
        ok = lanes_cholesky_upper<L, P, W>(fl, r) && ok;
        f += clock.seconds();
        clock.reset();
        for (int e = 0; e < r; ++e)
          for (int l = 0; l < L; ++l) xl[e * L + l] = z[l][e];
        lanes_cholesky_solve<L, P>(fl, xl, r);
        s += clock.seconds();
      }
      row.lanes_factor += keep * f;
      row.lanes_solve += keep * s;
    }
  });
  if (!ok) std::printf("# r = %d, %d lanes: a factorization failed\n", r, L);
  row.differing = ok ? 0 : 1;
  for (int l = 0; l < L; ++l)
    for (int i = 0; i < r; ++i) {
      for (int j = i; j < r; ++j) row.differing += tiles_out[l * (rr + r) + i * r + j] != fl[(i * r + j) * L + l];
      row.differing += tiles_out[l * (rr + r) + rr + i] != xl[i * L + l];
    }
  const double per_stream = 1e6 / (2.0 * reps * L);
  row.tiles_factor *= per_stream;
  row.tiles_solve *= per_stream;
  row.lanes_factor *= per_stream;
  row.lanes_solve *= per_stream;
  return row;
}

template <int L, int P, int W>
bool print_row(int r, int reps) {
  const Row t = time_forms<L, P, W>(r, reps);
  const double tiles = t.tiles_factor + t.tiles_solve, lanes = t.lanes_factor + t.lanes_solve;
  std::printf("| %d | %d | %d x %d | %.3f | %.3f | %.3f | %.3f | %.2fx | %.2fx | %.2fx | %ld |\n", r, L, P, W,
              t.tiles_factor, t.tiles_solve, t.lanes_factor, t.lanes_solve, t.tiles_factor / t.lanes_factor,
              t.tiles_solve / t.lanes_solve, tiles / lanes, t.differing);
  return t.differing == 0;
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  int rc = 0;
  {
    const OrderArgs args = parse_order_args(argc, argv, "mosaic_stream_lanes", 200);
    const std::vector<int>& rs = args.orders;
    const int reps = args.reps;
    if (!args.valid) rc = 2;
    if (rc == 0) {
      std::printf(
          "# the Cholesky factorization and solve of L streams' r x r S on one host thread (%s), us per stream:\n"
          "# the engine's register tiles, one stream after another, against the streams in SIMD lanes (tiles of\n"
          "# P x W entries x L lanes); each time includes the copy of S or z into the form's layout. Repetitions\n"
          "# per r: --reps %d x (64 / r)^3, at least 1\n",
          Exec::name(), reps);
      std::printf(
          "| r | lanes L | lane tile P x W | tiles: factor | tiles: solve | lanes: factor | lanes: solve | factor "
          "tiles / lanes | solve tiles / lanes | both tiles / lanes | differing entries |\n");
      std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
      for (const int r : rs) {
        const double scale = 64.0 / r;
        const int n = int(reps * scale * scale * scale) > 0 ? int(reps * scale * scale * scale) : 1;
        // The tiles the prototype's sweep found fastest for 4 and 8 lanes
        // (docs/PERFORMANCE.md).
        const bool four = print_row<4, 4, 2>(r, n), eight = print_row<8, 3, 4>(r, n);
        if (!four || !eight) rc = 1;
      }
    }
  }
  Kokkos::finalize();
  return rc;
}
