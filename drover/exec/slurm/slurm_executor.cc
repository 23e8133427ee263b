#include "drover/exec/slurm/slurm_executor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <sstream>

#include "drover/exec/slurm/command.h"
#include "drover/exec/slurm/sbatch.h"
#include "drover/os/files.h"
#include "drover/os/threads.h"

namespace drover::exec::slurm {
namespace {

std::string Trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// Writes one of the executor's files into an attempt's folder, which may be the job's account's
// (PrepareDirs): os::WriteFileAtomically never writes through a link or a file the account left
// there. Visible whole or not at all to every reader, not synced (as the writes were before).
Status WriteScript(const std::string& path, std::string_view text) {
  return os::WriteFileAtomically(path, text, os::Durability::kVisible);
}

// Word `index` (from 0) of `path`'s contents; "" when there is none. The files it reads lie in
// directories a job's account may write (a task's job id, an array marker): only a regular file
// is read, not through a link, without waiting (a FIFO would hold the executor's thread), and
// only its first 4 KiB.
std::string ReadWord(const std::string& path, int index = 0) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat info {};
  std::string text(4096, '\0');
  ssize_t size = -1;
  if (fstat(fd, &info) == 0 && S_ISREG(info.st_mode)) size = read(fd, text.data(), text.size());
  close(fd);
  text.resize(size > 0 ? static_cast<std::size_t>(size) : 0);
  std::istringstream in(text);
  std::string word;
  for (int i = 0; i <= index; ++i) {
    if (!(in >> word)) return "";
  }
  return word;
}

// Creates the attempt's folder `dir` and the launch's account_dirs and, when the job runs as
// `account`, gives them to the account (os::GiveDirectory): Slurm opens the job's output in the
// attempt's folder as the account, the job's script writes its timeout marker and an array
// task's job id there, and the job writes its value outputs in the others. "" or why not.
std::string PrepareDirs(const std::string& dir, const model::ExternalLaunch& launch,
                        const std::optional<os::UnixAccount>& account) {
  if (!account) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    return ec ? fmt::format("creating {}: {}", dir, ec.message()) : "";
  }
  Status given = os::GiveDirectory(dir, *account);
  for (auto it = launch.account_dirs.begin(); given && it != launch.account_dirs.end(); ++it) {
    given = os::GiveDirectory(*it, *account);
  }
  return given ? "" : given.error().message;
}

// The end of the message for an account the server cannot find (os::AccountToRunAs).
constexpr std::string_view kWhereAccounts = "on the server, which submits its Slurm queues' jobs";

// How long the executor waits for more submissions after one arrives (Loop).
constexpr int kGatherMs = 2;

bool Running(std::string_view state) {
  return state == "RUNNING" || state == "COMPLETING" || state == "SUSPENDED" ||
         state == "STOPPED" || state == "SIGNALING";
}

}  // namespace

SlurmExecutor::SlurmExecutor(SlurmExecutorOptions options, const Clock& clock)
    : options_(std::move(options)),
      clock_(clock),
      helper_(options_.submit_helper.empty()
                  ? nullptr
                  : std::make_unique<SubmitHelper>(options_.submit_helper)),
      thread_([this] { Loop(); }) {}

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

std::string SlurmExecutor::ArraysDir() const { return options_.runs_dir + "/arrays"; }

std::string SlurmExecutor::AttemptDir(JobId job, int attempt) const {
  return slurm::AttemptDir(JobDir(job), attempt);
}

