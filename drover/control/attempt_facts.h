#pragma once

// Pure facts the controller reads off a job's attempts and workers: whether a worker may be
// alive, the retry backoff, the failure class of an attempt, the last checkpoint, the job's
// place in the queue.

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

// What of a job's attempts counts against its retry policy.
struct AttemptCount {
  // Attempts that count against retry.max_attempts: all but those preempted or requeued by a
  // user, and the first model::kFreeNodeLosses that lost their node.
  int counted = 0;
  int node_losses = 0;  // attempts that lost their node (FailureKindOf: kNodeLost)
};
AttemptCount CountAttempts(const model::Job& job);

// The latest checkpoint any attempt of `job` reported; 0 if none.
TimeMs LastCheckpoint(const model::Job& job);

// When `job` took the place in the queue it holds now (the engine's PendingJob::enqueued_at,
// which orders jobs within a leaf under fair-share and starts aging): its current attempt's
// ready_at, except that an attempt requeued because the one before it was preempted, lost its
// node or was requeued by a user (drover requeue) keeps that one's place, back to the first attempt
// of such a chain. A retry after the job's own failure or timeout queues anew at the end of its
// backoff. 0 without attempts.
TimeMs QueuedSince(const model::Job& job);

}  // namespace drover::control
