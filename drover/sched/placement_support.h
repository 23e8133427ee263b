#pragma once

// What the gang planner (gang_planner.cc) and the node scorer (node_scoring.cc) share: the
// walk over the nodes that may hold a worker, the choice of whole GPUs on a node, label
// scores, and fragmentation signatures and inputs. Internal to drover/sched.

#include <climits>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "drover/model/job_spec.h"
#include "drover/sched/cluster_index.h"
#include "drover/sched/fragmentation.h"
#include "drover/sched/placement.h"

namespace drover::sched::internal {

// `value` clamped to [0, INT_MAX].
int ClampToInt(std::int64_t value);

// FGD deltas closer than this are ties (they are sums of products of weights and integers).
inline constexpr double kDeltaEpsilon = 1e-6;

// The signature (FragmentationSignature) of node `pos` after `cpu` more millicores and, per
// GPU position, taken[i] more milli-GPUs (taken may be shorter than the GPU list).
void SignatureAfter(const ClusterImpl& impl, int pos, std::int64_t cpu,
                    const std::vector<int>& taken, FragmentationCache& cache,
                    std::vector<std::int64_t>& out);

// Positions (in Node::gpus) of the first `count` GPUs of `pos` that may be given whole and pass
// `filter`; fewer if the node has fewer.
void WholeGpusInOrder(const ClusterImpl& impl, int pos, const StaticFilter& filter, int count,
                      std::vector<int>& out);

// GPU indices for one worker on node `pos`, ascending, avoiding `taken` (already chosen for
// earlier workers of this job). See "GPU choice" in scheduler.h.
std::vector<int> ChooseWholeGpus(const ClusterImpl& impl, const StaticFilter& filter, int pos,
                                 int count, const std::vector<int>& taken);

// Sum of the weights of `spec`'s preferred labels that node `pos` carries.
int LabelScore(const ClusterImpl& impl, int pos, const model::JobSpec& spec);

// Walks the keys of `index` that may hold a worker of `demand` now (tier by tier, free GPUs
// from demand.gpus up, skipping keys short of CPU or memory), calling visit(key) for those not
// excluded, in key order (names ascending within one capacity). visit returns true to skip the
// rest of the key's capacity (tier, free GPUs, free CPU, free memory): the walk goes on at the
// next capacity.
template <typename Visit>
void WalkIndex(const StaticFilter& filter, const Index& index, const Demand& demand,
               const std::vector<char>* excluded, Visit&& visit) {
  const SortedBlocks<NodeKey>& keys = index.keys;
  const int last_tier = filter.needs_gpus ? 0 : 1;
  for (int tier = 0; tier <= last_tier; ++tier) {
    auto it = keys.lower_bound(
        NodeKey{tier, demand.gpus, demand.cpu, demand.memory, NodeKey::kLowestRank, 0});
    while (it != keys.end() && it->tier == tier) {
      if (it->free_cpu < demand.cpu) {
        it = keys.lower_bound(
            NodeKey{tier, it->free_gpus, demand.cpu, demand.memory, NodeKey::kLowestRank, 0});
        continue;
      }
      const bool usable =
          it->free_memory >= demand.memory &&
          (excluded == nullptr || it->position >= static_cast<int>(excluded->size()) ||
           !(*excluded)[it->position]);
      const bool next_capacity = usable && visit(*it);
      if (next_capacity && it->free_memory < std::numeric_limits<std::int64_t>::max()) {
        // The next capacity: the first key past every name of this one.
        it = keys.lower_bound(NodeKey{tier, it->free_gpus, it->free_cpu, it->free_memory + 1,
                                      NodeKey::kLowestRank, 0});
      } else {
        ++it;
      }
    }
  }
}

// Calls visit(pos) for every node that may hold a worker of `demand` now and is not excluded:
// through the index when there is one (keys with room only), else by a scan of the eligible
// nodes (shares: of the nodes with sharing GPUs). With `check_static` false a scan leaves the
// static eligibility (StaticEligible) to the visitor.
template <typename Visit>
void ForEachEligible(const ClusterImpl& impl, const StaticFilter& filter, const Index* index,
                     const Demand& demand, const std::vector<char>* excluded, Visit&& visit,
                     bool check_static = true) {
  auto Excluded = [excluded](int pos) {
    return excluded != nullptr && pos < static_cast<int>(excluded->size()) && (*excluded)[pos];
  };
  if (filter.shares()) {
    for (int pos : impl.sharing_positions) {
      if (!Excluded(pos) && (!check_static || impl.StaticEligible(pos, filter))) visit(pos);
    }
    return;
  }
  if (index == nullptr) {
    for (int pos = 0; pos < static_cast<int>(impl.nodes.size()); ++pos) {
      if (!Excluded(pos) && (!check_static || impl.StaticEligible(pos, filter))) visit(pos);
    }
    return;
  }
  WalkIndex(filter, *index, demand, excluded, [&](const NodeKey& key) {
    visit(key.position);
    return false;
  });
}

// How FGD may group an index's nodes and score one node per group (the first in name order),
// getting the placement of scoring every node. It may when every member is one GPU kind
// (NodeState::one_gpu_kind, Index::mixed_members 0): a member's fragmentation, CPU term and
// fill are then functions of its free GPUs and CPU, and of its model only through the mix's
// model lists; the fit is the key's (all of a member's GPUs pass the filter). Groups: one per
// free capacity (kCapacity) when the members have one model or the mix names none, else per
// capacity and model (kCapacityAndModel). kNone (score every node): no index, label
// preferences, or an rng (ties must go to the name, the index's order within a capacity).
// Used by the node scorer (single workers) and the gang planner's whole-GPU steps (kCapacity
// only).
enum class Group { kNone, kCapacity, kCapacityAndModel };
inline Group FragmentationGrouping(const Index* index, const PlanOptions& options,
                                   const model::JobSpec& spec, const WorkloadMix& mix) {
  if (index == nullptr || options.rng != nullptr || !spec.preferences.node_labels.empty() ||
      index->mixed_members > 0) {
    return Group::kNone;
  }
  if (index->member_models.size() <= 1) return Group::kCapacity;
  return std::none_of(mix.shapes.begin(), mix.shapes.end(),
                      [](const Shape& shape) { return !shape.gpu_models_lower.empty(); })
             ? Group::kCapacity
             : Group::kCapacityAndModel;
}

// What fragmentation scoring reads: the mix (PlanOptions::mix, else the job's own shape) and
// the memo (PlanOptions::fragmentation_cache, else the cluster's own for that mix, kept from
// one plan and cycle to the next: ClusterState::Impl::fragmentation_caches).
class FragmentationInputs {
 public:
  void Init(const ClusterImpl& impl, const model::JobSpec& spec, const PlanOptions& options) {
    if (options.mix != nullptr) {
      mix_ = options.mix;
    } else {
      own_mix_ = MixOf({&spec});
      mix_ = &own_mix_;
    }
    cache_ = options.fragmentation_cache != nullptr ? options.fragmentation_cache
                                                    : &impl.fragmentation_caches.For(*mix_);
  }
  FragmentationCache& cache() const { return *cache_; }
  const WorkloadMix& mix() const { return *mix_; }
  // What the scoring minimizes for a node state (FragmentationCache::ScoringValue).
  double Value(const std::vector<std::int64_t>& signature) const {
    return cache_->ScoringValue(signature, *mix_);
  }

 private:
  WorkloadMix own_mix_;
  const WorkloadMix* mix_ = nullptr;
  FragmentationCache* cache_ = nullptr;
};

}  // namespace drover::sched::internal
