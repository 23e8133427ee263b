#include "drover/agent/supervisor.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "drover/agent/fd_util.h"
#include "drover/agent/oom.h"
#include "drover/agent/outputs.h"
#include "drover/agent/worker_files.h"
#include "drover/common/quantity.h"
#include "drover/model/outputs.h"
#include "drover/os/unix_account.h"

extern char** environ;

namespace drover::agent {
namespace {

// How long the supervisor keeps killing and reaping leftover descendants before it gives up
// (a process stuck in uninterruptible sleep cannot be reaped).
constexpr DurationMs kCleanupLimitMs = 30'000;
// The longest sigtimedwait; reaping also happens on this beat in case a SIGCHLD is missed.
constexpr DurationMs kMaxWaitMs = 1'000;

// The Unix account a worker runs as when the supervisor runs as root (LaunchSpec::run_as).
struct Account {
  os::UnixAccount user;
  std::vector<gid_t> groups;  // its supplementary groups, its primary group included
};

DurationMs MonotonicMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<DurationMs>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

void Log(std::string_view line) {
  std::string text = fmt::format("drover supervise[{}]: {}\n", getpid(), line);
  ssize_t ignored = write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
}

sigset_t SupervisedSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGUSR1);  // the time limit changed: re-read timeout.json
  return set;
}

// Pids whose parent is `parent`, from /proc.
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return children;
  while (dirent* entry = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    auto text = ReadWholeFile(fmt::format("/proc/{}/stat", pid));
    if (!text) continue;
    std::size_t paren = text->rfind(')');
    if (paren == std::string::npos) continue;
    // ") S PPID ..."
    int ppid = 0;
    char state = 0;
    if (std::sscanf(text->c_str() + paren + 1, " %c %d", &state, &ppid) == 2 && ppid == parent &&
        state != 'Z') {
      children.push_back(static_cast<pid_t>(pid));
    }
  }
  closedir(proc);
  return children;
}

model::ExitStatus Failed(int exit_code, std::string message) {
  model::ExitStatus exit;
  exit.exit_code = exit_code;
  exit.message = std::move(message);
  return exit;
}

// The account `spec`'s worker switches to (os::AccountToRunAs: none when this process is not
// root or run_as is empty), with its supplementary groups. An error (its message is the
// worker's exit message) when the account does not exist on this node, or is root and the
// launch does not allow root.
Result<std::optional<Account>> AccountOf(const model::LaunchSpec& spec) {
  DROVER_ASSIGN_OR_RETURN(std::optional<os::UnixAccount> found,
                          os::AccountToRunAs(spec.run_as, spec.may_run_as_root,
                                             fmt::format("on node {}", spec.node.value())));
  if (!found) return std::optional<Account>();
  std::vector<gid_t> groups = os::GroupsOf(*found);
  return std::optional<Account>(Account{std::move(*found), std::move(groups)});
}

// The steps of the worker's child, between vfork and exec, that can fail.
enum class ChildStep : int {
  kSetgroups,
  kSetgid,
  kSetuid,
  kRootRemains,
  kMakeDirectory,
  kChdir,
  kExec
};

// What the child reports through the close-on-exec pipe when a step fails: a fixed-size record,
// one write, so that the child formats nothing (the supervisor writes the message).
struct ChildFailure {
  ChildStep step = ChildStep::kExec;
  int error = 0;  // errno of the failed call
  // kMakeDirectory: the index of the failed step in ChildPlan::directories.
  std::size_t directory = 0;
};

// One directory the child creates (a prefix of a make_dirs entry, mkdir'ed with mode 0755, an
// existing one accepted) or, `check`, the entry itself, which must then be a directory.
struct DirectoryStep {
  std::string path;
  bool check = false;
};

// The prefixes of `path` that end before a '/', then `path` itself with its check: what
// common/filesystem.h's CreateDirectories does, as steps the child can take without allocating.
void AddDirectorySteps(const std::string& path, std::vector<DirectoryStep>& steps) {
  for (std::size_t end = path.find('/', 1);; end = path.find('/', end + 1)) {
    steps.push_back({path.substr(0, end), false});
    if (end == std::string::npos) break;
  }
  steps.push_back({path, true});
}

