#pragma once

// How a Drover attempt becomes a Slurm batch job (docs/operations.md, "Executors: Slurm"). Pure:
// the executor runs `sbatch` with the arguments and feeds it the script on stdin.
//
// The mapping, for W workers of C CPUs, M bytes and G GPUs each:
//   --job-name=drover-<job>-<attempt> (the idempotency key), --no-requeue (Drover decides about
//   the next attempt: one Slurm job per attempt keeps DROVER_ATTEMPT, the staging paths and
//   DROVER_RESUME exact), --output into the attempt's directory, --chdir, --partition, --qos,
//   --account from the queue;
//   one task per worker: --ntasks=W, each task on its own node (--nodes=W --ntasks-per-node=1,
//   --gres=gpu[:TYPE]:G per node), or all on one node when same_node (--nodes=1, --gres for
//   W*G GPUs); --cpus-per-task=ceil(C), --mem per node;
//   --time from the timeout (whole minutes, rounded up: Slurm's backstop; the script itself
//   stops the workers at the exact timeout and leaves a marker so the end reads timed_out);
//   --signal=B:TERM@<grace> so the batch script hears of the time limit before SIGKILL.
// The script exports the environment contract, creates the directories, then runs the workers
// with `srun`, each with DROVER_WORKER_RANK=$SLURM_PROCID and DROVER_MASTER_ADDR the batch host.

#include <string>
#include <vector>

#include "drover/common/result.h"
#include "drover/model/executor.h"

namespace drover::exec::slurm {

struct SbatchOptions {
  std::string attempt_dir;  // the batch output (slurm-<id>.out) and the timeout marker go here
  std::string server_url;   // exported as DROVER_SERVER (for `drover report`); may be empty
};

struct Sbatch {
  std::vector<std::string> args;  // after "sbatch"
  std::string script;             // the batch script, for stdin
};

// The file the script creates when it stopped the workers at the timeout.
std::string TimeoutMarker(const std::string& attempt_dir);

// kInvalidArgument naming the field for what Slurm cannot express: GPU shares and MIG profiles
// (Slurm would need shard or MIG GRES configured; Drover does not assume them), more than one
// acceptable GPU model, and a container image.
Result<Sbatch> RenderSbatch(const model::ExternalLaunch& launch, const SbatchOptions& options);

}  // namespace drover::exec::slurm
