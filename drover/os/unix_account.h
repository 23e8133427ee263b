#pragma once

// The Unix account a job runs under (docs/security.md, "Jobs run as their users"): the one rule
// that the agent's supervisor and the Slurm executor apply before they start a job for another
// user. Looking an account up reads the system's user database (NSS: /etc/passwd, LDAP...), so
// only drivers call it, never while holding a lock that API requests need.

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// AccountToRunAs, and none as well when the account is this process's own (its uid the
// effective one): for a driver that acts for the job in another account's name only when the
// account is another (the Slurm executor's submissions, the server's publishing of outputs); a
// job of the process's own account goes exactly as the process's own work.
Result<std::optional<UnixAccount>> OtherAccountToRunAs(std::string_view run_as,
                                                       bool may_run_as_root,
                                                       std::string_view where);

// Creates `dir` with its missing parents (as this process, mode 0755 under the umask) and gives
// `dir` itself to `account` (its uid and primary group), not through a link: a folder of
// Drover's in which a job running as the account must write (a Slurm attempt's folder, a value
// output's staging folder). kInternal naming the folder when it cannot.
Status GiveDirectory(const std::string& dir, const UnixAccount& account);

// `account`'s supplementary groups, its primary group included (getgrouplist).
std::vector<gid_t> GroupsOf(const UnixAccount& account);

// Runs `work` on this thread with the file permissions of `account` (its uid, primary group and
// supplementary groups decide every file operation; the capabilities that bypass file
// permissions are off meanwhile: capabilities(7), "Effect of user ID changes on
// capabilities"), then restores this thread's own. Only this thread changes: the raw setfsuid,
// setfsgid and setgroups system calls act per thread (glibc's setgroups would change every
// thread's). For a root process acting on a user's files for the user (the server publishing a
// job's outputs: a link the job left cannot make it write or read where the account may not).
// kInternal when the identity cannot be taken (`work` did not run); the process aborts when its
// own cannot be restored.
Status WithFileIdentityOf(const UnixAccount& account, const std::function<void()>& work);

}  // namespace drover::os
