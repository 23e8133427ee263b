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
// writer connection under the writer mutex. A leader's epoch check (fencing) belongs there, in the
// same transaction as the write it guards.
//
// Text: PostgreSQL text cannot hold a NUL byte or invalid UTF-8; a write of such a string is
// refused with kInvalidArgument naming the field, and writes nothing.
//
// Durability: a write is acknowledged after PostgreSQL's COMMIT returns, so it is as durable as
// the server's settings make it (synchronous_commit, fsync, replication). A connection that
// breaks fails the call with kUnavailable and is reconnected by the next call; a COMMIT whose
// outcome is unknown is kUnavailable too (the caller must not assume either outcome).
//
// Thread-safety: every method may be called from any thread. Writes are serialized on one
// writer connection; reads borrow one of `readers` connections and run as one statement (one
// snapshot), or in one REPEATABLE READ transaction where they take two (GetFairShare).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "drover/common/result.h"
#include "drover/store/store.h"

namespace drover::store {

// The PostgreSQL schema version this build writes; OpenPostgresStore refuses a database with a
// higher one. 1: the logical schema of SQLite schema 9; 2: of SQLite schema 10 (attempts'
// usage).
inline constexpr std::int64_t kPostgresSchemaVersion = 3;

struct PostgresStoreOptions {
  // Read connections; concurrent reads beyond this many wait for one to be free. Default 4, as
  // the SQLite store's readers. Each is a PostgreSQL backend (with the writer, readers + 1).
  int readers = 4;
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
