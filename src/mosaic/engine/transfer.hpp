// The one way data moves between an execution space's memory and the host
// (checks, diagnostics, outputs, truths, staged input, tests).
//
// Kokkos::deep_copy between two memory spaces the other's execution space
// cannot reach (CudaSpace and HostSpace) only copies spans: both Views must
// be contiguous with the same layout type and strides, else it throws "deep_copy
// with no available copy mechanism" on the device build alone, while the host
// build, where every View is reachable, copies element by element and hides
// the fault. create_mirror_view_and_copy of a column range, a strided
// subview or a LayoutLeft block is such a copy. So every transfer here goes
// span to span:
//   - a source (or destination) whose memory is already a LayoutRight block
//     with this View's extents is copied as it lies (an unmanaged LayoutRight
//     View over its data);
//   - any other one (LayoutLeft, strided, a column range) is packed into (or
//     unpacked from) a contiguous LayoutRight temporary on its own memory
//     space by a kernel of its own execution space first.
// The path taken depends on the layout alone, never on the backend: the
// host build runs the same packs and span copies as the device build, so the
// CPU test suite (test_transfer.cpp) exercises them on the layouts that fail
// on a device.
//
// Host copies are LayoutRight HostSpace Views (HostCopy<View>) with the
// source's extents: h(i, j, k) is v(i, j, k) whatever v's layout.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <Kokkos_Core.hpp>

namespace mosaic::transfer {

// The host copy of a View of type V: its value type and rank, LayoutRight,
// in HostSpace.
template <class V>
using HostCopy = Kokkos::View<typename V::non_const_data_type, Kokkos::LayoutRight, Kokkos::HostSpace>;

// A View of V's memory space with V's data type, LayoutRight (const: over
// a source's memory).
template <class V>
using ContiguousOn = Kokkos::View<typename V::non_const_data_type, Kokkos::LayoutRight, typename V::memory_space>;
template <class V>
using ContiguousConstOn = Kokkos::View<typename V::const_data_type, Kokkos::LayoutRight, typename V::memory_space>;

namespace impl {

// (Loops over a View's rank count in int: a rank of 0 would make an unsigned
// comparison pointless, which nvcc warns about.)
template <class V>
std::size_t extent_product(const V& v) {
  std::size_t n = 1;
  for (int k = 0; k < int(V::rank); ++k) n *= v.extent(unsigned(k));
  return n;
}

template <class A, class B>
bool same_extents(const A& a, const B& b) {
  for (int k = 0; k < int(A::rank); ++k)
    if (a.extent(unsigned(k)) != b.extent(unsigned(k))) return false;
  return true;
}

// True when v's elements lie as a LayoutRight block of its extents would:
// strides (from the last index) 1, e_last, e_last * e_before, ... (an extent
// of 1 may have any stride). Then the memory is copied as it lies.
template <class V>
bool lies_as_layout_right(const V& v) {
  std::size_t expected = 1;
  for (int k = int(V::rank) - 1; k >= 0; --k) {
    if (v.extent(unsigned(k)) > 1 && std::size_t(v.stride(unsigned(k))) != expected) return false;
    expected *= v.extent(unsigned(k));
  }
  return true;
}

// The extent k of v, or the "no extent" a View constructor takes for a
// rank it does not have.
template <class V>
std::size_t extent_or_none(const V& v, unsigned k) {
  return int(k) < int(V::rank) ? v.extent(k) : std::size_t(KOKKOS_INVALID_INDEX);
}

// A new LayoutRight View with v's extents.
template <class Out, class V>
Out allocate_like(const V& v) {
  static_assert(V::rank <= 4, "mosaic::transfer handles Views of rank 0 to 4");
  return Out(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("mosaic::transfer::") + v.label()),
             extent_or_none(v, 0), extent_or_none(v, 1), extent_or_none(v, 2), extent_or_none(v, 3));
}

// An unmanaged LayoutRight View with v's extents over `memory`.
template <class Out, class V>
Out wrap_like(const V& v, typename Out::pointer_type memory) {
  static_assert(V::rank <= 4, "mosaic::transfer handles Views of rank 0 to 4");
  return Out(memory, extent_or_none(v, 0), extent_or_none(v, 1), extent_or_none(v, 2), extent_or_none(v, 3));
}

// dst(idx) = src(idx) for every index, on the execution space of the memory
// both live in; the flat index runs over the LayoutRight order, so the
// contiguous side is written (or read) in order.
template <class Dst, class Src>
struct CopyElements {
  using exec = typename Dst::execution_space;
  Dst dst;
  Src src;
  std::size_t e1, e2, e3;

  CopyElements(const Dst& d, const Src& s)
      : dst(d),
        src(s),
        e1(Dst::rank > 1 ? d.extent(1) : 1),
        e2(Dst::rank > 2 ? d.extent(2) : 1),
        e3(Dst::rank > 3 ? d.extent(3) : 1) {}

