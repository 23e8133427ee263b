// The controller's side of external executors (model/executor.h): admission without placement,
// the hand-off as a SubmitExternal effect, the engine's events through the lifecycle, cancel,
// retry after the engine's own preemption, continuing a job the engine requeued, and restart.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drover/control/control_test_util.h"
#include "drover/control/controller.h"

namespace drover::control {
namespace {

using model::ExecutorEvent;
using model::JobState;
using testing::EffectsOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::kT0;
using testing::Launches;
using testing::Spec;

// Queue "hpc" (4 GPUs of quota) runs on Slurm partition gpu; "local" on Drover's nodes.
model::Policy SlurmPolicy() {
  model::Policy policy;
  model::QueueConfig hpc;
  hpc.name = "hpc";
  hpc.nominal["gpu"] = 4000;
  hpc.borrowing_limit["gpu"] = 0;
  model::ExecutorConfig slurm;
  slurm.kind = model::ExecutorKind::kSlurm;
  slurm.slurm.partition = "gpu";
  hpc.executor = slurm;
  model::QueueConfig local;
  local.name = "local";
  local.nominal["gpu"] = 4000;
  policy.queues = {hpc, local};
  return policy;
}

class ExecutorTest : public testing::ControllerFixture {
 protected:
  ExecutorTest() { EXPECT_TRUE(controller_.SetPolicy(SlurmPolicy()).has_value()); }

  Step On(ExecutorEvent event) {
    Step step;
    controller_.OnExecutorEvent(event, step);
    return step;
  }

  static ExecutorEvent Event(JobId job, int attempt, ExecutorEvent::Kind kind, TimeMs at) {
    ExecutorEvent event;
    event.ref = {job, attempt, model::ExecutorKind::kSlurm, model::ExternalName(job, attempt),
                 "17"};
    event.kind = kind;
    event.at = at;
    return event;
  }

