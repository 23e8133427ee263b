#include "drover/control/service_reconciler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace drover::control {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

ReplicaView Replica(std::int64_t id, int generation, bool is_protected, bool ready) {
  return ReplicaView{JobId(id), generation, is_protected, ready};
}

ReconcileInput Service(int desired, int min, std::vector<ReplicaView> replicas) {
  return ReconcileInput{.generation = 2,
                        .desired = desired,
                        .min = min,
                        .replicas = std::move(replicas),
                        .ports_in_use = {},
                        .port_from = 9000,
                        .port_to = 9009};
}

std::vector<bool> ProtectedOf(const ReconcilePlan& plan) {
  std::vector<bool> out;
  for (const ReplicaStart& s : plan.start) out.push_back(s.is_protected);
  return out;
}

TEST(Reconcile, StartsUpToDesiredProtectingOnlyTheFirstMin) {
  ReconcilePlan plan = Reconcile(Service(4, 2, {}));
  EXPECT_THAT(ProtectedOf(plan), ElementsAre(true, true, false, false));
  EXPECT_EQ(plan.start[0].port, 9000);
  EXPECT_EQ(plan.start[3].port, 9003);
  EXPECT_THAT(plan.stop, IsEmpty());
}

TEST(Reconcile, ReplacesADeadProtectedReplicaWithAProtectedOne) {
  // Of min 2 protected, one died: two interruptible and one protected remain.
  ReconcilePlan plan = Reconcile(Service(
      4, 2, {Replica(1, 2, true, true), Replica(3, 2, false, true), Replica(4, 2, false, true)}));
  EXPECT_THAT(ProtectedOf(plan), ElementsAre(true));
}

TEST(Reconcile, SkipsPortsInUseAndSaysWhenNoneIsFree) {
  ReconcileInput in = Service(2, 0, {});
  in.ports_in_use = {9000, 9002};
  ReconcilePlan plan = Reconcile(in);
  ASSERT_EQ(plan.start.size(), 2u);
  EXPECT_EQ(plan.start[0].port, 9001);
  EXPECT_EQ(plan.start[1].port, 9003);
  in.port_to = 9001;
  plan = Reconcile(in);
  EXPECT_EQ(plan.start.size(), 1u);
  EXPECT_EQ(plan.blocked, "no free replica port in 9000-9001");
}

TEST(Reconcile, ScalesDownTheLeastUsefulFirst) {
  ReconcilePlan plan =
      Reconcile(Service(2, 1,
                        {Replica(1, 2, true, true), Replica(2, 2, false, true),
                         Replica(3, 2, false, false), Replica(4, 2, false, true)}));
  EXPECT_THAT(plan.stop, ElementsAre(JobId(3), JobId(4)));
  EXPECT_THAT(plan.start, IsEmpty());
}

TEST(Reconcile, RollsOneReplicaAtATime) {
  // Two old replicas, desired 2: start one new replica first.
  std::vector<ReplicaView> replicas = {Replica(1, 1, true, true), Replica(2, 1, true, true)};
  ReconcilePlan plan = Reconcile(Service(2, 2, replicas));
  // Protected: protection counts the current generation, which the old ones are not.
  EXPECT_THAT(ProtectedOf(plan), ElementsAre(true));
  EXPECT_THAT(plan.stop, IsEmpty());
  // The new one is not ready yet: nothing more.
  replicas.push_back(Replica(3, 2, true, false));
  plan = Reconcile(Service(2, 2, replicas));
  EXPECT_THAT(plan.start, IsEmpty());
  EXPECT_THAT(plan.stop, IsEmpty());
  // Ready: stop one old (the newest of the two).
  replicas.back().ready = true;
  plan = Reconcile(Service(2, 2, replicas));
  EXPECT_THAT(plan.start, IsEmpty());
  EXPECT_THAT(plan.stop, ElementsAre(JobId(2)));
  // Old 2 gone: start the second new one, protected too (one current one is).
  replicas.erase(replicas.begin() + 1);
  plan = Reconcile(Service(2, 2, replicas));
  EXPECT_THAT(ProtectedOf(plan), ElementsAre(true));
  // Both new ready: stop the last old.
  replicas.push_back(Replica(5, 2, true, true));
  plan = Reconcile(Service(2, 2, replicas));
  EXPECT_THAT(plan.stop, ElementsAre(JobId(1)));
}

TEST(Reconcile, HasNothingToDoAtDesired) {
  ReconcilePlan plan =
      Reconcile(Service(2, 1, {Replica(1, 2, true, false), Replica(2, 2, false, true)}));
  EXPECT_THAT(plan.start, IsEmpty());
  EXPECT_THAT(plan.stop, IsEmpty());
}

}  // namespace
}  // namespace drover::control
