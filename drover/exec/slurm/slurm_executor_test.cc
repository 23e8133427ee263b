#include "drover/exec/slurm/slurm_executor.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "drover/exec/slurm/sbatch.h"
#include "drover/os/files.h"
#include "drover/testing/temp_dir.h"
#include "drover/testing/unix_account.h"
#include "drover/testing/wait_until.h"

namespace drover::exec::slurm {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// The Slurm job id of the array whose task `external_id` ("<array job id>_<task>") names; ""
// for a lone job's id.
std::string ArrayJobIdOf(const std::string& external_id) {
  const std::size_t underscore = external_id.find('_');
  return underscore == std::string::npos ? "" : external_id.substr(0, underscore);
}

// Stand-ins for sbatch, scontrol, scancel, sacct and squeue, first on PATH: each call is a line
// of $SLURM_FAKE_DIR/log ("scontrol" for a listing; sbatch's with the job's name, and its
// --array and --uid when given). sbatch takes $SLURM_FAKE_SBATCH_DELAY seconds
// (and, while $SLURM_FAKE_DIR/gate exists, waits for it to go), and appends to
// $SLURM_FAKE_DIR/overlap how many sbatch calls were running when it ended (itself included);
// scontrol lists $SLURM_FAKE_DIR/show if it exists, else every job submitted so far as pending
// (an array's tasks in one record, as Slurm does); sacct prints $SLURM_FAKE_DIR/sacct.out and
// squeue $SLURM_FAKE_DIR/squeue.out. (Named SLURM_*: sbatch gets only the jobs' part of the
// environment, JobEnvironment, which keeps Slurm's own variables.)
const char* kSbatch = R"sh(#!/bin/bash
cat >/dev/null
touch "$SLURM_FAKE_DIR/running.$$"
sleep "${SLURM_FAKE_SBATCH_DELAY:-0}"
while [ -e "$SLURM_FAKE_DIR/gate" ]; do sleep 0.01; done
array=
uid=
for a in "$@"; do
  case $a in
    --job-name=*) name=${a#--job-name=};; --array=*) array=${a#--array=};; --uid=*) uid=${a#--uid=};;
  esac
done
exec 9>"$SLURM_FAKE_DIR/lock"
flock 9
n=$(( $(wc -l < "$SLURM_FAKE_DIR/jobs") + 1 ))
echo "$n $name $array" >> "$SLURM_FAKE_DIR/jobs"
echo "sbatch $name${array:+ --array=$array}${uid:+ --uid=$uid}" >> "$SLURM_FAKE_DIR/log"
ls "$SLURM_FAKE_DIR" | grep -c '^running\.' >> "$SLURM_FAKE_DIR/overlap"
rm -f "$SLURM_FAKE_DIR/running.$$"
flock -u 9
echo "$n"
)sh";
const char* kScontrol = R"sh(#!/bin/bash
if [ "$1" != show ]; then echo "scontrol $*" >> "$SLURM_FAKE_DIR/log"; exit 0; fi
echo scontrol >> "$SLURM_FAKE_DIR/log"
if [ -f "$SLURM_FAKE_DIR/show" ]; then cat "$SLURM_FAKE_DIR/show"; exit 0; fi
while read -r id name array; do
  echo "JobId=$id ${array:+ArrayJobId=$id ArrayTaskId=$array }JobName=$name JobState=PENDING Reason=Priority Restarts=0 SubmitTime=2026-11-30T12:00:00 EligibleTime=2026-11-30T12:00:00 StartTime=Unknown EndTime=Unknown NodeList=(null)"
done < "$SLURM_FAKE_DIR/jobs"
)sh";
const char* kScancel = R"sh(#!/bin/bash
echo "scancel $*" >> "$SLURM_FAKE_DIR/log"
)sh";
const char* kSacct = R"sh(#!/bin/bash
echo "sacct $*" >> "$SLURM_FAKE_DIR/log"
cat "$SLURM_FAKE_DIR/sacct.out" 2>/dev/null
)sh";
const char* kSqueue = R"sh(#!/bin/bash
echo "squeue $*" >> "$SLURM_FAKE_DIR/log"
cat "$SLURM_FAKE_DIR/squeue.out" 2>/dev/null
)sh";

class SlurmExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Write("sbatch", kSbatch);
    Write("scontrol", kScontrol);
    Write("scancel", kScancel);
    Write("sacct", kSacct);
    Write("squeue", kSqueue);
    std::ofstream(dir_ + "/jobs").flush();
    std::ofstream(dir_ + "/log").flush();
    const char* path = getenv("PATH");
    old_path_ = path ? path : "";
    setenv("PATH", (dir_ + ":" + old_path_).c_str(), 1);
    setenv("SLURM_FAKE_DIR", dir_.c_str(), 1);
  }

  void TearDown() override {
    setenv("PATH", old_path_.c_str(), 1);
    unsetenv("SLURM_FAKE_SBATCH_DELAY");
  }

  void Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  }

  std::vector<std::string> Log() const {
    std::vector<std::string> lines;
    std::ifstream in(dir_ + "/log");
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  static model::ExternalLaunch Launch(std::int64_t job) {
    model::ExternalLaunch launch;
    launch.ref.job = JobId(job);
    launch.ref.attempt = 1;
    launch.ref.name = model::ExternalName(JobId(job), 1);
    launch.executor.kind = model::ExecutorKind::kSlurm;
    launch.spec.name = "bench";
    launch.spec.command = {"true"};
    return launch;
  }

  // Polls until an event matches `wanted` (which sees every event); false after 30 s.
  template <typename Predicate>
  static bool WaitFor(SlurmExecutor& executor, Predicate wanted) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      for (const model::ExecutorEvent& event : executor.Poll()) {
        if (wanted(event)) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // Whether `line` appears in the log within 30 s.
  bool LogShows(const std::string& line) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      const std::vector<std::string> log = Log();
      if (std::find(log.begin(), log.end(), line) != log.end()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // Submits jobs 1..`jobs` while the fake sbatch waits at its gate, so that however the
  // executor's thread took the first ones, the rest wait together (one array); then waits until
  // each was submitted, none having ended. Each job's external id.
  std::map<std::int64_t, std::string> SubmitAtTheGate(SlurmExecutor& executor, int jobs) {
    std::ofstream(dir_ + "/gate").flush();
    for (int job = 1; job <= jobs; ++job) EXPECT_TRUE(executor.Submit(Launch(job)).has_value());
    std::filesystem::remove(dir_ + "/gate");
    std::map<std::int64_t, std::string> ids;
    EXPECT_TRUE(WaitFor(executor, [&](const model::ExecutorEvent& event) {
      EXPECT_NE(event.kind, model::ExecutorEvent::Kind::kExited) << event.exit.message;
      if (event.kind == model::ExecutorEvent::Kind::kSubmitted) {
        ids[event.ref.job.value()] = event.ref.external_id;
      }
      return ids.size() == static_cast<std::size_t>(jobs);
    }));
    return ids;
  }

  // What the fake scontrol lists: job 1 as drover-5-1 in `state` after `restarts` requeues.
  void Show(const std::string& state, int restarts, const std::string& extra = "") {
    std::ofstream(dir_ + "/show.new")
        << "JobId=1 JobName=drover-5-1 JobState=" << state
        << " Reason=BeginTime Restarts=" << restarts
        << " SubmitTime=2026-11-30T12:00:00 EligibleTime=2026-11-30T12:02:00 "
           "StartTime=2026-11-30T12:00:01 EndTime=Unknown NodeList=n1 "
        << extra << "\n";
    std::filesystem::rename(dir_ + "/show.new", dir_ + "/show");
  }

  SlurmExecutorOptions Options(DurationMs poll_ms) const {
    SlurmExecutorOptions options;
    options.runs_dir = dir_ + "/runs";
    options.poll_interval_ms = poll_ms;
    return options;
  }

  testing::TempDir temp_{"drover-fake-slurm"};
  const std::string dir_ = temp_.path();  // the fake commands (first on PATH) and their files
  std::string old_path_;
  SystemClock clock_;
};

TEST_F(SlurmExecutorTest, ACancelIsNotHeldUpBehindALargeSubmission) {
  setenv("SLURM_FAKE_SBATCH_DELAY", "0.1", 1);
  SlurmExecutorOptions options = Options(50);
  options.max_array_tasks = 1;  // like jobs each a Slurm job of its own
  SlurmExecutor executor(options, clock_);
  // While the first round of sbatch calls (8 at a time) waits at the gate, job 39 is cancelled:
  // it must never reach Slurm (before, the whole batch was submitted first, job 39 included,
  // then cancelled with scancel).
  std::ofstream(dir_ + "/gate").flush();
  for (int job = 1; job <= 40; ++job) ASSERT_TRUE(executor.Submit(Launch(job)).has_value());
  ASSERT_TRUE(testing::WaitUntil([&] {
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      if (entry.path().filename().string().starts_with("running.")) return true;
    }
    return false;
  }));
  ASSERT_TRUE(executor.Cancel(Launch(39).ref, {}).has_value());
  std::filesystem::remove(dir_ + "/gate");
  int submitted = 0;
  bool cancelled = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((submitted < 39 || !cancelled) && std::chrono::steady_clock::now() < deadline) {
    for (const model::ExecutorEvent& event : executor.Poll()) {
      if (event.kind == model::ExecutorEvent::Kind::kSubmitted) ++submitted;
      if (event.kind == model::ExecutorEvent::Kind::kExited) {
        EXPECT_EQ(event.ref.job.value(), 39);
        EXPECT_TRUE(event.exit.cancelled);
        cancelled = true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(submitted, 39);
  EXPECT_TRUE(cancelled);
  const std::vector<std::string> log = Log();
  EXPECT_THAT(log, Not(Contains("sbatch drover-39-1")));
  EXPECT_THAT(log, Not(Contains(HasSubstr("scancel"))));
  // Slurm's states were read while the submission was under way, not only after it.
  auto first_scontrol = std::find(log.begin(), log.end(), "scontrol");
  auto last_sbatch = std::find(log.begin(), log.end(), "sbatch drover-40-1");
  EXPECT_LT(first_scontrol, last_sbatch);
}

// 64 jobs of one file: the sbatch calls run several at once (before, one per loop turn, so a
// file of 1,000 jobs reached Slurm one sbatch after the other in 207 s), each job is submitted
// exactly once, and each gets its own Slurm job id. (64 rather than more: each fake sbatch starts
// about ten processes, which on a loaded 2-core machine took 200 jobs past WaitFor's 30 s.)
TEST_F(SlurmExecutorTest, ALargeSubmissionRunsSeveralSbatchAtOnce) {
  setenv("SLURM_FAKE_SBATCH_DELAY", "0.2", 1);
  SlurmExecutorOptions options = Options(50);
  options.max_concurrent_submits = 8;
  options.max_array_tasks = 1;  // like jobs each a Slurm job of its own
  SlurmExecutor executor(options, clock_);
  constexpr int kJobs = 64;
  for (int job = 1; job <= kJobs; ++job) ASSERT_TRUE(executor.Submit(Launch(job)).has_value());
  std::set<std::string> ids;
  std::set<std::int64_t> jobs;
  ASSERT_TRUE(WaitFor(executor, [&](const model::ExecutorEvent& event) {
    EXPECT_NE(event.kind, model::ExecutorEvent::Kind::kExited) << event.exit.message;
    if (event.kind != model::ExecutorEvent::Kind::kSubmitted) return false;  // Slurm's reason
    ids.insert(event.ref.external_id);
    jobs.insert(event.ref.job.value());
    return jobs.size() == kJobs;
  }));
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(kJobs));
  const std::vector<std::string> log = Log();
  EXPECT_EQ(std::count_if(log.begin(), log.end(),
                          [](const std::string& line) { return line.starts_with("sbatch"); }),
            kJobs);
  std::ifstream overlap_file(dir_ + "/overlap");
  int most = 0;
  for (int running = 0; overlap_file >> running;) most = std::max(most, running);
  EXPECT_GT(most, 1) << "the sbatch calls ran one at a time";
  EXPECT_LE(most, options.max_concurrent_submits);
}

// 200 like jobs (one file) reach Slurm as one job array, not 200 sbatch calls; each job is a task
// of it, tracked, started, ended and cancelled under its own "ARRAYID_TASK". The first sbatch
// waits at a gate until all 200 were submitted, so that however the executor's thread took the
// first ones, the rest wait together.
TEST_F(SlurmExecutorTest, LikeJobsGoAsOneArrayWhoseTasksAreTrackedOneByOne) {
  using Kind = model::ExecutorEvent::Kind;
  SlurmExecutor executor(Options(50), clock_);
  constexpr int kJobs = 200;
  std::map<std::int64_t, std::string> ids = SubmitAtTheGate(executor, kJobs);
  ASSERT_EQ(ids.size(), static_cast<std::size_t>(kJobs));
  const std::vector<std::string> log = Log();
  const auto sbatches = std::count_if(
      log.begin(), log.end(), [](const std::string& line) { return line.starts_with("sbatch"); });
  EXPECT_LE(sbatches, 2) << "at most the jobs taken before the gate, then the rest as one array";
  // The last job is the last task of the array that took the rest: 1_199 or 2_<n>.
  const std::string last = ids[kJobs];
  const std::size_t underscore = last.find('_');
  ASSERT_NE(underscore, std::string::npos) << last;
  const std::string array = last.substr(0, underscore);
  const int task = std::stoi(last.substr(underscore + 1));
  ASSERT_GE(task, 1);
  EXPECT_EQ(ids[kJobs - 1], fmt::format("{}_{}", array, task - 1));
  EXPECT_THAT(log, Contains(HasSubstr(fmt::format("--array=0-{}", task))));
  // The task's own script and the marker that finds it after a restart, before the sbatch.
  const std::string attempt_dir = executor.AttemptDir(JobId(kJobs), 1);
  EXPECT_TRUE(std::filesystem::exists(attempt_dir + "/batch.sh"));
  std::ifstream marker(attempt_dir + "/array");
  std::string name;
  int marked = -1;
  ASSERT_TRUE(marker >> name >> marked);
  EXPECT_THAT(name, ::testing::StartsWith("drover-array-"));
  EXPECT_EQ(marked, task);
  // The task's link, which its array's script follows to that directory.
  const std::string link =
      fmt::format("{}/{}", ArrayTasksDir(Options(50).runs_dir + "/arrays", name), task);
  EXPECT_EQ(std::filesystem::canonical(link), std::filesystem::canonical(attempt_dir));

  // Slurm lists the last task started as its own job 9001, the others pending in one record.
  std::ofstream(dir_ + "/show.new")
      << "JobId=9001 ArrayJobId=" << array << " ArrayTaskId=" << task << " JobName=" << name
      << " JobState=RUNNING Reason=None Restarts=0 SubmitTime=2026-11-30T12:00:00 "
         "EligibleTime=2026-11-30T12:00:00 StartTime=2026-11-30T12:00:01 EndTime=Unknown "
         "NodeList=n3\n"
      << "JobId=" << array << " ArrayJobId=" << array << " ArrayTaskId=0-" << task - 1
      << "%50 JobName=" << name
      << " JobState=PENDING Reason=Resources Restarts=0 SubmitTime=2026-11-30T12:00:00 "
         "EligibleTime=2026-11-30T12:00:00 StartTime=Unknown EndTime=Unknown NodeList=(null)\n";
  std::filesystem::rename(dir_ + "/show.new", dir_ + "/show");
  bool started = false, waiting = false;
  ASSERT_TRUE(WaitFor(executor, [&](const model::ExecutorEvent& event) {
    // (The jobs taken before the gate, if any, are no longer listed: lost, not this array's.)
    EXPECT_FALSE(event.kind == Kind::kExited && ids[event.ref.job.value()].starts_with(array))
        << event.ref.name << ": " << event.exit.message;
    if (event.kind == Kind::kStarted && event.ref.job.value() == kJobs) {
      EXPECT_EQ(event.nodes, std::vector<std::string>{"n3"});
      started = true;
    }
    // A listing taken before the new one was in place may still report the fake's "Priority";
    // the task must come to wait for "Resources", the reason of the array's pending record.
    if (event.kind == Kind::kPending && event.ref.job.value() == kJobs - 1 &&
        event.reason.find("Resources") != std::string::npos) {
      waiting = true;
    }
    return started && waiting;
  }));
  ASSERT_TRUE(executor.Cancel(Launch(kJobs - 1).ref, {}).has_value());
  EXPECT_TRUE(LogShows(fmt::format("scancel {}_{}", array, task - 1)));
}

// An array's task links and its empty output go once every task of it has ended, not before.
TEST_F(SlurmExecutorTest, AnArraysLinksGoWhenItsLastTaskEnded) {
  using Kind = model::ExecutorEvent::Kind;
  SlurmExecutor executor(Options(50), clock_);
  constexpr int kJobs = 4;
  std::map<std::int64_t, std::string> ids = SubmitAtTheGate(executor, kJobs);
  ASSERT_EQ(ids.size(), static_cast<std::size_t>(kJobs));
  // The array that took the last job (the first may have gone alone, before the gate closed).
  const std::string array(ArrayJobIdOf(ids[kJobs]));
  ASSERT_FALSE(array.empty()) << ids[kJobs];
  std::ifstream marker(executor.AttemptDir(JobId(kJobs), 1) + "/array");
  std::string name;
  ASSERT_TRUE(marker >> name);
  const std::string links = ArrayTasksDir(Options(50).runs_dir + "/arrays", name);
  const std::string output = ArrayOutput(Options(50).runs_dir + "/arrays", name);
  std::ofstream(output).flush();  // as Slurm creates it when the array starts
  ASSERT_TRUE(std::filesystem::is_directory(links));

  // Slurm's listing: each of the array's tasks as its own job, ended but `running_task`.
  auto show = [&](int running_task) {
    std::ofstream listing(dir_ + "/show.new");
    for (const auto& [job, id] : ids) {
      if (ArrayJobIdOf(id) != array) continue;
      const std::string task = id.substr(id.find('_') + 1);
      const bool running = std::stoi(task) == running_task;
      listing << "JobId=" << 9000 + job << " ArrayJobId=" << array << " ArrayTaskId=" << task
              << " JobName=" << name << " JobState=" << (running ? "RUNNING" : "COMPLETED")
              << " Reason=None Restarts=0 ExitCode=0:0 SubmitTime=2026-11-30T12:00:00 "
                 "EligibleTime=2026-11-30T12:00:00 StartTime=2026-11-30T12:00:01 EndTime="
              << (running ? "Unknown" : "2026-11-30T12:00:02") << " NodeList=n1\n";
    }
    listing.close();
    std::filesystem::rename(dir_ + "/show.new", dir_ + "/show");
  };
  const std::string& kept = ids[kJobs];
  const int kept_task = std::stoi(kept.substr(kept.find('_') + 1));
  show(kept_task);
  std::set<std::int64_t> exited;
  auto of_array = [&](std::int64_t job) { return ArrayJobIdOf(ids[job]) == array; };
  const auto array_jobs = std::count_if(ids.begin(), ids.end(),
                                        [&](const auto& entry) { return of_array(entry.first); });
  ASSERT_TRUE(WaitFor(executor, [&](const model::ExecutorEvent& event) {
    if (event.kind == Kind::kExited && of_array(event.ref.job.value())) {
      exited.insert(event.ref.job.value());
    }
    return static_cast<long>(exited.size()) == array_jobs - 1;
  }));
  EXPECT_FALSE(exited.contains(kJobs));
  EXPECT_TRUE(std::filesystem::is_directory(links)) << "its last task still runs";
  EXPECT_TRUE(std::filesystem::exists(output));

  show(-1);
  ASSERT_TRUE(WaitFor(executor, [&](const model::ExecutorEvent& event) {
    return event.kind == Kind::kExited && event.ref.job.value() == kJobs;
  }));
  // Removed in the refresh that reported the exit, just after it.
  EXPECT_TRUE(testing::WaitUntil([&] { return !std::filesystem::exists(links); }));
  EXPECT_TRUE(testing::WaitUntil([&] { return !std::filesystem::exists(output); }));
  // The attempts' own directories stay (their scripts, output and job id files).
  EXPECT_TRUE(std::filesystem::exists(executor.AttemptDir(JobId(kJobs), 1) + "/batch.sh"));
}

// A task's run that continues it after a Slurm requeue is a later attempt; the array's marker is
// in the attempt that was submitted, and its links go when that run ends.
TEST_F(SlurmExecutorTest, AnArraysLinksGoWhenItsLastTaskEndsAsAContinuation) {
  using Kind = model::ExecutorEvent::Kind;
  SlurmExecutor executor(Options(50), clock_);
  const std::string name = ArrayName(JobId(9), 1);
  const std::string links = ArrayTasksDir(Options(50).runs_dir + "/arrays", name);
  const std::string submitted = executor.AttemptDir(JobId(9), 1);
  std::filesystem::create_directories(links);
  std::filesystem::create_directories(submitted);
  std::filesystem::create_directory_symlink(submitted, links + "/0");
  std::ofstream(submitted + "/array") << name << " 0\n";
  // The run after one requeue: attempt 2 of job 9, Slurm's task 77_0 (as a restart adopts it).
  model::ExternalRef continued = {JobId(9),     2,      model::ExecutorKind::kSlurm,
                                  "drover-9-2", "77_0", 1};
  std::ofstream(dir_ + "/show")
      << "JobId=78 ArrayJobId=77 ArrayTaskId=0 JobName=" << name
      << " JobState=COMPLETED Reason=None Restarts=1 ExitCode=0:0 "
         "SubmitTime=2026-11-30T12:00:00 EligibleTime=2026-11-30T12:00:00 "
         "StartTime=2026-11-30T12:00:01 EndTime=2026-11-30T12:00:02 NodeList=n1\n";
  executor.Adopt({continued});
  ASSERT_TRUE(WaitFor(executor, [](const model::ExecutorEvent& event) {
    return event.kind == Kind::kExited && event.ref.attempt == 2;
  }));
  EXPECT_TRUE(testing::WaitUntil([&] { return !std::filesystem::exists(links); }));
}

// Links an earlier server left: an array whose tasks all ended while no server watched goes at
// the first refresh whose listing shows them ended; one that Slurm no longer lists goes at the
// second listing without it, never at the first (a listing answered wrongly empty removes
// nothing); one with a task still pending stays, as does an entry not named as an array.
TEST_F(SlurmExecutorTest, LinksLeftByAnEarlierServerGoOnceNoTaskOfTheirArrayCanRun) {
  const std::string arrays = Options(50).runs_dir + "/arrays";
  auto links_of = [&](std::int64_t first_job) {
    const std::string name = ArrayName(JobId(first_job), 1);
    std::filesystem::create_directories(ArrayTasksDir(arrays, name) + "/0");
    std::ofstream(ArrayOutput(arrays, name)).flush();  // empty, as Slurm leaves it
    return ArrayTasksDir(arrays, name);
  };
  const std::string ended = links_of(3), unlisted = links_of(4), pending = links_of(5);
  const std::string other = arrays + "/notes.tasks";
  std::filesystem::create_directories(other);
  const std::string times =
      " Reason=None Restarts=0 ExitCode=0:0 SubmitTime=2026-11-30T12:00:00 "
      "EligibleTime=2026-11-30T12:00:00 StartTime=2026-11-30T12:00:01 EndTime=Unknown "
      "NodeList=n1\n";
  // Job 1 runs (it keeps the executor refreshing); array 3's only task ended; of array 5, task 0
  // ended and tasks 1-3 wait together in one record.
  std::ofstream(dir_ + "/show") << "JobId=1 JobName=drover-1-1 JobState=RUNNING" << times
                                << "JobId=31 ArrayJobId=30 ArrayTaskId=0 JobName="
                                << ArrayName(JobId(3), 1) << " JobState=COMPLETED" << times
                                << "JobId=50 ArrayJobId=50 ArrayTaskId=1-3 JobName="
                                << ArrayName(JobId(5), 1) << " JobState=PENDING" << times
                                << "JobId=51 ArrayJobId=50 ArrayTaskId=0 JobName="
                                << ArrayName(JobId(5), 1) << " JobState=COMPLETED" << times;
  // The second listing and those after it wait while the gate stands: when one has begun, the
  // first refresh (and its removals) is over, and the second's have not happened.
  Write("scontrol", R"sh(#!/bin/bash
if [ "$1" != show ]; then echo "scontrol $*" >> "$SLURM_FAKE_DIR/log"; exit 0; fi
echo scontrol >> "$SLURM_FAKE_DIR/log"
if [ "$(grep -c '^scontrol$' "$SLURM_FAKE_DIR/log")" -ge 2 ]; then
  while [ -e "$SLURM_FAKE_DIR/listing-gate" ]; do sleep 0.01; done
fi
cat "$SLURM_FAKE_DIR/show"
)sh");
  std::ofstream(dir_ + "/listing-gate").flush();
  SlurmExecutor executor(Options(50), clock_);
  executor.Adopt({{JobId(1), 1, model::ExecutorKind::kSlurm, "drover-1-1", "1", 0}});
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        const std::vector<std::string> log = Log();
        return std::count(log.begin(), log.end(), "scontrol") >= 2;
      },
      std::chrono::seconds(30)));
  EXPECT_FALSE(std::filesystem::exists(ended));
  EXPECT_FALSE(std::filesystem::exists(ArrayOutput(arrays, ArrayName(JobId(3), 1))));
  EXPECT_TRUE(std::filesystem::exists(unlisted)) << "removed at the first listing without it";
  EXPECT_TRUE(std::filesystem::exists(pending));

  // When the third listing has begun, the second refresh's removals are all over: waiting for the
  // links alone raced with the removal of the output that follows them.
  std::filesystem::remove(dir_ + "/listing-gate");
  ASSERT_TRUE(testing::WaitUntil([&] {
    const std::vector<std::string> log = Log();
    return std::count(log.begin(), log.end(), "scontrol") >= 3;
  }));
  EXPECT_FALSE(std::filesystem::exists(unlisted));
  EXPECT_FALSE(std::filesystem::exists(ArrayOutput(arrays, ArrayName(JobId(4), 1))));
  EXPECT_TRUE(std::filesystem::exists(pending)) << "a task of it may still start";
  EXPECT_TRUE(std::filesystem::exists(ArrayOutput(arrays, ArrayName(JobId(5), 1))));
  EXPECT_TRUE(std::filesystem::exists(other));
}

