// The leader lease (postgres_lease.h) and the fence on a leader's writes (WriteFence) against a
// real PostgreSQL (testing::PostgresCluster).

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include "drover/store/postgres_lease.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "drover/store/postgres_store.h"
#include "drover/store/test_util.h"
#include "drover/testing/postgres_cluster.h"

namespace drover::store {
namespace {

using ::testing::HasSubstr;
using testing::PostgresCluster;

constexpr DurationMs kLong = 60 * kMillisPerSecond;

// A migrated database and a lease on it.
struct Fixture {
  std::string uri;
  std::unique_ptr<PostgresLease> lease;
};

Fixture NewFixture() {
  Fixture f;
  auto uri = PostgresCluster::Shared().NewDatabase("lease");
  EXPECT_TRUE(uri.has_value()) << uri.error().ToString();
  f.uri = uri.value_or("");
  EXPECT_TRUE(OpenPostgresStore(f.uri).has_value());
  auto lease = PostgresLease::Open(f.uri);
  EXPECT_TRUE(lease.has_value()) << lease.error().ToString();
  if (lease) f.lease = *std::move(lease);
  return f;
}

TEST(PostgresLease, OneHolderAtATimeAndEachTakeoverAddsAnEpoch) {
  Fixture f = NewFixture();
  ASSERT_NE(f.lease, nullptr);
  EXPECT_FALSE(f.lease->Current().value().has_value());
  EXPECT_EQ(f.lease->TryAcquire("a", "http://a", kLong).value(), 1);
  EXPECT_EQ(f.lease->TryAcquire("b", "http://b", kLong).value(), std::nullopt);
  auto held = f.lease->Current().value();
  ASSERT_TRUE(held.has_value());
  EXPECT_EQ(held->holder, "a");
  EXPECT_EQ(held->url, "http://a");
  EXPECT_EQ(held->epoch, 1);
  EXPECT_FALSE(held->expired);
  EXPECT_TRUE(f.lease->Renew(1, kLong).value());

  // Released (as an expiry): the next server takes it with the next epoch.
  ASSERT_TRUE(f.lease->Release(1).has_value());
  EXPECT_TRUE(f.lease->Current().value()->expired);
  EXPECT_EQ(f.lease->TryAcquire("b", "http://b", kLong).value(), 2);
  EXPECT_EQ(f.lease->Current().value()->url, "http://b");
  // The old holder can neither renew nor release the new one's lease.
  EXPECT_FALSE(f.lease->Renew(1, kLong).value());
  ASSERT_TRUE(f.lease->Release(1).has_value());
  EXPECT_FALSE(f.lease->Current().value()->expired);
  EXPECT_TRUE(f.lease->Renew(2, kLong).value());
}

TEST(PostgresLease, AStaleEpochsWriteIsRefusedAndChangesNothing) {
  Fixture f = NewFixture();
  ASSERT_NE(f.lease, nullptr);
  std::vector<std::string> refused;
  auto fence = std::make_shared<WriteFence>(
      WriteFence::kNotLeader, [&](const Error& error) { refused.push_back(error.message); });
  auto opened = OpenPostgresStore(f.uri, {.fence = fence});
  ASSERT_TRUE(opened.has_value()) << opened.error().ToString();
  Store& old_leader = **opened;

  // Not the leader yet: refused, and no step-down (it never led).
  auto standby = old_leader.Apply({.jobs = {MakeJob(1, "standby")}});
  ASSERT_FALSE(standby.has_value());
  EXPECT_EQ(standby.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_TRUE(refused.empty());

  fence->Set(f.lease->TryAcquire("old", "http://old", kLong).value().value());
  ASSERT_TRUE(old_leader.Apply({.jobs = {MakeJob(2, "led")}}).has_value());

  // A standby takes over (the old lease expired while the old leader was paused).
  ASSERT_TRUE(f.lease->Release(1).has_value());
  const std::int64_t newer = f.lease->TryAcquire("new", "http://new", kLong).value().value();
  EXPECT_EQ(newer, 2);

  // The old leader wakes up: each of its writes is refused, and tells it to step down.
  auto stale = old_leader.Apply({.jobs = {MakeJob(3, "stale"), MakeJob(2, "overwritten")}});
  ASSERT_FALSE(stale.has_value());
  EXPECT_EQ(stale.error().code, ErrorCode::kAborted);
  EXPECT_THAT(stale.error().message, HasSubstr("fenced"));
  EXPECT_THAT(stale.error().message, HasSubstr("epoch 1 was superseded by epoch 2"));
  auto token = old_leader.PutCron({});
  ASSERT_FALSE(token.has_value());
  ASSERT_EQ(refused.size(), 2u);
  EXPECT_THAT(refused[0], HasSubstr("fenced"));

  // Nothing of it landed.
  auto reader = OpenPostgresStore(f.uri);
  ASSERT_TRUE(reader.has_value());
  EXPECT_EQ((*reader)->GetJob(JobId(3)).error().code, ErrorCode::kNotFound);
  EXPECT_EQ((*reader)->GetJob(JobId(2)).value(), MakeJob(2, "led"));
  EXPECT_EQ((*reader)->GetJob(JobId(1)).error().code, ErrorCode::kNotFound);

  // The new leader's writes pass.
  auto new_fence = std::make_shared<WriteFence>(newer);
  auto new_leader = OpenPostgresStore(f.uri, {.fence = new_fence});
  ASSERT_TRUE(new_leader.has_value());
  ASSERT_TRUE((*new_leader)->Apply({.jobs = {MakeJob(3, "new")}}).has_value());
  EXPECT_EQ((*reader)->GetJob(JobId(3)).value(), MakeJob(3, "new"));
}

}  // namespace
}  // namespace drover::store
