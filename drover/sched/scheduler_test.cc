#include "drover/sched/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drover/sched/cluster_state.h"
#include "drover/sched/engine.h"
#include "drover/sched/pending_reason.h"
#include "drover/sched/sched_test_util.h"

namespace drover::sched {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::kGi;
using testing::MakeCpuJob;
using testing::MakeJob;
using testing::MakeNode;
using ::testing::Pair;
using testing::Pending;

std::vector<JobId> PlacedJobs(const CycleResult& result) {
  std::vector<JobId> out;
  for (const Placement& p : result.placements) out.push_back(p.job);
  return out;
}

// Occupies `gpus` GPUs (the lowest indices) on `node`, with no CPU or memory.
void Occupy(ClusterState& cluster, const std::string& node, std::vector<int> gpus) {
  Placement p{JobId(999), {WorkerAssignment{0, NodeId(node), std::move(gpus)}}};
  ASSERT_TRUE(cluster.Allocate(p, model::Requirements{}).has_value());
}

TEST(Order, PriorityThenSubmitTimeThenId) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 2));
  model::JobSpec job = MakeJob(1);
  CycleResult result = RunCycle(cluster, {Pending(1, job, 0, 10), Pending(2, job, 100, 50),
                                          Pending(3, job, 0, 5), Pending(4, job, 0, 5)});
  EXPECT_THAT(PlacedJobs(result), ElementsAre(JobId(2), JobId(3)));
  ASSERT_EQ(result.pending.size(), 2u);
  EXPECT_EQ(result.pending[0].first, JobId(4));
  EXPECT_EQ(result.pending[1].first, JobId(1));
}

TEST(Order, LargeJobThatDoesNotFitDoesNotBlockSmallerOnes) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 4));
  model::JobSpec big = MakeJob(8);
  model::JobSpec small = MakeJob(1);
  CycleResult result = RunCycle(cluster, {Pending(1, big, 100), Pending(2, small)});
  EXPECT_THAT(PlacedJobs(result), ElementsAre(JobId(2)));
  ASSERT_EQ(result.pending.size(), 1u);
  EXPECT_EQ(result.pending[0].first, JobId(1));
}

TEST(BestFit, PicksNodeWithFewestFreeGpusAfterPlacement) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 8));
  cluster.UpsertNode(MakeNode("node-b", 8));
  cluster.UpsertNode(MakeNode("node-c", 8));
  Occupy(cluster, "node-b", {0, 1, 2, 3, 4, 5});  // 2 free
  Occupy(cluster, "node-c", {0, 1, 2, 3});        // 4 free
  model::JobSpec one = MakeJob(1);
  model::JobSpec three = MakeJob(3);
  CycleResult result = RunCycle(cluster, {Pending(1, one), Pending(2, three)});
  ASSERT_EQ(result.placements.size(), 2u);
  EXPECT_EQ(result.placements[0].workers[0].node, NodeId("node-b"));
  EXPECT_THAT(result.placements[0].workers[0].gpus, ElementsAre(6));
  EXPECT_EQ(result.placements[1].workers[0].node, NodeId("node-c"));
  EXPECT_THAT(result.placements[1].workers[0].gpus, ElementsAre(4, 5, 6));
}

