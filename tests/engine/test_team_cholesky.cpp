// The blocked update's team Cholesky factorization and solve
// (team_cholesky.hpp) against the plain sequential loops it must equal:
// bitwise on host spaces and between team sizes on every backend (each
// entry receives its updates in the loops' order, whichever thread applies
// them), within rounding of the loops on devices (nvcc may fuse a product
// and its subtraction into an FMA where the host build does not). Also:
// R^T R = A and (R^T R) x = b to rounding, and a failed pivot seen by every
// thread of the team. Each check runs the forms the engine calls (on host
// the left-looking factorization and, at team size 1, the one-thread solve)
// and the device's forms, which the CPU suite runs on host too. The posterior's other r x r routines
// (team_loops.hpp: the triangular solve of r right-hand sides and
// A + s Y^T Y, the Cholesky-QR's S L and x R^-1, the transport's S' gh;
// impl/team_gram.hpp: a Gram
// of rows; impl/team_rows_times.hpp: the steps' matrix-vector products)
// likewise against their plain loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

#include "mosaic/engine/backend.hpp"
#include "mosaic/engine/impl/team_gram.hpp"
#include "mosaic/engine/impl/team_rows_times.hpp"
#include "mosaic/engine/team_cholesky.hpp"
#include "mosaic/engine/transfer.hpp"
#include "mosaic/util/team_loops.hpp"

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using Mats = Kokkos::View<double***, Kokkos::LayoutRight, Mem>;  // count x r x ld
using Vecs = Kokkos::View<double**, Kokkos::LayoutRight, Mem>;   // count x r
using Flags = Kokkos::View<int**, Kokkos::LayoutRight, Mem>;     // count x team size: each thread's verdict

constexpr bool on_host = mosaic::is_host_space<Exec>;

// The plain loops: right-looking factorization, then R^T y = b by rows of
// R and R x = y by columns.
bool plain_cholesky(std::vector<double>& a, int r, int ld) {
  for (int j = 0; j < r; ++j) {
    const double piv = a[j * ld + j];
    if (!(piv > 0.0) || !std::isfinite(piv)) return false;
    const double rjj = std::sqrt(piv);
    for (int i = j + 1; i < r; ++i) a[j * ld + i] /= rjj;
    a[j * ld + j] = rjj;
    for (int c = j + 1; c < r; ++c) {
      const double lc = a[j * ld + c];
      for (int i = c; i < r; ++i) a[c * ld + i] -= a[j * ld + i] * lc;
    }
  }
  return true;
}

void plain_solve(const std::vector<double>& R, int r, int ld, std::vector<double>& x) {
  for (int k = 0; k < r; ++k) {
    x[k] /= R[k * ld + k];
    for (int i = k + 1; i < r; ++i) x[i] -= R[k * ld + i] * x[k];
  }
  for (int j = r - 1; j >= 0; --j) {
    x[j] /= R[j * ld + j];
    for (int i = 0; i < j; ++i) x[i] -= R[i * ld + j] * x[j];
  }
}

// Which functions a run calls: the dispatchers, as the engine does (on host
// spaces the host forms at team size 1 and the host factorization at every
// size), or the device's forms themselves, so that the CPU suite also runs
// what a GPU runs (device_cholesky_upper, cooperative_cholesky_solve).
enum class Forms { dispatched, device };

// The team forms on `count` matrices, one team of `team_size` threads each;
// ok(b, t) is thread t's verdict; x(b) is solved where the factorization held.
void on_teams(const Mats& A, const Vecs& x, const Flags& ok, int r, int team_size, Forms forms) {
  const long ld = long(A.extent(2));
  using policy = Kokkos::TeamPolicy<Exec>;
  Kokkos::parallel_for(
      "test::team_cholesky", policy(int(A.extent(0)), team_size), KOKKOS_LAMBDA(const policy::member_type& m) {
        const int b = m.league_rank();
        double* const a = &A(b, 0, 0);
        const bool device = forms == Forms::device;
        const bool factored = device ? mosaic::detail::device_cholesky_upper(m, a, ld, r)
                                     : mosaic::detail::team_cholesky_upper(m, a, ld, r);
        ok(b, m.team_rank()) = factored ? 1 : 0;
        if (factored && device) mosaic::detail::cooperative_cholesky_solve(m, a, ld, &x(b, 0), r);
        if (factored && !device) mosaic::detail::team_cholesky_solve(m, a, ld, &x(b, 0), r);
      });
  Kokkos::fence();
}

