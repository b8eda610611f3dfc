// The few MPI collectives the driver, its statistics and the checkpoints
// use, typed: one scalar reduced over the ranks, a per-rank vector or
// string gathered to rank 0, one rank's string sent to all, the ranks'
// agreement on an error, and the exclusive prefix of parallel-in-time
// segments' certificate. During a run only statistics built from these
// cross ranks; stream states do only in time segments, point to point
// (app/time_segments.hpp).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace mosaic::detail {

inline double allreduce(double v, MPI_Op op, MPI_Comm comm) {
  double out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, op, comm);
  return out;
}
inline long long allreduce(long long v, MPI_Op op, MPI_Comm comm) {
  long long out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_LONG_LONG, op, comm);
  return out;
}

// Gathers a per-rank vector to rank 0 (concatenated in rank order).
template <class T>
std::vector<T> gather_to_root(const std::vector<T>& local, MPI_Datatype type, MPI_Comm comm) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  int count = int(local.size());
  std::vector<int> counts(nranks), displs(nranks);
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  int total = 0;
  for (int k = 0; k < nranks; ++k) {
    displs[k] = total;
    total += counts[k];
  }
  std::vector<T> all(rank == 0 ? total : 0);
  MPI_Gatherv(local.data(), count, type, all.data(), counts.data(), displs.data(), type, 0, comm);
  return all;
}

// Sends rank `from`'s string to every rank.
inline std::string broadcast_string(std::string s, int from, MPI_Comm comm) {
  long long n = (long long)s.size();
  MPI_Bcast(&n, 1, MPI_LONG_LONG, from, comm);
  s.resize(std::size_t(n));
  if (n > 0) MPI_Bcast(s.data(), int(n), MPI_CHAR, from, comm);
  return s;
}

// Every rank's string, on rank 0 (rank order); empty elsewhere.
inline std::vector<std::string> gather_strings(const std::string& s, MPI_Comm comm) {
  const std::vector<long long> sizes = gather_to_root(std::vector<long long>{(long long)s.size()}, MPI_LONG_LONG, comm);
  const std::vector<char> all = gather_to_root(std::vector<char>(s.begin(), s.end()), MPI_CHAR, comm);
  std::vector<std::string> out;
  auto at = all.begin();
  for (const long long n : sizes) {
    out.emplace_back(at, at + n);
    at += n;
  }
  return out;
}

// The ranks agree on a per-rank error: "" on every rank when no rank has
// one, else the message of the lowest rank that has one.
inline std::string agree_on_error(const std::string& local, MPI_Comm comm) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  int mine = local.empty() ? nranks : rank, first = nranks;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == nranks) return "";
  return broadcast_string(local, first, comm);
}

// The exclusive prefix over the ranks of a per-element logical AND: on rank
// k, element i is the AND of element i of ranks 0 .. k-1 (true on rank 0).
// ALGORITHM.md 9.4's certificate c_q = c_{q-1} and f_q across the ranks
// that hold consecutive segments of several streams, one element per stream.
inline std::vector<int> exscan_and(const std::vector<int>& local, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<int> in(local.size()), out(local.size(), 1);
  for (std::size_t i = 0; i < local.size(); ++i) in[i] = local[i] ? 1 : 0;
  MPI_Exscan(in.data(), out.data(), int(in.size()), MPI_INT, MPI_LAND, comm);
  if (rank == 0) std::fill(out.begin(), out.end(), 1);  // MPI_Exscan leaves rank 0's result undefined
  return out;
}

template <class T>
MPI_Datatype mpi_type() {
  if constexpr (std::is_same<T, float>::value) return MPI_FLOAT;
  else if constexpr (std::is_same<T, double>::value) return MPI_DOUBLE;
  else if constexpr (std::is_same<T, std::int64_t>::value) return MPI_INT64_T;
  else if constexpr (std::is_same<T, std::uint64_t>::value) return MPI_UINT64_T;
  else return MPI_CHAR;
}

}  // namespace mosaic::detail
