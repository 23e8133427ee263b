// LocalRuntime and `drover supervise` together, with real processes (DROVER_BINARY is the
// drover executable, which routes `supervise` to SupervisorMain). The RunAsTest cases create a
// Unix account (useradd; root only) and run workers as it.

#include "drover/agent/local_runtime.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "drover/agent/worker_files.h"
#include "drover/model/outputs.h"
#include "drover/testing/fake_clock.h"
#include "drover/testing/temp_dir.h"
#include "drover/testing/unix_account.h"
#include "drover/testing/wait_until.h"

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
    runtime_ = MakeRuntime();
    ASSERT_NE(runtime_, nullptr);
  }

  void TearDown() override { runtime_.reset(); }

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
    std::optional<model::WorkerEvent> found;
    auto arrived = [&] {
      for (model::WorkerEvent& event : runtime.Poll()) seen_.push_back(event);
      for (const model::WorkerEvent& event : seen_) {
        if (event.key == key && event.kind == kind) {
          found = event;
          return true;
        }
      }
      return false;
    };
    if (testing::WaitUntil(arrived, kDeadline, std::chrono::milliseconds(20))) return found;
    ADD_FAILURE() << "no "
                  << (kind == Kind::kStarted  ? "start"
                      : kind == Kind::kExited ? "exit"
                                              : "checkpoint")
                  << " event";
    return std::nullopt;
  }

  std::optional<model::WorkerEvent> WaitFor(const model::WorkerKey& key, Kind kind) {
    return WaitFor(*runtime_, key, kind);
  }

  // Waits until `path` exists and is not empty.
  bool WaitForFile(const std::string& path) {
    return testing::WaitUntil([&] { return !ReadText(path).empty(); }, kDeadline,
                              std::chrono::milliseconds(20));
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

  testing::TempDir dir_{"drover-agent-test"};
  const std::string root_ = dir_.path();
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
  EXPECT_EQ(runtime_->Stop(spec.key, {}).error().code, ErrorCode::kNotFound);
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
  // The drover binary's folder first, then the supervisor's PATH.
  const std::string bin_dir = std::filesystem::path(DROVER_BINARY).parent_path().string();
  if (const char* path = getenv("PATH")) {
    EXPECT_THAT(env, HasSubstr("PATH=" + bin_dir + ":" + path + "\n"));
  }
  EXPECT_THAT(env, HasSubstr(std::string("DROVER_BIN=") + DROVER_BINARY + "\n"));
  EXPECT_THAT(env, ::testing::Not(HasSubstr("DROVER_TEST_MUST_NOT_LEAK")));
  unsetenv("DROVER_TEST_MUST_NOT_LEAK");
}

TEST_F(LocalRuntimeTest, AJobFindsDroverOnItsPathUnlessItsSpecSetsPath) {
  model::LaunchSpec plain = Spec(30, {"/bin/sh", "-c", "command -v drover"});
  model::LaunchSpec own = Spec(31, {"/bin/sh", "-c", "echo \"$PATH $DROVER_BIN\""});
  own.env["PATH"] = "/opt/site/bin:/usr/bin:/bin";
  ASSERT_TRUE(runtime_->Launch(plain));
  ASSERT_TRUE(runtime_->Launch(own));
  ASSERT_TRUE(WaitFor(plain.key, Kind::kExited));
  ASSERT_TRUE(WaitFor(own.key, Kind::kExited));
  EXPECT_EQ(ReadText(runtime_->StdoutPath(plain.key)), std::string(DROVER_BINARY) + "\n");
  EXPECT_EQ(ReadText(runtime_->StdoutPath(own.key)),
            std::string("/opt/site/bin:/usr/bin:/bin ") + DROVER_BINARY + "\n");
}

