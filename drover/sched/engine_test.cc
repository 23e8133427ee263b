#include "drover/sched/engine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <limits>
#include <map>
#include <random>

#include "drover/sched/engine_test_util.h"
#include "drover/sched/estimate.h"
#include "drover/sched/sched_test_util.h"
#include "drover/sched/scheduler.h"

namespace drover::sched {
namespace {

using testing::kGi;
using testing::kHour;
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

// One 8-GPU node, all of it held by job 10 in queue "q": interruptible, at `priority`.
void RunInterruptibleOnAllGpus(World& world, int priority) {
  world.AddNode(MakeNode("n1", 8));
  model::JobSpec low = MakeJob(8);
  low.interruptible = true;
  world.Run(10, world.Spec(low, "q"), 0, priority);
}

// One 8-GPU node, 6 of its GPUs held by job 10 (in "default") until its one-hour time limit.
void RunSixGpusForAnHour(World& world) {
  world.AddNode(MakeNode("n1", 8));
  model::JobSpec running = MakeJob(6);
  running.timeout = kHour;
  world.Run(10, world.Spec(running, "default"), 0);
}

TEST(Engine, QueueWithLowerFairShareGoesFirst) {
  World world(TwoTeams(4, 4));
  world.AddNode(MakeNode("n1", 8));
  world.Run(1, world.Spec(MakeJob(6), "team-a"), 0);
  const auto& a = world.Spec(MakeJob(1), "team-a");
  const auto& b = world.Spec(MakeJob(1), "team-b");
  // team-a's job is older, but team-a already uses 6 GPUs: team-b goes first, and team-b's
  // second job fits too; team-a's job stays pending.
  const auto& b2 = world.Spec(MakeJob(1), "team-b");
  CycleOutput out =
      world.Cycle(1000, {Pending(2, a, 0, 0), Pending(3, b, 0, 500), Pending(4, b2, 0, 600)});
  EXPECT_EQ(PlacedIds(out), (std::vector<JobId>{JobId(3), JobId(4)}));
  const Verdict* verdict = VerdictOf(out, 2);
  ASSERT_NE(verdict, nullptr);
  EXPECT_EQ(verdict->layer, model::HoldLayer::kQuota) << verdict->message;
}

// A caller without a decision log (the simulator) gets the same placements and charges, with
// no decision record written.
TEST(Engine, PlacementsAreTheSameWithoutTheirDecisionRecords) {
  std::vector<CycleOutput> outs;
  for (const bool decisions : {true, false}) {
    World world(TwoTeams(4, 4));
    world.AddNode(MakeNode("n1", 8));
    world.AddNode(MakeNode("n2", 4));
    world.set_placement_decisions(decisions);
    const auto& a = world.Spec(MakeJob(3), "team-a");
    const auto& b = world.Spec(MakeJob(2), "team-b");
    const auto& c = world.Spec(MakeJob(1, 2), "team-b");
    outs.push_back(world.Cycle(0, {Pending(1, a), Pending(2, b), Pending(3, c)}));
  }
  ASSERT_EQ(outs[0].placed.size(), 3u);
  ASSERT_EQ(outs[1].placed.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(outs[1].placed[i].placement, outs[0].placed[i].placement);
    EXPECT_EQ(outs[1].placed[i].charge, outs[0].placed[i].charge);
    EXPECT_EQ(outs[0].placed[i].decision.kind, model::Decision::Kind::kPlaced);
    EXPECT_NE(outs[0].placed[i].decision.summary, "");
    EXPECT_EQ(outs[1].placed[i].decision, model::Decision{});
  }
}

TEST(Engine, JobAboveQuotaWaitsWithQuotaVerdict) {
  model::Policy policy;
  policy.queues = {Leaf("solo", 2, /*borrow=*/0)};
  World world(policy);
  world.AddNode(MakeNode("n1", 8));
  const auto& big = world.Spec(MakeJob(4), "solo");
  CycleOutput out = world.Cycle(0, {Pending(1, big)});
  EXPECT_TRUE(out.placed.empty());
  const Verdict* verdict = VerdictOf(out, 1);
  ASSERT_NE(verdict, nullptr);
  EXPECT_EQ(verdict->layer, model::HoldLayer::kQuota);
  EXPECT_NE(verdict->message.find("solo"), std::string::npos) << verdict->message;
}

TEST(Engine, IdleQuotaIsBorrowed) {
  World world(TwoTeams(4, 4));
  world.AddNode(MakeNode("n1", 8));
  const auto& b = world.Spec(MakeJob(6), "team-b");
  CycleOutput out = world.Cycle(0, {Pending(1, b)});
  ASSERT_EQ(PlacedIds(out), std::vector<JobId>{JobId(1)});
  EXPECT_NE(out.placed[0].decision.summary.find("borrowing"), std::string::npos)
      << out.placed[0].decision.summary;
  EXPECT_TRUE(world.queues().Borrowing(*world.queues().FindLeaf("team-b"), "gpu"));
}

TEST(Engine, LenderReclaimsBorrowedQuotaByPreemptingTheCheapestVictim) {
  World world(TwoTeams(4, 4));
  world.AddNode(MakeNode("n1", 8));
  model::JobSpec interruptible = MakeJob(2);
  interruptible.interruptible = true;
  // team-b borrows: four 2-GPU jobs. Job 11 checkpointed a minute ago, the others never.
  for (int i = 0; i < 4; ++i) {
    world.Run(10 + i, world.Spec(interruptible, "team-b", "bob"), 0, 0, i == 1 ? 59 * kMinute : 0);
  }
  const auto& a = world.Spec(MakeJob(2), "team-a");
  CycleOutput out = world.Cycle(kHour, {Pending(1, a)});
  EXPECT_TRUE(out.placed.empty());
  ASSERT_EQ(out.preemptions.size(), 1u);
  const Preemption& preemption = out.preemptions[0];
  EXPECT_EQ(preemption.preemptor, JobId(1));
  EXPECT_EQ(preemption.victims, std::vector<JobId>{JobId(11)});
  EXPECT_EQ(preemption.decision.reason, "reclaim");
  ASSERT_EQ(preemption.decision.victims.size(), 1u);
  EXPECT_DOUBLE_EQ(preemption.decision.victims[0].lost_gpu_seconds, 2 * 60.0);
  EXPECT_TRUE(preemption.decision.victims[0].has_checkpoint);
  ASSERT_EQ(preemption.evicted.size(), 1u);
  EXPECT_EQ(preemption.evicted[0].preemptor, JobId(1));
  EXPECT_EQ(VerdictOf(out, 1)->layer, model::HoldLayer::kPreempting);
}

TEST(Engine, NonInterruptibleAndProtectedJobsAreNeverVictims) {
  model::Policy policy = TwoTeams(4, 4);
  policy.min_run_time = 10 * kMinute;
  World world(policy);
  world.AddNode(MakeNode("n1", 8));
  model::JobSpec steady = MakeJob(4);  // not interruptible
  world.Run(10, world.Spec(steady, "team-b"), 0);
  model::JobSpec young = MakeJob(4);
  young.interruptible = true;
  world.Run(11, world.Spec(young, "team-b"), 55 * kMinute);  // ran 5 of 10 protected minutes
  const auto& a = world.Spec(MakeJob(4), "team-a");
  CycleOutput out = world.Cycle(kHour, {Pending(1, a)});
  EXPECT_TRUE(out.preemptions.empty());
  // Five minutes later the young job is no longer protected.
  out = world.Cycle(kHour + 5 * kMinute, {Pending(1, a)});
  ASSERT_EQ(out.preemptions.size(), 1u);
  EXPECT_EQ(out.preemptions[0].victims, std::vector<JobId>{JobId(11)});
}

TEST(Engine, AJobStartedThisInstantIsNeverAVictim) {
  // With min_run_time 0, a victim requeued and placed again at once must not be preempted again
  // at the same instant (that would repeat without time passing); a moment later it may be.
  World world(OneQueue());
  RunInterruptibleOnAllGpus(world, /*priority=*/-100);  // started at time 0
  const auto& urgent = world.Spec(MakeJob(4), "q");
  CycleOutput out = world.Cycle(0, {Pending(1, urgent, /*priority=*/100)});
  EXPECT_TRUE(out.preemptions.empty());
  out = world.Cycle(1, {Pending(1, urgent, /*priority=*/100)});
  ASSERT_EQ(out.preemptions.size(), 1u);
  EXPECT_EQ(out.preemptions[0].victims, std::vector<JobId>{JobId(10)});
}

TEST(Engine, HigherPriorityPreemptsWithinItsQueue) {
  World world(OneQueue());
  RunInterruptibleOnAllGpus(world, /*priority=*/-100);
  const auto& urgent = world.Spec(MakeJob(4), "q");
  CycleOutput out = world.Cycle(kMinute, {Pending(1, urgent, /*priority=*/100)});
  ASSERT_EQ(out.preemptions.size(), 1u);
  EXPECT_EQ(out.preemptions[0].decision.reason, "priority");
  // An equal priority does not preempt.
  World peers(OneQueue());
  RunInterruptibleOnAllGpus(peers, /*priority=*/0);
  out = peers.Cycle(kMinute, {Pending(1, peers.Spec(MakeJob(4), "q"), 0)});
  EXPECT_TRUE(out.preemptions.empty());
}

TEST(Engine, AwaitingJobIsTriedFirstAndDoesNotPreemptAgain) {
  World world(OneQueue());
  RunInterruptibleOnAllGpus(world, /*priority=*/-100);
  const auto& urgent = world.Spec(MakeJob(4), "q");
  CycleOutput out = world.Cycle(kMinute, {Pending(1, urgent, 100)},
                                {{JobId(1), Nomination{{JobId(10)}, {}}}}, {JobId(10)});
  EXPECT_TRUE(out.preemptions.empty());
  EXPECT_EQ(VerdictOf(out, 1)->layer, model::HoldLayer::kPreempting);
  EXPECT_THAT(VerdictOf(out, 1)->message, ::testing::HasSubstr("waiting for job 10"));
}

TEST(Engine, BackfillStartsShortJobsAheadOfTheReservationOnly) {
  World world(model::Policy{});
  RunSixGpusForAnHour(world);
  const auto& big = world.Spec(MakeJob(8), "default");
  model::JobSpec short_job = MakeJob(2);
  short_job.timeout = 30 * kMinute;
  const auto& fits_before = world.Spec(short_job, "default");
  const auto& endless = world.Spec(MakeJob(2), "default");
  CycleOutput out = world.Cycle(
      0, {Pending(1, big, 0, 0), Pending(2, endless, 0, 1), Pending(3, fits_before, 0, 2)});
  ASSERT_TRUE(out.reservation.has_value());
  EXPECT_EQ(out.reservation->job, JobId(1));
  EXPECT_EQ(out.reservation->start, kHour);
  ASSERT_TRUE(out.reservation_decision.has_value());
  EXPECT_EQ(PlacedIds(out), std::vector<JobId>{JobId(3)});
  const Verdict* held = VerdictOf(out, 2);
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(held->layer, model::HoldLayer::kReservation) << held->message;
  EXPECT_EQ(VerdictOf(out, 1)->reserved_start, std::optional<TimeMs>(kHour));
}

TEST(Engine, WithoutBackfillLaterJobsFillFreeCapacity) {
  model::Policy policy;
  policy.backfill = false;
  World world(policy);
  RunSixGpusForAnHour(world);
  const auto& big = world.Spec(MakeJob(8), "default");
  const auto& endless = world.Spec(MakeJob(2), "default");
  CycleOutput out = world.Cycle(0, {Pending(1, big, 0, 0), Pending(2, endless, 0, 1)});
  EXPECT_FALSE(out.reservation.has_value());
  EXPECT_EQ(PlacedIds(out), std::vector<JobId>{JobId(2)});
}

// Start estimates (estimate.h), one test per layer that holds a job: the cycle's verdict names
// the layer, and the estimate is the instant that layer releases the job, never earlier.

// The estimate for pending `spec` (job `id`) against `world` now, every layer considered;
// `holder` is the spec of the job `last_cycle` reserved for, if any.
StartEstimate EstimateIn(World& world, std::int64_t id, const model::JobSpec& spec, TimeMs now,
                         const CycleOutput& last_cycle, const model::JobSpec* holder = nullptr) {
  EstimateLayers layers;
  layers.queues = &world.queues();
  if (last_cycle.reservation) {
    layers.reservation = &*last_cycle.reservation;
    layers.reservation_holder = holder;
  }
  return EstimateStart(world.cluster(), world.running(), JobId(id), spec, now, layers);
}

TEST(Engine, EstimateOfNodeFitFollowsTimeLimitsOrIsUnknown) {
  World world(model::Policy{});
  world.AddNode(MakeNode("n1", 8));
  model::JobSpec bounded = MakeJob(4);
  bounded.timeout = 2 * kHour;
  world.Run(10, world.Spec(bounded, "default"), 0);
  world.Run(11, world.Spec(MakeJob(2), "default"), 0);  // no limit
  const auto& two = world.Spec(MakeJob(2), "default");
  const auto& six = world.Spec(MakeJob(6), "default");
  const auto& eight = world.Spec(MakeJob(8), "default");
  EXPECT_EQ(EstimateStart(world.cluster(), world.running(), JobId(1), two, kMinute).at, kMinute);
  const StartEstimate after_limit =
      EstimateStart(world.cluster(), world.running(), JobId(2), six, kMinute);
  EXPECT_EQ(after_limit.at, 2 * kHour);
  EXPECT_EQ(after_limit.basis, "as job 10 reaches its time limit");
  const StartEstimate unknown =
      EstimateStart(world.cluster(), world.running(), JobId(3), eight, kMinute);
  EXPECT_EQ(unknown.at, std::nullopt);
  EXPECT_THAT(unknown.basis, ::testing::StartsWith("unknown: it does not fit"));
}

TEST(Engine, EstimateOfQuotaWaitsForTheCohortsJobsToEnd) {
  model::Policy policy;
  model::QueueConfig org;
  org.name = "org";
  org.children = {Leaf("team-a", 4, /*borrow=*/0), Leaf("team-b", 4)};
  policy.queues = {org};
  World world(policy);
  world.AddNode(MakeNode("n1", 16));
  model::JobSpec hour = MakeJob(4);
  hour.timeout = kHour;
  world.Run(10, world.Spec(hour, "team-a"), 0);
  const auto& waiting = world.Spec(MakeJob(2), "team-a");
  CycleOutput out = world.Cycle(kMinute, {Pending(1, waiting, 0, 0)});
  ASSERT_NE(VerdictOf(out, 1), nullptr);
  EXPECT_EQ(VerdictOf(out, 1)->layer, model::HoldLayer::kQuota);
  // 12 GPUs are free, but quota frees only when job 10 ends.
  const StartEstimate estimate = EstimateIn(world, 1, waiting, kMinute, out);
  EXPECT_EQ(estimate.at, kHour);
  EXPECT_EQ(estimate.basis, "as job 10 reaches its time limit");
  EXPECT_EQ(EstimateStart(world.cluster(), world.running(), JobId(1), waiting, kMinute).at, kMinute)
      << "capacity alone says now: the quota layer is what moves it";

  // Quota held by a job without a limit: unknown, and the sentence names the quota.
  World endless(policy);
  endless.AddNode(MakeNode("n1", 16));
  endless.Run(10, endless.Spec(MakeJob(4), "team-a"), 0);
  const auto& blocked = endless.Spec(MakeJob(2), "team-a");
  CycleOutput endless_out = endless.Cycle(kMinute, {Pending(1, blocked, 0, 0)});
  const StartEstimate unknown = EstimateIn(endless, 1, blocked, kMinute, endless_out);
  EXPECT_EQ(unknown.at, std::nullopt);
  EXPECT_THAT(unknown.basis, ::testing::StartsWith("unknown: held by quota (queue org/team-a"));
}

TEST(Engine, EstimateOfConcurrencyLimitWaitsForTheLimitedJobToEnd) {
  model::Policy policy;
  model::QueueConfig queue;
  queue.name = "solo";
  queue.limits.max_running_jobs = 1;
  policy.queues = {queue};
  World world(policy);
  world.AddNode(MakeNode("n1", 8));
  model::JobSpec half_hour = MakeJob(1);
  half_hour.timeout = 30 * kMinute;
  world.Run(10, world.Spec(half_hour, "solo"), 0);
  const auto& next = world.Spec(MakeJob(1), "solo");
  CycleOutput out = world.Cycle(kMinute, {Pending(1, next, 0, 0)});
  ASSERT_NE(VerdictOf(out, 1), nullptr);
  EXPECT_EQ(VerdictOf(out, 1)->layer, model::HoldLayer::kConcurrencyLimit);
  EXPECT_EQ(EstimateIn(world, 1, next, kMinute, out).at, 30 * kMinute);
}

TEST(Engine, EstimateOfReservationWaitsForTheHolderNotNow) {
  World world(model::Policy{});
  RunSixGpusForAnHour(world);  // job 10: 6 of n1's 8 GPUs until 1h
  model::JobSpec big_spec = MakeJob(8);
  big_spec.timeout = 2 * kHour;
  const auto& big = world.Spec(big_spec, "default");
  const auto& endless = world.Spec(MakeJob(2), "default");
  CycleOutput out = world.Cycle(0, {Pending(1, big, 0, 0), Pending(2, endless, 0, 1)});
  ASSERT_TRUE(out.reservation.has_value());
  ASSERT_EQ(out.reservation->job, JobId(1));
  ASSERT_NE(VerdictOf(out, 2), nullptr);
  EXPECT_EQ(VerdictOf(out, 2)->layer, model::HoldLayer::kReservation);
  // It would fit now on the reserved node; the holder starts at 1h and takes all 8 GPUs until
  // its own limit ends at 3h.
  const StartEstimate estimate = EstimateIn(world, 2, endless, kMinute, out, &big);
  EXPECT_EQ(estimate.at, kHour + 2 * kHour);
  EXPECT_EQ(estimate.basis, "as job 1 reaches its time limit");
  // The holder itself is not held by its own reservation: capacity frees at 1h.
  EXPECT_EQ(EstimateIn(world, 1, big, kMinute, out, &big).at, kHour);
}

TEST(Engine, EstimateOfPlacementLayersIsCapacitys) {
  // Gang size and topology hold a job by free capacity alone: the estimate is when enough
  // frees in one domain.
  World world(model::Policy{});
  model::Node r1 = MakeNode("n1", 4);
  r1.labels["rack"] = "r1";
  model::Node r2 = MakeNode("n2", 4);
  r2.labels["rack"] = "r2";
  world.AddNode(r1);
  world.AddNode(r2);
  model::JobSpec hour = MakeJob(2);
  hour.timeout = kHour;
  model::JobSpec two_hours = MakeJob(2);
  two_hours.timeout = 2 * kHour;
  world.Run(10, world.Spec(hour, "default"), 0);       // n1 (binpack: n1 first)
  world.Run(11, world.Spec(two_hours, "default"), 0);  // n1 again: n1 full
  model::JobSpec rack_gang = MakeJob(1, /*workers=*/6);
  rack_gang.requirements.topology_level = "rack";
  const auto& gang = world.Spec(rack_gang, "default");
  model::JobSpec one_rack = MakeJob(1, /*workers=*/4);
  one_rack.requirements.topology_level = "rack";
  const auto& four = world.Spec(one_rack, "default");
  model::JobSpec spread = MakeJob(1, /*workers=*/6);
  const auto& six = world.Spec(spread, "default");
  CycleOutput out = world.Cycle(0, {Pending(1, gang, 0, 0), Pending(2, six, 0, 1)});
  ASSERT_NE(VerdictOf(out, 1), nullptr);
  EXPECT_EQ(VerdictOf(out, 1)->layer, model::HoldLayer::kTopology);
  ASSERT_NE(VerdictOf(out, 2), nullptr);
  EXPECT_EQ(VerdictOf(out, 2)->layer, model::HoldLayer::kGangSize);
  // No rack holds 6 GPUs ever: unknown. 6 workers anywhere: when job 10 frees 2 (1h).
  EXPECT_EQ(EstimateIn(world, 1, gang, 0, out).at, std::nullopt);
  EXPECT_EQ(EstimateIn(world, 2, six, 0, out).at, kHour);
  // 4 workers in one rack: n2 holds them now.
  EXPECT_EQ(EstimateIn(world, 3, four, 0, out).at, 0);
}

TEST(Engine, ConcurrencyLimitHoldsJobsApartFromCapacity) {
  model::Policy policy;
  model::QueueConfig queue;
  queue.name = "q";
  queue.user_limits.max_running_jobs = 1;
  policy.queues = {queue};
  World world(policy);
  world.AddNode(MakeNode("n1", 8));
  const auto& first = world.Spec(MakeJob(1), "q", "alice");
  const auto& second = world.Spec(MakeJob(1), "q", "alice");
  const auto& other = world.Spec(MakeJob(1), "q", "bob");
  CycleOutput out =
      world.Cycle(0, {Pending(1, first, 0, 0), Pending(2, second, 0, 1), Pending(3, other, 0, 2)});
  EXPECT_EQ(PlacedIds(out), (std::vector<JobId>{JobId(1), JobId(3)}));
  EXPECT_EQ(VerdictOf(out, 2)->layer, model::HoldLayer::kConcurrencyLimit);
}

TEST(Engine, GangStartsSmallerDownToMinWorkers) {
  World world(model::Policy{});
  world.AddNode(MakeNode("n1", 4));
  model::JobSpec elastic = MakeJob(1, /*workers=*/8);
  elastic.min_workers = 2;
  const auto& spec = world.Spec(elastic, "default");
  CycleOutput out = world.Cycle(0, {Pending(1, spec)});
  ASSERT_EQ(out.placed.size(), 1u);
  EXPECT_EQ(out.placed[0].placement.workers.size(), 4u);
  EXPECT_EQ(out.placed[0].charge.amounts.at("gpu"), 4000);
  // Below min_workers it waits, and says the gang is the problem.
  World small(model::Policy{});
  small.AddNode(MakeNode("n1", 1));
  out = small.Cycle(0, {Pending(1, small.Spec(elastic, "default"))});
  EXPECT_TRUE(out.placed.empty());
  EXPECT_EQ(VerdictOf(out, 1)->layer, model::HoldLayer::kGangSize) << VerdictOf(out, 1)->message;
}

TEST(Engine, AgingLiftsOldJobsAboveNewerHigherPriorityOnes) {
  model::Policy policy;
  policy.aging_interval = 10 * kMinute;
  policy.aging_step = 100;
  policy.aging_max = 1000;
  EXPECT_EQ(EffectivePriority(policy, -100, 0, 25 * kMinute), 100);
  EXPECT_EQ(EffectivePriority(policy, 0, 0, 100 * kHour), 1000);
  World world(policy);
  world.AddNode(MakeNode("n1", 1));
  const auto& old_low = world.Spec(MakeJob(1), "default");
  const auto& new_high = world.Spec(MakeJob(1), "default");
  CycleOutput out =
      world.Cycle(2 * kHour, {Pending(1, new_high, 100, 2 * kHour), Pending(2, old_low, -100, 0)});
  EXPECT_EQ(PlacedIds(out), std::vector<JobId>{JobId(2)});
}

TEST(Engine, GpuFlavorsAreTriedInTurnAndPlacementFollowsTheAdmittedFlavor) {
  model::Policy policy;
  model::QueueConfig queue;
  queue.name = "q";
  queue.nominal = {{"gpu", 8000}, {"gpu:h100", 2000}, {"gpu:a100", 6000}};
  queue.borrowing_limit = {{"gpu:h100", 0}, {"gpu:a100", 0}};
  policy.queues = {queue};
  World world(policy);
  world.AddNode(MakeNode("h", 8, "H100"));
  world.AddNode(MakeNode("a", 8, "A100"));
  // Any model: the H100 quota (2) cannot take 4, the A100 quota can, and the job lands there.
  const auto& any = world.Spec(MakeJob(4), "q");
  CycleOutput out = world.Cycle(0, {Pending(1, any)});
  ASSERT_EQ(out.placed.size(), 1u);
  EXPECT_EQ(out.placed[0].placement.workers[0].node, NodeId("a"));
  EXPECT_EQ(out.placed[0].charge.amounts.at("gpu:a100"), 4000);
  // An H100-only job above the H100 quota waits on quota, though H100s are free.
  model::JobSpec h100 = MakeJob(4);
  h100.requirements.gpu_models = {"H100"};
  out = world.Cycle(0, {Pending(2, world.Spec(h100, "q"))});
  EXPECT_TRUE(out.placed.empty());
  ASSERT_NE(VerdictOf(out, 2), nullptr);
  EXPECT_EQ(VerdictOf(out, 2)->layer, model::HoldLayer::kQuota) << VerdictOf(out, 2)->message;
  EXPECT_NE(VerdictOf(out, 2)->message.find(
                "of its 2 H100 GPUs; it may not borrow; this job needs 4 H100 GPUs"),
            std::string::npos)
      << VerdictOf(out, 2)->message;
}

TEST(Engine, UnknownQueueIsTheQueueLayer) {
  World world(TwoTeams(4, 4));
  world.AddNode(MakeNode("n1", 8));
  CycleOutput out = world.Cycle(0, {Pending(1, world.Spec(MakeJob(1), "nope"))});
  ASSERT_NE(VerdictOf(out, 1), nullptr);
  EXPECT_EQ(VerdictOf(out, 1)->layer, model::HoldLayer::kQueue);
  EXPECT_NE(VerdictOf(out, 1)->message.find("team-a"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Queue orders (model::QueueOrder).

model::Policy Ordered(model::QueueOrder order, model::Policy policy = {}) {
  policy.order = order;
  return policy;
}

TEST(EngineOrder, FifoTakesSubmissionOrderWhateverThePriority) {
  // One free GPU; job 1 was submitted first at a low priority (and re-entered the queue later,
  // after a retry), job 2 later at a high one.
  for (model::QueueOrder order : {model::QueueOrder::kFairShare, model::QueueOrder::kFifo}) {
    World world(Ordered(order));
    world.AddNode(MakeNode("n1", 1));
    const auto& low = world.Spec(MakeJob(1), "default");
    const auto& high = world.Spec(MakeJob(1), "default");
    world.history()[JobId(1)] = JobHistory{0, 0};
    world.history()[JobId(2)] = JobHistory{10, 0};
    CycleOutput out = world.Cycle(
        kMinute, {Pending(1, low, -100, /*enqueued_at=*/50), Pending(2, high, 100, 10)});
    EXPECT_EQ(PlacedIds(out), std::vector<JobId>{JobId(order == model::QueueOrder::kFifo ? 1 : 2)})
        << model::QueueOrderName(order);
  }
}

TEST(EngineOrder, FifoIgnoresFairShareButKeepsQuotas) {
  // team-a already holds 6 GPUs: fair share would try team-b first. FIFO tries team-a's older
  // job first; team-b's job then exceeds the cohort's quota and waits on it.
  World world(Ordered(model::QueueOrder::kFifo, TwoTeams(4, 4)));
  world.AddNode(MakeNode("n1", 8));
  world.Run(1, world.Spec(MakeJob(6), "team-a"), 0);
  const auto& a = world.Spec(MakeJob(1), "team-a");
  const auto& b = world.Spec(MakeJob(2), "team-b");
  world.history()[JobId(2)] = JobHistory{100, 0};
  world.history()[JobId(3)] = JobHistory{200, 0};
  CycleOutput out = world.Cycle(kMinute, {Pending(2, a, -100, 100), Pending(3, b, 100, 200)});
  EXPECT_EQ(PlacedIds(out), std::vector<JobId>{JobId(2)});
  ASSERT_NE(VerdictOf(out, 3), nullptr);
  EXPECT_EQ(VerdictOf(out, 3)->layer, model::HoldLayer::kQuota) << VerdictOf(out, 3)->message;
}

TEST(EngineOrder, FifoAndSjfDoNotPreemptForPriority) {
  for (model::QueueOrder order : {model::QueueOrder::kFifo, model::QueueOrder::kSjf}) {
    World world(Ordered(order, OneQueue()));
    RunInterruptibleOnAllGpus(world, /*priority=*/-100);
    const auto& urgent = world.Spec(MakeJob(4), "q");
    CycleOutput out = world.Cycle(kMinute, {Pending(1, urgent, /*priority=*/100)});
    EXPECT_TRUE(out.preemptions.empty()) << model::QueueOrderName(order);
    EXPECT_TRUE(out.placed.empty());
  }
}

TEST(EngineOrder, SjfTakesTheShortestTimeLimitFirstAndJobsWithoutOneLast) {
  World world(Ordered(model::QueueOrder::kSjf));
  world.AddNode(MakeNode("n1", 3));
  model::JobSpec unbounded = MakeJob(1);
  model::JobSpec two_hours = MakeJob(1);
  two_hours.timeout = 2 * kHour;
  model::JobSpec half_hour = MakeJob(1);
  half_hour.timeout = 30 * kMinute;
  const auto& a = world.Spec(unbounded, "default");
  const auto& b = world.Spec(two_hours, "default");
  const auto& c = world.Spec(half_hour, "default");
  const auto& d = world.Spec(half_hour, "default");
  for (std::int64_t id = 1; id <= 4; ++id) world.history()[JobId(id)] = JobHistory{id, 0};
  // Listed in the worst order; equal limits (3 and 4) go in submission order.
  CycleOutput out = world.Cycle(kMinute, {Pending(4, d, 0, 4), Pending(1, a, 0, 1),
                                          Pending(2, b, 0, 2), Pending(3, c, 0, 3)});
  EXPECT_EQ(PlacedIds(out), (std::vector<JobId>{JobId(3), JobId(4), JobId(2)}));
  ASSERT_NE(VerdictOf(out, 1), nullptr);
  EXPECT_EQ(VerdictOf(out, 1)->layer, model::HoldLayer::kNodeFit);
  EXPECT_NE(VerdictOf(out, 1)->message.find("3 jobs ahead of it in sjf order"), std::string::npos)
      << VerdictOf(out, 1)->message;
}

TEST(EngineOrder, LasQueueCountsTheThresholdsReached) {
  model::Policy policy = Ordered(model::QueueOrder::kLas);
  EXPECT_EQ(policy.las_thresholds, (std::vector<std::int64_t>{3250, 7200}));
  policy.las_thresholds = {100, 1000};
  EXPECT_EQ(LasQueue(policy, 0), 0);
  EXPECT_EQ(LasQueue(policy, 99'999), 0);
  EXPECT_EQ(LasQueue(policy, 100'000), 1);
  EXPECT_EQ(LasQueue(policy, 999'999), 1);
  EXPECT_EQ(LasQueue(policy, 1'000'000), 2);
  EXPECT_EQ(LasQueue(policy, std::numeric_limits<std::int64_t>::max()), 2);
}

TEST(EngineOrder, LasTakesTheLeastAttainedServiceQueueFirstThenSubmissionOrder) {
  model::Policy policy = Ordered(model::QueueOrder::kLas);
  policy.las_thresholds = {100, 1000};  // GPU-seconds
  World world(policy);
  world.AddNode(MakeNode("n1", 4));
  // Attained GPU-ms by job: 1 and 5 in queue 1, 2 in queue 2, 3 and 4 in queue 0.
  const std::map<std::int64_t, std::int64_t> attained = {
      {1, 500'000}, {2, 2'000'000}, {3, 0}, {4, 99'999}, {5, 100'000}};
  std::vector<PendingJob> pending;
  for (const auto& [id, gpu_ms] : attained) {
    world.history()[JobId(id)] = JobHistory{id, gpu_ms};
    pending.push_back(Pending(id, world.Spec(MakeJob(1), "default"), /*priority=*/-id, id));
  }
  CycleOutput out = world.Cycle(kMinute, pending);
  EXPECT_EQ(PlacedIds(out), (std::vector<JobId>{JobId(3), JobId(4), JobId(1), JobId(5)}));
  ASSERT_NE(VerdictOf(out, 2), nullptr);
}

TEST(EngineOrder, LasDemotesALongRunningJobSoANewJobPreemptsIt) {
  World world(Ordered(model::QueueOrder::kLas, OneQueue()));
  RunInterruptibleOnAllGpus(world, /*priority=*/100);  // the class priority does not matter
  const auto& fresh = world.Spec(MakeJob(4), "q");
  auto cycle_at = [&](TimeMs now) {
    world.history()[JobId(10)] = JobHistory{0, 8 * now};  // 8 GPUs since 0
    world.history()[JobId(1)] = JobHistory{now, 0};
    return world.Cycle(now, {Pending(1, fresh, /*priority=*/-100, now)});
  };
  // 8 GPUs x 6 minutes = 2880 GPU-seconds: both jobs in LAS queue 0, nothing is preempted.
  CycleOutput out = cycle_at(6 * kMinute);
  EXPECT_TRUE(out.preemptions.empty());
  EXPECT_TRUE(out.placed.empty());
  // 7 minutes: 3360 >= 3250, the running job is demoted to queue 1 and preempted.
  out = cycle_at(7 * kMinute);
  ASSERT_EQ(out.preemptions.size(), 1u);
  EXPECT_EQ(out.preemptions[0].victims, std::vector<JobId>{JobId(10)});
  EXPECT_EQ(out.preemptions[0].decision.reason, "priority");
  EXPECT_NE(out.preemptions[0].decision.summary.find("least attained service"), std::string::npos)
      << out.preemptions[0].decision.summary;
  EXPECT_EQ(VerdictOf(out, 1)->layer, model::HoldLayer::kPreempting);
}

TEST(EngineOrder, LasPreemptsOnlyInterruptibleJobsPastTheirMinRunTime) {
  model::Policy policy = Ordered(model::QueueOrder::kLas, OneQueue());
  policy.las_thresholds = {1000};
  policy.min_run_time = 10 * kMinute;
  World world(policy);
  world.AddNode(MakeNode("n1", 8));
  world.Run(10, world.Spec(MakeJob(4), "q"), 0);  // not interruptible
  model::JobSpec interruptible = MakeJob(4);
  interruptible.interruptible = true;
  // Job 11's current attempt started at 10 minutes; earlier attempts put it in queue 1 already.
  world.Run(11, world.Spec(interruptible, "q"), 10 * kMinute);
  const auto& fresh = world.Spec(MakeJob(4), "q");
  auto cycle_at = [&](TimeMs now) {
    world.history()[JobId(10)] = JobHistory{0, 4 * now};
    world.history()[JobId(11)] = JobHistory{1, 2'000'000 + 4 * (now - 10 * kMinute)};
    world.history()[JobId(1)] = JobHistory{now, 0};
    return world.Cycle(now, {Pending(1, fresh, 0, now)});
  };
  // At 15 minutes both running jobs are in LAS queue 1: job 10 is not interruptible, job 11 has
  // run 5 of its 10 protected minutes.
  EXPECT_TRUE(cycle_at(15 * kMinute).preemptions.empty());
  // At 20 minutes job 11 is no longer protected; job 10 still never goes.
  CycleOutput out = cycle_at(20 * kMinute);
  ASSERT_EQ(out.preemptions.size(), 1u);
  EXPECT_EQ(out.preemptions[0].victims, std::vector<JobId>{JobId(11)});
}

TEST(EngineOrder, LasDoesNotPreemptAJobOfTheSameLasQueue) {
  model::Policy policy = Ordered(model::QueueOrder::kLas, OneQueue());
  World world(policy);
  RunInterruptibleOnAllGpus(world, 0);
  world.history()[JobId(10)] = JobHistory{0, 4'000'000};  // queue 1
  world.history()[JobId(1)] = JobHistory{1, 3'300'000};   // queue 1 too, after an earlier run
  CycleOutput out = world.Cycle(kHour, {Pending(1, world.Spec(MakeJob(4), "q"), 0, 1)});
  EXPECT_TRUE(out.preemptions.empty());
}

// Randomized: over many seeded scenarios, the engine's preemptions never pick a job that is not
// interruptible or still protected, never pick more than the preemptor needs in one queue
// without a reason, and backfill never delays the reserved job: after the cycle's placements
// (each ending by its time limit) the reserved job's estimated start is not later.
TEST(EngineProperty, PreemptionAndBackfillInvariantsHold) {
  int reservations = 0;
  int backfilled = 0;
  int preemptions = 0;
  for (std::uint64_t seed = 1; seed <= 600; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    model::Policy policy = TwoTeams(pick(2, 8), pick(2, 8));
    policy.min_run_time = pick(0, 3) * kMinute;
    World world(policy);
    const int nodes = pick(1, 4);
    for (int n = 0; n < nodes; ++n) world.AddNode(MakeNode("n" + std::to_string(n), 8));
    const TimeMs now = 10 * kMinute;
    std::int64_t id = 100;
    const int running_jobs = pick(1, 8);
    for (int r = 0; r < running_jobs; ++r) {
      model::JobSpec spec = MakeJob(pick(1, 4), pick(1, 2));
      spec.interruptible = pick(0, 1) == 1;
      if (pick(0, 2) > 0) spec.timeout = pick(1, 60) * kMinute;
      const model::JobSpec& stored = world.Spec(spec, pick(0, 1) ? "team-a" : "team-b");
      if (!TryPlace(world.cluster(), JobId(id), stored)) break;
      world.Run(id++, stored, pick(0, 10) * kMinute, pick(-1, 1) * 100, 0);
    }
    std::vector<PendingJob> pending;
    const int pending_jobs = pick(2, 8);
    for (int p = 0; p < pending_jobs; ++p) {
      // A large job first (it tends to get the reservation), then smaller ones to backfill.
      model::JobSpec spec = p == 0 ? MakeJob(pick(4, 8), pick(1, 2)) : MakeJob(pick(1, 3));
      if (pick(0, 2) > 0) spec.timeout = pick(1, 90) * kMinute;
      const model::JobSpec& stored = world.Spec(spec, pick(0, 1) ? "team-a" : "team-b");
      pending.push_back(Pending(p + 1, stored, pick(-1, 1) * 100, p));
    }
    CycleOutput out = world.Cycle(now, pending);
    std::map<JobId, const RunningJob*> running;
    for (const RunningJob& job : world.running()) running[job.job] = &job;
    preemptions += static_cast<int>(out.preemptions.size());
    for (const Preemption& preemption : out.preemptions) {
      for (JobId victim : preemption.victims) {
        ASSERT_TRUE(running.contains(victim)) << "seed " << seed;
        const RunningJob& job = *running[victim];
        EXPECT_TRUE(job.spec->interruptible) << "seed " << seed;
        EXPECT_GE(now - job.started_at, policy.min_run_time) << "seed " << seed;
      }
    }
    if (out.reservation) {
      ++reservations;
      backfilled += static_cast<int>(out.placed.size());
      // The backfilled jobs run to their limits; the reserved job must still start in time.
      std::vector<RunningJob> after = world.running();
      std::deque<Charge> charges;
      for (const PlacedJob& placed : out.placed) {
        const model::JobSpec* spec = nullptr;
        for (const PendingJob& job : pending) {
          if (job.job == placed.placement.job) spec = job.spec;
        }
        charges.push_back(placed.charge);
        after.push_back(
            RunningJob{placed.placement.job, spec, &placed.placement, &charges.back(), 0, now, 0});
      }
      const model::JobSpec* reserved = nullptr;
      for (const PendingJob& job : pending) {
        if (job.job == out.reservation->job) reserved = job.spec;
      }
      ASSERT_NE(reserved, nullptr);
      auto start = EstimateStart(world.cluster(), after, out.reservation->job, *reserved, now).at;
      ASSERT_TRUE(start.has_value()) << "seed " << seed;
      EXPECT_LE(*start, out.reservation->start) << "seed " << seed;
    }
  }
  // The scenarios exercise what they check.
  EXPECT_GT(reservations, 20);
  EXPECT_GT(backfilled, 20);
  EXPECT_GT(preemptions, 20);
}

}  // namespace
}  // namespace drover::sched
