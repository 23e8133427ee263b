#pragma once

// HelperProcess: a long-lived child program that serves this process through one end of a socket
// pair on its descriptor 3, and nothing else of this process: the agent's supervisor spawner
// (agent/supervisor_spawner.h) and the Slurm executor's submission helper
// (exec/slurm/submit_helper.h). Both replace a process started per request by one started once.
//
// The child gets:
//   - descriptor 3: its end of the pair (SOCK_SEQPACKET or SOCK_STREAM, as asked); stdin from
//     /dev/null; stdout and stderr this process's; no other descriptor of this process (the data
//     folder's lock, sockets, logs);
//   - every signal at its default disposition and none blocked (this server ignores SIGPIPE);
//   - this process's environment as it is at Start, with Options::environment's NAME=VALUE
//     entries in place of any of the same names.
// The owner serializes the calls (it holds its own lock around them).

#include <sys/types.h>

#include <string>
#include <vector>

#include "drover/common/result.h"

namespace drover::os {

inline constexpr int kHelperChannelFd = 3;

class HelperProcess {
 public:
  struct Options {
    std::string program;                   // the executable's path (not looked up in PATH)
    std::vector<std::string> args;         // after argv[0], which is `program`
    int socket_type = 0;                   // SOCK_SEQPACKET or SOCK_STREAM
    std::vector<std::string> environment;  // NAME=VALUE entries that replace or add to environ
  };

  explicit HelperProcess(Options options);
  ~HelperProcess();  // Stop()
  HelperProcess(const HelperProcess&) = delete;
  HelperProcess& operator=(const HelperProcess&) = delete;

  // Starts the child unless it runs. kInternal naming the program and the step that failed.
  Status Start();
  // Closes this end of the socket, SIGKILLs the child and reaps it; nothing when none runs. Only
  // the child is killed: processes it started (the spawner's supervisors) keep running.
  void Stop();

  int socket() const { return socket_; }  // this end; -1 while none runs
  pid_t pid() const { return pid_; }      // 0 while none runs
  const std::string& program() const { return options_.program; }

 private:
  const Options options_;
  int socket_ = -1;
  pid_t pid_ = 0;
};

// Waits until `fd` (a helper's socket) has bytes or its end to read, at most `timeout_ms` (an
// interrupted wait starts over): true then; false on timeout (errno ETIMEDOUT) or a failed poll
// (its errno).
bool WaitReadable(int fd, int timeout_ms);

// In the child: true when descriptor kHelperChannelFd is a socket of `socket_type` (the helper
// was started by a HelperProcess, not from a shell).
bool HasHelperChannel(int socket_type);

}  // namespace drover::os
