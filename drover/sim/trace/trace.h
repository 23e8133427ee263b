#pragma once

// A workload trace for the simulator: the nodes of a cluster and the jobs that arrive on it.
// Loaders (loaders.h) build one from public trace formats or Drover's own; every simulation
// (fgd/, replay/) reads nothing else.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "drover/common/clock.h"
#include "drover/model/job_spec.h"
#include "drover/model/node.h"

namespace drover::sim {

struct TraceJob {
  std::string name;   // unique in the trace
  TimeMs submit = 0;  // since the start of the trace
  // How long it runs once all its workers have started; a placement experiment ignores it.
  DurationMs duration = 0;
  std::string user;  // the owner it is submitted as
  // Resources (per worker, whole GPUs or a gpu_share), gang size and min_workers, queue,
  // priority class, topology level, interruptible, timeout (the time limit SJF and backfill
  // see). Its command is empty: the simulator runs no process.
  model::JobSpec spec;
  // Saves a checkpoint this often while running (0: never); a preempted job resumes from its
  // last checkpoint and loses only the work since.
  DurationMs checkpoint_interval = 0;
};

struct Trace {
  std::vector<model::Node> nodes;
  std::vector<TraceJob> jobs;  // ascending submit; ties keep the order of the file
};

// A trace's jobs handed out one at a time, in ascending submit (ties in the trace's order), so
// that a trace too large to hold at once (the synthetic 1M-job replay) need not be held: a
// replay keeps only what it reads of each job. Not thread-safe.
class JobStream {
 public:
  virtual ~JobStream() = default;
  // The next job, or nullopt after the last.
  virtual std::optional<TraceJob> Next() = 0;
  // The distinct queues (JobSpec::queue) of all the jobs, in name order; known before the
  // first job (named replay policies and the per-queue report are built from them).
  virtual const std::vector<std::string>& Queues() const = 0;
  // How many jobs Next gives in all, where the stream knows it (0: unknown); the replay reserves
  // its per-job tables by it.
  virtual std::size_t SizeHint() const { return 0; }
};

// The jobs of a Trace held in memory as a JobStream: a copy of each, in ascending submit, stable
// (the trace need not be sorted). `jobs` must outlive the stream.
class TraceJobStream final : public JobStream {
 public:
  explicit TraceJobStream(const std::vector<TraceJob>& jobs);
  std::optional<TraceJob> Next() override;
  const std::vector<std::string>& Queues() const override { return queues_; }
  std::size_t SizeHint() const override { return jobs_.size(); }

 private:
  const std::vector<TraceJob>& jobs_;
  std::vector<std::size_t> order_;  // indexes into jobs_ by submit (stable)
  std::size_t next_ = 0;
  std::vector<std::string> queues_;
};

}  // namespace drover::sim