TEST(BestFit, TiesBrokenByFreeCpuThenMemoryThenName) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 4, "H100", 64'000, 512 * kGi));
  cluster.UpsertNode(MakeNode("node-b", 4, "H100", 32'000, 512 * kGi));
  cluster.UpsertNode(MakeNode("node-c", 4, "H100", 32'000, 256 * kGi));
  cluster.UpsertNode(MakeNode("node-d", 4, "H100", 32'000, 256 * kGi));
  model::JobSpec job = MakeJob(1);
  auto placement = TryPlace(cluster, JobId(1), job);
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->workers[0].node, NodeId("node-c"));
}

TEST(BestFit, SkipsNodesWithTooLittleCpuOrMemory) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 1, "H100", 500, 512 * kGi));  // too little CPU
  cluster.UpsertNode(MakeNode("node-b", 1, "H100", 8'000, 1 * kGi));  // too little memory
  cluster.UpsertNode(MakeNode("node-c", 8, "H100", 8'000, 64 * kGi));
  model::JobSpec job = MakeJob(1);
  CycleResult result = RunCycle(cluster, {Pending(1, job)});
  ASSERT_EQ(result.placements.size(), 1u);
  EXPECT_EQ(result.placements[0].workers[0].node, NodeId("node-c"));
}

TEST(BestFit, CpuOnlyJobsPreferNodesWithoutGpus) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("gpu-node", 8, "H100", 4'000, 16 * kGi));
  cluster.UpsertNode(MakeNode("cpu-node", 0, "", 64'000, 512 * kGi));
  model::JobSpec job = MakeCpuJob(2'000, 4 * kGi);
  CycleResult result = RunCycle(cluster, {Pending(1, job), Pending(2, job)});
  ASSERT_EQ(result.placements.size(), 2u);
  EXPECT_EQ(result.placements[0].workers[0].node, NodeId("cpu-node"));
  EXPECT_EQ(result.placements[1].workers[0].node, NodeId("cpu-node"));
  EXPECT_THAT(result.placements[0].workers[0].gpus, IsEmpty());
}

TEST(BestFit, CpuOnlyJobsUseGpuNodesWhenCpuNodesAreFull) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("gpu-node", 8, "H100", 4'000, 16 * kGi));
  cluster.UpsertNode(MakeNode("cpu-node", 0, "", 2'000, 512 * kGi));
  model::JobSpec job = MakeCpuJob(2'000, 4 * kGi);
  CycleResult result = RunCycle(cluster, {Pending(1, job), Pending(2, job)});
  ASSERT_EQ(result.placements.size(), 2u);
  EXPECT_EQ(result.placements[0].workers[0].node, NodeId("cpu-node"));
  EXPECT_EQ(result.placements[1].workers[0].node, NodeId("gpu-node"));
}

TEST(GpuFilter, MatchesModelCaseInsensitivelyAndAnyOfList) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("a100-node", 1, "A100"));
  cluster.UpsertNode(MakeNode("h100-node", 8, "H100"));
  model::JobSpec job = MakeJob(1);
  job.requirements.gpu_models = {"a100"};
  auto placement = TryPlace(cluster, JobId(1), job);
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->workers[0].node, NodeId("a100-node"));

  job.requirements.gpu_models = {"b200", "h100"};
  placement = TryPlace(cluster, JobId(1), job);
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->workers[0].node, NodeId("h100-node"));

  job.requirements.gpu_models = {"B200"};
  EXPECT_FALSE(TryPlace(cluster, JobId(1), job));
}

TEST(GpuFilter, RequiresGpuMemoryOnEveryAssignedGpu) {
  ClusterState cluster;
  model::Node mixed = MakeNode("mixed", 4, "H100", 64'000, 512 * kGi, 40 * kGi);
  mixed.gpus[1].memory_bytes = 80 * kGi;
  mixed.gpus[3].memory_bytes = 80 * kGi;
  cluster.UpsertNode(mixed);
  model::JobSpec job = MakeJob(2);
  job.requirements.gpu_memory_bytes = 80 * kGi;
  CycleResult result = RunCycle(cluster, {Pending(1, job), Pending(2, job)});
  ASSERT_EQ(result.placements.size(), 1u);
  EXPECT_THAT(result.placements[0].workers[0].gpus, ElementsAre(1, 3));
  ASSERT_EQ(result.pending.size(), 1u);
}

TEST(GpuFilter, MixedModelNodeGivesOnlyMatchingGpus) {
  ClusterState cluster;
  model::Node mixed = MakeNode("mixed", 4, "A100");
  mixed.gpus[2].model = "H100";
  cluster.UpsertNode(mixed);
  model::JobSpec job = MakeJob(1);
  job.requirements.gpu_models = {"H100"};
  CycleResult result = RunCycle(cluster, {Pending(1, job), Pending(2, job)});
  ASSERT_EQ(result.placements.size(), 1u);
  EXPECT_THAT(result.placements[0].workers[0].gpus, ElementsAre(2));
}

TEST(Selector, RequiresEveryLabelExactly) {
  ClusterState cluster;
  model::Node a = MakeNode("node-a", 1);
  a.labels = {{"pool", "a"}, {"zone", "z1"}};
  model::Node b = MakeNode("node-b", 8);
  b.labels = {{"pool", "b"}, {"zone", "z1"}};
  cluster.UpsertNode(a);
  cluster.UpsertNode(b);
  model::JobSpec job = MakeJob(1);
  job.requirements.node_selector = {{"pool", "b"}, {"zone", "z1"}};
  auto placement = TryPlace(cluster, JobId(1), job);
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->workers[0].node, NodeId("node-b"));
  job.requirements.node_selector = {{"pool", "b"}, {"zone", "z2"}};
  EXPECT_FALSE(TryPlace(cluster, JobId(1), job));
}

model::Node TaintedNode(const std::string& name, model::TaintEffect effect) {
  model::Node node = MakeNode(name, 1);
  node.taints = {model::Taint{"gpu", "reserved", effect}};
  return node;
}

TEST(Taint, NoScheduleAndNoExecuteExcludeUntoleratedJobs) {
  for (auto effect : {model::TaintEffect::kNoSchedule, model::TaintEffect::kNoExecute}) {
    ClusterState cluster;
    cluster.UpsertNode(TaintedNode("node-a", effect));
    EXPECT_FALSE(TryPlace(cluster, JobId(1), MakeJob(1)));
  }
}

TEST(Taint, PreferNoScheduleDoesNotExclude) {
  ClusterState cluster;
  cluster.UpsertNode(TaintedNode("node-a", model::TaintEffect::kPreferNoSchedule));
  EXPECT_TRUE(TryPlace(cluster, JobId(1), MakeJob(1)));
}

TEST(Taint, TolerationsMatchByKeyValueOperatorAndEffect) {
  ClusterState cluster;
  cluster.UpsertNode(TaintedNode("node-a", model::TaintEffect::kNoSchedule));
  using Op = model::Toleration::Operator;
  struct Case {
    model::Toleration toleration;
    bool tolerated;
  };
  std::vector<Case> cases = {
      {{"gpu", Op::kEqual, "reserved", std::nullopt}, true},
      {{"gpu", Op::kEqual, "other", std::nullopt}, false},
      {{"gpu", Op::kExists, "", std::nullopt}, true},
      {{"", Op::kExists, "", std::nullopt}, true},
      {{"other", Op::kExists, "", std::nullopt}, false},
      {{"gpu", Op::kEqual, "reserved", model::TaintEffect::kNoSchedule}, true},
      {{"gpu", Op::kEqual, "reserved", model::TaintEffect::kNoExecute}, false},
      {{"gpu", Op::kExists, "", model::TaintEffect::kPreferNoSchedule}, false},
  };
  for (const Case& c : cases) {
    model::JobSpec job = MakeJob(1);
    job.requirements.tolerations = {c.toleration};
    EXPECT_EQ(TryPlace(cluster, JobId(1), job).has_value(), c.tolerated)
        << "key=" << c.toleration.key << " value=" << c.toleration.value;
  }
}

TEST(Taint, EveryBlockingTaintNeedsItsOwnToleration) {
  ClusterState cluster;
  model::Node node = MakeNode("node-a", 1);
  node.taints = {{"a", "1", model::TaintEffect::kNoSchedule},
                 {"b", "2", model::TaintEffect::kNoExecute}};
  cluster.UpsertNode(node);
  model::JobSpec job = MakeJob(1);
  job.requirements.tolerations = {{"a", model::Toleration::Operator::kEqual, "1", std::nullopt}};
  EXPECT_FALSE(TryPlace(cluster, JobId(1), job));
  job.requirements.tolerations.push_back(
      {"b", model::Toleration::Operator::kExists, "", std::nullopt});
  EXPECT_TRUE(TryPlace(cluster, JobId(1), job));
}

TEST(Gang, SameNodePutsEveryWorkerOnOneNodeWithDisjointGpus) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 4));
  cluster.UpsertNode(MakeNode("node-b", 8));
  model::JobSpec job = MakeJob(2, 3, /*same_node=*/true);
  CycleResult result = RunCycle(cluster, {Pending(1, job)});
  ASSERT_EQ(result.placements.size(), 1u);
  const Placement& p = result.placements[0];
  ASSERT_EQ(p.workers.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(p.workers[i].rank, i);
    EXPECT_EQ(p.workers[i].node, NodeId("node-b"));
  }
  EXPECT_THAT(p.workers[0].gpus, ElementsAre(0, 1));
  EXPECT_THAT(p.workers[1].gpus, ElementsAre(2, 3));
  EXPECT_THAT(p.workers[2].gpus, ElementsAre(4, 5));
  EXPECT_EQ(cluster.Free(NodeId("node-b"))->gpus, 2);
  EXPECT_EQ(cluster.Free(NodeId("node-b"))->cpu_millis, 64'000 - 3'000);
}

TEST(Gang, SpreadsOverNodesFillingTheBestFitFirst) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 8));
  cluster.UpsertNode(MakeNode("node-b", 2));
  cluster.UpsertNode(MakeNode("node-c", 3));
  model::JobSpec job = MakeJob(1, 4);
  CycleResult result = RunCycle(cluster, {Pending(1, job)});
  ASSERT_EQ(result.placements.size(), 1u);
  const Placement& p = result.placements[0];
  ASSERT_EQ(p.workers.size(), 4u);
  EXPECT_EQ(p.workers[0].node, NodeId("node-b"));
  EXPECT_THAT(p.workers[0].gpus, ElementsAre(0));
  EXPECT_EQ(p.workers[1].node, NodeId("node-b"));
  EXPECT_THAT(p.workers[1].gpus, ElementsAre(1));
  EXPECT_EQ(p.workers[2].node, NodeId("node-c"));
  EXPECT_EQ(p.workers[3].node, NodeId("node-c"));
  EXPECT_THAT(p.workers[3].gpus, ElementsAre(1));
}

TEST(Gang, PlacesAllWorkersOrNone) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 2));
  cluster.UpsertNode(MakeNode("node-b", 2));
  model::JobSpec job = MakeJob(1, 5);
  CycleResult result = RunCycle(cluster, {Pending(1, job)});
  EXPECT_THAT(result.placements, IsEmpty());
  ASSERT_EQ(result.pending.size(), 1u);
  EXPECT_EQ(cluster.Free(NodeId("node-a"))->gpus, 2);
  EXPECT_EQ(cluster.Free(NodeId("node-b"))->gpus, 2);
  EXPECT_EQ(cluster.Free(NodeId("node-a"))->cpu_millis, 64'000);

  model::JobSpec same = MakeJob(1, 3, /*same_node=*/true);
  result = RunCycle(cluster, {Pending(2, same)});
  EXPECT_THAT(result.placements, IsEmpty());
  EXPECT_EQ(cluster.Free(NodeId("node-a"))->gpus, 2);
}

