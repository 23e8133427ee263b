#include "drover/server/data_dir_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>

namespace drover::server {
namespace {

// The process id written in the lock file by its holder, or "unknown".
std::string HolderPid(int fd) {
  char buffer[32] = {};
  const ssize_t n = pread(fd, buffer, sizeof(buffer) - 1, 0);
  std::string text = n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "";
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  return digits ? text : "unknown";
}

}  // namespace

Result<DataDirLock> DataDirLock::Acquire(const std::string& data_dir, const std::string& what) {
  const std::string path = (std::filesystem::path(data_dir) / "drover.lock").string();
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Unavailable(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    std::string message =
        error == EWOULDBLOCK ? fmt::format(
                                   "{} is in use by another {} (pid {}); stop it, or give this one "
                                   "another data folder",
                                   data_dir, what, HolderPid(fd))
                             : fmt::format("cannot lock {}: {}", path, std::strerror(error));
    close(fd);
    if (error == EWOULDBLOCK) return FailedPrecondition(std::move(message));
    return Unavailable(std::move(message));
  }
  const std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    const int error = errno;
    close(fd);
    return Unavailable(fmt::format("cannot write {}: {}", path, std::strerror(error)));
  }
  return DataDirLock(fd, path);
}

DataDirLock::DataDirLock(DataDirLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

DataDirLock& DataDirLock::operator=(DataDirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

DataDirLock::~DataDirLock() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace drover::server