TEST_F(LocalRuntimeTest, ExportsTheServerUrlAndCaUnlessTheSpecSetsThem) {
  auto runtime = LocalRuntime::Create(LocalRuntime::Options{.runs_dir = root_ + "/runs-served",
                                                            .supervisor_path = DROVER_BINARY,
                                                            .server_url = "https://10.0.0.1:8420",
                                                            .server_ca = "/etc/site-ca.pem"},
                                      clock_);
  ASSERT_TRUE(runtime) << runtime.error().ToString();
  model::LaunchSpec plain = Spec(20, {"env"});
  model::LaunchSpec own = Spec(21, {"env"});
  own.env["DROVER_SERVER"] = "http://proxy:9000";
  ASSERT_TRUE((*runtime)->Launch(plain));
  ASSERT_TRUE((*runtime)->Launch(own));
  ASSERT_TRUE(WaitFor(**runtime, plain.key, Kind::kExited));
  ASSERT_TRUE(WaitFor(**runtime, own.key, Kind::kExited));
  EXPECT_THAT(ReadText((*runtime)->StdoutPath(plain.key)),
              HasSubstr("DROVER_SERVER=https://10.0.0.1:8420\n"));
  EXPECT_THAT(ReadText((*runtime)->StdoutPath(plain.key)),
              HasSubstr("DROVER_CA=/etc/site-ca.pem\n"));
  EXPECT_THAT(ReadText((*runtime)->StdoutPath(own.key)),
              HasSubstr("DROVER_SERVER=http://proxy:9000\n"));
  // Without a server URL nothing is exported.
  model::LaunchSpec unserved = Spec(22, {"env"});
  ASSERT_TRUE(runtime_->Launch(unserved));
  ASSERT_TRUE(WaitFor(unserved.key, Kind::kExited));
  EXPECT_THAT(ReadText(runtime_->StdoutPath(unserved.key)),
              ::testing::Not(HasSubstr("DROVER_SERVER=")));
  EXPECT_THAT(ReadText(runtime_->StdoutPath(unserved.key)),
              ::testing::Not(HasSubstr("DROVER_CA=")));
}

TEST_F(LocalRuntimeTest, MakesTheSpecsDirectoriesBeforeTheWorkerStarts) {
  model::LaunchSpec spec =
      Spec(23, {"sh", "-c",
                "test -d out/.drover-staging/job-23.attempt-1 && test -d values/job-23/attempt-1"});
  spec.make_dirs = {root_ + "/out/.drover-staging/job-23.attempt-1", "values/job-23/attempt-1"};
  ASSERT_TRUE(runtime_->Launch(spec));
  auto exited = WaitFor(spec.key, Kind::kExited);
  ASSERT_TRUE(exited);
  EXPECT_EQ(exited->exit.exit_code, 0) << exited->exit.message;  // relative: to working_dir
  // Each directory and the parents it lacked get mode 0755 (less the umask, as for mkdir).
  const mode_t mask = umask(0);
  umask(mask);
  for (const std::string& made : {root_ + "/out", root_ + "/out/.drover-staging",
                                  root_ + "/out/.drover-staging/job-23.attempt-1"}) {
    struct stat info {};
    ASSERT_EQ(stat(made.c_str(), &info), 0) << made;
    EXPECT_EQ(info.st_mode & 07777, 0755u & ~mask) << made;
  }
}

// A directory whose parent is a file, or an entry that is itself a file: the worker's exit, in its
// stderr too, and it never starts.
TEST_F(LocalRuntimeTest, ADirectoryThatCannotBeMadeIsTheWorkersExit) {
  std::ofstream(root_ + "/file") << "in the way";
  int job = 24;
  for (const std::string& path : {root_ + "/file/staging", root_ + "/file"}) {
    model::LaunchSpec spec = Spec(job++, {"true"});
    spec.make_dirs = {path};
    ASSERT_TRUE(runtime_->Launch(spec));
    auto exited = WaitFor(spec.key, Kind::kExited);
    ASSERT_TRUE(exited);
    EXPECT_EQ(exited->exit.exit_code, 127);
    const std::string message = "cannot create directory " + path + ": Not a directory";
    EXPECT_EQ(exited->exit.message, message);
    EXPECT_THAT(ReadText(runtime_->StderrPath(spec.key)), HasSubstr("drover: " + message));
    EXPECT_EQ(CountEvents(spec.key, Kind::kStarted), 0);
  }
}

