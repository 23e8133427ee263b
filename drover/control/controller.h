#pragma once

// The deterministic controller: events in, lifecycle transitions and effects out.
//
// The same code runs under the server and the simulator. It never reads a clock (every call
// takes `now`), does no I/O and keeps no globals; its output depends only on its inputs. The
// driver that owns it:
//   1. calls an event method (Submit, Cancel, UpsertNode, Schedule, OnWorkerEvent) with a Step;
//   2. persists the Step (the snapshots of the jobs named in step.changed and the transitions)
//      atomically, and only then
//   3. carries out step.effects (launch or stop worker processes).
// A crash between 2 and 3 loses no work: Restore() + the runtimes' Adopt() find out which
// launches happened, and Relaunch() repeats the ones that did not.
//
// Not thread-safe: the driver serializes calls.
//
// Its state lives in two owners that keep their own invariants: JobTable (the jobs and their
// indexes by state) and Holdings (what placed and running jobs hold of the cluster and the
// queue tree). Its definition is spread by concern: controller.cc (events, restore, scheduling
// passes, policy), controller_attempts.cc (an attempt from launch to its end, retries),
// controller_external.cc (hand-offs to external executors), controller_workflow.cc
// (dependencies, conditions, inputs, sweeps, pipelines), controller_explain.cc (Explain,
// Queues), controller_listing.cc (queue positions), controller_deps.cc (dependencies on jobs of
// earlier submissions), controller_verbs.cc (a user's hold, release, update and requeue) and
// controller_nodes.cc (operators' node lifecycle: cordon, drain, maintenance).

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/ids.h"
#include "drover/common/result.h"
#include "drover/control/effects.h"
#include "drover/control/explanation.h"
#include "drover/control/holdings.h"
#include "drover/control/job_table.h"
#include "drover/control/job_update.h"
#include "drover/model/decision.h"
#include "drover/model/executor.h"
#include "drover/model/fair_share.h"
#include "drover/model/job.h"
#include "drover/model/launch.h"
#include "drover/model/node.h"
#include "drover/model/outputs.h"
#include "drover/model/policy.h"
#include "drover/model/progress.h"
#include "drover/sched/cluster_state.h"
#include "drover/sched/engine.h"
#include "drover/sched/pending_reason.h"
#include "drover/sched/queues.h"
#include "drover/workflow/conditions.h"
#include "drover/workflow/expression.h"

namespace drover::control {

struct Options {
  // Time between SIGTERM and SIGKILL when a worker is stopped.
  DurationMs kill_grace_ms = 10'000;
  // Gang rendezvous ports are chosen deterministically in [base, base + span).
  int master_port_base = 29'500;
  int master_port_span = 10'000;
  // Between releases of capacity a scheduling pass tries only jobs not tried before (the rest
  // cannot fit); a full pass over the queue still runs this often, refreshing pending reasons,
  // the reservation and preemption choices ...
  DurationMs full_cycle_interval_ms = 1'000;
  // ... or, over a larger backlog, one millisecond apart for every this many ready jobs: a full
  // pass costs microseconds per job (128 ms over 50,000 mixed jobs, docs/benchmarks.md), and
  // one over 160,000 jobs every second kept a core 70% busy with nothing changing; at 20 per
  // ms, a backlog under 20,000 keeps the one-second pass and a larger one is passed over every
  // backlog/20 ms.
  std::int64_t full_cycle_ready_jobs_per_ms = 20;
  // An external executor's job stages its value outputs at
  // <value_outputs_root>/job-ID/attempt-N/NAME, where the driver reads them (docs/workflows.md; the
  // server: under its data directory); an agent's worker stages them on its node and reports
  // them with its exit (LaunchSpec::value_outputs).
  std::string value_outputs_root;
  // Submit refuses a job that can never start (sched::FindInfeasibility: no node seen so far, or
  // no queue limit, could ever hold it) unless its spec sets hold_infeasible. The simulator turns
  // it off: a trace replays every job it recorded.
  bool refuse_infeasible = true;
  // Launch effects carry each worker's whole contract (MakeLaunchSpec: argv, environment,
  // directories to make, limits). A driver that starts no process (the simulator) turns it off
  // and gets the worker's key, node and GPUs only; every decision is the same either way.
  bool launch_contract = true;
  // Steps carry the scheduler's decisions (Step::decisions: the log `drover why` reads, each
  // with its sentence). A driver that keeps no decision log (the simulator) turns it off: the
  // scheduler then does not write a placement's record either (sched::CycleInput::
  // placement_decisions), and every decision is the same either way.
  bool decision_log = true;
  // The Unix account of the server process (ControlPlane fills it in when empty). Jobs submitted
  // by the identity of that name may run as root: whoever started the server has that power
  // already (docs/security.md, "Jobs run as their users"). Empty: no identity gets it this way.
  std::string server_user;
};

// The jobs a step changed: appended as they change (a job changes several times in one step),
// deduplicated when read. A vector rather than a set: a job's transitions cost no allocation
// each, which the simulator's million-job replays feel (docs/benchmarks.md).
class ChangedJobs {
 public:
  void insert(JobId id) {
    if (ids_.empty() || ids_.back() != id) ids_.push_back(id);
  }
  bool empty() const { return ids_.empty(); }
  void clear() { ids_.clear(); }
  bool contains(JobId id) const { return std::find(ids_.begin(), ids_.end(), id) != ids_.end(); }
  // Each changed job once, ascending.
  std::vector<JobId> Sorted() const {
    std::vector<JobId> sorted = ids_;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    return sorted;
  }
  std::size_t size() const { return Sorted().size(); }

