// The engine's side of nomination (engine.h, "Nomination"): what a preemption frees goes to its
// preemptor, scenario by scenario and over random scenarios.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "drover/sched/engine.h"
#include "drover/sched/engine_test_util.h"
#include "drover/sched/sched_test_util.h"

namespace drover::sched {
namespace {

using testing::ExamplePolicy;
using ::testing::HasSubstr;
using testing::kMinute;
using testing::Leaf;
using testing::MakeJob;
using testing::MakeNode;
using testing::OneQueue;
using testing::Pending;
using testing::PlacedIds;
using testing::TwoTeams;
using testing::VerdictOf;
using testing::World;

// Issue 17, finding 1: team-b runs b-base (4 GPUs) and b-borrow (3, interruptible); d-job (2, in
// default, which goes before team-a by fair share) waits on quota; a-train (3, team-a-batch)
// reclaims b-borrow's GPUs. They go to a-train, not to d-job nor to b-borrow requeued.
TEST(EngineNomination, FreedCapacityGoesToThePreemptorNotToAQueueAheadByFairShare) {
  World world(ExamplePolicy());
  world.AddNode(MakeNode("n1", 8));
  world.Run(20, world.Spec(MakeJob(4), "team-b"), 0);
  model::JobSpec borrow = MakeJob(3);
  borrow.interruptible = true;
  const model::JobSpec& b_borrow = world.Spec(borrow, "team-b");
  world.Run(21, b_borrow, 0);
  const model::JobSpec& d_job = world.Spec(MakeJob(2), "default");
  const model::JobSpec& a_train = world.Spec(MakeJob(3), "team-a-batch");

  CycleOutput out = world.Cycle(kMinute, {Pending(30, d_job), Pending(1, a_train)});
  ASSERT_EQ(out.preemptions.size(), 1u);
  EXPECT_EQ(out.preemptions[0].victims, std::vector<JobId>{JobId(21)});
  EXPECT_EQ(out.preemptions[0].decision.reason, "reclaim");
  EXPECT_TRUE(out.placed.empty());

  // b-borrow stops: a-train waits for it by name; nothing takes what it frees.
  out = world.Cycle(kMinute + 1000, {Pending(30, d_job), Pending(1, a_train)},
                    {{JobId(1), Nomination{{JobId(21)}, {}}}}, {JobId(21)});
  EXPECT_TRUE(out.placed.empty());
  EXPECT_TRUE(out.preemptions.empty());
  ASSERT_NE(VerdictOf(out, 1), nullptr);
  EXPECT_EQ(VerdictOf(out, 1)->layer, model::HoldLayer::kPreempting);
  EXPECT_THAT(VerdictOf(out, 1)->message, HasSubstr("waiting for job 21,"));

  // b-borrow exited and queues again: a-train starts in this cycle, before d-job and b-borrow.
  world.Finish(21);
  out =
      world.Cycle(kMinute + 2000, {Pending(30, d_job), Pending(21, b_borrow), Pending(1, a_train)},
                  {{JobId(1), Nomination{{}, {NodeId("n1")}}}});
  EXPECT_EQ(PlacedIds(out), std::vector<JobId>{JobId(1)});
  EXPECT_TRUE(out.preemptions.empty());
  ASSERT_NE(VerdictOf(out, 30), nullptr);
  EXPECT_EQ(VerdictOf(out, 30)->layer, model::HoldLayer::kQuota);
  ASSERT_NE(VerdictOf(out, 21), nullptr);
  EXPECT_EQ(VerdictOf(out, 21)->layer, model::HoldLayer::kQuota);
}

// While one of two victims has exited and the other still stops, neither a newcomer nor the
// exited victim (requeued) takes the capacity and quota freed so far; the tree and the cluster
// come back unchanged by the claim.
TEST(EngineNomination, CapacityFreedSoFarIsHeldWhileOtherVictimsStop) {
  World world(TwoTeams(4, 4));
  world.AddNode(MakeNode("n1", 8));
  world.Run(11, world.Spec(MakeJob(4), "team-b"), 0);  // not interruptible
  model::JobSpec borrow = MakeJob(2);
  borrow.interruptible = true;
  const model::JobSpec& b2 = world.Spec(borrow, "team-b");
  world.Run(12, b2, 10 * kMinute);
  world.Run(13, world.Spec(borrow, "team-b"), 10 * kMinute);
  const model::JobSpec& a_train = world.Spec(MakeJob(4), "team-a");
  const model::JobSpec& newcomer = world.Spec(MakeJob(2), "team-b");

  CycleOutput out = world.Cycle(20 * kMinute, {Pending(1, a_train)});
  ASSERT_EQ(out.preemptions.size(), 1u);
  EXPECT_EQ(out.preemptions[0].victims, (std::vector<JobId>{JobId(12), JobId(13)}));

  world.Finish(12);
  auto usage = [&world] {
    std::vector<std::pair<model::ResourceAmounts, std::int64_t>> rows;
    for (const QueueStatus& queue : world.queues().Status()) {
      rows.emplace_back(queue.usage, queue.running_jobs);
    }
    return rows;
  };
  const auto usage_before = usage();
  const std::vector<int> free_before = world.cluster().FreeGpus(NodeId("n1"));
  out = world.Cycle(20 * kMinute + 1000,
                    {Pending(1, a_train), Pending(12, b2), Pending(30, newcomer)},
                    {{JobId(1), Nomination{{JobId(13)}, {NodeId("n1")}}}}, {JobId(13)});
  EXPECT_TRUE(out.placed.empty());
  EXPECT_TRUE(out.preemptions.empty());
  EXPECT_EQ(VerdictOf(out, 1)->layer, model::HoldLayer::kPreempting);
  EXPECT_THAT(VerdictOf(out, 1)->message, HasSubstr("waiting for job 13,"));
  EXPECT_THAT(VerdictOf(out, 1)->message, HasSubstr("held for it"));
  EXPECT_EQ(usage(), usage_before);
  EXPECT_EQ(world.cluster().FreeGpus(NodeId("n1")), free_before);

  world.Finish(13);
  out = world.Cycle(20 * kMinute + 2000,
                    {Pending(1, a_train), Pending(12, b2), Pending(30, newcomer)},
                    {{JobId(1), Nomination{{}, {NodeId("n1")}}}});
  EXPECT_EQ(PlacedIds(out), std::vector<JobId>{JobId(1)});
}

// A job held only because its nodes are claimed says so.
TEST(EngineNomination, AJobThatFitsOnlyOnClaimedNodesIsToldWhoHoldsThem) {
  model::Policy policy;
  policy.queues = {Leaf("q", 16)};
  World world(policy);
  world.AddNode(MakeNode("n1", 8));
  model::JobSpec low = MakeJob(4);
  low.interruptible = true;
  world.Run(10, world.Spec(low, "q"), 0, /*priority=*/-100);
  world.Run(11, world.Spec(low, "q"), 0, /*priority=*/-100);
  world.Finish(11);  // a victim of job 1 that has exited; job 10 still stops
  const model::JobSpec& urgent = world.Spec(MakeJob(8), "q");
  const model::JobSpec& small = world.Spec(MakeJob(2), "q");
  CycleOutput out = world.Cycle(kMinute, {Pending(1, urgent, 100), Pending(2, small)},
                                {{JobId(1), Nomination{{JobId(10)}, {NodeId("n1")}}}}, {JobId(10)});
  EXPECT_TRUE(out.placed.empty());
  ASSERT_NE(VerdictOf(out, 2), nullptr);
  EXPECT_EQ(VerdictOf(out, 2)->layer, model::HoldLayer::kReservation);
  EXPECT_THAT(VerdictOf(out, 2)->message, HasSubstr("held for job 1,"));
}

// Every victim has exited but the preemptor still does not fit (the capacity went away): the
// nomination lapses; it takes its ordinary turn and may preempt again.
TEST(EngineNomination, ANominationLapsesWhenThePreemptorStillDoesNotFitAfterItsVictimsExit) {
  World world(OneQueue());
  world.AddNode(MakeNode("n1", 8));
  world.Run(10, world.Spec(MakeJob(8), "q"), 0);  // not interruptible
  CycleOutput out = world.Cycle(kMinute, {Pending(1, world.Spec(MakeJob(4), "q"), 100)},
                                {{JobId(1), Nomination{{}, {NodeId("n1")}}}});
  EXPECT_TRUE(out.placed.empty());
  ASSERT_NE(VerdictOf(out, 1), nullptr);
  EXPECT_EQ(VerdictOf(out, 1)->layer, model::HoldLayer::kQuota);
  EXPECT_THAT(VerdictOf(out, 1)->message, HasSubstr("takes its ordinary turn again"));
  EXPECT_EQ(out.pending.size(), 1u);  // one verdict, from its ordinary turn
}

}  // namespace
}  // namespace drover::sched
