// The controller's side of the scheduling policy: quotas through Submit, preemption as effects,
// requeue with resume, checkpoints and the decision log.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <set>

#include "drover/control/control_test_util.h"
#include "drover/control/controller.h"

namespace drover::control {
namespace {

using model::JobState;
using testing::Exited;
using testing::GpuNode;
using ::testing::HasSubstr;
using testing::kT0;
using testing::Launches;
using testing::Preempted;
using testing::Spec;
using testing::Stops;

// team-a and team-b under one org, 4 GPUs of nominal quota each.
model::Policy TwoTeams() {
  model::Policy policy;
  model::QueueConfig org;
  org.name = "org";
  for (const char* name : {"team-a", "team-b"}) {
    model::QueueConfig team;
    team.name = name;
    team.nominal["gpu"] = 4000;
    org.children.push_back(team);
  }
  policy.queues = {org};
  policy.preemption_grace = 5'000;
  return policy;
}

class PreemptionTest : public testing::ControllerFixture {
 protected:
  PreemptionTest() {
    EXPECT_TRUE(controller_.SetPolicy(TwoTeams()).has_value());
    Step step;
    controller_.UpsertNode(GpuNode("node-a", 8), kT0, step);
  }

  JobId Submit(model::JobSpec spec, TimeMs now) {
    return ControllerFixture::Submit({std::move(spec)}, now).at(0);
  }