Result<SbatchOptions> SlurmExecutor::OptionsFor(const model::ExternalLaunch& launch) const {
  DROVER_ASSIGN_OR_RETURN(
      std::optional<os::UnixAccount> account,
      os::OtherAccountToRunAs(launch.run_as, launch.may_run_as_root, kWhereAccounts));
  return SbatchOptions{JobDir(launch.ref.job), options_.server_url, options_.drover_bin,
                       std::move(account)};
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
  const auto longest =
      std::chrono::milliseconds(std::max(options_.poll_interval_ms, options_.max_poll_interval_ms));
  auto interval = ChangingInterval();
  Steady::time_point next_refresh = Steady::now() + interval;
  MutexLock lock(mu_);
  while (!stopping_) {
    wake_.wait_until(lock, next_refresh, [this]() REQUIRES(mu_) {
      return stopping_ || !submits_.empty() || !cancels_.empty() || !adopts_.empty();
    });
    if (stopping_) break;
    const auto round = static_cast<std::size_t>(std::max(options_.max_concurrent_submits, 1));
    const std::size_t most =
        round * static_cast<std::size_t>(std::max(options_.max_array_tasks, 1));
    if (options_.max_array_tasks > 1) {
      // Submissions come in bursts (a file's jobs, a sweep's trials: one Submit each, back to
      // back): gather the burst while it grows, so that it goes as one array rather than as a
      // lone job and then the rest. A lone submission waits kGatherMs for company.
      for (std::size_t seen = 0; !stopping_ && submits_.size() != seen && submits_.size() < most;) {
        seen = submits_.size();
        wake_.wait_for(lock, std::chrono::milliseconds(kGatherMs),
                       [this]() REQUIRES(mu_) { return stopping_; });
      }
      if (stopping_) break;
    }
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
    // up behind a large submission (1,000 jobs at tens of ms per sbatch). A round's call may be
    // an array of many launches: what waits is taken, grouped, and the launches of the calls
    // beyond the round go back to the front of the queue.
    std::vector<model::ExternalLaunch> taken;
    while (!submits_.empty() && taken.size() < most) {
      taken.push_back(std::move(submits_.front()));
      submits_.pop_front();
    }
    if (!adopts.empty() || !cancels.empty() || !taken.empty()) {
      interval = ChangingInterval();
      next_refresh = std::min(next_refresh, Steady::now() + interval);
    }
    lock.unlock();
    std::vector<Prepared> prepared;
    prepared.reserve(taken.size());
    for (model::ExternalLaunch& launch : taken) prepared.push_back(Prepare(std::move(launch)));
    std::vector<std::vector<std::size_t>> grouped = Calls(prepared);
    std::vector<Call> calls;
    for (std::size_t i = 0; i < grouped.size() && i < round; ++i) {
      calls.emplace_back();
      for (std::size_t index : grouped[i]) calls.back().push_back(std::move(prepared[index]));
    }
    if (grouped.size() > round) {
      std::vector<std::size_t> later;
      for (std::size_t i = round; i < grouped.size(); ++i) {
        later.insert(later.end(), grouped[i].begin(), grouped[i].end());
      }
      std::sort(later.begin(), later.end());  // back in queue order
      lock.lock();
      for (auto it = later.rbegin(); it != later.rend(); ++it) {
        submits_.push_front(std::move(prepared[*it].launch));
      }
      lock.unlock();
    }
    for (const model::ExternalRef& ref : adopts) AdoptNow(ref);
    for (const model::ExternalRef& ref : dropped) {
      CancelNow(ref);  // a continuation's requeued Slurm job is held: cancel it there
      model::ExecutorEvent event;
      event.exit.cancelled = true;
      Emit(TrackedOf(ref), model::ExecutorEvent::Kind::kExited, clock_.Now(), event);
    }
    if (!calls.empty()) SubmitNow(std::move(calls));
    for (const model::ExternalRef& ref : cancels) CancelNow(ref);
    // At the poll interval, not at every wake-up: a refresh lists every job Slurm holds, and
    // one per submission cost more than the submission once hundreds were listed.
    if (Steady::now() >= next_refresh) {
      const bool changed = !tracked_.empty() && Refresh();
      interval = changed ? ChangingInterval() : std::min(interval * 2, longest);
      next_refresh = Steady::now() + interval;
    }
    lock.lock();
  }
}

