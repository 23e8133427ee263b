#pragma once

// The Slurm executor (docs/operations.md, "Executors: Slurm"): Drover's admitted attempts
// become Slurm batch jobs through Slurm's own commands (sbatch, scontrol, scancel, squeue,
// sacct -c), which the executor's thread runs, or for submissions the helper drover-slurm-submit
// (submit_helper.h) when SlurmExecutorOptions names it; Slurm's states, pending reasons and times
// come back as ExecutorEvents. The commands find the cluster as any Slurm user's do (PATH,
// SLURM_CONF). Run as root, the executor submits each job as its Unix account
// (os::AccountToRunAs, SbatchOptions::account) and gives that account the attempt's folder,
// whose contents it then treats as the account's (docs/security.md, "Slurm queues").

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/thread_annotations.h"
#include "drover/exec/executor.h"
#include "drover/exec/slurm/sbatch.h"
#include "drover/exec/slurm/state.h"
#include "drover/exec/slurm/submit_helper.h"

namespace drover::exec::slurm {

struct SlurmExecutorOptions {
  // Each attempt's directory <runs_dir>/<job>/<attempt>/ holds its batch output
  // (slurm-<id>.out) and the timeout marker; it must be visible to the Slurm nodes (one
  // machine, or shared storage).
  std::string runs_dir;
  std::string server_url;  // exported to the jobs as DROVER_SERVER
  std::string drover_bin;  // exported to the jobs as DROVER_BIN (SbatchOptions::drover_bin)
  DurationMs poll_interval_ms = 500;
  // The interval instead, when shorter, while listings are incremental (IncrementalListing:
  // every tracked job started, so slurmctld packs records only when some job changed and answers
  // "no change" otherwise): ends are seen sooner for about a millisecond of slurmctld's time
  // per unchanged listing (docs/benchmarks.md).
  DurationMs incremental_poll_interval_ms = 250;
  // How many `sbatch` calls run at once. One at a time, a file of 1,000 jobs reached Slurm in
  // 207 s on a loaded 2-core machine (docs/benchmarks.md): each call waits mostly on
  // slurmctld, which serves several at once.
  int max_concurrent_submits = 8;
  // New attempts of one shape (ArrayShape: a file of like jobs, a sweep's trials) that are
  // waiting together go as the tasks of one job array, at most this many per array (Slurm's
  // MaxArraySize is 1001 by default: task ids 0 to 1000). 1: every attempt a job of its own.
  int max_array_tasks = 1000;
  // While refreshes find nothing new, the interval doubles up to this (a cluster of long jobs
  // is asked about them less often); any change, submission or cancel returns it to
  // poll_interval_ms.
  DurationMs max_poll_interval_ms = 4000;
  // drover-slurm-submit (submit_helper.h): submissions go through it, in libslurm, instead of an
  // `sbatch` process each. Empty: `sbatch` (found on PATH, as the other commands are).
  std::string submit_helper;
};

class SlurmExecutor final : public Executor {
 public:
  SlurmExecutor(SlurmExecutorOptions options, const Clock& clock);
  ~SlurmExecutor() override;  // stops the thread; Slurm's jobs keep running

  model::ExecutorKind kind() const override { return model::ExecutorKind::kSlurm; }
  Status Submit(const model::ExternalLaunch& launch) override;
  Status Cancel(const model::ExternalRef& ref, const model::StopRequest& request) override;
  void Adopt(const std::vector<model::ExternalRef>& refs) override;
  std::vector<model::ExecutorEvent> Poll() override;

  // The attempt directory of (job, attempt).
  std::string AttemptDir(JobId job, int attempt) const;

 private:
  // An attempt Slurm knows (or is about to): what was last reported of it.
  struct Tracked {
    model::ExternalRef ref;
    std::string attempt_dir;
    std::string reason;  // last pending reason reported
    TimeMs eligible_at = 0;
    bool started = false;
    // An array task's own Slurm job id (its record's JobId once it started, which the jobcomp
    // log records its runs under); empty until a refresh saw the task started.
    std::string slurm_job_id;
    int missing = 0;  // consecutive refreshes that did not find it in scontrol's list
  };
  Tracked TrackedOf(const model::ExternalRef& ref) const;
  // The rendering options of `launch`'s job, with the account it runs as when this process is
  // root and the account is another (os::OtherAccountToRunAs: an account the server does not know,
  // or root without may_run_as_root, is the error the launch fails with).
  Result<SbatchOptions> OptionsFor(const model::ExternalLaunch& launch) const;
  std::string JobDir(JobId job) const;
  // Where arrays keep their task links and output: <runs>/arrays.
  std::string ArraysDir() const;

