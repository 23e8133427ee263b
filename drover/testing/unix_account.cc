#include "drover/testing/unix_account.h"

#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <iostream>

namespace drover::testing {

Result<std::unique_ptr<ScopedUnixAccount>> ScopedUnixAccount::Create(const std::string& prefix) {
  if (geteuid() != 0) return FailedPrecondition("creating a Unix account takes root");
  static std::atomic<int> counter{0};
  std::unique_ptr<ScopedUnixAccount> account(new ScopedUnixAccount());
  account->name_ = fmt::format("{}-{}-{}", prefix, getpid(), ++counter);
  const std::string add =
      fmt::format("useradd --system --no-create-home --shell /usr/sbin/nologin {} >/dev/null 2>&1",
                  account->name_);
  if (std::system(add.c_str()) != 0) return Internal(fmt::format("failed: {}", add));
  const passwd* entry = getpwnam(account->name_.c_str());
  if (entry == nullptr) return Internal(fmt::format("no account {} after useradd", account->name_));
  account->uid_ = entry->pw_uid;
  account->gid_ = entry->pw_gid;
  account->home_ = entry->pw_dir;
  return account;
}

ScopedUnixAccount::~ScopedUnixAccount() {
  if (removed_) return;
  const std::string del = fmt::format("userdel {} >/dev/null 2>&1", name_);
  if (std::system(del.c_str()) != 0) std::cerr << "failed: " << del << "\n";
}

Status ScopedUnixAccount::RemoveNow() {
  const std::string del = fmt::format("userdel --force {} >/dev/null 2>&1", name_);
  if (std::system(del.c_str()) != 0) return Internal(fmt::format("failed: {}", del));
  removed_ = true;
  return OkStatus();
}

}  // namespace drover::testing