// lower_solve_columns and plus_gram on one team of `team_size` threads
// (the dispatchers, or the device's forms): in holds L, L^T, X, Y, A; out
// gets L^-1 X (L read as lower), L^-1 X (L read as the transpose of an
// upper factor) and A - Y^T Y / 2. A free function: Cuda's extended
// lambdas may not sit in a test body.
void team_loops_on_one_team(const Mats& in, const Mats& out, int r, int team_size, Forms forms) {
  using policy = Kokkos::TeamPolicy<Exec>;
  Kokkos::parallel_for(
      "test::team_loops", policy(1, team_size), KOKKOS_LAMBDA(const policy::member_type& m) {
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, r * r), [&](const int e) {
          out(0, e / r, e % r) = in(2, e / r, e % r);
          out(1, e / r, e % r) = in(2, e / r, e % r);
        });
        m.team_barrier();
        auto X0 = Kokkos::subview(out, 0, Kokkos::ALL(), Kokkos::ALL());
        auto X1 = Kokkos::subview(out, 1, Kokkos::ALL(), Kokkos::ALL());
        const auto lower = [&](const int i, const int k) { return in(0, i, k); };
        const auto upper_transposed = [&](const int i, const int k) { return in(1, k, i); };
        const auto A = Kokkos::subview(in, 4, Kokkos::ALL(), Kokkos::ALL());
        const auto Y = Kokkos::subview(in, 3, Kokkos::ALL(), Kokkos::ALL());
        const auto G = Kokkos::subview(out, 2, Kokkos::ALL(), Kokkos::ALL());
        if (forms == Forms::device) {
          mosaic::detail::device_lower_solve_columns(m, r, lower, X0);
          mosaic::detail::device_lower_solve_columns(m, r, upper_transposed, X1);
          mosaic::detail::device_plus_gram(m, r, A, -0.5, Y, G);
        } else {
          mosaic::detail::lower_solve_columns(m, r, lower, X0);
          mosaic::detail::lower_solve_columns(m, r, upper_transposed, X1);
          mosaic::detail::plus_gram(m, r, A, -0.5, Y, G);
        }
      });
  Kokkos::fence();
}

// team_gram_lower's two forms on one team: G(f) = the lower triangle of
// sum_k rows(k, :)^T rows(k, :) in double from float rows, by the host
// form (f = 0) and the device form (f = 1); on a device both run there
// (plain loops a device can run; its contraction of multiply-adds makes
// them near, not bitwise, there).
using FloatRows = Kokkos::View<float**, Kokkos::LayoutRight, Mem>;
void gram_forms_on_one_team(const FloatRows& rows, const Mats& G, int r, int team_size) {
  using policy = Kokkos::TeamPolicy<Exec>;
  const int n = rows.extent_int(0);
  Kokkos::parallel_for(
      "test::gram_forms", policy(1, team_size), KOKKOS_LAMBDA(const policy::member_type& m) {
        const auto G0 = Kokkos::subview(G, 0, Kokkos::ALL(), Kokkos::ALL());
        const auto G1 = Kokkos::subview(G, 1, Kokkos::ALL(), Kokkos::ALL());
        mosaic::detail::host_gram_lower(
            m, r, n, [&](const int k) { return &rows(k, 0); }, G0);
        mosaic::detail::device_gram_lower(
            m, r, n, [&](const int k, const int a) { return rows(k, a); }, G1);
      });
  Kokkos::fence();
}

// team_rows_times' two forms on one team: y(f) (+)= sum_{j < J} M(j, :) x(j)
// over the first n entries of rows of leading dimension ld, by the host
// form (f = 0) and the device form (f = 1), from y(f)'s initial values when
// `accumulate`; on a device both run there.
void rows_times_on_one_team(const Vecs& M, const Vecs& x, const Vecs& y, int n, int J, bool accumulate, int team_size) {
  using policy = Kokkos::TeamPolicy<Exec>;
  const int ld = M.extent_int(1);
  Kokkos::parallel_for(
      "test::rows_times", policy(1, team_size), KOKKOS_LAMBDA(const policy::member_type& m) {
        mosaic::detail::host_rows_times(m, n, J, &M(0, 0), ld, &x(0, 0), &y(0, 0), accumulate);
        mosaic::detail::cooperative_rows_times(m, n, J, &M(0, 0), ld, &x(0, 0), &y(1, 0), accumulate);
      });
  Kokkos::fence();
}

