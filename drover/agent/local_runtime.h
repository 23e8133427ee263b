#pragma once

// LocalRuntime: runs workers on this machine, each under its own `drover supervise` process.
//
// Layout: every worker gets the directory RUNS_DIR/<job>/<attempt>/<rank>/, created by Launch;
// its existence is the record that the worker was launched, so a worker is never started twice,
// also not across server restarts. The files in it are the protocol with the supervisor
// (drover/agent/worker_files.h): launch.json in; supervisor.json, started.json, exit.json,
// stdout.log, stderr.log and supervisor.log out.
//
// Supervisors are detached: forked by the runtime's SupervisorSpawner (supervisor_spawner.h) into
// their own session, so they are not killed with the server's process group and outlive it and
// the spawner (then as children of init or of the nearest subreaper); the kernel reaps each as it
// exits. The runtime holds no process handle of a supervisor; it learns everything from the
// files and from /proc, which is why a new instance over the same RUNS_DIR can Adopt() the
// workers of an earlier one.
//
// Launch adds DROVER_SERVER=<Options::server_url> (and DROVER_CA=<Options::server_ca> when set)
// and DROVER_BIN=<Options::drover_bin> to the worker's environment unless the spec sets them, and
// puts DROVER_BIN's folder first on its PATH unless the spec sets PATH (then PATH is the spec's),
// so that `drover report` and `drover checkpoint` inside a job run and reach the API (with the
// job's own DROVER_TOKEN, which the control plane puts in the spec), and
// DROVER_PREEMPT_NOTICE=<worker dir>/preempt-notice (both to the launch.json it writes, not to the
// caller's spec): the file does not exist until the worker is stopped for a preemption (Stop with
// preempt), when it holds {"reason", "deadline_ms"}, the deadline being the wall time at which
// SIGKILL follows (now + kill_grace_ms). A worker may poll for it, or check it when SIGTERM
// arrives, to save a checkpoint in time.
//
// Checkpoints: for a worker whose LaunchSpec.checkpoint_dir is set (relative: to its working
// directory), Poll() reports kCheckpoint (at = the mtime) whenever
// <checkpoint_dir>/.drover-checkpoint has a modification time later than any reported before for
// that worker and than the file had at launch (a marker left by an earlier attempt counts only
// once touched again; for an adopted worker, later than its launch.json). It costs one stat per
// such worker, at most every checkpoint_poll_interval_ms, and once more just before the worker's
// exit is reported so that a checkpoint written on the way out is never lost. Touches closer
// together than the interval are reported as one event (the latest).
//
// Poll() reports, per worker: kStarted (at = started.json's time) once the exec succeeded, then
// kCheckpoint events, then kExited (exit.json's status and time). A worker whose exec failed
// reports only kExited (exit code 127). When the supervisor is gone (its pid dead or reused, judged
// by pid + start time) without having written exit.json, kExited carries exit code -1 and the
// message "supervisor lost" (at = clock.Now()); its worker was killed with it (PR_SET_PDEATHSIG).
// After Adopt(), kStarted is reported again for workers that had started: the caller treats
// events idempotently. Once a worker has started, Poll reads its files only when its
// supervisor's pidfd becomes readable (the supervisor exited) and when checkpoints are due, not
// at every call (where no pidfd can be opened, at every call).
//
// Thread-safety: all public methods may be called concurrently. One mutex guards what is
// watched; Poll holds it while reading the watched directories. Launch takes it only to look up
// and to record the worker, not while creating its directory and writing launch.json, so
// launches of different workers run in parallel up to their supervisor's start, which the
// spawner serves one at a time (a fork and the child's set-up, about a millisecond each).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "drover/agent/runtime.h"
#include "drover/agent/supervisor_spawner.h"
#include "drover/agent/worker_files.h"
#include "drover/common/clock.h"
#include "drover/common/result.h"
#include "drover/common/thread_annotations.h"
#include "drover/model/launch.h"

