#pragma once

// When a pending job could start: a projection of the layers that hold it (free capacity, its
// queue's quota and concurrency limits, the EASY reservation of another job) as running jobs
// reach their time limits. Pure: values in, an estimate out; nothing is changed.
//
// The projection walks the instants at which something is known to free: `now`, then each
// distinct end of a running job's time limit (spec->timeout after started_at; jobs ending at one
// instant release together), and the start of another job's reservation. At each instant it
// releases what ends by then (placement and charge) and, from the reservation's start on,
// places the reservation's holder as the engine would; the job's estimate is the first instant
// at which one of its GPU flavors (FlavorOrder) is admitted by the queue tree AND fits, outside
// the reserved nodes while the reservation holds (unless its own time limit ends before the
// reservation starts, as EASY backfill allows). Nothing else is assumed to start or end, so the
// estimate is never earlier than the first instant each layer could release the job; it is an
// upper bound only in so far as running jobs end by their limits and no job is queued ahead.

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/ids.h"
#include "drover/model/job_spec.h"
#include "drover/sched/cluster_state.h"
#include "drover/sched/engine.h"
#include "drover/sched/maintenance.h"
#include "drover/sched/placement.h"
#include "drover/sched/queues.h"

namespace drover::sched {

// What the projection honours besides free capacity. Borrowed for the call; all may be null.
struct EstimateLayers {
  // Quota and concurrency limits: the tree as it is now (running jobs' charges included). null:
  // capacity only.
  const QueueTree* queues = nullptr;
  // Another job's EASY reservation (the engine's last one) and that job's spec. Ignored when
  // either is null or the reservation belongs to the estimated job.
  const Reservation* reservation = nullptr;
  const model::JobSpec* reservation_holder = nullptr;
  // Nodes closed for a time (maintenance.h): at each instant the job (and the reservation's
  // holder) is planned only on nodes whose windows it would not run into, and each window's end
  // is an instant at which its node comes back.
  std::span<const NodeWindow> maintenance;
};

struct StartEstimate {
  std::optional<TimeMs> at;  // nullopt: unknown (it waits for something without a time limit)
  // What bounds it, one phrase that completes "estimated start: <at>: ...", e.g. "as job 12
  // reaches its time limit (quota of queue team-a)" or "unknown: held by quota until jobs
  // without a time limit end".
  std::string basis;

  friend bool operator==(const StartEstimate&, const StartEstimate&) = default;
};

// When `spec` (job `id`) could start, by the projection above. `running` are the jobs holding
// resources in `cluster` (and charged in layers.queues), their pointers non-null.
StartEstimate EstimateStart(const ClusterState& cluster, std::span<const RunningJob> running,
                            JobId id, const model::JobSpec& spec, TimeMs now,
                            const EstimateLayers& layers = {});

namespace internal {

// Where and when `spec` could start on free capacity alone as bounded running jobs end (the
// projection above without quota or a reservation), planned with `options`: the start and the
// nodes it would take then. nullopt if it never fits. The engine's EASY reservation; nodes
// closed by `maintenance` are avoided as EstimateLayers::maintenance says.
struct Projection {
  TimeMs start = 0;
  std::vector<NodeId> nodes;
};
std::optional<Projection> Project(const ClusterState& cluster, std::span<const RunningJob> running,
                                  const model::JobSpec& spec, TimeMs now,
                                  const PlanOptions& options,
                                  std::span<const NodeWindow> maintenance = {});

}  // namespace internal
}  // namespace drover::sched
