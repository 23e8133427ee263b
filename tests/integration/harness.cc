#include "tests/integration/harness.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>
#include <thread>

#include "drover/model/job.h"
#include "drover/testing/postgres_cluster.h"

extern char** environ;

namespace drover::integration {

namespace fs = std::filesystem;
using nlohmann::json;

std::string DroverBinary() { return DROVER_BINARY; }
std::string SourceDir() { return DROVER_SOURCE_DIR; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::vector<std::string> ReadLines(const std::string& path) {
  std::vector<std::string> lines;
  std::istringstream in(ReadFile(path));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// ---------------------------------------------------------------------------------------------

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& stdout_path,
                           const std::string& stderr_path)
    : stdout_path_(stdout_path), stderr_path_(stderr_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, stdout_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t no_signals;
  sigemptyset(&no_signals);
  posix_spawnattr_setsigmask(&attr, &no_signals);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGINT);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> args = argv;
  std::vector<char*> cargs;
  for (std::string& arg : args) cargs.push_back(arg.data());
  cargs.push_back(nullptr);
  int rc = posix_spawn(&pid_, cargs[0], &actions, &attr, cargs.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    ADD_FAILURE() << "cannot spawn " << argv[0] << ": " << std::strerror(rc);
    pid_ = -1;
    reaped_ = true;
  }
}

ChildProcess::~ChildProcess() {
  if (!reaped_) KillGroup();
}

bool ChildProcess::Running() {
  if (reaped_) return false;
  pid_t done = waitpid(pid_, &status_, WNOHANG);
  if (done == pid_) reaped_ = true;
  return !reaped_;
}

void ChildProcess::KillProcessOnly() {
  if (reaped_) return;
  kill(pid_, SIGKILL);
  if (waitpid(pid_, &status_, 0) == pid_) reaped_ = true;
}

void ChildProcess::KillGroup() {
  if (pid_ <= 0) return;
  kill(-pid_, SIGKILL);
  if (reaped_) return;
  if (waitpid(pid_, &status_, 0) == pid_) reaped_ = true;
}

std::optional<int> ChildProcess::Wait(std::chrono::milliseconds deadline) {
  if (!WaitUntil([&] { return !Running(); }, deadline)) return std::nullopt;
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) return 128 + WTERMSIG(status_);
  return -1;
}

