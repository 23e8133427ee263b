#pragma once

// Jobs, attempts and workers as the control plane tracks them, and the lifecycle state machine.
//
// Lifecycle of a job (docs/architecture.md draws it):
//
//   pending --(dependency conditions hold, `if` true)--> ready, or waiting when it declares
//                                                          input paths --(they exist)--> ready
//   pending --(a dependency condition can no longer hold, or `if` is false)--> skipped
//   ready --(dequeued + admitted)--> admitted
//   admitted --(nodes and GPUs chosen)--> placed --(launch sent)--> starting
//   starting --(every worker process is up)--> running
//   running / starting --(all workers exited 0)--> succeeded
//   running / starting --(a worker failed)--> failed, or ready again with a new attempt when the
//                                             retry policy allows
//   running / starting --(timeout)--> timed_out (or ready with a new attempt, as for failed)
//   any non-terminal --(cancel, or a dependency that can no longer succeed)--> cancelled
//
// succeeded, failed, cancelled, timed_out and skipped are terminal. Each attempt keeps its own
// timeline so that queue delay, placement, start-up and run time can be told apart.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/ids.h"
#include "drover/model/job_spec.h"
#include "drover/model/names.h"

namespace drover::model {

enum class JobState {
  kPending,
  kReady,
  kAdmitted,
  kPlaced,
  kStarting,
  kRunning,
  kSucceeded,
  kFailed,
  kCancelled,
  kTimedOut,
  kWaiting,  // dependencies met; declared inputs do not all exist yet (holds no quota)
  kSkipped,  // never ran: a dependency condition or its `if` did not hold
};

inline constexpr NameTable kJobStateNames{std::array{
    NameEntry{JobState::kPending, "pending"},
    NameEntry{JobState::kReady, "ready"},
    NameEntry{JobState::kAdmitted, "admitted"},
    NameEntry{JobState::kPlaced, "placed"},
    NameEntry{JobState::kStarting, "starting"},
    NameEntry{JobState::kRunning, "running"},
    NameEntry{JobState::kSucceeded, "succeeded"},
    NameEntry{JobState::kFailed, "failed"},
    NameEntry{JobState::kCancelled, "cancelled"},
    NameEntry{JobState::kTimedOut, "timed_out"},
    NameEntry{JobState::kWaiting, "waiting"},
    NameEntry{JobState::kSkipped, "skipped"},
}};
static_assert(kJobStateNames.size() == static_cast<std::size_t>(JobState::kSkipped) + 1);

// kJobStateNames.Name / Parse.
std::string_view JobStateName(JobState state);
std::optional<JobState> ParseJobState(std::string_view name);
// succeeded, failed, cancelled, timed_out and skipped: the job will not change again. The one
// definition of "finished": the stores' active filters (SQL included) derive from it.
bool IsTerminal(JobState state);
// True if the lifecycle above allows from -> to. The controller never makes any other move.
bool IsAllowedTransition(JobState from, JobState to);

enum class WorkerState { kAssigned, kLaunched, kRunning, kExited };
inline constexpr NameTable kWorkerStateNames{std::array{
    NameEntry{WorkerState::kAssigned, "assigned"},
    NameEntry{WorkerState::kLaunched, "launched"},
    NameEntry{WorkerState::kRunning, "running"},
    NameEntry{WorkerState::kExited, "exited"},
}};
static_assert(kWorkerStateNames.size() == static_cast<std::size_t>(WorkerState::kExited) + 1);
// kWorkerStateNames.Name / Parse.
std::string_view WorkerStateName(WorkerState state);
std::optional<WorkerState> ParseWorkerState(std::string_view name);

// How a worker process ended.
struct ExitStatus {
  int exit_code = -1;      // valid when signal == 0
  int signal = 0;          // the signal that killed it, 0 if it exited
  bool timed_out = false;  // killed because the attempt ran past spec.timeout
  bool cancelled = false;  // killed because the job was cancelled
  bool preempted = false;  // stopped to make room for another job (docs/scheduling.md)
  // Its node stopped answering (a silent agent, or an executor's node failure): the process may
  // still run there, but the attempt is over.
  bool node_lost = false;
  // The kernel's OOM killer ended it: its cgroup's memory.events oom_kill counter rose while it
  // ran (docs/operations.md, "Disruptions"). Set by the supervisor; only where the worker has a
  // cgroup of its own.
  bool oom_killed = false;
  std::string message;  // e.g. "exec failed: No such file or directory"
  // The job's value outputs as the worker's node read them after it exited 0 (output name ->
  // value: the first line of the file, at most kMaxOutputValueBytes, trailing whitespace
  // removed; model/outputs.h), which the server publishes (docs/workflows.md). Only those read
  // whole; empty for any other exit.
  std::map<std::string, std::string> output_values;

