// RealFileSystem: FileSystem over POSIX calls and std::filesystem.

#include "drover/common/filesystem.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <system_error>

namespace drover {
namespace {

tl::unexpected<Error> ErrnoError(std::string_view what, const std::string& path, int error) {
  const std::string message = fmt::format("{} {}: {}", what, path, std::strerror(error));
  return error == ENOENT ? NotFound(message) : Internal(message);
}

FileInfo InfoOf(const struct stat& info) {
  FileInfo out;
  out.size = static_cast<std::int64_t>(info.st_size);
  out.modified_ns =
      static_cast<std::int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec;
  out.directory = S_ISDIR(info.st_mode);
  out.device = static_cast<std::uint64_t>(info.st_dev);
  out.inode = static_cast<std::uint64_t>(info.st_ino);
  return out;
}

class PosixFileSystem final : public FileSystem {
 public:
  bool HasOwners() const override { return true; }

  Result<FileInfo> Stat(const std::string& path) const override {
    struct stat info {};
    if (stat(path.c_str(), &info) != 0) return ErrnoError("cannot look at", path, errno);
    return InfoOf(info);
  }

  Result<FileInfo> LinkStat(const std::string& path) const override {
    struct stat info {};
    if (lstat(path.c_str(), &info) != 0) return ErrnoError("cannot look at", path, errno);
    return InfoOf(info);
  }

  Result<std::string> Read(const std::string& path, std::int64_t offset,
                           std::int64_t max_bytes) const override {
    // Without waiting: a FIFO (which a job may leave where a file is expected) would hold the
    // caller until some writer opened it.
    const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return ErrnoError("cannot read", path, errno);
    struct stat info {};
    if (fstat(fd, &info) != 0) {
      const int error = errno;
      close(fd);
      return ErrnoError("cannot read", path, error);
    }
    if (!S_ISREG(info.st_mode)) {
      close(fd);
      if (S_ISDIR(info.st_mode)) return ErrnoError("cannot read", path, EISDIR);
      return Internal(fmt::format("cannot read {}: not a regular file", path));
    }
    // Up to the size seen now (a file that grows meanwhile is read up to that size).
    const std::int64_t size = static_cast<std::int64_t>(info.st_size);
    const std::int64_t length = offset >= size ? 0 : std::min(max_bytes, size - offset);
    std::string text(static_cast<std::size_t>(length), '\0');
    std::size_t done = 0;
    int error = 0;
    while (done < text.size()) {
      const ssize_t n = pread(fd, text.data() + done, text.size() - done,
                              static_cast<off_t>(offset) + static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) error = errno;
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    close(fd);
    if (error != 0) return ErrnoError("cannot read", path, error);
    text.resize(done);  // the file shrank meanwhile
    return text;
  }

  Status Append(const std::string& path, std::string_view data) override {
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return Internal(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
    std::size_t done = 0;
    int error = 0;
    while (done < data.size()) {
      const ssize_t n = write(fd, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        error = errno;
        break;
      }
      done += static_cast<std::size_t>(n);
    }
    if (close(fd) != 0 && error == 0) error = errno;
    if (error != 0) return Internal(fmt::format("cannot write {}: {}", path, std::strerror(error)));
    return OkStatus();
  }

  Status CreateDirectories(const std::string& path) override {
    if (path.empty()) return InvalidArgument("cannot create a directory with an empty name");
    // Each prefix that ends before a '/', then the whole path.
    for (std::size_t end = path.find('/', 1);; end = path.find('/', end + 1)) {
      const std::string prefix = path.substr(0, end);
      if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
        return Internal(
            fmt::format("cannot create directory {}: {}", prefix, std::strerror(errno)));
      }
      if (end == std::string::npos) break;
    }
    struct stat info {};
    const int error = stat(path.c_str(), &info) != 0 ? errno : S_ISDIR(info.st_mode) ? 0 : ENOTDIR;
    if (error != 0) {
      return Internal(fmt::format("cannot create directory {}: {}", path, std::strerror(error)));
    }
    return OkStatus();
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (rename(from.c_str(), to.c_str()) != 0) {
      const int error = errno;
      const std::string what = fmt::format("{} to {}", from, to);
      struct stat info {};
      // ENOENT also means a missing parent of `to`: kNotFound only for a missing `from`.
      if (error == ENOENT && lstat(from.c_str(), &info) == 0) {
        return Internal(fmt::format("cannot move {}: {}", what, std::strerror(error)));
      }
      return ErrnoError("cannot move", what, error);
    }
    return OkStatus();
  }

  Status Exchange(const std::string& a, const std::string& b) override {
    if (renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) != 0) {
      return ErrnoError("cannot swap", fmt::format("{} and {}", a, b), errno);
    }
    return OkStatus();
  }

  Status RemoveAll(const std::string& path) override {
    std::error_code error;
    std::filesystem::remove_all(path, error);
    if (error) return Internal(fmt::format("cannot remove {}: {}", path, error.message()));
    return OkStatus();
  }

  Status RemoveEmptyDirectory(const std::string& path) override {
    if (rmdir(path.c_str()) == 0) return OkStatus();
    if (errno == ENOTEMPTY || errno == EEXIST) {
      return FailedPrecondition(fmt::format("cannot remove {}: it is not empty", path));
    }
    return ErrnoError("cannot remove", path, errno);
  }
};

}  // namespace

FileSystem& RealFileSystem() {
  static PosixFileSystem* const file_system = new PosixFileSystem();
  return *file_system;
}

Result<std::string> ReadWholeFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound(fmt::format("{} does not exist", path));
    return ErrnoError("cannot open", path, errno);
  }
  std::string content;
  char buffer[8192];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      int error = errno;
      close(fd);
      return ErrnoError("cannot read", path, error);
    }
    if (n == 0) break;
    content.append(buffer, static_cast<std::size_t>(n));
  }
  close(fd);
  return content;
}

}  // namespace drover
