#include "drover/os/unix_account.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <pwd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

namespace drover::os {

Result<std::optional<UnixAccount>> AccountToRunAs(std::string_view run_as, bool may_run_as_root,
                                                  std::string_view where) {
  if (geteuid() != 0 || run_as.empty()) return std::optional<UnixAccount>();
  const std::string name(run_as);
  const long size_hint = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(size_hint > 0 ? static_cast<std::size_t>(size_hint) : 16384);
  passwd entry{};
  passwd* found = nullptr;
  int error;
  while ((error = getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found)) ==
         ERANGE) {
    buffer.resize(buffer.size() * 2);
  }
  if (found == nullptr) {
    if (error == 0 || error == ENOENT || error == ESRCH) {
      return NotFound(fmt::format("no such Unix account {} {}", name, where));
    }
    return Internal(
        fmt::format("cannot look up Unix account {} {}: {}", name, where, std::strerror(error)));
  }
  UnixAccount account{name, entry.pw_uid, entry.pw_gid,
                      entry.pw_dir != nullptr && *entry.pw_dir != '\0' ? entry.pw_dir : "/"};
  if (account.uid == 0 && !may_run_as_root) {
    return MakeError(
        ErrorCode::kPermissionDenied,
        "job would run as root; the policy's accounts.allow_root does not list its owner");
  }
  return std::optional<UnixAccount>(std::move(account));
}

Result<std::optional<UnixAccount>> OtherAccountToRunAs(std::string_view run_as,
                                                       bool may_run_as_root,
                                                       std::string_view where) {
  DROVER_ASSIGN_OR_RETURN(std::optional<UnixAccount> account,
                          AccountToRunAs(run_as, may_run_as_root, where));
  if (account && account->uid == geteuid()) account.reset();
  return account;
}

Status GiveDirectory(const std::string& dir, const UnixAccount& account) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Internal(fmt::format("cannot create directory {}: {}", dir, ec.message()));
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || fchown(fd, account.uid, account.gid) != 0) {
    const int error = errno;
    if (fd >= 0) close(fd);
    return Internal(fmt::format("cannot give directory {} to Unix account {}: {}", dir,
                                account.name, std::strerror(error)));
  }
  close(fd);
  return OkStatus();
}

std::vector<gid_t> GroupsOf(const UnixAccount& account) {
  std::vector<gid_t> groups;
  int count = 32;
  do {
    groups.resize(static_cast<std::size_t>(count));
  } while (getgrouplist(account.name.c_str(), account.gid, groups.data(), &count) < 0);
  groups.resize(static_cast<std::size_t>(count));
  return groups;
}

Status WithFileIdentityOf(const UnixAccount& account, const std::function<void()>& work) {
  // setfsuid and setfsgid report no errors: -1 changes nothing and answers the current value.
  const auto file_uid = [] { return static_cast<uid_t>(syscall(SYS_setfsuid, -1)); };
  const auto file_gid = [] { return static_cast<gid_t>(syscall(SYS_setfsgid, -1)); };
  const uid_t own_uid = file_uid();
  const gid_t own_gid = file_gid();
  std::vector<gid_t> own_groups(static_cast<std::size_t>(std::max(getgroups(0, nullptr), 0)));
  if (getgroups(static_cast<int>(own_groups.size()), own_groups.data()) < 0) {
    return Internal(fmt::format("cannot read this thread's groups: {}", std::strerror(errno)));
  }
  const std::vector<gid_t> groups = GroupsOf(account);
  const auto restore = [&] {
    syscall(SYS_setfsuid, own_uid);
    syscall(SYS_setfsgid, own_gid);
    if (syscall(SYS_setgroups, own_groups.size(), own_groups.data()) != 0 ||
        file_uid() != own_uid || file_gid() != own_gid) {
      std::fprintf(stderr,
                   "drover: cannot restore this thread's file identity after acting as %s\n",
                   account.name.c_str());
      std::abort();
    }
  };
  bool taken = syscall(SYS_setgroups, groups.size(), groups.data()) == 0;
  if (taken) {
    syscall(SYS_setfsgid, account.gid);
    taken = file_gid() == account.gid;
  }
  if (taken) {
    syscall(SYS_setfsuid, account.uid);
    taken = file_uid() == account.uid;
  }
  if (!taken) {
    restore();
    return Internal(fmt::format("cannot act as Unix account {} (uid {}, gid {})", account.name,
                                account.uid, account.gid));
  }
  try {
    work();
  } catch (...) {
    restore();
    throw;
  }
  restore();
  return OkStatus();
}

}  // namespace drover::os
