// ControlPlane's usage (control_plane_usage.cc, usage_recorder.cc): samples an agent sends are
// attributed to the attempt that holds the GPU, summarized and stored per attempt, kept across
// a restart of the recorder, and cannot be charged to a job on another node. The test plays
// node-r's agent through the plane's calls.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <string>

#include "drover/sched/sched_test_util.h"
#include "drover/server/control_plane.h"
#include "drover/server/usage_recorder.h"
#include "drover/testing/fake_clock.h"
#include "drover/testing/memory_file_system.h"

namespace drover::server {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

class UsageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ControlPlaneOptions options;
    options.run_loop = false;
    plane_ = std::make_unique<ControlPlane>(store::NewMemoryStore(), clock_, options, fs_);
    ASSERT_TRUE(plane_->Start());
    for (const char* node : {"node-r", "node-s"}) {
      api::Caller agent;
      agent.bearer = true;
      agent.agent = NodeId(node);
      agent.joined = true;
      ASSERT_TRUE(plane_->RegisterRemoteNode(
          sched::testing::MakeNode(node, 1, "A100", 8000, 64 * sched::testing::kGi,
                                   40 * sched::testing::kGi),
          agent));
    }
  }

  // Submits a one-GPU job and starts its attempt 1 wherever it was placed; its worker's key and
  // node.
  std::pair<model::WorkerKey, NodeId> StartJob() {
    auto submitted = plane_->Submit(
        "kind: Job\nname: train\nresources: {cpu: 100m, memory: 64Mi, gpus: 1}\nscript: x\n",
        spec::ParseOptions{}, "", model::AdminIdentity("alice"));
    EXPECT_TRUE(submitted) << submitted.error().ToString();
    const JobId id = submitted->jobs.at(0).id;
    plane_->RunOnce();
    const model::Job job = plane_->GetJob(id).value();
    const NodeId node = job.attempts.at(0).workers.at(0).node;
    const model::WorkerKey key{id, 1, 0};
    model::WorkerEvent started{key, model::WorkerEvent::Kind::kStarted, clock_.Now(), {}};
    EXPECT_TRUE(plane_->ReportEvents(node, {started}));
    plane_->RunOnce();
    return {key, node};
  }

  // One snapshot per second from `from`: GPU 0 at `util`% held by `worker`.
  static model::UsageBatch Series(const NodeId& node, std::optional<model::WorkerKey> worker,
                                  TimeMs from, int seconds, int util) {
    model::UsageBatch batch;
    batch.node = node;
    for (int i = 0; i < seconds; ++i) {
      model::UsageSnapshot snapshot;
      snapshot.at = from + i * kMillisPerSecond;
      model::GpuSample gpu;
      gpu.uuid = "GPU-r0";
      gpu.utilization_pct = util;
      gpu.memory_used_bytes = std::int64_t{1} << 30;
      gpu.power_mw = 200'000;
      gpu.energy_mj = std::int64_t{200} * 1000 * i;  // 200 W
      gpu.worker = worker;
      snapshot.gpus.push_back(gpu);
      batch.snapshots.push_back(snapshot);
    }
    return batch;
  }

  testing::MemoryFileSystem fs_;
  testing::FakeClock clock_{1'700'000'000'000};
  std::unique_ptr<ControlPlane> plane_;
};

