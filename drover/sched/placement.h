#pragma once

// Placement of one job against a ClusterState, shared by RunCycle, TryPlace and Explain.
// Internal to drover/sched. The algorithm is described in scheduler.h.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "drover/model/job_spec.h"
#include "drover/sched/cluster_index.h"
#include "drover/sched/scheduler.h"

namespace drover::sched::internal {

// What one worker needs, with negative quantities read as 0.
struct Demand {
  int gpus = 0;
  std::int64_t cpu = 0;
  std::int64_t memory = 0;
};

Demand PerWorker(const model::JobSpec& spec);
// spec.workers, at least 1.
int GangSize(const model::JobSpec& spec);

// How many workers of `demand` fit in the free capacity of node `pos` now, at most `limit`.
// With an all-zero demand every node holds `limit`.
int Capacity(const ClusterImpl& impl, int pos, const StaticFilter& filter, const Index* index,
             const Demand& demand, int limit);

struct PlannedGang {
  std::vector<WorkerAssignment> workers;   // ranks 0..n-1
  std::vector<std::pair<int, int>> nodes;  // (node position, workers on it), in rank order
};

// Where every worker of `spec` goes, or nullopt if the gang does not fit now. `index` is the
// index of `filter` or null (then every node is scanned). Changes nothing.
std::optional<PlannedGang> Plan(const ClusterImpl& impl, const StaticFilter& filter,
                                const Index* index, const model::JobSpec& spec);

// A key equal for two specs exactly when they ask for the same thing (the static filter, the
// models as written, per-worker resources, gang size and shape): such jobs get the same
// placement outcome and the same pending reason against the same state.
std::string DemandKey(const StaticFilter& filter, const model::JobSpec& spec);

}  // namespace drover::sched::internal
