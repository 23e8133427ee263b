#include "drover/agent/supervisor_spawner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "drover/agent/fd_util.h"
#include "drover/agent/supervisor.h"

extern char** environ;

namespace drover::agent {
namespace {

// The spawner's end of the socket pair.
constexpr int kChannelFd = 3;
// Replies: "ok PID" or "error MESSAGE"; longer messages are cut.
constexpr std::size_t kMaxReplyBytes = 4096;
constexpr std::string_view kOk = "ok ";
constexpr std::string_view kError = "error ";

// What a request may name: an absolute path of at most kMaxWorkerDirBytes, without NUL. Checked
// by the runtime before it sends and by the spawner on what it receives.
bool IsWorkerDirName(std::string_view dir) {
  return !dir.empty() && dir.front() == '/' &&
         dir.size() <= SupervisorSpawner::kMaxWorkerDirBytes &&
         dir.find('\0') == std::string_view::npos;
}

// In the forked child: tells the spawner why the set-up failed (through `report`) and exits.
[[noreturn]] void FailSetup(int report, const std::string& step, int error) {
  std::string message = fmt::format("{}: {}", step, std::strerror(error));
  if (message.size() > kMaxReplyBytes - kError.size())
    message.resize(kMaxReplyBytes - kError.size());
  ssize_t ignored = write(report, message.data(), message.size());
  (void)ignored;
  _exit(127);
}

// In the forked child: the set-up of supervisor_spawner.h, then the supervisor itself. Closing
// `report` (with every descriptor above 2) tells the spawner that the set-up succeeded.
[[noreturn]] void BecomeSupervisor(std::string dir, int report) {
  if (setsid() < 0) FailSetup(report, "setsid", errno);
  const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null < 0) FailSetup(report, "cannot open /dev/null", errno);
  const std::string log = dir + "/" + kSupervisorLogFile;
  const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out < 0) FailSetup(report, "cannot open " + log, errno);
  if (chdir(dir.c_str()) != 0) FailSetup(report, "cannot enter " + dir, errno);
  if (dup2(null, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0 ||
      dup2(out, STDERR_FILENO) < 0) {
    FailSetup(report, "dup2", errno);
  }
  for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
    // SIGKILL, SIGSTOP and glibc's reserved real-time signals refuse; nothing to reset there.
    if (signal_number != SIGKILL && signal_number != SIGSTOP) signal(signal_number, SIG_DFL);
  }
  sigset_t blocked;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGTERM);
  sigaddset(&blocked, SIGINT);
  sigaddset(&blocked, SIGCHLD);
  sigprocmask(SIG_SETMASK, &blocked, nullptr);
  CloseFdsFrom(3, -1);  // the socket, `report` (the spawner reads its end), null, out
  char verb[] = "supervise";
  char* args[] = {verb, dir.data(), nullptr};
  const int status = SupervisorMain(2, args);
  std::fflush(nullptr);
  _exit(status);
}

// Loads the name service modules (nsswitch.conf's `passwd` and `group` sources: libnss_files,
// libnss_systemd, ...) once, here, so that each supervisor forked from the spawner finds them
// loaded when it looks its job's account up (supervisor.h), instead of opening and relocating them
// itself (libnss_systemd's dlopen showed in every supervisor's profile before).
void WarmUpAccountLookups() {
  passwd entry{};
  passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (getpwuid_r(0, &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr) return;
  gid_t groups[64];
  int count = 64;
  getgrouplist(found->pw_name, found->pw_gid, groups, &count);
}

// One request of the spawner's loop: the reply to send.
std::string Serve(std::string_view request) {
  if (!IsWorkerDirName(request)) {
    return std::string(kError) + "the worker directory must be an absolute path of at most " +
           std::to_string(SupervisorSpawner::kMaxWorkerDirBytes) + " bytes";
  }
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    return fmt::format("{}cannot create a pipe: {}", kError, std::strerror(errno));
  }
  const pid_t pid = fork();
  if (pid == 0) {
    close(report[0]);
    BecomeSupervisor(std::string(request), report[1]);
  }
  const int fork_error = errno;
  close(report[1]);
  if (pid < 0) {
    close(report[0]);
    return fmt::format("{}fork: {}", kError, std::strerror(fork_error));
  }
  std::string failure;
  char buffer[512];
  for (;;) {
    const ssize_t n = read(report[0], buffer, sizeof buffer);
    if (n > 0 && failure.size() < kMaxReplyBytes) failure.append(buffer, static_cast<size_t>(n));
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  close(report[0]);
  if (!failure.empty()) return std::string(kError) + failure;  // the kernel reaps the child
  return std::string(kOk) + std::to_string(pid);
}

}  // namespace

SupervisorSpawner::SupervisorSpawner(std::string program) : program_(std::move(program)) {}

SupervisorSpawner::~SupervisorSpawner() {
  MutexLock lock(mu_);
  StopLocked();
}

pid_t SupervisorSpawner::SpawnerPid() {
  MutexLock lock(mu_);
  return pid_;
}

