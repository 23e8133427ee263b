#pragma once

// The controller's answers to "why is my job where it is" (Explanation) and "how are the queues
// doing" (QueueReport): plain values, so that views (drover/api/views.h) need not include the
// controller.

#include <optional>
#include <string>

#include "drover/common/clock.h"
#include "drover/model/hold_layer.h"
#include "drover/model/job.h"
#include "drover/sched/pending_reason.h"
#include "drover/sched/queues.h"

namespace drover::control {

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
};

// One row of `drover queues`.
struct QueueReport {
  sched::QueueStatus status;
  int pending_jobs = 0;  // ready jobs of this queue's subtree waiting for placement
};

}  // namespace drover::control
