#pragma once

// GPU fragmentation as the FGD paper defines it (Weng et al., "Beware of Fragmentation:
// Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC'23), over
// Drover's GPU modes. The fragmentation scoring of placement (model::Scoring::kFragmentation)
// and the simulator's FGD experiment both read these functions.
//
// A node's free GPU amount is, per GPU that may be given whole or shared (exclusive and
// timeslice; MIG GPUs are preconfigured and left out), 1000 milli-GPUs for a wholly free GPU and
// the free milli-shares of a timeslice GPU. For one task shape m, the part of that amount m
// cannot use is:
//   - all of it when m asks for no GPU (a CPU task leaves every idle GPU idle), when no GPU of
//     the node is of a model m accepts, when the node has less free CPU than m asks, or when
//     fewer than m's GPU count of GPUs can host m (a whole GPU must be wholly free; a share
//     needs a timeslice GPU of m's models with at least m's milli-shares free);
//   - otherwise the free amount of every GPU that cannot host m (less free than m asks, of
//     another model, or of a mode m cannot use).
// F(node) = sum over shapes of weight(m) x that amount. Host memory is not part of it, as in
// the paper.
//
// Fragmentation scoring (model::Scoring::kFragmentation) minimizes the growth of F plus the
// node's CPU-stranded GPU amount: S(node) = W x max(0, free GPU amount - free CPU / rho), where
// rho is the mix's CPU per milli-GPU (sum of weight x CPU over sum of weight x GPU amount, over
// the shapes that ask for GPUs) and W those shapes' total weight. F sees a node's CPU only when
// one task no longer fits; S counts, for every GPU shape, the GPUs that the free CPU cannot feed
// at the workload's ratio, so that CPU-hungry tasks go where CPU is plentiful before a node's CPU
// runs out under idle GPUs. S is not part of F (the measure a simulation reports stays the
// paper's).

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "drover/common/ids.h"
#include "drover/model/job_spec.h"

namespace drover::sched {

class ClusterState;

// The workload fragmentation is measured against (FGD's "typical tasks"): request shapes and
// their weights (popularity; they need not sum to 1).
struct WorkloadMix {
  struct Shape {
    int gpus = 0;              // whole GPUs; 0 with gpu_share_millis: a share; both 0: CPU only
    int gpu_share_millis = 0;  // a time-sliced share of one GPU (1..999)
    std::int64_t cpu = 0;      // millicores
    std::vector<std::string> gpu_models_lower;  // accepted models, sorted; empty = any
    double weight = 1.0;

    friend bool operator==(const Shape&, const Shape&) = default;
  };
  std::vector<Shape> shapes;
};

// One shape per distinct per-worker request of `specs` (weight = its share of all workers),
// most popular first (ties: fewer CPU, fewer GPUs, smaller share, models). MIG requests are
// left out.
WorkloadMix MixOf(const std::vector<const model::JobSpec*>& specs);

// The most popular shapes of `mix` (in its order) whose weights first reach `coverage` (0..1]
// of the total, renormalized to sum to 1: FGD keeps the shapes that cover 95% of the tasks.
WorkloadMix TypicalMix(const WorkloadMix& mix, double coverage);

class FragmentationCache;

// F of node `node` in its current state, in milli-GPUs; 0 for an unknown node. `cache` (bound
// to `mix`; may be null) remembers it by node state.
double NodeFragmentation(const ClusterState& cluster, const NodeId& node, const WorkloadMix& mix,
                         FragmentationCache* cache = nullptr);

// Memoized fragmentation for callers that place many jobs against one mix (the simulator, a
// scheduling cycle): node states that look alike to the definition above (free CPU and the
// free amount, mode and model of each GPU) share one evaluation; and, lent to placement
// (PlanOptions::fragmentation_cache), what each node offers each kind of request until the node
// changes. Not thread-safe. Bound to one mix and one ClusterState: Reset() when either changes.
// Bounded, for a server that runs for months: past kMostStates node states, kMostFits fits or
// kMostDemands kinds of request, what it remembers of them starts again empty (a memo's loss
// costs recomputation only).
class FragmentationCache {
 public:
  static constexpr std::size_t kMostStates = 1 << 16;  // memo entries, about 200 bytes each
  // Fits of every kind together, 40 bytes each (40 MiB): 100 kinds of request on 10,000 nodes,
  // 680 on the 1,523 nodes of the FGD paper's cluster (its traces have up to 460).
  static constexpr std::size_t kMostFits = 1 << 20;
  static constexpr std::size_t kMostDemands = 4096;  // kinds of request named (DemandId)
  void Reset() {
    memo_.clear();
    feed_ = Feed{};
    nodes_.clear();
    demand_ids_.clear();
    fits_.clear();
    fit_count_ = 0;
  }
  // Forgets what Reset() forgets, for the next mix, but keeps the storage of the fits and of the
  // node entries (a new cache allocates 40 bytes per node for each kind of request again, and
  // the system faults those pages in), and the model names (ModelId stays stable).
  void Recycle();
  // A small number standing for a lower-case GPU model name (stable for this cache's life).
  int ModelId(const std::string& model_lower);
  // One GPU of a node state: its model, whether it is a timeslice GPU (else exclusive) and its
  // free milli-GPUs (0..1000).
  static std::int64_t GpuCode(int model_id, bool timeslice, int free_millis) {
    return (std::int64_t{model_id} << 16) | (timeslice ? 1 << 12 : 0) | free_millis;
  }
  // F of the node state `signature` = {free CPU millicores, then the GpuCode of each GPU in
  // ascending order}; computed and remembered on a miss.
  double Get(const std::vector<std::int64_t>& signature, const WorkloadMix& mix);
  // What fragmentation scoring minimizes for the node state `signature`: F + S (see the file
  // comment).
  double ScoringValue(const std::vector<std::int64_t>& signature, const WorkloadMix& mix);
  std::size_t size() const { return memo_.size(); }

