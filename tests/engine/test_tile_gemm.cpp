// The register-tiled micro-kernels of the blocked update (tile_gemm.hpp)
// against the naive loops they replace: every entry is one running sum in
// the same order, so the results must be bitwise equal, for full and tail
// tiles, accumulation into existing values, and both scalar types.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "mosaic/algorithm/counter_rng.hpp"
#include "mosaic/engine/tile_gemm.hpp"

namespace {

using namespace mosaic;

template <class T>
std::vector<T> random_matrix(int rows, int cols, std::uint64_t salt) {
  std::vector<T> v(std::size_t(rows) * cols);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = T(counter_normal(5, RngDomain::noise, salt, i, 0));
  return v;
}

template <class T, int W>
void check_inner_tile(int i0, int i1) {
  const int rows = i1 + 3, ldp = tile::MR + 5, ldq = W + 7, ldc = W + 2;
  const auto P = random_matrix<T>(rows, ldp, 1), Q = random_matrix<T>(rows, ldq, 2);
  const auto C0 = random_matrix<T>(tile::MR, ldc, 3);
  std::vector<T> C = C0, want = C0;
  tile::inner_tile<T, W>(i0, i1, P.data(), ldp, Q.data(), ldq, C.data(), ldc);
  for (int a = 0; a < tile::MR; ++a)
    for (int c = 0; c < W; ++c) {
      T s = want[a * ldc + c];
      for (int i = i0; i < i1; ++i) s += P[i * ldp + a] * Q[i * ldq + c];
      want[a * ldc + c] = s;
    }
  EXPECT_EQ(C, want);  // includes the untouched columns W.. of each row
}

template <class T, int W>
void check_outer_tile(int kk) {
  const int ldw = W + 3, ldo = W + 5;
  const auto Pt = random_matrix<T>(kk, tile::MR, 4), Wm = random_matrix<T>(kk, ldw, 5);
  std::vector<T> O(std::size_t(tile::MR) * ldo, T(7)), want = O;
  tile::outer_tile<T, W>(kk, Pt.data(), Wm.data(), ldw, O.data(), ldo);
  for (int a = 0; a < tile::MR; ++a)
    for (int c = 0; c < W; ++c) {
      T s = T(0);
      for (int p = 0; p < kk; ++p) s += Pt[p * tile::MR + a] * Wm[p * ldw + c];
      want[a * ldo + c] = s;
    }
  EXPECT_EQ(O, want);
}

TEST(TileGemm, InnerTileEqualsNaiveLoopBitwise) {
  check_inner_tile<float, tile::NR<float>>(0, 131);
  check_inner_tile<float, tile::NR_MID<float>>(2, 50);
  check_inner_tile<float, tile::NR_TAIL<float>>(5, 77);
  check_inner_tile<double, tile::NR<double>>(0, 131);
  check_inner_tile<double, tile::NR_MID<double>>(1, 40);
  check_inner_tile<double, tile::NR_TAIL<double>>(3, 4);
}

TEST(TileGemm, OuterTileEqualsNaiveLoopBitwise) {
  check_outer_tile<float, tile::NR<float>>(129);
  check_outer_tile<float, tile::NR_MID<float>>(33);
  check_outer_tile<float, tile::NR_TAIL<float>>(17);
  check_outer_tile<double, tile::NR<double>>(129);
  check_outer_tile<double, tile::NR_MID<double>>(20);
  check_outer_tile<double, tile::NR_TAIL<double>>(1);
}

// Records the tiles for_each_column_tile hands out; callable on host and
// device, as the kernels' own tile bodies are (a host lambda is not).
// Tiles past `capacity` are counted, not stored.
struct TileRecorder {
  int* c0s;
  int* widths;
  int capacity;
  int* count;
  KOKKOS_INLINE_FUNCTION void operator()(int c0, int w) const {
    if (*count < capacity) {
      c0s[*count] = c0;
      widths[*count] = w;
    }
    *count += 1;
  }
};

TEST(TileGemm, ColumnTilesCoverEveryColumnOnce) {
  for (int ncols : {0, tile::NR_TAIL<float>, 3 * tile::NR_TAIL<float>, tile::NR<float>,
                    tile::NR<float> + tile::NR_TAIL<float>, 5 * tile::NR<float> + 2 * tile::NR_TAIL<float>}) {
    const int most = ncols / tile::NR_TAIL<float> + 1;
    std::vector<int> c0s(most), widths(most);
    int count = 0;
    tile::for_each_column_tile<float>(ncols, TileRecorder{c0s.data(), widths.data(), most, &count});
    ASSERT_LE(count, most);
    std::vector<int> hits(ncols, 0);
    for (int t = 0; t < count; ++t) {
      const int w = widths[t];
      EXPECT_TRUE(w == tile::NR<float> || w == tile::NR_MID<float> || w == tile::NR_TAIL<float>);
      for (int c = c0s[t]; c < c0s[t] + w; ++c) {
        ASSERT_LT(c, ncols);
        hits[c] += 1;
      }
    }
    for (int c = 0; c < ncols; ++c) EXPECT_EQ(hits[c], 1) << "ncols " << ncols << " column " << c;
  }
}

}  // namespace
