#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "drover/common/quantity.h"
#include "drover/sched/cluster_index.h"
#include "drover/sched/scheduler.h"

namespace drover::sched {
namespace internal {

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

namespace {

// Separators that do not occur in names, labels or models.
constexpr char kField = '\x1f';
constexpr char kItem = '\x1e';

std::string EncodeToleration(const model::Toleration& t) {
  std::string out = t.key;
  out += kField;
  out += t.op == model::Toleration::Operator::kExists ? 'E' : '=';
  out += kField;
  out += t.value;
  out += kField;
  out += t.effect ? std::string(model::TaintEffectName(*t.effect)) : std::string("*");
  return out;
}

}  // namespace

StaticFilter StaticFilter::From(const model::Requirements& requirements) {
  StaticFilter filter;
  filter.needs_gpus = requirements.per_worker.gpus > 0;
  if (filter.needs_gpus) {
    for (const std::string& model : requirements.gpu_models) {
      filter.gpu_models_lower.push_back(Lower(model));
    }
    std::sort(filter.gpu_models_lower.begin(), filter.gpu_models_lower.end());
    filter.gpu_models_lower.erase(
        std::unique(filter.gpu_models_lower.begin(), filter.gpu_models_lower.end()),
        filter.gpu_models_lower.end());
    filter.gpu_memory_bytes = requirements.gpu_memory_bytes;
  }
  filter.node_selector = requirements.node_selector;
  filter.tolerations = requirements.tolerations;

  std::string& key = filter.key;
  key += filter.needs_gpus ? 'G' : 'C';
  key += kItem;
  for (const std::string& model : filter.gpu_models_lower) {
    key += model;
    key += kField;
  }
  key += kItem;
  key += std::to_string(filter.gpu_memory_bytes);
  key += kItem;
  for (const auto& [label, value] : filter.node_selector) {
    key += label;
    key += kField;
    key += value;
    key += kField;
  }
  key += kItem;
  std::vector<std::string> tolerations;
  for (const model::Toleration& t : filter.tolerations) tolerations.push_back(EncodeToleration(t));
  std::sort(tolerations.begin(), tolerations.end());
  for (const std::string& t : tolerations) {
    key += t;
    key += kItem;
  }
  return filter;
}

bool StaticFilter::GpuMatches(const std::string& model_lower, std::int64_t memory_bytes) const {
  if (memory_bytes < gpu_memory_bytes) return false;
  if (gpu_models_lower.empty()) return true;
  return std::binary_search(gpu_models_lower.begin(), gpu_models_lower.end(), model_lower);
}

bool NodeState::GpuUsed(int index) const {
  return std::binary_search(used_gpus.begin(), used_gpus.end(), index);
}

}  // namespace internal

using internal::Index;
using internal::NodeKey;
using internal::NodeState;
using internal::StaticFilter;

int ClusterState::Impl::Find(const std::string& name) const {
  auto it = position_by_name.find(name);
  return it == position_by_name.end() ? -1 : it->second;
}

NodeKey ClusterState::Impl::KeyOf(int pos, const StaticFilter& filter) const {
  NodeKey key;
  key.tier = (!filter.needs_gpus && !nodes[pos].gpus.empty()) ? 1 : 0;
  key.free_gpus = states[pos].free_gpus;
  key.free_cpu = FreeCpu(pos);
  key.free_memory = FreeMemory(pos);
  key.name = nodes[pos].name.value();
  key.position = pos;
  return key;
}

bool ClusterState::Impl::StaticEligible(int pos, const StaticFilter& filter) const {
  const model::Node& node = nodes[pos];
  for (const auto& [label, value] : filter.node_selector) {
    auto it = node.labels.find(label);
    if (it == node.labels.end() || it->second != value) return false;
  }
  for (const model::Taint& taint : node.taints) {
    if (taint.effect == model::TaintEffect::kPreferNoSchedule) continue;
    bool tolerated = std::any_of(filter.tolerations.begin(), filter.tolerations.end(),
                                 [&](const model::Toleration& t) { return Tolerates(t, taint); });
    if (!tolerated) return false;
  }
  if (!filter.needs_gpus) return true;
  const NodeState& state = states[pos];
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    if (filter.GpuMatches(state.gpu_models_lower[i], node.gpus[i].memory_bytes)) return true;
  }
  return false;
}

bool ClusterState::Impl::AllGpusMatch(int pos, const StaticFilter& filter) const {
  const model::Node& node = nodes[pos];
  const NodeState& state = states[pos];
  if (!filter.needs_gpus) return true;
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    if (!filter.GpuMatches(state.gpu_models_lower[i], node.gpus[i].memory_bytes)) return false;
  }
  return true;
}

