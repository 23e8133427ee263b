#pragma once

// Durations users read to split queue delay from placement, start-up and application time,
// derived from a job's timeline. All in milliseconds; 0 where the phase was not reached.

#include <string>
#include <vector>

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

// Where a job's wall time went (docs/workflows.md, "Goodput"): consecutive phases of its
// timeline whose sum is exactly its wall time (created until finished, or `now`). A phase
// never reached lasts 0 and the next one starts where the last reached one ended.
struct LifecycleSplit {
  // created -> released (upstreams finishing, sweep/admission holds) for a job with
  // dependencies or of a pipeline; for any other job that time (the control loop taking it in)
  // is queue.
  DurationMs dependencies = 0;
  DurationMs inputs = 0;        // released -> first attempt ready (waiting for inputs)
  DurationMs queue = 0;         // ready -> dequeued, every attempt
  DurationMs admission = 0;     // dequeued -> admitted
  DurationMs placement = 0;     // admitted -> placed
  DurationMs startup = 0;       // placed -> every worker running
  DurationMs until_useful = 0;  // running -> useful work began (reported by the job; else 0)
  DurationMs run = 0;           // useful work began (or running) -> attempt finished
  DurationMs backoff = 0;       // an attempt finished -> the next one ready (retry backoff)
  DurationMs publishing = 0;    // the last attempt finished -> the job finished (outputs)

  DurationMs Total() const {
    return dependencies + inputs + queue + admission + placement + startup + until_useful + run +
           backoff + publishing;
  }
  LifecycleSplit& operator+=(const LifecycleSplit& other);
  friend bool operator==(const LifecycleSplit&, const LifecycleSplit&) = default;
};

LifecycleSplit ComputeSplit(const Job& job, TimeMs now);

// What one attempt cost in GPU time and what of it was lost.
struct AttemptCost {
  int number = 0;
  std::string cause;        // the attempt's outcome reason ("" while it runs)
  std::int64_t gpu_ms = 0;  // GPUs held x time from placement to its end (or now)
  // GPU time that produced nothing kept: all of an attempt that did not succeed, except that
  // when the next attempt resumed from a checkpoint, only the time after the last checkpoint.
  std::int64_t lost_gpu_ms = 0;
  bool preempted = false;  // lost to a preemption (else to a failure, timeout or cancel)
};

std::vector<AttemptCost> ComputeAttemptCosts(const Job& job, TimeMs now);

// GPU-time accounting over a set of jobs (a job, a queue, a team).
struct Goodput {
  int jobs = 0;
  int succeeded = 0;
  std::int64_t gpu_ms = 0;                  // allocated, every attempt
  std::int64_t retry_lost_gpu_ms = 0;       // lost to failed, timed-out or cancelled attempts
  std::int64_t preemption_lost_gpu_ms = 0;  // lost to preemptions
  LifecycleSplit split;                     // summed over the jobs

  // Allocated GPU-hours per job that succeeded; 0 when none did.
  double GpuHoursPerResult() const;
  void Add(const Job& job, TimeMs now);
};

// The split of a pipeline run (the jobs of one Job::pipeline_run, in id order) along its
// critical path: from the job that finished last back through, at each step, the upstream that
// finished last before it was released. Its phases add up to the run's wall time: the first
// job's creation until the last job's end (or `now`); the time between an upstream's end and
// its downstream's release counts as dependencies.
LifecycleSplit ComputePipelineSplit(const std::vector<const Job*>& run, TimeMs now);

}  // namespace drover::model
