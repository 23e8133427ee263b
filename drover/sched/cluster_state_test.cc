#include "drover/sched/cluster_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drover/model/policy.h"
#include "drover/sched/engine.h"
#include "drover/sched/sched_test_util.h"

namespace drover::sched {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::kGi;
using testing::MakeJob;
using testing::MakeNode;
using testing::OneWorker;
using testing::Pending;

const model::Requirements kPerWorker = testing::Req({4'000, 16 * kGi, 2});

TEST(ClusterState, AllocateAndReleaseRoundTrip) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 4));
  Placement p = OneWorker("node-a", {1, 3});
  ASSERT_TRUE(cluster.Allocate(p, kPerWorker).has_value());
  EXPECT_EQ(*cluster.Free(NodeId("node-a")), (model::Resources{60'000, 496 * kGi, 2}));
  EXPECT_THAT(cluster.FreeGpus(NodeId("node-a")), ElementsAre(0, 2));
  cluster.Release(p, kPerWorker);
  EXPECT_EQ(*cluster.Free(NodeId("node-a")), (model::Resources{64'000, 512 * kGi, 4}));
  EXPECT_THAT(cluster.FreeGpus(NodeId("node-a")), ElementsAre(0, 1, 2, 3));
}

TEST(ClusterState, AllocateFailsWithoutChangingAnything) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 4, "H100", 8'000, 64 * kGi));
  cluster.UpsertNode(MakeNode("node-b", 4, "H100", 8'000, 64 * kGi));
  ASSERT_TRUE(
      cluster.Allocate(OneWorker("node-a", {0}), testing::Req({1'000, kGi, 1})).has_value());

  std::vector<Placement> bad = {
      OneWorker("node-a", {0, 1}),  // GPU 0 is used
      OneWorker("node-a", {7}),     // no such GPU
      OneWorker("node-x", {0}),     // unknown node
      Placement{
          JobId(2),  // GPU 1 twice
          {WorkerAssignment{0, NodeId("node-b"), {1}}, WorkerAssignment{1, NodeId("node-b"), {1}}}},
      Placement{
          JobId(3),  // CPU: 2 x 4 CPU on an 8 CPU node holding 1 already
          {WorkerAssignment{0, NodeId("node-b"), {2}}, WorkerAssignment{1, NodeId("node-a"), {2}},
           WorkerAssignment{2, NodeId("node-a"), {3}}}},
  };
  for (const Placement& p : bad) {
    Status status = cluster.Allocate(p, testing::Req({4'000, kGi, 1}));
    ASSERT_FALSE(status.has_value());
    EXPECT_EQ(status.error().code, ErrorCode::kFailedPrecondition) << status.error().message;
  }
  EXPECT_EQ(*cluster.Free(NodeId("node-a")), (model::Resources{7'000, 63 * kGi, 3}));
  EXPECT_EQ(*cluster.Free(NodeId("node-b")), (model::Resources{8'000, 64 * kGi, 4}));
}

TEST(ClusterState, UpsertKeepsAllocations) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 4));
  ASSERT_TRUE(cluster.Allocate(OneWorker("node-a", {2, 3}), kPerWorker).has_value());
  cluster.UpsertNode(MakeNode("node-a", 2, "H100", 128'000));  // GPUs 2 and 3 disappear
  EXPECT_EQ(*cluster.Free(NodeId("node-a")), (model::Resources{124'000, 496 * kGi, 2}));
  cluster.UpsertNode(MakeNode("node-a", 4));  // and come back, still allocated
  EXPECT_THAT(cluster.FreeGpus(NodeId("node-a")), ElementsAre(0, 1));
  cluster.Release(OneWorker("node-a", {2, 3}), kPerWorker);
  EXPECT_THAT(cluster.FreeGpus(NodeId("node-a")), ElementsAre(0, 1, 2, 3));
}

TEST(ClusterState, UpsertAndRemoveKeepIndexesCurrent) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 8));
  cluster.UpsertNode(MakeNode("node-b", 8));
  model::JobSpec job = MakeJob(1);
  job.requirements.node_selector = {{"pool", "a"}};
  // Builds the index for this filter: nothing matches yet.
  EXPECT_EQ(RunCycle(cluster, {Pending(1, job)}).placements.size(), 0u);
  model::Node labelled = MakeNode("node-b", 8);
  labelled.labels = {{"pool", "a"}};
  cluster.UpsertNode(labelled);
  CycleResult result = RunCycle(cluster, {Pending(2, job)});
  ASSERT_EQ(result.placements.size(), 1u);
  EXPECT_EQ(result.placements[0].workers[0].node, NodeId("node-b"));
  cluster.UpsertNode(MakeNode("node-b", 8));  // label removed
  EXPECT_EQ(RunCycle(cluster, {Pending(3, job)}).placements.size(), 0u);

  model::Node c = MakeNode("node-c", 2);
  c.labels = {{"pool", "a"}};
  cluster.UpsertNode(c);
  cluster.RemoveNode(NodeId("node-a"));
  result = RunCycle(cluster, {Pending(4, job)});
  ASSERT_EQ(result.placements.size(), 1u);
  EXPECT_EQ(result.placements[0].workers[0].node, NodeId("node-c"));
  EXPECT_EQ(cluster.nodes().size(), 2u);
  EXPECT_FALSE(cluster.Free(NodeId("node-a")));
}

TEST(ClusterState, ReleaseIgnoresUnknownNodesAndFreeGpus) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 2));
  cluster.Release(OneWorker("node-x", {0}), kPerWorker);
  cluster.Release(OneWorker("node-a", {0}), kPerWorker);
  EXPECT_EQ(*cluster.Free(NodeId("node-a")), (model::Resources{64'000, 512 * kGi, 2}));
}

// A worker's position hint saves the name lookup only while the node at that position has the
// worker's name: after a removal renumbers the nodes, or with a hint out of range, the node is
// found by name, and a release frees the named node, not the one at the hinted position.
TEST(ClusterState, AStalePositionHintFallsBackToTheName) {
  ClusterState cluster;
  for (const char* name : {"node-a", "node-b", "node-c"}) cluster.UpsertNode(MakeNode(name, 4));
  Placement on_c = OneWorker("node-c", {0, 1});
  on_c.workers[0].position_hint = 2;  // node-c's position now
  ASSERT_TRUE(cluster.Allocate(on_c, kPerWorker).has_value());
  cluster.RemoveNode(NodeId("node-a"));  // node-c moves to position 1; position 2 is gone
  Placement on_b = OneWorker("node-b", {0});
  on_b.workers[0].position_hint = 1;  // wrong: node-c's position now
  ASSERT_TRUE(cluster.Allocate(on_b, kPerWorker).has_value());
  EXPECT_THAT(cluster.FreeGpus(NodeId("node-b")), ElementsAre(1, 2, 3));
  EXPECT_THAT(cluster.FreeGpus(NodeId("node-c")), ElementsAre(2, 3));
  cluster.Release(on_c, kPerWorker);  // hint 2: out of range
  EXPECT_THAT(cluster.FreeGpus(NodeId("node-c")), ElementsAre(0, 1, 2, 3));
  cluster.Release(on_b, kPerWorker);  // hint 1: node-c's position, not node-b's
  EXPECT_THAT(cluster.FreeGpus(NodeId("node-b")), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(cluster.FreeGpus(NodeId("node-c")), ElementsAre(0, 1, 2, 3));
}

TEST(ClusterState, MoveKeepsState) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 2));
  ASSERT_TRUE(cluster.Allocate(OneWorker("node-a", {0}), testing::Req({0, 0, 1})).has_value());
  ClusterState moved = std::move(cluster);
  EXPECT_THAT(moved.FreeGpus(NodeId("node-a")), ElementsAre(1));
}

// Index keys order equal capacities by the nodes' name ranks: a node that joins or leaves after
// an index was built shifts the ranks, and ties must still go to the first name.
TEST(ClusterState, TiesGoByNameAfterNodesJoinAndLeave) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-m", 4));
  const model::JobSpec job = MakeJob(1);                      // 1 GPU, 1 CPU, 4 GiB
  CycleResult result = RunCycle(cluster, {Pending(1, job)});  // builds the index
  ASSERT_EQ(result.placements.size(), 1u);
  EXPECT_EQ(result.placements[0].workers[0].node, NodeId("node-m"));

  // node-c joins with what node-m has left (3 GPUs, 63 CPU, 508 GiB) and sorts before it.
  cluster.UpsertNode(MakeNode("node-c", 3, "H100", 63'000, 508 * kGi));
  result = RunCycle(cluster, {Pending(2, job)});
  ASSERT_EQ(result.placements.size(), 1u);
  EXPECT_EQ(result.placements[0].workers[0].node, NodeId("node-c"));

  // node-a joins with what node-c has left, before both.
  cluster.UpsertNode(MakeNode("node-a", 2, "H100", 62'000, 504 * kGi));
  result = RunCycle(cluster, {Pending(3, job)});
  ASSERT_EQ(result.placements.size(), 1u);
  EXPECT_EQ(result.placements[0].workers[0].node, NodeId("node-a"));

  // node-c leaves and node-b joins with what node-a has left: a tie of node-a and node-b.
  cluster.RemoveNode(NodeId("node-c"));
  cluster.UpsertNode(MakeNode("node-b", 1, "H100", 61'000, 500 * kGi));
  result = RunCycle(cluster, {Pending(4, job)});
  ASSERT_EQ(result.placements.size(), 1u);
  EXPECT_EQ(result.placements[0].workers[0].node, NodeId("node-a"));
  result = RunCycle(cluster, {Pending(5, job)});
  ASSERT_EQ(result.placements.size(), 1u);
  EXPECT_EQ(result.placements[0].workers[0].node, NodeId("node-b"));
}

TEST(ClusterState, CloneIsIndependent) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 4));
  cluster.UpsertNode(testing::MakeSharedNode("node-b", 1, model::GpuSharing::kTimeslice));
  ASSERT_TRUE(cluster.Allocate(OneWorker("node-a", {0}), kPerWorker).has_value());
  const model::Requirements share = testing::MakeShareJob(300).requirements;
  ASSERT_TRUE(cluster.Allocate(OneWorker("node-b", {0}), share).has_value());
  model::JobSpec job = MakeJob(1);
  RunCycle(cluster, {Pending(1, job)});  // builds an index; GPU 1 of node-a is used

  ClusterState copy = cluster.Clone();
  EXPECT_EQ(copy.nodes(), cluster.nodes());
  EXPECT_EQ(copy.Free(NodeId("node-a")), cluster.Free(NodeId("node-a")));
  EXPECT_EQ(copy.FreeByGpu(NodeId("node-b")), cluster.FreeByGpu(NodeId("node-b")));
  // Simulated releases and placements on the copy leave the original alone, and back.
  copy.Release(OneWorker("node-a", {0}), kPerWorker);
  copy.Release(OneWorker("node-b", {0}), share);
  EXPECT_THAT(copy.FreeGpus(NodeId("node-a")), ElementsAre(0, 2, 3));
  EXPECT_THAT(cluster.FreeGpus(NodeId("node-a")), ElementsAre(2, 3));
  EXPECT_EQ(copy.FreeByGpu(NodeId("node-b"))[0].share_millis, 1000);
  EXPECT_EQ(cluster.FreeByGpu(NodeId("node-b"))[0].share_millis, 700);
  // The copy builds its own index; its best fit is node-b's idle timeslice GPU.
  CycleResult result = RunCycle(copy, {Pending(2, job)});
  ASSERT_EQ(result.placements.size(), 1u);
  EXPECT_EQ(result.placements[0].workers[0].node, NodeId("node-b"));
  EXPECT_THAT(result.placements[0].workers[0].gpus, ElementsAre(0));
  EXPECT_THAT(cluster.FreeGpus(NodeId("node-a")), ElementsAre(2, 3));
  result = RunCycle(cluster, {Pending(3, MakeJob(2))});
  ASSERT_EQ(result.placements.size(), 1u);
  EXPECT_THAT(cluster.FreeGpus(NodeId("node-a")), IsEmpty());
  EXPECT_THAT(copy.FreeGpus(NodeId("node-a")), ElementsAre(0, 2, 3));
  cluster.RemoveNode(NodeId("node-b"));
  EXPECT_TRUE(copy.Free(NodeId("node-b")));
}

TEST(ClusterState, CapacityTotalsEveryGpuOfAnyMode) {
  ClusterState cluster;
  EXPECT_EQ(cluster.Capacity(), (model::ResourceAmounts{{"cpu", 0}, {"memory", 0}, {"gpu", 0}}));
  cluster.UpsertNode(MakeNode("a", 8, "H100", 64'000, 512 * kGi));
  cluster.UpsertNode(MakeNode("b", 2, "A100", 32'000, 256 * kGi));
  cluster.UpsertNode(testing::MakeSharedNode("c", 1, model::GpuSharing::kMig, {{"1g.10gb", 7}},
                                             "a100", 16'000, 64 * kGi));
  cluster.UpsertNode(MakeNode("cpu", 0, "", 8'000, 32 * kGi));
  ASSERT_TRUE(cluster.Allocate(OneWorker("a", {0, 1}), kPerWorker).has_value());  // total, not free
  EXPECT_EQ(cluster.Capacity(), (model::ResourceAmounts{{"cpu", 120'000},
                                                        {"memory", 864 * kGi},
                                                        {"gpu", 11'000},
                                                        {"gpu:a100", 3'000},
                                                        {"gpu:h100", 8'000}}));
}

}  // namespace
}  // namespace drover::sched
