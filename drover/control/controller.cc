// Controller: construction, restore, submission, cancellation, nodes, the scheduling pass and the
// policy; the edits of the job table and the holdings that the other controller_*.cc files share.

#include "drover/control/controller.h"

#include <fmt/format.h>

#include <algorithm>

#include "drover/common/quantity.h"
#include "drover/control/attempt_facts.h"
#include "drover/sched/feasibility.h"

namespace drover::control {
namespace {

using model::Attempt;
using model::Job;
using model::JobState;

}  // namespace

std::int64_t AttainedGpuMs(const Job& job, TimeMs now) {
  std::int64_t per_worker = -1;  // computed on the first placed attempt
  std::int64_t milli_gpu_ms = 0;
  for (const Attempt& attempt : job.attempts) {
    if (attempt.placed_at == 0 || attempt.workers.empty()) continue;
    if (per_worker < 0) per_worker = model::MilliGpusPerWorker(job.spec.requirements);
    const TimeMs end = attempt.finished_at != 0 ? attempt.finished_at : now;
    const std::int64_t held = std::max<TimeMs>(end - attempt.placed_at, 0);
    milli_gpu_ms += per_worker * static_cast<std::int64_t>(attempt.workers.size()) * held;
  }
  return milli_gpu_ms / 1000;
}

Controller::Controller(Options options) : options_(options) {}

void Controller::MoveTo(Job& job, JobState to, std::string cause, TimeMs now, Step& step,
                        std::string_view actor) {
  model::Transition transition = jobs_.MoveTo(job, to, std::move(cause), now);
  transition.actor = actor;
  step.transitions.push_back(std::move(transition));
  step.changed.insert(job.id);
}

std::optional<sched::Charge> Controller::ChargeOf(const Job& job) const {
  return control::ChargeOf(job, holdings_.queues(), nodes_);
}

void Controller::Hold(const Job& job, std::optional<sched::Charge> charge, TimeMs now) {
  holdings_.Advance(now);
  holdings_.Hold(job, std::move(charge));
}

void Controller::Unhold(const Job& job, TimeMs now) {
  holdings_.Advance(now);
  if (holdings_.Unhold(job.id)) capacity_freed_ = true;
}

void Controller::Restore(std::vector<Job> jobs, TimeMs now, Step& step) {
  for (Job& job : jobs) jobs_.Add(std::move(job));
  for (const auto& entry : jobs_.jobs()) {
    const JobId id = entry.first;
    Job& job = jobs_.Get(id);
    switch (job.state) {
      case JobState::kAdmitted:
      case JobState::kPlaced: {
        if (model::IsExternal(*job.current_attempt())) {
          RestoreExternal(job, now, step);
          break;
        }
        // Never launched: the placement is forgotten and the job queues again.
        Attempt& attempt = *job.current_attempt();
        attempt.workers.clear();
        attempt.dequeued_at = attempt.admitted_at = attempt.placed_at = 0;
        MoveTo(job, JobState::kReady, "restored before launch", now, step);
        break;
      }
      case JobState::kStarting:
      case JobState::kRunning:
        if (job.current_attempt()->finished_at != 0) {
          // Its workers exited 0 and publication did not report back: publish again.
          jobs_.StartPublishing(id);
          EmitPublish(job, step);
          break;
        }
        Hold(job, ChargeOf(job), now);
        // A victim (or a drained job) caught stopping: never chosen again; it requeues when its
        // workers exit.
        if ((job.current_attempt()->preempted_by ||
             job.current_attempt()->disruption == model::Disruption::kNodeDrain) &&
            job.current_attempt()->outcome == JobState::kReady) {
          stopping_.insert(id);
        }
        break;
      default:
        break;
    }
  }
}

Result<SubmitResult> Controller::Submit(std::vector<model::JobSpec> specs,
                                        const std::string& submission_key, const std::string& owner,
                                        TimeMs now, Step& step, const std::string& request_digest) {
  if (!submission_key.empty()) {
    if (const std::vector<JobId>* ids = jobs_.Submission(submission_key)) {
      const std::string& kept = jobs_.Get(ids->front()).submission_hash;
      if (!kept.empty() && !request_digest.empty() && kept != request_digest) {
        std::vector<std::int64_t> first;
        for (JobId id : *ids) first.push_back(id.value());
        return MakeError(ErrorCode::kAlreadyExists,
                         fmt::format("Idempotency-Key '{}' was used by another request (jobs {}); "
                                     "a retry must send the same body, a new submission a "
                                     "new key",
                                     submission_key, fmt::join(first, ", ")));
      }
      return SubmitResult{*ids, true};
    }
  }
  for (model::JobSpec& spec : specs) {
    if (spec.owner.empty()) spec.owner = owner;
  }
  DROVER_RETURN_IF_ERROR(CheckSubmitLimits(specs));
  const std::int64_t first_id = jobs_.next_id();
  const sched::QueueTree& queues = holdings_.queues();
  for (const model::JobSpec& spec : specs) {
    if (!queues.FindLeaf(spec.queue)) {
      return InvalidArgument(fmt::format("job '{}': queue: {} does not exist; the queues are {}",
                                         spec.name, spec.queue,
                                         fmt::join(queues.LeafNames(), ", ")));
    }
  }
  DROVER_ASSIGN_OR_RETURN(std::vector<std::vector<JobId>> dependencies,
                          ResolveDependencies(specs, JobId(first_id)));
  // A pipeline, or a file of several jobs: its jobs share a run (Job::pipeline_run).
  const bool pipeline = specs.size() > 1 ||
                        std::any_of(specs.begin(), specs.end(),
                                    [](const model::JobSpec& spec) { return !spec.stage.empty(); });
  DROVER_RETURN_IF_ERROR(CheckWholeAdmission(specs));
  if (options_.refuse_infeasible) {
    for (const model::JobSpec& spec : specs) {
      if (spec.hold_infeasible) continue;
      if (std::optional<std::string> why = FindInfeasibility(spec)) {
        return InvalidArgument(
            fmt::format("job '{}' can never start: {}; set hold_infeasible: true (drover submit "
                        "--hold-infeasible) to keep it waiting for the cluster to grow",
                        spec.name, *why));
      }
    }
  }
  SubmitResult result;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    Job& stored = jobs_.Emplace(JobId(first_id + static_cast<std::int64_t>(i)), [&](Job& job) {
      job.spec = std::move(specs[i]);
      const std::string& identity = owner.empty() ? job.spec.owner : owner;
      job.run_as = model::UnixAccountFor(policy_, identity);
      job.may_run_as_root = model::MayRunAsRoot(policy_, identity) ||
                            (!identity.empty() && identity == options_.server_user);
      job.dependencies = std::move(dependencies[i]);
      job.submission_key = submission_key;
      if (!submission_key.empty()) job.submission_hash = request_digest;
      if (pipeline) job.pipeline_run = JobId(first_id);
      job.created_at = now;
      job.state = JobState::kPending;
    });
    const std::string& submitter = owner.empty() ? stored.spec.owner : owner;
    MoveTo(stored, JobState::kPending, "submitted", now, step,
           submitter.empty() ? model::kSystemActor : std::string_view(submitter));
    result.ids.push_back(stored.id);
  }
  // What each waits for, stored with the submission; ReleaseDependents keeps it current.
  for (JobId id : result.ids) {
    Job& job = jobs_.Get(id);
    const workflow::DependencyVerdict verdict = JudgeDependencies(job);
    if (verdict.kind == workflow::DependencyVerdict::Kind::kWait)
      job.status_message = verdict.reason;
  }
  return result;
}

