#pragma once

// WorkerRuntime: how the control plane starts and stops worker processes on one node.
//
// LocalRuntime (drover/agent/local_runtime.h) runs them on this machine, each under its own
// supervisor process (`drover supervise`) that outlives the server; RemoteRuntime (in the
// server) forwards to an agent process over HTTP. Both report through Poll().

#include <string>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/result.h"
#include "drover/model/launch.h"

namespace drover::agent {

class WorkerRuntime {
 public:
  virtual ~WorkerRuntime() = default;

  // Starts the worker described by `spec`; returns once its supervisor is running, without
  // waiting for the process itself. kAlreadyExists if this worker was launched before (nothing
  // is started twice); kInternal if the supervisor could not be spawned.
  virtual Status Launch(const model::LaunchSpec& spec) = 0;

  // Asks a worker to stop: SIGTERM to its process group, SIGKILL after the grace period
  // (LaunchSpec::kill_grace_ms). Its exit is reported by Poll() with cancelled = true, or with
  // preempted = true when request.preempt (the notice file is written first). kNotFound if the
  // worker is unknown or has already been reported exited; kUnavailable if it cannot be
  // signalled yet (an adopted worker whose supervisor is still starting): the caller retries
  // later. Stopping a worker twice is not an error.
  virtual Status Stop(const model::WorkerKey& key, const model::StopRequest& request) = 0;

  // Changes the time limit of a running worker (drover update --timeout): it now ends timed out
  // `timeout_ms` (> 0) after its process started, at once if that time has passed. kNotFound if
  // the worker is unknown or has exited; kUnavailable if its supervisor has not started yet;
  // kFailedPrecondition (this default) for a runtime that cannot change it.
  virtual Status SetTimeout(const model::WorkerKey& /*key*/, DurationMs /*timeout_ms*/) {
    return FailedPrecondition("this runtime cannot change a running worker's time limit");
  }

  // After a server restart: resumes watching workers launched by an earlier process. Exits that
  // happened meanwhile are reported by the next Poll(); a worker whose supervisor died without
  // recording an exit is reported exited with a message saying so. Returns the keys of which
  // there is no trace at all (never launched): the caller may launch those.
  virtual std::vector<model::WorkerKey> Adopt(const std::vector<model::WorkerKey>& keys) = 0;

  // Events since the previous call, each reported once, in the order observed: kStarted, then
  // any kCheckpoint (the worker touched <checkpoint_dir>/.drover-checkpoint), then kExited.
  virtual std::vector<model::WorkerEvent> Poll() = 0;
};

}  // namespace drover::agent