 private:
  std::vector<JobId> ids_;  // in the order of their changes, repeats allowed
};

// The output of one controller call.
struct Step {
  ChangedJobs changed;                         // jobs whose snapshot must be persisted
  std::vector<model::Transition> transitions;  // to append, in order
  std::vector<Effect> effects;                 // to carry out after persisting
  std::vector<model::Decision> decisions;      // to append to the decision log
  // Nodes whose operator state (Controller::NodeAdminOf) must be persisted.
  std::set<NodeId> nodes_changed;

  bool empty() const {
    return changed.empty() && transitions.empty() && effects.empty() && decisions.empty() &&
           nodes_changed.empty();
  }
};

struct SubmitResult {
  std::vector<JobId> ids;
  bool existing = false;  // the submission key was seen before; no new jobs were created
};

// Tiresias' attained service of `job` at `now`, in GPU-milliseconds: over every attempt that
// was placed, the milli-GPUs its workers held (model::MilliGpusPerWorker, as the queue tree
// charges: a whole GPU 1000, a time-slice share its thousandths, a MIG instance g*1000/7) times the
// time from its placement to its end (the current attempt: to `now`), divided by 1000. Preempted
// and failed attempts count: service attained is not forgotten on requeue.
std::int64_t AttainedGpuMs(const model::Job& job, TimeMs now);

// The refusal of a submission whose job `job` names, at depends_on[index], `name` (`job:ID`) for a
// job that does not exist: kInvalidArgument. A driver that hides a job the caller may not view
// refuses with this same error, so that the answer does not tell that the job exists.
tl::unexpected<Error> UnknownUpstream(std::string_view job, std::size_t index,
                                      std::string_view name);

class Controller {
 public:
  explicit Controller(Options options = {});

  // Rebuilds state from stored jobs after a restart; call once, before any other event, and
  // after the nodes known at start were added with UpsertNode. Jobs caught between admission
  // and launch go back to ready (recorded in `step`).
  void Restore(std::vector<model::Job> jobs, TimeMs now, Step& step);

