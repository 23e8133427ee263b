#pragma once

// Internals of ClusterState shared by cluster_state.cc, the placement files, scheduler.cc and
// pending_reason.cc. Not part of the scheduler's API: only files in drover/sched include this
// header.
//
// Node bookkeeping: nodes live in a vector (the public nodes() view) with a parallel NodeState
// holding what is allocated; free = capacity - allocated. A node's position is stable until
// RemoveNode, which renumbers positions and therefore drops every index.
//
// GPUs come in three modes (model::GpuSharing). Whole-GPU allocations are a list of used GPU
// indices; an exclusive GPU and an idle timeslice GPU (no share in use) may be given whole
// (NodeState::free_gpus counts both); a timeslice GPU given whole serves no share until it is
// released. Shares are recorded per GPU index as used milli-shares and share memory
// (timeslice) or used instances per profile (MIG). Nodes that have a timeslice or MIG GPU are
// listed in Impl::sharing_positions, so that share requests scan only them.
//
// Indexes: for each StaticFilter of a whole-GPU or CPU-only request (the part of a job's
// requirements that never depends on what is free: selector, tolerations, GPU model and memory)
// an Index holds the eligible nodes ordered by NodeKey. The best fit for a demand (G GPUs,
// C CPU, M memory) is then the first key at or after lower_bound(tier, G, C, M) that really
// fits (see BestFitIndexed in gang_planner.cc); Allocate, Release and UpsertNode of a known node
// move a node's key in every index it belongs to. A node that joins drops every index, as
// RemoveNode does (keys order ties by name rank, which a new name shifts): nodes join rarely,
// and the next cycle builds each index it needs by one scan. Share requests have no index (they
// scan sharing_positions).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "drover/model/job_spec.h"
#include "drover/model/node.h"
#include "drover/model/policy.h"
#include "drover/sched/cluster_state.h"
#include "drover/sched/fragmentation.h"
#include "drover/sched/maintenance.h"
#include "drover/sched/sorted_blocks.h"

namespace drover::sched::internal {

// ASCII lower case, for GPU model and MIG profile comparison.
std::string Lower(std::string_view text);

// Milli-shares of one timeslice GPU.
inline constexpr int kShareMillisPerGpu = 1000;

// What kind of GPU a request takes. Decided from model::Requirements in this order:
// per_worker.gpus > 0 -> kWhole; else gpu_share_millis > 0 -> kTimeslice; else a non-empty
// mig_profile -> kMig; else kNone (CPU only).
enum class GpuMode { kNone, kWhole, kTimeslice, kMig };
GpuMode ModeOf(const model::Requirements& requirements);

// The static (capacity-independent) part of a job's requirements.
struct StaticFilter {
  GpuMode mode = GpuMode::kNone;
  bool needs_gpus = false;                    // mode == kWhole
  std::vector<std::string> gpu_models_lower;  // sorted, unique; empty = any (GPU modes only)
  std::int64_t gpu_memory_bytes = 0;          // minimum memory_bytes of the GPU (GPU modes only)
  std::string mig_profile_lower;              // kMig
  std::map<std::string, std::string> node_selector;
  std::vector<model::Toleration> tolerations;
  std::string key;  // canonical encoding of all of the above; equal filters have equal keys

  static StaticFilter From(const model::Requirements& requirements);
  bool shares() const { return mode == GpuMode::kTimeslice || mode == GpuMode::kMig; }
  // True if a GPU of this (lower-cased) model and memory may serve the job (mode aside).
  bool GpuMatches(const std::string& model_lower, std::int64_t memory_bytes) const;
};

// Order of nodes in an index: best fit first, ties by node name. `tier` is 0 except for CPU-only
// filters, where nodes that have GPUs get tier 1 so that GPU-less nodes are tried first.
// `name_rank` is the node's name's place among the names of all nodes (Impl::name_rank): the
// name order without a string in the key, so that moving a key copies and compares integers
// only. `position` never decides the order (ranks are unique); it locates the node. A search
// bound uses kLowestRank to come before every node of its capacity.
struct NodeKey {
  static constexpr int kLowestRank = -1;

  int tier = 0;
  int free_gpus = 0;
  std::int64_t free_cpu = 0;
  std::int64_t free_memory = 0;
  int name_rank = 0;
  int position = 0;