TEST_F(UsageTest, SamplesOfTheAttemptsGpuAreSummarizedAndStored) {
  auto [key, node] = StartJob();
  const TimeMs t0 = 1'700'000'000'000;
  ASSERT_TRUE(plane_->IngestUsage(node, Series(node, key, t0, 10, 0)));
  ASSERT_TRUE(plane_->IngestUsage(node, Series(node, key, t0 + 10'000, 10, 100)));
  auto usage = plane_->JobUsage(key.job);
  ASSERT_TRUE(usage) << usage.error().ToString();
  ASSERT_THAT(*usage, SizeIs(1));
  const model::UsageSummary& summary = (*usage)[0].summary;
  EXPECT_EQ((*usage)[0].attempt, 1);
  EXPECT_EQ(summary.gpu_util.count, 20);
  EXPECT_DOUBLE_EQ(summary.gpu_util.mean(), 50);
  EXPECT_EQ(summary.gpu_util_p50, 0);
  EXPECT_EQ(summary.gpu_util_p95, 100);
  EXPECT_EQ(summary.peak_gpu_memory_bytes, std::int64_t{1} << 30);
  // Energy counts per GPU from its first to its last sample: the second batch's counter started
  // again at 0 in this script, so the first batch's 9 s at 200 W is what remains.
  EXPECT_DOUBLE_EQ(summary.energy_joules, 1800);
  auto series = plane_->UsageSeries(key.job, 1);
  ASSERT_TRUE(series);
  ASSERT_THAT(*series, SizeIs(2));
  EXPECT_DOUBLE_EQ((*series)[0].gpu_util.max, 0);
  EXPECT_DOUBLE_EQ((*series)[1].gpu_util.mean(), 100);

  const std::vector<model::GpuActivity> latest = plane_->LatestGpuActivity();
  ASSERT_THAT(latest, SizeIs(1));
  EXPECT_EQ(latest[0].node, node);
  EXPECT_EQ(latest[0].uuid, "GPU-r0");
  EXPECT_EQ(latest[0].utilization_pct, 100);
  EXPECT_EQ(latest[0].at, t0 + 19'000);
  EXPECT_EQ(latest[0].worker, key);
}

// GET /metrics shows allocation against activity: each GPU's latest sample with whether a job
// holds it, the team's summed activity, and nothing once the node's samples are stale.
TEST_F(UsageTest, MetricsShowEachGpusActivityAgainstItsAllocation) {
  auto [key, node] = StartJob();
  const NodeId other(node == NodeId("node-r") ? "node-s" : "node-r");
  const TimeMs t0 = clock_.Now();
  ASSERT_TRUE(plane_->IngestUsage(node, Series(node, key, t0, 5, 40)));
  ASSERT_TRUE(plane_->IngestUsage(other, Series(other, std::nullopt, t0, 5, 0)));
  const std::string text = plane_->MetricsText();
  EXPECT_THAT(text,
              HasSubstr(fmt::format(
                  "drover_gpu_utilization_ratio{{node=\"{}\",gpu=\"0\",allocated=\"true\"}} 0.4\n",
                  node.value())));
  EXPECT_THAT(text,
              HasSubstr(fmt::format(
                  "drover_gpu_utilization_ratio{{node=\"{}\",gpu=\"0\",allocated=\"false\"}} 0\n",
                  other.value())));
  EXPECT_THAT(text, HasSubstr(fmt::format("drover_gpu_power_watts{{node=\"{}\",gpu=\"0\"}} 200\n",
                                          node.value())));
  EXPECT_THAT(text, HasSubstr("drover_team_gpu_activity{team=\"\"} 0.4\n"));
  clock_.Advance(ServerMetrics::kGpuActivityMaxAgeMs + kMillisPerMinute);
  EXPECT_THAT(plane_->MetricsText(), ::testing::Not(HasSubstr("drover_gpu_utilization_ratio{")));
}

// Each GPU's processes in its latest sample, told apart by whether they belong to a Drover
// worker the controller placed on that node: a process naming a job placed elsewhere counts
// as one Drover did not start. The attempt's summary keeps its own processes' GPU memory.
TEST_F(UsageTest, MetricsCountEachGpusProcessesByAttribution) {
  const auto [key, node] = StartJob();
  const model::WorkerKey worker = key;  // a lambda cannot capture a structured binding in clang
  const NodeId other(node == NodeId("node-r") ? "node-s" : "node-r");
  const TimeMs t0 = clock_.Now();
  auto with_processes = [&](const NodeId& at, std::optional<model::WorkerKey> holder) {
    model::UsageBatch batch = Series(at, holder, t0, 2, 40);
    for (model::UsageSnapshot& snapshot : batch.snapshots) {
      snapshot.gpu_processes = {{0, 100, -1, 512 << 20, worker},
                                {0, 101, -1, 1 << 20, std::nullopt}};
    }
    return batch;
  };
  ASSERT_TRUE(plane_->IngestUsage(node, with_processes(node, key)));
  ASSERT_TRUE(plane_->IngestUsage(other, with_processes(other, std::nullopt)));
  const std::string text = plane_->MetricsText();
  auto series = [](const NodeId& at, const char* attributed, int count) {
    return fmt::format("drover_gpu_processes{{node=\"{}\",gpu=\"0\",attributed=\"{}\"}} {}\n",
                       at.value(), attributed, count);
  };
  EXPECT_THAT(text, HasSubstr(series(node, "true", 1)));
  EXPECT_THAT(text, HasSubstr(series(node, "false", 1)));
  EXPECT_THAT(text, HasSubstr(series(other, "true", 0)));  // the job is not placed there
  EXPECT_THAT(text, HasSubstr(series(other, "false", 2)));
  const model::UsageSummary summary = plane_->JobUsage(key.job).value().at(0).summary;
  EXPECT_EQ(summary.peak_process_gpu_memory_bytes, 512 << 20);
  EXPECT_EQ(summary.peak_other_gpu_processes, 1);
}

// The sampling CPU an agent reports with each batch is counted per node; an unmeasured one
// (-1) adds nothing, and a refused batch counts nothing.
TEST_F(UsageTest, EachNodesSamplingCpuIsCounted) {
  const NodeId node("node-r");
  model::UsageBatch batch = Series(node, std::nullopt, clock_.Now(), 1, 0);
  batch.sampler_cpu_us = 1'500'000;
  ASSERT_TRUE(plane_->IngestUsage(node, batch));
  batch.sampler_cpu_us = 250'000;
  ASSERT_TRUE(plane_->IngestUsage(node, batch));
  batch.sampler_cpu_us = -1;
  ASSERT_TRUE(plane_->IngestUsage(node, batch));
  batch.sampler_cpu_us = 900'000;
  batch.snapshots[0].at = clock_.Now() + 2 * kMillisPerMinute;  // refused: too far ahead
  EXPECT_FALSE(plane_->IngestUsage(node, batch));
  EXPECT_THAT(plane_->MetricsText(),
              HasSubstr("drover_agent_sampler_cpu_seconds_total{node=\"node-r\"} 1.75\n"));
}

TEST_F(UsageTest, AnAgentCannotChargeAJobOnAnotherNode) {
  auto [key, node] = StartJob();
  const NodeId other(node == NodeId("node-r") ? "node-s" : "node-r");
  ASSERT_TRUE(plane_->IngestUsage(other, Series(other, key, 1'700'000'000'000, 5, 90)));
  EXPECT_THAT(plane_->JobUsage(key.job).value(), SizeIs(0));
  // The GPU's latest sample is still known, as nobody's.
  const std::vector<model::GpuActivity> latest = plane_->LatestGpuActivity();
  ASSERT_THAT(latest, SizeIs(1));
  EXPECT_EQ(latest[0].node, other);
  EXPECT_EQ(latest[0].worker, std::nullopt);
}

// A snapshot dated far from the server's clock is refused with the batch, naming it: an agent
// cannot stretch an attempt's span or open buckets years away.
TEST_F(UsageTest, SnapshotsFarFromTheServersClockAreRefused) {
  auto [key, node] = StartJob();
  const TimeMs now = clock_.Now();
  for (TimeMs at : {now + 2 * kMillisPerMinute, now - 2 * model::kMaxUsageAgeMs,
                    std::numeric_limits<TimeMs>::min(), std::numeric_limits<TimeMs>::max()}) {
    model::UsageBatch batch = Series(node, key, now, 2, 50);
    batch.snapshots.back().at = at;
    auto refused = plane_->IngestUsage(node, batch);
    ASSERT_FALSE(refused) << at;
    EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(refused.error().message, HasSubstr("snapshots[1].at"));
  }
  EXPECT_THAT(plane_->JobUsage(key.job).value(), SizeIs(0));  // nothing of them recorded
  EXPECT_TRUE(plane_->IngestUsage(node, Series(node, key, now - kMillisPerHour, 2, 50)));
}

TEST_F(UsageTest, AGpuNobodyHoldsIsRecordedAsNoJob) {
  const NodeId node("node-r");
  ASSERT_TRUE(plane_->IngestUsage(node, Series(node, std::nullopt, 1'700'000'000'000, 3, 70)));
  const std::vector<model::GpuActivity> latest = plane_->LatestGpuActivity();
  ASSERT_THAT(latest, SizeIs(1));
  EXPECT_EQ(latest[0].utilization_pct, 70);
  EXPECT_EQ(latest[0].worker, std::nullopt);
}

TEST_F(UsageTest, ABatchOutOfBoundsIsRefusedWhole) {
  auto [key, node] = StartJob();
  model::UsageBatch batch = Series(node, key, 1'700'000'000'000, 3, 50);
  batch.snapshots[2].gpus[0].utilization_pct = 250;
  auto refused = plane_->IngestUsage(node, batch);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(refused.error().message, HasSubstr("snapshots[2].gpus[0].utilization_pct"));
  EXPECT_THAT(plane_->JobUsage(key.job).value(), SizeIs(0));
  EXPECT_THAT(plane_->LatestGpuActivity(), SizeIs(0));
}

TEST_F(UsageTest, ARestartedRecorderGoesOnFromTheStoredRecord) {
  std::unique_ptr<store::Store> store = store::NewMemoryStore();
  const model::WorkerKey key{JobId(9), 1, 0};
  const NodeId node("node-r");
  {
    UsageRecorder first(*store);
    ASSERT_TRUE(first.Record(node, Series(node, key, 1'700'000'000'000, 10, 20)));
  }
  UsageRecorder second(*store);
  ASSERT_TRUE(second.Record(node, Series(node, key, 1'700'000'010'000, 10, 40)));
  auto usage = store->ListUsage(key.job);
  ASSERT_TRUE(usage);
  ASSERT_THAT(*usage, SizeIs(1));
  EXPECT_EQ((*usage)[0].summary.gpu_util.count, 20);
  EXPECT_DOUBLE_EQ((*usage)[0].summary.gpu_util.mean(), 30);
  EXPECT_EQ((*usage)[0].buckets, 2u);
  EXPECT_THAT(store->GetUsageSeries(key.job, 1).value(), SizeIs(2));
}

}  // namespace
}  // namespace drover::server
