// The PostgreSQL store beyond the Store contract (store_contract_test.cc runs that): reopening,
// migrations, hostile text, connection strings, an unreachable or restarted database.

// Batches below are written as C++20 designated initializers naming only the fields that matter;
// g++ 12 flags the omitted ones, which is exactly the intent here.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include "drover/store/postgres_store.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <pqxx/pqxx>
#include <string>

#include "drover/store/test_util.h"
#include "drover/testing/postgres_cluster.h"

namespace drover::store {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::PostgresCluster;

std::string NewDatabase() {
  auto uri = PostgresCluster::Shared().NewDatabase("pg");
  EXPECT_TRUE(uri.has_value()) << uri.error().ToString();
  return uri ? *uri : "";
}

std::unique_ptr<Store> MustOpen(const std::string& uri) {
  auto store = OpenPostgresStore(uri);
  EXPECT_TRUE(store.has_value()) << store.error().ToString();
  return store ? *std::move(store) : nullptr;
}

TEST(PostgresStore, ReopenKeepsDataAndMigratingAgainChangesNothing) {
  const std::string uri = NewDatabase();
  {
    auto store = MustOpen(uri);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Apply({.jobs = {MakeJob(7, "kept")}}).has_value());
  }
  for (int i = 0; i < 2; ++i) {
    auto store = MustOpen(uri);
    ASSERT_NE(store, nullptr);
    auto job = store->GetJob(JobId(7));
    ASSERT_TRUE(job.has_value()) << job.error().ToString();
    EXPECT_EQ(*job, MakeJob(7, "kept"));
    EXPECT_EQ(store->MaxJobId().value(), 7);
  }
}

