// TokenRegistry (token_registry.h), AuditLog (audit_log.h) and ControlPlane::EnsureAdminToken.

#include "drover/server/token_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "drover/server/audit_log.h"
#include "drover/server/control_plane.h"
#include "drover/server/secret.h"
#include "drover/testing/fake_clock.h"
#include "drover/testing/faulty_store.h"
#include "drover/testing/temp_dir.h"

namespace drover::server {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

model::Identity Member(std::string user, std::string team) {
  model::Identity identity;
  identity.user = std::move(user);
  identity.team = std::move(team);
  identity.role = model::Role::kMember;
  identity.queues = {"gpu"};
  return identity;
}

constexpr TimeMs kNow = 1'700'000'000'000;

TEST(TokenRegistry, ACreatedTokenAuthenticatesAsItsIdentityAndIsStoredHashed) {
  auto store = store::NewMemoryStore();
  TokenRegistry registry(*store, "key");
  auto created = registry.Create(Member("ann", "team-a"), 0, "ops (admin)", kNow);
  ASSERT_TRUE(created) << created.error().ToString();
  EXPECT_THAT(created->token, MatchesRegex("drv_[0-9a-f]{64}"));
  EXPECT_THAT(created->record.id, MatchesRegex("tok-[0-9a-f]{12}"));

  auto identity = registry.Authenticate(created->token, kNow);
  ASSERT_TRUE(identity) << identity.error().ToString();
  EXPECT_EQ(identity->user, "ann");
  EXPECT_EQ(identity->team, "team-a");
  EXPECT_EQ(identity->token_id, created->record.id);

  auto stored = store->ListTokens().value();
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].hash, HashSecret(created->token));
  EXPECT_THAT(stored[0].hash, Not(HasSubstr(created->token.substr(4))));

  // A restarted server (a new registry over the same store) knows it.
  TokenRegistry restarted(*store, "key");
  ASSERT_TRUE(restarted.Load());
  EXPECT_TRUE(restarted.Authenticate(created->token, kNow));
}

TEST(TokenRegistry, UnknownExpiredAndRevokedTokensAre401SayingWhyWithoutTheToken) {
  auto store = store::NewMemoryStore();
  TokenRegistry registry(*store, "key");
  auto expiring = registry.Create(Member("ann", "team-a"), kNow + 1000, "ops (admin)", kNow);
  auto revoked = registry.Create(Member("bob", "team-a"), 0, "ops (admin)", kNow);
  ASSERT_TRUE(expiring && revoked);
  ASSERT_TRUE(registry.Revoke(revoked->record.id, kNow + 5));

  auto unknown = registry.Authenticate("drv_nope", kNow);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ErrorCode::kUnauthenticated);
  EXPECT_EQ(unknown.error().message, "token unknown");

  EXPECT_TRUE(registry.Authenticate(expiring->token, kNow + 999));
  auto expired = registry.Authenticate(expiring->token, kNow + 1000);
  ASSERT_FALSE(expired);
  EXPECT_EQ(expired.error().code, ErrorCode::kUnauthenticated);
  EXPECT_EQ(expired.error().message,
            "token " + expiring->record.id + " expired at 2023-11-14T22:13:21Z");

  auto gone = registry.Authenticate(revoked->token, kNow + 10);
  ASSERT_FALSE(gone);
  EXPECT_THAT(gone.error().message, HasSubstr("token " + revoked->record.id + " was revoked at"));
  EXPECT_THAT(gone.error().message, Not(HasSubstr(revoked->token)));
  // Revoked in the store too, and a second revoke keeps the first time.
  EXPECT_EQ(registry.Revoke(revoked->record.id, kNow + 99)->revoked_at, kNow + 5);
  EXPECT_EQ(registry.Revoke("tok-000000000000", kNow).error().code, ErrorCode::kNotFound);
}