SlurmExecutor::Prepared SlurmExecutor::Prepare(model::ExternalLaunch launch) const {
  Result<SbatchOptions> options = OptionsFor(launch);
  Result<Sbatch> sbatch = FailedPrecondition("a continuation submits nothing");
  if (!options) {
    sbatch = tl::unexpected(options.error());
  } else if (launch.ref.restart == 0) {
    sbatch = RenderSbatch(launch, *options);
  }
  return Prepared{std::move(launch), std::move(options), std::move(sbatch)};
}

std::vector<std::vector<std::size_t>> SlurmExecutor::Calls(
    const std::vector<Prepared>& launches) const {
  const auto most = static_cast<std::size_t>(std::max(options_.max_array_tasks, 1));
  std::vector<std::vector<std::size_t>> calls;
  std::map<std::string, std::size_t> open;  // shape -> its call that can take more
  for (std::size_t i = 0; i < launches.size(); ++i) {
    const Prepared& launch = launches[i];
    // Alone: a continuation, and a launch that cannot be rendered (RunSbatch reports why).
    if (launch.launch.ref.restart > 0 || most == 1 || !launch.sbatch) {
      calls.push_back({i});
      continue;
    }
    const std::string shape = ArrayShape(*launch.sbatch);
    auto it = open.find(shape);
    if (it == open.end() || calls[it->second].size() >= most) {
      open[shape] = calls.size();
      calls.push_back({i});
    } else {
      calls[it->second].push_back(i);
    }
  }
  return calls;
}

void SlurmExecutor::SubmitNow(std::vector<Call> calls) {
  std::vector<const Call*> fresh;
  for (const Call& call : calls) {
    if (call.size() == 1 && call.front().launch.ref.restart > 0) {
      ContinueNow(call.front());  // touches held_: on this thread
    } else {
      fresh.push_back(&call);
    }
  }
  std::vector<std::vector<Handed>> results(fresh.size());
  const auto run = [this](const Call& call) {
    return call.size() == 1 ? std::vector<Handed>{RunSbatch(call.front())} : RunArray(call);
  };
  // The first on this thread, the others each on a thread of its own for the round (fewer at
  // once if the system refuses threads).
  const os::ThreadsRun ran = os::RunOnThreads(fresh.size(), static_cast<int>(fresh.size()),
                                              [&](std::size_t i) { results[i] = run(*fresh[i]); });
  if (ran.refused) {
    spdlog::warn("slurm: the system would not start more threads; {} submissions at once",
                 ran.threads);
  }
  for (std::vector<Handed>& handed : results) {
    for (const Handed& one : handed) Report(one);
  }
}

void SlurmExecutor::Report(const Handed& one) {
  if (one.error.empty()) {
    tracked_[one.tracked.ref.name] = one.tracked;
    Emit(one.tracked, model::ExecutorEvent::Kind::kSubmitted, one.at);
    return;
  }
  spdlog::warn("slurm: {} not submitted: {}", one.tracked.ref.name, one.error);
  model::ExecutorEvent event;
  event.exit.message = one.error;
  Emit(one.tracked, model::ExecutorEvent::Kind::kExited, one.at, event);
}

Result<std::string> SlurmExecutor::SubmitBatch(const Sbatch& sbatch) const {
  if (helper_ != nullptr) {
    Result<std::string> id = helper_->Submit(sbatch);
    if (!id) return Internal("sbatch: " + id.error().message);
    return id;
  }
  std::vector<std::string> argv = {"sbatch"};
  argv.insert(argv.end(), sbatch.args.begin(), sbatch.args.end());
  // sbatch exports its whole environment to the job (--export=ALL): only the job's part.
  CommandResult result = RunCommand(argv, sbatch.script, JobEnvironment(ProcessEnvironment()));
  if (!result.ok())
    return Internal("sbatch: " + Trim(result.err.empty() ? result.out : result.err));
  // --parsable prints "ID" or "ID;CLUSTER".
  const std::string id = Trim(result.out);
  return id.substr(0, id.find(';'));
}

