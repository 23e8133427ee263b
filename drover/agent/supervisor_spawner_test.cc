// SupervisorSpawner with real processes: DROVER_BINARY is the drover executable, which routes
// `spawn-supervisors` to SupervisorSpawnerMain and `supervise` to SupervisorMain.

#include "drover/agent/supervisor_spawner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "drover/agent/worker_files.h"
#include "drover/testing/temp_dir.h"
#include "drover/testing/wait_until.h"

namespace drover::agent {
namespace {

using ::testing::HasSubstr;

constexpr auto kDeadline = std::chrono::seconds(20);

bool ProcessExists(pid_t pid) { return kill(pid, 0) == 0 || errno != ESRCH; }

// Fields of /proc/PID/stat after the command name: {state, ppid, pgrp, session}.
struct ProcStat {
  char state = '?';
  pid_t ppid = 0;
  pid_t pgrp = 0;
  pid_t session = 0;
};
ProcStat ReadProcStat(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ProcStat stat;
  const std::size_t end_of_name = text.rfind(')');
  if (end_of_name == std::string::npos) return stat;
  std::istringstream fields(text.substr(end_of_name + 2));
  fields >> stat.state >> stat.ppid >> stat.pgrp >> stat.session;
  return stat;
}

// What each open descriptor of `pid` points at ("socket:[...]", a path, ...).
std::vector<std::string> OpenDescriptors(pid_t pid) {
  std::vector<std::string> targets;
  std::error_code error;
  for (const auto& entry :
       std::filesystem::directory_iterator(fmt::format("/proc/{}/fd", pid), error)) {
    targets.push_back(std::filesystem::read_symlink(entry.path(), error).string());
  }
  return targets;
}

class SupervisorSpawnerTest : public ::testing::Test {
 protected:
  // A worker directory whose launch.json runs `argv`.
  std::string WorkerDir(const std::string& name, std::vector<std::string> argv) {
    std::string dir = dir_.Sub(name);
    EXPECT_EQ(mkdir(dir.c_str(), 0755), 0);
    model::LaunchSpec spec;
    spec.key = model::WorkerKey{JobId(1), 1, 0};
    spec.argv = std::move(argv);
    spec.kill_grace_ms = 1000;
    EXPECT_TRUE(WriteLaunchFile(dir, spec));
    return dir;
  }

  // Spawns the supervisor of `dir` and returns its identity (a failed test if there is none).
  ProcessIdentity Spawn(SupervisorSpawner& spawner, const std::string& dir) {
    auto spawned = spawner.Spawn(dir);
    EXPECT_TRUE(spawned) << spawned.error().ToString();
    if (!spawned || !*spawned) {
      ADD_FAILURE() << "no supervisor identity for " << dir;
      return {};
    }
    return **spawned;
  }

  // SIGTERM to the supervisor (a cancellation), then waits for its exit.json.
  void Cancel(const ProcessIdentity& supervisor, const std::string& dir) {
    kill(supervisor.pid, SIGTERM);
    EXPECT_TRUE(
        testing::WaitUntil([&] { return static_cast<bool>(ReadExitFile(dir)); }, kDeadline));
  }