// times_lower and rows_times_inverse_upper on one team: in holds S and an
// upper-triangular R; SL(f) = S L with L = R^T read as L(t, c) = R(c, t),
// and the rows of X(f) (rows x r) become X R^-1, by the dispatched forms
// (f = 0: on host spaces the register tiles and groups of
// host_interleaved_rows rows) and the device's forms (f = 1: an entry and
// a row per thread), and (f = 2) by groups of 3 rows; on a device all run
// there.
void triangular_forms_on_one_team(const Mats& in, const Mats& SL, const Mats& X, int r, int team_size) {
  using policy = Kokkos::TeamPolicy<Exec>;
  const int rows = X.extent_int(1);
  Kokkos::parallel_for(
      "test::triangular_forms", policy(1, team_size), KOKKOS_LAMBDA(const policy::member_type& m) {
        const auto S = Kokkos::subview(in, 0, Kokkos::ALL(), Kokkos::ALL());
        const auto lower = [&](const int t, const int c) { return in(1, c, t); };
        const double* const R = &in(1, 0, 0);
        const long ld = long(in.stride(1));
        mosaic::detail::times_lower<double>(m, r, S, lower, Kokkos::subview(SL, 0, Kokkos::ALL(), Kokkos::ALL()));
        mosaic::detail::device_times_lower<double>(m, r, S, lower,
                                                   Kokkos::subview(SL, 1, Kokkos::ALL(), Kokkos::ALL()));
        mosaic::detail::rows_times_inverse_upper(m, R, ld, r, rows, [&](const int p) { return &X(0, p, 0); });
        mosaic::detail::rows_times_inverse_upper_in_groups<1>(m, R, ld, r, rows,
                                                              [&](const int p) { return &X(1, p, 0); });
        mosaic::detail::rows_times_inverse_upper_in_groups<3>(m, R, ld, r, rows,
                                                              [&](const int p) { return &X(2, p, 0); });
      });
  Kokkos::fence();
}

// rows_dot on one team: y(f) = M x over the first `cols` columns, by the
// dispatched form (f = 0: on host spaces groups of host_interleaved_rows
// rows), a row per thread (f = 1: the device's form) and groups of 3 rows
// (f = 2); on a device all run there.
void rows_dot_forms_on_one_team(const Vecs& M, const Vecs& x, const Vecs& y, int cols, int team_size) {
  using policy = Kokkos::TeamPolicy<Exec>;
  const int rows = M.extent_int(0);
  Kokkos::parallel_for(
      "test::rows_dot", policy(1, team_size), KOKKOS_LAMBDA(const policy::member_type& m) {
        const auto xv = Kokkos::subview(x, 0, Kokkos::ALL());
        mosaic::detail::rows_dot<double>(m, rows, cols, M, xv, Kokkos::subview(y, 0, Kokkos::ALL()));
        mosaic::detail::rows_dot_in_groups<1, double>(m, rows, cols, M, xv, Kokkos::subview(y, 1, Kokkos::ALL()));
        mosaic::detail::rows_dot_in_groups<3, double>(m, rows, cols, M, xv, Kokkos::subview(y, 2, Kokkos::ALL()));
      });
  Kokkos::fence();
}

// An SPD r x r matrix X X^T / r + I (upper triangle stored, lower left as
// NaN: never written, and its values must not reach the upper triangle;
// the host's tiles read some of it) in a row of leading dimension ld.
std::vector<double> spd(int r, int ld, std::mt19937_64& gen) {
  std::normal_distribution<double> n01;
  std::vector<double> X(std::size_t(r) * r), a(std::size_t(r) * ld, std::numeric_limits<double>::quiet_NaN());
  for (double& v : X) v = n01(gen);
  for (int i = 0; i < r; ++i)
    for (int j = i; j < r; ++j) {
      double s = i == j ? 1.0 : 0.0;
      for (int p = 0; p < r; ++p) s += X[i * r + p] * X[j * r + p] / r;
      a[i * ld + j] = s;
    }
  return a;
}