TEST(TokenRegistry, AJobsTokenActsForThatJobAloneAndNeedsTheKey) {
  auto store = store::NewMemoryStore();
  TokenRegistry registry(*store, "key");
  const std::string token = registry.JobToken(JobId(12));
  EXPECT_THAT(token, MatchesRegex("drj_12_[0-9a-f]{64}"));
  auto identity = registry.Authenticate(token, kNow);
  ASSERT_TRUE(identity) << identity.error().ToString();
  EXPECT_EQ(identity->job, JobId(12));
  EXPECT_EQ(identity->role, model::Role::kViewer);
  EXPECT_EQ(identity->user, "");

  // Another job's id with this MAC, another key's MAC, and malformed ones are unknown.
  std::string other = token;
  other.replace(4, 2, "13");
  TokenRegistry other_key(*store, "another key");
  for (const std::string& bad :
       {other, other_key.JobToken(JobId(12)), std::string("drj_12"), std::string("drj__"),
        std::string("drj_-1_") + token.substr(7), std::string("drj_12_")}) {
    auto refused = registry.Authenticate(bad, kNow);
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.error().message, "token unknown");
  }
}

TEST(TokenRegistry, TheJobKeyFileIsCreatedOnceWithMode0600) {
  testing::TempDir dir;
  const std::string path = dir.Sub("job-token.key");
  auto first = TokenRegistry::LoadOrCreateJobKey(path);
  ASSERT_TRUE(first) << first.error().ToString();
  struct stat info {};
  ASSERT_EQ(stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  EXPECT_EQ(TokenRegistry::LoadOrCreateJobKey(path).value(), *first);
  EXPECT_NE(TokenRegistry::LoadOrCreateJobKey("").value(), *first);
}

TEST(AuditLog, QueuedRecordsAreWrittenOnFlushAndStopInOrder) {
  auto store = store::NewMemoryStore();
  AuditLog log(*store, /*flush_interval_ms=*/60'000);
  for (int i = 0; i < 3; ++i) {
    store::AuditRecord record;
    record.at = kNow + i;
    record.action = "POST /v1/jobs";
    log.Append(record);
  }
  ASSERT_TRUE(log.Flush());
  auto written = store->ListAudit({}).value();
  ASSERT_EQ(written.size(), 3u);
  EXPECT_EQ(written[2].at, kNow + 2);
  store::AuditRecord last;
  last.at = kNow + 3;
  log.Append(last);
  log.Stop();
  EXPECT_EQ(store->ListAudit({}).value().size(), 4u);
  // One appended after the stop (a request answered while the server shuts down) is written by
  // the next Stop.
  log.Append(last);
  log.Stop();
  EXPECT_EQ(store->ListAudit({}).value().size(), 5u);
}

TEST(AuditLog, ABatchTheStoreRefusesIsDroppedAndTheNextOneWritten) {
  auto base = store::NewMemoryStore();
  testing::FaultyStore faulty(*base);
  AuditLog log(faulty, /*flush_interval_ms=*/60'000);
  log.Append(store::AuditRecord{});
  faulty.SetFailing(true);
  EXPECT_FALSE(log.Flush());
  faulty.SetFailing(false);
  log.Append(store::AuditRecord{});
  EXPECT_TRUE(log.Flush());
  EXPECT_EQ(base->ListAudit({}).value().size(), 1u);
}

TEST(EnsureAdminToken, WritesOneAdminTokenWhenNoneIsLiveAndNoneAfter) {
  testing::TempDir dir;
  auto store = store::NewMemoryStore();
  store::Store& kept = *store;
  testing::FakeClock clock;
  ControlPlaneOptions options;
  options.run_loop = false;
  ControlPlane plane(std::move(store), clock, options);
  ASSERT_TRUE(plane.Start());
  const std::string path = dir.Sub("admin.token");
  EXPECT_EQ(plane.EnsureAdminToken(path, "ops").value(), true);
  struct stat info {};
  ASSERT_EQ(stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  std::string token;
  std::getline(std::ifstream(path), token);
  auto identity = plane.Authenticate(token);
  ASSERT_TRUE(identity) << identity.error().ToString();
  EXPECT_EQ(identity->user, "ops");
  EXPECT_EQ(identity->role, model::Role::kAdmin);

  // A live admin token: nothing is created, even with the file gone.
  std::remove(path.c_str());
  EXPECT_EQ(plane.EnsureAdminToken(path, "ops").value(), false);
  EXPECT_EQ(kept.ListTokens().value().size(), 1u);
  // Every admin token revoked: a new one.
  ASSERT_TRUE(plane.RevokeToken(identity->token_id));
  EXPECT_EQ(plane.EnsureAdminToken(path, "ops").value(), true);
  EXPECT_EQ(kept.ListTokens().value().size(), 2u);
}

}  // namespace
}  // namespace drover::server
