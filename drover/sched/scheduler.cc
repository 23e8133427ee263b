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
