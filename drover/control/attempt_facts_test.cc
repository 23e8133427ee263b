#include "drover/control/attempt_facts.h"

#include <gtest/gtest.h>

#include <optional>

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

TEST(CountAttempts, LeavesOutPreemptionsRequeuesAndTheFirstNodeLosses) {
  model::Job job;
  auto add = [&job](bool node_lost) -> Attempt& {
    Attempt& attempt = job.attempts.emplace_back();
    attempt.outcome = JobState::kReady;
    model::ExitStatus& exit = attempt.workers.emplace_back().exit.emplace();
    exit.exit_code = 1;
    exit.node_lost = node_lost;
    return attempt;
  };
  add(false).preempted_by = JobId(7);
  add(false).requeued_by = "alice";
  EXPECT_EQ(CountAttempts(job).counted, 0);
  for (int loss = 1; loss <= model::kFreeNodeLosses; ++loss) add(true);
  EXPECT_EQ(CountAttempts(job).counted, 0);
  EXPECT_EQ(CountAttempts(job).node_losses, model::kFreeNodeLosses);
  add(true);   // a loss beyond the free ones counts
  add(false);  // as does an exit
  EXPECT_EQ(CountAttempts(job).counted, 2);
  EXPECT_EQ(CountAttempts(job).node_losses, model::kFreeNodeLosses + 1);
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

// An attempt that became ready at `ready_at` and, unless `ended` is empty, ended that way.
Attempt AttemptOf(TimeMs ready_at, std::optional<FailureKind> ended = std::nullopt) {
  Attempt attempt;
  attempt.ready_at = ready_at;
  if (!ended) return attempt;
  attempt.outcome = JobState::kReady;  // requeued or retried
  model::Worker& worker = attempt.workers.emplace_back();
  worker.exit = model::ExitStatus{};
  worker.exit->exit_code = 1;
  if (*ended == FailureKind::kPreempted) attempt.preempted_by = JobId(9);
  if (*ended == FailureKind::kNodeLost) worker.exit->node_lost = true;
  return attempt;
}

TEST(QueuedSince, ARequeueAfterPreemptionOrNodeLossKeepsItsPlaceARetryQueuesAnew) {
  model::Job job;
  EXPECT_EQ(QueuedSince(job), 0);
  job.attempts = {AttemptOf(100)};
  EXPECT_EQ(QueuedSince(job), 100);
  // Preempted, then its node lost (requeued after a backoff): still the first place.
  job.attempts = {AttemptOf(100, FailureKind::kPreempted), AttemptOf(500, FailureKind::kNodeLost),
                  AttemptOf(900)};
  EXPECT_EQ(QueuedSince(job), 100);
  // Its own failure ends the chain: the retry queues at the end of its backoff, and a
  // preemption after that keeps the retry's place.
  job.attempts = {AttemptOf(100, FailureKind::kExit), AttemptOf(500, FailureKind::kPreempted),
                  AttemptOf(900)};
  EXPECT_EQ(QueuedSince(job), 500);
  job.attempts = {AttemptOf(100, FailureKind::kPreempted), AttemptOf(500, FailureKind::kExit),
                  AttemptOf(900)};
  EXPECT_EQ(QueuedSince(job), 900);
}

}  // namespace
}  // namespace drover::control
