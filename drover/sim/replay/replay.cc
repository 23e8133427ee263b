#include "drover/sim/replay/replay.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "drover/control/controller.h"
#include "drover/model/job_spec.h"
#include "drover/model/metrics.h"
#include "drover/sim/replay/stats.h"

namespace drover::sim {
namespace {

using model::JobState;
using model::WorkerEvent;

// Rounds one instant may take before the loop gives up (see replay.h).
constexpr int kMaxRoundsPerInstant = 1'000'000;
// Points of the sampled time series.
constexpr std::int64_t kSeriesPoints = 500;

enum class EventKind : std::uint8_t {
  kStarted,     // a worker's process started
  kWorkDone,    // the attempt's work is done: every worker exits 0
  kTimeLimit,   // the attempt reached its time limit: every worker exits timed out
  kStop,        // a stopped worker exits
  kCheckpoint,  // the attempt saves a checkpoint
  kTick,        // a scheduling pass while jobs wait (ReplayOptions::tick)
  kPass,        // a pass held back by ReplayOptions::pass_interval
};

// kStop flags.
constexpr std::uint8_t kStopPreempt = 1;
constexpr std::uint8_t kStopCancel = 2;

struct Event {
  TimeMs at = 0;
  std::uint64_t seq = 0;
  EventKind kind = EventKind::kTick;
  std::uint8_t flags = 0;
  std::int32_t job = 0;  // trace index (after sorting by submit)
  std::int32_t attempt = 0;
  std::int32_t rank = 0;
};

// What the report reads of one job's controller record (model::Job), taken when the job ends,
// after which the controller forgets the record (Controller::Forget), or at the end of the run
// for a job that never ended. Times are the controller's; -1 where a phase was not reached.
struct Outcome {
  bool recorded = false;  // the controller had the job (submitted and accepted)
  model::JobState state = model::JobState::kPending;
  TimeMs first_start = 0;  // the first attempt's placement; 0 if never placed
  TimeMs finished_at = 0;  // terminal jobs
  DurationMs waited = 0;   // queueing delay (see replay.h, "queue_seconds")
  DurationMs placement = -1, startup = -1, run = -1;  // of the last attempt (lifecycle_seconds)
  std::int32_t preemptions = 0;
};

// The most jobs whose per-job tables Replay::Run reserves at once (JobStream::SizeHint).
constexpr std::size_t kMostJobsReserved = 4'000'000;

struct Later {
  bool operator()(const Event& a, const Event& b) const {
    return a.at != b.at ? a.at > b.at : a.seq > b.seq;
  }
};

// The pending events, taken in (at, seq) order. Events due a fixed delay after the instant they
// are pushed at (a worker's start, `startup_delay` after its launch; a stop, at once) come in
// that order already, since the replay's clock never goes back: each kind waits in a FIFO lane
// and skips the heap, whose sifts through a hundred thousand events miss the cache at every level
// (every worker's start is such; the heap keeps work ends, time limits, checkpoints and passes).
class EventQueue {
 public:
  // Lanes: kAny (any time: the heap), and one per fixed delay.
  enum class Lane { kAny, kStartup, kImmediate };
  void Push(const Event& event, Lane lane) {
    if (lane == Lane::kAny) {
      heap_.push(event);
      return;
    }
    std::deque<Event>& fifo = lane == Lane::kStartup ? startup_ : immediate_;
    DROVER_CHECK(fifo.empty() || !Later{}(fifo.back(), event));  // the clock never goes back
    fifo.push_back(event);
  }
  bool empty() const { return heap_.empty() && startup_.empty() && immediate_.empty(); }
  // The earliest event; the queue must not be empty.
  const Event& top() const { return *Earliest(); }
  void pop() {
    const Event* earliest = Earliest();
    if (!startup_.empty() && earliest == &startup_.front()) {
      startup_.pop_front();
    } else if (!immediate_.empty() && earliest == &immediate_.front()) {
      immediate_.pop_front();
    } else {
      heap_.pop();
    }
  }

