#include "drover/server/secret_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "drover/os/files.h"
#include "drover/spec/limits.h"

namespace drover::server {
namespace {

tl::unexpected<Error> SystemError(std::string_view what, const std::string& path) {
  return Internal(fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

TimeMs ModifiedMs(const struct stat& info) {
  return static_cast<TimeMs>(info.st_mtim.tv_sec) * kMillisPerSecond +
         info.st_mtim.tv_nsec / 1'000'000;
}

// Creates directory `path` with mode 0700, or sets an existing one's mode to 0700.
Status MakePrivateDirectory(const std::string& path) {
  if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return SystemError("cannot create", path);
  }
  struct stat info {};
  if (lstat(path.c_str(), &info) != 0) return SystemError("cannot stat", path);
  if (!S_ISDIR(info.st_mode)) return Internal(fmt::format("{} is not a directory", path));
  if (chmod(path.c_str(), 0700) != 0) return SystemError("cannot chmod", path);
  return OkStatus();
}

Status SyncPath(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return SystemError("cannot open", path);
  const int synced = fsync(fd);
  close(fd);
  if (synced != 0) return SystemError("cannot fsync", path);
  return OkStatus();
}

// The names in directory `path` but "." and "..".
Result<std::vector<std::string>> ListDirectory(const std::string& path) {
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return SystemError("cannot list", path);
  std::vector<std::string> names;
  while (const dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  closedir(dir);
  return names;
}

}  // namespace

Status CheckSecretRef(std::string_view team, std::string_view name) {
  if (!spec::IsValidPrincipal(team)) {
    return InvalidArgument(spec::InvalidPrincipalMessage("team", team));
  }
  if (team.front() == '.') {
    return InvalidArgument(
        fmt::format("invalid team '{}': a team with secrets must not start "
                    "with '.'",
                    team));
  }
  if (!spec::IsValidSecretName(name)) {
    return InvalidArgument(spec::InvalidSecretNameMessage(name));
  }
  return OkStatus();
}

Result<std::unique_ptr<SecretStore>> SecretStore::Open(std::string dir) {
  DROVER_RETURN_IF_ERROR(MakePrivateDirectory(dir));
  std::unique_ptr<SecretStore> store(new SecretStore(std::move(dir)));
  MutexLock lock(store->mu_);
  DROVER_ASSIGN_OR_RETURN(std::vector<std::string> teams, ListDirectory(store->dir_));
  for (const std::string& team : teams) {
    if (!CheckSecretRef(team, "x")) continue;
    const std::string team_dir = store->TeamDir(team);
    struct stat info {};
    if (lstat(team_dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) continue;
    DROVER_RETURN_IF_ERROR(MakePrivateDirectory(team_dir));
    DROVER_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDirectory(team_dir));
    for (const std::string& name : names) {
      const std::string path = team_dir + "/" + name;
      if (os::IsAtomicWriteLeftover(name)) {
        if (unlink(path.c_str()) != 0) return SystemError("cannot remove", path);
        continue;
      }
      if (!spec::IsValidSecretName(name)) continue;
      if (lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) continue;
      if (chmod(path.c_str(), 0600) != 0) return SystemError("cannot chmod", path);
      store->index_[team][name] = ModifiedMs(info);
    }
  }
  return store;
}

std::string SecretStore::TeamDir(std::string_view team) const {
  return fmt::format("{}/{}", dir_, team);
}

Status SecretStore::Put(std::string_view team, std::string_view name, std::string_view value) {
  DROVER_RETURN_IF_ERROR(CheckSecretRef(team, name));
  if (value.empty()) return InvalidArgument("the secret's value is empty");
  if (static_cast<std::int64_t>(value.size()) > kMaxSecretBytes) {
    return InvalidArgument(fmt::format("the secret's value is {} bytes; at most {} are allowed",
                                       value.size(), kMaxSecretBytes));
  }
  if (std::size_t nul = value.find('\0'); nul != std::string_view::npos) {
    return InvalidArgument(fmt::format(
        "the secret's value holds a NUL byte at offset {}; an environment variable cannot", nul));
  }
  MutexLock lock(mu_);
  const std::string team_dir = TeamDir(team);
  DROVER_RETURN_IF_ERROR(MakePrivateDirectory(team_dir));
  const std::string path = fmt::format("{}/{}", team_dir, name);
  DROVER_RETURN_IF_ERROR(os::WriteFileAtomically(path, value, os::Durability::kSynced, 0600));
  DROVER_RETURN_IF_ERROR(SyncPath(team_dir));
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) return SystemError("cannot stat", path);
  index_[std::string(team)][std::string(name)] = ModifiedMs(info);
  return OkStatus();
}

Result<std::string> SecretStore::Get(std::string_view team, std::string_view name) const {
  DROVER_RETURN_IF_ERROR(CheckSecretRef(team, name));
  const std::string path = fmt::format("{}/{}", TeamDir(team), name);
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    return NotFound(fmt::format("team {} has no secret {}", team, name));
  }
  if (fd < 0) return SystemError("cannot open", path);
  std::string value(kMaxSecretBytes, '\0');
  std::size_t done = 0;
  while (done < value.size()) {
    const ssize_t n = read(fd, value.data() + done, value.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      auto error = SystemError("cannot read", path);
      close(fd);
      return error;
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  close(fd);
  value.resize(done);
  return value;
}

Result<std::vector<SecretInfo>> SecretStore::List(std::string_view team) const {
  DROVER_RETURN_IF_ERROR(CheckSecretRef(team, "x"));
  MutexLock lock(mu_);
  std::vector<SecretInfo> out;
  auto it = index_.find(team);
  if (it == index_.end()) return out;
  for (const auto& [name, updated_at] : it->second) out.push_back(SecretInfo{name, updated_at});
  return out;
}

Status SecretStore::Delete(std::string_view team, std::string_view name) {
  DROVER_RETURN_IF_ERROR(CheckSecretRef(team, name));
  MutexLock lock(mu_);
  auto it = index_.find(team);
  if (it == index_.end() || !it->second.contains(name)) {
    return NotFound(fmt::format("team {} has no secret {}", team, name));
  }
  const std::string team_dir = TeamDir(team);
  const std::string path = fmt::format("{}/{}", team_dir, name);
  if (unlink(path.c_str()) != 0 && errno != ENOENT) return SystemError("cannot remove", path);
  DROVER_RETURN_IF_ERROR(SyncPath(team_dir));
  it->second.erase(it->second.find(name));
  if (it->second.empty()) index_.erase(it);
  return OkStatus();
}

bool SecretStore::Exists(std::string_view team, std::string_view name) const {
  MutexLock lock(mu_);
  auto it = index_.find(team);
  return it != index_.end() && it->second.contains(name);
}

}  // namespace drover::server
