#include "drover/sched/cluster_state.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <utility>

#include "drover/common/ascii.h"
#include "drover/common/quantity.h"
#include "drover/sched/cluster_index.h"

namespace drover::sched {
namespace internal {

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

GpuMode ModeOf(const model::Requirements& requirements) {
  if (requirements.per_worker.gpus > 0) return GpuMode::kWhole;
  if (requirements.gpu_share_millis > 0) return GpuMode::kTimeslice;
  if (!requirements.mig_profile.empty()) return GpuMode::kMig;
  return GpuMode::kNone;
}

ShareAmount ShareAmount::From(const model::Requirements& requirements) {
  ShareAmount share;
  share.mode = ModeOf(requirements);
  if (share.mode == GpuMode::kTimeslice) {
    share.millis = std::min(requirements.gpu_share_millis, kShareMillisPerGpu);
    share.memory = std::max<std::int64_t>(requirements.gpu_memory_bytes, 0);
  } else if (share.mode == GpuMode::kMig) {
    share.mig_profile_lower = Lower(requirements.mig_profile);
  }
  return share;
}

int ShareUse::MigUsed(std::string_view profile_lower) const {
  for (const auto& [profile, used] : mig) {
    if (profile == profile_lower) return used;
  }
  return 0;
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
  filter.mode = ModeOf(requirements);
  filter.needs_gpus = filter.mode == GpuMode::kWhole;
  if (filter.mode != GpuMode::kNone) {
    for (const std::string& model : requirements.gpu_models) {
      filter.gpu_models_lower.push_back(Lower(model));
    }
    std::sort(filter.gpu_models_lower.begin(), filter.gpu_models_lower.end());
    filter.gpu_models_lower.erase(
        std::unique(filter.gpu_models_lower.begin(), filter.gpu_models_lower.end()),
        filter.gpu_models_lower.end());
    filter.gpu_memory_bytes = requirements.gpu_memory_bytes;
  }
  if (filter.mode == GpuMode::kMig) filter.mig_profile_lower = Lower(requirements.mig_profile);
  filter.node_selector = requirements.node_selector;
  filter.tolerations = requirements.tolerations;

  std::string& key = filter.key;
  switch (filter.mode) {
    case GpuMode::kNone:
      key += 'C';
      break;
    case GpuMode::kWhole:
      key += 'G';
      break;
    case GpuMode::kTimeslice:
      key += 'T';
      break;
    case GpuMode::kMig:
      key += 'M';
      key += filter.mig_profile_lower;
      break;
  }
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

const ShareUse* NodeState::FindShare(int index) const {
  auto it = std::lower_bound(shares.begin(), shares.end(), index,
                             [](const ShareUse& use, int i) { return use.index < i; });
  return it != shares.end() && it->index == index ? &*it : nullptr;
}

ShareUse& NodeState::ShareOf(int index) {
  auto it = std::lower_bound(shares.begin(), shares.end(), index,
                             [](const ShareUse& use, int i) { return use.index < i; });
  if (it == shares.end() || it->index != index) {
    it = shares.insert(it, ShareUse{});
    it->index = index;
  }
  return *it;
}

}  // namespace internal

using internal::GpuMode;
using internal::Index;
using internal::NodeKey;
using internal::NodeState;
using internal::StaticFilter;

int ClusterState::Impl::Find(const std::string& name) const {
  auto it = position_by_name.find(name);
  return it == position_by_name.end() ? -1 : it->second;
}

int ClusterState::Impl::Find(const WorkerAssignment& worker) const {
  const int hint = worker.position_hint;
  if (hint >= 0 && hint < static_cast<int>(nodes.size()) && nodes[hint].name == worker.node) {
    return hint;
  }
  return Find(worker.node.value());
}

std::vector<char> ClusterState::Impl::MaskOf(const std::vector<NodeId>& names) const {
  std::vector<char> mask(nodes.size(), 0);
  for (const NodeId& name : names) {
    const int pos = Find(name.value());
    if (pos >= 0) mask[pos] = 1;
  }
  return mask;
}

NodeKey ClusterState::Impl::KeyOf(int pos, const StaticFilter& filter) const {
  NodeKey key;
  key.tier = (!filter.needs_gpus && !nodes[pos].gpus.empty()) ? 1 : 0;
  key.free_gpus = states[pos].free_gpus;
  key.free_cpu = FreeCpu(pos);
  key.free_memory = FreeMemory(pos);
  key.name_rank = name_rank[pos];
  key.position = pos;
  return key;
}

int ClusterState::Impl::FreeShareMillis(int pos, std::size_t i) const {
  const model::Gpu& gpu = nodes[pos].gpus[i];
  if (gpu.sharing != model::GpuSharing::kTimeslice) return 0;
  const NodeState& state = states[pos];
  if (state.GpuUsed(gpu.index)) return 0;
  const internal::ShareUse* use = state.FindShare(gpu.index);
  return std::max(internal::kShareMillisPerGpu - (use ? use->millis : 0), 0);
}

std::int64_t ClusterState::Impl::FreeShareMemory(int pos, std::size_t i) const {
  const model::Gpu& gpu = nodes[pos].gpus[i];
  const internal::ShareUse* use = states[pos].FindShare(gpu.index);
  return gpu.memory_bytes - (use ? use->memory : 0);
}

int ClusterState::Impl::MigInstances(int pos, std::size_t i, std::string_view profile_lower) const {
  const model::Gpu& gpu = nodes[pos].gpus[i];
  if (gpu.sharing != model::GpuSharing::kMig) return 0;
  int count = 0;
  for (const model::MigSlots& slots : gpu.mig) {
    if (EqualsIgnoringCase(slots.profile, profile_lower)) count += std::max(slots.count, 0);
  }
  return count;
}

int ClusterState::Impl::FreeMigInstances(int pos, std::size_t i,
                                         std::string_view profile_lower) const {
  const int total = MigInstances(pos, i, profile_lower);
  if (total == 0) return 0;
  const model::Gpu& gpu = nodes[pos].gpus[i];
  const NodeState& state = states[pos];
  if (state.GpuUsed(gpu.index)) return 0;
  const internal::ShareUse* use = state.FindShare(gpu.index);
  return std::max(total - (use ? use->MigUsed(profile_lower) : 0), 0);
}

bool ClusterState::Impl::GpuEligible(int pos, std::size_t i, const StaticFilter& filter) const {
  const model::Gpu& gpu = nodes[pos].gpus[i];
  switch (filter.mode) {
    case GpuMode::kNone:
      return false;
    case GpuMode::kWhole:
      if (gpu.sharing == model::GpuSharing::kMig) return false;
      break;
    case GpuMode::kTimeslice:
      if (gpu.sharing != model::GpuSharing::kTimeslice) return false;
      break;
    case GpuMode::kMig:
      if (MigInstances(pos, i, filter.mig_profile_lower) == 0) return false;
      break;
  }
  return filter.GpuMatches(states[pos].gpu_models_lower[i], gpu.memory_bytes);
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
  if (filter.mode == GpuMode::kNone) return true;
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    if (GpuEligible(pos, i, filter)) return true;
  }
  return false;
}

bool ClusterState::Impl::AllGpusMatch(int pos, const StaticFilter& filter) const {
  if (!filter.needs_gpus) return true;
  const model::Node& node = nodes[pos];
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    if (node.gpus[i].sharing != model::GpuSharing::kMig &&
        !filter.GpuMatches(states[pos].gpu_models_lower[i], node.gpus[i].memory_bytes)) {
      return false;
    }
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
    if (WholeFree(pos, i) &&
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

void ClusterState::Impl::DropIndexes() {
  indexes.clear();
  index_by_filter.clear();
  ++index_generation;
  name_ranks_valid = false;
}

void ClusterState::Impl::RankNames() {
  std::vector<int> order(nodes.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return nodes[a].name.value() < nodes[b].name.value(); });
  name_rank.assign(nodes.size(), 0);
  for (std::size_t rank = 0; rank < order.size(); ++rank) {
    name_rank[order[rank]] = static_cast<int>(rank);
  }
  name_ranks_valid = true;
}

Index& ClusterState::Impl::GetOrBuildIndex(const StaticFilter& filter) {
  ++tick;
  auto it = index_by_filter.find(filter.key);
  if (it != index_by_filter.end()) {
    it->second->last_used = tick;
    return *it->second;
  }
  if (!name_ranks_valid) RankNames();
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
    index->keys.insert(KeyOf(pos, filter));
    CountMember(*index, pos, 1);
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
      CountMember(*index, pos, -1);
      index->member[pos] = 0;
    }
  }
}

