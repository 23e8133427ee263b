// ControlPlane: API tokens and the audit log (control_plane.h, "Identity"). Nothing here takes
// mu_: the token registry and the audit log are thread-safe themselves.

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "drover/os/files.h"
#include "drover/server/control_plane.h"

namespace drover::server {

Result<model::Identity> ControlPlane::Authenticate(std::string_view token) const {
  return tokens_.Authenticate(token, clock_.Now());
}

void ControlPlane::Audit(store::AuditRecord record) { audit_.Append(std::move(record)); }

Result<api::CreatedToken> ControlPlane::CreateToken(const model::Identity& identity,
                                                    DurationMs expires_in_ms,
                                                    const model::Identity& caller) {
  const TimeMs now = clock_.Now();
  DROVER_ASSIGN_OR_RETURN(TokenRegistry::Created created,
                          tokens_.Create(identity, expires_in_ms > 0 ? now + expires_in_ms : 0,
                                         model::Describe(caller), now));
  spdlog::info("token {} created for {} by {}", created.record.id,
               model::Describe(created.record.identity), created.record.created_by);
  return api::CreatedToken{std::move(created.record), std::move(created.token)};
}

std::vector<store::TokenRecord> ControlPlane::Tokens() const { return tokens_.List(); }

Result<store::TokenRecord> ControlPlane::RevokeToken(const std::string& id) {
  DROVER_ASSIGN_OR_RETURN(store::TokenRecord record, tokens_.Revoke(id, clock_.Now()));
  events_.EndStreamsOf(record.id);
  spdlog::info("token {} of {} revoked", record.id, model::Describe(record.identity));
  return record;
}

TimeMs ControlPlane::TokenExpiresAt(const std::string& token_id) const {
  return tokens_.ExpiresAt(token_id);
}

Result<std::vector<store::AuditRecord>> ControlPlane::ListAudit(
    const store::AuditFilter& filter) const {
  static_cast<void>(audit_.Flush());  // a failure is logged there; the listing still answers
  return store_->ListAudit(filter);
}

Result<bool> ControlPlane::EnsureAdminToken(const std::string& path, const std::string& user) {
  const TimeMs now = clock_.Now();
  if (tokens_.HasLiveAdmin(now)) return false;
  DROVER_ASSIGN_OR_RETURN(TokenRegistry::Created created,
                          tokens_.Create(model::AdminIdentity(user), /*expires_at=*/0,
                                         "drover server (first start)", now));
  Status written =
      os::WriteFileAtomically(path, created.token + "\n", os::Durability::kSynced, 0600);
  if (!written) {
    // Nobody holds it: revoke it so that a restart tries again.
    static_cast<void>(tokens_.Revoke(created.record.id, now));
    return tl::unexpected(written.error());
  }
  spdlog::info("admin token {} for {} written to {} (mode 0600); the CLI reads it from there",
               created.record.id, user, path);
  return true;
}

}  // namespace drover::server
