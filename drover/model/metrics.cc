#include "drover/model/metrics.h"

#include <algorithm>

namespace drover::model {
namespace {

std::int64_t GpusHeld(const Attempt& attempt) {
  std::int64_t gpus = 0;
  for (const Worker& worker : attempt.workers)
    gpus += static_cast<std::int64_t>(worker.gpus.size());
  return gpus;
}

// Adds to `phase` the time from `cursor` to `at` when `at` was reached (non-zero), clamped to
// `end`, and moves the cursor there. Unreached milestones add nothing.
void Advance(DurationMs& phase, TimeMs& cursor, TimeMs at, TimeMs end) {
  if (at == 0) return;
  const TimeMs to = std::min(std::max(at, cursor), end);
  phase += to - cursor;
  cursor = to;
}

// The job's split from `from` (its creation, or a later point on a critical path) on.
LifecycleSplit SplitFrom(const Job& job, TimeMs from, TimeMs now) {
  LifecycleSplit split;
  const TimeMs end = job.finished_at != 0 ? job.finished_at : now;
  TimeMs cursor = from;
  // Until its release a job waits for its dependencies, or as a pipeline's stage for its
  // sweep's or pipeline's admission; anything else is released by the control loop's first
  // pass over it, a wait in Drover's queue like any other.
  const bool can_be_held = !job.dependencies.empty() || job.pipeline_run.value() != 0;
  DurationMs& before_release = can_be_held ? split.dependencies : split.queue;
  Advance(before_release, cursor, job.released_at, end);
  for (std::size_t i = 0; i < job.attempts.size(); ++i) {
    const Attempt& attempt = job.attempts[i];
    Advance(i == 0 ? split.inputs : split.backoff, cursor, attempt.ready_at, end);
    Advance(split.queue, cursor, attempt.dequeued_at, end);
    Advance(split.admission, cursor, attempt.admitted_at, end);
    Advance(split.placement, cursor, attempt.placed_at, end);
    Advance(split.startup, cursor, attempt.running_at, end);
    if (attempt.running_at != 0) Advance(split.until_useful, cursor, attempt.useful_work_at, end);
    // The phase an attempt ends in: running when it ran, else the one it was in.
    DurationMs& ending = attempt.running_at != 0  ? split.run
                         : attempt.placed_at != 0 ? split.startup
                         : attempt.ready_at != 0  ? split.queue
                                                  : split.inputs;
    Advance(ending, cursor, attempt.finished_at != 0 ? attempt.finished_at : end, end);
  }
  // Pending or waiting until now, or cancelled before a first attempt.
  DurationMs& tail = job.attempts.empty() ? (job.released_at != 0 ? split.inputs : before_release)
                                          : split.publishing;
  tail += end - cursor;
  return split;
}

}  // namespace

LifecycleSplit& LifecycleSplit::operator+=(const LifecycleSplit& other) {
  dependencies += other.dependencies;
  inputs += other.inputs;
  queue += other.queue;
  admission += other.admission;
  placement += other.placement;
  startup += other.startup;
  until_useful += other.until_useful;
  run += other.run;
  backoff += other.backoff;
  publishing += other.publishing;
  return *this;
}

LifecycleSplit ComputeSplit(const Job& job, TimeMs now) {
  return SplitFrom(job, job.created_at, now);
}

std::vector<AttemptCost> ComputeAttemptCosts(const Job& job, TimeMs now) {
  std::vector<AttemptCost> costs;
  costs.reserve(job.attempts.size());
  for (std::size_t i = 0; i < job.attempts.size(); ++i) {
    const Attempt& attempt = job.attempts[i];
    AttemptCost cost;
    cost.number = attempt.number;
    cost.cause = attempt.outcome_reason;
    cost.preempted = WasPreempted(attempt);
    if (attempt.placed_at != 0) {
      const TimeMs end = attempt.finished_at != 0 ? attempt.finished_at : now;
      const std::int64_t gpus = GpusHeld(attempt);
      cost.gpu_ms = gpus * std::max<TimeMs>(end - attempt.placed_at, 0);
      const bool kept = attempt.outcome == JobState::kSucceeded || attempt.finished_at == 0;
      if (!kept) {
        const bool resumed = i + 1 < job.attempts.size() && job.attempts[i + 1].resumed;
        const TimeMs saved =
            resumed ? std::max(attempt.placed_at, attempt.last_checkpoint_at) : attempt.placed_at;
        cost.lost_gpu_ms = gpus * std::max<TimeMs>(end - saved, 0);
      }
    }
    costs.push_back(std::move(cost));
  }
  return costs;
}

double Goodput::GpuHoursPerResult() const {
  return succeeded == 0 ? 0.0 : static_cast<double>(gpu_ms) / 3'600'000.0 / succeeded;
}

void Goodput::Add(const Job& job, TimeMs now) {
  ++jobs;
  if (job.state == JobState::kSucceeded) ++succeeded;
  for (const AttemptCost& cost : ComputeAttemptCosts(job, now)) {
    gpu_ms += cost.gpu_ms;
    (cost.preempted ? preemption_lost_gpu_ms : retry_lost_gpu_ms) += cost.lost_gpu_ms;
  }
  split += ComputeSplit(job, now);
}

LifecycleSplit ComputePipelineSplit(const std::vector<const Job*>& run, TimeMs now) {
  LifecycleSplit split;
  if (run.empty()) return split;
  auto end_of = [now](const Job* job) { return job->finished_at != 0 ? job->finished_at : now; };
  const Job* last = run.front();
  for (const Job* job : run) {
    if (end_of(job) > end_of(last)) last = job;
  }
  // Walk back: each step's split runs from its upstream's end (or the run's start) to its end.
  std::vector<const Job*> path = {last};
  while (!path.back()->dependencies.empty()) {
    const Job* downstream = path.back();
    const Job* upstream = nullptr;
    for (const Job* job : run) {
      const bool is_dependency =
          std::find(downstream->dependencies.begin(), downstream->dependencies.end(), job->id) !=
          downstream->dependencies.end();
      if (is_dependency && job->finished_at != 0 &&
          (upstream == nullptr || job->finished_at > upstream->finished_at)) {
        upstream = job;
      }
    }
    if (upstream == nullptr) break;
    path.push_back(upstream);
  }
  TimeMs from = run.front()->created_at;
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    split += SplitFrom(**it, std::max(from, (*it)->created_at), now);
    // The path's first job may start after the run did (a later root finishing last).
    if (it == path.rbegin()) split.dependencies += std::max<TimeMs>((*it)->created_at - from, 0);
    from = end_of(*it);
  }
  return split;
}