// Value outputs stage in the worker's directory and travel with the exit: what a worker that
// exited 0 wrote (its first line, trailing whitespace removed), and a note for each it did not.
TEST_F(LocalRuntimeTest, AWorkersValueOutputsAreReportedWithItsExit) {
  model::LaunchSpec spec =
      Spec(25, {"sh", "-c", "printf '0.93 \\nrest\\n' > $DROVER_OUTPUT_ACCURACY"});
  spec.value_outputs = {"accuracy", "loss"};
  spec.env["DROVER_OUTPUT_ACCURACY"] = root_ + "/elsewhere";  // the contract's variable wins
  ASSERT_TRUE(runtime_->Launch(spec));
  auto exited = WaitFor(spec.key, Kind::kExited);
  ASSERT_TRUE(exited);
  EXPECT_EQ(exited->exit.exit_code, 0) << exited->exit.message;
  EXPECT_EQ(exited->exit.output_values, (std::map<std::string, std::string>{{"accuracy", "0.93"}}));
  const std::string loss = model::NodeValueOutputPath(runtime_->WorkerDir(spec.key), "loss");
  EXPECT_EQ(exited->exit.message, "output 'loss' was not written: " + loss + " does not exist");

  // A worker that failed reports none.
  model::LaunchSpec failed = Spec(26, {"sh", "-c", "echo 1 > $DROVER_OUTPUT_ACCURACY; exit 3"});
  failed.value_outputs = {"accuracy"};
  ASSERT_TRUE(runtime_->Launch(failed));
  exited = WaitFor(failed.key, Kind::kExited);
  ASSERT_TRUE(exited);
  EXPECT_EQ(exited->exit.exit_code, 3);
  EXPECT_TRUE(exited->exit.output_values.empty());
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

TEST_F(LocalRuntimeTest, LaunchesFromManyThreadsEachHappenOnce) {
  // Eight workers, each launched from two threads at once: one launch of each succeeds, the
  // other is kAlreadyExists (the worker directory's mkdir is the claim), and all eight run.
  constexpr int kWorkers = 8;
  std::vector<Status> results(2 * kWorkers);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2 * kWorkers; ++i) {
    threads.emplace_back([&, i] { results[i] = runtime_->Launch(Spec(100 + i / 2, {"true"})); });
  }
  for (std::thread& thread : threads) thread.join();
  for (int job = 0; job < kWorkers; ++job) {
    const Status& first = results[2 * job];
    const Status& second = results[2 * job + 1];
    EXPECT_NE(static_cast<bool>(first), static_cast<bool>(second)) << "worker " << job;
    const Status& refused = first ? second : first;
    if (!refused) {
      EXPECT_EQ(refused.error().code, ErrorCode::kAlreadyExists);
    }
    auto exited = WaitFor(Spec(100 + job, {}).key, Kind::kExited);
    ASSERT_TRUE(exited);
    EXPECT_EQ(exited->exit.exit_code, 0);
  }
}

TEST_F(LocalRuntimeTest, AnExitedSupervisorIsReapedNotLeftAZombie) {
  model::LaunchSpec spec = Spec(12, {"true"});
  ASSERT_TRUE(runtime_->Launch(spec));
  ASSERT_TRUE(WaitFor(spec.key, Kind::kExited));
  auto supervisor = ReadSupervisorFile(runtime_->WorkerDir(spec.key));
  ASSERT_TRUE(supervisor);
  // It is this process's child until reaped: a later Poll reaps it once it has exited.
  EXPECT_TRUE(testing::WaitUntil(
      [&] {
        runtime_->Poll();
        return !ProcessExists(supervisor->pid);
      },
      kDeadline, std::chrono::milliseconds(20)));
}

