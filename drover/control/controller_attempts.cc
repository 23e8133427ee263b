// Controller, the attempt part: an attempt from its start to its end. Launching a placed
// job's workers, their events, stopping them, ending the attempt (outputs published or
// discarded) and what follows: requeue after preemption, retry with backoff, or the job's
// terminal state; the reports a running job makes (checkpoints, progress).

#include <fmt/format.h>

#include <algorithm>

#include "drover/common/quantity.h"
#include "drover/control/attempt_facts.h"
#include "drover/control/contract.h"
#include "drover/control/controller.h"
#include "drover/model/job_state_words.h"

namespace drover::control {

using model::Attempt;
using model::Job;
using model::JobState;
using model::Worker;
using model::WorkerState;

Result<Job*> Controller::FindRunning(JobId id, std::string_view reports) {
  Job* found = jobs_.Find(id);
  if (!found) return NotFound(fmt::format("job {} does not exist", id.value()));
  Job& job = *found;
  if (job.state != JobState::kStarting && job.state != JobState::kRunning) {
    return FailedPrecondition(fmt::format("job {} {}: only a running job reports {}", id.value(),
                                          model::kJobStatePhrases.Name(job.state), reports));
  }
  return &job;
}

Status Controller::ReportCheckpoint(JobId id, TimeMs at, Step& step) {
  DROVER_ASSIGN_OR_RETURN(Job * found, FindRunning(id, "checkpoints"));
  Job& job = *found;
  Attempt& attempt = *job.current_attempt();
  if (at > attempt.last_checkpoint_at) {
    attempt.last_checkpoint_at = at;
    holdings_.Track(id);
    step.changed.insert(id);
  }
  return OkStatus();
}

Status Controller::ReportProgress(JobId id, const model::ProgressReport& report, TimeMs now,
                                  Step& step) {
  DROVER_ASSIGN_OR_RETURN(Job * found, FindRunning(id, "progress"));
  Job& job = *found;
  DROVER_RETURN_IF_ERROR(model::CheckProgressReport(report));
  Attempt& attempt = *job.current_attempt();
  if (report.useful_work_began && attempt.useful_work_at == 0) attempt.useful_work_at = now;
  if (report.progress) attempt.progress = *report.progress;
  if (report.throughput) {
    attempt.throughput = *report.throughput;
    attempt.throughput_unit = report.unit;
  }
  step.changed.insert(id);
  return OkStatus();
}

void Controller::StartAttempt(Job& job, TimeMs ready_at, Step& step) {
  Attempt attempt;
  attempt.number = static_cast<int>(job.attempts.size()) + 1;
  attempt.ready_at = ready_at;
  job.attempts.push_back(std::move(attempt));
  job.not_before = ready_at;
  step.changed.insert(job.id);
}

void Controller::Launch(Job& job, sched::Placement&& placement, TimeMs now, Step& step) {
  Attempt& attempt = *job.current_attempt();
  attempt.dequeued_at = attempt.admitted_at = now;
  MoveTo(job, JobState::kAdmitted, "dequeued", now, step);
  attempt.workers.clear();
  attempt.workers.reserve(placement.workers.size());
  for (sched::WorkerAssignment& assignment : placement.workers) {
    Worker worker;
    worker.rank = assignment.rank;
    worker.node = std::move(assignment.node);
    worker.gpus = std::move(assignment.gpus);
    attempt.workers.push_back(std::move(worker));
  }
  attempt.placed_at = now;
  std::string nodes;
  for (const Worker& worker : attempt.workers) {
    if (nodes.find(worker.node.value()) == std::string::npos) {
      nodes += (nodes.empty() ? "" : ",") + worker.node.value();
    }
  }
  MoveTo(job, JobState::kPlaced, "placed on " + nodes, now, step);
  for (Worker& worker : attempt.workers) {
    worker.state = WorkerState::kLaunched;
    worker.launched_at = now;
    step.effects.push_back(
        LaunchWorker{MakeLaunchSpec(job, worker), job.spec.team, job.spec.secret_env});
  }
  attempt.workers_started_at = now;
  job.status_message.clear();
  MoveTo(job, JobState::kStarting,
         attempt.resumed ? "launching workers (resuming from checkpoint)" : "launching workers",
         now, step);
}

void Controller::Relaunch(const model::WorkerKey& key, Step& step) {
  Job* found = jobs_.Find(key.job);
  if (!found) return;
  Job& job = *found;
  Attempt* attempt = job.current_attempt();
  if (!attempt || attempt->number != key.attempt || key.rank < 0 ||
      key.rank >= static_cast<int>(attempt->workers.size())) {
    return;
  }
  Worker& worker = attempt->workers[key.rank];
  if (!WorkerAlive(worker)) return;
  step.effects.push_back(
      LaunchWorker{MakeLaunchSpec(job, worker), job.spec.team, job.spec.secret_env});
}

DurationMs Controller::KillGrace(const Job& job) const {
  // An interruptible job may be preempted: every stop gives it the preemption grace period.
  return job.spec.interruptible ? policy_.preemption_grace : options_.kill_grace_ms;
}

model::LaunchSpec Controller::MakeLaunchSpec(const Job& job, const Worker& worker) const {
  const Attempt& attempt = *job.current_attempt();
  model::LaunchSpec spec;
  spec.key = model::WorkerKey{job.id, attempt.number, worker.rank};
  spec.node = worker.node;
  spec.gpus = worker.gpus;
  if (!options_.launch_contract) return spec;
  if (!job.spec.command.empty()) {
    spec.argv = job.spec.command;
  } else {
    spec.argv = {"/bin/sh", "-c", job.spec.script};
  }
  spec.working_dir = job.spec.working_dir;
  spec.timeout_ms = job.spec.timeout.value_or(0);
  spec.kill_grace_ms = KillGrace(job);
  spec.checkpoint_dir = job.spec.checkpoint_dir;
  spec.run_as = job.run_as;
  spec.may_run_as_root = job.may_run_as_root;

  // Value outputs: staged on the worker's node, their values reported with its exit.
  AttemptContract contract = ContractOf(
      job, static_cast<int>(attempt.workers.size()),
      MasterPort(job.id, attempt.number, options_.master_port_base, options_.master_port_span),
      /*value_outputs_root=*/"");
  spec.env = std::move(contract.env);
  spec.make_dirs = std::move(contract.make_dirs);
  spec.value_outputs = std::move(contract.value_outputs);
  std::string visible;
  for (int gpu : worker.gpus) visible += (visible.empty() ? "" : ",") + std::to_string(gpu);
  const Worker& master = attempt.workers.front();
  auto master_node = nodes_.find(master.node);
  spec.env["CUDA_VISIBLE_DEVICES"] = visible;
  spec.env["DROVER_WORKER_RANK"] = std::to_string(worker.rank);
  spec.env["DROVER_MASTER_ADDR"] =
      master_node != nodes_.end() ? master_node->second.address : "127.0.0.1";
  return spec;
}

void Controller::OnWorkerEvent(const model::WorkerEvent& event, Step& step) {
  Job* found = jobs_.Find(event.key.job);
  if (!found) return;
  Job& job = *found;
  Attempt* attempt = job.current_attempt();
  if (!attempt || attempt->number != event.key.attempt || attempt->finished_at != 0 ||
      event.key.rank < 0 || event.key.rank >= static_cast<int>(attempt->workers.size())) {
    return;
  }
  Worker& worker = attempt->workers[event.key.rank];
  if (!WorkerAlive(worker)) return;
  // An agent's clock is its own: an event reads no earlier than the worker's placement and start
  // as recorded here, so that the timeline stays ordered (the server clamps future times on
  // receipt, RemoteRuntime::Report).
  const TimeMs now = std::max({event.at, attempt->placed_at, worker.started_at});

  if (event.kind == model::WorkerEvent::Kind::kCheckpoint) {
    if (now > attempt->last_checkpoint_at) {
      attempt->last_checkpoint_at = now;
      holdings_.Track(job.id);
      step.changed.insert(job.id);
    }
    return;
  }
  if (event.kind == model::WorkerEvent::Kind::kStarted) {
    if (worker.state != WorkerState::kLaunched) return;  // reported again after a restart
    step.changed.insert(job.id);
    worker.state = WorkerState::kRunning;
    worker.started_at = now;
    bool all_running =
        std::all_of(attempt->workers.begin(), attempt->workers.end(),
                    [](const Worker& w) { return w.state != WorkerState::kLaunched; });
    if (all_running && job.state == JobState::kStarting && !attempt->outcome) {
      attempt->running_at = now;
      MoveTo(job, JobState::kRunning, "all workers started", now, step);
    }
    return;
  }

  step.changed.insert(job.id);
  worker.state = WorkerState::kExited;
  worker.exit = event.exit;
  worker.finished_at = now;
  if (!event.exit.Succeeded() && !attempt->outcome) {
    JobState outcome = event.exit.timed_out   ? JobState::kTimedOut
                       : event.exit.cancelled ? JobState::kCancelled
                                              : JobState::kFailed;
    std::string reason =
        fmt::format("worker {} on {}: {}", worker.rank, worker.node.value(), event.exit.Describe());
    EndAttempt(job, outcome, reason, step);
    attempt->disruption = model::DisruptionOf(event.exit);
  }
  bool any_alive = std::any_of(attempt->workers.begin(), attempt->workers.end(), WorkerAlive);
  if (!any_alive) FinishAttempt(job, now, step);
}

void Controller::EndAttempt(Job& job, JobState outcome, const std::string& reason, Step& step) {
  Attempt& attempt = *job.current_attempt();
  if (attempt.outcome) return;  // already ending; the first cause wins
  attempt.outcome = outcome;
  attempt.outcome_reason = reason;
  job.status_message = outcome == JobState::kCancelled ? "cancelling: " + reason : reason;
  step.changed.insert(job.id);
  StopWorkers(job, /*preempt=*/false, reason, step);
}

void Controller::FinishAttempt(Job& job, TimeMs now, Step& step) {
  Attempt& attempt = *job.current_attempt();
  Unhold(job, now);
  attempt.finished_at = now;
  if (attempt.preempted_by || attempt.disruption == model::Disruption::kNodeDrain) {
    stopping_.erase(job.id);
    // Its preemptor stays nominated, holding these nodes, until its next cycle at least.
    auto awaiting = attempt.preempted_by ? awaiting_.find(*attempt.preempted_by) : awaiting_.end();
    if (awaiting != awaiting_.end() && awaiting->second.stopping.erase(job.id)) {
      for (const Worker& worker : attempt.workers) awaiting->second.freed.insert(worker.node);
    }
  }
  const bool drained = attempt.disruption == model::Disruption::kNodeDrain;
  if ((attempt.preempted_by || drained || model::WasRequeued(attempt)) &&
      attempt.outcome == JobState::kReady) {
    // Finished on its own during the grace period: it succeeded, nothing to requeue.
    const bool all_succeeded =
        std::all_of(attempt.workers.begin(), attempt.workers.end(),
                    [](const Worker& worker) { return worker.exit && worker.exit->Succeeded(); });
    if (all_succeeded) {
      attempt.outcome = JobState::kSucceeded;
      attempt.outcome_reason = fmt::format("all workers exited 0 (before {} took effect)",
                                           attempt.preempted_by ? "preemption"
                                           : drained            ? "the node's drain"
                                                                : "the requeue");
      attempt.preempted_by.reset();
      attempt.requeued_by.clear();
      attempt.disruption = model::Disruption::kNone;
    }
  }
  if (!attempt.outcome) {
    attempt.outcome = JobState::kSucceeded;
    attempt.outcome_reason = "all workers exited 0";
  }
  if (attempt.outcome == JobState::kSucceeded && !job.spec.outputs.empty()) {
    // Succeeded only once its outputs are published (OnOutputsPublished).
    jobs_.StartPublishing(job.id);
    job.status_message = "publishing outputs";
    step.changed.insert(job.id);
    EmitPublish(job, step);
    return;
  }
  CompleteAttempt(job, now, step);
}

void Controller::EmitPublish(const Job& job, Step& step) const {
  PublishOutputs publish;
  publish.job = job.id;
  publish.attempt = job.current_attempt()->number;
  publish.outputs =
      model::StagedOutputs(job.spec, job.id, publish.attempt, options_.value_outputs_root);
  for (const Worker& worker : job.current_attempt()->workers) {  // by rank: the lowest first
    if (worker.exit) {
      publish.reported_values.insert(worker.exit->output_values.begin(),
                                     worker.exit->output_values.end());
    }
  }
  publish.run_as = job.run_as;
  publish.may_run_as_root = job.may_run_as_root;
  step.effects.emplace_back(std::move(publish));
}

void Controller::CompleteAttempt(Job& job, TimeMs now, Step& step) {
  Attempt& attempt = *job.current_attempt();
  if (attempt.outcome != JobState::kSucceeded && !job.spec.outputs.empty()) {
    DiscardOutputs discard;
    for (model::StagedOutput& output :
         model::StagedOutputs(job.spec, job.id, attempt.number, options_.value_outputs_root)) {
      // An agent's worker staged its values on its node, in its own folder: nothing here.
      if (output.destination.empty() && attempt.executor.empty()) continue;
      discard.outputs.push_back(std::move(output));
    }
    discard.run_as = job.run_as;
    discard.may_run_as_root = job.may_run_as_root;
    if (!discard.outputs.empty()) step.effects.emplace_back(std::move(discard));
  }
  if (model::WasPreempted(attempt) && attempt.outcome == JobState::kReady &&
      !model::RetriesOn(job.spec.retry, model::FailureKind::kPreempted)) {
    attempt.outcome = JobState::kFailed;  // retry.on leaves preemption out: it ends the job
  }
  const bool requeued = model::WasRequeued(attempt);
  if ((model::WasPreempted(attempt) || requeued) && attempt.outcome == JobState::kReady) {
    // Requeued at once; a preemption or a user's requeue does not count against the retry
    // policy.
    const TimeMs checkpoint = LastCheckpoint(job);
    std::string cause =
        checkpoint > 0 ? fmt::format("{}; requeued to resume from its checkpoint ({} before {})",
                                     attempt.outcome_reason,
                                     FormatDuration(std::max<TimeMs>(now - checkpoint, 0)),
                                     requeued ? "the requeue" : "preemption")
                       : fmt::format("{}; requeued to retry from scratch (no checkpoint)",
                                     attempt.outcome_reason);
    job.status_message = cause;
    MoveTo(job, JobState::kReady, cause, now, step,
           requeued ? std::string_view(attempt.requeued_by) : model::kSystemActor);
    StartAttempt(job, now, step);
    job.current_attempt()->resumed = checkpoint > 0;
    return;
  }
  JobState outcome = *attempt.outcome;
  const model::FailureKind kind = FailureKindOf(attempt);
  const bool retryable = (outcome == JobState::kFailed || outcome == JobState::kTimedOut) &&
                         model::RetriesOn(job.spec.retry, kind);
  const AttemptCount count = CountAttempts(job);
  if (retryable && count.counted < job.spec.retry.max_attempts) {
    const TimeMs checkpoint = LastCheckpoint(job);
    const bool resume = job.spec.resume && checkpoint > 0;
    // A node loss within the free ones queues again at once, as a preemption does.
    const bool free_node_loss =
        kind == model::FailureKind::kNodeLost && count.node_losses <= model::kFreeNodeLosses;
    std::string cause =
        fmt::format("attempt {} {}: {}; {}", attempt.number, model::JobStateName(outcome),
                    attempt.outcome_reason, resume ? "resuming from its checkpoint" : "retrying");
    if (free_node_loss) {
      cause += fmt::format(" (node loss {} of {} not counted against max_attempts)",
                           count.node_losses, model::kFreeNodeLosses);
    }
    attempt.outcome = JobState::kReady;
    job.status_message = cause;
    const TimeMs ready_at =
        free_node_loss ? now : now + RetryDelay(job.spec.retry, count.counted + 1);
    MoveTo(job, JobState::kReady, cause, now, step);
    StartAttempt(job, ready_at, step);
    job.current_attempt()->resumed = resume;
    return;
  }
  job.status_message = outcome == JobState::kSucceeded ? "" : attempt.outcome_reason;
  MoveTo(job, outcome, attempt.outcome_reason, now, step);
  if (outcome == JobState::kSucceeded) MaybeStopSweep(job, now, step);
}

void Controller::OnOutputsPublished(JobId id, int attempt_number,
                                    const Result<std::map<std::string, std::string>>& published,
                                    TimeMs now, Step& step) {
  Job* found = jobs_.Find(id);
  if (!found || !jobs_.IsPublishing(id)) return;
  Job& job = *found;
  Attempt& attempt = *job.current_attempt();
  if (attempt.number != attempt_number) return;
  jobs_.EndPublishing(id);
  step.changed.insert(id);
  if (std::any_of(job.spec.outputs.begin(), job.spec.outputs.end(),
                  [](const model::OutputSpec& output) { return !output.path.empty(); })) {
    step.effects.emplace_back(ForgetPublication{id, attempt_number});
  }
  if (published) {
    job.outputs = *published;
  } else {
    attempt.outcome = JobState::kFailed;
    attempt.outcome_reason = "publishing outputs: " + published.error().message;
  }
  CompleteAttempt(job, now, step);
}

void Controller::StopWorkers(const Job& job, bool preempt, const std::string& reason,
                             Step& step) const {
  const Attempt& attempt = *job.current_attempt();
  if (model::IsExternal(attempt)) {
    if (std::any_of(attempt.workers.begin(), attempt.workers.end(), WorkerAlive)) {
      step.effects.push_back(CancelExternal{ExternalRefOf(job), reason});
    }
    return;
  }
  for (const Worker& worker : attempt.workers) {
    if (WorkerAlive(worker)) {
      step.effects.push_back(
          StopWorker{worker.node, {job.id, attempt.number, worker.rank}, preempt, reason});
    }
  }
}

std::vector<std::pair<NodeId, model::WorkerKey>> Controller::LiveWorkers() const {
  std::vector<std::pair<NodeId, model::WorkerKey>> live;
  for (const auto& [id, job] : jobs_.jobs()) {
    if (job.state != JobState::kStarting && job.state != JobState::kRunning) continue;
    const Attempt& attempt = *job.current_attempt();
    if (model::IsExternal(attempt)) continue;
    for (const Worker& worker : attempt.workers) {
      if (WorkerAlive(worker))
        live.emplace_back(worker.node, model::WorkerKey{id, attempt.number, worker.rank});
    }
  }
  return live;
}

}  // namespace drover::control
