// SQLite-specific behaviour: durability across reopen, WAL, schema versioning, bad files.
// The Store contract itself is covered by store_contract_test.cc.

#include "drover/store/sqlite_store.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <string>
#include <vector>

#include "drover/codec/json.h"
#include "drover/codec/sample_values.h"
#include "drover/store/store_util.h"
#include "drover/store/test_util.h"

namespace drover::store {
namespace {

using ::testing::HasSubstr;

// Runs `sql` on `path` through a plain SQLite connection and returns the first column of the
// first row as text ("" if none). Fails the test on error.
std::string RawQuery(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string out;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  auto callback = [](void* result, int columns, char** values, char**) {
    auto* text = static_cast<std::string*>(result);
    if (text->empty() && columns > 0 && values[0] != nullptr) *text = values[0];
    return 0;
  };
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), callback, &out, &error), SQLITE_OK)
      << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
  return out;
}

Batch OneJob(std::int64_t id) {
  Batch batch;
  batch.jobs.push_back(codec::testing::SampleJob(id));
  batch.transitions.push_back(codec::testing::SampleTransition(id));
  return batch;
}

class SqliteStoreTest : public ::testing::Test {
 protected:
  std::string DbPath() const { return dir_.path() + "/drover.db"; }

  std::unique_ptr<Store> MustOpen() {
    auto store = OpenSqliteStore(DbPath());
    EXPECT_TRUE(store.has_value()) << store.error().ToString();
    return store.has_value() ? std::move(*store) : nullptr;
  }

  TempDir dir_;
};

TEST_F(SqliteStoreTest, DataSurvivesCloseAndReopen) {
  {
    auto store = MustOpen();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Apply(OneJob(1)).has_value());
    ASSERT_TRUE(store->Apply(OneJob(2)).has_value());
  }
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->MaxJobId().value(), 2);
  EXPECT_EQ(store->GetJob(JobId(2)).value(), codec::testing::SampleJob(2));
  EXPECT_THAT(store->ListTransitions(JobId(1)).value(),
              ::testing::ElementsAre(codec::testing::SampleTransition(1)));
  EXPECT_THAT(store->FindSubmission("idem-7f3a").value(),
              ::testing::ElementsAre(JobId(1), JobId(2)));
  // New transitions continue after the old ones.
  ASSERT_TRUE(store->Apply(OneJob(1)).has_value());
  EXPECT_EQ(store->ListTransitions(JobId(1)).value().size(), 2u);
}