  static ExecutorEvent Exit(JobId job, int attempt, model::ExitStatus exit, TimeMs at) {
    ExecutorEvent event = Event(job, attempt, ExecutorEvent::Kind::kExited, at);
    event.exit = exit;
    return event;
  }
};

model::ExitStatus ExitCode(int code) {
  model::ExitStatus exit;
  exit.exit_code = code;
  return exit;
}

TEST(ExecutorOfTest, NearestSettingOnThePathWins) {
  model::Policy policy;
  model::QueueConfig org;
  org.name = "org";
  org.executor = model::ExecutorConfig{model::ExecutorKind::kKubernetes, {}, {}};
  model::QueueConfig a;
  a.name = "a";
  model::QueueConfig b;
  b.name = "b";
  b.executor = model::ExecutorConfig{model::ExecutorKind::kSlurm, {"p", "", ""}, {}};
  org.children = {a, b};
  model::QueueConfig c;
  c.name = "c";
  policy.queues = {org, c};
  EXPECT_EQ(model::ExecutorOf(policy, "a").kind, model::ExecutorKind::kKubernetes);
  EXPECT_EQ(model::ExecutorOf(policy, "b").kind, model::ExecutorKind::kSlurm);
  EXPECT_EQ(model::ExecutorOf(policy, "b").slurm.partition, "p");
  EXPECT_EQ(model::ExecutorOf(policy, "c").kind, model::ExecutorKind::kLocal);
  EXPECT_EQ(model::ExecutorOf(policy, "org").kind, model::ExecutorKind::kLocal);  // not a leaf
  EXPECT_EQ(model::ExecutorOf(policy, "nope").kind, model::ExecutorKind::kLocal);
}

TEST_F(ExecutorTest, AdmittedWithoutNodesAndHandedOffWithTheContract) {
  model::JobSpec spec = Spec("train", "hpc", 2, 2);
  spec.checkpoint_dir = "/ckpt/train";
  spec.env["LR"] = "0.1";
  JobId id = Submit({spec}).at(0);
  // No node is registered at all: placement is the engine's business.
  Step step = Schedule(kT0);
  EXPECT_TRUE(Launches(step).empty());
  auto submits = EffectsOf<SubmitExternal>(step);
  ASSERT_EQ(submits.size(), 1u);
  const model::ExternalLaunch& launch = submits[0].launch;
  EXPECT_EQ(launch.ref.name, "drover-" + std::to_string(id.value()) + "-1");
  EXPECT_EQ(launch.executor.slurm.partition, "gpu");
  EXPECT_EQ(launch.env.at("DROVER_NUM_WORKERS"), "2");
  EXPECT_EQ(launch.env.at("DROVER_CHECKPOINT_DIR"), "/ckpt/train");
  EXPECT_EQ(launch.env.at("LR"), "0.1");
  EXPECT_FALSE(launch.env.contains("DROVER_WORKER_RANK"));  // per worker, from the engine
  EXPECT_THAT(launch.make_dirs, ElementsAre("/ckpt/train"));
  // The submitter's account, as a LaunchSpec carries it (a root executor submits as it).
  EXPECT_EQ(launch.run_as, "alice");
  EXPECT_FALSE(launch.may_run_as_root);
  EXPECT_EQ(State(id), JobState::kAdmitted);
  ASSERT_EQ(step.decisions.size(), 1u);
  EXPECT_THAT(step.decisions[0].summary, HasSubstr("left to the queue's executor (slurm)"));
  // Its 4 GPUs count against the queue: a second job of the same size waits for quota.
  JobId second = Submit({Spec("second", "hpc", 2, 2)}, kT0 + 1).at(0);
  Step next = Schedule(kT0 + 2);
  EXPECT_TRUE(EffectsOf<SubmitExternal>(next).empty());
  EXPECT_EQ(controller_.Explain(second, kT0 + 2)->layer, model::HoldLayer::kQuota);
}

TEST_F(ExecutorTest, EngineEventsFillTheTimelineAndEndTheJob) {
  JobId id = Submit({Spec("train", "hpc", 1)}).at(0);
  Schedule(kT0);
  On(Event(id, 1, ExecutorEvent::Kind::kSubmitted, kT0 + 10));
  EXPECT_EQ(controller_.Find(id)->current_attempt()->external_id, "17");
  ExecutorEvent pending = Event(id, 1, ExecutorEvent::Kind::kPending, kT0 + 20);
  pending.reason = "Resources: waiting for resources";
  EXPECT_EQ(On(pending).changed.size(), 1u);
  EXPECT_TRUE(On(pending).changed.empty());  // the same reason again changes nothing
  EXPECT_THAT(controller_.Find(id)->status_message, HasSubstr("slurm job 17 pending: Resources"));
  ExecutorEvent started = Event(id, 1, ExecutorEvent::Kind::kStarted, kT0 + 1000);
  started.nodes = {"n2"};
  On(started);
  const model::Job& job = *controller_.Find(id);
  EXPECT_EQ(job.state, JobState::kRunning);
  EXPECT_EQ(job.current_attempt()->running_at, kT0 + 1000);
  EXPECT_EQ(job.current_attempt()->workers[0].host, "n2");
  EXPECT_TRUE(job.current_attempt()->external_reason.empty());
  On(Exit(id, 1, ExitCode(0), kT0 + 5000));
  EXPECT_EQ(State(id), JobState::kSucceeded);
  // Quota is free again: the next job is handed off at once.
  JobId next = Submit({Spec("next", "hpc", 4)}, kT0 + 5001).at(0);
  EXPECT_EQ(EffectsOf<SubmitExternal>(Schedule(kT0 + 5002)).size(), 1u);
  EXPECT_EQ(State(next), JobState::kAdmitted);
}

TEST_F(ExecutorTest, EventsOfAnotherAttemptAndTimesBeforeTheHandOffAreHandled) {
  JobId id = Submit({Spec("train", "hpc", 1)}).at(0);
  Schedule(kT0 + 500);
  EXPECT_TRUE(On(Event(id, 2, ExecutorEvent::Kind::kSubmitted, kT0 + 600)).empty());
  // Slurm's whole-second clock may say the job started before Drover handed it off.
  On(Event(id, 1, ExecutorEvent::Kind::kStarted, kT0));
  EXPECT_EQ(controller_.Find(id)->current_attempt()->placed_at, kT0 + 500);
}

TEST_F(ExecutorTest, FailureRetriesWithANewSubmission) {
  model::JobSpec spec = Spec("train", "hpc", 1);
  spec.retry.max_attempts = 2;
  JobId id = Submit({spec}).at(0);
  Schedule(kT0);
  On(Event(id, 1, ExecutorEvent::Kind::kStarted, kT0 + 10));
  On(Exit(id, 1, ExitCode(3), kT0 + 20));
  EXPECT_EQ(State(id), JobState::kReady);
  auto submits = EffectsOf<SubmitExternal>(Schedule(kT0 + 30));
  ASSERT_EQ(submits.size(), 1u);
  EXPECT_EQ(submits[0].launch.ref.attempt, 2);
  EXPECT_THAT(controller_.Find(id)->attempts[0].outcome_reason, HasSubstr("slurm job 17: exit 3"));
}

TEST_F(ExecutorTest, EnginePreemptionRequeuesAndResumesFromTheCheckpoint) {
  model::JobSpec spec = Spec("train", "hpc", 1);
  spec.checkpoint_dir = "/ckpt";
  spec.resume = true;
  JobId id = Submit({spec}).at(0);
  Schedule(kT0);
  On(Event(id, 1, ExecutorEvent::Kind::kStarted, kT0 + 10));
  Step step;
  ASSERT_TRUE(controller_.ReportCheckpoint(id, kT0 + 50, step).has_value());
  model::ExitStatus preempted;
  preempted.signal = 15;
  preempted.preempted = true;
  On(Exit(id, 1, preempted, kT0 + 100));
  // Preemption does not count against max_attempts (1 here).
  EXPECT_EQ(State(id), JobState::kReady);
  auto submits = EffectsOf<SubmitExternal>(Schedule(kT0 + 110));
  ASSERT_EQ(submits.size(), 1u);
  EXPECT_EQ(submits[0].launch.env.at("DROVER_RESUME"), "1");
  EXPECT_EQ(submits[0].launch.env.at("DROVER_ATTEMPT"), "2");
}

TEST_F(ExecutorTest, NodeLossFailsUnlessRetryOnNamesIt) {
  model::JobSpec spec = Spec("train", "hpc", 1);
  spec.retry.max_attempts = 3;
  spec.retry.on = {model::FailureKind::kExit};
  JobId id = Submit({spec}).at(0);
  Schedule(kT0);
  On(Event(id, 1, ExecutorEvent::Kind::kStarted, kT0 + 10));
  model::ExitStatus lost;
  lost.node_lost = true;
  lost.message = "NODE_FAIL on n3";
  On(Exit(id, 1, lost, kT0 + 100));
  EXPECT_EQ(State(id), JobState::kFailed);
  EXPECT_THAT(controller_.Find(id)->status_message, HasSubstr("node lost (NODE_FAIL on n3)"));
}

TEST_F(ExecutorTest, CancelWhileQueuedInTheEngineCancelsThere) {
  JobId id = Submit({Spec("train", "hpc", 1)}).at(0);
  Schedule(kT0);
  On(Event(id, 1, ExecutorEvent::Kind::kSubmitted, kT0 + 10));
  Step step;
  ASSERT_TRUE(controller_.Cancel(id, "alice", "cancelled by alice", kT0 + 20, step).has_value());
  auto cancels = EffectsOf<CancelExternal>(step);
  ASSERT_EQ(cancels.size(), 1u);
  EXPECT_EQ(cancels[0].ref.external_id, "17");
  EXPECT_EQ(State(id), JobState::kAdmitted);  // until the engine confirms
  model::ExitStatus cancelled;
  cancelled.cancelled = true;
  On(Exit(id, 1, cancelled, kT0 + 30));
  EXPECT_EQ(State(id), JobState::kCancelled);
}

TEST_F(ExecutorTest, RestoreKeepsHandedOffAttemptsForTheExecutorToAdopt) {
  JobId id = Submit({Spec("train", "hpc", 4)}).at(0);
  Schedule(kT0);
  On(Event(id, 1, ExecutorEvent::Kind::kSubmitted, kT0 + 10));
  JobId local = Submit({Spec("local-job", "local", 0)}, kT0 + 11).at(0);
  std::vector<model::Job> stored;
  for (const auto& [job_id, job] : controller_.jobs()) stored.push_back(job);

  Controller restarted;
  ASSERT_TRUE(restarted.SetPolicy(SlurmPolicy()).has_value());
  Step step;
  restarted.Restore(stored, kT0 + 100, step);
  EXPECT_EQ(restarted.Find(id)->state, JobState::kAdmitted);
  auto live = restarted.LiveExternal();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].job, id);
  EXPECT_EQ(live[0].external_id, "17");
  EXPECT_TRUE(restarted.LiveWorkers().empty());
  // Still charged: another 4-GPU job of the queue waits.
  Step submit;
  auto second = restarted.Submit({Spec("second", "hpc", 4)}, "", "alice", kT0 + 101, submit);
  ASSERT_TRUE(second.has_value());
  Step schedule;
  restarted.Schedule(kT0 + 102, schedule);
  EXPECT_TRUE(EffectsOf<SubmitExternal>(schedule).empty());
  (void)local;
}