TEST_F(LocalRuntimeTest, TimeoutKillsTheWholeProcessTree) {
  std::string pids = root_ + "/pids";
  model::LaunchSpec spec = Spec(7, {"sh", "-c",
                                    "sleep 100 & echo $! >> " + pids + "; sleep 100 & echo $! >> " +
                                        pids + "; echo $$ >> " + pids + "; wait"});
  spec.timeout_ms = 2000;  // the shell has started both sleeps and written the pids by then
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
  spec.timeout_ms = 2000;  // the shell has set its trap by then, on a loaded machine too
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

TEST_F(LocalRuntimeTest, ALongerTimeLimitLetsTheWorkerFinish) {
  // The first limit leaves time for the start, the supervisor's file and the change (a loaded
  // machine included); the worker outlives it.
  model::LaunchSpec spec = Spec(40, {"sh", "-c", "sleep 4; exit 0"});
  spec.timeout_ms = 3000;
  ASSERT_TRUE(runtime_->Launch(spec));
  ASSERT_TRUE(WaitFor(spec.key, Kind::kStarted));
  // The supervisor has blocked SIGUSR1 once supervisor.json exists.
  ASSERT_TRUE(WaitForFile(runtime_->WorkerDir(spec.key) + "/supervisor.json"));
  ASSERT_TRUE(runtime_->SetTimeout(spec.key, 60'000));
  auto exited = WaitFor(spec.key, Kind::kExited);
  ASSERT_TRUE(exited);
  EXPECT_FALSE(exited->exit.timed_out) << exited->exit.message;
  EXPECT_EQ(exited->exit.exit_code, 0);
}

TEST_F(LocalRuntimeTest, AShorterTimeLimitEndsTheWorkerTimedOut) {
  model::LaunchSpec spec = Spec(41, {"sleep", "100"});
  spec.timeout_ms = 3'600'000;
  ASSERT_TRUE(runtime_->Launch(spec));
  ASSERT_TRUE(WaitFor(spec.key, Kind::kStarted));
  ASSERT_TRUE(runtime_->SetTimeout(spec.key, 200));
  auto exited = WaitFor(spec.key, Kind::kExited);
  ASSERT_TRUE(exited);
  EXPECT_TRUE(exited->exit.timed_out);
  EXPECT_THAT(exited->exit.message, HasSubstr("timed out after 200ms"));
  EXPECT_EQ(runtime_->SetTimeout(spec.key, 200).error().code, ErrorCode::kNotFound);
}

TEST_F(LocalRuntimeTest, CancelStopsTheWorker) {
  model::LaunchSpec spec = Spec(10, {"sleep", "100"});
  ASSERT_TRUE(runtime_->Launch(spec));
  auto started = WaitFor(spec.key, Kind::kStarted);
  ASSERT_TRUE(started);
  ASSERT_TRUE(runtime_->Stop(spec.key, {}));
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
  ASSERT_TRUE(runtime_->Stop(spec.key, {}));
  auto exited = WaitFor(spec.key, Kind::kExited);
  ASSERT_TRUE(exited);
  EXPECT_TRUE(exited->exit.cancelled);
}

TEST_F(LocalRuntimeTest, CancelOfUnknownWorkerIsNotFound) {
  EXPECT_EQ(runtime_->Stop(model::WorkerKey{JobId(99), 1, 0}, {}).error().code,
            ErrorCode::kNotFound);
}

TEST_F(LocalRuntimeTest, PreemptWritesTheNoticeThenTheExitSaysPreempted) {
  // The worker saves what it finds at $DROVER_PREEMPT_NOTICE when SIGTERM arrives, then exits 0.
  // It names the notice's path once its trap is set: the test preempts only then (a SIGTERM
  // before the trap would kill the shell, on a loaded machine too).
  std::string seen = root_ + "/seen";
  model::LaunchSpec spec = Spec(17, {"sh", "-c",
                                     "trap 'cat \"$DROVER_PREEMPT_NOTICE\" > " + seen +
                                         "; exit 0' TERM; echo \"$DROVER_PREEMPT_NOTICE\" > " +
                                         seen + ".path; while true; do sleep 0.05; done"});
  spec.kill_grace_ms = 5000;
  ASSERT_TRUE(runtime_->Launch(spec));
  ASSERT_TRUE(WaitFor(spec.key, Kind::kStarted));
  ASSERT_TRUE(WaitForFile(seen + ".path"));
  const std::string notice_path = runtime_->WorkerDir(spec.key) + "/preempt-notice";
  EXPECT_FALSE(std::filesystem::exists(notice_path));  // only written on preemption
  const TimeMs before = WallTimeMs();
  ASSERT_TRUE(
      runtime_->Stop(spec.key, {.preempt = true, .reason = "preempted by job 12 (reclaim)"}));
  const TimeMs after = WallTimeMs();
  auto exited = WaitFor(spec.key, Kind::kExited);
  ASSERT_TRUE(exited);
  EXPECT_TRUE(exited->exit.preempted);
  EXPECT_FALSE(exited->exit.cancelled);
  EXPECT_EQ(exited->exit.exit_code, 0);
  EXPECT_THAT(exited->exit.message, HasSubstr("preempted by job 12 (reclaim)"));
  EXPECT_EQ(ReadText(seen + ".path"), notice_path + "\n");
  // The worker read the notice: the reason and when SIGKILL would follow.
  auto notice = ReadPreemptNotice(runtime_->WorkerDir(spec.key));
  ASSERT_TRUE(notice) << notice.error().ToString();
  EXPECT_EQ(notice->reason, "preempted by job 12 (reclaim)");
  EXPECT_GE(notice->deadline_ms, before + 5000);
  EXPECT_LE(notice->deadline_ms, after + 5000);
  EXPECT_THAT(ReadText(seen), HasSubstr("\"deadline_ms\":" + std::to_string(notice->deadline_ms)));
  EXPECT_THAT(ReadText(seen), HasSubstr("preempted by job 12 (reclaim)"));
}

TEST_F(LocalRuntimeTest, PreemptBeforeTheWorkerStartsIsStillPreempted) {
  model::LaunchSpec spec = Spec(18, {"sleep", "100"});
  ASSERT_TRUE(runtime_->Launch(spec));
  ASSERT_TRUE(runtime_->Stop(spec.key, {.preempt = true, .reason = "make room"}));
  // A later cancel does not change how the stop is reported: the first request decides.
  ASSERT_TRUE(runtime_->Stop(spec.key, {}));
  auto exited = WaitFor(spec.key, Kind::kExited);
  ASSERT_TRUE(exited);
  EXPECT_TRUE(exited->exit.preempted);
  EXPECT_FALSE(exited->exit.cancelled);
}

TEST_F(LocalRuntimeTest, EachTouchOfTheCheckpointMarkerIsOneEvent) {
  const std::string checkpoints = root_ + "/ckpt";
  std::filesystem::create_directories(checkpoints);
  const std::string marker = checkpoints + "/.drover-checkpoint";
  namespace fs = std::filesystem;
  // A marker left by an earlier attempt is not a checkpoint of this one.
  std::ofstream(marker).put('x');
  fs::last_write_time(marker, fs::file_time_type::clock::now() - std::chrono::hours(1));
  // On SIGTERM the worker touches the marker once more and exits: that last checkpoint is
  // reported before the exit.
  model::LaunchSpec spec = Spec(
      19,
      {"sh", "-c", "trap 'touch " + marker + "; exit 0' TERM; while true; do sleep 0.05; done"});
  spec.checkpoint_dir = checkpoints;
  ASSERT_TRUE(runtime_->Launch(spec));
  ASSERT_TRUE(WaitFor(spec.key, Kind::kStarted));

  auto touch = [&](std::chrono::seconds ago) {
    fs::last_write_time(marker, fs::file_time_type::clock::now() - ago);
    // The same mtime in ms since the epoch, as the event reports it.
    return ModificationTimeMs(marker).value();
  };
  auto poll_for = [&](std::chrono::milliseconds duration) {
    auto end = std::chrono::steady_clock::now() + duration;
    while (std::chrono::steady_clock::now() < end) {
      for (auto& event : runtime_->Poll()) seen_.push_back(event);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  };
  poll_for(std::chrono::milliseconds(500));
  EXPECT_EQ(CountEvents(spec.key, Kind::kCheckpoint), 0);

  const TimeMs first = touch(std::chrono::seconds(20));
  auto event = WaitFor(spec.key, Kind::kCheckpoint);
  ASSERT_TRUE(event);
  EXPECT_EQ(event->at, first);
  poll_for(std::chrono::milliseconds(500));
  EXPECT_EQ(CountEvents(spec.key, Kind::kCheckpoint), 1);

  const TimeMs second = touch(std::chrono::seconds(10));
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        for (auto& event : runtime_->Poll()) seen_.push_back(event);
        return CountEvents(spec.key, Kind::kCheckpoint) >= 2;
      },
      kDeadline, std::chrono::milliseconds(20)));
  ASSERT_EQ(CountEvents(spec.key, Kind::kCheckpoint), 2);
  EXPECT_EQ(seen_.back().at, second);
  // Setting the mtime back is not a new checkpoint.
  touch(std::chrono::seconds(15));
  poll_for(std::chrono::milliseconds(500));
  EXPECT_EQ(CountEvents(spec.key, Kind::kCheckpoint), 2);

  ASSERT_TRUE(runtime_->Stop(spec.key, {.preempt = true, .reason = "reclaim"}));
  auto exited = WaitFor(spec.key, Kind::kExited);
  ASSERT_TRUE(exited);
  EXPECT_EQ(CountEvents(spec.key, Kind::kCheckpoint), 3);
  ASSERT_GE(seen_.size(), 2u);
  EXPECT_EQ(seen_[seen_.size() - 2].kind, Kind::kCheckpoint);
  EXPECT_GT(seen_[seen_.size() - 2].at, second);
  EXPECT_EQ(seen_.back().kind, Kind::kExited);
}

TEST_F(LocalRuntimeTest, WorkersWithoutCheckpointDirReportNoCheckpoints) {
  model::LaunchSpec spec = Spec(20, {"sh", "-c", "touch .drover-checkpoint; sleep 0.5"});
  ASSERT_TRUE(runtime_->Launch(spec));
  ASSERT_TRUE(WaitFor(spec.key, Kind::kExited));
  EXPECT_EQ(CountEvents(spec.key, Kind::kCheckpoint), 0);
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
  ASSERT_TRUE(runtime_->Stop(spec.key, {}));
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
  EXPECT_TRUE(testing::WaitUntil([&] { return !ProcessExists(worker->pid); }, kDeadline,
                                 std::chrono::milliseconds(20)))
      << "the worker outlived its supervisor";
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
  EXPECT_EQ(runtime_->Stop(key, {}).error().code, ErrorCode::kUnavailable);
}

TEST_F(LocalRuntimeTest, WorkerDirectoryLayout) {
  model::WorkerKey key{JobId(42), 3, 5};
  EXPECT_EQ(runtime_->WorkerDir(key), root_ + "/runs/42/3/5");
  EXPECT_EQ(runtime_->StdoutPath(key), root_ + "/runs/42/3/5/stdout.log");
  EXPECT_EQ(runtime_->StderrPath(key), root_ + "/runs/42/3/5/stderr.log");
}

// Jobs run as their users (docs/security.md): with a Unix account the test creates. The
// supervisor switches accounts only as root, which CI is; elsewhere these tests are skipped.
class RunAsTest : public LocalRuntimeTest {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: the supervisor switches accounts only as root";
    LocalRuntimeTest::SetUp();
    auto account = testing::ScopedUnixAccount::Create("drover-t");
    ASSERT_TRUE(account) << account.error().ToString();
    account_holder_ = *std::move(account);
    account_ = account_holder_->name();
    uid_ = account_holder_->uid();
    gid_ = account_holder_->gid();
    home_ = account_holder_->home();
    // The account may enter the test's directory (mkdtemp made it 0700) but not write in it.
    ASSERT_EQ(chmod(root_.c_str(), 0755), 0);
  }

  void TearDown() override {
    LocalRuntimeTest::TearDown();
    account_holder_.reset();
  }

  model::LaunchSpec SpecAs(int job, std::string account, std::vector<std::string> argv) {
    model::LaunchSpec spec = Spec(job, std::move(argv));
    spec.run_as = std::move(account);
    return spec;
  }

  // Launches `spec` and waits for its exit; a test failure (and a default status) without one.
  model::ExitStatus ExitOf(const model::LaunchSpec& spec) {
    EXPECT_TRUE(runtime_->Launch(spec));
    std::optional<model::WorkerEvent> exited = WaitFor(spec.key, Kind::kExited);
    return exited ? exited->exit : model::ExitStatus{};
  }

  std::unique_ptr<testing::ScopedUnixAccount> account_holder_;
  std::string account_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  std::string home_;
};

