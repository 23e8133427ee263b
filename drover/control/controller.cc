#include "drover/control/controller.h"

#include <fmt/format.h>

#include <algorithm>

#include "drover/common/quantity.h"
#include "drover/control/contract.h"
#include "drover/model/hold_layer.h"
#include "drover/workflow/conditions.h"
#include "drover/workflow/expression.h"
#include "drover/workflow/trials.h"

namespace drover::control {
namespace {

using model::Attempt;
using model::Job;
using model::JobState;
using model::Worker;
using model::WorkerState;

bool WorkerAlive(const Worker& worker) {
  return worker.state == WorkerState::kLaunched || worker.state == WorkerState::kRunning;
}

using model::IsExternal;
using model::WasPreempted;

// Whether the current attempt continues an engine job that the engine requeued, and its
// executor has not yet acknowledged the continuation.
bool AwaitsContinuation(const Job& job) {
  const Attempt& attempt = *job.current_attempt();
  return IsExternal(attempt) && attempt.external_submitted_at == 0 && attempt.finished_at == 0 &&
         ExternalRefOf(job).restart > 0;
}

// Backoff before attempt `next_number` (>= 2): backoff_ms * 2^(next_number - 2), capped.
DurationMs RetryDelay(const model::RetryPolicy& retry, int next_number) {
  DurationMs delay = retry.backoff_ms;
  for (int i = 2; i < next_number && delay < 3'600'000; ++i) delay *= 2;
  return std::min<DurationMs>(delay, std::max<DurationMs>(retry.backoff_ms, 3'600'000));
}

// The latest checkpoint any attempt of the job reported; 0 if none.
TimeMs LastCheckpoint(const Job& job) {
  TimeMs last = 0;
  for (const Attempt& attempt : job.attempts) last = std::max(last, attempt.last_checkpoint_at);
  return last;
}

// Milli-GPUs one worker of `spec` holds, as the queue tree charges it.
std::int64_t MilliGpusPerWorker(const model::JobSpec& spec) {
  if (spec.workers >= 1) {
    const model::ResourceAmounts amounts = sched::ChargeAmounts(spec, "");
    auto gpu = amounts.find("gpu");
    return gpu == amounts.end() ? 0 : gpu->second / spec.workers;
  }
  model::JobSpec one = spec;  // workers < 1 runs as 1
  one.workers = 1;
  return MilliGpusPerWorker(one);
}

// What a stage of a pipeline asks of its queue at its widest: one job, or for a sweep as many
// trials as its concurrency releases at once (all of them without a bound).
sched::Charge StageCharge(const sched::QueueTree& queues, const model::JobSpec& spec) {
  sched::Charge charge;
  charge.leaf = queues.FindLeaf(spec.queue).value_or(0);
  charge.user = spec.owner;
  charge.pipeline = spec.pipeline;
  charge.amounts = sched::ChargeAmounts(spec, "");
  if (spec.trial.index > 0) {
    const int parallel = spec.trial.concurrency > 0
                             ? std::min(spec.trial.concurrency, spec.trial.count)
                             : spec.trial.count;
    for (auto& [resource, amount] : charge.amounts) amount *= parallel;
  }
  return charge;
}

// The failure class of an attempt that ended without success.
model::FailureKind FailureKindOf(const Attempt& attempt) {
  if (WasPreempted(attempt)) return model::FailureKind::kPreempted;
  if (attempt.outcome == JobState::kTimedOut) return model::FailureKind::kTimeout;
  for (const model::Worker& worker : attempt.workers) {
    if (worker.exit && worker.exit->node_lost) return model::FailureKind::kNodeLost;
  }
  return model::FailureKind::kExit;
}

// Replaces ${{ stages.S.outputs.N }} in the command, script and env values of `spec` through
// `lookup`; the first reference without a value is the error.
Status RenderUpstreamOutputs(model::JobSpec& spec, const workflow::Lookup& lookup) {
  auto render = [&](std::string& text, std::string_view field) -> Status {
    Result<std::string> rendered = workflow::Render(text, lookup);
    if (!rendered) {
      return InvalidArgument(fmt::format("{}: {}", field, rendered.error().message));
    }
    text = std::move(*rendered);
    return OkStatus();
  };
  for (std::string& arg : spec.command) DROVER_RETURN_IF_ERROR(render(arg, "command"));
  DROVER_RETURN_IF_ERROR(render(spec.script, "script"));
  for (auto& [name, value] : spec.env) DROVER_RETURN_IF_ERROR(render(value, "env." + name));
  return OkStatus();
}

}  // namespace

std::int64_t AttainedGpuMs(const Job& job, TimeMs now) {
  std::int64_t per_worker = -1;  // computed on the first placed attempt
  std::int64_t milli_gpu_ms = 0;
  for (const Attempt& attempt : job.attempts) {
    if (attempt.placed_at == 0 || attempt.workers.empty()) continue;
    if (per_worker < 0) per_worker = MilliGpusPerWorker(job.spec);
    const TimeMs end = attempt.finished_at != 0 ? attempt.finished_at : now;
    const std::int64_t held = std::max<TimeMs>(end - attempt.placed_at, 0);
    milli_gpu_ms += per_worker * static_cast<std::int64_t>(attempt.workers.size()) * held;
  }
  return milli_gpu_ms / 1000;
}

Controller::Controller(Options options) : options_(options) {}

std::optional<sched::Charge> Controller::ChargeOf(const Job& job) const {
  std::optional<int> leaf = queues_.FindLeaf(job.spec.queue);
  if (!leaf) return std::nullopt;
  const Attempt* attempt = job.current_attempt();
  model::JobSpec placed = job.spec;
  std::string flavor;
  if (attempt != nullptr && !attempt->workers.empty()) {
    placed.workers = static_cast<int>(attempt->workers.size());
    const Worker& first = attempt->workers.front();
    auto node = nodes_.find(first.node);
    if (node != nodes_.end() && !first.gpus.empty()) {
      for (const model::Gpu& gpu : node->second.gpus) {
        if (gpu.index != first.gpus.front()) continue;
        std::string lower = gpu.model;
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (queues_.Governs("gpu:" + lower)) flavor = lower;
      }
    }
  }
  return sched::Charge{*leaf, job.spec.owner, job.spec.pipeline,
                       sched::ChargeAmounts(placed, flavor)};
}

void Controller::Hold(Job& job, std::optional<sched::Charge> charge) {
  holding_.insert(job.id);
  placements_[job.id] = PlacementOf(job);
  if (charge) {
    queues_.Add(*charge);
    charges_[job.id] = std::move(*charge);
  }
  TryAllocate(job);
  Track(job);
}

void Controller::Unhold(const Job& job) {
  if (!holding_.erase(job.id)) return;
  auto placement = placements_.find(job.id);
  // An unallocated job's Allocate failed and changed nothing: there is nothing to give back.
  if (!unallocated_.contains(job.id)) cluster_.Release(placement->second, job.spec.requirements);
  placements_.erase(placement);
  auto charge = charges_.find(job.id);
  if (charge != charges_.end()) {
    queues_.Remove(charge->second);
    charges_.erase(charge);
  }
  // Swap-remove: the last entry takes the job's place.
  auto index = running_index_.find(job.id);
  const std::size_t pos = index->second;
  running_index_.erase(index);
  if (pos + 1 != running_.size()) {
    running_[pos] = running_.back();
    running_index_[running_[pos].job] = pos;
  }
  running_.pop_back();
  unallocated_.erase(job.id);
  capacity_freed_ = true;
}

void Controller::MoveTo(Job& job, JobState to, const std::string& cause, TimeMs now, Step& step) {
  DROVER_CHECK(model::IsAllowedTransition(job.state, to));
  const Attempt* attempt = job.current_attempt();
  step.transitions.push_back(
      model::Transition{job.id, attempt ? attempt->number : 0, job.state, to, now, cause});
  step.changed.insert(job.id);
  if (job.state == JobState::kPending) waiting_.erase(job.id);
  if (job.state == JobState::kWaiting) awaiting_inputs_.erase(job.id);
  if (job.state == JobState::kReady) {
    queued_.erase(job.id);
    untried_.erase(job.id);
  }
  job.state = to;
  if (to == JobState::kPending) waiting_.insert(job.id);
  if (to == JobState::kWaiting) awaiting_inputs_.insert(job.id);
  if (to == JobState::kReady) {
    queued_.insert(job.id);
    untried_.insert(job.id);
  }
  if (model::IsTerminal(to)) job.finished_at = now;
}

void Controller::Restore(std::vector<Job> jobs, TimeMs now, Step& step) {
  for (Job& job : jobs) {
    next_id_ = std::max(next_id_, job.id.value() + 1);
    if (!job.submission_key.empty()) submissions_[job.submission_key].push_back(job.id);
    JobId id = job.id;
    jobs_[id] = std::move(job);
  }
  for (auto& [id, job] : jobs_) {
    switch (job.state) {
      case JobState::kPending:
        waiting_.insert(id);
        break;
      case JobState::kWaiting:
        awaiting_inputs_.insert(id);
        break;
      case JobState::kReady:
        queued_.insert(id);
        untried_.insert(id);
        break;
      case JobState::kAdmitted:
      case JobState::kPlaced: {
        if (IsExternal(*job.current_attempt())) {
          Hold(job, ChargeOf(job));
          if (AwaitsContinuation(job)) {
            // The executor may never have released the requeued engine job: continue it again.
            EmitHandOff(job, model::ExecutorOf(policy_, job.spec.queue), step);
          }
          break;  // else handed to its executor (or about to be): the driver adopts it
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
          publishing_.insert(id);
          EmitPublish(job, step);
          break;
        }
        Hold(job, ChargeOf(job));
        // A victim caught stopping: never chosen again; it requeues when its workers exit.
        if (job.current_attempt()->preempted_by &&
            job.current_attempt()->outcome == JobState::kReady) {
          stopping_.insert(id);
        }
        break;
      default:
        break;
    }
  }
}

void Controller::TryAllocate(Job& job) {
  if (cluster_.Allocate(placements_.at(job.id), job.spec.requirements)) {
    unallocated_.erase(job.id);
  } else {
    unallocated_.insert(job.id);
  }
}

Result<SubmitResult> Controller::Submit(std::vector<model::JobSpec> specs,
                                        const std::string& submission_key, const std::string& owner,
                                        TimeMs now, Step& step) {
  if (!submission_key.empty()) {
    auto it = submissions_.find(submission_key);
    if (it != submissions_.end()) return SubmitResult{it->second, true};
  }
  std::map<std::string, JobId> by_name;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    by_name[specs[i].name] = JobId(next_id_ + static_cast<std::int64_t>(i));
  }
  for (const model::JobSpec& spec : specs) {
    if (!queues_.FindLeaf(spec.queue)) {
      return InvalidArgument(fmt::format("job '{}': queue: {} does not exist; the queues are {}",
                                         spec.name, spec.queue,
                                         fmt::join(queues_.LeafNames(), ", ")));
    }
  }
  // A dependency names a job of the submission or a pipeline stage (every trial of a sweep).
  std::vector<std::vector<JobId>> dependencies(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    for (const model::Dependency& dependency : specs[i].depends_on) {
      std::size_t found = 0;
      for (std::size_t j = 0; j < specs.size(); ++j) {
        if (j == i || (specs[j].name != dependency.name && specs[j].stage != dependency.name)) {
          continue;
        }
        const JobId upstream = by_name.at(specs[j].name);
        if (std::find(dependencies[i].begin(), dependencies[i].end(), upstream) ==
            dependencies[i].end()) {
          dependencies[i].push_back(upstream);
        }
        ++found;
      }
      if (found == 0) {
        return InvalidArgument(
            fmt::format("job '{}' depends on '{}', which is not in the submission", specs[i].name,
                        dependency.name));
      }
    }
  }
  // A pipeline, or a file of several jobs: its jobs share a run (Job::pipeline_run).
  const bool pipeline = specs.size() > 1 ||
                        std::any_of(specs.begin(), specs.end(),
                                    [](const model::JobSpec& spec) { return !spec.stage.empty(); });
  if (std::any_of(specs.begin(), specs.end(), [](const model::JobSpec& spec) {
        return spec.admission == model::PipelineAdmission::kWhole;
      })) {
    // admission: whole refuses a pipeline one of whose stages could never be admitted, even
    // with its queue (and its cohort) otherwise empty.
    Result<sched::QueueTree> empty = sched::QueueTree::Create(policy_);
    DROVER_CHECK(empty.has_value());
    for (const model::JobSpec& spec : specs) {
      const sched::AdmitVerdict verdict = empty->CheckAdmit(StageCharge(*empty, spec));
      if (!verdict.ok()) {
        return InvalidArgument(fmt::format(
            "pipeline '{}' (admission: whole): stage '{}' can never be admitted: {}", spec.pipeline,
            spec.stage.empty() ? spec.name : spec.stage, verdict.Render()));
      }
    }
  }
  SubmitResult result;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    Job job;
    job.id = JobId(next_id_++);
    job.spec = std::move(specs[i]);
    if (job.spec.owner.empty()) job.spec.owner = owner;
    job.dependencies = std::move(dependencies[i]);
    job.submission_key = submission_key;
    if (pipeline) job.pipeline_run = JobId(next_id_ - 1 - static_cast<std::int64_t>(i));
    job.created_at = now;
    job.state = JobState::kPending;
    JobId id = job.id;
    Job& stored = jobs_[id] = std::move(job);
    MoveTo(stored, JobState::kPending, "submitted", now, step);
    result.ids.push_back(id);
  }
  if (!submission_key.empty()) submissions_[submission_key] = result.ids;
  return result;
}

