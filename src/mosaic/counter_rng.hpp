// Counter-based random numbers: every draw is a pure function of
// (seed, domain, stream id, step, index), so a stream's samples do not depend
// on the batch, rank count, thread count or backend that produced them
// (ALGORITHM.md section 5). Philox-4x32-10 (Salmon et al., SC'11) is used
// because it is the standard counter-based generator with no state to carry.
#pragma once

#include <cstdint>

#include "kokkos_compat.hpp"

namespace mosaic {

// Separate random domains so that, e.g., the latent factors and the noise of
// the same (stream, step) are independent.
enum class RngDomain : std::uint32_t {
  basis = 1,        // V0, W0 of the synthetic truth
  mean = 2,         // per-stream mean m_s
  noise_std = 3,    // heterogeneous per-coordinate noise standard deviation
  latent = 4,       // a_t
  noise = 5,        // noise_t
  init_basis = 6,   // init: random
};

struct Philox4 {
  std::uint32_t v[4];
};

KOKKOS_INLINE_FUNCTION Philox4 philox4x32(std::uint32_t c0, std::uint32_t c1, std::uint32_t c2,
                                          std::uint32_t c3, std::uint32_t k0, std::uint32_t k1) {
  constexpr std::uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
  constexpr std::uint32_t W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = std::uint64_t(M0) * c0;
    const std::uint64_t p1 = std::uint64_t(M1) * c2;
    const std::uint32_t hi0 = std::uint32_t(p0 >> 32), lo0 = std::uint32_t(p0);
    const std::uint32_t hi1 = std::uint32_t(p1 >> 32), lo1 = std::uint32_t(p1);
    const std::uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += W0;
    k1 += W1;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// Uniform in the open interval (0, 1) from 32 random bits.
KOKKOS_INLINE_FUNCTION double uniform_open(std::uint32_t bits) {
  return (double(bits) + 0.5) * (1.0 / 4294967296.0);
}

// The 4 random words holding draw `index` of the sequence identified by
// (seed, domain, stream, step).
KOKKOS_INLINE_FUNCTION Philox4 counter_block(std::uint64_t seed, RngDomain domain,
                                             std::uint64_t stream, std::uint64_t step,
                                             std::uint64_t index) {
  const std::uint32_t k0 = std::uint32_t(seed);
  const std::uint32_t k1 = std::uint32_t(seed >> 32) ^ (std::uint32_t(domain) * 0x85EBCA6Bu) ^
                           std::uint32_t(stream >> 32);
  const std::uint64_t block = index >> 2;
  return philox4x32(std::uint32_t(block), std::uint32_t(step),
                    std::uint32_t(step >> 32) ^ (std::uint32_t(block >> 32) * 0x27D4EB2Fu),
                    std::uint32_t(stream), k0, k1);
}

// Box-Muller on two Philox words: the pair's normals are radius cos(angle)
// (the even lane) and radius sin(angle) (the odd lane).
struct BoxMullerPolar {
  double radius, angle;
};
KOKKOS_INLINE_FUNCTION BoxMullerPolar box_muller(std::uint32_t word1, std::uint32_t word2) {
  const double u1 = uniform_open(word1);
  const double u2 = uniform_open(word2);
  return {kmath::sqrt(-2.0 * kmath::log(u1)), 6.283185307179586476925286766559 * u2};
}

// Standard normal number `index` of the sequence. One Philox call yields 4
// normals by two Box-Muller pairs; computed in double whatever the run's
// scalar type, so float and double runs see the same data up to the final
// rounding.
KOKKOS_INLINE_FUNCTION double counter_normal(std::uint64_t seed, RngDomain domain,
                                             std::uint64_t stream, std::uint64_t step,
                                             std::uint64_t index) {
  const Philox4 bits = counter_block(seed, domain, stream, step, index);
  const int lane = int(index & 3u);
  const int pair = lane >> 1;
  const BoxMullerPolar p = box_muller(bits.v[2 * pair], bits.v[2 * pair + 1]);
  return (lane & 1) ? p.radius * kmath::sin(p.angle) : p.radius * kmath::cos(p.angle);
}

// Normals 4 g .. 4 g + 3 of the sequence from one Philox call: equal to
// counter_normal(..., 4 g + q) for q = 0..3, at a quarter of the cost.
KOKKOS_INLINE_FUNCTION void counter_normal4(std::uint64_t seed, RngDomain domain, std::uint64_t stream,
                                            std::uint64_t step, std::uint64_t g, double (&out)[4]) {
  const Philox4 bits = counter_block(seed, domain, stream, step, 4 * g);
  for (int pair = 0; pair < 2; ++pair) {
    const BoxMullerPolar p = box_muller(bits.v[2 * pair], bits.v[2 * pair + 1]);
    out[2 * pair] = p.radius * kmath::cos(p.angle);
    out[2 * pair + 1] = p.radius * kmath::sin(p.angle);
  }
}

// Uniform in (0,1), same addressing as counter_normal.
KOKKOS_INLINE_FUNCTION double counter_uniform(std::uint64_t seed, RngDomain domain,
                                              std::uint64_t stream, std::uint64_t step,
                                              std::uint64_t index) {
  return uniform_open(counter_block(seed, domain, stream, step, index).v[index & 3u]);
}

}  // namespace mosaic
