// GET /metrics' series (ServerMetrics) as a control plane feeds them: the gauges of its present
// state and the counters of what happened, over a fake runtime driven one turn at a time; and
// the rendering of quota per resource and flavor.

#include "drover/server/server_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "drover/sched/sched_test_util.h"
#include "drover/server/control_plane.h"
#include "drover/testing/fake_clock.h"
#include "drover/testing/fake_runtime.h"
#include "drover/testing/memory_file_system.h"

namespace drover::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kJob[] =
    "kind: Job\nname: train\nteam: vision\nresources: {cpu: 100m, memory: 64Mi, gpus: 1}\n"
    "script: x\n";

class ServerMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ControlPlaneOptions options;
    options.run_loop = false;
    plane_ = std::make_unique<ControlPlane>(store::NewMemoryStore(), clock_, options, fs_);
    auto runtime = std::make_unique<testing::FakeRuntime>();
    runtime_ = runtime.get();
    plane_->AddLocalNode(sched::testing::MakeNode("node-a", 1), std::move(runtime), "/runs");
    ASSERT_TRUE(plane_->Start());
  }

  JobId Submit() {
    auto submitted = plane_->Submit(kJob, spec::ParseOptions{}, "", model::AdminIdentity("alice"));
    EXPECT_TRUE(submitted) << submitted.error().ToString();
    return submitted ? submitted->jobs.at(0).id : JobId(0);
  }

  void Report(const model::WorkerKey& key, model::WorkerEvent::Kind kind,
              model::ExitStatus exit = {}) {
    runtime_->Report(model::WorkerEvent{key, kind, clock_.Now(), exit});
    plane_->RunOnce();
  }

  testing::FakeClock clock_;
  testing::MemoryFileSystem fs_;
  testing::FakeRuntime* runtime_ = nullptr;  // owned by plane_
  std::unique_ptr<ControlPlane> plane_;
};

