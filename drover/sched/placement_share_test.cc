// Fractional GPUs: time-sliced shares and MIG instances.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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
using testing::kGi;
using testing::MakeJob;
using testing::MakeMigJob;
using testing::MakeNode;
using testing::MakeSharedNode;
using testing::MakeShareJob;
using testing::OneWorker;
using ::testing::Pair;
using testing::Pending;

constexpr auto kTimeslice = model::GpuSharing::kTimeslice;
constexpr auto kMig = model::GpuSharing::kMig;

// (node, GPU index) of every worker of every placement, in order.
std::vector<std::pair<std::string, int>> Where(const CycleResult& result) {
  std::vector<std::pair<std::string, int>> out;
  for (const Placement& p : result.placements) {
    for (const WorkerAssignment& w : p.workers) {
      EXPECT_EQ(w.gpus.size(), 1u);
      out.emplace_back(w.node.value(), w.gpus.empty() ? -1 : w.gpus[0]);
    }
  }
  return out;
}

GpuFree FreeOf(const ClusterState& cluster, const std::string& node, int index) {
  for (const GpuFree& free : cluster.FreeByGpu(NodeId(node))) {
    if (free.index == index) return free;
  }
  ADD_FAILURE() << "no GPU " << index << " on " << node;
  return {};
}

TEST(Share, FitsOnlyOnTimesliceGpusAndFillsTheFullestGpuFirst) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("exclusive", 8));
  cluster.UpsertNode(MakeSharedNode("shared", 2, kTimeslice));
  model::JobSpec share = MakeShareJob(300);
  CycleResult result = RunCycle(
      cluster, {Pending(1, share), Pending(2, share), Pending(3, share), Pending(4, share)});
  EXPECT_THAT(result.pending, IsEmpty());
  // 300m + 300m + 300m fill GPU 0 to 900m; the fourth no longer fits there.
  EXPECT_THAT(Where(result), ElementsAre(Pair("shared", 0), Pair("shared", 0), Pair("shared", 0),
                                         Pair("shared", 1)));
  EXPECT_EQ(FreeOf(cluster, "shared", 0).share_millis, 100);
  EXPECT_EQ(FreeOf(cluster, "shared", 1).share_millis, 700);
  EXPECT_EQ(cluster.Free(NodeId("exclusive"))->gpus, 8);  // whole GPUs stay whole
  EXPECT_EQ(cluster.Free(NodeId("shared"))->gpus, 0);     // shared GPUs never count as free
  EXPECT_EQ(cluster.Free(NodeId("shared"))->cpu_millis, 64'000 - 4'000);

  // A 100m share goes to the fullest GPU that still fits (GPU 0), a 200m one to GPU 1.
  model::JobSpec small = MakeShareJob(100);
  model::JobSpec medium = MakeShareJob(200);
  result = RunCycle(cluster, {Pending(5, small), Pending(6, medium)});
  EXPECT_THAT(Where(result), ElementsAre(Pair("shared", 0), Pair("shared", 1)));
  EXPECT_EQ(FreeOf(cluster, "shared", 0).share_millis, 0);
}

TEST(Share, GpuMemoryIsSetAsideOnTheSharedGpu) {
  ClusterState cluster;
  cluster.UpsertNode(MakeSharedNode("shared", 2, kTimeslice));  // 80Gi per GPU
  model::JobSpec job = MakeShareJob(100, 30 * kGi);
  CycleResult result = RunCycle(cluster, {Pending(1, job), Pending(2, job), Pending(3, job),
                                          Pending(4, job), Pending(5, job)});
  // Two 30Gi shares per 80Gi GPU, although 800m of shares are left on each.
  EXPECT_THAT(Where(result), ElementsAre(Pair("shared", 0), Pair("shared", 0), Pair("shared", 1),
                                         Pair("shared", 1)));
  ASSERT_EQ(result.pending.size(), 1u);
  EXPECT_EQ(FreeOf(cluster, "shared", 0).share_memory_bytes, 20 * kGi);
  EXPECT_EQ(result.pending[0].second.Render(),
            "needs a 100m share of a timeslice GPU with 30Gi of its memory; the largest free "
            "share is 800m of a GPU on shared with 20Gi of its memory free");
}