  // Creates one job per spec, in order, resolving depends_on by name within `specs` (a job's
  // name, or a pipeline stage: every job of that stage) or, for `job:ID`, to an earlier job
  // (ResolveDependencies). Several specs, or pipeline stages,
  // share a run (Job::pipeline_run: the first job's id). With a non-empty `submission_key` seen
  // before, returns the jobs of that submission and changes nothing; `request_digest` (a digest
  // of the request that carried the key; may be empty) is kept with the jobs, and a repeated
  // key whose digest differs from a kept, non-empty one is kAlreadyExists (the key names
  // another request). kInvalidArgument (changing nothing) if a queue does not exist, a
  // dependency cannot be resolved (ResolveDependencies), with admission: whole a stage could never
  // be admitted by its queue, or (Options::refuse_infeasible) a job without hold_infeasible can
  // never start (sched::FindInfeasibility, judged against every node added so far, lost ones
  // included). Each job runs as the Unix account the policy maps `owner` (the submitting identity;
  // the job's spec.owner when empty) to, root allowed when the policy's accounts.allow_root lists
  // it or it is Options::server_user (Job::run_as, may_run_as_root).
  Result<SubmitResult> Submit(std::vector<model::JobSpec> specs, const std::string& submission_key,
                              const std::string& owner, TimeMs now, Step& step,
                              const std::string& request_digest = "");

  // Cancels a job for `by` (a user, or model::kSystemActor): at once if it has no processes
  // (the transition to cancelled is by `by`), otherwise by stopping them (a transition
  // "cancel requested" by `by` now; it becomes cancelled when the last exits). kNotFound for an
  // unknown job; kFailedPrecondition for a finished one. Cancelling twice is not an error.
  Status Cancel(JobId id, std::string_view by, const std::string& cause, TimeMs now, Step& step);

  // A user's verbs on one job (controller_verbs.cc; docs/api.md, "Job verbs"). Each records a
  // transition whose actor is `by` (from == to where the state stays) with the cause. Errors
  // change nothing: kNotFound for an unknown job; kFailedPrecondition naming the job's state
  // where it does not allow the verb.
  //
  // Holds a job not yet admitted (pending, waiting or ready): no scheduling pass considers it
  // until ReleaseJob, and it keeps its place in its queue's order (QueuedSince is unchanged).
  // kFailedPrecondition for a job admitted or later, or already held.
  Status HoldJob(JobId id, const std::string& by, const std::string& reason, TimeMs now,
                 Step& step);
  // Ends a hold. kFailedPrecondition for a job that is not held.
  Status ReleaseJob(JobId id, const std::string& by, TimeMs now, Step& step);
  // Changes a job's priority class, timeout and queue, validated as Submit would: a job not yet
  // admitted may change all three; an admitted, placed, starting or running one only its
  // timeout, which then applies to the running attempt (SetWorkerTimeout to each live worker,
  // counted from its start). kInvalidArgument naming the field (an unknown priority class or
  // queue, a timeout not above 0, nothing to update, or a queue the job could never start in),
  // kFailedPrecondition naming the state and what may change there.
  Status UpdateJob(JobId id, const JobUpdate& update, const std::string& by, TimeMs now,
                   Step& step);
  // Stops a starting or running job and queues it again at once, keeping its place in the
  // queue: its workers get the preemption notice, the attempt ends requeued (Attempt::
  // requeued_by; not counted against the retry policy) and the next attempt resumes from the
  // last checkpoint when there is one. kFailedPrecondition for a job in another state, already
  // stopping, publishing its outputs, or run by an external executor.
  Status RequeueJob(JobId id, const std::string& by, const std::string& reason, TimeMs now,
                    Step& step);

  // Adds or updates a node (an agent registered or re-registered); a lost node takes placements
  // again.
  void UpsertNode(const model::Node& node, TimeMs now, Step& step);

  // The driver stopped hearing from `node` (docs/workflows.md, "Node loss"): every worker
  // believed alive there is reported exited at `now` with ExitStatus{node_lost = true,
  // message}, so that retry.on decides whether its job retries, and the node takes no
  // placements until UpsertNode adds it again. Returns those workers' keys: their processes may
  // still run, and the driver stops them should the node come back.
  std::vector<model::WorkerKey> OnNodeLost(const NodeId& node, const std::string& message,
                                           TimeMs now, Step& step);
  // Whether `node` was lost (OnNodeLost) and not added again since.
  bool IsLost(const NodeId& node) const { return lost_.contains(node); }

