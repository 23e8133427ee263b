#pragma once

// The exclusive lock a server (or an agent) holds on its data folder for as long as it runs, so
// that a second process started on the same folder refuses to start instead of writing the same
// store and colliding on job ids.

#include <string>

#include "drover/common/result.h"

namespace drover::server {

// An flock(2) on DATA/drover.lock, which also holds the owner's process id for the message a
// second process prints. The lock is released when the object is destroyed or the process
// exits (however it exits: the kernel drops flocks with the last descriptor). Move-only.
class DataDirLock {
 public:
  // Takes the lock on `data_dir` (which must exist), writing this process's id into the lock
  // file. kFailedPrecondition if another process holds it, naming that process's id (as written
  // in the file; "unknown" if it cannot be read); kUnavailable if the lock file cannot be opened
  // or locked for another reason (e.g. a read-only folder), with the system's message.
  // `what` names the holder in messages ("drover server", "drover agent").
  static Result<DataDirLock> Acquire(const std::string& data_dir, const std::string& what);

  DataDirLock(DataDirLock&& other) noexcept;
  DataDirLock& operator=(DataDirLock&& other) noexcept;
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;
  ~DataDirLock();

  const std::string& path() const { return path_; }

 private:
  DataDirLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

}  // namespace drover::server
