#pragma once

// The workload contract (docs/spec.md): what a user asks Drover to run. A JobSpec is a
// validated value; drover/spec turns text into it.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "drover/common/clock.h"
#include "drover/model/names.h"
#include "drover/model/resources.h"

namespace drover::model {

// Constraints a placement must satisfy; a node that violates one is not a candidate.
struct Requirements {
  Resources per_worker;                              // cpu, memory and whole GPUs for each worker
  std::int64_t gpu_memory_bytes = 0;                 // minimum memory of each assigned GPU; 0 = any
  std::vector<std::string> gpu_models;               // acceptable models (any of); empty = any
  std::map<std::string, std::string> node_selector;  // labels a node must carry exactly
  std::vector<Toleration> tolerations;
  bool same_node = false;  // all workers on one node
  // Fractional GPU through a real sharing mechanism; at most one of the two, and only with
  // per_worker.gpus == 0. Each worker then gets a part of one GPU:
  //   gpu_share_millis (1..999): a time-sliced share of a GPU in `timeslice` mode, with
  //     gpu_memory_bytes of that GPU's memory set aside for it (0 = none accounted);
  //   mig_profile (e.g. "1g.18gb"): one MIG instance of that profile on a GPU in `mig` mode.
  std::int32_t gpu_share_millis = 0;
  std::string mig_profile;
  // Non-empty: every worker runs on nodes that carry the same value of this node label (one
  // domain of a topology level, e.g. "rack" or "nvlink-domain"). Nodes without it are excluded.
  std::string topology_level;

  friend bool operator==(const Requirements&, const Requirements&) = default;
};

// Milli-GPUs one worker of `requirements` holds, as the queue tree charges it
// (sched::ChargeAmounts) and as usage is weighed: 1000 per whole GPU, a time-sliced share's
// millis, a MIG instance's compute slices out of 7 (a profile that does not parse, which the spec
// validator refuses, as one slice); 0 for a CPU-only worker.
std::int64_t MilliGpusPerWorker(const Requirements& requirements);

// Raises the score of nodes carrying label key=value by `weight` (1..100).
struct LabelPreference {
  std::string key;
  std::string value;
  int weight = 1;

  friend bool operator==(const LabelPreference&, const LabelPreference&) = default;
};

// Soft wishes that rank feasible nodes but never exclude one; kept apart from Requirements so
// that adding a preference never changes what is feasible.
struct Preferences {
  std::vector<LabelPreference> node_labels;
  // Non-empty: place every worker within one domain of this label when one has room, else
  // anywhere feasible.
  std::string topology_level;

  friend bool operator==(const Preferences&, const Preferences&) = default;
};

// Why an attempt ended without success; RetryPolicy::on selects which of them are retried.
enum class FailureKind {
  kExit,       // a worker exited non-zero or was killed by a signal
  kNodeLost,   // a worker's node stopped answering
  kPreempted,  // stopped to make room for another job
  kTimeout,    // ran past spec.timeout
};
inline constexpr NameTable kFailureKindNames{std::array{
    NameEntry{FailureKind::kExit, "exit"},
    NameEntry{FailureKind::kNodeLost, "node_lost"},
    NameEntry{FailureKind::kPreempted, "preempted"},
    NameEntry{FailureKind::kTimeout, "timeout"},
}};
static_assert(kFailureKindNames.size() == static_cast<std::size_t>(FailureKind::kTimeout) + 1);
// kFailureKindNames.Name / Parse.
std::string_view FailureKindName(FailureKind kind);
std::optional<FailureKind> ParseFailureKind(std::string_view name);

// The node losses of a job that earn a new attempt without counting against
// RetryPolicy::max_attempts (docs/workflows.md, "Node loss"); later ones count like any failure.
// A lost node is seldom the job's fault, but a job that brings its node down must not loop.
inline constexpr int kFreeNodeLosses = 3;

struct RetryPolicy {
  int max_attempts = 1;       // total attempts including the first; 1 = no retry
  DurationMs backoff_ms = 0;  // wait before attempt n+1 is backoff_ms * 2^(n-1)
  // Failures that earn another attempt (while attempts remain). Preemption is always requeued
  // (it is not the job's fault) unless `on` is given without `preempted`: then a preempted
  // attempt ends the job as failed. A node loss is retried while `on` has `node_lost`, the
  // first kFreeNodeLosses of them without counting as attempts.
  std::vector<FailureKind> on = {FailureKind::kExit, FailureKind::kNodeLost,
                                 FailureKind::kPreempted, FailureKind::kTimeout};

