// Which global streams a rank owns. States are never averaged: MOSAIC is
// sequential within a stream, so a rank owns whole streams (ALGORITHM.md,
// "Every stream owns its own state"). Only ALGORITHM.md section 9's time
// segments spread one stream's steps over ranks, and they certify instead
// of averaging (SegmentLayout).
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

// ALGORITHM.md section 9's slots over the ranks (algorithm.time_segments
// P > 1; docs/SEGMENTS.md): the grid of `streams` x P slots, stream-major
// (slot s P + q is segment q of stream s), cut into contiguous ranges whose
// sizes differ by at most one. One stream's segments lie on consecutive
// ranks, and two neighbouring ranks share at most one stream's boundary. A
// stream belongs to the rank that holds its segment 0: that rank starts it
// (its init) and reports it (its final state and everything about it); a
// rank may hold segments and own no stream.
struct SegmentLayout {
  std::int64_t streams = 0;
  int segments = 1, ranks = 1;

  SegmentLayout(std::int64_t streams_, int segments_, int ranks_)
      : streams(streams_), segments(segments_), ranks(ranks_) {
    if (streams < 1 || segments < 1 || ranks < 1 || streams * segments < ranks)
      throw std::invalid_argument("SegmentLayout: " + std::to_string(streams) + " streams x " +
                                  std::to_string(segments) + " segments leave a rank of " + std::to_string(ranks) +
                                  " without a slot");
  }
  std::int64_t slots() const { return streams * segments; }
  // Rank k holds the global slots [first_slot(k), first_slot(k + 1)).
  std::int64_t first_slot(int rank) const {
    const std::int64_t base = slots() / ranks, extra = slots() % ranks;
    return rank * base + std::min<std::int64_t>(rank, extra);
  }
  int rank_of_slot(std::int64_t g) const {
    const std::int64_t base = slots() / ranks, extra = slots() % ranks, wide = extra * (base + 1);
    return int(g < wide ? g / (base + 1) : extra + (g - wide) / base);
  }
  std::int64_t slots_on(int rank) const { return first_slot(rank + 1) - first_slot(rank); }
  int owner(std::int64_t stream) const { return rank_of_slot(stream * segments); }
};

// weak: `per_rank` streams on every rank, rank k owning ids [k*per_rank, (k+1)*per_rank).
// strong: `total` streams in contiguous blocks whose sizes differ by at most one.
// With time_segments > 1 the owner of a stream is SegmentLayout's (the
// same streams per rank in weak mode; strong mode needs total x
// time_segments >= ranks only).
inline StreamDecomposition decompose_streams(const StreamsConfig& cfg, int rank, int nranks, int time_segments = 1) {
  if (nranks < 1 || rank < 0 || rank >= nranks)
    throw std::invalid_argument("decompose_streams: bad rank " + std::to_string(rank) + " of " +
                                std::to_string(nranks));
  StreamDecomposition out;
  if (time_segments > 1) {
    const std::int64_t total = cfg.mode == StreamMode::weak ? std::int64_t(cfg.per_rank) * nranks : cfg.total;
    const SegmentLayout layout(total, time_segments, nranks);
    out.total_streams = total;
    std::vector<int> owned(std::size_t(nranks), 0);
    for (std::int64_t s = 0; s < total; ++s) {
      const int k = layout.owner(s);
      owned[std::size_t(k)] += 1;
      if (k == rank) out.local_ids.push_back(std::uint64_t(s));
    }
    out.min_per_rank = *std::min_element(owned.begin(), owned.end());
    out.max_per_rank = *std::max_element(owned.begin(), owned.end());
    out.imbalance = out.max_per_rank / (double(total) / nranks) - 1.0;
    return out;
  }
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
