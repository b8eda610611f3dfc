// Real ordered data for a batch of streams: one 2-D .npy file per stream
// (shape (samples, features), features == d), kept open and read with
// pread, staged to the device chunk by chunk with double buffering. A
// StreamSource (stream_source.hpp), so the driver's loop runs it like the
// synthetic one.
//
// Staging. Rows are consumed strictly in order (row t of every stream is the
// sample of step t; the init block, if any, is rows [0, init_samples), read
// synchronously by read_init; with row offsets, stream b's row t is row
// offset_b + t of its file, and data errors name the file's row). Files of unequal length (run.steps: all): a
// stream's rows past the end of its file are staged as zeros, which the
// engine never steps (the driver stops the stream at its end:
// app/stream_ends.hpp). The source holds two host buffers of
// B x chunk_rows x d and one device chunk of the same size. Chunks lie on a
// fixed grid of rows, [c chunk_rows, (c + 1) chunk_rows) (the first one
// staged starts at the row after the init block, or at a restart's row, and
// ends at the grid line), so where blocks end does not depend on where the
// process started: a restarted run cuts its blocks where the uninterrupted
// run did. next_block serves a block of up to k rows from the current chunk
// as a view of it (a block never spans two chunks: it ends early at a
// chunk boundary), so every row is read from the file once and copied to
// the device once. While the engine works on the current chunk, a background
// std::thread (std::async) reads the next chunk of every stream from the
// files into the other host buffer (NpyStreamReader::read_rows, plus
// prefetch_rows for the chunk after, so the kernel reads ahead); when the
// current chunk is used up the main thread waits for that read (normally
// already done), copies the buffer to the device (on host backends the
// buffer *is* the device chunk: no copy) and starts the read of the chunk
// after. Host memory is thus bounded by the chunk size (2 host chunks + 1
// device chunk), whatever the size of the files.
//
// Non-finite data. A NaN/Inf (or a float64 that overflows a float run) met
// while staging a chunk does not stop the run: the stream's row is recorded
// as an SourceDataError (file, 0-based row in the file, the reader's message),
// that row and every later row of the stream are staged as +inf (not NaN,
// which algorithm.missing may take for a missing entry; an infinite entry is
// an input error in every mode), so the engine flags the stream exactly as
// for a numerical breakdown
// (status = breakdown_nonfinite_sample, breakdown_step = the step of that
// row, i.e. row - offset - init_samples) and freezes it, with the sequential and the
// blocked kernel alike; the other streams go on. Rows of the init block are
// read by read_init, which throws NpyError on a non-finite value instead
// (the driver checks those rows on every rank before the run:
// preflight_npy_file).
//
// A file that changes under the run (it shrinks, or is written to: see
// NpyStreamReader) is not a data error: the reader's NpyError reaches the
// driver from the next block (or checkpoint) after the read, which stops
// the job with the message (MPI_Abort: the other ranks cannot know). The
// checkpoints already written stay valid; a restart from one refuses the
// changed file (its fingerprint, position_at) until the data are restored.
//
// I/O accounting (io_stats): bytes copied out of the files, the seconds spent
// reading them (wherever the read ran: reader thread or, for the init block
// and an un-prefetched first chunk, the main thread), the seconds the main
// thread stalled waiting for data (the part of the I/O that was not hidden
// behind the computation), and the seconds of host-to-device copies.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <future>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <Kokkos_Core.hpp>

#include "mosaic/engine/transfer.hpp"
#include "mosaic/sources/npy.hpp"
#include "mosaic/sources/stream_source.hpp"

