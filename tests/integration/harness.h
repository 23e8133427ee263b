#pragma once

// Helpers for integration tests: temporary directories, the real `drover` binary as a child
// process (server, agent, CLI commands), polling with generous deadlines, and clean-up of every
// process a test started (including workers that outlive the server under their supervisors).
//
// Nothing here asserts on durations: waits poll a condition until a deadline and report
// whether it held.

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "drover/api/client.h"
#include "drover/testing/temp_dir.h"
#include "drover/testing/wait_until.h"

namespace drover::integration {

// The default deadline for anything a test waits for.
inline constexpr std::chrono::milliseconds kDeadline{30'000};

// Path of the `drover` binary under test, and of the repository root.
std::string DroverBinary();
std::string SourceDir();

using ::drover::testing::TempDir;

std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& text);
// Non-empty lines of `path` (empty if it does not exist).
std::vector<std::string> ReadLines(const std::string& path);

// drover::testing::WaitUntil with the integration tests' deadline, polling every 50 ms (what it
// waits for is other processes).
inline bool WaitUntil(const std::function<bool()>& condition,
                      std::chrono::milliseconds deadline = kDeadline) {
  return ::drover::testing::WaitUntil(condition, deadline, std::chrono::milliseconds(50));
}

// A child process started from argv, in its own process group, with stdout and stderr sent to
// files. Killed (SIGKILL to its group) and reaped on destruction unless already reaped.
class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const std::string& stdout_path,
               const std::string& stderr_path);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // True while the process has not exited (reaps it when it has).
  bool Running();
  // SIGKILL to the process only (not its group), then reaps it.
  void KillProcessOnly();
  // SIGKILL to the whole process group, then reaps the process.
  void KillGroup();
  // Waits for the exit up to `deadline`; the exit status (as from a shell: 128+signal for a
  // signal), or nullopt on timeout.
  std::optional<int> Wait(std::chrono::milliseconds deadline = kDeadline);

  std::string Stdout() const { return ReadFile(stdout_path_); }
  std::string Stderr() const { return ReadFile(stderr_path_); }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  std::string stdout_path_, stderr_path_;
};

// Result of running the drover CLI to completion.
struct CommandResult {
  int exit_code = -1;  // -1: did not finish before the deadline (it was killed)
  std::string out, err;
};

