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
  EXPECT_EQ(status.stages[1].state, UpstreamState::kSucceeded);
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
  EXPECT_EQ(RunStateName(RunState::kFailed), "failed");
}

}  // namespace
}  // namespace drover::workflow
