// Plan and Commit: where the workers of one job go (placement.h; the algorithms are described in
// scheduler.h and docs/scheduling.md).

#include "drover/sched/placement.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace drover::sched::internal {
namespace {

int ClampToInt(std::int64_t value) {
  return static_cast<int>(std::clamp<std::int64_t>(value, 0, INT_MAX));
}

// The FragmentationCache code of GPU `i` of node `pos` with `taken` more milli-GPUs used (a
// whole GPU takes 1000), or -1 for a MIG GPU (not part of fragmentation).
std::int64_t GpuCodeAfter(const ClusterImpl& impl, int pos, std::size_t i, int taken,
                          FragmentationCache& cache) {
  const model::Gpu& gpu = impl.nodes[pos].gpus[i];
  if (gpu.sharing == model::GpuSharing::kMig) return -1;
  const bool timeslice = gpu.sharing == model::GpuSharing::kTimeslice;
  int free =
      impl.WholeFree(pos, i) ? kShareMillisPerGpu : (timeslice ? impl.FreeShareMillis(pos, i) : 0);
  free = std::clamp(free - taken, 0, kShareMillisPerGpu);
  return FragmentationCache::GpuCode(cache.ModelId(impl.states[pos].gpu_models_lower[i]), timeslice,
                                     free);
}

// The signature (FragmentationSignature) of node `pos` after `cpu` more millicores and, per
// GPU position, taken[i] more milli-GPUs (taken may be shorter than the GPU list).
void SignatureAfter(const ClusterImpl& impl, int pos, std::int64_t cpu,
                    const std::vector<int>& taken, FragmentationCache& cache,
                    std::vector<std::int64_t>& out) {
  out.clear();
  out.push_back(std::max<std::int64_t>(impl.FreeCpu(pos) - cpu, 0));
  const std::size_t n = impl.nodes[pos].gpus.size();
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t code = GpuCodeAfter(impl, pos, i, i < taken.size() ? taken[i] : 0, cache);
    if (code >= 0) out.push_back(code);
  }
  std::sort(out.begin() + 1, out.end());
}

// Positions (in Node::gpus) of the first `count` GPUs of `pos` that may be given whole and pass
// `filter`; fewer if the node has fewer.
void WholeGpusInOrder(const ClusterImpl& impl, int pos, const StaticFilter& filter, int count,
                      std::vector<int>& out) {
  out.clear();
  const model::Node& node = impl.nodes[pos];
  for (std::size_t i = 0; i < node.gpus.size() && static_cast<int>(out.size()) < count; ++i) {
    if (!impl.WholeFree(pos, i) ||
        !filter.GpuMatches(impl.states[pos].gpu_models_lower[i], node.gpus[i].memory_bytes)) {
      continue;
    }
    out.push_back(static_cast<int>(i));
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
  const std::set<NodeKey>& keys = index->keys;
  const int last_tier = filter.needs_gpus ? 0 : 1;
  for (int tier = 0; tier <= last_tier; ++tier) {
    auto it = keys.lower_bound(NodeKey{tier, demand.gpus, demand.cpu, demand.memory, {}, 0});
    while (it != keys.end() && it->tier == tier) {
      if (it->free_cpu < demand.cpu) {
        it = keys.lower_bound(
            NodeKey{tier, it->free_gpus, demand.cpu, demand.memory, std::string(), 0});
        continue;
      }
      if (it->free_memory >= demand.memory && !Excluded(it->position)) visit(it->position);
      ++it;
    }
  }
}

// GPU indices for one worker on node `pos`, ascending, avoiding `taken` (already chosen for
// earlier workers of this job). See "GPU choice" in scheduler.h.
std::vector<int> ChooseWholeGpus(const ClusterImpl& impl, const StaticFilter& filter, int pos,
                                 int count, const std::vector<int>& taken) {
  std::vector<int> chosen;
  if (count <= 0) return chosen;
  const model::Node& node = impl.nodes[pos];
  const NodeState& state = impl.states[pos];
  // Free matching GPUs as (group, index), sorted: each group is a run, indices ascending.
  std::vector<std::pair<const std::string*, int>> free;
  free.reserve(node.gpus.size());
  const bool mig = state.mig_gpus;
  const bool shares = !state.shares.empty();
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    const model::Gpu& gpu = node.gpus[i];
    // ClusterState::Impl::WholeFree, with the node's lookups hoisted.
    if (state.GpuUsed(gpu.index) || (mig && gpu.sharing == model::GpuSharing::kMig) ||
        (shares && state.FindShare(gpu.index) != nullptr) ||
        (!taken.empty() && std::find(taken.begin(), taken.end(), gpu.index) != taken.end())) {
      continue;
    }
    if (!filter.GpuMatches(state.gpu_models_lower[i], gpu.memory_bytes)) continue;
    free.emplace_back(&gpu.topology_group, gpu.index);
  }
  std::sort(free.begin(), free.end(), [](const auto& a, const auto& b) {
    if (*a.first != *b.first) return *a.first < *b.first;
    return a.second < b.second;
  });
  // The smallest run that holds `count` (ties: the lowest first index).
  std::size_t best_begin = 0;
  std::size_t best_size = 0;
  for (std::size_t begin = 0; begin < free.size();) {
    std::size_t end = begin + 1;
    while (end < free.size() && *free[end].first == *free[begin].first) ++end;
    const std::size_t size = end - begin;
    if (size >= static_cast<std::size_t>(count) &&
        (best_size == 0 || size < best_size ||
         (size == best_size && free[begin].second < free[best_begin].second))) {
      best_begin = begin;
      best_size = size;
    }
    begin = end;
  }
  if (best_size > 0) {
    for (int i = 0; i < count; ++i) chosen.push_back(free[best_begin + i].second);
    return chosen;
  }
  for (const auto& [group, index] : free) chosen.push_back(index);
  std::sort(chosen.begin(), chosen.end());
  chosen.resize(std::min<std::size_t>(chosen.size(), count));
  return chosen;
}

// Sum of the weights of `spec`'s preferred labels that node `pos` carries.
int LabelScore(const ClusterImpl& impl, int pos, const model::JobSpec& spec) {
  int score = 0;
  const auto& labels = impl.nodes[pos].labels;
  for (const model::LabelPreference& pref : spec.preferences.node_labels) {
    auto it = labels.find(pref.key);
    if (it != labels.end() && it->second == pref.value) score += pref.weight;
  }
  return score;
}

// What fragmentation scoring reads: the mix (PlanOptions::mix, else the job's own shape) and
// the memo (PlanOptions::fragmentation_cache, else one of its own).
class FragmentationInputs {
 public:
  void Init(const model::JobSpec& spec, const PlanOptions& options) {
    if (options.mix != nullptr) {
      mix_ = options.mix;
    } else {
      own_mix_ = MixOf({&spec});
      mix_ = &own_mix_;
    }
    cache_ = options.fragmentation_cache != nullptr ? options.fragmentation_cache : &own_cache_;
  }
  FragmentationCache& cache() const { return *cache_; }
  // What the scoring minimizes for a node state (FragmentationCache::ScoringValue).
  double Value(const std::vector<std::int64_t>& signature) const {
    return cache_->ScoringValue(signature, *mix_);
  }

 private:
  WorkloadMix own_mix_;
  const WorkloadMix* mix_ = nullptr;
  FragmentationCache own_cache_;
  FragmentationCache* cache_ = nullptr;
};

