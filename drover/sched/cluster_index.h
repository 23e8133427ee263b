#pragma once

// Internals of ClusterState shared by cluster_state.cc, scheduler.cc and pending_reason.cc. Not
// part of the scheduler's API: only files in drover/sched include this header.
//
// Node bookkeeping: nodes live in a vector (the public nodes() view) with a parallel NodeState
// holding what is allocated; free = capacity - allocated. A node's position is stable until
// RemoveNode, which renumbers positions and therefore drops every index.
//
// Indexes: for each StaticFilter (the part of a job's requirements that never depends on what is
// free: selector, tolerations, GPU model and memory) RunCycle asks for, an Index holds the
// eligible nodes ordered by NodeKey. The best fit for a demand (G GPUs, C CPU, M memory) is then
// the first key at or after lower_bound(tier, G, C, M) that really fits (see BestFit in
// scheduler.cc); Allocate, Release and UpsertNode move a node's key in every index it belongs to.

#include <array>
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "drover/model/job_spec.h"
#include "drover/model/node.h"
#include "drover/sched/scheduler.h"

namespace drover::sched::internal {

// ASCII lower case, for GPU model comparison.
std::string Lower(std::string_view text);

// The static (capacity-independent) part of a job's requirements.
struct StaticFilter {
  bool needs_gpus = false;                    // per_worker.gpus > 0; else GPU filters are ignored
  std::vector<std::string> gpu_models_lower;  // sorted, unique; empty = any
  std::int64_t gpu_memory_bytes = 0;
  std::map<std::string, std::string> node_selector;
  std::vector<model::Toleration> tolerations;
  std::string key;  // canonical encoding of all of the above; equal filters have equal keys

  static StaticFilter From(const model::Requirements& requirements);
  // True if a GPU of this (lower-cased) model and memory may serve the job.
  bool GpuMatches(const std::string& model_lower, std::int64_t memory_bytes) const;
};

// Order of nodes in an index: best fit first. `tier` is 0 except for CPU-only filters, where
// nodes that have GPUs get tier 1 so that GPU-less nodes are tried first. `position` never
// decides the order (names are unique); it locates the node.
struct NodeKey {
  int tier = 0;
  int free_gpus = 0;
  std::int64_t free_cpu = 0;
  std::int64_t free_memory = 0;
  std::string name;
  int position = 0;

  friend auto operator<=>(const NodeKey&, const NodeKey&) = default;
};

// What is allocated on one node.
struct NodeState {
  std::int64_t used_cpu = 0;
  std::int64_t used_memory = 0;
  // Allocated GPU indices, ascending; may name GPUs an upsert removed (kept until released).
  std::vector<int> used_gpus;
  // Parallel to Node::gpus: the lower-cased model of each GPU.
  std::vector<std::string> gpu_models_lower;
  // Node::gpus that are not in used_gpus.
  int free_gpus = 0;

  bool GpuUsed(int index) const;
};

// Eligible nodes of one StaticFilter, ordered by NodeKey.
struct Index {
  StaticFilter filter;
  std::vector<char> member;          // by node position
  std::vector<char> all_gpus_match;  // by position: every GPU of the node passes the filter
  std::set<NodeKey> keys;
  std::uint64_t last_used = 0;
};

}  // namespace drover::sched::internal

namespace drover::sched {

struct ClusterState::Impl {
  std::vector<model::Node> nodes;
  std::vector<internal::NodeState> states;  // parallel to nodes
  std::unordered_map<std::string, int> position_by_name;
  std::vector<std::unique_ptr<internal::Index>> indexes;
  std::unordered_map<std::string, internal::Index*> index_by_filter;
  std::uint64_t tick = 0;  // advances on every index lookup; drives least-recently-used eviction
  // Advances whenever an index is destroyed, so that callers may cache Index pointers.
  std::uint64_t index_generation = 0;

  // Position of a node, or -1.
  int Find(const std::string& name) const;

  std::int64_t FreeCpu(int pos) const { return nodes[pos].cpu_millis - states[pos].used_cpu; }
  std::int64_t FreeMemory(int pos) const {
    return nodes[pos].memory_bytes - states[pos].used_memory;
  }
  internal::NodeKey KeyOf(int pos, const internal::StaticFilter& filter) const;

  // Selector and taints pass, and for GPU jobs at least one GPU passes the GPU filters.
  bool StaticEligible(int pos, const internal::StaticFilter& filter) const;
  bool AllGpusMatch(int pos, const internal::StaticFilter& filter) const;
  // Free GPUs of the node that pass the filter. `index` (may be null) speeds up the common case.
  int MatchingFreeGpus(int pos, const internal::StaticFilter& filter,
                       const internal::Index* index) const;

  // The index of `filter` if one exists (does not touch recency).
  const internal::Index* FindIndex(const internal::StaticFilter& filter) const;
  // The index of `filter`, built by one scan of the nodes if missing.
  internal::Index& GetOrBuildIndex(const internal::StaticFilter& filter);

  // Brackets a change to a node's description: takes its keys out of the indexes, then puts the
  // new ones back after re-evaluating membership.
  void Unindex(int pos);
  void Reindex(int pos);

  // Marks cpu, memory and `gpus` (ascending, each free and existing: the caller has checked) of
  // node `pos` as used, moving its keys in place (no allocation).
  void Use(int pos, std::int64_t cpu, std::int64_t memory, const std::vector<int>& gpus);
  // Moves the node's keys in every index after `change` (which alters only free capacity).
  template <typename Change>
  void UpdateFree(int pos, Change&& change);

  void RecountFreeGpus(int pos);
};

template <typename Change>
void ClusterState::Impl::UpdateFree(int pos, Change&& change) {
  // Node handles keep the set nodes: a key moves without freeing and allocating.
  std::array<std::set<internal::NodeKey>::node_type, ClusterState::kMaxIndexes> handles;
  std::array<internal::Index*, ClusterState::kMaxIndexes> owners{};
  std::size_t moved = 0;
  for (const auto& index : indexes) {
    if (pos < static_cast<int>(index->member.size()) && index->member[pos]) {
      owners[moved] = index.get();
      handles[moved++] = index->keys.extract(KeyOf(pos, index->filter));
    }
  }
  change();
  for (std::size_t i = 0; i < moved; ++i) {
    handles[i].value() = KeyOf(pos, owners[i]->filter);
    owners[i]->keys.insert(std::move(handles[i]));
  }
}

namespace internal {

// The one friend of ClusterState: gives this folder's files its Impl.
struct ClusterStateAccess {
  using Impl = ClusterState::Impl;
  static Impl& Get(ClusterState& cluster) { return *cluster.impl_; }
  static const Impl& Get(const ClusterState& cluster) { return *cluster.impl_; }
};

using ClusterImpl = ClusterStateAccess::Impl;

}  // namespace internal
}  // namespace drover::sched
