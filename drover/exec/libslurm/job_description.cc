#include "drover/exec/libslurm/job_description.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <limits>
#include <string_view>
#include <utility>

namespace drover::exec::libslurm {
namespace {

// The limits slurmd may propagate, by the names sbatch gives them (SLURM_RLIMIT_<name>).
struct Limit {
  const char* name;
  int resource;
};
constexpr std::array<Limit, 10> kLimits = {{{"CPU", RLIMIT_CPU},
                                            {"FSIZE", RLIMIT_FSIZE},
                                            {"DATA", RLIMIT_DATA},
                                            {"STACK", RLIMIT_STACK},
                                            {"CORE", RLIMIT_CORE},
                                            {"RSS", RLIMIT_RSS},
                                            {"NPROC", RLIMIT_NPROC},
                                            {"NOFILE", RLIMIT_NOFILE},
                                            {"MEMLOCK", RLIMIT_MEMLOCK},
                                            {"AS", RLIMIT_AS}}};

template <typename Number>
Result<Number> ParseNumber(std::string_view arg, std::string_view text) {
  Number value{};
  const auto parsed = std::from_chars(text.data(), text.data() + text.size(), value);
  if (parsed.ec != std::errc() || parsed.ptr != text.data() + text.size()) {
    return InvalidArgument(fmt::format("sbatch option '{}': '{}' is not a number", arg, text));
  }
  return value;
}

// What sbatch checks of a script before it submits it (its get_script_buffer).
Status CheckScript(std::string_view script) {
  if (script.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return InvalidArgument("batch script: it is empty");
  }
  if (!script.starts_with("#!")) {
    return InvalidArgument("batch script: its first line must start with #! and an interpreter");
  }
  if (script.find('\0') != std::string_view::npos) {
    return InvalidArgument("batch script: it contains a NUL byte");
  }
  if (script.find("\r\n") != std::string_view::npos) {
    return InvalidArgument("batch script: it has DOS line breaks (\\r\\n)");
  }
  return OkStatus();
}

}  // namespace

char* JobDescription::Keep(std::string value) {
  strings_.push_back(std::move(value));
  return strings_.back().data();
}

void JobDescription::SetEnvironment(const std::string& name, const std::string& value) {
  const std::string prefix = name + "=";
  for (char*& entry : environment_) {
    if (std::string_view(entry).starts_with(prefix)) {
      entry = Keep(prefix + value);
      return;
    }
  }
  environment_.push_back(Keep(prefix + value));
}

Result<JobDescription> JobDescription::FromSbatch(const slurm::Sbatch& sbatch,
                                                  const std::vector<std::string>& environment) {
  DROVER_RETURN_IF_ERROR(CheckScript(sbatch.script));
  JobDescription job;
  job_desc_msg_t& d = job.desc_;
  slurm_init_job_desc_msg(&d);
  d.user_id = getuid();
  d.group_id = getgid();
  d.name = job.Keep("sbatch");  // sbatch's name for a job without --job-name
  for (const std::string& entry : environment) job.environment_.push_back(job.Keep(entry));

  std::uint32_t tasks = 0;
  std::uint16_t cpus_per_task = 0;
  for (const std::string& arg : sbatch.args) {
    const std::size_t equals = arg.find('=');
    const std::string_view option = std::string_view(arg).substr(0, equals);
    const std::string value = equals == std::string::npos ? "" : arg.substr(equals + 1);
    if (arg == "--parsable") {
      // How sbatch prints the id; the helper answers with the id alone anyway.
    } else if (option == "--job-name") {
      d.name = job.Keep(value);
      job.SetEnvironment("SLURM_JOB_NAME", value);
    } else if (option == "--uid") {
      // Numeric, as RenderSbatch writes it; slurmctld accepts another user's job from root or
      // SlurmUser only.
      DROVER_ASSIGN_OR_RETURN(d.user_id, ParseNumber<std::uint32_t>(arg, value));
    } else if (option == "--gid") {
      DROVER_ASSIGN_OR_RETURN(d.group_id, ParseNumber<std::uint32_t>(arg, value));
    } else if (arg == "--requeue" || arg == "--no-requeue") {
      d.requeue = arg == "--requeue" ? 1 : 0;
    } else if (option == "--output") {
      d.std_out = job.Keep(value);
    } else if (arg == "--open-mode=append") {
      d.open_mode = OPEN_MODE_APPEND;
      job.SetEnvironment("SLURM_OPEN_MODE", "a");
    } else if (option == "--chdir") {
      d.work_dir = job.Keep(value);
    } else if (option == "--partition") {
      d.partition = job.Keep(value);
    } else if (option == "--qos") {
      d.qos = job.Keep(value);
    } else if (option == "--account") {
      d.account = job.Keep(value);
    } else if (option == "--array") {
      d.array_inx = job.Keep(value);
    } else if (option == "--nodes") {
      DROVER_ASSIGN_OR_RETURN(d.min_nodes, ParseNumber<std::uint32_t>(arg, value));
      d.max_nodes = d.min_nodes;
    } else if (option == "--ntasks") {
      DROVER_ASSIGN_OR_RETURN(tasks, ParseNumber<std::uint32_t>(arg, value));
      d.num_tasks = tasks;
      job.SetEnvironment("SLURM_NTASKS", value);
      job.SetEnvironment("SLURM_NPROCS", value);
    } else if (option == "--ntasks-per-node") {
      DROVER_ASSIGN_OR_RETURN(d.ntasks_per_node, ParseNumber<std::uint16_t>(arg, value));
      job.SetEnvironment("SLURM_NTASKS_PER_NODE", value);
    } else if (option == "--cpus-per-task") {
      DROVER_ASSIGN_OR_RETURN(cpus_per_task, ParseNumber<std::uint16_t>(arg, value));
      d.cpus_per_task = cpus_per_task;
      job.SetEnvironment("SLURM_CPUS_PER_TASK", value);
    } else if (option == "--mem" && value.ends_with('M')) {
      DROVER_ASSIGN_OR_RETURN(
          d.pn_min_memory,
          ParseNumber<std::uint64_t>(arg, std::string_view(value).substr(0, value.size() - 1)));
    } else if (option == "--gres") {
      d.tres_per_node = job.Keep("gres:" + value);
    } else if (option == "--time") {
      DROVER_ASSIGN_OR_RETURN(d.time_limit, ParseNumber<std::uint32_t>(arg, value));
    } else if (option == "--signal" && value.starts_with("B:TERM@")) {
      d.warn_signal = SIGTERM;
      d.warn_flags = KILL_JOB_BATCH;
      DROVER_ASSIGN_OR_RETURN(d.warn_time,
                              ParseNumber<std::uint16_t>(arg, std::string_view(value).substr(7)));
    } else {
      return InvalidArgument(fmt::format(
          "sbatch option '{}': drover-slurm-submit does not map it (exec/libslurm)", arg));
    }
  }
  if (tasks > 0 && cpus_per_task > 0) d.min_cpus = tasks * cpus_per_task;

  char directory[4096];
  if (getcwd(directory, sizeof directory) != nullptr) {
    job.SetEnvironment("SLURM_SUBMIT_DIR", directory);
  }
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) job.SetEnvironment("SLURM_SUBMIT_HOST", host);
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, 0);
  if (errno == 0) job.SetEnvironment("SLURM_PRIO_PROCESS", std::to_string(nice));
  const mode_t mask = umask(0);
  umask(mask);
  job.SetEnvironment("SLURM_UMASK",
                     fmt::format("0{:o}{:o}{:o}", (mask >> 6) & 7, (mask >> 3) & 7, mask & 7));
  for (const Limit& limit : kLimits) {
    rlimit value{};
    if (getrlimit(limit.resource, &value) != 0) continue;
    job.SetEnvironment(std::string("SLURM_RLIMIT_") + limit.name,
                       std::to_string(static_cast<unsigned long>(value.rlim_cur)));
  }
  d.environment = job.environment_.data();
  d.env_size = static_cast<std::uint32_t>(job.environment_.size());
  d.script = job.Keep(sbatch.script);
  return job;
}

}  // namespace drover::exec::libslurm