TEST_F(ServerMetricsTest, GaugesShowPendingAndAllocatedGpusByQueueNodeAndTeam) {
  Submit();
  Submit();  // waits behind the first for the node's one GPU
  plane_->RunOnce();
  const std::string text = plane_->MetricsText();
  EXPECT_THAT(text, HasSubstr("drover_pending_workloads{cluster_queue=\"default\","
                              "status=\"active\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("drover_admitted_active_workloads{cluster_queue=\"default\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("drover_node_gpus{node=\"node-a\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("drover_node_gpus_allocated{node=\"node-a\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("drover_team_gpus_allocated{team=\"vision\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("drover_cluster_queue_resource_usage{cohort=\"\",cluster_queue="
                              "\"default\",flavor=\"any\",resource=\"cpu\"} 0.1\n"));
  EXPECT_EQ(plane_->metrics().cycles().Data({"success"}).count, 1u);
}

TEST_F(ServerMetricsTest, AdmissionWaitIsFromReadyToAdmittedInKueuesBuckets) {
  const JobId first = Submit();
  Submit();
  plane_->RunOnce();  // the first runs; the second is ready and waits for the GPU
  Report({first, 1, 0}, model::WorkerEvent::Kind::kStarted);
  clock_.Advance(30'000);
  model::ExitStatus ok;
  ok.exit_code = 0;
  Report({first, 1, 0}, model::WorkerEvent::Kind::kExited, ok);
  plane_->RunOnce();
  const prometheus::HistogramData wait = plane_->metrics().admission_wait().Data({"default"});
  ASSERT_EQ(wait.count, 2u);
  EXPECT_DOUBLE_EQ(wait.sum, 30);
  EXPECT_EQ(wait.counts[0], 1u);  // the first: admitted in the cycle it became ready (le 1)
  EXPECT_EQ(wait.counts[5], 1u);  // the second: 30 s, in (20, 40]
  EXPECT_EQ(plane_->metrics().admitted().Value({"default"}), 2);
  EXPECT_EQ(plane_->metrics().finished().Value({"default", "succeeded"}), 1);
  EXPECT_EQ(plane_->metrics().team_gpu_seconds().Value({"vision", "succeeded"}), 30);
}

TEST_F(ServerMetricsTest, ALostNodeIsAnEvictionAndItsGpuTimeIsFiledUnderTheOutcome) {
  const JobId id = Submit();
  plane_->RunOnce();
  Report({id, 1, 0}, model::WorkerEvent::Kind::kStarted);
  clock_.Advance(10'000);
  model::ExitStatus lost;
  lost.node_lost = true;
  Report({id, 1, 0}, model::WorkerEvent::Kind::kExited, lost);
  const ServerMetrics& metrics = plane_->metrics();
  EXPECT_EQ(metrics.evicted().Value({"default", "NodeFailures"}), 1);
  // The default retry requeues a first node loss: nothing finished, and the attempt's 10
  // GPU-seconds are filed as retried.
  EXPECT_EQ(metrics.finished().Value({"default", "failed"}), 0);
  EXPECT_EQ(metrics.team_gpu_seconds().Value({"vision", "retried"}), 10);
  EXPECT_EQ(metrics.preempted().Value({"default", "InClusterQueue"}), 0);
  const std::string text = plane_->MetricsText();
  EXPECT_THAT(text, Not(HasSubstr("job=")));   // no job label
  EXPECT_THAT(text, Not(HasSubstr("train")));  // nor the job's name
}

TEST(ServerMetricsRender, WritesQuotaPerResourceAndFlavorInCoresBytesAndGpus) {
  ServerMetrics::Snapshot state;
  control::QueueReport leaf;
  leaf.status.name = "train";
  leaf.status.path = "org/vision/train";
  leaf.status.leaf = true;
  leaf.status.nominal = {{"cpu", 16'000}, {"memory", 1024}, {"gpu", 8'000}, {"gpu:h100", 4'000}};
  leaf.status.usage = {{"gpu", 2'500}};
  control::QueueReport group;
  group.status.name = "vision";
  group.status.path = "org/vision";
  group.status.nominal = {{"gpu", 8'000}};
  state.queues = {group, leaf};
  const std::string text = ServerMetrics().Render(state);
  const std::string labels = "cohort=\"org/vision\",cluster_queue=\"train\",";
  EXPECT_THAT(text, HasSubstr("drover_cluster_queue_nominal_quota{" + labels +
                              "flavor=\"any\",resource=\"cpu\"} 16\n"));
  EXPECT_THAT(text, HasSubstr("drover_cluster_queue_nominal_quota{" + labels +
                              "flavor=\"any\",resource=\"memory\"} 1024\n"));
  EXPECT_THAT(text, HasSubstr("drover_cluster_queue_nominal_quota{" + labels +
                              "flavor=\"h100\",resource=\"gpu\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("drover_cluster_queue_resource_usage{" + labels +
                              "flavor=\"any\",resource=\"gpu\"} 2.5\n"));
  // Grouping queues are Kueue's cohorts: only the leaves are cluster queues.
  EXPECT_THAT(text, Not(HasSubstr("cluster_queue=\"vision\"")));
}

TEST(ServerMetricsRequests, CountByRoutePatternNeverByPath) {
  ServerMetrics metrics;
  metrics.CountRequest("GET", "/v1/jobs/{id}", 200);
  metrics.CountRequest("GET", "/v1/jobs/{id}", 200);
  metrics.CountRequest("other", "unmatched", 404);
  EXPECT_EQ(metrics.requests().Value({"GET", "/v1/jobs/{id}", "200"}), 2);
  EXPECT_THAT(metrics.Render({}),
              HasSubstr("drover_api_requests_total{method=\"other\",route=\"unmatched\","
                        "code=\"404\"} 1\n"));
}

}  // namespace
}  // namespace drover::server