// TryPlace (Plan) places the gang as specified; starting with fewer workers, down to
// min_workers, is the engine's choice (Engine.GangStartsSmallerDownToMinWorkers).
TEST(Gang, TryPlaceAsksForTheWholeGang) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 2));
  model::JobSpec job = MakeJob(1, 4);
  job.min_workers = 2;
  EXPECT_FALSE(TryPlace(cluster, JobId(1), job));
}

TEST(Topology, FillsTheSmallestGroupThatHoldsTheWorker) {
  ClusterState cluster;
  model::Node node = MakeNode("node-a", 8);
  for (int i = 0; i < 8; ++i) node.gpus[i].topology_group = i < 4 ? "nvl0" : "nvl1";
  cluster.UpsertNode(node);
  Occupy(cluster, "node-a", {4, 5});  // nvl1 has 2 free (6, 7), nvl0 has 4 free
  EXPECT_THAT(TryPlace(cluster, JobId(1), MakeJob(2))->workers[0].gpus, ElementsAre(6, 7));
  EXPECT_THAT(TryPlace(cluster, JobId(1), MakeJob(1))->workers[0].gpus, ElementsAre(6));
  EXPECT_THAT(TryPlace(cluster, JobId(1), MakeJob(3))->workers[0].gpus, ElementsAre(0, 1, 2));
  // No group holds 5: the lowest free indices.
  EXPECT_THAT(TryPlace(cluster, JobId(1), MakeJob(5))->workers[0].gpus, ElementsAre(0, 1, 2, 3, 6));
}

