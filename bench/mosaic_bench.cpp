// mosaic_bench: update-only throughput of the batched engine (the default
// execution space; float, or double with --dtype double) against the host
// reference in the same run, with a measured roofline of the machine (copy
// bandwidth, the host tiled micro-kernel's sgemm rate, and the vendor GEMM
// rate through the backend's GEMM, strided_gemm.hpp).
//
//   mosaic_bench [--d 2048,4096,8192] [--r 32,64,128] [--streams 8]
//                [--steps N] [--seconds T] [--ref-steps N]
//                [--block-size 0,32,64,96,128] [--gemm auto|vendor|kokkos_batched|tiled]
//                [--solve dense|maintained] [--reorth auto|K] [--dtype float|double]
//                [--panel-cols P] [--missing mcar0,mcar0.05,mcar0.5,outage0.1]
//                [--noise diagonal]
//
// With gemm vendor (the default where Kokkos Kernels has a vendor BLAS) a
// second table breaks each blocked row into its phases (MosaicEngine's
// BlockPhases: pack, products, coefficient steps, new bases), with the
// GEMM phases' rate against the vendor rates of the same run; its gemm
// column also says how the GEMMs were spread and where the coefficient
// steps factor (team scratch or the work array,
// MosaicEngine::factor_in_team_scratch).
//
// --panel-cols: columns of D per GEMM of the products with gemm vendor
// (MosaicEngine::set_vendor_panel_cols; default the backend's tuning,
// backend.hpp), to measure the tuning point.
//
// --reorth: algorithm.reorthonormalize_every of the blocked runs (default
// auto, the mini-app's default: a Cholesky-QR at every block end in float;
// 0 = never, K = every K steps). The sequential runs never re-orthonormalize.
//
// --block-size: the blocked update (ALGORITHM.md section 6) is run for every
// k > 1 of the list, in the same run as the sequential kernel (always run),
// on the same kind of samples: one table row per (d, r, k) with samples/s,
// speedup over the sequential kernel, GFLOP/s of the blocked model
// d (4r + k + 2r^2/k) flops per sample, and that rate as a fraction of the
// measured sgemm rate and of the vendor GEMM rate on the block's own shapes
// (vendor_block_gemm_gflops); the best k per (d, r) is marked. Timed per block:
// step_block() fence to fence; samples come from generate_block (untimed).
//
// --missing: the masked step (ALGORITHM.md 7.3, algorithm.missing:
// posterior) on the same stream family with entries missing: mcarF, each
// entry missing at random with probability F (mcar0: the masked kernel on
// complete samples); outageF, the first round(F d) coordinates missing in
// every sample; tilesF, missing-at-random tiles of d/8 coordinates x 256
// samples, each missing with probability F (a sensor group out for a while:
// most blocks complete). One row per pattern and (d, r), against the unmasked
// sequential kernel of the same run: the cost per sample it adds, and 7.8's
// model of that cost (min(m, n) r (r + 1) flops for the Gram of the missing
// or observed rows and 4 r^3 more of r x r algebra; 3 r^3 for a step that
// reuses the Gram and its factors because its missing rows are the previous
// step's, as in an outage). With --block-size, one row per pattern and k against the
// unmasked blocked update of the same k: the blocks are cut into runs of
// complete samples (blocked), runs of samples that miss the same
// coordinates (7.7.2's shared-mask blocked form: an outage) and masked
// sequential steps (7.7.3).
//
// --noise diagonal: the sequential kernel with algorithm.noise: diagonal
// (ALGORITHM.md section 8: the whitened step, the residual accumulators,
// a re-whitening every rewhiten_every = 1000 steps, the default) on the same
// complete samples, one row per (d, r) against the isotropic sequential
// kernel of the same run: the cost per sample the model adds. With
// --block-size, one row per k against the isotropic blocked update of the
// same k (8.5: the whitened block, the residuals' extra GEMM, a
// re-whitening at the end of the block that reaches each multiple of 1000).
//
// --steps N fixes the engine steps per (d, r); otherwise the engine runs for
// about --seconds of wall time (default 1, at least 5 steps). The reference
// runs one stream for --ref-steps steps (default: about --seconds/2).
//
// Timed: MosaicEngine::step() only, one fence-to-fence interval per step;
// every step gets fresh samples from SyntheticDriftSource::generate, which is
// not timed. samples/s = streams * steps / (sum of the step times).
// Model per sample (ALGORITHM.md): 4 d r flops and 3 d r scalars of U
// traffic (2 reads + 1 write). The implementation actually makes 3 reads and
// 1 write of U and 8 d r flops per sample (z = U^T y, U z, and the fused
// U gh + rank-one update pass); both columns are printed.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <KokkosKernels_config.h>
#include <Kokkos_Core.hpp>

#include "mosaic/algorithm/reference.hpp"
#include "mosaic/app/kokkos_flags.hpp"
#include "mosaic/engine/batched_engine.hpp"
#include "mosaic/engine/cost_model.hpp"
#include "mosaic/engine/strided_gemm.hpp"
#include "mosaic/engine/tile_gemm.hpp"
#include "mosaic/engine/transfer.hpp"
#include "mosaic/engine/vendor_blas.hpp"
#include "mosaic/sources/synthetic_source.hpp"

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::vector<int> parse_list(const char* s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::stoi(item));
  return out;
}

struct Options {
  std::vector<int> d = {2048, 4096, 8192};
  std::vector<int> r = {32, 64, 128};
  int streams = 8;
  long steps = 0;  // 0 = auto
  double seconds = 1.0;
  long ref_steps = 0;           // 0 = auto
  std::vector<int> block = {};  // k > 1 values of the blocked runs
  mosaic::BlockGemm gemm = mosaic::BlockGemm::automatic;
  mosaic::PrecisionSolve solve = mosaic::PrecisionSolve::dense;
  int reorth = mosaic::kAuto;  // reorthonormalize_every of the blocked runs
  bool dtype_double = false;   // --dtype double: every engine run in double
  int panel_cols = mosaic::Tuning<
      Kokkos::DefaultExecutionSpace>::vendor_panel_cols;  // gemm vendor: columns of D per GEMM of the products
  std::vector<std::string> missing;                       // --missing patterns: mcarF, outageF, tilesF
  bool noise_diagonal = false;                            // --noise diagonal: section 8's rows
};

