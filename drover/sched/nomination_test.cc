// The engine's side of nomination (engine.h, "Nomination"): what a preemption frees goes to its
// preemptor, scenario by scenario and over random scenarios.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "drover/sched/engine.h"
#include "drover/sched/engine_test_util.h"
#include "drover/sched/sched_test_util.h"
#include "drover/sched/scheduler.h"

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

// Randomized: a cycle preempts; then the victims exit one at a time in a random order, each
// queued again at once, newcomers arrive, and a cycle runs after every exit. While a preemptor
// waits, no other job is placed on a node its exited victims freed (so a victim never goes back
// where it was evicted from), and a preemptor that is the only one waiting and whose plan was
// held for it starts in the cycle right after its last victim exits.
TEST(NominationProperty, FreedCapacityGoesOnlyToThePreemptor) {
  int scenarios = 0;
  int exits = 0;
  int started = 0;
  for (std::uint64_t seed = 1; seed <= 500; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    World world(TwoTeams(pick(2, 8), pick(2, 8)));
    const int nodes = pick(1, 4);
    for (int n = 0; n < nodes; ++n) world.AddNode(MakeNode("n" + std::to_string(n), 8));
    std::int64_t id = 100;
    const int running_jobs = pick(2, 10);
    for (int r = 0; r < running_jobs; ++r) {
      model::JobSpec spec = MakeJob(pick(1, 4), pick(1, 2));
      spec.interruptible = pick(0, 2) > 0;
      const model::JobSpec& stored = world.Spec(spec, pick(0, 1) ? "team-a" : "team-b");
      if (!TryPlace(world.cluster(), JobId(id), stored)) break;
      world.Run(id++, stored, 0, pick(-1, 1) * 100);
    }
    auto newcomer = [&](TimeMs at) {
      const model::JobSpec& spec =
          world.Spec(MakeJob(pick(1, 4), pick(1, 2)), pick(0, 1) ? "team-a" : "team-b");
      return Pending(id++, spec, pick(-1, 1) * 100, at);
    };
    TimeMs now = 10 * kMinute;
    std::vector<PendingJob> pending;
    for (int p = pick(1, 4); p > 0; --p) pending.push_back(newcomer(now));
    CycleOutput out = world.Cycle(now, pending);
    if (out.preemptions.empty()) continue;
    ++scenarios;
    world.policy().preemption = false;  // from here on only nomination is exercised
    std::map<JobId, Nomination> nominated;
    std::map<JobId, JobId> preemptor_of;  // victim -> preemptor
    std::set<JobId> stopping;
    std::map<JobId, bool> held;  // preemptor -> its plan was held for it in the last cycle
    for (const Preemption& preemption : out.preemptions) {
      for (JobId victim : preemption.victims) {
        nominated[preemption.preemptor].stopping.insert(victim);
        preemptor_of[victim] = preemption.preemptor;
        stopping.insert(victim);
      }
      held[preemption.preemptor] = true;  // its victims were chosen so that it fits
    }
    auto drop_placed = [&](const CycleOutput& cycle) {
      for (const PlacedJob& placed : cycle.placed) {
        std::erase_if(pending,
                      [&](const PendingJob& job) { return job.job == placed.placement.job; });
      }
    };
    drop_placed(out);
    while (!stopping.empty()) {
      now += 1000;
      auto it = stopping.begin();
      std::advance(it, pick(0, static_cast<int>(stopping.size()) - 1));
      const JobId victim = *it;
      stopping.erase(it);
      const RunningJob* running = nullptr;
      for (const RunningJob& job : world.running()) {
        if (job.job == victim) running = &job;
      }
      ASSERT_NE(running, nullptr) << "seed " << seed;
      const model::JobSpec& victim_spec = *running->spec;
      if (auto nomination = nominated.find(preemptor_of[victim]); nomination != nominated.end()) {
        nomination->second.stopping.erase(victim);
        for (const WorkerAssignment& worker : running->placement->workers) {
          nomination->second.freed.insert(worker.node);
        }
      }
      world.Finish(victim.value());
      pending.push_back(Pending(victim.value(), victim_spec, 0, now));
      if (pick(0, 1)) pending.push_back(newcomer(now));
      out = world.Cycle(now, pending, nominated, stopping);
      ++exits;
      std::set<JobId> placed;
      for (const PlacedJob& job : out.placed) placed.insert(job.placement.job);
      for (const PlacedJob& job : out.placed) {
        if (nominated.contains(job.placement.job)) continue;
        for (const auto& [preemptor, nomination] : nominated) {
          if (placed.contains(preemptor) || nomination.stopping.empty()) continue;
          for (const WorkerAssignment& worker : job.placement.workers) {
            EXPECT_FALSE(nomination.freed.contains(worker.node))
                << "seed " << seed << ": job " << job.placement.job.value() << " placed on "
                << worker.node.value() << ", freed for job " << preemptor.value();
          }
        }
      }
      for (auto nomination = nominated.begin(); nomination != nominated.end();) {
        const JobId preemptor = nomination->first;
        if (nomination->second.stopping.empty()) {
          if (nominated.size() == 1 && held[preemptor]) {
            EXPECT_TRUE(placed.contains(preemptor))
                << "seed " << seed << ": job " << preemptor.value() << " did not start";
          }
          started += placed.contains(preemptor) ? 1 : 0;
          nomination = nominated.erase(nomination);  // placed, or its nomination lapsed
          continue;
        }
        const Verdict* verdict = VerdictOf(out, preemptor.value());
        held[preemptor] =
            verdict != nullptr && verdict->message.find("held for it") != std::string::npos;
        ++nomination;
      }
      drop_placed(out);
    }
  }
  // The scenarios exercise what they check.
  EXPECT_GT(scenarios, 50);
  EXPECT_GT(exits, 80);
  EXPECT_GT(started, 40);
}

}  // namespace
}  // namespace drover::sched