  friend bool operator==(const NodeKey&, const NodeKey&) = default;
  // Written out (rather than a defaulted <=>) so that it inlines into the set operations of the
  // hot path.
  friend bool operator<(const NodeKey& a, const NodeKey& b) {
    if (a.tier != b.tier) return a.tier < b.tier;
    if (a.free_gpus != b.free_gpus) return a.free_gpus < b.free_gpus;
    if (a.free_cpu != b.free_cpu) return a.free_cpu < b.free_cpu;
    if (a.free_memory != b.free_memory) return a.free_memory < b.free_memory;
    if (a.name_rank != b.name_rank) return a.name_rank < b.name_rank;
    return a.position < b.position;
  }
};

// What shares of one GPU are allocated (by GPU index).
struct ShareUse {
  int index = 0;
  int millis = 0;           // timeslice: milli-shares used
  std::int64_t memory = 0;  // timeslice: GPU memory set aside for shares
  // MIG: instances used per profile (lower-case), sorted by profile.
  std::vector<std::pair<std::string, int>> mig;

  bool empty() const { return millis == 0 && memory == 0 && mig.empty(); }
  int MigUsed(std::string_view profile_lower) const;
};

// What is allocated on one node.
struct NodeState {
  std::int64_t used_cpu = 0;
  std::int64_t used_memory = 0;
  // Whole GPUs allocated, ascending; may name GPUs an upsert removed (kept until released).
  std::vector<int> used_gpus;
  // Shares allocated, sorted by GPU index; only GPUs with some share use. May name GPUs an
  // upsert removed or switched to another mode (kept until released).
  std::vector<ShareUse> shares;
  // Parallel to Node::gpus: the lower-cased model of each GPU.
  std::vector<std::string> gpu_models_lower;
  // GPUs that may be given whole now: exclusive or timeslice, neither in used_gpus nor in
  // shares.
  int free_gpus = 0;
  // GPUs that may ever be given whole (exclusive and timeslice), free or not.
  int whole_capable_gpus = 0;
  // The node has a MIG GPU (so the whole-GPU path need not read Gpu::sharing otherwise).
  bool mig_gpus = false;
  // Every GPU of the node is exclusive, of one model (one_gpu_model, lower-case) and one
  // memory size; true for a node without GPUs (one_gpu_model empty). Fragmentation scoring
  // then sees the node through its free GPUs and CPU alone (node_scoring.cc). Set by
  // UpsertNode.
  bool one_gpu_kind = true;
  std::string one_gpu_model;
  // Whole-GPU workers on the node by their GPU count (gpu-clustering scoring reads it).
  std::map<int, int> whole_workers;
  // Changes on every change of what is allocated or of the node; unique within the
  // ClusterState (Impl::next_version), so callers may cache per-node results by it.
  std::uint64_t version = 0;

  // Inline and a linear scan: called per GPU in the placement loops, over a list that holds
  // at most the node's GPUs (sorted, so the scan stops at the first index not below `index`).
  bool GpuUsed(int index) const {
    for (int used : used_gpus) {
      if (used >= index) return used == index;
    }
    return false;
  }
  const ShareUse* FindShare(int index) const;
  ShareUse& ShareOf(int index);  // inserts an empty entry if missing
};

// Eligible nodes of one StaticFilter, ordered by NodeKey.
// The topology domains of one label (`level`) among an index's member nodes, with each
// member's room now in workers of one per-worker demand (Capacity), and per domain the sum and
// the largest of its members' rooms: what a topology-constrained gang chooses its domain by
// (the gang planner's ChooseDomain), kept instead of rebuilt per gang. A member's room is
// recomputed only when its NodeState::version differs from the one it was computed at, so a
// lookup costs one version compare per member plus the work for nodes that changed.
struct DomainTable {
  std::string level;
  int gpus = 0;  // the demand per worker the rooms are counted in
  std::int64_t cpu = 0;
  std::int64_t memory = 0;
  std::vector<int> domain_of;             // by node position: domain id; -1: none
  std::vector<std::string> values;        // by domain id: the label value, ascending
  std::vector<std::vector<int>> members;  // by domain id: node positions, ascending
  std::vector<int> room;                  // by node position
  std::vector<std::uint64_t> seen;        // by node position: the version `room` is of
  std::vector<std::int64_t> total;        // by domain id: sum of its members' room
  std::vector<int> largest;               // by domain id: the largest room of a member
  std::uint64_t last_used = 0;
  // Impl::next_version when the rooms were last brought up to date: while it is unchanged, no
  // node changed since, and a lookup skips the per-member version compares.
  std::uint64_t synced_version = 0;
};

struct Index {
  StaticFilter filter;
  std::vector<char> member;          // by node position
  std::vector<char> all_gpus_match;  // by position: every exclusive GPU passes the filter
  SortedBlocks<NodeKey> keys;
  std::uint64_t last_used = 0;
  // Caches for the gang planner, at most kMaxDomainTables (least recently used replaced);
  // dropped whenever a node's description changes (Reindex). Mutable: a cache of a const
  // index, which only the single thread using the ClusterState touches.
  static constexpr std::size_t kMaxDomainTables = 8;
  mutable std::vector<DomainTable> domains;
  mutable std::uint64_t domain_tick = 0;
  // Members that are not NodeState::one_gpu_kind, and the one_gpu_kind members that have GPUs
  // counted by model: with no mixed member and one model (or a workload mix that accepts any
  // model), fragmentation scoring needs one node per distinct NodeKey capacity.
  int mixed_members = 0;
  std::map<std::string, int> member_models;
};

// Shares one worker takes on one GPU (Allocate, Release, Commit).
struct ShareAmount {
  GpuMode mode = GpuMode::kTimeslice;  // kTimeslice or kMig
  int millis = 0;                      // kTimeslice
  std::int64_t memory = 0;             // kTimeslice
  std::string mig_profile_lower;       // kMig