// A --missing pattern's missingness at dimension d (exits on a bad name).
mosaic::MissingSpec missing_pattern(const std::string& name, int d) {
  mosaic::MissingSpec m;
  const bool mcar = name.rfind("mcar", 0) == 0, outage = name.rfind("outage", 0) == 0,
             tiles = name.rfind("tiles", 0) == 0;
  char* end = nullptr;
  const char* num = name.c_str() + (mcar ? 4 : outage ? 6 : tiles ? 5 : 0);
  const double f = std::strtod(num, &end);
  if ((!mcar && !outage && !tiles) || end == num || *end != '\0' || !(f >= 0.0 && f <= 1.0)) {
    std::fprintf(stderr, "mosaic_bench: --missing takes mcarF, outageF or tilesF with F in [0, 1], got %s\n",
                 name.c_str());
    std::exit(2);
  }
  if (mcar) m.mcar_rate = f;
  if (outage) {
    m.outage_count = int(std::lround(f * d));
    m.outage_steps = std::uint64_t(1) << 62;  // the whole run
  }
  if (tiles) {
    m.block_rate = f;
    m.block_coords = std::max(1, d / 8);
    m.block_steps = 256;
  }
  return m;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int k = 1; k < argc; ++k) {
    auto next = [&](const char* name) {
      if (k + 1 >= argc) {
        std::fprintf(stderr, "mosaic_bench: %s needs a value\n", name);
        std::exit(2);
      }
      return argv[++k];
    };
    if (!std::strcmp(argv[k], "--d")) o.d = parse_list(next("--d"));
    else if (!std::strcmp(argv[k], "--r")) o.r = parse_list(next("--r"));
    else if (!std::strcmp(argv[k], "--streams")) o.streams = std::atoi(next("--streams"));
    else if (!std::strcmp(argv[k], "--steps")) o.steps = std::atol(next("--steps"));
    else if (!std::strcmp(argv[k], "--seconds")) o.seconds = std::atof(next("--seconds"));
    else if (!std::strcmp(argv[k], "--ref-steps")) o.ref_steps = std::atol(next("--ref-steps"));
    else if (!std::strcmp(argv[k], "--block-size")) o.block = parse_list(next("--block-size"));
    else if (!std::strcmp(argv[k], "--gemm")) {
      const std::string g = next("--gemm");
      if (g == "auto") o.gemm = mosaic::BlockGemm::automatic;
      else if (g == "vendor") o.gemm = mosaic::BlockGemm::vendor;
      else if (g == "kokkos_batched") o.gemm = mosaic::BlockGemm::kokkos_batched;
      else if (g == "tiled") o.gemm = mosaic::BlockGemm::tiled;
      else {
        std::fprintf(stderr, "mosaic_bench: --gemm auto|vendor|kokkos_batched|tiled, got %s\n", g.c_str());
        std::exit(2);
      }
    } else if (!std::strcmp(argv[k], "--solve")) {
      const std::string g = next("--solve");
      if (g == "dense") o.solve = mosaic::PrecisionSolve::dense;
      else if (g == "maintained") o.solve = mosaic::PrecisionSolve::maintained;
      else {
        std::fprintf(stderr, "mosaic_bench: --solve dense|maintained, got %s\n", g.c_str());
        std::exit(2);
      }
    } else if (!std::strcmp(argv[k], "--panel-cols")) {
      o.panel_cols = std::atoi(next("--panel-cols"));
      if (o.panel_cols < 1) {
        std::fprintf(stderr, "mosaic_bench: --panel-cols needs a positive integer\n");
        std::exit(2);
      }
    } else if (!std::strcmp(argv[k], "--reorth")) {
      const std::string g = next("--reorth");
      o.reorth = g == "auto" ? mosaic::kAuto : std::stoi(g);
    } else if (!std::strcmp(argv[k], "--dtype")) {
      const std::string g = next("--dtype");
      if (g != "float" && g != "double") {
        std::fprintf(stderr, "mosaic_bench: --dtype float|double, got %s\n", g.c_str());
        std::exit(2);
      }
      o.dtype_double = g == "double";
    } else if (!std::strcmp(argv[k], "--missing")) {
      std::stringstream ss(next("--missing"));
      std::string item;
      while (std::getline(ss, item, ',')) {
        missing_pattern(item, 2);  // the name checked before anything runs
        o.missing.push_back(item);
      }
    } else if (!std::strcmp(argv[k], "--noise")) {
      const std::string g = next("--noise");
      if (g != "diagonal") {
        std::fprintf(stderr, "mosaic_bench: --noise takes diagonal (the isotropic rows always run), got %s\n",
                     g.c_str());
        std::exit(2);
      }
      o.noise_diagonal = true;
    } else if (!std::strcmp(argv[k], "--help") || !std::strcmp(argv[k], "-h")) {
      std::printf(
          "usage: mosaic_bench [--d list] [--r list] [--streams B] [--steps N] "
          "[--seconds T] [--ref-steps N] [--block-size list] [--gemm auto|vendor|kokkos_batched|tiled] "
          "[--solve dense|maintained] [--reorth auto|K] [--dtype float|double] [--panel-cols P] "
          "[--missing mcarF,outageF,tilesF,...] [--noise diagonal]  (plus Kokkos flags)\n");
      std::exit(0);
    } else if (std::strncmp(argv[k], "--kokkos", 8) != 0) {
      std::fprintf(stderr, "mosaic_bench: unknown option %s\n", argv[k]);
      std::exit(2);
    }
  }
  return o;
}

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

// STREAM-like copy a[i] = b[i] over 2 x 256 MiB of float; bytes counted as
// read + write (STREAM convention). Best of 5.
double copy_bandwidth_gbs() {
  const std::size_t n = std::size_t(64) << 20;
  Kokkos::View<float*, Kokkos::LayoutRight, Mem> a("copy_a", n), b("copy_b", n);
  Kokkos::deep_copy(b, 1.0f);
  double best = 1e300;
  for (int rep = 0; rep < 6; ++rep) {
    Kokkos::fence();
    const auto t0 = Clock::now();
    Kokkos::parallel_for(
        "stream_copy", Kokkos::RangePolicy<Exec>(0, n), KOKKOS_LAMBDA(const std::size_t i) { a(i) = b(i); });
    Kokkos::fence();
    if (rep > 0) best = std::min(best, seconds_since(t0));
  }
  return 2.0 * double(n) * sizeof(float) / best / 1e9;
}

// The library behind the backend's GEMM on Exec (strided_gemm.hpp).
std::string vendor_gemm_name() {
  if constexpr (mosaic::gemm_by_cublas<Exec>()) return "cuBLAS (the project's handle)";
  if (mosaic::is_host_space<Exec> && mosaic::vendor_gemm_tpl<Exec>())
    return mosaic::vendor_blas::host_library() + " (Kokkos Kernels BLAS TPL)";
  return "Kokkos Kernels' native gemm (no vendor TPL for this space)";
}

