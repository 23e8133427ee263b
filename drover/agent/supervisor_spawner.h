#pragma once

// SupervisorSpawner: starts the per-worker supervisors (supervisor.h) by forking a long-lived
// process that already runs the supervisor's code, instead of exec'ing the supervisor binary once
// per worker. An exec of `drover-supervise` cost 4.3 ms of CPU on this project's 2-core VM (the
// kernel's exec, the dynamic loader, libstdc++'s start-up), a fork of the running spawner 0.9 ms
// (docs/benchmarks.md, "A spawner instead of an exec per supervisor"); a trivial job paid that
// exec on top of its own command's.
//
// The spawner is `<supervisor program> spawn-supervisors` (SupervisorSpawnerMain), started by the
// first Spawn and again after it died, as an os::HelperProcess: this process's child, which talks
// to it only through a socket pair (no name in the file system, so nothing else can ask it to
// start anything). For each request, the name of a worker directory, it forks a child that
//   - starts a new session (setsid: out of reach of a kill of the server's process group),
//   - takes stdin from /dev/null and appends stdout and stderr to <dir>/supervisor.log,
//   - keeps no other descriptor (the spawner's socket, the data folder's lock: none reaches it),
//   - enters <dir>, resets every signal to its default disposition and blocks SIGTERM, SIGINT
//     and SIGCHLD (the supervisor takes them with sigtimedwait, so none sent early is lost),
//   - and runs `supervise <dir>` (SupervisorMain) in that process, never returning to the loop.
// A supervisor is therefore the spawner's child, not the server's: the spawner ignores SIGCHLD,
// so the kernel reaps each one as it exits (none is left a zombie that IsAlive would have to
// tell apart). Supervisors outlive the spawner and the server (then as children of init or the
// nearest subreaper), as they outlived the server when it spawned them itself.
//
// The spawner exits when its socket closes (the runtime is destroyed, or this process died). Its
// environment is the one this process had when it started it; the supervisor passes PATH, HOME
// and LANG from it to workers that do not set them (supervisor.h).

#include <sys/types.h>

#include <optional>
#include <string>

#include "drover/agent/worker_files.h"
#include "drover/common/result.h"
#include "drover/common/thread_annotations.h"
#include "drover/os/helper_process.h"

namespace drover::agent {

class SupervisorSpawner {
 public:
  // `program`: an executable that implements `spawn-supervisors` (drover-supervise, or the
  // drover binary). Nothing starts until the first Spawn.
  explicit SupervisorSpawner(std::string program);
  // Closes the socket and ends the spawner (SIGKILL, then reaped); its supervisors keep running.
  ~SupervisorSpawner();
  SupervisorSpawner(const SupervisorSpawner&) = delete;
  SupervisorSpawner& operator=(const SupervisorSpawner&) = delete;

  // Starts the supervisor of the absolute `worker_dir` (at most kMaxWorkerDirBytes) and returns
  // it once the child's set-up above succeeded:
  //   - the supervisor's identity (pid and start time; start time 0 if it has already exited);
  //   - kInternal naming the step that failed (the log, the directory, the spawner's start) when
  //     no supervisor was started; the caller may clean up and retry;
  //   - std::nullopt when the spawner died or did not answer within kReplyTimeoutMs after it
  //     took the request: a supervisor may or may not run. The caller then watches the
  //     directory as it does an adopted worker's (supervisor.json, or lost after the start
  //     grace) and must not start another.
  // A spawner found dead before the request was sent is restarted and the request sent again.
  // Thread-safe; requests are served one at a time (a fork each, about a millisecond).
  Result<std::optional<ProcessIdentity>> Spawn(const std::string& worker_dir) EXCLUDES(mu_);

  // The spawner's pid, 0 while none runs (for tests).
  pid_t SpawnerPid() EXCLUDES(mu_);

  static constexpr std::size_t kMaxWorkerDirBytes = 4000;
  static constexpr int kReplyTimeoutMs = 10'000;

 private:
  Mutex mu_;
  // `<program> spawn-supervisors`, with LD_BIND_NOW=1 (the constructor says why).
  os::HelperProcess process_ GUARDED_BY(mu_);
};

// The internal verbs of the drover binaries and drover-supervise, for their main functions:
// `supervise DIR` (SupervisorMain) and `spawn-supervisors` (SupervisorSpawnerMain), with argv as
// main received it. The verb's exit status, or nullopt when argv[1] is neither.
std::optional<int> RunSupervisorVerb(int argc, char** argv);

// `drover spawn-supervisors`: the spawner's loop, serving requests on descriptor 3 until it
// closes. Exit status 0 when it closed, 1 when reading it failed, 2 on a usage error (any
// argument, or no socket pair's end on 3).
int SupervisorSpawnerMain(int argc, char** argv);

}  // namespace drover::agent
