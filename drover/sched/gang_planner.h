#pragma once

// The gang planner: where every worker of a job goes under binpack, spread or FGD scoring, with
// topology domains, label preferences, shares and MIG instances (the algorithms: scheduler.h's
// file comment). Internal to drover/sched; Plan (placement.h) is its entry point.

#include <optional>

#include "drover/model/job_spec.h"
#include "drover/sched/cluster_index.h"
#include "drover/sched/placement.h"

namespace drover::sched::internal {

// Plan's contract (placement.h) for every job that Plan does not hand to the node scorer
// (node_scoring.h): gangs, jobs with a topology level, and binpack and spread placements.
// Changes nothing.
std::optional<PlannedGang> PlanGang(const ClusterImpl& impl, const StaticFilter& filter,
                                    const Index* index, const model::JobSpec& spec,
                                    const PlanOptions& options);

}  // namespace drover::sched::internal
