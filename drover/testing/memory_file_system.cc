// MemoryFileSystem: see memory_file_system.h.

#include "drover/testing/memory_file_system.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <utility>

namespace drover::testing {
namespace {

std::string Normal(const std::string& path) {
  std::string out = std::filesystem::path(path).lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::string ParentOf(const std::string& path) {
  return std::filesystem::path(path).parent_path().string();
}

bool IsUnder(const std::string& path, const std::string& root) {
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          (root == "/" || path[root.size()] == '/'));
}

}  // namespace

std::optional<Error> MemoryFileSystem::FaultOf(Op op, const std::string& path) const {
  auto it = faults_.find({op, path});
  if (it == faults_.end()) return std::nullopt;
  ++failures_[{op, path}];
  return Error{it->second, fmt::format("injected fault on {}", path), {}};
}

bool MemoryFileSystem::IsDirectory(const std::string& path) const {
  if (path == "/" || path == "." || path.empty()) return true;
  auto it = entries_.find(path);
  return it != entries_.end() && it->second.directory;
}

void MemoryFileSystem::MakeParents(const std::string& path) {
  for (std::string dir = ParentOf(path); !dir.empty() && dir != "/"; dir = ParentOf(dir)) {
    EntryAt(dir).directory = true;
  }
}

MemoryFileSystem::Entry& MemoryFileSystem::EntryAt(const std::string& path) {
  Entry& entry = entries_[path];
  if (entry.inode == 0) entry.inode = ++inodes_;
  return entry;
}

std::vector<std::string> MemoryFileSystem::Subtree(const std::string& path) const {
  std::vector<std::string> out;
  for (const auto& [entry, unused] : entries_) {
    if (IsUnder(entry, path)) out.push_back(entry);
  }
  return out;
}

Result<FileInfo> MemoryFileSystem::Stat(const std::string& path) const {
  const std::string at = Normal(path);
  std::lock_guard lock(mu_);
  if (auto fault = FaultOf(Op::kStat, at)) return tl::unexpected(*fault);
  auto it = entries_.find(at);
  if (it == entries_.end()) return NotFound(fmt::format("cannot look at {}: no such file", at));
  return FileInfo{static_cast<std::int64_t>(it->second.content.size()), it->second.modified_ns,
                  it->second.directory, 1, it->second.inode};
}

Result<FileInfo> MemoryFileSystem::LinkStat(const std::string& path) const {
  {
    std::lock_guard lock(mu_);
    if (auto fault = FaultOf(Op::kLinkStat, Normal(path))) return tl::unexpected(*fault);
  }
  return Stat(path);
}

Result<std::string> MemoryFileSystem::Read(const std::string& path, std::int64_t offset,
                                           std::int64_t max_bytes) const {
  const std::string at = Normal(path);
  std::lock_guard lock(mu_);
  if (auto fault = FaultOf(Op::kRead, at)) return tl::unexpected(*fault);
  auto it = entries_.find(at);
  if (it == entries_.end()) return NotFound(fmt::format("cannot read {}: no such file", at));
  if (it->second.directory) return Internal(fmt::format("cannot read {}: a directory", at));
  const std::string& content = it->second.content;
  const auto size = static_cast<std::int64_t>(content.size());
  if (offset >= size) return std::string();
  return content.substr(static_cast<std::size_t>(offset),
                        static_cast<std::size_t>(std::min(max_bytes, size - offset)));
}

Status MemoryFileSystem::Append(const std::string& path, std::string_view data) {
  const std::string at = Normal(path);
  std::lock_guard lock(mu_);
  if (auto fault = FaultOf(Op::kAppend, at)) return tl::unexpected(*fault);
  if (!IsDirectory(ParentOf(at))) {
    return Internal(fmt::format("cannot write {}: no such directory", at));
  }
  Entry& entry = EntryAt(at);
  if (entry.directory) return Internal(fmt::format("cannot write {}: a directory", at));
  entry.content.append(data);
  entry.modified_ns = ++clock_ns_;
  return OkStatus();
}

Status MemoryFileSystem::CreateDirectories(const std::string& path) {
  const std::string at = Normal(path);
  std::lock_guard lock(mu_);
  if (auto fault = FaultOf(Op::kCreateDirectories, at)) return tl::unexpected(*fault);
  for (std::string dir = at; !dir.empty() && dir != "/"; dir = ParentOf(dir)) {
    auto it = entries_.find(dir);
    if (it != entries_.end() && !it->second.directory) {
      return Internal(fmt::format("cannot create directory {}: Not a directory", dir));
    }
  }
  MakeParents(at + "/x");
  return OkStatus();
}

Status MemoryFileSystem::Rename(const std::string& from, const std::string& to) {
  const std::string source = Normal(from);
  const std::string target = Normal(to);
  std::lock_guard lock(mu_);
  if (auto fault = FaultOf(Op::kRename, source)) return tl::unexpected(*fault);
  if (!entries_.count(source)) return NotFound(fmt::format("cannot move {}: no such file", source));
  if (!IsDirectory(ParentOf(target))) {
    return Internal(fmt::format("cannot move {} to {}: no such directory", source, target));
  }
  if (IsUnder(target, source) && target != source) {
    return Internal(fmt::format("cannot move {} into itself", source));
  }
  if (target == source) return OkStatus();
  if (entries_.count(target) && Subtree(target).size() > 1) {
    return Internal(fmt::format("cannot move {} to {}: Directory not empty", source, target));
  }
  entries_.erase(target);
  for (const std::string& path : Subtree(source)) {
    auto node = entries_.extract(path);
    node.key() = target + path.substr(source.size());
    entries_.insert(std::move(node));
  }
  return OkStatus();
}

Status MemoryFileSystem::Exchange(const std::string& a, const std::string& b) {
  const std::string first = Normal(a);
  const std::string second = Normal(b);
  std::lock_guard lock(mu_);
  for (const std::string& path : {first, second}) {
    if (auto fault = FaultOf(Op::kExchange, path)) return tl::unexpected(*fault);
  }
  for (const std::string& path : {first, second}) {
    if (!entries_.count(path)) return NotFound(fmt::format("cannot swap {}: no such file", path));
  }
  if (IsUnder(first, second) || IsUnder(second, first)) {
    return Internal(fmt::format("cannot swap {} and {}: one holds the other", first, second));
  }
  std::vector<std::pair<std::string, Entry>> moved;
  for (const auto& [from, to] : {std::pair{first, second}, std::pair{second, first}}) {
    for (const std::string& path : Subtree(from)) {
      moved.emplace_back(to + path.substr(from.size()), std::move(entries_[path]));
      entries_.erase(path);
    }
  }
  for (auto& [path, entry] : moved) entries_[path] = std::move(entry);
  return OkStatus();
}

Status MemoryFileSystem::RemoveAll(const std::string& path) {
  const std::string at = Normal(path);
  std::lock_guard lock(mu_);
  if (auto fault = FaultOf(Op::kRemoveAll, at)) return tl::unexpected(*fault);
  for (const std::string& entry : Subtree(at)) entries_.erase(entry);
  return OkStatus();
}

Status MemoryFileSystem::RemoveEmptyDirectory(const std::string& path) {
  const std::string at = Normal(path);
  std::lock_guard lock(mu_);
  if (auto fault = FaultOf(Op::kRemoveEmptyDirectory, at)) return tl::unexpected(*fault);
  auto it = entries_.find(at);
  if (it == entries_.end()) return NotFound(fmt::format("cannot remove {}: no such file", at));
  if (!it->second.directory) return Internal(fmt::format("cannot remove {}: not a directory", at));
  if (Subtree(at).size() > 1) {
    return FailedPrecondition(fmt::format("cannot remove {}: it is not empty", at));
  }
  entries_.erase(it);
  return OkStatus();
}

void MemoryFileSystem::WriteFile(const std::string& path, const std::string& content) {
  const std::string at = Normal(path);
  std::lock_guard lock(mu_);
  MakeParents(at);
  entries_[at] = Entry{false, content, ++clock_ns_, ++inodes_};
}

std::optional<std::string> MemoryFileSystem::Contents(const std::string& path) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(Normal(path));
  if (it == entries_.end() || it->second.directory) return std::nullopt;
  return it->second.content;
}

bool MemoryFileSystem::Exists(const std::string& path) const {
  std::lock_guard lock(mu_);
  return entries_.count(Normal(path)) > 0;
}

void MemoryFileSystem::Fail(Op op, const std::string& path, ErrorCode code) {
  std::lock_guard lock(mu_);
  faults_[{op, Normal(path)}] = code;
}

void MemoryFileSystem::Heal() {
  std::lock_guard lock(mu_);
  faults_.clear();
}

int MemoryFileSystem::Failures(Op op, const std::string& path) const {
  std::lock_guard lock(mu_);
  auto it = failures_.find({op, Normal(path)});
  return it == failures_.end() ? 0 : it->second;
}

}  // namespace drover::testing
