#pragma once

// How a Drover attempt becomes a Slurm batch job (docs/operations.md, "Executors: Slurm"). Pure:
// the executor runs `sbatch` with the arguments and feeds it the script on stdin.
//
// The mapping, for W workers of C CPUs, M bytes and G GPUs each:
//   --job-name=drover-<job>-<attempt> (the idempotency key); --uid and --gid of the job's
//   account when the executor submits for another user (SbatchOptions::account); --requeue when
//   Drover's retry policy would start another attempt after a preemption or a node failure (Slurm
//   then requeues the job itself, and Drover continues it as the next attempt), else --no-requeue;
//   --output into the attempt's directory (appended to by every run of the job), --chdir,
//   --partition, --qos, --account from the queue;
//   one task per worker: --ntasks=W, each task on its own node (--nodes=W --ntasks-per-node=1,
//   --gres=gpu[:TYPE]:G per node), or all on one node when same_node (--nodes=1, --gres for
//   W*G GPUs); --cpus-per-task=ceil(C), --mem per node;
//   --time from the timeout (whole minutes, rounded up: Slurm's backstop; the script itself
//   stops the workers at the exact timeout and leaves a marker so the end reads timed_out);
//   --signal=B:TERM@<grace> so the batch script hears of the time limit before SIGKILL.
// The script exports the environment contract, creates the directories, then runs the workers:
// several with `srun`, each with DROVER_WORKER_RANK=$SLURM_PROCID and DROVER_MASTER_ADDR the
// batch host; a lone worker in the batch step itself, in a process group of its own (no job
// step: half the work for Slurm), with rank 0. A stop (Slurm's signal, the timeout) reaches
// every process of the workers.
// Run k of a Slurm job submitted for attempt A (after k requeues, $SLURM_RESTART_COUNT) is
// attempt A+k: its contract is the file ContractFile(AttemptDir(job_dir, A+k)), which the
// executor writes before it releases the requeued job; without it the run exits 1.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "drover/common/result.h"
#include "drover/model/executor.h"
#include "drover/os/unix_account.h"

namespace drover::exec::slurm {

struct SbatchOptions {
  // <runs_dir>/<job>: the attempts' directories, which the Slurm nodes must see (one machine,
  // or shared storage).
  std::string job_dir;
  std::string server_url;  // exported as DROVER_SERVER (for `drover report`); may be empty
  // The `drover` binary the jobs may call (`drover report`, `drover checkpoint`): exported as
  // DROVER_BIN and its folder put first on PATH, unless the job's env sets them (as the local
  // runtime does, agent/local_runtime.h); empty: neither.
  std::string drover_bin;
  // The account the job runs as when the executor submits for another user (it runs as root:
  // os::AccountToRunAs): --uid and --gid, and the script exports the account's HOME, USER and
  // LOGNAME before the job's env (which may set them). None: the job is the submitting user's
  // and keeps the HOME it is given (JobEnvironment).
  std::optional<os::UnixAccount> account = std::nullopt;
};

struct Sbatch {
  std::vector<std::string> args;  // after "sbatch"
  std::string script;             // the batch script, for stdin
};

// <job_dir>/<attempt>: the attempt's batch output (slurm-<id>.out, when it submitted the
// Slurm job), its timeout marker and, for a continuation, its contract file.
std::string AttemptDir(const std::string& job_dir, int attempt);
// The file the script creates when it stopped the workers at the timeout.
std::string TimeoutMarker(const std::string& attempt_dir);
// The contract of an attempt that continues a requeued Slurm job.
std::string ContractFile(const std::string& attempt_dir);

// Job arrays. Attempts whose Slurm jobs differ only in name, output and directory (a file of
// like jobs, a sweep's trials) go to Slurm as the tasks of one `sbatch --array`: one submission
// for many jobs. Task i finds its attempt through the link ArrayTasksDir(dir, name)/i to the
// attempt's directory, and runs there the attempt's own batch script (RenderArrayTask, in
// TaskScript(attempt_dir)), with its output in the attempt's slurm-<SLURM_JOB_ID>.out as a lone
// job's. Task i's id is "<array job id>_<i>" (what scancel and scontrol take); before the sbatch
// the executor writes ArrayMarker(attempt_dir) (the array's name and the task's index), so that
// after a restart it finds an attempt whose sbatch returned unrecorded; every run of a task
// writes its own Slurm job id (SLURM_JOB_ID, which the jobcomp log records it under) into
// TaskJobIdFile(attempt_dir). The array's own output, ArrayOutput(dir, name), gets only what its
// script prints before it moves to the task's file (a task without a link).
std::string TaskScript(const std::string& attempt_dir);
std::string ArrayMarker(const std::string& attempt_dir);
std::string TaskJobIdFile(const std::string& attempt_dir);
std::string ArrayTasksDir(const std::string& dir, const std::string& name);
std::string ArrayOutput(const std::string& dir, const std::string& name);
// The name of the array whose first task is `job`'s attempt `attempt`: drover-array-JOB-ATTEMPT.
std::string ArrayName(JobId job, int attempt);
// Whether `name` has ArrayName's form (a marker's first word is trusted only then: it names
// files under the arrays' directory).
bool IsArrayName(std::string_view name);
// The array whose task links a directory entry named `file_name` holds (ArrayTasksDir's last
// component for a name in ArrayName's form); "" for any other entry.
std::string_view ArrayOfTasksDir(std::string_view file_name);

// What makes two attempts' jobs alike: RenderSbatch's arguments but --job-name, --output and
// --chdir, which a task of an array takes from its attempt.
std::string ArrayShape(const Sbatch& sbatch);

// TaskScript's content for the attempt in `attempt_dir` whose RenderSbatch is `sbatch`: its
// script with, after the "#!" line, a `cd` to the directory its --chdir names (a lone job's
// working directory).
std::string RenderArrayTask(const std::string& attempt_dir, const Sbatch& sbatch);

// One `sbatch --array=0-<tasks-1>` named `name` for attempts of the ArrayShape of `shape`.
// `dir` is the array's own directory, for its working directory and output (which only the
// dispatch's own errors reach), and holds ArrayTasksDir(dir, name).
Sbatch RenderArray(const std::string& name, const std::string& dir, const Sbatch& shape,
                   std::size_t tasks);

// The attempt's part of the batch script (shell): exports the environment contract (with
// DROVER_SERVER and DROVER_BIN as SbatchOptions says), names its timeout marker and creates its
// directories; it exits 1 when a directory cannot be created.
std::string RenderContract(const model::ExternalLaunch& launch, const SbatchOptions& options);

// What a Drover job's Slurm batch environment takes from the submitting side's (the server's,
// NAME=VALUE each), in order: PATH, LANG and HOME, as the local runtime gives its workers, and
// Slurm's own SLURM_* (SLURM_CONF, which srun in the job needs; Slurm passes those with any
// --export). Nothing else of the server's environment (a database password, a join token,
// SBATCH_* options that would change the submission) reaches a job: the job's own env and
// Drover's contract come with the batch script (RenderContract).
std::vector<std::string> JobEnvironment(const std::vector<std::string>& submitting);

// kInvalidArgument naming the field for what Slurm cannot express: GPU shares and MIG profiles
// (Slurm would need shard or MIG GRES configured; Drover does not assume them), more than one
// acceptable GPU model, and a container image.
Result<Sbatch> RenderSbatch(const model::ExternalLaunch& launch, const SbatchOptions& options);

}  // namespace drover::exec::slurm
