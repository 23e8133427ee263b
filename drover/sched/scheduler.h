#pragma once

// The pure scheduling core: placement of gangs onto nodes. Values in, decisions out: no I/O, no
// clock, no threads, no globals; the same input always gives the same output. Users' view:
// docs/scheduling.md.
//
// RunCycle is the scheduling engine (drover/sched/engine.h) under the empty policy: one queue,
// no quota, binpack; it orders the pending jobs by priority (higher first), then by the time
// they entered the queue (earlier first), then by id, and tries each in turn against the free
// capacity left by the jobs placed before it in the same cycle. Placement itself is Plan +
// Commit (drover/sched/placement.h), which the engine calls with its policy's options.
//
// A job is placed whole (every worker) or not at all; a gang that does not fit whole starts
// with the most workers that fit when min_workers allows (the engine's elastic start).
//
// Feasibility of a node for one worker:
//   - static filters: every node_selector label present with exactly that value; every
//     NoSchedule and NoExecute taint tolerated by some toleration (model::Tolerates);
//     PreferNoSchedule never excludes; with requirements.topology_level, the node carries that
//     label. For GPU requests a GPU counts only if it is in the request's mode (below), its
//     model is one of requirements.gpu_models (ASCII case-insensitive; empty = any) and its
//     memory_bytes is at least requirements.gpu_memory_bytes. CPU-only jobs ignore GPU filters.
//   - free capacity: free CPU millicores and free memory cover per_worker, and the GPUs:
//       whole GPUs (per_worker.gpus > 0): that many free exclusive GPUs. Timeslice and MIG GPUs
//         never serve whole-GPU requests, and Free()/NodeKey count only exclusive GPUs.
//       a share (gpu_share_millis > 0): one timeslice GPU with that many of its 1000
//         milli-shares free and, when gpu_memory_bytes > 0, that much of its memory not yet set
//         aside for shares.
//       a MIG instance (mig_profile): one MIG GPU with a free instance of that profile
//         (instances are counted per profile, as the GPU's Gpu::mig lists them).
//     Each worker of a share or MIG request gets exactly one GPU (several workers may share it).
// Shape: with same_node every worker goes to one node, which must hold the whole gang;
// otherwise workers may spread over nodes (several may share one).
//
// Topology: with requirements.topology_level (hard) every worker goes to nodes with one value of
// that label (a domain). Among the domains whose free capacity holds the gang (same_node: one
// node of it does) Plan takes the one with the least spare capacity, in workers of this job
// (best fit keeps big domains whole; ties: the lower value), then places within it by the
// scoring below; if none does, the job waits (the reason names the largest domain). With
// preferences.topology_level (soft) the same, but when no domain holds the gang it is placed as
// if there were no preference. Domains are built from the nodes with room for a worker, found
// through the index when there is one.
//
// Scoring among feasible nodes (PlanOptions::scoring; model::Scoring):
//   - binpack (default): the best fit: the node whose free whole GPUs, then free CPU, then
//     free memory are smallest (ties: node name). Because workers of a gang are identical and
//     nodes independent, filling the best-fit node to its capacity before moving to the next
//     gives the same result as choosing worker by worker.
//   - spread: worker by worker, the node with the most free GPUs, then CPU, then memory (ties:
//     node name).
//   - fragmentation (FGD, Weng et al., USENIX ATC'23): worker by worker, the node where the
//     placement grows the expected fragmentation (fragmentation.h) least, for the workload mix
//     in PlanOptions::mix (or the job's own shape), evaluated on every feasible node and
//     memoized by node state; ties in binpack order for gangs, by PlanOptions::rng (else name)
//     for single workers. MIG requests use binpack (MIG slices are fixed; they do not
//     fragment).
//   - random, best-fit, dot-product, gpu-packing, gpu-clustering: the baselines of the FGD
//     paper, with its simulator's integer scores, for single-worker jobs (every feasible node
//     scored; ties by PlanOptions::rng, else name); gangs place as binpack.
//   - shares: the same orders applied to (GPU, node) pairs: binpack takes the fullest GPU that
//     still fits (fewest free milli-shares, or free instances, then share memory), then the
//     fullest node, so that whole GPUs stay whole; spread the emptiest; FGD the least growth.
// CPU-only jobs try nodes without any GPU first (tier 0), so that GPU nodes stay free for GPU
// jobs; every order above applies within the tier.
// Label preferences (preferences.node_labels): a node's score is the sum of the weights of the
// preferred labels it carries; among feasible nodes the highest score wins, then the scoring
// order. They never make a feasible job infeasible. PlanOptions::excluded nodes are never used.
// GPU choice on a node (whole GPUs): among the topology groups whose free matching GPUs can hold
// the worker, the group with the fewest free GPUs (ties: the group holding the lowest index),
// its lowest indices; if no single group fits, the lowest free matching indices. Workers on one
// node get disjoint GPUs, each list ascending. Ranks are grouped by node, nodes in the order
// they were chosen.
//
// Cost: ClusterState keeps, per distinct static filter of a whole-GPU or CPU-only request seen
// by RunCycle or the engine (up to ClusterState::kMaxIndexes of them, least recently used
// evicted), an ordered index of its eligible nodes keyed by (tier, free exclusive GPUs, free
// CPU, free memory, name), maintained on every Allocate/Release/UpsertNode, so binpack is a
// lower_bound, spread a walk from the top, FGD one lower_bound per free-GPU level. Share
// requests scan only the nodes that have timeslice or MIG GPUs (ClusterState keeps their list),
// so the exclusive path pays nothing for them. Label preferences and topology domains scan the
// nodes with room (through the index when there is one); only jobs that ask for them pay.
// TryPlace uses an index when one exists and scans the eligible nodes otherwise; Explain always
// scans (slow path); RunCycle explains each distinct request once per cycle.

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
#include "drover/model/policy.h"

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
  std::int32_t gpu_share_millis = 0;  // a time-sliced share per worker (when per_worker.gpus 0)
  std::string mig_profile;            // a MIG instance per worker (when neither of the above)
  std::string topology_level;         // requirements.topology_level (preferences never block)
  // How many nodes each filter excluded, by cause, e.g. {"taint gpu=reserved:NoSchedule": 3,
  // "node selector pool=a": 2, "GPU model": 4}. Each node counts once, under the first filter
  // it fails, in this order: "node selector K=V" (first mismatching label), "taint T" (first
  // untolerated NoSchedule/NoExecute taint), "missing topology label L" (with topology_level),
  // then by GPU mode:
  //   whole GPUs: "GPU count" (fewer GPUs than needed on one node), "GPU sharing: too few
  //     exclusive GPUs" (enough GPUs, but not enough of them exclusive), "GPU model",
  //     "GPU memory";
  //   a share: "GPU sharing: no timeslice GPU", "GPU model", "GPU memory", "GPU count" (with
  //     same_node: the node's GPUs could not hold the gang even if all were free);
  //   a MIG instance: "GPU sharing: no MIG P instance" (no MIG GPU offers profile P),
  //     "GPU model", "GPU memory", "GPU count" (as for shares);
  // then "CPU capacity", "memory capacity" (the node's total, not free, capacity). Sorted by
  // count (largest first), then by cause, for stable rendering.
  std::vector<std::pair<std::string, int>> excluded;
  // The largest number of free matching GPUs on one node that is eligible or excluded only for
  // being too small (GPU count, CPU or memory capacity), and which node has it (ties: node
  // name); kUnschedulable reasons name it too, so users see the most they can get. For CPU-only
  // jobs largest_free_node is instead the eligible node with the most free CPU (then memory);
  // for shares the node of largest_free_share.
  int largest_free_gpus = 0;
  std::optional<NodeId> largest_free_node;
  // Free CPU and memory of largest_free_node.
  std::int64_t largest_free_cpu_millis = 0;
  std::int64_t largest_free_memory_bytes = 0;
  // Shares: the most free on one matching GPU: milli-shares (timeslice; then its free share
  // memory in largest_free_share_memory_bytes), or instances of mig_profile on one node (MIG).
  std::int64_t largest_free_share = 0;
  std::int64_t largest_free_share_memory_bytes = 0;
  // Nodes that pass every static filter and whose total capacity could hold one worker (with
  // same_node: the whole gang). 0 means kUnschedulable (or kNoNodes).
  int eligible_nodes = 0;
  // How many workers of the gang the free capacity holds now, at most `workers`: the sum over
  // eligible nodes, or with same_node the most on one node; with topology_level, the most
  // within one domain.
  int fitting_workers = 0;
  // With topology_level (and not same_node): the domain (label value) whose eligible nodes'
  // free capacity holds the most workers (ties: value), and how many, at most `workers`. Empty
  // when none holds one.
  std::string largest_domain;
  int largest_domain_workers = 0;

  // One sentence, without a final period. Examples:
  //   "needs 4 GPUs of model H100 on one node; the largest free block is 2 GPUs on node-b;
  //    3 nodes are excluded by taint gpu=reserved:NoSchedule"
  //   "needs 2 workers of 4 CPU and 16Gi memory; only 1 of 2 workers fit in the free capacity of
  //    3 eligible nodes"
  //   "needs 1 GPU of model B200 on one node; no node can ever satisfy it: 4 nodes are excluded
  //    by GPU model"
  //   "needs a 250m share of a timeslice GPU; no node can ever satisfy it: 2 nodes are excluded
  //    by GPU sharing: no timeslice GPU"
  //   "needs 8 workers of 1 GPU within one rack; the largest free rack-domain holds 5 (rack=r2)"
  //   "no nodes are registered"
  // Exclusion causes are listed as stored in `excluded`.
  std::string Render() const;
  friend bool operator==(const PendingReason&, const PendingReason&) = default;
};

