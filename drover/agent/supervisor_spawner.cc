#include "drover/agent/supervisor_spawner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
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

namespace drover::agent {
namespace {

constexpr int kChannelFd = os::kHelperChannelFd;
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

// The dynamic loader binds every symbol of every library when the spawner starts, so that the
// supervisors forked from it never resolve one lazily each. Only the supervisors' own environment
// has it: a worker gets its spec's environment plus PATH, LANG and HOME.
SupervisorSpawner::SupervisorSpawner(std::string program)
    : process_({.program = std::move(program),
                .args = {"spawn-supervisors"},
                .socket_type = SOCK_SEQPACKET,
                .environment = {"LD_BIND_NOW=1"}}) {}

SupervisorSpawner::~SupervisorSpawner() {
  MutexLock lock(mu_);
  process_.Stop();  // its supervisors are in sessions of their own: they stay
}

pid_t SupervisorSpawner::SpawnerPid() {
  MutexLock lock(mu_);
  return process_.pid();
}

Result<std::optional<ProcessIdentity>> SupervisorSpawner::Spawn(const std::string& worker_dir) {
  if (!IsWorkerDirName(worker_dir)) {
    return InvalidArgument(
        fmt::format("worker directory '{}' is not an absolute path of at most {} bytes", worker_dir,
                    kMaxWorkerDirBytes));
  }
  MutexLock lock(mu_);
  for (bool restarted = false;;) {
    DROVER_RETURN_IF_ERROR(process_.Start());
    if (send(process_.socket(), worker_dir.data(), worker_dir.size(), MSG_NOSIGNAL) >= 0) break;
    const int error = errno;
    if (error == EINTR) continue;
    process_.Stop();
    // EPIPE, ECONNRESET: the spawner had died (a kill, a crash) before this request.
    if (restarted || (error != EPIPE && error != ECONNRESET)) {
      return Internal(fmt::format("cannot reach the supervisor spawner: {}", std::strerror(error)));
    }
    restarted = true;
  }
  // The request was taken: from here on a supervisor may exist.
  char reply[kMaxReplyBytes];
  ssize_t n = -1;
  if (os::WaitReadable(process_.socket(), kReplyTimeoutMs)) {
    while ((n = recv(process_.socket(), reply, sizeof reply, 0)) < 0 && errno == EINTR) {
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
  process_.Stop();
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
  if (argc != 1 || !os::HasHelperChannel(SOCK_SEQPACKET)) {
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