// Vendor GEMM rate on the blocked update's own shapes, for B streams one
// call each through the backend's GEMM (LayoutLeft T in Mem): [G^T | H] = D^T [U0 | D]
// (k x (r+k) x d, as gemm("T", "N")) and U = [U0 | D] [A; B]
// (d x r x (r+k)). Best of 3 after one warm-up; 2 m n k flops per product.
template <class T>
double vendor_block_gemm_gflops(int B, int d, int r, int k) {
  using V = Kokkos::View<T**, Kokkos::LayoutLeft, Mem>;
  std::vector<V> Q(B), C(B), W(B), U(B);
  for (int b = 0; b < B; ++b) {
    Q[b] = V("vendor_Q", d, r + k);
    C[b] = V("vendor_C", k, r + k);
    W[b] = V("vendor_W", r + k, r);
    U[b] = V("vendor_U", d, r);
    Kokkos::deep_copy(Q[b], T(0.5));
    Kokkos::deep_copy(W[b], T(0.25));
  }
  double best = 1e300;
  for (int rep = 0; rep < 4; ++rep) {
    Kokkos::fence();
    const auto t0 = Clock::now();
    for (int b = 0; b < B; ++b) {
      mosaic::StridedGemm<T> products;  // D^T [U0 | D], D columns r.. of Q
      products.transa = 'T';
      products.m = k;
      products.n = r + k;
      products.k = d;
      products.a = Q[b].data() + std::ptrdiff_t(r) * d;
      products.b = Q[b].data();
      products.lda = products.ldb = d;
      products.c = C[b].data();
      products.ldc = k;
      mosaic::strided_gemm<Exec>(products);
      mosaic::StridedGemm<T> bases;  // [U0 | D] W
      bases.m = d;
      bases.n = r;
      bases.k = r + k;
      bases.a = Q[b].data();
      bases.lda = d;
      bases.b = W[b].data();
      bases.ldb = r + k;
      bases.c = U[b].data();
      bases.ldc = d;
      mosaic::strided_gemm<Exec>(bases);
    }
    Kokkos::fence();
    if (rep > 0) best = std::min(best, seconds_since(t0));
  }
  const double flops = double(B) * (2.0 * k * (r + k) * d + 2.0 * d * r * (r + k));
  return flops / best / 1e9;
}

// Vendor GEMM C = A B (n x n, LayoutLeft T in Mem: sgemm or dgemm) through
// the backend's GEMM (strided_gemm.hpp). Best of 3 after one warm-up; 2 n^3 flops.
template <class T>
double vendor_gemm_gflops(int n) {
  Kokkos::View<T**, Kokkos::LayoutLeft, Mem> A("vendor_A", n, n), B("vendor_B", n, n), C("vendor_C", n, n);
  Kokkos::deep_copy(A, T(0.5));
  Kokkos::deep_copy(B, T(0.25));
  double best = 1e300;
  for (int rep = 0; rep < 4; ++rep) {
    Kokkos::fence();
    const auto t0 = Clock::now();
    mosaic::StridedGemm<T> g;
    g.m = g.n = g.k = n;
    g.a = A.data();
    g.b = B.data();
    g.c = C.data();
    g.lda = g.ldb = g.ldc = n;
    mosaic::strided_gemm<Exec>(g);
    Kokkos::fence();
    if (rep > 0) best = std::min(best, seconds_since(t0));
  }
  const auto h = mosaic::transfer::to_host(Kokkos::subview(C, n - 1, n - 1));
  if (h() != T(0.125) * T(n)) std::fprintf(stderr, "vendor gemm check failed: %g\n", double(h()));
  return 2.0 * double(n) * n * n / best / 1e9;
}

// sgemm C = A B (n x n, row-major float) with the blocked update's own
// register-tiled micro-kernel (tile_gemm.hpp; no vendor BLAS) on the host
// execution space (the kernel is host-only: a Cuda build measures its host
// here too), in the usual
// packed form: A packed once into panels of MR rows; for every 256 x 256
// block of B, the block is packed (rows padded to avoid cache-set conflicts)
// and every MR x NR tile of C in those columns accumulates over it, in
// parallel over the panels. Packing is timed. Best of 3 after one warm-up;
// 2 n^3 flops. n must be a multiple of MR and of the narrowest tile width.
double sgemm_gflops(int n) {
  namespace tile = mosaic::tile;
  using HostExec = Kokkos::DefaultHostExecutionSpace;
  constexpr int kc = 256, jc = 256, ldb = jc + 16;
  Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace> A("gemm_A", n, n), B("gemm_B", n, n), C("gemm_C", n, n),
      Ap("gemm_A_packed", n / tile::MR, std::size_t(n) * tile::MR), Bp("gemm_B_packed", kc, ldb);
  Kokkos::deep_copy(A, 0.5f);
  Kokkos::deep_copy(B, 0.25f);
  const int npanels = n / tile::MR;
  double best = 1e300;
  for (int rep = 0; rep < 4; ++rep) {
    Kokkos::deep_copy(C, 0.0f);
    Kokkos::fence();
    const auto t0 = Clock::now();
    Kokkos::parallel_for(
        "sgemm_pack_A", Kokkos::RangePolicy<HostExec>(0, npanels), KOKKOS_LAMBDA(const int pn) {
          for (int k = 0; k < n; ++k)
            for (int a = 0; a < tile::MR; ++a) Ap(pn, std::size_t(k) * tile::MR + a) = A(pn * tile::MR + a, k);
        });
    for (int j0 = 0; j0 < n; j0 += jc) {
      const int nj = j0 + jc < n ? jc : n - j0;
      for (int k0 = 0; k0 < n; k0 += kc) {
        const int nk = k0 + kc < n ? kc : n - k0;
        Kokkos::parallel_for(
            "sgemm_pack_B", Kokkos::RangePolicy<HostExec>(0, nk), KOKKOS_LAMBDA(const int k) {
              for (int c = 0; c < nj; ++c) Bp(k, c) = B(k0 + k, j0 + c);
            });
        Kokkos::parallel_for(
            "sgemm", Kokkos::RangePolicy<HostExec>(0, npanels), KOKKOS_LAMBDA(const int pn) {
              const float* P = &Ap(pn, std::size_t(k0) * tile::MR);
              float* Ct = &C(pn * tile::MR, j0);
              tile::for_each_column_tile<float>(nj, [&](const int c0, const int width) {
                tile::inner_tile_w(width, 0, nk, P, tile::MR, &Bp(0, c0), ldb, Ct + c0, n);
              });
            });
      }
    }
    Kokkos::fence();
    if (rep > 0) best = std::min(best, seconds_since(t0));
  }
  const auto h = mosaic::transfer::to_host(Kokkos::subview(C, n - 1, n - 1));
  if (h() != 0.125f * float(n)) std::fprintf(stderr, "sgemm check failed: %g\n", double(h()));
  return 2.0 * double(n) * n * n / best / 1e9;
}