  static ShareAmount From(const model::Requirements& requirements);
};

}  // namespace drover::sched::internal

namespace drover::sched {

struct ClusterState::Impl {
  std::vector<model::Node> nodes;
  std::vector<internal::NodeState> states;  // parallel to nodes
  std::unordered_map<std::string, int> position_by_name;
  // By node position: the place of the node's name in the ascending order of all names
  // (NodeKey::name_rank). Valid while name_ranks_valid; a new node or a removal makes it stale
  // and drops every index (their keys hold ranks), and GetOrBuildIndex ranks again (RankNames)
  // before it builds one. So a key is only made while the ranks are valid.
  std::vector<int> name_rank;
  bool name_ranks_valid = false;
  // Positions of nodes with at least one timeslice or MIG GPU, ascending.
  std::vector<int> sharing_positions;
  std::vector<std::unique_ptr<internal::Index>> indexes;
  std::unordered_map<std::string, internal::Index*> index_by_filter;
  std::uint64_t tick = 0;  // advances on every index lookup; drives least-recently-used eviction
  std::uint64_t next_version = 0;  // the last NodeState::version handed out
  // ClusterState::Capacity(), computed on first use after a node change.
  mutable std::optional<model::ResourceAmounts> capacity;
  // What fragmentation scoring remembers of these nodes, per workload mix (FragmentationInputs
  // takes it when placement is lent no cache of its own). Versions make its entries valid
  // across cycles: an entry is used only while its node stays at the version it was taken at.
  mutable FragmentationCaches fragmentation_caches;
  // Advances whenever an index is destroyed, so that callers may cache Index pointers.
  std::uint64_t index_generation = 0;

  // Position of a node, or -1.
  int Find(const std::string& name) const;
  // Position of `worker`'s node, or -1: its position_hint when the node there has its name, else
  // by name (Find).
  int Find(const WorkerAssignment& worker) const;
  // By node position: 1 for each of `names` that is a node here, 0 elsewhere (a
  // PlanOptions::excluded mask).
  std::vector<char> MaskOf(const std::vector<NodeId>& names) const;

  std::int64_t FreeCpu(int pos) const { return nodes[pos].cpu_millis - states[pos].used_cpu; }
  std::int64_t FreeMemory(int pos) const {
    return nodes[pos].memory_bytes - states[pos].used_memory;
  }
  internal::NodeKey KeyOf(int pos, const internal::StaticFilter& filter) const;

  // GPU `i` (a position in nodes[pos].gpus) may be given whole now: exclusive or timeslice,
  // and wholly free.
  bool WholeFree(int pos, std::size_t i) const {
    const model::Gpu& gpu = nodes[pos].gpus[i];
    const internal::NodeState& state = states[pos];
    if (state.GpuUsed(gpu.index)) return false;
    if (state.mig_gpus && gpu.sharing == model::GpuSharing::kMig) return false;
    return state.shares.empty() || state.FindShare(gpu.index) == nullptr;
  }
  // Free milli-shares of GPU `i` if it is a timeslice GPU not wholly allocated, else 0.
  int FreeShareMillis(int pos, std::size_t i) const;
  // Memory of timeslice GPU `i` not set aside for shares (its memory_bytes if none).
  std::int64_t FreeShareMemory(int pos, std::size_t i) const;
  // Free instances of `profile_lower` on GPU `i` if it is a MIG GPU, else 0.
  int FreeMigInstances(int pos, std::size_t i, std::string_view profile_lower) const;
  // Instances of `profile_lower` GPU `i` is cut into (0 unless it is a MIG GPU).
  int MigInstances(int pos, std::size_t i, std::string_view profile_lower) const;