  // --- Operators' node lifecycle (controller_nodes.cc; docs/operations.md, "Node lifecycle").
  // Each records the change in step.nodes_changed (the driver persists NodeAdminOf) and names
  // `by` (who asked) in it. kNotFound for a node never added.
  //
  // Cordon: no new placements on `node`; running jobs keep running. Cordoning a cordoned node
  // changes nothing.
  Status Cordon(const NodeId& node, const std::string& by, const std::string& reason, TimeMs now,
                Step& step);
  // Ends a cordon (and a drain: jobs already stopped stay requeued elsewhere). Uncordoning a
  // node that is not cordoned changes nothing.
  Status Uncordon(const NodeId& node, const std::string& by, TimeMs now, Step& step);
  // Cordons `node` and drains it: each job running there with a checkpoint_dir is preempted
  // with notice at once (Attempt::disruption kNodeDrain; it requeues, resuming from its last
  // checkpoint elsewhere, as a preemption does); the others run to their end or, with `grace`,
  // until now + grace, when they are stopped the same way (cause node_drain). The node reads
  // drained once no worker is left there (NodeAdmin::drained_at). kInvalidArgument for a
  // negative grace. Draining a draining node sets the new grace.
  Status Drain(const NodeId& node, std::optional<DurationMs> grace, const std::string& by,
               const std::string& reason, TimeMs now, Step& step);
  // Sets (replaces) the node's maintenance window (model::MaintenanceWindow; its set_at becomes
  // `now`). kInvalidArgument, changing nothing, if to <= from or the window has already ended.
  Status SetMaintenance(const NodeId& node, model::MaintenanceWindow window, TimeMs now,
                        Step& step);
  // Removes the node's maintenance window; none is not an error.
  Status ClearMaintenance(const NodeId& node, TimeMs now, Step& step);
  // The operator state of `node` as persisted; the default for a node never touched.
  model::NodeAdmin NodeAdminOf(const NodeId& node) const;
  // Takes back a persisted operator state after a restart (before Restore; the node need not be
  // added yet).
  void RestoreNodeAdmin(const NodeId& node, model::NodeAdmin admin);
  // Workers believed alive on `node`.
  int LiveWorkersOn(const NodeId& node) const;

  // One scheduling pass: releases pending jobs whose dependency conditions hold and whose `if`
  // is true (skipping those for which either cannot hold; docs/workflows.md), then places ready
  // jobs and emits their launches. Under a queue order other than fair-share the pass gives the
  // engine each ready job's submission time and, under las, its attained service (AttainedGpuMs) at
  // `now`; under las also each holding job's, so running jobs move down LAS queues (and may become
  // victims) as they run.
  void Schedule(TimeMs now, Step& step);

  // A worker started or exited. Events for unknown or finished attempts are ignored, so an
  // event reported twice (e.g. after a restart) changes nothing.
  void OnWorkerEvent(const model::WorkerEvent& event, Step& step);

  // An external executor observed an attempt it runs (model::ExecutorEvent). Events for an
  // attempt that is not the job's current, unfinished one are ignored (a repeat after a
  // restart changes nothing). kStarted moves the job through placed and starting to running;
  // kExited ends the attempt as a worker exit ends a local one (retry, resume and outputs
  // apply alike).
  void OnExecutorEvent(const model::ExecutorEvent& event, Step& step);

  // A running job saved a checkpoint at `at` (the API, or the checkpoint file its agent saw).
  // kNotFound for an unknown job; kFailedPrecondition if it is not starting or running.
  Status ReportCheckpoint(JobId id, TimeMs at, Step& step);

  // The job reports from inside: useful work began (the first report counts), its progress in
  // [0, 1] and/or its rate of useful work (the latest counts). kNotFound for an unknown job;
  // kFailedPrecondition if it is not starting or running; kInvalidArgument as
  // model::CheckProgressReport says (nothing changes then).
  Status ReportProgress(JobId id, const model::ProgressReport& report, TimeMs now, Step& step);

  // The driver carried out PublishOutputs for (job, attempt): `published` maps each output to
  // its published path or value, or is the error that stopped publication (nothing was
  // published). Success ends the job succeeded (or starts early stopping of its sweep); an
  // error fails the attempt like a worker failure (retry applies). Stale answers are ignored.
  void OnOutputsPublished(JobId job, int attempt,
                          const Result<std::map<std::string, std::string>>& published, TimeMs now,
                          Step& step);