// FGD deltas closer than this are ties (they are sums of products of weights and integers).
constexpr double kDeltaEpsilon = 1e-6;

// Plans one job. See placement.h for the contract and scheduler.h for the algorithm.
class Planner {
 public:
  Planner(const ClusterImpl& impl, const StaticFilter& filter, const Index* index,
          const model::JobSpec& spec, const PlanOptions& options)
      : impl_(impl),
        filter_(filter),
        index_(filter.shares() ? nullptr : index),
        spec_(spec),
        options_(options),
        demand_(PerWorker(spec)),
        workers_(GangSize(spec)),
        same_node_(spec.requirements.same_node),
        labels_(!spec.preferences.node_labels.empty()),
        scoring_(options.scoring) {
    if (scoring_ != model::Scoring::kSpread && scoring_ != model::Scoring::kFragmentation) {
      scoring_ = model::Scoring::kBinpack;  // the node-scored baselines place gangs as binpack
    }
    if (scoring_ == model::Scoring::kFragmentation) {
      if (demand_.mode == GpuMode::kMig) {
        scoring_ = model::Scoring::kBinpack;  // MIG slices are preconfigured: nothing to score
      } else {
        fragmentation_.Init(spec, options);
      }
    }
  }

  std::optional<PlannedGang> Run() {
    const model::Requirements& req = spec_.requirements;
    const bool hard = !req.topology_level.empty();
    const std::string& level = hard ? req.topology_level : spec_.preferences.topology_level;
    if (!level.empty()) {
      std::vector<int> domain;
      if (ChooseDomain(level, domain)) return PlanOn(&domain);
      if (hard) return std::nullopt;
    }
    return PlanOn(nullptr);
  }

 private:
  // A candidate for the next placement step: a node (whole GPUs, CPU only) or a GPU of a node
  // (shares), with its free amounts before the step, net of earlier steps of this plan.
  struct Cand {
    int pos = -1;
    int label = 0;
    int tier = 0;
    int free_gpus = 0;  // free exclusive GPUs
    std::int64_t cpu = 0;
    std::int64_t memory = 0;
    double delta = 0.0;           // FGD: growth of the node's fragmentation
    int gpu = -1;                 // shares: position in Node::gpus
    std::int64_t gpu_free = 0;    // shares: free milli-shares or instances of that GPU
    std::int64_t gpu_memory = 0;  // timeslice: its free share memory
  };

  bool Excluded(int pos) const {
    const std::vector<char>* excluded = options_.excluded;
    return excluded != nullptr && pos < static_cast<int>(excluded->size()) && (*excluded)[pos];
  }

  int LabelScore(int pos) const { return labels_ ? internal::LabelScore(impl_, pos, spec_) : 0; }

  int Tier(int pos) const {
    return (!filter_.needs_gpus && !impl_.nodes[pos].gpus.empty()) ? 1 : 0;
  }

  // Workers this plan already put on node `pos`.
  int Planned(int pos) const {
    if (!planned_index_.empty()) {
      auto it = planned_index_.find(pos);
      return it == planned_index_.end() ? 0 : gang_.nodes[it->second].second;
    }
    for (const auto& [p, n] : gang_.nodes) {
      if (p == pos) return n;
    }
    return 0;
  }

  // ---- Comparisons: true if `a` is a better choice than `b`. ----

  static bool BinpackBefore(const Cand& a, const Cand& b, const ClusterImpl& impl) {
    if (a.tier != b.tier) return a.tier < b.tier;
    if (a.free_gpus != b.free_gpus) return a.free_gpus < b.free_gpus;
    if (a.cpu != b.cpu) return a.cpu < b.cpu;
    if (a.memory != b.memory) return a.memory < b.memory;
    return impl.nodes[a.pos].name.value() < impl.nodes[b.pos].name.value();
  }

  static bool SpreadBefore(const Cand& a, const Cand& b, const ClusterImpl& impl) {
    if (a.tier != b.tier) return a.tier < b.tier;
    if (a.free_gpus != b.free_gpus) return a.free_gpus > b.free_gpus;
    if (a.cpu != b.cpu) return a.cpu > b.cpu;
    if (a.memory != b.memory) return a.memory > b.memory;
    return impl.nodes[a.pos].name.value() < impl.nodes[b.pos].name.value();
  }

  // Shares: the fullest GPU that still fits first, then the fullest node.
  static bool ShareBinpackBefore(const Cand& a, const Cand& b, const ClusterImpl& impl) {
    if (a.gpu_free != b.gpu_free) return a.gpu_free < b.gpu_free;
    if (a.gpu_memory != b.gpu_memory) return a.gpu_memory < b.gpu_memory;
    if (a.cpu != b.cpu) return a.cpu < b.cpu;
    if (a.memory != b.memory) return a.memory < b.memory;
    if (a.pos != b.pos) return impl.nodes[a.pos].name.value() < impl.nodes[b.pos].name.value();
    return impl.nodes[a.pos].gpus[a.gpu].index < impl.nodes[b.pos].gpus[b.gpu].index;
  }

  static bool ShareSpreadBefore(const Cand& a, const Cand& b, const ClusterImpl& impl) {
    if (a.gpu_free != b.gpu_free) return a.gpu_free > b.gpu_free;
    if (a.gpu_memory != b.gpu_memory) return a.gpu_memory > b.gpu_memory;
    if (a.cpu != b.cpu) return a.cpu > b.cpu;
    if (a.memory != b.memory) return a.memory > b.memory;
    if (a.pos != b.pos) return impl.nodes[a.pos].name.value() < impl.nodes[b.pos].name.value();
    return impl.nodes[a.pos].gpus[a.gpu].index < impl.nodes[b.pos].gpus[b.gpu].index;
  }

  bool Better(const Cand& a, const Cand& b) const {
    if (b.pos < 0) return a.pos >= 0;
    if (a.pos < 0) return false;
    if (a.label != b.label) return a.label > b.label;
    const bool shares = filter_.shares();
    switch (scoring_) {
      case model::Scoring::kFragmentation:
        if (std::abs(a.delta - b.delta) > kDeltaEpsilon) return a.delta < b.delta;
        break;
      case model::Scoring::kSpread:
        return shares ? ShareSpreadBefore(a, b, impl_) : SpreadBefore(a, b, impl_);
      default:
        break;
    }
    return shares ? ShareBinpackBefore(a, b, impl_) : BinpackBefore(a, b, impl_);
  }

  void Count(int pos) {
    auto it = std::lower_bound(seen_.begin(), seen_.end(), pos);
    if (it == seen_.end() || *it != pos) seen_.insert(it, pos);
  }

  // ---- Topology ----

  // Calls visit(pos) for every node that may hold a worker now (before this plan).
  template <typename Visit>
  void ForEachCandidate(Visit&& visit) const {
    ForEachEligible(impl_, filter_, index_, demand_, options_.excluded, visit);
  }

