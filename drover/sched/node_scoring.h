#pragma once

// The node scorer: a single-worker job placed by scoring every feasible node, under FGD
// (Weng et al., USENIX ATC'23) and the baselines of the FGD paper (random, best-fit,
// dot-product, gpu-packing, gpu-clustering) with its simulator's integer scores. Internal to
// drover/sched; Plan (placement.h) is its entry point.

#include <optional>

#include "drover/model/job_spec.h"
#include "drover/sched/cluster_index.h"
#include "drover/sched/placement.h"

namespace drover::sched::internal {

// True if Plan scores every node for this job (PlanScored): a single worker without a topology
// level, under a scoring other than binpack and spread (FGD: not for a MIG instance).
bool NodeScored(const model::JobSpec& spec, const StaticFilter& filter, const PlanOptions& options);

// Plan's contract (placement.h) for a job NodeScored accepts: the highest-scoring feasible
// node; ties go to options.rng uniformly, else to the node name. Changes nothing but the memo
// lent in options.fragmentation_cache.
std::optional<PlannedGang> PlanScored(const ClusterImpl& impl, const StaticFilter& filter,
                                      const Index* index, const model::JobSpec& spec,
                                      const PlanOptions& options);

}  // namespace drover::sched::internal