  bool Succeeded() const {
    return signal == 0 && exit_code == 0 && !timed_out && !cancelled && !preempted && !node_lost &&
           !oom_killed;
  }
  // "exit 0", "exit 3", "killed by SIGKILL", "timed out", "cancelled", "node lost",
  // "OOM-killed".
  std::string Describe() const;
  friend bool operator==(const ExitStatus&, const ExitStatus&) = default;
};

// What ended an attempt that did not end by itself (docs/operations.md, "Disruptions"): one name
// per cause, recorded on the attempt (Attempt::disruption) and in its transitions' causes.
enum class Disruption {
  kNone,
  kPreemption,   // stopped for another job (priority or reclaim)
  kNodeDrain,    // its node was drained (drover node drain)
  kNodeLost,     // its node stopped answering
  kTimeout,      // ran past spec.timeout
  kUserCancel,   // cancelled
  kOomKilled,    // a worker was killed for memory pressure
  kUserRequeue,  // stopped by `drover requeue` to run again
};

inline constexpr NameTable kDisruptionNames{std::array{
    NameEntry{Disruption::kNone, "none"},
    NameEntry{Disruption::kPreemption, "preemption"},
    NameEntry{Disruption::kNodeDrain, "node_drain"},
    NameEntry{Disruption::kNodeLost, "node_lost"},
    NameEntry{Disruption::kTimeout, "timeout"},
    NameEntry{Disruption::kUserCancel, "user_cancel"},
    NameEntry{Disruption::kOomKilled, "oom_killed"},
    NameEntry{Disruption::kUserRequeue, "user_requeue"},
}};
static_assert(kDisruptionNames.size() == static_cast<std::size_t>(Disruption::kUserRequeue) + 1);
// kDisruptionNames.Name / Parse.
std::string_view DisruptionName(Disruption disruption);
std::optional<Disruption> ParseDisruption(std::string_view name);

// The disruption a worker's exit shows: timed_out kTimeout, cancelled kUserCancel, preempted
// kPreemption, node_lost kNodeLost, oom_killed kOomKilled; kNone for an exit of its own.
Disruption DisruptionOf(const ExitStatus& exit);

// One process of one attempt of a job.
struct Worker {
  int rank = 0;
  NodeId node;
  std::vector<int> gpus;  // GPU indices on `node`, exported as CUDA_VISIBLE_DEVICES
  std::string host;       // under an external executor: the engine's host it ran on
  WorkerState state = WorkerState::kAssigned;
  TimeMs launched_at = 0;  // the launch was handed to the node's agent
  TimeMs started_at = 0;   // the process was exec'd
  TimeMs finished_at = 0;
  std::optional<ExitStatus> exit;

  friend bool operator==(const Worker&, const Worker&) = default;
};

// One try at running a job. Times are 0 until reached.
struct Attempt {
  int number = 1;
  TimeMs ready_at = 0;            // dependencies met (or retry backoff over): entered the queue
  TimeMs dequeued_at = 0;         // taken from the queue by a scheduling cycle
  TimeMs admitted_at = 0;         // passed admission
  TimeMs placed_at = 0;           // nodes and GPUs chosen
  TimeMs workers_started_at = 0;  // the last worker's launch was handed to its agent
  TimeMs running_at = 0;          // every worker process is up
  TimeMs finished_at = 0;
  std::optional<JobState> outcome;  // terminal state of this attempt, or kReady when retried
  std::string outcome_reason;
  // This attempt started from a checkpoint of an earlier one (DROVER_RESUME=1).
  bool resumed = false;
  // Last checkpoint this attempt reported (API or the checkpoint file); 0 = none.
  TimeMs last_checkpoint_at = 0;
  // Set when the attempt was preempted: the job it made room for.
  std::optional<JobId> preempted_by;
  // Set when a user stopped the attempt to queue the job again (`drover requeue`): who. Like a
  // preemption it requeues at once, resumes from the last checkpoint and does not count
  // against the retry policy; empty: not requeued.
  std::string requeued_by;
  // What disrupted it, if anything did (the first cause wins); kNone for an attempt that ended
  // by itself (success, failure) or has not ended.
  Disruption disruption = Disruption::kNone;
  // Reported by the job (`drover report`, POST /v1/jobs/{id}/report): when useful work began
  // (after data loading, compilation, rendezvous) and its progress in [0, 1]; 0 / -1 = never.
  TimeMs useful_work_at = 0;
  double progress = -1;
  // Its latest reported rate of useful work (`drover report --throughput 1250 --unit
  // samples/s`): units of `throughput_unit` (a rate, "<work>/s"); -1 / "" = never reported.
  double throughput = -1;
  std::string throughput_unit;
  // Under an external executor (model/executor.h): its name ("slurm", "kubernetes"; empty: the
  // local executor), the engine's id of this attempt, and while the engine queues it, the
  // engine's pending reason and its own submit and eligible times. Workers have no Drover node
  // there: kStarted names the engine's hosts in Worker::host.
  std::string executor;
  std::string external_id;
  std::string external_reason;
  TimeMs external_submitted_at = 0;
  TimeMs external_eligible_at = 0;
  std::vector<Worker> workers;

