#include "mosaic/app/memory_check.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include <Kokkos_Core.hpp>
#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

#include "mosaic/app/decomposition.hpp"
#include "mosaic/app/memory_estimate.hpp"
#include "mosaic/app/node_comm.hpp"
#include "mosaic/io/checkpoint.hpp"
#include "mosaic/sources/npy.hpp"

namespace mosaic {
namespace {

using Exec = Kokkos::DefaultExecutionSpace;

// The first number of a one-line file ("max" and unreadable files: -1).
long long read_number(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return -1;
  try {
    return std::stoll(word);
  } catch (const std::exception&) {
    return -1;
  }
}

// The cgroup (v2 "0::/path", else v1's memory controller) of this process.
std::string cgroup_memory_dir(bool& v2) {
  std::ifstream in("/proc/self/cgroup");
  std::string line, v1;
  while (std::getline(in, line)) {
    if (line.compare(0, 3, "0::") == 0) {
      v2 = true;
      return "/sys/fs/cgroup" + line.substr(3);
    }
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a != std::string::npos && b != std::string::npos) {
      std::stringstream controllers(line.substr(a + 1, b - a - 1));
      std::string c;
      while (std::getline(controllers, c, ','))
        if (c == "memory") v1 = "/sys/fs/cgroup/memory" + line.substr(b + 1);
    }
  }
  v2 = false;
  return v1;
}

// Rows an npy point reads per file: known from the resolved steps, else
// (run.steps: all, in --dry-run) the longest of rank 0's files; 0 if unknown.
std::int64_t npy_rows_read(const RunConfig& c, const std::vector<std::uint64_t>& ids) {
  if (c.source.type != "npy") return 0;
  const std::int64_t n0 = c.algorithm.init == InitMode::data ? c.algorithm.resolved_init_samples(c.problem.rank) : 0;
  if (!c.run.steps_all || c.run.steps > 0) return n0 + c.run.warmup_steps + c.run.steps;
  std::int64_t rows = 0;
  for (const auto id : ids) {
    if (id >= c.source.paths.size()) return 0;
    try {
      const NpyHeader h = parse_npy_header(c.source.paths[id]);
      if (!h.shape.empty()) rows = std::max(rows, h.shape[0]);
    } catch (const std::exception&) {
      return 0;
    }
  }
  return rows;
}

MemoryEstimate estimate_for(const RunConfig& c, int rank, int nranks) {
  const StreamDecomposition dec = decompose_streams(c.streams, rank, nranks, c.segments.segments);
  const std::int64_t slots =
      c.segments.segments > 1 ? SegmentLayout(dec.total_streams, c.segments.segments, nranks).slots_on(rank) : 0;
  return estimate_rank_memory<Exec>(c, int(dec.local_ids.size()), dec.total_streams, rank == 0,
                                    npy_rows_read(c, dec.local_ids), slots);
}

// The deck keys that set the size, for the refusal.
std::string sizing_keys(const RunConfig& c, const MemoryEstimate& e, int rank) {
  std::string keys = "problem.d=" + std::to_string(c.problem.d) + ", problem.rank=" + std::to_string(c.problem.rank) +
                     ", problem.dtype=" + to_string(c.problem.dtype) + ", " + std::to_string(e.streams) +
                     " streams on rank " + std::to_string(rank) +
                     (c.streams.mode == StreamMode::weak ? " (streams.per_rank)" : " (streams.total over the ranks)");
  if (c.source.type == "npy") keys += ", source.chunk_rows=" + std::to_string(c.source.chunk_rows);
  return keys;
}

// The point that needs the most memory of `bytes_of`, with its estimate.
template <class Bytes>
std::size_t largest_point(const std::vector<SweepPoint>& points, int rank, int nranks, Bytes bytes_of,
                          MemoryEstimate& estimate) {
  std::size_t best = 0, k_best = 0;
  for (std::size_t k = 0; k < points.size(); ++k) {
    MemoryEstimate e = estimate_for(points[k].config, rank, nranks);
    if (k == 0 || bytes_of(e) > best) {
      best = bytes_of(e);
      k_best = k;
      estimate = std::move(e);
    }
  }
  return k_best;
}

// The ranks of `comm` that share `color` (a node, a device): their number
// and the sum of `bytes` over them.
void sum_over(MPI_Comm comm, int color, long long bytes, int& ranks, long long& sum) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm group;
  MPI_Comm_split(comm, color, rank, &group);
  MPI_Comm_size(group, &ranks);
  MPI_Allreduce(&bytes, &sum, 1, MPI_LONG_LONG, MPI_SUM, group);
  MPI_Comm_free(&group);
}

