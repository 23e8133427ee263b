#pragma once

// MemoryFileSystem: a FileSystem held in memory, with injected faults, for tests of the code
// that touches files through drover/common/filesystem.h (leveldb's memenv plus its fault
// injection).

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "drover/common/filesystem.h"

namespace drover::testing {

// Files and directories in a map by normalized path (lexically normalized, no trailing '/').
// There are no symbolic links, so LinkStat is Stat. Each write takes the next modification
// time (1, 2, ... ns), so that every change is seen by a look at the time. A file's parent
// directories must exist for Rename and Exchange to put something there, as on a real file
// system; WriteFile creates them. Thread-safe.
class MemoryFileSystem final : public FileSystem {
 public:
  // The operations a fault can be injected into.
  enum class Op {
    kStat,
    kLinkStat,
    kRead,
    kAppend,
    kCreateDirectories,
    kRename,    // matched on `from`
    kExchange,  // matched on either path
    kRemoveAll,
    kRemoveEmptyDirectory,
  };

  Result<FileInfo> Stat(const std::string& path) const override;
  Result<FileInfo> LinkStat(const std::string& path) const override;
  Result<std::string> Read(const std::string& path, std::int64_t offset,
                           std::int64_t max_bytes) const override;
  Status Append(const std::string& path, std::string_view data) override;
  Status CreateDirectories(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status Exchange(const std::string& a, const std::string& b) override;
  Status RemoveAll(const std::string& path) override;
  Status RemoveEmptyDirectory(const std::string& path) override;
  bool HasOwners() const override { return false; }  // every operation is allowed to everyone

  // Creates or replaces the file `path` with `content`, creating its parent directories.
  void WriteFile(const std::string& path, const std::string& content);
  // The content of file `path`; nullopt if there is no file there.
  std::optional<std::string> Contents(const std::string& path) const;
  // True if a file or directory is at `path`.
  bool Exists(const std::string& path) const;

  // From now on `op` on `path` fails with `code` (nothing changes), until Heal.
  void Fail(Op op, const std::string& path, ErrorCode code = ErrorCode::kInternal);
  // Removes every injected fault.
  void Heal();
  // How many calls of `op` on `path` failed by an injected fault.
  int Failures(Op op, const std::string& path) const;

 private:
  struct Entry {
    bool directory = false;
    std::string content;
    std::int64_t modified_ns = 0;
    std::uint64_t inode = 0;  // FileInfo::inode (device 1): numbered as entries are created
  };

  // The injected fault of `op` on `path` (normalized), if any; counts it. Requires mu_.
  std::optional<Error> FaultOf(Op op, const std::string& path) const;
  // Requires mu_.
  bool IsDirectory(const std::string& path) const;
  void MakeParents(const std::string& path);  // Requires mu_.
  // The entry at `path`, created (numbered) when missing. Requires mu_.
  Entry& EntryAt(const std::string& path);
  std::vector<std::string> Subtree(const std::string& path) const;  // Requires mu_.

  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;
  std::map<std::tuple<Op, std::string>, ErrorCode> faults_;
  mutable std::map<std::tuple<Op, std::string>, int> failures_;
  std::int64_t clock_ns_ = 0;
  std::uint64_t inodes_ = 0;  // the last inode number given
};

}  // namespace drover::testing