void ClusterState::Impl::CountMember(Index& index, int pos, int delta) const {
  const NodeState& state = states[pos];
  if (!state.one_gpu_kind) {
    index.mixed_members += delta;
    return;
  }
  if (nodes[pos].gpus.empty()) return;
  auto [it, inserted] = index.member_models.emplace(state.one_gpu_model, 0);
  it->second += delta;
  if (it->second == 0) index.member_models.erase(it);
}

void ClusterState::Impl::Reindex(int pos) {
  for (const auto& index : indexes) {
    index->domains.clear();  // its labels or membership may have changed
    if (pos >= static_cast<int>(index->member.size())) {
      index->member.resize(pos + 1, 0);
      index->all_gpus_match.resize(pos + 1, 0);
    }
    index->member[pos] = StaticEligible(pos, index->filter) ? 1 : 0;
    index->all_gpus_match[pos] = AllGpusMatch(pos, index->filter) ? 1 : 0;
    if (index->member[pos]) {
      index->keys.insert(KeyOf(pos, index->filter));
      CountMember(*index, pos, 1);
    }
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
    state.version = ++next_version;
  });
}

void ClusterState::Impl::Use(int pos, std::int64_t cpu, std::int64_t memory,
                             const WorkerAssignment* workers, int n) {
  UpdateFree(pos, [&] {
    NodeState& state = states[pos];
    state.used_cpu += cpu;
    state.used_memory += memory;
    for (int w = 0; w < n; ++w) {
      for (int gpu : workers[w].gpus) {
        state.used_gpus.insert(
            std::lower_bound(state.used_gpus.begin(), state.used_gpus.end(), gpu), gpu);
        --state.free_gpus;
      }
      if (!workers[w].gpus.empty()) ++state.whole_workers[static_cast<int>(workers[w].gpus.size())];
    }
    state.version = ++next_version;
  });
}