std::string refusal(const std::string& deck, const std::string& where, const RunConfig& c, const MemoryEstimate& e,
                    long long need, int rank, int sharing_ranks, long long sum, long long available,
                    const std::string& source) {
  std::string s = deck + ": not enough " + where + " memory: rank " + std::to_string(rank) + " needs about " +
                  format_bytes(double(need)) + " (" + sizing_keys(c, e, rank) + "; " + e.describe() + ")";
  if (sharing_ranks > 1)
    s += ", " + std::to_string(sharing_ranks) + " ranks sharing it need " + format_bytes(double(sum));
  s += ", and " + format_bytes(double(available)) + " is available (" + source +
       "). Lower problem.d, problem.rank or the streams per rank, or spread the streams over more ranks or nodes";
  return s;
}

}  // namespace

HostMemoryAvailable host_memory_available() {
  HostMemoryAvailable out;
  {
    std::ifstream in("/proc/meminfo");
    std::string key;
    long long kib = 0;
    std::string unit;
    while (in >> key >> kib >> unit)
      if (key == "MemAvailable:") {
        out.bytes = kib * 1024;
        out.source = "MemAvailable in /proc/meminfo";
        break;
      }
  }
  bool v2 = false;
  const std::string dir = cgroup_memory_dir(v2);
  if (!dir.empty()) {
    const long long limit = read_number(dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes"));
    const long long used = read_number(dir + (v2 ? "/memory.current" : "/memory.usage_in_bytes"));
    // v1 reports "no limit" as a huge number.
    if (limit > 0 && limit < (1LL << 60) && used >= 0 && (out.bytes < 0 || limit - used < out.bytes)) {
      out.bytes = std::max(0LL, limit - used);
      out.source = v2 ? "the cgroup's memory.max less memory.current" : "the cgroup's memory.limit_in_bytes less usage";
    }
  }
  return out;
}

std::string check_host_memory(const std::vector<SweepPoint>& points, const std::string& deck, MPI_Comm comm) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  std::string error;
  MemoryEstimate e;
  std::size_t k = 0;
  try {
    k = largest_point(
        points, rank, nranks, [](const MemoryEstimate& m) { return m.host_bytes(is_host_space<Exec>); }, e);
  } catch (const std::exception& ex) {
    error = ex.what();
  }
  const long long need = (long long)e.host_bytes(is_host_space<Exec>);
  // The ranks on this node share its memory.
  int on_node = 1;
  long long sum = 0;
  sum_over(NodeComm(comm).get(), 0, need, on_node, sum);
  const HostMemoryAvailable avail = host_memory_available();
  if (error.empty() && avail.bytes >= 0 && sum > avail.bytes)
    error = refusal(deck, "host", points[k].config, e, need, rank, on_node, sum, avail.bytes, avail.source);
  return detail::agree_on_error(error, comm);
}

std::string check_device_memory(const std::vector<SweepPoint>& points, const std::string& deck, MPI_Comm comm) {
#if defined(KOKKOS_ENABLE_CUDA)
  int rank = 0, nranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  MemoryEstimate e;
  const std::size_t k = largest_point(
      points, rank, nranks, [](const MemoryEstimate& m) { return m.execution_space_bytes(); }, e);
  const long long need = (long long)e.execution_space_bytes();
  std::size_t free_bytes = 0, total_bytes = 0;
  int device = 0;
  cudaGetDevice(&device);
  const bool known = cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess;
  // The ranks of a node on the same device share its memory. The device is
  // its UUID, not its ordinal: with a per-rank CUDA_VISIBLE_DEVICES every
  // rank's GPU is device 0 (and a MIG instance has a UUID of its own).
  std::string key = "ordinal " + std::to_string(device);
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) {
    key = "uuid ";
    for (const char byte : prop.uuid.bytes) {
      static const char hex[] = "0123456789abcdef";
      key += hex[(unsigned char)byte >> 4];
      key += hex[(unsigned char)byte & 15];
    }
  }
  int sharing = 1;
  long long sum = 0;
  const NodeComm node(comm);
  sum_over(node.get(), node.color_of(key), need, sharing, sum);
  std::string error;
  if (known && sum > (long long)free_bytes)
    error = refusal(deck, "device", points[k].config, e, need, rank, sharing, sum, (long long)free_bytes,
                    "cudaMemGetInfo free bytes of device " + std::to_string(device));
  return detail::agree_on_error(error, comm);
#else
  (void)points;
  (void)deck;
  (void)comm;
  return "";
#endif
}

std::string describe_rank0_memory(const RunConfig& c, int nranks) {
  const MemoryEstimate e = estimate_for(c, 0, nranks);
  std::string s = "about " + format_bytes(double(e.total_bytes())) + " per rank (" + std::to_string(e.streams) +
                  " streams on rank 0 of " + std::to_string(nranks) + "; " + e.describe() + ")";
  if (!is_host_space<Exec>) s += ", of it " + format_bytes(double(e.execution_space_bytes())) + " on the device";
  return s;
}

}  // namespace mosaic
