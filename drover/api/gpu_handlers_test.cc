#include "drover/api/gpu_handlers.h"

#include <gtest/gtest.h>

namespace drover::api {
namespace {

using nlohmann::json;

NodeStatus NodeWithGpus(const std::string& name, int count) {
  NodeStatus status;
  status.node.name = NodeId(name);
  for (int i = 0; i < count; ++i) {
    model::Gpu gpu;
    gpu.index = i;
    status.node.gpus.push_back(gpu);
  }
  return status;
}

model::Job JobOn(std::int64_t id, model::JobState state, const std::string& node,
                 std::vector<int> gpus) {
  model::Job job;
  job.id = JobId(id);
  job.state = state;
  job.spec.owner = "alice";
  job.attempts.emplace_back();
  model::Worker worker;
  worker.node = NodeId(node);
  worker.gpus = std::move(gpus);
  job.attempts.back().workers = {worker};
  return job;
}

model::GpuActivity Sample(const std::string& node, int index, TimeMs at, int pct) {
  model::GpuActivity sample;
  sample.node = NodeId(node);
  sample.index = index;
  sample.at = at;
  sample.utilization_pct = pct;
  sample.memory_used_bytes = 1024;
  return sample;
}

const auto kEveryone = [](const model::Job&) { return true; };

TEST(GpuMap, ActiveTakesAHolderAndAFreshBusySample) {
  const TimeMs now = 10 * kMillisPerMinute;
  const std::vector<model::GpuActivity> samples = {
      Sample("n1", 0, now - 1000, 90),                    // held, busy: active
      Sample("n1", 1, now - 1000, 0),                     // held, quiet: allocated
      Sample("n1", 2, now - kGpuSampleMaxAgeMs - 1, 90),  // held, stale: allocated
      Sample("n1", 3, now - 1000, 50)};                   // nobody's: idle
  const json gpus =
      GpuMapView({NodeWithGpus("n1", 4)}, {JobOn(5, model::JobState::kRunning, "n1", {0, 1, 2})},
                 samples, kEveryone, now)["gpus"];
  ASSERT_EQ(gpus.size(), 4u);
  EXPECT_EQ(gpus[0]["state"], "active");
  EXPECT_EQ(gpus[0]["utilization_pct"], 90);
  EXPECT_EQ(gpus[0]["memory_used_bytes"], 1024);
  EXPECT_EQ(gpus[1]["state"], "allocated");
  EXPECT_EQ(gpus[2]["state"], "allocated");
  EXPECT_EQ(gpus[2]["sampled_at"], nullptr);
  EXPECT_EQ(gpus[3]["state"], "idle");
  EXPECT_EQ(gpus[3]["utilization_pct"], 50);
  EXPECT_EQ(gpus[3]["job"], nullptr);
}

TEST(GpuMap, FinishedJobsAndExitedWorkersHoldNothing) {
  model::Job exited = JobOn(6, model::JobState::kRunning, "n1", {1});
  exited.attempts.back().workers[0].state = model::WorkerState::kExited;
  const json gpus = GpuMapView({NodeWithGpus("n1", 2)},
                               {JobOn(5, model::JobState::kSucceeded, "n1", {0}), exited}, {},
                               kEveryone, 0)["gpus"];
  EXPECT_EQ(gpus[0]["state"], "idle");
  EXPECT_EQ(gpus[1]["state"], "idle");
}

}  // namespace
}  // namespace drover::api