model::ExitStatus RequeuedPreempted() {
  model::ExitStatus exit;
  exit.preempted = true;
  exit.message = "Slurm requeued job 17 after preempting it";
  return exit;
}

TEST_F(ExecutorTest, AJobTheEngineRequeuedContinuesAsTheNextAttemptKeepingItsAdmission) {
  model::JobSpec spec = Spec("train", "hpc", 4);
  spec.checkpoint_dir = "/ckpt";
  spec.resume = true;
  JobId id = Submit({spec}).at(0);
  auto first = EffectsOf<SubmitExternal>(Schedule(kT0));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(first[0].launch.requeue);  // preemption is retried: Slurm may requeue it
  EXPECT_EQ(first[0].launch.ref.restart, 0);
  On(Event(id, 1, ExecutorEvent::Kind::kStarted, kT0 + 10));
  Step checkpoint;
  ASSERT_TRUE(controller_.ReportCheckpoint(id, kT0 + 50, checkpoint).has_value());
  JobId waiting = Submit({Spec("second", "hpc", 4)}, kT0 + 60).at(0);

  ExecutorEvent requeued = Exit(id, 1, RequeuedPreempted(), kT0 + 100);
  requeued.requeued = true;
  Step step = On(requeued);
  auto continued = EffectsOf<SubmitExternal>(step);
  ASSERT_EQ(continued.size(), 1u);
  EXPECT_EQ(continued[0].launch.ref.attempt, 2);
  EXPECT_EQ(continued[0].launch.ref.external_id, "17");
  EXPECT_EQ(continued[0].launch.ref.restart, 1);
  EXPECT_EQ(continued[0].launch.env.at("DROVER_ATTEMPT"), "2");
  EXPECT_EQ(continued[0].launch.env.at("DROVER_RESUME"), "1");
  EXPECT_TRUE(EffectsOf<CancelExternal>(step).empty());
  const model::Job& job = *controller_.Find(id);
  EXPECT_EQ(job.state, JobState::kAdmitted);
  ASSERT_EQ(job.attempts.size(), 2u);
  EXPECT_EQ(job.attempts[0].outcome, JobState::kReady);
  EXPECT_THAT(job.attempts[0].outcome_reason,
              HasSubstr("slurm job 17: preempted (Slurm requeued job 17 after preempting it)"));
  EXPECT_EQ(job.attempts[1].external_id, "17");
  EXPECT_EQ(job.attempts[1].admitted_at, kT0 + 100);
  ASSERT_GE(step.transitions.size(), 2u);
  EXPECT_EQ(step.transitions.back().to, JobState::kAdmitted);
  EXPECT_THAT(step.transitions.back().cause, HasSubstr("continues slurm job 17"));
  // The admission carried over: the queue's 4 GPUs stay charged, the other job waits.
  EXPECT_TRUE(EffectsOf<SubmitExternal>(Schedule(kT0 + 110)).empty());
  EXPECT_EQ(State(waiting), JobState::kReady);

  On(Event(id, 2, ExecutorEvent::Kind::kStarted, kT0 + 200));
  On(Exit(id, 2, ExitCode(0), kT0 + 300));
  EXPECT_EQ(State(id), JobState::kSucceeded);
  EXPECT_EQ(EffectsOf<SubmitExternal>(Schedule(kT0 + 310)).size(), 1u);  // now the other job
}