TEST_F(RunAsTest, TheWorkerRunsAsTheAccountAndMakesItsDirectoriesAsIt) {
  // A directory everyone may write in: the checkpoint directory below is the account's own.
  const std::string shared = root_ + "/shared";
  std::filesystem::create_directories(shared);
  ASSERT_EQ(chmod(shared.c_str(), 01777), 0);
  const std::string checkpoints = shared + "/ck";
  model::LaunchSpec spec = SpecAs(40, account_,
                                  {"sh", "-c",
                                   "id -u; id -g; echo \"$HOME $USER $LOGNAME\"; touch "
                                   "$DROVER_CHECKPOINT_DIR/.drover-checkpoint"});
  spec.env["DROVER_CHECKPOINT_DIR"] = checkpoints;
  spec.checkpoint_dir = checkpoints;
  spec.make_dirs = {checkpoints};
  model::ExitStatus status = ExitOf(spec);
  EXPECT_EQ(status.exit_code, 0) << status.message;
  EXPECT_EQ(ReadText(runtime_->StdoutPath(spec.key)),
            fmt::format("{}\n{}\n{} {} {}\n", uid_, gid_, home_, account_, account_));
  struct stat info {};
  ASSERT_EQ(stat(checkpoints.c_str(), &info), 0);
  EXPECT_EQ(info.st_uid, uid_);  // made by the account, after the switch
  // The runtime (root) still sees the checkpoints of a directory the worker made.
  EXPECT_EQ(CountEvents(spec.key, Kind::kCheckpoint), 1);
  // The logs stay the agent's.
  ASSERT_EQ(stat(runtime_->StdoutPath(spec.key).c_str(), &info), 0);
  EXPECT_EQ(info.st_uid, 0u);
}

