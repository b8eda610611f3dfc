// Missingness patterns for the synthetic stream (ALGORITHM.md section 7,
// issue 30): whether entry `index` of sample `step` of a stream is missing,
// a pure function of (seed, stream, step, index) like every draw of
// section 5, so a pattern does not depend on the ranks, threads or backend
// that generate it. Three patterns, combined (an entry is missing if any
// says so):
// - MCAR: each entry independently with probability `mcar_rate`;
// - a channel outage: the coordinates [outage_first, outage_first +
//   outage_count) for the steps [outage_start, outage_start + outage_steps);
// - missing-at-random blocks: the grid of tiles of `block_steps` samples x
//   `block_coords` coordinates, each tile missing with probability
//   `block_rate` (a sensor group that drops out for a while, at random).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "mosaic/algorithm/counter_rng.hpp"

namespace mosaic {

struct MissingSpec {
  double mcar_rate = 0.0;
  int outage_first = 0, outage_count = 0;
  std::uint64_t outage_start = 0, outage_steps = 0;
  double block_rate = 0.0;
  int block_coords = 1;
  std::uint64_t block_steps = 1;

  KOKKOS_INLINE_FUNCTION bool any() const {
    return mcar_rate > 0.0 || (outage_count > 0 && outage_steps > 0) || block_rate > 0.0;
  }

  // Throws std::invalid_argument naming the field; d is the sample length.
  void validate(int d) const {
    auto fail = [](const std::string& m) { throw std::invalid_argument("missingness pattern: " + m); };
    if (!(mcar_rate >= 0.0 && mcar_rate <= 1.0)) fail("mcar_rate must be in [0, 1], got " + std::to_string(mcar_rate));
    if (!(block_rate >= 0.0 && block_rate <= 1.0))
      fail("block_rate must be in [0, 1], got " + std::to_string(block_rate));
    if (outage_count < 0 || outage_first < 0 || (outage_count > 0 && outage_first + outage_count > d))
      fail("the outage's coordinates [" + std::to_string(outage_first) + ", " +
           std::to_string(outage_first + outage_count) + ") must lie in [0, d = " + std::to_string(d) + ")");
    if (block_coords < 1) fail("block_coords must be >= 1, got " + std::to_string(block_coords));
    if (block_steps < 1) fail("block_steps must be >= 1, got " + std::to_string(block_steps));
  }
};

// The quiet NaN a missing entry is stored as (the same bits on every backend).
KOKKOS_INLINE_FUNCTION double missing_value() { return detail::double_from_bits(0x7FF8000000000000ull); }

// True when entry `index` of sample `step` of `stream` is missing.
KOKKOS_INLINE_FUNCTION bool synthetic_missing(const MissingSpec& m, std::uint64_t seed, std::uint64_t stream,
                                              std::uint64_t step, int index) {
  if (m.outage_count > 0 && index >= m.outage_first && index < m.outage_first + m.outage_count &&
      step >= m.outage_start && step - m.outage_start < m.outage_steps)
    return true;
  // The MCAR draws use even indices and the tiles' odd ones: independent.
  if (m.mcar_rate > 0.0 &&
      counter_uniform(seed, RngDomain::missing, stream, step, 2 * std::uint64_t(index)) < m.mcar_rate)
    return true;
  if (m.block_rate > 0.0) {
    const std::uint64_t tile_step = step / m.block_steps, tile = std::uint64_t(index / m.block_coords);
    if (counter_uniform(seed, RngDomain::missing, stream, tile_step * m.block_steps, 2 * tile + 1) < m.block_rate)
      return true;
  }
  return false;
}

// Sets the missing entries of sample x (length d) to NaN.
template <class T>
void apply_synthetic_missing(const MissingSpec& m, std::uint64_t seed, std::uint64_t stream, std::uint64_t step, T* x,
                             int d) {
  for (int i = 0; i < d; ++i)
    if (synthetic_missing(m, seed, stream, step, i)) x[i] = T(missing_value());
}

}  // namespace mosaic
