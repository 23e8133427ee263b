#include "drover/server/agent_registry.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "drover/server/secret.h"

namespace drover::server {

AgentRegistry::AgentRegistry(store::Store& store, std::string_view join_token)
    : store_(store), join_token_hash_(join_token.empty() ? "" : HashSecret(join_token)) {}

Status AgentRegistry::Load() {
  DROVER_ASSIGN_OR_RETURN(std::vector<store::AgentRecord> stored, store_.ListAgents());
  MutexLock lock(mu_);
  records_.clear();
  by_hash_.clear();
  for (store::AgentRecord& record : stored) {
    if (!record.credential_hash.empty()) by_hash_[record.credential_hash] = record.node;
    NodeId node = record.node;
    records_.insert_or_assign(std::move(node), std::move(record));
  }
  return OkStatus();
}

std::optional<NodeId> AgentRegistry::AgentOf(std::string_view credential) const {
  if (credential.empty()) return std::nullopt;
  const std::string hash = HashSecret(credential);
  MutexLock lock(mu_);
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return std::nullopt;
  return it->second;
}

bool AgentRegistry::JoinTokenAccepted(std::string_view token) const {
  return join_token_hash_.empty() || SecretsEqual(HashSecret(token), join_token_hash_);
}

bool AgentRegistry::HasCredential(const NodeId& node) const {
  MutexLock lock(mu_);
  auto it = records_.find(node);
  return it != records_.end() && !it->second.credential_hash.empty();
}

Result<std::string> AgentRegistry::Issue(const NodeId& node, TimeMs now) {
  DROVER_ASSIGN_OR_RETURN(std::string credential, NewCredential());
  MutexLock lock(mu_);
  store::AgentRecord record;
  if (auto it = records_.find(node); it != records_.end()) record = it->second;
  record.node = node;
  const std::string old_hash = record.credential_hash;
  record.credential_hash = HashSecret(credential);
  record.issued_at = now;
  DROVER_RETURN_IF_ERROR(store_.PutAgent(record));
  if (!old_hash.empty()) by_hash_.erase(old_hash);
  by_hash_[record.credential_hash] = node;
  records_.insert_or_assign(node, std::move(record));
  return credential;
}

std::vector<model::WorkerKey> AgentRegistry::RecordLost(
    const NodeId& node, TimeMs at, const std::string& reason,
    const std::vector<model::WorkerKey>& orphans) {
  MutexLock lock(mu_);
  store::AgentRecord& record = records_[node];
  record.node = node;
  std::vector<model::WorkerKey> all =
      record.lost ? record.lost->orphans : std::vector<model::WorkerKey>{};
  for (const model::WorkerKey& key : orphans) {
    if (std::find(all.begin(), all.end(), key) == all.end()) all.push_back(key);
  }
  record.lost = store::AgentRecord::Lost{at, reason, all};
  if (Status stored = store_.PutAgent(record); !stored) {
    spdlog::error(
        "cannot record that node {} is lost: {}; a restart before its agent returns forgets the "
        "{} worker(s) to stop there",
        node.value(), stored.error().ToString(), all.size());
  }
  return all;
}

std::optional<store::AgentRecord::Lost> AgentRegistry::LostRecord(const NodeId& node) const {
  MutexLock lock(mu_);
  auto it = records_.find(node);
  if (it == records_.end()) return std::nullopt;
  return it->second.lost;
}

Status AgentRegistry::ClearLost(const NodeId& node) {
  MutexLock lock(mu_);
  auto it = records_.find(node);
  if (it == records_.end() || !it->second.lost) return OkStatus();
  it->second.lost.reset();
  return store_.PutAgent(it->second);
}

std::vector<store::AgentRecord> AgentRegistry::LostNodes() const {
  MutexLock lock(mu_);
  std::vector<store::AgentRecord> out;
  for (const auto& [node, record] : records_) {
    if (record.lost) out.push_back(record);
  }
  return out;
}

}  // namespace drover::server
