// The controller's side of the scheduling policy: quotas through Submit, preemption as effects,
// requeue with resume, checkpoints and the decision log.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drover/control/controller.h"

namespace drover::control {
namespace {

using model::JobState;
using ::testing::HasSubstr;

constexpr TimeMs kT0 = 1'000'000;

model::Node GpuNode(const std::string& name, int gpus) {
  model::Node node;
  node.name = NodeId(name);
  node.cpu_millis = 64'000;
  node.memory_bytes = 512LL << 30;
  for (int i = 0; i < gpus; ++i) {
    model::Gpu gpu;
    gpu.index = i;
    gpu.uuid = "GPU-" + std::to_string(i);
    gpu.model = "H100";
    gpu.memory_bytes = 80LL << 30;
    node.gpus.push_back(gpu);
  }
  return node;
}

model::JobSpec Spec(const std::string& name, const std::string& queue, int gpus, int workers = 1) {
  model::JobSpec spec;
  spec.name = name;
  spec.queue = queue;
  spec.command = {"true"};
  spec.requirements.per_worker = {1000, 1LL << 30, gpus};
  spec.workers = spec.min_workers = workers;
  return spec;
}

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

class PreemptionTest : public ::testing::Test {
 protected:
  PreemptionTest() {
    EXPECT_TRUE(controller_.SetPolicy(TwoTeams()).has_value());
    Step step;
    controller_.UpsertNode(GpuNode("node-a", 8), kT0, step);
  }

  JobId Submit(model::JobSpec spec, TimeMs now) {
    Step step;
    auto result = controller_.Submit({std::move(spec)}, "", "alice", now, step);
    EXPECT_TRUE(result) << result.error().ToString();
    return result->ids.at(0);
  }

  Step Schedule(TimeMs now) {
    Step step;
    controller_.Schedule(now, step);
    return step;
  }

  // Reports every launched worker of `step` started.
  void StartAll(const Step& step, TimeMs at) {
    for (const Effect& effect : step.effects) {
      if (const auto* launch = std::get_if<LaunchWorker>(&effect)) {
        Step events;
        controller_.OnWorkerEvent({launch->spec.key, model::WorkerEvent::Kind::kStarted, at, {}},
                                  events);
      }
    }
  }

  Controller controller_;
};

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
  Step checkpoint;
  controller_.OnWorkerEvent({{b, 1, 0}, model::WorkerEvent::Kind::kCheckpoint, kT0 + 60'000, {}},
                            checkpoint);
  EXPECT_EQ(controller_.Find(b)->current_attempt()->last_checkpoint_at, kT0 + 60'000);

  // A asks for its own quota: B is preempted, gracefully.
  const JobId a = Submit(Spec("a-train", "team-a", 4), kT0 + 70'000);
  Step preempt = Schedule(kT0 + 70'000);
  std::vector<StopWorker> stops;
  for (const Effect& effect : preempt.effects) {
    if (const auto* stop = std::get_if<StopWorker>(&effect)) stops.push_back(*stop);
  }
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
  EXPECT_EQ(explanation->layer, "preempting");

  // B's worker exits on SIGTERM: B queues again with a new attempt that resumes. A is placed;
  // B needs all 8 GPUs, so it waits for A.
  Step exited;
  model::ExitStatus status;
  status.signal = 15;
  status.preempted = true;
  controller_.OnWorkerEvent({{b, 1, 0}, model::WorkerEvent::Kind::kExited, kT0 + 72'000, status},
                            exited);
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
  Step done;
  model::ExitStatus ok;
  ok.exit_code = 0;
  controller_.OnWorkerEvent({{a, 1, 0}, model::WorkerEvent::Kind::kExited, kT0 + 80'000, ok}, done);
  Step relaunch = Schedule(kT0 + 80'000);
  bool resumed_env = false;
  for (const Effect& effect : relaunch.effects) {
    if (const auto* launch = std::get_if<LaunchWorker>(&effect)) {
      if (launch->spec.key.job == b) {
        resumed_env = launch->spec.env.count("DROVER_RESUME") == 1 &&
                      launch->spec.env.at("DROVER_RESUME") == "1";
        EXPECT_EQ(launch->spec.key.attempt, 2);
        EXPECT_EQ(launch->spec.kill_grace_ms, 5'000);
      }
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
  Step exited;
  model::ExitStatus status;
  status.signal = 15;
  status.preempted = true;
  controller_.OnWorkerEvent({{b, 1, 0}, model::WorkerEvent::Kind::kExited, kT0 + 2'000, status},
                            exited);
  const model::Job& job = *controller_.Find(b);
  // Preemption is not a failure: with max_attempts 1 it still queues again.
  EXPECT_EQ(job.state, JobState::kReady);
  EXPECT_FALSE(job.current_attempt()->resumed);
  EXPECT_THAT(job.status_message, HasSubstr("retry from scratch"));
}

TEST_F(PreemptionTest, CancellingAVictimWhileItStopsEndsItCancelled) {
  model::JobSpec borrower = Spec("b-train", "team-b", 8);
  borrower.interruptible = true;
  const JobId b = Submit(borrower, kT0);
  StartAll(Schedule(kT0), kT0 + 10);
  Submit(Spec("a-train", "team-a", 4), kT0 + 1'000);
  Schedule(kT0 + 1'000);
  Step cancel;
  ASSERT_TRUE(controller_.Cancel(b, "cancelled by bob", kT0 + 1'500, cancel).has_value());
  Step exited;
  model::ExitStatus status;
  status.signal = 15;
  status.preempted = true;
  controller_.OnWorkerEvent({{b, 1, 0}, model::WorkerEvent::Kind::kExited, kT0 + 2'000, status},
                            exited);
  EXPECT_EQ(controller_.Find(b)->state, JobState::kCancelled);
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
  Submit(Spec("b-big", "team-b", 16), kT0);  // never fits on 8 GPUs: pending
  Schedule(kT0);
  std::vector<QueueReport> queues = controller_.Queues();
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
