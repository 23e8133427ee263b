// The loaders against the public traces in shared/traces (SOURCES.md there), found beside the
// source tree at DROVER_SOURCE_DIR/../shared/traces, where CI keeps them too.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "drover/sim/trace/loaders.h"
#include "drover/sim/trace/synthetic.h"

namespace drover::sim {
namespace {

const std::string& TracesDir() {
  static const std::string dir = std::string(DROVER_SOURCE_DIR) + "/../shared/traces";
  return dir;
}

class PublicTraces : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::is_directory(TracesDir())) {
      GTEST_FAIL() << "the public traces are missing: expected the directory " << TracesDir()
                   << " (shared/traces beside the source tree, as in CI)";
    }
  }
  static std::string Path(const std::string& name) { return TracesDir() + "/" + name; }
};

std::int64_t CountGpus(const std::vector<model::Node>& nodes) {
  std::int64_t gpus = 0;
  for (const model::Node& node : nodes) gpus += static_cast<std::int64_t>(node.gpus.size());
  return gpus;
}

TEST_F(PublicTraces, OpenbNodeListsLoad) {
  auto all = LoadOpenbNodes(Path("alibaba-gpu-v2023/openb_node_list_all_node.csv"));
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_EQ(all->size(), 1523u);
  EXPECT_EQ(CountGpus(*all), 6212);
  auto gpu = LoadOpenbNodes(Path("alibaba-gpu-v2023/openb_node_list_gpu_node.csv"));
  ASSERT_TRUE(gpu) << gpu.error().message;
  EXPECT_EQ(gpu->size(), 1213u);
  EXPECT_EQ(CountGpus(*gpu), 6212);
}

TEST_F(PublicTraces, DefaultOpenbPodListLoads) {
  const auto start = std::chrono::steady_clock::now();
  auto pods = LoadOpenbPods(Path("alibaba-gpu-v2023/openb_pod_list_default.csv"));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(pods) << pods.error().message;
  ASSERT_EQ(pods->size(), 8152u);
  std::int64_t whole = 0, share_millis = 0, cpu_only = 0;
  for (const TraceJob& pod : *pods) {
    whole += pod.spec.requirements.per_worker.gpus;
    share_millis += pod.spec.requirements.gpu_share_millis;
    if (pod.spec.requirements.per_worker.gpus == 0 && pod.spec.requirements.gpu_share_millis == 0) {
      ++cpu_only;
    }
  }
  // Counted independently from the CSV: 4355 whole GPUs over 3986 pods, 3078 shared pods asking
  // 1731.8 GPUs, 1088 CPU-only pods.
  EXPECT_EQ(whole, 4355);
  EXPECT_EQ(share_millis, 1'731'800);
  EXPECT_EQ(cpu_only, 1088);
  EXPECT_EQ(pods->front().name, "openb-pod-0000");
  std::printf("[ timing ] LoadOpenbPods(openb_pod_list_default.csv): %.1f ms\n",
              std::chrono::duration<double, std::milli>(elapsed).count());
}

TEST_F(PublicTraces, EveryOpenbPodListLoads) {
  struct File {
    const char* name;
    std::size_t rows;
  };
  // Row counts from shared/traces/SOURCES.md.
  const std::vector<File> files = {
      {"cpu0", 7064},       {"cpu037", 7336},     {"cpu050", 7439},      {"cpu072", 7608},
      {"cpu100", 7853},     {"cpu200", 8832},     {"cpu235", 9240},      {"cpu250", 9420},
      {"cpu300", 10094},    {"default", 8152},    {"gpushare100", 8152}, {"gpushare20", 8152},
      {"gpushare40", 8152}, {"gpushare60", 8152}, {"gpushare80", 8152},  {"gpuspec05", 8152},
      {"gpuspec10", 8152},  {"gpuspec20", 8152},  {"gpuspec25", 8152},   {"gpuspec33", 8152},
      {"multigpu20", 8324}, {"multigpu30", 8508}, {"multigpu40", 8746},  {"multigpu50", 9061},
  };
  for (const File& file : files) {
    const std::string path =
        Path(std::string("alibaba-gpu-v2023/openb_pod_list_") + file.name + ".csv");
    auto pods = LoadOpenbPods(path);
    ASSERT_TRUE(pods) << pods.error().message;
    EXPECT_EQ(pods->size(), file.rows) << file.name;
  }
}