  // The domain of `level` that fits the gang with the least spare capacity (in workers; ties:
  // the lower label value): its nodes that hold a worker now, in `out`. False if none fits.
  bool ChooseDomain(const std::string& level, std::vector<int>& out) const {
    struct Domain {
      std::int64_t capacity = 0;
      int largest_node = 0;
      std::vector<int> positions;
    };
    std::map<std::string, Domain> domains;
    ForEachCandidate([&](int pos) {
      const auto& labels = impl_.nodes[pos].labels;
      auto label = labels.find(level);
      if (label == labels.end()) return;
      const int capacity = Capacity(impl_, pos, filter_, index_, demand_, INT_MAX);
      if (capacity <= 0) return;
      Domain& domain = domains[label->second];
      domain.capacity += capacity;
      domain.largest_node = std::max(domain.largest_node, capacity);
      domain.positions.push_back(pos);
    });
    const Domain* best = nullptr;
    for (const auto& [value, domain] : domains) {
      const bool fits = same_node_ ? domain.largest_node >= workers_ : domain.capacity >= workers_;
      if (fits && (best == nullptr || domain.capacity < best->capacity)) best = &domain;
    }
    if (best == nullptr) return false;
    out = best->positions;
    return true;
  }

  // ---- Whole GPUs and CPU only ----

  // `pos` as a candidate for k more workers; false if they do not fit.
  bool MakeWhole(int pos, int k, Cand& out) const {
    const int planned = Planned(pos);
    const std::int64_t g = demand_.gpus;
    Cand cand;
    cand.pos = pos;
    cand.tier = Tier(pos);
    cand.free_gpus = impl_.states[pos].free_gpus - ClampToInt(planned * g);
    cand.cpu = impl_.FreeCpu(pos) - planned * demand_.cpu;
    cand.memory = impl_.FreeMemory(pos) - planned * demand_.memory;
    if (cand.cpu < k * demand_.cpu || cand.memory < k * demand_.memory) return false;
    if (g > 0) {
      if (cand.free_gpus < k * g) return false;
      if (impl_.MatchingFreeGpus(pos, filter_, index_) - planned * g < k * g) return false;
    }
    cand.label = LabelScore(pos);
    out = cand;
    return true;
  }

  // How many more workers fit on candidate `c` (at most `limit`).
  int WholeCapacity(const Cand& c, int limit) const {
    std::int64_t n = limit;
    if (demand_.gpus > 0) {
      const std::int64_t matching = impl_.MatchingFreeGpus(c.pos, filter_, index_) -
                                    std::int64_t{Planned(c.pos)} * demand_.gpus;
      n = std::min(n, matching / demand_.gpus);
    }
    if (demand_.cpu > 0) n = std::min(n, c.cpu / demand_.cpu);
    if (demand_.memory > 0) n = std::min(n, c.memory / demand_.memory);
    return ClampToInt(n);
  }

  // Fragmentation of node `pos` with `workers` whole-GPU workers of this demand on it beyond
  // what it holds now (their GPUs the first free matching ones).
  double WholeFragmentation(int pos, int workers) {
    WholeGpusInOrder(impl_, pos, filter_, ClampToInt(std::int64_t{workers} * demand_.gpus),
                     gpu_scratch_);
    taken_.assign(impl_.nodes[pos].gpus.size(), 0);
    for (int i : gpu_scratch_) taken_[i] = kShareMillisPerGpu;
    SignatureAfter(impl_, pos, workers * demand_.cpu, taken_, fragmentation_.cache(), signature_);
    return fragmentation_.Value(signature_);
  }

  double WholeDelta(const Cand& c, int k) {
    const int planned = Planned(c.pos);
    return WholeFragmentation(c.pos, planned + k) - WholeFragmentation(c.pos, planned);
  }

  // FGD among `cands`: the least growth of fragmentation, ties in binpack order.
  Cand PickFragmentation(std::vector<Cand>& cands, int k) {
    std::sort(cands.begin(), cands.end(), [&](const Cand& a, const Cand& b) {
      if (a.label != b.label) return a.label > b.label;
      return BinpackBefore(a, b, impl_);
    });
    Cand best;
    for (std::size_t i = 0; i < cands.size(); ++i) {
      Cand& cand = cands[i];
      if (!list_mode_) Count(cand.pos);
      cand.delta = WholeDelta(cand, k);
      if (Better(cand, best)) best = cand;
    }
    return best;
  }

  // Every node of list_; the first call counts the feasible ones (PlannedGang::candidates).
  Cand ChooseWholeFromList(int k) {
    Cand best;
    Cand cand;
    int feasible = 0;
    std::vector<Cand> cands;  // FGD
    for (int pos : list_) {
      if (!MakeWhole(pos, k, cand)) continue;
      ++feasible;
      if (scoring_ == model::Scoring::kFragmentation) {
        cands.push_back(cand);
      } else if (Better(cand, best)) {
        best = cand;
      }
    }
    if (list_candidates_ < 0) list_candidates_ = feasible;
    if (scoring_ == model::Scoring::kFragmentation) return PickFragmentation(cands, k);
    return best;
  }

  // Spread or FGD through the index (no label preferences; binpack has BestFitIndexed). Nodes
  // this plan already uses are evaluated apart, with their planned workers taken off.
  Cand ChooseWholeIndexed(int k) {
    const std::set<NodeKey>& keys = index_->keys;
    const int last_tier = filter_.needs_gpus ? 0 : 1;
    const int g = ClampToInt(std::int64_t{k} * demand_.gpus);
    const std::int64_t c = k * demand_.cpu;
    const std::int64_t m = k * demand_.memory;
    // Cheap checks on the key; MakeWhole checks the rest (matching GPUs).
    auto usable = [&](const NodeKey& key) {
      return key.free_memory >= m && !Excluded(key.position) && Planned(key.position) == 0;
    };
    Cand best;
    Cand cand;
    std::vector<Cand> cands;  // FGD: every feasible node
    for (int tier = 0; tier <= last_tier; ++tier) {
      if (scoring_ == model::Scoring::kSpread) {
        // The top of the tier: the most free first. Keys below `c` CPU in a GPU bucket are
        // skipped by jumping to the bucket's start; equal keys then go by name.
        auto it = keys.lower_bound(NodeKey{tier + 1, INT_MIN, LLONG_MIN, LLONG_MIN, {}, INT_MIN});
        const NodeKey* top = nullptr;
        while (it != keys.begin()) {
          --it;
          if (it->tier != tier || it->free_gpus < g) break;
          if (it->free_cpu < c) {
            it = keys.lower_bound(
                NodeKey{tier, it->free_gpus, LLONG_MIN, LLONG_MIN, std::string(), INT_MIN});
            continue;
          }
          if (usable(*it) && MakeWhole(it->position, k, cand)) {
            top = &*it;
            break;
          }
        }
        if (top != nullptr) {
          for (auto same = keys.lower_bound(NodeKey{tier, top->free_gpus, top->free_cpu,
                                                    top->free_memory, std::string(), INT_MIN});
               same != keys.end(); ++same) {
            if (usable(*same) && MakeWhole(same->position, k, cand)) {
              Count(cand.pos);
              best = cand;
              break;
            }
          }
        }
      } else {
        auto it = keys.lower_bound(NodeKey{tier, g, c, m, std::string(), 0});
        while (it != keys.end() && it->tier == tier) {
          if (it->free_cpu < c) {
            it = keys.lower_bound(NodeKey{tier, it->free_gpus, c, m, std::string(), 0});
            continue;
          }
          // Every feasible node: nodes with as many free GPUs may differ in their partly used
          // timeslice GPUs and their CPU, which fragmentation weighs.
          if (usable(*it) && MakeWhole(it->position, k, cand)) cands.push_back(cand);
          ++it;
        }
      }
      if (best.pos >= 0) break;  // a lower tier always wins
    }
    for (const auto& [pos, n] : gang_.nodes) {
      if (Excluded(pos) || !MakeWhole(pos, k, cand)) continue;
      if (scoring_ == model::Scoring::kFragmentation) {
        cands.push_back(cand);
      } else if (Better(cand, best)) {
        best = cand;
      }
    }
    if (scoring_ == model::Scoring::kFragmentation) return PickFragmentation(cands, k);
    return best;
  }

