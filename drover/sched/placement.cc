// Plan and Commit: where the workers of one job go (placement.h; the algorithms are described in
// scheduler.h and docs/scheduling.md). Plan hands single-worker jobs under node-scored policies
// to the node scorer (node_scoring.h) and everything else to the gang planner (gang_planner.h);
// this file holds what both read (a worker's demand, a node's capacity for it) and Commit.

#include "drover/sched/placement.h"

#include <algorithm>
#include <string>
#include <utility>

#include "drover/sched/gang_planner.h"
#include "drover/sched/node_scoring.h"
#include "drover/sched/placement_support.h"

namespace drover::sched::internal {

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
  if (NodeScored(spec, filter, options)) return PlanScored(impl, filter, index, spec, options);
  return PlanGang(impl, filter, index, spec, options);
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
  std::string key;
  key.reserve(filter.key.size() + 96);  // the numbers and separators below: one allocation
  key += filter.key;
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
