#include "drover/exec/slurm/sbatch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "drover/common/shell.h"

namespace drover::exec::slurm {
namespace {

constexpr std::int64_t kMiB = 1024 * 1024;

std::int64_t CeilDiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

bool PerAttemptArg(std::string_view arg) {
  return arg.starts_with("--job-name=") || arg.starts_with("--output=") ||
         arg.starts_with("--chdir=");
}

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// The script's "#!" line with its newline; empty without one.
std::string_view InterpreterLine(const Sbatch& sbatch) {
  const std::string_view script = sbatch.script;
  return script.starts_with("#!") ? script.substr(0, script.find('\n') + 1) : std::string_view();
}

}  // namespace

std::string AttemptDir(const std::string& job_dir, int attempt) {
  return fmt::format("{}/{}", job_dir, attempt);
}

std::string TimeoutMarker(const std::string& attempt_dir) { return attempt_dir + "/timed-out"; }

std::string ContractFile(const std::string& attempt_dir) { return attempt_dir + "/contract.sh"; }

std::string TaskScript(const std::string& attempt_dir) { return attempt_dir + "/batch.sh"; }

std::string ArrayMarker(const std::string& attempt_dir) { return attempt_dir + "/array"; }

std::string TaskJobIdFile(const std::string& attempt_dir) { return attempt_dir + "/slurm-job-id"; }

std::string ArrayShape(const Sbatch& sbatch) {
  std::string shape(InterpreterLine(sbatch));  // tasks run under their array's interpreter
  for (const std::string& arg : sbatch.args) {
    if (!PerAttemptArg(arg)) shape += arg + '\n';
  }
  return shape;
}

std::string ArrayTasksDir(const std::string& dir, const std::string& name) {
  return fmt::format("{}/{}.tasks", dir, name);  // ArrayOfTasksDir reads it back
}

std::string ArrayOutput(const std::string& dir, const std::string& name) {
  return fmt::format("{}/{}.out", dir, name);
}

std::string ArrayName(JobId job, int attempt) {
  return fmt::format("drover-array-{}-{}", job.value(), attempt);
}

bool IsArrayName(std::string_view name) {
  constexpr std::string_view kPrefix = "drover-array-";
  if (!name.starts_with(kPrefix)) return false;
  name.remove_prefix(kPrefix.size());
  const std::size_t dash = name.find('-');
  auto digits = [](std::string_view part) {
    return !part.empty() && part.find_first_not_of("0123456789") == std::string_view::npos;
  };
  return dash != std::string_view::npos && digits(name.substr(0, dash)) &&
         digits(name.substr(dash + 1));
}

std::string_view ArrayOfTasksDir(std::string_view file_name) {
  constexpr std::string_view kSuffix = ".tasks";  // ArrayTasksDir's
  if (!file_name.ends_with(kSuffix)) return {};
  file_name.remove_suffix(kSuffix.size());
  return IsArrayName(file_name) ? file_name : std::string_view();
}

std::string RenderArrayTask(const std::string& attempt_dir, const Sbatch& sbatch) {
  std::string work = attempt_dir;
  for (const std::string& arg : sbatch.args) {
    if (arg.starts_with("--chdir=")) work = arg.substr(8);
  }
  // After the script's "#!" line, which stays its first.
  const std::string_view interpreter = InterpreterLine(sbatch);
  return fmt::format("{}cd {} || exit 1\n{}", interpreter, ShellQuote(work),
                     std::string_view(sbatch.script).substr(interpreter.size()));
}

Sbatch RenderArray(const std::string& name, const std::string& dir, const Sbatch& shape,
                   std::size_t tasks) {
  Sbatch out;
  out.args.push_back("--job-name=" + name);
  out.args.push_back(fmt::format("--array=0-{}", tasks == 0 ? 0 : tasks - 1));
  out.args.push_back("--output=" + ArrayOutput(dir, name));
  out.args.push_back("--chdir=" + dir);
  for (const std::string& arg : shape.args) {
    if (!PerAttemptArg(arg)) out.args.push_back(arg);
  }
  // A link per task, not a table in the script: bash would parse a `case` of every row in each
  // task (2.7 ms a task at 1,000 on the 2-core VM, docs/benchmarks.md). The tasks' scripts are
  // sourced, so the array runs under their interpreter (ArrayShape keeps them apart by it).
  out.script = fmt::format(
      "{4}"
      "# Drover job array {0}: task i runs the attempt whose directory {1}/i links to, from the\n"
      "# batch script that Drover wrote there before it submitted the array.\n"
      "dir={1}/$SLURM_ARRAY_TASK_ID\n"
      "[ -d \"$dir\" ] || {{ echo \"drover: array task $SLURM_ARRAY_TASK_ID has no attempt\" >&2; "
      "exit 1; }}\n"
      // Read only once the task has ended (SlurmExecutor::RunEnd), so written in place: no
      // rename, no process.
      "echo \"$SLURM_JOB_ID\" > \"{2}\"\n"
      "exec >>\"$dir/slurm-$SLURM_JOB_ID.out\" 2>&1\n"  // where a lone job's --output goes
      // The attempt's script is sourced, not run by a second shell; it enters its directory.
      ". \"{3}\"\n",
      name, ShellQuote(ArrayTasksDir(dir, name)), TaskJobIdFile("$dir"), TaskScript("$dir"),
      InterpreterLine(shape));
  return out;
}

std::string RenderContract(const model::ExternalLaunch& launch, const SbatchOptions& options) {
  std::string s;
  for (const auto& [name, value] : launch.env) {
    s += fmt::format("export {}={}\n", name, ShellQuote(value));
  }
  if (!options.server_url.empty()) {
    s += fmt::format("export DROVER_SERVER={}\n", ShellQuote(options.server_url));
  }
  if (!options.drover_bin.empty() && !launch.env.contains("DROVER_BIN")) {
    s += fmt::format("export DROVER_BIN={}\n", ShellQuote(options.drover_bin));
  }
  if (!options.drover_bin.empty() && !launch.env.contains("PATH")) {
    s += fmt::format("export PATH={}:\"$PATH\"\n",
                     ShellQuote(std::filesystem::path(options.drover_bin).parent_path().string()));
  }
  s += fmt::format("timeout_marker={}\n",
                   ShellQuote(TimeoutMarker(AttemptDir(options.job_dir, launch.ref.attempt))));
  for (const std::string& dir : launch.make_dirs) {
    s += "mkdir -p " + ShellQuote(dir) + " || exit 1\n";
  }
  return s;
}

std::vector<std::string> JobEnvironment(const std::vector<std::string>& submitting) {
  std::vector<std::string> kept;
  for (const std::string& entry : submitting) {
    const std::string_view name = std::string_view(entry).substr(0, entry.find('='));
    if (name == "PATH" || name == "LANG" || name == "HOME" || name.starts_with("SLURM_")) {
      kept.push_back(entry);
    }
  }
  return kept;
}

Result<Sbatch> RenderSbatch(const model::ExternalLaunch& launch, const SbatchOptions& options) {
  const model::JobSpec& spec = launch.spec;
  const model::Requirements& req = spec.requirements;
  if (req.gpu_share_millis > 0) {
    return InvalidArgument(
        "requirements.gpu_share: GPU shares cannot run under the slurm executor (Slurm needs "
        "shard GRES for that, which Drover does not assume)");
  }
  if (!req.mig_profile.empty()) {
    return InvalidArgument(
        "requirements.mig: MIG profiles cannot run under the slurm executor (Slurm's MIG GRES "
        "are site-specific)");
  }
  if (!spec.secret_env.empty()) {
    // The server refuses these at submit; a queue moved to Slurm afterwards lands here.
    return InvalidArgument(
        "secret_env: secrets cannot run under the slurm executor (slurmctld keeps a batch job's "
        "environment and script in its state); use a Kubernetes or local queue");
  }
  if (req.gpu_models.size() > 1) {
    return InvalidArgument(
        "requirements.gpu_model: the slurm executor takes at most one GPU model (one gres type)");
  }
  if (!spec.image.empty()) {
    return InvalidArgument("image: the slurm executor runs commands, not container images");
  }
  const int workers = std::max(spec.workers, 1);
  const bool same_node = req.same_node || workers == 1;
  const int gpus_per_worker = req.per_worker.gpus;
  const int tasks_per_node = same_node ? workers : 1;

  Sbatch out;
  std::vector<std::string>& a = out.args;
  a.push_back("--parsable");
  a.push_back("--job-name=" + launch.ref.name);
  if (options.account) {
    a.push_back(fmt::format("--uid={}", options.account->uid));
    a.push_back(fmt::format("--gid={}", options.account->gid));
  }
  const std::string attempt_dir = AttemptDir(options.job_dir, launch.ref.attempt);
  a.push_back(launch.requeue ? "--requeue" : "--no-requeue");
  a.push_back(fmt::format("--output={}/slurm-%j.out", attempt_dir));
  a.push_back("--open-mode=append");  // a requeued run adds to the earlier runs' output
  a.push_back("--chdir=" + (spec.working_dir.empty() ? attempt_dir : spec.working_dir));
  const model::SlurmQueueOptions& queue = launch.executor.slurm;
  if (!queue.partition.empty()) a.push_back("--partition=" + queue.partition);
  if (!queue.qos.empty()) a.push_back("--qos=" + queue.qos);
  if (!queue.account.empty()) a.push_back("--account=" + queue.account);
  a.push_back(fmt::format("--nodes={}", same_node ? 1 : workers));
  a.push_back(fmt::format("--ntasks={}", workers));
  if (!same_node) a.push_back("--ntasks-per-node=1");
  a.push_back(fmt::format("--cpus-per-task={}",
                          std::max<std::int64_t>(CeilDiv(req.per_worker.cpu_millis, 1000), 1)));
  if (req.per_worker.memory_bytes > 0) {
    a.push_back(
        fmt::format("--mem={}M", CeilDiv(req.per_worker.memory_bytes, kMiB) * tasks_per_node));
  }
  if (gpus_per_worker > 0) {
    const std::string type = req.gpu_models.empty() ? "" : Lower(req.gpu_models[0]) + ":";
    a.push_back(fmt::format("--gres=gpu:{}{}", type, gpus_per_worker * tasks_per_node));
  }
  const std::int64_t grace_s = std::max<std::int64_t>(CeilDiv(launch.kill_grace_ms, 1000), 1);
  if (spec.timeout) {
    // Slurm's limit is the backstop, a grace period after the script's own exact timeout.
    a.push_back(
        fmt::format("--time={}", CeilDiv(*spec.timeout + launch.kill_grace_ms, 60'000) + 1));
    a.push_back(fmt::format("--signal=B:TERM@{}", std::min<std::int64_t>(grace_s, 65'535)));
  }

  // A lone worker without a timeout to keep replaces the batch shell (below), which then only
  // exports and execs: POSIX sh does that, and on Debian's dash starts in about 0.5 ms less
  // than bash, each job's CPU that the cluster's other jobs wait for (issue 24). Job control
  // (`set -m`, the timeout's stop) and srun's worker wrapper need bash.
  const bool lone_exec = workers == 1 && !spec.timeout;
  std::string& s = out.script;
  // Run k's contract is ContractFile(AttemptDir(job_dir, attempt + k)), spelled out in shell
  // (BatchScriptTest runs the script against the files these functions name). The host's name
  // is the kernel's, read by a builtin: not $HOSTNAME, which dash does not set and bash takes
  // from the environment when it is there, which the job inherits from the submitting side.
  s = fmt::format(
      "{4}"
      "# Drover attempt {0} (docs/operations.md). Slurm's run k of this job (after k requeues)\n"
      "# is attempt {1}+k, whose contract Drover writes before it lets the run start.\n"
      "{5}"
      "restart=${{SLURM_RESTART_COUNT:-0}}\n"
      "if [ \"$restart\" = 0 ]; then\n"
      "{2}"
      "else\n"
      "contract={3}/$(({1} + restart))/contract.sh\n"
      "[ -r \"$contract\" ] || {{ echo \"drover: no $contract: Slurm restarted the job before "
      "Drover continued it\" >&2; exit 1; }}\n"
      ". \"$contract\"\n"
      "fi\n"
      "read -r host 2>/dev/null </proc/sys/kernel/hostname || host=$(uname -n)\n"
      "echo \"drover: attempt $DROVER_ATTEMPT (Slurm run $restart) on $host\"\n",
      launch.ref.name, launch.ref.attempt, RenderContract(launch, options),
      ShellQuote(options.job_dir), lone_exec ? "#!/bin/sh\n" : "#!/bin/bash\n",
      options.account
          ? fmt::format("export HOME={0} USER={1} LOGNAME={1}\n", ShellQuote(options.account->home),
                        ShellQuote(options.account->name))
          : std::string());
  std::string command;
  if (!spec.command.empty()) {
    for (const std::string& word : spec.command) command += " " + ShellQuote(word);
  } else {
    command = " /bin/sh -c " + ShellQuote(spec.script);
  }
  // A lone worker runs in the batch step itself: a job step (srun) costs Slurm a second
  // slurmstepd and its RPCs, and doubled what a one-worker job cost this cluster
  // (docs/benchmarks.md). Every process the script starts is CPU the cluster's other jobs wait
  // for (issue 24), so without a timeout to keep, the worker replaces the batch shell: no fork,
  // nothing to wait for, and scancel's signals reach it and its children directly (slurmd
  // signals every process of the job). With a timeout, the shell stays to stop it: `set -m`
  // (job control) starts the worker as a process group of its own, so that the stop reaches its
  // children as srun's would, without a setsid and a second shell. Several workers are tasks of
  // one step, each learning its rank from Slurm; the batch host (where srun runs) is rank 0's
  // address.
  if (lone_exec) {
    s += "export DROVER_WORKER_RANK=0 DROVER_MASTER_ADDR=$host\n";
    s += "exec" + command + "\n";
    return out;
  }
  std::string stop_target = "$step";
  if (workers == 1) {
    s += "export DROVER_WORKER_RANK=0 DROVER_MASTER_ADDR=$host\n";
    s += fmt::format("set -m\n{} &\nset +m\n", command.substr(1));
    stop_target = "-- -$step";
  } else {
    // The batch host's name, which each worker replaces with srun's address where srun gives it.
    s += "export DROVER_MASTER_ADDR=$host\n";
    const std::string worker =
        "export DROVER_WORKER_RANK=$SLURM_PROCID "
        "DROVER_MASTER_ADDR=${SLURM_LAUNCH_NODE_IPADDR:-$DROVER_MASTER_ADDR}; exec \"$@\"";
    s += fmt::format("srun --kill-on-bad-exit=1 --export=ALL /bin/bash -c {} drover-worker{} &\n",
                     ShellQuote(worker), command);
  }
  s += "step=$!\n";
  s += fmt::format("trap 'kill -TERM {} 2>/dev/null' TERM\n", stop_target);
  // The timeout's watchdog: a subshell that sleeps (a child it waits for, so that a TERM ends the
  // sleep with it: a killed subshell alone would leave its `sleep` running until the timeout,
  // outside the job for a Slurm that tracks processes by parentage), then stops the worker and,
  // after the grace period, kills it. Ended, and waited for, once the worker exits.
  if (spec.timeout) {
    s += fmt::format(
        "( trap 'kill $sleeper 2>/dev/null; exit 0' TERM\n"
        "  sleep {0:.3f} & sleeper=$!; wait $sleeper || exit 0\n"
        "  touch \"$timeout_marker\"; kill -TERM {2}\n"
        "  sleep {1} & sleeper=$!; wait $sleeper || exit 0\n"
        "  kill -KILL {2} ) 2>/dev/null &\n",
        static_cast<double>(*spec.timeout) / 1000.0, grace_s, stop_target);
    s += "watchdog=$!\n";
  }
  // wait returns early when the TERM trap fires: wait again for the step's own status.
  s += "wait $step; status=$?\n";
  s += "while kill -0 $step 2>/dev/null; do wait $step; status=$?; done\n";
  if (spec.timeout) s += "kill $watchdog 2>/dev/null; wait $watchdog\n";
  s += "exit $status\n";
  return out;
}

}  // namespace drover::exec::slurm
