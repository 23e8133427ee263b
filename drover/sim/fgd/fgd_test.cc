// The FGD experiment: its bookkeeping on hand-made clusters, and the FGD paper's baselines
// reproduced on the public openb trace (shared/traces, beside the source tree as in CI).

#include "drover/sim/fgd/fgd.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "drover/sim/trace/loaders.h"

namespace drover::sim {
namespace {

model::Node SharedNode(const std::string& name, int gpus, std::int64_t cpu_millis) {
  model::Node node;
  node.name = NodeId(name);
  node.cpu_millis = cpu_millis;
  node.memory_bytes = std::int64_t{64} << 30;
  for (int i = 0; i < gpus; ++i) {
    model::Gpu gpu;
    gpu.index = i;
    gpu.uuid = name + "-" + std::to_string(i);
    gpu.model = "T4";
    gpu.sharing = model::GpuSharing::kTimeslice;
    node.gpus.push_back(gpu);
  }
  return node;
}

TraceJob Pod(const std::string& name, int gpus, int share_millis, std::int64_t cpu_millis) {
  TraceJob pod;
  pod.name = name;
  pod.spec.name = name;
  pod.spec.requirements.per_worker.cpu_millis = cpu_millis;
  pod.spec.requirements.per_worker.gpus = gpus;
  pod.spec.requirements.gpu_share_millis = share_millis;
  return pod;
}

FgdOptions Options(const std::string& policy) {
  FgdOptions options;
  options.policy = policy;
  options.timing = false;
  return options;
}

TEST(FgdExperiment, TunesDemandToTheInflatedCapacityAndCountsWhatFits) {
  // 2 nodes x 2 GPUs = 4 GPUs; pods of 1 GPU and of 500m. With inflate 1.0 the workload is
  // tuned to 4 GPUs of demand: every pod fits, and allocation follows arrived demand.
  std::vector<model::Node> nodes = {SharedNode("a", 2, 8000), SharedNode("b", 2, 8000)};
  std::vector<TraceJob> pods = {Pod("p1", 1, 0, 1000), Pod("p2", 0, 500, 1000)};
  FgdOptions options = Options("best-fit");
  options.inflate = 1.0;
  auto result = RunFgdExperiment(nodes, pods, options);
  ASSERT_TRUE(result.has_value()) << result.error().message;
  const nlohmann::json& j = *result;
  EXPECT_EQ(j["total_gpus"], 4);
  EXPECT_EQ(j["pods_failed"], 0);
  EXPECT_EQ(j["pods_placed"], j["pods_arrived"]);
  // Demand never exceeds 100% (101 borrows its neighbour, as in the paper's analysis), and
  // everything that arrived was allocated.
  const nlohmann::json& allocation = j["allocation_ratio_at"];
  ASSERT_TRUE(allocation.contains("100"));
  EXPECT_DOUBLE_EQ(allocation["100"].get<double>(), 100.0);
  EXPECT_FALSE(allocation.contains("102"));
  for (const auto& [key, value] : allocation.items()) {
    EXPECT_NEAR(value.get<double>(), std::stod(key), 25.0) << key;
  }
}

TEST(FgdExperiment, FragmentationCountsGpusNoTypicalTaskCanUse) {
  // One node with 4 GPUs and 2 cores; every pod is 1 GPU + 1 core. After two pods the node has
  // no CPU left: its 2 free GPUs are fragments for the only typical task (50% of capacity).
  std::vector<model::Node> nodes = {SharedNode("a", 4, 2000)};
  std::vector<TraceJob> pods = {Pod("p", 1, 0, 1000)};
  FgdOptions options = Options("fgd");
  options.inflate = 1.0;
  auto result = RunFgdExperiment(nodes, pods, options);
  ASSERT_TRUE(result.has_value());
  const nlohmann::json& j = *result;
  EXPECT_EQ(j["pods_arrived"], 4);
  EXPECT_EQ(j["pods_placed"], 2);
  EXPECT_DOUBLE_EQ(j["allocation_ratio_at"]["100"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(j["fragmentation_at"]["100"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(j["fragmentation_ratio_at"]["100"].get<double>(), 100.0);
}

TEST(FgdExperiment, RejectsBadOptionsNamingThem) {
  std::vector<model::Node> nodes = {SharedNode("a", 1, 1000)};
  std::vector<TraceJob> pods = {Pod("p", 1, 0, 100)};
  auto unknown = RunFgdExperiment(nodes, pods, Options("best_fit"));
  ASSERT_FALSE(unknown.has_value());
  EXPECT_THAT(unknown.error().message, ::testing::HasSubstr("unknown policy 'best_fit'"));
  FgdOptions inflate = Options("fgd");
  inflate.inflate = 0;
  EXPECT_FALSE(RunFgdExperiment(nodes, pods, inflate).has_value());
  EXPECT_FALSE(RunFgdExperiment({}, pods, Options("fgd")).has_value());
}

// ---- On the public openb trace ----

std::string Traces() {
  return std::string(DROVER_SOURCE_DIR) + "/../shared/traces/alibaba-gpu-v2023";
}

class Openb : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(std::filesystem::exists(Traces()))
        << Traces() << " is missing (shared/traces beside the source tree, as in CI)";
    // The set-up: all 1,523 nodes (docs/simulation.md compares the GPU-node list).
    auto n = LoadOpenbNodes(Traces() + "/openb_node_list_all_node.csv");
    auto p = LoadOpenbPods(Traces() + "/openb_pod_list_default.csv");
    ASSERT_TRUE(n.has_value() && p.has_value());
    nodes_ = new std::vector<model::Node>(std::move(*n));
    pods_ = new std::vector<TraceJob>(std::move(*p));
  }

  // `nodes`: the cluster, all 1,523 nodes unless given.
  static nlohmann::json Run(const std::string& policy, std::uint64_t seed = 42,
                            const std::vector<model::Node>* nodes = nullptr) {
    FgdOptions options = Options(policy);
    options.seed = seed;
    options.workload = "openb_pod_list_default";
    options.published_dir = Traces() + "/fgd-expected-results";
    auto result = RunFgdExperiment(nodes ? *nodes : *nodes_, *pods_, options);
    EXPECT_TRUE(result.has_value());
    return result.has_value() ? *result : nlohmann::json();
  }

  static std::vector<model::Node>* nodes_;
  static std::vector<TraceJob>* pods_;
};
std::vector<model::Node>* Openb::nodes_ = nullptr;
std::vector<TraceJob>* Openb::pods_ = nullptr;

TEST_F(Openb, PublishedMeansAreTheTenSeedAverages) {
  auto fgd = LoadPublishedFgd(Traces() + "/fgd-expected-results", "openb_pod_list_default", "fgd");
  ASSERT_TRUE(fgd.has_value()) << fgd.error().message;
  EXPECT_EQ((*fgd)["policy"], "06-FGD");
  EXPECT_EQ((*fgd)["seeds"], 10);
  EXPECT_DOUBLE_EQ((*fgd)["allocation_ratio_at"]["130"].get<double>(), 95.39);
  EXPECT_FALSE(LoadPublishedFgd(Traces() + "/fgd-expected-results", "no-such", "fgd"));
}

// The tolerance docs/simulation.md states for openb_pod_list_default at 130% demand (one seed
// against the paper's 10-seed mean), in allocation-ratio points.
TEST_F(Openb, BaselinesLandWithinTheStatedToleranceOfThePaper) {
  const std::map<std::string, double> tolerance = {{"random", 2.0},
                                                   {"best-fit", 1.0},
                                                   {"dot-product", 1.5},
                                                   {"gpu-packing", 1.5},
                                                   {"gpu-clustering", 1.5}};
  for (const auto& [policy, points] : tolerance) {
    const nlohmann::json result = Run(policy);
    ASSERT_TRUE(result.contains("published")) << policy;
    const double ours = result["allocation_ratio_at"]["130"].get<double>();
    const double paper = result["published"]["allocation_ratio_at"]["130"].get<double>();
    EXPECT_NEAR(ours, paper, points) << policy;
    // The curve follows arrived demand while the cluster has room.
    EXPECT_NEAR(result["allocation_ratio_at"]["50"].get<double>(), 50.0, 1.0) << policy;
  }
}

// Random picks the share's GPU at random, as the paper's Random does: on the 1,213 GPU nodes (the
// cluster the published results evidently ran on, docs/simulation.md) its fragmentation curve
// follows the published one (best-fit GPUs would stay about 1.6 points below it at 60%).
TEST_F(Openb, RandomFragmentsAsThePapersRandomDoesOnTheGpuNodes) {
  auto gpu_nodes = LoadOpenbNodes(Traces() + "/openb_node_list_gpu_node.csv");
  ASSERT_TRUE(gpu_nodes.has_value());
  const nlohmann::json random = Run("random", 42, &*gpu_nodes);
  for (const char* at : {"30", "60", "90", "130"}) {
    EXPECT_NEAR(random["fragmentation_at"][at].get<double>(),
                random["published"]["fragmentation_at"][at].get<double>(), 0.75)
        << at;
  }
}

// Issue 4's bar: Drover's fgd reaches the paper's FGD (95.39%, the mean of its 10 seeds) at 130%
// demand, on all 1,523 nodes, seed 42 (95.94%; docs/simulation.md), and beats every baseline.
TEST_F(Openb, DroversFragmentationPolicyReachesThePapersFgdAndBeatsEveryBaseline) {
  const nlohmann::json fgd = Run("fgd");
  const double ours = fgd["allocation_ratio_at"]["130"].get<double>();
  EXPECT_GE(ours, 95.39);
  EXPECT_GE(ours, fgd["published"]["allocation_ratio_at"]["130"].get<double>());
  for (const char* baseline :
       {"random", "best-fit", "dot-product", "gpu-packing", "gpu-clustering"}) {
    auto published =
        LoadPublishedFgd(Traces() + "/fgd-expected-results", "openb_pod_list_default", baseline);
    ASSERT_TRUE(published.has_value());
    EXPECT_GT(ours, (*published)["allocation_ratio_at"]["130"].get<double>()) << baseline;
  }
  // Fragmentation starts where the paper's does (same typical tasks, same measure).
  EXPECT_NEAR(fgd["fragmentation_at"]["0"].get<double>(),
              fgd["published"]["fragmentation_at"]["0"].get<double>(), 0.1);
}

TEST_F(Openb, SameSeedSameBytesOtherSeedOtherWorkload) {
  const std::string once = Run("random", 7).dump();
  EXPECT_EQ(once, Run("random", 7).dump());
  EXPECT_NE(once, Run("random", 8).dump());
}

}  // namespace
}  // namespace drover::sim
