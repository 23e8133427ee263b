// The placement helpers the gang planner and the node scorer share (placement_support.h).

#include "drover/sched/placement_support.h"

#include <algorithm>
#include <utility>

namespace drover::sched::internal {
namespace {

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

}  // namespace

int ClampToInt(std::int64_t value) {
  return static_cast<int>(std::clamp<std::int64_t>(value, 0, INT_MAX));
}

void SignatureAfter(const ClusterImpl& impl, int pos, std::int64_t cpu,
                    const std::vector<int>& taken, FragmentationCache& cache,
                    std::vector<std::int64_t>& out) {
  out.clear();
  out.push_back(std::max<std::int64_t>(impl.FreeCpu(pos) - cpu, 0));
  const std::size_t n = impl.nodes[pos].gpus.size();
  const NodeState& state = impl.states[pos];
  if (state.one_gpu_kind && n > 0) {
    // The usual node: every GPU exclusive and of one model, so GPU i's code is the model's with
    // 1000 free milli-GPUs if it is wholly free, else with 0, less taken[i]. Its wholly free GPUs
    // are counted (NodeState::free_gpus): only the taken ones are looked at, and the model is
    // looked up once.
    const int model = cache.ModelId(state.one_gpu_model);
    int untaken_free = state.free_gpus;
    for (std::size_t i = 0; i < taken.size() && i < n; ++i) {
      if (taken[i] <= 0) continue;
      const bool whole_free = impl.WholeFree(pos, i);
      if (whole_free) --untaken_free;
      const int left =
          std::clamp((whole_free ? kShareMillisPerGpu : 0) - taken[i], 0, kShareMillisPerGpu);
      out.push_back(FragmentationCache::GpuCode(model, false, left));
    }
    // The GPUs not taken: those not free, then the free ones.
    const std::size_t untaken = n - (out.size() - 1);
    const std::size_t free = std::min<std::size_t>(std::max(untaken_free, 0), untaken);
    out.resize(out.size() + untaken - free, FragmentationCache::GpuCode(model, false, 0));
    out.resize(out.size() + free, FragmentationCache::GpuCode(model, false, kShareMillisPerGpu));
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t code = GpuCodeAfter(impl, pos, i, i < taken.size() ? taken[i] : 0, cache);
      if (code >= 0) out.push_back(code);
    }
  }
  std::sort(out.begin() + 1, out.end());
}

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

std::vector<int> ChooseWholeGpus(const ClusterImpl& impl, const StaticFilter& filter, int pos,
                                 int count, const std::vector<int>& taken) {
  std::vector<int> chosen;
  if (count <= 0) return chosen;
  const model::Node& node = impl.nodes[pos];
  const NodeState& state = impl.states[pos];
  const bool mig = state.mig_gpus;
  const bool shares = !state.shares.empty();
  auto usable = [&](std::size_t i) {
    const model::Gpu& gpu = node.gpus[i];
    // ClusterState::Impl::WholeFree, with the node's lookups hoisted.
    if (state.GpuUsed(gpu.index) || (mig && gpu.sharing == model::GpuSharing::kMig) ||
        (shares && state.FindShare(gpu.index) != nullptr) ||
        (!taken.empty() && std::find(taken.begin(), taken.end(), gpu.index) != taken.end())) {
      return false;
    }
    return filter.GpuMatches(state.gpu_models_lower[i], gpu.memory_bytes);
  };
  // The usual node: every usable GPU in one topology group, the one run below; its lowest
  // indices are the choice, found without pairing each GPU with its group.
  chosen.reserve(node.gpus.size());
  const std::string* group = nullptr;
  bool one_group = true;
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    if (!usable(i)) continue;
    const model::Gpu& gpu = node.gpus[i];
    if (group == nullptr) {
      group = &gpu.topology_group;
    } else if (one_group && gpu.topology_group != *group) {
      one_group = false;
    }
    chosen.push_back(gpu.index);
  }
  if (one_group) {
    std::sort(chosen.begin(), chosen.end());
    chosen.resize(std::min<std::size_t>(chosen.size(), count));
    return chosen;
  }
  // Free matching GPUs as (group, index), sorted: each group is a run, indices ascending.
  std::vector<std::pair<const std::string*, int>> free;
  free.reserve(chosen.size());
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    if (usable(i)) free.emplace_back(&node.gpus[i].topology_group, node.gpus[i].index);
  }
  chosen.clear();
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
  for (const auto& [gpu_group, index] : free) chosen.push_back(index);
  std::sort(chosen.begin(), chosen.end());
  chosen.resize(std::min<std::size_t>(chosen.size(), count));
  return chosen;
}

int LabelScore(const ClusterImpl& impl, int pos, const model::JobSpec& spec) {
  int score = 0;
  const auto& labels = impl.nodes[pos].labels;
  for (const model::LabelPreference& pref : spec.preferences.node_labels) {
    auto it = labels.find(pref.key);
    if (it != labels.end() && it->second == pref.value) score += pref.weight;
  }
  return score;
}

}  // namespace drover::sched::internal
