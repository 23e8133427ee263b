#include "drover/sched/scheduler.h"

#include <algorithm>
#include <climits>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "drover/sched/cluster_index.h"
#include "drover/sched/placement.h"

namespace drover::sched {

using internal::ClusterImpl;
namespace internal {
namespace {

int ClampToInt(std::int64_t value) {
  return static_cast<int>(std::clamp<std::int64_t>(value, 0, INT_MAX));
}

bool Fits(const ClusterImpl& impl, int pos, const StaticFilter& filter, const Index* index,
          int gpus, std::int64_t cpu, std::int64_t memory) {
  return impl.FreeCpu(pos) >= cpu && impl.FreeMemory(pos) >= memory &&
         impl.states[pos].free_gpus >= gpus &&
         (gpus == 0 || impl.MatchingFreeGpus(pos, filter, index) >= gpus);
}

bool Contains(const std::vector<int>& values, int value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

// The position of the best-fit node for a demand of (gpus, cpu, memory) on one node, skipping
// `exclude`; -1 if none fits. With an index: walk the keys from lower_bound(tier, gpus, cpu,
// memory); a key with too little CPU (possible once past the first GPU bucket) jumps to
// lower_bound of its own bucket at `cpu`; keys with too little memory, excluded nodes and nodes
// whose free GPUs do not all pass the GPU filter are stepped over. Without one: scan every node.
int BestFit(const ClusterImpl& impl, const StaticFilter& filter, const Index* index, int gpus,
            std::int64_t cpu, std::int64_t memory, const std::vector<int>& exclude) {
  if (index != nullptr) {
    const std::set<NodeKey>& keys = index->keys;
    const int last_tier = filter.needs_gpus ? 0 : 1;
    for (int tier = 0; tier <= last_tier; ++tier) {
      auto it = keys.lower_bound(NodeKey{tier, gpus, cpu, memory, std::string(), 0});
      while (it != keys.end() && it->tier == tier) {
        if (it->free_cpu < cpu) {
          it = keys.lower_bound(NodeKey{tier, it->free_gpus, cpu, memory, std::string(), 0});
          continue;
        }
        if (it->free_memory >= memory && !Contains(exclude, it->position) &&
            (gpus == 0 || impl.MatchingFreeGpus(it->position, filter, index) >= gpus)) {
          return it->position;
        }
        ++it;
      }
    }
    return -1;
  }
  int best = -1;
  NodeKey best_key;
  for (int pos = 0; pos < static_cast<int>(impl.nodes.size()); ++pos) {
    if (Contains(exclude, pos) || !impl.StaticEligible(pos, filter) ||
        !Fits(impl, pos, filter, nullptr, gpus, cpu, memory)) {
      continue;
    }
    NodeKey key = impl.KeyOf(pos, filter);
    if (best < 0 || key < best_key) {
      best = pos;
      best_key = std::move(key);
    }
  }
  return best;
}

// GPU indices for one worker on node `pos`, ascending, avoiding `taken` (already chosen for
// earlier workers of this job). See "GPU choice" in scheduler.h.
std::vector<int> ChooseGpus(const ClusterImpl& impl, int pos, const StaticFilter& filter, int count,
                            const std::vector<int>& taken) {
  std::vector<int> chosen;
  if (count <= 0) return chosen;
  const model::Node& node = impl.nodes[pos];
  const NodeState& state = impl.states[pos];
  // Free matching GPUs as (group, index), sorted: each group is a run, indices ascending.
  std::vector<std::pair<const std::string*, int>> free;
  free.reserve(node.gpus.size());
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    const model::Gpu& gpu = node.gpus[i];
    if (state.GpuUsed(gpu.index) || Contains(taken, gpu.index)) continue;
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

}  // namespace

Demand PerWorker(const model::JobSpec& spec) {
  const model::Resources& r = spec.requirements.per_worker;
  return Demand{std::max(r.gpus, 0), std::max<std::int64_t>(r.cpu_millis, 0),
                std::max<std::int64_t>(r.memory_bytes, 0)};
}

int GangSize(const model::JobSpec& spec) { return std::max(spec.workers, 1); }

int Capacity(const ClusterImpl& impl, int pos, const StaticFilter& filter, const Index* index,
             const Demand& demand, int limit) {
  std::int64_t capacity = limit;
  if (demand.gpus > 0) {
    capacity =
        std::min<std::int64_t>(capacity, impl.MatchingFreeGpus(pos, filter, index) / demand.gpus);
  }
  if (demand.cpu > 0) capacity = std::min(capacity, impl.FreeCpu(pos) / demand.cpu);
  if (demand.memory > 0) capacity = std::min(capacity, impl.FreeMemory(pos) / demand.memory);
  return ClampToInt(capacity);
}

std::optional<PlannedGang> Plan(const ClusterImpl& impl, const StaticFilter& filter,
                                const Index* index, const model::JobSpec& spec) {
  const int workers = GangSize(spec);
  const Demand demand = PerWorker(spec);
  PlannedGang gang;
  if (spec.requirements.same_node) {
    int pos = BestFit(impl, filter, index, ClampToInt(std::int64_t{demand.gpus} * workers),
                      demand.cpu * workers, demand.memory * workers, {});
    if (pos < 0) return std::nullopt;
    gang.nodes.emplace_back(pos, workers);
  } else {
    // Fill the best-fit node to capacity, then the next best (see scheduler.h for why this
    // equals worker-by-worker best fit).
    std::vector<int> used_nodes;
    int remaining = workers;
    while (remaining > 0) {
      int pos = BestFit(impl, filter, index, demand.gpus, demand.cpu, demand.memory, used_nodes);
      if (pos < 0) return std::nullopt;
      int n = Capacity(impl, pos, filter, index, demand, remaining);
      DROVER_CHECK(n >= 1);
      gang.nodes.emplace_back(pos, n);
      used_nodes.push_back(pos);
      remaining -= n;
    }
  }
  gang.workers.reserve(workers);
  for (const auto& [pos, n] : gang.nodes) {
    std::vector<int> taken;
    for (int i = 0; i < n; ++i) {
      WorkerAssignment worker;
      worker.rank = static_cast<int>(gang.workers.size());
      worker.node = impl.nodes[pos].name;
      worker.gpus = ChooseGpus(impl, pos, filter, demand.gpus, taken);
      DROVER_CHECK(static_cast<int>(worker.gpus.size()) == demand.gpus);
      if (n > 1) taken.insert(taken.end(), worker.gpus.begin(), worker.gpus.end());
      gang.workers.push_back(std::move(worker));
    }
  }
  return gang;
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
  return key;
}

}  // namespace internal

using internal::ClusterStateAccess;
using internal::StaticFilter;

CycleResult RunCycle(ClusterState& cluster, std::vector<PendingJob> pending) {
  std::stable_sort(pending.begin(), pending.end(), [](const PendingJob& a, const PendingJob& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.enqueued_at != b.enqueued_at) return a.enqueued_at < b.enqueued_at;
    return a.job < b.job;
  });
  ClusterImpl& impl = ClusterStateAccess::Get(cluster);

