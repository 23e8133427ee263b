#pragma once

// HoldLayer: the layer that holds a job where it is, the answer to "why is my job where it is"
// (sched::Verdict for ready jobs, control::Explanation for every job), with its one name table.
// The names are what the API, the CLI and the decision log show.

#include <array>
#include <cstddef>

#include "drover/model/names.h"

namespace drover::model {

enum class HoldLayer {
  // A user holds it (`drover hold`), whatever else would hold it (the controller).
  kHeld,
  // Before the job is ready (the controller).
  kDependency,  // dependencies have not finished
  kPipeline,    // a sweep's concurrency or its whole admission
  kInputs,      // declared input paths do not exist yet
  kBackoff,     // a retry waits out its backoff
  // A ready job, held by a scheduling cycle (sched::Verdict).
  kQueue,             // its queue is not in the policy
  kQuota,             // its queue's quota (with borrowing)
  kConcurrencyLimit,  // a concurrency limit
  kFairShare,         // queues ahead of it by fair share took the free capacity
  kReservation,       // it would fit only on nodes reserved for a blocked job
  kGangSize,          // only part of its gang fits
  kTopology,          // no topology domain holds the gang
  kTaint,             // the nodes that could hold it carry a taint it does not tolerate
  kNodeFit,           // not enough free capacity on nodes that match
  kPreempting,        // waiting for the jobs preempted for it to stop
  // Past the scheduler (the controller).
  kExecutor,  // admitted, queued in an external executor
  kRunning,   // placed, starting or running
  kFinished,  // in a terminal state
};

inline constexpr NameTable kHoldLayerNames{std::array{
    NameEntry{HoldLayer::kHeld, "held"},
    NameEntry{HoldLayer::kDependency, "dependency"},
    NameEntry{HoldLayer::kPipeline, "pipeline"},
    NameEntry{HoldLayer::kInputs, "inputs"},
    NameEntry{HoldLayer::kBackoff, "backoff"},
    NameEntry{HoldLayer::kQueue, "queue"},
    NameEntry{HoldLayer::kQuota, "quota"},
    NameEntry{HoldLayer::kConcurrencyLimit, "concurrency limit"},
    NameEntry{HoldLayer::kFairShare, "fair share"},
    NameEntry{HoldLayer::kReservation, "reservation"},
    NameEntry{HoldLayer::kGangSize, "gang size"},
    NameEntry{HoldLayer::kTopology, "topology"},
    NameEntry{HoldLayer::kTaint, "taint"},
    NameEntry{HoldLayer::kNodeFit, "node fit"},
    NameEntry{HoldLayer::kPreempting, "preempting"},
    NameEntry{HoldLayer::kExecutor, "executor"},
    NameEntry{HoldLayer::kRunning, "running"},
    NameEntry{HoldLayer::kFinished, "finished"},
}};
static_assert(kHoldLayerNames.size() == static_cast<std::size_t>(HoldLayer::kFinished) + 1);

}  // namespace drover::model
