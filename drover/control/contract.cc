#include "drover/control/contract.h"

#include <algorithm>

#include "drover/model/outputs.h"

namespace drover::control {

int MasterPort(JobId job, int attempt, int base, int span) {
  return base + static_cast<int>((job.value() * 31 + attempt) % span);
}

AttemptContract ContractOf(const model::Job& job, int num_workers, int master_port,
                           const std::string& value_outputs_root) {
  const model::Attempt& attempt = *job.current_attempt();
  AttemptContract contract;
  std::map<std::string, std::string>& env = contract.env;
  env = job.spec.env;
  env["DROVER_JOB_ID"] = std::to_string(job.id.value());
  env["DROVER_JOB_NAME"] = job.spec.name;
  env["DROVER_ATTEMPT"] = std::to_string(attempt.number);
  env["DROVER_NUM_WORKERS"] = std::to_string(num_workers);
  env["DROVER_MASTER_PORT"] = std::to_string(master_port);
  if (!job.spec.checkpoint_dir.empty()) {
    env["DROVER_CHECKPOINT_DIR"] = job.spec.checkpoint_dir;
    contract.make_dirs.push_back(job.spec.checkpoint_dir);
  }
  // (A moved std::string: assigning the literal trips GCC 12's false -Wrestrict here.)
  if (attempt.resumed) env["DROVER_RESUME"] = std::string(1, '1');
  for (const model::StagedOutput& output :
       model::StagedOutputs(job.spec, job.id, attempt.number, value_outputs_root)) {
    if (output.destination.empty() && value_outputs_root.empty()) {
      contract.value_outputs.push_back(output.name);
      continue;
    }
    env[model::OutputVariable(output.name)] = output.staging;
    const std::string dir = model::DirectoryOf(output.staging);
    if (std::find(contract.make_dirs.begin(), contract.make_dirs.end(), dir) ==
        contract.make_dirs.end()) {
      contract.make_dirs.push_back(dir);
      if (output.destination.empty()) contract.account_dirs.push_back(dir);
    }
  }
  return contract;
}

model::ExternalRef ExternalRefOf(const model::Job& job) {
  const model::Attempt& attempt = *job.current_attempt();
  model::ExternalRef ref{
      job.id, attempt.number,
      model::ParseExecutorKind(attempt.executor).value_or(model::ExecutorKind::kSlurm),
      model::ExternalName(job.id, attempt.number), attempt.external_id};
  if (attempt.external_id.empty()) return ref;
  for (auto earlier = job.attempts.rbegin() + 1;
       earlier != job.attempts.rend() && earlier->external_id == attempt.external_id; ++earlier) {
    ++ref.restart;
  }
  return ref;
}

bool RequeuesInEngine(const model::JobSpec& spec) {
  return model::RetriesOn(spec.retry, model::FailureKind::kPreempted) ||
         model::RetriesOn(spec.retry, model::FailureKind::kNodeLost);
}

model::ExternalLaunch MakeExternalLaunch(const model::Job& job,
                                         const model::ExecutorConfig& executor,
                                         AttemptContract contract, DurationMs kill_grace_ms) {
  model::ExternalLaunch launch;
  launch.ref = ExternalRefOf(job);
  launch.executor = executor;
  launch.spec = job.spec;
  launch.env = std::move(contract.env);
  launch.make_dirs = std::move(contract.make_dirs);
  launch.account_dirs = std::move(contract.account_dirs);
  launch.kill_grace_ms = kill_grace_ms;
  launch.requeue = RequeuesInEngine(job.spec);
  launch.run_as = job.run_as;
  launch.may_run_as_root = job.may_run_as_root;
  return launch;
}

}  // namespace drover::control
