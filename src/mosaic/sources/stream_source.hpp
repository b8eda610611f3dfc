// The data-source interface of the driver (run.hpp): where the samples of a
// rank's streams come from. Two implementations: SyntheticDriftSource
// (synthetic_source.hpp, ALGORITHM.md section 5, knows its truth) and
// NpyStreamSource (npy_source.hpp, one .npy file per stream, staged chunk by
// chunk). The driver's loop is written once against this interface.
//
// Rows (samples) of every stream are consumed strictly in order: the init
// block is rows [0, n0) (read_init), then next_block serves the rows after
// it, block by block. A block is a view of data the source already holds
// (its generation buffer, or the staged chunk of the files): no copy.
// Streams need not stand at the same row of their data: with row offsets
// (set_row_offsets), stream b's row j of a block is row offset_b + j of its
// data, so one row counter serves streams whose init consumed more samples
// (ALGORITHM.md section 3's grown window) or slots that hold other stretches
// of a stream (section 9's segments).
#pragma once

#include <algorithm>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>

#include "mosaic/engine/stream_batch.hpp"
#include "mosaic/sources/npy.hpp"

namespace mosaic {

// A non-finite value met in a stream's data during the run (file sources).
struct SourceDataError {
  std::uint64_t stream_id = 0;
  std::string path;
  std::int64_t row = 0;  // 0-based row in the file
  std::string message;   // the reader's: path, row, column, value
};

// I/O accounting of a source that reads files.
struct SourceIoStats {
  std::uint64_t bytes_read = 0;  // data bytes copied out of the files
  double read_seconds = 0;       // time spent reading (reader thread + synchronous reads)
  double stall_seconds = 0;      // main-thread time blocked on reads
  double copy_seconds = 0;       // host-to-device copies of staged chunks
  std::int64_t chunks = 0;       // chunks staged
  std::int64_t chunk_rows = 0;
  std::int64_t files = 0;
  std::vector<SourceDataError> data_errors;
};

// A stream's input file as a checkpoint records it (file sources).
struct SourceInput {
  std::uint64_t stream_id = 0;
  NpyFingerprint file;
};

// What a checkpoint at a row records of a source, and what a restart hands
// back to it: per stream whether a non-finite row before it froze the
// stream, and those rows; and, recorded only (a restart checks them before
// the run, ckpt::prepare_restart), the fingerprints of the input files.
// Empty for sources without files.
struct SourcePosition {
  std::vector<unsigned char> frozen;
  std::vector<SourceDataError> data_errors;
  std::vector<SourceInput> inputs;
};

// Accuracy of a batch of states against the truth at one step, max and mean
// over the streams (sources that know their truth: SyntheticDriftSource).
//   projector_distance = 1 - ||U^T V(t)||_F^2 / k, k = min(r_source, r_state):
//     0 when the smaller of the two subspaces lies in the larger, 1 when they
//     are orthogonal.
//   noise_rel_error = |s2 - noise_variance| / noise_variance (noise_variance =
//     mean of the per-coordinate noise variances, what s2 estimates).
//   spectrum_rel_error = ||max(eig(S) - s2, 0) - lambda||_2 / ||lambda||_2 over
//     the top k eigenvalues of both, sorted descending.
// With noise: diagonal (ALGORITHM.md 8.4) all three are in data coordinates:
// the subspace span(Psi^1/2 U), the noise estimate s2 mean(psi), the
// eigenvalues of Psi^1/2 U (S - s2 I)_+ U^T Psi^1/2.
struct TruthAccuracy {
  double projector_distance_max = 0, projector_distance_mean = 0;
  double noise_rel_error_max = 0, noise_rel_error_mean = 0;
  double spectrum_rel_error_max = 0, spectrum_rel_error_mean = 0;

  // Adds one of `streams` streams' measures to the maxima and means (a NaN
  // spectrum error, a stream without a spectrum, leaves the maximum alone).
  void add_stream(double projector_distance, double noise_rel_error, double spectrum_rel_error, int streams) {
    projector_distance_max = std::max(projector_distance_max, projector_distance);
    noise_rel_error_max = std::max(noise_rel_error_max, noise_rel_error);
    spectrum_rel_error_max = std::max(spectrum_rel_error_max, spectrum_rel_error);
    projector_distance_mean += projector_distance / streams;
    noise_rel_error_mean += noise_rel_error / streams;
    spectrum_rel_error_mean += spectrum_rel_error / streams;
  }
};

template <class Scalar, class ExecSpace>
class StreamSource {
 public:
  using execution_space = ExecSpace;
  using memory_space = typename ExecSpace::memory_space;
  using init_view = Kokkos::View<Scalar***, Kokkos::LayoutRight, memory_space>;          // B x n0 x d
  using block_view = Kokkos::View<const Scalar***, Kokkos::LayoutStride, memory_space>;  // B x n x d

  virtual ~StreamSource() = default;

  virtual int batch() const = 0;
  // Stream b for a message: "stream <id>", with its file where it has one.
  virtual std::string describe(int b) const = 0;
  // The rows of stream b's data (no offset): a file's rows, the largest
  // int64 for a source without an end.
  virtual std::int64_t rows(int b) const = 0;

  // X(b, j, :) = row j of stream b, j < n (the init block, rows [0, n),
  // whatever the row offsets).
  virtual void read_init(int n, init_view X) = 0;

  // From here on, row j of stream b (next_block, position_at, resume_at,
  // accuracy) is row offsets[b] + j of its data (offsets >= 0; all 0 until
  // set). Set before the first next_block, or before resume_at.
  virtual void set_row_offsets(const std::vector<std::int64_t>& offsets) = 0;

  // Rows [first, first + n) of stream b's data (no offset), into host memory
  // (n x d, row-major), whatever the position of the row counter: the starts
  // computed on the host (a grown init window, a cold segment's start).
  virtual void read_stream_rows(int b, std::int64_t first, int n, Scalar* out) = 0;

  // Rows [first, first + n) of every stream, 1 <= n <= max_n: fewer than
  // max_n only where the source's staged data end (a chunk boundary of a file
  // source). `first` is the row after the previous block (or the init
  // block, or resume_at's row). The view is valid until the next call.
  virtual block_view next_block(std::int64_t first, int max_n) = 0;

  // Where a checkpoint at `row` (the next row to consume) stands.
  virtual SourcePosition position_at(std::int64_t row) const = 0;
  // A restart from a checkpoint: the next row consumed is `row`, with the
  // frozen streams and data errors the checkpoint recorded.
  virtual void resume_at(std::int64_t row, SourcePosition earlier) = 0;

  // I/O accounting so far; none for a source that reads no files.
  virtual std::optional<SourceIoStats> io_report() = 0;

  // Accuracy of the states at `step` (the index of the last row consumed)
  // against the truth; none for a source that does not know its truth.
  virtual std::optional<TruthAccuracy> accuracy(const StreamBatch<Scalar, ExecSpace>& sb, std::int64_t step) const = 0;
};

}  // namespace mosaic
