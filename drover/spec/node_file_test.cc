#include "drover/spec/node_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace drover::spec {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::int64_t kGi = std::int64_t{1} << 30;

TEST(ParseNodeFile, ReadsNodesWithDeclaredGpus) {
  constexpr const char* kText = R"(nodes:
  - name: gpu-a
    address: 10.0.0.7
    labels: {zone: a, rack: "3"}
    taints: ["dedicated=infer:NoSchedule", "flaky:PreferNoSchedule",
             {key: maint, value: "yes", effect: NoExecute}]
    cpu: "64"
    memory: 512Gi
    gpus: 8xH100-80GB
  - name: cpu-b
    cpu: 500m
    memory: 8Gi
)";
  auto nodes = ParseNodeFile(kText, "cluster.yaml");
  ASSERT_TRUE(nodes) << nodes.error().ToString();
  ASSERT_EQ(nodes->size(), 2u);
  const model::Node& a = (*nodes)[0];
  EXPECT_EQ(a.name, NodeId("gpu-a"));
  EXPECT_EQ(a.address, "10.0.0.7");
  EXPECT_EQ(a.labels.at("zone"), "a");
  EXPECT_EQ(a.labels.at("rack"), "3");
  EXPECT_THAT(a.taints,
              ElementsAre(model::Taint{"dedicated", "infer", model::TaintEffect::kNoSchedule},
                          model::Taint{"flaky", "", model::TaintEffect::kPreferNoSchedule},
                          model::Taint{"maint", "yes", model::TaintEffect::kNoExecute}));
  EXPECT_EQ(a.cpu_millis, 64000);
  EXPECT_EQ(a.memory_bytes, 512 * kGi);
  ASSERT_EQ(a.gpus.size(), 8u);
  EXPECT_EQ(a.gpus[7].index, 7);
  EXPECT_EQ(a.gpus[7].model, "H100");
  EXPECT_EQ(a.gpus[7].memory_bytes, 80 * kGi);
  EXPECT_EQ(a.gpus[7].topology_group, "g0");
  EXPECT_EQ(a.gpus[7].uuid, "GPU-declared-gpu-a-7");

  const model::Node& b = (*nodes)[1];
  EXPECT_EQ(b.address, "127.0.0.1");
  EXPECT_EQ(b.cpu_millis, 500);
  EXPECT_TRUE(b.gpus.empty());
  EXPECT_TRUE(b.taints.empty());
}

TEST(ParseNodeFile, ReadsGpuLists) {
  constexpr const char* kText = R"(nodes:
  - name: mixed
    cpu: 32
    memory: 256Gi
    gpus:
      - {model: H100, topology_group: nvl0, count: 2}
      - {model: RTX4090, memory: 24GB, uuid: GPU-1234}
)";
  auto nodes = ParseNodeFile(kText, "n.yaml");
  ASSERT_TRUE(nodes) << nodes.error().ToString();
  const auto& gpus = (*nodes)[0].gpus;
  ASSERT_EQ(gpus.size(), 3u);
  EXPECT_EQ(gpus[0].memory_bytes, 80 * kGi);
  EXPECT_EQ(gpus[1].topology_group, "nvl0");
  EXPECT_EQ(gpus[1].uuid, "GPU-declared-mixed-1");
  EXPECT_EQ(gpus[2].index, 2);
  EXPECT_EQ(gpus[2].model, "RTX4090");
  EXPECT_EQ(gpus[2].memory_bytes, 24 * kGi);
  EXPECT_EQ(gpus[2].uuid, "GPU-1234");
  EXPECT_EQ(gpus[2].topology_group, "");
}

TEST(ParseNodeFile, ReadsSharingModesAndMigLayouts) {
  constexpr const char* kText = R"(nodes:
  - name: shared
    labels: {rack: r1, nvlink-domain: nvl-a}
    cpu: 64
    memory: 512Gi
    gpus:
      - {count: 4, model: H100, memory: 80Gi}
      - {count: 2, model: H100, memory: 80Gi, sharing: timeslice}
      - {count: 2, model: A100, memory: 40Gi, sharing: mig, mig: {3g.20gb: 2, 1G.5GB: 1}}
)";
  auto nodes = ParseNodeFile(kText, "n.yaml");
  ASSERT_TRUE(nodes) << nodes.error().ToString();
  const auto& gpus = (*nodes)[0].gpus;
  ASSERT_EQ(gpus.size(), 8u);
  EXPECT_EQ(gpus[3].sharing, model::GpuSharing::kExclusive);
  EXPECT_TRUE(gpus[3].mig.empty());
  EXPECT_EQ(gpus[4].sharing, model::GpuSharing::kTimeslice);
  EXPECT_EQ(gpus[5].sharing, model::GpuSharing::kTimeslice);
  EXPECT_EQ(gpus[5].memory_bytes, 80 * kGi);
  EXPECT_EQ(gpus[6].sharing, model::GpuSharing::kMig);
  EXPECT_EQ(gpus[7].model, "A100");
  EXPECT_EQ(gpus[7].mig,
            (std::vector<model::MigSlots>{{"3g.20gb", 2}, {"1g.5gb", 1}}));  // as written
  EXPECT_EQ(gpus[7].uuid, "GPU-declared-shared-7");
  EXPECT_EQ((*nodes)[0].labels.at("nvlink-domain"), "nvl-a");
}