namespace mosaic {

// The checks the driver runs on the files a rank owns before any step (see
// preflight_npy_streams in run.hpp): the file is a regular file that
// opens, is a little-endian float32/float64 2-D .npy with d features and at
// least `min_rows` rows, and its first `init_rows` rows are finite (in the run's
// type T; NaN allowed as a missing entry when `nan_is_missing`). Returns the file's row count; throws NpyError naming the file.
template <class T>
std::int64_t preflight_npy_file(const std::string& path, int d, std::int64_t min_rows, const std::string& min_rows_what,
                                std::int64_t init_rows, bool nan_is_missing = false) {
  NpyStreamReader r(path, d);
  r.set_nan_is_missing(nan_is_missing);
  r.require_rows(min_rows, min_rows_what);
  if (init_rows > 0) {
    std::vector<T> buf(std::size_t(init_rows) * std::size_t(d));
    r.read_rows<T>(0, init_rows, buf.data());
  }
  return r.rows();
}

namespace detail {
// X(b, i) = chunk(b, k, i). At namespace scope, not nested in the class:
// nvcc's generated kernel stub names a kernel functor from outside it, so a
// private nested one does not compile in Cuda builds.
template <class ChunkView, class SampleView>
struct NpyCopyRow {
  ChunkView chunk;
  SampleView X;
  int k;
  KOKKOS_INLINE_FUNCTION void operator()(const int b, const int i) const { X(b, i) = chunk(b, k, i); }
};
}  // namespace detail

template <class Scalar, class ExecSpace = Kokkos::DefaultExecutionSpace>
class NpyStreamSource final : public StreamSource<Scalar, ExecSpace> {
 public:
  using typename StreamSource<Scalar, ExecSpace>::init_view;
  using typename StreamSource<Scalar, ExecSpace>::block_view;
  using execution_space = ExecSpace;
  using memory_space = typename ExecSpace::memory_space;
  using sample_view = Kokkos::View<Scalar**, Kokkos::LayoutRight, memory_space>;  // B x d
  static constexpr bool host_accessible = Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space>::accessible;
#if defined(KOKKOS_ENABLE_CUDA)
  using host_buffer_space = std::conditional_t<
      host_accessible, memory_space,
      std::conditional_t<std::is_same<ExecSpace, Kokkos::Cuda>::value, Kokkos::CudaHostPinnedSpace, Kokkos::HostSpace>>;
#else
  using host_buffer_space = std::conditional_t<host_accessible, memory_space, Kokkos::HostSpace>;
#endif
  using chunk_view = Kokkos::View<Scalar***, Kokkos::LayoutRight, memory_space>;
  using host_chunk_view = Kokkos::View<Scalar***, Kokkos::LayoutRight, host_buffer_space>;
  // On host backends the staged host buffer is handed to the engine as is.
  static constexpr bool alias_buffers = std::is_same<host_buffer_space, memory_space>::value;

