// The few MPI collectives the driver, its statistics and the checkpoints
// use, typed: one scalar reduced over the ranks, many at once (one
// collective for scalars of mixed operations), a per-rank vector or
// string gathered to rank 0, one rank's string sent to all, the ranks'
// agreement on an error, and the exclusive prefix of parallel-in-time
// segments' certificate. During a run only statistics built from these
// cross ranks; stream states do only in time segments, point to point
// (app/time_segments.hpp).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace mosaic::detail {

// What a run's collectives cost, by class (the run names its classes:
// diagnostics, the per-block agreement, checkpoints, the result's
// gathers, ...): the calls, the bytes this rank sent (a reduction's vector,
// a gather's part, a broadcast's message on every rank) and the seconds
// inside the calls (the wait for the slowest rank included).
struct CommTally {
  long long calls = 0, bytes = 0;
  double seconds = 0;
};
using CommLedger = std::map<std::string, CommTally>;

// The tally the calling thread's collectives count into; none: not counted.
inline thread_local CommTally* current_comm_tally = nullptr;

// While it lives, the thread's collectives count into ledger[name]; the
// class that was current before it is current again after it.
class CommClass {
 public:
  CommClass(CommLedger& ledger, const std::string& name) : previous_(current_comm_tally) {
    current_comm_tally = &ledger[name];
  }
  ~CommClass() { current_comm_tally = previous_; }
  CommClass(const CommClass&) = delete;
  CommClass& operator=(const CommClass&) = delete;

 private:
  CommTally* previous_;
};

// One MPI call (`call` returns its status), counted in the current class
// with the `bytes` this rank sends.
template <class Call>
int counted_mpi(long long bytes, Call call) {
  CommTally* tally = current_comm_tally;
  if (!tally) return call();
  const auto start = std::chrono::steady_clock::now();
  const int status = call();
  tally->calls += 1;
  tally->bytes += bytes;
  tally->seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return status;
}

inline double allreduce(double v, MPI_Op op, MPI_Comm comm) {
  double out = 0;
  counted_mpi(sizeof v, [&] { return MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, op, comm); });
  return out;
}
inline long long allreduce(long long v, MPI_Op op, MPI_Comm comm) {
  long long out = 0;
  counted_mpi(sizeof v, [&] { return MPI_Allreduce(&v, &out, 1, MPI_LONG_LONG, op, comm); });
  return out;
}

// Scalar reductions of mixed operations (max, min, sum; of doubles or of
// integers, each exact in its own type) in one MPI_Allreduce: a
// diagnostics point reduces some 30 scalars, and one collective costs one
// latency where 30 cost 30 (docs/PERFORMANCE.md, "Communication"). Each
// value is added under its name with its operation, in the same order on
// every rank; reduce() returns them by name. The combining operation is
// declared non-commutative: MPI keeps the operands in rank order (their
// grouping is the MPI library's, fixed for a number of ranks in Open MPI),
// so a floating sum does not depend on which rank's message came first.
class PackedAllreduce {
 public:
  void max(const std::string& name, double v) { add(name, v, 0, Op::max_real); }
  void min(const std::string& name, double v) { add(name, v, 0, Op::min_real); }
  void sum(const std::string& name, double v) { add(name, v, 0, Op::sum_real); }
  void max(const std::string& name, long long v) { add(name, 0, v, Op::max_integer); }
  void min(const std::string& name, long long v) { add(name, 0, v, Op::min_integer); }
  void sum(const std::string& name, long long v) { add(name, 0, v, Op::sum_integer); }

  std::size_t size() const { return entries_.size(); }
  // The bytes one rank contributes to the collective.
  std::size_t bytes() const { return entries_.size() * sizeof(Entry); }

  // Collective over `comm`: every value reduced over the ranks, read back
  // by name or by position (the order added).
  void reduce(MPI_Comm comm) {
    if (entries_.empty()) return;
    std::vector<Entry> out(entries_.size());
    counted_mpi(bytes(), [&] {
      return MPI_Allreduce(entries_.data(), out.data(), int(entries_.size()), entry_type(), combine_op(), comm);
    });
    entries_ = std::move(out);
  }
  double real(const std::string& name) const { return real_of(find(name)); }
  long long integer(const std::string& name) const { return find(name).value; }
  bool is_integer(std::size_t i) const { return entries_[i].op >= Op::max_integer; }
  const std::string& name(std::size_t i) const { return names_[i]; }
  double real(std::size_t i) const { return real_of(entries_[i]); }
  long long integer(std::size_t i) const { return entries_[i].value; }