  Cand ChooseWhole(int k) { return list_mode_ ? ChooseWholeFromList(k) : ChooseWholeIndexed(k); }

  void AddWorkers(const Cand& c, int n) {
    const model::Node& node = impl_.nodes[c.pos];
    double term = 0.0;
    if (scoring_ == model::Scoring::kFragmentation) {
      term = -c.delta / kShareMillisPerGpu;
    } else {
      double used = 0.0;
      if (demand_.gpus > 0) {
        const int total = impl_.states[c.pos].whole_capable_gpus;
        const std::int64_t free = c.free_gpus - std::int64_t{n} * demand_.gpus;
        if (total > 0) used = 1.0 - static_cast<double>(free) / static_cast<double>(total);
      } else if (node.cpu_millis > 0) {
        used = 1.0 -
               static_cast<double>(c.cpu - n * demand_.cpu) / static_cast<double>(node.cpu_millis);
      }
      term = scoring_ == model::Scoring::kSpread ? (1.0 - used) * n : used * n;
    }
    score_ += static_cast<double>(c.label) * n + term;
    AddToNode(c.pos, n);
  }

  void AddToNode(int pos, int n) {
    if (!planned_index_.empty()) {
      auto it = planned_index_.find(pos);
      if (it != planned_index_.end()) {
        gang_.nodes[it->second].second += n;
        return;
      }
    } else {
      for (auto& [p, count] : gang_.nodes) {
        if (p == pos) {
          count += n;
          return;
        }
      }
    }
    gang_.nodes.emplace_back(pos, n);
    if (!planned_index_.empty() || gang_.nodes.size() > 16) {
      if (planned_index_.empty()) {
        for (std::size_t i = 0; i < gang_.nodes.size(); ++i) {
          planned_index_.emplace(gang_.nodes[i].first, i);
        }
      } else {
        planned_index_.emplace(pos, gang_.nodes.size() - 1);
      }
    }
  }

  // Binpack through the index (the common case, kept lean): the best-fit node for a demand of
  // (g, c, m) on one node, skipping excluded nodes and nodes this plan already filled; -1 if
  // none fits. Walks the keys from lower_bound(tier, g, c, m); a key with too little CPU
  // (possible once past the first GPU bucket) jumps to lower_bound of its own bucket at `c`;
  // keys with too little memory and nodes whose free GPUs do not all pass the GPU filter are
  // stepped over.
  int BestFitIndexed(int g, std::int64_t c, std::int64_t m) const {
    const std::set<NodeKey>& keys = index_->keys;
    const int last_tier = filter_.needs_gpus ? 0 : 1;
    for (int tier = 0; tier <= last_tier; ++tier) {
      auto it = keys.lower_bound(NodeKey{tier, g, c, m, std::string(), 0});
      while (it != keys.end() && it->tier == tier) {
        if (it->free_cpu < c) {
          it = keys.lower_bound(NodeKey{tier, it->free_gpus, c, m, std::string(), 0});
          continue;
        }
        const int pos = it->position;
        if (it->free_memory >= m && !Excluded(pos) && Planned(pos) == 0 &&
            (g == 0 || impl_.MatchingFreeGpus(pos, filter_, index_) >= g)) {
          return pos;
        }
        ++it;
      }
    }
    return -1;
  }

  // Records n workers of a binpack plan on untouched node `pos`.
  void AddBinpack(int pos, int n) {
    const model::Node& node = impl_.nodes[pos];
    double used = 0.0;
    if (demand_.gpus > 0) {
      const int total = impl_.states[pos].whole_capable_gpus;
      const std::int64_t free = impl_.states[pos].free_gpus - std::int64_t{n} * demand_.gpus;
      if (total > 0) used = 1.0 - static_cast<double>(free) / total;
    } else if (node.cpu_millis > 0) {
      used = 1.0 - static_cast<double>(impl_.FreeCpu(pos) - n * demand_.cpu) / node.cpu_millis;
    }
    score_ += used * n;
    ++found_;
    AddToNode(pos, n);
  }

  std::optional<PlannedGang> PlanWhole() {
    if (!list_mode_ && scoring_ == model::Scoring::kBinpack) {
      const std::int64_t g = demand_.gpus;
      if (same_node_) {
        const int pos = BestFitIndexed(ClampToInt(g * workers_), demand_.cpu * workers_,
                                       demand_.memory * workers_);
        if (pos < 0) return std::nullopt;
        AddBinpack(pos, workers_);
      } else {
        // Fill the best-fit node to capacity, then the next best (see scheduler.h for why this
        // equals worker-by-worker best fit).
        int remaining = workers_;
        while (remaining > 0) {
          const int pos = BestFitIndexed(demand_.gpus, demand_.cpu, demand_.memory);
          if (pos < 0) return std::nullopt;
          const int n = Capacity(impl_, pos, filter_, index_, demand_, remaining);
          DROVER_CHECK(n >= 1);
          AddBinpack(pos, n);
          remaining -= n;
        }
      }
    } else if (same_node_) {
      Cand c = ChooseWhole(workers_);
      if (c.pos < 0) return std::nullopt;
      AddWorkers(c, workers_);
    } else if (scoring_ == model::Scoring::kBinpack) {
      // Fill the best-fit node to capacity, then the next best (see scheduler.h for why this
      // equals worker-by-worker best fit).
      int remaining = workers_;
      while (remaining > 0) {
        Cand c = ChooseWhole(1);
        if (c.pos < 0) return std::nullopt;
        const int n = WholeCapacity(c, remaining);
        DROVER_CHECK(n >= 1);
        AddWorkers(c, n);
        remaining -= n;
      }
    } else {
      for (int i = 0; i < workers_; ++i) {
        Cand c = ChooseWhole(1);
        if (c.pos < 0) return std::nullopt;
        AddWorkers(c, 1);
      }
    }
    gang_.workers.reserve(workers_);
    for (const auto& [pos, n] : gang_.nodes) {
      std::vector<int> taken;
      for (int i = 0; i < n; ++i) {
        WorkerAssignment worker;
        worker.rank = static_cast<int>(gang_.workers.size());
        worker.node = impl_.nodes[pos].name;
        worker.gpus = ChooseWholeGpus(impl_, filter_, pos, demand_.gpus, taken);
        DROVER_CHECK(static_cast<int>(worker.gpus.size()) == demand_.gpus);
        if (n > 1) taken.insert(taken.end(), worker.gpus.begin(), worker.gpus.end());
        gang_.workers.push_back(std::move(worker));
      }
    }
    return Finish();
  }

  // ---- Shares (timeslice and MIG) ----

  // Shares this plan already put on GPU `gpu` of node `pos`.
  int PlannedOnGpu(int pos, int gpu) const {
    int n = 0;
    for (const auto& [p, g] : steps_) n += (p == pos && g == gpu) ? 1 : 0;
    return n;
  }

