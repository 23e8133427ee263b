#include "drover/exec/slurm/slurm_executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace drover::exec::slurm {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

// Stand-ins for sbatch, scontrol and scancel, first on PATH: each call is a line of
// $FAKE_SLURM_DIR/log. sbatch takes $FAKE_SBATCH_DELAY seconds; scontrol lists every job
// submitted so far as pending.
const char* kSbatch = R"sh(#!/bin/bash
cat >/dev/null
sleep "${FAKE_SBATCH_DELAY:-0}"
for a in "$@"; do case $a in --job-name=*) name=${a#--job-name=};; esac; done
n=$(( $(wc -l < "$FAKE_SLURM_DIR/jobs") + 1 ))
echo "$n $name" >> "$FAKE_SLURM_DIR/jobs"
echo "sbatch $name" >> "$FAKE_SLURM_DIR/log"
echo "$n"
)sh";
const char* kScontrol = R"sh(#!/bin/bash
echo scontrol >> "$FAKE_SLURM_DIR/log"
while read -r id name; do
  echo "JobId=$id JobName=$name JobState=PENDING Reason=Priority Restarts=0 SubmitTime=2026-11-30T12:00:00 EligibleTime=2026-11-30T12:00:00 StartTime=Unknown EndTime=Unknown NodeList=(null)"
done < "$FAKE_SLURM_DIR/jobs"
)sh";
const char* kScancel = R"sh(#!/bin/bash
echo "scancel $*" >> "$FAKE_SLURM_DIR/log"
)sh";

class SlurmExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/drover-fake-slurm-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    Write("sbatch", kSbatch);
    Write("scontrol", kScontrol);
    Write("scancel", kScancel);
    std::ofstream(dir_ + "/jobs").flush();
    std::ofstream(dir_ + "/log").flush();
    const char* path = getenv("PATH");
    old_path_ = path ? path : "";
    setenv("PATH", (dir_ + ":" + old_path_).c_str(), 1);
    setenv("FAKE_SLURM_DIR", dir_.c_str(), 1);
  }

  void TearDown() override {
    setenv("PATH", old_path_.c_str(), 1);
    unsetenv("FAKE_SBATCH_DELAY");
    std::filesystem::remove_all(dir_);
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

  SlurmExecutorOptions Options(DurationMs poll_ms) const {
    SlurmExecutorOptions options;
    options.runs_dir = dir_ + "/runs";
    options.poll_interval_ms = poll_ms;
    return options;
  }

  std::string dir_;
  std::string old_path_;
  SystemClock clock_;
};

TEST_F(SlurmExecutorTest, ACancelIsNotHeldUpBehindALargeSubmission) {
  setenv("FAKE_SBATCH_DELAY", "0.1", 1);
  SlurmExecutor executor(Options(50), clock_);
  for (int job = 1; job <= 10; ++job) ASSERT_TRUE(executor.Submit(Launch(job)).has_value());
  // While the first sbatch calls run, job 9 is cancelled: it must never reach Slurm (before,
  // the whole batch of 10 was submitted first, job 9 included, then cancelled with scancel).
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  ASSERT_TRUE(executor.Cancel(Launch(9).ref, {}).has_value());
  int submitted = 0;
  bool cancelled = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((submitted < 9 || !cancelled) && std::chrono::steady_clock::now() < deadline) {
    for (const model::ExecutorEvent& event : executor.Poll()) {
      if (event.kind == model::ExecutorEvent::Kind::kSubmitted) ++submitted;
      if (event.kind == model::ExecutorEvent::Kind::kExited) {
        EXPECT_EQ(event.ref.job.value(), 9);
        EXPECT_TRUE(event.exit.cancelled);
        cancelled = true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(submitted, 9);
  EXPECT_TRUE(cancelled);
  const std::vector<std::string> log = Log();
  EXPECT_THAT(log, Not(Contains("sbatch drover-9-1")));
  EXPECT_THAT(log, Not(Contains(HasSubstr("scancel"))));
  // Slurm's states were read while the submission was under way, not only after it.
  auto first_scontrol = std::find(log.begin(), log.end(), "scontrol");
  auto last_sbatch = std::find(log.begin(), log.end(), "sbatch drover-10-1");
  EXPECT_LT(first_scontrol, last_sbatch);
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

}  // namespace
}  // namespace drover::exec::slurm