 private:
  enum Op : long long { max_real, min_real, sum_real, max_integer, min_integer, sum_integer };
  // 16 bytes without padding (no uninitialized bytes on the wire): an
  // integer, or a double's bits, and the operation.
  struct Entry {
    long long value;
    long long op;
  };
  static double real_of(const Entry& e) {
    double v;
    std::memcpy(&v, &e.value, sizeof v);
    return v;
  }
  static void set_real(Entry& e, double v) { std::memcpy(&e.value, &v, sizeof v); }

  void add(const std::string& name, double real, long long integer, Op op) {
    names_.push_back(name);
    Entry e{integer, op};
    if (op < Op::max_integer) set_real(e, real);
    entries_.push_back(e);
  }
  const Entry& find(const std::string& name) const {
    const auto it = std::find(names_.begin(), names_.end(), name);
    if (it == names_.end()) throw std::logic_error("PackedAllreduce: no value named " + name);
    return entries_[std::size_t(it - names_.begin())];
  }

  // MPI's user function: `inout` = `in` (op) `inout`, `in` from the lower
  // ranks. A NaN wins a max or a min whichever rank holds it (std::max
  // alone would keep or drop it by operand order).
  static void combine(void* in, void* inout, int* len, MPI_Datatype*) {
    const Entry* a = static_cast<const Entry*>(in);
    Entry* b = static_cast<Entry*>(inout);
    for (int i = 0; i < *len; ++i) {
      const double x = real_of(a[i]), y = real_of(b[i]);
      const bool nan = std::isnan(x) || std::isnan(y);
      switch (b[i].op) {
        case max_real: set_real(b[i], nan ? x + y : std::max(x, y)); break;
        case min_real: set_real(b[i], nan ? x + y : std::min(x, y)); break;
        case sum_real: set_real(b[i], x + y); break;
        case max_integer: b[i].value = std::max(a[i].value, b[i].value); break;
        case min_integer: b[i].value = std::min(a[i].value, b[i].value); break;
        case sum_integer: b[i].value = a[i].value + b[i].value; break;
      }
    }
  }
  // Created once per process, at the first reduction (after MPI_Init), and
  // left to MPI_Finalize.
  static MPI_Datatype entry_type() {
    static const MPI_Datatype type = [] {
      MPI_Datatype t;
      MPI_Type_contiguous(int(sizeof(Entry)), MPI_BYTE, &t);
      MPI_Type_commit(&t);
      return t;
    }();
    return type;
  }
  static MPI_Op combine_op() {
    static const MPI_Op op = [] {
      MPI_Op o;
      MPI_Op_create(&combine, 0, &o);  // 0: not commutative, applied in rank order
      return o;
    }();
    return op;
  }

  std::vector<std::string> names_;
  std::vector<Entry> entries_;
};

// Gathers a per-rank vector to rank 0 (concatenated in rank order).
template <class T>
std::vector<T> gather_to_root(const std::vector<T>& local, MPI_Datatype type, MPI_Comm comm) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  int count = int(local.size());
  std::vector<int> counts(nranks), displs(nranks);
  counted_mpi(sizeof count, [&] { return MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm); });
  int total = 0;
  for (int k = 0; k < nranks; ++k) {
    displs[k] = total;
    total += counts[k];
  }
  std::vector<T> all(rank == 0 ? total : 0);
  int type_size = 0;
  MPI_Type_size(type, &type_size);
  counted_mpi((long long)count * type_size, [&] {
    return MPI_Gatherv(local.data(), count, type, all.data(), counts.data(), displs.data(), type, 0, comm);
  });
  return all;
}

// Sends rank `from`'s string to every rank.
inline std::string broadcast_string(std::string s, int from, MPI_Comm comm) {
  long long n = (long long)s.size();
  counted_mpi(sizeof n, [&] { return MPI_Bcast(&n, 1, MPI_LONG_LONG, from, comm); });
  s.resize(std::size_t(n));
  if (n > 0) counted_mpi(n, [&] { return MPI_Bcast(s.data(), int(n), MPI_CHAR, from, comm); });
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
  counted_mpi(sizeof mine, [&] { return MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm); });
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
  counted_mpi((long long)(in.size() * sizeof(int)),
              [&] { return MPI_Exscan(in.data(), out.data(), int(in.size()), MPI_INT, MPI_LAND, comm); });
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
