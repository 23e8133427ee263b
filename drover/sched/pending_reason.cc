// Explain (why a job is pending, by one scan of every node) and PendingReason::Render.

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "drover/common/quantity.h"
#include "drover/sched/cluster_index.h"
#include "drover/sched/placement.h"
#include "drover/sched/scheduler.h"

namespace drover::sched {

using internal::ClusterImpl;
namespace {

using internal::Demand;
using internal::StaticFilter;

// What one node must hold in total: one worker, or the whole gang with same_node.
struct NodeNeed {
  std::int64_t gpus = 0;
  std::int64_t cpu = 0;
  std::int64_t memory = 0;
};

bool ModelMatches(const StaticFilter& filter, const std::string& model_lower) {
  return filter.gpu_models_lower.empty() ||
         std::binary_search(filter.gpu_models_lower.begin(), filter.gpu_models_lower.end(),
                            model_lower);
}

// The first static filter node `pos` fails, in the order documented at PendingReason::excluded;
// empty if it passes them all.
std::string ExclusionCause(const ClusterImpl& impl, int pos, const StaticFilter& filter,
                           const NodeNeed& need) {
  const model::Node& node = impl.nodes[pos];
  for (const auto& [label, value] : filter.node_selector) {
    auto it = node.labels.find(label);
    if (it == node.labels.end() || it->second != value) {
      return fmt::format("node selector {}={}", label, value);
    }
  }
  for (const model::Taint& taint : node.taints) {
    if (taint.effect == model::TaintEffect::kPreferNoSchedule) continue;
    bool tolerated = std::any_of(filter.tolerations.begin(), filter.tolerations.end(),
                                 [&](const model::Toleration& t) { return Tolerates(t, taint); });
    if (!tolerated) return "taint " + model::FormatTaint(taint);
  }
  if (filter.needs_gpus) {
    if (static_cast<std::int64_t>(node.gpus.size()) < need.gpus) return "GPU count";
    const internal::NodeState& state = impl.states[pos];
    std::int64_t model_ok = 0;
    std::int64_t both_ok = 0;
    for (std::size_t i = 0; i < node.gpus.size(); ++i) {
      if (!ModelMatches(filter, state.gpu_models_lower[i])) continue;
      ++model_ok;
      if (node.gpus[i].memory_bytes >= filter.gpu_memory_bytes) ++both_ok;
    }
    if (model_ok < need.gpus) return "GPU model";
    if (both_ok < need.gpus) return "GPU memory";
  }
  if (node.cpu_millis < need.cpu) return "CPU capacity";
  if (node.memory_bytes < need.memory) return "memory capacity";
  return std::string();
}

std::string Count(std::int64_t n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

// "needs 4 GPUs of model H100 on one node", "needs 2 workers of 4 CPU and 16Gi memory".
std::string RenderRequest(const PendingReason& r) {
  std::string out = "needs ";
  const int gpus = r.per_worker.gpus;
  if (gpus > 0) {
    std::string gpu_phrase = Count(gpus, "GPU");
    if (!r.gpu_models.empty()) {
      gpu_phrase += " of model " + fmt::format("{}", fmt::join(r.gpu_models, " or "));
    }
    if (r.gpu_memory_bytes > 0) {
      gpu_phrase += " with at least " + FormatBytes(r.gpu_memory_bytes) + " memory";
    }
    if (r.workers == 1) return out + gpu_phrase + " on one node";
    out += fmt::format("{} workers of {}", r.workers, gpu_phrase);
  } else {
    out += Count(r.workers, "worker");
    std::vector<std::string> parts;
    if (r.per_worker.cpu_millis > 0)
      parts.push_back(FormatCpuMillis(r.per_worker.cpu_millis) + " CPU");
    if (r.per_worker.memory_bytes > 0) {
      parts.push_back(FormatBytes(r.per_worker.memory_bytes) + " memory");
    }
    if (!parts.empty()) out += fmt::format(" of {}", fmt::join(parts, " and "));
  }
  if (r.same_node && r.workers > 1) out += " on one node";
  return out;
}

// "3 nodes are excluded by taint a=b:NoSchedule, 1 node by GPU model".
std::string RenderExcluded(const PendingReason& r) {
  std::string out;
  for (std::size_t i = 0; i < r.excluded.size(); ++i) {
    const auto& [cause, n] = r.excluded[i];
    if (i == 0) {
      out += fmt::format("{} {} excluded by {}", Count(n, "node"), n == 1 ? "is" : "are", cause);
    } else {
      out += fmt::format(", {} by {}", Count(n, "node"), cause);
    }
  }
  return out;
}

// What is free, for kInsufficientFree.
std::string RenderFree(const PendingReason& r) {
  const int gpus = r.per_worker.gpus;
  const std::string node = r.largest_free_node ? r.largest_free_node->value() : std::string("?");
  if (r.fitting_workers >= r.workers) return "it fits in the free capacity now";
  if (!r.same_node && r.workers > 1) {
    if (r.fitting_workers == 0) {
      return fmt::format("none of the {} workers fits in the free capacity of {} eligible {}",
                         r.workers, r.eligible_nodes, r.eligible_nodes == 1 ? "node" : "nodes");
    }
    return fmt::format("only {} of {} workers fit in the free capacity of {} eligible {}",
                       r.fitting_workers, r.workers, r.eligible_nodes,
                       r.eligible_nodes == 1 ? "node" : "nodes");
  }
  const std::string free_cpu_memory =
      fmt::format("{} CPU and {} memory", FormatCpuMillis(r.largest_free_cpu_millis),
                  FormatBytes(r.largest_free_memory_bytes));
  if (gpus > 0) {
    const std::int64_t per_node = r.same_node ? std::int64_t{gpus} * r.workers : gpus;
    if (r.largest_free_gpus == 0) return "no eligible node has a free GPU";
    std::string out =
        fmt::format("the largest free block is {} on {}", Count(r.largest_free_gpus, "GPU"), node);
    if (r.largest_free_gpus >= per_node) {
      const std::int64_t workers = r.same_node ? r.workers : 1;
      out += fmt::format(", which has only {} free (needs {} CPU and {} memory)", free_cpu_memory,
                         FormatCpuMillis(r.per_worker.cpu_millis * workers),
                         FormatBytes(r.per_worker.memory_bytes * workers));
    }
    return out;
  }
  return fmt::format("the most free on one eligible node is {} on {}", free_cpu_memory, node);
}

}  // namespace

PendingReason Explain(const ClusterState& cluster, const model::JobSpec& spec) {
  const ClusterImpl& impl = internal::ClusterStateAccess::Get(cluster);
  const model::Requirements& req = spec.requirements;
  PendingReason reason;
  reason.workers = internal::GangSize(spec);
  reason.per_worker = req.per_worker;
  reason.gpu_models = req.gpu_models;
  reason.gpu_memory_bytes = req.gpu_memory_bytes;
  reason.same_node = req.same_node;
  if (impl.nodes.empty()) {
    reason.code = PendingReason::Code::kNoNodes;
    return reason;
  }
  const StaticFilter filter = StaticFilter::From(req);
  const Demand demand = internal::PerWorker(spec);
  const std::int64_t on_one_node = req.same_node ? reason.workers : 1;
  const NodeNeed need{demand.gpus * on_one_node, demand.cpu * on_one_node,
                      demand.memory * on_one_node};

  std::map<std::string, int> excluded;
  std::int64_t fitting = 0;
  int best = -1;  // largest_free_node's position
  int best_gpus = 0;
  for (int pos = 0; pos < static_cast<int>(impl.nodes.size()); ++pos) {
    std::string cause = ExclusionCause(impl, pos, filter, need);
    if (!cause.empty()) ++excluded[cause];
    // A node that is merely too small still tells the user the most they can get now.
    const bool too_small =
        cause == "GPU count" || cause == "CPU capacity" || cause == "memory capacity";
    if (!cause.empty() && !too_small) continue;
    const int free_gpus = impl.MatchingFreeGpus(pos, filter, nullptr);
    bool better;
    if (best < 0) {
      better = true;
    } else if (filter.needs_gpus) {
      better = free_gpus > best_gpus ||
               (free_gpus == best_gpus && impl.nodes[pos].name < impl.nodes[best].name);
    } else {
      auto rank = [&](int p) { return std::make_pair(impl.FreeCpu(p), impl.FreeMemory(p)); };
      better = rank(pos) > rank(best) ||
               (rank(pos) == rank(best) && impl.nodes[pos].name < impl.nodes[best].name);
    }
    if (better) {
      best = pos;
      best_gpus = free_gpus;
    }
    if (too_small) continue;
    ++reason.eligible_nodes;
    const int capacity = internal::Capacity(impl, pos, filter, nullptr, demand, reason.workers);
    fitting = req.same_node ? std::max<std::int64_t>(fitting, capacity)
                            : std::min<std::int64_t>(fitting + capacity, reason.workers);
  }
  reason.fitting_workers = static_cast<int>(fitting);
  if (best >= 0) {
    reason.largest_free_gpus = best_gpus;
    reason.largest_free_node = impl.nodes[best].name;
    reason.largest_free_cpu_millis = impl.FreeCpu(best);
    reason.largest_free_memory_bytes = impl.FreeMemory(best);
  }
  reason.excluded.assign(excluded.begin(), excluded.end());
  std::stable_sort(reason.excluded.begin(), reason.excluded.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  reason.code = reason.eligible_nodes == 0 ? PendingReason::Code::kUnschedulable
                                           : PendingReason::Code::kInsufficientFree;
  return reason;
}

std::string PendingReason::Render() const {
  switch (code) {
    case Code::kNoNodes:
      return "no nodes are registered";
    case Code::kUnschedulable: {
      std::string out =
          RenderRequest(*this) + "; no node can ever satisfy it: " + RenderExcluded(*this);
      if (largest_free_node && (same_node || workers == 1)) out += "; " + RenderFree(*this);
      return out;
    }
    case Code::kInsufficientFree:
      break;
  }
  std::string out = RenderRequest(*this) + "; " + RenderFree(*this);
  if (!excluded.empty()) out += "; " + RenderExcluded(*this);
  return out;
}

}  // namespace drover::sched
