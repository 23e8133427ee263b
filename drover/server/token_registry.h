#pragma once

// TokenRegistry: the API tokens (docs/security.md, "Tokens") and the jobs' own tokens.
//
// A token is "drv_" and 64 hex digits (32 bytes from getrandom), shown once, when created; the
// registry keeps only its SHA-256 digest, in memory (a hash map from digest to record, so that
// Authenticate costs one SHA-256 and one lookup) and in the store (store::TokenRecord). Its public
// id ("tok-" and 12 hex digits) names it in listings, revocations and the audit log.
//
// A job's token is "drj_<job id>_" and the hex HMAC-SHA256 of the job id under the registry's job
// key: it needs no storage, a restarted server (same key) still accepts it, and it speaks for
// that job alone (Identity::job set, role viewer; model::Decide lets it view and report on its
// job). The key lives in a file (ControlPlaneOptions::job_token_key_file, mode 0600) rather than
// the store: the store holds nothing that is a secret in clear, so its backups can be shared
// more widely than the data directory's key files.
//
// Thread-safe: its own mutex (never the control plane's), held only for map lookups and while
// writing one record to the store.

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/ids.h"
#include "drover/common/result.h"
#include "drover/common/thread_annotations.h"
#include "drover/model/identity.h"
#include "drover/store/store.h"

namespace drover::server {

class TokenRegistry {
 public:
  // `store` must outlive the registry. `job_key`: the secret that signs job tokens (any length;
  // LoadOrCreateJobKey).
  TokenRegistry(store::Store& store, std::string job_key);

  // The job key kept at `path`: read if the file exists, else 32 random bytes' hex written there
  // with mode 0600 (O_EXCL, so two servers never disagree). Empty `path`: a fresh random key
  // that lives as long as the process (tests, `drover run`). kUnavailable/kInternal on I/O
  // errors or a key file that is empty.
  static Result<std::string> LoadOrCreateJobKey(const std::string& path);

  // Reads every token record from the store (ControlPlane::Start). The store's errors.
  Status Load() EXCLUDES(mu_);

  struct Created {
    store::TokenRecord record;
    std::string token;  // in clear: the only time it exists
  };
  // Issues a token speaking for `identity` (its token_id and job are set here), expiring at
  // `expires_at` (0: never), and persists its record. kUnavailable if no randomness; the store's
  // errors (then nothing changed).
  Result<Created> Create(model::Identity identity, TimeMs expires_at, std::string created_by,
                         TimeMs now) EXCLUDES(mu_);

  // Whom `token` speaks for at `now`. kUnauthenticated: "token unknown", "token tok-… expired at
  // <RFC 3339>", "token tok-… was revoked at <RFC 3339>"; the token itself is never in a message.
  Result<model::Identity> Authenticate(std::string_view token, TimeMs now) const EXCLUDES(mu_);

  // Every token record, by id (revoked and expired ones too).
  std::vector<store::TokenRecord> List() const EXCLUDES(mu_);
  // When token `id` expires (0: never, or no such token: a job's token, an identity without one).
  TimeMs ExpiresAt(const std::string& id) const EXCLUDES(mu_);
  // Whether some admin token is neither revoked nor expired at `now`.
  bool HasLiveAdmin(TimeMs now) const EXCLUDES(mu_);

  // Revokes token `id` at `now` (it stops working at once) and returns its record. kNotFound for
  // an unknown id; revoking a revoked token again keeps its first time. The store's errors (then
  // nothing changed).
  Result<store::TokenRecord> Revoke(const std::string& id, TimeMs now) EXCLUDES(mu_);

  // The token of job `job`, for its workers' DROVER_TOKEN.
  std::string JobToken(JobId job) const;

 private:
  // The identity of a job token, or nullopt if `token` is not a valid one.
  std::optional<model::Identity> JobIdentity(std::string_view token) const;

  store::Store& store_;
  const std::string job_key_;
  mutable Mutex mu_;
  std::unordered_map<std::string, store::TokenRecord> by_hash_ GUARDED_BY(mu_);
  std::unordered_map<std::string, std::string> hash_of_id_ GUARDED_BY(mu_);  // id -> digest
};

// "2024-05-01T12:00:00Z": `at` in RFC 3339, UTC, to the second.
std::string FormatRfc3339(TimeMs at);

}  // namespace drover::server
