// Fragmentation scoring through the index (FragmentationGrouping in placement_support.h, used by
// node_scoring.cc and the gang planner): one node per
// distinct free capacity gives the placement that scoring every node gives.

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "drover/sched/cluster_index.h"
#include "drover/sched/cluster_state.h"
#include "drover/sched/placement.h"
#include "drover/sched/sched_test_util.h"

namespace drover::sched {
namespace {

using testing::Fgd;
using testing::kGi;
using testing::MakeCpuJob;
using testing::MakeJob;
using testing::MakeNode;
using testing::MakeSharedNode;
using testing::MixOfSpecs;

// Builds (if missing) the index of `spec`'s static filter in `cluster`.
const internal::Index& IndexFor(ClusterState& cluster, const model::JobSpec& spec) {
  return internal::ClusterStateAccess::Get(cluster).GetOrBuildIndex(
      internal::StaticFilter::From(spec.requirements));
}

TEST(FragmentationIndex, ScoresOneNodePerDistinctFreeCapacity) {
  // 100 identical idle nodes: one capacity, so one node is scored (the first by name).
  ClusterState cluster;
  for (int i = 0; i < 100; ++i) cluster.UpsertNode(MakeNode("n" + std::to_string(100 + i), 8));
  const model::JobSpec job = MakeJob(1);
  const internal::StaticFilter filter = internal::StaticFilter::From(job.requirements);
  const internal::Index& index = IndexFor(cluster, job);
  const internal::WorkloadMix mix = internal::MixOf({&job});
  const internal::ClusterImpl& impl = internal::ClusterStateAccess::Get(cluster);
  auto gang = internal::Plan(impl, filter, &index, job, Fgd(&mix));
  ASSERT_TRUE(gang.has_value());
  EXPECT_EQ(gang->candidates, 1);
  EXPECT_EQ(gang->workers[0].node.value(), "n100");
  // A node of another GPU kind (a timeslice GPU) makes the index mixed: every node is scored.
  cluster.UpsertNode(MakeSharedNode("s", 2, model::GpuSharing::kTimeslice));
  const internal::Index& mixed = IndexFor(cluster, job);
  EXPECT_EQ(mixed.mixed_members, 1);
  gang = internal::Plan(impl, filter, &mixed, job, Fgd(&mix));
  ASSERT_TRUE(gang.has_value());
  EXPECT_EQ(gang->candidates, 101);
}

TEST(FragmentationIndex, MemberCountsFollowNodeChanges) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("a", 4, "A100"));
  cluster.UpsertNode(MakeNode("b", 4, "H100"));
  const model::JobSpec job = MakeJob(1);
  const internal::Index& index = IndexFor(cluster, job);
  EXPECT_EQ(index.mixed_members, 0);
  EXPECT_EQ(index.member_models.size(), 2u);
  model::Node mixed = MakeNode("b", 4, "H100");
  mixed.gpus[3].model = "A100";
  cluster.UpsertNode(mixed);
  EXPECT_EQ(index.mixed_members, 1);
  EXPECT_EQ(index.member_models.size(), 1u);
  cluster.UpsertNode(MakeNode("b", 4, "a100"));  // models compare lower-cased
  EXPECT_EQ(index.mixed_members, 0);
  ASSERT_EQ(index.member_models.size(), 1u);
  EXPECT_EQ(index.member_models.begin()->second, 2);
}

// A random cluster: nodes of one GPU kind (two models, 2/4/8 GPUs), and unless `uniform` also
// nodes with mixed models, timeslice GPUs, and no GPUs. Few distinct CPU and memory sizes, so
// that many nodes share a free capacity.
std::vector<model::Node> RandomNodes(std::mt19937& rng, bool uniform) {
  std::vector<model::Node> nodes;
  const int count = 10 + static_cast<int>(rng() % 30);
  for (int i = 0; i < count; ++i) {
    const std::string name = "n" + std::to_string(rng() % 1000) + "-" + std::to_string(i);
    const std::string model = rng() % 3 == 0 ? "A100" : "H100";
    const int gpus = 2 << (rng() % 3);
    const std::int64_t cpu = rng() % 2 == 0 ? 32'000 : 64'000;
    const std::int64_t memory = (rng() % 2 == 0 ? 256 : 512) * kGi;
    const int kind = uniform ? 0 : static_cast<int>(rng() % 5);
    model::Node node = MakeNode(name, gpus, model, cpu, memory);
    if (kind == 1) node.gpus[0].model = model == "A100" ? "H100" : "A100";
    if (kind == 2) {
      node = MakeSharedNode(name, gpus, model::GpuSharing::kTimeslice, {}, model, cpu, memory);
    }
    if (kind == 3) node.gpus.clear();
    nodes.push_back(node);
  }
  return nodes;
}

TEST(FragmentationIndex, PlacesAsScoringEveryNode) {
  // The same jobs on two copies of a random cluster, one with the indexes (one node per free
  // capacity when FragmentationGrouping allows) and one without (every node scanned and
  // scored): the placements agree, for single workers and gangs, with and without excluded
  // nodes and model-restricted shapes in the mix.
  for (int seed = 0; seed < 200; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    const std::vector<model::Node> nodes = RandomNodes(rng, seed % 2 == 0);
    ClusterState indexed;
    ClusterState scanned;
    for (const model::Node& node : nodes) {
      indexed.UpsertNode(node);
      scanned.UpsertNode(node);
    }
    std::vector<model::JobSpec> specs;
    for (int gpus : {1, 2, 4}) {
      model::JobSpec spec = MakeJob(gpus);
      spec.requirements.per_worker.cpu_millis = 2'000 * (1 + static_cast<int>(rng() % 6));
      spec.requirements.per_worker.memory_bytes = (16 << (rng() % 3)) * kGi;
      specs.push_back(spec);
    }
    specs.push_back(MakeCpuJob(4'000, 8 * kGi));
    // Gangs: the gang planner's whole-GPU steps group by free capacity the same way.
    specs.push_back(MakeJob(2, /*workers=*/3));
    specs.push_back(MakeJob(1, /*workers=*/4, /*same_node=*/true));
    if (seed % 4 < 2) {
      model::JobSpec h100 = MakeJob(1);
      h100.requirements.gpu_models = {"H100"};
      specs.push_back(h100);
    }
    const internal::WorkloadMix mix = MixOfSpecs(specs);
    for (const model::JobSpec& spec : specs) IndexFor(indexed, spec);
    std::vector<char> excluded(nodes.size(), 0);
    internal::PlanOptions options = Fgd(&mix);
    if (seed % 3 == 0) {
      for (char& e : excluded) e = rng() % 4 == 0;
      options.excluded = &excluded;
    }
    for (int i = 0; i < 60; ++i) {
      const model::JobSpec& spec = specs[rng() % specs.size()];
      auto a = TryPlace(indexed, JobId(i), spec, options);
      auto b = TryPlace(scanned, JobId(i), spec, options);
      ASSERT_EQ(a, b) << "job " << i;
      if (!a) continue;
      ASSERT_TRUE(indexed.Allocate(*a, spec.requirements).has_value());
      ASSERT_TRUE(scanned.Allocate(*b, spec.requirements).has_value());
    }
  }
}

}  // namespace
}  // namespace drover::sched
