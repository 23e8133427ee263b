#include "drover/sched/scheduler.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "drover/sched/cluster_index.h"
#include "drover/sched/placement.h"

namespace drover::sched {

using internal::ClusterImpl;
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
    if (request.filter.shares()) {
      // Shares have no index: Plan scans the nodes with timeslice or MIG GPUs.
    } else if (request.index == nullptr || request.generation != impl.index_generation) {
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
    internal::Commit(impl, *gang, spec);
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
  auto gang =
      internal::Plan(impl, filter, filter.shares() ? nullptr : impl.FindIndex(filter), spec);
  if (!gang) return std::nullopt;
  return Placement{job, std::move(gang->workers)};
}

}  // namespace drover::sched
