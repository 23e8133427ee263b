// FGD's fragmentation measure (fragmentation.h).

#include "drover/sched/fragmentation.h"

#include <algorithm>
#include <tuple>

#include "drover/sched/cluster_index.h"
#include "drover/sched/placement.h"

namespace drover::sched {
namespace {

constexpr int kMilli = internal::kShareMillisPerGpu;

// The free milli-GPUs of a node state's signature (FragmentationCache::Get), over its GPUs.
std::int64_t FreeGpuAmount(const std::vector<std::int64_t>& signature) {
  std::int64_t all = 0;
  for (std::size_t i = 1; i < signature.size(); ++i) all += signature[i] & 0xfff;
  return all;
}

}  // namespace

std::size_t FragmentationCache::VectorHash::operator()(const std::vector<std::int64_t>& v) const {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ v.size();
  for (std::int64_t x : v) {
    h ^= static_cast<std::uint64_t>(x) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  }
  return static_cast<std::size_t>(h);
}

int FragmentationCache::ModelId(const std::string& model_lower) {
  if (auto it = model_ids_.find(model_lower); it != model_ids_.end()) return it->second;
  model_ids_.emplace(model_lower, static_cast<int>(models_.size()));
  models_.push_back(model_lower);
  return static_cast<int>(models_.size()) - 1;
}

bool FragmentationCache::Accepts(const WorkloadMix::Shape& shape, int model_id) const {
  if (shape.gpu_models_lower.empty()) return true;
  return std::binary_search(shape.gpu_models_lower.begin(), shape.gpu_models_lower.end(),
                            models_[model_id]);
}

int FragmentationCache::DemandId(const std::string& key) {
  // Looked up before any insertion: emplace would build (allocate) a node for a key it has.
  if (auto it = demand_ids_.find(key); it != demand_ids_.end()) return it->second;
  if (demand_ids_.size() >= kMostDemands) {
    demand_ids_.clear();
    fits_.clear();
    fit_count_ = 0;
  }
  const auto id = static_cast<int>(demand_ids_.size());
  demand_ids_.emplace(key, id);
  // A slot past the kinds named may be one that Recycle() left, reset: it is reused.
  if (static_cast<std::size_t>(id) == fits_.size()) fits_.emplace_back();
  return id;
}

void FragmentationCache::Recycle() {
  memo_.clear();
  feed_ = Feed{};
  // Version 0 matches no node (NodeState::version starts at 1), so every entry is recomputed.
  for (NodeEntry& node : nodes_) node.version = 0;
  demand_ids_.clear();
  for (std::vector<Fit>& fits : fits_) std::fill(fits.begin(), fits.end(), Fit{});
}

std::vector<FragmentationCache::Fit>& FragmentationCache::Fits(int demand_id, std::size_t nodes) {
  std::vector<Fit>& fits = fits_[demand_id];
  if (fits.size() >= nodes) return fits;
  if (fit_count_ + (nodes - fits.size()) > kMostFits) {
    for (std::vector<Fit>& kind : fits_) std::vector<Fit>().swap(kind);
    fit_count_ = 0;
  }
  fit_count_ += nodes - fits.size();
  fits.resize(nodes);
  return fits;
}

FragmentationCache& FragmentationCaches::For(const WorkloadMix& mix) {
  ++tick_;
  for (Entry& entry : entries_) {
    if (entry.shapes == mix.shapes) {
      entry.used = tick_;
      return *entry.cache;
    }
  }
  if (entries_.size() >= kMostMixes) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                   [](const Entry& a, const Entry& b) { return a.used < b.used; });
    oldest->shapes = mix.shapes;
    oldest->used = tick_;
    oldest->cache->Recycle();
    return *oldest->cache;
  }
  entries_.push_back(Entry{mix.shapes, tick_, std::make_unique<FragmentationCache>()});
  return *entries_.back().cache;
}

double FragmentationCache::Get(const std::vector<std::int64_t>& signature, const WorkloadMix& mix) {
  auto it = memo_.find(signature);
  if (it != memo_.end()) return it->second;
  const double value = Compute(signature, mix);
  if (memo_.size() >= kMostStates) memo_.clear();
  memo_.emplace(signature, value);
  return value;
}

double FragmentationCache::ScoringValue(const std::vector<std::int64_t>& signature,
                                        const WorkloadMix& mix) {
  const double value = Get(signature, mix);
  if (!feed_.known) {
    double cpu = 0.0;
    double gpu = 0.0;
    for (const WorkloadMix::Shape& shape : mix.shapes) {
      const std::int64_t amount =
          shape.gpus > 0 ? std::int64_t{shape.gpus} * kMilli : shape.gpu_share_millis;
      if (amount <= 0) continue;
      cpu += shape.weight * static_cast<double>(shape.cpu);
      gpu += shape.weight * static_cast<double>(amount);
      feed_.weight += shape.weight;
    }
    feed_.cpu_per_milli_gpu = gpu > 0 ? cpu / gpu : 0.0;
    feed_.known = true;
  }
  if (signature.empty() || feed_.cpu_per_milli_gpu <= 0) return value;
  const std::int64_t all = FreeGpuAmount(signature);
  const double fed = static_cast<double>(signature[0]) / feed_.cpu_per_milli_gpu;
  return value + feed_.weight * std::max(0.0, static_cast<double>(all) - fed);
}

