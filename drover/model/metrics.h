#pragma once

// Durations users read to split queue delay from placement, start-up and application time,
// derived from a job's timeline. All in milliseconds; 0 where the phase was not reached.

#include "drover/common/clock.h"
#include "drover/model/job.h"

namespace drover::model {

struct JobMetrics {
  DurationMs queue_wait = 0;  // sum over attempts: dequeued - ready (until `now` if still queued)
  DurationMs startup = 0;     // last attempt: running - placed
  DurationMs run_time = 0;    // last attempt: finished (or now) - running
  DurationMs total = 0;       // finished (or now) - created
  // GPUs held x time held, over every attempt, in GPU-milliseconds: from placement until the
  // attempt finished (or now).
  std::int64_t gpu_ms = 0;
  int attempts = 0;

  double gpu_hours() const { return static_cast<double>(gpu_ms) / 3'600'000.0; }
};

// `now` bounds phases still in progress.
JobMetrics ComputeMetrics(const Job& job, TimeMs now);

}  // namespace drover::model