TEST(ParseNodeFile, ReportsSharingErrorsWithPositions) {
  constexpr const char* kText = R"(nodes:
  - name: a
    cpu: 8
    memory: 64Gi
    gpus:
      - {model: H100, sharing: sliced}
      - {model: H100, mig: {1g.10gb: 1}}
      - {model: H100, sharing: mig}
      - {model: H100, sharing: mig, mig: {3g.40gb: 2, 2g.20gb: 1}}
      - {model: H100, sharing: mig, mig: {1g10gb: 1, 2g.20gb: 0, 1g.10gb: two}}
      - {model: H100, sharing: mig, mig: [1g.10gb]}
      - {model: H100, sharing: mig, mig: {1g.10gb: 1, 1g.10gb: 2}}
)";
  auto nodes = ParseNodeFile(kText, "n.yaml");
  ASSERT_FALSE(nodes);
  EXPECT_EQ(nodes.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(
      nodes.error().details,
      ElementsAre(
          "n.yaml:6:32: error: nodes[0].gpus[0].sharing: unknown GPU sharing mode 'sliced' "
          "(expected exclusive, timeslice or mig)",
          "n.yaml:7:23: error: nodes[0].gpus[1].mig: a MIG layout ('mig') needs sharing: mig",
          "n.yaml:8:32: error: nodes[0].gpus[2].sharing: a GPU with sharing: mig needs its MIG "
          "layout, e.g. mig: {3g.40gb: 2, 1g.10gb: 1}",
          "n.yaml:9:42: error: nodes[0].gpus[3].mig: the MIG layout uses 8 compute slices; a GPU "
          "has 7",
          "n.yaml:10:43: error: nodes[0].gpus[4].mig: '1g10gb' is not a MIG profile: write "
          "<compute slices>g.<memory>gb, e.g. 1g.10gb or 3g.40gb",
          "n.yaml:10:63: error: nodes[0].gpus[4].mig: MIG instance count of '2g.20gb' must be an "
          "integer from 1 to 7",
          "n.yaml:10:75: error: nodes[0].gpus[4].mig: MIG instance count of '1g.10gb' must be an "
          "integer from 1 to 7",
          "n.yaml:11:42: error: nodes[0].gpus[5].mig: mig is a map of MIG profiles to instance "
          "counts, e.g. {3g.40gb: 2, 1g.10gb: 1}",
          "n.yaml:12:55: error: nodes[0].gpus[6].mig: duplicate MIG profile '1g.10gb'"));
}

TEST(ParseNodeFile, ReadsTheSharingExample) {
  std::ifstream in(std::string(DROVER_SOURCE_DIR) + "/examples/nodes-sharing.yaml");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  auto nodes = ParseNodeFile(text.str(), "nodes-sharing.yaml");
  ASSERT_TRUE(nodes) << nodes.error().ToString();
  int timeslice = 0;
  int mig = 0;
  for (const model::Node& node : *nodes) {
    EXPECT_TRUE(node.labels.count("rack")) << node.name.value();
    for (const model::Gpu& gpu : node.gpus) {
      timeslice += gpu.sharing == model::GpuSharing::kTimeslice;
      mig += gpu.sharing == model::GpuSharing::kMig;
    }
  }
  EXPECT_GT(timeslice, 0);
  EXPECT_GT(mig, 0);
}

TEST(ParseNodeFile, ReadsTheClusterExample) {
  std::ifstream in(std::string(DROVER_SOURCE_DIR) + "/examples/nodes.yaml");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  auto nodes = ParseNodeFile(text.str(), "nodes.yaml");
  ASSERT_TRUE(nodes) << nodes.error().ToString();
  EXPECT_EQ(nodes->size(), 3u);
}

TEST(ParseNodeFile, EmptyInventoryIsAllowed) {
  auto nodes = ParseNodeFile("nodes: []\n", "n.yaml");
  ASSERT_TRUE(nodes) << nodes.error().ToString();
  EXPECT_TRUE(nodes->empty());
}

