#pragma once

// The submission helper's listing of Slurm's jobs (exec/slurm/submit_helper.h): each record of
// slurm_load_jobs as one line of the keys the Slurm executor reads (exec/slurm/state.h,
// ParseJobLine), each printed as `scontrol show job -o` prints it (libslurm's
// slurm_sprint_job_info, 22.05) and in its order:
//
//   JobId=12 [ArrayJobId=10 ArrayTaskId=2-4%1 ]JobName=drover-7-1 JobState=PENDING
//   Reason=JobArrayTaskLimit Restarts=0 ExitCode=0:0 SubmitTime=... EligibleTime=...
//   StartTime=... EndTime=... NodeList=(null)
//
// on one line. slurm_sprint_job_info prints about 60 keys a record, resolving user and group
// names and TRES strings on the way: a listing of 1,000 jobs cost the helper 37.7 ms of CPU that
// way and 10.6 ms this way, most of it now libslurm's unpacking of slurmctld's answer; 194 KB
// instead of 961 KB (docs/benchmarks.md, "A listing of the keys the executor reads"). The states,
// reasons and times come from the functions scontrol's printing calls (libslurm exports them;
// slurm.h of 22.05 does not declare them); tests/slurm's
// TheHelpersListingReadsAsScontrolsForEveryState compares both listings' records on a real cluster.

#include <slurm/slurm.h>

#include <ctime>
#include <string>

namespace drover::exec::libslurm {

// Appends `job`'s line, with its newline, to `out`; nothing for a record whose JobId is 0
// (a federation's duplicate, which scontrol skips too). `now`: the time scontrol would read for
// its one rule that depends on the clock (EndTime=Unknown for a job without a time limit whose
// end lies ahead).
void AppendJobRecordLine(const slurm_job_info_t& job, std::time_t now, std::string& out);

}  // namespace drover::exec::libslurm