  // GPU `gpu` of `pos` as a candidate for one more worker (`node` holds the node's free CPU and
  // memory net of this plan); false if it does not fit.
  bool MakeShare(const Cand& node, int gpu, Cand& out) const {
    if (!impl_.GpuEligible(node.pos, gpu, filter_)) return false;
    const int planned = PlannedOnGpu(node.pos, gpu);
    Cand cand = node;
    cand.gpu = gpu;
    if (demand_.mode == GpuMode::kTimeslice) {
      cand.gpu_free =
          impl_.FreeShareMillis(node.pos, gpu) - std::int64_t{planned} * demand_.share_millis;
      cand.gpu_memory = impl_.FreeShareMemory(node.pos, gpu) - planned * demand_.share_memory;
      if (cand.gpu_free < demand_.share_millis) return false;
      if (demand_.share_memory > 0 && cand.gpu_memory < demand_.share_memory) return false;
    } else {
      cand.gpu_free = impl_.FreeMigInstances(node.pos, gpu, demand_.mig_profile_lower) - planned;
      if (cand.gpu_free < 1) return false;
    }
    out = cand;
    return true;
  }

  // Workers of the share demand node `pos` holds now, net of this plan.
  int ShareCapacity(int pos, int limit) const {
    const int planned = Planned(pos);
    std::int64_t n = limit;
    if (demand_.cpu > 0)
      n = std::min(n, (impl_.FreeCpu(pos) - planned * demand_.cpu) / demand_.cpu);
    if (demand_.memory > 0) {
      n = std::min(n, (impl_.FreeMemory(pos) - planned * demand_.memory) / demand_.memory);
    }
    std::int64_t gpus = 0;
    Cand node;
    node.pos = pos;
    for (std::size_t i = 0; i < impl_.nodes[pos].gpus.size(); ++i) {
      Cand cand;
      if (!MakeShare(node, static_cast<int>(i), cand)) continue;
      if (demand_.mode == GpuMode::kMig) {
        gpus += cand.gpu_free;
      } else {
        std::int64_t k = cand.gpu_free / demand_.share_millis;
        if (demand_.share_memory > 0) k = std::min(k, cand.gpu_memory / demand_.share_memory);
        gpus += k;
      }
    }
    return ClampToInt(std::max<std::int64_t>(std::min(n, gpus), 0));
  }

  // The best GPU for the next worker among `positions` (or only `fixed` when >= 0).
  Cand ChooseShare(const std::vector<int>& positions, int fixed) {
    Cand best;
    auto consider = [&](int pos) {
      Cand node;
      node.pos = pos;
      const int planned = Planned(pos);
      node.cpu = impl_.FreeCpu(pos) - planned * demand_.cpu;
      node.memory = impl_.FreeMemory(pos) - planned * demand_.memory;
      if (node.cpu < demand_.cpu || node.memory < demand_.memory) return;
      node.free_gpus = impl_.states[pos].free_gpus;
      node.label = LabelScore(pos);
      const bool fgd = scoring_ == model::Scoring::kFragmentation;
      double before = 0.0;
      if (fgd) before = ShareFragmentation(pos, -1);
      const model::Node& n = impl_.nodes[pos];
      for (std::size_t i = 0; i < n.gpus.size(); ++i) {
        Cand cand;
        if (!MakeShare(node, static_cast<int>(i), cand)) continue;
        if (fgd) cand.delta = ShareFragmentation(pos, static_cast<int>(i)) - before;
        if (Better(cand, best)) best = cand;
      }
    };
    if (fixed >= 0) {
      consider(fixed);
    } else {
      for (int pos : positions) consider(pos);
    }
    return best;
  }

  // Fragmentation of node `pos` with the shares this plan put on it and, if `extra` >= 0, one
  // more on GPU position `extra` (timeslice demands only).
  double ShareFragmentation(int pos, int extra) {
    const std::size_t n = impl_.nodes[pos].gpus.size();
    taken_.assign(n, 0);
    int workers = 0;
    for (const auto& [p, gpu] : steps_) {
      if (p != pos) continue;
      taken_[gpu] += demand_.share_millis;
      ++workers;
    }
    if (extra >= 0) {
      taken_[extra] += demand_.share_millis;
      ++workers;
    }
    SignatureAfter(impl_, pos, workers * demand_.cpu, taken_, fragmentation_.cache(), signature_);
    return fragmentation_.Value(signature_);
  }

  std::optional<PlannedGang> PlanShares(std::vector<int> positions) {
    const int need = same_node_ ? workers_ : 1;
    std::erase_if(positions, [&](int pos) { return ShareCapacity(pos, need) < need; });
    gang_.candidates = static_cast<int>(positions.size());
    int fixed = -1;
    for (int w = 0; w < workers_; ++w) {
      Cand c = ChooseShare(positions, fixed);
      if (c.pos < 0) return std::nullopt;
      if (same_node_) fixed = c.pos;
      double term;
      if (scoring_ == model::Scoring::kFragmentation) {
        term = -c.delta / kShareMillisPerGpu;
      } else {
        const double total = demand_.mode == GpuMode::kTimeslice
                                 ? kShareMillisPerGpu
                                 : impl_.MigInstances(c.pos, c.gpu, demand_.mig_profile_lower);
        const std::int64_t unit = demand_.mode == GpuMode::kTimeslice ? demand_.share_millis : 1;
        const double used = total > 0 ? 1.0 - (c.gpu_free - unit) / total : 0.0;
        term = scoring_ == model::Scoring::kSpread ? 1.0 - used : used;
      }
      score_ += c.label + term;
      steps_.emplace_back(c.pos, c.gpu);
      AddToNode(c.pos, 1);
    }
    gang_.workers.reserve(workers_);
    for (const auto& [pos, n] : gang_.nodes) {
      for (const auto& [p, gpu] : steps_) {
        if (p != pos) continue;
        WorkerAssignment worker;
        worker.rank = static_cast<int>(gang_.workers.size());
        worker.node = impl_.nodes[pos].name;
        worker.gpus = {impl_.nodes[pos].gpus[gpu].index};
        gang_.workers.push_back(std::move(worker));
      }
    }
    gang_.score = score_ / workers_;
    return std::move(gang_);
  }

  // ---- Driver ----

  std::optional<PlannedGang> PlanOn(const std::vector<int>* domain) {
    if (filter_.shares()) {
      if (domain != nullptr) return PlanShares(*domain);
      std::vector<int> positions;
      ForEachCandidate([&](int pos) { positions.push_back(pos); });
      return PlanShares(std::move(positions));
    }
    if (domain != nullptr) {
      list_mode_ = true;
      list_ = *domain;
    } else if (index_ == nullptr || labels_) {
      // Label preferences rank every feasible node: collect them (through the index if any).
      list_mode_ = true;
      ForEachCandidate([&](int pos) { list_.push_back(pos); });
    }
    return PlanWhole();
  }

  std::optional<PlannedGang> Finish() {
    gang_.candidates =
        list_mode_ ? std::max(list_candidates_, 0) : found_ + static_cast<int>(seen_.size());
    gang_.score = score_ / workers_;
    return std::move(gang_);
  }

  const ClusterImpl& impl_;
  const StaticFilter& filter_;
  const Index* index_;
  const model::JobSpec& spec_;
  const PlanOptions& options_;
  const Demand demand_;
  const int workers_;
  const bool same_node_;
  const bool labels_;
  model::Scoring scoring_;
  FragmentationInputs fragmentation_;

