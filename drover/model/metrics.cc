#include "drover/model/metrics.h"

namespace drover::model {

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
