// Explain (why a job is pending, by one scan of every node) and PendingReason::Render.

#include "drover/sched/pending_reason.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <map>
#include <string>
#include <utility>

#include "drover/common/quantity.h"
#include "drover/sched/cluster_index.h"
#include "drover/sched/placement.h"

namespace drover::sched {

using internal::ClusterImpl;
namespace {

using internal::Demand;
using internal::StaticFilter;

using internal::GpuMode;

// What one node must hold in total: one worker, or the whole gang with same_node.
struct NodeNeed {
  std::int64_t workers = 1;
  std::int64_t gpus = 0;
  std::int64_t cpu = 0;
  std::int64_t memory = 0;
};

inline bool ModelMatches(const StaticFilter& filter, const std::string& model_lower) {
  return filter.gpu_models_lower.empty() ||
         std::binary_search(filter.gpu_models_lower.begin(), filter.gpu_models_lower.end(),
                            model_lower);
}

// Workers of `demand` the GPUs of a node could hold if all were free (shares only).
std::int64_t ShareSlots(const ClusterImpl& impl, int pos, const StaticFilter& filter,
                        const Demand& demand) {
  std::int64_t slots = 0;
  for (std::size_t i = 0; i < impl.nodes[pos].gpus.size(); ++i) {
    if (!impl.GpuEligible(pos, i, filter)) continue;
    if (demand.mode == GpuMode::kMig) {
      slots += impl.MigInstances(pos, i, demand.mig_profile_lower);
      continue;
    }
    std::int64_t n = internal::kShareMillisPerGpu / demand.share_millis;
    if (demand.share_memory > 0) {
      n = std::min(n, impl.nodes[pos].gpus[i].memory_bytes / demand.share_memory);
    }
    slots += n;
  }
  return slots;
}

// The first static filter node `pos` fails, in the order documented at PendingReason::excluded;
// empty if it passes them all.
std::string ExclusionCause(const ClusterImpl& impl, int pos, const StaticFilter& filter,
                           const Demand& demand, const NodeNeed& need,
                           const model::Requirements& req) {
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
  if (!req.topology_level.empty() && !node.labels.contains(req.topology_level)) {
    return "missing topology label " + req.topology_level;
  }
  const internal::NodeState& state = impl.states[pos];
  const bool any_model = filter.gpu_models_lower.empty();
  if (filter.mode == GpuMode::kWhole) {
    if (static_cast<std::int64_t>(node.gpus.size()) < need.gpus) return "GPU count";
    std::int64_t exclusive = 0;
    std::int64_t model_ok = 0;
    std::int64_t both_ok = 0;
    for (std::size_t i = 0; i < node.gpus.size(); ++i) {
      if (node.gpus[i].sharing == model::GpuSharing::kMig) continue;
      ++exclusive;
      if (!any_model && !ModelMatches(filter, state.gpu_models_lower[i])) continue;
      ++model_ok;
      if (node.gpus[i].memory_bytes >= filter.gpu_memory_bytes) ++both_ok;
    }
    if (exclusive < need.gpus) return "GPU sharing: too few GPUs that may be given whole";
    if (model_ok < need.gpus) return "GPU model";
    if (both_ok < need.gpus) return "GPU memory";
  } else if (filter.shares()) {
    bool mode_ok = false;
    bool model_ok = false;
    for (std::size_t i = 0; i < node.gpus.size(); ++i) {
      const bool in_mode = filter.mode == GpuMode::kTimeslice
                               ? node.gpus[i].sharing == model::GpuSharing::kTimeslice
                               : impl.MigInstances(pos, i, filter.mig_profile_lower) > 0;
      if (!in_mode) continue;
      mode_ok = true;
      if (ModelMatches(filter, state.gpu_models_lower[i])) model_ok = true;
    }
    if (!mode_ok) {
      return filter.mode == GpuMode::kTimeslice
                 ? std::string("GPU sharing: no timeslice GPU")
                 : fmt::format("GPU sharing: no MIG {} instance", req.mig_profile);
    }
    if (!model_ok) return "GPU model";
    const std::int64_t slots = ShareSlots(impl, pos, filter, demand);
    if (slots == 0) return "GPU memory";
    if (slots < need.workers) return "GPU count";
  }
  if (node.cpu_millis < need.cpu) return "CPU capacity";
  if (node.memory_bytes < need.memory) return "memory capacity";
  return std::string();
}

std::string Count(std::int64_t n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

// "needs 4 GPUs of model H100 on one node", "needs 2 workers of 4 CPU and 16Gi memory",
// "needs a 250m share of a timeslice GPU", "needs 8 workers of 1 GPU within one rack".
std::string RenderRequest(const PendingReason& r) {
  std::string out = "needs ";
  const int gpus = r.per_worker.gpus;
  const std::string models =
      r.gpu_models.empty() ? std::string()
                           : " of model " + fmt::format("{}", fmt::join(r.gpu_models, " or "));
  const std::string topology =
      r.topology_level.empty() ? std::string() : " within one " + r.topology_level;
  if (gpus > 0) {
    std::string gpu_phrase = Count(gpus, "GPU") + models;
    if (r.gpu_memory_bytes > 0) {
      gpu_phrase += " with at least " + FormatBytes(r.gpu_memory_bytes) + " memory";
    }
    if (r.workers == 1) return out + gpu_phrase + " on one node" + topology;
    out += fmt::format("{} workers of {}", r.workers, gpu_phrase);
  } else if (r.gpu_share_millis > 0 || !r.mig_profile.empty()) {
    std::string phrase;
    if (r.gpu_share_millis > 0) {
      phrase = fmt::format("a {}m share of a timeslice GPU{}", r.gpu_share_millis, models);
      if (r.gpu_memory_bytes > 0)
        phrase += " with " + FormatBytes(r.gpu_memory_bytes) + " of its memory";
    } else {
      phrase = fmt::format("a MIG {} instance{}", r.mig_profile, models);
    }
    if (r.workers == 1) return out + phrase + topology;
    out += fmt::format("{} workers of {}", r.workers, phrase);
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
  return out + topology;
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

// "which has only 2 CPU and 8Gi memory free (needs 4 CPU and 16Gi memory)" for `workers`.
std::string RenderHostShort(const PendingReason& r, std::int64_t workers) {
  return fmt::format("which has only {} CPU and {} memory free (needs {} CPU and {} memory)",
                     FormatCpuMillis(r.largest_free_cpu_millis),
                     FormatBytesApprox(r.largest_free_memory_bytes),
                     FormatCpuMillis(r.per_worker.cpu_millis * workers),
                     FormatBytes(r.per_worker.memory_bytes * workers));
}

// What is free, for kInsufficientFree.
std::string RenderFree(const PendingReason& r) {
  const int gpus = r.per_worker.gpus;
  const std::string node = r.largest_free_node ? r.largest_free_node->value() : std::string("?");
  if (r.fitting_workers >= r.workers) return "it fits in the free capacity now";
  if (!r.topology_level.empty() && !r.same_node && r.workers > 1) {
    if (r.largest_domain.empty()) {
      return fmt::format("no {}-domain has room for a worker", r.topology_level);
    }
    return fmt::format("the largest free {}-domain holds {} ({}={})", r.topology_level,
                       r.largest_domain_workers, r.topology_level, r.largest_domain);
  }
  if (!r.same_node && r.workers > 1) {
    if (r.fitting_workers == 0) {
      return fmt::format("none of the {} workers fits in the free capacity of {} eligible {}",
                         r.workers, r.eligible_nodes, r.eligible_nodes == 1 ? "node" : "nodes");
    }
    return fmt::format("only {} of {} workers fit in the free capacity of {} eligible {}",
                       r.fitting_workers, r.workers, r.eligible_nodes,
                       r.eligible_nodes == 1 ? "node" : "nodes");
  }
  const std::int64_t on_node = r.same_node ? r.workers : 1;
  if (gpus == 0 && r.gpu_share_millis > 0) {
    if (r.largest_free_share == 0) return "no eligible timeslice GPU has a free share";
    std::string out =
        fmt::format("the largest free share is {}m of a GPU on {}", r.largest_free_share, node);
    if (r.gpu_memory_bytes > 0) {
      out += fmt::format(" with {} of its memory free",
                         FormatBytesApprox(r.largest_free_share_memory_bytes));
    }
    if (on_node == 1 && r.largest_free_share >= r.gpu_share_millis &&
        r.largest_free_share_memory_bytes >= r.gpu_memory_bytes) {
      out += ", " + RenderHostShort(r, 1);
    }
    return out;
  }
  if (gpus == 0 && !r.mig_profile.empty()) {
    if (r.largest_free_share == 0) {
      return fmt::format("no eligible GPU has a free {} instance", r.mig_profile);
    }
    std::string out = fmt::format("the most free {} instances on one node are {} on {}",
                                  r.mig_profile, r.largest_free_share, node);
    if (r.largest_free_share >= on_node) out += ", " + RenderHostShort(r, on_node);
    return out;
  }
  const std::string free_cpu_memory =
      fmt::format("{} CPU and {} memory", FormatCpuMillis(r.largest_free_cpu_millis),
                  FormatBytesApprox(r.largest_free_memory_bytes));
  if (gpus > 0) {
    const std::int64_t per_node = std::int64_t{gpus} * on_node;
    if (r.largest_free_gpus == 0) return "no eligible node has a free GPU";
    std::string out =
        fmt::format("the largest free block is {} on {}", Count(r.largest_free_gpus, "GPU"), node);
    if (r.largest_free_gpus >= per_node) out += ", " + RenderHostShort(r, on_node);
    return out;
  }
  return fmt::format("the most free on one eligible node is {} on {}", free_cpu_memory, node);
}

}  // namespace

PendingReason Explain(const ClusterState& cluster, const model::JobSpec& spec) {
  const ClusterImpl& impl = internal::ClusterStateAccess::Get(cluster);
  const model::Requirements& req = spec.requirements;
  const StaticFilter filter = StaticFilter::From(req);
  const Demand demand = internal::PerWorker(spec);
  PendingReason reason;
  reason.workers = internal::GangSize(spec);
  reason.per_worker = req.per_worker;
  reason.gpu_models = req.gpu_models;
  reason.gpu_memory_bytes = req.gpu_memory_bytes;
  reason.same_node = req.same_node;
  if (demand.mode == GpuMode::kTimeslice) reason.gpu_share_millis = demand.share_millis;
  if (demand.mode == GpuMode::kMig) reason.mig_profile = req.mig_profile;
  reason.topology_level = req.topology_level;
  if (impl.nodes.empty()) {
    reason.code = PendingReason::Code::kNoNodes;
    return reason;
  }
  const std::int64_t on_one_node = req.same_node ? reason.workers : 1;
  const NodeNeed need{on_one_node, demand.gpus * on_one_node, demand.cpu * on_one_node,
                      demand.memory * on_one_node};

  std::map<std::string, int> excluded;
  std::map<std::string, std::int64_t> domains;  // topology: free capacity by label value
  std::int64_t fitting = 0;
  int best = -1;  // largest_free_node's position
  int best_gpus = 0;
  std::pair<std::int64_t, std::int64_t> best_share{-1, -1};  // shares: (free, free memory)
  for (int pos = 0; pos < static_cast<int>(impl.nodes.size()); ++pos) {
    std::string cause = ExclusionCause(impl, pos, filter, demand, need, req);
    if (!cause.empty()) ++excluded[cause];
    // A node that is merely too small still tells the user the most they can get now.
    const bool too_small =
        cause == "GPU count" || cause == "CPU capacity" || cause == "memory capacity";
    if (!cause.empty() && !too_small) continue;
    bool better;
    if (filter.shares()) {
      // The most free on one matching GPU (MIG: instances on the node).
      std::pair<std::int64_t, std::int64_t> share{0, 0};
      for (std::size_t i = 0; i < impl.nodes[pos].gpus.size(); ++i) {
        if (!impl.GpuEligible(pos, i, filter)) continue;
        if (filter.mode == GpuMode::kMig) {
          share.first += impl.FreeMigInstances(pos, i, demand.mig_profile_lower);
        } else {
          share = std::max(share, std::make_pair(std::int64_t{impl.FreeShareMillis(pos, i)},
                                                 impl.FreeShareMemory(pos, i)));
        }
      }
      better = share > best_share ||
               (share == best_share && impl.nodes[pos].name < impl.nodes[best].name);
      if (better) best_share = share;
    } else {
      const int free_gpus = impl.MatchingFreeGpus(pos, filter, nullptr);
      if (filter.needs_gpus) reason.free_gpus += free_gpus;
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
      if (better) best_gpus = free_gpus;
    }
    if (better) best = pos;
    if (too_small) continue;
    ++reason.eligible_nodes;
    if (!req.topology_level.empty() && !req.same_node) {
      const int capacity = internal::Capacity(impl, pos, filter, nullptr, demand, INT_MAX);
      if (capacity > 0) domains[impl.nodes[pos].labels.at(req.topology_level)] += capacity;
      continue;
    }
    const int capacity = internal::Capacity(impl, pos, filter, nullptr, demand, reason.workers);
    fitting = req.same_node ? std::max<std::int64_t>(fitting, capacity)
                            : std::min<std::int64_t>(fitting + capacity, reason.workers);
  }
  if (!domains.empty()) {
    auto largest = domains.begin();
    for (auto it = domains.begin(); it != domains.end(); ++it) {
      if (it->second > largest->second) largest = it;
    }
    reason.largest_domain = largest->first;
    reason.largest_domain_workers =
        static_cast<int>(std::min<std::int64_t>(largest->second, reason.workers));
    fitting = reason.largest_domain_workers;
  }
  reason.fitting_workers = static_cast<int>(fitting);
  if (best >= 0) {
    reason.largest_free_gpus = best_gpus;
    reason.largest_free_node = impl.nodes[best].name;
    reason.largest_free_cpu_millis = impl.FreeCpu(best);
    reason.largest_free_memory_bytes = impl.FreeMemory(best);
    if (filter.shares()) {
      reason.largest_free_share = best_share.first;
      if (filter.mode == GpuMode::kTimeslice) {
        reason.largest_free_share_memory_bytes = best_share.second;
      }
    }
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