TEST(Share, WholeGpuRequestsTakeOnlyIdleTimesliceGpus) {
  ClusterState cluster;
  cluster.UpsertNode(MakeSharedNode("shared", 2, kTimeslice));
  ASSERT_TRUE(
      cluster.Allocate(OneWorker("shared", {0}, 1), MakeShareJob(250).requirements).has_value());
  // GPU 0 serves a share: only GPU 1 may be given whole.
  auto whole = TryPlace(cluster, JobId(2), MakeJob(1));
  ASSERT_TRUE(whole);
  EXPECT_THAT(whole->workers[0].gpus, ElementsAre(1));
  ASSERT_TRUE(cluster.Allocate(*whole, MakeJob(1).requirements).has_value());
  EXPECT_TRUE(cluster.FreeByGpu(NodeId("shared"))[1].share_millis == 0);
  // A GPU given whole serves no share; GPU 0 still has 750m.
  auto share = TryPlace(cluster, JobId(3), MakeShareJob(500));
  ASSERT_TRUE(share);
  EXPECT_THAT(share->workers[0].gpus, ElementsAre(0));
  EXPECT_FALSE(TryPlace(cluster, JobId(4), MakeJob(1)));
  // Released, GPU 1 is idle again and may be shared or given whole.
  cluster.Release(*whole, MakeJob(1).requirements);
  EXPECT_EQ(cluster.FreeByGpu(NodeId("shared"))[1].share_millis, 1000);
  EXPECT_TRUE(cluster.FreeByGpu(NodeId("shared"))[1].whole);
}

TEST(Share, WholeGpuRequestsNeverUseMigGpus) {
  ClusterState cluster;
  cluster.UpsertNode(MakeSharedNode("mig", 1, kMig, {{"3g.40gb", 2}}));
  EXPECT_FALSE(TryPlace(cluster, JobId(1), MakeJob(1)));
  PendingReason reason = Explain(cluster, MakeJob(1));
  EXPECT_EQ(reason.code, PendingReason::Code::kUnschedulable);
  EXPECT_EQ(reason.Render(),
            "needs 1 GPU on one node; no node can ever satisfy it: 1 node is excluded by GPU "
            "sharing: too few GPUs that may be given whole");
}

TEST(Share, OnANodeWithoutTheModeIsPendingAndTheReasonSaysSo) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("node-a", 8));
  cluster.UpsertNode(MakeNode("node-b", 8));
  cluster.UpsertNode(MakeSharedNode("mig", 1, kMig, {{"3g.40gb", 2}}));
  CycleResult result =
      RunCycle(cluster, {Pending(1, MakeShareJob(250)), Pending(2, MakeMigJob("1g.10gb"))});
  EXPECT_THAT(result.placements, IsEmpty());
  ASSERT_EQ(result.pending.size(), 2u);
  const PendingReason& share = result.pending[0].second;
  EXPECT_EQ(share.code, PendingReason::Code::kUnschedulable);
  EXPECT_THAT(share.excluded, ElementsAre(Pair("GPU sharing: no timeslice GPU", 3)));
  EXPECT_EQ(share.Render(),
            "needs a 250m share of a timeslice GPU; no node can ever satisfy it: 3 nodes are "
            "excluded by GPU sharing: no timeslice GPU");
  EXPECT_EQ(result.pending[1].second.Render(),
            "needs a MIG 1g.10gb instance; no node can ever satisfy it: 3 nodes are excluded by "
            "GPU sharing: no MIG 1g.10gb instance");
}

TEST(Share, ModelFilterAppliesToSharedGpus) {
  ClusterState cluster;
  cluster.UpsertNode(MakeSharedNode("a100", 1, kTimeslice, {}, "A100"));
  cluster.UpsertNode(MakeSharedNode("h100", 1, kTimeslice, {}, "H100"));
  model::JobSpec job = MakeShareJob(500);
  job.requirements.gpu_models = {"h100"};
  auto placement = TryPlace(cluster, JobId(1), job);
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->workers[0].node, NodeId("h100"));
  job.requirements.gpu_models = {"L4"};
  EXPECT_EQ(Explain(cluster, job).Render(),
            "needs a 500m share of a timeslice GPU of model L4; no node can ever satisfy it: 2 "
            "nodes are excluded by GPU model");
}

TEST(Share, EveryWorkerOfAGangGetsOneGpu) {
  ClusterState cluster;
  cluster.UpsertNode(MakeSharedNode("a", 2, kTimeslice));
  cluster.UpsertNode(MakeSharedNode("b", 2, kTimeslice));
  model::JobSpec gang = MakeShareJob(600, 0, 3);
  CycleResult result = RunCycle(cluster, {Pending(1, gang)});
  ASSERT_EQ(result.placements.size(), 1u);
  EXPECT_THAT(Where(result), ElementsAre(Pair("a", 0), Pair("a", 1), Pair("b", 0)));
  for (int rank = 0; rank < 3; ++rank) EXPECT_EQ(result.placements[0].workers[rank].rank, rank);

  // Same node: a's leftovers (400m on each GPU) are the fullest GPUs that still fit.
  model::JobSpec same = MakeShareJob(400, 0, 2, /*same_node=*/true);
  result = RunCycle(cluster, {Pending(2, same)});
  EXPECT_THAT(Where(result), ElementsAre(Pair("a", 0), Pair("a", 1)));
  // 4 x 400m on one node: b holds 1 on GPU 0 (400m left) and 2 on GPU 1, 3 in all.
  model::JobSpec four = MakeShareJob(400, 0, 4, /*same_node=*/true);
  result = RunCycle(cluster, {Pending(3, four)});
  EXPECT_THAT(result.placements, IsEmpty());
  ASSERT_EQ(result.pending.size(), 1u);
  EXPECT_EQ(result.pending[0].second.fitting_workers, 3);
}