TEST(ParseNodeFile, ReportsEveryErrorWithFileLineAndColumn) {
  constexpr const char* kText = R"(nodes:
  - name: a
    cpu: lots
    memory: 8Gi
    gpus: 2xV100-16XB
  - name: b
    cpu: 4
    memory: 8Gi
    taints: ["k=v:Sometimes"]
    colour: blue
  - cpu: 4
    memory: 8Gi
  - name: a
    cpu: 1
    memory: 1Gi
)";
  auto nodes = ParseNodeFile(kText, "cluster.yaml");
  ASSERT_FALSE(nodes);
  EXPECT_EQ(nodes.error().code, ErrorCode::kInvalidArgument);
  const auto& d = nodes.error().details;
  ASSERT_EQ(d.size(), 6u) << nodes.error().ToString();
  // In position order, each naming its field.
  EXPECT_THAT(d[0], HasSubstr("cluster.yaml:3:10: error: nodes[0].cpu: cpu 'lots'"));
  EXPECT_THAT(d[1], HasSubstr("cluster.yaml:5:11: error: nodes[0].gpus: GPU entry 1 "
                              "'2xV100-16XB' (column 1)"));
  EXPECT_THAT(d[2], HasSubstr("cluster.yaml:9:14: error: nodes[1].taints[0]: unknown taint "
                              "effect 'Sometimes'"));
  EXPECT_THAT(d[3],
              HasSubstr("cluster.yaml:10:5: error: nodes[1].colour: unknown node key 'colour'"));
  EXPECT_THAT(d[4], HasSubstr("cluster.yaml:11:5: error: nodes[2].name: missing required field "
                              "'name'"));
  EXPECT_THAT(d[5], HasSubstr("cluster.yaml:13:5: error: nodes[3].name: duplicate node name 'a'"));
  EXPECT_EQ(nodes.error().message, "6 errors in cluster.yaml");
}

TEST(ParseNodeFile, SyntaxErrorsHavePositions) {
  auto nodes = ParseNodeFile("nodes:\n  - name: [a\n", "bad.yaml");
  ASSERT_FALSE(nodes);
  EXPECT_EQ(nodes.error().message, "1 error in bad.yaml");
  ASSERT_EQ(nodes.error().details.size(), 1u);
  EXPECT_THAT(nodes.error().details[0],
              ::testing::MatchesRegex("bad\\.yaml:[0-9]+:[0-9]+: error: .*"));
}

TEST(ParseNodeFile, RejectsWrongShapes) {
  auto not_a_map = ParseNodeFile("- a\n- b\n", "f.yaml");
  ASSERT_FALSE(not_a_map);
  EXPECT_THAT(not_a_map.error().details,
              ElementsAre(HasSubstr("f.yaml:1:1: error: a node file is a map")));

  auto missing = ParseNodeFile("machines: []\n", "f.yaml");
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().details,
              ::testing::Contains(HasSubstr("machines: unknown top-level key 'machines'")));

  auto gpu_list = ParseNodeFile(
      "nodes:\n  - {name: x, cpu: 1, memory: 1Gi, gpus: [{model: Z9, count: 2}]}\n", "f.yaml");
  ASSERT_FALSE(gpu_list);
  EXPECT_THAT(gpu_list.error().details,
              ElementsAre(HasSubstr("f.yaml:2:43: error: nodes[0].gpus[0]: GPU model 'Z9' has no "
                                    "default")));
}

// What a `drover agent --gpus 2xA100-40GB` registers: whole GPUs without a MIG layout. (The
// first CheckNode refused every such node: "the MIG layout is empty".)
TEST(CheckNodeTest, AcceptsWholeGpusAndRefusesAMigGpuWithoutItsLayout) {
  model::Node node;
  node.name = NodeId("remote-1");
  node.address = "127.0.0.1";
  node.cpu_millis = 8'000;
  node.memory_bytes = std::int64_t{64} << 30;
  for (int i = 0; i < 2; ++i) {
    model::Gpu gpu;
    gpu.index = i;
    gpu.model = "A100-40GB";
    gpu.memory_bytes = std::int64_t{40} << 30;
    node.gpus.push_back(gpu);
  }
  Status whole = CheckNode(node, "request body");
  EXPECT_TRUE(whole) << whole.error().ToString();

  node.gpus[1].sharing = model::GpuSharing::kMig;
  Status mig = CheckNode(node, "request body");
  ASSERT_FALSE(mig);
  EXPECT_THAT(mig.error().details,
              ElementsAre("request body: gpus[1].mig: a MIG layout is given exactly when sharing "
                          "is mig"));
}

}  // namespace
}  // namespace drover::spec
