// Scoring (binpack, spread, FGD), label preferences, excluded nodes, and Plan/Commit.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "drover/sched/cluster_index.h"
#include "drover/sched/cluster_state.h"
#include "drover/sched/engine.h"
#include "drover/sched/placement.h"
#include "drover/sched/sched_test_util.h"
#include "drover/sched/scheduler.h"

namespace drover::sched {
namespace {

using ::testing::ElementsAre;
using testing::kGi;
using testing::MakeCpuJob;
using testing::MakeJob;
using testing::MakeNode;
using testing::MakeSharedNode;
using testing::MakeShareJob;
using testing::OneWorker;
using testing::Pending;
using ::testing::UnorderedElementsAre;

internal::PlanOptions Scored(model::Scoring scoring) {
  internal::PlanOptions options;
  options.scoring = scoring;
  return options;
}

// Occupies GPUs `gpus` and `cpu` millicores of `node`.
void Occupy(ClusterState& cluster, const std::string& node, std::vector<int> gpus,
            std::int64_t cpu = 0) {
  ASSERT_TRUE(cluster.Allocate(OneWorker(node, std::move(gpus), 999), testing::Req({cpu, 0, 0}))
                  .has_value());
}

std::set<std::string> NodesOf(const Placement& placement) {
  std::set<std::string> nodes;
  for (const WorkerAssignment& w : placement.workers) nodes.insert(w.node.value());
  return nodes;
}

// Places `spec` with `options` and allocates it; the chosen node of worker 0.
std::string PlaceAndAllocate(ClusterState& cluster, std::int64_t id, const model::JobSpec& spec,
                             const internal::PlanOptions& options) {
  auto placement = TryPlace(cluster, JobId(id), spec, options);
  if (!placement) return "";
  EXPECT_TRUE(cluster.Allocate(*placement, spec.requirements).has_value());
  return placement->workers[0].node.value();
}

TEST(Scoring, SpreadAndBinpackPickDifferentNodes) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("big", 8));
  cluster.UpsertNode(MakeNode("small", 2));
  model::JobSpec job = MakeJob(1);
  EXPECT_EQ(TryPlace(cluster, JobId(1), job, Scored(model::Scoring::kBinpack))->workers[0].node,
            NodeId("small"));
  EXPECT_EQ(TryPlace(cluster, JobId(1), job, Scored(model::Scoring::kSpread))->workers[0].node,
            NodeId("big"));
  // The same through the index RunCycle builds.
  RunCycle(cluster, {Pending(5, MakeJob(100))});  // does not fit; builds the index
  EXPECT_EQ(TryPlace(cluster, JobId(1), job, Scored(model::Scoring::kSpread))->workers[0].node,
            NodeId("big"));

