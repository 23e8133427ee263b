#include "drover/os/helper_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <utility>

extern char** environ;

namespace drover::os {
namespace {

// NAME= of a NAME=VALUE entry.
std::string_view NameOf(std::string_view entry) { return entry.substr(0, entry.find('=') + 1); }

}  // namespace

bool WaitReadable(int fd, int timeout_ms) {
  pollfd readable{fd, POLLIN, 0};
  int ready;
  while ((ready = poll(&readable, 1, timeout_ms)) < 0 && errno == EINTR) {
  }
  if (ready == 0) errno = ETIMEDOUT;
  return ready > 0;
}

HelperProcess::HelperProcess(Options options) : options_(std::move(options)) {}

HelperProcess::~HelperProcess() { Stop(); }

void HelperProcess::Stop() {
  if (socket_ >= 0) close(socket_);
  socket_ = -1;
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = 0;
}

Status HelperProcess::Start() {
  if (socket_ >= 0) return OkStatus();
  int pair[2];
  if (socketpair(AF_UNIX, options_.socket_type | SOCK_CLOEXEC, 0, pair) != 0) {
    return Internal(
        fmt::format("cannot create {}'s socket: {}", options_.program, std::strerror(errno)));
  }
  // Above kHelperChannelFd, so that the dup2 below copies it (and drops close-on-exec there).
  const int child_end = fcntl(pair[1], F_DUPFD_CLOEXEC, kHelperChannelFd + 1);
  close(pair[1]);
  if (child_end < 0) {
    close(pair[0]);
    return Internal(
        fmt::format("cannot create {}'s socket: {}", options_.program, std::strerror(errno)));
  }
  std::vector<std::string> args = {options_.program};
  args.insert(args.end(), options_.args.begin(), options_.args.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> overrides = options_.environment;
  std::vector<char*> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    bool replaced = false;
    for (const std::string& override : overrides) {
      replaced = replaced || NameOf(override) == NameOf(*entry);
    }
    if (!replaced) env.push_back(*entry);
  }
  for (std::string& override : overrides) env.push_back(override.data());
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
  posix_spawn_file_actions_adddup2(&actions, child_end, kHelperChannelFd);
  posix_spawn_file_actions_addclosefrom_np(&actions, kHelperChannelFd + 1);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  pid_t pid = 0;
  const int error =
      posix_spawn(&pid, options_.program.c_str(), &actions, &attributes, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(child_end);
  if (error != 0) {
    close(pair[0]);
    return Internal(fmt::format("cannot start {}: {}", options_.program, std::strerror(error)));
  }
  socket_ = pair[0];
  pid_ = pid;
  return OkStatus();
}

bool HasHelperChannel(int socket_type) {
  int type = 0;
  socklen_t length = sizeof type;
  return getsockopt(kHelperChannelFd, SOL_SOCKET, SO_TYPE, &type, &length) == 0 &&
         type == socket_type;
}

}  // namespace drover::os
