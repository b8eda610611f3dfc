// Shared pieces of the atomic writers (result_writer.cpp, write_npy in
// npy.cpp, the checkpoint files of checkpoint.hpp). Every one of them writes
// `<target>.tmp.XXXXXX` (mkstemp) in the target's directory, fsyncs it,
// renames it over the target and fsyncs the directory, so a reader or a crash
// never sees a half-written target and an older target is replaced only by a
// complete new one.
//
// Two helpers live here:
//  - test_fail_before_rename(target): test-only failure injection. With the
//    environment variable MOSAIC_TEST_FAIL_BEFORE_RENAME set to a non-empty
//    string that occurs in `target`, the process prints one line to stderr
//    and ends at once with _exit(86), after the temporary file is complete
//    and durable but before the rename: what a crash (node failure, SIGKILL)
//    at the worst moment leaves behind. Used by the crash-safety tests
//    (tests/mpi/run_mpi_checks.py, checkpoint checks); unset in normal runs.
//  - remove_stale_temps(target): removes the `<target>.tmp.XXXXXX` files an
//    earlier write of the same target left behind when it died before its
//    rename. Called by the writers after their own rename succeeded, so the
//    temporary file of a write in progress is never touched by its own
//    writer (one writer per target is assumed, as everywhere in the app).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace mosaic {

// Exit status of a process stopped by MOSAIC_TEST_FAIL_BEFORE_RENAME.
constexpr int kTestFailBeforeRenameExit = 86;

inline void test_fail_before_rename(const std::string& target) {
  const char* pattern = std::getenv("MOSAIC_TEST_FAIL_BEFORE_RENAME");
  if (pattern == nullptr || *pattern == '\0' || target.find(pattern) == std::string::npos) return;
  std::fprintf(stderr, "mosaic: MOSAIC_TEST_FAIL_BEFORE_RENAME: simulated failure between writing and renaming %s\n",
               target.c_str());
  std::fflush(stderr);
  ::_exit(kTestFailBeforeRenameExit);
}

inline void remove_stale_temps(const std::string& target) {
  namespace fs = std::filesystem;
  const fs::path p(target);
  const std::string prefix = p.filename().string() + ".tmp.";
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() == prefix.size() + 6 && name.compare(0, prefix.size(), prefix) == 0) {
      std::error_code rm;
      fs::remove(it->path(), rm);
    }
  }
}

}  // namespace mosaic