TEST(PostgresStore, RefusesANewerSchemaAndAnotherApplicationsDatabase) {
  const std::string uri = NewDatabase();
  ASSERT_NE(MustOpen(uri), nullptr);
  {
    pqxx::connection db(uri);
    pqxx::work tx(db);
    tx.exec0("UPDATE drover_schema SET version = version + 1");
    tx.commit();
  }
  auto newer = OpenPostgresStore(uri);
  ASSERT_FALSE(newer.has_value());
  EXPECT_EQ(newer.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(newer.error().message, HasSubstr("newer than this build's"));
  {
    pqxx::connection db(uri);
    pqxx::work tx(db);
    tx.exec0("UPDATE drover_schema SET application = 'other', version = 1");
    tx.commit();
  }
  auto other = OpenPostgresStore(uri);
  ASSERT_FALSE(other.has_value());
  EXPECT_EQ(other.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(other.error().message, HasSubstr("not a Drover database"));
}

TEST(PostgresStore, KeepsLongAndUnicodeTextByteForByte) {
  auto store = MustOpen(NewDatabase());
  ASSERT_NE(store, nullptr);
  model::Job job = MakeJob(1, "名前-ünïcødé-🚀");
  job.spec.owner = "ørjan";
  job.spec.env["LONG"] = std::string(1 << 20, 'x');
  job.spec.env["NUL"] = std::string("a\0b", 3);  // inside the JSON snapshot: escaped
  model::Transition transition{.job = JobId(1), .cause = std::string(100'000, 'c') + "→"};
  ASSERT_TRUE(store->Apply({.jobs = {job}, .transitions = {transition}}).has_value());
  EXPECT_EQ(store->GetJob(JobId(1)).value(), job);
  EXPECT_EQ(store->ListTransitions(JobId(1)).value().at(0).cause, transition.cause);
  auto named = store->ListJobs({.name = "名前-ünïcødé-🚀"});
  ASSERT_TRUE(named.has_value());
  EXPECT_EQ(named->size(), 1u);
}

TEST(PostgresStore, RefusesANulByteInAColumnNamingTheFieldAndStoresNothing) {
  auto store = MustOpen(NewDatabase());
  ASSERT_NE(store, nullptr);
  model::Job job = MakeJob(1, std::string("a\0b", 3));
  Status status = store->Apply({.jobs = {MakeJob(2, "fine"), job}});
  ASSERT_FALSE(status.has_value());
  EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(status.error().message, HasSubstr("batch.jobs[1].name: contains a NUL byte"));
  EXPECT_EQ(store->MaxJobId().value(), 0);

  Status audit = store->AppendAudit(
      {AuditRecord{.action = "POST /v1/x"}, AuditRecord{.action = std::string("POST /v1/\0", 10)}});
  ASSERT_FALSE(audit.has_value());
  EXPECT_THAT(audit.error().message, HasSubstr("records[1].action"));
  EXPECT_TRUE(store->ListAudit({}).value().empty());
}

TEST(PostgresStore, RefusesInvalidUtf8AsAnInvalidArgument) {
  auto store = MustOpen(NewDatabase());
  ASSERT_NE(store, nullptr);
  Status status = store->AppendAudit({AuditRecord{.user = "bad\xff\xfe"}});
  ASSERT_FALSE(status.has_value());
  EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument) << status.error().message;
  EXPECT_TRUE(store->ListAudit({}).value().empty());
}

TEST(PostgresStore, UnreachableDatabaseIsUnavailableWithoutThePassword) {
  auto cluster = PostgresCluster::Start();
  ASSERT_TRUE(cluster.has_value()) << cluster.error().ToString();
  const int port = (*cluster)->port();
  ASSERT_TRUE((*cluster)->Stop().has_value());
  auto store =
      OpenPostgresStore(fmt::format("postgresql://drover:hunter2@127.0.0.1:{}/drover", port));
  ASSERT_FALSE(store.has_value());
  EXPECT_EQ(store.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(store.error().message, HasSubstr("drover:***@127.0.0.1"));
  EXPECT_THAT(store.error().message, Not(HasSubstr("hunter2")));
}

TEST(PostgresStore, ReconnectsAfterTheDatabaseRestarts) {
  auto cluster = PostgresCluster::Start();
  ASSERT_TRUE(cluster.has_value()) << cluster.error().ToString();
  auto uri = (*cluster)->NewDatabase("restart");
  ASSERT_TRUE(uri.has_value()) << uri.error().ToString();
  // Writes not retried: the one while the database is down fails at once.
  auto opened = OpenPostgresStore(*uri, {.write_retry_ms = 0});
  ASSERT_TRUE(opened.has_value()) << opened.error().ToString();
  auto store = *std::move(opened);
  ASSERT_TRUE(store->Apply({.jobs = {MakeJob(1, "before")}}).has_value());
  ASSERT_TRUE((*cluster)->Stop("immediate").has_value());
  Status down = store->Apply({.jobs = {MakeJob(2, "while down")}});
  ASSERT_FALSE(down.has_value());
  EXPECT_EQ(down.error().code, ErrorCode::kUnavailable) << down.error().message;
  ASSERT_TRUE((*cluster)->Restart().has_value());
  // The broken connections are dropped by the failed calls; a reader may still hold one, so a
  // read may fail once per reader before each has reconnected.
  ASSERT_TRUE(store->Apply({.jobs = {MakeJob(3, "after")}}).has_value());
  Result<std::int64_t> max = store->MaxJobId();
  for (int i = 0; i < 4 && !max; ++i) max = store->MaxJobId();
  ASSERT_TRUE(max.has_value()) << max.error().ToString();
  EXPECT_EQ(*max, 3);
}

// Issue 23, "PostgreSQL restarted under load": the writer's connection broke while the database
// restarted; the next write found it broken before its COMMIT, so it is tried again on a new
// connection and lands (it used to fail, and the server to exit).
TEST(PostgresStore, AWriteAfterADatabaseRestartReconnectsAndLands) {
  auto cluster = PostgresCluster::Start();
  ASSERT_TRUE(cluster.has_value()) << cluster.error().ToString();
  auto uri = (*cluster)->NewDatabase("rewrite");
  ASSERT_TRUE(uri.has_value()) << uri.error().ToString();
  auto store = MustOpen(*uri);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Apply({.jobs = {MakeJob(1, "before")}}).has_value());
  ASSERT_TRUE((*cluster)->Stop("fast").has_value());
  ASSERT_TRUE((*cluster)->Restart().has_value());
  Status after = store->Apply({.jobs = {MakeJob(2, "after")}});
  ASSERT_TRUE(after.has_value()) << after.error().ToString();
  auto reader = MustOpen(*uri);
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->GetJob(JobId(2)).value(), MakeJob(2, "after"));
}

TEST(PostgresConnectionString, PasswordsAreRedactedInBothForms) {
  EXPECT_EQ(RedactConnectionString("postgres://u:pw@h:5432/db"), "postgres://u:***@h:5432/db");
  EXPECT_EQ(RedactConnectionString("postgresql://u@h/db?password=pw&sslmode=require"),
            "postgresql://u@h/db?password=***&sslmode=require");
  EXPECT_EQ(RedactConnectionString("host=h password='p w' user=u"), "host=h password=*** user=u");
  EXPECT_EQ(RedactConnectionString("postgres://u:p@ss@h/db"), "postgres://u:***@h/db");
  EXPECT_EQ(RedactConnectionString("postgres://h/db"), "postgres://h/db");
}

TEST(PostgresConnectionString, OnlyPostgresUrisSelectThePostgresStore) {
  EXPECT_TRUE(IsPostgresUri("postgres://h/db"));
  EXPECT_TRUE(IsPostgresUri("postgresql://h/db"));
  EXPECT_FALSE(IsPostgresUri("/var/lib/drover.db"));
  EXPECT_FALSE(IsPostgresUri(""));
}

}  // namespace
}  // namespace drover::store
