#pragma once

// Per worker process tree accounting from /proc (docs/observability.md, "Sampling").
//
// A worker's tree is its process and every process descending from it by parent pid, plus every
// process in its process group (the supervisor makes the worker a group leader, so a grandchild
// reparented to init after its parent exited still counts unless it left the group). Summed per
// tree: utime + stime (/proc/PID/stat), VmRSS; the largest VmHWM of one process
// (/proc/PID/status); read_bytes (/proc/PID/io: readable by the same user or root, else -1);
// delayacct_blkio_ticks (stat field 42: 0 unless the kernel accounts delays, task_delayacct).
// Counters of processes that have exited are lost (they are not in /proc any more).

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "drover/model/usage.h"

namespace drover::agent {

class ProcessTreeReader {
 public:
  // `proc_root`: "/proc", or a folder laid out like it (tests).
  explicit ProcessTreeReader(std::string proc_root = "/proc");

  // One scan of proc_root: for each root pid of `roots` (keyed by worker), its tree's sample
  // (worker = the key) and the pids in it (in `pids`, pid -> worker). A root that is gone yields
  // no sample. Cost: one read of every /proc/PID/stat, and of status and io per tree member.
  std::vector<model::ProcessSample> Sample(const std::map<model::WorkerKey, pid_t>& roots,
                                           std::map<std::int64_t, model::WorkerKey>& pids) const;

 private:
  const std::string proc_root_;
  const long ticks_per_second_;
};

}  // namespace drover::agent