  void Loop() EXCLUDES(mu_);
  // A launch with what the executor makes of it, once per hand-off: its options (OptionsFor:
  // the account looked up) and the `sbatch` call rendered with them, or why there is none (the
  // options' error when that is one; for a continuation, which releases the Slurm job it has
  // instead of submitting one (ContinueNow), kFailedPrecondition: none is rendered).
  struct Prepared {
    model::ExternalLaunch launch;
    Result<SbatchOptions> options;
    Result<Sbatch> sbatch;
  };
  Prepared Prepare(model::ExternalLaunch launch) const;
  // What one hand-off to Slurm does: a continuation (one launch with ref.restart > 0), a new
  // submission's `sbatch`, or the `sbatch --array` of several new submissions of one shape.
  using Call = std::vector<Prepared>;
  // `launches` (in queue order) grouped into calls, as indices into it: new submissions of one
  // ArrayShape together, up to max_array_tasks per call, in queue order within a call and
  // each call where its first launch was.
  std::vector<std::vector<std::size_t>> Calls(const std::vector<Prepared>& launches) const;
  // Hands `calls` to Slurm: the sbatch calls concurrently, continuations one after the other;
  // returns when every launch was reported (kSubmitted, or kExited with why not).
  void SubmitNow(std::vector<Call> calls);
  // The `sbatch` of a new submission (ref.restart == 0), safe to run on several threads at once
  // (it reads only the options): the Slurm job's id in ref.external_id, or why there is none.
  struct Handed {
    Tracked tracked;
    TimeMs at = 0;      // when sbatch returned
    std::string error;  // empty: submitted
  };
  Handed RunSbatch(const Prepared& launch) const;
  // Submits `sbatch` (through the helper, or an `sbatch` process): Slurm's job id, or the error
  // to report, which starts with "sbatch: ".
  Result<std::string> SubmitBatch(const Sbatch& sbatch) const;
  // One `sbatch --array` for new submissions of one shape (RenderArray), as safe as RunSbatch:
  // one Handed per launch, in order, task i's ref.external_id "<array job id>_<i>".
  std::vector<Handed> RunArray(const Call& launches) const;
  // Tracks a submitted launch and reports kSubmitted, or kExited with why it was not.
  void Report(const Handed& one);
  // A continuation (ref.restart > 0): writes the attempt's contract file, then releases the
  // requeued Slurm job that Observe held.
  void ContinueNow(const Prepared& prepared);
  void CancelNow(const model::ExternalRef& ref);
  void AdoptNow(const model::ExternalRef& ref);
  // Slurm's jobs as `scontrol show job -o` prints them: through the submission helper when there
  // is one (no process per listing, only the keys ParseJobLine reads; incremental while
  // IncrementalListing), else that command.
  Result<std::string> ListJobs() const;
  // Whether the next listing is incremental: through the helper, with every tracked job started
  // (slurmctld sets a pending job's Reason without marking the job changed, so while one is
  // pending every listing is whole).
  bool IncrementalListing() const;
  // The refresh interval while Slurm's state changes: poll_interval_ms, or
  // incremental_poll_interval_ms when shorter and IncrementalListing.
  std::chrono::milliseconds ChangingInterval() const;
  // One listing: events for every tracked job that changed. True when it reported any.
  bool Refresh();
  // Reports what `job` says of `tracked`; true when its run ended (no longer tracked).
  bool Observe(Tracked& tracked, const SlurmJob& job);
  // Slurm requeued the job after `tracked`'s run (job.restarts > tracked.ref.restart): reports
  // how that run ended; a requeued job still pending is held for Drover to continue or cancel.
  // False while the requeue is still settling (the old run completing).
  bool EndRequeuedRun(Tracked& tracked, const SlurmJob& job);
  // kStarted on `nodes` since `at`; `tracked` is then started.
  void ReportStarted(Tracked& tracked, const std::vector<std::string>& nodes, TimeMs at);
  // How `tracked`'s run of its Slurm job ended, from `sacct -c` (ParseRunEnds); nullopt when
  // no line records it.
  std::optional<SlurmJob> RunEnd(const Tracked& tracked) const;
  // A job scontrol no longer lists: its end from `sacct -c`, or lost.
  void Vanished(Tracked& tracked);
  // Removes the task links (ArrayTasksDir) and, when empty, the output (ArrayOutput) of each
  // array under ArraysDir() none of whose tasks can run again by Slurm's listing. `listed` is
  // the listing's arrays by name, each true when some task of it is in a state IsFinalState does
  // not name (pending, held for Drover, running, requeued). A task's script follows its link
  // only as it starts, so once none can start the links serve nothing, whoever saw the array
  // end: this server, one before a restart (its last task ended while no server watched), or
  // nobody (a task cancelled while held). An array the listing holds only ended tasks of goes
  // at once; one it does not hold at all goes at the second listing in a row without it, as a
  // tracked job counts as gone only then (a listing Slurm answered wrongly empty loses nothing).
  void RemoveEndedArrays(const std::map<std::string, bool>& listed);
  void Emit(const Tracked& tracked, model::ExecutorEvent::Kind kind, TimeMs at,
            model::ExecutorEvent event = {}) EXCLUDES(mu_);

  const SlurmExecutorOptions options_;
  const Clock& clock_;
  const std::unique_ptr<SubmitHelper> helper_;  // null: `sbatch` processes

  Mutex mu_;
  std::condition_variable_any wake_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::deque<model::ExternalLaunch> submits_ GUARDED_BY(mu_);
  std::vector<model::ExternalRef> cancels_ GUARDED_BY(mu_);
  std::vector<model::ExternalRef> adopts_ GUARDED_BY(mu_);
  std::vector<model::ExecutorEvent> events_ GUARDED_BY(mu_);

  // The thread's own: tracked attempts by ExternalRef::name, and the ids of requeued Slurm jobs
  // held for Drover (between a requeued run's kExited and its continuation or cancel).
  std::map<std::string, Tracked> tracked_;
  std::set<std::string> held_;
  // Arrays whose links the last refresh kept although its listing did not hold them.
  std::set<std::string> unlisted_arrays_;
  std::size_t emitted_ = 0;  // events reported so far (Emit runs on the thread only)
  std::thread thread_;
};

}  // namespace drover::exec::slurm
