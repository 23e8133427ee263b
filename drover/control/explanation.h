#pragma once

// The controller's answers to "why is my job where it is" (Explanation) and "how are the queues
// doing" (QueueReport): plain values, so that views (drover/api/views.h) need not include the
// controller.

#include <optional>
#include <string>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/ids.h"
#include "drover/model/hold_layer.h"
#include "drover/model/job.h"
#include "drover/sched/pending_reason.h"
#include "drover/sched/queues.h"

namespace drover::control {

// Where a ready job stands in the order the scheduler considers the pending jobs, as of the last
// full scheduling pass (Kueue's positionInLocalQueue and positionInClusterQueue): what
// `drover ls --pending` shows. Positions count only jobs left waiting by that pass, 1 first.
struct QueuePosition {
  std::string queue;   // its leaf queue
  int in_queue = 0;    // among the waiting jobs of its queue
  int in_cluster = 0;  // among every waiting job, every queue
  // The first jobs of its queue ahead of it, front first: min(in_queue - 1, kAheadShown).
  std::vector<JobId> ahead;

  static constexpr int kAheadShown = 5;
  friend bool operator==(const QueuePosition&, const QueuePosition&) = default;
};

// One phrase for `position`: "it is first in queue team-a", or "3 jobs are ahead of it in queue
// team-a: 12, 15, 19" (with "and N more" past QueuePosition::kAheadShown).
std::string DescribePosition(const QueuePosition& position);

// "Why is my job where it is": the state, the layer that holds it and one sentence.
struct Explanation {
  model::JobState state = model::JobState::kPending;
  model::HoldLayer layer = model::HoldLayer::kDependency;
  std::string message;
  std::optional<sched::PendingReason> placement;  // when the placement layer holds the job
  // For a ready job: when it is expected to start, projected from running jobs' time limits
  // through capacity, quota and the reservation (sched::EstimateStart); nullopt: unknown
  // (something it waits for has no time limit).
  std::optional<TimeMs> estimated_start;
  // What bounds the estimate, one phrase (sched::StartEstimate::basis); empty when none.
  std::string estimate_basis;
  // For a ready job the last full scheduling pass left waiting: its place in the order; the
  // message then names the jobs ahead of it.
  std::optional<QueuePosition> position;
};

// One row of `drover queues`.
struct QueueReport {
  sched::QueueStatus status;
  int pending_jobs = 0;  // ready jobs of this queue's subtree waiting for placement
};

}  // namespace drover::control
