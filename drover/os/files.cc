#include "drover/os/files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace drover::os {
namespace {

constexpr std::string_view kTemporaryMark = ".tmp.";

tl::unexpected<Error> ErrnoError(std::string_view what, std::string_view path, int error) {
  return Unavailable(fmt::format("{} {}: {}", what, path, std::strerror(error)));
}

// The folder `path` names a file in: "." for a bare name, "/" for one at the root.
std::string DirectoryOf(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return path.substr(0, slash == 0 ? 1 : slash);
}

}  // namespace

std::string TemporaryFileOf(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string::npos
                                    ? std::string_view(path)
                                    : std::string_view(path).substr(slash + 1);
  return fmt::format("{}/.{}{}{}", DirectoryOf(path), name, kTemporaryMark,
                     static_cast<long>(getpid()));
}

Status WriteAll(int fd, std::string_view text, std::string_view path) {
  while (!text.empty()) {
    const ssize_t written = write(fd, text.data(), text.size());
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) return ErrnoError("cannot write", path, errno);
    text.remove_prefix(static_cast<std::size_t>(written));
  }
  return OkStatus();
}

Status WriteFileAtomically(const std::string& path, std::string_view text, Durability durability,
                           int mode) {
  const bool synced = durability == Durability::kSynced;
  const std::string temporary = TemporaryFileOf(path);
  if (unlink(temporary.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError("cannot remove", temporary, errno);
  }
  const int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                      static_cast<mode_t>(mode));
  if (fd < 0) return ErrnoError("cannot create", temporary, errno);
  Status written = WriteAll(fd, text, temporary);
  if (written && synced && fsync(fd) != 0) written = ErrnoError("cannot fsync", temporary, errno);
  if (close(fd) != 0 && written) written = ErrnoError("cannot write", temporary, errno);
  if (written && rename(temporary.c_str(), path.c_str()) != 0) {
    written = ErrnoError("cannot rename to", path, errno);
  }
  if (!written) {
    unlink(temporary.c_str());
    return written;
  }
  if (!synced) return OkStatus();
  const int dir_fd = open(DirectoryOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    fsync(dir_fd);  // Best effort: the rename is already visible to other processes.
    close(dir_fd);
  }
  return OkStatus();
}

bool IsAtomicWriteLeftover(std::string_view file_name) {
  if (!file_name.starts_with('.')) return false;
  const std::size_t mark = file_name.rfind(kTemporaryMark);
  if (mark == std::string_view::npos || mark == 0) return false;
  const std::string_view pid = file_name.substr(mark + kTemporaryMark.size());
  return !pid.empty() && pid.find_first_not_of("0123456789") == std::string_view::npos;
}

}  // namespace drover::os