TEST_F(ExecutorTest, AJobTheEngineRequeuedThatDroverDoesNotRetryIsCancelledThere) {
  model::JobSpec spec = Spec("train", "hpc", 1);
  spec.retry.max_attempts = 3;
  spec.retry.on = {model::FailureKind::kExit};
  JobId id = Submit({spec}).at(0);
  auto first = EffectsOf<SubmitExternal>(Schedule(kT0));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_FALSE(first[0].launch.requeue);  // neither preemption nor node loss is retried
  On(Event(id, 1, ExecutorEvent::Kind::kStarted, kT0 + 10));
  // Requeued all the same (an administrator's scontrol requeue): the job ends, Slurm's too.
  ExecutorEvent requeued = Exit(id, 1, RequeuedPreempted(), kT0 + 100);
  requeued.requeued = true;
  Step step = On(requeued);
  EXPECT_EQ(State(id), JobState::kFailed);
  EXPECT_TRUE(EffectsOf<SubmitExternal>(step).empty());
  auto cancels = EffectsOf<CancelExternal>(step);
  ASSERT_EQ(cancels.size(), 1u);
  EXPECT_EQ(cancels[0].ref.external_id, "17");
  EXPECT_EQ(cancels[0].ref.attempt, 1);
}

TEST_F(ExecutorTest, RestoreResendsAContinuationItsExecutorNeverAcknowledged) {
  JobId id = Submit({Spec("train", "hpc", 1)}).at(0);
  Schedule(kT0);
  On(Event(id, 1, ExecutorEvent::Kind::kStarted, kT0 + 10));
  ExecutorEvent requeued = Exit(id, 1, RequeuedPreempted(), kT0 + 100);
  requeued.requeued = true;
  On(requeued);
  auto restore = [&] {
    std::vector<model::Job> stored;
    for (const auto& [job_id, job] : controller_.jobs()) stored.push_back(job);
    auto restarted = std::make_unique<Controller>();
    EXPECT_TRUE(restarted->SetPolicy(SlurmPolicy()).has_value());
    Step step;
    restarted->Restore(stored, kT0 + 200, step);
    return std::make_pair(std::move(restarted), step);
  };
  auto [unacknowledged, resent] = restore();
  auto submits = EffectsOf<SubmitExternal>(resent);
  ASSERT_EQ(submits.size(), 1u);
  EXPECT_EQ(submits[0].launch.ref.restart, 1);
  EXPECT_EQ(submits[0].launch.ref.external_id, "17");
  EXPECT_TRUE(unacknowledged->LiveExternal().empty());

  On(Event(id, 2, ExecutorEvent::Kind::kSubmitted, kT0 + 110));
  auto [acknowledged, nothing] = restore();
  EXPECT_TRUE(EffectsOf<SubmitExternal>(nothing).empty());
  auto live = acknowledged->LiveExternal();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].attempt, 2);
  EXPECT_EQ(live[0].restart, 1);
}

}  // namespace
}  // namespace drover::control