  void run() const {
    Kokkos::parallel_for("mosaic::transfer::copy_elements", Kokkos::RangePolicy<exec>(0, extent_product(dst)), *this);
    exec().fence();
  }

  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t flat) const {
    if constexpr (Dst::rank == 0) {
      (void)flat;
      dst() = src();
    } else if constexpr (Dst::rank == 1) {
      dst(flat) = src(flat);
    } else if constexpr (Dst::rank == 2) {
      dst(flat / e1, flat % e1) = src(flat / e1, flat % e1);
    } else if constexpr (Dst::rank == 3) {
      const std::size_t i = flat / (e1 * e2), j = (flat / e2) % e1, k = flat % e2;
      dst(i, j, k) = src(i, j, k);
    } else {
      const std::size_t i = flat / (e1 * e2 * e3), j = (flat / (e2 * e3)) % e1, k = (flat / e3) % e2, l = flat % e3;
      dst(i, j, k, l) = src(i, j, k, l);
    }
  }
};

template <class Dst, class Src>
void copy_elements(const Dst& dst, const Src& src) {
  if (extent_product(dst) > 0) CopyElements<Dst, Src>(dst, src).run();
}

}  // namespace impl

// True when a transfer of v needs a pack (or unpack) kernel on v's space:
// its memory does not lie as a LayoutRight block of its extents.
template <class V>
bool needs_pack(const V& v) {
  return !impl::lies_as_layout_right(v);
}

// An uninitialized host copy of v's shape (fill it, then copy_from_host).
template <class V>
HostCopy<V> host_buffer(const V& v) {
  return impl::allocate_like<HostCopy<V>>(v);
}

// out(idx) = v(idx): v of any layout in any memory space; out a host copy
// of v's extents. Waits until the copy is complete.
template <class V>
void copy_to_host(const HostCopy<V>& out, const V& v) {
  if (!impl::same_extents(out, v))
    throw std::invalid_argument("mosaic::transfer::copy_to_host: the host copy of '" + v.label() +
                                "' has other extents than it");
  if (needs_pack(v)) {
    const auto packed = impl::allocate_like<ContiguousOn<V>>(v);
    impl::copy_elements(packed, v);
    Kokkos::deep_copy(out, packed);
  } else {
    Kokkos::deep_copy(out, impl::wrap_like<ContiguousConstOn<V>>(v, v.data()));
  }
}

// A new host copy of v.
template <class V>
HostCopy<V> to_host(const V& v) {
  auto out = host_buffer(v);
  copy_to_host(out, v);
  return out;
}

// v(idx) = in(idx): v of any layout in any memory space, in a host copy of
// its extents. Waits until the copy is complete.
template <class V>
void copy_from_host(const V& v, const HostCopy<V>& in) {
  static_assert(!std::is_const_v<typename V::value_type>, "mosaic::transfer::copy_from_host: v is const");
  if (!impl::same_extents(in, v))
    throw std::invalid_argument("mosaic::transfer::copy_from_host: the host data for '" + v.label() +
                                "' has other extents than it");
  if (needs_pack(v)) {
    const auto packed = impl::allocate_like<ContiguousOn<V>>(v);
    Kokkos::deep_copy(packed, in);
    impl::copy_elements(v, packed);
  } else {
    Kokkos::deep_copy(impl::wrap_like<ContiguousOn<V>>(v, v.data()), in);
  }
}

// dst = src for two LayoutRight Views of the same extents in any memory
// spaces (a staging buffer in pinned host memory and its device copy): one
// span copy, no temporary. Waits until the copy is complete.
template <class Dst, class Src>
void copy_contiguous(const Dst& dst, const Src& src) {
  static_assert(std::is_same_v<typename Dst::array_layout, Kokkos::LayoutRight> &&
                    std::is_same_v<typename Src::array_layout, Kokkos::LayoutRight>,
                "mosaic::transfer::copy_contiguous copies LayoutRight Views only");
  if (!impl::same_extents(dst, src))
    throw std::invalid_argument("mosaic::transfer::copy_contiguous: '" + src.label() + "' and '" + dst.label() +
                                "' have other extents");
  Kokkos::deep_copy(dst, src);
  Kokkos::fence();
}

// dst(idx) = src(idx) for two Views of the same extents in one memory space,
// of any layouts (one stream's state copied to another slot of a batch): a
// kernel of that space's execution space, nothing through the host. Waits
// until the copy is complete.
template <class Dst, class Src>
void copy_within(const Dst& dst, const Src& src) {
  static_assert(std::is_same_v<typename Dst::memory_space, typename Src::memory_space>,
                "mosaic::transfer::copy_within copies within one memory space");
  if (!impl::same_extents(dst, src))
    throw std::invalid_argument("mosaic::transfer::copy_within: '" + src.label() + "' and '" + dst.label() +
                                "' have other extents");
  impl::copy_elements(dst, src);
}

}  // namespace mosaic::transfer
