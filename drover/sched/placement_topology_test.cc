// Topology: required (one domain of a node label, hard) and preferred (soft).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "drover/sched/cluster_state.h"
#include "drover/sched/engine.h"
#include "drover/sched/pending_reason.h"
#include "drover/sched/placement.h"
#include "drover/sched/sched_test_util.h"
#include "drover/sched/scheduler.h"

namespace drover::sched {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::MakeJob;
using testing::MakeNode;
using testing::MakeSharedNode;
using testing::MakeShareJob;
using ::testing::Pair;
using testing::Pending;

model::Node InRack(model::Node node, const std::string& rack) {
  node.labels["rack"] = rack;
  return node;
}

// r1: 2 nodes x 4 GPUs (8); r2: 3 x 4 (12); r3: 1 x 8 (8); "loose": 16 GPUs, no rack label.
ClusterState Racks() {
  ClusterState cluster;
  cluster.UpsertNode(InRack(MakeNode("r1-a", 4), "r1"));
  cluster.UpsertNode(InRack(MakeNode("r1-b", 4), "r1"));
  cluster.UpsertNode(InRack(MakeNode("r2-a", 4), "r2"));
  cluster.UpsertNode(InRack(MakeNode("r2-b", 4), "r2"));
  cluster.UpsertNode(InRack(MakeNode("r2-c", 4), "r2"));
  cluster.UpsertNode(InRack(MakeNode("r3-a", 8), "r3"));
  cluster.UpsertNode(MakeNode("loose", 16));
  return cluster;
}

// The rack of every worker's node.
std::set<std::string> RacksOf(const ClusterState& cluster, const Placement& placement) {
  std::set<std::string> racks;
  for (const WorkerAssignment& w : placement.workers) {
    for (const model::Node& node : cluster.nodes()) {
      if (node.name != w.node) continue;
      auto it = node.labels.find("rack");
      racks.insert(it == node.labels.end() ? std::string("-") : it->second);
    }
  }
  return racks;
}

model::JobSpec RackJob(int workers) {
  model::JobSpec job = MakeJob(1, workers);
  job.requirements.topology_level = "rack";
  return job;
}

TEST(TopologyRequired, PicksTheDomainWithTheLeastSpareCapacity) {
  ClusterState cluster = Racks();
  // 6 workers: r1 and r3 hold 8 (2 spare), r2 12 (6 spare); r1 wins the tie by name.
  CycleResult result = RunCycle(cluster, {Pending(1, RackJob(6))});
  ASSERT_EQ(result.placements.size(), 1u);
  EXPECT_THAT(RacksOf(cluster, result.placements[0]), ElementsAre("r1"));
  // 10 workers fit only in r2 (r1 has 2 left, r3 8).
  result = RunCycle(cluster, {Pending(2, RackJob(10))});
  ASSERT_EQ(result.placements.size(), 1u);
  EXPECT_THAT(RacksOf(cluster, result.placements[0]), ElementsAre("r2"));
  // 3 workers: r1 has 2 left, r2 2, r3 8: only r3 holds 3.
  result = RunCycle(cluster, {Pending(3, RackJob(3))});
  ASSERT_EQ(result.placements.size(), 1u);
  EXPECT_THAT(RacksOf(cluster, result.placements[0]), ElementsAre("r3"));
}

TEST(TopologyRequired, NeverSplitsAGangAndSaysWhy) {
  ClusterState cluster = Racks();
  // 13 workers: 44 GPUs are free, but no rack holds 13; the loose node has no rack label.
  CycleResult result = RunCycle(cluster, {Pending(1, RackJob(13))});
  EXPECT_THAT(result.placements, IsEmpty());
  ASSERT_EQ(result.pending.size(), 1u);
  const PendingReason& reason = result.pending[0].second;
  EXPECT_EQ(reason.code, PendingReason::Code::kInsufficientFree);
  EXPECT_EQ(reason.topology_level, "rack");
  EXPECT_EQ(reason.largest_domain, "r2");
  EXPECT_EQ(reason.largest_domain_workers, 12);
  EXPECT_EQ(reason.fitting_workers, 12);
  EXPECT_THAT(reason.excluded, ElementsAre(Pair("missing topology label rack", 1)));
  EXPECT_EQ(reason.Render(),
            "needs 13 workers of 1 GPU within one rack; the largest free rack-domain holds 12 "
            "(rack=r2); 1 node is excluded by missing topology label rack");
  EXPECT_EQ(cluster.Free(NodeId("loose"))->gpus, 16);
}

TEST(TopologyRequired, IndexedAndScanningPathsAgree) {
  ClusterState indexed = Racks();
  ClusterState scanned = Racks();
  model::JobSpec job = RackJob(5);
  CycleResult result = RunCycle(indexed, {Pending(1, job)});  // builds the filter's index
  ASSERT_EQ(result.placements.size(), 1u);
  auto tried = TryPlace(scanned, JobId(1), job);  // no index: scans
  ASSERT_TRUE(tried);
  EXPECT_EQ(*tried, result.placements[0]);
}

TEST(TopologyRequired, SameNodeGangNeedsALabelledNode) {
  ClusterState cluster = Racks();
  model::JobSpec job = RackJob(8);
  job.requirements.same_node = true;
  auto placement = TryPlace(cluster, JobId(1), job);
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->workers[0].node, NodeId("r3-a"));  // not the loose 16-GPU node
  job.workers = 9;
  EXPECT_FALSE(TryPlace(cluster, JobId(1), job));
}