JobMetrics ComputeMetrics(const Job& job, TimeMs now) {
  JobMetrics m;
  m.attempts = static_cast<int>(job.attempts.size());
  const TimeMs end = job.finished_at != 0 ? job.finished_at : now;
  m.total = end - job.created_at;
  for (const Attempt& attempt : job.attempts) {
    if (attempt.ready_at != 0 && attempt.ready_at <= end) {
      TimeMs dequeued = attempt.dequeued_at != 0 ? attempt.dequeued_at : end;
      if (dequeued > attempt.ready_at) m.queue_wait += dequeued - attempt.ready_at;
    }
    if (attempt.placed_at != 0) {
      TimeMs released = attempt.finished_at != 0 ? attempt.finished_at : end;
      std::int64_t gpus = 0;
      for (const Worker& worker : attempt.workers)
        gpus += static_cast<std::int64_t>(worker.gpus.size());
      m.gpu_ms += gpus * (released - attempt.placed_at);
    }
  }
  if (const Attempt* last = job.current_attempt()) {
    if (last->running_at != 0) {
      m.startup = last->running_at - last->placed_at;
      TimeMs stop = last->finished_at != 0 ? last->finished_at : end;
      m.run_time = stop - last->running_at;
    } else if (last->placed_at != 0 && last->finished_at != 0) {
      m.startup = last->finished_at - last->placed_at;
    }
  }
  return m;
}

}  // namespace drover::model
