#pragma once

// The environment contract of an attempt (docs/spec.md, "Environment"): what every worker of a
// job's current attempt is given, whichever executor runs it. The local path adds per worker
// DROVER_WORKER_RANK, DROVER_MASTER_ADDR and CUDA_VISIBLE_DEVICES (Controller); an external
// executor derives those from its engine's own ranks, hosts and GPU allocation.

#include <map>
#include <string>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/ids.h"
#include "drover/model/executor.h"
#include "drover/model/job.h"

namespace drover::control {

struct AttemptContract {
  // The spec's env, then DROVER_JOB_ID, DROVER_JOB_NAME, DROVER_ATTEMPT, DROVER_NUM_WORKERS,
  // DROVER_MASTER_PORT, DROVER_CHECKPOINT_DIR (with a checkpoint dir), DROVER_RESUME=1 (a
  // resumed attempt) and DROVER_OUTPUT_<NAME> (the attempt's staging location of each path
  // output, and of each value output staged under a root).
  std::map<std::string, std::string> env;
  // The checkpoint directory and the directories of those staging locations, without repeats.
  std::vector<std::string> make_dirs;
  // Of make_dirs, the value outputs' staging directories (under value_outputs_root, a folder of
  // the server's that the job's account may not write: ExternalLaunch::account_dirs).
  std::vector<std::string> account_dirs;
  // Without a value_outputs_root: the names of the value outputs, which each worker's node
  // stages itself (LaunchSpec::value_outputs).
  std::vector<std::string> value_outputs;
};

// The rendezvous port of (job, attempt), spread deterministically over [base, base + span).
int MasterPort(JobId job, int attempt, int base, int span);

// The contract of `job`'s current attempt (which must exist) with `num_workers` workers; value
// outputs stage under `value_outputs_root` (control::Options::value_outputs_root: an external
// executor's job), or, when it is empty, on each worker's node (an agent's worker).
AttemptContract ContractOf(const model::Job& job, int num_workers, int master_port,
                           const std::string& value_outputs_root);

// How an external executor knows `job`'s current attempt. Its restart counts the attempts
// right before it that ran under the same engine job: each continued it after a requeue.
model::ExternalRef ExternalRefOf(const model::Job& job);

// Whether the engine should requeue `spec`'s job itself after a preemption or a node failure:
// Drover's retry policy would start another attempt after either (retry.on has `preempted` or
// `node_lost`: the first model::kFreeNodeLosses node losses earn one whatever max_attempts).
bool RequeuesInEngine(const model::JobSpec& spec);

// The hand-off of `job`'s current attempt to an external executor configured as `executor`
// (a continuation when the attempt already names the engine job it continues).
model::ExternalLaunch MakeExternalLaunch(const model::Job& job,
                                         const model::ExecutorConfig& executor,
                                         AttemptContract contract, DurationMs kill_grace_ms);

}  // namespace drover::control