TEST_F(SqliteStoreTest, FileIsInWalModeWithCurrentSchema) {
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(RawQuery(DbPath(), "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(RawQuery(DbPath(), "PRAGMA user_version"), std::to_string(kSqliteSchemaVersion));
  EXPECT_EQ(RawQuery(DbPath(), "PRAGMA application_id"), std::to_string(kSqliteApplicationId));
  EXPECT_EQ(RawQuery(DbPath(),
                     "SELECT count(*) FROM sqlite_master WHERE name IN "
                     "('jobs', 'transitions', 'jobs_state', 'jobs_submission_key', 'decisions', "
                     "'decisions_job', 'decision_victims', 'agents')"),
            "8");
}

// The schema of version 1 as it shipped, and a database written by that version.
constexpr char kSchemaV1[] = R"sql(
  CREATE TABLE jobs (
    id             INTEGER PRIMARY KEY,
    name           TEXT NOT NULL,
    owner          TEXT NOT NULL,
    team           TEXT NOT NULL,
    queue          TEXT NOT NULL,
    state          TEXT NOT NULL,
    submission_key TEXT,
    created_at     INTEGER NOT NULL,
    finished_at    INTEGER NOT NULL,
    snapshot       TEXT NOT NULL
  );
  CREATE INDEX jobs_state ON jobs(state);
  CREATE INDEX jobs_submission_key ON jobs(submission_key);
  CREATE INDEX jobs_active ON jobs(id)
    WHERE state NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out');
  CREATE TABLE transitions (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id     INTEGER NOT NULL,
    attempt    INTEGER NOT NULL,
    from_state TEXT NOT NULL,
    to_state   TEXT NOT NULL,
    at         INTEGER NOT NULL,
    cause      TEXT NOT NULL
  );
  CREATE INDEX transitions_job ON transitions(job_id, seq);
  PRAGMA user_version = 1;
  PRAGMA application_id = 1146246738;
)sql";

// Writes a database at `path` as version 1 did (kSchemaV1), holding `jobs` and for each a
// creation transition. Fails the test on error.
void WriteVersion1Database(const std::string& path, const std::vector<model::Job>& jobs) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, kSchemaV1, nullptr, nullptr, nullptr), SQLITE_OK);
  for (const model::Job& job : jobs) {
    sqlite3_stmt* insert = nullptr;
    ASSERT_EQ(
        sqlite3_prepare_v2(db, "INSERT INTO jobs VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, ?7, ?8, ?9)",
                           -1, &insert, nullptr),
        SQLITE_OK);
    const std::string state(model::JobStateName(job.state));
    const std::string snapshot = codec::DumpJson(codec::ToJson(job));
    sqlite3_bind_int64(insert, 1, job.id.value());
    sqlite3_bind_text(insert, 2, job.spec.name.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(insert, 3, job.spec.owner.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(insert, 4, job.spec.team.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(insert, 5, job.spec.queue.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(insert, 6, state.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(insert, 7, job.created_at);
    sqlite3_bind_int64(insert, 8, job.finished_at);
    sqlite3_bind_text(insert, 9, snapshot.c_str(), -1, SQLITE_TRANSIENT);
    ASSERT_EQ(sqlite3_step(insert), SQLITE_DONE);
    sqlite3_finalize(insert);
    const std::string transition = fmt::format(
        "INSERT INTO transitions (job_id, attempt, from_state, to_state, at, cause) "
        "VALUES ({}, 0, 'pending', 'pending', 1, 'submitted')",
        job.id.value());
    ASSERT_EQ(sqlite3_exec(db, transition.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  }
  sqlite3_close(db);
  ASSERT_EQ(RawQuery(path, "PRAGMA user_version"), "1");
}

TEST_F(SqliteStoreTest, MigratesAVersion1Database) {
  const model::Job job = MakeJob(4, "old");
  WriteVersion1Database(DbPath(), {job});
  ASSERT_EQ(std::to_string(kSqliteApplicationId), "1146246738");

  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(RawQuery(DbPath(), "PRAGMA user_version"), std::to_string(kSqliteSchemaVersion));
  // What version 1 stored reads back, and the decision log works.
  EXPECT_EQ(store->GetJob(JobId(4)).value(), job);
  EXPECT_EQ(store->ListTransitions(JobId(4)).value().size(), 1u);
  EXPECT_TRUE(store->ListDecisions(JobId(4)).value().empty());
  const model::Decision decision = MakeDecision(4, model::Decision::Kind::kPlaced);
  Batch batch;
  batch.decisions.push_back(decision);
  ASSERT_TRUE(store->Apply(batch).has_value());
  EXPECT_THAT(store->ListDecisions(JobId(4)).value(), ::testing::ElementsAre(decision));
  store.reset();
  // Reopening keeps it, without migrating again.
  store = MustOpen();
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(store->ListDecisions(JobId(4)).value(), ::testing::ElementsAre(decision));
}

TEST_F(SqliteStoreTest, AMigratedDatabaseKeepsFairShareHistoryAcrossReopen) {
  WriteVersion1Database(DbPath(), {MakeJob(4, "old")});
  model::FairShareHistory history;
  history.advanced_at = 1'700'000'000'000;
  history.entries = {{"org", "", {{"gpu", 3.5e9}}}, {"org/a", "bob", {{"cpu", 0.125}}}};
  {
    auto store = MustOpen();
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->GetFairShare().value(), model::FairShareHistory{});
    ASSERT_TRUE(store->PutFairShare(history).has_value());
  }
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->GetFairShare().value(), history);
}

// Schema 4 rebuilt the active-jobs index from model::IsTerminal: version 1 listed the finished
// states by hand and left out `skipped`.
TEST_F(SqliteStoreTest, MigrationRebuildsTheActiveIndexWithSkippedAsFinished) {
  model::Job running = MakeJob(1, "running");
  running.state = model::JobState::kRunning;
  model::Job skipped = MakeJob(2, "skipped");
  skipped.state = model::JobState::kSkipped;
  WriteVersion1Database(DbPath(), {running, skipped});
  const std::string index_sql = "SELECT sql FROM sqlite_master WHERE name = 'jobs_active'";
  ASSERT_THAT(RawQuery(DbPath(), index_sql), ::testing::Not(HasSubstr("skipped")));

  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(RawQuery(DbPath(), "PRAGMA user_version"), std::to_string(kSqliteSchemaVersion));
  EXPECT_THAT(RawQuery(DbPath(), index_sql),
              HasSubstr("WHERE state NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out', "
                        "'skipped')"));
  EXPECT_EQ(RawQuery(DbPath(), "PRAGMA integrity_check"), "ok");
  JobFilter active_only;
  active_only.active_only = true;
  auto listed = store->ListJobs(active_only);
  ASSERT_TRUE(listed.has_value()) << listed.error().ToString();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front().id, JobId(1));
  EXPECT_EQ(store->GetJob(JobId(2)).value(), skipped);
}

// The active filter of ListJobs is the index's condition word for word, so SQLite can use the
// partial index.
TEST_F(SqliteStoreTest, ActiveIndexConditionIsTheListFilter) {
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(RawQuery(DbPath(), "SELECT sql FROM sqlite_master WHERE name = 'jobs_active'"),
              HasSubstr("WHERE " + SqlUnfinishedStateCondition()));
}

TEST_F(SqliteStoreTest, DecisionsAreQueryableRows) {
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Apply(OneJob(1)).has_value());
  ASSERT_TRUE(store->Apply(OneJob(2)).has_value());
  Batch batch;
  batch.decisions.push_back(MakeDecision(2, model::Decision::Kind::kPreempted, {1}));
  ASSERT_TRUE(store->Apply(batch).has_value());
  EXPECT_EQ(RawQuery(DbPath(), "SELECT job_id || '/' || attempt || '/' || kind FROM decisions"),
            "2/2/preempted");
  EXPECT_EQ(RawQuery(DbPath(), "SELECT job_id FROM decision_victims"), "1");
  EXPECT_EQ(RawQuery(DbPath(), "SELECT json_extract(json, '$.queue') FROM decisions"), "team-a");
}

TEST_F(SqliteStoreTest, ReopeningDoesNotMigrateAgain) {
  { ASSERT_NE(MustOpen(), nullptr); }
  { ASSERT_NE(MustOpen(), nullptr); }
  EXPECT_EQ(RawQuery(DbPath(), "PRAGMA user_version"), std::to_string(kSqliteSchemaVersion));
}

TEST_F(SqliteStoreTest, StoresQueryableColumns) {
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Apply(OneJob(5)).has_value());
  EXPECT_EQ(RawQuery(DbPath(),
                     "SELECT name || '/' || owner || '/' || team || '/' || queue || '/' "
                     "|| state || '/' || submission_key FROM jobs WHERE id = 5"),
            "train-llm/alice/research/gpu-large/timed_out/idem-7f3a");
  EXPECT_EQ(RawQuery(DbPath(), "SELECT from_state || '->' || to_state FROM transitions"),
            "running->timed_out");
  EXPECT_EQ(RawQuery(DbPath(), "SELECT json_extract(snapshot, '$.spec.owner') FROM jobs"), "alice");
}

TEST_F(SqliteStoreTest, RefusesNewerSchema) {
  { ASSERT_NE(MustOpen(), nullptr); }
  RawQuery(DbPath(), "PRAGMA user_version = " + std::to_string(kSqliteSchemaVersion + 1));
  auto store = OpenSqliteStore(DbPath());
  ASSERT_FALSE(store.has_value());
  EXPECT_EQ(store.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(store.error().message, HasSubstr("newer"));
}

TEST_F(SqliteStoreTest, RefusesAnotherApplicationsDatabase) {
  RawQuery(DbPath(), "CREATE TABLE t(x); PRAGMA application_id = 1234; PRAGMA user_version = 1");
  auto store = OpenSqliteStore(DbPath());
  ASSERT_FALSE(store.has_value());
  EXPECT_EQ(store.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(store.error().message, HasSubstr("not a Drover database"));
}

TEST_F(SqliteStoreTest, NonSqliteFileIsAnErrorNotACrash) {
  {
    std::ofstream file(DbPath(), std::ios::binary);
    for (int i = 0; i < 512; ++i) file << "this is not a database\n";
  }
  auto store = OpenSqliteStore(DbPath());
  ASSERT_FALSE(store.has_value());
  EXPECT_EQ(store.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(store.error().message, HasSubstr("drover.db"));
}

TEST_F(SqliteStoreTest, CorruptPagesAreAnErrorNotACrash) {
  {
    auto store = MustOpen();
    ASSERT_NE(store, nullptr);
    for (int id = 1; id <= 50; ++id) ASSERT_TRUE(store->Apply(OneJob(id)).has_value());
  }
  // Keep the valid header, overwrite every page after the first with garbage.
  {
    std::fstream file(DbPath(), std::ios::binary | std::ios::in | std::ios::out);
    file.seekp(4096);
    for (int i = 0; i < 64 * 1024; ++i) file.put(static_cast<char>(i * 7 + 3));
  }
  auto store = OpenSqliteStore(DbPath());
  if (!store.has_value()) return;  // refusing at open is fine
  // Otherwise every read either works or reports an error.
  auto jobs = (*store)->ListJobs({});
  auto job = (*store)->GetJob(JobId(3));
  auto transitions = (*store)->ListTransitions(JobId(3));
  EXPECT_FALSE(jobs.has_value() && job.has_value() && transitions.has_value());
}

TEST_F(SqliteStoreTest, UndecodableSnapshotIsInternalError) {
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Apply(OneJob(1)).has_value());
  RawQuery(DbPath(), "UPDATE jobs SET snapshot = '{\"state\": \"bogus\"}' WHERE id = 1");
  auto job = store->GetJob(JobId(1));
  ASSERT_FALSE(job.has_value());
  EXPECT_EQ(job.error().code, ErrorCode::kInternal);
  EXPECT_THAT(job.error().message, HasSubstr("job 1"));
  EXPECT_FALSE(store->ListJobs({}).has_value());
}

TEST_F(SqliteStoreTest, MissingDirectoryIsUnavailable) {
  auto store = OpenSqliteStore(dir_.path() + "/no/such/dir/drover.db");
  ASSERT_FALSE(store.has_value());
  EXPECT_EQ(store.error().code, ErrorCode::kUnavailable);
}

TEST_F(SqliteStoreTest, RejectsBadOptions) {
  auto store = OpenSqliteStore(DbPath(), SqliteStoreOptions{.busy_timeout_ms = 10, .readers = 0});
  ASSERT_FALSE(store.has_value());
  EXPECT_EQ(store.error().code, ErrorCode::kInvalidArgument);
}

TEST_F(SqliteStoreTest, WriteLockedByAnotherConnectionIsUnavailable) {
  auto store = OpenSqliteStore(DbPath(), SqliteStoreOptions{.busy_timeout_ms = 50, .readers = 1});
  ASSERT_TRUE(store.has_value());
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(DbPath().c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  Status status = (*store)->Apply(OneJob(1));
  ASSERT_FALSE(status.has_value());
  EXPECT_EQ(status.error().code, ErrorCode::kUnavailable);
  // Reads still work while the write lock is held (WAL).
  EXPECT_TRUE((*store)->MaxJobId().has_value());
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  EXPECT_TRUE((*store)->Apply(OneJob(1)).has_value());
}

}  // namespace
}  // namespace drover::store
