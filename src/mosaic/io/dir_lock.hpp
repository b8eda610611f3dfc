// Advisory locks on the directories a run writes into: output.state_dir and
// output.checkpoint.dir. Two runs writing one such directory would mix their
// state files or prune each other's checkpoints, so a second run on a
// directory in use is refused before anything runs, naming the directory
// and the run that holds it.
//
// The lock is the file `mosaic.lock` in the directory, held with
// flock(LOCK_EX) by rank 0 (the rank that prepares and commits those
// directories; the other ranks' checkpoint files are written inside a run
// that rank 0's lock already guards) from before Kokkos starts until the
// process ends. It holds who took it (program, host, pid, start time, deck,
// the keys naming the directory), one line of JSON, for the message a second
// run prints. The kernel releases the flock when the holder ends, however
// it ends (crash, SIGKILL, MPI_Abort), so a lock file whose lock is free is
// stale: the next run takes it over and says whose it was. A run that ends
// normally removes its lock file. Between that removal and another run's
// open the other run may lock the removed file: it notices (the path no
// longer names the file it holds: same_file) and tries again.
//
// On filesystems whose flock is node-local or missing the lock protects
// less; see atomic_file.hpp. Where flock fails (other than "held"), rank 0
// warns that the directory is not protected and the run goes on.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "mosaic/config/run_config.hpp"
#include "mosaic/io/environment.hpp"
#include "mosaic/util/atomic_file.hpp"

namespace mosaic {

constexpr const char* kDirectoryLockName = "mosaic.lock";

// A held directory lock; releasing it (destruction) removes the lock file.
class DirectoryLock {
 public:
  DirectoryLock() = default;
  DirectoryLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~DirectoryLock() { release(); }
  DirectoryLock(DirectoryLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}
  DirectoryLock& operator=(DirectoryLock&& other) noexcept {
    if (this != &other) {
      release();
      fd_ = std::exchange(other.fd_, -1);
      path_ = std::move(other.path_);
    }
    return *this;
  }
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  void release() noexcept {
    if (fd_ < 0) return;
    if (same_file(fd_, path_)) ::unlink(path_.c_str());
    ::close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
  std::string path_;
};

namespace detail {

inline std::string read_lock_file(int fd) {
  std::string text;
  char buf[4096];
  ssize_t n;
  off_t at = 0;
  while ((n = ::pread(fd, buf, sizeof buf, at)) > 0 && text.size() < 65536) {
    text.append(buf, std::size_t(n));
    at += n;
  }
  return text;
}

// "mosaic_miniapp pid 1234 on host h (started 2026-12-01T20:00:00Z, deck c.yaml)"
inline std::string describe_holder(const std::string& text) {
  const nlohmann::json h = nlohmann::json::parse(text, nullptr, false);
  if (!h.is_object() || !h.contains("pid")) return "a run that has not written who it is (it may be starting now)";
  auto field = [&](const char* k) {
    return h.contains(k) ? (h[k].is_string() ? h[k].get<std::string>() : h[k].dump()) : "?";
  };
  return field("program") + " pid " + field("pid") + " on host " + field("host") + " (started " + field("started_utc") +
         ", deck " + field("deck") + ")";
}

// Takes the lock of the existing directory `dir`, used as `keys`, for the
// run described by `holder`. Throws std::runtime_error when another run
// holds it or the lock file cannot be written; returns an empty lock (after
// a warning) where the filesystem has no working flock.
inline DirectoryLock lock_directory(const std::string& dir, const std::string& keys, const nlohmann::json& holder) {
  const std::string path = (std::filesystem::path(dir) / kDirectoryLockName).string();
  for (;;) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
      throw std::runtime_error(path + ": cannot create the lock file of " + dir + " (" + keys +
                               "): " + std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int e = errno;
      const std::string text = e == EWOULDBLOCK ? read_lock_file(fd) : "";
      ::close(fd);
      if (e == EINTR) continue;
      if (e == EWOULDBLOCK)
        throw std::runtime_error(dir + ": " + keys + " is in use by another run: " + path + " is locked by " +
                                 describe_holder(text) + "; wait for that run to end, or choose another directory");
      std::fprintf(stderr,
                   "mosaic_miniapp: warning: %s: cannot lock (%s): %s (%s) is not protected against another run "
                   "using it at the same time\n",
                   path.c_str(), std::strerror(e), dir.c_str(), keys.c_str());
      return DirectoryLock();
    }
    if (!same_file(fd, path)) {  // its previous holder removed it in the meantime: lock the new one
      ::close(fd);
      continue;
    }
    DirectoryLock lock(fd, path);
    const std::string previous = read_lock_file(fd);
    if (!previous.empty())
      std::printf("[mosaic] note: %s: taking over the stale lock of %s, which ended without releasing it\n",
                  path.c_str(), describe_holder(previous).c_str());
    const std::string text = holder.dump() + "\n";
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) != ssize_t(text.size()))
      throw std::runtime_error(path + ": cannot write the lock file of " + dir + " (" + keys +
                               "): " + std::strerror(errno));
    return lock;
  }
}

}  // namespace detail

// Rank 0, before anything runs: creates output.state_dir and
// output.checkpoint.dir if missing and locks each (a directory named by
// both is locked once). Throws std::runtime_error naming the directory (and
// the run holding it).
inline std::vector<DirectoryLock> lock_output_directories(const RunConfig& c, const std::string& deck,
                                                          const std::string& started_utc) {
  namespace fs = std::filesystem;
  struct Use {
    std::string dir, keys;
  };
  std::vector<Use> uses;
  const struct {
    const std::string& dir;
    const char *what, *key;
  } wanted[] = {{c.output.state_dir, "state", "output.state_dir"},
                {c.output.checkpoint.dir, "checkpoint", "output.checkpoint.dir"}};
  for (const auto& w : wanted) {
    if (w.dir.empty()) continue;
    std::error_code ec;
    fs::create_directories(w.dir, ec);
    if (ec)
      throw std::runtime_error(w.dir + ": cannot create the " + w.what + " directory (" + w.key + "): " + ec.message());
    bool same = false;
    for (auto& u : uses)
      if (fs::equivalent(u.dir, w.dir, ec)) {
        u.keys += std::string(" and ") + w.key;
        same = true;
      }
    if (!same) uses.push_back({w.dir, w.key});
  }
  std::vector<DirectoryLock> locks;
  for (const auto& u : uses) {
    const nlohmann::json holder = {{"program", "mosaic_miniapp"}, {"host", host_name()}, {"pid", (long long)::getpid()},
                                   {"started_utc", started_utc},  {"deck", deck},        {"directory", u.keys}};
    locks.push_back(detail::lock_directory(u.dir, u.keys, holder));
  }
  return locks;
}

}  // namespace mosaic