// Everything the worker's child uses, prepared by the supervisor before vfork. The child shares
// the supervisor's memory until it execs, so it reads this and makes system calls only: no
// allocation, no lock, no formatting (the supervisor is single-threaded and, suspended by vfork,
// runs nothing meanwhile).
struct ChildPlan {
  pid_t supervisor = 0;
  int in = -1, out = -1, err = -1, report = -1;
  const Account* account = nullptr;  // the account to switch to; none when null
  const std::vector<DirectoryStep>* directories = nullptr;
  const char* working_dir = nullptr;
  char** argv = nullptr;
  char** envp = nullptr;
};

// The child's steps that can fail, up to the exec, which returns only when it failed: the
// account taken on with the raw system calls, which change this process's credentials alone
// (glibc's wrappers would also signal the threads of the process they take themselves for), the
// directories, the working directory, the exec.
ChildFailure RunWorkerChildSteps(const ChildPlan& plan) {
  if (const Account* account = plan.account) {
    if (syscall(SYS_setgroups, account->groups.size(), account->groups.data()) != 0) {
      return {ChildStep::kSetgroups, errno};
    }
    if (syscall(SYS_setgid, account->user.gid) != 0) return {ChildStep::kSetgid, errno};
    if (syscall(SYS_setuid, account->user.uid) != 0) return {ChildStep::kSetuid, errno};
    if (account->user.uid != 0 && (syscall(SYS_setuid, 0) == 0 || geteuid() == 0)) {
      return {ChildStep::kRootRemains, 0};
    }
  }
  for (std::size_t i = 0; i < plan.directories->size(); ++i) {
    const DirectoryStep& step = (*plan.directories)[i];
    if (!step.check) {
      if (mkdir(step.path.c_str(), 0755) != 0 && errno != EEXIST) {
        return {ChildStep::kMakeDirectory, errno, i};
      }
      continue;
    }
    struct stat info {};
    if (stat(step.path.c_str(), &info) != 0) return {ChildStep::kMakeDirectory, errno, i};
    if (!S_ISDIR(info.st_mode)) return {ChildStep::kMakeDirectory, ENOTDIR, i};
  }
  if (chdir(plan.working_dir) != 0) return {ChildStep::kChdir, errno};
  environ = plan.envp;  // So that execvp searches the worker's PATH (the supervisor restores it).
  execvp(plan.argv[0], plan.argv);
  return {ChildStep::kExec, errno};
}

// The child, from vfork to exec (supervisor.h says what it sets up); a failed step is reported
// through the pipe and ends it with exit code 127.
[[noreturn]] void RunWorkerChild(const ChildPlan& plan) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != plan.supervisor) _exit(127);  // The supervisor died before the prctl.
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  dup2(plan.in, STDIN_FILENO);
  dup2(plan.out, STDOUT_FILENO);
  dup2(plan.err, STDERR_FILENO);
  CloseFdsFrom(3, plan.report);
  ChildFailure failure = RunWorkerChildSteps(plan);
  ssize_t ignored = write(plan.report, &failure, sizeof(failure));
  (void)ignored;
  _exit(127);
}

// Starts the worker's child: vfork, the copy of the supervisor's page tables that a fork makes
// (and the copy-on-write faults after it) skipped. Returns its pid, or -1 with errno.
pid_t SpawnWorkerChild(const ChildPlan& plan) {
  char** const supervisor_environ = environ;
  pid_t child = vfork();
  if (child == 0) RunWorkerChild(plan);
  const int error = errno;
  environ = supervisor_environ;
  errno = error;
  return child;
}