Status Controller::CheckSubmitLimits(const std::vector<model::JobSpec>& specs) const {
  struct Principal {
    std::string_view kind;  // "user" or "team"
    const model::SubmitLimits& limits;
    std::string model::JobSpec::*field;
    JobTable::Backlog (JobTable::*backlog)(const std::string&) const;
  };
  const Principal principals[] = {
      {"user", policy_.user_submit_limits, &model::JobSpec::owner, &JobTable::OwnerBacklog},
      {"team", policy_.team_submit_limits, &model::JobSpec::team, &JobTable::TeamBacklog}};
  for (const Principal& principal : principals) {
    if (principal.limits.empty()) continue;
    std::map<std::string, std::int64_t> adding;  // every new job starts pending
    for (const model::JobSpec& spec : specs) ++adding[spec.*principal.field];
    for (const auto& [name, count] : adding) {
      const JobTable::Backlog backlog = (jobs_.*principal.backlog)(name);
      const std::string who = fmt::format("{} {}", principal.kind, name.empty() ? "-" : name);
      const struct {
        const std::optional<std::int64_t>& most;
        std::int64_t has;
        std::string_view what, field;
      } checks[] = {{principal.limits.max_submitted_jobs, backlog.unfinished, "unfinished jobs",
                     "max_submitted_jobs"},
                    {principal.limits.max_pending_jobs, backlog.unstarted, "jobs not yet started",
                     "max_pending_jobs"}};
      for (const auto& check : checks) {
        if (!check.most || check.has + count <= *check.most) continue;
        return ResourceExhausted(fmt::format(
            "{} has {} {} and this submission adds {}; the policy's submit_limits.per_{}.{} is {}",
            who, check.has, check.what, count, principal.kind, check.field, *check.most));
      }
    }
  }
  return OkStatus();
}