TEST(Share, SpreadPicksTheEmptiestGpu) {
  ClusterState cluster;
  cluster.UpsertNode(MakeSharedNode("a", 2, kTimeslice));
  model::JobSpec job = MakeShareJob(300);
  ASSERT_TRUE(cluster.Allocate(OneWorker("a", {0}, 9), job.requirements).has_value());
  internal::PlanOptions spread;
  spread.scoring = model::Scoring::kSpread;
  EXPECT_THAT(TryPlace(cluster, JobId(1), job, spread)->workers[0].gpus, ElementsAre(1));
  EXPECT_THAT(TryPlace(cluster, JobId(1), job)->workers[0].gpus, ElementsAre(0));
}

TEST(Mig, CountsInstancesPerProfile) {
  ClusterState cluster;
  cluster.UpsertNode(MakeSharedNode("mig", 1, kMig, {{"1g.18gb", 3}, {"3g.71gb", 1}}));
  model::JobSpec small = MakeMigJob("1G.18GB");  // profiles compare case-insensitively
  model::JobSpec large = MakeMigJob("3g.71gb");
  CycleResult result = RunCycle(cluster, {Pending(1, small), Pending(2, small), Pending(3, large),
                                          Pending(4, small), Pending(5, small), Pending(6, large)});
  std::vector<JobId> placed;
  for (const Placement& p : result.placements) placed.push_back(p.job);
  EXPECT_THAT(placed, ElementsAre(JobId(1), JobId(2), JobId(3), JobId(4)));
  ASSERT_EQ(result.pending.size(), 2u);
  EXPECT_EQ(result.pending[0].second.Render(),
            "needs a MIG 1G.18GB instance; no eligible GPU has a free 1G.18GB instance");
  const GpuFree free = FreeOf(cluster, "mig", 0);
  EXPECT_THAT(free.mig, ElementsAre(model::MigSlots{"1g.18gb", 0}, model::MigSlots{"3g.71gb", 0}));

  Placement first = result.placements[0];
  cluster.Release(first, small.requirements);
  EXPECT_THAT(FreeOf(cluster, "mig", 0).mig,
              ElementsAre(model::MigSlots{"1g.18gb", 1}, model::MigSlots{"3g.71gb", 0}));
}

TEST(Mig, FillsTheGpuWithTheFewestFreeInstancesFirst) {
  ClusterState cluster;
  cluster.UpsertNode(MakeSharedNode("mig", 2, kMig, {{"1g.10gb", 7}}));
  model::JobSpec job = MakeMigJob("1g.10gb");
  ASSERT_TRUE(cluster.Allocate(OneWorker("mig", {1}, 9), job.requirements).has_value());
  EXPECT_THAT(TryPlace(cluster, JobId(1), job)->workers[0].gpus, ElementsAre(1));
}

