#pragma once

// PendingReason, why a job cannot be placed now as a structured value that renders as one
// sentence, and Explain, which computes it against a ClusterState. Defined in
// pending_reason.cc.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "drover/common/ids.h"
#include "drover/model/job_spec.h"
#include "drover/sched/cluster_state.h"

namespace drover::sched {

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
  // Whole GPUs: the free matching GPUs summed over the same nodes (eligible or only too small).
  // Against workers x GPUs per worker it tells waiting for shape (fragmentation) from waiting
  // for capacity (model::DiagnoseShapeWait).
  int free_gpus = 0;
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

// Why `spec` cannot be placed on `cluster` now; scans every node. For a job that fits,
// code is kInsufficientFree with fitting_workers == workers.
PendingReason Explain(const ClusterState& cluster, const model::JobSpec& spec);

}  // namespace drover::sched