SlurmExecutor::Handed SlurmExecutor::RunSbatch(const Prepared& launch) const {
  Handed handed;
  handed.tracked = TrackedOf(launch.launch.ref);
  Tracked& tracked = handed.tracked;
  if (!launch.sbatch) {
    handed.error = launch.sbatch.error().message;
  } else if (std::string error =
                 PrepareDirs(tracked.attempt_dir, launch.launch, launch.options->account);
             !error.empty()) {
    handed.error = std::move(error);
  } else {
    Result<std::string> id = SubmitBatch(*launch.sbatch);
    if (id) {
      tracked.ref.external_id = *id;
    } else {
      handed.error = id.error().message;
    }
  }
  handed.at = clock_.Now();
  return handed;
}

std::vector<SlurmExecutor::Handed> SlurmExecutor::RunArray(const Call& launches) const {
  const model::ExternalRef& first = launches.front().launch.ref;
  const std::string name = ArrayName(first.job, first.attempt);
  const std::string dir = ArraysDir();
  std::vector<Handed> handed(launches.size());
  const std::string links = ArrayTasksDir(dir, name);
  std::vector<std::size_t> tasks;  // task i is launches[tasks[i]]
  std::optional<Sbatch> shape;
  std::optional<os::UnixAccount> account;  // the tasks' (one shape: one account)
  std::error_code ec;
  std::filesystem::remove_all(links, ec);  // an earlier try's links (the links only)
  if (!ec) std::filesystem::create_directories(links, ec);
  for (std::size_t i = 0; i < launches.size(); ++i) {
    Handed& one = handed[i];
    const Prepared& launch = launches[i];
    one.tracked = TrackedOf(launch.launch.ref);
    const std::string& attempt_dir = one.tracked.attempt_dir;
    if (ec) {
      one.error = fmt::format("creating {}: {}", links, ec.message());
      continue;
    }
    if (!launch.sbatch) {
      one.error = launch.sbatch.error().message;
      continue;
    }
    one.error = PrepareDirs(attempt_dir, launch.launch, launch.options->account);
    if (!one.error.empty()) continue;
    // The task's script, then its marker (a restart that finds the marker finds the script),
    // then the task's link to it.
    Status written =
        WriteScript(TaskScript(attempt_dir), RenderArrayTask(attempt_dir, *launch.sbatch));
    if (written) {
      written = WriteScript(ArrayMarker(attempt_dir), fmt::format("{} {}\n", name, tasks.size()));
    }
    if (written) {
      const std::string link = fmt::format("{}/{}", links, tasks.size());
      std::error_code link_ec;
      std::filesystem::create_directory_symlink(std::filesystem::absolute(attempt_dir), link,
                                                link_ec);
      if (link_ec) written = Internal(fmt::format("linking {}: {}", link, link_ec.message()));
    }
    if (!written) {
      one.error = written.error().message;
      continue;
    }
    tasks.push_back(i);
    if (!shape) {
      shape = *launch.sbatch;
      account = launch.options->account;
    }
  }
  if (!tasks.empty()) {
    // Slurm opens the array's own output as the tasks' account, in a folder that is not its.
    const std::string output = ArrayOutput(dir, name);
    std::string error;
    if (account) {
      if (Status created = WriteScript(output, ""); !created) {
        error = created.error().message;
      } else if (chown(output.c_str(), account->uid, account->gid) != 0) {
        error = fmt::format("giving {} to Unix account {}: {}", output, account->name,
                            std::strerror(errno));
      }
    }
    const Result<std::string> id = error.empty()
                                       ? SubmitBatch(RenderArray(name, dir, *shape, tasks.size()))
                                       : Result<std::string>(Internal(error));
    for (std::size_t task = 0; task < tasks.size(); ++task) {
      Handed& one = handed[tasks[task]];
      if (id) {
        one.tracked.ref.external_id = fmt::format("{}_{}", *id, task);
      } else {
        one.error = id.error().message;
      }
    }
  }
  const TimeMs at = clock_.Now();
  for (Handed& one : handed) one.at = at;
  return handed;
}

