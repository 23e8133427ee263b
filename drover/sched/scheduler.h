#pragma once

// TryPlace: where one job would go now, changing nothing; and, in this file comment, the
// placement algorithm it shares with the scheduling engine (Plan + Commit in placement.h, which
// the engine calls with its policy's options). The pure scheduling core: values in, decisions
// out: no I/O, no clock, no threads, no globals; the same input always gives the same output.
// Users' view: docs/scheduling.md. The rest of the core: ClusterState (cluster_state.h),
// PendingReason and Explain (pending_reason.h), RunCycle and RunPolicyCycle (engine.h), the
// queue tree (queues.h).
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
// if there were no preference. With an index (whole-GPU and CPU-only requests) the domains come
// from its DomainTable (cluster_index.h): per label and per-worker demand, each member's room
// and each domain's sum and largest, refreshed only for nodes whose version changed; without
// one (shares, or no index) they are built from the nodes with room by a scan.
//
// Scoring among feasible nodes (PlanOptions::scoring; model::Scoring):
//   - binpack (PlanOptions' default; a policy's default is fragmentation): the best fit: the
//     node whose free whole GPUs, then free CPU, then free memory are smallest (ties: node
//     name). Because workers of a gang are identical and nodes independent, filling the
//     best-fit node to its capacity before moving to the next gives the same result as
//     choosing worker by worker.
//   - spread: worker by worker, the node with the most free GPUs, then CPU, then memory (ties:
//     node name).
//   - fragmentation (FGD, Weng et al., USENIX ATC'23): worker by worker, the node where the
//     placement grows the expected fragmentation (fragmentation.h) least, for the workload mix
//     in PlanOptions::mix (or the job's own shape), evaluated on every feasible node (through an
//     index whose nodes have GPUs of one kind, on one node per free capacity: node_scoring.cc)
//     and memoized by node state; ties in binpack order for gangs, by PlanOptions::rng (else name)
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

#include <optional>

#include "drover/common/ids.h"
#include "drover/model/job_spec.h"
#include "drover/sched/cluster_state.h"

namespace drover::sched {

// Tries to place one job without changing `cluster`; the placement RunCycle would choose for it
// if it came first (binpack, no excluded nodes; placement.h has an overload with options).
// nullopt if it does not fit now.
std::optional<Placement> TryPlace(const ClusterState& cluster, JobId job,
                                  const model::JobSpec& spec);

}  // namespace drover::sched
