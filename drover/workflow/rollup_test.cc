#include "drover/workflow/rollup.h"

#include <gtest/gtest.h>

namespace drover::workflow {
namespace {

using model::JobState;

model::Job JobOf(const std::string& stage, JobState state, TimeMs finished_at = 0) {
  model::Job job;
  job.spec.name = stage;
  job.spec.stage = stage;
  job.state = state;
  job.finished_at = finished_at;
  return job;
}

TEST(RollUp, AnEarlyStoppedSweepAndASkippedStageStillSucceed) {
  std::vector<model::Job> jobs = {
      JobOf("prep", JobState::kSucceeded, 10), JobOf("train", JobState::kSucceeded, 30),
      JobOf("train", JobState::kCancelled, 31), JobOf("cleanup", JobState::kSkipped, 32)};
  jobs[0].created_at = 5;
  std::vector<const model::Job*> run;
  for (const model::Job& job : jobs) run.push_back(&job);
  RunStatus status = RollUp(run);
  EXPECT_EQ(status.state, RunState::kSucceeded);
  ASSERT_EQ(status.stages.size(), 3u);
  EXPECT_EQ(status.stages[1].name, "train");
  EXPECT_EQ(status.stages[1].jobs.size(), 2u);
  EXPECT_EQ(status.stages[1].upstream, UpstreamState::kSucceeded);
  EXPECT_EQ(status.stages[1].state, StageState::kSucceeded);
  EXPECT_EQ(status.stages[2].state, StageState::kSkipped);
  EXPECT_EQ(status.created_at, 5);
  EXPECT_EQ(status.finished_at, 32);
}

TEST(RollUp, PendingRunningAndFailed) {
  model::Job prep = JobOf("prep", JobState::kPending);
  model::Job train = JobOf("train", JobState::kPending);
  EXPECT_EQ(RollUp({&prep, &train}).state, RunState::kPending);
  prep.state = JobState::kRunning;
  EXPECT_EQ(RollUp({&prep, &train}).state, RunState::kRunning);
  prep.state = JobState::kFailed;
  train.state = JobState::kSkipped;
  EXPECT_EQ(RollUp({&prep, &train}).state, RunState::kFailed);
  EXPECT_EQ(kRunStateNames.Name(RunState::kFailed), "failed");
}

TEST(RollUp, AnUnfinishedStageReadsItsMostAdvancedJob) {
  model::Job a = JobOf("train", JobState::kPending);
  model::Job b = JobOf("train", JobState::kWaiting);
  EXPECT_EQ(RollUp({&a}).stages[0].state, StageState::kPending);
  EXPECT_EQ(RollUp({&a, &b}).stages[0].state, StageState::kWaiting);
  a.state = JobState::kReady;
  EXPECT_EQ(RollUp({&a, &b}).stages[0].state, StageState::kRunning);
  EXPECT_EQ(kStageStateNames.Name(StageState::kWaiting), "waiting");
}

// Job `job` is running and its cancel is stopping it (Controller::Cancel of a running job).
void Cancelling(model::Job& job) {
  job.state = JobState::kRunning;
  model::Attempt attempt;
  attempt.outcome = JobState::kCancelled;
  job.attempts.push_back(attempt);
}

TEST(RollUp, ACancelledRunAndItsCancelledStagesReadCancelled) {
  model::Job prep = JobOf("prep", JobState::kSucceeded, 10);
  model::Job train = JobOf("train", JobState::kRunning);
  model::Job report = JobOf("report", JobState::kCancelled, 20);
  // While the running stage's workers stop, the run reads cancelling; its stage still runs.
  Cancelling(train);
  EXPECT_TRUE(IsBeingCancelled(train));
  RunStatus stopping = RollUp({&prep, &train, &report});
  EXPECT_EQ(stopping.state, RunState::kCancelling);
  EXPECT_EQ(stopping.stages[1].state, StageState::kRunning);
  EXPECT_EQ(stopping.stages[2].state, StageState::kCancelled);
  EXPECT_EQ(stopping.finished_at, 0);

  train.state = JobState::kCancelled;
  train.finished_at = 30;
  EXPECT_FALSE(IsBeingCancelled(train));
  RunStatus status = RollUp({&prep, &train, &report});
  EXPECT_EQ(status.state, RunState::kCancelled);
  EXPECT_EQ(kRunStateNames.Name(status.state), "cancelled");
  EXPECT_EQ(status.stages[0].state, StageState::kSucceeded);
  EXPECT_EQ(status.stages[1].state, StageState::kCancelled);
  // A dependency still sees a cancelled stage failed (docs/workflows.md).
  EXPECT_EQ(status.stages[1].upstream, UpstreamState::kFailed);
  EXPECT_EQ(status.finished_at, 30);
}

TEST(RollUp, ARunIsCancellingOnlyWhenEveryUnfinishedJobIsBeingCancelled) {
  model::Job train = JobOf("train", JobState::kRunning);
  model::Job eval = JobOf("eval", JobState::kRunning);
  Cancelling(train);
  // One job cancelled by itself while another runs: the run runs.
  EXPECT_EQ(RollUp({&train, &eval}).state, RunState::kRunning);
  Cancelling(eval);
  EXPECT_EQ(RollUp({&train, &eval}).state, RunState::kCancelling);
}

TEST(RollUp, OneStageCancelledByItselfCancelsTheRunItsDownstreamSkipped) {
  model::Job prep = JobOf("prep", JobState::kSucceeded, 10);
  model::Job train = JobOf("train", JobState::kCancelled, 20);
  model::Job report = JobOf("report", JobState::kSkipped, 20);
  RunStatus status = RollUp({&prep, &train, &report});
  EXPECT_EQ(status.state, RunState::kCancelled);
  EXPECT_EQ(status.stages[1].state, StageState::kCancelled);
  EXPECT_EQ(status.stages[2].state, StageState::kSkipped);
}

TEST(RollUp, ACancelNeverHidesAFailure) {
  // A stage failed, then the rest of the run was cancelled: the run failed.
  model::Job prep = JobOf("prep", JobState::kFailed, 10);
  model::Job cleanup = JobOf("cleanup", JobState::kCancelled, 20);
  RunStatus status = RollUp({&prep, &cleanup});
  EXPECT_EQ(status.state, RunState::kFailed);
  EXPECT_EQ(status.stages[0].state, StageState::kFailed);
  EXPECT_EQ(status.stages[1].state, StageState::kCancelled);
  // A sweep with a failed or timed-out trial and cancelled ones failed; with only cancelled and
  // skipped trials it was cancelled.
  model::Job t1 = JobOf("sweep", JobState::kTimedOut, 10);
  model::Job t2 = JobOf("sweep", JobState::kCancelled, 11);
  EXPECT_EQ(RollUp({&t1, &t2}).stages[0].state, StageState::kFailed);
  t1.state = JobState::kSkipped;
  EXPECT_EQ(RollUp({&t1, &t2}).stages[0].state, StageState::kCancelled);
  EXPECT_EQ(RollUp({&t1, &t2}).state, RunState::kCancelled);
}

}  // namespace
}  // namespace drover::workflow