std::vector<int> team_sizes() {
  std::vector<int> sizes;
  const int most = on_host ? Exec().concurrency() : 128;
  for (int ts : {1, 2, 3, 4, 5, 8, 32, 64, 128})
    if (ts <= most) sizes.push_back(ts);
  return sizes;
}

struct TeamResult {
  std::vector<std::vector<double>> R, x;
  std::vector<std::vector<int>> ok;
};

TeamResult run(const std::vector<std::vector<double>>& mats, const std::vector<std::vector<double>>& rhs, int r, int ld,
               int team_size, Forms forms) {
  const int count = int(mats.size());
  Mats A("A", count, r, ld);
  Vecs x("x", count, r);
  Flags ok("ok", count, team_size);
  auto hA = mosaic::transfer::to_host(A);
  auto hx = mosaic::transfer::to_host(x);
  for (int b = 0; b < count; ++b)
    for (int i = 0; i < r; ++i) {
      hx(b, i) = rhs[b][i];
      for (int j = 0; j < ld; ++j) hA(b, i, j) = mats[b][i * ld + j];
    }
  mosaic::transfer::copy_from_host(A, hA);
  mosaic::transfer::copy_from_host(x, hx);
  on_teams(A, x, ok, r, team_size, forms);
  hA = mosaic::transfer::to_host(A);
  hx = mosaic::transfer::to_host(x);
  const auto hok = mosaic::transfer::to_host(ok);
  TeamResult out;
  for (int b = 0; b < count; ++b) {
    std::vector<double> R(std::size_t(r) * ld), xb(r);
    std::vector<int> verdicts(team_size);
    for (int i = 0; i < r; ++i) {
      xb[i] = hx(b, i);
      for (int j = 0; j < ld; ++j) R[i * ld + j] = hA(b, i, j);
    }
    for (int t = 0; t < team_size; ++t) verdicts[t] = hok(b, t);
    out.R.push_back(R);
    out.x.push_back(xb);
    out.ok.push_back(verdicts);
  }
  return out;
}

