#pragma once

// Scheduler v0: pure placement of gangs onto nodes. Values in, decisions out: no I/O, no clock.
//
// A cycle orders the pending jobs by priority (higher first), then by the time they entered the
// queue (earlier first), then by id, and tries each in turn against the free capacity left by
// the jobs placed before it in the same cycle. A job is placed whole (every worker) or not at
// all. Among the feasible nodes for a worker it picks the best fit: the node whose free GPUs,
// then free CPU, then free memory, would be smallest after the placement (ties: node name).
// v0 has no reservations: a large job that does not fit does not stop smaller ones behind it.

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/ids.h"
#include "drover/common/result.h"
#include "drover/model/job_spec.h"
#include "drover/model/node.h"

namespace drover::sched {

// Where one worker of a job runs.
struct WorkerAssignment {
  int rank = 0;
  NodeId node;
  std::vector<int> gpus;  // GPU indices on `node`, ascending

  friend bool operator==(const WorkerAssignment&, const WorkerAssignment&) = default;
};

// Where every worker of a job runs; workers[i].rank == i.
struct Placement {
  JobId job;
  std::vector<WorkerAssignment> workers;

  friend bool operator==(const Placement&, const Placement&) = default;
};

// Why a job cannot be placed now. Structured so that tools can act on it; Render() gives the
// one sentence users read, e.g. "needs 4 GPUs of model H100 on one node; the largest free
// block is 2 GPUs on node-b; 3 nodes are excluded by taint gpu=reserved:NoSchedule".
struct PendingReason {
  enum class Code {
    kNoNodes,            // the cluster has no nodes
    kUnschedulable,      // no node could ever satisfy the requirements (e.g. model, selector)
    kInsufficientFree,   // some nodes could, but not enough is free now
  };
  Code code = Code::kInsufficientFree;
  // The request, restated.
  int workers = 1;
  model::Resources per_worker;
  std::vector<std::string> gpu_models;
  std::int64_t gpu_memory_bytes = 0;
  bool same_node = false;
  // How many nodes each filter excluded, by cause, e.g. {"taint gpu=reserved:NoSchedule": 3,
  // "node selector pool=a": 2, "GPU model": 4}. Ordered for stable rendering.
  std::vector<std::pair<std::string, int>> excluded;
  // The largest number of GPUs free on one eligible node, and which node has it.
  int largest_free_gpus = 0;
  std::optional<NodeId> largest_free_node;
  int eligible_nodes = 0;  // nodes that pass every static filter

  std::string Render() const;
  friend bool operator==(const PendingReason&, const PendingReason&) = default;
};

// Free capacity of every node. Allocation bookkeeping is incremental: Allocate and Release
// update indexes so that a placement does not scan every node.
class ClusterState {
 public:
  ClusterState();
  ~ClusterState();
  ClusterState(ClusterState&&) noexcept;
  ClusterState& operator=(ClusterState&&) noexcept;

  // Adds a node, or replaces its description keeping current allocations (allocated GPUs that
  // no longer exist stay accounted until released).
  void UpsertNode(const model::Node& node);
  // Removes a node; allocations on it are forgotten.
  void RemoveNode(const NodeId& name);

  // Marks the resources of `placement` (each worker: `per_worker` plus its GPUs) as used.
  // kFailedPrecondition, changing nothing, if any of it is not free or a node is unknown.
  Status Allocate(const Placement& placement, const model::Resources& per_worker);
  // Returns the resources of `placement` to the free pool. Unknown nodes are ignored.
  void Release(const Placement& placement, const model::Resources& per_worker);

  const std::vector<model::Node>& nodes() const;
  // Free resources of a node (cpu, memory, and the count of free GPUs); nullopt if unknown.
  std::optional<model::Resources> Free(const NodeId& name) const;
  // Indices of free GPUs on a node, ascending.
  std::vector<int> FreeGpus(const NodeId& name) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A job waiting for placement. `spec` is borrowed for the duration of the call.
struct PendingJob {
  JobId job;
  int priority = 0;
  TimeMs enqueued_at = 0;
  const model::JobSpec* spec = nullptr;
};

struct CycleResult {
  std::vector<Placement> placements;                       // in decision order
  std::vector<std::pair<JobId, PendingReason>> pending;    // every job not placed
};

// Runs one scheduling cycle; allocates every placement it returns in `cluster`.
CycleResult RunCycle(ClusterState& cluster, std::vector<PendingJob> pending);

// Tries to place one job without changing `cluster`.
std::optional<Placement> TryPlace(const ClusterState& cluster, JobId job,
                                  const model::JobSpec& spec);

// Why `spec` cannot be placed on `cluster` now.
PendingReason Explain(const ClusterState& cluster, const model::JobSpec& spec);

}  // namespace drover::sched