TEST(TryPlace, DoesNotChangeTheClusterAndMatchesRunCycle) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 8));
  cluster.UpsertNode(MakeNode("node-b", 4));
  model::JobSpec job = MakeJob(2, 3);
  auto tried = TryPlace(cluster, JobId(7), job);
  ASSERT_TRUE(tried);
  EXPECT_EQ(cluster.Free(NodeId("node-b"))->gpus, 4);
  CycleResult result = RunCycle(cluster, {Pending(7, job)});
  ASSERT_EQ(result.placements.size(), 1u);
  EXPECT_EQ(result.placements[0], *tried);
}

TEST(Explain, NoNodes) {
  ClusterState cluster;
  PendingReason reason = Explain(cluster, MakeJob(1));
  EXPECT_EQ(reason.code, PendingReason::Code::kNoNodes);
  EXPECT_EQ(reason.Render(), "no nodes are registered");
}

TEST(Explain, LargestFreeBlockAndTaintExclusions) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 8));
  cluster.UpsertNode(MakeNode("node-b", 8));
  for (std::string name : {"node-c", "node-d", "node-e"}) {
    model::Node node = MakeNode(name, 8);
    node.taints = {{"gpu", "reserved", model::TaintEffect::kNoSchedule}};
    cluster.UpsertNode(node);
  }
  Occupy(cluster, "node-a", {0, 1, 2, 3, 4, 5, 6, 7});
  Occupy(cluster, "node-b", {0, 1, 2, 3, 4, 5});
  model::JobSpec job = MakeJob(4);
  job.requirements.gpu_models = {"H100"};
  PendingReason reason = Explain(cluster, job);
  EXPECT_EQ(reason.code, PendingReason::Code::kInsufficientFree);
  EXPECT_EQ(reason.eligible_nodes, 2);
  EXPECT_EQ(reason.largest_free_gpus, 2);
  EXPECT_EQ(reason.free_gpus, 2);  // tainted nodes' free GPUs are not the job's to use
  EXPECT_EQ(reason.largest_free_node, NodeId("node-b"));
  EXPECT_THAT(reason.excluded, ElementsAre(Pair("taint gpu=reserved:NoSchedule", 3)));
  EXPECT_EQ(reason.Render(),
            "needs 4 GPUs of model H100 on one node; the largest free block is 2 GPUs on node-b; "
            "3 nodes are excluded by taint gpu=reserved:NoSchedule");
}