// Bitwise equality of doubles, NaN equal to NaN (the untouched lower triangle).
bool same_bits(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

TEST(TeamCholesky, EqualsThePlainLoopsAtEveryTeamSize) {
  std::mt19937_64 gen(20261204);
  // 9: a one-row panel after a full one; 17 and 41: the host's leftmost
  // tile crossing the diagonal by 7 columns (37: by 3).
  for (int r : {1, 2, 3, 4, 5, 8, 9, 13, 17, 37, 41, 64}) {
    const int ld = r + 3;  // rows not packed: the leading dimension is honoured
    std::vector<std::vector<double>> mats, rhs;
    std::normal_distribution<double> n01;
    for (int b = 0; b < 3; ++b) {
      mats.push_back(spd(r, ld, gen));
      std::vector<double> v(r);
      for (double& e : v) e = n01(gen);
      rhs.push_back(v);
    }
    // The plain loops, and the exactness of their result.
    std::vector<std::vector<double>> plainR = mats, plainx = rhs;
    for (int b = 0; b < 3; ++b) {
      ASSERT_TRUE(plain_cholesky(plainR[b], r, ld));
      plain_solve(plainR[b], r, ld, plainx[b]);
      double err = 0, scale = 0, res = 0, bnorm = 0;
      for (int i = 0; i < r; ++i) {
        for (int j = i; j < r; ++j) {
          double s = 0;
          for (int p = 0; p <= i; ++p) s += plainR[b][p * ld + i] * plainR[b][p * ld + j];
          err = std::max(err, std::abs(s - mats[b][i * ld + j]));
          scale = std::max(scale, std::abs(mats[b][i * ld + j]));
        }
        double ax = 0;  // (A x)_i from the upper triangle
        for (int j = 0; j < r; ++j) ax += (j >= i ? mats[b][i * ld + j] : mats[b][j * ld + i]) * plainx[b][j];
        res = std::max(res, std::abs(ax - rhs[b][i]));
        bnorm = std::max(bnorm, std::abs(rhs[b][i]));
      }
      EXPECT_LT(err, 1e-13 * scale * r) << "r = " << r;
      EXPECT_LT(res, 1e-11 * bnorm * r) << "r = " << r;
    }
    const TeamResult one = run(mats, rhs, r, ld, 1, Forms::dispatched);
    for (const Forms forms : {Forms::dispatched, Forms::device})
      for (int ts : team_sizes()) {
        const TeamResult t = ts == 1 && forms == Forms::dispatched ? one : run(mats, rhs, r, ld, ts, forms);
        for (int b = 0; b < 3; ++b) {
          const std::string where = "r = " + std::to_string(r) + ", team size " + std::to_string(ts) + ", matrix " +
                                    std::to_string(b) + (forms == Forms::device ? ", device forms" : "");
          for (int v : t.ok[b]) EXPECT_EQ(v, 1) << where;
          for (std::size_t i = 0; i < t.R[b].size(); ++i) {
            ASSERT_TRUE(same_bits(t.R[b][i], one.R[b][i])) << where << ", entry " << i;
            if (on_host) {
              ASSERT_TRUE(same_bits(t.R[b][i], plainR[b][i])) << where << ", entry " << i;
            } else if (!std::isnan(plainR[b][i])) {
              ASSERT_NEAR(t.R[b][i], plainR[b][i], 1e-12 * (1 + std::abs(plainR[b][i]))) << where << ", entry " << i;
            }
          }
          for (int i = 0; i < r; ++i) {
            ASSERT_TRUE(same_bits(t.x[b][i], one.x[b][i])) << where << ", x " << i;
            if (on_host) ASSERT_TRUE(same_bits(t.x[b][i], plainx[b][i])) << where << ", x " << i;
            else ASSERT_NEAR(t.x[b][i], plainx[b][i], 1e-10 * (1 + std::abs(plainx[b][i]))) << where << ", x " << i;
          }
        }
      }
  }
}

// lower_solve_columns (L given as a lower factor and as the transpose of an
// upper one) and plus_gram on teams of every size, in the dispatched and
// the device's forms, against the plain loops (r = 8, 16, 64, 128: whole
// host tiles; 13, 17, 37, 41: a short last tile of rows and columns):
// X(i, c) = (X(i, c) - sum_{k < i} L(i, k) X(k, c)) / L(i, i), each sum in
// increasing k; out = A + s sum_k Y(k, a) Y(k, c), from 0 in increasing k.
TEST(TeamLoops, SolveAndGramEqualThePlainLoopsAtEveryTeamSize) {
  std::mt19937_64 gen(20261205);
  std::normal_distribution<double> n01;
  for (int r : {1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 37, 41, 64, 128}) {
    std::vector<double> L(std::size_t(r) * r), X(L.size()), Y(L.size()), A(L.size());
    for (int i = 0; i < r; ++i)
      for (int j = 0; j < r; ++j) {
        L[i * r + j] = j < i ? n01(gen) : j == i ? 1.5 + std::abs(n01(gen)) : 0.0;
        X[i * r + j] = n01(gen);
        Y[i * r + j] = n01(gen);
      }
    for (int i = 0; i < r; ++i)
      for (int j = 0; j < r; ++j) A[i * r + j] = n01(gen);  // not symmetric: each entry its own A(a, c)
    std::vector<double> solved = X, gram(L.size());
    for (int c = 0; c < r; ++c)
      for (int i = 0; i < r; ++i) {
        double v = solved[i * r + c];
        for (int k = 0; k < i; ++k) v -= L[i * r + k] * solved[k * r + c];
        solved[i * r + c] = v / L[i * r + i];
      }
    for (int a = 0; a < r; ++a)
      for (int c = 0; c < r; ++c) {
        double v = 0;
        for (int k = 0; k < r; ++k) v += Y[k * r + a] * Y[k * r + c];
        gram[a * r + c] = A[a * r + c] - 0.5 * v;
      }
    for (const Forms forms : {Forms::dispatched, Forms::device})
      for (int ts : team_sizes()) {
        Mats in("in", 5, r, r), out("out", 3, r, r);  // in: L, L^T, X, Y, A; out: L^-1 X twice, A - Y^T Y / 2
        auto h = mosaic::transfer::to_host(in);
        for (int i = 0; i < r; ++i)
          for (int j = 0; j < r; ++j) {
            h(0, i, j) = L[i * r + j];
            h(1, j, i) = L[i * r + j];
            h(2, i, j) = X[i * r + j];
            h(3, i, j) = Y[i * r + j];
            h(4, i, j) = A[i * r + j];
          }
        mosaic::transfer::copy_from_host(in, h);
        team_loops_on_one_team(in, out, r, ts, forms);
        const auto ho = mosaic::transfer::to_host(out);
        for (int i = 0; i < r; ++i)
          for (int j = 0; j < r; ++j) {
            const std::string where = "r = " + std::to_string(r) + ", team size " + std::to_string(ts) +
                                      (forms == Forms::device ? ", device forms" : "") + ", entry (" +
                                      std::to_string(i) + ", " + std::to_string(j) + ")";
            const double want[3] = {solved[i * r + j], solved[i * r + j], gram[i * r + j]};
            for (int q = 0; q < 3; ++q) {
              if (on_host) ASSERT_TRUE(same_bits(ho(q, i, j), want[q])) << where << ", result " << q;
              else ASSERT_NEAR(ho(q, i, j), want[q], 1e-10 * (1 + std::abs(want[q]))) << where << ", result " << q;
            }
          }
      }
  }
}

// The Cholesky-QR's rotation of S (S L, frame_rotation.hpp) and its solve
// of the coefficient rows (x R^-1, block_reorthonormalize.hpp; U L^-T in
// the sequential kernel): every form gives the plain loops' bits on teams
// of every size (r = 8 to 64: whole tiles; 1, 3, 7, 9, 13, 37: the short
// edge tiles; row counts that leave a short last group).
TEST(TeamLoops, TimesLowerAndRowSolveEqualThePlainLoopsAtEveryTeamSize) {
  std::mt19937_64 gen(20261208);
  std::normal_distribution<double> n01;
  for (int r : {1, 2, 3, 7, 8, 9, 13, 16, 17, 37, 64}) {
    const int rows = r + 13;
    std::vector<double> S(std::size_t(r) * r), R(S.size()), X(std::size_t(rows) * r);
    for (int i = 0; i < r; ++i)
      for (int j = 0; j < r; ++j) {
        S[i * r + j] = n01(gen);  // not symmetric: each entry its own S(a, t)
        R[i * r + j] = j > i ? n01(gen) : j == i ? 1.5 + std::abs(n01(gen)) : std::nan("");  // lower: never read
      }
    for (double& v : X) v = n01(gen);
    std::vector<double> product(S.size()), solved = X;
    for (int a = 0; a < r; ++a)
      for (int c = 0; c < r; ++c) {
        double v = 0;
        for (int t = c; t < r; ++t) v += S[a * r + t] * R[c * r + t];
        product[a * r + c] = v;
      }
    for (int p = 0; p < rows; ++p)
      for (int c = 0; c < r; ++c) {
        double v = solved[p * r + c];
        for (int q = 0; q < c; ++q) v -= solved[p * r + q] * R[q * r + c];
        solved[p * r + c] = v / R[c * r + c];
      }
    for (int ts : team_sizes()) {
      Mats in("in", 2, r, r), SL("SL", 2, r, r), Xs("X", 3, rows, r);
      auto hin = mosaic::transfer::to_host(in);
      auto hX = mosaic::transfer::to_host(Xs);
      for (int i = 0; i < r; ++i)
        for (int j = 0; j < r; ++j) {
          hin(0, i, j) = S[i * r + j];
          hin(1, i, j) = R[i * r + j];
        }
      for (int f = 0; f < 3; ++f)
        for (int p = 0; p < rows; ++p)
          for (int c = 0; c < r; ++c) hX(f, p, c) = X[p * r + c];
      mosaic::transfer::copy_from_host(in, hin);
      mosaic::transfer::copy_from_host(Xs, hX);
      triangular_forms_on_one_team(in, SL, Xs, r, ts);
      const auto hSL = mosaic::transfer::to_host(SL);
      hX = mosaic::transfer::to_host(Xs);
      const std::string where = "r = " + std::to_string(r) + ", team size " + std::to_string(ts);
      for (int f = 0; f < 2; ++f)
        for (int a = 0; a < r; ++a)
          for (int c = 0; c < r; ++c) {
            const double want = product[a * r + c];
            if (on_host)
              ASSERT_TRUE(same_bits(hSL(f, a, c), want)) << where << ", S L form " << f << " at " << a << ", " << c;
            else ASSERT_NEAR(hSL(f, a, c), want, 1e-10 * (1 + std::abs(want))) << where << ", S L form " << f;
          }
      for (int f = 0; f < 3; ++f)
        for (int p = 0; p < rows; ++p)
          for (int c = 0; c < r; ++c) {
            const double want = solved[p * r + c];
            if (on_host)
              ASSERT_TRUE(same_bits(hX(f, p, c), want)) << where << ", x R^-1 form " << f << " at " << p << ", " << c;
            else ASSERT_NEAR(hX(f, p, c), want, 1e-10 * (1 + std::abs(want))) << where << ", x R^-1 form " << f;
          }
    }
  }
}

// The transport's u = S' gh (frame_rotation.hpp): every form of rows_dot
// gives the plain loops' bits on teams of every size, with row counts that
// leave a short last group.
TEST(TeamLoops, RowsDotEqualsThePlainLoopsAtEveryTeamSize) {
  std::mt19937_64 gen(20261209);
  std::normal_distribution<double> n01;
  for (int rows : {1, 2, 7, 8, 9, 17, 64, 77}) {
    const int cols = rows % 5 + 3 * rows / 2;
    Vecs M("M", rows, cols), x("x", 1, cols), y("y", 3, rows);
    auto hM = mosaic::transfer::to_host(M);
    auto hx = mosaic::transfer::to_host(x);
    for (int c = 0; c < cols; ++c) hx(0, c) = n01(gen);
    std::vector<double> want(rows);
    for (int a = 0; a < rows; ++a) {
      double v = 0;
      for (int c = 0; c < cols; ++c) {
        hM(a, c) = n01(gen);
        v += hM(a, c) * hx(0, c);
      }
      want[a] = v;
    }
    mosaic::transfer::copy_from_host(M, hM);
    mosaic::transfer::copy_from_host(x, hx);
    for (int ts : team_sizes()) {
      rows_dot_forms_on_one_team(M, x, y, cols, ts);
      const auto hy = mosaic::transfer::to_host(y);
      for (int f = 0; f < 3; ++f)
        for (int a = 0; a < rows; ++a) {
          const std::string where = std::to_string(rows) + " rows, team size " + std::to_string(ts) + ", form " +
                                    std::to_string(f) + ", row " + std::to_string(a);
          if (on_host) ASSERT_TRUE(same_bits(hy(f, a), want[a])) << where;
          else ASSERT_NEAR(hy(f, a), want[a], 1e-10 * (1 + std::abs(want[a]))) << where;
        }
    }
  }
}

// 7.8's Gram of basis rows (team_gram_lower): the host's register tiles
// and the device's entry per thread give the plain loops' bits on teams of
// every size (r = 8 to 64: whole tiles; 1, 5, 13, 37: entries outside
// them), each entry one running sum in double in increasing k.
TEST(TeamGram, BothFormsEqualThePlainLoopsAtEveryTeamSize) {
  std::mt19937_64 gen(20261207);
  std::normal_distribution<float> n01;
  for (int r : {1, 5, 8, 13, 16, 37, 64}) {
    const int n = 3 * r + 7;
    FloatRows rows("rows", n, r);
    auto hr = mosaic::transfer::to_host(rows);
    for (int k = 0; k < n; ++k)
      for (int a = 0; a < r; ++a) hr(k, a) = n01(gen);
    mosaic::transfer::copy_from_host(rows, hr);
    for (int ts : team_sizes()) {
      Mats G("G", 2, r, r);
      gram_forms_on_one_team(rows, G, r, ts);
      const auto hg = mosaic::transfer::to_host(G);
      for (int a = 0; a < r; ++a)
        for (int c = 0; c <= a; ++c) {
          double want = 0;
          for (int k = 0; k < n; ++k) want += double(hr(k, a)) * double(hr(k, c));
          const std::string where = "r = " + std::to_string(r) + ", team size " + std::to_string(ts) + ", entry (" +
                                    std::to_string(a) + ", " + std::to_string(c) + ")";
          for (int f = 0; f < 2; ++f) {
            const char* form = f == 0 ? ", host form" : ", device form";
            if (on_host) ASSERT_TRUE(same_bits(hg(f, a, c), want)) << where << form;
            else ASSERT_NEAR(hg(f, a, c), want, 1e-10 * (1 + std::abs(want))) << where << form;
          }
        }
    }
  }
}

// The coefficient steps' matrix-vector products (team_rows_times): the
// host's register tiles (n = 32, 64, 100: whole tiles and a rest; others:
// a share without one) and the device's register per result give the plain
// loops' bits on teams of every size, each y(a) one running sum in
// increasing j, from 0 or from y's value.
TEST(TeamRowsTimes, BothFormsEqualThePlainLoopsAtEveryTeamSize) {
  std::mt19937_64 gen(20261207);
  std::normal_distribution<double> n01;
  for (int n : {1, 5, 31, 32, 33, 64, 100})
    for (int J : {0, 1, 7, 64})
      for (bool accumulate : {false, true}) {
        const int ld = n + 3;
        Vecs M("M", J > 0 ? J : 1, ld), x("x", 1, J > 0 ? J : 1), y("y", 2, n);
        auto hM = mosaic::transfer::to_host(M);
        auto hx = mosaic::transfer::to_host(x);
        for (int j = 0; j < J; ++j) {
          hx(0, j) = n01(gen);
          for (int a = 0; a < ld; ++a) hM(j, a) = a < n ? n01(gen) : std::numeric_limits<double>::quiet_NaN();
        }
        std::vector<double> y0(n);
        for (double& v : y0) v = n01(gen);
        mosaic::transfer::copy_from_host(M, hM);
        mosaic::transfer::copy_from_host(x, hx);
        for (int ts : team_sizes()) {
          auto hy = mosaic::transfer::to_host(y);
          for (int f = 0; f < 2; ++f)
            for (int a = 0; a < n; ++a) hy(f, a) = y0[a];
          mosaic::transfer::copy_from_host(y, hy);
          rows_times_on_one_team(M, x, y, n, J, accumulate, ts);
          hy = mosaic::transfer::to_host(y);
          for (int a = 0; a < n; ++a) {
            double want = accumulate ? y0[a] : 0.0;
            for (int j = 0; j < J; ++j) want += hM(j, a) * hx(0, j);
            const std::string where = "n = " + std::to_string(n) + ", J = " + std::to_string(J) +
                                      (accumulate ? ", accumulating" : "") + ", team size " + std::to_string(ts) +
                                      ", entry " + std::to_string(a);
            for (int f = 0; f < 2; ++f) {
              const char* form = f == 0 ? ", host form" : ", device form";
              if (on_host) ASSERT_TRUE(same_bits(hy(f, a), want)) << where << form;
              else ASSERT_NEAR(hy(f, a), want, 1e-10 * (1 + std::abs(want))) << where << form;
            }
          }
        }
      }
}

TEST(TeamCholesky, AFailedPivotIsSeenByEveryThread) {
  std::mt19937_64 gen(7);
  const int r = 37, ld = r;
  // Matrix 0 is SPD; 1 loses positive definiteness at pivot 6 (a diagonal
  // below the sum of squares above it), 2 at pivot 0, 3 has a NaN pivot at
  // 9, 4 an infinite one at 11, 5 a negative one at 20 (on host after the
  // tiles' updates of its panel) and 6 at 36 (the short last panel).
  std::vector<std::vector<double>> mats(7, spd(r, ld, gen));
  mats[1][6 * ld + 6] = -1.0;
  mats[2][0] = 0.0;
  mats[3][9 * ld + 9] = std::numeric_limits<double>::quiet_NaN();
  mats[4][11 * ld + 11] = std::numeric_limits<double>::infinity();
  mats[5][20 * ld + 20] = -1.0;
  mats[6][36 * ld + 36] = -1.0;
  const std::vector<std::vector<double>> rhs(7, std::vector<double>(r, 1.0));
  for (const Forms forms : {Forms::dispatched, Forms::device})
    for (int ts : team_sizes()) {
      const TeamResult t = run(mats, rhs, r, ld, ts, forms);
      for (int b = 0; b < 7; ++b) {
        std::vector<double> plain = mats[b];
        const int expected = plain_cholesky(plain, r, ld) ? 1 : 0;
        EXPECT_EQ(expected, b == 0 ? 1 : 0);
        for (int v : t.ok[b]) EXPECT_EQ(v, expected) << "team size " << ts << ", matrix " << b;
      }
    }
}

}  // namespace
