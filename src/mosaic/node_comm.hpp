// The ranks of a communicator that share this node's memory
// (MPI_COMM_TYPE_SHARED, keyed by rank so their order is the parent's): the
// memory check sums their needs, and the Cuda driver maps their devices by
// the local rank. Freed at the end of its scope.
#pragma once

#include <mpi.h>

namespace mosaic {

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

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace mosaic
