#include "drover/control/attempt_facts.h"

#include <algorithm>

namespace drover::control {

using model::Attempt;
using model::JobState;
using model::WorkerState;

bool WorkerAlive(const model::Worker& worker) {
  return worker.state == WorkerState::kLaunched || worker.state == WorkerState::kRunning;
}

DurationMs RetryDelay(const model::RetryPolicy& retry, int next_number) {
  DurationMs delay = retry.backoff_ms;
  for (int i = 2; i < next_number && delay < kMillisPerHour; ++i) delay *= 2;
  return std::min<DurationMs>(delay, std::max<DurationMs>(retry.backoff_ms, kMillisPerHour));
}

model::FailureKind FailureKindOf(const Attempt& attempt) {
  if (model::WasPreempted(attempt)) return model::FailureKind::kPreempted;
  if (attempt.outcome == JobState::kTimedOut) return model::FailureKind::kTimeout;
  for (const model::Worker& worker : attempt.workers) {
    if (worker.exit && worker.exit->node_lost) return model::FailureKind::kNodeLost;
  }
  return model::FailureKind::kExit;
}

AttemptCount CountAttempts(const model::Job& job) {
  AttemptCount count;
  for (const Attempt& attempt : job.attempts) {
    if (model::WasPreempted(attempt) || model::WasRequeued(attempt)) continue;
    if (FailureKindOf(attempt) == model::FailureKind::kNodeLost &&
        ++count.node_losses <= model::kFreeNodeLosses) {
      continue;
    }
    ++count.counted;
  }
  return count;
}

TimeMs LastCheckpoint(const model::Job& job) {
  TimeMs last = 0;
  for (const Attempt& attempt : job.attempts) last = std::max(last, attempt.last_checkpoint_at);
  return last;
}

TimeMs QueuedSince(const model::Job& job) {
  if (job.attempts.empty()) return 0;
  std::size_t first = job.attempts.size() - 1;
  while (first > 0) {
    const Attempt& previous = job.attempts[first - 1];
    const model::FailureKind ended = FailureKindOf(previous);
    if (ended != model::FailureKind::kPreempted && ended != model::FailureKind::kNodeLost &&
        !model::WasRequeued(previous)) {
      break;
    }
    --first;
  }
  return job.attempts[first].ready_at;
}

}  // namespace drover::control