// The message of a failed child step (as supervisor.h lists them).
std::string DescribeChildFailure(const ChildFailure& failure, const ChildPlan& plan,
                                 const model::LaunchSpec& spec) {
  const char* reason = std::strerror(failure.error);
  auto cannot_run_as = [&](const char* call) {
    return fmt::format("cannot run as {}: {}: {}", plan.account->user.name, call, reason);
  };
  switch (failure.step) {
    case ChildStep::kSetgroups:
      return cannot_run_as("setgroups");
    case ChildStep::kSetgid:
      return cannot_run_as("setgid");
    case ChildStep::kSetuid:
      return cannot_run_as("setuid");
    case ChildStep::kRootRemains:
      return fmt::format("cannot run as {}: root privileges remain after setuid",
                         plan.account->user.name);
    case ChildStep::kMakeDirectory:
      return fmt::format("cannot create directory {}: {}",
                         (*plan.directories)[failure.directory].path, reason);
    case ChildStep::kChdir:
      return fmt::format("exec failed: {} (working directory {})", reason, plan.working_dir);
    case ChildStep::kExec:
      return fmt::format("exec failed: {} ({})", reason, spec.argv[0]);
  }
  return fmt::format("exec failed: {}", reason);
}

class Supervisor {
 public:
  explicit Supervisor(std::string dir) : dir_(std::move(dir)) {}

  int Run();

 private:
  // Forks and execs the worker. Returns false (with exit_ filled in) when it could not start.
  bool StartWorker(const model::LaunchSpec& spec);
  // Waits for the worker to exit, enforcing the timeout and cancellation.
  void Supervise(const model::LaunchSpec& spec);
  void BeginTermination(const model::LaunchSpec& spec, DurationMs now);
  // Reaps every exited child; records the worker's status when it is among them.
  void ReapChildren();
  // Kills and reaps every remaining descendant. Returns how many processes it killed.
  int KillLeftovers();
  // After a worker that exited 0: reads each of `spec`'s value outputs where it staged them
  // (model::NodeValueOutputPath), with the account's file permissions when it switched to one
  // (a link the job left there cannot make root read what the account may not), into
  // exit_.output_values; each it cannot read (absent, not a regular file, a first line too long)
  // is named in `notes`.
  void ReadValueOutputs(const model::LaunchSpec& spec, std::vector<std::string>& notes);
  int Finish(const model::ExitStatus& exit);
  // True if the runtime wrote the preemption notice (a stop is then a preemption).
  bool Preempted() const;

  std::string dir_;
  pid_t worker_ = 0;
  bool worker_done_ = false;
  int worker_status_ = 0;
  bool terminating_ = false;
  bool killed_ = false;
  DurationMs kill_at_ = 0;
  model::ExitStatus exit_;
  std::optional<OomCount> oom_before_;      // the OOM-kill counter before the worker started
  std::optional<os::UnixAccount> account_;  // the account the worker was switched to
};

int Supervisor::Finish(const model::ExitStatus& exit) {
  Status written = WriteExitFile(dir_, ExitRecord{exit, WallTimeMs()});
  if (!written) {
    Log(fmt::format("cannot record the exit: {}", written.error().message));
    return 1;
  }
  return 0;
}

bool Supervisor::Preempted() const {
  std::string path = dir_ + "/" + kPreemptNoticeFile;
  return access(path.c_str(), F_OK) == 0;
}

