#include "drover/store/sqlite_fair_share.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <string>
#include <string_view>

#include "drover/store/store_util.h"

namespace drover::store::sqlite {
namespace {

// The statements of PutFairShare after BEGIN.
Status ReplaceFairShare(Connection& db, const model::FairShareHistory& history) {
  DROVER_RETURN_IF_ERROR(StepOnce(db, "DELETE FROM fair_share", "clear fair share"));
  DROVER_RETURN_IF_ERROR(StepOnce(db, "DELETE FROM fair_share_clock", "clear fair share clock"));
  if (history.advanced_at) {
    DROVER_ASSIGN_OR_RETURN(
        auto stmt, db.Prepare("INSERT INTO fair_share_clock (id, advanced_at) VALUES (1, ?1)"));
    StatementScope scope(stmt);
    sqlite3_bind_int64(stmt, 1, *history.advanced_at);
    const int rc = sqlite3_step(stmt);
    if (rc != SQLITE_DONE) return SqliteError(db.db(), rc, "store fair share clock");
  }
  DROVER_ASSIGN_OR_RETURN(
      auto stmt,
      db.Prepare("INSERT INTO fair_share (queue, user, resource, usage) VALUES (?1, ?2, ?3, ?4)"));
  for (const model::FairShareHistory::Entry& entry : history.entries) {
    for (const auto& [resource, amount] : entry.usage) {
      StatementScope scope(stmt);
      BindText(stmt, 1, entry.queue);
      BindText(stmt, 2, entry.user);
      BindText(stmt, 3, resource);
      sqlite3_bind_double(stmt, 4, amount);
      const int rc = sqlite3_step(stmt);
      if (rc != SQLITE_DONE) {
        return SqliteError(db.db(), rc, fmt::format("store fair share of {}", entry.queue));
      }
    }
  }
  return OkStatus();
}

}  // namespace

Status PutFairShare(Connection& db, const model::FairShareHistory& history) {
  DROVER_RETURN_IF_ERROR(ValidateFairShare(history));
  return InTransaction(db, "BEGIN IMMEDIATE", "store fair share",
                       [&] { return ReplaceFairShare(db, history); });
}

namespace {

// The reads of GetFairShare, inside its read transaction.
Result<model::FairShareHistory> ReadFairShare(Connection& db) {
  model::FairShareHistory out;
  {
    DROVER_ASSIGN_OR_RETURN(auto stmt,
                            db.Prepare("SELECT advanced_at FROM fair_share_clock WHERE id = 1"));
    StatementScope scope(stmt);
    const int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
      out.advanced_at = sqlite3_column_int64(stmt, 0);
    } else if (rc != SQLITE_DONE) {
      return SqliteError(db.db(), rc, "read fair share clock");
    }
  }
  DROVER_ASSIGN_OR_RETURN(auto stmt, db.Prepare("SELECT queue, user, resource, usage FROM "
                                                "fair_share ORDER BY queue, user, resource"));
  StatementScope scope(stmt);
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    std::string queue = ColumnText(stmt, 0);
    std::string user = ColumnText(stmt, 1);
    if (out.entries.empty() || out.entries.back().queue != queue ||
        out.entries.back().user != user) {
      out.entries.push_back({std::move(queue), std::move(user), {}});
    }
    out.entries.back().usage[ColumnText(stmt, 2)] = sqlite3_column_double(stmt, 3);
  }
  if (rc != SQLITE_DONE) return SqliteError(db.db(), rc, "read fair share");
  return out;
}

}  // namespace

Result<model::FairShareHistory> GetFairShare(Connection& db) {
  // Two statements: one read transaction makes them one snapshot.
  model::FairShareHistory out;
  DROVER_RETURN_IF_ERROR(InTransaction(db, "BEGIN", "read fair share", [&]() -> Status {
    DROVER_ASSIGN_OR_RETURN(out, ReadFairShare(db));
    return OkStatus();
  }));
  return out;
}

}  // namespace drover::store::sqlite