Status Controller::Forget(JobId id) {
  const Job* job = jobs_.Find(id);
  if (!job) return NotFound(fmt::format("job {} does not exist", id.value()));
  if (!model::IsTerminal(job->state)) {
    return FailedPrecondition(
        fmt::format("job {} has not finished ({})", id.value(), model::JobStateName(job->state)));
  }
  if (job->pipeline_run != JobId() || !job->submission_key.empty()) {
    return FailedPrecondition(fmt::format(
        "job {} belongs to a pipeline run or a keyed submission, which are looked up later",
        id.value()));
  }
  for (JobId pending : jobs_.pending()) {
    const std::vector<JobId>& upstreams = jobs_.Get(pending).dependencies;
    if (std::find(upstreams.begin(), upstreams.end(), id) != upstreams.end()) {
      return FailedPrecondition(
          fmt::format("job {} is a dependency of pending job {}", id.value(), pending.value()));
    }
  }
  positions_.erase(id);
  jobs_.Remove(id);
  return OkStatus();
}

Status Controller::Cancel(JobId id, std::string_view by, const std::string& cause, TimeMs now,
                          Step& step) {
  Job* found = jobs_.Find(id);
  if (!found) return NotFound(fmt::format("job {} does not exist", id.value()));
  Job& job = *found;
  if (model::IsTerminal(job.state)) {
    return FailedPrecondition(fmt::format("job {} has already finished ({})", id.value(),
                                          model::JobStateName(job.state)));
  }
  if (jobs_.IsPublishing(id)) {
    return FailedPrecondition(
        fmt::format("job {} has finished running and is publishing its outputs", id.value()));
  }
  if (job.state == JobState::kStarting || job.state == JobState::kRunning ||
      (holdings_.Holds(id) && model::IsExternal(*job.current_attempt()))) {
    Attempt& attempt = *job.current_attempt();
    if (attempt.outcome && attempt.outcome != JobState::kReady) return OkStatus();  // stopping
    RecordAction(job, "cancel requested: " + cause, std::string(by), now, step);
    if (attempt.outcome == JobState::kReady) {
      // Being preempted: its workers are already stopping; it ends cancelled, not requeued.
      attempt.outcome = JobState::kCancelled;
      attempt.outcome_reason = cause;
      attempt.disruption = model::Disruption::kUserCancel;
      job.status_message = "cancelling: " + cause;
      step.changed.insert(id);
      return OkStatus();
    }
    EndAttempt(job, JobState::kCancelled, cause, step);
    if (Attempt& ended = *job.current_attempt();
        ended.outcome == JobState::kCancelled && ended.disruption == model::Disruption::kNone) {
      ended.disruption = model::Disruption::kUserCancel;
    }
    return OkStatus();
  }
  Unhold(job, now);
  awaiting_.erase(job.id);
  if (Attempt* attempt = job.current_attempt()) {
    attempt->outcome = JobState::kCancelled;
    attempt->outcome_reason = cause;
    attempt->disruption = model::Disruption::kUserCancel;
    attempt->finished_at = now;
  }
  job.status_message = cause;
  MoveTo(job, JobState::kCancelled, cause, now, step, by);
  return OkStatus();
}

void Controller::UpsertNode(const model::Node& node, TimeMs /*now*/, Step& /*step*/) {
  nodes_[node.name] = node;
  every_node_.UpsertNode(node);
  lost_.erase(node.name);
  holdings_.UpsertNode(node);
  capacity_freed_ = true;
}

std::optional<std::string> Controller::FindInfeasibility(const model::JobSpec& spec) const {
  return sched::FindInfeasibility(spec, every_node_, idle_queues_,
                                  !model::ExecutorOf(policy_, spec.queue).external());
}

