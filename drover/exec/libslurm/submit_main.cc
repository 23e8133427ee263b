#include "drover/exec/libslurm/submit_main.h"

#include <fmt/format.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "drover/exec/libslurm/job_description.h"
#include "drover/exec/libslurm/job_record.h"
#include "drover/exec/slurm/command.h"
#include "drover/exec/slurm/sbatch.h"
#include "drover/exec/slurm/submit_helper.h"
#include "drover/os/helper_process.h"

namespace drover::exec::libslurm {
namespace {

constexpr int kChannelFd = os::kHelperChannelFd;
constexpr int kMaxRetries = 15;  // sbatch's MAX_RETRIES

// Why libslurm could not start, or "" when its configuration file is readable or comes from
// slurmctld itself (a configless cluster named by SLURM_CONF_SERVER).
std::string ConfigurationProblem() {
  const char* server = std::getenv("SLURM_CONF_SERVER");
  if (server != nullptr && *server != '\0') return "";
  const char* configured = std::getenv("SLURM_CONF");
  const std::string path =
      configured != nullptr && *configured != '\0' ? configured : "/etc/slurm/slurm.conf";
  if (access(path.c_str(), R_OK) == 0) return "";
  return fmt::format("cannot read the Slurm configuration {}: {}", path, std::strerror(errno));
}

// Slurm's answers that sbatch waits out and retries.
bool Transient(int error) {
  return error == ESLURM_ERROR_ON_DESC_TO_RECORD_COPY || error == ESLURM_NODES_BUSY ||
         error == EAGAIN;
}

// Slurm's jobs, one line each (job_record.h). `if_changed`: slurm::kListingUnchanged when no job
// changed since the last listing, which passes slurmctld that listing's time: slurmctld then
// answers SLURM_NO_CHANGE_IN_DATA without packing a record (as `scontrol`'s and `squeue
// --iterate`'s own repeated listings ask). slurmctld packs 1,000 records in 2.3 ms (held jobs) to
// 29 ms (running ones); docs/benchmarks.md, "Listings only when a job changed".
class Lister {
 public:
  std::string Get(bool if_changed) {
    job_info_msg_t* jobs = nullptr;
    if (slurm_load_jobs(if_changed ? last_update_ : 0, &jobs, 0) != SLURM_SUCCESS) {
      const int error = slurm_get_errno();
      if (error == SLURM_NO_CHANGE_IN_DATA && if_changed && last_update_ != 0) {
        return std::string(slurm::kListingUnchanged);
      }
      return fmt::format("error slurm_load_jobs error: {}", slurm_strerror(error));
    }
    std::string reply = "ok ";
    reply.reserve(reply.size() + jobs->record_count * kLineBytes);
    const std::time_t now = std::time(nullptr);
    for (std::uint32_t i = 0; i < jobs->record_count; ++i) {
      AppendJobRecordLine(jobs->job_array[i], now, reply);
    }
    last_update_ = jobs->last_update;
    slurm_free_job_info_msg(jobs);
    return reply;
  }

 private:
  // A record's line, about (194 bytes a record for 1,000 held jobs; a longer one grows it).
  static constexpr std::size_t kLineBytes = 200;
  time_t last_update_ = 0;  // slurmctld's time of the last listing sent; 0: none yet
};

std::string Serve(std::string_view payload, const std::vector<std::string>& environment,
                  Lister& listing) {
  if (payload == slurm::kListJobsRequest) return listing.Get(false);
  if (payload == slurm::kListChangedJobsRequest) return listing.Get(true);
  Result<slurm::Sbatch> sbatch = slurm::DecodeSubmitRequest(payload);
  if (!sbatch) return "error " + sbatch.error().message;
  Result<JobDescription> job = JobDescription::FromSbatch(*sbatch, environment);
  if (!job) return "error " + job.error().message;
  submit_response_msg_t* response = nullptr;
  for (int retries = 0; slurm_submit_batch_job(job->get(), &response) != SLURM_SUCCESS;) {
    const int error = slurm_get_errno();
    if (!Transient(error) || retries >= kMaxRetries) {
      return fmt::format("error Batch job submission failed: {}", slurm_strerror(error));
    }
    sleep(static_cast<unsigned>(++retries));
  }
  const std::string reply = fmt::format("ok {}", response->job_id);
  slurm_free_submit_response_response_msg(response);
  return reply;
}

}  // namespace

int SlurmSubmitMain(int argc, char** argv) {
  (void)argv;
  if (argc != 1 || !os::HasHelperChannel(SOCK_STREAM)) {
    std::fprintf(stderr,
                 "usage: drover-slurm-submit (started by the Slurm executor, with its socket on "
                 "descriptor 3)\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);  // a server gone mid-reply: the write fails and the loop ends
  const std::string problem = ConfigurationProblem();
  if (problem.empty()) slurm_init(nullptr);
  // The jobs' environment: of the server's (which this helper inherits), only their part.
  const std::vector<std::string> environment = slurm::JobEnvironment(slurm::ProcessEnvironment());
  Lister listing;
  for (;;) {
    std::string payload;
    const int read = slurm::ReadFrame(kChannelFd, payload);
    if (read == 0) break;
    if (read < 0 && errno != EMSGSIZE) {
      std::fprintf(stderr, "drover-slurm-submit: %s\n", std::strerror(errno));
      return 1;
    }
    if (read < 0) {
      // The rest of the oversized frame cannot be skipped reliably: answer, then stop.
      slurm::WriteAll(kChannelFd,
                      slurm::Frame(fmt::format("error the request is larger than {} bytes",
                                               slurm::kMaxSubmitFrameBytes)));
      return 1;
    }
    const std::string reply =
        problem.empty() ? Serve(payload, environment, listing) : "error " + problem;
    if (!slurm::WriteAll(kChannelFd, slurm::Frame(reply))) return 1;
  }
  if (problem.empty()) slurm_fini();
  return 0;
}

}  // namespace drover::exec::libslurm
