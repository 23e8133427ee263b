#pragma once

// The SQLite plumbing the SQLite store runs on: SqliteError (result code -> Error), Connection
// (one handle with a prepared-statement cache), StatementScope, BindText/ColumnText, StepOnce and
// InTransaction, the reader ConnectionPool and the WAL Checkpointer. Internal to drover/store
// (sqlite_store.cc); each class states its thread-safety.

#include <fmt/format.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "drover/common/result.h"
#include "drover/store/connection_pool.h"

namespace drover::store::sqlite {

// Maps a SQLite result code to a Drover error, with SQLite's message for context.
inline tl::unexpected<Error> SqliteError(sqlite3* db, int rc, std::string_view what) {
  ErrorCode code = ErrorCode::kInternal;
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_PROTOCOL:
    case SQLITE_READONLY:
      code = ErrorCode::kUnavailable;
      break;
    case SQLITE_FULL:
      code = ErrorCode::kResourceExhausted;
      break;
    case SQLITE_NOTADB:
      code = ErrorCode::kFailedPrecondition;
      break;
    default:
      break;
  }
  const char* detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  return MakeError(code, fmt::format("sqlite: {}: {}", what, detail));
}

// One SQLite connection with a cache of prepared statements keyed by SQL text. Not
// thread-safe: the owner serializes use (the writer mutex, or the reader pool's borrow).
class Connection {
 public:
  static Result<std::unique_ptr<Connection>> Open(const std::string& path, bool read_only,
                                                  int busy_timeout_ms) {
    sqlite3* db = nullptr;
    const int flags =
        (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
        SQLITE_OPEN_NOMUTEX;
    const int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
    // sqlite3_open_v2 allocates a handle even on failure; the unique_ptr closes it.
    auto connection = std::unique_ptr<Connection>(new Connection(db));
    if (rc != SQLITE_OK) return SqliteError(db, rc, fmt::format("open {}", path));
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, busy_timeout_ms);
    return connection;
  }

  ~Connection() {
    for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
    sqlite3_close_v2(db_);
  }

  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* db() const { return db_; }

  // The cached prepared statement for `sql`, preparing it on first use. The caller must reset
  // it after use (StatementScope does).
  Result<sqlite3_stmt*> Prepare(const std::string& sql) {
    auto it = cache_.find(sql);
    if (it != cache_.end()) return it->second;
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                                      SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return SqliteError(db_, rc, "prepare");
    cache_.emplace(sql, stmt);
    return stmt;
  }

  // Runs one or more statements that return no rows (not cached: for open-time work).
  Status Exec(const std::string& sql, std::string_view what) {
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) return SqliteError(db_, rc, what);
    return OkStatus();
  }

  // The single integer a PRAGMA or query returns.
  Result<std::int64_t> QueryInt(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr);
    if (rc != SQLITE_OK) return SqliteError(db_, rc, sql);
    rc = sqlite3_step(stmt);
    const std::int64_t value = rc == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : 0;
    sqlite3_finalize(stmt);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return SqliteError(db_, rc, sql);
    return value;
  }

  // The single text a PRAGMA or query returns ("" if none).
  Result<std::string> QueryText(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr);
    if (rc != SQLITE_OK) return SqliteError(db_, rc, sql);
    rc = sqlite3_step(stmt);
    std::string value;
    if (rc == SQLITE_ROW) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
      if (text != nullptr) value = text;
    }
    sqlite3_finalize(stmt);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return SqliteError(db_, rc, sql);
    return value;
  }

 private:
  explicit Connection(sqlite3* db) : db_(db) {}

  sqlite3* db_;
  std::map<std::string, sqlite3_stmt*> cache_;
};

// Resets and unbinds a cached statement when the scope ends, so it is ready for reuse and
// does not hold a read transaction open.
class StatementScope {
 public:
  explicit StatementScope(sqlite3_stmt* stmt) : stmt_(stmt) {}
  ~StatementScope() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  StatementScope(const StatementScope&) = delete;
  StatementScope& operator=(const StatementScope&) = delete;

 private:
  sqlite3_stmt* stmt_;
};

// Binds `text` without copying (SQLITE_STATIC): every caller keeps the bound string alive until
// the statement is reset. Never binds NULL, even for a null view.
inline int BindText(sqlite3_stmt* stmt, int index, std::string_view text) {
  return sqlite3_bind_text(stmt, index, text.empty() ? "" : text.data(),
                           static_cast<int>(text.size()), SQLITE_STATIC);
}

inline std::string ColumnText(sqlite3_stmt* stmt, int column) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, column));
  return text == nullptr
             ? std::string()
             : std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt, column)));
}

// Runs `sql`, one statement that returns no rows (prepared through the cache), on `db`.
inline Status StepOnce(Connection& db, const std::string& sql, std::string_view what) {
  DROVER_ASSIGN_OR_RETURN(auto stmt, db.Prepare(sql));
  StatementScope scope(stmt);
  const int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE) return SqliteError(db.db(), rc, what);
  return OkStatus();
}

// Runs `body` (a callable returning Status) between `begin` ("BEGIN" or "BEGIN IMMEDIATE") and
// COMMIT; rolls back if either fails. `what` names the work in errors.
template <typename Body>
Status InTransaction(Connection& db, const std::string& begin, std::string_view what, Body body) {
  DROVER_RETURN_IF_ERROR(StepOnce(db, begin, what));
  Status status = body();
  if (status) status = StepOnce(db, "COMMIT", what);
  if (!status && !sqlite3_get_autocommit(db.db())) {
    sqlite3_exec(db.db(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
  return status;
}

// The reader pool (connection_pool.h).
using ConnectionPool = store::ConnectionPool<Connection>;

// Runs WAL checkpoints off the commit path. By default SQLite checkpoints inside the COMMIT that
// grows the WAL past 1000 pages, and a checkpoint fsyncs the WAL and the database: an Apply that
// happens to trigger it takes milliseconds instead of tens of microseconds. Here the writer's WAL
// hook (OnCommit) only signals, and a thread runs PASSIVE checkpoints on its own connection;
// PASSIVE never waits for, nor blocks, the writer or readers. Every commit still leaves the
// database consistent: checkpoint timing affects only WAL size and power-loss durability.
class Checkpointer {
 public:
  Checkpointer(std::unique_ptr<Connection> connection, int wal_pages)
      : connection_(std::move(connection)), wal_pages_(wal_pages), thread_([this] { Run(); }) {}

  ~Checkpointer() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }

  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Called on the writer after each commit with the WAL's size in pages.
  void OnCommit(sqlite3* writer, int pages) {
    dirty_.store(true, std::memory_order_relaxed);
    if (pages >= 16 * wal_pages_) {
      // The background checkpoints are not keeping up (a long reader pins old frames): let
      // the writer do one so the WAL does not grow without bound.
      sqlite3_wal_checkpoint_v2(writer, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    } else if (pages >= wal_pages_) {
      {
        std::lock_guard lock(mutex_);
        requested_ = true;
      }
      wake_.notify_one();
    }
  }

 private:
  void Run() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
      // Checkpoint when asked, and once a second after any commit so an idle WAL drains.
      wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_ || requested_; });
      if (stop_) break;
      requested_ = false;
      if (!dirty_.exchange(false, std::memory_order_relaxed)) continue;
      lock.unlock();
      sqlite3_wal_checkpoint_v2(connection_->db(), nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr,
                                nullptr);
      lock.lock();
    }
  }

  std::unique_ptr<Connection> connection_;
  const int wal_pages_;
  std::atomic<bool> dirty_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool requested_ = false;
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members it uses are initialized
};

}  // namespace drover::store::sqlite