void SupervisorSpawner::StopLocked() {
  if (socket_ >= 0) close(socket_);
  socket_ = -1;
  if (pid_ > 0) {
    // Its supervisors are in sessions of their own and are not its process group: they stay.
    kill(pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = 0;
}

Status SupervisorSpawner::StartLocked() {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    return Internal(
        fmt::format("cannot create the supervisor spawner's socket: {}", std::strerror(errno)));
  }
  // Above kChannelFd, so that the dup2 below copies it (and drops close-on-exec in the copy).
  const int child_end = fcntl(pair[1], F_DUPFD_CLOEXEC, kChannelFd + 1);
  close(pair[1]);
  if (child_end < 0) {
    close(pair[0]);
    return Internal(
        fmt::format("cannot create the supervisor spawner's socket: {}", std::strerror(errno)));
  }
  std::string program = program_;
  char verb[] = "spawn-supervisors";
  char* argv[] = {program.data(), verb, nullptr};
  // The dynamic loader binds every symbol of every library when the spawner starts, so that the
  // supervisors forked from it never resolve one lazily each. Only the supervisors' own
  // environment has it: a worker gets its spec's environment plus PATH, LANG and HOME.
  char bind_now[] = "LD_BIND_NOW=1";
  std::vector<char*> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (std::string_view(*entry).starts_with("LD_BIND_NOW=")) continue;
    env.push_back(*entry);
  }
  env.push_back(bind_now);
  env.push_back(nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigset_t defaults;  // every catchable signal, ignored ones (the server's SIGPIPE) included
  sigfillset(&defaults);
  sigdelset(&defaults, SIGKILL);
  sigdelset(&defaults, SIGSTOP);
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attributes);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, child_end, kChannelFd);
  // Stdout and stderr stay the server's (the spawner writes only when it cannot go on); no other
  // descriptor of the server (the data folder's lock among them) reaches it or its supervisors.
  posix_spawn_file_actions_addclosefrom_np(&actions, kChannelFd + 1);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  pid_t pid = 0;
  const int error = posix_spawn(&pid, program.c_str(), &actions, &attributes, argv, env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(child_end);
  if (error != 0) {
    close(pair[0]);
    return Internal(
        fmt::format("cannot start the supervisor spawner {}: {}", program_, std::strerror(error)));
  }
  socket_ = pair[0];
  pid_ = pid;
  return OkStatus();
}

Result<std::optional<ProcessIdentity>> SupervisorSpawner::Spawn(const std::string& worker_dir) {
  if (!IsWorkerDirName(worker_dir)) {
    return InvalidArgument(
        fmt::format("worker directory '{}' is not an absolute path of at most {} bytes", worker_dir,
                    kMaxWorkerDirBytes));
  }
  MutexLock lock(mu_);
  for (bool restarted = false;;) {
    if (socket_ < 0) DROVER_RETURN_IF_ERROR(StartLocked());
    if (send(socket_, worker_dir.data(), worker_dir.size(), MSG_NOSIGNAL) >= 0) break;
    const int error = errno;
    if (error == EINTR) continue;
    StopLocked();
    // EPIPE, ECONNRESET: the spawner had died (a kill, a crash) before this request.
    if (restarted || (error != EPIPE && error != ECONNRESET)) {
      return Internal(fmt::format("cannot reach the supervisor spawner: {}", std::strerror(error)));
    }
    restarted = true;
  }
  // The request was taken: from here on a supervisor may exist.
  pollfd readable{socket_, POLLIN, 0};
  int ready;
  while ((ready = poll(&readable, 1, kReplyTimeoutMs)) < 0 && errno == EINTR) {
  }
  char reply[kMaxReplyBytes];
  ssize_t n = -1;
  if (ready > 0) {
    while ((n = recv(socket_, reply, sizeof reply, 0)) < 0 && errno == EINTR) {
    }
  }
  const std::string_view text(reply, n > 0 ? static_cast<std::size_t>(n) : 0);
  if (text.starts_with(kError)) return Internal(std::string(text.substr(kError.size())));
  pid_t pid = 0;
  if (text.starts_with(kOk)) {
    const std::string_view digits = text.substr(kOk.size());
    const auto parsed = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
    if (parsed.ec == std::errc() && parsed.ptr == digits.data() + digits.size() && pid > 0) {
      // The start time never changes; 0 (already gone) makes IsAlive false.
      return std::optional<ProcessIdentity>(
          ProcessIdentity{pid, ProcessStartTime(pid).value_or(0)});
    }
  }
  std::fprintf(stderr,
               "drover: the supervisor spawner gave no answer for %s; watching the directory\n",
               worker_dir.c_str());
  StopLocked();
  return std::optional<ProcessIdentity>();
}

std::optional<int> RunSupervisorVerb(int argc, char** argv) {
  if (argc < 2) return std::nullopt;
  const std::string_view verb = argv[1];
  if (verb == "supervise") return SupervisorMain(argc - 1, argv + 1);
  if (verb == "spawn-supervisors") return SupervisorSpawnerMain(argc - 1, argv + 1);
  return std::nullopt;
}

int SupervisorSpawnerMain(int argc, char** argv) {
  (void)argv;
  int type = 0;
  socklen_t length = sizeof type;
  if (argc != 1 || getsockopt(kChannelFd, SOL_SOCKET, SO_TYPE, &type, &length) != 0 ||
      type != SOCK_SEQPACKET) {
    std::fprintf(stderr,
                 "usage: drover spawn-supervisors (started by the runtime, with its socket on "
                 "descriptor 3)\n");
    return 2;
  }
  WarmUpAccountLookups();
  signal(SIGCHLD, SIG_IGN);  // the kernel reaps every supervisor as it exits
  signal(SIGPIPE, SIG_IGN);  // a runtime gone mid-reply: the next recv sees the socket closed
  char request[SupervisorSpawner::kMaxWorkerDirBytes + 2];
  for (;;) {
    const ssize_t n = recv(kChannelFd, request, sizeof request, 0);
    if (n == 0) return 0;
    if (n < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "drover spawn-supervisors: %s\n", std::strerror(errno));
      return 1;
    }
    const std::string reply = Serve(std::string_view(request, static_cast<std::size_t>(n)));
    if (send(kChannelFd, reply.data(), reply.size(), MSG_NOSIGNAL) < 0) return 0;  // runtime gone
  }
}

}  // namespace drover::agent
