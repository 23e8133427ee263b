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

// Free milli-shares of every timeslice GPU of node `pos`, in node order.
void TimesliceFree(const ClusterImpl& impl, int pos, std::vector<int>& out) {
  out.clear();
  const model::Node& node = impl.nodes[pos];
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    if (node.gpus[i].sharing == model::GpuSharing::kTimeslice) {
      out.push_back(impl.FreeShareMillis(pos, i));
    }
  }
}

// Fragmentation (placement.h) of a node with these free amounts.
double NodeFragmentation(std::int64_t whole_free, std::int64_t cpu, std::int64_t memory,
                         const std::vector<int>& timeslice, const WorkloadMix& mix) {
  whole_free = std::max<std::int64_t>(whole_free, 0);
  std::int64_t timeslice_free = 0;
  for (int free : timeslice) timeslice_free += std::max(free, 0);
  const std::int64_t all = kShareMillisPerGpu * whole_free + timeslice_free;
  double total = 0.0;
  for (const Shape& shape : mix.shapes) {
    const bool host_fits = cpu >= shape.cpu && memory >= shape.memory;
    std::int64_t unusable = all;
    if (shape.gpus > 0) {
      if (host_fits && whole_free >= shape.gpus) unusable = timeslice_free;
    } else if (shape.gpu_share_millis > 0) {
      bool gpu_fits = false;
      std::int64_t leftovers = 0;
      for (int free : timeslice) {
        if (free >= shape.gpu_share_millis) {
          gpu_fits = true;
        } else {
          leftovers += std::max(free, 0);
        }
      }
      if (host_fits && gpu_fits) unusable = kShareMillisPerGpu * whole_free + leftovers;
    } else if (host_fits) {
      unusable = 0;
    }
    total += shape.weight * static_cast<double>(unusable);
  }
  return total;
}

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
    if (scoring_ == model::Scoring::kFragmentation) {
      if (demand_.mode == GpuMode::kMig) {
        scoring_ = model::Scoring::kBinpack;  // MIG slices are preconfigured: nothing to score
      } else if (options.mix != nullptr) {
        mix_ = options.mix;
      } else {
        own_mix_.shapes.push_back(
            Shape{demand_.gpus, demand_.cpu, demand_.memory, demand_.share_millis, 1.0});
        mix_ = &own_mix_;
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

  int LabelScore(int pos) const {
    if (!labels_) return 0;
    int score = 0;
    const auto& labels = impl_.nodes[pos].labels;
    for (const model::LabelPreference& pref : spec_.preferences.node_labels) {
      auto it = labels.find(pref.key);
      if (it != labels.end() && it->second == pref.value) score += pref.weight;
    }
    return score;
  }

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
      case model::Scoring::kBinpack:
        break;
    }
    return shares ? ShareBinpackBefore(a, b, impl_) : BinpackBefore(a, b, impl_);
  }

  void Count(int pos) {
    auto it = std::lower_bound(seen_.begin(), seen_.end(), pos);
    if (it == seen_.end() || *it != pos) seen_.insert(it, pos);
  }

  // ---- Topology ----

  // Calls visit(pos) for every node that may hold a worker now (before this plan): through the
  // index when there is one (keys with room only), else by a scan of the eligible nodes.
  template <typename Visit>
  void ForEachCandidate(Visit&& visit) const {
    if (filter_.shares()) {
      for (int pos : impl_.sharing_positions) {
        if (!Excluded(pos) && impl_.StaticEligible(pos, filter_)) visit(pos);
      }
      return;
    }
    if (index_ == nullptr) {
      for (int pos = 0; pos < static_cast<int>(impl_.nodes.size()); ++pos) {
        if (!Excluded(pos) && impl_.StaticEligible(pos, filter_)) visit(pos);
      }
      return;
    }
    const std::set<NodeKey>& keys = index_->keys;
    const int last_tier = filter_.needs_gpus ? 0 : 1;
    for (int tier = 0; tier <= last_tier; ++tier) {
      auto it = keys.lower_bound(NodeKey{tier, demand_.gpus, demand_.cpu, demand_.memory, {}, 0});
      while (it != keys.end() && it->tier == tier) {
        if (it->free_cpu < demand_.cpu) {
          it = keys.lower_bound(
              NodeKey{tier, it->free_gpus, demand_.cpu, demand_.memory, std::string(), 0});
          continue;
        }
        if (it->free_memory >= demand_.memory && !Excluded(it->position)) visit(it->position);
        ++it;
      }
    }
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

  double WholeDelta(const Cand& c, int k) {
    TimesliceFree(impl_, c.pos, timeslice_);
    const double before = NodeFragmentation(c.free_gpus, c.cpu, c.memory, timeslice_, *mix_);
    const double after =
        NodeFragmentation(c.free_gpus - std::int64_t{k} * demand_.gpus, c.cpu - k * demand_.cpu,
                          c.memory - k * demand_.memory, timeslice_, *mix_);
    return after - before;
  }

  // FGD among `cands`: one representative per (label score, tier, free GPUs) class, its best
  // fit; then the least growth of fragmentation, ties in binpack order.
  Cand PickFragmentation(std::vector<Cand>& cands, int k) {
    std::sort(cands.begin(), cands.end(), [&](const Cand& a, const Cand& b) {
      if (a.label != b.label) return a.label > b.label;
      return BinpackBefore(a, b, impl_);
    });
    Cand best;
    for (std::size_t i = 0; i < cands.size(); ++i) {
      if (i > 0 && cands[i].label == cands[i - 1].label && cands[i].tier == cands[i - 1].tier &&
          cands[i].free_gpus == cands[i - 1].free_gpus) {
        continue;  // not the best fit of its class
      }
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
    std::vector<Cand> cands;  // FGD representatives
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
          if (usable(*it) && MakeWhole(it->position, k, cand)) {
            cands.push_back(cand);  // the best fit of its bucket; on to the next bucket
            it = keys.lower_bound(NodeKey{tier, it->free_gpus + 1, c, m, std::string(), 0});
            continue;
          }
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
        const int total = impl_.states[c.pos].exclusive_gpus;
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
      const int total = impl_.states[pos].exclusive_gpus;
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
        worker.gpus = ChooseGpus(pos, demand_.gpus, taken);
        DROVER_CHECK(static_cast<int>(worker.gpus.size()) == demand_.gpus);
        if (n > 1) taken.insert(taken.end(), worker.gpus.begin(), worker.gpus.end());
        gang_.workers.push_back(std::move(worker));
      }
    }
    return Finish();
  }

  // GPU indices for one worker on node `pos`, ascending, avoiding `taken` (already chosen for
  // earlier workers of this job). See "GPU choice" in scheduler.h.
  std::vector<int> ChooseGpus(int pos, int count, const std::vector<int>& taken) const {
    std::vector<int> chosen;
    if (count <= 0) return chosen;
    const model::Node& node = impl_.nodes[pos];
    const NodeState& state = impl_.states[pos];
    // Free matching GPUs as (group, index), sorted: each group is a run, indices ascending.
    std::vector<std::pair<const std::string*, int>> free;
    free.reserve(node.gpus.size());
    const bool sharing = state.sharing_gpus;
    const bool shares = !state.shares.empty();
    for (std::size_t i = 0; i < node.gpus.size(); ++i) {
      const model::Gpu& gpu = node.gpus[i];
      // ClusterState::Impl::WholeFree, with the node's lookups hoisted.
      if (state.GpuUsed(gpu.index) || (sharing && gpu.sharing != model::GpuSharing::kExclusive) ||
          (shares && state.FindShare(gpu.index) != nullptr) ||
          (!taken.empty() && std::find(taken.begin(), taken.end(), gpu.index) != taken.end())) {
        continue;
      }
      if (!filter_.GpuMatches(state.gpu_models_lower[i], gpu.memory_bytes)) continue;
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
      if (fgd) {
        ShareTimeslice(pos, timeslice_);
        before = NodeFragmentation(node.free_gpus, node.cpu, node.memory, timeslice_, *mix_);
      }
      const model::Node& n = impl_.nodes[pos];
      int slot = -1;  // position of GPU i among the node's timeslice GPUs
      for (std::size_t i = 0; i < n.gpus.size(); ++i) {
        if (n.gpus[i].sharing == model::GpuSharing::kTimeslice) ++slot;
        Cand cand;
        if (!MakeShare(node, static_cast<int>(i), cand)) continue;
        if (fgd) {
          timeslice_[slot] -= demand_.share_millis;
          cand.delta = NodeFragmentation(node.free_gpus, node.cpu - demand_.cpu,
                                         node.memory - demand_.memory, timeslice_, *mix_) -
                       before;
          timeslice_[slot] += demand_.share_millis;
        }
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

  // Free milli-shares of each timeslice GPU of `pos`, net of this plan.
  void ShareTimeslice(int pos, std::vector<int>& out) const {
    out.clear();
    const model::Node& node = impl_.nodes[pos];
    for (std::size_t i = 0; i < node.gpus.size(); ++i) {
      if (node.gpus[i].sharing != model::GpuSharing::kTimeslice) continue;
      int free = impl_.FreeShareMillis(pos, i);
      if (demand_.mode == GpuMode::kTimeslice) {
        free -= PlannedOnGpu(pos, static_cast<int>(i)) * demand_.share_millis;
      }
      out.push_back(free);
    }
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
  WorkloadMix own_mix_;
  const WorkloadMix* mix_ = nullptr;

  bool list_mode_ = false;
  std::vector<int> list_;  // candidate positions in list mode
  PlannedGang gang_;
  std::unordered_map<int, std::size_t> planned_index_;  // pos -> gang_.nodes entry, when large
  std::vector<std::pair<int, int>> steps_;              // shares: (pos, GPU position) per worker
  std::vector<int> seen_;                               // distinct candidates evaluated
  int found_ = 0;                                       // binpack index hits (each distinct)
  int list_candidates_ = -1;                            // list mode: feasible at the first step
  double score_ = 0.0;
  std::vector<int> timeslice_;  // scratch
};

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

WorkloadMix MixOf(const std::vector<const model::JobSpec*>& specs) {
  WorkloadMix mix;
  double total = 0.0;
  for (const model::JobSpec* spec : specs) {
    const Demand demand = PerWorker(*spec);
    if (demand.mode == GpuMode::kMig) continue;
    Shape shape{demand.gpus, demand.cpu, demand.memory, demand.share_millis, 0.0};
    auto it = std::find_if(mix.shapes.begin(), mix.shapes.end(), [&](const Shape& s) {
      return s.gpus == shape.gpus && s.cpu == shape.cpu && s.memory == shape.memory &&
             s.gpu_share_millis == shape.gpu_share_millis;
    });
    if (it == mix.shapes.end()) it = mix.shapes.insert(mix.shapes.end(), shape);
    it->weight += GangSize(*spec);
    total += GangSize(*spec);
  }
  for (Shape& shape : mix.shapes) shape.weight /= total;
  return mix;
}

double Fragmentation(const ClusterImpl& impl, int pos, const WorkloadMix& mix) {
  std::vector<int> timeslice;
  TimesliceFree(impl, pos, timeslice);
  return NodeFragmentation(impl.states[pos].free_gpus, impl.FreeCpu(pos), impl.FreeMemory(pos),
                           timeslice, mix);
}

double Fragmentation(const ClusterImpl& impl, const WorkloadMix& mix) {
  double total = 0.0;
  for (int pos = 0; pos < static_cast<int>(impl.nodes.size()); ++pos) {
    total += Fragmentation(impl, pos, mix);
  }
  return total;
}

std::optional<PlannedGang> Plan(const ClusterImpl& impl, const StaticFilter& filter,
                                const Index* index, const model::JobSpec& spec,
                                const PlanOptions& options) {
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
