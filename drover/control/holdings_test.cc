#include "drover/control/holdings.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "drover/sched/sched_test_util.h"

namespace drover::control {
namespace {

using model::Job;
using model::JobState;

// What the cluster has free and what the queue tree counts as used, for comparing before and
// after.
struct Snapshot {
  std::map<std::string, std::optional<model::Resources>> free;
  std::map<std::string, std::vector<sched::GpuFree>> free_by_gpu;
  std::map<std::string, model::ResourceAmounts> usage;
  std::map<std::string, std::int64_t> running_jobs;

  friend bool operator==(const Snapshot&, const Snapshot&) = default;
};

Snapshot Take(const Holdings& holdings) {
  Snapshot snapshot;
  for (const model::Node& node : holdings.cluster().nodes()) {
    snapshot.free[node.name.value()] = holdings.cluster().Free(node.name);
    snapshot.free_by_gpu[node.name.value()] = holdings.cluster().FreeByGpu(node.name);
  }
  for (const sched::QueueStatus& status : holdings.queues().Status()) {
    snapshot.usage[status.path] = status.usage;
    snapshot.running_jobs[status.path] = status.running_jobs;
  }
  return snapshot;
}

// Two 8-GPU nodes n1 and n2 and the queue "team" with 16 GPUs of quota.
class HoldingsTest : public ::testing::Test {
 protected:
  HoldingsTest() {
    for (const char* name : {"n1", "n2"}) {
      model::Node node = sched::testing::MakeNode(name, 8);
      nodes_[node.name] = node;
      holdings_.UpsertNode(node);
    }
    holdings_.SetQueues(Tree("team"), nodes_);
  }

