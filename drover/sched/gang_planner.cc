// The gang planner (gang_planner.h): worker by worker, or node by node for binpack, over the
// index, a list of candidates or a topology domain.

#include "drover/sched/gang_planner.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "drover/sched/placement_support.h"

namespace drover::sched::internal {
namespace {

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
        fragmentation_.Init(impl_, spec, options);
        by_capacity_ =
            FragmentationGrouping(index_, options, spec, fragmentation_.mix()) == Group::kCapacity;
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
  // Whole-GPU and CPU-only demands with an index read the index's DomainTable; shares and
  // plans without an index scan the candidates.
  bool ChooseDomain(const std::string& level, std::vector<int>& out) const {
    if (index_ == nullptr || filter_.shares()) return ChooseDomainByScan(level, out);
    const DomainTable& table = CurrentTable(level);
    // Nodes excluded by the options (a reservation's) take their room out of their domains.
    std::vector<std::int64_t> total = table.total;
    std::vector<int> largest = table.largest;
    if (options_.excluded != nullptr) {
      std::vector<char> touched(table.values.size(), 0);
      const int size = std::min<int>(options_.excluded->size(), table.domain_of.size());
      for (int pos = 0; pos < size; ++pos) {
        if ((*options_.excluded)[pos] && table.domain_of[pos] >= 0) {
          touched[table.domain_of[pos]] = 1;
        }
      }
      for (std::size_t d = 0; d < touched.size(); ++d) {
        if (!touched[d]) continue;
        total[d] = 0;
        largest[d] = 0;
        for (int pos : table.members[d]) {
          if (Excluded(pos)) continue;
          total[d] += table.room[pos];
          largest[d] = std::max(largest[d], table.room[pos]);
        }
      }
    }
    int best = -1;
    for (std::size_t d = 0; d < table.values.size(); ++d) {
      const bool fits = same_node_ ? largest[d] >= workers_ : total[d] >= workers_;
      if (fits && (best < 0 || total[d] < total[best])) best = static_cast<int>(d);
    }
    if (best < 0) return false;
    out.clear();
    for (int pos : table.members[best]) {
      if (table.room[pos] > 0 && !Excluded(pos)) out.push_back(pos);
    }
    return true;
  }

  // The index's DomainTable of `level` for this demand, its rooms brought up to date (built on
  // first use).
  const DomainTable& CurrentTable(const std::string& level) const {
    std::vector<DomainTable>& tables = index_->domains;
    DomainTable* table = nullptr;
    for (DomainTable& candidate : tables) {
      if (candidate.level == level && candidate.gpus == demand_.gpus &&
          candidate.cpu == demand_.cpu && candidate.memory == demand_.memory) {
        table = &candidate;
      }
    }
    if (table == nullptr) {
      if (tables.size() >= Index::kMaxDomainTables) {
        tables.erase(std::min_element(
            tables.begin(), tables.end(),
            [](const auto& a, const auto& b) { return a.last_used < b.last_used; }));
      }
      table = &tables.emplace_back(BuildTable(level));
    }
    table->last_used = ++index_->domain_tick;
    if (table->synced_version == impl_.next_version && table->synced_version != 0) return *table;
    table->synced_version = impl_.next_version;
    for (std::size_t d = 0; d < table->values.size(); ++d) {
      bool shrunk = false;
      for (int pos : table->members[d]) {
        const std::uint64_t version = impl_.states[pos].version;
        if (table->seen[pos] == version) continue;
        const int room = Capacity(impl_, pos, filter_, index_, demand_, INT_MAX);
        table->total[d] += room - table->room[pos];
        if (room >= table->largest[d]) {
          table->largest[d] = room;
        } else if (table->room[pos] == table->largest[d]) {
          shrunk = true;
        }
        table->room[pos] = room;
        table->seen[pos] = version;
      }
      if (shrunk) {
        table->largest[d] = 0;
        for (int pos : table->members[d]) {
          table->largest[d] = std::max(table->largest[d], table->room[pos]);
        }
      }
    }
    return *table;
  }

  // A DomainTable of `level` for this demand with no room counted yet (every member's `seen`
  // is 0, below any version, so the first refresh counts them all).
  DomainTable BuildTable(const std::string& level) const {
    DomainTable table;
    table.level = level;
    table.gpus = demand_.gpus;
    table.cpu = demand_.cpu;
    table.memory = demand_.memory;
    const int size = static_cast<int>(impl_.nodes.size());
    std::map<std::string, std::vector<int>> by_value;
    for (int pos = 0; pos < size && pos < static_cast<int>(index_->member.size()); ++pos) {
      if (!index_->member[pos]) continue;
      const auto& labels = impl_.nodes[pos].labels;
      auto label = labels.find(level);
      if (label != labels.end()) by_value[label->second].push_back(pos);
    }
    table.domain_of.assign(size, -1);
    table.room.assign(size, 0);
    table.seen.assign(size, 0);
    for (auto& [value, positions] : by_value) {
      for (int pos : positions) table.domain_of[pos] = static_cast<int>(table.values.size());
      table.values.push_back(value);
      table.members.push_back(std::move(positions));
    }
    table.total.assign(table.values.size(), 0);
    table.largest.assign(table.values.size(), 0);
    return table;
  }