void ClusterState::Impl::UseShares(int pos, std::int64_t cpu, std::int64_t memory,
                                   const std::vector<int>& gpus,
                                   const internal::ShareAmount& share) {
  UpdateFree(pos, [&] {
    NodeState& state = states[pos];
    state.used_cpu += cpu;
    state.used_memory += memory;
    for (int gpu : gpus) {
      internal::ShareUse& use = state.ShareOf(gpu);
      if (share.mode == GpuMode::kMig) {
        auto it =
            std::lower_bound(use.mig.begin(), use.mig.end(), share.mig_profile_lower,
                             [](const std::pair<std::string, int>& entry,
                                const std::string& profile) { return entry.first < profile; });
        if (it == use.mig.end() || it->first != share.mig_profile_lower) {
          it = use.mig.emplace(it, share.mig_profile_lower, 0);
        }
        ++it->second;
      } else {
        use.millis += share.millis;
        use.memory += share.memory;
      }
    }
    RecountFreeGpus(pos);
  });
}

void ClusterState::Impl::Unuse(int pos, std::int64_t cpu, std::int64_t memory,
                               const std::vector<int>& gpus, const internal::ShareAmount* share) {
  auto non_negative = [](std::int64_t value) { return std::max<std::int64_t>(value, 0); };
  UpdateFree(pos, [&] {
    NodeState& state = states[pos];
    state.used_cpu = non_negative(state.used_cpu - cpu);
    state.used_memory = non_negative(state.used_memory - memory);
    if (share == nullptr) {
      if (!gpus.empty()) {
        auto workers = state.whole_workers.find(static_cast<int>(gpus.size()));
        if (workers != state.whole_workers.end() && --workers->second <= 0) {
          state.whole_workers.erase(workers);
        }
      }
      // Whole GPUs: only the ones given back can become free, so count those instead of
      // recounting the node (the same count RecountFreeGpus would reach).
      for (int gpu : gpus) {
        auto it = std::lower_bound(state.used_gpus.begin(), state.used_gpus.end(), gpu);
        if (it == state.used_gpus.end() || *it != gpu) continue;
        state.used_gpus.erase(it);
        const auto& node_gpus = nodes[pos].gpus;
        for (std::size_t i = 0; i < node_gpus.size(); ++i) {
          if (node_gpus[i].index == gpu && WholeFree(pos, i)) ++state.free_gpus;
        }
      }
      state.version = ++next_version;
      return;
    }
    for (int gpu : gpus) {
      auto it = std::lower_bound(
          state.shares.begin(), state.shares.end(), gpu,
          [](const internal::ShareUse& use, int index) { return use.index < index; });
      if (it == state.shares.end() || it->index != gpu) continue;
      if (share->mode == GpuMode::kMig) {
        for (auto m = it->mig.begin(); m != it->mig.end(); ++m) {
          if (m->first != share->mig_profile_lower) continue;
          if (--m->second <= 0) it->mig.erase(m);
          break;
        }
      } else {
        it->millis = static_cast<int>(non_negative(it->millis - share->millis));
        it->memory = non_negative(it->memory - share->memory);
      }
      if (it->empty()) state.shares.erase(it);
    }
    RecountFreeGpus(pos);
  });
}