int Supervisor::Run() {
  sigset_t signals = SupervisedSignals();
  sigprocmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  setsid();  // Fails harmlessly when the spawner already made this process a session leader.
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    Log(fmt::format("cannot become a child subreaper: {}", std::strerror(errno)));
  }

  ProcessIdentity self{getpid(), ProcessStartTime(getpid()).value_or(0)};
  if (Status s = WriteSupervisorFile(dir_, self); !s) {
    Log(s.error().message);
    return 1;
  }

  auto spec = ReadLaunchFile(dir_);
  if (!spec) {
    Log(spec.error().message);
    return Finish(Failed(-1, "invalid launch.json: " + spec.error().message));
  }

  sigset_t pending;
  sigemptyset(&pending);
  sigpending(&pending);
  if (sigismember(&pending, SIGTERM) || sigismember(&pending, SIGINT)) {
    model::ExitStatus stopped;
    if (Preempted()) {
      stopped = Failed(-1, "before it started");
      stopped.preempted = true;
    } else {
      stopped = Failed(-1, "cancelled before start");
      stopped.cancelled = true;
    }
    return Finish(stopped);
  }

  oom_before_ = ReadOomKills();
  if (!StartWorker(*spec)) return Finish(exit_);
  if (Status s = WriteStartedFile(dir_, StartedRecord{worker_, WallTimeMs()}); !s) {
    Log(s.error().message);  // Poll still sees the exit; carry on supervising.
  }
  Supervise(*spec);

  if (WIFEXITED(worker_status_)) {
    exit_.exit_code = WEXITSTATUS(worker_status_);
  } else if (WIFSIGNALED(worker_status_)) {
    exit_.signal = WTERMSIG(worker_status_);
    exit_.exit_code = 128 + exit_.signal;
  }
  std::vector<std::string> notes;
  // A SIGKILL we did not send, while the OOM-kill counter rose: the OOM killer (oom.h).
  if (exit_.signal == SIGKILL && !killed_ && oom_before_) {
    std::optional<OomCount> after = ReadOomKills(oom_before_->path);
    if (after && after->kills > oom_before_->kills) {
      exit_.oom_killed = true;
      notes.push_back(fmt::format("killed by the OOM killer (oom_kill in {} rose from {} to {})",
                                  after->path, oom_before_->kills, after->kills));
    }
  }
  if (exit_.timed_out) {
    Result<DurationMs> changed = ReadTimeoutFile(dir_);
    notes.push_back("timed out after " + FormatDuration(changed ? *changed : spec->timeout_ms));
  }
  if (exit_.cancelled) notes.push_back("cancelled");
  if (exit_.preempted) {
    auto notice = ReadPreemptNotice(dir_);
    notes.push_back(notice && !notice->reason.empty() ? notice->reason : "preempted");
  }
  if (killed_) {
    notes.push_back(fmt::format("killed with SIGKILL after the {} grace period",
                                FormatDuration(spec->kill_grace_ms)));
  }
  int leftovers = KillLeftovers();
  if (leftovers > 0) notes.push_back(fmt::format("killed {} leftover process(es)", leftovers));
  if (exit_.Succeeded()) ReadValueOutputs(*spec, notes);
  exit_.message = fmt::format("{}", fmt::join(notes, "; "));
  return Finish(exit_);
}

void Supervisor::ReadValueOutputs(const model::LaunchSpec& spec, std::vector<std::string>& notes) {
  const auto read_all = [&] {
    for (const std::string& name : spec.value_outputs) {
      Result<std::string> value =
          ReadOutputValue(name, model::NodeValueOutputPath(dir_, name), RealFileSystem());
      if (value) {
        exit_.output_values[name] = *std::move(value);
      } else {
        notes.push_back(value.error().message);
      }
    }
  };
  if (!account_ || account_->uid == geteuid()) {
    read_all();
    return;
  }
  if (Status as_account = os::WithFileIdentityOf(*account_, read_all); !as_account) {
    notes.push_back(fmt::format("value outputs not read: {}", as_account.error().message));
  }
}

