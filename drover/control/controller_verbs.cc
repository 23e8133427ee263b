// Controller, the verbs part: what a user does to one job besides cancelling it (docs/api.md,
// "Job verbs"): hold and release (the scheduling pass skips a held job, which keeps its place in
// its queue's order), update (priority, timeout, queue; only the timeout once admitted) and
// requeue (stop a running job and queue it again, resuming from its checkpoint). Every verb is
// recorded as a transition naming who did it and why; a state that does not allow the verb is
// refused naming that state, changing nothing.

#include <fmt/format.h>

#include <algorithm>

#include "drover/common/quantity.h"
#include "drover/control/attempt_facts.h"
#include "drover/control/controller.h"
#include "drover/model/job_state_words.h"

namespace drover::control {

using model::Attempt;
using model::Job;
using model::JobState;

namespace {

// Not yet admitted: the states a job may be held in and have every field updated.
bool Unadmitted(JobState state) {
  return state == JobState::kPending || state == JobState::kWaiting || state == JobState::kReady;
}

// ": reason", or "" without one.
std::string Because(const std::string& reason) {
  return reason.empty() ? "" : fmt::format(": {}", reason);
}

}  // namespace

void Controller::RecordAction(Job& job, const std::string& cause, const std::string& actor,
                              TimeMs now, Step& step) {
  const Attempt* attempt = job.current_attempt();
  step.transitions.push_back(model::Transition{job.id, attempt ? attempt->number : 0, job.state,
                                               job.state, now, cause, actor});
  step.changed.insert(job.id);
}

Status Controller::HoldJob(JobId id, const std::string& by, const std::string& reason, TimeMs now,
                           Step& step) {
  Job* found = jobs_.Find(id);
  if (!found) return NotFound(fmt::format("job {} does not exist", id.value()));
  Job& job = *found;
  if (job.hold) {
    return FailedPrecondition(
        fmt::format("job {} is already held (by {}, for {})", id.value(), job.hold->by,
                    FormatDuration(std::max<TimeMs>(now - job.hold->since, 0))));
  }
  if (!Unadmitted(job.state)) {
    return FailedPrecondition(fmt::format(
        "job {} {}: only a job not yet admitted (pending, waiting or ready) can be held{}",
        id.value(), model::kJobStatePhrases.Name(job.state),
        job.state == JobState::kStarting || job.state == JobState::kRunning
            ? "; drover requeue stops it and queues it again"
            : ""));
  }
  job.hold = model::JobHold{by, now, reason};
  // Out of the scheduler's view: no nomination, reservation or verdict stays for it.
  awaiting_.erase(id);
  verdicts_.erase(id);
  if (reservation_ && reservation_->job == id) reservation_.reset();
  job.status_message = fmt::format("held by {}{}", by, Because(reason));
  RecordAction(job, fmt::format("held{}", Because(reason)), by, now, step);
  return OkStatus();
}

Status Controller::ReleaseJob(JobId id, const std::string& by, TimeMs now, Step& step) {
  Job* found = jobs_.Find(id);
  if (!found) return NotFound(fmt::format("job {} does not exist", id.value()));
  Job& job = *found;
  if (!job.hold) {
    return FailedPrecondition(fmt::format("job {} is not held (it {})", id.value(),
                                          model::kJobStatePhrases.Name(job.state)));
  }
  const std::string cause = fmt::format("released (held by {} for {})", job.hold->by,
                                        FormatDuration(std::max<TimeMs>(now - job.hold->since, 0)));
  job.hold.reset();
  job.status_message.clear();  // the next pass gives it a verdict again
  capacity_freed_ = true;      // a full pass: the released job is tried at once
  RecordAction(job, cause, by, now, step);
  return OkStatus();
}

Status Controller::UpdateJob(JobId id, const JobUpdate& update, const std::string& by, TimeMs now,
                             Step& step) {
  Job* found = jobs_.Find(id);
  if (!found) return NotFound(fmt::format("job {} does not exist", id.value()));
  Job& job = *found;
  if (update.empty()) {
    return InvalidArgument("update: nothing to change; give priority, timeout and/or queue");
  }
  // The values first, as a submission checks them; then whether the state allows them.
  if (update.priority_class && !model::PriorityClassValue(*update.priority_class)) {
    return InvalidArgument(fmt::format("priority: unknown priority class '{}'; the classes are {}",
                                       *update.priority_class,
                                       fmt::join(model::PriorityClassNames(), ", ")));
  }
  if (update.timeout && *update.timeout <= 0) {
    return InvalidArgument("timeout: must be greater than 0");
  }
  if (update.queue && !holdings_.queues().FindLeaf(*update.queue)) {
    return InvalidArgument(fmt::format("queue: {} does not exist; the queues are {}", *update.queue,
                                       fmt::join(holdings_.queues().LeafNames(), ", ")));
  }
  if (model::IsTerminal(job.state) || jobs_.IsPublishing(id)) {
    return FailedPrecondition(fmt::format("job {} {}: a finished job cannot be updated", id.value(),
                                          model::kJobStatePhrases.Name(job.state)));
  }
  const bool admitted = !Unadmitted(job.state);
  if (admitted && (update.priority_class || update.queue)) {
    return FailedPrecondition(fmt::format(
        "job {} {}: once admitted only its timeout may change ({} is fixed until it ends; "
        "drover requeue queues it again)",
        id.value(), model::kJobStatePhrases.Name(job.state), update.queue ? "queue" : "priority"));
  }
  if (admitted && (job.state != JobState::kRunning && job.state != JobState::kStarting)) {
    return FailedPrecondition(fmt::format(
        "job {} {}: its workers are being placed; update its timeout once it is running",
        id.value(), model::kJobStatePhrases.Name(job.state)));
  }
  if (admitted && model::IsExternal(*job.current_attempt())) {
    return FailedPrecondition(
        fmt::format("job {} runs under the {} executor, whose time limit was set at submission",
                    id.value(), job.current_attempt()->executor));
  }
  model::JobSpec spec = job.spec;
  std::vector<std::string> changes;
  if (update.priority_class && *update.priority_class != spec.priority_class) {
    changes.push_back(
        fmt::format("priority {} -> {}", spec.priority_class, *update.priority_class));
    spec.priority_class = *update.priority_class;
  }
  if (update.timeout && update.timeout != spec.timeout) {
    changes.push_back(fmt::format("timeout {} -> {}",
                                  spec.timeout ? FormatDuration(*spec.timeout) : "none",
                                  FormatDuration(*update.timeout)));
    spec.timeout = update.timeout;
  }
  if (update.queue && *update.queue != spec.queue) {
    changes.push_back(fmt::format("queue {} -> {}", spec.queue, *update.queue));
    spec.queue = *update.queue;
    if (options_.refuse_infeasible && !spec.hold_infeasible) {
      if (std::optional<std::string> why = FindInfeasibility(spec)) {
        return InvalidArgument(
            fmt::format("queue: job {} could never start in {}: {}", id.value(), spec.queue, *why));
      }
    }
  }
  if (changes.empty()) return OkStatus();  // as asked already: nothing to record
  job.spec = std::move(spec);
  if (admitted) {
    // The running attempt's workers take the new limit, counted from their start.
    const Attempt& attempt = *job.current_attempt();
    for (const model::Worker& worker : attempt.workers) {
      if (!WorkerAlive(worker)) continue;
      step.effects.push_back(
          SetWorkerTimeout{worker.node, {job.id, attempt.number, worker.rank}, *job.spec.timeout});
    }
  } else if (job.state == JobState::kReady) {
    verdicts_.erase(id);
    if (reservation_ && reservation_->job == id) reservation_.reset();
  }
  // A full pass judges it (or, for a running job's new limit, the backfill estimates) anew.
  capacity_freed_ = true;
  RecordAction(job, fmt::format("updated: {}", fmt::join(changes, ", ")), by, now, step);
  return OkStatus();
}

Status Controller::RequeueJob(JobId id, const std::string& by, const std::string& reason,
                              TimeMs now, Step& step) {
  Job* found = jobs_.Find(id);
  if (!found) return NotFound(fmt::format("job {} does not exist", id.value()));
  Job& job = *found;
  if (job.state != JobState::kStarting && job.state != JobState::kRunning) {
    return FailedPrecondition(
        fmt::format("job {} {}: only a starting or running job can be requeued", id.value(),
                    model::kJobStatePhrases.Name(job.state)));
  }
  Attempt& attempt = *job.current_attempt();
  if (jobs_.IsPublishing(id) || attempt.finished_at != 0) {
    return FailedPrecondition(
        fmt::format("job {} has finished running and is publishing its outputs", id.value()));
  }
  if (attempt.outcome) {
    return FailedPrecondition(
        fmt::format("job {} is already stopping ({})", id.value(), attempt.outcome_reason));
  }
  if (model::IsExternal(attempt)) {
    return FailedPrecondition(
        fmt::format("job {} runs under the {} executor; requeue it there (e.g. scontrol requeue)",
                    id.value(), attempt.executor));
  }
  const std::string cause = fmt::format("requeued by {}{}", by, Because(reason));
  attempt.outcome = JobState::kReady;
  attempt.outcome_reason = cause;
  attempt.requeued_by = by;
  attempt.disruption = model::Disruption::kUserRequeue;
  job.status_message = "stopping: " + cause;
  StopWorkers(job, /*preempt=*/true, cause, step);
  RecordAction(job, "requeue requested" + Because(reason), by, now, step);
  return OkStatus();
}

}  // namespace drover::control