  friend bool operator==(const RetryPolicy&, const RetryPolicy&) = default;
};

// Whether `retry` gives another attempt (while attempts remain) after a failure of `kind`.
bool RetriesOn(const RetryPolicy& retry, FailureKind kind);

// The upstream state a dependency waits for (docs/workflows.md). A dependency names a job of
// the same submission, or a pipeline stage (for a sweep: all of its trials, judged together).
enum class DependencyCondition {
  kSucceeded,  // the upstream succeeded (the default)
  kFailed,     // the upstream failed, timed out or was cancelled
  kDone,       // the upstream reached any terminal state, skipped included
  kSkipped,    // the upstream was skipped (its condition or `if` did not hold)
};
inline constexpr NameTable kDependencyConditionNames{std::array{
    NameEntry{DependencyCondition::kSucceeded, "succeeded"},
    NameEntry{DependencyCondition::kFailed, "failed"},
    NameEntry{DependencyCondition::kDone, "done"},
    NameEntry{DependencyCondition::kSkipped, "skipped"},
}};
static_assert(kDependencyConditionNames.size() ==
              static_cast<std::size_t>(DependencyCondition::kSkipped) + 1);
// kDependencyConditionNames.Name / Parse.
std::string_view DependencyConditionName(DependencyCondition condition);
std::optional<DependencyCondition> ParseDependencyCondition(std::string_view name);

struct Dependency {
  // A job of the same submission, a stage of the same pipeline, or `job:ID`, a job of an
  // earlier submission (model/dependency.h).
  std::string name;
  DependencyCondition condition = DependencyCondition::kSucceeded;

  friend bool operator==(const Dependency&, const Dependency&) = default;
};

// Something a job needs before it may queue; until every input exists the job is `waiting`
// (holding no quota). Exactly one of `path` and `from_stage` is set.
struct InputSpec {
  // A file or directory that must exist (absolute after parsing with a base dir); a dataset
  // marker file (e.g. data/_SUCCESS) is a path like any other.
  std::string path;
  // An output of an upstream stage: implies a dependency on that stage; satisfied once the
  // upstream published it.
  std::string from_stage;
  std::string from_output;

  friend bool operator==(const InputSpec&, const InputSpec&) = default;
};

// A declared output. An attempt writes it in a staging location of its own
// ($DROVER_OUTPUT_<NAME>); only an attempt that succeeds publishes it (atomic rename).
struct OutputSpec {
  std::string name;  // [a-z][a-z0-9_]{0,62}; the variable is DROVER_OUTPUT_ + upper-case name
  // Where the output is published (absolute after parsing with a base dir): a file or a
  // directory. Empty: a value output, whose first line of text (at most 4 KiB) the attempt
  // writes to $DROVER_OUTPUT_<NAME>; downstream stages read it as ${{ stages.S.outputs.NAME }}.
  std::string path;

  friend bool operator==(const OutputSpec&, const OutputSpec&) = default;
};

// A trial of a sweep stage: the stage's `matrix` expanded into one job per parameter set.
struct TrialSpec {
  int index = 0;                              // 1-based; 0: the job is not a trial
  int count = 0;                              // trials in the sweep
  std::map<std::string, std::string> params;  // this trial's parameters, as text
  int concurrency = 0;  // at most this many trials of the sweep released at once; 0 = no bound
  // The value output that ranks trials (the best trial stands for the sweep downstream);
  // empty = none.
  std::string objective;
  bool maximize = true;
  // Early stopping: once a trial that succeeded reports objective >= stop_at (maximize) or
  // <= stop_at (minimize), the sweep's unfinished trials are cancelled.
  std::optional<double> stop_at;

