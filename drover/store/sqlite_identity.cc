#include "drover/store/sqlite_identity.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <string>

#include "drover/store/store_codec.h"
#include "drover/store/store_util.h"

namespace drover::store::sqlite {
namespace {

Status InsertAudit(Connection& db, const std::vector<AuditRecord>& records) {
  DROVER_ASSIGN_OR_RETURN(
      auto stmt, db.Prepare("INSERT INTO audit (at, user, team, caller, action, target, job_id, "
                            "status, code, address) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
                            "?10)"));
  for (const AuditRecord& record : records) {
    StatementScope scope(stmt);
    sqlite3_bind_int64(stmt, 1, record.at);
    BindText(stmt, 2, record.user);
    BindText(stmt, 3, record.team);
    BindText(stmt, 4, record.caller);
    BindText(stmt, 5, record.action);
    BindText(stmt, 6, record.target);
    if (record.job) {
      sqlite3_bind_int64(stmt, 7, record.job->value());
    } else {
      sqlite3_bind_null(stmt, 7);
    }
    sqlite3_bind_int(stmt, 8, record.status);
    BindText(stmt, 9, record.code);
    BindText(stmt, 10, record.address);
    const int rc = sqlite3_step(stmt);
    if (rc != SQLITE_DONE) return SqliteError(db.db(), rc, "append audit record");
  }
  return OkStatus();
}

}  // namespace

Status PutToken(Connection& db, const TokenRecord& token) {
  DROVER_RETURN_IF_ERROR(ValidateToken(token));
  const std::string queues = EncodeQueues(token.identity.queues);
  DROVER_ASSIGN_OR_RETURN(
      auto stmt,
      db.Prepare("INSERT OR REPLACE INTO tokens (id, hash, user, team, role, queues, created_by, "
                 "created_at, expires_at, revoked_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
                 "?9, ?10)"));
  StatementScope scope(stmt);
  BindText(stmt, 1, token.id);
  BindText(stmt, 2, token.hash);
  BindText(stmt, 3, token.identity.user);
  BindText(stmt, 4, token.identity.team);
  BindText(stmt, 5, model::kRoleNames.Name(token.identity.role));
  BindText(stmt, 6, queues);
  BindText(stmt, 7, token.created_by);
  sqlite3_bind_int64(stmt, 8, token.created_at);
  sqlite3_bind_int64(stmt, 9, token.expires_at);
  sqlite3_bind_int64(stmt, 10, token.revoked_at);
  const int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE) return SqliteError(db.db(), rc, fmt::format("store token {}", token.id));
  return OkStatus();
}

Result<std::vector<TokenRecord>> ListTokens(Connection& db) {
  DROVER_ASSIGN_OR_RETURN(
      auto stmt, db.Prepare("SELECT id, hash, user, team, role, queues, created_by, created_at, "
                            "expires_at, revoked_at FROM tokens ORDER BY id"));
  StatementScope scope(stmt);
  std::vector<TokenRecord> out;
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    TokenRecord token;
    token.id = ColumnText(stmt, 0);
    token.hash = ColumnText(stmt, 1);
    token.identity.user = ColumnText(stmt, 2);
    token.identity.team = ColumnText(stmt, 3);
    const std::string role = ColumnText(stmt, 4);
    const auto parsed_role = model::kRoleNames.Parse(role);
    if (!parsed_role) {
      return Internal(fmt::format("sqlite store: token {}: unknown role '{}'", token.id, role));
    }
    token.identity.role = *parsed_role;
    DROVER_ASSIGN_OR_RETURN(token.identity.queues,
                            DecodeQueues("sqlite", token.id, ColumnText(stmt, 5)));
    token.identity.token_id = token.id;
    token.created_by = ColumnText(stmt, 6);
    token.created_at = sqlite3_column_int64(stmt, 7);
    token.expires_at = sqlite3_column_int64(stmt, 8);
    token.revoked_at = sqlite3_column_int64(stmt, 9);
    out.push_back(std::move(token));
  }
  if (rc != SQLITE_DONE) return SqliteError(db.db(), rc, "list tokens");
  return out;
}

Status AppendAudit(Connection& db, const std::vector<AuditRecord>& records) {
  if (records.empty()) return OkStatus();
  return InTransaction(db, "BEGIN IMMEDIATE", "append audit records",
                       [&] { return InsertAudit(db, records); });
}

Result<std::vector<AuditRecord>> ListAudit(Connection& db, const AuditFilter& filter) {
  DROVER_RETURN_IF_ERROR(ValidateFilter(filter));
  // Newest first so that LIMIT keeps the newest; reversed below into seq order.
  DROVER_ASSIGN_OR_RETURN(
      auto stmt,
      db.Prepare("SELECT seq, at, user, team, caller, action, target, job_id, status, code, "
                 "address FROM audit WHERE at >= ?1 AND (?2 = '' OR user = ?2) AND "
                 "(?3 = '' OR team = ?3) AND (?4 IS NULL OR job_id = ?4) ORDER BY seq DESC "
                 "LIMIT ?5"));
  StatementScope scope(stmt);
  sqlite3_bind_int64(stmt, 1, filter.since);
  BindText(stmt, 2, filter.user);
  BindText(stmt, 3, filter.team);
  if (filter.job) {
    sqlite3_bind_int64(stmt, 4, filter.job->value());
  } else {
    sqlite3_bind_null(stmt, 4);
  }
  sqlite3_bind_int64(stmt, 5, filter.limit > 0 ? filter.limit : -1);
  std::vector<AuditRecord> out;
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    AuditRecord record;
    record.seq = sqlite3_column_int64(stmt, 0);
    record.at = sqlite3_column_int64(stmt, 1);
    record.user = ColumnText(stmt, 2);
    record.team = ColumnText(stmt, 3);
    record.caller = ColumnText(stmt, 4);
    record.action = ColumnText(stmt, 5);
    record.target = ColumnText(stmt, 6);
    if (sqlite3_column_type(stmt, 7) != SQLITE_NULL) {
      record.job = JobId(sqlite3_column_int64(stmt, 7));
    }
    record.status = sqlite3_column_int(stmt, 8);
    record.code = ColumnText(stmt, 9);
    record.address = ColumnText(stmt, 10);
    out.push_back(std::move(record));
  }
  if (rc != SQLITE_DONE) return SqliteError(db.db(), rc, "list audit records");
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace drover::store::sqlite
