#pragma once

// Executor: how the control plane hands admitted attempts to an external engine (Slurm,
// Kubernetes) that places and runs them (docs/operations.md, "Executors"). The local executor
// is the node runtimes (drover/agent/runtime.h): Drover places, they start processes. An
// external executor is the same contract one level up: submit instead of launch, cancel
// instead of stop, the engine's states and pending reasons instead of process events.
//
// Implementations do their engine I/O on their own thread: Submit and Cancel queue the request
// and return at once, Poll hands over what was observed since the previous call. Thread-safe:
// the control plane calls Poll from its loop while its effects runner calls Submit and Cancel,
// never under its own lock.

#include <string>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/result.h"
#include "drover/model/executor.h"
#include "drover/model/launch.h"

namespace drover::exec {

class Executor {
 public:
  virtual ~Executor() = default;

  virtual model::ExecutorKind kind() const = 0;

  // Hands an attempt to the engine. Idempotent by launch.ref.name: an attempt the engine already
  // has under that name (submitted before a server restart) is adopted, not submitted again.
  // Reported by Poll: kSubmitted, or kExited with the engine's refusal as exit.message.
  // kInvalidArgument if the launch cannot be expressed for this engine (nothing is queued).
  virtual Status Submit(const model::ExternalLaunch& launch) = 0;

  // Asks the engine to end the attempt; its end is reported by Poll as kExited with
  // exit.cancelled (or exit.preempted when request.preempt). Cancelling twice is not an error.
  virtual Status Cancel(const model::ExternalRef& ref, const model::StopRequest& request) = 0;

  // After a server restart: resumes watching attempts submitted by an earlier process
  // (external_id set) or perhaps submitted (external_id empty: looked up by name). One that the
  // engine has no trace of is reported kExited with node_lost and a message saying so, never
  // dropped silently.
  virtual void Adopt(const std::vector<model::ExternalRef>& refs) = 0;

  // Events since the previous call, each reported once, in the order observed.
  virtual std::vector<model::ExecutorEvent> Poll() = 0;
};

}  // namespace drover::exec
