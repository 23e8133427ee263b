#pragma once

// Time-based replay: a discrete-event driver that runs the production control::Controller (and
// through it the production scheduling engine) under a simulated clock on a Trace.
//
// The loop (RunReplay):
//   - Events sit in a priority queue ordered by (time, sequence number): the same trace and
//     options always give the same sequence of controller calls, hence the same result.
//   - At time 0 every node is added (Controller::UpsertNode). Each TraceJob is submitted at its
//     `submit` (Controller::Submit, owner = TraceJob::user).
//   - After the events of one instant, Controller::Schedule(now) runs, and its effects are
//     carried out: LaunchWorker -> the worker reports kStarted after startup_delay; StopWorker
//     -> the worker exits at once (preempted when the stop says so, else killed by SIGTERM, or
//     cancelled when the controller is cancelling the job). New events at the same instant are
//     handled in another round at that instant, followed by another Schedule.
//   - Work: a job's remaining work runs from the moment every worker of its attempt has started;
//     when it is done every worker exits 0. A job with checkpoint_interval > 0 reports a
//     checkpoint (Controller::ReportCheckpoint) after each interval of running. The controller
//     decides whether a preempted job resumes (Attempt::resumed): it then keeps the work up to
//     its latest checkpoint; otherwise it starts again from zero.
//   - Time limits: the controller does not enforce JobSpec::timeout (the supervisor does), so
//     the loop does: every worker exits timed out `timeout` after the workers started, unless
//     the work is done by then (a job whose work equals its limit succeeds). Under order sjf a
//     job without a time limit is submitted with its trace duration as its limit (its size for
//     SJF, and for backfill); that limit is never enforced.
//   - With pass_interval > 0, a pass runs at an instant only if the last one is at least that
//     old; otherwise one is queued for that time and handles everything that arrived meanwhile.
//   - A scheduling pass also runs every `tick` while jobs wait (aging, LAS demotion, min run
//     time, full passes); the controller's full_cycle_interval_ms is set to `tick`, the role the
//     server's loop gives to one second of real time.
//   - The run ends when every job is finished, or when nothing can progress any more (no
//     worker alive, nothing left to submit, no retry backoff pending): the jobs still waiting
//     are reported unfinished. It never loops forever: an instant that needs more than a
//     million rounds is an error (kInternal).
// Simulated time starts at an epoch (kReplayEpochMs) because the controller's timelines read 0
// as "not yet"; reports give seconds since the start of the trace.
//
// Not thread-safe per call; independent calls may run concurrently.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/result.h"
#include "drover/model/policy.h"
#include "drover/sim/trace/trace.h"