 private:
  const Event* Earliest() const {
    const Event* earliest = heap_.empty() ? nullptr : &heap_.top();
    for (const std::deque<Event>* fifo : {&startup_, &immediate_}) {
      if (!fifo->empty() && (earliest == nullptr || Later{}(*earliest, fifo->front()))) {
        earliest = &fifo->front();
      }
    }
    DROVER_CHECK(earliest != nullptr);
    return earliest;
  }

  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  std::deque<Event> startup_, immediate_;
};

// The loop's view of one job: what it reads of the trace's job once that is submitted, and what it
// needs to account the work; the controller keeps the rest.
struct JobSim {
  TimeMs submit = 0;  // TraceJob::submit
  DurationMs duration = 0;
  DurationMs timeout = -1;  // the trace spec's time limit; -1 for none
  DurationMs checkpoint_interval = 0;
  std::int32_t queue = 0;             // index into Replay::queue_names_
  std::int32_t spec_workers = 0;      // JobSpec::workers
  JobId id;                           // 0 until submitted, and if rejected
  std::int64_t milli_per_worker = 0;  // milli-GPUs of one worker (model::MilliGpusPerWorker)
  std::int32_t attempt = 0;           // the attempt last launched
  std::int32_t workers = 0;           // its workers
  std::int32_t started = 0;           // of them started
  bool running = false;               // its work is being done
  bool stopping = false;              // a stop arrived: its work ended
  bool ended = false;                 // the loop sent every worker's exit itself
  TimeMs run_start = 0;               // when every worker had started
  TimeMs end_at = 0;                  // when the work is done or the time limit hits
  DurationMs work_base = 0;           // work done before run_start (kept by a checkpoint)
  DurationMs saved = 0;               // work at the latest checkpoint
};

// The first leaf queue (depth first) whose jobs `policy` hands to an external executor, with
// that executor; nullopt if every leaf runs its jobs locally.
std::optional<std::pair<std::string, model::ExecutorConfig>> FirstExternalLeaf(
    const std::vector<model::QueueConfig>& queues, const model::ExecutorConfig& inherited) {
  for (const model::QueueConfig& queue : queues) {
    const model::ExecutorConfig& executor = queue.executor ? *queue.executor : inherited;
    if (queue.children.empty()) {
      if (executor.external()) return std::make_pair(queue.name, executor);
    } else if (auto found = FirstExternalLeaf(queue.children, executor)) {
      return found;
    }
  }
  return std::nullopt;
}

// A replay carries out only the local effects: Run refuses a policy with an external queue
// (the simulator has no model of an engine's queueing), so the external ones cannot occur.
class Replay final : private control::EffectSink {
 public:
  Replay(const std::vector<model::Node>& nodes, JobStream& stream, const ReplayOptions& options)
      : nodes_(nodes),
        stream_(stream),
        options_(options),
        controller_(ControllerOptions(options)) {}

  Result<nlohmann::json> Run();

 private:
  static control::Options ControllerOptions(const ReplayOptions& options) {
    control::Options out;
    out.full_cycle_interval_ms = options.tick;
    out.refuse_infeasible = false;  // a trace replays every job it recorded
    out.launch_contract = false;    // it starts no process: key, node and GPUs are enough
    out.decision_log = false;       // nothing reads the decisions of a replay
    return out;
  }
  double Seconds(TimeMs at) const { return static_cast<double>(at - kReplayEpochMs) / 1000.0; }
  // The trace job's name, for the event log and the job rows (which alone keep names).
  const std::string& NameOf(std::int32_t index) const { return names_[index].name; }

  void Push(TimeMs at, EventKind kind, std::int32_t job, std::int32_t attempt = 0,
            std::int32_t rank = 0, std::uint8_t flags = 0) {
    const EventQueue::Lane lane = kind == EventKind::kStarted ? EventQueue::Lane::kStartup
                                  : kind == EventKind::kStop  ? EventQueue::Lane::kImmediate
                                                              : EventQueue::Lane::kAny;
    queue_.Push(Event{at, next_seq_++, kind, flags, job, attempt, rank}, lane);
    if (kind != EventKind::kTick) ++pending_work_events_;
  }
  void Handle(const Event& event);
  // Runs `call` (a controller call), adding its wall time to controller_ns_ when timing.
  template <typename Call>
  auto Timed(Call&& call) {
    if (!options_.timing) return call();
    const auto start = std::chrono::steady_clock::now();
    struct Add {
      std::int64_t& total;
      std::chrono::steady_clock::time_point start;
      ~Add() {
        total += std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count();
      }
    } add{controller_ns_, start};
    return call();
  }
  // A scheduling pass at now_.
  void Pass();
  // Takes in the stream's next job (at its submission time) and submits it; its spec is moved
  // from (a JobSpec move costs about a thousand instructions: it is moved once, into Submit).
  void SubmitJob(TraceJob& trace_job);
  void BeginWork(std::int32_t index);
  void SendExits(std::int32_t index, const model::ExitStatus& exit);
  void WorkerEventFor(std::int32_t index, std::int32_t attempt, std::int32_t rank,
                      WorkerEvent::Kind kind, const model::ExitStatus& exit = {});
  // Takes in the last controller call's step: counts transitions, carries out effects, folds the
  // jobs that ended into the report (Fold) and has the controller forget them.
  void Drain();
  // Takes what the report needs of job `index`'s record into outcomes_ and the run's totals.
  void Fold(std::int32_t index, const model::Job& job);
  // control::EffectSink. Launches and stops only queue events: they call back into nothing.
  void LaunchWorker(const control::LaunchWorker& launch) override;
  void StopWorker(const control::StopWorker& stop) override;
  // A trace never updates a running job: there is nothing to change.
  void SetWorkerTimeout(const control::SetWorkerTimeout&) override {}
  // Outputs (of jobs replayed from a data directory) publish at once, after the step: a path
  // output at its destination, a value output as the empty string.
  void PublishOutputs(const control::PublishOutputs& publish) override {
    publishes_.push_back(publish);
  }
  void DiscardOutputs(const control::DiscardOutputs&) override {}
  void ForgetPublication(const control::ForgetPublication&) override {}  // keeps none
  void SubmitExternal(const control::SubmitExternal&) override { DROVER_CHECK(false); }
  void CancelExternal(const control::CancelExternal&) override { DROVER_CHECK(false); }
  std::int32_t IndexOf(JobId id) const {
    const auto value = static_cast<std::size_t>(id.value());
    return value < index_of_id_.size() ? index_of_id_[value] : -1;
  }
  // The earliest retry backoff end of a ready job after `now_`, or 0 if none.
  TimeMs NextBackoffEnd() const;
  nlohmann::json Report(std::chrono::steady_clock::time_point wall_start) const;

