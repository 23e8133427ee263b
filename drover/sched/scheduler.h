#pragma once

// Scheduler v0: pure placement of gangs onto nodes. Values in, decisions out: no I/O, no clock,
// no threads, no globals; the same input always gives the same output.
//
// A cycle orders the pending jobs by priority (higher first), then by the time they entered the
// queue (earlier first), then by id, and tries each in turn against the free capacity left by
// the jobs placed before it in the same cycle. A job is placed whole (every worker) or not at
// all. Among the feasible nodes for a worker it picks the best fit: the node whose free GPUs,
// then free CPU, then free memory, would be smallest after the placement (ties: node name).
// v0 has no reservations: a large job that does not fit does not stop smaller ones behind it.
//
// Feasibility of a node for one worker (docs/scheduling.md):
//   - static filters: every node_selector label present with exactly that value; every
//     NoSchedule and NoExecute taint tolerated by some toleration (model::Tolerates);
//     PreferNoSchedule never excludes. For GPU jobs, GPUs count only if their model is one of
//     requirements.gpu_models (ASCII case-insensitive; empty = any) and their memory_bytes is at
//     least requirements.gpu_memory_bytes. CPU-only jobs ignore the GPU filters.
//   - free capacity: free CPU millicores, free memory and free matching GPUs cover per_worker.
// Shape: with same_node every worker goes to one node, which must hold workers x per_worker;
// otherwise workers may spread over nodes (several may share one). Gangs are all-or-nothing of
// spec.workers; v0 ignores min_workers (a gang never starts smaller than `workers`).
// CPU-only jobs (per_worker.gpus == 0) try nodes without any GPU first, so that GPU nodes stay
// free for GPU jobs; within each tier the best-fit order above applies.
// GPU choice on a node: among the topology groups whose free matching GPUs can hold the worker,
// the group with the fewest free GPUs (ties: the group holding the lowest index), its lowest
// indices; if no single group fits, the lowest free matching indices. Workers on one node get
// disjoint GPUs, each list ascending.
//
// Because workers of a gang are identical and nodes independent, filling the best-fit node up to
// its capacity before moving to the next one gives the same result as placing worker by worker,
// and it finds a placement whenever the free capacity of the eligible nodes can hold the gang.
//
// Cost: ClusterState keeps, per distinct static filter seen by RunCycle (up to
// ClusterState::kMaxIndexes of them, least recently used evicted), an ordered index of its
// eligible nodes keyed by (tier, free GPUs, free CPU, free memory, name), maintained on every
// Allocate/Release/UpsertNode, so the best fit is a lower_bound, not a scan. TryPlace uses such
// an index when one exists and scans every node otherwise; Explain always scans (slow path);
// RunCycle explains each distinct request once per cycle.

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

namespace internal {
struct ClusterStateAccess;  // scheduler.cc's access to ClusterState's indexes
}  // namespace internal

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
    kNoNodes,           // the cluster has no nodes
    kUnschedulable,     // no node could ever satisfy the requirements (e.g. model, selector)
    kInsufficientFree,  // some nodes could, but not enough is free now
  };
  Code code = Code::kInsufficientFree;
  // The request, restated.
  int workers = 1;
  model::Resources per_worker;
  std::vector<std::string> gpu_models;
  std::int64_t gpu_memory_bytes = 0;
  bool same_node = false;
  // How many nodes each filter excluded, by cause, e.g. {"taint gpu=reserved:NoSchedule": 3,
  // "node selector pool=a": 2, "GPU model": 4}. Each node counts once, under the first filter
  // it fails, in this order: "node selector K=V" (first mismatching label), "taint T" (first
  // untolerated NoSchedule/NoExecute taint), "GPU count" (fewer GPUs than needed on one node),
  // "GPU model", "GPU memory", "CPU capacity", "memory capacity" (the node's total, not free,
  // capacity). Sorted by count (largest first), then by cause, for stable rendering.
  std::vector<std::pair<std::string, int>> excluded;
  // The largest number of free matching GPUs on one node that is eligible or excluded only for
  // being too small (GPU count, CPU or memory capacity), and which node has it (ties: node
  // name); kUnschedulable reasons name it too, so users see the most they can get. For CPU-only
  // jobs largest_free_node is instead the eligible node with the most free CPU (then memory).
  int largest_free_gpus = 0;
  std::optional<NodeId> largest_free_node;
  // Free CPU and memory of largest_free_node.
  std::int64_t largest_free_cpu_millis = 0;
  std::int64_t largest_free_memory_bytes = 0;
  // Nodes that pass every static filter and whose total capacity could hold one worker (with
  // same_node: the whole gang). 0 means kUnschedulable (or kNoNodes).
  int eligible_nodes = 0;
  // How many workers of the gang the free capacity holds now, at most `workers`: the sum over
  // eligible nodes, or with same_node the most on one node.
  int fitting_workers = 0;

  // One sentence, without a final period. Examples:
  //   "needs 4 GPUs of model H100 on one node; the largest free block is 2 GPUs on node-b;
  //    3 nodes are excluded by taint gpu=reserved:NoSchedule"
  //   "needs 2 workers of 4 CPU and 16Gi memory; only 1 of 2 workers fit in the free capacity of
  //    3 eligible nodes"
  //   "needs 1 GPU of model B200 on one node; no node can ever satisfy it: 4 nodes are excluded
  //    by GPU model"
  //   "no nodes are registered"
  // Exclusion causes are listed as stored in `excluded`.
  std::string Render() const;
  friend bool operator==(const PendingReason&, const PendingReason&) = default;
};

