// Checkpoints of a run and restarts from them (docs/CHECKPOINT.md).
//
// Layout under output.checkpoint.dir (ROOT):
//   ROOT/ckpt_<sample index, 12 digits>/rank_<k>.bin   one file per writing rank
//   ROOT/ckpt_<...>/MANIFEST.json                      written last, by rank 0
//   ROOT/mosaic.lock                                   rank 0's lock while a run uses ROOT (dir_lock.hpp)
// A checkpoint is complete iff its MANIFEST.json exists; it is good iff the
// manifest parses, its own checksum matches, and every rank file it lists
// has the recorded size and FNV-1a 64-bit checksum.
//
// Rank file (little-endian):
//   8 bytes   magic "MOSCKPT1"
//   8 bytes   u64 H: length of the header
//   H bytes   header, JSON: format_version, rank, nranks, dtype, d, r,
//             stream_ids (global ids, in the order of the data), fields
//             [{name, type (f4 f8 i4 i8 u1), per_stream}], data_errors
//   data      every field in header order, each stream after stream, each
//             stream's values in row-major order of the view's trailing
//             indices (U(b, i, j): i-major whatever the device layout)
// Every per-stream view of StreamBatch is stored (for_each_state_view), so a
// stream resumes bit for bit, and per stream, keyed by its global id, so a
// strong-mode restart on another number of ranks redistributes the streams.
//
// Writing (write_checkpoint, collective): rank 0 prepares the directory;
// every rank writes its file atomically (temporary name, fsync, rename,
// fsync of the directory: write_file_atomically); the sizes and checksums
// are gathered to rank 0, which then writes the manifest atomically: the
// commit point. The manifest also records the fingerprint of every input
// file of an npy run ("inputs"), which a restart checks (check_input).
// Only after that are older checkpoints removed (prune). A rank that fails
// throws; the driver turns that into MPI_Abort with the rank and the
// reason, so the other ranks never wait forever.
//
// The code: the format (impl/checkpoint_format.hpp), writing
// (impl/checkpoint_write.hpp), restarting (impl/checkpoint_restart.hpp).
#pragma once

#include "mosaic/io/impl/checkpoint_format.hpp"
#include "mosaic/io/impl/checkpoint_restart.hpp"
#include "mosaic/io/impl/checkpoint_write.hpp"