void ClusterState::Impl::RecountFreeGpus(int pos) {
  NodeState& state = states[pos];
  state.version = ++next_version;
  state.free_gpus = 0;
  state.whole_capable_gpus = 0;
  for (const model::Gpu& gpu : nodes[pos].gpus) {
    if (gpu.sharing != model::GpuSharing::kMig) ++state.whole_capable_gpus;
  }
  state.mig_gpus = state.whole_capable_gpus != static_cast<int>(nodes[pos].gpus.size());
  for (std::size_t i = 0; i < nodes[pos].gpus.size(); ++i) {
    if (WholeFree(pos, i)) ++state.free_gpus;
  }
}

void ClusterState::Impl::RebuildSharingPositions() {
  sharing_positions.clear();
  for (int pos = 0; pos < static_cast<int>(nodes.size()); ++pos) {
    const auto& gpus = nodes[pos].gpus;
    if (std::any_of(gpus.begin(), gpus.end(), [](const model::Gpu& gpu) {
          return gpu.sharing != model::GpuSharing::kExclusive;
        })) {
      sharing_positions.push_back(pos);
    }
  }
}

ClusterState::ClusterState() : impl_(std::make_unique<Impl>()) {}
ClusterState::~ClusterState() = default;
ClusterState::ClusterState(ClusterState&&) noexcept = default;
ClusterState& ClusterState::operator=(ClusterState&&) noexcept = default;

ClusterState ClusterState::Clone() const {
  ClusterState copy;
  copy.impl_->nodes = impl_->nodes;
  copy.impl_->states = impl_->states;
  copy.impl_->position_by_name = impl_->position_by_name;
  copy.impl_->name_rank = impl_->name_rank;
  copy.impl_->name_ranks_valid = impl_->name_ranks_valid;
  copy.impl_->sharing_positions = impl_->sharing_positions;
  copy.impl_->next_version = impl_->next_version;
  copy.impl_->capacity = impl_->capacity;
  return copy;
}

