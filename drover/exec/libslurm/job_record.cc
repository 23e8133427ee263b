#include "drover/exec/libslurm/job_record.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <cctype>
#include <cstdint>
#include <iterator>
#include <string_view>

// Exported by libslurm as the slurm_-prefixed aliases of what slurm_sprint_job_info calls
// (src/common/slurm_protocol_defs.c and parse_time.c); slurm.h of 22.05 leaves them out.
extern "C" {
char* slurm_job_state_string(std::uint32_t state);
char* slurm_job_reason_string(enum job_state_reason reason);
void slurm_make_time_str(std::time_t* time, char* text, int size);
}

namespace drover::exec::libslurm {
namespace {

// printf's rendering of a null string, which scontrol's output shows for an unset name or node
// list.
std::string_view OrNull(const char* text) { return text != nullptr ? text : "(null)"; }

void AppendTime(std::string& out, std::string_view key, std::time_t time) {
  char text[256];
  slurm_make_time_str(&time, text, sizeof text);
  fmt::format_to(std::back_inserter(out), "{}={} ", key, text);
}

}  // namespace

void AppendJobRecordLine(const slurm_job_info_t& job, std::time_t now, std::string& out) {
  if (job.job_id == 0) return;
  auto to = std::back_inserter(out);
  fmt::format_to(to, "JobId={} ", job.job_id);
  if (job.array_job_id != 0) {
    if (job.array_task_str != nullptr) {
      fmt::format_to(to, "ArrayJobId={} ArrayTaskId={} ", job.array_job_id, job.array_task_str);
    } else {
      fmt::format_to(to, "ArrayJobId={} ArrayTaskId={} ", job.array_job_id, job.array_task_id);
    }
  }
  fmt::format_to(to, "JobName={} JobState={} Reason=", OrNull(job.name),
                 OrNull(slurm_job_state_string(job.job_state)));
  if (job.state_desc != nullptr) {
    // scontrol writes spaces in the reason's details as underscores, "for easier parsing".
    for (const char* c = job.state_desc; *c != '\0'; ++c) {
      out.push_back(std::isspace(static_cast<unsigned char>(*c)) ? '_' : *c);
    }
  } else {
    out.append(OrNull(slurm_job_reason_string(static_cast<job_state_reason>(job.state_reason))));
  }
  unsigned exit_status = 0;
  unsigned signal = 0;
  const int status = static_cast<int>(job.exit_code);
  if (WIFSIGNALED(status)) {
    signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    exit_status = WEXITSTATUS(status);
  }
  fmt::format_to(to, " Restarts={} ExitCode={}:{} ", job.restart_cnt, exit_status, signal);
  AppendTime(out, "SubmitTime", job.submit_time);
  AppendTime(out, "EligibleTime", job.eligible_time);
  AppendTime(out, "StartTime", job.start_time);
  if (job.time_limit == INFINITE && job.end_time > now) {
    out.append("EndTime=Unknown ");
  } else {
    AppendTime(out, "EndTime", job.end_time);
  }
  fmt::format_to(to, "NodeList={}\n", OrNull(job.nodes));
}

}  // namespace drover::exec::libslurm