  // What a spec asks for, prepared once per spec object in this cycle.
  struct Request {
    StaticFilter filter;
    std::string demand_key;
    internal::Index* index = nullptr;  // valid while index_generation is unchanged
    std::uint64_t generation = 0;
    bool failed = false;  // free capacity only shrinks during a cycle: it stays failed
  };
  std::vector<Request> requests;
  std::unordered_map<const model::JobSpec*, std::size_t> request_of_spec;
  std::unordered_map<std::string, std::size_t> failed_demand;  // demand key -> request

  CycleResult result;
  std::vector<std::pair<const PendingJob*, std::size_t>> unplaced;  // with its request
  for (const PendingJob& job : pending) {
    DROVER_CHECK(job.spec != nullptr);
    const model::JobSpec& spec = *job.spec;
    auto [slot, inserted] = request_of_spec.try_emplace(&spec, requests.size());
    if (inserted) {
      Request request;
      request.filter = StaticFilter::From(spec.requirements);
      request.demand_key = internal::DemandKey(request.filter, spec);
      request.failed = failed_demand.contains(request.demand_key);
      requests.push_back(std::move(request));
    }
    Request& request = requests[slot->second];
    if (request.failed) {
      unplaced.emplace_back(&job, slot->second);
      continue;
    }
    if (request.index == nullptr || request.generation != impl.index_generation) {
      request.index = &impl.GetOrBuildIndex(request.filter);
      request.generation = impl.index_generation;
    } else {
      request.index->last_used = ++impl.tick;
    }
    auto gang = internal::Plan(impl, request.filter, request.index, spec);
    if (!gang) {
      request.failed = true;
      failed_demand.emplace(request.demand_key, slot->second);
      unplaced.emplace_back(&job, slot->second);
      continue;
    }
    // Plan chose free resources of this state: commit them without re-validation.
    const internal::Demand demand = internal::PerWorker(spec);
    std::size_t rank = 0;
    std::vector<int> gpus;
    for (const auto& [pos, n] : gang->nodes) {
      gpus.clear();
      for (int i = 0; i < n; ++i, ++rank) {
        const std::vector<int>& worker_gpus = gang->workers[rank].gpus;
        gpus.insert(gpus.end(), worker_gpus.begin(), worker_gpus.end());
      }
      std::sort(gpus.begin(), gpus.end());
      impl.Use(pos, demand.cpu * n, demand.memory * n, gpus);
    }
    result.placements.push_back(Placement{job.job, std::move(gang->workers)});
  }

  // Reasons describe the state after the cycle's placements; one Explain per distinct request.
  std::unordered_map<std::string, PendingReason> reasons;
  result.pending.reserve(unplaced.size());
  for (const auto& [job, request] : unplaced) {
    const std::string& key = requests[request].demand_key;
    auto it = reasons.find(key);
    if (it == reasons.end()) it = reasons.emplace(key, Explain(cluster, *job->spec)).first;
    result.pending.emplace_back(job->job, it->second);
  }
  return result;
}

std::optional<Placement> TryPlace(const ClusterState& cluster, JobId job,
                                  const model::JobSpec& spec) {
  const ClusterImpl& impl = ClusterStateAccess::Get(cluster);
  StaticFilter filter = StaticFilter::From(spec.requirements);
  auto gang = internal::Plan(impl, filter, impl.FindIndex(filter), spec);
  if (!gang) return std::nullopt;
  return Placement{job, std::move(gang->workers)};
}

}  // namespace drover::sched