namespace drover::agent {

class LocalRuntime final : public WorkerRuntime {
 public:
  struct Options {
    // Root of the worker directories; created if missing. Relative paths are made absolute.
    std::string runs_dir;
    // The executable that implements `supervise` and `spawn-supervisors` (drover-supervise, or
    // the drover binary itself); the runtime's SupervisorSpawner runs it once and forks it for
    // each worker.
    std::string supervisor_path;
    // The `drover` CLI a worker may call: exported as DROVER_BIN, its folder first on the
    // worker's PATH. Empty (the default): the `drover` beside a supervisor_path named
    // `drover-supervise`, otherwise supervisor_path itself (the full binary). Made absolute.
    std::string drover_bin{};
    // The API's base URL as seen from this machine, exported to workers as DROVER_SERVER;
    // empty: not exported.
    std::string server_url{};
    // The CA bundle that verifies an https:// server_url (the agent's --ca), exported to workers
    // as DROVER_CA so that their `drover report` trusts the same server; empty: not exported.
    std::string server_ca{};
    // An adopted worker with neither supervisor.json nor exit.json is declared lost once its
    // launch.json is older than this (the old server may have died while spawning it).
    DurationMs supervisor_start_grace_ms = 30'000;
    // How often Poll() looks at the checkpoint markers (a stat per worker with a checkpoint
    // dir). Default 200 ms: checkpoints are minutes apart; a shorter interval costs stats.
    DurationMs checkpoint_poll_interval_ms = 200;
  };

  // kInvalidArgument if runs_dir is empty or supervisor_path is not an executable file;
  // kInternal if runs_dir cannot be created. `clock` must outlive the runtime.
  static Result<std::unique_ptr<LocalRuntime>> Create(Options options, const Clock& clock);

  // See WorkerRuntime. Errors: kAlreadyExists if the worker's directory exists (launched before,
  // by this or an earlier instance); kInternal if the directory, launch.json or the supervisor
  // cannot be created (the directory is then removed again, so the launch may be retried). When
  // the spawner dies with the request (SupervisorSpawner::Spawn's nullopt) the launch is OK and
  // the worker is watched as an adopted one: by supervisor.json, or lost after the start grace.
  Status Launch(const model::LaunchSpec& spec) override;
  // See WorkerRuntime. With request.preempt, first writes <worker dir>/preempt-notice (a failure
  // to write it is logged to stderr and the worker is still stopped; its exit is reported
  // preempted all the same). Then sends SIGTERM to the supervisor after checking, through a
  // pidfd, that it is still the same process; the supervisor then stops the worker's process
  // group gracefully. The first Stop of a worker decides how its exit is reported (cancelled or
  // preempted). OK when the supervisor has already exited (Poll reports the exit). kNotFound for
  // a key not watched; kUnavailable for an adopted worker whose supervisor has not written
  // supervisor.json yet (retry).
  Status Stop(const model::WorkerKey& key, const model::StopRequest& request) override;
  // Writes timeout.json (worker_files.h) and sends SIGUSR1 to the supervisor, checked as Stop
  // checks it; the supervisor re-reads its limit (one not yet supervising reads it when it
  // begins). kNotFound for a key not watched; kInternal if the file cannot be written.
  Status SetTimeout(const model::WorkerKey& key, DurationMs timeout_ms) override;
  std::vector<model::WorkerKey> Adopt(const std::vector<model::WorkerKey>& keys) override;
  std::vector<model::WorkerEvent> Poll() override;

  // A worker whose process has started and whose exit has not been reported, for the usage
  // sampler (agent/sampler.h): its process and the GPU indexes it was given.
  struct RunningWorker {
    model::WorkerKey key;
    pid_t pid = 0;
    std::vector<int> gpus;
  };
  // The workers started and not reported exited (a copy taken under the mutex); an adopted
  // worker's GPUs are read from its launch.json.
  std::vector<RunningWorker> RunningWorkers() EXCLUDES(mu_);

