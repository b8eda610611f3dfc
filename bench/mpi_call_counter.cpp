// An MPI profiling (PMPI) library that counts, per rank, the calls, the
// bytes and the seconds of each MPI operation the mini-app uses for its
// data (not MPI_Init, the communicator queries or MPI_Comm_split), and prints
// them at MPI_Finalize: the communication of a run measured from outside,
// with no change to the program (docs/PERFORMANCE.md, "Communication").
//   LD_PRELOAD=build/openmp/bench/libmosaic_mpi_call_counter.so \
//     mpirun -np 2 -x LD_PRELOAD build/openmp/miniapp/mosaic_miniapp inputs/smoke_cpu.yaml
// Bytes are those of this rank's send buffer (a reduction's vector, a
// gather's contribution, a broadcast's message); a gather's received bytes
// are counted on its root as "received". Seconds are the wall time inside
// the call: for a blocking collective the wait for the slowest rank as
// well as the transfer; for a non-blocking one the start only, its
// completion is in MPI_Test/MPI_Wait.
// With MOSAIC_MPI_COUNTER_WAIT=barrier each blocking collective is preceded
// by an MPI_Barrier on its communicator, counted as "<operation>_wait": the
// time the rank waited for the slowest one (plus one barrier's latency), so
// that what remains in the operation's own seconds is its transfer. The
// barrier changes the program's timing (one more synchronization per
// collective): a measurement of what the time is, not of the run as it is.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

namespace {

struct Tally {
  long long calls = 0, bytes = 0, received = 0;
  double seconds = 0;
};
std::map<std::string, Tally>& tallies() {
  static std::map<std::string, Tally> t;
  return t;
}

long long bytes_of(int count, MPI_Datatype type) {
  int size = 0;
  PMPI_Type_size(type, &size);
  return (long long)count * size;
}

bool split_wait() {
  static const bool on = [] {
    const char* v = std::getenv("MOSAIC_MPI_COUNTER_WAIT");
    return v && std::strcmp(v, "barrier") == 0;
  }();
  return on;
}

// Runs `call`, adding its time, `bytes` and `received` to `name`'s tally.
template <class Call>
int counted(const char* name, long long bytes, long long received, Call call) {
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = call();
  Tally& t = tallies()[name];
  ++t.calls;
  t.bytes += bytes;
  t.received += received;
  t.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rc;
}

// A blocking collective on `comm`: with the wait split off, a barrier first,
// counted as "<name>_wait".
template <class Call>
int collective(const char* name, MPI_Comm comm, long long bytes, long long received, Call call) {
  if (split_wait()) counted((std::string(name) + "_wait").c_str(), 0, 0, [&] { return PMPI_Barrier(comm); });
  return counted(name, bytes, received, call);
}

bool is_root(int root, MPI_Comm comm) {
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  return rank == root;
}

}  // namespace

extern "C" {

int MPI_Allreduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  return collective("MPI_Allreduce", c, bytes_of(n, t), 0, [&] { return PMPI_Allreduce(s, r, n, t, op, c); });
}
int MPI_Iallreduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Request* q) {
  return counted("MPI_Iallreduce", bytes_of(n, t), 0, [&] { return PMPI_Iallreduce(s, r, n, t, op, c, q); });
}
int MPI_Reduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c) {
  return collective("MPI_Reduce", c, bytes_of(n, t), 0, [&] { return PMPI_Reduce(s, r, n, t, op, root, c); });
}
int MPI_Bcast(void* b, int n, MPI_Datatype t, int root, MPI_Comm c) {
  return collective("MPI_Bcast", c, bytes_of(n, t), 0, [&] { return PMPI_Bcast(b, n, t, root, c); });
}
int MPI_Gather(const void* s, int n, MPI_Datatype st, void* r, int rn, MPI_Datatype rt, int root, MPI_Comm c) {
  int size = 1;
  PMPI_Comm_size(c, &size);
  const long long got = is_root(root, c) ? bytes_of(rn, rt) * size : 0;
  return collective("MPI_Gather", c, bytes_of(n, st), got, [&] { return PMPI_Gather(s, n, st, r, rn, rt, root, c); });
}
int MPI_Gatherv(const void* s, int n, MPI_Datatype st, void* r, const int* rn, const int* displs, MPI_Datatype rt,
                int root, MPI_Comm c) {
  long long got = 0;
  if (is_root(root, c)) {
    int size = 1;
    PMPI_Comm_size(c, &size);
    for (int k = 0; k < size; ++k) got += bytes_of(rn[k], rt);
  }
  return collective("MPI_Gatherv", c, bytes_of(n, st), got,
                    [&] { return PMPI_Gatherv(s, n, st, r, rn, displs, rt, root, c); });
}
int MPI_Exscan(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  return collective("MPI_Exscan", c, bytes_of(n, t), 0, [&] { return PMPI_Exscan(s, r, n, t, op, c); });
}
int MPI_Barrier(MPI_Comm c) {
  return counted("MPI_Barrier", 0, 0, [&] { return PMPI_Barrier(c); });
}
int MPI_Send(const void* b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c) {
  return counted("MPI_Send", bytes_of(n, t), 0, [&] { return PMPI_Send(b, n, t, dest, tag, c); });
}
int MPI_Recv(void* b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Status* st) {
  return counted("MPI_Recv", 0, bytes_of(n, t), [&] { return PMPI_Recv(b, n, t, src, tag, c, st); });
}
int MPI_Allgather(const void* s, int n, MPI_Datatype st, void* r, int rn, MPI_Datatype rt, MPI_Comm c) {
  return collective("MPI_Allgather", c, bytes_of(n, st), 0, [&] { return PMPI_Allgather(s, n, st, r, rn, rt, c); });
}
int MPI_Isend(const void* b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c, MPI_Request* q) {
  return counted("MPI_Isend", bytes_of(n, t), 0, [&] { return PMPI_Isend(b, n, t, dest, tag, c, q); });
}
int MPI_Waitall(int n, MPI_Request* q, MPI_Status* st) {
  return counted("MPI_Waitall", 0, 0, [&] { return PMPI_Waitall(n, q, st); });
}
int MPI_Test(MPI_Request* q, int* flag, MPI_Status* st) {
  return counted("MPI_Test", 0, 0, [&] { return PMPI_Test(q, flag, st); });
}
int MPI_Wait(MPI_Request* q, MPI_Status* st) {
  return counted("MPI_Wait", 0, 0, [&] { return PMPI_Wait(q, st); });
}

int MPI_Finalize() {
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (const auto& [name, t] : tallies())
    std::fprintf(stderr, "mpi call counter: rank %d %s calls %lld bytes %lld received %lld seconds %.6f\n", rank,
                 name.c_str(), t.calls, t.bytes, t.received, t.seconds);
  return PMPI_Finalize();
}

}  // extern "C"