// After a restart, an attempt whose array's sbatch returned before its id was recorded is found
// by the array's name and its task index from the marker; an array task that scontrol no longer
// lists ends as the jobcomp log recorded its own Slurm job id.
TEST_F(SlurmExecutorTest, AnArrayTaskIsAdoptedByItsMarkerAndEndsByItsOwnJobId) {
  using Kind = model::ExecutorEvent::Kind;
  SlurmExecutor executor(Options(50), clock_);
  const std::string unrecorded = executor.AttemptDir(JobId(7), 1);
  std::filesystem::create_directories(unrecorded);
  std::ofstream(unrecorded + "/array") << "drover-array-6-1 3\n";
  std::ofstream(dir_ + "/squeue.out") << "42\n";
  const std::string ended = executor.AttemptDir(JobId(8), 1);
  std::filesystem::create_directories(ended);
  std::ofstream(ended + "/array") << "drover-array-6-1 4\n";
  std::ofstream(ended + "/slurm-job-id") << "57\n";
  std::ofstream(dir_ + "/sacct.out")
      << "57|drover-array-6-1|FAILED|3:0|2026-11-30T12:00:01|2026-11-30T12:00:05|n2\n";
  std::ofstream(dir_ + "/show").flush();  // scontrol lists neither any more
  executor.Adopt({{JobId(7), 1, model::ExecutorKind::kSlurm, "drover-7-1", "", 0},
                  {JobId(8), 1, model::ExecutorKind::kSlurm, "drover-8-1", "42_4", 0}});
  bool found = false, failed = false;
  ASSERT_TRUE(WaitFor(executor, [&](const model::ExecutorEvent& event) {
    if (event.kind == Kind::kSubmitted && event.ref.job.value() == 7) {
      EXPECT_EQ(event.ref.external_id, "42_3");
      found = true;
    }
    if (event.kind == Kind::kExited && event.ref.job.value() == 8) {
      EXPECT_EQ(event.exit.exit_code, 3) << event.exit.message;
      failed = true;
    }
    return found && failed;
  }));
  EXPECT_THAT(Log(), Contains("squeue -h --states=all --name=drover-array-6-1 -o %F"));
  EXPECT_THAT(Log(), Contains(HasSubstr("sacct -c -n -P -j 57 ")));
}

