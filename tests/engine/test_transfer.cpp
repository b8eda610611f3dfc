// transfer.hpp, the one host/device copy helper, on the layouts whose
// create_mirror_view_and_copy or deep_copy throws on a device (issue 27's
// faults 2 and 3): a stream's rows of a LayoutLeft block, a column range of
// a column-major matrix, strided rows, a column of a row-major matrix; and
// on the ones copied as they lie (LayoutRight, a LayoutStride stream block
// of a row-major batch, a single element). The views live in the default
// execution space's memory: on the host backend the helper takes the same
// packs and span copies as on a device, so this suite catches there what
// would fail on a GPU.
#include <gtest/gtest.h>

#include <string>

#include <Kokkos_Core.hpp>

#include "mosaic/engine/transfer.hpp"

namespace {

using Mem = Kokkos::DefaultExecutionSpace::memory_space;
using Exec = Kokkos::DefaultExecutionSpace;

// The value a test view holds at (i, j, k): distinct for every index.
KOKKOS_INLINE_FUNCTION double tag(std::size_t i, std::size_t j = 0, std::size_t k = 0) {
  return double(i) * 1e6 + double(j) * 1e3 + double(k);
}

// v(i, j, k) = tag(i, j, k) on the execution space (kernels in free
// functions: nvcc takes no extended lambda in a test body).
template <class V>
void fill_tagged(const V& v) {
  if constexpr (V::rank == 1) {
    Kokkos::parallel_for(
        Kokkos::RangePolicy<Exec>(0, v.extent(0)), KOKKOS_LAMBDA(const int i) { v(i) = tag(i); });
  } else if constexpr (V::rank == 2) {
    Kokkos::parallel_for(
        Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2>>({0, 0}, {int(v.extent(0)), int(v.extent(1))}),
        KOKKOS_LAMBDA(const int i, const int j) { v(i, j) = tag(i, j); });
  } else {
    Kokkos::parallel_for(
        Kokkos::MDRangePolicy<Exec, Kokkos::Rank<3>>({0, 0, 0}, {int(v.extent(0)), int(v.extent(1)), int(v.extent(2))}),
        KOKKOS_LAMBDA(const int i, const int j, const int k) { v(i, j, k) = tag(i, j, k); });
  }
  Kokkos::fence();
}

// Number of elements of v (on the execution space) that differ from
// expected(i, j, k) (a host copy of v's extents): the check of a copy
// from the host, made on the execution space, where v lives.
template <class V, class H>
int count_mismatches(const V& v, const H& expected) {
  Kokkos::View<typename H::non_const_data_type, Kokkos::LayoutRight, Mem> e(
      "expected", v.extent(0), v.extent(1), V::rank > 2 ? v.extent(2) : KOKKOS_INVALID_INDEX);
  mosaic::transfer::copy_from_host(e, expected);
  int bad = 0;
  if constexpr (V::rank == 2) {
    Kokkos::parallel_reduce(
        Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2>>({0, 0}, {int(v.extent(0)), int(v.extent(1))}),
        KOKKOS_LAMBDA(const int i, const int j, int& n) { n += v(i, j) != e(i, j); }, bad);
  } else {
    Kokkos::parallel_reduce(
        Kokkos::MDRangePolicy<Exec, Kokkos::Rank<3>>({0, 0, 0}, {int(v.extent(0)), int(v.extent(1)), int(v.extent(2))}),
        KOKKOS_LAMBDA(const int i, const int j, const int k, int& n) { n += v(i, j, k) != e(i, j, k); }, bad);
  }
  return bad;
}

// Number of elements of the host copy h that differ from expected(i, j, k)
// (the index of h, as many as its rank).
template <class H, class F>
int count_unlike(const H& h, const F& expected) {
  int bad = 0;
  if constexpr (H::rank == 0) {
    bad += h() != expected();
  } else if constexpr (H::rank == 1) {
    for (std::size_t i = 0; i < h.extent(0); ++i) bad += h(i) != expected(i);
  } else if constexpr (H::rank == 2) {
    for (std::size_t i = 0; i < h.extent(0); ++i)
      for (std::size_t j = 0; j < h.extent(1); ++j) bad += h(i, j) != expected(i, j);
  } else {
    for (std::size_t i = 0; i < h.extent(0); ++i)
      for (std::size_t j = 0; j < h.extent(1); ++j)
        for (std::size_t k = 0; k < h.extent(2); ++k) bad += h(i, j, k) != expected(i, j, k);
  }
  return bad;
}

// The same for a copy of a whole tagged view: h(idx) = tag(idx).
template <class H>
int count_untagged(const H& h) {
  return count_unlike(h, [](auto... idx) { return tag(idx...); });
}

// Fault 2's pattern: one stream's n x d rows of a B x n x d LayoutLeft
// block (the default layout on Cuda): strides (B, B n), not contiguous.
TEST(Transfer, StreamRowsOfALayoutLeftBlock) {
  const int B = 3, n = 5, d = 7;
  Kokkos::View<double***, Kokkos::LayoutLeft, Mem> X("X", B, n, d);
  fill_tagged(X);
  for (int b = 0; b < B; ++b) {
    const auto rows = Kokkos::subview(X, b, Kokkos::ALL(), Kokkos::ALL());
    EXPECT_TRUE(mosaic::transfer::needs_pack(rows));
    const auto h = mosaic::transfer::to_host(rows);
    ASSERT_EQ(h.extent(0), std::size_t(n));
    ASSERT_EQ(h.extent(1), std::size_t(d));
    EXPECT_EQ(count_unlike(h, [&](std::size_t j, std::size_t i) { return tag(std::size_t(b), j, i); }), 0)
        << "stream " << b;
  }
  // The whole block, too.
  EXPECT_EQ(count_untagged(mosaic::transfer::to_host(X)), 0);
}

// Fault 3's pattern: V0 and W0 as column ranges of the column-major
// [V0 W0] of every stream (B x d x 2r, column-major within the stream).
TEST(Transfer, ColumnRangesOfAColumnMajorBatch) {
  const int B = 2, d = 9, r = 3;
  Kokkos::View<double***, Kokkos::LayoutStride, Mem> Q(
      "Q", Kokkos::LayoutStride(B, std::size_t(d) * 2 * r, d, 1, 2 * r, std::size_t(d)));
  fill_tagged(Q);
  const auto V0 = Kokkos::subview(Q, Kokkos::ALL(), Kokkos::ALL(), Kokkos::make_pair(0, r));
  const auto W0 = Kokkos::subview(Q, Kokkos::ALL(), Kokkos::ALL(), Kokkos::make_pair(r, 2 * r));
  EXPECT_TRUE(mosaic::transfer::needs_pack(V0));
  EXPECT_TRUE(mosaic::transfer::needs_pack(W0));
  EXPECT_EQ(count_untagged(mosaic::transfer::to_host(V0)), 0);
  EXPECT_EQ(count_unlike(mosaic::transfer::to_host(W0),
                         [&](std::size_t b, std::size_t i, std::size_t j) { return tag(b, i, j + std::size_t(r)); }),
            0);
}

// Every other row of a row-major matrix, and one column of it (rank 1,
// stride d).
TEST(Transfer, StridedRowsAndAColumn) {
  const int m = 8, d = 6;
  Kokkos::View<double**, Kokkos::LayoutRight, Mem> A("A", m, d);
  fill_tagged(A);
  const Kokkos::View<double**, Kokkos::LayoutStride, Mem> every_other(A.data(),
                                                                      Kokkos::LayoutStride(m / 2, 2 * d, d, 1));
  EXPECT_TRUE(mosaic::transfer::needs_pack(every_other));
  const auto h = mosaic::transfer::to_host(every_other);
  int bad = 0;
  for (int i = 0; i < m / 2; ++i)
    for (int j = 0; j < d; ++j) bad += h(i, j) != tag(std::size_t(2 * i), std::size_t(j));
  EXPECT_EQ(bad, 0);
  const auto col = Kokkos::subview(A, Kokkos::ALL(), 4);
  EXPECT_TRUE(mosaic::transfer::needs_pack(col));
  const auto hc = mosaic::transfer::to_host(col);
  bad = 0;
  for (int i = 0; i < m; ++i) bad += hc(i) != tag(std::size_t(i), 4);
  EXPECT_EQ(bad, 0);
}

// Views that lie as LayoutRight blocks are copied as they lie: a LayoutRight
// matrix, one stream of a row-major LayoutStride batch (the host basis
// layout), one row, a single element; and a const view.
TEST(Transfer, LayoutRightBlocksAreCopiedAsTheyLie) {
  const int B = 3, d = 5, r = 4;
  Kokkos::View<double***, Kokkos::LayoutStride, Mem> U(
      "U", Kokkos::LayoutStride(B, std::size_t(d) * r, d, std::size_t(r), r, 1));
  fill_tagged(U);
  const auto u1 = Kokkos::subview(U, 1, Kokkos::ALL(), Kokkos::ALL());
  EXPECT_FALSE(mosaic::transfer::needs_pack(u1));
  EXPECT_EQ(count_unlike(mosaic::transfer::to_host(u1), [](std::size_t i, std::size_t j) { return tag(1, i, j); }), 0);
  const auto row = Kokkos::subview(U, 2, 3, Kokkos::ALL());
  EXPECT_FALSE(mosaic::transfer::needs_pack(row));
  EXPECT_EQ(count_unlike(mosaic::transfer::to_host(row), [](std::size_t j) { return tag(2, 3, j); }), 0);
  const auto element = Kokkos::subview(U, 2, 1, 3);
  EXPECT_FALSE(mosaic::transfer::needs_pack(element));
  EXPECT_EQ(count_unlike(mosaic::transfer::to_host(element), [] { return tag(2, 1, 3); }), 0);
  Kokkos::View<double**, Kokkos::LayoutRight, Mem> A("A", 4, 6);
  fill_tagged(A);
  const Kokkos::View<const double**, Kokkos::LayoutRight, Mem> constant = A;
  EXPECT_FALSE(mosaic::transfer::needs_pack(constant));
  EXPECT_EQ(count_untagged(mosaic::transfer::to_host(constant)), 0);
  // A column-major view with one column lies as LayoutRight too.
  Kokkos::View<double**, Kokkos::LayoutLeft, Mem> one_column("one_column", 7, 1);
  fill_tagged(one_column);
  EXPECT_FALSE(mosaic::transfer::needs_pack(one_column));
  EXPECT_EQ(count_untagged(mosaic::transfer::to_host(one_column)), 0);
}

// Host to execution space: into a column range of a column-major batch and
// into a LayoutLeft stream slice, leaving every other element as it was.
TEST(Transfer, CopyFromHostIntoNonContiguousViews) {
  const int B = 2, d = 6, r = 2;
  Kokkos::View<double***, Kokkos::LayoutStride, Mem> Q(
      "Q", Kokkos::LayoutStride(B, std::size_t(d) * 2 * r, d, 1, 2 * r, std::size_t(d)));
  const auto W0 = Kokkos::subview(Q, Kokkos::ALL(), Kokkos::ALL(), Kokkos::make_pair(r, 2 * r));
  auto h = mosaic::transfer::host_buffer(W0);
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < r; ++j) h(b, i, j) = tag(std::size_t(b), std::size_t(i), std::size_t(j + r));
  mosaic::transfer::copy_from_host(W0, h);
  const auto all = mosaic::transfer::to_host(Q);
  int bad = 0;
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < 2 * r; ++j)
        bad += all(b, i, j) != (j < r ? 0.0 : tag(std::size_t(b), std::size_t(i), std::size_t(j)));
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(count_mismatches(W0, h), 0);

  Kokkos::View<float***, Kokkos::LayoutLeft, Mem> X("X", 3, 4, 5);
  const auto rows = Kokkos::subview(X, 1, Kokkos::ALL(), Kokkos::ALL());
  auto hr = mosaic::transfer::host_buffer(rows);
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 5; ++i) hr(j, i) = float(10 * j + i + 1);
  mosaic::transfer::copy_from_host(rows, hr);
  const auto hx = mosaic::transfer::to_host(X);
  bad = 0;
  for (int b = 0; b < 3; ++b)
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 5; ++i) bad += hx(b, j, i) != (b == 1 ? float(10 * j + i + 1) : 0.0f);
  EXPECT_EQ(bad, 0);
}

