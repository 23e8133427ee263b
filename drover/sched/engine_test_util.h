#pragma once

// Scenario helpers for tests of the scheduling engine (engine_test.cc, nomination_test.cc): a
// World holding a cluster, a queue tree and running jobs, the policies they share, and readers
// of a cycle's output. Test-only; header-only.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "drover/sched/engine.h"
#include "drover/sched/scheduler.h"

namespace drover::sched::testing {
inline constexpr DurationMs kMinute = 60'000;
inline constexpr DurationMs kHour = 60 * kMinute;

inline model::QueueConfig Leaf(const std::string& name, std::int64_t gpus,
                               std::optional<std::int64_t> borrow = std::nullopt) {
  model::QueueConfig queue;
  queue.name = name;
  queue.nominal["gpu"] = gpus * 1000;
  if (borrow) queue.borrowing_limit["gpu"] = *borrow * 1000;
  return queue;
}

// Two teams under one org, `a_gpus` and `b_gpus` of nominal GPU quota.
inline model::Policy TwoTeams(std::int64_t a_gpus, std::int64_t b_gpus) {
  model::Policy policy;
  model::QueueConfig org;
  org.name = "org";
  org.children = {Leaf("team-a", a_gpus), Leaf("team-b", b_gpus)};
  policy.queues = {org};
  return policy;
}

// A cluster, a policy and jobs holding resources, for scenario tests.
class World {
 public:
  explicit World(model::Policy policy) : policy_(std::move(policy)) {
    auto tree = QueueTree::Create(policy_);
    EXPECT_TRUE(tree.has_value());
    queues_ = std::move(*tree);
  }

  void AddNode(const model::Node& node) { cluster_.UpsertNode(node); }

  model::JobSpec& Spec(model::JobSpec spec, const std::string& queue,
                       const std::string& owner = "alice") {
    spec.queue = queue;
    spec.owner = owner;
    specs_.push_back(std::move(spec));
    return specs_.back();
  }

  // Starts job `id` now as if an earlier cycle had placed it.
  void Run(std::int64_t id, const model::JobSpec& spec, TimeMs started_at, int priority = 0,
           TimeMs checkpoint_at = 0) {
    auto placement = TryPlace(cluster_, JobId(id), spec);
    ASSERT_TRUE(placement.has_value()) << "job " << id << " does not fit";
    ASSERT_TRUE(cluster_.Allocate(*placement, spec.requirements).has_value());
    placements_.push_back(*placement);
    Charge charge{*queues_.FindLeaf(spec.queue), spec.owner, spec.pipeline,
                  ChargeAmounts(spec, "")};
    queues_.Add(charge);
    charges_.push_back(charge);
    running_.push_back(RunningJob{JobId(id), &spec, &placements_.back(), &charges_.back(), priority,
                                  started_at, checkpoint_at});
  }

  // Runs a cycle; `nominated` as CycleInput::nominated, `stopping` as CycleInput::stopping.
  CycleOutput Cycle(TimeMs now, std::vector<PendingJob> pending,
                    std::map<JobId, Nomination> nominated = {}, std::set<JobId> stopping = {}) {
    CycleInput input;
    input.now = now;
    input.pending = std::move(pending);
    input.running = running_;
    input.nominated = std::move(nominated);
    input.stopping = std::move(stopping);
    input.history = history_;
    input.maintenance = maintenance_;
    input.placement_decisions = placement_decisions_;
    CycleOutput out = RunPolicyCycle(policy_, queues_, cluster_, input, previous_);
    previous_ = out.reservation;
    return out;
  }

  // Job `id` has exited: its resources and its charge are released.
  void Finish(std::int64_t id) {
    auto it = std::find_if(running_.begin(), running_.end(),
                           [&](const RunningJob& job) { return job.job == JobId(id); });
    ASSERT_NE(it, running_.end()) << "job " << id << " is not running";
    cluster_.Release(*it->placement, it->spec->requirements);
    queues_.Remove(*it->charge);
    running_.erase(it);
  }

  model::Policy& policy() { return policy_; }
  // CycleInput::placement_decisions of the cycles to come.
  void set_placement_decisions(bool on) { placement_decisions_ = on; }
  // What the next cycles get as CycleInput::history.
  std::map<JobId, JobHistory>& history() { return history_; }
  // What the next cycles get as CycleInput::maintenance.
  std::vector<NodeWindow>& maintenance() { return maintenance_; }
  QueueTree& queues() { return queues_; }
  ClusterState& cluster() { return cluster_; }
  const std::vector<RunningJob>& running() const { return running_; }

 private:
  model::Policy policy_;
  bool placement_decisions_ = true;
  QueueTree queues_;
  ClusterState cluster_;
  std::deque<model::JobSpec> specs_;
  std::deque<Placement> placements_;
  std::deque<Charge> charges_;
  std::vector<RunningJob> running_;
  std::optional<Reservation> previous_;
  std::map<JobId, JobHistory> history_;
  std::vector<NodeWindow> maintenance_;
};

inline std::vector<JobId> PlacedIds(const CycleOutput& out) {
  std::vector<JobId> ids;
  for (const PlacedJob& placed : out.placed) ids.push_back(placed.placement.job);
  return ids;
}

inline const Verdict* VerdictOf(const CycleOutput& out, std::int64_t id) {
  for (const auto& [job, verdict] : out.pending) {
    if (job == JobId(id)) return &verdict;
  }
  return nullptr;
}

// One queue "q" of 8 GPUs of quota.
inline model::Policy OneQueue() {
  model::Policy policy;
  policy.queues = {Leaf("q", 8)};
  return policy;
}

// examples/policy.yaml's queues: org (at most 8 GPUs) over team-a (4, lends at most 3; its
// leaves team-a-batch 3 and team-a-interactive 1), team-b (4, borrows up to 4) and default (0,
// borrows up to 2).
inline model::Policy ExamplePolicy() {
  model::QueueConfig team_a = Leaf("team-a", 4, /*borrow=*/0);
  team_a.lending_limit["gpu"] = 3000;
  model::QueueConfig interactive = Leaf("team-a-interactive", 1);
  interactive.lending_limit["gpu"] = 0;
  team_a.children = {Leaf("team-a-batch", 3), interactive};
  model::QueueConfig org;
  org.name = "org";
  org.limits.max_resources["gpu"] = 8000;
  org.children = {team_a, Leaf("team-b", 4, /*borrow=*/4), Leaf("default", 0, /*borrow=*/2)};
  model::Policy policy;
  policy.queues = {org};
  return policy;
}

}  // namespace drover::sched::testing