std::vector<model::WorkerKey> Controller::OnNodeLost(const NodeId& node, const std::string& message,
                                                     TimeMs now, Step& step) {
  lost_.insert(node);
  holdings_.RemoveNode(node);
  std::vector<model::WorkerKey> lost;
  for (const auto& [where, key] : LiveWorkers()) {
    if (where == node) lost.push_back(key);
  }
  for (const model::WorkerKey& key : lost) {
    model::WorkerEvent event{key, model::WorkerEvent::Kind::kExited, now, {}};
    event.exit.node_lost = true;
    event.exit.message = message;
    OnWorkerEvent(event, step);
  }
  return lost;
}

const model::Worker* Controller::FindWorker(const model::WorkerKey& key) const {
  const Job* job = jobs_.Find(key.job);
  if (job == nullptr || key.rank < 0) return nullptr;
  for (const Attempt& attempt : job->attempts) {
    if (attempt.number == key.attempt && key.rank < static_cast<int>(attempt.workers.size())) {
      return &attempt.workers[key.rank];
    }
  }
  return nullptr;
}

void Controller::Schedule(TimeMs now, Step& step) {
  EnforceNodeAdmin(now, step);
  ReleaseDependents(now, step);
  PlaceReadyJobs(now, step);
}

sched::JobHistory Controller::HistoryOf(const Job& job, TimeMs now) const {
  sched::JobHistory history;
  history.submitted_at = job.created_at;
  if (policy_.order == model::QueueOrder::kLas) history.attained_gpu_ms = AttainedGpuMs(job, now);
  return history;
}

void Controller::PlaceReadyJobs(TimeMs now, Step& step) {
  // Capacity only shrinks between releases, so a job that did not fit in an earlier cycle
  // cannot fit now unless something was freed: then only the untried jobs need a try (and the
  // last full pass's reservation still holds). Every full_cycle_interval_ms (longer over a large
  // backlog) a full cycle runs anyway, refreshing every verdict, the reservation and preemption
  // choices.
  const DurationMs full_interval =
      std::max<DurationMs>(options_.full_cycle_interval_ms,
                           static_cast<DurationMs>(jobs_.ready().size()) /
                               std::max<std::int64_t>(options_.full_cycle_ready_jobs_per_ms, 1));
  const bool full = capacity_freed_ || now - last_full_cycle_ >= full_interval;
  const std::set<JobId>& candidates = full ? jobs_.ready() : jobs_.untried();
  // A nomination ends when its preemptor leaves the queue (cancelled, held back, failed).
  std::erase_if(awaiting_, [&](const auto& entry) { return !jobs_.ready().contains(entry.first); });
  sched::CycleInput input;
  input.now = now;
  input.placement_decisions = options_.decision_log;
  input.pending.reserve(candidates.size());
  auto add_pending = [&](JobId id) {
    const Job& job = jobs_.Get(id);
    if (job.not_before > now || job.hold) return;  // a held job keeps its place, untried
    input.pending.push_back(sched::PendingJob{
        id, model::PriorityClassValue(job.spec.priority_class).value_or(0), QueuedSince(job),
        &job.spec, model::ExecutorOf(policy_, job.spec.queue).external()});
  };
  for (JobId id : candidates) add_pending(id);
  // Nominated jobs take part in every pass, so that a pass over only new jobs cannot give them
  // what their victims freed.
  for (const auto& [preemptor, victims] : awaiting_) {
    if (!candidates.contains(preemptor)) add_pending(preemptor);
  }
  if (full) {
    capacity_freed_ = false;
    last_full_cycle_ = now;
  }
  for (const sched::PendingJob& tried : input.pending) jobs_.MarkTried(tried.job);
  if (input.pending.empty()) {
    if (full) RecordPositions({});
    return;
  }
  input.stopping = stopping_;
  input.nominated = awaiting_;
  // Nominations whose victims have all exited get this one cycle to place their preemptor.
  std::vector<JobId> lapsing;
  for (const auto& [preemptor, victims] : awaiting_) {
    if (victims.stopping.empty()) lapsing.push_back(preemptor);
  }
  input.keep_reservation = !full;
  input.maintenance = NodeWindows(now);
  if (policy_.order != model::QueueOrder::kFairShare) {
    for (const sched::PendingJob& pending : input.pending) {
      input.history.emplace(pending.job, HistoryOf(jobs_.Get(pending.job), now));
    }
    // Only las reads running jobs' history (their LAS queue, for preemption).
    if (policy_.order == model::QueueOrder::kLas) {
      for (const sched::RunningJob& running : holdings_.running()) {
        input.history.emplace(running.job, HistoryOf(jobs_.Get(running.job), now));
      }
    }
  }
  sched::CycleOutput cycle = holdings_.RunCycle(policy_, std::move(input), reservation_, jobs_);

  // Options::decision_log off: the decisions are made all the same, and dropped here.
  auto log_decision = [&](model::Decision&& decision) {
    if (options_.decision_log) step.decisions.push_back(std::move(decision));
  };
  for (sched::PlacedJob& placed : cycle.placed) {
    Job& job = jobs_.Get(placed.placement.job);
    verdicts_.erase(job.id);
    awaiting_.erase(job.id);
    if (const model::ExecutorConfig& executor = model::ExecutorOf(policy_, job.spec.queue);
        executor.external()) {
      HandOff(job, executor, now, step);
      placed.decision.summary += fmt::format(" ({})", model::ExecutorKindName(executor.kind));
    } else {
      Launch(job, std::move(placed.placement), now, step);
    }
    holdings_.Track(job.id);  // the attempt now records its placement
    placed.decision.attempt = job.current_attempt()->number;
    log_decision(std::move(placed.decision));
  }
  for (JobId id : lapsing) awaiting_.erase(id);  // placed, or back in the ordinary order
  for (sched::Preemption& preemption : cycle.preemptions) {
    Job& preemptor = jobs_.Get(preemption.preemptor);
    preemption.decision.attempt = preemptor.current_attempt()->number;
    log_decision(std::move(preemption.decision));
    for (std::size_t i = 0; i < preemption.victims.size(); ++i) {
      Job& victim = jobs_.Get(preemption.victims[i]);
      model::Decision& evicted = preemption.evicted[i];
      evicted.attempt = victim.current_attempt()->number;
      Preempt(victim, preemptor.id, model::Disruption::kPreemption,
              fmt::format("preempted by job {} ({})", preemptor.id.value(), evicted.reason), step);
      log_decision(std::move(evicted));
      awaiting_[preemptor.id].stopping.insert(victim.id);
    }
  }
  reservation_ = std::move(cycle.reservation);
  if (cycle.reservation_decision) {
    cycle.reservation_decision->attempt =
        jobs_.Get(cycle.reservation_decision->job).current_attempt()->number;
    log_decision(std::move(*cycle.reservation_decision));
  }
  for (auto& [id, verdict] : cycle.pending) {
    Job& job = jobs_.Get(id);
    if (job.status_message != verdict.message) {
      job.status_message = verdict.message;
      step.changed.insert(id);
    }
    verdicts_[id] = std::move(verdict);
  }
  if (full) RecordPositions(cycle.order);
}