// copy_within: one stream's strided block of a column-major batch into
// another stream's, a scalar entry, and a LayoutLeft row into a LayoutRight
// row, all within the execution space's memory; the rest untouched; other
// extents refused.
TEST(Transfer, CopyWithinOneMemorySpace) {
  const int B = 3, d = 5, r = 2;
  Kokkos::View<double***, Kokkos::LayoutStride, Mem> U(
      "U", Kokkos::LayoutStride(B, std::size_t(d) * r, d, 1, r, std::size_t(d)));
  auto h = mosaic::transfer::host_buffer(U);
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < r; ++j) h(b, i, j) = tag(std::size_t(b), std::size_t(i), std::size_t(j));
  mosaic::transfer::copy_from_host(U, h);
  mosaic::transfer::copy_within(Kokkos::subview(U, 2, Kokkos::ALL(), Kokkos::ALL()),
                                Kokkos::subview(U, 0, Kokkos::ALL(), Kokkos::ALL()));
  const auto after = mosaic::transfer::to_host(U);
  int bad = 0;
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < r; ++j)
        bad += after(b, i, j) != tag(std::size_t(b == 2 ? 0 : b), std::size_t(i), std::size_t(j));
  EXPECT_EQ(bad, 0);

  Kokkos::View<long*, Kokkos::LayoutRight, Mem> n("n", B);
  Kokkos::deep_copy(Kokkos::subview(n, 1), 7L);
  mosaic::transfer::copy_within(Kokkos::subview(n, 2), Kokkos::subview(n, 1));
  const auto hn = mosaic::transfer::to_host(n);
  EXPECT_EQ(hn(0), 0);
  EXPECT_EQ(hn(2), 7);

  Kokkos::View<float**, Kokkos::LayoutLeft, Mem> L("L", 2, 4);
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> R("R", 3, 4);
  auto hl = mosaic::transfer::host_buffer(L);
  for (int j = 0; j < 4; ++j) hl(1, j) = float(j + 1);
  for (int j = 0; j < 4; ++j) hl(0, j) = 0.0f;
  mosaic::transfer::copy_from_host(L, hl);
  mosaic::transfer::copy_within(Kokkos::subview(R, 2, Kokkos::ALL()), Kokkos::subview(L, 1, Kokkos::ALL()));
  const auto hr = mosaic::transfer::to_host(R);
  for (int j = 0; j < 4; ++j) EXPECT_EQ(hr(2, j), float(j + 1));
  EXPECT_EQ(hr(1, 3), 0.0f);
  EXPECT_THROW(mosaic::transfer::copy_within(Kokkos::subview(R, 2, Kokkos::make_pair(0, 3)),
                                             Kokkos::subview(L, 1, Kokkos::ALL())),
               std::invalid_argument);
}

// A host copy of other extents is refused, naming the view.
TEST(Transfer, ExtentMismatchIsRefused) {
  Kokkos::View<double**, Kokkos::LayoutLeft, Mem> A("mosaic::some_matrix", 3, 4);
  mosaic::transfer::HostCopy<decltype(A)> wrong("wrong", 4, 3);
  try {
    mosaic::transfer::copy_to_host(wrong, A);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("mosaic::some_matrix"), std::string::npos) << e.what();
  }
  EXPECT_THROW(mosaic::transfer::copy_from_host(A, wrong), std::invalid_argument);
}

}  // namespace