TEST(TopologyRequired, AppliesToShares) {
  ClusterState cluster;
  cluster.UpsertNode(InRack(MakeSharedNode("a", 1, model::GpuSharing::kTimeslice), "r1"));
  cluster.UpsertNode(InRack(MakeSharedNode("b", 1, model::GpuSharing::kTimeslice), "r2"));
  cluster.UpsertNode(InRack(MakeSharedNode("c", 1, model::GpuSharing::kTimeslice), "r2"));
  model::JobSpec job = MakeShareJob(600, 0, 2);
  job.requirements.topology_level = "rack";
  auto placement = TryPlace(cluster, JobId(1), job);
  ASSERT_TRUE(placement);
  EXPECT_THAT(RacksOf(cluster, *placement), ElementsAre("r2"));
  job.workers = 3;
  EXPECT_FALSE(TryPlace(cluster, JobId(1), job));
  EXPECT_EQ(Explain(cluster, job).Render(),
            "needs 3 workers of a 600m share of a timeslice GPU within one rack; the largest "
            "free rack-domain holds 2 (rack=r2)");
}

TEST(TopologyPreferred, OneDomainWhenOneHasRoomElseAnywhere) {
  ClusterState cluster = Racks();
  model::JobSpec job = MakeJob(1, 6);
  job.preferences.topology_level = "rack";
  auto placement = TryPlace(cluster, JobId(1), job);
  ASSERT_TRUE(placement);
  EXPECT_THAT(RacksOf(cluster, *placement), ElementsAre("r1"));
  // 10 workers: within r2; without the preference binpack fills r1-a, r1-b, then r2-a.
  job.workers = 10;
  placement = TryPlace(cluster, JobId(1), job);
  ASSERT_TRUE(placement);
  EXPECT_THAT(RacksOf(cluster, *placement), ElementsAre("r2"));
  auto plain = TryPlace(cluster, JobId(1), MakeJob(1, 10));
  ASSERT_TRUE(plain);
  EXPECT_THAT(RacksOf(cluster, *plain), ElementsAre("r1", "r2"));
  // No rack holds 20: placed anyway, never pending because of a preference.
  job.workers = 20;
  placement = TryPlace(cluster, JobId(1), job);
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->workers.size(), 20u);
  EXPECT_GT(RacksOf(cluster, *placement).size(), 1u);
  // And the reason of a job that does not fit at all says nothing about racks.
  job.workers = 100;
  EXPECT_EQ(Explain(cluster, job).topology_level, "");
}

}  // namespace
}  // namespace drover::sched
