// Which global streams a rank owns. A stream is never split across ranks and
// states are never averaged: MOSAIC is sequential within a stream, so ranks
// only ever own whole streams (ALGORITHM.md, "Every stream owns its own state").
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "mosaic/config/run_config.hpp"

namespace mosaic {

struct StreamDecomposition {
  std::int64_t total_streams = 0;
  std::vector<std::uint64_t> local_ids;  // global stream ids owned by this rank
  int min_per_rank = 0, max_per_rank = 0;
  // max/mean - 1 over ranks: 0 when every rank owns the same number of streams.
  double imbalance = 0.0;
};

// weak: `per_rank` streams on every rank, rank k owning ids [k*per_rank, (k+1)*per_rank).
// strong: `total` streams in contiguous blocks whose sizes differ by at most one.
inline StreamDecomposition decompose_streams(const StreamsConfig& cfg, int rank, int nranks) {
  if (nranks < 1 || rank < 0 || rank >= nranks)
    throw std::invalid_argument("decompose_streams: bad rank " + std::to_string(rank) + " of " +
                                std::to_string(nranks));
  StreamDecomposition out;
  std::int64_t first = 0, count = 0;
  if (cfg.mode == StreamMode::weak) {
    out.total_streams = std::int64_t(cfg.per_rank) * nranks;
    first = std::int64_t(cfg.per_rank) * rank;
    count = cfg.per_rank;
    out.min_per_rank = out.max_per_rank = cfg.per_rank;
  } else {
    if (cfg.total < nranks)
      throw std::invalid_argument("strong mode needs streams.total >= number of ranks (" + std::to_string(nranks) +
                                  "), got " + std::to_string(cfg.total));
    out.total_streams = cfg.total;
    const std::int64_t base = cfg.total / nranks, extra = cfg.total % nranks;
    count = base + (rank < extra ? 1 : 0);
    first = rank * base + std::min<std::int64_t>(rank, extra);
    out.min_per_rank = int(base);
    out.max_per_rank = int(base + (extra ? 1 : 0));
  }
  for (std::int64_t k = 0; k < count; ++k) out.local_ids.push_back(std::uint64_t(first + k));
  const double mean = double(out.total_streams) / nranks;
  out.imbalance = out.max_per_rank / mean - 1.0;
  return out;
}

}  // namespace mosaic
