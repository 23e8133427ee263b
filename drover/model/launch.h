#pragma once

// What the control plane asks an agent to run or stop, and what agents report back. These cross the
// wire between the server and remote agents (JSON codecs in drover/codec).

#include <map>
#include <string>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/ids.h"
#include "drover/model/job.h"
#include "drover/model/names.h"

namespace drover::model {

// Identifies one worker process of one attempt: (job, attempt, rank).
struct WorkerKey {
  JobId job;
  int attempt = 0;
  int rank = 0;

  friend auto operator<=>(const WorkerKey&, const WorkerKey&) = default;
  friend bool operator==(const WorkerKey&, const WorkerKey&) = default;
};

// Everything an agent needs to start one worker. The control plane fills `env` (DROVER_*
// variables, CUDA_VISIBLE_DEVICES and the spec's env); the agent adds only DROVER_PREEMPT_NOTICE,
// DROVER_SERVER (the API's URL as the agent reaches it), DROVER_BIN (the `drover` it runs as),
// PATH (DROVER_BIN's folder, then its own PATH), HOME and LANG from its own environment, all but
// the first only when `env` does not set them.
struct LaunchSpec {
  WorkerKey key;
  NodeId node;
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  std::string working_dir;
  std::map<std::string, std::string> env;
  std::vector<int> gpus;
  DurationMs timeout_ms = 0;          // 0: no limit; measured from process start
  DurationMs kill_grace_ms = 10'000;  // SIGTERM, then SIGKILL after this long
  // With checkpoint_dir set, the agent reports a kCheckpoint event whenever
  // <checkpoint_dir>/.drover-checkpoint is touched.
  std::string checkpoint_dir;
  // Directories the agent creates (with parents) before the process starts: the checkpoint
  // directory and the attempt's output staging locations (docs/workflows.md).
  std::vector<std::string> make_dirs;
  // The names of the job's value outputs. The agent stages each at
  // model::NodeValueOutputPath(the worker's directory, NAME), exported as DROVER_OUTPUT_<NAME>
  // (its `outputs` folder made by the agent and, for a worker of another account, given to that
  // account), and reports the values it reads there after the worker exited 0 with the exit
  // (ExitStatus::output_values).
  std::vector<std::string> value_outputs;
  // The Unix account the worker runs as (Job::run_as). An agent running as root switches to it
  // (its groups, uid and gid, HOME, USER and LOGNAME) before it creates make_dirs, enters
  // working_dir and executes argv; an agent running as another user ignores it (the worker runs
  // as the agent's user). Empty: the agent's own account.
  std::string run_as;
  // The account may be root (Job::may_run_as_root); without it an agent refuses to run a worker
  // whose run_as is uid 0.
  bool may_run_as_root = false;

  friend bool operator==(const LaunchSpec&, const LaunchSpec&) = default;
};

// A change in a worker's life as observed by its agent. kCheckpoint: the worker touched
// $DROVER_CHECKPOINT_DIR/.drover-checkpoint (its mtime is `at`).
struct WorkerEvent {
  enum class Kind { kStarted, kExited, kCheckpoint };
  WorkerKey key;
  Kind kind = Kind::kStarted;
  TimeMs at = 0;
  ExitStatus exit;  // for kExited

  friend bool operator==(const WorkerEvent&, const WorkerEvent&) = default;
};
inline constexpr NameTable kWorkerEventKindNames{std::array{
    NameEntry{WorkerEvent::Kind::kStarted, "started"},
    NameEntry{WorkerEvent::Kind::kExited, "exited"},
    NameEntry{WorkerEvent::Kind::kCheckpoint, "checkpoint"},
}};
static_assert(kWorkerEventKindNames.size() ==
              static_cast<std::size_t>(WorkerEvent::Kind::kCheckpoint) + 1);

// How a worker is asked to stop.
struct StopRequest {
  // The worker is stopped to make room for another job (docs/scheduling.md): before SIGTERM the
  // runtime writes the preemption notice file ($DROVER_PREEMPT_NOTICE, see local_runtime.h) and
  // the exit is reported with preempted = true instead of cancelled = true.
  bool preempt = false;
  // Why, for the notice file and the logs, e.g. "preempted by job 12 (reclaim)".
  std::string reason;
};

}  // namespace drover::model