CommandResult RunDrover(const std::vector<std::string>& args, const std::string& scratch_dir,
                        std::chrono::milliseconds deadline) {
  static int counter = 0;
  const std::string base = scratch_dir + "/cli-" + std::to_string(++counter);
  std::vector<std::string> argv = {DroverBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess child(argv, base + ".out", base + ".err");
  CommandResult result;
  std::optional<int> code = child.Wait(deadline);
  if (!code) {
    child.KillGroup();
    ADD_FAILURE() << "drover " << args.front() << " did not finish before the deadline";
  }
  result.exit_code = code.value_or(-1);
  result.out = child.Stdout();
  result.err = child.Stderr();
  return result;
}

// ---------------------------------------------------------------------------------------------

namespace {

// Under DROVER_TEST_STORE=postgres, the flags that put the state of a server on `data_dir` in
// a database of the test program's PostgreSQL cluster: one database per data folder, so that a
// server restarted on the same folder finds its state and one on another folder starts empty,
// as with SQLite; a short lease, so that a server restarted after a SIGKILL takes over within
// a few seconds. Nothing when the test chose a store itself, or without the variable.
std::vector<std::string> TestStoreFlags(const std::string& data_dir,
                                        const std::vector<std::string>& extra) {
  const char* store = std::getenv("DROVER_TEST_STORE");
  if (store == nullptr || std::string_view(store) != "postgres") return {};
  if (std::find(extra.begin(), extra.end(), "--store") != extra.end()) return {};
  static std::map<std::string, std::string> databases;  // data folder -> URI
  const std::string folder = fs::weakly_canonical(data_dir).string();
  auto it = databases.find(folder);
  if (it == databases.end()) {
    auto uri = ::drover::testing::PostgresCluster::Shared().NewDatabase("it");
    if (!uri) {
      ADD_FAILURE() << "DROVER_TEST_STORE=postgres: " << uri.error().ToString();
      return {};
    }
    it = databases.emplace(folder, *uri).first;
  }
  return {"--store", it->second, "--lease", "3s", "--lease-renew", "500ms"};
}

}  // namespace

ServerProcess::ServerProcess(const std::string& data_dir, const std::string& scratch_dir,
                             const std::vector<std::string>& extra)
    : data_dir_(data_dir) {
  static int counter = 0;
  const std::string base = scratch_dir + "/server-" + std::to_string(++counter);
  const std::string ready_file = base + ".url";
  std::vector<std::string> argv = {DroverBinary(), "server",       "--data",
                                   data_dir,       "--ready-file", ready_file};
  if (std::find(extra.begin(), extra.end(), "--listen") == extra.end()) {
    argv.insert(argv.end(), {"--listen", "127.0.0.1:0"});
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  const std::vector<std::string> store = TestStoreFlags(data_dir, extra);
  argv.insert(argv.end(), store.begin(), store.end());
  process_ = std::make_unique<ChildProcess>(argv, base + ".out", base + ".err");
  bool ready = WaitUntil([&] { return fs::exists(ready_file) || !process_->Running(); });
  if (!ready || !fs::exists(ready_file)) {
    ADD_FAILURE() << "drover server did not become ready; its output:\n" << Log();
    return;
  }
  std::string url = ReadFile(ready_file);
  while (!url.empty() && (url.back() == '\n' || url.back() == '\r')) url.pop_back();
  url_ = url;
  // The admin token the server wrote before its ready file; a later server over the same data
  // keeps it. CLI commands the test runs find it in DROVER_TOKEN.
  token_ = ReadFile(data_dir + "/admin.token");
  while (!token_.empty() && (token_.back() == '\n' || token_.back() == '\r')) token_.pop_back();
  if (token_.empty()) {
    ADD_FAILURE() << "drover server wrote no " << data_dir << "/admin.token; its output:\n"
                  << Log();
  }
  setenv("DROVER_TOKEN", token_.c_str(), /*overwrite=*/1);
}

ServerProcess::~ServerProcess() {
  process_.reset();
  const std::string lock = data_dir_ + "/drover.lock";
  WaitUntil([&] {
    const int fd = open(lock.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return true;  // never created: the server did not get that far
    const bool free = flock(fd, LOCK_EX | LOCK_NB) == 0;
    close(fd);  // releases the lock taken here
    return free;
  });
}

api::ApiClient ServerProcess::Client() const {
  api::ApiClient client(url_);
  client.SetBearer(token_);
  return client;
}

std::string ServerProcess::Log() const {
  return "--- stdout\n" + process_->Stdout() + "--- stderr\n" + process_->Stderr();
}

// ---------------------------------------------------------------------------------------------

json GetJob(api::ApiClient& client, std::int64_t id) {
  auto response = client.Get("/v1/jobs/" + std::to_string(id));
  if (!response) return json();
  return response->json;
}

json GetNode(api::ApiClient& client, const std::string& name) {
  auto response = client.Get("/v1/nodes");
  if (!response) return json();
  for (const json& node : response->json["nodes"]) {
    if (node["name"] == name) return node;
  }
  return json();
}

bool WaitForNodeState(api::ApiClient& client, const std::string& name, const std::string& state,
                      std::chrono::milliseconds deadline) {
  return WaitUntil(
      [&] {
        json view = GetNode(client, name);
        return view.is_object() && view.value("state", "") == state;
      },
      deadline);
}

std::string ProcessLogs(ServerProcess* server,
                        const std::vector<std::pair<std::string, ChildProcess*>>& agents) {
  std::string logs = server != nullptr ? "server:\n" + server->Log() : "";
  for (const auto& [name, agent] : agents) {
    if (agent != nullptr) logs += "\n" + name + ":\n" + agent->Stdout() + agent->Stderr();
  }
  return logs;
}

bool IsTerminalState(const std::string& state) {
  auto parsed = model::ParseJobState(state);
  return parsed.has_value() && model::IsTerminal(*parsed);
}

std::string WaitForState(api::ApiClient& client, std::int64_t id,
                         const std::set<std::string>& states, std::chrono::milliseconds deadline) {
  std::string state;
  WaitUntil(
      [&] {
        json job = GetJob(client, id);
        if (job.is_object() && job.contains("state")) state = job["state"].get<std::string>();
        return states.count(state) > 0;
      },
      deadline);
  return state;
}

std::string WaitForTerminal(api::ApiClient& client, std::int64_t id,
                            std::chrono::milliseconds deadline) {
  return WaitForState(client, id, {"succeeded", "failed", "cancelled", "timed_out", "skipped"},
                      deadline);
}

std::vector<std::string> Words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  std::string word;
  while (in >> word) out.push_back(word);
  return out;
}

std::string CreateMemberToken(api::ApiClient& admin, const std::string& user,
                              const std::string& team) {
  auto created = admin.Post(
      "/v1/tokens", nlohmann::json{{"user", user}, {"team", team}, {"role", "member"}}.dump(),
      "application/json");
  EXPECT_TRUE(created) << created.error().ToString();
  return created ? created->json.value("token", "") : std::string();
}

std::vector<std::int64_t> Submit(api::ApiClient& client, const std::string& spec,
                                 const std::string& file_name) {
  std::vector<std::int64_t> ids;
  // As the client's token says: the harness's is the server's admin token, whose user is the
  // server's own, so jobs run under the account the test runs as (docs/security.md).
  auto response = client.Post("/v1/jobs", spec, "application/yaml", {{"X-Drover-File", file_name}});
  if (!response) {
    std::string details;
    for (const std::string& d : response.error().details) details += "\n  " + d;
    ADD_FAILURE() << "submit failed: " << response.error().message << details;
    return ids;
  }
  for (const json& job : response->json["jobs"]) ids.push_back(job["id"].get<std::int64_t>());
  return ids;
}

// ---------------------------------------------------------------------------------------------

bool ProcessExists(pid_t pid) { return kill(pid, 0) == 0 || errno == EPERM; }

bool ProcessAlive(pid_t pid) {
  if (!ProcessExists(pid)) return false;
  // A zombie has exited; its parent has not reaped it yet.
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return false;
  return stat[close + 2] != 'Z';
}

namespace {

// Pids of processes (not this one, not zombies) whose cwd or command line mentions `root`.
std::vector<pid_t> ProcessesUnder(const std::string& root) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t pid = std::stoi(name);
    if (pid == getpid() || !ProcessAlive(pid)) continue;
    std::error_code link_error;
    std::string cwd = fs::read_symlink(entry.path() / "cwd", link_error).string();
    std::string cmdline = ReadFile((entry.path() / "cmdline").string());
    if ((!link_error && cwd.rfind(root, 0) == 0) || cmdline.find(root) != std::string::npos) {
      out.push_back(pid);
    }
  }
  return out;
}

}  // namespace