TEST_F(PublicTraces, TiresiasSixtyJobsOnThirtyTwoNodesOfFourGpus) {
  auto nodes = LoadTiresiasCluster(Path("tiresias-sim/n32g4.csv"));
  ASSERT_TRUE(nodes) << nodes.error().message;
  EXPECT_EQ(nodes->size(), 32u);
  EXPECT_EQ(CountGpus(*nodes), 128);

  auto jobs = LoadTiresiasJobs(Path("tiresias-sim/60_job.csv"), 4);
  ASSERT_TRUE(jobs) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 60u);
  int gangs = 0;
  std::int64_t gpus = 0;
  for (std::size_t i = 0; i < jobs->size(); ++i) {
    const TraceJob& job = (*jobs)[i];
    if (i > 0) {
      EXPECT_LE((*jobs)[i - 1].submit, job.submit);
    }
    EXPECT_TRUE(job.spec.interruptible);
    EXPECT_LE(job.spec.requirements.per_worker.gpus, 4);
    if (job.spec.workers > 1) ++gangs;
    gpus += static_cast<std::int64_t>(job.spec.workers) * job.spec.requirements.per_worker.gpus;
  }
  // 30 one-GPU, 10 two-GPU, 10 four-GPU and 10 eight-GPU jobs; the eight-GPU ones are gangs of 2.
  EXPECT_EQ(gangs, 10);
  EXPECT_EQ(gpus, 170);
  EXPECT_EQ(jobs->front().name, "job-0");
  EXPECT_EQ(jobs->front().duration, 164'000);

  auto eight = LoadTiresiasJobs(Path("tiresias-sim/60_job.csv"), 8);
  ASSERT_TRUE(eight);
  for (const TraceJob& job : *eight) EXPECT_EQ(job.spec.workers, 1);
}

TEST_F(PublicTraces, TiresiasClusterSpecsLoad) {
  for (const char* name : {"cluster_spec.csv", "n160g8.csv", "n1g4.csv", "n256g8.csv"}) {
    auto nodes = LoadTiresiasCluster(Path(std::string("tiresias-sim/") + name));
    ASSERT_TRUE(nodes) << nodes.error().message;
  }
  auto big = LoadTiresiasCluster(Path("tiresias-sim/n256g8.csv"));
  ASSERT_TRUE(big);
  EXPECT_EQ(big->size(), 256u);
  EXPECT_EQ(big->back().name.value(), "s7-n31");
}

TEST_F(PublicTraces, TfJobRepeatsAJobAndIsRejected) {
  // tf_job.csv has the columns LoadTiresiasJobs needs, but lists job 10 twice.
  auto jobs = LoadTiresiasJobs(Path("tiresias-sim/tf_job.csv"), 4);
  ASSERT_FALSE(jobs);
  EXPECT_EQ(jobs.error().message,
            Path("tiresias-sim/tf_job.csv") +
                ":3: column 'job_id': duplicate job 'job-10' (first on line 2)");
}

TEST_F(PublicTraces, ClusterSummariesLoad) {
  for (const char* id : {"Seren", "Kalos", "Philly", "Helios"}) {
    auto summary = LoadClusterSummary(Path("summaries/acme_cluster_summary.csv"), id);
    ASSERT_TRUE(summary) << summary.error().message;
    EXPECT_GT(summary->max_run_seconds, 0) << id;
    EXPECT_GT(summary->max_gpus, 0) << id;
  }
  auto seren = LoadClusterSummary(Path("summaries/acme_cluster_summary.csv"), "Seren");
  ASSERT_TRUE(seren);
  EXPECT_DOUBLE_EQ(seren->avg_run_seconds, 1414.335);
  EXPECT_DOUBLE_EQ(seren->median_run_seconds, 122.0);
  EXPECT_DOUBLE_EQ(seren->max_run_seconds, 1209604.0);
  EXPECT_DOUBLE_EQ(seren->avg_gpus, 5.68);
  EXPECT_DOUBLE_EQ(seren->median_gpus, 1.0);
  EXPECT_EQ(seren->max_gpus, 1024);
  EXPECT_DOUBLE_EQ(seren->avg_queue_seconds, 445.984);
  EXPECT_DOUBLE_EQ(seren->median_queue_seconds, 1.0);

  for (const char* id : {"Venus", "Earth", "Saturn", "Uranus"}) {
    auto summary = LoadClusterSummary(Path("summaries/helios_cluster_summary.csv"), id);
    ASSERT_TRUE(summary) << summary.error().message;
  }
  auto venus = LoadClusterSummary(Path("summaries/helios_cluster_summary.csv"), "Venus");
  ASSERT_TRUE(venus);
  EXPECT_DOUBLE_EQ(venus->avg_run_seconds, 13040.598);
  EXPECT_DOUBLE_EQ(venus->median_run_seconds, 204.0);
  EXPECT_DOUBLE_EQ(venus->max_run_seconds, 0) << "no max column: no cap";
  EXPECT_EQ(venus->max_gpus, 1022) << "no max column: the cluster's GPUs";
  EXPECT_DOUBLE_EQ(venus->avg_gpus, 6.736);

  auto missing = LoadClusterSummary(Path("summaries/acme_cluster_summary.csv"), "Mars");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(missing.error().message,
              ::testing::HasSubstr("no cluster 'Mars' (the file has Seren, Kalos, Philly, Helios, "
                                   "PAI)"));
}

}  // namespace
}  // namespace drover::sim