Status Controller::Cancel(JobId id, const std::string& cause, TimeMs now, Step& step) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return NotFound(fmt::format("job {} does not exist", id.value()));
  Job& job = it->second;
  if (model::IsTerminal(job.state)) {
    return FailedPrecondition(fmt::format("job {} has already finished ({})", id.value(),
                                          model::JobStateName(job.state)));
  }
  if (publishing_.contains(id)) {
    return FailedPrecondition(
        fmt::format("job {} has finished running and is publishing its outputs", id.value()));
  }
  if (job.state == JobState::kStarting || job.state == JobState::kRunning ||
      (holding_.contains(id) && IsExternal(*job.current_attempt()))) {
    Attempt& attempt = *job.current_attempt();
    if (attempt.outcome == JobState::kReady) {
      // Being preempted: its workers are already stopping; it ends cancelled, not requeued.
      attempt.outcome = JobState::kCancelled;
      attempt.outcome_reason = cause;
      job.status_message = "cancelling: " + cause;
      step.changed.insert(id);
      return OkStatus();
    }
    EndAttempt(job, JobState::kCancelled, cause, now, step);
    return OkStatus();
  }
  Unhold(job);
  awaiting_.erase(job.id);
  if (Attempt* attempt = job.current_attempt()) {
    attempt->outcome = JobState::kCancelled;
    attempt->outcome_reason = cause;
    attempt->finished_at = now;
  }
  job.status_message = cause;
  MoveTo(job, JobState::kCancelled, cause, now, step);
  return OkStatus();
}