  // paths[b] is the file of stream stream_ids[b]. Opens and checks every file
  // (NpyError on a bad one). `end_row`: rows the run will consume (init +
  // warm-up + steps; of every stream on every rank); -1 = the shortest
  // file's row count (the longest's with `unequal_lengths`).
  // `nan_is_missing`: a NaN is a missing entry (algorithm.missing other
  // than error), not a bad row. `unequal_lengths`: any file may end before
  // end_row; its stream's rows after its last one are staged as zeros (the
  // driver stops the stream there: app/stream_ends.hpp); else such a file
  // is an NpyError. Nothing is read until the first generate /
  // generate_block.
  NpyStreamSource(const std::vector<std::string>& paths, std::vector<std::uint64_t> stream_ids, int d, int chunk_rows,
                  std::int64_t end_row = -1, bool nan_is_missing = false, bool unequal_lengths = false)
      : ids_(std::move(stream_ids)), d_(d), chunk_rows_(chunk_rows) {
    if (paths.size() != ids_.size())
      throw std::invalid_argument("NpyStreamSource: " + std::to_string(paths.size()) + " files for " +
                                  std::to_string(ids_.size()) + " streams");
    if (d < 1 || chunk_rows < 1)
      throw std::invalid_argument("NpyStreamSource: need d >= 1 and chunk_rows >= 1, got d=" + std::to_string(d) +
                                  ", chunk_rows=" + std::to_string(chunk_rows));
    readers_.reserve(paths.size());
    for (const auto& p : paths) {
      readers_.emplace_back(p, d);
      readers_.back().set_nan_is_missing(nan_is_missing);
    }
    // (No files: a rank that holds only other ranks' streams' time segments.)
    const auto by_rows = [](const NpyStreamReader& a, const NpyStreamReader& b) { return a.rows() < b.rows(); };
    if (readers_.empty()) {
      end_row = std::max<std::int64_t>(end_row, 0);
    } else {
      const NpyStreamReader& shortest = *std::min_element(readers_.begin(), readers_.end(), by_rows);
      const NpyStreamReader& longest = *std::max_element(readers_.begin(), readers_.end(), by_rows);
      if (end_row < 0) end_row = unequal_lengths ? longest.rows() : shortest.rows();
      if (end_row > shortest.rows() && !unequal_lengths)
        throw NpyError(shortest.path() + ": has " + std::to_string(shortest.rows()) +
                       " rows (samples), fewer than the " + std::to_string(end_row) + " the run consumes");
    }
    end_row_ = end_row;
    unequal_lengths_ = unequal_lengths;
    offsets_.assign(ids_.size(), 0);
    bad_.assign(ids_.size(), 0);
    const int B = batch();
    const std::size_t rows = std::size_t(std::min<std::int64_t>(chunk_rows_, std::max<std::int64_t>(end_row_, 1)));
    for (auto& h : host_)
      h = host_chunk_view(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("npy::staging")), B, rows, d);
    if constexpr (!alias_buffers)
      dev_ = chunk_view(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("npy::chunk")), B, rows, d);
  }

  NpyStreamSource(const NpyStreamSource&) = delete;
  NpyStreamSource& operator=(const NpyStreamSource&) = delete;
  ~NpyStreamSource() {
    try {
      wait_pending();
    } catch (...) {
    }
  }

  int batch() const override { return int(ids_.size()); }
  std::string describe(int b) const override {
    return "stream " + std::to_string(ids_.at(std::size_t(b))) + " (file " + path(b) + ")";
  }
  int dim() const { return d_; }
  const std::vector<std::uint64_t>& stream_ids() const { return ids_; }
  std::int64_t end_row() const { return end_row_; }
  std::int64_t rows(int b) const override { return readers_.at(std::size_t(b)).rows(); }
  const std::string& path(int b) const { return readers_.at(std::size_t(b)).path(); }

  // X(b, :) = row `step` + offset_b of stream b's file. Steps in strict order, starting
  // where the previous call (or read_init, next_block) stopped.
  void generate(std::int64_t step, sample_view X) {
    if (int(X.extent(0)) != batch() || int(X.extent(1)) != d_)
      throw std::invalid_argument("NpyStreamSource::generate: X is " + std::to_string(X.extent(0)) + " x " +
                                  std::to_string(X.extent(1)) + ", expected " + std::to_string(batch()) + " x " +
                                  std::to_string(d_));
    check_order(step, 1, "generate");
    if (!(cur_len_ > 0 && step >= cur_first_ && step < cur_first_ + cur_len_)) advance_to(step);
    Kokkos::parallel_for("mosaic::npy_generate",
                         Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>(ExecSpace(), {0, 0}, {batch(), d_}),
                         detail::NpyCopyRow<chunk_view, sample_view>{dev_, X, int(step - cur_first_)});
    next_row_ = step + 1;
  }

  // X(b, j, :) = row j of stream b's file, j < n (the init block, rows
  // [0, n)). Read synchronously; throws NpyError on a non-finite value.
  void read_init(int n, init_view X) override {
    const std::int64_t first = 0;
    if (n < 1 || int(X.extent(0)) != batch() || int(X.extent(1)) != n || int(X.extent(2)) != d_)
      throw std::invalid_argument("NpyStreamSource::read_init: X must be B x n x d = " + std::to_string(batch()) +
                                  " x " + std::to_string(n) + " x " + std::to_string(d_));
    check_order(first, n, "read_init");
    drop_read();  // a read of other rows: the one started below replaces it
    const auto h = transfer::host_buffer(X);
    const auto t0 = clock::now();
    for (int b = 0; b < batch(); ++b) readers_[b].read_rows(first, n, stream_block_data(h, b));
    const double s = seconds_since(t0);
    stats_.read_seconds += s;
    stats_.stall_seconds += s;
    transfer::copy_from_host(X, h);
    next_row_ = first + n;
    cur_len_ = 0;  // nothing staged covers the rows after the block yet
    if (next_row_ < end_row_) launch(next_row_);
  }

  // Stream b's row j is row offsets[b] + j of its file from here on (the
  // chunk grid stays on the common rows). A file too short for its rows up
  // to end_row + offset is an NpyError unless the source was made for
  // unequal lengths. A read in flight or done (read_init's prefetch) is
  // dropped, its data errors with it (they were rows of the old offsets),
  // and started again at the offsets. Stream ids are taken to be unique:
  // position_at gives a data error to the stream of its id.
  void set_row_offsets(const std::vector<std::int64_t>& offsets) override {
    if (offsets.size() != ids_.size())
      throw std::invalid_argument("NpyStreamSource::set_row_offsets: " + std::to_string(offsets.size()) +
                                  " offsets for " + std::to_string(ids_.size()) + " streams");
    for (std::size_t b = 0; b < ids_.size(); ++b) {
      if (offsets[b] < 0) throw std::invalid_argument("NpyStreamSource::set_row_offsets: negative offset");
      if (!unequal_lengths_ && end_row_ + offsets[b] > readers_[b].rows())
        throw NpyError(readers_[b].path() + ": has " + std::to_string(readers_[b].rows()) +
                       " rows (samples), fewer than the " + std::to_string(end_row_ + offsets[b]) +
                       " the run consumes (" + std::to_string(offsets[b]) + " more for its init)");
    }
    const bool reading = pending_.valid() || ready_first_ >= 0;
    drop_read();
    offsets_ = offsets;
    cur_len_ = 0;
    if (reading && next_row_ < end_row_) launch(next_row_);
  }

  // Rows [first, first + n) of stream b's file, synchronously (after a read
  // in flight, whose chunk stays usable); throws NpyError on a non-finite
  // value.
  void read_stream_rows(int b, std::int64_t first, int n, Scalar* out) override {
    if (b < 0 || b >= batch() || first < 0 || n < 1)
      throw std::invalid_argument("NpyStreamSource::read_stream_rows: stream " + std::to_string(b) + ", rows [" +
                                  std::to_string(first) + ", +" + std::to_string(n) + ")");
    wait_pending();
    const auto t0 = clock::now();
    readers_[std::size_t(b)].read_rows(first, n, out);
    const double sec = seconds_since(t0);
    stats_.read_seconds += sec;
    stats_.stall_seconds += sec;
  }

  // Rows [first, first + n) of every stream, n <= max_n, up to the end of
  // the chunk holding `first` (staged first if it is not the current one):
  // a view of the staged chunk, valid until the chunk is replaced.
  block_view next_block(std::int64_t first, int max_n) override {
    check_order(first, 1, "next_block");
    if (max_n < 1) throw std::invalid_argument("NpyStreamSource::next_block: max_n must be >= 1");
    if (!(cur_len_ > 0 && first >= cur_first_ && first < cur_first_ + cur_len_)) advance_to(first);
    const std::int64_t n = std::min<std::int64_t>(max_n, cur_first_ + cur_len_ - first);
    const int j0 = int(first - cur_first_);
    next_row_ = first + n;
    return Kokkos::subview(dev_, Kokkos::ALL(), Kokkos::make_pair(j0, j0 + int(n)), Kokkos::ALL());
  }

  // Restart from a checkpoint (docs/CHECKPOINT.md): the next row consumed is
  // `row` (file row row + offset_b of stream b; set the offsets first; the
  // rows before it are not read again); earlier.frozen[b] != 0:
  // stream b met a non-finite row before the checkpoint, so its rows are
  // staged as +inf, as in a run that was never stopped;
  // earlier.data_errors: those non-finite rows, reported by io_stats() with
  // the ones met from here on. Starts the read of the chunk at `row`.
  void resume_at(std::int64_t row, SourcePosition earlier) override {
    const std::vector<unsigned char>& frozen = earlier.frozen;
    drop_read();  // a read ahead of some other position
    if (row < 0 || row > end_row_)
      throw std::out_of_range("NpyStreamSource::resume_at: row " + std::to_string(row) + " outside [0, " +
                              std::to_string(end_row_) + "]");
    if (frozen.size() != ids_.size())
      throw std::invalid_argument("NpyStreamSource::resume_at: " + std::to_string(frozen.size()) +
                                  " frozen flags for " + std::to_string(ids_.size()) + " streams");
    for (std::size_t b = 0; b < ids_.size(); ++b) bad_[b] = frozen[b] ? 1 : 0;
    for (auto& e : stats_.data_errors) earlier.data_errors.push_back(std::move(e));
    stats_.data_errors = std::move(earlier.data_errors);
    next_row_ = row;
    cur_len_ = 0;
    if (row < end_row_) launch(row);
  }

  // The row the next generate() consumes.
  std::int64_t next_row() const { return next_row_; }

  // For a checkpoint at `row`: the non-finite rows met before it (stream
  // b's file rows before row + offset_b; rows read ahead are left out: a
  // resumed run reads them again), per stream whether one of them froze it,
  // and every file's fingerprint for rows [0, row + offset_b) (to its end
  // for a file that ended before; it reads up
  // to 1 MiB of each file; call it with no read in flight, e.g. after
  // io_report()).
  SourcePosition position_at(std::int64_t row) const override {
    SourcePosition at;
    for (std::size_t b = 0; b < ids_.size(); ++b)
      at.inputs.push_back({ids_[b], readers_[b].fingerprint(std::min(row + offsets_[b], readers_[b].rows()))});
    at.frozen.assign(ids_.size(), 0);
    for (const auto& e : stats_.data_errors)
      for (std::size_t b = 0; b < ids_.size(); ++b)
        if (ids_[b] == e.stream_id && e.row < row + offsets_[b]) {  // e.row: a row of the file
          at.data_errors.push_back(e);
          at.frozen[b] = 1;
          break;
        }
    return at;
  }

  std::optional<SourceIoStats> io_report() override { return io_stats(); }
  std::optional<TruthAccuracy> accuracy(const StreamBatch<Scalar, ExecSpace>&, std::int64_t) const override {
    return std::nullopt;
  }

  // Waits for a read in flight, then returns the accounting so far.
  SourceIoStats io_stats() {
    wait_pending();
    SourceIoStats s = stats_;
    s.bytes_read = 0;
    for (const auto& r : readers_) s.bytes_read += r.bytes_read();
    s.chunk_rows = chunk_rows_;
    s.files = std::int64_t(readers_.size());
    return s;
  }

 private:
  using clock = std::chrono::steady_clock;
  static double seconds_since(clock::time_point t0) { return std::chrono::duration<double>(clock::now() - t0).count(); }

  // What a read found: its time, its data errors and the streams they
  // froze (bad_ takes them in merge, on the main thread, so a read that is
  // dropped leaves no trace).
  struct ReadResult {
    double seconds = 0;
    std::vector<SourceDataError> errors;
    std::vector<int> frozen;
  };

  void check_order(std::int64_t first, std::int64_t n, const char* what) const {
    if (first != next_row_)
      throw std::invalid_argument(std::string("NpyStreamSource::") + what +
                                  ": rows are consumed in order; expected row " + std::to_string(next_row_) + ", got " +
                                  std::to_string(first));
    if (first + n > end_row_)
      throw std::out_of_range(std::string("NpyStreamSource::") + what + ": rows [" + std::to_string(first) + ", " +
                              std::to_string(first + n) + ") requested, but the run was set up for " +
                              std::to_string(end_row_) + " rows");
  }

  // Rows staged from `first`: to the next line of the chunk grid (or the end).
  std::int64_t chunk_len(std::int64_t first) const {
    return std::min<std::int64_t>((first / chunk_rows_ + 1) * chunk_rows_, end_row_) - first;
  }

  // Reads rows [first, first + len) of every stream into host buffer `buf`.
  // Runs on the reader thread (or synchronously); touches only the readers,
  // bad_ and the buffer, never Kokkos.
  ReadResult fill(int buf, std::int64_t first, std::int64_t len) {
    ReadResult out;
    const auto t0 = clock::now();
    const host_chunk_view h = host_[buf];
    const std::size_t row = std::size_t(d_);
    const Scalar frozen = std::numeric_limits<Scalar>::infinity();  // see the file comment
    for (int b = 0; b < batch(); ++b) {
      Scalar* dst = stream_block_data(h, b);
      if (bad_[b]) {  // frozen by an earlier non-finite row: stage +inf
        std::fill(dst, dst + std::size_t(len) * row, frozen);
        continue;
      }
      NpyStreamReader& r = readers_[b];
      const std::int64_t at = first + offsets_[std::size_t(b)];                   // the file's row
      const std::int64_t have = std::clamp<std::int64_t>(r.rows() - at, 0, len);  // rows before the file's end
      std::fill(dst + std::size_t(have) * row, dst + std::size_t(len) * row, Scalar(0));
      try {
        if (have > 0) r.read_rows(at, have, dst);
      } catch (const NpyValueError&) {
        // Find the first bad row (one row at a time, per read_rows' contract),
        // keep the rows before it, stage +inf from it on.
        std::int64_t k = 0;
        std::string message;
        for (; k < have; ++k) {
          try {
            r.read_rows(at + k, 1, dst + std::size_t(k) * row);
          } catch (const NpyValueError& e) {
            message = e.what();
            break;
          }
        }
        if (k == have) throw;  // not a data error after all
        std::fill(dst + std::size_t(k) * row, dst + std::size_t(len) * row, frozen);
        out.frozen.push_back(b);
        out.errors.push_back(SourceDataError{ids_[b], r.path(), at + k, message});
        continue;
      }
      // Let the kernel start on the chunk after this one.
      const std::int64_t after = first + len, file_after = at + len;
      if (after < end_row_ && file_after < r.rows())
        r.prefetch_rows(file_after, std::min(chunk_len(after), r.rows() - file_after));
    }
    out.seconds = seconds_since(t0);
    return out;
  }

  // A read's data errors and frozen streams (its time is counted where it
  // finished: the I/O was done whether or not its chunk is used).
  void merge(ReadResult&& r) {
    for (auto& e : r.errors) stats_.data_errors.push_back(std::move(e));
    for (const int b : r.frozen) bad_[std::size_t(b)] = 1;
  }

  // Starts the background read of the chunk at `first` into the spare buffer.
  void launch(std::int64_t first) {
    const int spare = 1 - cur_;
    const std::int64_t len = chunk_len(first);
    pend_first_ = first;
    pend_len_ = len;
    ready_first_ = -1;
    pending_ = std::async(std::launch::async, [this, spare, first, len] { return fill(spare, first, len); });
  }

  // Finishes a read in flight (the readers are then free for another
  // read); its chunk stays usable in the spare buffer (ready_first_) and its
  // result (ready_) is merged only when the chunk becomes current: a read
  // dropped before (set_row_offsets, a jump to another row) leaves no data
  // error and freezes no stream.
  void wait_pending() {
    if (!pending_.valid()) return;
    ready_first_ = pend_first_;
    const auto t0 = clock::now();
    ready_ = pending_.get();
    stats_.stall_seconds += seconds_since(t0);
    stats_.read_seconds += ready_->seconds;
  }

  // Finishes a read in flight and drops it (its rows are of another
  // position or other offsets): its seconds counted as any read's, its data
  // errors never merged, its chunk no longer usable.
  void drop_read() {
    wait_pending();
    ready_.reset();
    ready_first_ = -1;
  }

  // Makes the chunk starting at `step` current (on the device) and starts
  // reading the one after it.
  void advance_to(std::int64_t step) {
    const bool prefetched = (pending_.valid() || ready_first_ >= 0) && pend_first_ == step;
    std::int64_t len;
    if (prefetched) {
      len = pend_len_;
      wait_pending();
      merge(std::move(*ready_));
      ready_.reset();
    } else {
      drop_read();  // a read of some other range; the spare buffer is refilled below
      len = chunk_len(step);
      const auto t0 = clock::now();
      ReadResult r = fill(1 - cur_, step, len);
      stats_.stall_seconds += seconds_since(t0);
      stats_.read_seconds += r.seconds;
      merge(std::move(r));
    }
    ready_first_ = -1;
    cur_ = 1 - cur_;
    if constexpr (alias_buffers) {
      dev_ = host_[cur_];
    } else {
      const auto t0 = clock::now();
      transfer::copy_contiguous(dev_, host_[cur_]);
      stats_.copy_seconds += seconds_since(t0);
    }
    cur_first_ = step;
    cur_len_ = len;
    ++stats_.chunks;
    if (step + len < end_row_) launch(step + len);
  }

  std::vector<std::uint64_t> ids_;
  int d_ = 0;
  std::int64_t chunk_rows_ = 0, end_row_ = 0;
  bool unequal_lengths_ = false;
  std::vector<std::int64_t> offsets_;  // per stream: set_row_offsets (zero until set)
  std::vector<NpyStreamReader> readers_;
  std::vector<char> bad_;  // per stream: a non-finite row was met (reader thread only while a read is in flight)
  host_chunk_view host_[2];
  chunk_view dev_;
  int cur_ = 0;  // host_[cur_] holds the current chunk; host_[1 - cur_] is the spare
  std::int64_t cur_first_ = 0, cur_len_ = 0, next_row_ = 0;
  std::future<ReadResult> pending_;
  std::int64_t pend_first_ = -1, pend_len_ = 0;
  std::int64_t ready_first_ = -1;    // a finished read's chunk still in the spare buffer (-1: none)
  std::optional<ReadResult> ready_;  // that read's result, merged when its chunk becomes current
  SourceIoStats stats_;
};

}  // namespace mosaic
