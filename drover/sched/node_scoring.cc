// The node scorer (node_scoring.h): FGD and the FGD paper's baselines, scored node by node.

#include "drover/sched/node_scoring.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "drover/sched/placement_support.h"

namespace drover::sched::internal {
namespace {

// Plans a single-worker job by scoring every feasible node (the kube-scheduler's model): the
// highest score wins; ties go to options.rng uniformly, else to the node name. The scores of
// the FGD paper's baselines are theirs (integer scores of 0..100, as its simulator computes
// them), so that the simulator can reproduce its experiment; kFragmentation scores the exact
// growth of fragmentation plus CPU-stranded GPUs (fragmentation.h), memoized by node state. In
// a FragmentationCache (under kFragmentation the one lent, PlanOptions::fragmentation_cache,
// else the cluster's own for the mix; under other scorings only one lent) what each node offers
// this kind of request (fit, score) is remembered until the node changes: a simulation or a
// server that places thousands of jobs of a few shapes re-evaluates only the nodes that changed.
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
    if (fgd_) {
      fragmentation_.Init(impl, spec, options);
      memo_ = &fragmentation_.cache();  // the lent cache, else the cluster's for the mix
    }
    if (memo_ != nullptr) {
      std::string& kind = memo_->scratch().demand_key;
      kind = options.demand_key ? *options.demand_key : DemandKey(filter, spec);
      kind += "/scoring=";
      kind += model::ScoringName(options.scoring);
      fits_ = &memo_->Fits(memo_->DemandId(kind), impl.nodes.size());
    }
  }

  std::optional<PlannedGang> Run() {
    int feasible = 0;
    switch (Grouping()) {
      case Group::kCapacity:
        WalkIndex(filter_, *index_, demand_, options_.excluded, [&](const NodeKey& key) {
          Visit(key.position, feasible);
          return true;  // one node per capacity
        });
        break;
      case Group::kCapacityAndModel: {
        // Keys come by capacity, names ascending within one: score the first node of each
        // model in each capacity, and leave the capacity once every model of the index's
        // members was seen in it (none other can follow).
        const NodeKey* group = nullptr;
        std::vector<const std::string*> seen;
        std::size_t members_seen = 0;  // models of seen that are in index_->member_models
        WalkIndex(filter_, *index_, demand_, options_.excluded, [&](const NodeKey& key) {
          if (group == nullptr || !SameCapacity(*group, key)) {
            group = &key;
            seen.clear();
            members_seen = 0;
          }
          const std::string* model = &impl_.states[key.position].one_gpu_model;
          for (const std::string* other : seen) {
            if (*other == *model) return false;
          }
          seen.push_back(model);
          if (index_->member_models.contains(*model)) ++members_seen;
          Visit(key.position, feasible);
          return members_seen == index_->member_models.size();
        });
        break;
      }
      case Group::kNone:
        ForEachEligible(
            impl_, filter_, index_, demand_, options_.excluded,
            [&](int pos) { Visit(pos, feasible); }, memo_ == nullptr);
        break;
    }
    if (best_ < 0) return std::nullopt;
    PlannedGang gang;
    WorkerAssignment worker;
    worker.rank = 0;
    worker.node = impl_.nodes[best_].name;
    worker.position_hint = best_;
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

  Group Grouping() const {
    return fgd_ ? FragmentationGrouping(index_, options_, spec_, fragmentation_.mix())
                : Group::kNone;
  }

  static bool SameCapacity(const NodeKey& a, const NodeKey& b) {
    return a.tier == b.tier && a.free_gpus == b.free_gpus && a.free_cpu == b.free_cpu &&
           a.free_memory == b.free_memory;
  }

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
    FragmentationCache::Scratch& scratch = fragmentation_.cache().scratch();
    std::vector<int>& taken = scratch.taken;
    std::vector<std::int64_t>& signature = scratch.signature;
    taken.assign(n, 0);
    if (!filter_.shares()) {
      WholeGpusInOrder(impl_, pos, filter_, demand_.gpus, scratch.gpus);
      for (int i : scratch.gpus) taken[i] = kShareMillisPerGpu;
      SignatureAfter(impl_, pos, demand_.cpu, taken, fragmentation_.cache(), signature);
      return fragmentation_.Value(signature) - before;
    }
    double best = 0.0;
    gpu = -1;
    for (std::size_t i = 0; i < n; ++i) {
      if (HostFree(pos, i) < 0) continue;
      taken[i] = demand_.share_millis;
      SignatureAfter(impl_, pos, demand_.cpu, taken, fragmentation_.cache(), signature);
      taken[i] = 0;
      const double delta = fragmentation_.Value(signature) - before;
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
  FragmentationCache* memo_;  // borrowed; null only for other scorings lent no cache
  std::vector<FragmentationCache::Fit>* fits_ = nullptr;  // by node position, in memo_
  FragmentationInputs fragmentation_;

  int best_ = -1;
  Fit best_fit_;
  Fit scratch_;
  int best_label_ = 0;
  double best_score_ = 0.0;
  double best_fill_ = 0.0;
  int ties_ = 0;
};

}  // namespace

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

std::optional<PlannedGang> PlanScored(const ClusterImpl& impl, const StaticFilter& filter,
                                      const Index* index, const model::JobSpec& spec,
                                      const PlanOptions& options) {
  return ScoredPlanner(impl, filter, index, spec, options).Run();
}

}  // namespace drover::sched::internal