void Controller::UpsertNode(const model::Node& node, TimeMs /*now*/, Step& /*step*/) {
  nodes_[node.name] = node;
  lost_.erase(node.name);
  cluster_.UpsertNode(node);
  capacity_freed_ = true;
  for (JobId id : std::vector<JobId>(unallocated_.begin(), unallocated_.end())) {
    TryAllocate(jobs_.at(id));
  }
}

std::vector<model::WorkerKey> Controller::OnNodeLost(const NodeId& node, const std::string& message,
                                                     TimeMs now, Step& step) {
  lost_.insert(node);
  cluster_.RemoveNode(node);
  // What jobs held there went with the node: their placements keep only the other nodes, so that
  // releasing them later frees nothing on the node should it come back meanwhile.
  for (JobId id : holding_) {
    std::erase_if(placements_.at(id).workers,
                  [&](const sched::WorkerAssignment& worker) { return worker.node == node; });
  }
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

void Controller::Schedule(TimeMs now, Step& step) {
  ReleaseDependents(now, step);
  PlaceReadyJobs(now, step);
}

void Controller::ReleaseDependents(TimeMs now, Step& step) {
  for (JobId id : std::vector<JobId>(waiting_.begin(), waiting_.end())) {
    Job& job = jobs_.at(id);
    std::vector<workflow::JudgedDependency> judged;
    bool all_succeeded = true;
    for (const model::Dependency& dependency : job.spec.depends_on) {
      std::vector<JobState> states;
      for (JobId upstream : job.dependencies) {
        const Job& up = jobs_.at(upstream);
        if (up.spec.name == dependency.name || up.spec.stage == dependency.name) {
          states.push_back(up.state);
        }
      }
      judged.push_back({dependency, workflow::AggregateStage(states)});
      all_succeeded &= dependency.condition == model::DependencyCondition::kSucceeded;
    }
    const workflow::DependencyVerdict verdict = workflow::Judge(judged);
    if (verdict.kind == workflow::DependencyVerdict::Kind::kSkip) {
      Skip(job, verdict.reason, now, step);
      continue;
    }
    if (verdict.kind == workflow::DependencyVerdict::Kind::kWait) continue;
    const workflow::Lookup lookup = [&](const workflow::Reference& reference) {
      return UpstreamOutput(job, reference);
    };
    if (!job.spec.run_if.empty()) {
      Result<bool> holds = workflow::EvaluateCondition(job.spec.run_if, lookup);
      if (!holds || !*holds) {
        Skip(job,
             holds ? fmt::format("if: {} is false", job.spec.run_if)
                   : fmt::format("if: {}: {}", job.spec.run_if, holds.error().message),
             now, step);
        continue;
      }
    }
    if (Status rendered = RenderUpstreamOutputs(job.spec, lookup); !rendered) {
      Skip(job, rendered.error().message, now, step);
      continue;
    }
    std::optional<std::string> hold = SweepConcurrencyHold(job);
    if (!hold) hold = WholeAdmissionHold(job);
    if (hold) {
      if (job.status_message != *hold) {
        job.status_message = *hold;
        step.changed.insert(id);
      }
      continue;
    }
    Release(job,
            job.dependencies.empty() ? "submitted"
            : all_succeeded          ? "dependencies succeeded"
                                     : "dependency conditions met",
            now, step);
  }
}

std::optional<std::string> Controller::UpstreamOutput(const Job& job,
                                                      const workflow::Reference& reference) const {
  if (reference.kind != workflow::Reference::Kind::kStageOutput) return std::nullopt;
  // The stage's job, or for a sweep its best trial (by the objective).
  std::vector<const Job*> stage;
  for (const Job* candidate : RunJobs(job.pipeline_run)) {
    if (candidate->spec.stage == reference.stage ||
        (candidate->spec.stage.empty() && candidate->spec.name == reference.stage)) {
      stage.push_back(candidate);
    }
  }
  const Job* source = stage.size() == 1 ? stage.front() : nullptr;
  if (stage.size() > 1) {
    std::vector<workflow::TrialResult> trials;
    for (const Job* trial : stage) {
      auto objective = trial->outputs.find(trial->spec.trial.objective);
      trials.push_back({trial->spec.trial.index, trial->state,
                        objective == trial->outputs.end()
                            ? std::nullopt
                            : std::optional<std::string>(objective->second)});
    }
    std::optional<int> best = workflow::BestTrial(trials, stage.front()->spec.trial.maximize);
    if (best) source = stage[static_cast<std::size_t>(*best - 1)];
  }
  if (source == nullptr) return std::nullopt;
  auto output = source->outputs.find(reference.output);
  if (output == source->outputs.end()) return std::nullopt;
  return output->second;
}

void Controller::Release(Job& job, const std::string& cause, TimeMs now, Step& step) {
  job.released_at = now;
  job.status_message.clear();
  const bool has_paths =
      std::any_of(job.spec.inputs.begin(), job.spec.inputs.end(),
                  [](const model::InputSpec& input) { return !input.path.empty(); });
  if (!has_paths) {
    StartAttempt(job, now, step);
    MoveTo(job, JobState::kReady, cause, now, step);
    return;
  }
  job.status_message = "waiting for its inputs to be checked";
  MoveTo(job, JobState::kWaiting, cause, now, step);
}

void Controller::Skip(Job& job, const std::string& cause, TimeMs now, Step& step) {
  job.status_message = cause;
  MoveTo(job, JobState::kSkipped, cause, now, step);
}

std::optional<std::string> Controller::SweepConcurrencyHold(const Job& job) const {
  const model::TrialSpec& trial = job.spec.trial;
  if (trial.index == 0 || trial.concurrency <= 0) return std::nullopt;
  int released = 0;
  for (const Job* sibling : RunJobs(job.pipeline_run)) {
    if (sibling->spec.stage == job.spec.stage && sibling->state != JobState::kPending &&
        !model::IsTerminal(sibling->state)) {
      ++released;
    }
  }
  if (released < trial.concurrency) return std::nullopt;
  return fmt::format("sweep {}: {} of its {} trials released (concurrency {})", job.spec.stage,
                     released, trial.count, trial.concurrency);
}

std::optional<std::string> Controller::WholeAdmissionHold(const Job& job) const {
  if (job.spec.admission != model::PipelineAdmission::kWhole) return std::nullopt;
  const std::vector<const Job*> run = RunJobs(job.pipeline_run);
  for (const Job* stage : run) {
    if (stage->state != JobState::kPending) return std::nullopt;  // already started
  }
  for (const Job* stage : run) {
    const sched::AdmitVerdict verdict = queues_.CheckAdmit(StageCharge(queues_, stage->spec));
    if (!verdict.ok()) {
      return fmt::format("admission: whole: waiting until stage {} fits: {}",
                         stage->spec.stage.empty() ? stage->spec.name : stage->spec.stage,
                         verdict.Render());
    }
  }
  return std::nullopt;
}

void Controller::StartAttempt(Job& job, TimeMs ready_at, Step& step) {
  Attempt attempt;
  attempt.number = static_cast<int>(job.attempts.size()) + 1;
  attempt.ready_at = ready_at;
  job.attempts.push_back(std::move(attempt));
  job.not_before = ready_at;
  step.changed.insert(job.id);
}

void Controller::Track(const Job& job) {
  const Attempt& attempt = *job.current_attempt();
  auto charge = charges_.find(job.id);
  const sched::RunningJob entry{job.id,
                                &job.spec,
                                &placements_.at(job.id),
                                charge == charges_.end() ? nullptr : &charge->second,
                                model::PriorityClassValue(job.spec.priority_class).value_or(0),
                                attempt.placed_at,
                                attempt.last_checkpoint_at};
  auto [index, inserted] = running_index_.try_emplace(job.id, running_.size());
  if (inserted) {
    running_.push_back(entry);
  } else {
    running_[index->second] = entry;
  }
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
  // last full pass's reservation still holds). Every full_cycle_interval_ms a full cycle runs
  // anyway, refreshing every verdict, the reservation and preemption choices.
  const bool full = capacity_freed_ || now - last_full_cycle_ >= options_.full_cycle_interval_ms;
  const std::set<JobId>& candidates = full ? queued_ : untried_;
  sched::CycleInput input;
  input.now = now;
  input.pending.reserve(candidates.size());
  for (JobId id : candidates) {
    const Job& job = jobs_.at(id);
    if (job.not_before > now) continue;
    input.pending.push_back(
        sched::PendingJob{id, model::PriorityClassValue(job.spec.priority_class).value_or(0),
                          job.current_attempt()->ready_at, &job.spec,
                          model::ExecutorOf(policy_, job.spec.queue).external()});
  }
  if (full) {
    capacity_freed_ = false;
    last_full_cycle_ = now;
  }
  for (const sched::PendingJob& tried : input.pending) untried_.erase(tried.job);
  if (input.pending.empty()) return;
  input.running = running_;
  input.stopping = stopping_;
  for (const auto& [preemptor, victims] : awaiting_) input.awaiting_victims.insert(preemptor);
  input.keep_reservation = !full;
  if (policy_.order != model::QueueOrder::kFairShare) {
    for (const sched::PendingJob& pending : input.pending) {
      input.history.emplace(pending.job, HistoryOf(jobs_.at(pending.job), now));
    }
    // Only las reads running jobs' history (their LAS queue, for preemption).
    if (policy_.order == model::QueueOrder::kLas) {
      for (const sched::RunningJob& running : input.running) {
        input.history.emplace(running.job, HistoryOf(jobs_.at(running.job), now));
      }
    }
  }
  sched::CycleOutput cycle = sched::RunPolicyCycle(policy_, queues_, cluster_, input, reservation_);

  for (sched::PlacedJob& placed : cycle.placed) {
    Job& job = jobs_.at(placed.placement.job);
    verdicts_.erase(job.id);
    awaiting_.erase(job.id);
    holding_.insert(job.id);
    charges_[job.id] = std::move(placed.charge);
    if (model::ExecutorConfig executor = model::ExecutorOf(policy_, job.spec.queue);
        executor.external()) {
      HandOff(job, executor, now, step);
      placed.decision.summary += fmt::format(" ({})", model::ExecutorKindName(executor.kind));
    } else {
      Launch(job, placed.placement, now, step);
    }
    Track(job);
    placed.decision.attempt = job.current_attempt()->number;
    step.decisions.push_back(std::move(placed.decision));
  }
  for (sched::Preemption& preemption : cycle.preemptions) {
    Job& preemptor = jobs_.at(preemption.preemptor);
    preemption.decision.attempt = preemptor.current_attempt()->number;
    step.decisions.push_back(std::move(preemption.decision));
    for (std::size_t i = 0; i < preemption.victims.size(); ++i) {
      Job& victim = jobs_.at(preemption.victims[i]);
      model::Decision& evicted = preemption.evicted[i];
      evicted.attempt = victim.current_attempt()->number;
      Preempt(victim, preemptor.id,
              fmt::format("preempted by job {} ({})", preemptor.id.value(), evicted.reason), now,
              step);
      step.decisions.push_back(std::move(evicted));
      awaiting_[preemptor.id].insert(victim.id);
    }
  }
  reservation_ = std::move(cycle.reservation);
  if (cycle.reservation_decision) {
    cycle.reservation_decision->attempt =
        jobs_.at(cycle.reservation_decision->job).current_attempt()->number;
    step.decisions.push_back(std::move(*cycle.reservation_decision));
  }
  for (auto& [id, verdict] : cycle.pending) {
    Job& job = jobs_.at(id);
    if (job.status_message != verdict.message) {
      job.status_message = verdict.message;
      step.changed.insert(id);
    }
    verdicts_[id] = std::move(verdict);
  }
}

void Controller::Preempt(Job& victim, JobId preemptor, const std::string& reason, TimeMs now,
                         Step& step) {
  Attempt& attempt = *victim.current_attempt();
  if (attempt.outcome) return;  // already ending
  attempt.outcome = JobState::kReady;
  attempt.outcome_reason = reason;
  attempt.preempted_by = preemptor;
  victim.status_message = "stopping: " + reason;
  stopping_.insert(victim.id);
  step.changed.insert(victim.id);
  StopWorkers(victim, /*preempt=*/true, reason, step);
  (void)now;
}

void Controller::StopWorkers(const Job& job, bool preempt, const std::string& reason,
                             Step& step) const {
  const Attempt& attempt = *job.current_attempt();
  if (IsExternal(attempt)) {
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
  placements_[job.id] = sched::Placement{job.id, {}};
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
  Hold(job, std::move(charge));
}

void Controller::OnExecutorEvent(const model::ExecutorEvent& event, Step& step) {
  auto it = jobs_.find(event.ref.job);
  if (it == jobs_.end()) return;
  Job& job = it->second;
  Attempt* attempt = job.current_attempt();
  if (!attempt || !IsExternal(*attempt) || attempt->number != event.ref.attempt ||
      attempt->finished_at != 0 || !holding_.contains(job.id)) {
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
                   at, step);
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
      if (auto held = charges_.find(job.id); held != charges_.end()) charge = held->second;
      FinishAttempt(job, at, step);
      ContinueRequeued(job, requeued, std::move(charge), at, step);
      return;
    }
  }
}

