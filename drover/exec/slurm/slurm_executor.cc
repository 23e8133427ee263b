#include "drover/exec/slurm/slurm_executor.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "drover/exec/slurm/command.h"
#include "drover/exec/slurm/sbatch.h"

namespace drover::exec::slurm {
namespace {

std::string Trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

bool Running(std::string_view state) {
  return state == "RUNNING" || state == "COMPLETING" || state == "SUSPENDED" ||
         state == "STOPPED" || state == "SIGNALING";
}

}  // namespace

SlurmExecutor::SlurmExecutor(SlurmExecutorOptions options, const Clock& clock)
    : options_(std::move(options)), clock_(clock), thread_([this] { Loop(); }) {}

SlurmExecutor::~SlurmExecutor() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::string SlurmExecutor::JobDir(JobId job) const {
  return fmt::format("{}/{}", options_.runs_dir, job.value());
}

std::string SlurmExecutor::AttemptDir(JobId job, int attempt) const {
  return slurm::AttemptDir(JobDir(job), attempt);
}

SlurmExecutor::Tracked SlurmExecutor::TrackedOf(const model::ExternalRef& ref) const {
  Tracked tracked;
  tracked.ref = ref;
  tracked.attempt_dir = AttemptDir(ref.job, ref.attempt);
  return tracked;
}

Status SlurmExecutor::Submit(const model::ExternalLaunch& launch) {
  // Refuse what Slurm cannot express before anything is queued.
  DROVER_RETURN_IF_ERROR(RenderSbatch(launch, {}));
  {
    MutexLock lock(mu_);
    submits_.push_back(launch);
  }
  wake_.notify_all();
  return OkStatus();
}

Status SlurmExecutor::Cancel(const model::ExternalRef& ref, const model::StopRequest&) {
  {
    MutexLock lock(mu_);
    cancels_.push_back(ref);
  }
  wake_.notify_all();
  return OkStatus();
}

void SlurmExecutor::Adopt(const std::vector<model::ExternalRef>& refs) {
  {
    MutexLock lock(mu_);
    adopts_.insert(adopts_.end(), refs.begin(), refs.end());
  }
  wake_.notify_all();
}

std::vector<model::ExecutorEvent> SlurmExecutor::Poll() {
  MutexLock lock(mu_);
  return std::exchange(events_, {});
}

void SlurmExecutor::Emit(const Tracked& tracked, model::ExecutorEvent::Kind kind, TimeMs at,
                         model::ExecutorEvent event) {
  event.ref = tracked.ref;
  event.kind = kind;
  event.at = at;
  ++emitted_;
  MutexLock lock(mu_);
  events_.push_back(std::move(event));
}

void SlurmExecutor::Loop() {
  using Steady = std::chrono::steady_clock;
  const auto shortest = std::chrono::milliseconds(options_.poll_interval_ms);
  const auto longest = std::max(shortest, std::chrono::milliseconds(options_.max_poll_interval_ms));
  auto interval = shortest;
  Steady::time_point next_refresh = Steady::now() + interval;
  MutexLock lock(mu_);
  while (!stopping_) {
    wake_.wait_until(lock, next_refresh, [this]() REQUIRES(mu_) {
      return stopping_ || !submits_.empty() || !cancels_.empty() || !adopts_.empty();
    });
    if (stopping_) break;
    auto adopts = std::exchange(adopts_, {});
    auto cancels = std::exchange(cancels_, {});
    // Cancelled before it reached Slurm: never submitted.
    std::vector<model::ExternalRef> dropped;
    for (auto it = cancels.begin(); it != cancels.end();) {
      auto queued = std::find_if(submits_.begin(), submits_.end(),
                                 [&](const auto& launch) { return launch.ref.name == it->name; });
      if (queued == submits_.end()) {
        ++it;
        continue;
      }
      dropped.push_back(queued->ref);
      submits_.erase(queued);
      it = cancels.erase(it);
    }
    // One round of concurrent sbatch calls per turn, so that cancels and refreshes are not held
    // up behind a large submission (1,000 jobs at tens of ms per sbatch).
    std::vector<model::ExternalLaunch> launches;
    const auto round = static_cast<std::size_t>(std::max(options_.max_concurrent_submits, 1));
    while (!submits_.empty() && launches.size() < round) {
      launches.push_back(std::move(submits_.front()));
      submits_.pop_front();
    }
    if (!adopts.empty() || !cancels.empty() || !launches.empty()) {
      interval = shortest;
      next_refresh = std::min(next_refresh, Steady::now() + interval);
    }
    lock.unlock();
    for (const model::ExternalRef& ref : adopts) AdoptNow(ref);
    for (const model::ExternalRef& ref : dropped) {
      CancelNow(ref);  // a continuation's requeued Slurm job is held: cancel it there
      model::ExecutorEvent event;
      event.exit.cancelled = true;
      Emit(TrackedOf(ref), model::ExecutorEvent::Kind::kExited, clock_.Now(), event);
    }
    if (!launches.empty()) SubmitNow(std::move(launches));
    for (const model::ExternalRef& ref : cancels) CancelNow(ref);
    // At the poll interval, not at every wake-up: a refresh lists every job Slurm holds, and
    // one per submission cost more than the submission once hundreds were listed.
    if (Steady::now() >= next_refresh) {
      const bool changed = !tracked_.empty() && Refresh();
      interval = changed ? shortest : std::min(interval * 2, longest);
      next_refresh = Steady::now() + interval;
    }
    lock.lock();
  }
}

void SlurmExecutor::SubmitNow(std::vector<model::ExternalLaunch> launches) {
  std::vector<const model::ExternalLaunch*> fresh;
  for (const model::ExternalLaunch& launch : launches) {
    if (launch.ref.restart > 0) {
      ContinueNow(launch);  // touches held_: on this thread
    } else {
      fresh.push_back(&launch);
    }
  }
  std::vector<Handed> handed(fresh.size());
  {
    // The first on this thread, the others each on a thread of its own for the round.
    std::vector<std::jthread> calls;
    for (std::size_t i = 1; i < fresh.size(); ++i) {
      calls.emplace_back([this, &handed, &fresh, i] { handed[i] = RunSbatch(*fresh[i]); });
    }
    if (!fresh.empty()) handed[0] = RunSbatch(*fresh[0]);
  }
  for (Handed& one : handed) {
    if (one.error.empty()) {
      tracked_[one.tracked.ref.name] = one.tracked;
      Emit(one.tracked, model::ExecutorEvent::Kind::kSubmitted, one.at);
      continue;
    }
    spdlog::warn("slurm: {} not submitted: {}", one.tracked.ref.name, one.error);
    model::ExecutorEvent event;
    event.exit.message = one.error;
    Emit(one.tracked, model::ExecutorEvent::Kind::kExited, one.at, event);
  }
}

SlurmExecutor::Handed SlurmExecutor::RunSbatch(const model::ExternalLaunch& launch) const {
  Handed handed;
  handed.tracked = TrackedOf(launch.ref);
  Tracked& tracked = handed.tracked;
  std::error_code ec;
  std::filesystem::create_directories(tracked.attempt_dir, ec);
  Result<Sbatch> sbatch = RenderSbatch(
      launch, SbatchOptions{JobDir(launch.ref.job), options_.server_url, options_.drover_bin});
  if (ec) {
    handed.error = fmt::format("creating {}: {}", tracked.attempt_dir, ec.message());
  } else if (!sbatch) {
    handed.error = sbatch.error().message;
  } else {
    std::vector<std::string> argv = {"sbatch"};
    argv.insert(argv.end(), sbatch->args.begin(), sbatch->args.end());
    CommandResult result = RunCommand(argv, sbatch->script);
    if (result.ok()) {
      // --parsable prints "ID" or "ID;CLUSTER".
      std::string id = Trim(result.out);
      tracked.ref.external_id = id.substr(0, id.find(';'));
    } else {
      handed.error = "sbatch: " + Trim(result.err.empty() ? result.out : result.err);
    }
  }
  handed.at = clock_.Now();
  return handed;
}

void SlurmExecutor::ContinueNow(const model::ExternalLaunch& launch) {
  Tracked tracked = TrackedOf(launch.ref);
  const std::string& id = launch.ref.external_id;
  held_.erase(id);
  // Written whole under a temporary name, so that a run never reads half a contract.
  const std::string contract = ContractFile(tracked.attempt_dir);
  std::error_code ec;
  std::filesystem::create_directories(tracked.attempt_dir, ec);
  if (!ec) {
    std::ofstream out(contract + ".new", std::ios::trunc);
    out << RenderContract(
        launch, SbatchOptions{JobDir(launch.ref.job), options_.server_url, options_.drover_bin});
    out.close();
    if (!out) ec = std::make_error_code(std::errc::io_error);
  }
  if (!ec) std::filesystem::rename(contract + ".new", contract, ec);
  if (ec) {
    RunCommand({"scancel", id});
    model::ExecutorEvent event;
    event.exit.message = fmt::format("writing {}: {}", contract, ec.message());
    Emit(tracked, model::ExecutorEvent::Kind::kExited, clock_.Now(), event);
    return;
  }
  CommandResult released = RunCommand({"scontrol", "release", id});
  if (!released.ok()) {
    // Not held (a restart re-sent the continuation): the run finds its contract anyway.
    spdlog::info("slurm: scontrol release {}: {}", id, Trim(released.err));
  }
  tracked_[tracked.ref.name] = tracked;
  Emit(tracked, model::ExecutorEvent::Kind::kSubmitted, clock_.Now());
}

void SlurmExecutor::CancelNow(const model::ExternalRef& ref) {
  std::string id;
  if (auto it = tracked_.find(ref.name); it != tracked_.end()) {
    id = it->second.ref.external_id;
  } else if (held_.erase(ref.external_id)) {
    id = ref.external_id;  // requeued and held, never continued
  } else {
    return;  // ended meanwhile
  }
  CommandResult result = RunCommand({"scancel", id});
  if (!result.ok()) spdlog::warn("slurm: scancel {}: {}", id, Trim(result.err));
}

void SlurmExecutor::AdoptNow(const model::ExternalRef& ref) {
  Tracked tracked = TrackedOf(ref);
  if (tracked.ref.external_id.empty()) {
    // Perhaps submitted just before a restart: look it up by its name.
    CommandResult found =
        RunCommand({"squeue", "-h", "--states=all", "--name=" + ref.name, "-o", "%i"});
    std::string id = Trim(found.out);
    id = id.substr(0, id.find('\n'));
    if (!found.ok() || id.empty()) {
      model::ExecutorEvent event;
      event.exit.node_lost = true;
      event.exit.message = fmt::format("slurm has no job named {}", ref.name);
      Emit(tracked, model::ExecutorEvent::Kind::kExited, clock_.Now(), event);
      return;
    }
    tracked.ref.external_id = id;
    Emit(tracked, model::ExecutorEvent::Kind::kSubmitted, clock_.Now());
  }
  tracked_[tracked.ref.name] = tracked;
}

bool SlurmExecutor::Refresh() {
  CommandResult result = RunCommand({"scontrol", "show", "job", "-o"});
  if (!result.ok()) {
    spdlog::warn("slurm: scontrol show job: {}", Trim(result.err));
    return false;  // Slurm unreachable: try again at the next refresh
  }
  const std::size_t emitted = emitted_;
  std::map<std::string, SlurmJob> jobs;
  std::istringstream lines(result.out);
  for (std::string line; std::getline(lines, line);) {
    if (auto job = ParseJobLine(line, &ParseLocalTime)) jobs.emplace(job->id, std::move(*job));
  }
  for (auto it = tracked_.begin(); it != tracked_.end();) {
    Tracked& tracked = it->second;
    auto job = jobs.find(tracked.ref.external_id);
    bool ended = false;
    if (job != jobs.end()) {
      tracked.missing = 0;
      ended = Observe(tracked, job->second);
    } else if (++tracked.missing >= 2) {
      Vanished(tracked);
      ended = true;
    }
    it = ended ? tracked_.erase(it) : std::next(it);
  }
  return emitted_ != emitted;
}

bool SlurmExecutor::Observe(Tracked& tracked, const SlurmJob& job) {
  using Kind = model::ExecutorEvent::Kind;
  if (job.restarts > tracked.ref.restart) return EndRequeuedRun(tracked, job);
  if (job.state == "PENDING") {
    const std::string reason = DescribeReason(job.reason);
    if (reason != tracked.reason || job.eligible_time != tracked.eligible_at) {
      tracked.reason = reason;
      tracked.eligible_at = job.eligible_time;
      model::ExecutorEvent event;
      event.reason = reason;
      event.eligible_at = job.eligible_time;
      Emit(tracked, Kind::kPending, clock_.Now(), event);
    }
    return false;
  }
  const bool final = IsFinalState(job.state);
  if (!tracked.started &&
      (Running(job.state) || (final && job.start_time > 0 && !job.nodes.empty()))) {
    ReportStarted(tracked, job.nodes, job.start_time > 0 ? job.start_time : clock_.Now());
  }
  if (final) {
    std::error_code ec;
    const bool marker = std::filesystem::exists(TimeoutMarker(tracked.attempt_dir), ec);
    model::ExecutorEvent event;
    event.exit = ExitOf(job, marker);
    Emit(tracked, Kind::kExited, job.end_time > 0 ? job.end_time : clock_.Now(), event);
    return true;
  }
  return false;
}

bool SlurmExecutor::EndRequeuedRun(Tracked& tracked, const SlurmJob& job) {
  using Kind = model::ExecutorEvent::Kind;
  const std::string& id = tracked.ref.external_id;
  const bool pending = job.state == "PENDING";
  const bool final = IsFinalState(job.state);
  // COMPLETING here is the requeued job whose old run is still being cleaned up.
  const bool restarted = job.state == "RUNNING" || job.state == "CONFIGURING";
  if (!pending && !final && !restarted) return false;  // REQUEUED, COMPLETING...
  const std::optional<SlurmJob> run = RunEnd(tracked);
  if (!tracked.started && run && run->start_time > 0 && !run->nodes.empty()) {
    ReportStarted(tracked, run->nodes, run->start_time);  // it ran between two refreshes
  }
  model::ExecutorEvent event;
  event.exit = RequeuedExit(run ? &*run : nullptr, id);
  if (pending) {
    // Held until Drover continues it (ContinueNow) or cancels it (CancelNow).
    CommandResult held = RunCommand({"scontrol", "hold", id});
    if (!held.ok()) spdlog::warn("slurm: scontrol hold {}: {}", id, Trim(held.err));
    held_.insert(id);
    event.requeued = true;
  } else if (restarted) {
    // Slurm started the next run before it could be held: without its contract it would only
    // fail. Drover's next attempt, if any, is a new Slurm job.
    RunCommand({"scancel", id});
    event.exit.message += "; it restarted before Drover could continue it, so it was cancelled";
  }
  Emit(tracked, Kind::kExited, run && run->end_time > 0 ? run->end_time : clock_.Now(), event);
  return true;
}

void SlurmExecutor::ReportStarted(Tracked& tracked, const std::vector<std::string>& nodes,
                                  TimeMs at) {
  tracked.started = true;
  model::ExecutorEvent event;
  event.nodes = nodes;
  Emit(tracked, model::ExecutorEvent::Kind::kStarted, at, event);
}

std::optional<SlurmJob> SlurmExecutor::RunEnd(const Tracked& tracked) const {
  // Past MinJobAge, scontrol forgets finished jobs; the jobcomp log (sacct -c) keeps them.
  const std::string& id = tracked.ref.external_id;
  CommandResult result = RunCommand({"sacct", "-c", "-n", "-P", "-j", id, "-o", kRunEndFields});
  if (!result.ok()) {
    spdlog::warn("slurm: sacct -c -j {}: {}", id, Trim(result.err));
    return std::nullopt;
  }
  // The Slurm job bears the name of the attempt that submitted it; this attempt's run is the
  // restart-th to end.
  const model::ExternalRef& ref = tracked.ref;
  std::vector<SlurmJob> runs = ParseRunEnds(
      result.out, id, model::ExternalName(ref.job, ref.attempt - ref.restart), &ParseLocalTime);
  const std::size_t index = static_cast<std::size_t>(ref.restart);
  if (index >= runs.size()) return std::nullopt;
  return std::move(runs[index]);
}

void SlurmExecutor::Vanished(Tracked& tracked) {
  if (std::optional<SlurmJob> run = RunEnd(tracked); run && IsFinalState(run->state)) {
    run->restarts = tracked.ref.restart;
    Observe(tracked, *run);
    return;
  }
  model::ExecutorEvent event;
  event.exit.node_lost = true;
  event.exit.message = fmt::format("slurm lost job {}: no longer listed and no end recorded",
                                   tracked.ref.external_id);
  Emit(tracked, model::ExecutorEvent::Kind::kExited, clock_.Now(), event);
}

}  // namespace drover::exec::slurm
