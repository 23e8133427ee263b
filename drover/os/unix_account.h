#pragma once

// The Unix account a job runs under (docs/security.md, "Jobs run as their users"): the one rule
// that the agent's supervisor and the Slurm executor apply before they start a job for another
// user. Looking an account up reads the system's user database (NSS: /etc/passwd, LDAP...), so
// only drivers call it, never while holding a lock that API requests need.

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "drover/common/result.h"

namespace drover::os {

struct UnixAccount {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;     // its primary group
  std::string home;  // "/" when the database names none
};

// The account a job whose account is `run_as` (Job::run_as) runs under, when this process would
// switch to it:
//   - none when this process is not root (it cannot switch: the job runs as this process's
//     user, and `run_as` is ignored) or `run_as` is empty;
//   - kNotFound "no such Unix account NAME <where>" when the database has no such account, and
//     kInternal when it cannot be read;
//   - kPermissionDenied "job would run as root; the policy's accounts.allow_root does not list
//     its owner" when the account is uid 0 and `may_run_as_root` (Job::may_run_as_root) is false.
// `where` ends the not-found message ("on node n1"; "on the server, which submits the Slurm
// queues' jobs").
Result<std::optional<UnixAccount>> AccountToRunAs(std::string_view run_as, bool may_run_as_root,
                                                  std::string_view where);

}  // namespace drover::os