void Controller::Launch(Job& job, const sched::Placement& placement, TimeMs now, Step& step) {
  Attempt& attempt = *job.current_attempt();
  attempt.dequeued_at = attempt.admitted_at = now;
  MoveTo(job, JobState::kAdmitted, "dequeued", now, step);
  attempt.workers.clear();
  for (const sched::WorkerAssignment& assignment : placement.workers) {
    Worker worker;
    worker.rank = assignment.rank;
    worker.node = assignment.node;
    worker.gpus = assignment.gpus;
    attempt.workers.push_back(std::move(worker));
  }
  placements_[job.id] = placement;
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
    step.effects.push_back(LaunchWorker{MakeLaunchSpec(job, worker)});
  }
  attempt.workers_started_at = now;
  job.status_message.clear();
  MoveTo(job, JobState::kStarting,
         attempt.resumed ? "launching workers (resuming from checkpoint)" : "launching workers",
         now, step);
}

void Controller::Relaunch(const model::WorkerKey& key, Step& step) {
  auto it = jobs_.find(key.job);
  if (it == jobs_.end()) return;
  Job& job = it->second;
  Attempt* attempt = job.current_attempt();
  if (!attempt || attempt->number != key.attempt || key.rank < 0 ||
      key.rank >= static_cast<int>(attempt->workers.size())) {
    return;
  }
  Worker& worker = attempt->workers[key.rank];
  if (!WorkerAlive(worker)) return;
  step.effects.push_back(LaunchWorker{MakeLaunchSpec(job, worker)});
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
  if (!job.spec.command.empty()) {
    spec.argv = job.spec.command;
  } else {
    spec.argv = {"/bin/sh", "-c", job.spec.script};
  }
  spec.working_dir = job.spec.working_dir;
  spec.gpus = worker.gpus;
  spec.timeout_ms = job.spec.timeout.value_or(0);
  spec.kill_grace_ms = KillGrace(job);
  spec.checkpoint_dir = job.spec.checkpoint_dir;

  AttemptContract contract = ContractOf(
      job, static_cast<int>(attempt.workers.size()),
      MasterPort(job.id, attempt.number, options_.master_port_base, options_.master_port_span),
      options_.value_outputs_root);
  spec.env = std::move(contract.env);
  spec.make_dirs = std::move(contract.make_dirs);
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
  auto it = jobs_.find(event.key.job);
  if (it == jobs_.end()) return;
  Job& job = it->second;
  Attempt* attempt = job.current_attempt();
  if (!attempt || attempt->number != event.key.attempt || attempt->finished_at != 0 ||
      event.key.rank < 0 || event.key.rank >= static_cast<int>(attempt->workers.size())) {
    return;
  }
  Worker& worker = attempt->workers[event.key.rank];
  if (!WorkerAlive(worker)) return;
  const TimeMs now = event.at;

  if (event.kind == model::WorkerEvent::Kind::kCheckpoint) {
    if (event.at > attempt->last_checkpoint_at) {
      attempt->last_checkpoint_at = event.at;
      Track(job);
      step.changed.insert(job.id);
    }
    return;
  }
  if (event.kind == model::WorkerEvent::Kind::kStarted) {
    if (worker.state != WorkerState::kLaunched) return;  // reported again after a restart
    step.changed.insert(job.id);
    worker.state = WorkerState::kRunning;
    worker.started_at = event.at;
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
  worker.finished_at = event.at;
  if (!event.exit.Succeeded() && !attempt->outcome) {
    JobState outcome = event.exit.timed_out   ? JobState::kTimedOut
                       : event.exit.cancelled ? JobState::kCancelled
                                              : JobState::kFailed;
    std::string reason =
        fmt::format("worker {} on {}: {}", worker.rank, worker.node.value(), event.exit.Describe());
    EndAttempt(job, outcome, reason, now, step);
  }
  bool any_alive = std::any_of(attempt->workers.begin(), attempt->workers.end(), WorkerAlive);
  if (!any_alive) FinishAttempt(job, now, step);
}

void Controller::EndAttempt(Job& job, JobState outcome, const std::string& reason, TimeMs now,
                            Step& step) {
  Attempt& attempt = *job.current_attempt();
  if (attempt.outcome) return;  // already ending; the first cause wins
  attempt.outcome = outcome;
  attempt.outcome_reason = reason;
  job.status_message = outcome == JobState::kCancelled ? "cancelling: " + reason : reason;
  step.changed.insert(job.id);
  StopWorkers(job, /*preempt=*/false, reason, step);
  (void)now;
}

void Controller::FinishAttempt(Job& job, TimeMs now, Step& step) {
  Attempt& attempt = *job.current_attempt();
  Unhold(job);
  attempt.finished_at = now;
  if (attempt.preempted_by) {
    stopping_.erase(job.id);
    auto awaiting = awaiting_.find(*attempt.preempted_by);
    if (awaiting != awaiting_.end() && awaiting->second.erase(job.id) && awaiting->second.empty()) {
      awaiting_.erase(awaiting);
    }
    // Finished on its own during the grace period: it succeeded, nothing to requeue.
    const bool all_succeeded =
        std::all_of(attempt.workers.begin(), attempt.workers.end(),
                    [](const Worker& worker) { return worker.exit && worker.exit->Succeeded(); });
    if (all_succeeded && attempt.outcome == JobState::kReady) {
      attempt.outcome = JobState::kSucceeded;
      attempt.outcome_reason = "all workers exited 0 (before preemption took effect)";
      attempt.preempted_by.reset();
    }
  }
  if (!attempt.outcome) {
    attempt.outcome = JobState::kSucceeded;
    attempt.outcome_reason = "all workers exited 0";
  }
  if (attempt.outcome == JobState::kSucceeded && !job.spec.outputs.empty()) {
    // Succeeded only once its outputs are published (OnOutputsPublished).
    publishing_.insert(job.id);
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
  step.effects.emplace_back(std::move(publish));
}

void Controller::CompleteAttempt(Job& job, TimeMs now, Step& step) {
  Attempt& attempt = *job.current_attempt();
  if (attempt.outcome != JobState::kSucceeded && !job.spec.outputs.empty()) {
    DiscardOutputs discard;
    discard.outputs =
        model::StagedOutputs(job.spec, job.id, attempt.number, options_.value_outputs_root);
    step.effects.emplace_back(std::move(discard));
  }
  if (WasPreempted(attempt) && attempt.outcome == JobState::kReady &&
      !model::RetriesOn(job.spec.retry, model::FailureKind::kPreempted)) {
    attempt.outcome = JobState::kFailed;  // retry.on leaves preemption out: it ends the job
  }
  if (WasPreempted(attempt) && attempt.outcome == JobState::kReady) {
    // Requeued at once; a preemption does not count against the retry policy.
    const TimeMs checkpoint = LastCheckpoint(job);
    std::string cause =
        checkpoint > 0
            ? fmt::format("{}; requeued to resume from its checkpoint ({} before preemption)",
                          attempt.outcome_reason,
                          FormatDuration(std::max<TimeMs>(now - checkpoint, 0)))
            : fmt::format("{}; requeued to retry from scratch (no checkpoint)",
                          attempt.outcome_reason);
    job.status_message = cause;
    MoveTo(job, JobState::kReady, cause, now, step);
    StartAttempt(job, now, step);
    job.current_attempt()->resumed = checkpoint > 0;
    return;
  }
  JobState outcome = *attempt.outcome;
  const bool retryable = (outcome == JobState::kFailed || outcome == JobState::kTimedOut) &&
                         model::RetriesOn(job.spec.retry, FailureKindOf(attempt));
  const int tries = static_cast<int>(std::count_if(
      job.attempts.begin(), job.attempts.end(), [](const Attempt& a) { return !WasPreempted(a); }));
  if (retryable && tries < job.spec.retry.max_attempts) {
    const TimeMs checkpoint = LastCheckpoint(job);
    const bool resume = job.spec.resume && checkpoint > 0;
    std::string cause =
        fmt::format("attempt {} {}: {}; {}", attempt.number, model::JobStateName(outcome),
                    attempt.outcome_reason, resume ? "resuming from its checkpoint" : "retrying");
    attempt.outcome = JobState::kReady;
    job.status_message = cause;
    TimeMs ready_at = now + RetryDelay(job.spec.retry, tries + 1);
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
  auto it = jobs_.find(id);
  if (it == jobs_.end() || !publishing_.contains(id)) return;
  Job& job = it->second;
  Attempt& attempt = *job.current_attempt();
  if (attempt.number != attempt_number) return;
  publishing_.erase(id);
  step.changed.insert(id);
  if (published) {
    job.outputs = *published;
  } else {
    attempt.outcome = JobState::kFailed;
    attempt.outcome_reason = "publishing outputs: " + published.error().message;
  }
  CompleteAttempt(job, now, step);
}

std::vector<const Job*> Controller::RunJobs(JobId run) const {
  std::vector<const Job*> jobs;
  if (run == JobId()) return jobs;
  for (auto it = jobs_.lower_bound(run); it != jobs_.end() && it->second.pipeline_run == run;
       ++it) {
    jobs.push_back(&it->second);
  }
  return jobs;
}

void Controller::MaybeStopSweep(const Job& trial, TimeMs now, Step& step) {
  const model::TrialSpec& sweep = trial.spec.trial;
  if (sweep.index == 0) return;
  auto output = trial.outputs.find(sweep.objective);
  if (output == trial.outputs.end() || !workflow::ReachesStopAt(sweep, output->second)) return;
  const std::string cause =
      fmt::format("early stopping: trial {} reached {} = {} (stop_at {})", sweep.index,
                  sweep.objective, output->second, *sweep.stop_at);
  for (const Job* sibling : RunJobs(trial.pipeline_run)) {
    if (sibling->id != trial.id && sibling->spec.stage == trial.spec.stage &&
        !model::IsTerminal(sibling->state) && !publishing_.contains(sibling->id)) {
      (void)Cancel(sibling->id, cause, now, step);
    }
  }
}

sched::Placement Controller::PlacementOf(const Job& job) const {
  sched::Placement placement;
  placement.job = job.id;
  if (const Attempt* attempt = job.current_attempt(); attempt && !IsExternal(*attempt)) {
    for (const Worker& worker : attempt->workers) {
      placement.workers.push_back(sched::WorkerAssignment{worker.rank, worker.node, worker.gpus});
    }
  }
  return placement;
}

std::vector<std::pair<NodeId, model::WorkerKey>> Controller::LiveWorkers() const {
  std::vector<std::pair<NodeId, model::WorkerKey>> live;
  for (const auto& [id, job] : jobs_) {
    if (job.state != JobState::kStarting && job.state != JobState::kRunning) continue;
    const Attempt& attempt = *job.current_attempt();
    if (IsExternal(attempt)) continue;
    for (const Worker& worker : attempt.workers) {
      if (WorkerAlive(worker))
        live.emplace_back(worker.node, model::WorkerKey{id, attempt.number, worker.rank});
    }
  }
  return live;
}

std::vector<model::ExternalRef> Controller::LiveExternal() const {
  std::vector<model::ExternalRef> live;
  for (JobId id : holding_) {
    const Job& job = jobs_.at(id);
    const Attempt& attempt = *job.current_attempt();
    if (IsExternal(attempt) && attempt.finished_at == 0 && !AwaitsContinuation(job) &&
        std::any_of(attempt.workers.begin(), attempt.workers.end(), WorkerAlive)) {
      live.push_back(ExternalRefOf(job));
    }
  }
  return live;
}

const Job* Controller::Find(JobId id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

Result<Explanation> Controller::Explain(JobId id, TimeMs now) const {
  const Job* job = Find(id);
  if (!job) return NotFound(fmt::format("job {} does not exist", id.value()));
  Explanation out;
  out.state = job->state;
  switch (job->state) {
    case JobState::kPending: {
      if (!job->status_message.empty()) {  // a sweep's concurrency or whole admission holds it
        out.layer = "pipeline";
        out.message = job->status_message;
        break;
      }
      out.layer = "dependency";
      std::string waiting;
      for (JobId dep_id : job->dependencies) {
        const Job& dep = jobs_.at(dep_id);
        if (model::IsTerminal(dep.state)) continue;
        waiting += fmt::format("{}{} ({}, {})", waiting.empty() ? "" : ", ", dep.spec.name,
                               dep_id.value(), model::JobStateName(dep.state));
      }
      out.message = "waiting for dependencies to finish: " + waiting;
      break;
    }
    case JobState::kWaiting:
      out.layer = "inputs";
      out.message = job->status_message;
      break;
    case JobState::kReady:
      if (job->not_before > now) {
        out.layer = "backoff";
        out.message =
            fmt::format("retry backoff: attempt {} may start in {}", job->current_attempt()->number,
                        FormatDuration(job->not_before - now));
      } else if (auto verdict = verdicts_.find(id); verdict != verdicts_.end()) {
        out.layer = std::string(model::kHoldLayerNames.Name(verdict->second.layer));
        out.message = verdict->second.message;
        out.placement = verdict->second.placement;
      } else {
        out.layer = "node fit";
        out.placement = sched::Explain(cluster_, job->spec);
        out.message = "not tried by a scheduling cycle yet; now: " + out.placement->Render();
      }
      if (reservation_ && reservation_->job == id) {
        out.estimated_start = reservation_->start;
      } else if (awaiting_.contains(id)) {
        out.estimated_start = now + policy_.preemption_grace;  // victims are gone by then
      } else {
        out.estimated_start =
            sched::EstimateStart(cluster_, running_, job->spec, std::max(now, job->not_before));
      }
      break;
    case JobState::kAdmitted:
      if (IsExternal(*job->current_attempt())) {
        // Admitted by Drover, queued in its executor: the engine's reason (e.g. Slurm's).
        out.layer = "executor";
        out.message = job->status_message;
        break;
      }
      [[fallthrough]];
    case JobState::kPlaced:
    case JobState::kStarting:
    case JobState::kRunning: {
      out.layer = "running";
      const Attempt& attempt = *job->current_attempt();
      std::string where;
      for (const Worker& worker : attempt.workers) {
        std::string gpus;
        for (int gpu : worker.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(gpu);
        where += fmt::format("{}worker {} on {}{}", where.empty() ? "" : "; ", worker.rank,
                             worker.node.value(), gpus.empty() ? "" : " GPUs " + gpus);
      }
      out.message = fmt::format("attempt {} is {}: {}", attempt.number,
                                model::JobStateName(job->state), where);
      if (!job->status_message.empty()) out.message += " (" + job->status_message + ")";
      break;
    }
    default:
      out.layer = "finished";
      out.message = fmt::format("{}{}", model::JobStateName(job->state),
                                job->status_message.empty() ? "" : ": " + job->status_message);
      break;
  }
  return out;
}

Result<Job*> Controller::FindRunning(JobId id, std::string_view reports) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return NotFound(fmt::format("job {} does not exist", id.value()));
  Job& job = it->second;
  if (job.state != JobState::kStarting && job.state != JobState::kRunning) {
    return FailedPrecondition(fmt::format("job {} is {}: only a running job reports {}", id.value(),
                                          model::JobStateName(job.state), reports));
  }
  return &job;
}

Status Controller::ReportCheckpoint(JobId id, TimeMs at, Step& step) {
  Result<Job*> found = FindRunning(id, "checkpoints");
  if (!found) return tl::unexpected(found.error());
  Job& job = **found;
  Attempt& attempt = *job.current_attempt();
  if (at > attempt.last_checkpoint_at) {
    attempt.last_checkpoint_at = at;
    Track(job);
    step.changed.insert(id);
  }
  return OkStatus();
}

Status Controller::ReportProgress(JobId id, bool useful_work_began, std::optional<double> progress,
                                  TimeMs now, Step& step) {
  Result<Job*> found = FindRunning(id, "progress");
  if (!found) return tl::unexpected(found.error());
  Job& job = **found;
  if (progress && !(*progress >= 0 && *progress <= 1)) {
    return InvalidArgument(fmt::format("progress: {} is outside [0, 1]", *progress));
  }
  Attempt& attempt = *job.current_attempt();
  if (useful_work_began && attempt.useful_work_at == 0) attempt.useful_work_at = now;
  if (progress) attempt.progress = *progress;
  step.changed.insert(id);
  return OkStatus();
}

std::vector<std::pair<JobId, std::vector<std::string>>> Controller::InputsToCheck() const {
  std::vector<std::pair<JobId, std::vector<std::string>>> checks;
  for (JobId id : awaiting_inputs_) {
    std::vector<std::string> paths;
    for (const model::InputSpec& input : jobs_.at(id).spec.inputs) {
      if (!input.path.empty()) paths.push_back(input.path);
    }
    checks.emplace_back(id, std::move(paths));
  }
  return checks;
}

void Controller::OnInputsChecked(JobId id, const std::vector<std::string>& missing, TimeMs now,
                                 Step& step) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.state != JobState::kWaiting) return;
  Job& job = it->second;
  if (missing.empty()) {
    job.status_message.clear();
    StartAttempt(job, now, step);
    MoveTo(job, JobState::kReady, "inputs present", now, step);
    return;
  }
  std::string message = fmt::format("waiting for input {}", fmt::join(missing, ", "));
  if (message != job.status_message) {
    job.status_message = std::move(message);
    step.changed.insert(id);
  }
}

Status Controller::CancelPipeline(JobId run, const std::string& cause, TimeMs now, Step& step) {
  const std::vector<const Job*> jobs = RunJobs(run);
  if (jobs.empty()) return NotFound(fmt::format("pipeline run {} does not exist", run.value()));
  for (const Job* job : jobs) {
    if (!model::IsTerminal(job->state) && !publishing_.contains(job->id)) {
      DROVER_RETURN_IF_ERROR(Cancel(job->id, cause, now, step));
    }
  }
  return OkStatus();
}

Status Controller::SetPolicy(const model::Policy& policy) {
  Result<sched::QueueTree> tree = sched::QueueTree::Create(policy);
  if (!tree) return tl::unexpected(tree.error());
  policy_ = policy;
  queues_ = std::move(*tree);
  charges_.clear();
  for (JobId id : holding_) {
    const Job& job = jobs_.at(id);
    if (auto charge = ChargeOf(job)) {
      queues_.Add(*charge);
      charges_[id] = std::move(*charge);
    }
    Track(job);  // the charge moved
  }
  reservation_.reset();
  verdicts_.clear();
  capacity_freed_ = true;  // the next pass is a full one under the new rules
  return OkStatus();
}

std::vector<QueueReport> Controller::Queues() const {
  std::map<std::string, int> pending_by_leaf;
  for (JobId id : queued_) ++pending_by_leaf[jobs_.at(id).spec.queue];
  std::vector<QueueReport> reports;
  for (sched::QueueStatus& status : queues_.Status()) {
    QueueReport report;
    report.status = std::move(status);
    reports.push_back(std::move(report));
  }
  // A row counts the pending jobs of every leaf in its subtree (paths nest by "/").
  for (const QueueReport& leaf : reports) {
    if (!leaf.status.leaf) continue;
    auto count = pending_by_leaf.find(leaf.status.name);
    if (count == pending_by_leaf.end()) continue;
    for (QueueReport& row : reports) {
      const std::string& path = row.status.path;
      if (leaf.status.path == path || leaf.status.path.rfind(path + "/", 0) == 0) {
        row.pending_jobs += count->second;
      }
    }
  }
  return reports;
}

}  // namespace drover::control