  // A job in `waiting` with the input paths it needs, for the driver to look for with the file
  // permissions of the job's account (Job::run_as, may_run_as_root: docs/security.md), so that
  // a job learns only of the paths its account may see.
  struct InputCheck {
    JobId job;
    std::vector<std::string> paths;
    std::string run_as;
    bool may_run_as_root = false;
  };
  std::vector<InputCheck> InputsToCheck() const;
  // The driver looked: `missing` are the paths of InputsToCheck() that do not exist. Empty: the
  // job becomes ready. Ignored for a job not waiting.
  void OnInputsChecked(JobId id, const std::vector<std::string>& missing, TimeMs now, Step& step);

  // Cancels every unfinished job of pipeline run `run` (Job::pipeline_run) for `by` (Cancel).
  // kNotFound if no job belongs to it; cancelling a finished run is not an error.
  Status CancelPipeline(JobId run, std::string_view by, const std::string& cause, TimeMs now,
                        Step& step);

  // Replaces the scheduling policy (queues, quotas, limits, fair share, preemption, backfill).
  // kInvalidArgument, changing nothing, if the policy is malformed. Running jobs keep running;
  // queued jobs of a queue the policy no longer has wait with layer "queue". Fair-share history
  // carries over to the queue of the same path (docs/scheduling.md, "Fair share"); the paths of
  // the queues the new policy no longer has, whose history is thus dropped, go to
  // `dropped_history` when given (sorted; empty when none).
  Status SetPolicy(const model::Policy& policy,
                   std::vector<std::string>* dropped_history = nullptr);
  const model::Policy& policy() const { return policy_; }
  // The queue tree with usage, shares (usage accrued up to `now`) and pending counts, in tree
  // order.
  std::vector<QueueReport> Queues(TimeMs now) const;

  // The fair-share history accrued up to `now`, for the driver to save (Store::PutFairShare).
  model::FairShareHistory FairShareHistory(TimeMs now) const;
  // Takes a saved fair-share history (queues matched by path; see SetPolicy) and decays it to
  // `now` as time without usage; call after SetPolicy and before Restore. Returns the paths of
  // the saved queues the policy no longer has, whose history is dropped.
  std::vector<std::string> RestoreFairShare(const model::FairShareHistory& history, TimeMs now);

  // Emits the launch of a worker that its runtime has no trace of (after Restore).
  void Relaunch(const model::WorkerKey& key, Step& step);

  // Workers with a process that may be alive (launched, not yet reported exited), by node; local
  // executor only.
  std::vector<std::pair<NodeId, model::WorkerKey>> LiveWorkers() const;
  // Attempts handed to external executors that have not ended, for the drivers to adopt after
  // a restart (external_id empty: perhaps never submitted; the executor looks it up by name).
  // A continuation of a requeued engine job that its executor never acknowledged is not among
  // them: Restore emits its SubmitExternal again.
  std::vector<model::ExternalRef> LiveExternal() const;

  Result<Explanation> Explain(JobId id, TimeMs now) const;
  // Where ready job `id` stands in the order of the last full scheduling pass (QueuePosition);
  // nullopt for a job that pass did not leave waiting (not ready then, in retry backoff, of a
  // queue the policy lacks, placed, or submitted since). Constant time: the positions are
  // computed once per full pass (controller_listing.cc), not per question.
  std::optional<QueuePosition> PositionOf(JobId id) const;