  static sched::QueueTree Tree(const std::string& queue) {
    model::Policy policy;
    model::QueueConfig config;
    config.name = queue;
    config.nominal = {{"gpu", 16'000}};
    policy.queues.push_back(config);
    Result<sched::QueueTree> tree = sched::QueueTree::Create(policy);
    EXPECT_TRUE(tree.has_value());
    return std::move(*tree);
  }

  // A running job `id` in "team" whose workers hold `gpus_per_worker` GPUs each, worker i on
  // nodes[i], starting at GPU `first_gpu`.
  Job& Running(std::int64_t id, const std::vector<std::string>& nodes, int gpus_per_worker,
               int first_gpu = 0) {
    auto job = std::make_unique<Job>();
    job->id = JobId(id);
    job->state = JobState::kRunning;
    job->spec = sched::testing::MakeJob(gpus_per_worker, static_cast<int>(nodes.size()));
    job->spec.queue = "team";
    model::Attempt& attempt = job->attempts.emplace_back();
    attempt.number = 1;
    attempt.placed_at = 100 * id;
    for (std::size_t rank = 0; rank < nodes.size(); ++rank) {
      model::Worker& worker = attempt.workers.emplace_back();
      worker.rank = static_cast<int>(rank);
      worker.node = NodeId(nodes[rank]);
      worker.state = model::WorkerState::kRunning;
      for (int g = 0; g < gpus_per_worker; ++g) worker.gpus.push_back(first_gpu + g);
    }
    jobs_.push_back(std::move(job));
    return *jobs_.back();
  }

  void Hold(const Job& job) { holdings_.Hold(job, ChargeOf(job, holdings_.queues(), nodes_)); }

  // The invariant of holdings.h that can be read from outside: one running() entry per held
  // job, pointing at its spec, its current placement and its charge.
  void ExpectRunningMatchesHoldings() {
    std::vector<JobId> listed;
    for (const sched::RunningJob& entry : holdings_.running()) {
      listed.push_back(entry.job);
      ASSERT_TRUE(holdings_.Holds(entry.job));
      const Job* job = nullptr;
      for (const auto& candidate : jobs_) {
        if (candidate->id == entry.job) job = candidate.get();
      }
      ASSERT_NE(job, nullptr);
      EXPECT_EQ(entry.spec, &job->spec);
      ASSERT_NE(entry.placement, nullptr);
      EXPECT_EQ(entry.placement->job, entry.job);
      EXPECT_EQ(entry.charge, holdings_.ChargeOf(entry.job));
      EXPECT_EQ(entry.started_at, job->current_attempt()->placed_at);
      EXPECT_EQ(entry.last_checkpoint_at, job->current_attempt()->last_checkpoint_at);
    }
    std::sort(listed.begin(), listed.end());
    EXPECT_EQ(listed, holdings_.Held());
  }

  std::map<NodeId, model::Node> nodes_;
  std::vector<std::unique_ptr<Job>> jobs_;  // stable addresses, as in the controller's table
  Holdings holdings_;
};

TEST_F(HoldingsTest, HoldThenUnholdRestoresFreeCapacityAndQueueUsageExactly) {
  const Snapshot before = Take(holdings_);
  const Job& job = Running(1, {"n1", "n2"}, 4);
  Hold(job);
  EXPECT_TRUE(holdings_.IsAllocated(job.id));
  EXPECT_EQ(holdings_.cluster().FreeGpus(NodeId("n1")), (std::vector<int>{4, 5, 6, 7}));
  ASSERT_NE(holdings_.ChargeOf(job.id), nullptr);
  EXPECT_EQ(holdings_.ChargeOf(job.id)->amounts.at("gpu"), 8'000);
  EXPECT_NE(Take(holdings_), before);
  EXPECT_TRUE(holdings_.Unhold(job.id));
  EXPECT_EQ(Take(holdings_), before);
  EXPECT_FALSE(holdings_.Holds(job.id));
  EXPECT_TRUE(holdings_.running().empty());
  EXPECT_FALSE(holdings_.Unhold(job.id));  // twice changes nothing
  EXPECT_EQ(Take(holdings_), before);
}

TEST_F(HoldingsTest, RunningKeepsOneEntryPerHeldJobAndItsPointersAcrossRemovals) {
  const Job& a = Running(1, {"n1"}, 2, 0);
  const Job& b = Running(2, {"n1"}, 2, 2);
  Job& c = Running(3, {"n2"}, 2, 0);
  Hold(a);
  Hold(b);
  Hold(c);
  ExpectRunningMatchesHoldings();
  holdings_.Unhold(a.id);  // the last entry (c) takes a's place
  ExpectRunningMatchesHoldings();
  c.current_attempt()->last_checkpoint_at = 777;
  holdings_.Track(c.id);
  ExpectRunningMatchesHoldings();
  EXPECT_EQ(holdings_.running().size(), 2u);
}

TEST_F(HoldingsTest, AHoldingOnAnUnregisteredNodeIsAllocatedWhenTheNodeArrives) {
  const Snapshot before = Take(holdings_);
  const Job& job = Running(1, {"n3"}, 2);
  Hold(job);
  EXPECT_TRUE(holdings_.Holds(job.id));
  EXPECT_FALSE(holdings_.IsAllocated(job.id));
  model::Node n3 = sched::testing::MakeNode("n3", 4);
  nodes_[n3.name] = n3;
  holdings_.UpsertNode(n3);
  EXPECT_TRUE(holdings_.IsAllocated(job.id));
  EXPECT_EQ(holdings_.cluster().FreeGpus(NodeId("n3")), (std::vector<int>{2, 3}));
  holdings_.Unhold(job.id);
  EXPECT_EQ(holdings_.cluster().FreeGpus(NodeId("n3")), (std::vector<int>{0, 1, 2, 3}));
  Snapshot after = Take(holdings_);
  after.free.erase("n3");
  after.free_by_gpu.erase("n3");
  EXPECT_EQ(after, before);
}

TEST_F(HoldingsTest, AnUnallocatedHoldingGivesBackNothingOnUnhold) {
  // Job 1 holds n1's GPUs 0-3; job 2, restored onto the same GPUs, cannot be allocated.
  const Job& first = Running(1, {"n1"}, 4);
  const Job& clash = Running(2, {"n1"}, 4);
  Hold(first);
  const Snapshot held = Take(holdings_);
  Hold(clash);
  EXPECT_FALSE(holdings_.IsAllocated(clash.id));
  holdings_.Unhold(clash.id);
  Snapshot after = Take(holdings_);
  EXPECT_EQ(after.free, held.free);  // job 1's GPUs stay allocated
  EXPECT_EQ(after.free_by_gpu, held.free_by_gpu);
}

TEST_F(HoldingsTest, ALostNodeIsNotReleasedAgainWhenItComesBack) {
  const Job& job = Running(1, {"n1", "n2"}, 4);
  Hold(job);
  holdings_.RemoveNode(NodeId("n2"));
  // n2 comes back empty and a second job takes GPUs 0-3 there.
  holdings_.UpsertNode(nodes_.at(NodeId("n2")));
  const Job& other = Running(2, {"n2"}, 4);
  Hold(other);
  holdings_.Unhold(job.id);
  EXPECT_EQ(holdings_.cluster().FreeGpus(NodeId("n1")), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(holdings_.cluster().FreeGpus(NodeId("n2")), (std::vector<int>{4, 5, 6, 7}));
}

TEST_F(HoldingsTest, SetQueuesChargesEveryHoldingAgainOrNotAtAllWhenItsQueueIsGone) {
  const Job& job = Running(1, {"n1"}, 2);
  Hold(job);
  holdings_.SetQueues(Tree("team"), nodes_);
  ASSERT_NE(holdings_.ChargeOf(job.id), nullptr);
  std::int64_t used = 0;
  for (const sched::QueueStatus& status : holdings_.queues().Status()) {
    if (status.name == "team") used = status.usage.at("gpu");
  }
  EXPECT_EQ(used, 2'000);
  ExpectRunningMatchesHoldings();

  holdings_.SetQueues(Tree("other"), nodes_);
  EXPECT_EQ(holdings_.ChargeOf(job.id), nullptr);
  ExpectRunningMatchesHoldings();
  holdings_.Unhold(job.id);  // uncharged: nothing to remove from the tree
  for (const sched::QueueStatus& status : holdings_.queues().Status()) {
    for (const auto& [resource, amount] : status.usage) EXPECT_EQ(amount, 0) << resource;
  }
}

TEST_F(HoldingsTest, RunCycleHoldsWhatItPlaces) {
  const Snapshot before = Take(holdings_);
  JobTable jobs;
  Job added;
  added.id = JobId(1);
  added.state = JobState::kReady;
  added.spec = sched::testing::MakeJob(4);
  added.spec.queue = "team";
  added.attempts.emplace_back().number = 1;
  const Job& job = jobs.Add(std::move(added));
  sched::CycleInput input;
  input.now = 1;
  input.pending.push_back(sched::PendingJob{job.id, 0, 0, &job.spec, false});
  const sched::CycleOutput cycle = holdings_.RunCycle(model::Policy{}, input, std::nullopt, jobs);
  ASSERT_EQ(cycle.placed.size(), 1u);
  EXPECT_TRUE(holdings_.Holds(job.id));
  EXPECT_TRUE(holdings_.IsAllocated(job.id));
  ASSERT_EQ(holdings_.running().size(), 1u);
  EXPECT_EQ(*holdings_.running()[0].placement, cycle.placed[0].placement);
  // The cycle's charge moved into the holding: the queue's leaf, the owner, the job's amounts.
  const sched::Charge expected{*holdings_.queues().FindLeaf("team"), job.spec.owner,
                               job.spec.pipeline, sched::ChargeAmounts(job.spec, "")};
  EXPECT_EQ(*holdings_.ChargeOf(job.id), expected);
  holdings_.Unhold(job.id);
  EXPECT_EQ(Take(holdings_), before);
}

// Property: over random holds, tracks and unholds, running() matches the holdings, and once
// everything is given back the cluster and the tree are as they started.
TEST_F(HoldingsTest, AnySequenceOfHoldsAndUnholdsKeepsRunningConsistentAndRestoresCapacity) {
  const Snapshot before = Take(holdings_);
  // 16 one-worker jobs, each on its own GPU: any subset fits at once.
  std::vector<Job*> jobs;
  for (int i = 0; i < 16; ++i) jobs.push_back(&Running(i + 1, {i < 8 ? "n1" : "n2"}, 1, i % 8));
  for (unsigned seed = 1; seed <= 10; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    for (int step = 0; step < 200; ++step) {
      Job& job = *jobs[rng() % jobs.size()];
      if (!holdings_.Holds(job.id)) {
        Hold(job);
      } else if (rng() % 3 == 0) {
        job.current_attempt()->last_checkpoint_at = step;
        holdings_.Track(job.id);
      } else {
        holdings_.Unhold(job.id);
      }
      ExpectRunningMatchesHoldings();
    }
    for (JobId id : holdings_.Held()) holdings_.Unhold(id);
    EXPECT_EQ(Take(holdings_), before);
  }
}

}  // namespace
}  // namespace drover::control