bool Supervisor::StartWorker(const model::LaunchSpec& spec) {
  if (spec.argv.empty()) {
    exit_ = Failed(127, "exec failed: argv is empty");
    return false;
  }
  Result<std::optional<Account>> account = AccountOf(spec);
  if (!account) {
    exit_ = Failed(127, account.error().message);
    return false;
  }
  if (*account) account_ = (*account)->user;
  // The value outputs' folder, in the worker's directory (the supervisor's): made here, as root,
  // and given to the account the worker runs as.
  if (!spec.value_outputs.empty()) {
    const std::string values = model::NodeValueOutputDir(dir_);
    if (account_) {
      if (Status given = os::GiveDirectory(values, *account_); !given) {
        exit_ = Failed(127, given.error().message);
        return false;
      }
    } else if (mkdir(values.c_str(), 0755) != 0 && errno != EEXIST) {
      exit_ =
          Failed(127, fmt::format("cannot create directory {}: {}", values, std::strerror(errno)));
      return false;
    }
  }
  // Everything the child needs is prepared before vfork (ChildPlan).
  // The value outputs' variables are the contract's, whatever the job's env says.
  std::map<std::string, std::string> env = spec.env;
  for (const std::string& name : spec.value_outputs) {
    env[model::OutputVariable(name)] = model::NodeValueOutputPath(dir_, name);
  }
  std::vector<std::string> env_strings;
  for (const auto& [name, value] : env) env_strings.push_back(name + "=" + value);
  auto add_default = [&](const std::string& name, const char* value) {
    if (value != nullptr && !env.contains(name)) env_strings.push_back(name + "=" + value);
  };
  add_default("PATH", getenv("PATH"));
  add_default("LANG", getenv("LANG"));
  if (*account) {
    add_default("HOME", (*account)->user.home.c_str());
    add_default("USER", (*account)->user.name.c_str());
    add_default("LOGNAME", (*account)->user.name.c_str());
  } else {
    add_default("HOME", getenv("HOME"));
  }
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = spec.argv;
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::string working_dir = spec.working_dir.empty() ? dir_ : spec.working_dir;
  std::vector<DirectoryStep> directories;
  for (const std::string& make : spec.make_dirs) {
    AddDirectorySteps(make.starts_with('/') ? make : working_dir + "/" + make, directories);
  }

  std::string stdout_path = dir_ + "/" + kStdoutFile;
  std::string stderr_path = dir_ + "/" + kStderrFile;
  int out = open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  int err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int pipe_fds[2] = {-1, -1};
  auto close_all = [&] {
    for (int fd : {out, err, in, pipe_fds[0], pipe_fds[1]}) {
      if (fd >= 0) close(fd);
    }
  };
  if (out < 0 || err < 0 || in < 0 || pipe2(pipe_fds, O_CLOEXEC) != 0) {
    exit_ = Failed(127, fmt::format("exec failed: cannot set up the worker's files: {}",
                                    std::strerror(errno)));
    close_all();
    return false;
  }

  ChildPlan plan;
  plan.supervisor = getpid();
  plan.in = in;
  plan.out = out;
  plan.err = err;
  plan.report = pipe_fds[1];
  plan.account = *account ? &**account : nullptr;
  plan.directories = &directories;
  plan.working_dir = working_dir.c_str();
  plan.argv = argv.data();
  plan.envp = envp.data();
  pid_t child = SpawnWorkerChild(plan);
  if (child < 0) {
    exit_ = Failed(127, fmt::format("exec failed: cannot fork: {}", std::strerror(errno)));
    close_all();
    return false;
  }
  close(pipe_fds[1]);
  pipe_fds[1] = -1;
  setpgid(child, child);  // Also here, so the group exists whichever process runs first.
  worker_ = child;

  // EOF at once (the exec closed the pipe), or the child's report of what failed.
  ChildFailure failure;
  std::size_t got = 0;
  while (got < sizeof(failure)) {
    ssize_t n = read(pipe_fds[0], reinterpret_cast<char*>(&failure) + got, sizeof(failure) - got);
    if (n == 0) break;
    if (n > 0) {
      got += static_cast<std::size_t>(n);
    } else if (errno != EINTR) {
      break;
    }
  }
  if (got == 0) {
    close_all();
    return true;
  }
  std::string message = got == sizeof(failure) && (failure.step != ChildStep::kMakeDirectory ||
                                                   failure.directory < directories.size())
                            ? DescribeChildFailure(failure, plan, spec)
                            : "exec failed: the worker's child ended without starting it";
  std::string line = "drover: " + message + "\n";  // in the worker's stderr, as the child would
  ssize_t ignored = write(err, line.data(), line.size());
  (void)ignored;
  close_all();
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  exit_ = Failed(127, std::move(message));
  return false;
}