void SlurmExecutor::ContinueNow(const Prepared& prepared) {
  const model::ExternalLaunch& launch = prepared.launch;
  const Result<SbatchOptions>& options = prepared.options;
  Tracked tracked = TrackedOf(launch.ref);
  const std::string& id = launch.ref.external_id;
  held_.erase(id);
  const std::string contract = ContractFile(tracked.attempt_dir);
  std::string error = options ? PrepareDirs(tracked.attempt_dir, launch, options->account)
                              : options.error().message;
  if (error.empty()) {
    if (Status written = WriteScript(contract, RenderContract(launch, *options)); !written) {
      error = written.error().message;
    }
  }
  if (!error.empty()) {
    RunCommand({"scancel", id});
    model::ExecutorEvent event;
    event.exit.message = std::move(error);
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
    // Perhaps submitted just before a restart: look it up by its name, or as a task of the
    // array its marker names (%F: the array's job id).
    const std::string marker = ArrayMarker(tracked.attempt_dir);
    const std::string array = ReadWord(marker);
    const std::string name = array.empty() ? ref.name : array;
    std::vector<std::string> query = {"squeue",         "-h", "--states=all",
                                      "--name=" + name, "-o", array.empty() ? "%i" : "%F"};
    // A job's account may rewrite its marker to name another account's array: only an array of
    // the account whose folder the marker is in is this attempt's.
    struct stat folder {};
    if (lstat(tracked.attempt_dir.c_str(), &folder) == 0 && folder.st_uid != geteuid()) {
      query.push_back(fmt::format("--user={}", folder.st_uid));
    }
    CommandResult found = RunCommand(query);
    std::string id = Trim(found.out);
    id = id.substr(0, id.find('\n'));
    if (!id.empty() && !array.empty()) id += "_" + ReadWord(marker, 1);
    if (!found.ok() || id.empty()) {
      model::ExecutorEvent event;
      event.exit.node_lost = true;
      event.exit.message = fmt::format("slurm has no job named {}", name);
      Emit(tracked, model::ExecutorEvent::Kind::kExited, clock_.Now(), event);
      return;
    }
    tracked.ref.external_id = id;
    Emit(tracked, model::ExecutorEvent::Kind::kSubmitted, clock_.Now());
  }
  tracked_[tracked.ref.name] = tracked;
}

bool SlurmExecutor::IncrementalListing() const {
  return helper_ != nullptr && std::all_of(tracked_.begin(), tracked_.end(),
                                           [](const auto& entry) { return entry.second.started; });
}

std::chrono::milliseconds SlurmExecutor::ChangingInterval() const {
  DurationMs ms = options_.poll_interval_ms;
  if (IncrementalListing()) ms = std::min(ms, options_.incremental_poll_interval_ms);
  return std::chrono::milliseconds(ms);
}

Result<std::string> SlurmExecutor::ListJobs() const {
  if (helper_ != nullptr) {
    return helper_->ListJobs(IncrementalListing() ? Listing::kIfChanged : Listing::kWhole);
  }
  CommandResult result = RunCommand({"scontrol", "show", "job", "-o"});
  if (!result.ok()) return Internal("scontrol show job: " + Trim(result.err));
  return std::move(result.out);
}

