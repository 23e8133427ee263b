#pragma once

// AgentRegistry: who each remote node's agent is (docs/security.md, "Agents"), and what a lost
// node's agent must be told when it comes back.
//
// At an agent's first registration of a node name the server issues it a credential (NewCredential)
// which the agent sends as `Authorization: Bearer CREDENTIAL` on every call; the registry keeps
// only its SHA-256 digest, in memory and in the store (store::AgentRecord), so a restarted server
// still knows every node's credential. A node declared lost is recorded with when, why and the
// workers to stop there (its orphans) until its agent registers again, so a server restarted
// meanwhile still stops them. The optional join token (`drover server --join-token-file`) is
// kept as a digest too.
//
// What a registration may do is ControlPlane::RegisterRemoteNode's rule; the registry only
// answers who holds what. Thread-safe: its own mutex, never held while calling out except to
// the store (a leaf: it calls nothing back).

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/ids.h"
#include "drover/common/result.h"
#include "drover/common/thread_annotations.h"
#include "drover/model/job.h"
#include "drover/store/store.h"

namespace drover::server {

class AgentRegistry {
 public:
  // `store` must outlive the registry. `join_token` empty: none is required (trust on first use).
  AgentRegistry(store::Store& store, std::string_view join_token);

  // Reads every agent record from the store (ControlPlane::Start). The store's errors.
  Status Load() EXCLUDES(mu_);

  // The node whose credential `credential` is; nullopt for any other string.
  std::optional<NodeId> AgentOf(std::string_view credential) const EXCLUDES(mu_);
  // Whether `token` is the join token; true for any token when none is required.
  bool JoinTokenAccepted(std::string_view token) const;
  // Whether a credential was ever issued for `node` (and not replaced by none).
  bool HasCredential(const NodeId& node) const EXCLUDES(mu_);

  // Issues a fresh credential for `node`, replacing any earlier one (which stops working), and
  // persists its digest, keeping a lost record. Returns the credential, the only time it exists
  // in clear. kUnavailable if no randomness; the store's errors (then nothing changed).
  Result<std::string> Issue(const NodeId& node, TimeMs now) EXCLUDES(mu_);

  // Records `node` lost at `at` for `reason`, adding `orphans` to those already recorded, and
  // returns every recorded orphan. The record is kept in memory even when the store fails to
  // persist it (logged: a restart before the agent returns would then forget these orphans).
  std::vector<model::WorkerKey> RecordLost(const NodeId& node, TimeMs at, const std::string& reason,
                                           const std::vector<model::WorkerKey>& orphans)
      EXCLUDES(mu_);
  // The lost record of `node`; nullopt when it is not recorded lost.
  std::optional<store::AgentRecord::Lost> LostRecord(const NodeId& node) const EXCLUDES(mu_);
  // Forgets that `node` was lost (its orphans' stops are queued). The store's errors (the record
  // is cleared in memory regardless).
  Status ClearLost(const NodeId& node) EXCLUDES(mu_);
  // Every node recorded lost, by name.
  std::vector<store::AgentRecord> LostNodes() const EXCLUDES(mu_);

 private:
  store::Store& store_;
  const std::string join_token_hash_;  // empty: no join token required
  mutable Mutex mu_;
  std::map<NodeId, store::AgentRecord> records_ GUARDED_BY(mu_);
  std::map<std::string, NodeId> by_hash_ GUARDED_BY(mu_);  // credential digest -> node
};

}  // namespace drover::server
