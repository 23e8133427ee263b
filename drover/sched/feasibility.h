#pragma once

// Whether a job could ever start, judged against an idle cluster: the check that refuses at
// submission a job no node and no queue limit can ever hold (as Slurm refuses a job over its
// partition's limits) instead of letting it wait forever, and that `explain` repeats for a job
// accepted anyway (model::JobSpec::hold_infeasible). Defined in feasibility.cc.

#include <optional>
#include <string>

#include "drover/model/job_spec.h"
#include "drover/sched/cluster_state.h"
#include "drover/sched/queues.h"

namespace drover::sched {

// Why `spec` can never start, as one sentence; nullopt when it could. The gang counts at its
// smallest start (min_workers when set, else workers). Two reasons, the queue's first:
//   - its queue: with nothing else running anywhere, the leaf's quota with borrowing, its
//     cohort or a concurrency limit would still refuse the gang (`idle_queues`: the policy's
//     tree without usage; a queue it does not know is not judged);
//   - the nodes, for a queue run by Drover itself (`local`; an external executor's jobs run on
//     the engine's nodes): no node of `every_node` could hold a worker (selector, taints, GPU
//     model, count or memory, CPU or memory capacity), or all of them together, idle, hold
//     fewer workers than the gang. `every_node` holds every node seen so far with nothing
//     allocated; while it has none (no agent has registered yet) nothing is judged.
// Pure; reads its arguments only. O(nodes).
std::optional<std::string> FindInfeasibility(const model::JobSpec& spec,
                                             const ClusterState& every_node,
                                             const QueueTree& idle_queues, bool local);

}  // namespace drover::sched