TEST(ShareAllocate, ValidatesModeAndRoomAndChangesNothingOnFailure) {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("excl", 2));
  cluster.UpsertNode(MakeSharedNode("ts", 2, kTimeslice));
  cluster.UpsertNode(MakeSharedNode("mig", 1, kMig, {{"1g.10gb", 2}}));
  const model::Requirements share = MakeShareJob(600, 50 * kGi).requirements;
  const model::Requirements mig = MakeMigJob("1g.10gb").requirements;
  ASSERT_TRUE(cluster.Allocate(OneWorker("ts", {0}), share).has_value());
  ASSERT_TRUE(cluster.Allocate(OneWorker("mig", {0}), mig).has_value());

  struct Case {
    Placement placement;
    model::Requirements requirements;
  };
  const Placement two_on_ts1{JobId(2),
                             {WorkerAssignment{0, NodeId("ts"), {1}},
                              WorkerAssignment{1, NodeId("ts"), {1}}}};  // 1200m on GPU 1
  const Placement two_mig{JobId(3),
                          {WorkerAssignment{0, NodeId("mig"), {0}},
                           WorkerAssignment{1, NodeId("mig"), {0}}}};  // 1 instance left
  std::vector<Case> bad = {
      {OneWorker("excl", {0}), share},                  // exclusive GPU, share request
      {OneWorker("ts", {0}), share},                    // 400m left on GPU 0
      {OneWorker("ts", {0, 1}), share},                 // a share worker lists one GPU
      {OneWorker("ts", {}), share},                     // ... not none
      {two_on_ts1, share},                              // two workers' shares together do not fit
      {OneWorker("ts", {0}), testing::Req({0, 0, 1})},  // whole GPU on a GPU serving shares
      {OneWorker("mig", {0}), share},                   // MIG GPU, timeslice request
      {two_mig, mig},                                   // instances
      {OneWorker("mig", {0}), MakeMigJob("3g.40gb").requirements},  // profile not offered
      {OneWorker("ts", {7}), share},                                // no such GPU
  };
  for (const Case& c : bad) {
    Status status = cluster.Allocate(c.placement, c.requirements);
    ASSERT_FALSE(status.has_value());
    EXPECT_EQ(status.error().code, ErrorCode::kFailedPrecondition) << status.error().message;
  }
  EXPECT_EQ(FreeOf(cluster, "ts", 0).share_millis, 400);
  EXPECT_EQ(FreeOf(cluster, "ts", 0).share_memory_bytes, 30 * kGi);
  EXPECT_EQ(FreeOf(cluster, "ts", 1).share_millis, 1000);
  EXPECT_THAT(FreeOf(cluster, "mig", 0).mig, ElementsAre(model::MigSlots{"1g.10gb", 1}));
  EXPECT_EQ(cluster.Free(NodeId("excl"))->gpus, 2);
  EXPECT_EQ(cluster.Free(NodeId("ts"))->cpu_millis, 63'000);

  cluster.Release(OneWorker("ts", {0}), share);
  cluster.Release(OneWorker("ts", {0}), share);  // not allocated any more: ignored
  EXPECT_EQ(FreeOf(cluster, "ts", 0).share_millis, 1000);
  EXPECT_EQ(FreeOf(cluster, "ts", 0).share_memory_bytes, 80 * kGi);
  EXPECT_EQ(cluster.Free(NodeId("ts"))->cpu_millis, 64'000);
}

TEST(ShareAllocate, AFullShareTakesTheWholeTimesliceGpu) {
  ClusterState cluster;
  cluster.UpsertNode(MakeSharedNode("ts", 1, kTimeslice));
  model::JobSpec full = MakeShareJob(1000);
  ASSERT_TRUE(TryPlace(cluster, JobId(1), full));
  CycleResult result = RunCycle(cluster, {Pending(1, full), Pending(2, MakeShareJob(1))});
  EXPECT_EQ(result.placements.size(), 1u);
  EXPECT_EQ(result.pending[0].second.Render(),
            "needs a 1m share of a timeslice GPU; no eligible timeslice GPU has a free share");
}

TEST(ShareExplain, GpuFreeButCpuShort) {
  ClusterState cluster;
  cluster.UpsertNode(MakeSharedNode("ts", 1, kTimeslice, {}, "H100", 2'000));
  model::JobSpec job = MakeShareJob(500);
  job.requirements.per_worker.cpu_millis = 1'500;
  ASSERT_TRUE(cluster.Allocate(OneWorker("ts", {0}, 9), job.requirements).has_value());
  EXPECT_EQ(Explain(cluster, job).Render(),
            "needs a 500m share of a timeslice GPU; the largest free share is 500m of a GPU on ts, "
            "which has only 500m CPU and 508Gi memory free (needs 1500m CPU and 4Gi memory)");
}

TEST(ShareUpsert, ModeChangeKeepsAllocationsUntilReleased) {
  ClusterState cluster;
  cluster.UpsertNode(MakeSharedNode("n", 1, kTimeslice));
  model::JobSpec job = MakeShareJob(500);
  const Placement used = OneWorker("n", {0}, 9);
  ASSERT_TRUE(cluster.Allocate(used, job.requirements).has_value());
  cluster.UpsertNode(MakeNode("n", 1));  // now exclusive, but a share is still on GPU 0
  EXPECT_EQ(cluster.Free(NodeId("n"))->gpus, 0);
  EXPECT_FALSE(TryPlace(cluster, JobId(1), MakeJob(1)));
  cluster.Release(used, job.requirements);
  EXPECT_EQ(cluster.Free(NodeId("n"))->gpus, 1);
  EXPECT_TRUE(TryPlace(cluster, JobId(1), MakeJob(1)));
}

}  // namespace
}  // namespace drover::sched