void KillProcessesUnder(const std::string& root) {
  if (root.size() < 8) return;  // never a broad prefix such as "/" or "/tmp"
  WaitUntil(
      [&] {
        std::vector<pid_t> pids = ProcessesUnder(root);
        for (pid_t pid : pids) kill(pid, SIGKILL);
        // Reap our own children among them; others are reaped by their parents or init.
        while (waitpid(-1, nullptr, WNOHANG) > 0) {
        }
        return pids.empty();
      },
      std::chrono::milliseconds(10'000));
}

void IntegrationTest::TearDown() { KillProcessesUnder(dir_.path() + "/"); }

std::unique_ptr<ServerProcess> IntegrationTest::StartServer(const std::string& name,
                                                            const std::string& gpus,
                                                            std::vector<std::string> extra) {
  extra.insert(extra.begin(), {"--gpus", gpus});
  return std::make_unique<ServerProcess>(dir_.Sub(name), dir_.path(), extra);
}

std::unique_ptr<ChildProcess> IntegrationTest::StartAgent(const ServerProcess& server,
                                                          const std::string& name,
                                                          const std::string& gpus) {
  return StartAgent(server.url(), name, gpus, server.join_token_file());
}

std::unique_ptr<ChildProcess> IntegrationTest::StartAgent(const std::string& server_url,
                                                          const std::string& name,
                                                          const std::string& gpus,
                                                          const std::string& join_token_file) {
  static int counter = 0;
  const std::string base = dir_.Sub(name + "-" + std::to_string(++counter));
  return std::make_unique<ChildProcess>(
      std::vector<std::string>{DroverBinary(), "--server", server_url, "agent", "--name", name,
                               "--gpus", gpus, "--data", dir_.Sub(name), "--join-token-file",
                               join_token_file},
      base + ".out", base + ".err");
}

}  // namespace drover::integration
