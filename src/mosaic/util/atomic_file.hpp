// Shared pieces of the atomic writers (result_writer.cpp, write_npy in
// npy.cpp, the checkpoint files of checkpoint.hpp). Every one of them writes
// `<target>.tmp.XXXXXX` (create_locked_temp) in the target's directory,
// fsyncs it, renames it over the target and fsyncs the directory, so a
// reader or a crash never sees a half-written target and an older target is
// replaced only by a complete new one. Two runs writing the same target
// (two jobs started in one directory share the default result name) both
// complete: the last rename wins and the target is one whole file.
//
// Temporary files of writers that died (a crash between write and rename)
// are removed by the next successful write of the same target
// (remove_stale_temps). A temporary file of a writer that is alive must
// never be removed, or that writer's rename fails at the very end of its
// run. A live writer is recognised by a lock: each writer holds
// flock(LOCK_EX) on its own temporary file from its creation until after
// its rename, and the kernel drops the lock when the writer ends, however
// it ends. The cleanup removes only the temporaries it can lock itself.
// Why flock and not an age or a pid in the name: an age cannot tell a slow
// writer from a dead one, and a pid cannot be checked from another host or
// after pid reuse; a lock is released exactly when its holder ends.
// Races: a cleanup can lock and remove a temporary in the moment between
// its creation and its writer's flock; the writer sees that (its path no
// longer names the file it holds, same_file) and creates another one. A
// cleanup that locks a file its writer has just renamed (and released)
// finds the temporary name gone (same_file again) and removes nothing.
//
// NFS and other shared filesystems: Linux emulates flock with POSIX
// byte-range locks on NFS, which the server arbitrates across clients (NLM
// or NFSv4); a mount with `local_lock=flock` or `nolock` (and Lustre's
// `localflock`) keeps the locks on one node, so a writer on another node
// would not see them; where flock is not supported at all (Lustre without
// `flock`: ENOSYS) the writers go on unlocked and the cleanup removes
// nothing it cannot lock: a stale temporary then stays (harmless, named
// `.tmp.`) instead of a live one being removed. A lock held by an NFS
// client that crashed is released only when the server's lease expires
// (NFSv4: typically 90 s).
//
// Test-only hooks, test_hooks_before_rename(target), called by every writer
// after the temporary file is complete and durable, just before the rename;
// both variables are unset in normal runs:
//  - MOSAIC_TEST_FAIL_BEFORE_RENAME=<substring>: a write whose target
//    contains the substring prints one line to stderr and ends the process
//    at once with _exit(86): what a crash (node failure, SIGKILL) at the
//    worst moment leaves behind (crash-safety and state-set checks).
//  - MOSAIC_TEST_PAUSE_BEFORE_RENAME=<substring>:<file>: such a write waits,
//    holding its temporary file, until <file> exists (at most 60 s), then
//    renames: a writer that is slow at the worst moment, for the checks of
//    concurrent writers and directory locks.
// Both are used by tests/mpi/run_mpi_checks.py.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

namespace mosaic {

// Exit status of a process stopped by MOSAIC_TEST_FAIL_BEFORE_RENAME.
constexpr int kTestFailBeforeRenameExit = 86;

inline void test_hooks_before_rename(const std::string& target) {
  const char* fail = std::getenv("MOSAIC_TEST_FAIL_BEFORE_RENAME");
  if (fail != nullptr && *fail != '\0' && target.find(fail) != std::string::npos) {
    std::fprintf(stderr, "mosaic: MOSAIC_TEST_FAIL_BEFORE_RENAME: simulated failure between writing and renaming %s\n",
                 target.c_str());
    std::fflush(stderr);
    ::_exit(kTestFailBeforeRenameExit);
  }
  const char* pause = std::getenv("MOSAIC_TEST_PAUSE_BEFORE_RENAME");
  const char* colon = pause != nullptr ? std::strchr(pause, ':') : nullptr;
  if (colon == nullptr || colon == pause || target.find(std::string(pause, colon)) == std::string::npos) return;
  std::error_code ec;
  for (int waited_ms = 0; waited_ms < 60000 && !std::filesystem::exists(colon + 1, ec); waited_ms += 10)
    ::usleep(10000);
}

// Whether `path` still names the file open as `fd` (not removed, not replaced).
inline bool same_file(int fd, const std::string& path) {
  struct stat open_file {
  }, named{};
  return ::fstat(fd, &open_file) == 0 && ::stat(path.c_str(), &named) == 0 && open_file.st_dev == named.st_dev &&
         open_file.st_ino == named.st_ino;
}

// Creates `<target>.tmp.XXXXXX` (mode 0600, close-on-exec) and takes
// flock(LOCK_EX) on it; `tmp` receives its name. Returns the descriptor, to
// be kept open (the lock held) until after the rename, or -1 with errno set.
// Where the filesystem has no flock, the file is returned unlocked (see the
// file comment).
inline int create_locked_temp(const std::string& target, std::string& tmp) {
  for (;;) {
    tmp = target + ".tmp.XXXXXX";
    const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
    if (fd < 0) return -1;
    int locked;
    do locked = ::flock(fd, LOCK_EX);
    while (locked != 0 && errno == EINTR);
    if (locked != 0 || same_file(fd, tmp)) return fd;
    ::close(fd);  // a cleanup removed it before the lock was taken: another name
  }
}

// Makes the entries of `dir` durable (a rename into it, a removal from it).
inline void fsync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

// Removes the `<target>.tmp.XXXXXX` files whose writers died before their
// rename: those nobody holds a lock on. Called by a writer after its own
// rename succeeded.
inline void remove_stale_temps(const std::string& target) {
  namespace fs = std::filesystem;
  const fs::path p(target);
  const std::string prefix = p.filename().string() + ".tmp.";
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string path = it->path().string();
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && same_file(fd, path)) ::unlink(path.c_str());
    ::close(fd);
  }
}

}  // namespace mosaic
