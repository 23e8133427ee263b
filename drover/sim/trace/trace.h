#pragma once

// A workload trace for the simulator: the nodes of a cluster and the jobs that arrive on it.
// Loaders (loaders.h) build one from public trace formats or Drover's own; every simulation
// (fgd/, replay/) reads nothing else.

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

}  // namespace drover::sim
