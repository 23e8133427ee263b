#pragma once

// SubmitHelper: hands batch jobs to Slurm through `drover-slurm-submit` (exec/libslurm), a
// long-lived child process that calls libslurm's slurm_submit_batch_job, instead of one `sbatch`
// process per submission. On this project's 2-core VM, 100 `sbatch` processes in a row took 56 ms
// a job while the jobs ran, the library call 1.7 ms; back to back, a `drover submit` into a Slurm
// queue took 36 ms with the helper against 64 ms with an `sbatch` each (docs/benchmarks.md,
// "Submissions without an sbatch process"; issue 24).
//
// Why a child process and not libslurm in the server: libslurm ends its process with fatal()
// (exit 1, after retrying for 60 s) when it cannot read slurm.conf, and keeps global state; a
// helper confines both, and the server links no Slurm library.
//
// The helper is `<program>`, an os::HelperProcess with a stream socket pair (its stdout and
// stderr are the server's: libslurm's own messages go there). Each request is one Sbatch (the
// arguments `sbatch` would get and the script it would read) in EncodeSubmitRequest's frame; the
// helper builds the job description `sbatch` would build from those arguments (the subset
// RenderSbatch and RenderArray write; exec/libslurm/job_description.h), submits it with the
// helper's environment, as `sbatch` exports its own, and answers with a frame "ok JOBID" (an
// array's job id) or "error MESSAGE" (what sbatch would print after "sbatch: error: "). The one
// other request, kListJobsRequest, asks for Slurm's jobs (slurm_load_jobs), one line each of
// the keys the executor reads, each as `scontrol show job -o` prints it (exec/libslurm/
// job_record.h): "ok TEXT" or "error MESSAGE"; kListChangedJobsRequest the same, or
// kListingUnchanged when slurmctld says no job changed since the helper's last listing (it is asked
// with that listing's time, and packs no record then), which SubmitHelper then returns again. It
// saves the Slurm executor's refresh an `scontrol` process each time (41% of the server's own CPU,
// its children included, while jobs were submitted one by one to Slurm: docs/benchmarks.md,
// "Slurm's state through the helper"). The helper exits when its socket closes.

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "drover/common/result.h"
#include "drover/common/thread_annotations.h"
#include "drover/exec/slurm/sbatch.h"
#include "drover/os/helper_process.h"

namespace drover::exec::slurm {

// A frame: a 4-byte little-endian length, then that many bytes. A request's bytes are the
// number of arguments in decimal, then each argument, then the script, each followed by a NUL
// (none may contain one: `sbatch` could not take it either).
// At most this many bytes (Slurm's own default cap on a batch script is 4 MiB).
inline constexpr std::size_t kMaxSubmitFrameBytes = 16u << 20;
// A listing of Slurm's jobs, about 200 bytes a record (1.2 KB as `scontrol` prints it): room for
// the 10,000 records of slurmctld's default MaxJobCount many times over.
inline constexpr std::size_t kMaxListingFrameBytes = 1u << 30;
// The payloads of the listing requests (a submission's starts with a digit): every job, or every
// job unless none changed since the helper's last listing.
inline constexpr std::string_view kListJobsRequest = "jobs";
inline constexpr std::string_view kListChangedJobsRequest = "jobs if changed";
// The helper's answer to kListChangedJobsRequest when its last listing still holds.
inline constexpr std::string_view kListingUnchanged = "same";

// What a listing asks slurmctld for.
enum class Listing {
  kWhole,      // every record, packed anew
  kIfChanged,  // the same, or the last listing again when slurmctld says no job changed since
};
std::string EncodeSubmitRequest(const Sbatch& sbatch);
// kInvalidArgument naming what is wrong with `payload` (a frame's bytes, without the length).
Result<Sbatch> DecodeSubmitRequest(std::string_view payload);
// `payload` as a frame.
std::string Frame(std::string_view payload);
// Reads one frame from `fd` into `payload`, waiting at most `timeout_ms` for each part of it (-1:
// no limit): 1 when read, 0 at the end of the stream before a frame, -1 otherwise with errno
// (ETIMEDOUT, EMSGSIZE for a frame over `max_bytes`, EPROTO for a stream that ends inside a
// frame, or the read's own). Retries EINTR.
int ReadFrame(int fd, std::string& payload, int timeout_ms = -1,
              std::size_t max_bytes = kMaxSubmitFrameBytes);
// Writes all of `bytes` to `fd` (MSG_NOSIGNAL); false with errno on failure.
bool WriteAll(int fd, std::string_view bytes);

class SubmitHelper {
 public:
  // `program`: drover-slurm-submit. Nothing starts until the first Submit.
  explicit SubmitHelper(std::string program);
  // Closes the socket and ends the helper (SIGKILL, then reaped).
  ~SubmitHelper();
  SubmitHelper(const SubmitHelper&) = delete;
  SubmitHelper& operator=(const SubmitHelper&) = delete;

  // Submits `sbatch` and returns Slurm's job id, or the error text to report after "sbatch: ".
  // A helper that ended before it read the whole request (it died since the last one) is
  // restarted and the request sent again, once. One that read it and then ended, or stayed
  // silent for kReplyTimeoutMs, is stopped and the submission reported failed, as an `sbatch`
  // killed there would be: Slurm may still hold the job, under its name, which adoption looks
  // for after a restart. Thread-safe; requests are served one at a time (about 2 ms each
  // against a local slurmctld).
  Result<std::string> Submit(const Sbatch& sbatch) EXCLUDES(mu_);

  // Slurm's jobs, a line of the executor's keys each as `scontrol show job -o` prints them, or
  // why not (the error that command would print, or the helper's failure; the helper is then
  // stopped, and started again at the next request). Listing::kIfChanged: while slurmctld says no
  // job changed, the last listing again, whose text may differ from a fresh one in what
  // slurmctld changes without marking a job changed: a pending job's Reason (seen: "None" kept
  // after Slurm's scheduler had set "Resources"). Thread-safe; served between submissions.
  Result<std::string> ListJobs(Listing listing = Listing::kWhole) EXCLUDES(mu_);

  pid_t HelperPid() EXCLUDES(mu_);  // 0 while none runs (for tests)

  // sbatch's own retries when slurmctld is busy last up to 120 s (1 + 2 + ... + 15).
  static constexpr int kReplyTimeoutMs = 300'000;

 private:
  Mutex mu_;
  os::HelperProcess process_ GUARDED_BY(mu_);
  std::string last_listing_ GUARDED_BY(mu_);   // the last whole listing's text
  pid_t last_listing_by_ GUARDED_BY(mu_) = 0;  // the helper that gave it
};

}  // namespace drover::exec::slurm
