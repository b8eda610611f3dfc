#include "mosaic/io/result_writer.hpp"

#include "mosaic/util/atomic_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace mosaic {
namespace {

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw std::runtime_error("cannot write '" + path + "': " + what + " (" + std::strerror(errno) + ")");
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& contents) {
  std::string tmp;
  const int fd = create_locked_temp(path, tmp);
  if (fd < 0) fail("cannot create a temporary file in " + directory_of(path), path);
  std::size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::unlink(tmp.c_str());
      ::close(fd);
      fail("write failed", path);
    }
    done += std::size_t(n);
  }
  if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0) {
    ::unlink(tmp.c_str());
    ::close(fd);
    fail("flush failed", path);
  }
  test_hooks_before_rename(path);
  // The descriptor (and its lock: atomic_file.hpp) stays open until the
  // rename is done, so no other writer's cleanup removes the file first.
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    ::close(fd);
    fail("rename failed", path);
  }
  ::close(fd);                          // the data are durable (fsync above): closing releases the lock only
  fsync_directory(directory_of(path));  // the rename itself durable
  remove_stale_temps(path);
}

void write_json_atomically(const std::string& path, const nlohmann::json& doc) {
  write_file_atomically(path, doc.dump(2) + "\n");
}

void check_writable(const std::string& path) {
  if (path.empty()) throw std::runtime_error("output path is empty");
  // A directory cannot be renamed over: found now, not after the run.
  std::error_code ec;
  if (path.back() == '/' || std::filesystem::is_directory(path, ec))
    throw std::runtime_error("cannot write '" + path + "': it names a directory (expected a file name)");
  std::string probe = path + ".probe.XXXXXX";
  const int fd = mkstemp(probe.data());
  if (fd < 0) fail("its directory " + directory_of(path) + " is not writable", path);
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace mosaic