struct Row {
  int d, r;
  long steps;
  double engine_sps, ref_sps;
  long ref_steps;
  double model_gbs, impl_gbs, model_gflops, impl_gflops;
  long clamped;
  int broken;
  double missing_fraction = 0;  // masked runs: entries missing over all timed samples
  double reuse_fraction = 0;    // masked runs: steps that reused the previous step's Gram (7.8)
  long skipped = 0;             // masked runs: steps skipped (7.5)
  long rewhitenings = 0;        // noise: diagonal runs: re-whitenings (all streams)
};

// The benchmark's stream family, the same for the sequential and blocked points.
mosaic::SyntheticSpec bench_spec(int d, int r) {
  mosaic::SyntheticSpec spec;
  spec.d = d;
  spec.r = r;
  spec.lambda_max = 4.0;
  spec.lambda_min = 0.5;
  spec.noise = 0.1;
  spec.drift = 1e-4;
  spec.seed = 2024;
  return spec;
}

// The sequential kernel, or with `missing` the masked one (algorithm.missing:
// posterior), or with `diagonal` the diagonal-noise model (section 8); the
// host reference runs only for the unmasked isotropic kernel.
template <class T>
Row bench_point(const Options& o, int d, int r, const mosaic::MissingSpec* missing = nullptr, bool diagonal = false) {
  const int B = o.streams;
  std::vector<std::uint64_t> ids(B);
  for (int b = 0; b < B; ++b) ids[b] = std::uint64_t(b);
  mosaic::SyntheticSpec spec = bench_spec(d, r);
  mosaic::MosaicParams p;  // defaults: exact, precision, gamma = 1, no reorthonormalization
  p.block_size = 1;        // the sequential kernel: no block work allocated
  if (missing) {
    spec.missing = *missing;
    p.missing = mosaic::MissingMode::posterior;
  }
  if (diagonal) p.noise = mosaic::NoiseModel::diagonal;
  mosaic::SyntheticDriftSource<T, Exec> src(spec, ids);
  mosaic::StreamBatch<T, Exec> sb(B, d, r, ids, p.noise);
  mosaic::MosaicEngine<T, Exec> eng(p, B, d, r);
  eng.init_random(sb, 1);
  // Fresh samples every step (generated untimed; only step() is timed).
  typename mosaic::SyntheticDriftSource<T, Exec>::sample_view X("X", B, d);
  std::int64_t t = 0;
  double t_engine = 0;
  auto timed_step = [&]() {
    src.generate(t++, X);
    Kokkos::fence();
    const auto t0 = Clock::now();
    eng.step(sb, X);
    Kokkos::fence();
    t_engine += seconds_since(t0);
  };
  for (int s = 0; s < 2; ++s) timed_step();  // warm-up
  t_engine = 0;
  long steps = 0;
  const auto wall0 = Clock::now();
  if (o.steps > 0) {
    for (; steps < o.steps; ++steps) timed_step();
  } else {  // run for about --seconds of wall time (generation included), at least 5 steps
    while (steps < 5 || seconds_since(wall0) < o.seconds) {
      timed_step();
      ++steps;
    }
  }

  // Host reference, one stream (id 0), its own fresh samples from the host
  // generator on the source's truth (the same numbers the device generator
  // gives that stream).
  Row row{};
  const auto clamped = mosaic::transfer::to_host(sb.clamped_steps);
  const auto status = mosaic::transfer::to_host(sb.status);
  row.d = d;
  row.r = r;
  row.steps = steps;
  row.engine_sps = double(B) * steps / t_engine;
  for (int b = 0; b < B; ++b) {
    row.clamped += clamped(b);
    row.broken += status(b) != 0;
  }
  if (missing) {
    const auto entries = mosaic::transfer::to_host(sb.missing_entries);
    const auto skipped = mosaic::transfer::to_host(sb.skipped_steps);
    double n = 0;
    for (int b = 0; b < B; ++b) {
      n += double(entries(b));
      row.skipped += skipped(b);
    }
    row.missing_fraction = n / (double(B) * double(t) * d);  // the counters include the warm-up steps
    row.reuse_fraction = double(eng.gram_reuses()) / (double(B) * double(t));
    return row;
  }
  if (diagonal) {
    const auto rewhitened = mosaic::transfer::to_host(sb.rewhitenings);
    for (int b = 0; b < B; ++b) row.rewhitenings += rewhitened(b);
    return row;
  }
  const mosaic::SyntheticTruth truth = src.truths_on_host()[0];
  std::vector<T> x(d);
  auto ref = mosaic::reference_init_random<T>(d, r, p, 1, ids[0]);
  double t_ref = 0;
  long ref_steps = 0;
  bool ref_broken = false;
  const auto ref0 = Clock::now();
  try {
    while (o.ref_steps > 0 ? ref_steps < o.ref_steps : (ref_steps < 3 || seconds_since(ref0) < 0.5 * o.seconds)) {
      mosaic::synthetic_sample(spec, truth, ids[0], std::uint64_t(ref_steps), x.data());
      const auto t0 = Clock::now();
      mosaic::reference_step(ref, x.data(), p);
      t_ref += seconds_since(t0);
      ++ref_steps;
    }
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "reference breakdown at d=%d r=%d: %s\n", d, r, ex.what());
    ref_broken = true;
  }
  row.ref_steps = ref_steps;
  row.ref_sps = ref_broken ? 0.0 : double(ref_steps) / t_ref;
  const double dr = double(d) * r;
  row.model_gbs = row.engine_sps * 3.0 * dr * sizeof(T) / 1e9;
  row.impl_gbs = row.engine_sps * 4.0 * dr * sizeof(T) / 1e9;
  row.model_gflops = row.engine_sps * 4.0 * dr / 1e9;
  row.impl_gflops = row.engine_sps * 8.0 * dr / 1e9;
  return row;
}

// The blocked update with k samples per block: samples/s over whole blocks.
struct BlockRow {
  int k;
  long steps;
  double sps;
  long clamped;
  int broken;
  std::string gemm;     // the kernel that ran (and, for vendor, how its GEMMs were spread)
  bool phased = false;  // gemm vendor: the phases below were timed (fences between them)
  mosaic::BlockPhases phases;
  double seconds = 0;                               // sum of the timed blocks
  double product_flops = 0, materialize_flops = 0;  // per timed run, all streams
  mosaic::cost::Shape shape;                        // the cost model's description of one block
  // masked: entries missing; samples in blocked runs, in shared-mask runs
  double missing_fraction = 0, run_fraction = 0, shared_fraction = 0;
  long rewhitenings = 0;  // noise: diagonal: re-whitenings (all streams)
};

