#pragma once

// The SQLite Store: options and schema facts beyond store.h's OpenSqliteStore(path).
//
// Layout: table `jobs` (one row per job: indexed columns for filters plus `snapshot`, the job
// as codec::ToJson text), table `transitions` (append-only, `seq` gives the applied order), and
// the decision log (schema 2): table `decisions` (append-only, one row per decision under its
// job, the decision as codec::ToJson text) with `decision_victims` (job_id, seq) naming the
// decisions that chose a job as a victim. Table `crons` (schema 3): one row per cron job with
// its owner, creation time, last handled due time and spec as JSON. Index `jobs_active` (rebuilt
// in schema 4) holds the unfinished jobs, as model::IsTerminal says. Tables `fair_share` and
// `fair_share_clock` (schema 7) hold the fair-share history (sqlite_fair_share.h); its one read
// method is two statements in one read transaction.
// The schema version is PRAGMA user_version; PRAGMA application_id marks a Drover database.
//
// Durability: WAL with synchronous=NORMAL. A committed Apply survives a crash of the process;
// after a power loss (or OS crash) the commits since the last checkpoint may be lost, but the
// database stays consistent (no partial batch is ever visible). Commits never fsync: a
// background thread checkpoints the WAL into the database (with fsync) once it holds
// checkpoint_pages pages, and within about a second after the last commit.
//
// Thread-safety: every method may be called from any thread. Apply runs on one writer
// connection under a mutex (Drover has one writer, the controller). Reads borrow one of
// `readers` read-only connections, so they neither block nor are blocked by Apply (WAL
// readers see the last committed state). Each read method is one SQL statement, hence one
// consistent snapshot. Snapshots are decoded after the connection is handed back.

#include <cstdint>
#include <memory>
#include <string>

#include "drover/common/result.h"
#include "drover/store/store.h"

namespace drover::store {

// The schema version this build writes; OpenSqliteStore refuses a database with a higher one.
// 1: jobs and transitions; 2: the decision log; 3: cron jobs; 4: the active-jobs index counts
// skipped jobs as finished; 5: remote agents' credentials and lost nodes; 6: a cron job's team,
// API tokens and the audit log; 7: fair-share history. Older databases are migrated at open.
inline constexpr std::int64_t kSqliteSchemaVersion = 11;
// PRAGMA application_id of a Drover database ("DRVR").
inline constexpr std::int64_t kSqliteApplicationId = 0x44525652;

struct SqliteStoreOptions {
  // How long a statement waits for a lock held by another connection (another process on the
  // same file, or a checkpoint) before failing with kUnavailable. Default 5 s: long enough to
  // ride out a checkpoint, short enough that a stuck peer surfaces as an error.
  int busy_timeout_ms = 5000;
  // Read connections in the pool; concurrent reads beyond this many wait for one to be free.
  // Default 4: HTTP handler threads rarely read concurrently for long. Ignored (reads share the
  // writer connection) for ":memory:" databases, which are private to one connection.
  int readers = 4;
  // WAL size in pages (4 KiB each) at which a background thread checkpoints the WAL into the
  // database (see "Durability"). Default 1000, SQLite's own default: a larger WAL makes reads
  // scan a larger WAL index; a smaller one checkpoints (and fsyncs) more often.
  int checkpoint_pages = 1000;
};

// As OpenSqliteStore(path), with options. Errors: kFailedPrecondition if the file is not a
// SQLite database, is another application's database, or has a schema newer than
// kSqliteSchemaVersion; kUnavailable if it cannot be opened or is locked past the busy
// timeout; kInvalidArgument for bad options.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path,
                                               const SqliteStoreOptions& options);

}  // namespace drover::store