double FragmentationCache::Compute(const std::vector<std::int64_t>& signature,
                                   const WorkloadMix& mix) const {
  if (signature.empty()) return 0.0;
  const std::int64_t cpu = signature[0];
  const std::int64_t all = FreeGpuAmount(signature);
  if (all == 0) return 0.0;
  double total = 0.0;
  for (const WorkloadMix::Shape& shape : mix.shapes) {
    const bool share = shape.gpus == 0 && shape.gpu_share_millis > 0;
    const int count = share ? 1 : shape.gpus;
    const int need = share ? shape.gpu_share_millis : kMilli;
    std::int64_t unusable = all;
    if (count > 0 && cpu >= shape.cpu) {
      bool accessible = false;
      int hosts = 0;
      std::int64_t left_over = 0;
      for (std::size_t i = 1; i < signature.size(); ++i) {
        const std::int64_t code = signature[i];
        const int free = static_cast<int>(code & 0xfff);
        const bool timeslice = (code >> 12) & 1;
        const bool model_ok = Accepts(shape, static_cast<int>(code >> 16));
        accessible = accessible || model_ok;
        if (model_ok && (share ? timeslice : true) && free >= need) {
          ++hosts;
        } else {
          left_over += free;
        }
      }
      if (accessible && hosts >= count) unusable = left_over;
    }
    total += shape.weight * static_cast<double>(unusable);
  }
  return total;
}

WorkloadMix MixOf(const std::vector<const model::JobSpec*>& specs) {
  WorkloadMix mix;
  double total = 0.0;
  for (const model::JobSpec* spec : specs) {
    const internal::Demand demand = internal::PerWorker(*spec);
    if (demand.mode == internal::GpuMode::kMig) continue;
    WorkloadMix::Shape shape;
    shape.gpus = demand.gpus;
    shape.gpu_share_millis = demand.share_millis;
    shape.cpu = demand.cpu;
    for (const std::string& model : spec->requirements.gpu_models) {
      shape.gpu_models_lower.push_back(internal::Lower(model));
    }
    std::sort(shape.gpu_models_lower.begin(), shape.gpu_models_lower.end());
    shape.gpu_models_lower.erase(
        std::unique(shape.gpu_models_lower.begin(), shape.gpu_models_lower.end()),
        shape.gpu_models_lower.end());
    shape.weight = 0.0;
    auto it = std::find_if(mix.shapes.begin(), mix.shapes.end(), [&](const WorkloadMix::Shape& s) {
      return s.gpus == shape.gpus && s.gpu_share_millis == shape.gpu_share_millis &&
             s.cpu == shape.cpu && s.gpu_models_lower == shape.gpu_models_lower;
    });
    if (it == mix.shapes.end()) it = mix.shapes.insert(mix.shapes.end(), std::move(shape));
    it->weight += internal::GangSize(*spec);
    total += internal::GangSize(*spec);
  }
  for (WorkloadMix::Shape& shape : mix.shapes) shape.weight /= total;
  std::stable_sort(mix.shapes.begin(), mix.shapes.end(),
                   [](const WorkloadMix::Shape& a, const WorkloadMix::Shape& b) {
                     if (a.weight != b.weight) return a.weight > b.weight;
                     return std::tie(a.cpu, a.gpus, a.gpu_share_millis, a.gpu_models_lower) <
                            std::tie(b.cpu, b.gpus, b.gpu_share_millis, b.gpu_models_lower);
                   });
  return mix;
}

WorkloadMix TypicalMix(const WorkloadMix& mix, double coverage) {
  double total = 0.0;
  for (const WorkloadMix::Shape& shape : mix.shapes) total += shape.weight;
  WorkloadMix out;
  double kept = 0.0;
  for (const WorkloadMix::Shape& shape : mix.shapes) {
    if (total > 0 && kept >= coverage * total) break;
    out.shapes.push_back(shape);
    kept += shape.weight;
  }
  for (WorkloadMix::Shape& shape : out.shapes) shape.weight /= kept > 0 ? kept : 1.0;
  return out;
}

double NodeFragmentation(const ClusterState& cluster, const NodeId& node, const WorkloadMix& mix,
                         FragmentationCache* cache) {
  const internal::ClusterImpl& impl = internal::ClusterStateAccess::Get(cluster);
  const int pos = impl.Find(node.value());
  if (pos < 0) return 0.0;
  FragmentationCache own;
  FragmentationCache& memo = cache != nullptr ? *cache : own;
  std::vector<std::int64_t> signature;
  internal::FragmentationSignature(impl, pos, memo, signature);
  return memo.Get(signature, mix);
}

}  // namespace drover::sched
