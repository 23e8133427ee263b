// AppendJobRecordLine: each key as `scontrol show job -o` prints it, read back by the executor's
// ParseJobLine into the same record. (tests/slurm compares both listings on a real cluster.)

#include "drover/exec/libslurm/job_record.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctime>
#include <string>

#include "drover/exec/slurm/state.h"

namespace drover::exec::libslurm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::time_t kNow = 1'764'000'000;

// slurm_make_time_str's default rendering (SLURM_TIME_FORMAT unset): local time, "%FT%T".
std::string LocalTime(std::time_t time) {
  std::tm tm{};
  localtime_r(&time, &tm);
  char text[64];
  std::strftime(text, sizeof text, "%FT%T", &tm);
  return text;
}

std::string Line(const slurm_job_info_t& job) {
  std::string out;
  AppendJobRecordLine(job, kNow, out);
  return out;
}

slurm_job_info_t Job(std::uint32_t id) {
  slurm_job_info_t job{};
  job.job_id = id;
  job.array_task_id = NO_VAL;
  job.time_limit = 60;
  return job;
}

TEST(JobRecordTest, APendingArraysRecordIsOneLineOfScontrolsKeys) {
  slurm_job_info_t job = Job(12);
  job.array_job_id = 10;
  char tasks[] = "2-4%1";
  job.array_task_str = tasks;
  char name[] = "drover-array-7";
  job.name = name;
  job.job_state = JOB_PENDING;
  job.state_reason = WAIT_ARRAY_TASK_LIMIT;
  job.submit_time = kNow - 5;
  job.eligible_time = kNow - 5;
  EXPECT_EQ(Line(job),
            "JobId=12 ArrayJobId=10 ArrayTaskId=2-4%1 JobName=drover-array-7 "
            "JobState=PENDING Reason=JobArrayTaskLimit Restarts=0 ExitCode=0:0 "
            "SubmitTime=" +
                LocalTime(kNow - 5) + " EligibleTime=" + LocalTime(kNow - 5) +
                " StartTime=Unknown EndTime=Unknown NodeList=(null)\n");
}

TEST(JobRecordTest, TheExecutorReadsBackEveryKey) {
  slurm_job_info_t job = Job(31);
  job.array_job_id = 30;
  job.array_task_id = 1;  // a started task: its own record, without a task string
  char name[] = "drover-30-1";
  job.name = name;
  job.job_state = JOB_FAILED;
  job.state_reason = WAIT_NO_REASON;
  job.restart_cnt = 2;
  job.exit_code = 3 << 8;  // exit(3), as wait() reports it
  job.submit_time = kNow - 100;
  job.eligible_time = kNow - 99;
  job.start_time = kNow - 90;
  job.end_time = kNow - 10;
  char nodes[] = "n[1-2]";
  job.nodes = nodes;
  const std::string line = Line(job);
  const slurm::JobListing listing = slurm::ParseListing(line, slurm::ParseLocalTime);
  const slurm::SlurmJob* read = listing.Find("30_1");
  ASSERT_NE(read, nullptr) << line;
  EXPECT_EQ(read->id, "31");
  EXPECT_EQ(read->array_job_id, "30");
  EXPECT_EQ(read->array_task_ids, "1");
  EXPECT_EQ(read->name, "drover-30-1");
  EXPECT_EQ(read->state, "FAILED");
  EXPECT_EQ(read->reason, "None");
  EXPECT_EQ(read->restarts, 2);
  EXPECT_EQ(read->exit_code, 3);
  EXPECT_EQ(read->exit_signal, 0);
  EXPECT_EQ(read->submit_time, (kNow - 100) * 1000);
  EXPECT_EQ(read->eligible_time, (kNow - 99) * 1000);
  EXPECT_EQ(read->start_time, (kNow - 90) * 1000);
  EXPECT_EQ(read->end_time, (kNow - 10) * 1000);
  EXPECT_THAT(read->nodes, ElementsAre("n1", "n2"));
}

TEST(JobRecordTest, ASignalIsTheExitCodesSecondHalf) {
  slurm_job_info_t job = Job(5);
  job.job_state = JOB_CANCELLED;
  job.exit_code = 9;  // killed by SIGKILL, as wait() reports it
  EXPECT_THAT(Line(job), HasSubstr(" ExitCode=0:9 "));
}

TEST(JobRecordTest, TheReasonsDetailsHaveUnderscoresForSpaces) {
  slurm_job_info_t job = Job(6);
  job.job_state = JOB_PENDING;
  job.state_reason = WAIT_NODE_NOT_AVAIL;
  char detail[] = "ReqNodeNotAvail, UnavailableNodes:n4";
  job.state_desc = detail;
  EXPECT_THAT(Line(job), HasSubstr(" Reason=ReqNodeNotAvail,_UnavailableNodes:n4 "));
}

TEST(JobRecordTest, StateFlagsReadAsScontrolReadsThem) {
  slurm_job_info_t job = Job(7);
  job.job_state = JOB_RUNNING | JOB_COMPLETING;
  EXPECT_THAT(Line(job), HasSubstr(" JobState=COMPLETING "));
}

TEST(JobRecordTest, AnEndAheadWithoutATimeLimitIsUnknown) {
  slurm_job_info_t job = Job(8);
  job.job_state = JOB_RUNNING;
  job.start_time = kNow - 10;
  job.end_time = kNow + 3600;
  job.time_limit = INFINITE;
  EXPECT_THAT(Line(job), HasSubstr(" EndTime=Unknown "));
  job.time_limit = 61;
  EXPECT_THAT(Line(job), HasSubstr(" EndTime=" + LocalTime(kNow + 3600) + " "));
}

TEST(JobRecordTest, AFederationsDuplicateRecordPrintsNothing) { EXPECT_EQ(Line(Job(0)), ""); }

}  // namespace
}  // namespace drover::exec::libslurm
