// What one rank of a run allocates, estimated from the deck before anything
// is allocated: for --dry-run, for the memory check before a run
// (memory_check.hpp), and in the result file beside the measured peak.
//
// Each item follows the allocations of one component, named where it lives:
//  - stream states (stream_batch.hpp): mu, U, S, s2 in the scalar type, the
//    maintained factor Rfac in double, the per-stream counters;
//  - engine work (batched_engine.hpp): the sequential kernel's vectors and
//    r x r matrices; with block_size k > 1 the blocked update's double
//    coefficients (blocked_step.hpp) and the work of its GEMM kernel:
//    vendor [U0 | D] (d x (r + k)) and its Gram matrix, kokkos_batched D,
//    G, H and a new basis, tiled the padded Gram tiles;
//  - the source: synthetic V0, W0, mean, noise std in double on the
//    execution space (built there: its Cholesky-QR's Gram matrices and
//    factors are left out, 2r x 2r per stream), the block buffer and its
//    latent work (synthetic_source.hpp); npy two host
//    staging chunks and (on a device) one device chunk of
//    min(chunk_rows, rows read) rows (npy_source.hpp);
//  - init: data: the B x n0 x d init samples and init_data's double work
//    (init_data.hpp);
//  - the diagnostics' work (batch_diagnostics.hpp);
//  - host copies of the states (diagnostics, checkpoints) and, on rank 0
//    with output.state_dir, every stream's state gathered for the state
//    files (run.hpp);
//  - with algorithm.time_segments P > 1, the rank's slots (SegmentLayout)
//    of the states, the engine work and the source's items, and each
//    slot's start and end state on the host (time_segments.hpp).
// Items are tagged with the phase they live in (the init samples are freed
// before the first block is allocated), and the estimate is the peak over
// the phases. Items of less than a few r x r matrices per stream are left
// out. The test mpi.memory_estimate_and_refusal holds the execution-space
// peak to within 10% of what a Kokkos Tools library sees allocated at once
// (measured within 1%), so a new large allocation must be added here. On a
// host backend both kinds of bytes are host memory.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include "mosaic/config/run_config.hpp"
#include "mosaic/engine/backend.hpp"
#include "mosaic/engine/batch_diagnostics.hpp"
#include "mosaic/engine/batched_engine.hpp"

namespace mosaic {

// When an item is allocated: for the whole run, or only during init (freed
// before the first step), or only from the first step on. The peak is the
// items of the whole run plus the larger of the other two.
enum class MemoryPhase { whole_run, init, steps };

struct MemoryItem {
  std::string what;
  bool execution_space = true;  // false: host memory on every backend
  MemoryPhase phase = MemoryPhase::whole_run;
  std::size_t bytes = 0;
};

struct MemoryEstimate {
  std::vector<MemoryItem> items;
  int streams = 0;

  // The peak bytes of the execution space's memory, of host-only memory,
  // and of host memory (everything, on a host backend).
  std::size_t execution_space_bytes() const { return peak(true, false); }
  std::size_t host_only_bytes() const { return peak(false, true); }
  std::size_t host_bytes(bool execution_space_is_host) const {
    return execution_space_is_host ? peak(true, true) : host_only_bytes();
  }
  std::size_t total_bytes() const { return peak(true, true); }

  nlohmann::json to_json() const {
    nlohmann::json parts = nlohmann::json::object();
    for (const auto& item : items) parts[item.what] = item.bytes;
    return {{"execution_space_bytes", execution_space_bytes()},
            {"host_only_bytes", host_only_bytes()},
            {"streams", streams},
            {"items", parts}};
  }

  // "stream states 1.2 GiB, engine work 300 MiB, ..." (largest first).
  std::string describe() const;

 private:
  std::size_t peak(bool execution_space, bool host_only) const {
    std::size_t phase[3] = {0, 0, 0};
    for (const auto& item : items)
      if (item.execution_space ? execution_space : host_only) phase[int(item.phase)] += item.bytes;
    return phase[0] + std::max(phase[1], phase[2]);
  }
};

// "1.50 GiB", "29.1 TiB", "512 B".
inline std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 5) {
    bytes /= 1024.0;
    ++u;
  }
  char text[32];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.3g %s", bytes, units[u]);
  return text;
}

