#include "drover/server/token_registry.h"

#include <fcntl.h>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <fstream>
#include <utility>

#include "drover/server/secret.h"

namespace drover::server {
namespace {

constexpr std::string_view kTokenPrefix = "drv_";
constexpr std::string_view kJobTokenPrefix = "drj_";
constexpr std::size_t kIdHexDigits = 12;

}  // namespace

std::string FormatRfc3339(TimeMs at) {
  const std::time_t seconds = static_cast<std::time_t>(at / kMillisPerSecond);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", utc);
}

TokenRegistry::TokenRegistry(store::Store& store, std::string job_key)
    : store_(store), job_key_(std::move(job_key)) {}

Result<std::string> TokenRegistry::LoadOrCreateJobKey(const std::string& path) {
  if (path.empty()) return NewCredential();
  return LoadOrCreateSecretFile(path);
}

Status TokenRegistry::Load() {
  DROVER_ASSIGN_OR_RETURN(std::vector<store::TokenRecord> stored, store_.ListTokens());
  MutexLock lock(mu_);
  by_hash_.clear();
  hash_of_id_.clear();
  for (store::TokenRecord& record : stored) {
    hash_of_id_[record.id] = record.hash;
    std::string hash = record.hash;
    by_hash_.insert_or_assign(std::move(hash), std::move(record));
  }
  return OkStatus();
}

Result<TokenRegistry::Created> TokenRegistry::Create(model::Identity identity, TimeMs expires_at,
                                                     std::string created_by, TimeMs now) {
  DROVER_ASSIGN_OR_RETURN(std::string secret, NewCredential());
  DROVER_ASSIGN_OR_RETURN(std::string id_bytes, NewCredential());
  Created created;
  created.token = std::string(kTokenPrefix) + secret;
  store::TokenRecord& record = created.record;
  record.id = "tok-" + id_bytes.substr(0, kIdHexDigits);
  record.hash = HashSecret(created.token);
  identity.token_id = record.id;
  identity.job.reset();
  record.identity = std::move(identity);
  record.created_by = std::move(created_by);
  record.created_at = now;
  record.expires_at = expires_at;
  MutexLock lock(mu_);
  if (hash_of_id_.contains(record.id)) {
    return Internal("token ids collided; create the token again");  // 1 in 2^48 per pair
  }
  DROVER_RETURN_IF_ERROR(store_.PutToken(record));
  hash_of_id_[record.id] = record.hash;
  by_hash_[record.hash] = record;
  return created;
}

Result<model::Identity> TokenRegistry::Authenticate(std::string_view token, TimeMs now) const {
  if (token.starts_with(kJobTokenPrefix)) {
    if (auto identity = JobIdentity(token)) return *identity;
    return Unauthenticated("token unknown");
  }
  const std::string hash = HashSecret(token);
  MutexLock lock(mu_);
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end() || !SecretsEqual(it->first, hash)) {
    return Unauthenticated("token unknown");
  }
  const store::TokenRecord& record = it->second;
  if (record.revoked_at != 0) {
    return Unauthenticated(
        fmt::format("token {} was revoked at {}", record.id, FormatRfc3339(record.revoked_at)));
  }
  if (record.expires_at != 0 && now >= record.expires_at) {
    return Unauthenticated(
        fmt::format("token {} expired at {}", record.id, FormatRfc3339(record.expires_at)));
  }
  return record.identity;
}

std::vector<store::TokenRecord> TokenRegistry::List() const {
  std::vector<store::TokenRecord> out;
  {
    MutexLock lock(mu_);
    out.reserve(by_hash_.size());
    for (const auto& [hash, record] : by_hash_) out.push_back(record);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return out;
}

bool TokenRegistry::HasLiveAdmin(TimeMs now) const {
  MutexLock lock(mu_);
  for (const auto& [hash, record] : by_hash_) {
    if (record.identity.role == model::Role::kAdmin && record.revoked_at == 0 &&
        (record.expires_at == 0 || now < record.expires_at)) {
      return true;
    }
  }
  return false;
}

TimeMs TokenRegistry::ExpiresAt(const std::string& id) const {
  MutexLock lock(mu_);
  auto hash = hash_of_id_.find(id);
  return hash == hash_of_id_.end() ? 0 : by_hash_.at(hash->second).expires_at;
}

Result<store::TokenRecord> TokenRegistry::Revoke(const std::string& id, TimeMs now) {
  MutexLock lock(mu_);
  auto hash = hash_of_id_.find(id);
  if (hash == hash_of_id_.end()) return NotFound(fmt::format("token {} not found", id));
  store::TokenRecord record = by_hash_.at(hash->second);
  if (record.revoked_at != 0) return record;
  record.revoked_at = now;
  DROVER_RETURN_IF_ERROR(store_.PutToken(record));
  by_hash_[record.hash] = record;
  return record;
}

std::string TokenRegistry::JobToken(JobId job) const {
  const std::string id = std::to_string(job.value());
  return fmt::format("{}{}_{}", kJobTokenPrefix, id, HmacSecret(job_key_, id));
}

std::optional<model::Identity> TokenRegistry::JobIdentity(std::string_view token) const {
  const std::string_view rest = token.substr(kJobTokenPrefix.size());
  const std::size_t separator = rest.find('_');
  if (separator == std::string_view::npos) return std::nullopt;
  std::int64_t id = 0;
  const std::string_view digits = rest.substr(0, separator);
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
  if (error != std::errc() || end != digits.data() + digits.size() || id < 1) return std::nullopt;
  const std::string expected = HmacSecret(job_key_, digits);
  if (expected.empty() || !SecretsEqual(rest.substr(separator + 1), expected)) return std::nullopt;
  model::Identity identity;
  identity.role = model::Role::kViewer;
  identity.job = JobId(id);
  return identity;
}

}  // namespace drover::server