// The account writes its values in a folder given to it, and the supervisor (root) reads them
// with the account's permissions: a value linked to a file only root may read is not read.
TEST_F(RunAsTest, ValuesAreTheAccountsToWriteAndOnlyWhatItMayReadIsReported) {
  const std::string secret = root_ + "/root-only";
  std::ofstream(secret) << "root's secret\n";
  ASSERT_EQ(chmod(secret.c_str(), 0600), 0);
  model::LaunchSpec spec =
      SpecAs(45, account_,
             {"sh", "-c",
              "echo 0.5 > $DROVER_OUTPUT_ACCURACY && ln -s " + secret + " $DROVER_OUTPUT_STOLEN"});
  spec.value_outputs = {"accuracy", "stolen"};
  model::ExitStatus status = ExitOf(spec);
  EXPECT_EQ(status.exit_code, 0) << status.message;
  EXPECT_EQ(status.output_values, (std::map<std::string, std::string>{{"accuracy", "0.5"}}));
  EXPECT_THAT(status.message, HasSubstr("output 'stolen'"));
  EXPECT_THAT(status.message, HasSubstr("Permission denied"));
  struct stat info {};
  ASSERT_EQ(stat(model::NodeValueOutputDir(runtime_->WorkerDir(spec.key)).c_str(), &info), 0);
  EXPECT_EQ(info.st_uid, uid_);
}