TEST_F(SlurmExecutorTest, RefreshesAtThePollIntervalNotAtEverySubmission) {
  SlurmExecutor executor(Options(1000), clock_);
  // 10 submissions, one every 150 ms: before, each was followed by a refresh (one scontrol
  // listing every job); now there is one per second.
  const auto start = std::chrono::steady_clock::now();
  int submitted = 0;
  for (int job = 1; job <= 10; ++job) {
    ASSERT_TRUE(executor.Submit(Launch(job)).has_value());
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
  const auto deadline = start + std::chrono::seconds(30);
  while (submitted < 10 && std::chrono::steady_clock::now() < deadline) {
    for (const model::ExecutorEvent& event : executor.Poll()) {
      if (event.kind == model::ExecutorEvent::Kind::kSubmitted) ++submitted;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(submitted, 10);
  const auto elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - start)
                              .count();
  const std::vector<std::string> log = Log();
  const auto refreshes = std::count(log.begin(), log.end(), "scontrol");
  EXPECT_LE(refreshes, elapsed_ms / 1000 + 2) << "in " << elapsed_ms << " ms";
  EXPECT_LT(refreshes, 10) << "one scontrol per submission";
}

// Slurm requeues job 1 (attempt 1 of Drover's job 5) after a node failure: the executor reports
// the run's end as requeued and holds the job; attempt 2 continues it without a new sbatch.
TEST_F(SlurmExecutorTest, ASlurmRequeueIsHeldThenContinuedAsTheNextAttempt) {
  using Kind = model::ExecutorEvent::Kind;
  SlurmExecutor executor(Options(50), clock_);
  ASSERT_TRUE(executor.Submit(Launch(5)).has_value());
  ASSERT_TRUE(WaitFor(executor, [](const auto& e) { return e.kind == Kind::kSubmitted; }));
  Show("RUNNING", 0);
  ASSERT_TRUE(WaitFor(executor, [](const auto& e) { return e.kind == Kind::kStarted; }));
  std::ofstream(dir_ + "/sacct.out")
      << "1|drover-5-1|NODE_FAIL|0:0|2026-11-30T12:00:01|2026-11-30T12:00:05|n1\n";
  // Requeued, its old run still completing (Slurm's COMPLETING flag over PENDING): the executor
  // waits for the requeue to settle, and neither cancels nor reports anything yet.
  Show("COMPLETING", 1);
  const auto listings = [&] {
    const std::vector<std::string> log = Log();
    return std::count(log.begin(), log.end(), "scontrol");
  };
  const auto before = listings();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (listings() < before + 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GE(listings(), before + 3);
  EXPECT_TRUE(executor.Poll().empty());
  EXPECT_THAT(Log(), Not(Contains(HasSubstr("scancel"))));
  Show("PENDING", 1);
  model::ExecutorEvent ended;
  ASSERT_TRUE(WaitFor(executor, [&](const auto& e) {
    ended = e;
    return e.kind == Kind::kExited;
  }));
  EXPECT_EQ(ended.ref.attempt, 1);
  EXPECT_TRUE(ended.requeued);
  EXPECT_TRUE(ended.exit.node_lost);
  EXPECT_THAT(ended.exit.message, HasSubstr("NODE_FAIL on n1"));
  EXPECT_THAT(Log(), Contains("scontrol hold 1"));

  model::ExternalLaunch next = Launch(5);
  next.ref = {JobId(5), 2, model::ExecutorKind::kSlurm, "drover-5-2", "1", 1};
  next.env = {{"DROVER_ATTEMPT", "2"}};
  ASSERT_TRUE(executor.Submit(next).has_value());
  ASSERT_TRUE(WaitFor(executor, [](const auto& e) {
    return e.kind == Kind::kSubmitted && e.ref.attempt == 2 && e.ref.external_id == "1";
  }));
  std::ifstream contract(executor.AttemptDir(JobId(5), 2) + "/contract.sh");
  std::stringstream text;
  text << contract.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("export DROVER_ATTEMPT='2'"));
  EXPECT_THAT(Log(), Contains("scontrol release 1"));
  const std::vector<std::string> log = Log();
  EXPECT_EQ(std::count_if(log.begin(), log.end(),
                          [](const std::string& line) { return line.starts_with("sbatch"); }),
            1);

  Show("RUNNING", 1);
  ASSERT_TRUE(WaitFor(
      executor, [](const auto& e) { return e.kind == Kind::kStarted && e.ref.attempt == 2; }));
  Show("COMPLETED", 1, "ExitCode=0:0");
  ASSERT_TRUE(WaitFor(executor, [&](const auto& e) {
    ended = e;
    return e.kind == Kind::kExited;
  }));
  EXPECT_EQ(ended.ref.attempt, 2);
  EXPECT_TRUE(ended.exit.Succeeded());
  EXPECT_FALSE(ended.requeued);
}

TEST_F(SlurmExecutorTest, AHeldRequeuedJobThatDroverDoesNotContinueIsCancelled) {
  using Kind = model::ExecutorEvent::Kind;
  SlurmExecutor executor(Options(50), clock_);
  ASSERT_TRUE(executor.Submit(Launch(5)).has_value());
  model::ExecutorEvent submitted;
  ASSERT_TRUE(WaitFor(executor, [&](const auto& e) {
    submitted = e;
    return e.kind == Kind::kSubmitted;
  }));
  Show("PENDING", 1);  // no jobcomp record: read as a preemption
  model::ExecutorEvent ended;
  ASSERT_TRUE(WaitFor(executor, [&](const auto& e) {
    ended = e;
    return e.kind == Kind::kExited;
  }));
  EXPECT_TRUE(ended.requeued);
  EXPECT_TRUE(ended.exit.preempted);
  ASSERT_TRUE(executor.Cancel(submitted.ref, {}).has_value());
  EXPECT_TRUE(LogShows("scancel 1"));
}

// What a job's account may leave in its attempt's folder (docs/security.md) neither redirects
// the executor's writes nor holds its thread: a link where the contract's temporary file goes,
// and a FIFO where an array marker would be.
TEST_F(SlurmExecutorTest, WhatAJobLeavesInItsFolderNeitherRedirectsNorHoldsTheExecutor) {
  using Kind = model::ExecutorEvent::Kind;
  SlurmExecutor executor(Options(50), clock_);
  const std::string victim = dir_ + "/victim";
  std::ofstream(victim) << "untouched\n";
  const std::string continued = executor.AttemptDir(JobId(5), 2);
  std::filesystem::create_directories(continued);
  std::filesystem::create_symlink(victim, os::TemporaryFileOf(ContractFile(continued)));
  const std::string unrecorded = executor.AttemptDir(JobId(6), 1);
  std::filesystem::create_directories(unrecorded);
  ASSERT_EQ(mkfifo(ArrayMarker(unrecorded).c_str(), 0600), 0);

  model::ExternalLaunch next = Launch(5);
  next.ref = {JobId(5), 2, model::ExecutorKind::kSlurm, "drover-5-2", "1", 1};
  next.env = {{"DROVER_ATTEMPT", "2"}};
  ASSERT_TRUE(executor.Submit(next).has_value());
  executor.Adopt({{JobId(6), 1, model::ExecutorKind::kSlurm, "drover-6-1", "", 0}});
  bool continued_ok = false, lost = false;
  ASSERT_TRUE(WaitFor(executor, [&](const model::ExecutorEvent& event) {
    if (event.kind == Kind::kSubmitted && event.ref.job.value() == 5) continued_ok = true;
    if (event.kind == Kind::kExited && event.ref.job.value() == 6) {
      EXPECT_TRUE(event.exit.node_lost);
      EXPECT_THAT(event.exit.message, HasSubstr("slurm has no job named drover-6-1"));
      lost = true;
    }
    return continued_ok && lost;
  }));
  std::stringstream text;
  text << std::ifstream(victim).rdbuf();
  EXPECT_EQ(text.str(), "untouched\n");
  std::stringstream contract;
  contract << std::ifstream(ContractFile(continued)).rdbuf();
  EXPECT_THAT(contract.str(), HasSubstr("export DROVER_ATTEMPT='2'"));
  EXPECT_TRUE(
      std::filesystem::is_regular_file(std::filesystem::symlink_status(ContractFile(continued))));
}

// Jobs run as their users (docs/security.md): as root, the executor submits each job as its
// account (the server's own user runs only what the policy lets run as root) and gives the
// account the folders Slurm and the job write in. With a Unix account the test creates: root
// only, as CI is; elsewhere skipped.
class SlurmRunAsTest : public SlurmExecutorTest {
 protected:
  void SetUp() override {
    if (geteuid() != 0)
      GTEST_SKIP() << "needs root: the executor submits as another user only as root";
    SlurmExecutorTest::SetUp();
    auto account = testing::ScopedUnixAccount::Create("drover-s");
    ASSERT_TRUE(account) << account.error().ToString();
    account_ = *std::move(account);
  }

  model::ExternalLaunch LaunchAs(std::int64_t job, std::string run_as) const {
    model::ExternalLaunch launch = Launch(job);
    launch.run_as = std::move(run_as);
    return launch;
  }

  static uid_t OwnerOf(const std::string& path) {
    struct stat info {};
    EXPECT_EQ(lstat(path.c_str(), &info), 0) << path;
    return info.st_uid;
  }

  std::unique_ptr<testing::ScopedUnixAccount> account_;
};

TEST_F(SlurmRunAsTest, EachJobGoesAsItsAccountWhichOwnsTheFoldersSlurmWritesIn) {
  using Kind = model::ExecutorEvent::Kind;
  SlurmExecutor executor(Options(50), clock_);
  // A lone job, then three like ones while sbatch waits at the gate: one array at least.
  ASSERT_TRUE(executor.Submit(LaunchAs(1, account_->name())).has_value());
  ASSERT_TRUE(WaitFor(executor, [](const auto& e) { return e.kind == Kind::kSubmitted; }));
  std::ofstream(dir_ + "/gate").flush();
  for (int job = 2; job <= 4; ++job) {
    ASSERT_TRUE(executor.Submit(LaunchAs(job, account_->name())).has_value());
  }
  std::filesystem::remove(dir_ + "/gate");
  std::set<std::int64_t> submitted;
  ASSERT_TRUE(WaitFor(executor, [&](const model::ExecutorEvent& event) {
    EXPECT_NE(event.kind, Kind::kExited) << event.exit.message;
    if (event.kind == Kind::kSubmitted) submitted.insert(event.ref.job.value());
    return submitted.size() == 3;
  }));
  const std::vector<std::string> log = Log();
  int sbatches = 0;
  for (const std::string& line : log) {
    if (!line.starts_with("sbatch")) continue;
    ++sbatches;
    EXPECT_THAT(line, ::testing::EndsWith(fmt::format(" --uid={}", account_->uid())));
  }
  EXPECT_GE(sbatches, 2);
  EXPECT_LE(sbatches, 3) << "jobs 2 to 4 went as an array";
  for (int job = 1; job <= 4; ++job) {
    EXPECT_EQ(OwnerOf(executor.AttemptDir(JobId(job), 1)), account_->uid()) << job;
  }
  // The array's own output, which Slurm opens as the account in the executor's folder.
  std::string name;
  for (int job = 2; job <= 4 && name.empty(); ++job) {
    std::ifstream(ArrayMarker(executor.AttemptDir(JobId(job), 1))) >> name;
  }
  ASSERT_FALSE(name.empty()) << "no array";
  const std::string arrays = Options(50).runs_dir + "/arrays";
  EXPECT_EQ(OwnerOf(ArrayOutput(arrays, name)), account_->uid());
  EXPECT_EQ(OwnerOf(arrays), geteuid()) << "the arrays' folder stays the executor's";
  EXPECT_EQ(OwnerOf(Options(50).runs_dir + "/1"), geteuid()) << "so does a job's";
}

TEST_F(SlurmRunAsTest, RootWithoutThePolicysLeaveAndAnUnknownAccountNeverReachSlurm) {
  using Kind = model::ExecutorEvent::Kind;
  SlurmExecutor executor(Options(50), clock_);
  model::ExternalLaunch allowed = LaunchAs(3, "root");
  allowed.may_run_as_root = true;
  ASSERT_TRUE(executor.Submit(LaunchAs(1, "root")).has_value());
  ASSERT_TRUE(executor.Submit(LaunchAs(2, "drover-no-such-account")).has_value());
  ASSERT_TRUE(executor.Submit(allowed).has_value());
  std::map<std::int64_t, model::ExecutorEvent> first;
  ASSERT_TRUE(WaitFor(executor, [&](const model::ExecutorEvent& event) {
    first.emplace(event.ref.job.value(), event);
    return first.size() == 3;
  }));
  EXPECT_EQ(first[1].kind, Kind::kExited);
  EXPECT_EQ(first[1].exit.message,
            "job would run as root; the policy's accounts.allow_root does not list its owner");
  EXPECT_EQ(first[2].kind, Kind::kExited);
  EXPECT_EQ(first[2].exit.message,
            "no such Unix account drover-no-such-account on the server, which submits its Slurm "
            "queues' jobs");
  EXPECT_EQ(first[3].kind, Kind::kSubmitted) << first[3].exit.message;
  std::vector<std::string> sbatches;
  for (const std::string& line : Log()) {
    if (line.starts_with("sbatch")) sbatches.push_back(line);
  }
  EXPECT_THAT(sbatches, ElementsAre("sbatch drover-3-1")) << "root's job, as this process's own";
}

// A job's account can rewrite its array marker: after a restart, an attempt whose Slurm id was
// never recorded is looked for only among its account's jobs.
TEST_F(SlurmRunAsTest, AnAccountsMarkerFindsOnlyThatAccountsArray) {
  SlurmExecutor executor(Options(50), clock_);
  const std::string unrecorded = executor.AttemptDir(JobId(7), 1);
  std::filesystem::create_directories(unrecorded);
  std::ofstream(ArrayMarker(unrecorded)) << "drover-array-6-1 3\n";
  ASSERT_EQ(chown(unrecorded.c_str(), account_->uid(), account_->gid()), 0);
  executor.Adopt({{JobId(7), 1, model::ExecutorKind::kSlurm, "drover-7-1", "", 0}});
  EXPECT_TRUE(LogShows(fmt::format("squeue -h --states=all --name=drover-array-6-1 -o %F --user={}",
                                   account_->uid())));
}

}  // namespace
}  // namespace drover::exec::slurm
