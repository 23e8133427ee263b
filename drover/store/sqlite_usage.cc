#include "drover/store/sqlite_usage.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <string>

#include "drover/codec/json.h"
#include "drover/store/store_util.h"

namespace drover::store::sqlite {
namespace {

// Runs `stmt` (its parameters bound) to completion.
Status StepDone(Connection& db, sqlite3_stmt* stmt, std::string_view what) {
  const int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE) return SqliteError(db.db(), rc, what);
  return OkStatus();
}

// Decodes the JSON of column 0 of each row of `stmt` with `decode`.
template <typename T, typename Decode>
Result<std::vector<T>> ReadJsonRows(Connection& db, sqlite3_stmt* stmt, std::string_view what,
                                    Decode decode) {
  std::vector<T> out;
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    auto json = codec::ParseJson(ColumnText(stmt, 0));
    if (!json) return Internal(fmt::format("sqlite store: {}: {}", what, json.error().message));
    auto value = decode(*json);
    if (!value) return Internal(fmt::format("sqlite store: {}: {}", what, value.error().message));
    out.push_back(*std::move(value));
  }
  if (rc != SQLITE_DONE) return SqliteError(db.db(), rc, what);
  return out;
}

}  // namespace

Status PutUsage(Connection& db, const model::AttemptUsage& usage,
                const std::vector<model::UsageBucket>& buckets) {
  DROVER_RETURN_IF_ERROR(ValidateUsage(usage, buckets));
  return InTransaction(db, "BEGIN IMMEDIATE", "store usage", [&]() -> Status {
    {
      DROVER_ASSIGN_OR_RETURN(auto stmt,
                              db.Prepare("INSERT OR REPLACE INTO attempt_usage "
                                         "(job_id, attempt, usage) VALUES (?1, ?2, ?3)"));
      StatementScope scope(stmt);
      sqlite3_bind_int64(stmt, 1, usage.job.value());
      sqlite3_bind_int(stmt, 2, usage.attempt);
      const std::string text = codec::DumpJson(codec::ToJson(usage));  // bound, not copied
      BindText(stmt, 3, text);
      DROVER_RETURN_IF_ERROR(StepDone(db, stmt, "store attempt usage"));
    }
    DROVER_ASSIGN_OR_RETURN(
        auto stmt, db.Prepare("INSERT OR REPLACE INTO usage_buckets (job_id, attempt, start_at, "
                              "bucket) VALUES (?1, ?2, ?3, ?4)"));
    for (const model::UsageBucket& bucket : buckets) {
      StatementScope scope(stmt);
      sqlite3_bind_int64(stmt, 1, usage.job.value());
      sqlite3_bind_int(stmt, 2, usage.attempt);
      sqlite3_bind_int64(stmt, 3, bucket.start);
      const std::string text = codec::DumpJson(codec::ToJson(bucket));
      BindText(stmt, 4, text);
      DROVER_RETURN_IF_ERROR(StepDone(db, stmt, "store usage bucket"));
    }
    return OkStatus();
  });
}

Result<std::vector<model::AttemptUsage>> ListUsage(Connection& db, JobId job) {
  DROVER_ASSIGN_OR_RETURN(
      auto stmt, db.Prepare("SELECT usage FROM attempt_usage WHERE job_id = ?1 ORDER BY attempt"));
  StatementScope scope(stmt);
  sqlite3_bind_int64(stmt, 1, job.value());
  return ReadJsonRows<model::AttemptUsage>(db, stmt, "read attempt usage", [](const auto& json) {
    return codec::AttemptUsageFromJson(json);
  });
}

Result<std::vector<model::UsageBucket>> GetUsageSeries(Connection& db, JobId job, int attempt) {
  DROVER_ASSIGN_OR_RETURN(auto stmt, db.Prepare("SELECT bucket FROM usage_buckets WHERE job_id = "
                                                "?1 AND attempt = ?2 ORDER BY start_at"));
  StatementScope scope(stmt);
  sqlite3_bind_int64(stmt, 1, job.value());
  sqlite3_bind_int(stmt, 2, attempt);
  return ReadJsonRows<model::UsageBucket>(db, stmt, "read usage series", [](const auto& json) {
    return codec::UsageBucketFromJson(json);
  });
}

}  // namespace drover::store::sqlite
