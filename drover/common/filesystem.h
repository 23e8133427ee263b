#pragma once

// FileSystem: the file operations the server's drivers need (the control plane's input checks,
// policy file and logs; output publishing), behind one interface so that tests can run them on
// an in-memory file system with injected faults (testing::MemoryFileSystem), as leveldb's Env.
//
// Paths are passed as they are (relative ones resolve against the working directory). Error
// codes: kNotFound when the path (or a named source) does not exist; kInternal for any other
// failure, with the path and the system's reason in the message. Implementations are
// thread-safe.

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "drover/common/result.h"

namespace drover {

// What Stat and LinkStat report about a file or directory.
struct FileInfo {
  std::int64_t size = 0;         // bytes (directories: as the system reports)
  std::int64_t modified_ns = 0;  // modification time, ns since the epoch
  bool directory = false;
  // Which file it is (st_dev, st_ino): kept by a rename, so that the file can be recognized at
  // its new path; a new file at the same path has another.
  std::uint64_t device = 0;
  std::uint64_t inode = 0;

  friend bool operator==(const FileInfo&, const FileInfo&) = default;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // `path`, following symbolic links (stat(2)). kNotFound if it (or a link's target) does not
  // exist.
  virtual Result<FileInfo> Stat(const std::string& path) const = 0;
  // `path` itself, a symbolic link not followed (lstat(2)). kNotFound if it does not exist.
  virtual Result<FileInfo> LinkStat(const std::string& path) const = 0;
  // At most `max_bytes` of the file at `path` from byte `offset` (an offset at or past the end
  // reads nothing). kNotFound if it does not exist; kInternal if it cannot be read (a
  // directory, no permission, anything but a regular file: a FIFO is refused, not waited on).
  virtual Result<std::string> Read(
      const std::string& path, std::int64_t offset = 0,
      std::int64_t max_bytes = std::numeric_limits<std::int64_t>::max()) const = 0;
  // Appends `data` to the file at `path`, creating it (mode 0644) when missing; its parent
  // directory must exist. kInternal naming the file when it cannot be written (what was written
  // of `data` before the failure may stay).
  virtual Status Append(const std::string& path, std::string_view data) = 0;
  // Creates directory `path` and any missing parents (`mkdir -p`, mode 0755); an existing
  // directory is fine. kInternal naming the directory that could not be created.
  virtual Status CreateDirectories(const std::string& path) = 0;
  // Moves `from` onto `to` atomically (rename(2)), replacing a file at `to`. kNotFound if
  // `from` does not exist; kInternal otherwise (`to`'s parent missing, across devices, ...).
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  // Swaps `a` and `b` atomically (renameat2 with RENAME_EXCHANGE). kNotFound if either does not
  // exist; kInternal otherwise (for example a file system without RENAME_EXCHANGE).
  virtual Status Exchange(const std::string& a, const std::string& b) = 0;
  // Removes `path` with everything under it; nothing there is fine. kInternal naming what could
  // not be removed (what was removed before stays removed).
  virtual Status RemoveAll(const std::string& path) = 0;
  // Removes the directory `path` if it is empty (rmdir(2)). kNotFound if it does not exist;
  // kFailedPrecondition if it is not empty; kInternal otherwise.
  virtual Status RemoveEmptyDirectory(const std::string& path) = 0;
  // Whether files here have owners and permissions, checked against the calling thread's file
  // identity (the machine's file system: true; an in-memory one: false). A driver that acts
  // with another account's permissions (os::WithFileIdentityOf) needs to only where it is true.
  virtual bool HasOwners() const = 0;
};

// The machine's file system, over POSIX calls. One process-wide instance; thread-safe.
FileSystem& RealFileSystem();

// The whole file at `path`, read to its end (so that /proc files and pipes, whose size stat(2)
// does not tell, read whole, unlike FileSystem::Read). kNotFound if it does not exist ("PATH does
// not exist"), kInternal with the system's message on other errors. For drivers and tools that
// read a file once (trace loaders, kubeconfig, /proc); the control plane reads through its
// FileSystem.
Result<std::string> ReadWholeFile(const std::string& path);

}  // namespace drover