  const model::Job* Find(JobId id) const { return jobs_.Find(id); }
  // The record of worker `key` (job, attempt number, rank), of any attempt; null if there is
  // none. Its node is where the controller placed it: a driver hears of a worker (events, logs,
  // usage) only from that node's agent.
  const model::Worker* FindWorker(const model::WorkerKey& key) const;
  // Drops the record of finished job `id` (a terminal state): Find and jobs() no longer know it,
  // and events naming it are ignored as for an unknown job. For a driver that keeps no history:
  // the simulator folds each job's outcome into its report when the job ends and forgets it, so
  // that its memory follows the jobs alive rather than every job of the trace; the server keeps
  // every job. Errors change nothing: kNotFound for an unknown job; kFailedPrecondition for a job
  // not finished, one of a pipeline run or of a submission with an Idempotency-Key (both are
  // looked up later), or one a pending job depends on.
  Status Forget(JobId id);
  // The jobs of pipeline run `run` (Job::pipeline_run) in id order: its ids are consecutive,
  // starting at `run`. Empty for JobId() or a run that does not exist.
  std::vector<const model::Job*> RunJobs(JobId run) const { return jobs_.RunJobs(run); }
  const std::map<JobId, model::Job>& jobs() const { return jobs_.jobs(); }
  const std::map<NodeId, model::Node>& nodes() const { return nodes_; }
  const sched::ClusterState& cluster() const { return holdings_.cluster(); }
  // The jobs holding resources (placed, starting, running, or admitted to an external executor),
  // one entry each in no order: what a metrics scrape sums without visiting every job.
  const std::vector<sched::RunningJob>& held() const { return holdings_.running(); }

 private:
  // --- controller.cc: the job table's and the holdings' edits, scheduling passes ---

  // Moves `job` to `to` (JobTable::MoveTo), recording the transition, done by `actor`, in `step`.
  void MoveTo(model::Job& job, model::JobState to, std::string cause, TimeMs now, Step& step,
              std::string_view actor = model::kSystemActor);
  // Holds `job`'s current placement with `charge` (Holdings::Hold); gives it back (Unhold),
  // marking capacity freed for the next pass. Both first accrue fair-share usage up to `now`
  // (Holdings::Advance), so usage is accounted whether or not anything is pending.
  void Hold(const model::Job& job, std::optional<sched::Charge> charge, TimeMs now);
  void Unhold(const model::Job& job, TimeMs now);
  // What `job` counts against the queue tree while it holds resources (control::ChargeOf).
  std::optional<sched::Charge> ChargeOf(const model::Job& job) const;
  void PlaceReadyJobs(TimeMs now, Step& step);
  // sched::CycleInput::history of `job` at `now`.
  sched::JobHistory HistoryOf(const model::Job& job, TimeMs now) const;
  // --- controller_listing.cc: queue positions ---

  // Replaces the positions with those of `order` (sched::CycleOutput::order of a full pass),
  // keeping only the jobs still ready after it.
  void RecordPositions(const std::vector<JobId>& order);

  // Stops a running job's workers with notice, for `why` (kPreemption: to make room for
  // `preemptor`; kNodeDrain: its node is drained, no preemptor); it queues again when they exit.
  void Preempt(model::Job& victim, std::optional<JobId> preemptor, model::Disruption why,
               const std::string& reason, Step& step);

  // --- controller_attempts.cc: an attempt from its start to its end ---

  // The job `id` when it is starting or running; else kNotFound, or kFailedPrecondition saying
  // only a running job reports `reports`.
  Result<model::Job*> FindRunning(JobId id, std::string_view reports);
  void StartAttempt(model::Job& job, TimeMs ready_at, Step& step);
  // Records `placement` (its workers' nodes and GPUs are moved into the attempt) and launches.
  void Launch(model::Job& job, sched::Placement&& placement, TimeMs now, Step& step);
  // Emits the stop of every live worker of the current attempt: StopWorker per worker, or one
  // CancelExternal for an attempt under an external executor.
  void StopWorkers(const model::Job& job, bool preempt, const std::string& reason,
                   Step& step) const;
  // The launch of `worker` of `job`'s current attempt (its key, node and GPUs only without
  // Options::launch_contract).
  model::LaunchSpec MakeLaunchSpec(const model::Job& job, const model::Worker& worker) const;
  // SIGTERM-to-SIGKILL time of `job`'s workers.
  DurationMs KillGrace(const model::Job& job) const;
  // Begins ending the current attempt with `outcome`: stops every worker still alive.
  void EndAttempt(model::Job& job, model::JobState outcome, const std::string& reason, Step& step);
  // Completes the current attempt once no worker is alive: releases its resources, then emits
  // PublishOutputs (a success with outputs) or goes on to CompleteAttempt.
  void FinishAttempt(model::Job& job, TimeMs now, Step& step);
  // Ends the current, finished (and, with outputs, published) attempt: discards the staging of
  // an attempt that did not succeed, then requeues, retries or moves the job to its terminal
  // state.
  void CompleteAttempt(model::Job& job, TimeMs now, Step& step);
  // Emits PublishOutputs for the job's current attempt.
  void EmitPublish(const model::Job& job, Step& step) const;