  // Selector and taints pass, and for GPU jobs at least one GPU in the request's mode passes the
  // GPU filters (MIG: and offers the profile).
  bool StaticEligible(int pos, const internal::StaticFilter& filter) const;
  // GPU `i` of node `pos` is in the filter's mode and passes its GPU filters (static).
  bool GpuEligible(int pos, std::size_t i, const internal::StaticFilter& filter) const;
  bool AllGpusMatch(int pos, const internal::StaticFilter& filter) const;
  // Free exclusive GPUs of the node that pass the filter. `index` (may be null) speeds up the
  // common case.
  int MatchingFreeGpus(int pos, const internal::StaticFilter& filter,
                       const internal::Index* index) const;

  // The index of `filter` if one exists (does not touch recency).
  const internal::Index* FindIndex(const internal::StaticFilter& filter) const;
  // The index of `filter`, built by one scan of the nodes if missing. Share filters get one too,
  // but Plan does not use it (shares scan sharing_positions).
  internal::Index& GetOrBuildIndex(const internal::StaticFilter& filter);

  // Drops every index and the name ranks (positions or names changed); both are rebuilt on
  // demand (GetOrBuildIndex).
  void DropIndexes();
  // Recomputes name_rank from the nodes' names and marks it valid.
  void RankNames();

  // Brackets a change to a node's description: takes its keys out of the indexes, then puts the
  // new ones back after re-evaluating membership.
  void Unindex(int pos);
  void Reindex(int pos);
  // Adds node `pos` (a member of `index`) to Index::mixed_members / member_models, `delta` +1,
  // or takes it out, -1.
  void CountMember(internal::Index& index, int pos, int delta) const;

  // Marks cpu, memory and the whole GPUs `gpus` (ascending, each free and existing) of node
  // `pos` as used, moving its keys in place (no allocation). The caller has checked that
  // everything fits.
  void Use(int pos, std::int64_t cpu, std::int64_t memory, const std::vector<int>& gpus);
  // The same for the whole GPUs of `n` workers (their lists disjoint, free and existing).
  void Use(int pos, std::int64_t cpu, std::int64_t memory, const WorkerAssignment* workers, int n);
  // The same for shares: each entry of `gpus` (a GPU index, repeated once per worker) takes
  // `share` of that GPU.
  void UseShares(int pos, std::int64_t cpu, std::int64_t memory, const std::vector<int>& gpus,
                 const internal::ShareAmount& share);
  // The reverse of Use, forgiving: nothing goes below zero, unknown entries are ignored.
  void Unuse(int pos, std::int64_t cpu, std::int64_t memory, const std::vector<int>& gpus,
             const internal::ShareAmount* share = nullptr);
  // Moves the node's keys in every index after `change` (which alters only free capacity).
  template <typename Change>
  void UpdateFree(int pos, Change&& change);

  void RecountFreeGpus(int pos);
  // Recomputes sharing_positions from the nodes.
  void RebuildSharingPositions();
};

template <typename Change>
void ClusterState::Impl::UpdateFree(int pos, Change&& change) {
  // The node's key leaves each index it is a member of before the change and comes back, with
  // what is free after it, once the change is made.
  internal::Index* owners[ClusterState::kMaxIndexes];
  std::size_t moved = 0;
  for (const auto& index : indexes) {
    if (pos < static_cast<int>(index->member.size()) && index->member[pos]) {
      owners[moved++] = index.get();
      index->keys.erase(KeyOf(pos, index->filter));
    }
  }
  change();
  for (std::size_t i = 0; i < moved; ++i) owners[i]->keys.insert(KeyOf(pos, owners[i]->filter));
}

namespace internal {

// The one friend of ClusterState: gives this folder's files its Impl.
struct ClusterStateAccess {
  using Impl = ClusterState::Impl;
  static Impl& Get(ClusterState& cluster) { return *cluster.impl_; }
  static const Impl& Get(const ClusterState& cluster) { return *cluster.impl_; }
};

using ClusterImpl = ClusterStateAccess::Impl;

// A PlanOptions::excluded mask (by node position) that adds to `base` (null: none) every node
// of `impl` with a window in `windows` that a job started at `start` with `limit` would run
// into (RunsInto). nullopt when no such node is in `impl` (then `base` is the mask as it is).
// Defined in maintenance.cc.
std::optional<std::vector<char>> WindowMask(const ClusterImpl& impl,
                                            std::span<const NodeWindow> windows, TimeMs start,
                                            std::optional<DurationMs> limit,
                                            const std::vector<char>* base);

}  // namespace internal
}  // namespace drover::sched
