// Controller, the external-executor part: attempts handed to an external engine (Slurm,
// Kubernetes; model/executor.h) instead of launched on Drover's nodes. The hand-off and its
// restore, the engine's events, and the continuation of an engine job the engine requeued.

#include <fmt/format.h>

#include <algorithm>

#include "drover/control/attempt_facts.h"
#include "drover/control/contract.h"
#include "drover/control/controller.h"

namespace drover::control {
namespace {

using model::Attempt;
using model::Job;
using model::JobState;
using model::Worker;
using model::WorkerState;

// Whether the current attempt continues an engine job that the engine requeued, and its
// executor has not yet acknowledged the continuation.
bool AwaitsContinuation(const Job& job) {
  const Attempt& attempt = *job.current_attempt();
  return model::IsExternal(attempt) && attempt.external_submitted_at == 0 &&
         attempt.finished_at == 0 && ExternalRefOf(job).restart > 0;
}

}  // namespace

void Controller::RestoreExternal(Job& job, TimeMs now, Step& step) {
  Hold(job, ChargeOf(job), now);
  if (AwaitsContinuation(job)) {
    // The executor may never have released the requeued engine job: continue it again.
    EmitHandOff(job, model::ExecutorOf(policy_, job.spec.queue), step);
  }
  // Else handed to its executor (or about to be): the driver adopts it.
}

void Controller::HandOff(Job& job, const model::ExecutorConfig& executor, TimeMs now, Step& step,
                         const model::ExternalRef* requeued) {
  Attempt& attempt = *job.current_attempt();
  attempt.dequeued_at = attempt.admitted_at = now;
  attempt.executor = model::ExecutorKindName(executor.kind);
  attempt.workers.clear();
  for (int rank = 0; rank < std::max(job.spec.workers, 1); ++rank) {
    Worker worker;
    worker.rank = rank;
    worker.state = WorkerState::kLaunched;
    worker.launched_at = now;
    attempt.workers.push_back(std::move(worker));
  }
  if (requeued) {
    attempt.external_id = requeued->external_id;
    job.status_message = fmt::format("continuing {} job {}, which {} requeued", attempt.executor,
                                     attempt.external_id, attempt.executor);
    MoveTo(job, JobState::kAdmitted,
           fmt::format("dequeued; continues {} job {}, which {} requeued", attempt.executor,
                       attempt.external_id, attempt.executor),
           now, step);
  } else {
    job.status_message = fmt::format("submitting to {}", attempt.executor);
    MoveTo(job, JobState::kAdmitted, fmt::format("dequeued; handed to {}", attempt.executor), now,
           step);
  }
  EmitHandOff(job, executor, step);
}

void Controller::EmitHandOff(const Job& job, const model::ExecutorConfig& executor,
                             Step& step) const {
  const Attempt& attempt = *job.current_attempt();
  const int workers = static_cast<int>(attempt.workers.size());
  step.effects.push_back(SubmitExternal{MakeExternalLaunch(
      job, executor,
      ContractOf(
          job, workers,
          MasterPort(job.id, attempt.number, options_.master_port_base, options_.master_port_span),
          options_.value_outputs_root),
      KillGrace(job))});
}

void Controller::ContinueRequeued(Job& job, const model::ExternalRef& requeued,
                                  std::optional<sched::Charge> charge, TimeMs now, Step& step) {
  const model::ExecutorConfig executor = model::ExecutorOf(policy_, job.spec.queue);
  if (job.state != JobState::kReady || executor.kind != requeued.executor) {
    step.effects.push_back(
        CancelExternal{requeued, job.state == JobState::kReady
                                     ? "the queue runs on another executor now"
                                     : fmt::format("job {} is not retried", job.id.value())});
    return;
  }
  // Ready at once: the engine's own requeue delay stands in for a retry backoff.
  job.current_attempt()->ready_at = job.not_before = now;
  HandOff(job, executor, now, step, &requeued);
  Hold(job, std::move(charge), now);
}

void Controller::OnExecutorEvent(const model::ExecutorEvent& event, Step& step) {
  Job* found = jobs_.Find(event.ref.job);
  if (!found) return;
  Job& job = *found;
  Attempt* attempt = job.current_attempt();
  if (!attempt || !model::IsExternal(*attempt) || attempt->number != event.ref.attempt ||
      attempt->finished_at != 0 || !holdings_.Holds(job.id)) {
    return;
  }
  const std::string& id = event.ref.external_id;
  // The engine's clock may be coarser than ours (Slurm's are whole seconds): never before the
  // hand-off, so the timeline stays ordered.
  const TimeMs at = std::max(event.at, attempt->admitted_at);
  if (attempt->external_id.empty() && !id.empty()) {  // kSubmitted was missed (a restart)
    attempt->external_id = id;
    step.changed.insert(job.id);
  }
  using Kind = model::ExecutorEvent::Kind;
  switch (event.kind) {
    case Kind::kSubmitted:
      if (attempt->external_submitted_at != 0) return;
      attempt->external_submitted_at = at;
      if (job.state == JobState::kAdmitted && !attempt->outcome) {
        job.status_message = fmt::format("queued in {} as job {}", attempt->executor, id);
      }
      step.changed.insert(job.id);
      return;
    case Kind::kPending:
      if (job.state != JobState::kAdmitted || attempt->outcome ||
          (attempt->external_reason == event.reason &&
           attempt->external_eligible_at == event.eligible_at)) {
        return;
      }
      attempt->external_reason = event.reason;
      attempt->external_eligible_at = event.eligible_at;
      job.status_message = fmt::format("{} job {} pending: {}", attempt->executor,
                                       attempt->external_id, event.reason);
      step.changed.insert(job.id);
      return;
    case Kind::kStarted: {
      if (job.state != JobState::kAdmitted) return;
      step.changed.insert(job.id);
      for (Worker& worker : attempt->workers) {
        if (!event.nodes.empty()) {
          worker.host = event.nodes[std::min<std::size_t>(worker.rank, event.nodes.size() - 1)];
        }
        if (worker.state == WorkerState::kLaunched) {
          worker.state = WorkerState::kRunning;
          worker.started_at = at;
        }
      }
      attempt->external_reason.clear();
      attempt->placed_at = attempt->workers_started_at = attempt->running_at = at;
      std::string hosts;
      for (const std::string& node : event.nodes) hosts += (hosts.empty() ? "" : ",") + node;
      job.status_message.clear();
      MoveTo(job, JobState::kPlaced,
             fmt::format("{} job {} allocated {}", attempt->executor, attempt->external_id,
                         hosts.empty() ? "its nodes" : hosts),
             at, step);
      MoveTo(job, JobState::kStarting, "launching workers", at, step);
      MoveTo(job, JobState::kRunning, "all workers started", at, step);
      return;
    }
    case Kind::kExited: {
      step.changed.insert(job.id);
      for (Worker& worker : attempt->workers) {
        if (!WorkerAlive(worker)) continue;
        worker.state = WorkerState::kExited;
        worker.exit = event.exit;
        worker.finished_at = at;
      }
      if (!event.exit.Succeeded() && !attempt->outcome) {
        // Preempted by the engine: requeued (JobState::kReady) like a preemption of Drover's.
        const JobState outcome = event.exit.timed_out   ? JobState::kTimedOut
                                 : event.exit.cancelled ? JobState::kCancelled
                                 : event.exit.preempted ? JobState::kReady
                                                        : JobState::kFailed;
        EndAttempt(job, outcome,
                   fmt::format("{} job {}: {}", attempt->executor, attempt->external_id,
                               event.exit.Describe()),
                   step);
      }
      if (job.state == JobState::kAdmitted || job.state == JobState::kPlaced) {
        // Ended before it was seen running: the lifecycle still passes through running.
        attempt->placed_at = attempt->workers_started_at = attempt->running_at = at;
        MoveTo(job, JobState::kPlaced, "ended in its executor before it was seen running", at,
               step);
        MoveTo(job, JobState::kStarting, "launching workers", at, step);
        MoveTo(job, JobState::kRunning, "all workers started", at, step);
      }
      if (!event.requeued) {
        FinishAttempt(job, at, step);
        return;
      }
      // The engine holds the requeued job: the next attempt keeps this one's admission.
      const model::ExternalRef requeued = ExternalRefOf(job);
      std::optional<sched::Charge> charge;
      if (const sched::Charge* held = holdings_.ChargeOf(job.id)) charge = *held;
      FinishAttempt(job, at, step);
      ContinueRequeued(job, requeued, std::move(charge), at, step);
      return;
    }
  }
}

std::vector<model::ExternalRef> Controller::LiveExternal() const {
  std::vector<model::ExternalRef> live;
  for (JobId id : holdings_.Held()) {
    const Job& job = jobs_.Get(id);
    const Attempt& attempt = *job.current_attempt();
    if (model::IsExternal(attempt) && attempt.finished_at == 0 && !AwaitsContinuation(job) &&
        std::any_of(attempt.workers.begin(), attempt.workers.end(), WorkerAlive)) {
      live.push_back(ExternalRefOf(job));
    }
  }
  return live;
}

}  // namespace drover::control