void ClusterState::UpsertNode(const model::Node& node) {
  Impl& impl = *impl_;
  impl.capacity.reset();
  int pos = impl.Find(node.name.value());
  if (pos < 0) {
    pos = static_cast<int>(impl.nodes.size());
    impl.nodes.push_back(node);
    impl.states.emplace_back();
    impl.position_by_name.emplace(node.name.value(), pos);
    // The new name shifts the ranks of every name after it, which the indexes' keys hold.
    impl.DropIndexes();
  } else {
    impl.Unindex(pos);
    impl.nodes[pos] = node;
  }
  NodeState& state = impl.states[pos];
  state.gpu_models_lower.clear();
  for (const model::Gpu& gpu : node.gpus) {
    state.gpu_models_lower.push_back(internal::Lower(gpu.model));
  }
  state.one_gpu_kind = true;
  state.one_gpu_model = node.gpus.empty() ? "" : state.gpu_models_lower[0];
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    if (node.gpus[i].sharing != model::GpuSharing::kExclusive ||
        state.gpu_models_lower[i] != state.one_gpu_model ||
        node.gpus[i].memory_bytes != node.gpus[0].memory_bytes) {
      state.one_gpu_kind = false;
    }
  }
  impl.RecountFreeGpus(pos);
  const bool sharing = std::any_of(node.gpus.begin(), node.gpus.end(), [](const model::Gpu& gpu) {
    return gpu.sharing != model::GpuSharing::kExclusive;
  });
  auto it = std::lower_bound(impl.sharing_positions.begin(), impl.sharing_positions.end(), pos);
  const bool listed = it != impl.sharing_positions.end() && *it == pos;
  if (sharing && !listed) impl.sharing_positions.insert(it, pos);
  if (!sharing && listed) impl.sharing_positions.erase(it);
  impl.Reindex(pos);
}

void ClusterState::RemoveNode(const NodeId& name) {
  Impl& impl = *impl_;
  int pos = impl.Find(name.value());
  if (pos < 0) return;
  impl.capacity.reset();
  impl.nodes.erase(impl.nodes.begin() + pos);
  impl.states.erase(impl.states.begin() + pos);
  impl.position_by_name.erase(name.value());
  for (auto& [node_name, p] : impl.position_by_name) {
    if (p > pos) --p;
  }
  impl.RebuildSharingPositions();
  // Positions and name ranks moved: indexes are rebuilt on demand.
  impl.DropIndexes();
}

