#pragma once

// What `sbatch ARGS < SCRIPT` would submit, built in this process for libslurm's
// slurm_submit_batch_job (Debian's libslurm 22.05; the helper drover-slurm-submit,
// exec/slurm/submit_helper.h, is the only program that links it).
//
// ARGS are the options RenderSbatch and RenderArray write (exec/slurm/sbatch.h), each in the
// form --name=value or a bare flag; anything else is refused by name, so a new option there fails
// the tests here (job_description_test.cc renders every option) rather than being dropped. Each
// sets the job description's field that sbatch's own parsing sets for it. The environment is
// what sbatch sends with its default --export=ALL: the given one (the helper's, which is the
// server's, as sbatch's was), plus the variables sbatch adds itself:
//   SLURM_JOB_NAME, SLURM_CPUS_PER_TASK, SLURM_NTASKS and SLURM_NPROCS, SLURM_NTASKS_PER_NODE and
//   SLURM_OPEN_MODE for the options that set them; SLURM_SUBMIT_DIR (the working directory),
//   SLURM_SUBMIT_HOST, SLURM_PRIO_PROCESS (the nice value), SLURM_UMASK, and SLURM_RLIMIT_* for
//   the ten limits slurmd may propagate (PropagateResourceLimits decides which it applies).
// tests/slurm's SubmittedByTheHelperAsBySbatch compares both ways' records and environments on a
// real cluster.

#include <slurm/slurm.h>

#include <deque>
#include <string>
#include <vector>

#include "drover/common/result.h"
#include "drover/exec/slurm/sbatch.h"

namespace drover::exec::libslurm {

class JobDescription {
 public:
  // kInvalidArgument naming the argument it cannot map, or a script that is not a batch script
  // (empty, no "#!" first line, a NUL byte, DOS line breaks: what sbatch refuses). `environment`
  // is NAME=VALUE entries (environ's); the process-wide values above (working directory, host,
  // nice, umask, limits) are read here.
  static Result<JobDescription> FromSbatch(const slurm::Sbatch& sbatch,
                                           const std::vector<std::string>& environment);

  JobDescription(JobDescription&&) = default;
  JobDescription& operator=(JobDescription&&) = default;

  // The description; its pointers point into this object, which must outlive the call that
  // takes it.
  job_desc_msg_t* get() { return &desc_; }
  // The environment it sends, NAME=VALUE (for tests).
  const std::vector<char*>& environment() const { return environment_; }

 private:
  JobDescription() = default;
  // Keeps `value` alive with this object and returns it as libslurm's char*.
  char* Keep(std::string value);
  void SetEnvironment(const std::string& name, const std::string& value);

  job_desc_msg_t desc_{};
  std::deque<std::string> strings_;  // stable addresses for desc_'s pointers
  std::vector<char*> environment_;   // into strings_, no terminating null (env_size says)
};

}  // namespace drover::exec::libslurm