inline std::string MemoryEstimate::describe() const {
  std::vector<MemoryItem> sorted = items;
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  std::string s;
  for (const auto& item : sorted)
    if (item.bytes > 0) s += (s.empty() ? "" : ", ") + item.what + " " + format_bytes(double(item.bytes));
  return s;
}

// The estimate for one rank that holds `streams` streams of `c`, with
// `total_streams` streams in the run (rank 0 gathers them all for the state
// files) and `rows_read` the rows an npy run reads per file (init + warm-up
// + steps; <= 0: unknown, chunk_rows is assumed); with time segments,
// `segment_slots` the slots the rank holds (SegmentLayout).
template <class Exec = Kokkos::DefaultExecutionSpace>
MemoryEstimate estimate_rank_memory(const RunConfig& c, int streams, std::int64_t total_streams, bool rank0,
                                    std::int64_t rows_read, std::int64_t segment_slots = 0) {
  const std::size_t B = std::size_t(streams), d = std::size_t(c.problem.d), r = std::size_t(c.problem.rank);
  const std::size_t s = c.problem.dtype == Dtype::float32 ? 4 : 8;
  const std::size_t k = std::size_t(resolved_block_size<Exec>(c.algorithm, int(d), int(r)));
  const std::size_t n0 =
      c.algorithm.init == InitMode::data ? std::size_t(c.algorithm.resolved_init_samples(int(r))) : 0;
  const std::size_t state = s * (d + d * r + r * r + 1);
  MemoryEstimate e;
  e.streams = streams;
  auto add = [&](const char* what, bool exec, std::size_t bytes, MemoryPhase when = MemoryPhase::whole_run) {
    e.items.push_back({what, exec, when, bytes});
  };

  // The state, the counters, section 4's prequential sums and the
  // maintained factor, section 7's seen flags (one byte per coordinate) and,
  // with noise: diagonal, section 8's profile and leverages (scalar) and
  // accumulators (double, int64) per coordinate.
  const bool diagonal = c.algorithm.noise == NoiseModel::diagonal;
  add("stream states", true, B * (state + 8 * r * r + 8 * (16 + preq_columns) + d + (diagonal ? d * (2 * s + 16) : 0)));
  const std::size_t nc = std::size_t(Tuning<Exec>::reduction_chunks);
  std::size_t work = s * B * (2 * d + nc * r + 6 * r + 4 * r * r + nc);
  // impl/masked_step.hpp (missing entries or diagonal noise): the row list, vectors and matrices
  if (c.algorithm.missing != MissingMode::error || diagonal)
    work += B * (4 * d + s * (std::size_t(detail::mv_count) * r + std::size_t(detail::mm_count) * r * r));
  // impl/masked_blocks.hpp (the masked kernel's blocks: missing entries or
  // diagonal noise): flags, runs, gathered samples
  if ((c.algorithm.missing != MissingMode::error || diagonal) && k > 1) {
    work += B * (k + 4 * 4 + s * k * d);
    if (c.algorithm.missing == MissingMode::posterior && c.algorithm.missing_rotation == MissingRotation::observed)
      work += B * (3 * 4 + 8 + 4 * d + s * d * r);  // 7.7.2: the runs, the missing rows and U0 there
  }
  // impl/block_noise.hpp (noise: diagonal, blocked): the whitened block and
  // its residuals, U0, the mean offset, the residual coefficients, s2_old
  // (and on host spaces a row scale per coordinate)
  if (diagonal && k > 1)
    work += s * B * (2 * k * d + d * r + d + k * (r + k)) + 8 * B * (k + (is_host_space<Exec> ? d : 0));
  if (k > 1) {
    work += 8 * B *
            (4 * k * r + k * k + (1 + std::size_t(detail::bm_count)) * r * r + 5 +
             std::size_t(detail::bv_count) * std::max(r, k));  // the blocked coefficients
    const std::size_t rk = r + k;
    if (vendor_gemm_tpl<Exec>()) work += s * B * (d * rk + rk * rk + rk * r);
    else if (is_host_space<Exec>) work += s * B * ((rk + 16) * (rk + 24) + rk * (r + 16));
    else work += s * B * (d * k + 2 * k * r + k * k + r * r + d * r);
  }
  add("engine work", true, work);

  if (c.source.type == "npy") {
    const std::size_t rows =
        std::size_t(rows_read > 0 ? std::min<std::int64_t>(c.source.chunk_rows, rows_read) : c.source.chunk_rows);
    // On a host backend the execution-space chunk is one of the staging
    // chunks, which are then the execution space's memory too.
    add("npy staging chunks", is_host_space<Exec>, 2 * B * rows * d * s);
    if (!is_host_space<Exec>) add("npy chunk", true, B * rows * d * s);
  } else {
    const std::size_t rs = std::size_t(c.source.synthetic.r);
    add("synthetic truth", true, 8 * B * (2 * d * rs + 2 * d) + 8 * rs);
    // Blocks are at most k samples and no longer than a phase (warm-up, steps).
    const std::size_t kb =
        std::min<std::size_t>(k, std::size_t(std::max<std::int64_t>(1, std::max(c.run.warmup_steps, c.run.steps))));
    // The drift-scaled latents: 2r per sample, padded to the generator's pass.
    constexpr std::size_t pass = Tuning<Exec>::synthetic_samples_per_pass;
    const std::size_t latent_cols = (std::max(kb, n0) + pass - 1) / pass * pass;
    add("sample block", true, B * kb * d * s + 8 * B * (2 * rs * latent_cols + 2 * std::max(kb, n0)),
        MemoryPhase::steps);
  }
  if (n0 > 0) {
    add("init samples", true, B * n0 * d * s, MemoryPhase::init);
    // init_data.hpp: on the execution space the centred samples, the mean,
    // the Gram matrices (their eigenvectors in place), the eigenvalues and
    // their work, the scaled eigenvectors and U in double (the host gets
    // the eigenvalues only).
    add("init work", true, 8 * B * (n0 * d + d + n0 * n0 + 2 * n0 + n0 * r + d * r), MemoryPhase::init);
  }
  // compute_diagnostics (batch_diagnostics.hpp): rows of U widened to double
  // for its gemm, U^T U and the eigenvalue work; for a synthetic source also
  // the accuracy against the truth (synthetic_source.hpp): work of the same
  // kind, as many rows of V(t) and U^T V(t). Both are kept from one
  // diagnostic point to the next.
  const std::size_t diag_rows = std::min<std::size_t>(d, detail::basis_gram_rows);
  const std::size_t diag_kind = 8 * B * (diag_rows * r + 2 * r * r + 2 * r + detail::diag_fields);
  std::size_t diag_work = diag_kind;
  if (c.source.type != "npy") {
    const std::size_t rs = std::size_t(c.source.synthetic.r);
    diag_work += diag_kind + 8 * B * (diag_rows * rs + r * rs) + 4 * B;
  }
  add("diagnostics work", true, diag_work, MemoryPhase::steps);
  add("state copies (host)", false, B * state, MemoryPhase::steps);
  // algorithm.time_segments P > 1 (app/time_segments.hpp): from the first
  // step on, the rank's slots, each with what a stream has in the batch,
  // the engine and the source (every one of those items is per stream), and
  // on the host each slot's start and end state.
  if (c.segments.segments > 1) {
    RunConfig one_stream = c;
    one_stream.segments.segments = 1;
    const std::size_t slots = std::size_t(segment_slots);
    for (const MemoryItem& item : estimate_rank_memory<Exec>(one_stream, 1, 1, false, rows_read).items)
      for (const char* what :
           {"stream states", "engine work", "npy staging chunks", "npy chunk", "synthetic truth", "sample block"})
        if (item.what == what)
          e.items.push_back(
              {"time-segment slots: " + item.what, item.execution_space, MemoryPhase::steps, slots * item.bytes});
    add("time-segment start and end states (host)", false, 2 * slots * state, MemoryPhase::steps);
  }
  if (rank0 && !c.output.state_dir.empty())
    add("state files (rank 0 gathers every stream)", false, std::size_t(total_streams) * (state + 3 * 8),
        MemoryPhase::steps);
  return e;
}

}  // namespace mosaic
