#pragma once

// ClusterState: the free capacity of every node (whole GPUs, time-slice shares, MIG instances,
// CPU and memory), kept incrementally as placements are allocated and released, and the values
// that name a placement (WorkerAssignment, Placement). Defined in cluster_state.cc; its
// internals (node bookkeeping, the per-filter indexes) are in cluster_index.h, internal to
// drover/sched. Placement onto it: placement.h (Plan/Commit) and scheduler.h (TryPlace); the
// algorithms are described in scheduler.h's file comment.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "drover/common/ids.h"
#include "drover/common/result.h"
#include "drover/model/job_spec.h"
#include "drover/model/node.h"
#include "drover/model/policy.h"

namespace drover::sched {

namespace internal {
struct ClusterStateAccess;  // drover/sched's access to ClusterState's indexes (cluster_index.h)
}  // namespace internal

// Where one worker of a job runs.
struct WorkerAssignment {
  int rank = 0;
  NodeId node;
  std::vector<int> gpus;  // GPU indices on `node`, ascending
  // Where `node` stood among the nodes of the ClusterState that planned this worker, so that
  // releasing it finds the node without hashing its name; a hint only (checked against the name
  // at that position, which a removal may have renumbered), -1 when unknown. Not part of ==.
  int position_hint = -1;

  friend bool operator==(const WorkerAssignment& a, const WorkerAssignment& b) {
    return a.rank == b.rank && a.node == b.node && a.gpus == b.gpus;
  }
};

// Where every worker of a job runs; workers[i].rank == i.
struct Placement {
  JobId job;
  std::vector<WorkerAssignment> workers;

  friend bool operator==(const Placement&, const Placement&) = default;
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
// Not thread-safe, not even for const calls: const member functions and placement's reads
// change nothing a caller can observe, but fill caches (the capacity total, topology domains,
// fragmentation scoring's per-mix memos); indexes are built only by RunCycle and the engine,
// which take the state by non-const reference. A moved-from ClusterState may only be assigned to
// or destroyed.
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
  // model present. "cpu", "memory" and "gpu" are always present. The reference is valid until
  // the next UpsertNode or RemoveNode.
  const model::ResourceAmounts& Capacity() const;

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

}  // namespace drover::sched