TEST_F(RunAsTest, DirectoriesAreMadeWithTheAccountsPermissionsOnly) {
  const std::string private_dir = root_ + "/private";
  std::filesystem::create_directories(private_dir);
  ASSERT_EQ(chmod(private_dir.c_str(), 0700), 0);
  model::LaunchSpec spec = SpecAs(41, account_, {"true"});
  spec.make_dirs = {private_dir + "/ck"};
  model::ExitStatus status = ExitOf(spec);
  EXPECT_EQ(status.exit_code, 127);
  EXPECT_EQ(status.message, "cannot create directory " + private_dir + "/ck: Permission denied");
  EXPECT_FALSE(std::filesystem::exists(private_dir + "/ck"));
  EXPECT_EQ(CountEvents(spec.key, Kind::kStarted), 0);
  EXPECT_THAT(ReadText(runtime_->StderrPath(spec.key)), HasSubstr("Permission denied"));
}

TEST_F(RunAsTest, AnUnknownAccountIsRefusedAndNothingStarts) {
  const std::string marker = root_ + "/ran";
  model::LaunchSpec spec = SpecAs(42, "drover-no-such-user", {"touch", marker});
  model::ExitStatus status = ExitOf(spec);
  EXPECT_EQ(status.exit_code, 127);
  EXPECT_EQ(status.message, "no such Unix account drover-no-such-user on node local");
  EXPECT_FALSE(std::filesystem::exists(marker));
  EXPECT_EQ(CountEvents(spec.key, Kind::kStarted), 0);
}

TEST_F(RunAsTest, RootOnlyWhenThePolicyAllowsIt) {
  model::LaunchSpec refused = SpecAs(43, "root", {"id", "-u"});
  model::ExitStatus status = ExitOf(refused);
  EXPECT_EQ(status.exit_code, 127);
  EXPECT_EQ(status.message,
            "job would run as root; the policy's accounts.allow_root does not list its owner");
  EXPECT_EQ(CountEvents(refused.key, Kind::kStarted), 0);

  model::LaunchSpec allowed = SpecAs(44, "root", {"id", "-u"});
  allowed.may_run_as_root = true;
  status = ExitOf(allowed);
  EXPECT_EQ(status.exit_code, 0) << status.message;
  EXPECT_EQ(ReadText(runtime_->StdoutPath(allowed.key)), "0\n");
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
