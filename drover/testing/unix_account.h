#pragma once

// A Unix account a test creates (useradd --system, no home, no login shell) and deletes
// (userdel) when it goes out of scope: for the tests of jobs that run as their users
// (docs/security.md). Creating accounts takes root; Create says so otherwise.

#include <sys/types.h>

#include <memory>
#include <string>

#include "drover/common/result.h"

namespace drover::testing {

class ScopedUnixAccount {
 public:
  // Creates "<prefix>-<pid>-<n>". kFailedPrecondition when not running as root; kInternal when
  // useradd fails or the account cannot be looked up after.
  static Result<std::unique_ptr<ScopedUnixAccount>> Create(const std::string& prefix);
  ~ScopedUnixAccount();  // userdel, unless RemoveNow did; a failure is reported to stderr
  // Deletes the account at once, even while processes run as it (userdel --force), as a machine
  // that never knew it would look: kInternal when userdel fails.
  Status RemoveNow();
  ScopedUnixAccount(const ScopedUnixAccount&) = delete;
  ScopedUnixAccount& operator=(const ScopedUnixAccount&) = delete;

  const std::string& name() const { return name_; }
  uid_t uid() const { return uid_; }
  gid_t gid() const { return gid_; }
  const std::string& home() const { return home_; }

 private:
  ScopedUnixAccount() = default;

  std::string name_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  std::string home_;
  bool removed_ = false;
};

}  // namespace drover::testing
