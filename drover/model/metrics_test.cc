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

}  // namespace
}  // namespace drover::model