  // team-b fills the 8 GPUs: b-base (4, not interruptible) and b1, b2 (2 each, interruptible);
  // a-train (team-a, 4) then preempts b1 and b2. Returns {a-train, b1, b2}.
  std::array<JobId, 3> PreemptTwoBorrowers() {
    const JobId base = Submit(Spec("b-base", "team-b", 4), kT0);
    model::JobSpec borrower = Spec("b-borrow", "team-b", 2);
    borrower.interruptible = true;
    const JobId b1 = Submit(borrower, kT0);
    const JobId b2 = Submit(borrower, kT0);
    StartAll(Schedule(kT0), kT0 + 10);
    EXPECT_EQ(State(base), JobState::kRunning);
    const JobId a = Submit(Spec("a-train", "team-a", 4), kT0 + 1'000);
    EXPECT_EQ(Stops(Schedule(kT0 + 1'000)).size(), 2u);
    return {a, b1, b2};
  }

  // Reports every launched worker of `step` started.
  void StartAll(const Step& step, TimeMs at) {
    for (const LaunchWorker& launch : Launches(step)) {
      Event({launch.spec.key, model::WorkerEvent::Kind::kStarted, at, {}});
    }
  }
};

// A driver without a decision log (the simulator) gets the same placements and preemptions,
// and no decisions in its steps.
TEST_F(PreemptionTest, WithoutADecisionLogTheSameJobsArePlacedAndPreempted) {
  Options options;
  options.decision_log = false;
  controller_ = Controller(options);
  ASSERT_TRUE(controller_.SetPolicy(TwoTeams()).has_value());
  Step nodes;
  controller_.UpsertNode(GpuNode("node-a", 8), kT0, nodes);

  model::JobSpec borrower = Spec("b-train", "team-b", 8);
  borrower.interruptible = true;
  const JobId b = Submit(borrower, kT0);
  Step placed = Schedule(kT0);
  EXPECT_EQ(State(b), JobState::kStarting);
  ASSERT_EQ(Launches(placed).size(), 1u);
  EXPECT_THAT(Launches(placed)[0].spec.gpus, ::testing::SizeIs(8));
  EXPECT_TRUE(placed.decisions.empty());
  StartAll(placed, kT0 + 100);

  Submit(Spec("a-train", "team-a", 4), kT0 + 70'000);
  Step preempt = Schedule(kT0 + 70'000);
  const std::vector<StopWorker> stops = Stops(preempt);
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_TRUE(stops[0].preempt);
  EXPECT_EQ(stops[0].key.job, b);
  EXPECT_TRUE(preempt.decisions.empty());
}

TEST_F(PreemptionTest, SubmitToAnUnknownQueueIsRejected) {
  Step step;
  auto result = controller_.Submit({Spec("x", "nope", 1)}, "", "alice", kT0, step);
  ASSERT_FALSE(result);
  EXPECT_THAT(result.error().message, HasSubstr("queue: nope does not exist"));
  EXPECT_THAT(result.error().message, HasSubstr("team-a"));
  EXPECT_TRUE(step.empty());
}

TEST_F(PreemptionTest, BorrowedGpusAreReclaimedAndTheVictimResumesFromItsCheckpoint) {
  model::JobSpec borrower = Spec("b-train", "team-b", 8);
  borrower.interruptible = true;
  borrower.checkpoint_dir = "/tmp/ckpt";
  const JobId b = Submit(borrower, kT0);
  Step placed = Schedule(kT0);
  ASSERT_EQ(controller_.Find(b)->state, JobState::kStarting);
  ASSERT_EQ(placed.decisions.size(), 1u);
  EXPECT_EQ(placed.decisions[0].kind, model::Decision::Kind::kPlaced);
  EXPECT_THAT(placed.decisions[0].summary, HasSubstr("borrowing"));
  StartAll(placed, kT0 + 100);
  ASSERT_EQ(controller_.Find(b)->state, JobState::kRunning);

  // B checkpoints through its file (reported by the agent as an event).
  Event({{b, 1, 0}, model::WorkerEvent::Kind::kCheckpoint, kT0 + 60'000, {}});
  EXPECT_EQ(controller_.Find(b)->current_attempt()->last_checkpoint_at, kT0 + 60'000);

  // A asks for its own quota: B is preempted, gracefully.
  const JobId a = Submit(Spec("a-train", "team-a", 4), kT0 + 70'000);
  Step preempt = Schedule(kT0 + 70'000);
  std::vector<StopWorker> stops = Stops(preempt);
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_TRUE(stops[0].preempt);
  EXPECT_THAT(stops[0].reason, HasSubstr("reclaim"));
  bool logged_preemption = false;
  bool logged_eviction = false;
  for (const model::Decision& decision : preempt.decisions) {
    if (decision.kind == model::Decision::Kind::kPreempted && decision.job == a) {
      logged_preemption = true;
      ASSERT_EQ(decision.victims.size(), 1u);
      EXPECT_DOUBLE_EQ(decision.victims[0].lost_gpu_seconds, 8 * 10.0);
    }
    if (decision.kind == model::Decision::Kind::kEvicted && decision.job == b) {
      logged_eviction = true;
    }
  }
  EXPECT_TRUE(logged_preemption);
  EXPECT_TRUE(logged_eviction);
  auto explanation = controller_.Explain(a, kT0 + 70'000);
  ASSERT_TRUE(explanation);
  EXPECT_EQ(explanation->layer, model::HoldLayer::kPreempting);

  // B's worker exits on SIGTERM: B queues again with a new attempt that resumes. A is placed;
  // B needs all 8 GPUs, so it waits for A.
  Step exited = Event(Preempted(b, 1, 0, kT0 + 72'000));
  const model::Job& requeued = *controller_.Find(b);
  EXPECT_EQ(requeued.state, JobState::kReady);
  ASSERT_EQ(requeued.attempts.size(), 2u);
  EXPECT_EQ(requeued.attempts[0].preempted_by, a);
  EXPECT_TRUE(requeued.attempts[1].resumed);
  bool resume_cause = false;
  for (const model::Transition& transition : exited.transitions) {
    if (transition.job == b && transition.to == JobState::kReady) {
      resume_cause = transition.cause.find("resume from its checkpoint") != std::string::npos;
    }
  }
  EXPECT_TRUE(resume_cause);

  Step next = Schedule(kT0 + 72'000);
  EXPECT_EQ(controller_.Find(a)->state, JobState::kStarting);
  EXPECT_EQ(controller_.Find(b)->state, JobState::kReady);

  // When A is done, B runs again with DROVER_RESUME=1.
  StartAll(next, kT0 + 72'100);
  Event(Exited(a, 1, 0, 0, kT0 + 80'000));
  Step relaunch = Schedule(kT0 + 80'000);
  bool resumed_env = false;
  for (const LaunchWorker& launch : Launches(relaunch)) {
    if (launch.spec.key.job == b) {
      resumed_env =
          launch.spec.env.count("DROVER_RESUME") == 1 && launch.spec.env.at("DROVER_RESUME") == "1";
      EXPECT_EQ(launch.spec.key.attempt, 2);
      EXPECT_EQ(launch.spec.kill_grace_ms, 5'000);
    }
  }
  EXPECT_TRUE(resumed_env);
}

TEST_F(PreemptionTest, AVictimWithoutCheckpointRetriesFromScratchAndKeepsItsRetries) {
  model::JobSpec borrower = Spec("b-train", "team-b", 8);
  borrower.interruptible = true;
  borrower.retry.max_attempts = 1;
  const JobId b = Submit(borrower, kT0);
  StartAll(Schedule(kT0), kT0 + 10);
  Submit(Spec("a-train", "team-a", 4), kT0 + 1'000);
  Schedule(kT0 + 1'000);
  Event(Preempted(b, 1, 0, kT0 + 2'000));
  const model::Job& job = *controller_.Find(b);
  // Preemption is not a failure: with max_attempts 1 it still queues again.
  EXPECT_EQ(job.state, JobState::kReady);
  EXPECT_FALSE(job.current_attempt()->resumed);
  EXPECT_THAT(job.status_message, HasSubstr("retry from scratch"));
}

TEST_F(PreemptionTest, AGangIsPreemptedWholeAndRequeuedOnlyWhenEveryWorkerExited) {
  model::JobSpec gang = Spec("b-gang", "team-b", 2, /*workers=*/4);  // 8 GPUs on 4 workers
  gang.interruptible = true;
  const JobId b = Submit(gang, kT0);
  StartAll(Schedule(kT0), kT0 + 10);
  Submit(Spec("a-train", "team-a", 2), kT0 + 1'000);
  std::vector<StopWorker> stops = Stops(Schedule(kT0 + 1'000));
  // Every worker of the gang is stopped, each as a preemption; never one alone.
  ASSERT_EQ(stops.size(), 4u);
  std::set<int> ranks;
  for (const StopWorker& stop : stops) {
    EXPECT_EQ(stop.key.job, b);
    EXPECT_TRUE(stop.preempt);
    ranks.insert(stop.key.rank);
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2, 3}));
  // The gang holds its GPUs until its last worker is gone.
  for (int rank = 0; rank < 3; ++rank) Event(Preempted(b, 1, rank, kT0 + 2'000));
  EXPECT_EQ(controller_.Find(b)->state, JobState::kRunning);
  Event(Preempted(b, 1, 3, kT0 + 2'100));
  EXPECT_EQ(controller_.Find(b)->state, JobState::kReady);
}

TEST_F(PreemptionTest, CancellingAVictimWhileItStopsEndsItCancelled) {
  model::JobSpec borrower = Spec("b-train", "team-b", 8);
  borrower.interruptible = true;
  const JobId b = Submit(borrower, kT0);
  StartAll(Schedule(kT0), kT0 + 10);
  Submit(Spec("a-train", "team-a", 4), kT0 + 1'000);
  Schedule(kT0 + 1'000);
  Step cancel;
  ASSERT_TRUE(controller_.Cancel(b, "alice", "cancelled by bob", kT0 + 1'500, cancel).has_value());
  Event(Preempted(b, 1, 0, kT0 + 2'000));
  EXPECT_EQ(controller_.Find(b)->state, JobState::kCancelled);
}

TEST_F(PreemptionTest, ARequeuedVictimGoesAheadOfAJobSubmittedAfterIt) {
  // team-b runs `base` on its own 4 GPUs and `victim` on 4 borrowed from team-a; `later`, of
  // the same user and queue as the victim, is submitted after it and waits.
  const JobId base = Submit(Spec("base", "team-b", 4), kT0);
  model::JobSpec borrower = Spec("victim", "team-b", 4);
  borrower.interruptible = true;
  const JobId victim = Submit(borrower, kT0 + 10);
  StartAll(Schedule(kT0 + 10), kT0 + 20);
  ASSERT_EQ(controller_.Find(victim)->state, JobState::kRunning);
  const JobId later = Submit(Spec("later", "team-b", 4), kT0 + 1'000);
  Schedule(kT0 + 1'000);
  ASSERT_EQ(controller_.Find(later)->state, JobState::kReady);

  // team-a reclaims its GPUs: the victim is requeued, after `later` became ready.
  const JobId reclaimer = Submit(Spec("a-train", "team-a", 4), kT0 + 2'000);
  ASSERT_EQ(Stops(Schedule(kT0 + 2'000)).size(), 1u);
  Event(Preempted(victim, 1, 0, kT0 + 3'000));
  ASSERT_EQ(controller_.Find(victim)->state, JobState::kReady);
  StartAll(Schedule(kT0 + 3'000), kT0 + 3'100);
  ASSERT_EQ(controller_.Find(reclaimer)->state, JobState::kRunning);

  // When team-b's own GPUs free up, the victim keeps the place it had before `later` came.
  Event(Exited(base, 1, 0, 0, kT0 + 4'000));
  Schedule(kT0 + 4'000);
  EXPECT_EQ(controller_.Find(victim)->state, JobState::kStarting);
  EXPECT_EQ(controller_.Find(later)->state, JobState::kReady);
}

TEST_F(PreemptionTest, ARequeuedVictimDoesNotRetakeCapacityWhileItsPreemptorWaits) {
  const auto [a, b1, b2] = PreemptTwoBorrowers();

  // b1 exits and queues again while b2 still stops: what b1 freed is held for a-train.
  Event(Preempted(b1, 1, 0, kT0 + 2'000));
  ASSERT_EQ(State(b1), JobState::kReady);
  EXPECT_TRUE(Launches(Schedule(kT0 + 2'000)).empty());
  EXPECT_EQ(State(b1), JobState::kReady);
  auto waiting = controller_.Explain(a, kT0 + 2'000);
  ASSERT_TRUE(waiting);
  EXPECT_EQ(waiting->layer, model::HoldLayer::kPreempting);
  EXPECT_THAT(waiting->message, HasSubstr(fmt::format("waiting for job {},", b2.value())));

  // b2 exits: a-train starts in the next cycle; b1 and b2 wait.
  Event(Preempted(b2, 1, 0, kT0 + 3'000));
  Schedule(kT0 + 3'000);
  EXPECT_EQ(State(a), JobState::kStarting);
  EXPECT_EQ(State(b1), JobState::kReady);
  EXPECT_EQ(State(b2), JobState::kReady);
}

TEST_F(PreemptionTest, CancellingAWaitingPreemptorReleasesWhatItsVictimsFreed) {
  const auto [a, b1, b2] = PreemptTwoBorrowers();
  Event(Preempted(b1, 1, 0, kT0 + 2'000));
  Step cancel;
  ASSERT_TRUE(
      controller_.Cancel(a, "alice", "cancelled by alice", kT0 + 2'000, cancel).has_value());
  Schedule(kT0 + 2'000);
  EXPECT_EQ(State(b1), JobState::kStarting);
}

TEST_F(PreemptionTest, CheckpointsAreReportedOnlyForRunningJobs) {
  const JobId job = Submit(Spec("x", "team-a", 1), kT0);
  Step step;
  EXPECT_EQ(controller_.ReportCheckpoint(job, kT0, step).error().code,
            ErrorCode::kFailedPrecondition);
  StartAll(Schedule(kT0), kT0 + 10);
  ASSERT_TRUE(controller_.ReportCheckpoint(job, kT0 + 500, step).has_value());
  EXPECT_EQ(controller_.Find(job)->current_attempt()->last_checkpoint_at, kT0 + 500);
  EXPECT_EQ(controller_.ReportCheckpoint(JobId(99), kT0, step).error().code, ErrorCode::kNotFound);
}

TEST_F(PreemptionTest, QueuesReportUsageAndPendingJobs) {
  Submit(Spec("a1", "team-a", 2), kT0);
  model::JobSpec big = Spec("b-big", "team-b", 16);
  big.hold_infeasible = true;  // never fits on 8 GPUs: pending
  Submit(big, kT0);
  Schedule(kT0);
  std::vector<QueueReport> queues = controller_.Queues(kT0);
  ASSERT_EQ(queues.size(), 3u);  // org, team-a, team-b
  EXPECT_EQ(queues[0].status.name, "org");
  EXPECT_EQ(queues[0].pending_jobs, 1);
  EXPECT_EQ(queues[1].status.name, "team-a");
  EXPECT_EQ(queues[1].status.usage.at("gpu"), 2000);
  EXPECT_EQ(queues[2].pending_jobs, 1);
}

TEST_F(PreemptionTest, ABadPolicyChangesNothing) {
  model::Policy bad = TwoTeams();
  bad.queues[0].children[1].name = "team-a";  // duplicate leaf
  EXPECT_FALSE(controller_.SetPolicy(bad).has_value());
  EXPECT_EQ(controller_.policy(), TwoTeams());
}

}  // namespace
}  // namespace drover::control