  bool list_mode_ = false;
  std::vector<int> list_;  // candidate positions in list mode
  PlannedGang gang_;
  std::unordered_map<int, std::size_t> planned_index_;  // pos -> gang_.nodes entry, when large
  std::vector<std::pair<int, int>> steps_;              // shares: (pos, GPU position) per worker
  std::vector<int> seen_;                               // distinct candidates evaluated
  int found_ = 0;                                       // binpack index hits (each distinct)
  int list_candidates_ = -1;                            // list mode: feasible at the first step
  double score_ = 0.0;
  std::vector<int> taken_;               // scratch: milli-GPUs taken per GPU position
  std::vector<int> gpu_scratch_;         // scratch: GPU positions
  std::vector<std::int64_t> signature_;  // scratch
};

// Plans a single-worker job by scoring every feasible node (the kube-scheduler's model): the
// highest score wins; ties go to options.rng uniformly, else to the node name. The scores of
// the FGD paper's baselines are theirs (integer scores of 0..100, as its simulator computes
// them), so that the simulator can reproduce its experiment; kFragmentation scores the exact
// growth of fragmentation plus CPU-stranded GPUs (fragmentation.h), memoized by node state. With a
// FragmentationCache lent (PlanOptions::fragmentation_cache) what each node offers this kind of
// request (fit, score) is remembered there until the node changes: a simulation that places
// thousands of jobs of a few shapes re-evaluates only the nodes that changed.
class ScoredPlanner {
 public:
  ScoredPlanner(const ClusterImpl& impl, const StaticFilter& filter, const Index* index,
                const model::JobSpec& spec, const PlanOptions& options)
      : impl_(impl),
        filter_(filter),
        index_(filter.shares() ? nullptr : index),
        spec_(spec),
        options_(options),
        demand_(PerWorker(spec)),
        fgd_(options.scoring == model::Scoring::kFragmentation),
        memo_(options.fragmentation_cache) {
    if (fgd_) fragmentation_.Init(spec, options);
    if (memo_ != nullptr) {
      const std::string kind =
          DemandKey(filter, spec) + "/scoring=" + std::string(model::ScoringName(options.scoring));
      fits_ = &memo_->Fits(memo_->DemandId(kind), impl.nodes.size());
    }
  }

  std::optional<PlannedGang> Run() {
    int feasible = 0;
    ForEachEligible(
        impl_, filter_, index_, demand_, options_.excluded, [&](int pos) { Visit(pos, feasible); },
        memo_ == nullptr);
    if (best_ < 0) return std::nullopt;
    PlannedGang gang;
    WorkerAssignment worker;
    worker.rank = 0;
    worker.node = impl_.nodes[best_].name;
    if (filter_.shares()) {
      const int gpu = fgd_ ? best_fit_.gpu : ShareGpu(best_);
      worker.gpus = {impl_.nodes[best_].gpus[gpu].index};
    } else if (demand_.gpus > 0) {
      worker.gpus = ChooseWholeGpus(impl_, filter_, best_, demand_.gpus, {});
    }
    gang.workers.push_back(std::move(worker));
    gang.nodes.emplace_back(best_, 1);
    gang.candidates = feasible;
    gang.score = best_label_ + best_score_ / 100.0;
    return gang;
  }

 private:
  using Fit = FragmentationCache::Fit;

  // Scores node `pos` (statically eligible unless the memo checks it) against the best so far.
  void Visit(int pos, int& feasible) {
    const Fit* eval = Evaluate(pos);
    if (eval == nullptr) return;
    ++feasible;
    const double score = ScoreOf(pos, *eval);
    const int label = internal::LabelScore(impl_, pos, spec_);
    // FGD: among equal growth of fragmentation, the fullest node (fewest free milli-GPUs,
    // then CPU), which keeps idle nodes whole for the tasks the mix leaves out.
    const double fill =
        fgd_ ? -static_cast<double>(eval->gpu_left) * 1e6 - static_cast<double>(impl_.FreeCpu(pos))
             : 0.0;
    if (best_ >= 0) {
      if (label != best_label_) {
        if (label < best_label_) return;
      } else if (std::abs(score - best_score_) > kDeltaEpsilon) {
        if (score < best_score_) return;
      } else if (fill < best_fill_) {
        return;
      }
    }
    const bool tie = best_ >= 0 && label == best_label_ &&
                     std::abs(score - best_score_) <= kDeltaEpsilon && fill == best_fill_;
    if (tie) {
      ++ties_;
      if (options_.rng != nullptr) {
        if (std::uniform_int_distribution<int>(0, ties_ - 1)(*options_.rng) != 0) return;
      } else if (impl_.nodes[pos].name.value() > impl_.nodes[best_].name.value()) {
        return;
      }
    } else {
      ties_ = 1;
      best_score_ = score;
      best_label_ = label;
      best_fill_ = fill;
    }
    best_ = pos;
    best_fit_ = *eval;
  }

  // The node-level quantities the FGD paper's scores read.
  struct NodeView {
    std::int64_t cpu_free = 0;
    std::int64_t gpu_left = 0;  // free milli-GPUs over the GPUs that may be given whole or shared
    int gpus = 0;               // such GPUs
    int fully_free = 0;         // of them, wholly free
  };

  NodeView View(int pos) const {
    NodeView view;
    view.cpu_free = impl_.FreeCpu(pos);
    const model::Node& node = impl_.nodes[pos];
    for (std::size_t i = 0; i < node.gpus.size(); ++i) {
      if (node.gpus[i].sharing == model::GpuSharing::kMig) continue;
      ++view.gpus;
      if (impl_.WholeFree(pos, i)) {
        ++view.fully_free;
        view.gpu_left += kShareMillisPerGpu;
      } else {
        view.gpu_left += impl_.FreeShareMillis(pos, i);
      }
    }
    return view;
  }

  // Node `pos`'s fit for this job, or null if the worker does not fit there.
  const Fit* Evaluate(int pos) {
    if (memo_ == nullptr) {
      if (Capacity(impl_, pos, filter_, index_, demand_, 1) < 1) return nullptr;
      scratch_ = Compute(pos);
      return &scratch_;
    }
    Fit& fit = (*fits_)[pos];
    const std::uint64_t version = impl_.states[pos].version;
    if (fit.version != version) {
      fit = impl_.StaticEligible(pos, filter_) &&
                    Capacity(impl_, pos, filter_, index_, demand_, 1) >= 1
                ? Compute(pos)
                : Fit{};
      fit.version = version;
    }
    return fit.fits ? &fit : nullptr;
  }

  // The fit of node `pos`, where the worker fits.
  Fit Compute(int pos) {
    Fit fit;
    fit.fits = true;
    fit.gpu_left = View(pos).gpu_left;
    if (options_.scoring == model::Scoring::kGpuPacking) fit.score = PackingScore(pos);
    if (fgd_) fit.score = -FragmentationDelta(pos, fit.gpu);
    return fit;
  }

