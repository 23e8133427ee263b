#pragma once

// Pure facts the controller reads off a job's attempts and workers: whether a worker may be
// alive, the retry backoff, the failure class of an attempt, the last checkpoint.

#include "drover/common/clock.h"
#include "drover/model/job.h"

namespace drover::control {

// Whether `worker` has a process that may be alive: launched or running.
bool WorkerAlive(const model::Worker& worker);

// The backoff before attempt `next_number` (>= 2): retry.backoff_ms * 2^(next_number - 2),
// capped at an hour (or at backoff_ms when that is longer).
DurationMs RetryDelay(const model::RetryPolicy& retry, int next_number);

// The failure class of an attempt that ended without success, for retry.on: preempted, timeout,
// node lost (a worker's exit says so) or exit.
model::FailureKind FailureKindOf(const model::Attempt& attempt);

// The latest checkpoint any attempt of `job` reported; 0 if none.
TimeMs LastCheckpoint(const model::Job& job);

}  // namespace drover::control
