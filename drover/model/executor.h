#pragma once

// Executors (docs/operations.md, "Executors"): where a queue's jobs run. Under the local
// executor Drover places every worker on its own nodes and the node runtimes start them. Under
// an external executor (Slurm, Kubernetes) Drover keeps admission (queues, quotas, limits,
// pipelines) and hands each admitted attempt to the engine, which places and runs it; the
// engine's states, pending reasons and times come back as ExecutorEvents. These values cross
// from the controller to the drivers in drover/exec.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/ids.h"
#include "drover/model/job.h"
#include "drover/model/job_spec.h"
#include "drover/model/names.h"

namespace drover::model {

enum class ExecutorKind { kLocal, kSlurm, kKubernetes };
inline constexpr NameTable kExecutorKindNames{std::array{
    NameEntry{ExecutorKind::kLocal, "local"},
    NameEntry{ExecutorKind::kSlurm, "slurm"},
    NameEntry{ExecutorKind::kKubernetes, "kubernetes"},
}};
static_assert(kExecutorKindNames.size() == static_cast<std::size_t>(ExecutorKind::kKubernetes) + 1);
// kExecutorKindNames.Name / Parse.
std::string_view ExecutorKindName(ExecutorKind kind);
std::optional<ExecutorKind> ParseExecutorKind(std::string_view name);

// Where a Slurm queue's jobs go (sbatch options); empty fields are left to Slurm's defaults.
struct SlurmQueueOptions {
  std::string partition;  // --partition
  std::string qos;        // --qos
  std::string account;    // --account

  friend bool operator==(const SlurmQueueOptions&, const SlurmQueueOptions&) = default;
};

// How a Kubernetes queue's jobs are rendered (docs/operations.md).
struct KubernetesQueueOptions {
  std::string namespace_name = "default";
  std::string scheduler_name;  // pod spec schedulerName (KAI, Volcano...); empty: the default
  std::string kueue_queue;     // the kueue.x-k8s.io/queue-name label; empty: none
  // PodGroup for gangs: "" (none), "volcano", "kai" or "coscheduling".
  std::string gang_scheduler;
  // The gang scheduler's version ("v0.15.0", "0.14.1"); empty: the newest Drover knows. Gangs
  // are rendered by what that version reads, and refused where it cannot gang a batch/v1 Job.
  std::string gang_scheduler_version;
  // GPUs (and MIG instances) as a DRA ResourceClaim of `device_class` (`mig_device_class`)
  // instead of nvidia.com/gpu (nvidia.com/mig-*) limits; `dra_driver` is the driver whose
  // attributes (productName, profile) and capacity (memory) the selectors read.
  bool dra = false;
  std::string device_class = "gpu.nvidia.com";
  std::string mig_device_class = "mig.nvidia.com";
  std::string dra_driver = "gpu.nvidia.com";
  std::string image;  // for jobs that name none
  std::string service_account;

  friend bool operator==(const KubernetesQueueOptions&, const KubernetesQueueOptions&) = default;
};

struct ExecutorConfig {
  ExecutorKind kind = ExecutorKind::kLocal;
  SlurmQueueOptions slurm;            // kind == kSlurm
  KubernetesQueueOptions kubernetes;  // kind == kKubernetes

  bool external() const { return kind != ExecutorKind::kLocal; }
  friend bool operator==(const ExecutorConfig&, const ExecutorConfig&) = default;
};

// One attempt of a job as an external executor knows it.
struct ExternalRef {
  JobId job;
  int attempt = 0;
  ExecutorKind executor = ExecutorKind::kSlurm;
  // The engine-side name, "drover-<job>-<attempt>": with the submission it is the idempotency
  // key (an attempt found under its name is not submitted again).
  std::string name;
  std::string external_id;  // the engine's id (Slurm job id, Kubernetes Job name); "" before
  // Which run of the engine's job this attempt is: 0 for the attempt that submitted it, k for
  // the attempt that continues it after the engine requeued it k times (Slurm's Restarts).
  int restart = 0;

  friend bool operator==(const ExternalRef&, const ExternalRef&) = default;
};

// "drover-<job>-<attempt>".
std::string ExternalName(JobId job, int attempt);

// Everything an external executor needs to run one attempt: the contract with rendered
// templates, the queue's executor options and the environment every worker gets. With
// ref.restart > 0 the attempt continues the engine's job ref.external_id, which the engine
// requeued (ExecutorEvent::requeued): the executor gives that run this contract and lets it go,
// it submits nothing.
struct ExternalLaunch {
  ExternalRef ref;
  ExecutorConfig executor;
  JobSpec spec;
  // The environment contract shared by all workers (DROVER_JOB_ID, DROVER_JOB_NAME,
  // DROVER_ATTEMPT, DROVER_NUM_WORKERS, DROVER_MASTER_PORT, DROVER_CHECKPOINT_DIR,
  // DROVER_RESUME, DROVER_OUTPUT_*, and the spec's env). Per worker, the executor adds
  // DROVER_WORKER_RANK and DROVER_MASTER_ADDR from the engine's own ranks and hosts; the
  // engine's allocation sets CUDA_VISIBLE_DEVICES.
  std::map<std::string, std::string> env;
  // Directories to create before the job starts (checkpoint dir, output staging).
  std::vector<std::string> make_dirs;
  // Of make_dirs, those an executor that submits as another account creates as itself and gives
  // to the account first (the value outputs' staging folders, in the server's data folder).
  std::vector<std::string> account_dirs;
  DurationMs kill_grace_ms = 10'000;
  // Ask the engine to requeue the job itself after a preemption or a node failure (Slurm's
  // --requeue): set when Drover's retry policy would start another attempt after either.
  bool requeue = false;
  // The Unix account the job runs as (Job::run_as) and whether it may be root
  // (Job::may_run_as_root), as a LaunchSpec carries them to an agent. A Slurm executor running
  // as root submits the job as that account (docs/security.md); Kubernetes does not use them.
  std::string run_as;
  bool may_run_as_root = false;

  friend bool operator==(const ExternalLaunch&, const ExternalLaunch&) = default;
};

// What an external executor observed of an attempt.
struct ExecutorEvent {
  enum class Kind {
    kSubmitted,  // the engine accepted it: ref.external_id is set; `at` = its submit time
    kPending,    // still queued in the engine, for `reason`; `eligible_at` when known
    kStarted,    // it runs on `nodes` since `at`
    // It ended: exit. An engine that requeues a job on its own (Slurm after a preemption or a
    // node failure) reports the run that ended as kExited (preempted, node_lost) with
    // `requeued`, and holds the requeued job until Drover decides: the next attempt continues
    // it (ExternalLaunch with ref.restart > 0), or Drover cancels it.
    kExited,
  };
  ExternalRef ref;
  Kind kind = Kind::kSubmitted;
  TimeMs at = 0;
  std::string reason;  // kPending: e.g. "Resources: waiting for resources to become available"
  TimeMs eligible_at = 0;
  std::vector<std::string> nodes;
  ExitStatus exit;        // kExited
  bool requeued = false;  // kExited: the engine holds the job, requeued under ref.external_id

  friend bool operator==(const ExecutorEvent&, const ExecutorEvent&) = default;
};

}  // namespace drover::model