  // --- controller_nodes.cc ---

  // Drains: stops what is left on draining nodes past their deadline and marks the nodes empty
  // as drained. Maintenance windows that ended are removed. Called by Schedule.
  void EnforceNodeAdmin(TimeMs now, Step& step);
  // The windows the engine honours (sched::CycleInput::maintenance): cordons (never ending) and
  // maintenance windows not yet ended.
  std::vector<sched::NodeWindow> NodeWindows(TimeMs now) const;
  // The node's operator state for editing; kNotFound for a node never added.
  Result<model::NodeAdmin*> EditNodeAdmin(const NodeId& node, Step& step);

  // --- controller_external.cc: attempts handed to external executors ---

  // Restore of an admitted or placed job whose attempt was handed to its executor: it holds its
  // admission again, and a continuation its executor never acknowledged is emitted again.
  void RestoreExternal(model::Job& job, TimeMs now, Step& step);
  // The external counterpart of Launch: the admitted job's attempt goes to `executor` (its
  // workers wait, without nodes, for the executor to start them). With `requeued`, the attempt
  // continues that engine job, which the engine requeued, instead of a new submission.
  void HandOff(model::Job& job, const model::ExecutorConfig& executor, TimeMs now, Step& step,
               const model::ExternalRef* requeued = nullptr);
  // Emits SubmitExternal for the job's current, handed-off attempt.
  void EmitHandOff(const model::Job& job, const model::ExecutorConfig& executor, Step& step) const;
  // After the engine requeued `requeued` (the job's previous attempt): the job's new attempt
  // continues it, keeping the admission (`charge`) it had; with no new attempt (the retry
  // policy ends the job) or another executor now, the engine job is cancelled.
  void ContinueRequeued(model::Job& job, const model::ExternalRef& requeued,
                        std::optional<sched::Charge> charge, TimeMs now, Step& step);

  // Why `spec` can never start (sched::FindInfeasibility against every node added so far and
  // idle_queues_), or nullopt.
  std::optional<std::string> FindInfeasibility(const model::JobSpec& spec) const;

  // kResourceExhausted, naming the limit, the principal and the counts, if `specs` would take an
  // owner or a team past the policy's submit limits (model::SubmitLimits).
  Status CheckSubmitLimits(const std::vector<model::JobSpec>& specs) const;

  // --- controller_deps.cc: resolving and judging dependencies ---

  // Per spec, the ids its depends_on resolves to: a name to the jobs of `specs` (their ids
  // counted from `first_id`) with that name or stage, `job:ID` to that earlier job.
  // kInvalidArgument naming the job and the depends_on index: a name not in `specs`; an id that
  // is not an earlier job's (UnknownUpstream: missing, `first_id` or later); an earlier job
  // that ended so that the condition can never hold (the submission is refused rather than
  // skipped at once: the submitter sees the mistake where it was made).
  Result<std::vector<std::vector<JobId>>> ResolveDependencies(
      const std::vector<model::JobSpec>& specs, JobId first_id) const;
  // The upstream jobs of `dependency` of `job`: the `job:ID` job, or the jobs of `job`'s own
  // submission with that name or stage (never an earlier job that shares the name).
  std::vector<const model::Job*> UpstreamsOf(const model::Job& job,
                                             const model::Dependency& dependency) const;
  // The verdict on `job`'s dependencies as their upstreams stand now (workflow::Judge).
  workflow::DependencyVerdict JudgeDependencies(const model::Job& job) const;
  // `reason` (a kWait verdict's) followed by the unfinished upstreams with their ids and
  // states: "waiting for job 12 to succeed; unfinished: train (12, running)".
  std::string DescribeWait(const model::Job& job, const std::string& reason) const;
  // --- controller_explain.cc ---

