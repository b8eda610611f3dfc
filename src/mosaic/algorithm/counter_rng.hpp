// Counter-based random numbers: every draw is a pure function of
// (seed, domain, stream id, step, index), so a stream's samples do not depend
// on the batch, rank count, thread count or backend that produced them
// (ALGORITHM.md section 5). Philox-4x32-10 (Salmon et al., SC'11) is used
// because it is the standard counter-based generator with no state to carry.
#pragma once

#include <cstdint>
#include <cstring>

#include "mosaic/algorithm/rounded.hpp"
#include "mosaic/util/kokkos_compat.hpp"

namespace mosaic {

// Separate random domains so that, e.g., the latent factors and the noise of
// the same (stream, step) are independent.
enum class RngDomain : std::uint32_t {
  basis = 1,       // V0, W0 of the synthetic truth
  mean = 2,        // per-stream mean m_s
  noise_std = 3,   // heterogeneous per-coordinate noise standard deviation
  latent = 4,      // a_t
  noise = 5,       // noise_t
  init_basis = 6,  // init: random
  missing = 7,     // the synthetic missingness patterns (synthetic_missing.hpp)
};

struct Philox4 {
  std::uint32_t v[4];
};

KOKKOS_INLINE_FUNCTION Philox4 philox4x32(std::uint32_t c0, std::uint32_t c1, std::uint32_t c2, std::uint32_t c3,
                                          std::uint32_t k0, std::uint32_t k1) {
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
KOKKOS_INLINE_FUNCTION double uniform_open(std::uint32_t bits) { return (double(bits) + 0.5) * (1.0 / 4294967296.0); }

// The 4 random words holding draw `index` of the sequence identified by
// (seed, domain, stream, step).
KOKKOS_INLINE_FUNCTION Philox4 counter_block(std::uint64_t seed, RngDomain domain, std::uint64_t stream,
                                             std::uint64_t step, std::uint64_t index) {
  const std::uint32_t k0 = std::uint32_t(seed);
  const std::uint32_t k1 =
      std::uint32_t(seed >> 32) ^ (std::uint32_t(domain) * 0x85EBCA6Bu) ^ std::uint32_t(stream >> 32);
  const std::uint64_t block = index >> 2;
  return philox4x32(std::uint32_t(block), std::uint32_t(step),
                    std::uint32_t(step >> 32) ^ (std::uint32_t(block >> 32) * 0x27D4EB2Fu), std::uint32_t(stream), k0,
                    k1);
}

namespace detail {

// The elementary functions of the Box-Muller transform, written out in plain
// arithmetic (integer and double operations with one rounding each, no libm
// call) so that a loop of normals vectorizes on a CPU and every backend runs
// the same operations, with the same roundings: each product that an add
// takes is rounded on its own (rounded.hpp; a device compiler would fuse it). Both take a Philox word w and act on the uniform
// u = (w + 1/2) / 2^32 of uniform_open(w).

KOKKOS_INLINE_FUNCTION double double_from_bits(std::uint64_t b) {
  double x;
  memcpy(&x, &b, sizeof x);
  return x;
}
KOKKOS_INLINE_FUNCTION std::uint64_t bits_from_double(double x) {
  std::uint64_t b;
  memcpy(&b, &x, sizeof b);
  return b;
}

// log(u) to about 1 ulp. u = 2^e m with m in [sqrt(1/2), sqrt(2)), log(m) =
// 2 atanh(z) with z = (m - 1) / (m + 1), |z| < 0.1716, summed by its series
// to z^21 (the next term is below 2^-60 of the sum); e ln 2 in two parts (the
// high part has 11 trailing zero bits, so e ln2_hi is exact).
KOKKOS_INLINE_FUNCTION double log_of_word(std::uint32_t w) {
  // double(w) through a signed conversion (the one vector CPUs have), exact.
  const double u = (double(std::int32_t(w ^ 0x80000000u)) + 2147483648.5) * (1.0 / 4294967296.0);
  const std::uint64_t b = bits_from_double(u);
  // The biased exponent as a double without an integer conversion:
  // 2^52 + E has E in its low mantissa bits.
  double e = double_from_bits((b >> 52) | 0x4330000000000000ull) - (4503599627370496.0 + 1023.0);
  double m = double_from_bits((b & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull);  // [1, 2)
  const bool halve = m > 1.4142135623730950488;
  m = halve ? 0.5 * m : m;
  e = halve ? e + 1.0 : e;
  const double z = (m - 1.0) / (m + 1.0), z2 = z * z;
  double p = 1.0 / 21.0;
  p = rounded::mul_add(p, z2, 1.0 / 19.0);
  p = rounded::mul_add(p, z2, 1.0 / 17.0);
  p = rounded::mul_add(p, z2, 1.0 / 15.0);
  p = rounded::mul_add(p, z2, 1.0 / 13.0);
  p = rounded::mul_add(p, z2, 1.0 / 11.0);
  p = rounded::mul_add(p, z2, 1.0 / 9.0);
  p = rounded::mul_add(p, z2, 1.0 / 7.0);
  p = rounded::mul_add(p, z2, 1.0 / 5.0);
  p = rounded::mul_add(p, z2, 1.0 / 3.0);
  const double log_m = 2.0 * z + rounded::mul(2.0 * z, z2 * p);
  constexpr double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
  return rounded::mul(e, ln2_hi) + rounded::mul_add(e, ln2_lo, log_m);
}

// sin and cos of 2 pi u to about 1 ulp. The top 3 bits of w are the octant
// of the angle, the other 29 its place h in the octant (exact; mirrored in
// odd octants), t = h pi/4 in [0, pi/4], and sin t, cos t by their Taylor
// series to t^15 and t^16 (the next terms are below 2^-53 of the values).
KOKKOS_INLINE_FUNCTION void sincos_turn_of_word(std::uint32_t w, double& s, double& c) {
  const std::uint32_t octant = w >> 29, low = w & 0x1FFFFFFFu;
  const bool odd = (octant & 1u) != 0;
  const double h = (double(std::int32_t(odd ? 0x1FFFFFFFu - low : low)) + 0.5) * (1.0 / 536870912.0);
  const double t = h * 0.78539816339744830962, t2 = t * t;
  double sp = -1.0 / 1307674368000.0;  // -1/15!
  sp = rounded::mul_add(sp, t2, 1.0 / 6227020800.0);
  sp = rounded::mul_add(sp, t2, -1.0 / 39916800.0);
  sp = rounded::mul_add(sp, t2, 1.0 / 362880.0);
  sp = rounded::mul_add(sp, t2, -1.0 / 5040.0);
  sp = rounded::mul_add(sp, t2, 1.0 / 120.0);
  sp = rounded::mul_add(sp, t2, -1.0 / 6.0);
  const double sin_t = t + rounded::mul(t, t2 * sp);
  double cp = 1.0 / 20922789888000.0;  // 1/16!
  cp = rounded::mul_add(cp, t2, -1.0 / 87178291200.0);
  cp = rounded::mul_add(cp, t2, 1.0 / 479001600.0);
  cp = rounded::mul_add(cp, t2, -1.0 / 3628800.0);
  cp = rounded::mul_add(cp, t2, 1.0 / 40320.0);
  cp = rounded::mul_add(cp, t2, -1.0 / 720.0);
  cp = rounded::mul_add(cp, t2, 1.0 / 24.0);
  cp = rounded::mul_add(cp, t2, -0.5);
  const double cos_t = 1.0 + rounded::mul(t2, cp);
  // The angle in its quadrant is phi = (odd + h') pi/4: in an odd octant
  // phi = pi/2 - t, so sin phi = cos t and cos phi = sin t.
  const double sin_phi = odd ? cos_t : sin_t, cos_phi = odd ? sin_t : cos_t;
  const std::uint32_t quadrant = octant >> 1;
  // Rotating by quadrant x pi/2: (sin, cos) = (s, c), (c, -s), (-s, -c), (-c, s).
  const double s_mag = (quadrant & 1u) ? cos_phi : sin_phi, c_mag = (quadrant & 1u) ? sin_phi : cos_phi;
  s = (quadrant >= 2u) ? -s_mag : s_mag;
  c = (quadrant == 1u || quadrant == 2u) ? -c_mag : c_mag;
}

}  // namespace detail

// Box-Muller on two Philox words: the pair of normals
// sqrt(-2 log u1) (cos 2 pi u2, sin 2 pi u2), the even lane and the odd lane.
struct NormalPair {
  double even, odd;
};
KOKKOS_INLINE_FUNCTION NormalPair box_muller(std::uint32_t word1, std::uint32_t word2) {
  const double radius = kmath::sqrt(-2.0 * detail::log_of_word(word1));
  double s, c;
  detail::sincos_turn_of_word(word2, s, c);
  return {radius * c, radius * s};
}

// Standard normal number `index` of the sequence. One Philox call yields 4
// normals by two Box-Muller pairs; computed in double whatever the run's
// scalar type, so float and double runs see the same data up to the final
// rounding.
KOKKOS_INLINE_FUNCTION double counter_normal(std::uint64_t seed, RngDomain domain, std::uint64_t stream,
                                             std::uint64_t step, std::uint64_t index) {
  const Philox4 bits = counter_block(seed, domain, stream, step, index);
  const int lane = int(index & 3u);
  const int pair = lane >> 1;
  const NormalPair p = box_muller(bits.v[2 * pair], bits.v[2 * pair + 1]);
  return (lane & 1) ? p.odd : p.even;
}

// Normals 4 g .. 4 g + 3 of the sequence from one Philox call: equal to
// counter_normal(..., 4 g + q) for q = 0..3, at a quarter of the cost.
KOKKOS_INLINE_FUNCTION void counter_normal4(std::uint64_t seed, RngDomain domain, std::uint64_t stream,
                                            std::uint64_t step, std::uint64_t g, double (&out)[4]) {
  const Philox4 bits = counter_block(seed, domain, stream, step, 4 * g);
  for (int pair = 0; pair < 2; ++pair) {
    const NormalPair p = box_muller(bits.v[2 * pair], bits.v[2 * pair + 1]);
    out[2 * pair] = p.even;
    out[2 * pair + 1] = p.odd;
  }
}

// Uniform in (0,1), same addressing as counter_normal.
KOKKOS_INLINE_FUNCTION double counter_uniform(std::uint64_t seed, RngDomain domain, std::uint64_t stream,
                                              std::uint64_t step, std::uint64_t index) {
  return uniform_open(counter_block(seed, domain, stream, step, index).v[index & 3u]);
}

}  // namespace mosaic