  testing::TempDir dir_;
};

TEST_F(SupervisorSpawnerTest, ASupervisorIsTheSpawnersChildInASessionOfItsOwnWithNothingInherited) {
  // A descriptor of this process without close-on-exec must not reach the supervisor.
  const std::string leaked_path = dir_.Sub("not-for-supervisors");
  const int leaked = open(leaked_path.c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(leaked, 0);
  SupervisorSpawner spawner(DROVER_BINARY);
  EXPECT_EQ(spawner.SpawnerPid(), 0);  // nothing runs before the first Spawn
  const std::string dir = WorkerDir("sleeping", {"sleep", "30"});
  const ProcessIdentity supervisor = Spawn(spawner, dir);
  close(leaked);
  ASSERT_GT(supervisor.pid, 0);
  EXPECT_TRUE(IsAlive(supervisor));
  ASSERT_TRUE(
      testing::WaitUntil([&] { return static_cast<bool>(ReadStartedFile(dir)); }, kDeadline));
  EXPECT_EQ(ReadSupervisorFile(dir).value(), supervisor);

  const ProcStat stat = ReadProcStat(supervisor.pid);
  EXPECT_EQ(stat.ppid, spawner.SpawnerPid());
  EXPECT_NE(stat.ppid, getpid());
  EXPECT_EQ(stat.session, supervisor.pid);  // setsid: out of reach of our process group
  const std::vector<std::string> descriptors = OpenDescriptors(supervisor.pid);
  ASSERT_FALSE(descriptors.empty());
  for (const std::string& target : descriptors) {
    EXPECT_THAT(target, ::testing::Not(HasSubstr("socket:")));
    EXPECT_NE(target, leaked_path);
  }
  EXPECT_THAT(descriptors, ::testing::Contains("/dev/null"));
  EXPECT_THAT(descriptors, ::testing::Contains(dir + "/" + kSupervisorLogFile));

  Cancel(supervisor, dir);
  EXPECT_TRUE(ReadExitFile(dir)->exit.cancelled);
  // Reaped by the kernel (the spawner ignores SIGCHLD): gone, not a zombie.
  EXPECT_TRUE(testing::WaitUntil([&] { return !ProcessExists(supervisor.pid); }, kDeadline));
}

TEST_F(SupervisorSpawnerTest, ADeadSpawnerIsReplacedAndItsSupervisorsOutliveIt) {
  SupervisorSpawner spawner(DROVER_BINARY);
  const std::string first_dir = WorkerDir("first", {"sleep", "30"});
  const ProcessIdentity first = Spawn(spawner, first_dir);
  const pid_t first_spawner = spawner.SpawnerPid();
  ASSERT_GT(first_spawner, 0);
  ASSERT_EQ(kill(first_spawner, SIGKILL), 0);
  // Dead (a zombie of this process until the next Spawn finds its socket closed and reaps it).
  ASSERT_TRUE(
      testing::WaitUntil([&] { return ReadProcStat(first_spawner).state == 'Z'; }, kDeadline));

  const std::string second_dir = WorkerDir("second", {"true"});
  const ProcessIdentity second = Spawn(spawner, second_dir);
  EXPECT_GT(second.pid, 0);
  EXPECT_NE(spawner.SpawnerPid(), first_spawner);
  EXPECT_FALSE(ProcessExists(first_spawner));  // reaped
  ASSERT_TRUE(
      testing::WaitUntil([&] { return static_cast<bool>(ReadExitFile(second_dir)); }, kDeadline));
  EXPECT_EQ(ReadExitFile(second_dir)->exit.exit_code, 0);
  EXPECT_TRUE(IsAlive(first));  // its spawner died, it did not
  Cancel(first, first_dir);
}

TEST_F(SupervisorSpawnerTest, DestroyingTheSpawnerEndsItButNotItsSupervisors) {
  const std::string dir = WorkerDir("survivor", {"sleep", "30"});
  ProcessIdentity supervisor;
  pid_t spawner_pid = 0;
  {
    SupervisorSpawner spawner(DROVER_BINARY);
    supervisor = Spawn(spawner, dir);
    spawner_pid = spawner.SpawnerPid();
  }
  EXPECT_FALSE(ProcessExists(spawner_pid));
  EXPECT_TRUE(IsAlive(supervisor));
  Cancel(supervisor, dir);
}

TEST_F(SupervisorSpawnerTest, ASetUpThatFailsIsAnErrorNamingItAndStartsNothing) {
  SupervisorSpawner spawner(DROVER_BINARY);
  auto missing = spawner.Spawn("/nonexistent/worker");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kInternal);
  EXPECT_THAT(missing.error().message,
              HasSubstr("cannot open /nonexistent/worker/supervisor.log: No such file"));
  for (const std::string& bad : {std::string("relative/dir"), std::string(),
                                 "/" + std::string(SupervisorSpawner::kMaxWorkerDirBytes, 'x')}) {
    auto refused = spawner.Spawn(bad);
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  }
  // The spawner still serves.
  const std::string dir = WorkerDir("after", {"true"});
  Spawn(spawner, dir);
  EXPECT_TRUE(testing::WaitUntil([&] { return static_cast<bool>(ReadExitFile(dir)); }, kDeadline));
}

TEST(SpawnSupervisors, RejectsBadUsage) {
  // Without the runtime's socket on descriptor 3, and with an argument.
  std::string command = std::string(DROVER_BINARY) + " spawn-supervisors 3</dev/null 2>/dev/null";
  EXPECT_EQ(WEXITSTATUS(std::system(command.c_str())), 2);
  command = std::string(DROVER_BINARY) + " spawn-supervisors extra 2>/dev/null";
  EXPECT_EQ(WEXITSTATUS(std::system(command.c_str())), 2);
}

}  // namespace
}  // namespace drover::agent