  ClusterState cpus;
  cpus.UpsertNode(MakeNode("cpu-a", 0, "", 8'000, 64 * kGi));
  cpus.UpsertNode(MakeNode("cpu-b", 0, "", 32'000, 64 * kGi));
  cpus.UpsertNode(MakeNode("gpu-c", 8, "H100", 128'000, 512 * kGi));
  model::JobSpec cpu_job = MakeCpuJob(2'000, kGi);
  // CPU-only jobs still keep off GPU nodes first; within the GPU-less tier spread goes to the
  // most free.
  EXPECT_EQ(TryPlace(cpus, JobId(1), cpu_job, Scored(model::Scoring::kSpread))->workers[0].node,
            NodeId("cpu-b"));
  EXPECT_EQ(TryPlace(cpus, JobId(1), cpu_job)->workers[0].node, NodeId("cpu-a"));
}

TEST(Scoring, SpreadPutsGangWorkersOnDifferentNodes) {
  ClusterState cluster;
  for (std::string name : {"a", "b", "c", "d"}) cluster.UpsertNode(MakeNode(name, 8));
  model::JobSpec gang = MakeJob(1, 4);
  auto spread = TryPlace(cluster, JobId(1), gang, Scored(model::Scoring::kSpread));
  ASSERT_TRUE(spread);
  EXPECT_EQ(NodesOf(*spread).size(), 4u);
  auto binpack = TryPlace(cluster, JobId(1), gang);
  ASSERT_TRUE(binpack);
  EXPECT_EQ(NodesOf(*binpack).size(), 1u);
  // Ranks stay grouped by node and GPUs disjoint.
  for (int rank = 0; rank < 4; ++rank) EXPECT_EQ(spread->workers[rank].rank, rank);
}

// Three 8-GPU nodes: "whole" is idle; "tight" has 2 GPUs and 8 CPUs free; "half" 4 GPUs and all
// its CPUs. The expected workload is half 8-GPU jobs, half 1-GPU jobs of 1 CPU.
class Fragmentation : public ::testing::Test {
 protected:
  void SetUp() override {
    for (ClusterState* cluster : {&binpack_, &fgd_}) {
      cluster->UpsertNode(MakeNode("whole", 8, "H100", 64'000, 512 * kGi));
      cluster->UpsertNode(MakeNode("tight", 8, "H100", 64'000, 512 * kGi));
      cluster->UpsertNode(MakeNode("half", 8, "H100", 64'000, 512 * kGi));
      Occupy(*cluster, "tight", {0, 1, 2, 3, 4, 5}, 56'000);
      Occupy(*cluster, "half", {0, 1, 2, 3});
    }
    mix_.shapes = {{8, 0, 8'000, {}, 0.5}, {1, 0, 1'000, {}, 0.5}};
    heavy_ = MakeJob(1);
    heavy_.requirements.per_worker = {8'000, 0, 1};
    light_ = MakeJob(1);
    light_.requirements.per_worker = {1'000, 0, 1};
  }

  double Total(const ClusterState& cluster) const {
    double total = 0.0;
    for (const model::Node& node : cluster.nodes())
      total += NodeFragmentation(cluster, node.name, mix_);
    return total;
  }

  ClusterState binpack_;
  ClusterState fgd_;
  internal::WorkloadMix mix_;
  model::JobSpec heavy_;
  model::JobSpec light_;
};

TEST_F(Fragmentation, FgdKeepsTheIdleNodeWholeWhereBinpackBreaksIt) {
  internal::PlanOptions fgd = Scored(model::Scoring::kFragmentation);
  fgd.mix = &mix_;
  const internal::PlanOptions binpack = Scored(model::Scoring::kBinpack);

  // Binpack puts the 8-CPU job on "tight" (fewest free GPUs), stranding its last GPU without
  // CPU; FGD sees that growth of fragmentation and uses "half" instead.
  EXPECT_EQ(PlaceAndAllocate(binpack_, 1, heavy_, binpack), "tight");
  EXPECT_EQ(PlaceAndAllocate(fgd_, 1, heavy_, fgd), "half");
  for (int i = 0; i < 5; ++i) {
    PlaceAndAllocate(binpack_, 2 + i, light_, binpack);
    PlaceAndAllocate(fgd_, 2 + i, light_, fgd);
  }
  // Binpack had to break into "whole"; FGD did not.
  EXPECT_EQ(binpack_.Free(NodeId("whole"))->gpus, 7);
  EXPECT_EQ(fgd_.Free(NodeId("whole"))->gpus, 8);
  EXPECT_EQ(fgd_.Free(NodeId("tight"))->gpus + fgd_.Free(NodeId("half"))->gpus, 0);
  // Expected fragmentation in milli-GPUs: binpack leaves 7 GPUs an 8-GPU job cannot use on
  // "whole" and 1 stranded GPU on "tight"; FGD none.
  EXPECT_DOUBLE_EQ(Total(binpack_), 0.5 * 7000 + 0.5 * 1000 + 0.5 * 1000);
  EXPECT_DOUBLE_EQ(Total(fgd_), 0.0);
  // Whole GPUs stay whole: an 8-GPU job fits only after FGD.
  EXPECT_FALSE(TryPlace(binpack_, JobId(9), MakeJob(8)));
  EXPECT_TRUE(TryPlace(fgd_, JobId(9), MakeJob(8)));
}

TEST_F(Fragmentation, WithoutAMixTheJobsOwnShapeIsUsed) {
  // With only its own shape (1 GPU, 8 CPU), putting the job on "tight" strands a GPU
  // (fragmentation grows by 1000) while "half" stays able to host another: FGD picks "half".
  auto placement = TryPlace(fgd_, JobId(1), heavy_, Scored(model::Scoring::kFragmentation));
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->workers[0].node, NodeId("half"));
}

TEST_F(Fragmentation, IndexedAndScanningPathsAgree) {
  internal::PlanOptions fgd = Scored(model::Scoring::kFragmentation);
  fgd.mix = &mix_;
  RunCycle(fgd_, {Pending(100, MakeJob(100))});  // builds the index of the 1-GPU filter
  for (int i = 0; i < 6; ++i) {
    const model::JobSpec& spec = i == 0 ? heavy_ : light_;
    auto indexed = TryPlace(fgd_, JobId(i), spec, fgd);
    auto scanned = TryPlace(binpack_, JobId(i), spec, fgd);  // binpack_ has no index
    ASSERT_EQ(indexed, scanned) << i;
    if (!indexed) break;
    ASSERT_TRUE(fgd_.Allocate(*indexed, spec.requirements).has_value());
    ASSERT_TRUE(binpack_.Allocate(*scanned, spec.requirements).has_value());
  }
}

TEST(Scoring, FgdKeepsTimesliceShareLeftoversUsable) {
  // Two timeslice GPUs with 600m and 300m free; the mix is 300m shares. A 300m job on the
  // 600m GPU leaves 300m (still usable); on the 300m GPU, 0. Either way nothing becomes a
  // fragment; a 400m job does: on the 600m GPU it leaves 200m, a fragment for 300m shares.
  ClusterState cluster;
  cluster.UpsertNode(MakeSharedNode("ts", 2, model::GpuSharing::kTimeslice));
  ASSERT_TRUE(
      cluster.Allocate(OneWorker("ts", {0}, 9), MakeShareJob(400).requirements).has_value());
  ASSERT_TRUE(
      cluster.Allocate(OneWorker("ts", {1}, 8), MakeShareJob(700).requirements).has_value());
  internal::WorkloadMix mix;
  mix.shapes = {{0, 300, 0, {}, 1.0}};
  internal::PlanOptions fgd = Scored(model::Scoring::kFragmentation);
  fgd.mix = &mix;
  // A 200m job: on GPU 0 (600m free) it leaves 400m (usable); on GPU 1 (300m) it leaves 100m,
  // a fragment. Binpack takes the fullest GPU (1); FGD keeps it usable.
  model::JobSpec job = MakeShareJob(200);
  EXPECT_THAT(TryPlace(cluster, JobId(1), job)->workers[0].gpus, ElementsAre(1));
  EXPECT_THAT(TryPlace(cluster, JobId(1), job, fgd)->workers[0].gpus, ElementsAre(0));
}

TEST(Scoring, FgdCountsGpusTheFreeCpuCannotFeed) {
  // The mix: 1-GPU jobs of 2 and of 10 cores, equally popular: 6 cores per GPU. "lean" has 8
  // GPUs and 32 cores (4 per GPU), "rich" 4 GPUs and 64 cores. Either keeps hosting both shapes
  // after one more 2-core job (F does not grow), but the CPU of "lean" feeds only 5.3 of its 8
  // GPUs at the workload's ratio: its stranded amount, 2,667 milli-GPUs, falls to 2,000 if the
  // 2-core job takes a GPU there. FGD sends the CPU-light job to "lean" (the fullest node, the
  // tie-break of equal growth, would be "rich") and the CPU-heavy one to "rich".
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("lean", 8, "H100", 32'000, 512 * kGi));
  cluster.UpsertNode(MakeNode("rich", 4, "H100", 64'000, 512 * kGi));
  internal::WorkloadMix mix;
  mix.shapes = {{1, 0, 2'000, {}, 0.5}, {1, 0, 10'000, {}, 0.5}};
  internal::PlanOptions fgd = Scored(model::Scoring::kFragmentation);
  fgd.mix = &mix;
  model::JobSpec light = MakeJob(1);
  light.requirements.per_worker = {2'000, 0, 1};
  model::JobSpec heavy = MakeJob(1);
  heavy.requirements.per_worker = {10'000, 0, 1};
  EXPECT_EQ(TryPlace(cluster, JobId(1), light, fgd)->workers[0].node, NodeId("lean"));
  EXPECT_EQ(TryPlace(cluster, JobId(2), heavy, fgd)->workers[0].node, NodeId("rich"));

  // The scoring value of a node state: F (here 0: both shapes fit) plus the stranded amount,
  // while the measure F itself leaves CPU out until a shape no longer fits.
  FragmentationCache cache;
  const std::int64_t idle = FragmentationCache::GpuCode(cache.ModelId("h100"), false, 1000);
  const std::vector<std::int64_t> lean = {32'000, idle, idle, idle, idle, idle, idle, idle, idle};
  EXPECT_DOUBLE_EQ(cache.Get(lean, mix), 0.0);
  EXPECT_NEAR(cache.ScoringValue(lean, mix), 8000.0 - 32'000.0 / 6.0, 1e-9);
  const std::vector<std::int64_t> rich = {64'000, idle, idle, idle, idle};
  EXPECT_DOUBLE_EQ(cache.ScoringValue(rich, mix), 0.0);
}

TEST(Preferences, PreferredLabelWinsWhenFeasibleAndNeverBlocks) {
  ClusterState cluster;
  model::Node small = MakeNode("small", 2);
  small.labels = {{"zone", "x"}};
  model::Node big = MakeNode("big", 8);
  big.labels = {{"zone", "y"}, {"disk", "nvme"}};
  cluster.UpsertNode(small);
  cluster.UpsertNode(big);

  model::JobSpec job = MakeJob(1);
  job.preferences.node_labels = {{"zone", "y", 10}};
  for (model::Scoring scoring :
       {model::Scoring::kBinpack, model::Scoring::kSpread, model::Scoring::kFragmentation}) {
    EXPECT_EQ(TryPlace(cluster, JobId(1), job, Scored(scoring))->workers[0].node, NodeId("big"));
  }
  // Weights add up: zone=x (5) loses to zone=y + disk=nvme (3 + 3).
  job.preferences.node_labels = {{"zone", "x", 5}, {"zone", "y", 3}, {"disk", "nvme", 3}};
  EXPECT_EQ(TryPlace(cluster, JobId(1), job)->workers[0].node, NodeId("big"));
  // A preference nobody matches changes nothing (binpack: small).
  job.preferences.node_labels = {{"zone", "z", 10}};
  EXPECT_EQ(TryPlace(cluster, JobId(1), job)->workers[0].node, NodeId("small"));

  // RunCycle honours preferences too; once "big" is full the job still runs on "small".
  job.preferences.node_labels = {{"zone", "y", 10}};
  model::JobSpec eight = MakeJob(8);
  CycleResult result = RunCycle(cluster, {Pending(1, eight, 10), Pending(2, job)});
  ASSERT_EQ(result.placements.size(), 2u);
  EXPECT_EQ(result.placements[1].workers[0].node, NodeId("small"));
}

TEST(Preferences, ApplyToGangsAndShares) {
  ClusterState cluster;
  model::Node a = MakeNode("a", 2);
  model::Node b = MakeNode("b", 8);
  b.labels = {{"fast", "yes"}};
  cluster.UpsertNode(a);
  cluster.UpsertNode(b);
  model::JobSpec gang = MakeJob(1, 4);
  gang.preferences.node_labels = {{"fast", "yes", 1}};
  EXPECT_THAT(NodesOf(*TryPlace(cluster, JobId(1), gang)), ElementsAre("b"));
  gang.workers = 10;  // more than b holds: fills b, then a
  EXPECT_THAT(NodesOf(*TryPlace(cluster, JobId(1), gang)), ElementsAre("a", "b"));

  ClusterState shared;
  shared.UpsertNode(MakeSharedNode("s1", 1, model::GpuSharing::kTimeslice));
  model::Node s2 = MakeSharedNode("s2", 1, model::GpuSharing::kTimeslice);
  s2.labels = {{"fast", "yes"}};
  shared.UpsertNode(s2);
  model::JobSpec share = MakeShareJob(100);
  share.preferences.node_labels = {{"fast", "yes", 1}};
  EXPECT_EQ(TryPlace(shared, JobId(1), share)->workers[0].node, NodeId("s2"));
}

TEST(Excluded, PositionsAreNeverUsed) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("a", 2));
  cluster.UpsertNode(MakeNode("b", 4));
  cluster.UpsertNode(MakeSharedNode("c", 2, model::GpuSharing::kTimeslice));
  RunCycle(cluster, {Pending(1, MakeJob(100))});  // index for the 1-GPU filter
  std::vector<char> excluded = {1, 0, 0};
  for (model::Scoring scoring :
       {model::Scoring::kBinpack, model::Scoring::kSpread, model::Scoring::kFragmentation}) {
    internal::PlanOptions options = Scored(scoring);
    options.excluded = &excluded;
    // "c"'s idle timeslice GPUs may be given whole: 6 workers fit on "b" and "c", not 7.
    auto placement = TryPlace(cluster, JobId(1), MakeJob(1, 6), options);
    ASSERT_TRUE(placement);
    EXPECT_THAT(NodesOf(*placement), UnorderedElementsAre("b", "c"));
    EXPECT_FALSE(TryPlace(cluster, JobId(1), MakeJob(1, 7), options));
  }
  internal::PlanOptions options;
  options.excluded = &excluded;
  model::JobSpec labelled = MakeJob(1);
  labelled.preferences.node_labels = {{"any", "x", 1}};
  EXPECT_EQ(TryPlace(cluster, JobId(1), labelled, options)->workers[0].node, NodeId("c"));
  excluded = {0, 0, 1};
  EXPECT_FALSE(TryPlace(cluster, JobId(1), MakeShareJob(100), options));
  excluded = {0, 1};  // positions past the end are usable
  EXPECT_EQ(TryPlace(cluster, JobId(1), MakeShareJob(100), options)->workers[0].node, NodeId("c"));
  model::JobSpec rack = MakeJob(1, 2);
  rack.requirements.topology_level = "rack";
  ClusterState racks;
  model::Node r1 = MakeNode("r1", 2);
  r1.labels = {{"rack", "1"}};
  model::Node r2 = MakeNode("r2", 4);
  r2.labels = {{"rack", "2"}};
  racks.UpsertNode(r1);
  racks.UpsertNode(r2);
  excluded = {1, 0};
  EXPECT_EQ(TryPlace(racks, JobId(1), rack, options)->workers[0].node, NodeId("r2"));
}

TEST(PlanAndCommit, CommitMarksThePlanUsedAndReportsCandidatesAndScore) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("a", 8));
  cluster.UpsertNode(MakeNode("b", 4));
  cluster.UpsertNode(MakeSharedNode("c", 1, model::GpuSharing::kTimeslice));
  internal::ClusterImpl& impl = internal::ClusterStateAccess::Get(cluster);
  model::JobSpec job = MakeJob(2, 3);
  internal::StaticFilter filter = internal::StaticFilter::From(job.requirements);

  auto scanned = internal::Plan(impl, filter, nullptr, job);
  ASSERT_TRUE(scanned);
  EXPECT_EQ(scanned->candidates, 2);  // a and b are feasible
  // b takes 2 workers (4 of 4 GPUs used), a one (2 of 8): score (2 * 1.0 + 0.25) / 3.
  EXPECT_DOUBLE_EQ(scanned->score, (2 * 1.0 + 0.25) / 3);
  auto indexed = internal::Plan(impl, filter, &impl.GetOrBuildIndex(filter), job);
  ASSERT_TRUE(indexed);
  EXPECT_EQ(indexed->workers, scanned->workers);
  EXPECT_EQ(indexed->nodes, scanned->nodes);
  EXPECT_DOUBLE_EQ(indexed->score, scanned->score);
  internal::Commit(impl, *indexed, job);
  EXPECT_EQ(cluster.Free(NodeId("b"))->gpus, 0);
  EXPECT_EQ(cluster.Free(NodeId("a"))->gpus, 6);
  EXPECT_EQ(cluster.Free(NodeId("a"))->cpu_millis, 63'000);

  model::JobSpec share = MakeShareJob(250, 0, 2);
  internal::StaticFilter share_filter = internal::StaticFilter::From(share.requirements);
  auto gang = internal::Plan(impl, share_filter, nullptr, share);
  ASSERT_TRUE(gang);
  EXPECT_EQ(gang->candidates, 1);
  internal::Commit(impl, *gang, share);
  EXPECT_EQ(cluster.FreeByGpu(NodeId("c"))[0].share_millis, 500);
}

TEST(WorkloadMix, MixOfSpecsWeighsShapesByWorkers) {
  model::JobSpec one = MakeJob(1);
  model::JobSpec gang = MakeJob(1, 3);
  model::JobSpec share = MakeShareJob(250);
  internal::WorkloadMix mix = internal::MixOf({&one, &gang, &share});
  ASSERT_EQ(mix.shapes.size(), 2u);
  EXPECT_EQ(mix.shapes[0], (internal::Shape{1, 0, 1'000, {}, 0.8}));
  EXPECT_EQ(mix.shapes[1], (internal::Shape{0, 250, 1'000, {}, 0.2}));
}

}  // namespace
}  // namespace drover::sched
