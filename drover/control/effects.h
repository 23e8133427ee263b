#pragma once

// The effects the controller asks its driver to carry out (after persisting the step that
// produced them), and the one way a driver carries them out: Dispatch into an EffectSink.
//
// Every driver (the server's ControlPlane, the simulator's Replay) implements EffectSink, one
// method per effect. Dispatch visits the variant with an overload per alternative, so a new
// effect that Dispatch or a driver does not handle fails to compile instead of being treated as
// another effect at run time.

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/ids.h"
#include "drover/model/executor.h"
#include "drover/model/launch.h"
#include "drover/model/outputs.h"

namespace drover::control {

// Start a worker process: the agent of spec.node runs spec.
struct LaunchWorker {
  model::LaunchSpec spec;  // without the values of secret_env: the driver adds them at launch
  // The job's team and secret_env (variable -> secret name; docs/security.md, "Secrets"). The
  // driver reads each secret of `team` when it launches and adds it to spec.env; the values never
  // pass through the controller, its steps or the store.
  std::string team;
  std::map<std::string, std::string> secret_env;
};
// Stop a worker process (SIGTERM, grace, SIGKILL). With preempt, the agent first writes the
// preemption notice file ($DROVER_PREEMPT_NOTICE) and reports the exit as preempted.
struct StopWorker {
  NodeId node;
  model::WorkerKey key;
  bool preempt = false;
  std::string reason;  // for the notice, e.g. "preempted by job 12 (reclaim)"
};
// Change the time limit of a running worker (`drover update --timeout`): it now ends timed out
// `timeout_ms` after its process started, at once if that time has passed.
struct SetWorkerTimeout {
  NodeId node;
  model::WorkerKey key;
  DurationMs timeout_ms = 0;  // > 0
};
// Publish the outputs of an attempt whose workers all exited 0: move each staged path onto its
// destination atomically, read each value. The driver answers with OnOutputsPublished; until
// then the job stays running (holding nothing).
// The job's files are its account's: a driver running as root moves and removes them with that
// account's file permissions (Job::run_as, may_run_as_root; docs/security.md).
struct PublishOutputs {
  JobId job;
  int attempt = 0;
  std::vector<model::StagedOutput> outputs;
  // The value outputs' values that the attempt's workers' nodes reported with their exits
  // (ExitStatus::output_values; the lowest rank's where several did): published as they are.
  // A value output without one is read at its staging location (an external executor's job).
  std::map<std::string, std::string> reported_values;
  std::string run_as;
  bool may_run_as_root = false;
};
// Remove the staging locations of an attempt that will not publish (it failed, timed out, was
// preempted or cancelled), as the job's account (as PublishOutputs).
struct DiscardOutputs {
  std::vector<model::StagedOutput> outputs;
  std::string run_as;
  bool may_run_as_root = false;
};
// The outcome of an attempt's publication is persisted: drop what the driver kept to finish a
// publication that a crash cut short (agent::PublicationRecord). Emitted, once the driver has
// answered PublishOutputs, for a job with path outputs; effects run after their step is
// persisted, so a crash before this leaves a record that the next try of the publication finds.
struct ForgetPublication {
  JobId job;
  int attempt = 0;
};
// Hand an admitted attempt to its queue's external executor (model/executor.h); the driver
// answers with OnExecutorEvent.
struct SubmitExternal {
  model::ExternalLaunch launch;
};
// End an attempt running under an external executor (scancel, delete the Kubernetes Job).
struct CancelExternal {
  model::ExternalRef ref;
  std::string reason;
};
using Effect = std::variant<LaunchWorker, StopWorker, SetWorkerTimeout, PublishOutputs,
                            DiscardOutputs, ForgetPublication, SubmitExternal, CancelExternal>;

// Carries out effects, one method per alternative of Effect. Each method is called on the
// driver's thread in the order the step lists the effects; what a method feeds back into the
// controller (a launch that failed, outputs published) is the driver's business.
class EffectSink {
 public:
  virtual ~EffectSink() = default;
  virtual void LaunchWorker(const control::LaunchWorker& effect) = 0;
  virtual void StopWorker(const control::StopWorker& effect) = 0;
  virtual void SetWorkerTimeout(const control::SetWorkerTimeout& effect) = 0;
  virtual void PublishOutputs(const control::PublishOutputs& effect) = 0;
  virtual void DiscardOutputs(const control::DiscardOutputs& effect) = 0;
  virtual void ForgetPublication(const control::ForgetPublication& effect) = 0;
  virtual void SubmitExternal(const control::SubmitExternal& effect) = 0;
  virtual void CancelExternal(const control::CancelExternal& effect) = 0;
};

// Hands `effect` to the sink method of its type.
void Dispatch(const Effect& effect, EffectSink& sink);

}  // namespace drover::control