void Controller::Preempt(Job& victim, std::optional<JobId> preemptor, model::Disruption why,
                         const std::string& reason, Step& step) {
  Attempt& attempt = *victim.current_attempt();
  if (attempt.outcome) return;  // already ending
  attempt.outcome = JobState::kReady;
  attempt.outcome_reason = reason;
  attempt.preempted_by = preemptor;
  attempt.disruption = why;
  victim.status_message = "stopping: " + reason;
  stopping_.insert(victim.id);
  step.changed.insert(victim.id);
  StopWorkers(victim, /*preempt=*/true, reason, step);
}

Status Controller::SetPolicy(const model::Policy& policy,
                             std::vector<std::string>* dropped_history) {
  DROVER_ASSIGN_OR_RETURN(sched::QueueTree tree, sched::QueueTree::Create(policy));
  policy_ = policy;
  idle_queues_ = tree;
  // Every holding is charged again. What is held has not changed since the last Advance (Hold
  // and Unhold advance first), so the next Advance accrues the time since under the new tree.
  std::vector<std::string> dropped = holdings_.SetQueues(std::move(tree), nodes_);
  if (dropped_history != nullptr) *dropped_history = std::move(dropped);
  reservation_.reset();
  verdicts_.clear();
  capacity_freed_ = true;  // the next pass is a full one under the new rules
  return OkStatus();
}

model::FairShareHistory Controller::FairShareHistory(TimeMs now) const {
  return holdings_.QueuesAt(now).History();
}

std::vector<std::string> Controller::RestoreFairShare(const model::FairShareHistory& history,
                                                      TimeMs now) {
  return holdings_.RestoreHistory(history, now);
}

}  // namespace drover::control
