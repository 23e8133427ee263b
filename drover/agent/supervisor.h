#pragma once

namespace drover::agent {

// `drover supervise WORKER_DIR`: the per-worker supervisor process, in the role of slurmstepd or
// containerd-shim. LocalRuntime starts one per worker, detached (its own session, re-parented
// away from the server), so that workers survive a server restart. It talks to the runtime only
// through files in WORKER_DIR (drover/agent/worker_files.h):
//
//   1. writes supervisor.json {pid, start_time}; becomes a child subreaper
//      (PR_SET_CHILD_SUBREAPER) so that every descendant of the worker ends up its child;
//   2. reads launch.json and creates each of its make_dirs (with parents, mode 0755; relative
//      to the working directory); a failure is recorded as exit code 127 with "cannot create
//      directory <path>: <strerror>" and nothing is started. Then forks the worker: own
//      process group, chdir(working_dir or WORKER_DIR when empty), stdin /dev/null,
//      stdout/stderr appended to stdout.log/stderr.log,
//      environment = LaunchSpec.env plus PATH, HOME and LANG from its own environment when
//      absent, no other open files, signals at their defaults, SIGKILL if the supervisor dies
//      (PR_SET_PDEATHSIG), then execvp(argv) with argv[0] looked up in the worker's PATH. An exec
//      (or chdir) failure is seen through a close-on-exec pipe and recorded as exit code 127 with
//      "exec failed: <strerror>";
//   3. writes started.json {pid, at};
//   4. on timeout (timeout_ms > 0, measured from the exec) or on SIGTERM/SIGINT to itself
//      (cancellation, or preemption when WORKER_DIR/preempt-notice exists then): SIGTERM to the
//      worker's process group, SIGKILL to it after kill_grace_ms; records timed_out, cancelled
//      or preempted (with the notice's reason in the message);
//   5. when the worker process exits: SIGKILL to whatever is left of its process group and to
//      every descendant that escaped it (they are re-parented to the supervisor), reaping them
//      all, so no orphan survives the worker; then writes exit.json and exits 0. A worker killed
//      by a signal is recorded with that signal and exit code 128 + signal (as shells do); the
//      message notes a timeout, a cancellation, an escalation to SIGKILL and leftovers killed.
//      A SIGTERM that arrives before the worker was forked records cancelled = true with
//      exit code -1 and "cancelled before start" (preempted = true and "preempted before start"
//      with a notice); an unreadable launch.json exit code -1.
//
// The supervisor keeps SIGTERM/SIGINT/SIGCHLD blocked and takes them with sigtimedwait; a
// spawner that blocks them before exec (LocalRuntime does) therefore cannot lose a cancellation
// sent before the supervisor is ready. Exit status: 0 when exit.json was written, 1 when the
// worker directory is unusable, 2 on a usage error.
int SupervisorMain(int argc, char** argv);

}  // namespace drover::agent