// Free capacity of every node. Allocation bookkeeping is incremental: Allocate and Release
// update indexes so that a placement does not scan every node.
//
// Not thread-safe; const member functions do not modify anything (indexes are built only by
// RunCycle, which takes the state by non-const reference). A moved-from ClusterState may only
// be assigned to or destroyed.
class ClusterState {
 public:
  // Most static-filter indexes kept at once (see the file comment); each costs one ordered-set
  // entry per eligible node and one update per allocation change of a member node.
  static constexpr int kMaxIndexes = 32;

  ClusterState();
  ~ClusterState();
  ClusterState(ClusterState&&) noexcept;
  ClusterState& operator=(ClusterState&&) noexcept;

  // Adds a node, or replaces its description keeping current allocations (allocated GPUs that
  // no longer exist stay accounted until released).
  void UpsertNode(const model::Node& node);
  // Removes a node; allocations on it are forgotten.
  void RemoveNode(const NodeId& name);

  // Marks the resources of `placement` (each worker: `per_worker` CPU and memory plus the GPUs
  // it lists; per_worker.gpus is not consulted, the lists are authoritative) as used.
  // kFailedPrecondition, changing nothing, if any of it is not free, a node is unknown, a GPU
  // index does not exist on its node, or the placement names one GPU twice.
  Status Allocate(const Placement& placement, const model::Resources& per_worker);
  // Returns the resources of `placement` to the free pool. Unknown nodes are ignored, as are GPUs
  // that are not allocated; used CPU and memory never go below zero.
  void Release(const Placement& placement, const model::Resources& per_worker);

  // Nodes in the order they were first upserted (removals close the gap).
  const std::vector<model::Node>& nodes() const;
  // Free resources of a node (cpu, memory, and the count of free GPUs); nullopt if unknown.
  // CPU or memory is negative if an upsert shrank the node below what is allocated.
  std::optional<model::Resources> Free(const NodeId& name) const;
  // Indices of free GPUs on a node, ascending.
  std::vector<int> FreeGpus(const NodeId& name) const;

 private:
  friend struct internal::ClusterStateAccess;
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
  std::vector<Placement> placements;                     // in decision order
  std::vector<std::pair<JobId, PendingReason>> pending;  // every job not placed
};

// Runs one scheduling cycle; allocates every placement it returns in `cluster`. Every pending
// entry's reason is computed after all placements of the cycle (once per distinct request).
// `spec` of every PendingJob must be non-null. A spec with workers < 1 is treated as 1.
CycleResult RunCycle(ClusterState& cluster, std::vector<PendingJob> pending);

// Tries to place one job without changing `cluster`; the placement RunCycle would choose for it
// if it came first. nullopt if it does not fit now.
std::optional<Placement> TryPlace(const ClusterState& cluster, JobId job,
                                  const model::JobSpec& spec);

// Why `spec` cannot be placed on `cluster` now; scans every node. For a job that fits,
// code is kInsufficientFree with fitting_workers == workers.
PendingReason Explain(const ClusterState& cluster, const model::JobSpec& spec);

}  // namespace drover::sched