  // RUNS_DIR/<job>/<attempt>/<rank> (no trailing slash), whether or not it exists.
  std::string WorkerDir(const model::WorkerKey& key) const;
  // The worker's captured output (may not exist yet, or at all if the worker never launched).
  std::string StdoutPath(const model::WorkerKey& key) const;
  std::string StderrPath(const model::WorkerKey& key) const;
  const std::string& runs_dir() const { return options_.runs_dir; }

 private:
  enum class Stopping { kNo, kCancel, kPreempt };
  // An owned pidfd; -1: none. Move-only, closed with its owner.
  class Pidfd {
   public:
    Pidfd() = default;
    explicit Pidfd(int fd) : fd_(fd) {}
    Pidfd(Pidfd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    Pidfd& operator=(Pidfd&& other) noexcept;
    Pidfd(const Pidfd&) = delete;
    Pidfd& operator=(const Pidfd&) = delete;
    ~Pidfd();
    int get() const { return fd_; }

   private:
    int fd_ = -1;
  };
  struct Watch {
    std::string dir;
    std::optional<ProcessIdentity> supervisor;
    // A pidfd of `supervisor`, opened once it is known to be that process: a started worker's
    // files are then read only when it becomes readable (the supervisor exited, having written
    // exit.json) or checkpoints are due, not at every Poll. None where it cannot be opened:
    // then the files are read at every Poll.
    Pidfd exit_watch;
    bool started_reported = false;
    Stopping stopping = Stopping::kNo;  // what the first Stop asked for
    DurationMs kill_grace_ms = 0;
    std::string checkpoint_marker;  // <checkpoint_dir>/.drover-checkpoint; empty: none
    TimeMs checkpoint_seen = 0;     // the latest marker mtime reported (or the baseline)
    std::vector<int> gpus;          // LaunchSpec::gpus
    pid_t worker_pid = 0;           // from started.json; 0 until it started
  };

  LocalRuntime(Options options, const Clock& clock);
  // Appends the events that `watch`'s files show; true when the worker has exited.
  // Checkpoint markers are looked at when `check_checkpoint` or when the worker has exited.
  bool CollectFromFiles(const model::WorkerKey& key, Watch& watch, bool check_checkpoint,
                        std::vector<model::WorkerEvent>& events);
  // Appends a kCheckpoint event if the marker is newer than the last one reported.
  void CollectCheckpoint(const model::WorkerKey& key, Watch& watch,
                         std::vector<model::WorkerEvent>& events);
  // What Watch needs from the spec: grace period and checkpoint marker.
  static void Configure(Watch& watch, const model::LaunchSpec& spec);
  // The exit of a worker whose end is unknown, as the first Stop asked (cancelled/preempted).
  static model::ExitStatus LostStatus(const Watch& watch, std::string message);
  // `exit` as recorded by the supervisor, reported preempted if a preemption stopped it.
  static model::ExitStatus StopOutcome(const Watch& watch, model::ExitStatus exit);
  bool SupervisorGone(Watch& watch);
  // Opens watch.exit_watch if it has none and the supervisor is known and alive.
  static void WatchSupervisorExit(Watch& watch);
  // Sends `signal` to the supervisor of `key` after checking through a pidfd that it is still
  // the same process. OK when it has exited; kUnavailable before it wrote supervisor.json.
  static Status SignalSupervisor(const model::WorkerKey& key, Watch& watch, int signal);

  const Options options_;
  const Clock& clock_;
  Mutex mu_;
  std::map<model::WorkerKey, Watch> watched_ GUARDED_BY(mu_);
  SupervisorSpawner spawner_;  // its own lock; Launch calls it without mu_
  // steady_clock ms of the next look at checkpoint markers.
  std::int64_t next_checkpoint_check_ GUARDED_BY(mu_) = 0;
};

}  // namespace drover::agent
