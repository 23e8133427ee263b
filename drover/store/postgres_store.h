#pragma once

// The PostgreSQL Store (docs/operations.md "PostgreSQL store"): the same contract as the SQLite
// store (store.h), on a PostgreSQL database shared by the control-plane servers of a site.
//
// Layout: the logical schema of SQLite schema 10 (sqlite_store.h) in natural PostgreSQL types:
// BIGINT times (ms since the epoch) and ids, identity columns for the append-only logs'
// `seq`, DOUBLE PRECISION usage, TEXT for names and for the JSON documents (job snapshots,
// decisions, specs; kept as the codec wrote them, byte for byte: jsonb would reorder keys and
// refuses the \u0000 escape). Text compared or ordered by the store is COLLATE "C", so that
// lists come back in byte order, as from SQLite, whatever the database's locale. The column
// SQLite calls `user` is `user_name` (a reserved word in PostgreSQL). Table `drover_schema`
// holds the schema version; migrations run in one transaction under an advisory lock, so that
// servers started together migrate once.
//
// Writes: every write (Apply, PutCron, DeleteCron, PutAgent, PutToken, AppendAudit,
// PutFairShare, PutUsage) runs through one function, PostgresStore::Write: one transaction on the
// writer connection under the writer mutex, after the leader's epoch check (WriteFence) in the
// same transaction.
//
// Text: PostgreSQL text cannot hold a NUL byte or invalid UTF-8; a write of such a string is
// refused with kInvalidArgument naming the field, and writes nothing.
//
// Durability: a write is acknowledged after PostgreSQL's COMMIT returns, so it is as durable as
// the server's settings make it (synchronous_commit, fsync, replication). A connection that
// breaks fails a read with kUnavailable and is reconnected by the next call; a write that found no
// database before its COMMIT is tried again for a while (PostgresStoreOptions::write_retry_ms); a
// COMMIT whose outcome is unknown is kUnavailable (the caller must not assume either outcome).
//
// Thread-safety: every method may be called from any thread. Writes are serialized on one
// writer connection; reads borrow one of `readers` connections and run as one statement (one
// snapshot), or in one REPEATABLE READ transaction where they take two (GetFairShare).

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "drover/common/clock.h"
#include "drover/common/result.h"
#include "drover/store/store.h"

namespace drover::store {

// The PostgreSQL schema version this build writes; OpenPostgresStore refuses a database with a
// higher one. 1: the logical schema of SQLite schema 9; 2: of SQLite schema 10 (attempts'
// usage); 3: the leader lease (postgres_lease.h); 4: services.
inline constexpr std::int64_t kPostgresSchemaVersion = 4;

// The fence on a leader's writes (docs/architecture.md "Leader lease"): the epoch of the lease
// (postgres_lease.h) this server holds. Every write then checks, in its own transaction and
// under a share lock on the lease row, that the lease still has this epoch, so that it commits
// before any takeover or not at all; a write refused so is kAborted ("fenced: ...") and calls
// `on_refused` (from the writing thread, once per refused write), which must stop the server from
// acting as the leader. Thread-safety: every method may be called from any thread.
class WriteFence {
 public:
  // Writes are not fenced: one server alone on the database, tools, tests.
  static constexpr std::int64_t kUnfenced = 0;
  // Not the leader (yet): every write is refused (kFailedPrecondition) without calling
  // on_refused.
  static constexpr std::int64_t kNotLeader = -1;

  explicit WriteFence(std::int64_t epoch = kUnfenced,
                      std::function<void(const Error&)> on_refused = nullptr)
      : epoch_(epoch), on_refused_(std::move(on_refused)) {}

  // The epoch writes carry from now on (kUnfenced, kNotLeader or a lease's epoch > 0).
  void Set(std::int64_t epoch) { epoch_.store(epoch); }
  std::int64_t epoch() const { return epoch_.load(); }
  void Refused(const Error& error) const {
    if (on_refused_) on_refused_(error);
  }

 private:
  std::atomic<std::int64_t> epoch_;
  const std::function<void(const Error&)> on_refused_;
};

struct PostgresStoreOptions {
  // Read connections; concurrent reads beyond this many wait for one to be free. Default 4, as
  // the SQLite store's readers. Each is a PostgreSQL backend (with the writer, readers + 1).
  int readers = 4;
  // The fence every write passes (WriteFence); null: writes are not fenced.
  std::shared_ptr<const WriteFence> fence;
  // How long a write that found no database before its COMMIT (so committed nothing: a restart
  // of PostgreSQL, a broken connection) is tried again on a new connection, with pauses from
  // 50 ms doubling to 1 s, before it fails with kUnavailable. Meanwhile the write waits (and with
  // it the control plane's step). A failure during the COMMIT is never retried (its outcome is
  // unknown). 0: not retried.
  DurationMs write_retry_ms = 30 * kMillisPerSecond;
};

// `connection` with its password replaced by "***", in both libpq forms: the URI
// ("postgres://user:secret@host/db?password=secret") and key=value ("password=secret host=h").
// Everything else is kept, so that an operator can still tell which server was meant.
std::string RedactConnectionString(std::string_view connection);

// True if `store_flag` names a PostgreSQL database (a "postgres://" or "postgresql://" URI).
bool IsPostgresUri(const std::string& store_flag);

// Connects to the database named by `connection` (a libpq connection string or URI), migrating
// its schema to kPostgresSchemaVersion. Errors: kUnavailable if the database cannot be reached
// (the message shows the connection string without its password); kFailedPrecondition if the
// database holds a newer schema or is not a Drover database; kInvalidArgument for bad options.
Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& connection,
                                                 const PostgresStoreOptions& options = {});

}  // namespace drover::store