  // When no live node can ever host `spec` (`placement` is kUnschedulable or kNoNodes) but
  // lost nodes could: the sentence that names them ("the only node able to run it, node-a, is
  // lost ..."); else nullopt. O(lost nodes x the node's static filters).
  std::optional<std::string> LostHosts(const model::JobSpec& spec,
                                       const std::optional<sched::PendingReason>& placement) const;

  // --- controller_workflow.cc: dependencies, conditions, inputs and sweeps ---

  // kInvalidArgument if a stage of `specs` with admission: whole could never be admitted by
  // its queue, even with the queue (and its cohort) otherwise empty.
  Status CheckWholeAdmission(const std::vector<model::JobSpec>& specs) const;
  void ReleaseDependents(TimeMs now, Step& step);
  // Leaves pending: to waiting when it has input paths to look for, else straight to ready.
  void Release(model::Job& job, const std::string& cause, TimeMs now, Step& step);
  // The value of ${{ stages.S.outputs.N }} for `job`: output N of stage (or job) S of its
  // pipeline run, for a sweep of its best trial; nullopt when not published.
  std::optional<std::string> UpstreamOutput(const model::Job& job,
                                            const workflow::Reference& reference) const;
  // Ends a pending job skipped (terminal) with `cause`.
  void Skip(model::Job& job, const std::string& cause, TimeMs now, Step& step);
  // With admission: whole, whether `job`'s pipeline run may start now; else nullopt, or the
  // reason it may not.
  std::optional<std::string> WholeAdmissionHold(const model::Job& job) const;
  // For a trial of a sweep with a concurrency bound: the reason it must stay pending, if the
  // bound is reached.
  std::optional<std::string> SweepConcurrencyHold(const model::Job& job) const;
  // Early stopping: after `trial` succeeded, cancels its sweep's unfinished trials when its
  // objective reached the stop value.
  void MaybeStopSweep(const model::Job& trial, TimeMs now, Step& step);

  // --- controller_verbs.cc ---

  // Records a user's action that leaves `job`'s state as it is (a transition with from == to).
  void RecordAction(model::Job& job, const std::string& cause, const std::string& actor, TimeMs now,
                    Step& step);

  Options options_;
  model::Policy policy_;
  JobTable jobs_;
  // The cluster's free capacity and the queue tree's usage, with the jobs that hold them.
  Holdings holdings_;
  std::map<NodeId, model::Node> nodes_;  // every node added, lost ones included
  // The same nodes as a cluster with nothing allocated: what FindInfeasibility judges against.
  sched::ClusterState every_node_;
  sched::QueueTree idle_queues_;  // the policy's queue tree, never charged
  std::set<NodeId> lost_;         // OnNodeLost, not upserted since; not in the cluster
  bool capacity_freed_ = true;    // since the last full pass
  TimeMs last_full_cycle_ = 0;
  std::set<JobId> stopping_;  // victims whose workers are being stopped
  // Nominated preemptors (sched::CycleInput::nominated): their victims still stopping and the
  // nodes the exited ones freed. An entry stays after its last victim exits, until the
  // preemptor's next cycle; it goes when the preemptor is placed or leaves the ready state.
  std::map<JobId, sched::Nomination> awaiting_;
  std::optional<sched::Reservation> reservation_;
  std::map<JobId, sched::Verdict> verdicts_;  // ready jobs: the last cycle's verdict
  // The last full pass's order (RecordPositions): each queue's waiting jobs, front first, and
  // each such job's queue (an index into queue_orders_), place in it and place overall.
  struct Position {
    std::size_t queue = 0;
    int in_queue = 0;
    int in_cluster = 0;
  };
  std::vector<std::pair<std::string, std::vector<JobId>>> queue_orders_;
  std::unordered_map<JobId, Position> positions_;
  // Operators' state of nodes (controller_nodes.cc); nodes never touched are absent.
  std::map<NodeId, model::NodeAdmin> node_admin_;
};

}  // namespace drover::control