  friend bool operator==(const Attempt&, const Attempt&) = default;
};

// The attempt runs under an external executor (model/executor.h).
bool IsExternal(const Attempt& attempt);
// Preempted by Drover (for job preempted_by, or evicted by a node drain) or by the external
// engine that ran it (e.g. Slurm's partition priority): it requeues at once and does not count
// against the retry policy.
bool WasPreempted(const Attempt& attempt);
// Stopped by `drover requeue` (Attempt::requeued_by).
bool WasRequeued(const Attempt& attempt);

// A user's hold on a job (`drover hold`): while held, no scheduling pass considers the job, which
// keeps its place in its queue's order (control::QueuedSince does not change). Only a job not
// yet admitted (pending, waiting or ready) is held.
struct JobHold {
  std::string by;  // the user who held it
  TimeMs since = 0;
  std::string reason;  // may be empty

  friend bool operator==(const JobHold&, const JobHold&) = default;
};

struct Job {
  JobId id;
  JobSpec spec;
  std::vector<JobId> dependencies;  // spec.depends_on resolved at submission
  std::string submission_key;       // the Idempotency-Key of the submission, if any
  // With submission_key: a digest of the request it came with (control::SubmitRequest); a
  // repeated key with another digest is refused. Empty for jobs stored before it was kept.
  std::string submission_hash;
  // The Unix account its workers run as on agents that run as root, and whether that account may
  // be root: set at submission from the submitting identity and the policy's accounts section
  // (model::UnixAccountFor, MayRunAsRoot; docs/security.md). Empty: the agent's own account.
  std::string run_as;
  bool may_run_as_root = false;
  // The jobs of one pipeline submission share the id of its first job; 0 outside pipelines.
  JobId pipeline_run;
  // When the dependency conditions held and the job left pending (entered waiting); 0 = not yet.
  TimeMs released_at = 0;
  // Outputs published by the attempt that succeeded: name -> published path, or the value.
  std::map<std::string, std::string> outputs;
  JobState state = JobState::kPending;
  TimeMs created_at = 0;
  TimeMs finished_at = 0;
  TimeMs not_before = 0;  // retry backoff: not dequeued before this time
  // Why the job is where it is, in one sentence: the pending reason, or the failure cause.
  std::string status_message;
  std::optional<JobHold> hold;    // set while a user holds the job
  std::vector<Attempt> attempts;  // the last one is current

  Attempt* current_attempt() { return attempts.empty() ? nullptr : &attempts.back(); }
  const Attempt* current_attempt() const { return attempts.empty() ? nullptr : &attempts.back(); }
  friend bool operator==(const Job&, const Job&) = default;
};

// The actor of what the controller does on its own (scheduling, exits, retries).
inline constexpr std::string_view kSystemActor = "system";

// One lifecycle step, stored with its time, cause and actor. A user's action that leaves the
// state as it was (hold, release, update) is recorded with from == to.
struct Transition {
  JobId job;
  int attempt = 0;  // 0 before the first attempt exists
  JobState from = JobState::kPending;
  JobState to = JobState::kPending;
  TimeMs at = 0;
  std::string cause;
  std::string actor = std::string(kSystemActor);  // the user who caused it, or "system"

  friend bool operator==(const Transition&, const Transition&) = default;
};

}  // namespace drover::model
