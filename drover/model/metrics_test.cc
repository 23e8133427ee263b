#include "drover/model/metrics.h"

#include <gtest/gtest.h>

namespace drover::model {
namespace {

Worker WorkerWithGpus(int rank, std::vector<int> gpus) {
  Worker worker;
  worker.rank = rank;
  worker.node = NodeId("a");
  worker.gpus = std::move(gpus);
  return worker;
}

TEST(ComputeMetrics, SplitsQueueStartupAndRunTimeAndCountsGpuTime) {
  Job job;
  job.created_at = 1000;
  job.finished_at = 10'000;
  Attempt first;
  first.ready_at = 1000;
  first.dequeued_at = 1500;
  first.placed_at = 1500;
  first.running_at = 1600;
  first.finished_at = 3500;
  first.workers = {WorkerWithGpus(0, {0, 1})};
  Attempt second;
  second.number = 2;
  second.ready_at = 4000;
  second.dequeued_at = 5000;
  second.placed_at = 5000;
  second.running_at = 5200;
  second.finished_at = 10'000;
  second.workers = {WorkerWithGpus(0, {0}), WorkerWithGpus(1, {1})};
  job.attempts = {first, second};

  JobMetrics m = ComputeMetrics(job, 99'999);
  EXPECT_EQ(m.queue_wait, 500 + 1000);
  EXPECT_EQ(m.startup, 200);
  EXPECT_EQ(m.run_time, 4800);
  EXPECT_EQ(m.total, 9000);
  EXPECT_EQ(m.gpu_ms, 2 * 2000 + 2 * 5000);
  EXPECT_EQ(m.attempts, 2);
}

TEST(ComputeMetrics, BoundsUnfinishedPhasesByNow) {
  Job job;
  job.created_at = 0;
  Attempt waiting;
  waiting.ready_at = 100;
  job.attempts = {waiting};
  JobMetrics m = ComputeMetrics(job, 600);
  EXPECT_EQ(m.queue_wait, 500);
  EXPECT_EQ(m.run_time, 0);
  EXPECT_EQ(m.gpu_ms, 0);
}

// A job released at 1000 after its upstream, waiting for inputs until 1200, failing once after
// a checkpoint, then resuming and succeeding, then publishing its outputs.
Job RetriedJob() {
  Job job;
  job.id = JobId(2);
  job.dependencies = {JobId(1)};
  job.created_at = 0;
  job.released_at = 1000;
  job.finished_at = 9000;
  job.state = JobState::kSucceeded;
  Attempt first;
  first.ready_at = 1200;
  first.dequeued_at = first.admitted_at = 1300;
  first.placed_at = 1350;
  first.running_at = 1400;
  first.useful_work_at = 1500;
  first.last_checkpoint_at = 2000;
  first.finished_at = 2500;
  first.outcome = JobState::kReady;
  first.outcome_reason = "worker 0 on a: exit 1";
  first.workers = {WorkerWithGpus(0, {0, 1})};
  Attempt second;
  second.number = 2;
  second.resumed = true;
  second.ready_at = 3000;
  second.dequeued_at = second.admitted_at = second.placed_at = 3000;
  second.running_at = 3100;
  second.finished_at = 8000;
  second.outcome = JobState::kSucceeded;
  second.workers = {WorkerWithGpus(0, {0, 1})};
  job.attempts = {first, second};
  return job;
}

TEST(ComputeSplit, PhasesAddUpToTheWallTime) {
  const Job job = RetriedJob();
  const LifecycleSplit split = ComputeSplit(job, 99'999);
  EXPECT_EQ(split.dependencies, 1000);
  EXPECT_EQ(split.inputs, 200);
  EXPECT_EQ(split.queue, 100);
  EXPECT_EQ(split.placement, 50);
  EXPECT_EQ(split.startup, 50 + 100);
  EXPECT_EQ(split.until_useful, 100);
  EXPECT_EQ(split.run, 1000 + 4900);
  EXPECT_EQ(split.backoff, 500);
  EXPECT_EQ(split.publishing, 1000);
  EXPECT_EQ(split.Total(), 9000);
}

TEST(ComputeSplit, AJobStillPendingSpendsItsTimeOnDependencies) {
  Job job;
  job.dependencies = {JobId(1)};
  job.created_at = 100;
  EXPECT_EQ(ComputeSplit(job, 700).dependencies, 600);
  EXPECT_EQ(ComputeSplit(job, 700).Total(), 600);
  // A pipeline's stage without dependencies of its own may be held by its sweep or pipeline.
  job.dependencies.clear();
  job.pipeline_run = JobId(9);
  EXPECT_EQ(ComputeSplit(job, 700).dependencies, 600);
}

// A job without dependencies, outside any pipeline, waits for nothing before its release but
// the control loop: that time is queue, not "dependencies".
TEST(ComputeSplit, AJobWithoutDependenciesHasNoDependencyTime) {
  Job job = RetriedJob();
  job.dependencies.clear();
  const LifecycleSplit split = ComputeSplit(job, 99'999);
  EXPECT_EQ(split.dependencies, 0);
  EXPECT_EQ(split.queue, 1000 + 100);
  EXPECT_EQ(split.Total(), 9000);
  Job pending;
  pending.created_at = 100;
  EXPECT_EQ(ComputeSplit(pending, 700).dependencies, 0);
  EXPECT_EQ(ComputeSplit(pending, 700).queue, 600);
}

TEST(ComputeAttemptCosts, AResumedSuccessorLosesOnlyTheTimeAfterTheCheckpoint) {
  Job job = RetriedJob();
  std::vector<AttemptCost> costs = ComputeAttemptCosts(job, 99'999);
  ASSERT_EQ(costs.size(), 2u);
  EXPECT_EQ(costs[0].gpu_ms, 2 * (2500 - 1350));
  EXPECT_EQ(costs[0].lost_gpu_ms, 2 * (2500 - 2000));
  EXPECT_EQ(costs[0].cause, "worker 0 on a: exit 1");
  EXPECT_EQ(costs[1].lost_gpu_ms, 0);

  job.attempts[1].resumed = false;  // retried from scratch: the whole attempt is lost
  EXPECT_EQ(ComputeAttemptCosts(job, 99'999)[0].lost_gpu_ms, 2 * (2500 - 1350));

  Goodput goodput;
  goodput.Add(job, 99'999);
  EXPECT_EQ(goodput.succeeded, 1);
  EXPECT_EQ(goodput.retry_lost_gpu_ms, 2 * (2500 - 1350));
  EXPECT_EQ(goodput.preemption_lost_gpu_ms, 0);
  EXPECT_DOUBLE_EQ(goodput.GpuHoursPerResult(),
                   static_cast<double>(2 * (2500 - 1350) + 2 * (8000 - 3000)) / 3'600'000.0);
}

TEST(ComputePipelineSplit, FollowsTheCriticalPathAndAddsUpToTheRunsWallTime) {
  Job prep;
  prep.id = JobId(1);
  prep.created_at = 0;
  prep.released_at = 0;
  prep.finished_at = 900;
  Attempt run;
  run.ready_at = 0;
  run.dequeued_at = run.admitted_at = run.placed_at = 100;
  run.running_at = 150;
  run.finished_at = 900;
  prep.attempts = {run};
  Job side = prep;  // a parallel root that ends early: off the critical path
  side.id = JobId(3);
  side.finished_at = side.attempts[0].finished_at = 300;
  Job train = RetriedJob();  // released at 1000, after prep ended at 900
  train.dependencies = {prep.id, side.id};

  const LifecycleSplit split = ComputePipelineSplit({&prep, &train, &side}, 99'999);
  EXPECT_EQ(split.Total(), 9000);
  EXPECT_EQ(split.dependencies, 100);  // prep's end (900) until train's release (1000)
  EXPECT_EQ(split.queue, 100 + 100);
}

}  // namespace
}  // namespace drover::model
