#include "drover/agent/local_runtime.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "drover/agent/steady_clock.h"

namespace drover::agent {
namespace {

// A worker's PATH after DROVER_BIN's folder when the runtime's own environment has none.
constexpr char kDefaultPath[] = "/usr/local/bin:/usr/bin:/bin";

// Raw system calls: glibc 2.36's <sys/pidfd.h> lacks C++ linkage, and older glibc lacks it.
int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }
int PidfdSendSignal(int pidfd, int sig) {
  return static_cast<int>(syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

std::string KeyName(const model::WorkerKey& key) {
  return fmt::format("job {} attempt {} rank {}", key.job.value(), key.attempt, key.rank);
}

// mkdir that accepts an existing directory.
Status EnsureDirectory(const std::string& path) {
  if (mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return OkStatus();
  return Internal(fmt::format("cannot create {}: {}", path, std::strerror(errno)));
}

model::WorkerEvent Event(const model::WorkerKey& key, model::WorkerEvent::Kind kind, TimeMs at,
                         model::ExitStatus exit = {}) {
  model::WorkerEvent event;
  event.key = key;
  event.kind = kind;
  event.at = at;
  event.exit = std::move(exit);
  return event;
}

void RemoveDirectoryTree(const std::string& dir) {
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace

Result<std::unique_ptr<LocalRuntime>> LocalRuntime::Create(Options options, const Clock& clock) {
  if (options.runs_dir.empty()) return InvalidArgument("runs_dir is empty");
  std::error_code error;
  std::filesystem::path runs = std::filesystem::absolute(options.runs_dir, error);
  if (error)
    return InvalidArgument(fmt::format("runs_dir {}: {}", options.runs_dir, error.message()));
  std::filesystem::create_directories(runs, error);
  if (error) {
    return Internal(fmt::format("cannot create runs_dir {}: {}", runs.string(), error.message()));
  }
  options.runs_dir = runs.lexically_normal().string();
  while (options.runs_dir.size() > 1 && options.runs_dir.ends_with('/')) {
    options.runs_dir.pop_back();
  }
  std::filesystem::path supervisor = std::filesystem::absolute(options.supervisor_path, error);
  if (error || options.supervisor_path.empty() ||
      !std::filesystem::is_regular_file(supervisor, error) ||
      access(supervisor.c_str(), X_OK) != 0) {
    return InvalidArgument(
        fmt::format("supervisor_path '{}' is not an executable file", options.supervisor_path));
  }
  options.supervisor_path = supervisor.string();
  if (options.drover_bin.empty()) {
    const std::filesystem::path beside = supervisor.parent_path() / "drover";
    options.drover_bin =
        supervisor.filename() == "drover-supervise" && access(beside.c_str(), X_OK) == 0
            ? beside.string()
            : supervisor.string();
  }
  options.drover_bin =
      std::filesystem::absolute(options.drover_bin, error).lexically_normal().string();
  return std::unique_ptr<LocalRuntime>(new LocalRuntime(std::move(options), clock));
}

LocalRuntime::LocalRuntime(Options options, const Clock& clock)
    : options_(std::move(options)), clock_(clock), spawner_(options_.supervisor_path) {}

std::string LocalRuntime::WorkerDir(const model::WorkerKey& key) const {
  return fmt::format("{}/{}/{}/{}", options_.runs_dir, key.job.value(), key.attempt, key.rank);
}

std::string LocalRuntime::StdoutPath(const model::WorkerKey& key) const {
  return WorkerDir(key) + "/" + kStdoutFile;
}

std::vector<LocalRuntime::RunningWorker> LocalRuntime::RunningWorkers() {
  std::vector<RunningWorker> running;
  MutexLock lock(mu_);
  for (const auto& [key, watch] : watched_) {
    if (watch.worker_pid > 0) running.push_back({key, watch.worker_pid, watch.gpus});
  }
  return running;
}

std::string LocalRuntime::StderrPath(const model::WorkerKey& key) const {
  return WorkerDir(key) + "/" + kStderrFile;
}

void LocalRuntime::Configure(Watch& watch, const model::LaunchSpec& spec) {
  watch.kill_grace_ms = spec.kill_grace_ms;
  watch.gpus = spec.gpus;
  if (spec.checkpoint_dir.empty()) return;
  std::filesystem::path dir(spec.checkpoint_dir);
  if (dir.is_relative()) {
    dir = std::filesystem::path(spec.working_dir.empty() ? watch.dir : spec.working_dir) / dir;
  }
  watch.checkpoint_marker = (dir / kCheckpointMarker).lexically_normal().string();
}

Status LocalRuntime::Launch(const model::LaunchSpec& launch) {
  const model::WorkerKey& key = launch.key;
  {
    MutexLock lock(mu_);
    if (watched_.contains(key)) {
      return MakeError(ErrorCode::kAlreadyExists,
                       fmt::format("{} is already running", KeyName(key)));
    }
  }
  // Without mu_, so that launches proceed in parallel and Poll and Stop do not wait for them: the
  // worker's mkdir is the exclusive claim (a second Launch of the key gets EEXIST), and the
  // worker is watched only once its supervisor runs.
  std::string dir = WorkerDir(key);
  DROVER_RETURN_IF_ERROR(EnsureDirectory(fmt::format("{}/{}", options_.runs_dir, key.job.value())));
  DROVER_RETURN_IF_ERROR(
      EnsureDirectory(fmt::format("{}/{}/{}", options_.runs_dir, key.job.value(), key.attempt)));
  if (mkdir(dir.c_str(), 0755) != 0) {
    if (errno == EEXIST) {
      return MakeError(ErrorCode::kAlreadyExists,
                       fmt::format("{} was launched before ({} exists)", KeyName(key), dir));
    }
    return Internal(fmt::format("cannot create {}: {}", dir, std::strerror(errno)));
  }
  model::LaunchSpec spec = launch;
  spec.env["DROVER_PREEMPT_NOTICE"] = dir + "/" + kPreemptNoticeFile;
  if (!options_.server_url.empty()) spec.env.try_emplace("DROVER_SERVER", options_.server_url);
  if (!options_.server_ca.empty()) spec.env.try_emplace("DROVER_CA", options_.server_ca);
  spec.env.try_emplace("DROVER_BIN", options_.drover_bin);
  if (!spec.env.contains("PATH")) {
    const char* path = std::getenv("PATH");
    spec.env["PATH"] = std::filesystem::path(options_.drover_bin).parent_path().string() + ":" +
                       (path != nullptr && *path != '\0' ? path : kDefaultPath);
  }
  Watch watch;
  watch.dir = dir;
  Configure(watch, spec);
  // A marker left by an earlier attempt counts only once touched again.
  if (!watch.checkpoint_marker.empty()) {
    watch.checkpoint_seen = ModificationTimeMs(watch.checkpoint_marker).value_or(0);
  }
  if (Status written = WriteLaunchFile(dir, spec); !written) {
    RemoveDirectoryTree(dir);
    return written;
  }
  auto supervisor = spawner_.Spawn(dir);
  if (!supervisor) {
    RemoveDirectoryTree(dir);
    return Internal(fmt::format("cannot start the supervisor of {}: {}", KeyName(key),
                                supervisor.error().message));
  }
  // Unknown (the spawner died with the request): watched as an adopted worker's, by its files.
  watch.supervisor = *supervisor;
  MutexLock lock(mu_);
  watched_[key] = std::move(watch);
  return OkStatus();
}

Status LocalRuntime::Stop(const model::WorkerKey& key, const model::StopRequest& request) {
  MutexLock lock(mu_);
  auto it = watched_.find(key);
  if (it == watched_.end()) {
    return NotFound(fmt::format("{} is not running here", KeyName(key)));
  }
  Watch& watch = it->second;
  if (watch.stopping == Stopping::kNo) {
    watch.stopping = request.preempt ? Stopping::kPreempt : Stopping::kCancel;
    if (request.preempt) {
      // Before the signal, so that the supervisor (and the worker) find it when SIGTERM arrives.
      PreemptNotice notice{request.reason.empty() ? "preempted" : request.reason,
                           WallTimeMs() + watch.kill_grace_ms};
      if (Status written = WritePreemptNotice(watch.dir, notice); !written) {
        std::fprintf(stderr, "drover: %s: cannot write the preemption notice: %s\n",
                     KeyName(key).c_str(), written.error().message.c_str());
      }
    }
  }
  return SignalSupervisor(key, watch, SIGTERM);
}

Status LocalRuntime::SetTimeout(const model::WorkerKey& key, DurationMs timeout_ms) {
  MutexLock lock(mu_);
  auto it = watched_.find(key);
  if (it == watched_.end()) {
    return NotFound(fmt::format("{} is not running here", KeyName(key)));
  }
  DROVER_RETURN_IF_ERROR(WriteTimeoutFile(it->second.dir, timeout_ms));
  // A supervisor that has not written supervisor.json may not block SIGUSR1 yet; it reads the
  // file when it begins supervising.
  if (!ReadSupervisorFile(it->second.dir)) return OkStatus();
  return SignalSupervisor(key, it->second, SIGUSR1);
}

Status LocalRuntime::SignalSupervisor(const model::WorkerKey& key, Watch& watch, int signal) {
  if (!watch.supervisor) {
    if (auto identity = ReadSupervisorFile(watch.dir)) watch.supervisor = *identity;
  }
  if (!watch.supervisor) {
    return Unavailable(fmt::format("the supervisor of {} has not started yet", KeyName(key)));
  }
  // A pidfd pins the process, so the start-time check and the signal concern the same one.
  const Pidfd pidfd(PidfdOpen(watch.supervisor->pid));
  if (pidfd.get() < 0) {
    if (errno == ESRCH) return OkStatus();  // Gone: Poll reports how it ended.
    if (errno != ENOSYS) {
      return Internal(
          fmt::format("cannot open the supervisor of {}: {}", KeyName(key), std::strerror(errno)));
    }
    if (IsAlive(*watch.supervisor)) kill(watch.supervisor->pid, signal);
    return OkStatus();
  }
  Status result = OkStatus();
  if (IsAlive(*watch.supervisor) && PidfdSendSignal(pidfd.get(), signal) != 0 && errno != ESRCH) {
    result = Internal(
        fmt::format("cannot signal the supervisor of {}: {}", KeyName(key), std::strerror(errno)));
  }
  return result;
}

std::vector<model::WorkerKey> LocalRuntime::Adopt(const std::vector<model::WorkerKey>& keys) {
  MutexLock lock(mu_);
  std::vector<model::WorkerKey> unknown;
  for (const model::WorkerKey& key : keys) {
    if (watched_.contains(key)) continue;
    std::string dir = WorkerDir(key);
    struct stat info {};
    if (stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
      unknown.push_back(key);
      continue;
    }
    Watch watch;
    watch.dir = std::move(dir);
    if (auto identity = ReadSupervisorFile(watch.dir)) watch.supervisor = *identity;
    if (auto spec = ReadLaunchFile(watch.dir)) {
      Configure(watch, *spec);
      // Checkpoints made while no runtime watched are reported; one already reported before the
      // restart may be reported again (the controller takes the same time twice as one).
      std::string launch = watch.dir + "/" + kLaunchFile;
      watch.checkpoint_seen = ModificationTimeMs(launch).value_or(0);
    }
    // A notice left by a Stop of the earlier instance still makes the exit a preemption.
    std::string notice = watch.dir + "/" + kPreemptNoticeFile;
    if (access(notice.c_str(), F_OK) == 0) watch.stopping = Stopping::kPreempt;
    watched_[key] = std::move(watch);
  }
  return unknown;
}

void LocalRuntime::CollectCheckpoint(const model::WorkerKey& key, Watch& watch,
                                     std::vector<model::WorkerEvent>& events) {
  if (watch.checkpoint_marker.empty() || !watch.started_reported) return;
  std::optional<TimeMs> mtime = ModificationTimeMs(watch.checkpoint_marker);
  if (!mtime || *mtime <= watch.checkpoint_seen) return;
  watch.checkpoint_seen = *mtime;
  events.push_back(Event(key, model::WorkerEvent::Kind::kCheckpoint, *mtime));
}

bool LocalRuntime::CollectFromFiles(const model::WorkerKey& key, Watch& watch,
                                    bool check_checkpoint,
                                    std::vector<model::WorkerEvent>& events) {
  // exit.json is written after started.json (and after the worker's last touch of the
  // checkpoint marker), so reading it first cannot miss a start or a checkpoint.
  auto exit = ReadExitFile(watch.dir);
  if (!watch.started_reported) {
    if (auto started = ReadStartedFile(watch.dir)) {
      events.push_back(Event(key, model::WorkerEvent::Kind::kStarted, started->at));
      watch.started_reported = true;
      watch.worker_pid = started->pid;
    }
  }
  bool exited = exit || exit.error().code != ErrorCode::kNotFound;
  if (check_checkpoint || exited) CollectCheckpoint(key, watch, events);
  if (exit) {
    events.push_back(Event(key, model::WorkerEvent::Kind::kExited, exit->at,
                           StopOutcome(watch, std::move(exit->exit))));
    return true;
  }
  if (exited) {
    // Atomic writes make this a damaged disk or a foreign file; do not watch it forever.
    events.push_back(Event(key, model::WorkerEvent::Kind::kExited, clock_.Now(),
                           LostStatus(watch, "unreadable exit record: " + exit.error().message)));
    return true;
  }
  return false;
}

LocalRuntime::Pidfd& LocalRuntime::Pidfd::operator=(Pidfd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

LocalRuntime::Pidfd::~Pidfd() {
  if (fd_ >= 0) close(fd_);
}

void LocalRuntime::WatchSupervisorExit(Watch& watch) {
  if (watch.exit_watch.get() >= 0 || !watch.supervisor) return;
  // Checked after the open: the pidfd then names the process the identity names, not a
  // successor that took its pid.
  Pidfd pidfd(PidfdOpen(watch.supervisor->pid));
  if (pidfd.get() >= 0 && IsAlive(*watch.supervisor)) watch.exit_watch = std::move(pidfd);
}

bool LocalRuntime::SupervisorGone(Watch& watch) {
  if (!watch.supervisor) {
    if (auto identity = ReadSupervisorFile(watch.dir)) watch.supervisor = *identity;
  }
  if (watch.supervisor) return !IsAlive(*watch.supervisor);
  // Adopted, and its supervisor never wrote supervisor.json: lost once that is long overdue.
  struct stat info {};
  std::string launch = watch.dir + "/" + kLaunchFile;
  if (stat(launch.c_str(), &info) != 0 && stat(watch.dir.c_str(), &info) != 0) return true;
  TimeMs written =
      static_cast<TimeMs>(info.st_mtim.tv_sec) * 1000 + info.st_mtim.tv_nsec / 1'000'000;
  return WallTimeMs() - written > options_.supervisor_start_grace_ms;
}

model::ExitStatus LocalRuntime::LostStatus(const Watch& watch, std::string message) {
  model::ExitStatus exit;
  exit.exit_code = -1;
  exit.cancelled = watch.stopping == Stopping::kCancel;
  exit.preempted = watch.stopping == Stopping::kPreempt;
  exit.message = std::move(message);
  return exit;
}

model::ExitStatus LocalRuntime::StopOutcome(const Watch& watch, model::ExitStatus exit) {
  // The supervisor decides from the notice file; this covers a notice that could not be
  // written, or a supervisor binary older than preemption.
  if (watch.stopping == Stopping::kPreempt && exit.cancelled) {
    exit.cancelled = false;
    exit.preempted = true;
  }
  return exit;
}

std::vector<model::WorkerEvent> LocalRuntime::Poll() {
  MutexLock lock(mu_);
  std::vector<model::WorkerEvent> events;
  const std::int64_t now = SteadyMs();
  const bool check_checkpoints = now >= next_checkpoint_check_;
  if (check_checkpoints) next_checkpoint_check_ = now + options_.checkpoint_poll_interval_ms;
  // The started workers whose supervisor is watched through a pidfd, and which of those pidfds
  // are readable (the supervisor exited): one poll(2) for all of them, where reading each
  // one's files cost two path look-ups and a /proc read at every call (a fifth of a core with
  // 100 workers, docs/benchmarks.md).
  std::vector<pollfd> exit_watches;
  if (!check_checkpoints) {
    for (auto& [key, watch] : watched_) {
      if (watch.started_reported && watch.exit_watch.get() >= 0) {
        exit_watches.push_back({watch.exit_watch.get(), POLLIN, 0});
      }
    }
    if (!exit_watches.empty() &&
        poll(exit_watches.data(), exit_watches.size(), /*timeout=*/0) < 0) {
      exit_watches.clear();  // read every worker's files, as without pidfds
    }
  }
  // exit_watches is in watched_'s order: the next entry is this watch's when the fds match.
  std::size_t next_exit_watch = 0;
  for (auto it = watched_.begin(); it != watched_.end();) {
    const model::WorkerKey& key = it->first;
    Watch& watch = it->second;
    if (next_exit_watch < exit_watches.size() &&
        exit_watches[next_exit_watch].fd == watch.exit_watch.get()) {
      const bool supervisor_exited = exit_watches[next_exit_watch++].revents != 0;
      if (!supervisor_exited) {
        ++it;
        continue;
      }
    }
    bool exited = CollectFromFiles(key, watch, check_checkpoints, events);
    // The supervisor writes exit.json just before it exits, so look again after finding it gone.
    if (!exited && SupervisorGone(watch)) {
      exited = CollectFromFiles(key, watch, /*check_checkpoint=*/true, events);
      if (!exited) {
        events.push_back(Event(key, model::WorkerEvent::Kind::kExited, clock_.Now(),
                               LostStatus(watch, "supervisor lost")));
        exited = true;
      }
    }
    if (!exited && watch.started_reported) WatchSupervisorExit(watch);
    it = exited ? watched_.erase(it) : std::next(it);
  }
  return events;
}

}  // namespace drover::agent
