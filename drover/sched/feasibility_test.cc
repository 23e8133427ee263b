#include "drover/sched/feasibility.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drover/sched/sched_test_util.h"

namespace drover::sched {
namespace {

using ::testing::HasSubstr;
using testing::kGi;
using testing::MakeCpuJob;
using testing::MakeJob;
using testing::MakeNode;
using ::testing::Optional;

QueueTree IdleQueues(const model::Policy& policy = {}) {
  Result<QueueTree> tree = QueueTree::Create(policy);
  EXPECT_TRUE(tree.has_value()) << tree.error().ToString();
  return tree.has_value() ? std::move(*tree) : QueueTree();
}

// Two nodes of 8 H100 each, 64 CPU and 512Gi memory.
ClusterState TwoNodes() {
  ClusterState cluster;
  cluster.UpsertNode(MakeNode("a", 8));
  cluster.UpsertNode(MakeNode("b", 8));
  return cluster;
}

TEST(Feasibility, AcceptsWhatSomeIdleNodeHolds) {
  const ClusterState cluster = TwoNodes();
  EXPECT_EQ(FindInfeasibility(MakeJob(8), cluster, IdleQueues(), true), std::nullopt);
  EXPECT_EQ(FindInfeasibility(MakeJob(8, 2), cluster, IdleQueues(), true), std::nullopt);
}

TEST(Feasibility, RefusesMoreGpusPerWorkerThanAnyNodeHas) {
  EXPECT_THAT(
      FindInfeasibility(MakeJob(16), TwoNodes(), IdleQueues(), true),
      Optional(HasSubstr("no current node can ever hold it: needs 16 GPUs on one node; "
                         "no node can ever satisfy it: 2 nodes are excluded by GPU count")));
}

TEST(Feasibility, RefusesMoreMemoryThanAnyNodeHas) {
  model::JobSpec spec = MakeCpuJob(1000, 8LL * 1024 * 1024 * kGi);  // 8Pi
  EXPECT_THAT(FindInfeasibility(spec, TwoNodes(), IdleQueues(), true),
              Optional(HasSubstr("2 nodes are excluded by memory capacity")));
}

TEST(Feasibility, RefusesAGangLargerThanTheWholeIdleCluster) {
  model::JobSpec spec = MakeCpuJob(1000, kGi, 2147483647);
  EXPECT_THAT(FindInfeasibility(spec, TwoNodes(), IdleQueues(), true),
              Optional(HasSubstr("only 128 of 2147483647 workers fit in the free capacity of 2 "
                                 "eligible nodes, even with every node idle")));
  // An elastic gang is judged at its smallest start.
  spec.min_workers = 100;
  EXPECT_EQ(FindInfeasibility(spec, TwoNodes(), IdleQueues(), true), std::nullopt);
}

TEST(Feasibility, JudgesNoNodeBeforeAnyIsRegistered) {
  EXPECT_EQ(FindInfeasibility(MakeJob(16), ClusterState(), IdleQueues(), true), std::nullopt);
}

TEST(Feasibility, LeavesAnExternalExecutorsJobsToItsEngine) {
  EXPECT_EQ(FindInfeasibility(MakeJob(16), TwoNodes(), IdleQueues(), false), std::nullopt);
}

TEST(Feasibility, RefusesWhatItsQueueCanNeverAdmit) {
  model::QueueConfig small;
  small.name = "small";
  small.nominal = {{"gpu", 4000}};
  small.borrowing_limit = {{"gpu", 0}};
  model::Policy policy;
  policy.queues = {small};
  model::JobSpec spec = MakeJob(8);
  spec.queue = "small";
  EXPECT_THAT(FindInfeasibility(spec, TwoNodes(), IdleQueues(policy), true),
              Optional(HasSubstr("no queue limit can ever admit it: queue small is using 0 of its "
                                 "4 GPUs; it may not borrow; this job needs 8 GPUs")));
  spec.requirements.per_worker.gpus = 4;
  EXPECT_EQ(FindInfeasibility(spec, TwoNodes(), IdleQueues(policy), true), std::nullopt);
}

}  // namespace
}  // namespace drover::sched