// The cost model's description of a bench block (cost_model.hpp).
mosaic::cost::Shape block_shape(const Options& o, int d, int r, int k, bool with_w0, bool all_streams_at_once) {
  mosaic::cost::Shape s;
  s.d = d;
  s.r = r;
  s.k = k;
  s.streams = o.streams;
  s.scalar_bytes = o.dtype_double ? 8 : 4;
  s.with_w0 = with_w0;
  s.maintained = o.solve == mosaic::PrecisionSolve::maintained;
  s.second_factor = mosaic::MosaicParams{}.gamma > 0;  // the bench runs the default direction and gamma
  s.all_streams_at_once = all_streams_at_once;
  s.panel_cols = o.panel_cols;
  return s;
}

// One host thread's rate on vectorizable in-cache double work, the kind of
// loop the coefficient algebra is written as (y += a x over unit-stride
// rows, no FMA: -ffp-contract=off): 2048 doubles (L1), best of 5 x 20,000
// passes; 2 flops per element. The bound the cost model holds the host's
// coefficient steps to.
double in_cache_double_gflops() {
  std::vector<double> y(2048, 0.0), a(2048, 0.5);
  double best = 1e300;
  for (int rep = 0; rep < 6; ++rep) {
    const auto t0 = Clock::now();
    for (int pass = 0; pass < 20000; ++pass) {
      const double x = 1e-9 * (pass + 1);
      double* __restrict__ yp = y.data();
      const double* __restrict__ ap = a.data();
      for (int i = 0; i < 2048; ++i) yp[i] += ap[i] * x;
    }
    const double t = seconds_since(t0);
    if (rep > 0) best = std::min(best, t);
  }
  volatile double sink = y[7];  // keeps the loop
  (void)sink;
  return 2.0 * 2048 * 20000 / best / 1e9;
}

// The blocked update of k samples per block; with `missing`, the masked
// engine's blocks (algorithm.missing: posterior, cut into runs, 7.7.3),
// with `diagonal` the diagonal-noise model's (8.5), whose phases are not
// timed.
template <class T>
BlockRow bench_block(const Options& o, int d, int r, int k, const mosaic::MissingSpec* missing = nullptr,
                     bool diagonal = false) {
  const int B = o.streams;
  std::vector<std::uint64_t> ids(B);
  for (int b = 0; b < B; ++b) ids[b] = std::uint64_t(b);
  mosaic::SyntheticSpec spec = bench_spec(d, r);
  mosaic::MosaicParams p;
  p.block_size = k;
  if (missing) {
    spec.missing = *missing;
    p.missing = mosaic::MissingMode::posterior;
  }
  if (diagonal) p.noise = mosaic::NoiseModel::diagonal;
  p.precision_solve = o.solve;
  p.reorthonormalize_every = o.reorth;
  mosaic::SyntheticDriftSource<T, Exec> src(spec, ids);
  mosaic::StreamBatch<T, Exec> sb(B, d, r, ids, p.noise);
  mosaic::MosaicEngine<T, Exec> eng(p, B, d, r);
  eng.set_block_gemm(o.gemm);
  eng.set_vendor_panel_cols(o.panel_cols);
  eng.init_random(sb, 1);
  typename mosaic::SyntheticDriftSource<T, Exec>::out_block_view X("Xblock", B, k, d);
  std::int64_t t = 0;
  double t_engine = 0;
  auto timed_block = [&]() {
    src.generate_block(t, k, X);
    t += k;
    Kokkos::fence();
    const auto t0 = Clock::now();
    eng.step_block(sb, X);
    Kokkos::fence();
    t_engine += seconds_since(t0);
  };
  timed_block();  // warm-up
  t_engine = 0;
  eng.set_phase_timing(!diagonal);
  long blocks = 0;
  const auto wall0 = Clock::now();
  const long want_blocks = o.steps > 0 ? std::max(1L, o.steps / k) : 0;
  while (want_blocks > 0 ? blocks < want_blocks : (blocks < 2 || seconds_since(wall0) < o.seconds)) {
    timed_block();
    ++blocks;
  }
  const auto clamped = mosaic::transfer::to_host(sb.clamped_steps);
  const auto status = mosaic::transfer::to_host(sb.status);
  BlockRow row{k, blocks * k, double(B) * blocks * k / t_engine, 0, 0};
  row.gemm = mosaic::to_string(eng.block_gemm_resolved());
  if (missing) {
    const auto entries = mosaic::transfer::to_host(sb.missing_entries);
    double n = 0;
    for (int b = 0; b < B; ++b) n += double(entries(b));
    row.missing_fraction = n / (double(B) * double(t) * d);  // the counters include the warm-up block
    const mosaic::MaskedRunCounts& cuts = eng.masked_run_counts();
    const double planned = double(cuts.run_samples + cuts.shared_samples + cuts.step_samples);
    row.run_fraction = double(cuts.run_samples) / planned;
    row.shared_fraction = double(cuts.shared_samples) / planned;
    row.phased = eng.block_gemm_resolved() == mosaic::BlockGemm::vendor;
    row.phases = eng.block_phases();
    row.seconds = t_engine;
  } else if (diagonal) {
    const auto rw = mosaic::transfer::to_host(sb.rewhitenings);
    for (int b = 0; b < B; ++b) row.rewhitenings += rw(b);
  } else if (eng.block_gemm_resolved() == mosaic::BlockGemm::vendor) {
    row.gemm += eng.vendor_gemm_over_streams() ? " (one thread per stream" : " (one GEMM at a time";
    row.gemm += eng.factor_in_team_scratch() ? ", factors in team scratch)" : ", factors in the work array)";
    row.phased = true;
    row.phases = eng.block_phases();
    row.seconds = t_engine;
    row.shape = block_shape(o, d, r, k, eng.reorthonormalize_at_block_end() || eng.reorthonormalize_every() > 0,
                            !eng.vendor_gemm_over_streams());
    row.product_flops = mosaic::cost::product_flops(row.shape) * B * blocks;
    row.materialize_flops = mosaic::cost::bases_flops(row.shape) * B * blocks;
  }
  for (int b = 0; b < B; ++b) {
    row.clamped += clamped(b);
    row.broken += status(b) != 0;
  }
  return row;
}

// A row of the masked blocks' phases (wall us per sample, all streams):
// block, the samples' classification, a shared-mask run's start, the
// blocked update's four phases, the run's end, the rest.
std::string masked_phase_row(const Options& o, int d, int r, const std::string& pattern, const BlockRow& br) {
  const auto& ph = br.phases;
  const double per = 1e6 / (double(o.streams) * br.steps);  // seconds -> us per sample
  const double timed = ph.kinds + ph.run_start + ph.pack + ph.products + ph.coefficients + ph.materialize + ph.run_end;
  char line[512];
  std::snprintf(line, sizeof line,
                "| %d | %d | %d | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |", d, r, br.k,
                pattern.c_str(), per * br.seconds, per * ph.kinds, per * ph.run_start, per * ph.pack, per * ph.products,
                per * ph.coefficients, per * ph.materialize, per * ph.run_end, per * (br.seconds - timed));
  return line;
}