void Supervisor::BeginTermination(const model::LaunchSpec& spec, DurationMs now) {
  terminating_ = true;
  if (spec.kill_grace_ms <= 0) {
    kill(-worker_, SIGKILL);
    killed_ = true;
    return;
  }
  kill(-worker_, SIGTERM);
  kill_at_ = now + spec.kill_grace_ms;
}

void Supervisor::ReapChildren() {
  int status = 0;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    if (pid == worker_) {
      worker_done_ = true;
      worker_status_ = status;
    }
  }
}

void Supervisor::Supervise(const model::LaunchSpec& spec) {
  sigset_t signals = SupervisedSignals();
  DurationMs started = MonotonicMs();
  // The limit at launch, or the one timeout.json gives (drover update --timeout), from the start.
  auto limit_at = [&] {
    Result<DurationMs> changed = ReadTimeoutFile(dir_);
    const DurationMs timeout = changed ? *changed : spec.timeout_ms;
    return timeout > 0 ? started + timeout : 0;
  };
  DurationMs timeout_at = limit_at();
  while (true) {
    ReapChildren();
    if (worker_done_) return;
    DurationMs now = MonotonicMs();
    if (!terminating_ && timeout_at > 0 && now >= timeout_at) {
      exit_.timed_out = true;
      BeginTermination(spec, now);
    }
    if (terminating_ && !killed_ && now >= kill_at_) {
      kill(-worker_, SIGKILL);
      killed_ = true;
    }
    DurationMs wake = now + kMaxWaitMs;
    if (!terminating_ && timeout_at > 0) wake = std::min(wake, timeout_at);
    if (terminating_ && !killed_) wake = std::min(wake, kill_at_);
    DurationMs wait_ms = std::max<DurationMs>(wake - now, 1);
    timespec ts{static_cast<time_t>(wait_ms / 1000), static_cast<long>(wait_ms % 1000) * 1'000'000};
    int sig = sigtimedwait(&signals, nullptr, &ts);
    if (sig == SIGUSR1) timeout_at = limit_at();
    if ((sig == SIGTERM || sig == SIGINT) && !terminating_) {
      // The runtime writes the notice before it signals a preemption.
      if (Preempted()) {
        exit_.preempted = true;
      } else {
        exit_.cancelled = true;
      }
      BeginTermination(spec, MonotonicMs());
    }
  }
}

int Supervisor::KillLeftovers() {
  std::set<pid_t> killed;
  kill(-worker_, SIGKILL);  // ESRCH when the group is already empty.
  DurationMs give_up_at = MonotonicMs() + kCleanupLimitMs;
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  while (true) {
    ReapChildren();
    // No child at all, not even a zombie: done, without reading every process's /proc entry
    // (the usual case, a worker that left nothing behind; the scan costs a read per process on
    // the machine, for every job).
    if (waitpid(-1, nullptr, WNOHANG) < 0 && errno == ECHILD) {
      return static_cast<int>(killed.size());
    }
    std::vector<pid_t> children = ChildrenOf(getpid());
    for (pid_t child : children) {
      if (kill(child, SIGKILL) == 0) killed.insert(child);
    }
    kill(-worker_, SIGKILL);
    if (MonotonicMs() >= give_up_at) {
      Log("giving up on descendants that do not die");
      return static_cast<int>(killed.size());
    }
    timespec ts{0, 20'000'000};
    sigtimedwait(&chld, nullptr, &ts);
  }
}

}  // namespace

int SupervisorMain(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: drover supervise WORKER_DIR\n");
    return 2;
  }
  char* absolute = realpath(argv[1], nullptr);
  if (absolute == nullptr) {
    std::fprintf(stderr, "drover supervise: %s: %s\n", argv[1], std::strerror(errno));
    return 1;
  }
  std::string dir(absolute);
  std::free(absolute);
  return Supervisor(std::move(dir)).Run();
}

}  // namespace drover::agent