TEST(Explain, UnschedulableListsEveryCauseLargestFirst) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("a100-1", 8, "A100"));
  cluster.UpsertNode(MakeNode("a100-2", 8, "A100"));
  cluster.UpsertNode(MakeNode("small", 2, "H100"));
  model::Node labelled = MakeNode("other-pool", 8, "H100");
  labelled.labels = {{"pool", "b"}};
  cluster.UpsertNode(labelled);
  model::JobSpec job = MakeJob(4);
  job.requirements.gpu_models = {"H100", "H200"};
  job.requirements.gpu_memory_bytes = 80 * kGi;
  job.requirements.node_selector = {{"pool", "a"}};
  cluster.UpsertNode([] {
    model::Node n = MakeNode("pool-a", 8, "H100", 64'000, 512 * kGi, 40 * kGi);
    n.labels = {{"pool", "a"}};
    return n;
  }());
  PendingReason reason = Explain(cluster, job);
  EXPECT_EQ(reason.code, PendingReason::Code::kUnschedulable);
  EXPECT_EQ(reason.eligible_nodes, 0);
  EXPECT_THAT(reason.excluded, ElementsAre(Pair("node selector pool=a", 4), Pair("GPU memory", 1)));
  EXPECT_EQ(reason.Render(),
            "needs 4 GPUs of model H100 or H200 with at least 80Gi memory on one node; no node can "
            "ever satisfy it: 4 nodes are excluded by node selector pool=a, 1 node by GPU memory");
}

TEST(Explain, CapacityExclusionsAndGangWording) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 8, "H100"));
  cluster.UpsertNode(MakeNode("node-b", 0, ""));
  model::JobSpec job = MakeJob(3, 2, /*same_node=*/true);
  Occupy(cluster, "node-a", {0, 1, 2});
  PendingReason reason = Explain(cluster, job);
  EXPECT_EQ(reason.code, PendingReason::Code::kInsufficientFree);
  EXPECT_EQ(reason.fitting_workers, 1);
  EXPECT_EQ(reason.Render(),
            "needs 2 workers of 3 GPUs on one node; the largest free block is 5 GPUs on node-a; "
            "1 node is excluded by GPU count");
}