int ClusterState::Impl::MatchingFreeGpus(int pos, const StaticFilter& filter,
                                         const Index* index) const {
  const NodeState& state = states[pos];
  if (!filter.needs_gpus || (index != nullptr && index->all_gpus_match[pos])) {
    return state.free_gpus;
  }
  const model::Node& node = nodes[pos];
  int count = 0;
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    if (!state.GpuUsed(node.gpus[i].index) &&
        filter.GpuMatches(state.gpu_models_lower[i], node.gpus[i].memory_bytes)) {
      ++count;
    }
  }
  return count;
}

const Index* ClusterState::Impl::FindIndex(const StaticFilter& filter) const {
  auto it = index_by_filter.find(filter.key);
  return it == index_by_filter.end() ? nullptr : it->second;
}

Index& ClusterState::Impl::GetOrBuildIndex(const StaticFilter& filter) {
  ++tick;
  auto it = index_by_filter.find(filter.key);
  if (it != index_by_filter.end()) {
    it->second->last_used = tick;
    return *it->second;
  }
  if (indexes.size() >= static_cast<std::size_t>(ClusterState::kMaxIndexes)) {
    auto oldest =
        std::min_element(indexes.begin(), indexes.end(),
                         [](const auto& a, const auto& b) { return a->last_used < b->last_used; });
    index_by_filter.erase((*oldest)->filter.key);
    indexes.erase(oldest);
    ++index_generation;
  }
  auto index = std::make_unique<Index>();
  index->filter = filter;
  index->last_used = tick;
  index->member.assign(nodes.size(), 0);
  index->all_gpus_match.assign(nodes.size(), 0);
  for (int pos = 0; pos < static_cast<int>(nodes.size()); ++pos) {
    if (!StaticEligible(pos, filter)) continue;
    index->member[pos] = 1;
    index->all_gpus_match[pos] = AllGpusMatch(pos, filter) ? 1 : 0;
    index->keys.insert(index->keys.end(), KeyOf(pos, filter));
  }
  Index& ref = *index;
  index_by_filter.emplace(filter.key, index.get());
  indexes.push_back(std::move(index));
  return ref;
}

void ClusterState::Impl::Unindex(int pos) {
  for (const auto& index : indexes) {
    if (pos < static_cast<int>(index->member.size()) && index->member[pos]) {
      index->keys.erase(KeyOf(pos, index->filter));
    }
  }
}

void ClusterState::Impl::Reindex(int pos) {
  for (const auto& index : indexes) {
    if (pos >= static_cast<int>(index->member.size())) {
      index->member.resize(pos + 1, 0);
      index->all_gpus_match.resize(pos + 1, 0);
    }
    index->member[pos] = StaticEligible(pos, index->filter) ? 1 : 0;
    index->all_gpus_match[pos] = AllGpusMatch(pos, index->filter) ? 1 : 0;
    if (index->member[pos]) index->keys.insert(KeyOf(pos, index->filter));
  }
}

void ClusterState::Impl::Use(int pos, std::int64_t cpu, std::int64_t memory,
                             const std::vector<int>& gpus) {
  UpdateFree(pos, [&] {
    NodeState& state = states[pos];
    state.used_cpu += cpu;
    state.used_memory += memory;
    for (int gpu : gpus) {
      state.used_gpus.insert(std::lower_bound(state.used_gpus.begin(), state.used_gpus.end(), gpu),
                             gpu);
    }
    state.free_gpus -= static_cast<int>(gpus.size());
  });
}

void ClusterState::Impl::RecountFreeGpus(int pos) {
  NodeState& state = states[pos];
  state.free_gpus = 0;
  for (const model::Gpu& gpu : nodes[pos].gpus) {
    if (!state.GpuUsed(gpu.index)) ++state.free_gpus;
  }
}

ClusterState::ClusterState() : impl_(std::make_unique<Impl>()) {}
ClusterState::~ClusterState() = default;
ClusterState::ClusterState(ClusterState&&) noexcept = default;
ClusterState& ClusterState::operator=(ClusterState&&) noexcept = default;

void ClusterState::UpsertNode(const model::Node& node) {
  Impl& impl = *impl_;
  int pos = impl.Find(node.name.value());
  if (pos < 0) {
    pos = static_cast<int>(impl.nodes.size());
    impl.nodes.push_back(node);
    impl.states.emplace_back();
    impl.position_by_name.emplace(node.name.value(), pos);
  } else {
    impl.Unindex(pos);
    impl.nodes[pos] = node;
  }
  NodeState& state = impl.states[pos];
  state.gpu_models_lower.clear();
  for (const model::Gpu& gpu : node.gpus)
    state.gpu_models_lower.push_back(internal::Lower(gpu.model));
  impl.RecountFreeGpus(pos);
  impl.Reindex(pos);
}

void ClusterState::RemoveNode(const NodeId& name) {
  Impl& impl = *impl_;
  int pos = impl.Find(name.value());
  if (pos < 0) return;
  impl.nodes.erase(impl.nodes.begin() + pos);
  impl.states.erase(impl.states.begin() + pos);
  impl.position_by_name.erase(name.value());
  for (auto& [node_name, p] : impl.position_by_name) {
    if (p > pos) --p;
  }
  // Positions moved: indexes are rebuilt on demand.
  impl.indexes.clear();
  impl.index_by_filter.clear();
  ++impl.index_generation;
}