  // Free milli-GPUs of GPU position i for this demand, or -1 if it cannot host one worker.
  int HostFree(int pos, std::size_t i) const {
    if (filter_.shares()) {
      if (!impl_.GpuEligible(pos, i, filter_)) return -1;
      const int free = impl_.FreeShareMillis(pos, i);
      if (free < demand_.share_millis) return -1;
      if (demand_.share_memory > 0 && impl_.FreeShareMemory(pos, i) < demand_.share_memory) {
        return -1;
      }
      return free;
    }
    return impl_.WholeFree(pos, i) && filter_.GpuMatches(impl_.states[pos].gpu_models_lower[i],
                                                         impl_.nodes[pos].gpus[i].memory_bytes)
               ? kShareMillisPerGpu
               : -1;
  }

  // The share's GPU on node `pos`: for kRandom with a generator any GPU that hosts it,
  // uniformly (the paper's Random selects the GPU at random too: its fragmentation curve then
  // matches the published one within 0.6 points), else the fullest (BestFitGpu).
  int ShareGpu(int pos) const {
    if (options_.scoring != model::Scoring::kRandom || options_.rng == nullptr) {
      return BestFitGpu(pos);
    }
    int hosts = 0;
    int chosen = -1;
    for (std::size_t i = 0; i < impl_.nodes[pos].gpus.size(); ++i) {
      if (HostFree(pos, i) < 0) continue;
      if (std::uniform_int_distribution<int>(0, hosts++)(*options_.rng) == 0) {
        chosen = static_cast<int>(i);
      }
    }
    return chosen;
  }

  // The share's GPU: the fullest that hosts it (ties: the lowest position).
  int BestFitGpu(int pos) const {
    int best = -1;
    int best_free = 0;
    for (std::size_t i = 0; i < impl_.nodes[pos].gpus.size(); ++i) {
      const int free = HostFree(pos, i);
      if (free >= 0 && (best < 0 || free < best_free)) {
        best = static_cast<int>(i);
        best_free = free;
      }
    }
    return best;
  }

  std::int64_t GpuRequest() const {
    return filter_.shares() ? demand_.share_millis
                            : std::int64_t{demand_.gpus} * kShareMillisPerGpu;
  }

  // The score of node `pos`, whose fit is `eval`.
  double ScoreOf(int pos, const Fit& eval) const {
    constexpr double kMaxCpu = 128'000;  // the FGD simulator's normalizers: 128 cores, 8 GPUs
    constexpr double kMaxGpu = 8'000;
    const double cpu_free = static_cast<double>(impl_.FreeCpu(pos));
    const double gpu_left = static_cast<double>(eval.gpu_left);
    switch (options_.scoring) {
      case model::Scoring::kBestFit: {
        const double left = 0.5 * (cpu_free - static_cast<double>(demand_.cpu)) / kMaxCpu +
                            0.5 * (gpu_left - static_cast<double>(GpuRequest())) / kMaxGpu;
        return std::trunc((1.0 - left) * 100.0);
      }
      case model::Scoring::kDotProduct: {
        const double dot = (cpu_free / kMaxCpu) * (static_cast<double>(demand_.cpu) / kMaxCpu) +
                           (gpu_left / kMaxGpu) * (static_cast<double>(GpuRequest()) / kMaxGpu);
        return std::trunc(100.0 * (1.0 - dot / 2.0));
      }
      case model::Scoring::kGpuClustering:
        return ClusteringScore(pos, eval.gpu_left);
      default:
        return eval.score;
    }
  }

  // Partly used GPUs first (100 down to 50 by their free share), then free GPUs of a used node
  // (50 down to 33 by how many), then idle nodes (33 down by their GPU count).
  double PackingScore(int pos) const {
    if (demand_.mode == GpuMode::kNone) return 0.0;
    const NodeView v = View(pos);
    if (v.fully_free == v.gpus) return std::max(33 - v.fully_free, v.fully_free);
    std::vector<std::pair<int, int>> hosts;  // (free, position), the fullest first
    for (std::size_t i = 0; i < impl_.nodes[pos].gpus.size(); ++i) {
      const int free = HostFree(pos, i);
      if (free >= 0) hosts.emplace_back(free, static_cast<int>(i));
    }
    std::stable_sort(hosts.begin(), hosts.end());
    const int count = filter_.shares() ? 1 : demand_.gpus;
    int fully_free_used = 0;
    std::int64_t free_percent = 0;
    for (int k = 0; k < count && k < static_cast<int>(hosts.size()); ++k) {
      if (hosts[k].first == kShareMillisPerGpu) ++fully_free_used;
      free_percent += hosts[k].first * 100 / kShareMillisPerGpu;
    }
    if (fully_free_used > 0) return std::max(50 - fully_free_used, 33);
    return static_cast<double>(std::max<std::int64_t>(100 - free_percent / 10, 50));
  }

  // Nodes running only tasks of this GPU request (75..100), of it among others (50..75), idle
  // nodes (25..50), nodes running other requests (0..25); within each band, fuller first.
  double ClusteringScore(int pos, std::int64_t gpu_left) const {
    if (demand_.mode == GpuMode::kNone) return 0.0;
    const NodeState& state = impl_.states[pos];
    const bool shares = std::any_of(state.shares.begin(), state.shares.end(),
                                    [](const ShareUse& use) { return use.millis > 0; });
    const int kinds = static_cast<int>(state.whole_workers.size()) + (shares ? 1 : 0);
    const bool same = filter_.shares() ? shares : state.whole_workers.count(demand_.gpus) > 0;
    const std::int64_t fill = 25 * (8000 - gpu_left) / 8000;
    int band = 0;
    if (same) {
      band = kinds == 1 ? 75 : 50;
    } else {
      band = kinds == 0 ? 25 : 0;
    }
    return static_cast<double>(fill + band);
  }

  // Growth of the node's fragmentation if the worker goes there (for a share, on the GPU that
  // grows it least, which `gpu` receives).
  double FragmentationDelta(int pos, int& gpu) {
    FragmentationCache::NodeEntry& node = fragmentation_.cache().Node(pos);
    const std::uint64_t version = impl_.states[pos].version;
    if (node.version != version || node.signature.empty()) {
      SignatureAfter(impl_, pos, 0, {}, fragmentation_.cache(), node.signature);
      node.value = fragmentation_.Value(node.signature);
      node.version = version;
    }
    return Growth(pos, node.value, gpu);
  }

  // Growth of node `pos`'s fragmentation (now `before`) if the worker goes there; for a share,
  // on the GPU that grows it least (ties: the lowest position), which `gpu` receives.
  double Growth(int pos, double before, int& gpu) {
    const std::size_t n = impl_.nodes[pos].gpus.size();
    taken_.assign(n, 0);
    if (!filter_.shares()) {
      WholeGpusInOrder(impl_, pos, filter_, demand_.gpus, gpus_);
      for (int i : gpus_) taken_[i] = kShareMillisPerGpu;
      SignatureAfter(impl_, pos, demand_.cpu, taken_, fragmentation_.cache(), signature_);
      return fragmentation_.Value(signature_) - before;
    }
    double best = 0.0;
    gpu = -1;
    for (std::size_t i = 0; i < n; ++i) {
      if (HostFree(pos, i) < 0) continue;
      taken_[i] = demand_.share_millis;
      SignatureAfter(impl_, pos, demand_.cpu, taken_, fragmentation_.cache(), signature_);
      taken_[i] = 0;
      const double delta = fragmentation_.Value(signature_) - before;
      if (gpu < 0 || delta < best - kDeltaEpsilon) {
        best = delta;
        gpu = static_cast<int>(i);
      }
    }
    return best;
  }