// One Markdown table of rows gathered during the run, after a caption line
// ("# caption"): the header, a separator with one cell per header column,
// the rows. Nothing when there are no rows.
void print_table(const std::string& caption, const std::string& header, const std::vector<std::string>& rows) {
  if (rows.empty()) return;
  std::string separator = "|";
  for (long c = std::count(header.begin(), header.end(), '|') - 1; c > 0; --c) separator += "---|";
  std::printf("\n# %s\n%s\n%s\n", caption.c_str(), header.c_str(), separator.c_str());
  for (const auto& l : rows) std::printf("%s\n", l.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  // Kokkos gets its own flags only, checked and in the spelling of the
  // Kokkos built against, as the mini-app does (kokkos_flags.hpp).
  std::vector<std::string> flags;
  for (int k = 1; k < argc; ++k)
    if (std::strncmp(argv[k], "--kokkos", 8) == 0) flags.emplace_back(argv[k]);
  mosaic::kokkos_flags::Translation kokkos;
  try {
    kokkos = mosaic::kokkos_flags::translate(flags, KOKKOS_VERSION / 10000);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "mosaic_bench: %s\n", e.what());
    return 2;
  }
  if (kokkos.help) {
    std::printf("%s", mosaic::kokkos_flags::help().c_str());
    return 0;
  }
  std::vector<std::string> kokkos_args = {argv[0]};
  kokkos_args.insert(kokkos_args.end(), kokkos.arguments.begin(), kokkos.arguments.end());
  std::vector<char*> kokkos_argv;
  for (std::string& a : kokkos_args) kokkos_argv.push_back(a.data());
  int kokkos_argc = int(kokkos_argv.size());
  Kokkos::initialize(kokkos_argc, kokkos_argv.data());
  if (kokkos.print_configuration) Kokkos::print_configuration(std::cout);  // Kokkos 3 lacks the flag
  int rc = 0;
  {
    const Options o = parse(argc, argv);
    std::printf("# mosaic_bench: Kokkos %d, execution space %s, concurrency %d, %s, %d streams\n", KOKKOS_VERSION,
                Exec::name(), Exec().concurrency(), o.dtype_double ? "double" : "float", o.streams);
    const double bw = copy_bandwidth_gbs();
    const int gemm_n =
        1104;  // a multiple of tile::MR and of 8 (whole tiles); 1008 (a 4032-byte row) was markedly slower (cache-set conflicts)
    const double gf = sgemm_gflops(gemm_n);
    const double vendor_sgf = vendor_gemm_gflops<float>(gemm_n);
    // The rate the blocked rows are compared to: the run's own precision.
    const double vendor_gf = o.dtype_double ? vendor_gemm_gflops<double>(gemm_n) : vendor_sgf;
    std::printf("# roofline: copy bandwidth %.2f GB/s (Kokkos parallel_for a[i]=b[i], 2 x 256 MiB, read+write)\n", bw);
    std::printf(
        "# roofline: sgemm %.2f GFLOP/s (n=%d, the tiled micro-kernel of the blocked update, packed, no vendor BLAS, host execution space)\n",
        gf, gemm_n);
    if (o.dtype_double)
      std::printf("# roofline: vendor dgemm %.2f GFLOP/s (n=%d, the backend's GEMM)\n", vendor_gf, gemm_n);
    std::printf("# roofline: vendor sgemm %.2f GFLOP/s (n=%d, the backend's GEMM on %s: %s)\n", vendor_sgf, gemm_n,
                Exec::name(), vendor_gemm_name().c_str());
    const double small_gf = in_cache_double_gflops();
    std::printf("# roofline: in-cache double %.2f GFLOP/s (one host thread, y += a x over 2048 doubles, no FMA)\n",
                small_gf);
    std::printf("# model per sample: 4dr flops, 3dr floats of U traffic; impl: 8dr flops, 4dr floats\n");
    std::printf(
        "| d | r | engine steps | engine samples/s | reference samples/s (1 thread) | ratio | GB/s model | GB/s impl | %% of copy BW (impl) | GFLOP/s model | GFLOP/s impl | clamped | broken |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    std::vector<std::string> blocked_rows, phase_rows, model_rows, masked_rows, masked_block_rows, masked_phase_rows,
        noise_rows, noise_block_rows;
    for (int d : o.d)
      for (int r : o.r) {
        if (2 * r > d) continue;
        const Row w = o.dtype_double ? bench_point<double>(o, d, r) : bench_point<float>(o, d, r);
        std::printf(
            "| %d | %d | %ld | %.1f | %.1f (%ld steps) | %.2f | %.2f | %.2f | %.0f%% | %.2f | %.2f | %ld | %d |\n", w.d,
            w.r, w.steps, w.engine_sps, w.ref_sps, w.ref_steps, w.engine_sps / w.ref_sps, w.model_gbs, w.impl_gbs,
            100.0 * w.impl_gbs / bw, w.model_gflops, w.impl_gflops, w.clamped, w.broken);
        std::fflush(stdout);
        if (w.broken) rc = 1;
        for (const std::string& name : o.missing) {
          const mosaic::MissingSpec m = missing_pattern(name, d);
          const Row mr = o.dtype_double ? bench_point<double>(o, d, r, &m) : bench_point<float>(o, d, r, &m);
          // 7.8: the Gram of the smaller of the missing and observed row sets, and about 4 r^3 more of
          // r x r algebra than section 2's step (none when nothing is missing: section 2 itself); a step
          // that reuses the previous step's Gram and factors adds about 3 r^3.
          const double missing_rows = mr.missing_fraction * d;
          const double fresh_flops = std::min(missing_rows, d - missing_rows) * r * (r + 1.0) + 4.0 * r * r * r;
          const double model_flops =
              missing_rows > 0 ? (1.0 - mr.reuse_fraction) * fresh_flops + mr.reuse_fraction * 3.0 * r * r * r : 0.0;
          const double us = 1e6 / mr.engine_sps, us_seq = 1e6 / w.engine_sps, added = us - us_seq;
          char rate[32] = "n/a", line[512];
          if (added > 0 && model_flops > 0) std::snprintf(rate, sizeof rate, "%.2f", model_flops / added / 1e3);
          std::snprintf(
              line, sizeof line,
              "| %d | %d | %s | %.4f | %.3f | %ld | %.1f | %.2fx | %.2f | %+.2f | %.3g | %s | %ld | %ld | %d |", d, r,
              name.c_str(), mr.missing_fraction, mr.reuse_fraction, mr.steps, mr.engine_sps,
              w.engine_sps / mr.engine_sps, us, added, model_flops, rate, mr.skipped, mr.clamped, mr.broken);
          masked_rows.push_back(line);
          std::printf("# masked: %s\n", line);
          std::fflush(stdout);
          if (mr.broken) rc = 1;
        }
        if (o.noise_diagonal) {
          const Row nr =
              o.dtype_double ? bench_point<double>(o, d, r, nullptr, true) : bench_point<float>(o, d, r, nullptr, true);
          const double us = 1e6 / nr.engine_sps, us_seq = 1e6 / w.engine_sps;
          char line[256];
          std::snprintf(line, sizeof line, "| %d | %d | %ld | %.1f | %.2fx | %.2f | %+.2f | %ld | %ld | %d |", d, r,
                        nr.steps, nr.engine_sps, w.engine_sps / nr.engine_sps, us, us - us_seq, nr.rewhitenings,
                        nr.clamped, nr.broken);
          noise_rows.push_back(line);
          std::printf("# noise: %s\n", line);
          std::fflush(stdout);
          if (nr.broken) rc = 1;
        }
        std::vector<BlockRow> rows;
        for (int k : o.block)
          if (k > 1) rows.push_back(o.dtype_double ? bench_block<double>(o, d, r, k) : bench_block<float>(o, d, r, k));
        double best = 0;
        for (const auto& br : rows) best = std::max(best, br.sps);
        for (const auto& br : rows) {
          const double flops = double(d) * (4.0 * r + br.k + 2.0 * r * r / br.k);
          const double gfs = br.sps * flops / 1e9;
          const double vendor_block = o.dtype_double ? vendor_block_gemm_gflops<double>(o.streams, d, r, br.k)
                                                     : vendor_block_gemm_gflops<float>(o.streams, d, r, br.k);
          char line[512];
          std::snprintf(line, sizeof line,
                        "| %d | %d | %.1f | %d | %ld | %.1f | %.2fx | %.2f | %.0f%% | %.2f | %.0f%% | %ld | %d |%s", d,
                        r, w.engine_sps, br.k, br.steps, br.sps, br.sps / w.engine_sps, gfs, 100.0 * gfs / gf,
                        vendor_block, 100.0 * gfs / vendor_block, br.clamped, br.broken,
                        br.sps == best ? " **best k** |" : " |");
          blocked_rows.push_back(line);
          std::printf("# blocked: %s\n", line);
          bool unmasked_phases_shown = false;
          for (const std::string& name : o.missing) {
            const mosaic::MissingSpec m = missing_pattern(name, d);
            const BlockRow mb =
                o.dtype_double ? bench_block<double>(o, d, r, br.k, &m) : bench_block<float>(o, d, r, br.k, &m);
            // The unmasked blocked update again, right after: on a shared machine its rate moves by
            // more than the masked form's cost between the two, so the ratio to each side is printed.
            const BlockRow after =
                o.dtype_double ? bench_block<double>(o, d, r, br.k) : bench_block<float>(o, d, r, br.k);
            char mline[512];
            std::snprintf(mline, sizeof mline,
                          "| %d | %d | %d | %s | %.4f | %.3f | %.3f | %ld | %.1f | %.2fx | %.2fx | %.2fx | %ld | %d |",
                          d, r, br.k, name.c_str(), mb.missing_fraction, mb.run_fraction, mb.shared_fraction, mb.steps,
                          mb.sps, br.sps / mb.sps, after.sps / mb.sps, w.engine_sps / mb.sps, mb.clamped, mb.broken);
            masked_block_rows.push_back(mline);
            std::printf("# masked blocks: %s\n", mline);
            if (mb.phased && br.phased) {
              if (!unmasked_phases_shown) masked_phase_rows.push_back(masked_phase_row(o, d, r, "none", br));
              unmasked_phases_shown = true;
              masked_phase_rows.push_back(masked_phase_row(o, d, r, name, mb));
            }
            std::fflush(stdout);
            if (mb.broken) rc = 1;
          }
          if (o.noise_diagonal) {
            const BlockRow nb = o.dtype_double ? bench_block<double>(o, d, r, br.k, nullptr, true)
                                               : bench_block<float>(o, d, r, br.k, nullptr, true);
            char nline[256];
            std::snprintf(nline, sizeof nline, "| %d | %d | %d | %ld | %.1f | %.2fx | %.2fx | %ld | %ld | %d |", d, r,
                          br.k, nb.steps, nb.sps, br.sps / nb.sps, w.engine_sps / nb.sps, nb.rewhitenings, nb.clamped,
                          nb.broken);
            noise_block_rows.push_back(nline);
            std::printf("# noise blocks: %s\n", nline);
            std::fflush(stdout);
            if (nb.broken) rc = 1;
          }
          if (br.phased) {
            const auto& ph = br.phases;
            const double per = 1e6 / (double(o.streams) * br.steps);  // seconds -> us per sample
            const double gemm_s = ph.products + ph.materialize;
            const double gemm_gf = (br.product_flops + br.materialize_flops) / gemm_s / 1e9;
            std::snprintf(
                line, sizeof line,
                "| %d | %d | %d | %s | %.2f | %.2f | %.2f (%.1f GFLOP/s) | %.2f | %.2f (%.1f GFLOP/s) | %.2f | %.0f%% | %.1f | %.0f%% | %.0f%% | %.0f%% |",
                d, r, br.k, br.gemm.c_str(), per * br.seconds, per * ph.pack, per * ph.products,
                br.product_flops / ph.products / 1e9, per * ph.coefficients, per * ph.materialize,
                br.materialize_flops / ph.materialize / 1e9,
                per * (br.seconds - ph.pack - ph.products - ph.coefficients - ph.materialize),
                100.0 * gemm_s / br.seconds, gemm_gf, 100.0 * gemm_gf / vendor_gf, 100.0 * gemm_gf / vendor_block,
                100.0 * ph.coefficients / br.seconds);
            phase_rows.push_back(line);
            // The cost model beside the measured phases: on a host space its
            // time comes from this run's rates (copy bandwidth, the vendor
            // GEMM at the block's shapes measured stream after stream, one
            // thread's in-cache double rate for the coefficient steps), so a
            // GEMM phase can beat it (one stream per thread runs faster than
            // the measurement's shape); on a device the
            // coefficient steps are a chain of dependent operations
            // (cost_model.hpp), priced at the stated assumptions.
            mosaic::cost::Rates rates;
            rates.copy_gbs = bw;
            rates.gemm_gflops = vendor_block;
            rates.small_gflops = small_gf;
            rates.threads = Exec().concurrency();
            constexpr bool device = !mosaic::is_host_space<Exec>;
            if (device) {
              rates.launch_us = 5.0;
              rates.dependent_op_ns = 20.0;
            }
            const auto cost = mosaic::cost::block_cost(br.shape);
            const auto pred = mosaic::cost::predict(br.shape, cost, rates, device);
            const double per_block = 1e6 / (double(o.streams) * br.k);  // seconds per block -> us per sample
            const double blocks = double(br.steps) / br.k;
            const struct {
              const char* name;
              const mosaic::cost::Phase& c;
              double predicted, measured;
            } phases[] = {{"pack", cost.pack, pred.pack, ph.pack},
                          {"products", cost.products, pred.products, ph.products},
                          {"coefficients", cost.coefficients, pred.coefficients, ph.coefficients},
                          {"bases", cost.bases, pred.bases, ph.materialize}};
            for (const auto& q : phases) {
              std::snprintf(line, sizeof line, "| %d | %d | %d | %s | %.3g | %.3g | %g | %g | %.2f | %.2f | %.2f |", d,
                            r, br.k, q.name, q.c.flops / (double(o.streams) * br.k),
                            q.c.bytes / (double(o.streams) * br.k), q.c.launches, q.c.library_calls,
                            per_block * q.predicted, per * q.measured, q.measured / blocks / q.predicted);
              model_rows.push_back(line);
            }
            std::snprintf(line, sizeof line, "| %d | %d | %d | block | | | | | %.2f | %.2f | %.2f |", d, r, br.k,
                          per_block * pred.total(), per * br.seconds, br.seconds / blocks / pred.total());
            model_rows.push_back(line);
          }
          std::fflush(stdout);
          if (br.broken) rc = 1;
        }
      }
    char caption[512];
    std::snprintf(caption, sizeof caption,
                  "blocked update (ALGORITHM.md section 6), gemm %s, precision_solve %s, reorthonormalize_every %s, "
                  "products in panels of %d columns (gemm vendor); model d(4r + k + 2r^2/k) flops/sample",
                  mosaic::to_string(o.gemm), mosaic::to_string(o.solve),
                  o.reorth == mosaic::kAuto ? "auto" : std::to_string(o.reorth).c_str(), o.panel_cols);
    print_table(
        caption,
        "| d | r | sequential samples/s | k | blocked steps | blocked samples/s | speedup | GFLOP/s (model) | % of "
        "sgemm | vendor GFLOP/s (block shapes) | % of vendor | clamped | broken | |",
        blocked_rows);
    print_table(
        "masked step (ALGORITHM.md 7.3, algorithm.missing: posterior; sequential kernel, wall us per sample, all "
        "streams) against the unmasked sequential kernel of the same run; model: 7.8's added flops per sample, "
        "min(m, n) r (r + 1) + 4 r^3 (m missing, n observed), 3 r^3 for a step that reused the previous step's "
        "Gram, and the rate the added time gives them",
        "| d | r | pattern | missing fraction | Gram reused | steps | samples/s | cost vs unmasked | us/sample | added "
        "us/sample | model added flops/sample | added GFLOP/s (model flops / added time) | skipped | clamped | broken |",
        masked_rows);
    print_table(
        "noise: diagonal (ALGORITHM.md section 8; sequential kernel, complete samples, re-whitening every 1000 steps; "
        "wall us per sample, all streams) against the isotropic sequential kernel of the same run",
        "| d | r | steps | samples/s | cost vs isotropic | us/sample | added us/sample | re-whitenings (all streams) | "
        "clamped | broken |",
        noise_rows);
    print_table(
        "noise: diagonal blocks (ALGORITHM.md 8.5; block_size k, complete samples: the whitened block, the "
        "residuals' extra GEMM, a re-whitening at the end of the block that reaches each multiple of 1000 steps) "
        "against the isotropic blocked update of the same k and the isotropic sequential kernel of the same run",
        "| d | r | k | steps | samples/s | cost vs isotropic blocked | cost vs isotropic sequential | re-whitenings "
        "(all streams) | clamped | broken |",
        noise_block_rows);
    print_table(
        "masked blocks (algorithm.missing: posterior, block_size k: runs of >= 2 complete samples blocked, runs of "
        ">= 2 samples missing the same coordinates by the shared-mask blocked form (7.7.2), the other samples masked "
        "sequential steps, ALGORITHM.md 7.7.3) against the unmasked blocked update of the same k (timed before the "
        "masked blocks, and again right after them) and the unmasked sequential kernel of the same run",
        "| d | r | k | pattern | missing fraction | samples in blocked runs | samples in shared-mask runs | steps | "
        "samples/s | cost vs unmasked blocked | cost vs unmasked blocked (after) | cost vs unmasked sequential | "
        "clamped | broken |",
        masked_block_rows);
    print_table(
        "phases of the masked blocks (gemm vendor; wall us per sample, all streams; fenced while timed) beside the "
        "unmasked blocked update of the same k (pattern none): the samples' classification (with the copy of the "
        "kinds to the host), a shared-mask run's start (the gather with mu0 in the missing entries, U0's missing rows "
        "saved), pack, products, coefficient steps, bases, the run's end (the missing rows put back), the rest",
        "| d | r | k | pattern | block | kinds | run start | pack | products | coefficients | bases | run end | other |",
        masked_phase_rows);
    print_table(
        "phases of the blocked update (gemm vendor; wall us per sample, all streams; fenced while timed): pack [U0 | "
        "D], products G, H (W0), coefficient steps (one launch), new bases U = [U0 | D] W; GEMM = products + bases, "
        "at the rate of their own flops",
        "| d | r | k | gemm | block | pack | products | coefficients | bases | other | GEMM share | GEMM GFLOP/s | % of "
        "vendor gemm (n=1104, this precision) | % of vendor (block shapes) | coefficients share |",
        phase_rows);
    print_table(std::string("cost model (src/mosaic/engine/cost_model.hpp) per phase: flops and bytes per sample, "
                            "launches and library calls per block, predicted and measured us per sample (all "
                            "streams); ") +
                    (mosaic::is_host_space<Exec>
                         ? "host: predicted from this run's copy bandwidth, vendor GEMM rate at the block's shapes "
                           "and in-cache double rate per thread"
                         : "device: copy bandwidth and GEMM rate of this run, 5 us per launch or library call and 20 "
                           "ns per dependent operation of the coefficient steps ASSUMED (not measured)"),
                "| d | r | k | phase | flops/sample | bytes/sample | launches/block | library calls/block | "
                "predicted us/sample | measured us/sample | measured/predicted |",
                model_rows);
  }
  Kokkos::finalize();
  return rc;
}
