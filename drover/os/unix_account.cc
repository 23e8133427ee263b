#include "drover/os/unix_account.h"

#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
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

}  // namespace drover::os
