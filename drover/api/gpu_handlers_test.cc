#include "drover/api/gpu_handlers.h"

#include <gtest/gtest.h>

#include "drover/codec/json.h"

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
  const json gpus = json::parse(GpuMapJson({NodeWithGpus("n1", 4)},
                                           {JobOn(5, model::JobState::kRunning, "n1", {0, 1, 2})},
                                           samples, kEveryone, now))["gpus"];
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
  const json gpus = json::parse(GpuMapJson(
      {NodeWithGpus("n1", 2)}, {JobOn(5, model::JobState::kSucceeded, "n1", {0}), exited}, {},
      kEveryone, 0))["gpus"];
  EXPECT_EQ(gpus[0]["state"], "idle");
  EXPECT_EQ(gpus[1]["state"], "idle");
}

TEST(GpuMap, NamesAHolderOnlyToWhoMaySeeItAskingOncePerJob) {
  int asked = 0;
  const auto nobody = [&asked](const model::Job&) {
    ++asked;
    return false;
  };
  const json gpus = json::parse(GpuMapJson({NodeWithGpus("n1", 3)},
                                           {JobOn(5, model::JobState::kRunning, "n1", {0, 1, 2})},
                                           {}, nobody, 0))["gpus"];
  EXPECT_EQ(asked, 1);
  for (const json& gpu : gpus) {
    EXPECT_EQ(gpu["state"], "allocated");
    EXPECT_EQ(gpu["job"], nullptr);
    EXPECT_EQ(gpu["owner"], nullptr);
  }
}

TEST(GpuMap, WritesTheBytesDumpJsonWouldWrite) {
  const TimeMs now = kMillisPerMinute;
  model::GpuActivity unread = Sample("n2", 1, now, -1);
  unread.memory_used_bytes = -1;
  NodeStatus second = NodeWithGpus("n2", 2);
  second.node.gpus[1].model = "H100 \"80GB\"";
  second.node.gpus[1].memory_bytes = std::int64_t{80} << 30;
  const std::string text =
      GpuMapJson({NodeWithGpus("n1", 2), second}, {JobOn(5, model::JobState::kRunning, "n2", {1})},
                 std::vector<model::GpuActivity>{Sample("n1", 0, now, 7), unread}, kEveryone, now);
  const json parsed = json::parse(text);
  EXPECT_EQ(text, codec::DumpJson(parsed));
  EXPECT_EQ(parsed["gpus"][3], (json{{"node", "n2"},
                                     {"index", 1},
                                     {"model", "H100 \"80GB\""},
                                     {"memory_bytes", std::int64_t{80} << 30},
                                     {"state", "allocated"},
                                     {"job", 5},
                                     {"owner", "alice"},
                                     {"utilization_pct", nullptr},
                                     {"memory_used_bytes", nullptr},
                                     {"sampled_at", now}}));
}

}  // namespace
}  // namespace drover::api
