// The ranks of a communicator that share this node's memory
// (MPI_COMM_TYPE_SHARED, keyed by rank so their order is the parent's): the
// memory check sums their needs, and the Cuda driver maps their devices by
// the local rank. Freed at the end of its scope.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <mpi.h>

namespace mosaic {

// Colors that group equal keys: colors[i] is the first index whose key
// equals keys[i] (an MPI_Comm_split color, >= 0).
inline std::vector<int> group_colors(const std::vector<std::string>& keys) {
  std::vector<int> colors(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i)
    colors[i] = int(std::find(keys.begin(), keys.end(), keys[i]) - keys.begin());
  return colors;
}

class NodeComm {
 public:
  explicit NodeComm(MPI_Comm parent) {
    int rank = 0;
    MPI_Comm_rank(parent, &rank);
    MPI_Comm_split_type(parent, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &comm_);
  }
  ~NodeComm() { MPI_Comm_free(&comm_); }
  NodeComm(const NodeComm&) = delete;
  NodeComm& operator=(const NodeComm&) = delete;

  MPI_Comm get() const { return comm_; }
  int rank() const {
    int r = 0;
    MPI_Comm_rank(comm_, &r);
    return r;
  }

  // Collective: this rank's color among the node's ranks grouped by `key`
  // (group_colors; keys compared on their first key_bytes bytes), e.g. the
  // UUID of the GPU each rank uses, so that ranks that see one GPU under
  // different ordinals (a per-rank CUDA_VISIBLE_DEVICES) or different GPUs
  // under one ordinal are grouped by the GPU itself.
  int color_of(const std::string& key) const {
    int n = 1;
    MPI_Comm_size(comm_, &n);
    std::vector<char> mine(key_bytes, '\0'), all(std::size_t(n) * key_bytes);
    std::memcpy(mine.data(), key.data(), std::min(key.size(), key_bytes));
    MPI_Allgather(mine.data(), int(key_bytes), MPI_CHAR, all.data(), int(key_bytes), MPI_CHAR, comm_);
    std::vector<std::string> keys;
    for (int i = 0; i < n; ++i) keys.emplace_back(all.data() + std::size_t(i) * key_bytes, key_bytes);
    return group_colors(keys)[std::size_t(rank())];
  }
  static constexpr std::size_t key_bytes = 64;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace mosaic