TEST(Explain, CpuOnlySpreadGang) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 0, "", 8'000, 64 * kGi));
  cluster.UpsertNode(MakeNode("node-b", 0, "", 2'000, 64 * kGi));
  model::JobSpec job = MakeCpuJob(4'000, 16 * kGi, 3);
  PendingReason reason = Explain(cluster, job);
  EXPECT_EQ(reason.Render(),
            "needs 3 workers of 4 CPU and 16Gi memory; only 2 of 3 workers fit in the free "
            "capacity of 1 eligible node; 1 node is excluded by CPU capacity");
}

TEST(Explain, CpuOnlySingleWorker) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 0, "", 8'000, 64 * kGi));
  cluster.UpsertNode(MakeNode("node-b", 0, "", 8'000, 64 * kGi));
  Placement used{JobId(5), {WorkerAssignment{0, NodeId("node-a"), {}}}};
  ASSERT_TRUE(cluster.Allocate(used, testing::Req({7'500, 1 * kGi, 0})).has_value());
  ASSERT_TRUE(cluster
                  .Allocate(Placement{JobId(6), {WorkerAssignment{0, NodeId("node-b"), {}}}},
                            testing::Req({6'000, 1 * kGi, 0}))
                  .has_value());
  PendingReason reason = Explain(cluster, MakeCpuJob(4'000, 16 * kGi));
  EXPECT_EQ(reason.Render(),
            "needs 1 worker of 4 CPU and 16Gi memory; the most free on one eligible node is 2 CPU "
            "and 63Gi memory on node-b");
}

TEST(Explain, FreeMemoryReadsInHumanUnits) {
  // /proc/meminfo's MemTotal of a real machine: 24684084 KiB, which no larger unit divides.
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 0, "", 8'000, 24'684'084LL * 1024));
  Placement used{JobId(5), {WorkerAssignment{0, NodeId("node-a"), {}}}};
  ASSERT_TRUE(cluster.Allocate(used, testing::Req({6'000, 1 * kGi, 0})).has_value());
  EXPECT_EQ(Explain(cluster, MakeCpuJob(4'000, 1 * kGi)).Render(),
            "needs 1 worker of 4 CPU and 1Gi memory; the most free on one eligible node is 2 CPU "
            "and 22.5Gi memory on node-a");
}

// Seed 000's third case: 4 GPUs free in the cluster, 2 per node, for a job asking 4 on one node.
TEST(Explain, SumsTheFreeGpusOfEveryNodeThatCouldHoldAWorker) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 8));
  cluster.UpsertNode(MakeNode("node-b", 8));
  Occupy(cluster, "node-a", {0, 1, 2, 3, 4, 5});
  Occupy(cluster, "node-b", {0, 1, 2, 3, 4, 5});
  PendingReason reason = Explain(cluster, MakeJob(4));
  EXPECT_EQ(reason.free_gpus, 4);
  EXPECT_EQ(reason.largest_free_gpus, 2);
  EXPECT_EQ(reason.fitting_workers, 0);
}

TEST(Explain, TooSmallNodesStillNameTheLargestFreeBlock) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 4, "H100"));
  cluster.UpsertNode(MakeNode("node-b", 2, "H100"));
  PendingReason reason = Explain(cluster, MakeJob(8));
  EXPECT_EQ(reason.code, PendingReason::Code::kUnschedulable);
  EXPECT_EQ(reason.eligible_nodes, 0);
  EXPECT_EQ(reason.largest_free_gpus, 4);
  EXPECT_EQ(reason.Render(),
            "needs 8 GPUs on one node; no node can ever satisfy it: 2 nodes are excluded by GPU "
            "count; the largest free block is 4 GPUs on node-a");
}

TEST(Explain, GpusFreeButCpuShort) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 8, "H100", 2'000, 512 * kGi));
  model::JobSpec job = MakeJob(2);
  job.requirements.per_worker.cpu_millis = 16'000;
  EXPECT_EQ(Explain(cluster, job).Render(),
            "needs 2 GPUs on one node; no node can ever satisfy it: 1 node is excluded by CPU "
            "capacity; the largest free block is 8 GPUs on node-a, which has only 2 CPU and "
            "512Gi memory free (needs 16 CPU and 4Gi memory)");
  Placement used{JobId(5), {WorkerAssignment{0, NodeId("node-a"), {}}}};
  job.requirements.per_worker.cpu_millis = 1'500;
  ASSERT_TRUE(cluster.Allocate(used, testing::Req({1'000, 0, 0})).has_value());
  EXPECT_EQ(Explain(cluster, job).Render(),
            "needs 2 GPUs on one node; the largest free block is 8 GPUs on node-a, which has only "
            "1 CPU and 512Gi memory free (needs 1500m CPU and 4Gi memory)");
}

TEST(RunCycle, PendingJobsCarryTheirReason) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 1));
  model::JobSpec job = MakeJob(1);
  CycleResult result = RunCycle(cluster, {Pending(1, job), Pending(2, job), Pending(3, job)});
  ASSERT_EQ(result.pending.size(), 2u);
  EXPECT_EQ(result.pending[0].second.Render(),
            "needs 1 GPU on one node; no eligible node has a free GPU");
  EXPECT_EQ(result.pending[0].second, result.pending[1].second);
}

}  // namespace
}  // namespace drover::sched