  const ClusterImpl& impl_;
  const StaticFilter& filter_;
  const Index* index_;
  const model::JobSpec& spec_;
  const PlanOptions& options_;
  const Demand demand_;
  const bool fgd_;
  FragmentationCache* const memo_;                        // borrowed; may be null
  std::vector<FragmentationCache::Fit>* fits_ = nullptr;  // by node position, in memo_
  FragmentationInputs fragmentation_;

  int best_ = -1;
  Fit best_fit_;
  Fit scratch_;
  int best_label_ = 0;
  double best_score_ = 0.0;
  double best_fill_ = 0.0;
  int ties_ = 0;
  std::vector<int> taken_;
  std::vector<int> gpus_;
  std::vector<std::int64_t> signature_;
};

// True if Plan scores every node for this job (ScoredPlanner).
bool NodeScored(const model::JobSpec& spec, const StaticFilter& filter,
                const PlanOptions& options) {
  if (GangSize(spec) != 1 || !spec.requirements.topology_level.empty() ||
      !spec.preferences.topology_level.empty()) {
    return false;
  }
  switch (options.scoring) {
    case model::Scoring::kBinpack:
    case model::Scoring::kSpread:
      return false;
    case model::Scoring::kFragmentation:
      return filter.mode != GpuMode::kMig;
    default:
      return true;
  }
}

}  // namespace

Demand PerWorker(const model::JobSpec& spec) {
  const model::Requirements& req = spec.requirements;
  Demand demand;
  demand.mode = ModeOf(req);
  demand.gpus = demand.mode == GpuMode::kWhole ? req.per_worker.gpus : 0;
  demand.cpu = std::max<std::int64_t>(req.per_worker.cpu_millis, 0);
  demand.memory = std::max<std::int64_t>(req.per_worker.memory_bytes, 0);
  if (demand.mode == GpuMode::kTimeslice) {
    demand.share_millis = std::min(req.gpu_share_millis, kShareMillisPerGpu);
    demand.share_memory = std::max<std::int64_t>(req.gpu_memory_bytes, 0);
  } else if (demand.mode == GpuMode::kMig) {
    demand.mig_profile_lower = Lower(req.mig_profile);
  }
  return demand;
}

int GangSize(const model::JobSpec& spec) { return std::max(spec.workers, 1); }

int Capacity(const ClusterImpl& impl, int pos, const StaticFilter& filter, const Index* index,
             const Demand& demand, int limit) {
  std::int64_t capacity = limit;
  switch (demand.mode) {
    case GpuMode::kNone:
      break;
    case GpuMode::kWhole:
      if (demand.gpus > 0) {
        capacity = std::min<std::int64_t>(capacity,
                                          impl.MatchingFreeGpus(pos, filter, index) / demand.gpus);
      }
      break;
    case GpuMode::kTimeslice:
    case GpuMode::kMig: {
      std::int64_t on_gpus = 0;
      for (std::size_t i = 0; i < impl.nodes[pos].gpus.size(); ++i) {
        if (!impl.GpuEligible(pos, i, filter)) continue;
        if (demand.mode == GpuMode::kMig) {
          on_gpus += impl.FreeMigInstances(pos, i, demand.mig_profile_lower);
          continue;
        }
        std::int64_t n = impl.FreeShareMillis(pos, i) / demand.share_millis;
        if (demand.share_memory > 0) {
          n = std::min(n, impl.FreeShareMemory(pos, i) / demand.share_memory);
        }
        on_gpus += std::max<std::int64_t>(n, 0);
      }
      capacity = std::min(capacity, on_gpus);
      break;
    }
  }
  if (demand.cpu > 0) capacity = std::min(capacity, impl.FreeCpu(pos) / demand.cpu);
  if (demand.memory > 0) capacity = std::min(capacity, impl.FreeMemory(pos) / demand.memory);
  return ClampToInt(capacity);
}

void FragmentationSignature(const ClusterImpl& impl, int pos, FragmentationCache& cache,
                            std::vector<std::int64_t>& out) {
  SignatureAfter(impl, pos, 0, {}, cache, out);
}

std::optional<PlannedGang> Plan(const ClusterImpl& impl, const StaticFilter& filter,
                                const Index* index, const model::JobSpec& spec,
                                const PlanOptions& options) {
  if (NodeScored(spec, filter, options)) {
    return ScoredPlanner(impl, filter, index, spec, options).Run();
  }
  return Planner(impl, filter, index, spec, options).Run();
}

void Commit(ClusterImpl& impl, const PlannedGang& gang, const model::JobSpec& spec) {
  const model::Requirements& req = spec.requirements;
  const std::int64_t cpu = std::max<std::int64_t>(req.per_worker.cpu_millis, 0);
  const std::int64_t memory = std::max<std::int64_t>(req.per_worker.memory_bytes, 0);
  const GpuMode mode = ModeOf(req);
  const bool shared = mode == GpuMode::kTimeslice || mode == GpuMode::kMig;
  const ShareAmount share = shared ? ShareAmount::From(req) : ShareAmount{};
  std::size_t rank = 0;
  std::vector<int> gpus;
  for (const auto& [pos, n] : gang.nodes) {
    if (!shared) {
      impl.Use(pos, cpu * n, memory * n, &gang.workers[rank], n);
      rank += n;
      continue;
    }
    gpus.clear();
    for (int i = 0; i < n; ++i, ++rank) {
      const std::vector<int>& worker_gpus = gang.workers[rank].gpus;
      gpus.insert(gpus.end(), worker_gpus.begin(), worker_gpus.end());
    }
    impl.UseShares(pos, cpu * n, memory * n, gpus, share);
  }
}

std::string DemandKey(const StaticFilter& filter, const model::JobSpec& spec) {
  const Demand demand = PerWorker(spec);
  std::string key = filter.key;
  key += '\x1d';
  for (const std::string& model : spec.requirements.gpu_models) {
    key += model;
    key += '\x1f';
  }
  key += '\x1d';
  key += std::to_string(demand.gpus);
  key += '/';
  key += std::to_string(demand.cpu);
  key += '/';
  key += std::to_string(demand.memory);
  key += '/';
  key += std::to_string(GangSize(spec));
  key += spec.requirements.same_node ? "/same" : "/spread";
  if (filter.shares()) {
    key += '/';
    key += std::to_string(demand.share_millis);
    key += '/';
    key += std::to_string(demand.share_memory);
    key += '/';
    key += spec.requirements.mig_profile;  // as written: the pending reason restates it
  }
  if (!spec.requirements.topology_level.empty()) {
    key += "/topology=";
    key += spec.requirements.topology_level;
  }
  return key;
}

}  // namespace drover::sched::internal

namespace drover::sched {

std::optional<Placement> TryPlace(const ClusterState& cluster, JobId job,
                                  const model::JobSpec& spec,
                                  const internal::PlanOptions& options) {
  const internal::ClusterImpl& impl = internal::ClusterStateAccess::Get(cluster);
  internal::StaticFilter filter = internal::StaticFilter::From(spec.requirements);
  const internal::Index* index = filter.shares() ? nullptr : impl.FindIndex(filter);
  auto gang = internal::Plan(impl, filter, index, spec, options);
  if (!gang) return std::nullopt;
  return Placement{job, std::move(gang->workers)};
}

}  // namespace drover::sched
