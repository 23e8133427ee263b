#pragma once

// The SQLite store's fair-share history (store.h PutFairShare, GetFairShare; the tables of schema
// 7), kept apart from sqlite_store.cc so that each file stays readable. Internal to
// drover/store: SqliteStore calls these with its writer (under its writer mutex) or a reader
// connection; they are not thread-safe on their own.

#include "drover/common/result.h"
#include "drover/model/fair_share.h"
#include "drover/store/sqlite_connection.h"

namespace drover::store::sqlite {

// Replaces the saved history in one transaction. kInvalidArgument as Store::PutFairShare.
Status PutFairShare(Connection& db, const model::FairShareHistory& history);
// The saved history, entries sorted by (queue, user); empty if none was saved.
Result<model::FairShareHistory> GetFairShare(Connection& db);

}  // namespace drover::store::sqlite
