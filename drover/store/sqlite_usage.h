#pragma once

// The SQLite store's attempt usage (store.h PutUsage, ListUsage, GetUsageSeries; the tables of
// schema 10), kept apart from sqlite_store.cc so that each file stays readable. Internal to
// drover/store: SqliteStore calls these with its writer (under its writer mutex) or a reader
// connection; they are not thread-safe on their own.

#include <vector>

#include "drover/common/result.h"
#include "drover/model/usage.h"
#include "drover/store/sqlite_connection.h"

namespace drover::store::sqlite {

// One transaction. kInvalidArgument as Store::PutUsage.
Status PutUsage(Connection& db, const model::AttemptUsage& usage,
                const std::vector<model::UsageBucket>& buckets);
Result<std::vector<model::AttemptUsage>> ListUsage(Connection& db, JobId job);
Result<std::vector<model::UsageBucket>> GetUsageSeries(Connection& db, JobId job, int attempt);

}  // namespace drover::store::sqlite
