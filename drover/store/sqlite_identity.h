#pragma once

// The SQLite store's API tokens and audit log (store.h TokenRecord, AuditRecord; tables of schema
// 6), kept apart from sqlite_store.cc so that each file stays readable. Internal to drover/store:
// SqliteStore calls these with its writer (under its writer mutex) or a reader connection; they
// are not thread-safe on their own.

#include <vector>

#include "drover/common/result.h"
#include "drover/store/sqlite_connection.h"
#include "drover/store/store.h"

namespace drover::store::sqlite {

// Inserts or replaces the token of the same id. kInvalidArgument for an empty id or hash.
Status PutToken(Connection& db, const TokenRecord& token);
// Every token, by id. kInternal if a stored row does not decode.
Result<std::vector<TokenRecord>> ListTokens(Connection& db);

// Appends `records` in one transaction, each given the next seq.
Status AppendAudit(Connection& db, const std::vector<AuditRecord>& records);
// The records matching `filter`, in seq order (the newest filter.limit when limited).
Result<std::vector<AuditRecord>> ListAudit(Connection& db, const AuditFilter& filter);

}  // namespace drover::store::sqlite
