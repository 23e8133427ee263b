#pragma once

// SecretStore: the teams' secrets (docs/security.md, "Secrets"), one file per secret under
// DIR/<team>/<name> (the server's DATA/secrets), the directories mode 0700 and the files 0600,
// so that only the server's user reads them. A value is never logged, never in an error message
// and never returned but by Get, which the control plane calls only to launch a job's workers.
//
// It works on the machine's file system directly (POSIX calls), not through common/filesystem.h:
// what it needs, a write with a mode, fsync and a directory listing, is not in that interface, and
// its guarantee (the modes) only holds on a real file system; tests use a testing::TempDir.
//
// Writes are atomic (os::WriteFileAtomically): the value goes to a temporary file
// (DIR/<team>/.<name>.tmp.<pid>, never a secret's name since those do not start with '.'), which
// is fsynced and renamed over the secret, and the directory fsynced; a crash leaves the old value
// or the new one, and Open removes leftover temporary files. An in-memory index of the names (with
// their modification times) answers Exists and List without touching the disk. Thread-safe; writes
// are serialized.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "drover/api/service.h"
#include "drover/common/clock.h"
#include "drover/common/result.h"
#include "drover/common/thread_annotations.h"

namespace drover::server {

// The largest secret value: 64 KiB, ample for API keys, tokens and a private key or certificate
// bundle, small enough that every worker's environment can hold it (docs/api.md, "Limits").
inline constexpr std::int64_t kMaxSecretBytes = 64 * 1024;

// A secret as listings show it (its name and the file's modification time), never its value.
using api::SecretInfo;

// OK when `team` and `name` may name a secret: the team a valid principal
// (spec::IsValidPrincipal) not starting with '.', the name spec::IsValidSecretName. Otherwise
// kInvalidArgument naming the field and the (escaped) text.
Status CheckSecretRef(std::string_view team, std::string_view name);

class SecretStore {
 public:
  // Opens (creating, mode 0700) the store under `dir`, tightens the modes of what is there to
  // 0700/0600, removes leftover temporary files and indexes the secrets. Entries that are not a
  // valid team directory or secret name are left alone and not indexed. kInternal naming the path
  // on a file system error.
  static Result<std::unique_ptr<SecretStore>> Open(std::string dir);

  // Sets `team`'s secret `name` to `value`, replacing any previous value. kInvalidArgument for a
  // bad team or name (CheckSecretRef), an empty value, a value over kMaxSecretBytes or one
  // holding a NUL byte (an environment variable cannot); kInternal on a write error (the old
  // value, if any, stays).
  Status Put(std::string_view team, std::string_view name, std::string_view value) EXCLUDES(mu_);
  // The value of `team`'s secret `name`. kInvalidArgument for a bad reference; kNotFound ("team T
  // has no secret N") when it is not set; kInternal when it cannot be read.
  Result<std::string> Get(std::string_view team, std::string_view name) const;
  // `team`'s secrets by name (none for a team without any). kInvalidArgument for a bad team.
  Result<std::vector<SecretInfo>> List(std::string_view team) const EXCLUDES(mu_);
  // Removes `team`'s secret `name`. kInvalidArgument for a bad reference, kNotFound when it is
  // not set, kInternal on a file system error.
  Status Delete(std::string_view team, std::string_view name) EXCLUDES(mu_);
  // Whether `team` has a secret `name` (from the index; no disk access).
  bool Exists(std::string_view team, std::string_view name) const EXCLUDES(mu_);

 private:
  explicit SecretStore(std::string dir) : dir_(std::move(dir)) {}
  std::string TeamDir(std::string_view team) const;

  const std::string dir_;
  mutable Mutex mu_;  // held across a write's file operations: writes are serialized
  // team -> name -> updated_at.
  std::map<std::string, std::map<std::string, TimeMs, std::less<>>, std::less<>> index_
      GUARDED_BY(mu_);
};

}  // namespace drover::server