  friend bool operator==(const TrialSpec&, const TrialSpec&) = default;
};

// How a pipeline is admitted against its queue's quota.
enum class PipelineAdmission {
  kStagewise,  // each stage on its own (the default)
  // The pipeline's first stages are released only while its queue's quota can hold its widest
  // stage, and it is refused at submission if the quota never could.
  kWhole,
};
inline constexpr NameTable kPipelineAdmissionNames{std::array{
    NameEntry{PipelineAdmission::kStagewise, "stagewise"},
    NameEntry{PipelineAdmission::kWhole, "whole"},
}};
static_assert(kPipelineAdmissionNames.size() ==
              static_cast<std::size_t>(PipelineAdmission::kWhole) + 1);

struct JobSpec {
  std::string name;  // unique within one submission; [a-z0-9][a-z0-9._-]{0,62}
  std::string owner;
  std::string team;
  std::string queue = "default";
  std::string priority_class = "normal";  // see PriorityClassValue()
  std::string pipeline;  // groups jobs for per-pipeline concurrency limits; empty = none
  // Set on the jobs a `kind: Pipeline` expands into: the stage the job runs, its trial (for a
  // sweep stage), how the pipeline is admitted.
  std::string stage;
  TrialSpec trial;
  PipelineAdmission admission = PipelineAdmission::kStagewise;

  // Exactly one of command (argv, run without a shell) or script (run with /bin/sh -c).
  std::vector<std::string> command;
  std::string script;
  std::string working_dir;  // absolute after parsing with a base dir; empty: the worker directory
  // The container image the job runs in; used only by the Kubernetes executor (the queue's
  // `image` option when empty). The local executor runs the command on the node itself.
  std::string image;
  std::map<std::string, std::string> env;
  // Environment variable -> the name of a secret of the job's team (docs/security.md,
  // "Secrets"). The values are read only when a worker is launched and never enter the job, its
  // JSON or the decision log; a variable is never in both env and secret_env.
  std::map<std::string, std::string> secret_env;

  Requirements requirements;
  Preferences preferences;
  int workers = 1;  // gang size
  // The gang may start with as few as this many workers when `workers` do not fit (the engine
  // then places the most that fit). 0 (the default here) or `workers` (the parser's default):
  // all-or-nothing of `workers`.
  int min_workers = 0;

  std::vector<Dependency> depends_on;
  // Run only if this expression over upstream outputs holds, else the job is skipped
  // (docs/workflows.md, e.g. "${{ stages.train.outputs.accuracy }} >= 0.9"); empty = always.
  std::string run_if;
  std::vector<InputSpec> inputs;
  std::vector<OutputSpec> outputs;
  // Per attempt, from start; also the time limit backfill and start-time estimates rely on.
  std::optional<DurationMs> timeout;
  RetryPolicy retry;
  std::string checkpoint_dir;  // exported as DROVER_CHECKPOINT_DIR; empty = none
  // A retried attempt resumes from the last checkpoint (DROVER_RESUME=1, checkpoint_dir kept)
  // instead of starting over; requires checkpoint_dir. Preempted attempts always resume when
  // a checkpoint was reported.
  bool resume = false;
  bool interruptible = false;  // may be preempted (docs/scheduling.md)
  // Accept the job even when no node seen so far, or no queue limit, could ever hold it (for
  // clusters that will grow); it waits in ready and `explain` says it cannot fit. false: such a
  // submission is refused (control::Controller::Submit).
  bool hold_infeasible = false;
  // Set on the replicas of a service (model/service.h): the service's name and the generation
  // of its template this replica runs (a changed template is a new generation, rolled out one
  // replica at a time). Empty / 0 for every other job.
  std::string service;
  int service_generation = 0;

  friend bool operator==(const JobSpec&, const JobSpec&) = default;
};

// The built-in priority classes of contract v1, highest first: critical (1000), high (100),
// normal (0), low (-100). Returns nullopt for an unknown name.
std::optional<int> PriorityClassValue(std::string_view name);
// The names above, highest first.
const std::vector<std::string>& PriorityClassNames();

}  // namespace drover::model