  // ChooseDomain by one pass over the candidates (shares, or no index).
  bool ChooseDomainByScan(const std::string& level, std::vector<int>& out) const {
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

  // WholeFragmentation, remembered for this plan when it takes several steps (a gang placed
  // worker by worker): each step re-evaluates every candidate, and only the nodes earlier steps
  // chose have changed (the cluster itself does not change while one job is planned).
  double WholeFragmentationOnce(int pos, int workers) {
    if (workers_ == 1 || same_node_) return WholeFragmentation(pos, workers);
    const std::uint64_t key =
        (static_cast<std::uint64_t>(pos) << 32) | static_cast<std::uint32_t>(workers);
    auto [it, inserted] = whole_fragmentation_.try_emplace(key, 0.0);
    if (inserted) it->second = WholeFragmentation(pos, workers);
    return it->second;
  }

  double WholeDelta(const Cand& c, int k) {
    const int planned = Planned(c.pos);
    return WholeFragmentationOnce(c.pos, planned + k) - WholeFragmentationOnce(c.pos, planned);
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
    const SortedBlocks<NodeKey>& keys = index_->keys;
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
        auto it = keys.lower_bound(
            NodeKey{tier + 1, INT_MIN, LLONG_MIN, LLONG_MIN, NodeKey::kLowestRank, INT_MIN});
        const NodeKey* top = nullptr;
        while (it != keys.begin()) {
          --it;
          if (it->tier != tier || it->free_gpus < g) break;
          if (it->free_cpu < c) {
            it = keys.lower_bound(
                NodeKey{tier, it->free_gpus, LLONG_MIN, LLONG_MIN, NodeKey::kLowestRank, INT_MIN});
            continue;
          }
          if (usable(*it) && MakeWhole(it->position, k, cand)) {
            top = &*it;
            break;
          }
        }
        if (top != nullptr) {
          for (auto same =
                   keys.lower_bound(NodeKey{tier, top->free_gpus, top->free_cpu, top->free_memory,
                                            NodeKey::kLowestRank, INT_MIN});
               same != keys.end(); ++same) {
            if (usable(*same) && MakeWhole(same->position, k, cand)) {
              Count(cand.pos);
              best = cand;
              break;
            }
          }
        }
      } else {
        auto it = keys.lower_bound(NodeKey{tier, g, c, m, NodeKey::kLowestRank, 0});
        while (it != keys.end() && it->tier == tier) {
          if (it->free_cpu < c) {
            it = keys.lower_bound(NodeKey{tier, it->free_gpus, c, m, NodeKey::kLowestRank, 0});
            continue;
          }
          // Every feasible node: nodes with as many free GPUs may differ in their partly used
          // timeslice GPUs and their CPU, which fragmentation weighs; unless every node of the
          // index is of one GPU kind (by_capacity_): then the first usable node of each free
          // capacity stands for the rest, which fragment alike and lose the name tie-break.
          if (usable(*it) && MakeWhole(it->position, k, cand)) {
            cands.push_back(cand);
            if (by_capacity_ && it->free_memory < LLONG_MAX) {
              it = keys.lower_bound(NodeKey{tier, it->free_gpus, it->free_cpu, it->free_memory + 1,
                                            NodeKey::kLowestRank, 0});
              continue;
            }
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
    const SortedBlocks<NodeKey>& keys = index_->keys;
    const int last_tier = filter_.needs_gpus ? 0 : 1;
    for (int tier = 0; tier <= last_tier; ++tier) {
      auto it = keys.lower_bound(NodeKey{tier, g, c, m, NodeKey::kLowestRank, 0});
      while (it != keys.end() && it->tier == tier) {
        if (it->free_cpu < c) {
          it = keys.lower_bound(NodeKey{tier, it->free_gpus, c, m, NodeKey::kLowestRank, 0});
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
        worker.position_hint = pos;
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
        worker.position_hint = pos;
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

  // FGD over an index whose nodes group by free capacity (FragmentationGrouping): whole-GPU
  // steps score one node per capacity.
  bool by_capacity_ = false;
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
  // WholeFragmentationOnce: (position << 32 | workers) -> fragmentation.
  std::unordered_map<std::uint64_t, double> whole_fragmentation_;
};

}  // namespace

std::optional<PlannedGang> PlanGang(const ClusterImpl& impl, const StaticFilter& filter,
                                    const Index* index, const model::JobSpec& spec,
                                    const PlanOptions& options) {
  return Planner(impl, filter, index, spec, options).Run();
}

}  // namespace drover::sched::internal
