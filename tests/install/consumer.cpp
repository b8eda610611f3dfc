// Uses the installed library's engine (compiled into libmosaic.a, declared
// extern in the installed headers): 40 sequential steps of two streams on
// host-generated samples; fails unless every stream took every step and its
// state stayed finite.
#include <cmath>
#include <cstdio>
#include <vector>

#include <Kokkos_Core.hpp>
#include <mosaic/engine/batched_engine.hpp>
#include <mosaic/io/build_info.hpp>

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  using Exec = Kokkos::DefaultExecutionSpace;
  const int B = 2, d = 24, r = 3, steps = 40;
  mosaic::MosaicParams p;
  mosaic::StreamBatch<double, Exec> sb(B, d, r, {1, 2});
  mosaic::MosaicEngine<double, Exec> eng(p, B, d, r);
  eng.init_random(sb, 7);
  Kokkos::View<double**, Kokkos::LayoutRight, Exec::memory_space> X("X", B, d);
  auto h = Kokkos::create_mirror_view(X);
  for (int t = 0; t < steps; ++t) {
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < d; ++i) h(b, i) = std::sin(0.37 * (t + 1) * (i + 1) + b) * (i < r ? 3.0 : 0.1);
    Kokkos::deep_copy(X, h);
    eng.step(sb, X);
  }
  for (int b = 0; b < B; ++b) {
    const auto st = sb.to_host(b);
    bool finite = std::isfinite(st.s2);
    for (double v : st.U) finite = finite && std::isfinite(v);
    if (st.steps != steps || !finite) {
      std::fprintf(stderr, "consumer: stream %d: %lld steps, finite %d\n", b, (long long)st.steps, int(finite));
      return 1;
    }
  }
  std::printf("consumer: mosaic %s (git %s): %d streams x %d steps OK\n", mosaic::build::version(),
              mosaic::build::git_commit(), B, steps);
  return 0;
}