// What is free on one GPU of a node (ClusterState::FreeByGpu).
struct GpuFree {
  int index = 0;
  model::GpuSharing sharing = model::GpuSharing::kExclusive;
  bool whole = false;                   // kExclusive, kTimeslice: may be given whole now
  int share_millis = 0;                 // kTimeslice: free milli-shares (of 1000)
  std::int64_t share_memory_bytes = 0;  // kTimeslice: memory not set aside for shares
  std::vector<model::MigSlots> mig;     // kMig: free instances per profile, in the GPU's order

  friend bool operator==(const GpuFree&, const GpuFree&) = default;
};

// Free capacity of every node. Allocation bookkeeping is incremental: Allocate and Release
// update indexes so that a placement does not scan every node.
//
// Not thread-safe; const member functions do not modify anything (indexes are built only by
// RunCycle and the engine, which take the state by non-const reference). A moved-from ClusterState
// may only be assigned to or destroyed.
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

  // Marks the resources of `placement` as used: for each worker, per_worker CPU and memory of
  // `requirements`, and the GPUs it lists. How a listed GPU is taken follows the request's GPU
  // mode (per_worker.gpus > 0, else gpu_share_millis > 0, else mig_profile; see
  // docs/scheduling.md):
  //   - whole GPUs (also when no GPU is asked for: the lists are authoritative): each listed GPU
  //     must be exclusive, exist, be free and be listed once in the placement;
  //   - a time-sliced share: the worker lists exactly one timeslice GPU, which gives it
  //     gpu_share_millis of its 1000 milli-shares and gpu_memory_bytes of its memory;
  //   - a MIG instance: the worker lists exactly one MIG GPU, which gives it one free instance
  //     of mig_profile (ASCII case-insensitive).
  // kFailedPrecondition, changing nothing, if a node is unknown, a GPU does not exist or is in
  // another mode, or anything (CPU, memory, GPUs, milli-shares, share memory, instances) is not
  // free.
  Status Allocate(const Placement& placement, const model::Requirements& requirements);
  // Returns the resources of `placement` to the free pool, read the same way as Allocate.
  // Unknown nodes are ignored, as are GPUs (and shares) that are not allocated; nothing goes
  // below zero.
  void Release(const Placement& placement, const model::Requirements& requirements);

  // A deep copy of the nodes and allocations, independent of this one (for simulating releases:
  // reservations, start-time estimates, preemption). Indexes are not copied; the copy builds
  // them on demand.
  ClusterState Clone() const;

  // Total (not free) capacity, as quota amounts (model/policy.h): "cpu" (millicores), "memory"
  // (bytes), "gpu" (milli-GPUs: 1000 per GPU of any mode) and "gpu:<model lower-case>" for each
  // model present. "cpu", "memory" and "gpu" are always present.
  model::ResourceAmounts Capacity() const;

  // Nodes in the order they were first upserted (removals close the gap).
  const std::vector<model::Node>& nodes() const;
  // Free resources of a node: cpu, memory, and the count of free exclusive GPUs (timeslice and
  // MIG GPUs never count here); nullopt if unknown. CPU or memory is negative if an upsert
  // shrank the node below what is allocated.
  std::optional<model::Resources> Free(const NodeId& name) const;
  // Indices of free exclusive GPUs on a node, ascending.
  std::vector<int> FreeGpus(const NodeId& name) const;
  // What is free on each GPU of a node, ascending by index; empty if the node is unknown.
  std::vector<GpuFree> FreeByGpu(const NodeId& name) const;

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
  // Its queue hands placement to an external executor (model/executor.h): the policy cycle
  // only admits it (quota, limits) and places nothing; it neither preempts nor reserves.
  bool external = false;
};

struct CycleResult {
  std::vector<Placement> placements;                     // in decision order
  std::vector<std::pair<JobId, PendingReason>> pending;  // every job not placed
};

// Runs one scheduling cycle under the empty policy (RunPolicyCycle with model::Policy{}; defined
// in engine.cc); allocates every placement it returns in `cluster`. Every pending entry's reason
// is computed after all placements of the cycle (once per distinct request). `spec` of every
// PendingJob must be non-null. A spec with workers < 1 is treated as 1.
CycleResult RunCycle(ClusterState& cluster, std::vector<PendingJob> pending);

// Tries to place one job without changing `cluster`; the placement RunCycle would choose for it
// if it came first (binpack, no excluded nodes; placement.h has an overload with options).
// nullopt if it does not fit now.
std::optional<Placement> TryPlace(const ClusterState& cluster, JobId job,
                                  const model::JobSpec& spec);

// Why `spec` cannot be placed on `cluster` now; scans every node. For a job that fits,
// code is kInsufficientFree with fitting_workers == workers.
PendingReason Explain(const ClusterState& cluster, const model::JobSpec& spec);

}  // namespace drover::sched