namespace {

std::int64_t NonNegative(std::int64_t value) { return std::max<std::int64_t>(value, 0); }

}  // namespace

Status ClusterState::Allocate(const Placement& placement, const model::Resources& per_worker) {
  Impl& impl = *impl_;
  const std::int64_t cpu = NonNegative(per_worker.cpu_millis);
  const std::int64_t memory = NonNegative(per_worker.memory_bytes);

  // Demand per node position, validated before anything changes.
  struct NodeDemand {
    std::int64_t cpu = 0;
    std::int64_t memory = 0;
    std::vector<int> gpus;
  };
  std::map<int, NodeDemand> demand;
  for (const WorkerAssignment& worker : placement.workers) {
    int pos = impl.Find(worker.node.value());
    if (pos < 0) {
      return FailedPrecondition(
          fmt::format("job {}: node {} is unknown", placement.job.value(), worker.node.value()));
    }
    NodeDemand& d = demand[pos];
    d.cpu += cpu;
    d.memory += memory;
    d.gpus.insert(d.gpus.end(), worker.gpus.begin(), worker.gpus.end());
  }
  for (auto& [pos, d] : demand) {
    const model::Node& node = impl.nodes[pos];
    const NodeState& state = impl.states[pos];
    const std::string& name = node.name.value();
    if (d.cpu > impl.FreeCpu(pos)) {
      return FailedPrecondition(
          fmt::format("job {}: node {} has {} CPU free, needs {}", placement.job.value(), name,
                      FormatCpuMillis(impl.FreeCpu(pos)), FormatCpuMillis(d.cpu)));
    }
    if (d.memory > impl.FreeMemory(pos)) {
      return FailedPrecondition(
          fmt::format("job {}: node {} has {} memory free, needs {}", placement.job.value(), name,
                      FormatBytes(impl.FreeMemory(pos)), FormatBytes(d.memory)));
    }
    std::sort(d.gpus.begin(), d.gpus.end());
    for (std::size_t i = 0; i < d.gpus.size(); ++i) {
      int gpu = d.gpus[i];
      if (i > 0 && d.gpus[i - 1] == gpu) {
        return FailedPrecondition(fmt::format("job {}: GPU {} of node {} is assigned twice",
                                              placement.job.value(), gpu, name));
      }
      bool exists = std::any_of(node.gpus.begin(), node.gpus.end(),
                                [gpu](const model::Gpu& g) { return g.index == gpu; });
      if (!exists) {
        return FailedPrecondition(
            fmt::format("job {}: node {} has no GPU {}", placement.job.value(), name, gpu));
      }
      if (state.GpuUsed(gpu)) {
        return FailedPrecondition(
            fmt::format("job {}: GPU {} of node {} is not free", placement.job.value(), gpu, name));
      }
    }
  }
  for (const auto& [pos, d] : demand) impl.Use(pos, d.cpu, d.memory, d.gpus);
  return OkStatus();
}

void ClusterState::Release(const Placement& placement, const model::Resources& per_worker) {
  Impl& impl = *impl_;
  const std::int64_t cpu = NonNegative(per_worker.cpu_millis);
  const std::int64_t memory = NonNegative(per_worker.memory_bytes);
  for (const WorkerAssignment& worker : placement.workers) {
    int pos = impl.Find(worker.node.value());
    if (pos < 0) continue;
    impl.UpdateFree(pos, [&] {
      NodeState& state = impl.states[pos];
      state.used_cpu = NonNegative(state.used_cpu - cpu);
      state.used_memory = NonNegative(state.used_memory - memory);
      for (int gpu : worker.gpus) {
        auto it = std::lower_bound(state.used_gpus.begin(), state.used_gpus.end(), gpu);
        if (it != state.used_gpus.end() && *it == gpu) state.used_gpus.erase(it);
      }
      impl.RecountFreeGpus(pos);
    });
  }
}

const std::vector<model::Node>& ClusterState::nodes() const { return impl_->nodes; }

std::optional<model::Resources> ClusterState::Free(const NodeId& name) const {
  int pos = impl_->Find(name.value());
  if (pos < 0) return std::nullopt;
  return model::Resources{impl_->FreeCpu(pos), impl_->FreeMemory(pos),
                          impl_->states[pos].free_gpus};
}

std::vector<int> ClusterState::FreeGpus(const NodeId& name) const {
  std::vector<int> out;
  int pos = impl_->Find(name.value());
  if (pos < 0) return out;
  for (const model::Gpu& gpu : impl_->nodes[pos].gpus) {
    if (!impl_->states[pos].GpuUsed(gpu.index)) out.push_back(gpu.index);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace drover::sched