namespace drover::sim {

// Trace time 0 in the controller's clock.
inline constexpr TimeMs kReplayEpochMs = 1'000'000'000'000;

struct ReplayOptions {
  model::Policy policy;     // queues, quotas, order, preemption, backfill ...
  std::string policy_name;  // for the report
  // What the trace is, for the report's title ("synthetic Philly from acme_cluster_summary.csv,
  // load 2, seed 42"); "" when the caller does not say.
  std::string trace_name;
  // Launch -> process started, per worker. Default 0: workers start at once.
  DurationMs startup_delay = 0;
  // A scheduling pass at least this often while jobs wait (LAS demotion, aging). Default one
  // minute; smaller is more faithful to the server (which passes every second) and slower.
  DurationMs tick = 60'000;
  // Scheduling passes at most this often: events at later instants wait for the next pass,
  // like the server's cycles, which are spaced by their own cost. Default 0: a pass after every
  // instant that had events (the most faithful). A pass costs the controller time that grows
  // with the jobs waiting, and with the cluster's nodes and running jobs when one cannot start
  // (backfill, preemption) or under las; where such passes dominate, spacing them trades
  // fidelity for speed.
  DurationMs pass_interval = 0;
  // Include wall-clock fields; false -> byte-identical JSON for identical inputs.
  bool timing = true;
  // Include per-job rows (for CDFs); the CLI turns it off for huge traces.
  bool job_detail = true;
  // Include "log": one line per launch, preemption and end of an attempt, in order (see
  // RunReplay). Off by default: the golden scenario tests and debugging use it.
  bool event_log = false;
};

// A named policy for replays, a queue order's name (model::kQueueOrderNames: "fair-share",
// "fifo", "sjf", "las"): one leaf queue per distinct
// TraceJob spec.queue (in name order; "default" alone for an empty trace), equal weights, no
// quotas, the server's defaults for everything else (binpack, EASY backfill, preemption of
// interruptible jobs), and model::Policy::order set to the name. kInvalidArgument for other
// names.
Result<model::Policy> NamedReplayPolicy(std::string_view name, const Trace& trace);
// The same, from the trace's distinct queues (JobStream::Queues()).
Result<model::Policy> NamedReplayPolicy(std::string_view name,
                                        const std::vector<std::string>& queues);

// Replays `trace` under `options` and reports (keys in this order; seconds since the start of
// the trace, rounded to 3 decimals; percentiles by nearest rank):
//   "experiment": "replay", "policy", "trace" (ReplayOptions::trace_name), "jobs", "finished"
//   (terminal: succeeded, failed, timed out or cancelled), "unfinished" (never finished: did not
//   fit, or waited when nothing could progress any more), "rejected" (the controller refused the
//   submission: a queue the policy lacks; counted in unfinished too), "timed_out", "nodes",
//   "total_gpus", "gpus_per_node" (null when the nodes differ), "jct_seconds" {mean,p50,p95,p99}
//   (finished jobs: end - submit), "queue_seconds" {mean,p50,p95,p99} (finished jobs: submit to
//   first placement plus every later wait ready but not placed: model::ComputeMetrics' queue_wait
//   plus, with pass_interval, the wait from submission to the pass that made the job ready),
//   "makespan_seconds" (first submit to last end), "preemptions" (attempts ended by preemption),
//   "lost_gpu_hours" (of preempted attempts: GPUs x time since the later of placement and the
//   attempt's last checkpoint, as the engine weighs victims), "gpu_hours_allocated" (GPUs x time
//   from placement to release, every attempt; fractional GPUs count their share),
//   "gpu_hours_by_result" {"cancelled", "failed", "succeeded", "timed_out", "unfinished": GPU-hours
//   allocated to the jobs that ended so (every attempt, whole GPUs held: model::Goodput's
//   accounting), "preemption_lost", "retry_lost": of those, the GPU-hours that produced nothing
//   kept (model::AttemptCost::lost_gpu_ms)}, "gpu_hours_per_result" (all allocated GPU-hours per
//   job that succeeded, model::Goodput::GpuHoursPerResult; 0 when none did),
//   "lifecycle_seconds" {queue (= queue_seconds.mean), placement (placed -> launch handed),
//   startup (-> all workers running), run (-> finished)}: means over finished jobs' last
//   attempts that reached each phase,
//   "gpu_allocation_over_time": [[t_s, percent of the cluster's GPUs allocated], ...] (at most
//   500 points, evenly spaced from 0 to the makespan's end, value at each point),
//   "queue_share_over_time": {"<queue>": [[t_s, percent of allocated GPUs], ...]},
//   "per_queue": {"<queue>": {"jobs", "queue_seconds", "jct_seconds"}},
//   "job_rows" (if job_detail): [{"name","queue","team","user","gpus","submit_s","start_s"
//   (first placement, null if never),"end_s" (null if unfinished),"queue_s","jct_s" (null if
//   unfinished),"preemptions"}], in trace order,
//   "log" (if event_log): ["<t_s> start NAME#ATTEMPT NODE[GPUS] ...", "<t_s> preempt NAME#A",
//   "<t_s> end NAME STATE"],
//   "events" (events handled: submissions, worker events, checkpoints, time limits, ticks),
//   "passes" (Controller::Schedule calls),
//   and if timing: "wall_seconds", "controller_seconds" (of it, inside Controller calls),
//   "events_per_second", "peak_rss_bytes" (getrusage).
// Errors: kInvalidArgument for a policy the controller refuses or that hands a queue to an
// external executor (naming the queue: the simulator models no engine), a negative
// startup_delay or pass_interval, or a tick < 1; kInternal if an instant never settles.
// Memory: what the replay keeps per job is a fixed record of about 150 bytes (its submission,
// run time, limits, queue and outcome; names only with job_detail or event_log); the controller
// holds the records of jobs not yet ended only, as each ended job's outcome is taken into the
// report and its record forgotten (Controller::Forget).
Result<nlohmann::json> RunReplay(const Trace& trace, const ReplayOptions& options);
// The same on `nodes` and the jobs of `jobs`, which the replay takes one at a time as their
// submission times come, so that the trace need not be held (a SyntheticJobStream of a million
// jobs). kInvalidArgument also for a job submitted before the one ahead of it in the stream.
Result<nlohmann::json> RunReplay(const std::vector<model::Node>& nodes, JobStream& jobs,
                                 const ReplayOptions& options);

// What-if on a live installation: the jobs the server with data directory `data_dir` recorded
// (DATA_DIR/drover.db, see drover/store) and that were submitted in [from, to) (epoch ms)
// become a trace, submit times relative to `from`.
//   - Nodes: the store keeps no node inventory, so the nodes are rebuilt from the placements of
//     every stored job: each node named by a worker, with GPUs 0..(highest index used), the
//     model the jobs placed there asked for (else "GPU"), time-sliced where a job shared one,
//     and as much CPU and memory as was ever requested on it at once (at least 1 core, 1 GiB).
//   - Jobs that never ran (no attempt reached running) are left out. Duration: the work that
//     counted: the last attempt's run time plus, for each attempt followed by one that resumed
//     from a checkpoint, its run time up to its last checkpoint. No checkpoint interval (the
//     store keeps only each attempt's last checkpoint). The spec is kept (queue, team, gang,
//     timeout, interruptible, priority); names get "-<id>" appended where not unique.
// Errors: kNotFound if DATA_DIR/drover.db does not exist; kInvalidArgument if from > to; the
// store's errors.
Result<Trace> TraceFromDataDir(const std::string& data_dir, TimeMs from, TimeMs to);

// Per team (JobSpec::team, else the queue) of two RunReplay reports: {"teams": {"<team>":
// {"before": {"jobs","mean","p50","p95"}, "after": {...}, "difference": {"mean","p50","p95"}
// (after - before)}}}, queue times in seconds. Reads "job_rows" (finished jobs); a report
// without them is read per queue from "per_queue". A side without the team is null, and so is
// the difference.
nlohmann::json CompareQueueTimes(const nlohmann::json& before, const nlohmann::json& after);

}  // namespace drover::sim