// Runs `drover ARGS...` to completion (killed after `deadline`), output captured in files under
// `scratch_dir`.
CommandResult RunDrover(const std::vector<std::string>& args, const std::string& scratch_dir,
                        std::chrono::milliseconds deadline = std::chrono::milliseconds(120'000));

// A `drover server` on 127.0.0.1, port 0, data in `data_dir`. With DROVER_TEST_STORE=postgres in
// the environment, its state is in a PostgreSQL database of the test program's cluster instead,
// one per data folder (unless the test passes --store itself), with a 3 s lease.
class ServerProcess {
 public:
  // Starts the server and waits for its ready file; `extra` goes after the subcommand (for
  // example {"--gpus", "4xH100-80GB"}); it listens on a free loopback port unless `extra` has
  // --listen. Fails the current test (ADD_FAILURE) when it does not come up; url() is then empty.
  ServerProcess(const std::string& data_dir, const std::string& scratch_dir,
                const std::vector<std::string>& extra);
  // Kills the server (SIGKILL to its group) and waits until its data folder's lock is free: a
  // launch it was spawning when it died holds the lock's descriptor until that child execs
  // (close-on-exec), and a server restarted on the folder meanwhile would find it in use.
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  bool ok() const { return !url_.empty(); }
  const std::string& url() const { return url_; }
  // The join token file the server keeps in its data directory, for the agents it lets join.
  std::string join_token_file() const { return data_dir_ + "/join.token"; }
  // The server's admin token (DATA/admin.token), also put in this process's DROVER_TOKEN so
  // that the CLI commands a test runs (RunDrover) send it.
  const std::string& token() const { return token_; }
  // An API client of url() that sends token().
  api::ApiClient Client() const;
  ChildProcess& process() { return *process_; }
  std::string Log() const;

 private:
  std::string data_dir_;
  std::string url_;
  std::string token_;
  std::unique_ptr<ChildProcess> process_;
};

// GET /v1/jobs/ID as JSON (null on error).
nlohmann::json GetJob(api::ApiClient& client, std::int64_t id);
// Node `name` as GET /v1/nodes shows it (null if it is not listed, or on error).
nlohmann::json GetNode(api::ApiClient& client, const std::string& name);

// Waits until job `id` is in one of `states`; returns the last state seen ("" if never read).
std::string WaitForState(api::ApiClient& client, std::int64_t id,
                         const std::set<std::string>& states,
                         std::chrono::milliseconds deadline = kDeadline);
// Waits until GET /v1/nodes shows node `name` in `state` (e.g. "ready", "lost").
bool WaitForNodeState(api::ApiClient& client, const std::string& name, const std::string& state,
                      std::chrono::milliseconds deadline = kDeadline);
// The whitespace-separated words of `line`.
std::vector<std::string> Words(const std::string& line);

// Waits until job `id` is terminal (succeeded, failed, cancelled, timed_out, skipped).
std::string WaitForTerminal(api::ApiClient& client, std::int64_t id,
                            std::chrono::milliseconds deadline = kDeadline);
bool IsTerminalState(const std::string& state);

// Submits YAML `spec` as the user the test runs as, and returns the job ids in order (empty,
// with a test failure, on error).
std::vector<std::int64_t> Submit(api::ApiClient& client, const std::string& spec,
                                 const std::string& file_name = "test.yaml");

// A policy with private_data: one queue, default, that team-a and team-b submit to; neither team
// sees the other's jobs.
inline constexpr char kPrivateTeamsPolicy[] = R"(kind: Policy
private_data: true
queues:
  - name: default
    access: {team-a: [submit], team-b: [submit]}
)";
// A member token of `user` in `team`, created by `admin` (POST /v1/tokens); "" with a test
// failure on error.
std::string CreateMemberToken(api::ApiClient& admin, const std::string& user,
                              const std::string& team);

// True while a process with this pid exists (kill(pid, 0) succeeds or fails with EPERM).
// A zombie child of someone else still counts as existing.
bool ProcessExists(pid_t pid);
// True if pid exists and is not a zombie.
bool ProcessAlive(pid_t pid);

// SIGKILLs every process other than this one whose working directory or command line mentions
// `root` (supervisors and workers of a test's servers), repeating until none is left or the
// deadline passes.
void KillProcessesUnder(const std::string& root);

// The server's log and each named agent's stdout and stderr, for a failure message; null ones
// are left out.
std::string ProcessLogs(ServerProcess* server,
                        const std::vector<std::pair<std::string, ChildProcess*>>& agents);

// Base fixture: one temporary directory per test, every process under it killed on TearDown.
class IntegrationTest : public ::testing::Test {
 protected:
  void TearDown() override;

  // Starts a server with data in dir_/`name`, declaring `gpus` (e.g. "4xH100-80GB").
  std::unique_ptr<ServerProcess> StartServer(const std::string& name, const std::string& gpus,
                                             std::vector<std::string> extra = {});
  // Starts `drover agent` serving node `name` with `gpus` (e.g. "2xA100-40GB") to `server`, with
  // data in dir_/`name` (a second agent of the same name takes over the first one's workers).
  std::unique_ptr<ChildProcess> StartAgent(const ServerProcess& server, const std::string& name,
                                           const std::string& gpus);
  // The same, to the server at `server_url` (e.g. a testing::TcpProxy in front of it), showing
  // the join token in `join_token_file`.
  std::unique_ptr<ChildProcess> StartAgent(const std::string& server_url, const std::string& name,
                                           const std::string& gpus,
                                           const std::string& join_token_file);

  TempDir dir_;
};

}  // namespace drover::integration