namespace {

std::int64_t NonNegative(std::int64_t value) { return std::max<std::int64_t>(value, 0); }

// Position of the GPU with `index` in node.gpus, or -1.
int GpuPosition(const model::Node& node, int index) {
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    if (node.gpus[i].index == index) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

Status ClusterState::Allocate(const Placement& placement, const model::Requirements& requirements) {
  Impl& impl = *impl_;
  const std::int64_t cpu = NonNegative(requirements.per_worker.cpu_millis);
  const std::int64_t memory = NonNegative(requirements.per_worker.memory_bytes);
  const GpuMode mode = internal::ModeOf(requirements);
  const bool shared = mode == GpuMode::kTimeslice || mode == GpuMode::kMig;
  const internal::ShareAmount share = internal::ShareAmount::From(requirements);
  const std::string job = std::to_string(placement.job.value());

  // Demand per node position, validated before anything changes.
  struct NodeDemand {
    std::int64_t cpu = 0;
    std::int64_t memory = 0;
    std::vector<int> gpus;
  };
  std::map<int, NodeDemand> demand;
  for (const WorkerAssignment& worker : placement.workers) {
    int pos = impl.Find(worker);
    if (pos < 0) {
      return FailedPrecondition(
          fmt::format("job {}: node {} is unknown", job, worker.node.value()));
    }
    if (shared && worker.gpus.size() != 1) {
      return FailedPrecondition(fmt::format(
          "job {}: worker {} must list exactly one GPU for its {}, lists {}", job, worker.rank,
          mode == GpuMode::kMig ? "MIG instance" : "GPU share", worker.gpus.size()));
    }
    NodeDemand& d = demand[pos];
    d.cpu += cpu;
    d.memory += memory;
    d.gpus.insert(d.gpus.end(), worker.gpus.begin(), worker.gpus.end());
  }
  for (auto& [pos, d] : demand) {
    const model::Node& node = impl.nodes[pos];
    const std::string& name = node.name.value();
    if (d.cpu > impl.FreeCpu(pos)) {
      return FailedPrecondition(fmt::format("job {}: node {} has {} CPU free, needs {}", job, name,
                                            FormatCpuMillis(impl.FreeCpu(pos)),
                                            FormatCpuMillis(d.cpu)));
    }
    if (d.memory > impl.FreeMemory(pos)) {
      return FailedPrecondition(fmt::format("job {}: node {} has {} memory free, needs {}", job,
                                            name, FormatBytesApprox(impl.FreeMemory(pos)),
                                            FormatBytes(d.memory)));
    }
    std::sort(d.gpus.begin(), d.gpus.end());
    for (std::size_t k = 0; k < d.gpus.size();) {
      const int gpu = d.gpus[k];
      std::size_t end = k;
      while (end < d.gpus.size() && d.gpus[end] == gpu) ++end;
      const int times = static_cast<int>(end - k);
      k = end;
      const int i = GpuPosition(node, gpu);
      if (i < 0)
        return FailedPrecondition(fmt::format("job {}: node {} has no GPU {}", job, name, gpu));
      const model::Gpu& g = node.gpus[i];
      switch (mode) {
        case GpuMode::kNone:
        case GpuMode::kWhole:
          if (times > 1) {
            return FailedPrecondition(
                fmt::format("job {}: GPU {} of node {} is assigned twice", job, gpu, name));
          }
          if (g.sharing == model::GpuSharing::kMig) {
            return FailedPrecondition(
                fmt::format("job {}: GPU {} of node {} is in {} mode and serves only shares", job,
                            gpu, name, model::GpuSharingName(g.sharing)));
          }
          if (!impl.WholeFree(pos, i)) {
            return FailedPrecondition(
                fmt::format("job {}: GPU {} of node {} is not free", job, gpu, name));
          }
          break;
        case GpuMode::kTimeslice:
          if (g.sharing != model::GpuSharing::kTimeslice) {
            return FailedPrecondition(
                fmt::format("job {}: GPU {} of node {} is in {} mode, not timeslice", job, gpu,
                            name, model::GpuSharingName(g.sharing)));
          }
          if (std::int64_t{times} * share.millis > impl.FreeShareMillis(pos, i)) {
            return FailedPrecondition(fmt::format(
                "job {}: GPU {} of node {} has {}m of its shares free, needs {}m", job, gpu, name,
                impl.FreeShareMillis(pos, i), std::int64_t{times} * share.millis));
          }
          if (times * share.memory > impl.FreeShareMemory(pos, i)) {
            return FailedPrecondition(
                fmt::format("job {}: GPU {} of node {} has {} memory free for shares, needs {}",
                            job, gpu, name, FormatBytesApprox(impl.FreeShareMemory(pos, i)),
                            FormatBytes(times * share.memory)));
          }
          break;
        case GpuMode::kMig:
          if (g.sharing != model::GpuSharing::kMig) {
            return FailedPrecondition(
                fmt::format("job {}: GPU {} of node {} is in {} mode, not mig", job, gpu, name,
                            model::GpuSharingName(g.sharing)));
          }
          if (times > impl.FreeMigInstances(pos, i, share.mig_profile_lower)) {
            return FailedPrecondition(
                fmt::format("job {}: GPU {} of node {} has {} free {} instances, needs {}", job,
                            gpu, name, impl.FreeMigInstances(pos, i, share.mig_profile_lower),
                            requirements.mig_profile, times));
          }
          break;
      }
    }
  }
  for (const auto& [pos, d] : demand) {
    if (shared) {
      impl.UseShares(pos, d.cpu, d.memory, d.gpus, share);
    } else {
      impl.Use(pos, d.cpu, d.memory, d.gpus);
    }
  }
  if (!shared) {
    for (const WorkerAssignment& worker : placement.workers) {
      if (worker.gpus.empty()) continue;
      ++impl.states[impl.Find(worker)].whole_workers[static_cast<int>(worker.gpus.size())];
    }
  }
  return OkStatus();
}

void ClusterState::Release(const Placement& placement, const model::Requirements& requirements) {
  Impl& impl = *impl_;
  const std::int64_t cpu = NonNegative(requirements.per_worker.cpu_millis);
  const std::int64_t memory = NonNegative(requirements.per_worker.memory_bytes);
  const GpuMode mode = internal::ModeOf(requirements);
  const bool shared = mode == GpuMode::kTimeslice || mode == GpuMode::kMig;
  const internal::ShareAmount share = internal::ShareAmount::From(requirements);
  for (const WorkerAssignment& worker : placement.workers) {
    int pos = impl.Find(worker);
    if (pos < 0) continue;
    impl.Unuse(pos, cpu, memory, worker.gpus, shared ? &share : nullptr);
  }
}

const model::ResourceAmounts& ClusterState::Capacity() const {
  if (impl_->capacity) return *impl_->capacity;
  model::ResourceAmounts out{{"cpu", 0}, {"memory", 0}, {"gpu", 0}};
  for (const model::Node& node : impl_->nodes) {
    out["cpu"] += node.cpu_millis;
    out["memory"] += node.memory_bytes;
    out["gpu"] += internal::kShareMillisPerGpu * static_cast<std::int64_t>(node.gpus.size());
    for (const model::Gpu& gpu : node.gpus) {
      if (!gpu.model.empty())
        out["gpu:" + internal::Lower(gpu.model)] += internal::kShareMillisPerGpu;
    }
  }
  impl_->capacity = std::move(out);
  return *impl_->capacity;
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
  const model::Node& node = impl_->nodes[pos];
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    if (impl_->WholeFree(pos, i)) out.push_back(node.gpus[i].index);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<GpuFree> ClusterState::FreeByGpu(const NodeId& name) const {
  std::vector<GpuFree> out;
  int pos = impl_->Find(name.value());
  if (pos < 0) return out;
  const model::Node& node = impl_->nodes[pos];
  const NodeState& state = impl_->states[pos];
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    const model::Gpu& gpu = node.gpus[i];
    GpuFree free;
    free.index = gpu.index;
    free.sharing = gpu.sharing;
    switch (gpu.sharing) {
      case model::GpuSharing::kExclusive:
        free.whole = impl_->WholeFree(pos, i);
        break;
      case model::GpuSharing::kTimeslice:
        free.whole = impl_->WholeFree(pos, i);
        free.share_millis = impl_->FreeShareMillis(pos, i);
        free.share_memory_bytes = impl_->FreeShareMemory(pos, i);
        break;
      case model::GpuSharing::kMig: {
        // Instances in use are taken from the first entries of their profile.
        const internal::ShareUse* use = state.FindShare(gpu.index);
        const bool used = state.GpuUsed(gpu.index);
        std::map<std::string, int> taken;
        if (use != nullptr) taken.insert(use->mig.begin(), use->mig.end());
        for (const model::MigSlots& slots : gpu.mig) {
          int& left = taken[internal::Lower(slots.profile)];
          const int count = std::max(slots.count, 0);
          const int from_here = std::min(left, count);
          left -= from_here;
          free.mig.push_back(model::MigSlots{slots.profile, used ? 0 : count - from_here});
        }
        break;
      }
    }
    out.push_back(std::move(free));
  }
  std::sort(out.begin(), out.end(),
            [](const GpuFree& a, const GpuFree& b) { return a.index < b.index; });
  return out;
}

}  // namespace drover::sched
