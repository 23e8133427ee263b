// LocalRuntime and `drover supervise` together, with real processes (DROVER_BINARY is the
// drover executable, which routes `supervise` to SupervisorMain).

#include "drover/agent/local_runtime.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "drover/agent/worker_files.h"
#include "drover/testing/fake_clock.h"

namespace drover::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using Kind = model::WorkerEvent::Kind;

// Generous: the tests wait for real processes on possibly loaded machines.
constexpr auto kDeadline = std::chrono::seconds(20);

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool ProcessExists(pid_t pid) { return kill(pid, 0) == 0 || errno != ESRCH; }

class LocalRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/drover_agent_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root_ = pattern;
    runtime_ = MakeRuntime();
    ASSERT_NE(runtime_, nullptr);
  }

  void TearDown() override {
    runtime_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }

  std::unique_ptr<LocalRuntime> MakeRuntime() {
    auto runtime = LocalRuntime::Create(
        LocalRuntime::Options{.runs_dir = root_ + "/runs", .supervisor_path = DROVER_BINARY},
        clock_);
    EXPECT_TRUE(runtime) << runtime.error().ToString();
    return runtime ? std::move(*runtime) : nullptr;
  }

  model::LaunchSpec Spec(int job, std::vector<std::string> argv) {
    model::LaunchSpec spec;
    spec.key = model::WorkerKey{JobId(job), 1, 0};
    spec.node = NodeId("local");
    spec.argv = std::move(argv);
    spec.working_dir = root_;
    spec.kill_grace_ms = 1000;
    return spec;
  }

  // Polls `runtime` until an event of `kind` for `key` arrives; every event seen is kept in
  // seen_. Fails the test after kDeadline.
  std::optional<model::WorkerEvent> WaitFor(LocalRuntime& runtime, const model::WorkerKey& key,
                                            Kind kind) {
    auto deadline = std::chrono::steady_clock::now() + kDeadline;
    while (std::chrono::steady_clock::now() < deadline) {
      for (model::WorkerEvent& event : runtime.Poll()) {
        seen_.push_back(event);
      }
      for (const model::WorkerEvent& event : seen_) {
        if (event.key == key && event.kind == kind) return event;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "no " << (kind == Kind::kStarted ? "start" : "exit") << " event";
    return std::nullopt;
  }

  std::optional<model::WorkerEvent> WaitFor(const model::WorkerKey& key, Kind kind) {
    return WaitFor(*runtime_, key, kind);
  }

  // Waits until `path` exists and is not empty.
  bool WaitForFile(const std::string& path) {
    auto deadline = std::chrono::steady_clock::now() + kDeadline;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!ReadText(path).empty()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  std::vector<pid_t> ReadPids(const std::string& path) {
    std::vector<pid_t> pids;
    std::istringstream in(ReadText(path));
    pid_t pid;
    while (in >> pid) pids.push_back(pid);
    return pids;
  }

  int CountEvents(const model::WorkerKey& key, Kind kind) {
    int n = 0;
    for (const model::WorkerEvent& event : seen_) n += event.key == key && event.kind == kind;
    return n;
  }

  std::string root_;
  testing::FakeClock clock_;
  std::unique_ptr<LocalRuntime> runtime_;
  std::vector<model::WorkerEvent> seen_;
};

TEST_F(LocalRuntimeTest, ReportsStartThenExitCodeOnce) {
  model::LaunchSpec spec = Spec(1, {"sh", "-c", "echo hello; echo oops >&2; exit 3"});
  ASSERT_TRUE(runtime_->Launch(spec));
  auto started = WaitFor(spec.key, Kind::kStarted);
  auto exited = WaitFor(spec.key, Kind::kExited);
  ASSERT_TRUE(started && exited);
  EXPECT_GT(started->at, 1'600'000'000'000);  // wall time from started.json, not the fake clock
  EXPECT_GE(exited->at, started->at);
  EXPECT_EQ(exited->exit.exit_code, 3);
  EXPECT_EQ(exited->exit.signal, 0);
  EXPECT_FALSE(exited->exit.timed_out);
  EXPECT_FALSE(exited->exit.cancelled);
  EXPECT_EQ(ReadText(runtime_->StdoutPath(spec.key)), "hello\n");
  EXPECT_EQ(ReadText(runtime_->StderrPath(spec.key)), "oops\n");
  // Each event exactly once, the start before the exit.
  for (int i = 0; i < 3; ++i) {
    for (auto& event : runtime_->Poll()) seen_.push_back(event);
  }
  EXPECT_EQ(CountEvents(spec.key, Kind::kStarted), 1);
  EXPECT_EQ(CountEvents(spec.key, Kind::kExited), 1);
  EXPECT_EQ(seen_.front().kind, Kind::kStarted);
  // Reported exited: no longer known.
  EXPECT_EQ(runtime_->Cancel(spec.key).error().code, ErrorCode::kNotFound);
}

TEST_F(LocalRuntimeTest, WorkerEnvironmentIsTheSpecsPlusPathHomeLang) {
  setenv("DROVER_TEST_MUST_NOT_LEAK", "1", 1);
  model::LaunchSpec spec = Spec(2, {"env"});
  spec.env = {{"FOO", "bar baz"}, {"CUDA_VISIBLE_DEVICES", "0,1"}, {"HOME", "/spec/home"}};
  spec.gpus = {0, 1};
  ASSERT_TRUE(runtime_->Launch(spec));
  auto exited = WaitFor(spec.key, Kind::kExited);
  ASSERT_TRUE(exited);
  EXPECT_EQ(exited->exit.exit_code, 0) << exited->exit.message;
  std::string env = ReadText(runtime_->StdoutPath(spec.key));
  EXPECT_THAT(env, HasSubstr("FOO=bar baz\n"));
  EXPECT_THAT(env, HasSubstr("CUDA_VISIBLE_DEVICES=0,1\n"));
  EXPECT_THAT(env, HasSubstr("HOME=/spec/home\n"));  // the spec wins over the supervisor's
  if (const char* path = getenv("PATH")) {
    EXPECT_THAT(env, HasSubstr(std::string("PATH=") + path + "\n"));
  }
  EXPECT_THAT(env, ::testing::Not(HasSubstr("DROVER_TEST_MUST_NOT_LEAK")));
  unsetenv("DROVER_TEST_MUST_NOT_LEAK");
}

TEST_F(LocalRuntimeTest, RunsInTheWorkingDirectory) {
  std::filesystem::create_directories(root_ + "/work");
  model::LaunchSpec spec = Spec(3, {"pwd"});
  spec.working_dir = root_ + "/work";
  ASSERT_TRUE(runtime_->Launch(spec));
  auto exited = WaitFor(spec.key, Kind::kExited);
  ASSERT_TRUE(exited);
  EXPECT_EQ(ReadText(runtime_->StdoutPath(spec.key)), root_ + "/work\n");
}

TEST_F(LocalRuntimeTest, ExecFailureIsExit127WithMessage) {
  model::LaunchSpec spec = Spec(4, {"drover-no-such-command-xyz", "arg"});
  ASSERT_TRUE(runtime_->Launch(spec));
  auto exited = WaitFor(spec.key, Kind::kExited);
  ASSERT_TRUE(exited);
  EXPECT_EQ(exited->exit.exit_code, 127);
  EXPECT_THAT(exited->exit.message, StartsWith("exec failed: No such file or directory"));
  EXPECT_EQ(CountEvents(spec.key, Kind::kStarted), 0);
  EXPECT_THAT(ReadText(runtime_->StderrPath(spec.key)), HasSubstr("drover-no-such-command-xyz"));
}

TEST_F(LocalRuntimeTest, MissingWorkingDirectoryIsExit127) {
  model::LaunchSpec spec = Spec(5, {"true"});
  spec.working_dir = root_ + "/does/not/exist";
  ASSERT_TRUE(runtime_->Launch(spec));
  auto exited = WaitFor(spec.key, Kind::kExited);
  ASSERT_TRUE(exited);
  EXPECT_EQ(exited->exit.exit_code, 127);
  EXPECT_THAT(exited->exit.message, StartsWith("exec failed: No such file or directory"));
  EXPECT_THAT(exited->exit.message, HasSubstr("does/not/exist"));
}

TEST_F(LocalRuntimeTest, LaunchingTheSameWorkerTwiceIsAlreadyExists) {
  model::LaunchSpec spec = Spec(6, {"true"});
  ASSERT_TRUE(runtime_->Launch(spec));
  Status again = runtime_->Launch(spec);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::kAlreadyExists);
  ASSERT_TRUE(WaitFor(spec.key, Kind::kExited));
  // Also after the exit was reported, and from a new runtime over the same directory.
  EXPECT_EQ(runtime_->Launch(spec).error().code, ErrorCode::kAlreadyExists);
  EXPECT_EQ(MakeRuntime()->Launch(spec).error().code, ErrorCode::kAlreadyExists);
}

TEST_F(LocalRuntimeTest, TimeoutKillsTheWholeProcessTree) {
  std::string pids = root_ + "/pids";
  model::LaunchSpec spec = Spec(7, {"sh", "-c",
                                    "sleep 100 & echo $! >> " + pids + "; sleep 100 & echo $! >> " +
                                        pids + "; echo $$ >> " + pids + "; wait"});
  spec.timeout_ms = 500;
  spec.kill_grace_ms = 500;
  ASSERT_TRUE(runtime_->Launch(spec));
  auto exited = WaitFor(spec.key, Kind::kExited);
  ASSERT_TRUE(exited);
  EXPECT_TRUE(exited->exit.timed_out);
  EXPECT_FALSE(exited->exit.cancelled);
  EXPECT_EQ(exited->exit.signal, SIGTERM);
  EXPECT_THAT(exited->exit.message, HasSubstr("timed out after"));
  std::vector<pid_t> tree = ReadPids(pids);
  ASSERT_EQ(tree.size(), 3u);
  for (pid_t pid : tree) EXPECT_FALSE(ProcessExists(pid)) << pid;
}

TEST_F(LocalRuntimeTest, TimeoutEscalatesToSigkillWhenTermIsIgnored) {
  model::LaunchSpec spec = Spec(8, {"sh", "-c", "trap '' TERM; while true; do sleep 0.05; done"});
  spec.timeout_ms = 200;
  spec.kill_grace_ms = 300;
  ASSERT_TRUE(runtime_->Launch(spec));
  auto exited = WaitFor(spec.key, Kind::kExited);
  ASSERT_TRUE(exited);
  EXPECT_TRUE(exited->exit.timed_out);
  EXPECT_EQ(exited->exit.signal, SIGKILL);
  EXPECT_THAT(exited->exit.message, HasSubstr("SIGKILL"));
}

TEST_F(LocalRuntimeTest, KillsDescendantsThatLeftTheProcessGroup) {
  std::string pid_file = root_ + "/escaped";
  // The escapee starts its own session (so the group kill misses it), then the worker exits 0.
  model::LaunchSpec spec = Spec(
      9, {"sh", "-c",
          "setsid sh -c 'echo $$ > " + pid_file + ".tmp; mv " + pid_file + ".tmp " + pid_file +
              "; exec sleep 100' & while [ ! -s " + pid_file + " ]; do sleep 0.02; done; exit 0"});
  ASSERT_TRUE(runtime_->Launch(spec));
  auto exited = WaitFor(spec.key, Kind::kExited);
  ASSERT_TRUE(exited);
  EXPECT_EQ(exited->exit.exit_code, 0);
  EXPECT_THAT(exited->exit.message, HasSubstr("leftover"));
  std::vector<pid_t> escaped = ReadPids(pid_file);
  ASSERT_EQ(escaped.size(), 1u);
  EXPECT_FALSE(ProcessExists(escaped[0]));
}

TEST_F(LocalRuntimeTest, CancelStopsTheWorker) {
  model::LaunchSpec spec = Spec(10, {"sleep", "100"});
  ASSERT_TRUE(runtime_->Launch(spec));
  auto started = WaitFor(spec.key, Kind::kStarted);
  ASSERT_TRUE(started);
  ASSERT_TRUE(runtime_->Cancel(spec.key));
  auto exited = WaitFor(spec.key, Kind::kExited);
  ASSERT_TRUE(exited);
  EXPECT_TRUE(exited->exit.cancelled);
  EXPECT_FALSE(exited->exit.timed_out);
  EXPECT_EQ(exited->exit.signal, SIGTERM);
  auto record = ReadStartedFile(runtime_->WorkerDir(spec.key));
  ASSERT_TRUE(record);
  EXPECT_FALSE(ProcessExists(record->pid));
}

TEST_F(LocalRuntimeTest, CancelRightAfterLaunchIsNotLost) {
  model::LaunchSpec spec = Spec(11, {"sleep", "100"});
  ASSERT_TRUE(runtime_->Launch(spec));
  ASSERT_TRUE(runtime_->Cancel(spec.key));
  auto exited = WaitFor(spec.key, Kind::kExited);
  ASSERT_TRUE(exited);
  EXPECT_TRUE(exited->exit.cancelled);
}

TEST_F(LocalRuntimeTest, CancelOfUnknownWorkerIsNotFound) {
  EXPECT_EQ(runtime_->Cancel(model::WorkerKey{JobId(99), 1, 0}).error().code, ErrorCode::kNotFound);
}

TEST_F(LocalRuntimeTest, NewInstanceAdoptsWorkersOfAnEarlierOne) {
  std::string go = root_ + "/go";
  model::LaunchSpec spec =
      Spec(12, {"sh", "-c", "while [ ! -e " + go + " ]; do sleep 0.02; done; exit 7"});
  ASSERT_TRUE(runtime_->Launch(spec));
  ASSERT_TRUE(WaitFor(spec.key, Kind::kStarted));
  runtime_.reset();  // the "server" goes away; the supervisor does not

  std::unique_ptr<LocalRuntime> restarted = MakeRuntime();
  ASSERT_NE(restarted, nullptr);
  model::WorkerKey never_launched{JobId(12), 1, 1};
  std::vector<model::WorkerKey> unknown = restarted->Adopt({spec.key, never_launched});
  EXPECT_EQ(unknown, std::vector<model::WorkerKey>{never_launched});
  std::ofstream(go).put('x');
  seen_.clear();
  auto exited = WaitFor(*restarted, spec.key, Kind::kExited);
  ASSERT_TRUE(exited);
  EXPECT_EQ(exited->exit.exit_code, 7);
  EXPECT_EQ(CountEvents(spec.key, Kind::kStarted), 1);  // re-reported after adoption
}

TEST_F(LocalRuntimeTest, AdoptedWorkerCanBeCancelled) {
  model::LaunchSpec spec = Spec(13, {"sleep", "100"});
  ASSERT_TRUE(runtime_->Launch(spec));
  ASSERT_TRUE(WaitFor(spec.key, Kind::kStarted));
  runtime_ = MakeRuntime();
  EXPECT_TRUE(runtime_->Adopt({spec.key}).empty());
  ASSERT_TRUE(runtime_->Cancel(spec.key));
  auto exited = WaitFor(spec.key, Kind::kExited);
  ASSERT_TRUE(exited);
  EXPECT_TRUE(exited->exit.cancelled);
}

TEST_F(LocalRuntimeTest, DeadSupervisorIsReportedLostAndTakesItsWorker) {
  model::LaunchSpec spec = Spec(14, {"sleep", "100"});
  ASSERT_TRUE(runtime_->Launch(spec));
  ASSERT_TRUE(WaitFor(spec.key, Kind::kStarted));
  std::string dir = runtime_->WorkerDir(spec.key);
  auto supervisor = ReadSupervisorFile(dir);
  auto worker = ReadStartedFile(dir);
  ASSERT_TRUE(supervisor && worker);
  ASSERT_EQ(kill(supervisor->pid, SIGKILL), 0);
  auto exited = WaitFor(spec.key, Kind::kExited);
  ASSERT_TRUE(exited);
  EXPECT_EQ(exited->exit.exit_code, -1);
  EXPECT_EQ(exited->exit.message, "supervisor lost");
  EXPECT_EQ(exited->at, clock_.Now());
  auto deadline = std::chrono::steady_clock::now() + kDeadline;
  while (ProcessExists(worker->pid) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(ProcessExists(worker->pid));
}

TEST_F(LocalRuntimeTest, AdoptedWorkerWhoseSupervisorNeverStartedIsLostAfterTheGrace) {
  // What an earlier server leaves when it dies between writing launch.json and the spawn.
  model::WorkerKey key{JobId(15), 1, 0};
  std::string dir = runtime_->WorkerDir(key);
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(WriteLaunchFile(dir, Spec(15, {"true"})));
  auto launch = std::filesystem::path(dir) / kLaunchFile;
  std::filesystem::last_write_time(
      launch, std::filesystem::file_time_type::clock::now() - std::chrono::minutes(5));
  EXPECT_TRUE(runtime_->Adopt({key}).empty());
  auto exited = WaitFor(key, Kind::kExited);
  ASSERT_TRUE(exited);
  EXPECT_EQ(exited->exit.message, "supervisor lost");
}

TEST_F(LocalRuntimeTest, AdoptedWorkerWhoseSupervisorIsStartingIsNotLostYet) {
  model::WorkerKey key{JobId(16), 1, 0};
  std::string dir = runtime_->WorkerDir(key);
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(WriteLaunchFile(dir, Spec(16, {"true"})));
  EXPECT_TRUE(runtime_->Adopt({key}).empty());
  EXPECT_TRUE(runtime_->Poll().empty());
  EXPECT_EQ(runtime_->Cancel(key).error().code, ErrorCode::kUnavailable);
}

TEST_F(LocalRuntimeTest, WorkerDirectoryLayout) {
  model::WorkerKey key{JobId(42), 3, 5};
  EXPECT_EQ(runtime_->WorkerDir(key), root_ + "/runs/42/3/5");
  EXPECT_EQ(runtime_->StdoutPath(key), root_ + "/runs/42/3/5/stdout.log");
  EXPECT_EQ(runtime_->StderrPath(key), root_ + "/runs/42/3/5/stderr.log");
}

TEST(LocalRuntimeCreate, RejectsAMissingSupervisor) {
  testing::FakeClock clock;
  auto runtime = LocalRuntime::Create(
      LocalRuntime::Options{.runs_dir = "/tmp", .supervisor_path = "/nonexistent/drover"}, clock);
  ASSERT_FALSE(runtime);
  EXPECT_EQ(runtime.error().code, ErrorCode::kInvalidArgument);
}

TEST(Supervise, RejectsBadUsage) {
  std::string command = std::string(DROVER_BINARY) + " supervise 2>/dev/null";
  EXPECT_EQ(WEXITSTATUS(std::system(command.c_str())), 2);
  command = std::string(DROVER_BINARY) + " supervise /nonexistent/dir 2>/dev/null";
  EXPECT_EQ(WEXITSTATUS(std::system(command.c_str())), 1);
}

}  // namespace
}  // namespace drover::agent
