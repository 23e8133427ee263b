#pragma once

namespace drover::agent {

// `drover supervise WORKER_DIR`: the per-worker supervisor process, in the role of slurmstepd or
// containerd-shim. LocalRuntime starts one per worker, detached (its own session, re-parented
// away from the server), so that workers survive a server restart: its SupervisorSpawner forks
// one from a long-lived `drover spawn-supervisors` and calls this function in the child
// (supervisor_spawner.h); `drover supervise DIR` runs it in a process of its own. It talks to the
// runtime only through files in WORKER_DIR (drover/agent/worker_files.h):
//
//   1. writes supervisor.json {pid, start_time}; becomes a child subreaper
//      (PR_SET_CHILD_SUBREAPER) so that every descendant of the worker ends up its child;
//   2. reads launch.json. When it runs as root and run_as is set, looks the account up: an
//      unknown one is recorded as exit code 127 with "no such Unix account <name> on node
//      <node>", a root one (uid 0) without may_run_as_root as exit code 127 with "job would run
//      as root; the policy's accounts.allow_root does not list its owner", and nothing is
//      started (docs/security.md). Not root, it ignores run_as. With value_outputs, it creates
//      WORKER_DIR/outputs (model::NodeValueOutputDir; given to the account when switching: exit
//      code 127 when it cannot) and exports DROVER_OUTPUT_<NAME> = WORKER_DIR/outputs/NAME for
//      each. Then starts the worker with
//      vfork (the child shares the supervisor's memory until its exec, so everything it uses is
//      prepared before and it makes system calls only; a fork copied the supervisor's page
//      tables for each worker: docs/benchmarks.md, "The worker started with vfork"): own
//      process group, stdin /dev/null, stdout/stderr appended to stdout.log/stderr.log (opened
//      by the supervisor, which keeps them), no other open files, signals at their defaults,
//      SIGKILL if the supervisor dies (PR_SET_PDEATHSIG). The child takes on the account (its
//      groups, gid, uid; checks that root cannot be regained), then creates each of make_dirs
//      (with parents, mode 0755; relative to the working directory) with the account's own
//      permissions, enters working_dir (WORKER_DIR when empty) and execvp(argv), argv[0] looked
//      up in the worker's PATH; environment = LaunchSpec.env plus, when absent from it, PATH and
//      LANG from the supervisor's environment and HOME (the account's home, or the supervisor's
//      HOME), USER and LOGNAME (the account's name; only when switching). Whatever fails in the
//      child is seen through a close-on-exec pipe, written to stderr.log and recorded as exit
//      code 127 with its message: "cannot run as <name>: <call>: <strerror>", "cannot create
//      directory <path>: <strerror>", "exec failed: <strerror> (working directory <dir>)" or
//      "exec failed: <strerror> (<argv[0]>)";
//   3. writes started.json {pid, at};
//   4. on timeout (timeout_ms > 0, measured from the exec) or on SIGTERM/SIGINT to itself
//      (cancellation, or preemption when WORKER_DIR/preempt-notice exists then): SIGTERM to the
//      worker's process group, SIGKILL to it after kill_grace_ms; records timed_out, cancelled
//      or preempted (with the notice's reason in the message);
//   5. when the worker process exits: SIGKILL to whatever is left of its process group and to
//      every descendant that escaped it (they are re-parented to the supervisor), reaping them
//      all, so no orphan survives the worker; after a worker that succeeded, reads each value
//      output (agent::ReadOutputValue, with the account's file permissions when it switched)
//      into the exit's output_values, naming in the message each it could not read; then writes
//      exit.json and exits 0. A worker killed
//      by a signal is recorded with that signal and exit code 128 + signal (as shells do); the
//      message notes a timeout, a cancellation, an escalation to SIGKILL and leftovers killed.
//      A worker that died of a SIGKILL the supervisor did not send while the OOM-kill counter of
//      its memory cgroup (or the machine's) rose is recorded oom_killed (drover/agent/oom.h).
//      A SIGTERM that arrives before the worker was started records cancelled = true with
//      exit code -1 and "cancelled before start" (preempted = true and "preempted before start"
//      with a notice); an unreadable launch.json exit code -1.
//
// The supervisor keeps SIGTERM/SIGINT/SIGCHLD blocked and takes them with sigtimedwait; a
// spawner that blocks them before it runs the supervisor (SupervisorSpawner does) therefore cannot
// lose a cancellation sent before the supervisor is ready. Exit status: 0 when exit.json was
// written, 1 when the worker directory is unusable, 2 on a usage error.
int SupervisorMain(int argc, char** argv);

}  // namespace drover::agent
