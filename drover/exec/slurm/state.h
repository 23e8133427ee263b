#pragma once

// Reading Slurm's view of its jobs (pure): one line of `scontrol show job -o` (or of the
// jobcomp/filetxt log that `sacct -c` reads) into a SlurmJob, Slurm's states and pending
// reasons into Drover's terms, and node lists ("n[1-3,7],gpu-a") into host names.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "drover/common/clock.h"
#include "drover/model/job.h"

namespace drover::exec::slurm {

struct SlurmJob {
  std::string id;
  // A job array's record (sbatch --array): its ArrayJobId and ArrayTaskId, which is one task
  // ("3") for a task that started, or the tasks still pending together ("3-199", "4,7-9%8");
  // both empty for a job that is not an array's.
  std::string array_job_id;
  std::string array_task_ids;
  std::string name;
  std::string state;   // PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
  std::string reason;  // Resources, Priority, Dependency, ..., None
  TimeMs submit_time = 0;
  TimeMs eligible_time = 0;
  TimeMs start_time = 0;
  TimeMs end_time = 0;
  std::vector<std::string> nodes;
  int exit_code = 0;    // of the batch script
  int exit_signal = 0;  // that killed it
  int restarts = 0;
};

// A job from one `scontrol show job -o` line or jobcomp/filetxt line, `Key=Value Key=Value ...`
// (values without spaces; of a key given twice, the first); nullopt when it has no JobId. Times
// are Slurm's local times, read with `parse_time` (the caller's time zone rule); "Unknown",
// "None" and "N/A" read as 0. Reads the line in place: the executor parses every record Slurm
// lists at each refresh (a thousand lines of a kilobyte each, on the thread that hands jobs
// over).
using TimeParser = std::function<TimeMs(std::string_view)>;
std::optional<SlurmJob> ParseJobLine(std::string_view line, const TimeParser& parse_time);

// A listing of `scontrol show job -o` lines (or the submission helper's), each record once and
// found by every id it stands for (RecordIds: a pending array's record by each waiting task's).
// Lines without a JobId are skipped.
struct JobListing {
  std::vector<SlurmJob> records;
  std::unordered_map<std::string, std::size_t> record_of;  // Slurm id -> index in records
  const SlurmJob* Find(const std::string& id) const {
    auto it = record_of.find(id);
    return it == record_of.end() ? nullptr : &records[it->second];
  }
};
JobListing ParseListing(std::string_view text, const TimeParser& parse_time);

// The Slurm ids the record `job` stands for: its JobId, or for a job array's record one
// "ARRAYJOBID_TASKID" per task it holds (the pending tasks "3-199" -> 1_3 ... 1_199). Each such id
// is what scancel, scontrol hold and release take for that one task. At most 100,000.
std::vector<std::string> RecordIds(const SlurmJob& job);

// "2026-11-30T12:46:09" as a local time of the process's time zone; 0 if malformed (a text that
// does not start with a digit, such as "Unknown", without building an error).
TimeMs ParseLocalTime(std::string_view text);

// ParseLocalTime that remembers each text it read, for one listing: its records share whole-second
// times (a thousand jobs' four times each are a few hundred texts), and each mktime costs
// microseconds (glibc checks the zone file at every call). The texts must outlive it: views into
// the listing being parsed.
class LocalTimeMemo {
 public:
  TimeMs operator()(std::string_view text);

 private:
  std::unordered_map<std::string_view, TimeMs> seen_;
};

// "n[1-3,7],gpu-a" -> n1 n2 n3 n7 gpu-a (zero padding kept: "n[01-02]" -> n01 n02).
std::vector<std::string> ExpandHostList(std::string_view list);

// States in which the job will not change any more.
bool IsFinalState(std::string_view state);

// How a job in a final state ended, in Drover's terms: COMPLETED -> exit 0 (timed_out when the
// script left its timeout marker); FAILED -> the exit code or signal; CANCELLED -> cancelled
// (preempted when `preempting`: Drover asked for it to make room); TIMEOUT, DEADLINE ->
// timed_out; PREEMPTED -> preempted; NODE_FAIL, BOOT_FAIL -> node_lost; OUT_OF_MEMORY -> failed
// with that message.
model::ExitStatus ExitOf(const SlurmJob& job, bool timeout_marker);

// The runs of job `id` named `name` that ended, oldest first, from the output of
// `sacct -c -n -P -o <kRunEndFields>`: the jobcomp log has a line per run end, so run k (after
// k requeues) is element k. A run Slurm requeued reads PREEMPTED, NODE_FAIL or, after
// `scontrol requeue`, PENDING. The name tells the job from an older one with the same id (a
// restarted or reset cluster numbers its jobs again).
inline constexpr const char* kRunEndFields = "JobID,JobName,State,ExitCode,Start,End,NodeList";
std::vector<SlurmJob> ParseRunEnds(std::string_view sacct_output, std::string_view id,
                                   std::string_view name, const TimeParser& parse_time);

// How a run that Slurm requeued ended, in Drover's terms: node_lost after NODE_FAIL, else
// preempted (a preemption, or an administrator's `scontrol requeue`). `run` is its end in the
// jobcomp log, nullptr when none records it.
model::ExitStatus RequeuedExit(const SlurmJob* run, std::string_view id);

// A pending reason for people: "Resources: ..." with a short explanation of Slurm's code.
std::string DescribeReason(std::string_view reason);

}  // namespace drover::exec::slurm