bool SlurmExecutor::Refresh() {
  Result<std::string> listing = ListJobs();
  if (!listing) {
    spdlog::warn("slurm: {}", listing.error().message);
    return false;  // Slurm unreachable: try again at the next refresh
  }
  const std::size_t emitted = emitted_;
  LocalTimeMemo local_times;  // views into *listing, which outlives it
  const JobListing jobs = ParseListing(*listing, std::ref(local_times));
  std::map<std::string, bool> arrays;  // RemoveEndedArrays's `listed`
  for (const SlurmJob& job : jobs.records) {
    if (!IsArrayName(job.name)) continue;
    bool& may_run = arrays[job.name];
    may_run = may_run || !IsFinalState(job.state);
  }
  for (auto it = tracked_.begin(); it != tracked_.end();) {
    Tracked& tracked = it->second;
    const SlurmJob* job = jobs.Find(tracked.ref.external_id);
    bool ended = false;
    if (job != nullptr) {
      tracked.missing = 0;
      // A record of one array task only is its own job (the pending tasks share the array's).
      if (job->array_task_ids.find_first_of("-,") == std::string::npos) {
        tracked.slurm_job_id = job->id;
      }
      ended = Observe(tracked, *job);
    } else if (++tracked.missing >= 2) {
      Vanished(tracked);
      ended = true;
    }
    it = ended ? tracked_.erase(it) : std::next(it);
  }
  RemoveEndedArrays(arrays);
  return emitted_ != emitted;
}

void SlurmExecutor::RemoveEndedArrays(const std::map<std::string, bool>& listed) {
  // Runs on the executor's thread after this turn's submissions returned (Loop): every array
  // whose links exist was either submitted, and so is in the listing taken since, or failed.
  const std::string dir = ArraysDir();
  std::set<std::string> unlisted;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::filesystem::directory_entry& entry = *it;
    const std::string name(ArrayOfTasksDir(entry.path().filename().native()));
    if (name.empty()) continue;
    auto array = listed.find(name);
    if (array != listed.end() && array->second) continue;  // a task of it may still run
    if (array == listed.end() && !unlisted_arrays_.contains(name)) {
      unlisted.insert(name);  // the next listing decides
      continue;
    }
    std::error_code remove_ec;
    std::filesystem::remove_all(entry.path(), remove_ec);
    if (remove_ec)
      spdlog::warn("slurm: removing the links of array {}: {}", name, remove_ec.message());
    const std::string output = ArrayOutput(dir, name);
    if (std::filesystem::file_size(output, remove_ec) == 0 && !remove_ec) {
      std::filesystem::remove(output, remove_ec);
    }
  }
  unlisted_arrays_ = std::move(unlisted);
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
    // Not through a link: the folder is the job's account's (PrepareDirs).
    const bool marker = std::filesystem::exists(
        std::filesystem::symlink_status(TimeoutMarker(tracked.attempt_dir), ec));
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
  // Past MinJobAge, scontrol forgets finished jobs; the jobcomp log (sacct -c) keeps them, an
  // array task's under its own job id (the jobcomp log knows no "ARRAY_TASK" ids).
  const model::ExternalRef& ref = tracked.ref;
  const std::string submitted_by = AttemptDir(ref.job, ref.attempt - ref.restart);
  const std::string array = ReadWord(ArrayMarker(submitted_by));
  std::string id = tracked.slurm_job_id;
  if (id.empty()) id = array.empty() ? ref.external_id : ReadWord(TaskJobIdFile(submitted_by));
  if (id.empty()) return std::nullopt;  // an array task that never ran
  CommandResult result = RunCommand({"sacct", "-c", "-n", "-P", "-j", id, "-o", kRunEndFields});
  if (!result.ok()) {
    spdlog::warn("slurm: sacct -c -j {}: {}", id, Trim(result.err));
    return std::nullopt;
  }
  // The Slurm job bears the name of the attempt that submitted it (or of its array); this
  // attempt's run is the restart-th to end.
  std::vector<SlurmJob> runs =
      ParseRunEnds(result.out, id,
                   array.empty() ? model::ExternalName(ref.job, ref.attempt - ref.restart) : array,
                   &ParseLocalTime);
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
