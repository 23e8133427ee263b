#include "drover/control/attempt_facts.h"

#include <gtest/gtest.h>

namespace drover::control {
namespace {

using model::Attempt;
using model::FailureKind;
using model::JobState;
using model::WorkerState;

TEST(RetryDelay, DoublesFromTheBackoffPerAttemptUpToAnHour) {
  model::RetryPolicy retry;
  retry.backoff_ms = 10 * kMillisPerSecond;
  EXPECT_EQ(RetryDelay(retry, 2), 10 * kMillisPerSecond);
  EXPECT_EQ(RetryDelay(retry, 3), 20 * kMillisPerSecond);
  EXPECT_EQ(RetryDelay(retry, 4), 40 * kMillisPerSecond);
  EXPECT_EQ(RetryDelay(retry, 30), kMillisPerHour);
}

TEST(RetryDelay, ABackoffLongerThanAnHourIsKeptAsItIs) {
  model::RetryPolicy retry;
  retry.backoff_ms = 2 * kMillisPerHour;
  EXPECT_EQ(RetryDelay(retry, 2), 2 * kMillisPerHour);
  EXPECT_EQ(RetryDelay(retry, 5), 2 * kMillisPerHour);
}

TEST(FailureKindOf, PreemptionThenTimeoutThenANodeLostThenAnExit) {
  Attempt attempt;
  attempt.outcome = JobState::kFailed;
  model::Worker& worker = attempt.workers.emplace_back();
  worker.exit = model::ExitStatus{};
  worker.exit->exit_code = 1;
  EXPECT_EQ(FailureKindOf(attempt), FailureKind::kExit);
  worker.exit->node_lost = true;
  EXPECT_EQ(FailureKindOf(attempt), FailureKind::kNodeLost);
  attempt.outcome = JobState::kTimedOut;
  EXPECT_EQ(FailureKindOf(attempt), FailureKind::kTimeout);
  attempt.preempted_by = JobId(7);
  EXPECT_EQ(FailureKindOf(attempt), FailureKind::kPreempted);
}

TEST(WorkerAlive, LaunchedAndRunningWorkersMayBeAlive) {
  model::Worker worker;
  worker.state = WorkerState::kAssigned;
  EXPECT_FALSE(WorkerAlive(worker));
  worker.state = WorkerState::kLaunched;
  EXPECT_TRUE(WorkerAlive(worker));
  worker.state = WorkerState::kRunning;
  EXPECT_TRUE(WorkerAlive(worker));
  worker.state = WorkerState::kExited;
  EXPECT_FALSE(WorkerAlive(worker));
}

TEST(LastCheckpoint, IsTheLatestOverEveryAttempt) {
  model::Job job;
  EXPECT_EQ(LastCheckpoint(job), 0);
  job.attempts.emplace_back().last_checkpoint_at = 50;
  job.attempts.emplace_back().last_checkpoint_at = 0;  // the retry has not checkpointed yet
  EXPECT_EQ(LastCheckpoint(job), 50);
}

}  // namespace
}  // namespace drover::control