  const std::vector<model::Node>& nodes_;
  JobStream& stream_;
  const ReplayOptions& options_;
  control::Controller controller_;
  control::Step step_;
  std::vector<JobSim> jobs_;  // by position in the stream
  // Names of the jobs (by position), kept only for job rows or the event log.
  struct Names {
    std::string name, team, user;
  };
  std::vector<Names> names_;
  std::vector<std::string> queue_names_;  // JobStream::Queues()
  std::vector<std::int32_t> index_of_id_;
  EventQueue queue_;
  std::uint64_t next_seq_ = 0;
  std::int64_t pending_work_events_ = 0;  // queued events other than ticks
  bool tick_pending_ = false;
  bool pass_pending_ = false;
  bool passed_ = false;  // a pass ran; last_pass_ is set
  TimeMs last_pass_ = 0;
  std::int64_t passes_ = 0;
  std::int64_t controller_ns_ = 0;  // in controller calls, when timing
  TimeMs now_ = kReplayEpochMs;
  std::int64_t ready_ = 0;  // jobs the controller holds ready
  std::int64_t events_ = 0;
  std::int64_t rejected_ = 0;
  std::vector<std::string> log_;
  std::vector<control::PublishOutputs> publishes_;  // of the step being drained

  // The report's material (Fold), so that no record outlives its job's end.
  std::vector<Outcome> outcomes_;  // by position in the stream
  // Allocation changes (time, queue, milli-GPUs), for the time series.
  struct Delta {
    TimeMs at;
    int queue;
    std::int64_t milli;
  };
  std::vector<Delta> deltas_;
  // Milli-GPUs x milliseconds allocated (every attempt) and lost to preemption.
  std::int64_t allocated_milli_ms_ = 0, lost_milli_ms_ = 0;
  // Allocated GPU time by the job's outcome (model::Goodput's accounting, every attempt).
  model::Goodput goodput_;
  std::map<std::string, std::int64_t, std::less<>> gpu_ms_by_result_ = {
      {"succeeded", 0}, {"failed", 0}, {"timed_out", 0}, {"cancelled", 0}, {"unfinished", 0}};
};

void Replay::WorkerEventFor(std::int32_t index, std::int32_t attempt, std::int32_t rank,
                            WorkerEvent::Kind kind, const model::ExitStatus& exit) {
  WorkerEvent event;
  event.key = model::WorkerKey{jobs_[index].id, attempt, rank};
  event.kind = kind;
  event.at = now_;
  event.exit = exit;
  Timed([&] { controller_.OnWorkerEvent(event, step_); });
  Drain();
}

void Replay::SubmitJob(TraceJob& trace_job) {
  const auto index = static_cast<std::int32_t>(jobs_.size());
  JobSim& sim = jobs_.emplace_back();
  outcomes_.emplace_back();
  sim.submit = trace_job.submit;
  sim.duration = trace_job.duration;
  sim.timeout = trace_job.spec.timeout.value_or(-1);
  sim.checkpoint_interval = trace_job.checkpoint_interval;
  auto queue = std::lower_bound(queue_names_.begin(), queue_names_.end(), trace_job.spec.queue);
  DROVER_CHECK(queue != queue_names_.end() && *queue == trace_job.spec.queue);  // JobStream
  sim.queue = static_cast<std::int32_t>(queue - queue_names_.begin());
  sim.spec_workers = trace_job.spec.workers;
  if (trace_job.spec.workers > 0) {
    sim.milli_per_worker = model::MilliGpusPerWorker(trace_job.spec.requirements);
  }
  if (options_.job_detail || options_.event_log) {
    names_.push_back({trace_job.name, trace_job.spec.team, trace_job.user});
  }
  // Moved into the vector: a braced list would copy the spec (its elements are const).
  std::vector<model::JobSpec> specs;
  specs.push_back(std::move(trace_job.spec));
  model::JobSpec& spec = specs.back();
  if (!trace_job.user.empty()) spec.owner = trace_job.user;
  // SJF with known durations: a job without a time limit is ordered by its trace duration (the
  // limit is never reached, so nothing else changes).
  if (options_.policy.order == model::QueueOrder::kSjf && !spec.timeout) {
    spec.timeout = trace_job.duration;
  }
  Result<control::SubmitResult> submitted =
      Timed([&] { return controller_.Submit(std::move(specs), "", trace_job.user, now_, step_); });
  if (!submitted || submitted->ids.size() != 1) {
    ++rejected_;
    step_ = control::Step{};
    return;
  }
  const JobId id = submitted->ids.front();
  jobs_[index].id = id;
  const auto value = static_cast<std::size_t>(id.value());
  if (value >= index_of_id_.size()) index_of_id_.resize(value + 1, -1);
  index_of_id_[value] = index;
  Drain();
}

void Replay::BeginWork(std::int32_t index) {
  JobSim& job = jobs_[index];
  job.running = true;
  job.run_start = now_;
  const DurationMs remaining = std::max<DurationMs>(job.duration - job.work_base, 0);
  if (job.timeout >= 0 && job.timeout < remaining) {
    job.end_at = now_ + job.timeout;
    Push(job.end_at, EventKind::kTimeLimit, index, job.attempt);
  } else {
    job.end_at = now_ + remaining;
    Push(job.end_at, EventKind::kWorkDone, index, job.attempt);
  }
  const DurationMs interval = job.checkpoint_interval;
  if (interval > 0 && now_ + interval < job.end_at) {
    Push(now_ + interval, EventKind::kCheckpoint, index, job.attempt);
  }
}

void Replay::SendExits(std::int32_t index, const model::ExitStatus& exit) {
  JobSim& job = jobs_[index];
  job.running = false;
  job.stopping = true;
  job.ended = true;
  for (std::int32_t rank = 0; rank < job.workers; ++rank) {
    WorkerEventFor(index, job.attempt, rank, WorkerEvent::Kind::kExited, exit);
  }
}

void Replay::Handle(const Event& event) {
  ++events_;
  if (event.kind == EventKind::kTick) {
    tick_pending_ = false;
    return;
  }
  --pending_work_events_;
  if (event.kind == EventKind::kPass) {
    pass_pending_ = false;
    return;
  }
  JobSim& job = jobs_[event.job];
  const bool current = job.attempt == event.attempt;
  switch (event.kind) {
    case EventKind::kStarted:
      WorkerEventFor(event.job, event.attempt, event.rank, WorkerEvent::Kind::kStarted);
      if (current && !job.stopping && ++job.started == job.workers) BeginWork(event.job);
      break;
    case EventKind::kWorkDone:
      if (current && job.running) {
        model::ExitStatus exit;
        exit.exit_code = 0;
        SendExits(event.job, exit);
      }
      break;
    case EventKind::kTimeLimit:
      if (current && job.running) {
        model::ExitStatus exit;
        exit.signal = SIGTERM;
        exit.timed_out = true;
        SendExits(event.job, exit);
      }
      break;
    case EventKind::kStop: {
      model::ExitStatus exit;
      exit.signal = SIGTERM;
      exit.preempted = (event.flags & kStopPreempt) != 0;
      exit.cancelled = (event.flags & kStopCancel) != 0;
      WorkerEventFor(event.job, event.attempt, event.rank, WorkerEvent::Kind::kExited, exit);
      break;
    }
    case EventKind::kCheckpoint:
      if (current && job.running) {
        Status reported = Timed([&] { return controller_.ReportCheckpoint(job.id, now_, step_); });
        Drain();
        if (reported) job.saved = job.work_base + (now_ - job.run_start);
        const DurationMs interval = job.checkpoint_interval;
        if (now_ + interval < job.end_at) {
          Push(now_ + interval, EventKind::kCheckpoint, event.job, job.attempt);
        }
      }
      break;
    case EventKind::kTick:
    case EventKind::kPass:
      break;
  }
}

void Replay::LaunchWorker(const control::LaunchWorker& launch) {
  const std::int32_t index = IndexOf(launch.spec.key.job);
  if (index < 0) return;
  JobSim& job = jobs_[index];
  if (launch.spec.key.attempt != job.attempt) {
    const model::Job* record = controller_.Find(job.id);
    const model::Attempt* attempt = record ? record->current_attempt() : nullptr;
    job.attempt = launch.spec.key.attempt;
    job.workers = attempt ? static_cast<std::int32_t>(attempt->workers.size()) : 1;
    job.started = 0;
    job.running = job.stopping = job.ended = false;
    const bool resumed = attempt != nullptr && attempt->resumed;
    if (!resumed) job.saved = 0;
    job.work_base = job.saved;
    if (options_.event_log) {
      log_.push_back(fmt::format("{:.3f} start {}#{}", Seconds(now_), NameOf(index), job.attempt));
    }
  }
  if (options_.event_log && !log_.empty()) {
    log_.back() +=
        fmt::format(" {}[{}]", launch.spec.node.value(), fmt::join(launch.spec.gpus, ","));
  }
  Push(now_ + options_.startup_delay, EventKind::kStarted, index, launch.spec.key.attempt,
       launch.spec.key.rank);
}

void Replay::StopWorker(const control::StopWorker& stop) {
  const std::int32_t index = IndexOf(stop.key.job);
  if (index < 0) return;
  JobSim& job = jobs_[index];
  if (stop.key.attempt == job.attempt) {
    if (job.ended) return;  // the loop is sending every worker's exit already
    if (!job.stopping && stop.preempt && options_.event_log) {
      log_.push_back(
          fmt::format("{:.3f} preempt {}#{}", Seconds(now_), NameOf(index), job.attempt));
    }
    job.running = false;
    job.stopping = true;
  }
  std::uint8_t flags = stop.preempt ? kStopPreempt : 0;
  if (!stop.preempt) {
    const model::Job* record = controller_.Find(stop.key.job);
    const model::Attempt* attempt = record ? record->current_attempt() : nullptr;
    if (attempt && attempt->outcome == JobState::kCancelled) flags |= kStopCancel;
  }
  Push(now_, EventKind::kStop, index, stop.key.attempt, stop.key.rank, flags);
}

void Replay::Drain() {
  std::vector<JobId> ended;
  for (const model::Transition& transition : step_.transitions) {
    if (transition.from == JobState::kReady) --ready_;
    if (transition.to == JobState::kReady) ++ready_;
    if (model::IsTerminal(transition.to)) ended.push_back(transition.job);
    if (options_.event_log && model::IsTerminal(transition.to)) {
      const std::int32_t index = IndexOf(transition.job);
      if (index >= 0) {
        log_.push_back(fmt::format("{:.3f} end {} {}", Seconds(transition.at), NameOf(index),
                                   model::JobStateName(transition.to)));
      }
    }
  }
  // Effects call back into nothing: they only queue events, so iterating is safe.
  for (const control::Effect& effect : step_.effects) control::Dispatch(effect, *this);
  step_.changed.clear();
  step_.transitions.clear();
  step_.effects.clear();
  step_.decisions.clear();
  for (JobId id : ended) {
    const std::int32_t index = IndexOf(id);
    const model::Job* job = controller_.Find(id);
    if (index < 0 || job == nullptr || outcomes_[index].recorded) continue;
    Fold(index, *job);
    // A record the controller must keep (Controller::Forget) stays; Report skips it as folded.
    (void)controller_.Forget(id);
  }
  if (publishes_.empty()) return;
  for (const control::PublishOutputs& publish : std::exchange(publishes_, {})) {
    std::map<std::string, std::string> published;
    for (const model::StagedOutput& output : publish.outputs) {
      published[output.name] = output.destination;
    }
    Timed([&] {
      controller_.OnOutputsPublished(publish.job, publish.attempt, published, now_, step_);
    });
  }
  Drain();
}

void Replay::Fold(std::int32_t index, const model::Job& job) {
  const JobSim& sim = jobs_[index];
  Outcome& outcome = outcomes_[index];
  outcome.recorded = true;
  outcome.state = job.state;
  // Every attempt's allocated GPU time (what Goodput::Add adds up), under the job's outcome.
  const std::int64_t allocated_before = goodput_.gpu_ms;
  goodput_.Add(job, now_);
  const std::string_view result =
      model::IsTerminal(job.state) ? model::JobStateName(job.state) : "unfinished";
  auto by_result = gpu_ms_by_result_.find(result);
  if (by_result == gpu_ms_by_result_.end()) {
    by_result = gpu_ms_by_result_.emplace(std::string(result), 0).first;
  }
  by_result->second += goodput_.gpu_ms - allocated_before;
  const int queue = sim.queue;
  for (const model::Attempt& attempt : job.attempts) {
    if (attempt.placed_at == 0) continue;
    if (outcome.first_start == 0) outcome.first_start = attempt.placed_at;
    const std::int64_t milli =
        sim.milli_per_worker * static_cast<std::int64_t>(attempt.workers.size());
    const TimeMs released = attempt.finished_at != 0 ? attempt.finished_at : now_;
    allocated_milli_ms_ += milli * (released - attempt.placed_at);
    if (milli > 0) {
      deltas_.push_back({attempt.placed_at, queue, milli});
      deltas_.push_back({released, queue, -milli});
    }
    if (attempt.preempted_by) {
      ++outcome.preemptions;
      const TimeMs since = std::max(attempt.placed_at, attempt.last_checkpoint_at);
      lost_milli_ms_ += milli * std::max<TimeMs>(released - since, 0);
    }
  }
  if (!model::IsTerminal(job.state)) return;
  outcome.finished_at = job.finished_at;
  const model::JobMetrics metrics = model::ComputeMetrics(job, now_);
  // Submission to the pass that made it ready (only with pass_interval) also waits.
  const DurationMs before_ready =
      job.attempts.empty() ? 0 : job.attempts.front().ready_at - job.created_at;
  outcome.waited = metrics.queue_wait + before_ready;
  if (const model::Attempt* last = job.current_attempt()) {
    if (last->placed_at != 0 && last->workers_started_at != 0) {
      outcome.placement = last->workers_started_at - last->placed_at;
    }
    if (last->workers_started_at != 0 && last->running_at != 0) {
      outcome.startup = last->running_at - last->workers_started_at;
    }
    if (last->running_at != 0 && last->finished_at != 0) {
      outcome.run = last->finished_at - last->running_at;
    }
  }
}

void Replay::Pass() {
  Timed([&] { controller_.Schedule(now_, step_); });
  ++passes_;
  passed_ = true;
  last_pass_ = now_;
  Drain();
}

TimeMs Replay::NextBackoffEnd() const {
  TimeMs next = 0;
  for (const auto& [id, job] : controller_.jobs()) {
    if (job.state == JobState::kReady && job.not_before > now_ &&
        (next == 0 || job.not_before < next)) {
      next = job.not_before;
    }
  }
  return next;
}

Result<nlohmann::json> Replay::Run() {
  const auto wall_start = std::chrono::steady_clock::now();
  if (options_.startup_delay < 0) return InvalidArgument("startup_delay must not be negative");
  if (options_.tick < 1) return InvalidArgument("tick must be at least 1 ms");
  if (options_.pass_interval < 0) return InvalidArgument("pass_interval must not be negative");
  if (auto external = FirstExternalLeaf(options_.policy.queues, model::ExecutorConfig{})) {
    return InvalidArgument(fmt::format(
        "queue '{}' hands its jobs to {} (executor: {}); the simulator runs jobs on its own "
        "nodes only: remove the queue's executor setting to replay its jobs as local ones",
        external->first, model::ExecutorKindName(external->second.kind),
        model::ExecutorKindName(external->second.kind)));
  }
  DROVER_RETURN_IF_ERROR(controller_.SetPolicy(options_.policy));

  queue_names_ = stream_.Queues();
  // Grown by doubling, a million jobs' tables would copy themselves and fault fresh pages in
  // again at each growth. Ids start at 1; each attempt placed adds two allocation changes. The
  // hint comes from the user (--jobs-count): reserved up to kMostJobsReserved only (about
  // 880 MB of tables), past which the tables grow as before, so that a huge count fails no
  // sooner than the replay itself would.
  const std::size_t expected = std::min(stream_.SizeHint(), kMostJobsReserved);
  jobs_.reserve(expected);
  outcomes_.reserve(expected);
  deltas_.reserve(2 * expected);
  index_of_id_.reserve(expected + 2);
  index_of_id_.assign(2, -1);
  std::optional<TraceJob> next_job = stream_.Next();

  for (const model::Node& node : nodes_) controller_.UpsertNode(node, now_, step_);
  Drain();

  TimeMs last_instant = -1;
  int rounds = 0;
  while (true) {
    const bool submits_left = next_job.has_value();
    if (pending_work_events_ == 0 && !submits_left) {
      // Nothing is alive and nothing will arrive: only a retry backoff can still move a job.
      if (ready_ == 0) break;
      const TimeMs wake = NextBackoffEnd();
      if (wake == 0) break;
      now_ = wake;
      ++events_;
      Pass();
      continue;
    }
    TimeMs next = submits_left ? kReplayEpochMs + next_job->submit : 0;
    if (!queue_.empty() && (!submits_left || queue_.top().at < next)) next = queue_.top().at;
    now_ = next;
    if (now_ == last_instant) {
      if (++rounds > kMaxRoundsPerInstant) {
        return Internal(fmt::format("replay: instant {:.3f}s does not settle", Seconds(now_)));
      }
    } else {
      last_instant = now_;
      rounds = 0;
    }
    while (!queue_.empty() && queue_.top().at == now_) {
      const Event event = queue_.top();
      queue_.pop();
      Handle(event);
    }
    while (next_job && kReplayEpochMs + next_job->submit == now_) {
      ++events_;
      SubmitJob(*next_job);
      next_job = stream_.Next();
      if (next_job && kReplayEpochMs + next_job->submit < now_) {
        return InvalidArgument(fmt::format(
            "replay: job '{}' is submitted at {:.3f}s, before the job ahead of it in the trace",
            next_job->name, static_cast<double>(next_job->submit) / 1000.0));
      }
    }
    if (!passed_ || now_ - last_pass_ >= options_.pass_interval) {
      Pass();
    } else if (!pass_pending_) {
      pass_pending_ = true;
      Push(last_pass_ + options_.pass_interval, EventKind::kPass, 0);
    }
    if (ready_ > 0 && !tick_pending_) {
      tick_pending_ = true;
      Push(now_ + options_.tick, EventKind::kTick, 0);
    }
  }
  // The jobs that never ended are still the controller's.
  for (std::size_t i = 0; i < jobs_.size(); ++i) {
    const model::Job* job = jobs_[i].id.value() > 0 ? controller_.Find(jobs_[i].id) : nullptr;
    if (job != nullptr && !outcomes_[i].recorded) Fold(static_cast<std::int32_t>(i), *job);
  }
  return Report(wall_start);
}

nlohmann::json Replay::Report(std::chrono::steady_clock::time_point wall_start) const {
  using internal::Round;
  nlohmann::json out;
  std::int64_t total_gpus = 0;
  for (const model::Node& node : nodes_) total_gpus += static_cast<std::int64_t>(node.gpus.size());
  const std::vector<std::string>& queue_names = queue_names_;
  struct PerQueue {
    std::int64_t jobs = 0;
    std::vector<double> queue_s;
    std::vector<double> jct_s;
  };
  std::vector<PerQueue> per_queue(queue_names.size());

  std::vector<double> jct_s, queue_s, placement_s, startup_s, run_s;
  std::int64_t finished = 0, timed_out = 0, preemptions = 0;
  TimeMs first_submit = 0, last_end = kReplayEpochMs;
  bool any_submit = false;
  nlohmann::json rows = nlohmann::json::array();

  for (std::size_t i = 0; i < jobs_.size(); ++i) {
    const JobSim& sim = jobs_[i];
    const Outcome& outcome = outcomes_[i];
    PerQueue& stats = per_queue[sim.queue];
    ++stats.jobs;
    const TimeMs submit = kReplayEpochMs + sim.submit;
    if (!any_submit || submit < first_submit) first_submit = submit;
    any_submit = true;
    nlohmann::json row;
    if (options_.job_detail) {
      const std::int64_t gpu_milli = sim.milli_per_worker * std::max(sim.spec_workers, 0);
      const Names& names = names_[i];
      row = {{"name", names.name},
             {"queue", queue_names[sim.queue]},
             {"team", names.team},
             {"user", names.user},
             {"gpus", Round(static_cast<double>(gpu_milli) / 1000.0)},
             {"submit_s", Round(Seconds(submit))},
             {"start_s", nullptr},
             {"end_s", nullptr},
             {"queue_s", nullptr},
             {"jct_s", nullptr},
             {"preemptions", 0}};
    }
    if (!outcome.recorded) {
      if (options_.job_detail) rows.push_back(std::move(row));
      continue;
    }
    preemptions += outcome.preemptions;
    if (options_.job_detail) {
      row["preemptions"] = outcome.preemptions;
      if (outcome.first_start != 0) row["start_s"] = Round(Seconds(outcome.first_start));
    }
    if (!model::IsTerminal(outcome.state)) {
      if (options_.job_detail) rows.push_back(std::move(row));
      continue;
    }
    ++finished;
    if (outcome.state == JobState::kTimedOut) ++timed_out;
    last_end = std::max(last_end, outcome.finished_at);
    const double jct = static_cast<double>(outcome.finished_at - submit) / 1000.0;
    const double waited = static_cast<double>(outcome.waited) / 1000.0;
    jct_s.push_back(jct);
    queue_s.push_back(waited);
    stats.jct_s.push_back(jct);
    stats.queue_s.push_back(waited);
    if (outcome.placement >= 0)
      placement_s.push_back(static_cast<double>(outcome.placement) / 1000.0);
    if (outcome.startup >= 0) startup_s.push_back(static_cast<double>(outcome.startup) / 1000.0);
    if (outcome.run >= 0) run_s.push_back(static_cast<double>(outcome.run) / 1000.0);
    if (options_.job_detail) {
      row["end_s"] = Round(Seconds(outcome.finished_at));
      row["queue_s"] = Round(waited);
      row["jct_s"] = Round(jct);
      rows.push_back(std::move(row));
    }
  }

  auto mean = [](const std::vector<double>& values) {
    double sum = 0.0;
    for (double value : values) sum += value;
    return values.empty() ? 0.0 : sum / static_cast<double>(values.size());
  };
  const std::int64_t jobs = static_cast<std::int64_t>(jobs_.size());
  out["experiment"] = "replay";
  out["policy"] = options_.policy_name;
  out["trace"] = options_.trace_name;
  out["jobs"] = jobs;
  out["finished"] = finished;
  out["unfinished"] = jobs - finished;
  out["rejected"] = rejected_;
  out["timed_out"] = timed_out;
  out["nodes"] = nodes_.size();
  out["total_gpus"] = total_gpus;
  std::optional<std::size_t> gpus_per_node;
  for (const model::Node& node : nodes_) {
    if (gpus_per_node.value_or(node.gpus.size()) != node.gpus.size()) {
      gpus_per_node = std::nullopt;
      break;
    }
    gpus_per_node = node.gpus.size();
  }
  out["gpus_per_node"] = gpus_per_node ? nlohmann::json(*gpus_per_node) : nlohmann::json(nullptr);
  const double lifecycle_queue = mean(queue_s);
  out["jct_seconds"] = internal::ToJson(internal::Summarize(jct_s));
  out["queue_seconds"] = internal::ToJson(internal::Summarize(queue_s));
  out["makespan_seconds"] =
      finished > 0 ? Round(static_cast<double>(last_end - first_submit) / 1000.0) : 0.0;
  out["preemptions"] = preemptions;
  // Milli-GPU-milliseconds to GPU-hours.
  auto milli_hours = [](std::int64_t milli_ms) {
    return Round(static_cast<double>(milli_ms) / 1000.0 / 3'600'000.0, 6);
  };
  out["lost_gpu_hours"] = milli_hours(lost_milli_ms_);
  out["gpu_hours_allocated"] = milli_hours(allocated_milli_ms_);
  auto hours = [](std::int64_t ms) { return Round(static_cast<double>(ms) / 3'600'000.0, 6); };
  nlohmann::json by_result = nlohmann::json::object();
  for (const auto& [result, ms] : gpu_ms_by_result_) by_result[result] = hours(ms);
  by_result["preemption_lost"] = hours(goodput_.preemption_lost_gpu_ms);
  by_result["retry_lost"] = hours(goodput_.retry_lost_gpu_ms);
  out["gpu_hours_by_result"] = std::move(by_result);
  out["gpu_hours_per_result"] = Round(goodput_.GpuHoursPerResult(), 6);
  out["lifecycle_seconds"] = {{"queue", Round(lifecycle_queue)},
                              {"placement", Round(mean(placement_s))},
                              {"startup", Round(mean(startup_s))},
                              {"run", Round(mean(run_s))}};

  // Time series: the allocation at evenly spaced instants from trace time 0 to the last end.
  // Each delta counts from the first instant at or after it: summed per instant (a binary search
  // among the instants, no sort of the deltas), then accumulated over the instants.
  const TimeMs horizon = std::max<TimeMs>(std::max(last_end, now_) - kReplayEpochMs, 0);
  const std::int64_t points = std::min<std::int64_t>(kSeriesPoints, horizon + 1);
  std::vector<TimeMs> instants(static_cast<std::size_t>(points));
  for (std::int64_t k = 0; k < points; ++k) {
    instants[k] = kReplayEpochMs + (points == 1 ? 0 : horizon * k / (points - 1));
  }
  const std::size_t queue_count = queue_names.size();
  std::vector<std::int64_t> added(instants.size() * queue_count, 0);
  for (const Delta& delta : deltas_) {
    const auto first = std::lower_bound(instants.begin(), instants.end(), delta.at);
    if (first == instants.end()) continue;  // after the last instant
    added[static_cast<std::size_t>(first - instants.begin()) * queue_count + delta.queue] +=
        delta.milli;
  }
  nlohmann::json allocation = nlohmann::json::array();
  std::vector<nlohmann::json> shares(queue_count, nlohmann::json::array());
  std::vector<std::int64_t> held(queue_count, 0);
  std::int64_t held_total = 0;
  const double capacity_milli = static_cast<double>(total_gpus) * 1000.0;
  for (std::size_t k = 0; k < instants.size(); ++k) {
    for (std::size_t q = 0; q < queue_count; ++q) {
      held[q] += added[k * queue_count + q];
      held_total += added[k * queue_count + q];
    }
    const double t = Round(static_cast<double>(instants[k] - kReplayEpochMs) / 1000.0);
    allocation.push_back(
        {t, Round(capacity_milli > 0 ? static_cast<double>(held_total) / capacity_milli * 100.0
                                     : 0.0)});
    for (std::size_t q = 0; q < queue_count; ++q) {
      shares[q].push_back({t, Round(held_total > 0 ? static_cast<double>(held[q]) /
                                                         static_cast<double>(held_total) * 100.0
                                                   : 0.0)});
    }
  }
  out["gpu_allocation_over_time"] = std::move(allocation);
  nlohmann::json share_json = nlohmann::json::object();
  nlohmann::json queues_json = nlohmann::json::object();
  for (std::size_t q = 0; q < queue_names.size(); ++q) {
    share_json[queue_names[q]] = std::move(shares[q]);
    queues_json[queue_names[q]] = {
        {"jobs", per_queue[q].jobs},
        {"queue_seconds", internal::ToJson(internal::Summarize(per_queue[q].queue_s))},
        {"jct_seconds", internal::ToJson(internal::Summarize(per_queue[q].jct_s))}};
  }
  out["queue_share_over_time"] = std::move(share_json);
  out["per_queue"] = std::move(queues_json);
  if (options_.job_detail) out["job_rows"] = std::move(rows);
  if (options_.event_log) out["log"] = log_;
  out["events"] = events_;
  out["passes"] = passes_;
  if (options_.timing) {
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    out["wall_seconds"] = Round(wall);
    out["controller_seconds"] = Round(static_cast<double>(controller_ns_) / 1e9);
    out["events_per_second"] = Round(wall > 0 ? static_cast<double>(events_) / wall : 0.0, 0);
    out["peak_rss_bytes"] = static_cast<std::int64_t>(usage.ru_maxrss) * 1024;
  }
  return out;
}

}  // namespace

Result<model::Policy> NamedReplayPolicy(std::string_view name, const Trace& trace) {
  std::set<std::string> queues;
  for (const TraceJob& job : trace.jobs) queues.insert(job.spec.queue);
  return NamedReplayPolicy(name, std::vector<std::string>(queues.begin(), queues.end()));
}

Result<model::Policy> NamedReplayPolicy(std::string_view name,
                                        const std::vector<std::string>& queues) {
  model::Policy policy;
  std::optional<model::QueueOrder> order = model::ParseQueueOrder(name);
  if (!order) {
    return InvalidArgument(fmt::format("policy '{}' is not a named replay policy; the names are {}",
                                       name, model::kQueueOrderNames.ChoiceList()));
  }
  policy.order = *order;
  std::set<std::string> distinct(queues.begin(), queues.end());
  for (const std::string& queue : distinct) {
    model::QueueConfig config;
    config.name = queue;
    policy.queues.push_back(std::move(config));
  }
  return policy;
}

Result<nlohmann::json> RunReplay(const Trace& trace, const ReplayOptions& options) {
  TraceJobStream stream(trace.jobs);
  return RunReplay(trace.nodes, stream, options);
}

Result<nlohmann::json> RunReplay(const std::vector<model::Node>& nodes, JobStream& jobs,
                                 const ReplayOptions& options) {
  Replay replay(nodes, jobs, options);
  return replay.Run();
}

}  // namespace drover::sim