  // What placement's scoring (ScoredPlanner) remembers of what one node offers one kind of
  // request (DemandId): whether a worker fits, its score, the node's free milli-GPUs and the
  // share's GPU, valid while the node stays at NodeState::version `version` (0: never set).
  struct Fit {
    std::uint64_t version = 0;
    bool fits = false;
    double score = 0.0;
    std::int64_t gpu_left = 0;
    int gpu = -1;
  };
  // What placement remembers of the node at position `pos` of the one ClusterState this cache
  // is used with: its signature and ScoringValue at NodeState::version `version` (versions are
  // unique within a ClusterState, so a stale or renumbered entry never matches).
  struct NodeEntry {
    std::uint64_t version = 0;
    double value = 0.0;
    std::vector<std::int64_t> signature;
  };
  NodeEntry& Node(int pos) {
    if (pos >= static_cast<int>(nodes_.size())) nodes_.resize(pos + 1);
    return nodes_[pos];
  }
  // A small number standing for a kind of request (placement's key of everything a fit and a
  // score read of the request), valid until a call for a new kind finds kMostDemands kinds (then
  // every kind's fits are dropped and ids start again): take Fits() at once.
  int DemandId(const std::string& key);
  // The fits of kind `demand_id` by node position, `nodes` long at least. Growing them past
  // kMostFits in all first drops every kind's fits (the ids stay valid). The reference is valid
  // until the next call.
  std::vector<Fit>& Fits(int demand_id, std::size_t nodes);

  // Buffers for the node scorer that reads this cache (ScoredPlanner, one at a time): nothing
  // carries over from one use to the next, each overwrites them. Kept here, with the memo the
  // scorer reads at every placement, so that scoring a node allocates nothing once they have
  // grown (a million placements allocated five each).
  struct Scratch {
    std::string demand_key;
    std::vector<int> taken;
    std::vector<int> gpus;
    std::vector<std::int64_t> signature;
  };
  Scratch& scratch() { return scratch_; }

 private:
  double Compute(const std::vector<std::int64_t>& signature, const WorkloadMix& mix) const;
  bool Accepts(const WorkloadMix::Shape& shape, int model_id) const;

  std::vector<std::string> models_;
  std::unordered_map<std::string, int> model_ids_;
  struct VectorHash {
    std::size_t operator()(const std::vector<std::int64_t>& v) const;
  };
  std::unordered_map<std::vector<std::int64_t>, double, VectorHash> memo_;
  // The mix's rho and W (file comment), computed on first use.
  struct Feed {
    bool known = false;
    double cpu_per_milli_gpu = 0.0;  // 0: the GPU shapes ask for no CPU (nothing is stranded)
    double weight = 0.0;
  };
  Feed feed_;
  std::vector<NodeEntry> nodes_;
  std::unordered_map<std::string, int> demand_ids_;
  // By DemandId, then node position. Slots past demand_ids_.size() are left by Recycle(), reset,
  // for the next kinds named.
  std::vector<std::vector<Fit>> fits_;
  std::size_t fit_count_ = 0;  // the sizes of fits_ summed
  Scratch scratch_;
};

// The FragmentationCaches of one ClusterState (ClusterState::Impl::fragmentation_caches), one
// per workload mix that placement scored against lately. Under a steady stream of jobs each
// cycle's mix (the shapes of the jobs pending then) is mostly one seen before, so a cycle
// re-evaluates only the nodes that changed since, instead of every node it visits. Not
// thread-safe; not copied by ClusterState::Clone (a clone's node versions diverge from these).
class FragmentationCaches {
 public:
  // Mixes remembered at once; beyond, the least recently used one's cache is recycled for the
  // new mix (FragmentationCache::Recycle).
  static constexpr std::size_t kMostMixes = 8;
  // The cache bound to `mix`: the one kept for an equal mix, else an empty one.
  FragmentationCache& For(const WorkloadMix& mix);

 private:
  struct Entry {
    std::vector<WorkloadMix::Shape> shapes;  // the mix
    std::uint64_t used = 0;                  // tick_ at the last For() that returned it
    std::unique_ptr<FragmentationCache> cache;
  };
  std::vector<Entry> entries_;
  std::uint64_t tick_ = 0;
};

}  // namespace drover::sched
