// JobDescription: every option RenderSbatch and RenderArray write becomes the field sbatch would
// set; anything else is refused by name. (tests/slurm compares the two ways on a real cluster.)

#include "drover/exec/libslurm/job_description.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <string>
#include <utility>
#include <vector>

namespace drover::exec::libslurm {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

// A gang of three workers on three nodes with two H100 each, a timeout and every queue option:
// RenderSbatch writes each option it has for it.
model::ExternalLaunch Gang() {
  model::ExternalLaunch launch;
  launch.ref = {JobId(7), 2, model::ExecutorKind::kSlurm, "drover-7-2", ""};
  launch.executor.kind = model::ExecutorKind::kSlurm;
  launch.executor.slurm = {"gpu", "normal", "ml"};
  launch.spec.command = {"python3", "train.py"};
  launch.spec.requirements.per_worker = {2500, 3LL << 30, 2};
  launch.spec.requirements.gpu_models = {"H100"};
  launch.spec.workers = 3;
  launch.spec.timeout = 90'000;
  launch.requeue = true;
  return launch;
}

std::vector<std::string> Environment(const JobDescription& job) {
  return {job.environment().begin(), job.environment().end()};
}

TEST(JobDescription, EveryOptionOfAGangBecomesSbatchsField) {
  Result<slurm::Sbatch> sbatch = slurm::RenderSbatch(Gang(), {"/runs/7", "", ""});
  ASSERT_TRUE(sbatch) << sbatch.error().message;
  Result<JobDescription> job = JobDescription::FromSbatch(*sbatch, {"HOME=/root", "LANG=C"});
  ASSERT_TRUE(job) << job.error().message;
  const job_desc_msg_t& d = *job->get();
  EXPECT_STREQ(d.name, "drover-7-2");
  EXPECT_EQ(d.requeue, 1);
  EXPECT_STREQ(d.std_out, "/runs/7/2/slurm-%j.out");
  EXPECT_EQ(d.open_mode, OPEN_MODE_APPEND);
  EXPECT_STREQ(d.work_dir, "/runs/7/2");
  EXPECT_STREQ(d.partition, "gpu");
  EXPECT_STREQ(d.qos, "normal");
  EXPECT_STREQ(d.account, "ml");
  EXPECT_EQ(d.min_nodes, 3u);
  EXPECT_EQ(d.max_nodes, 3u);
  EXPECT_EQ(d.num_tasks, 3u);
  EXPECT_EQ(d.ntasks_per_node, 1);
  EXPECT_EQ(d.cpus_per_task, 3);
  EXPECT_EQ(d.min_cpus, 9u);
  EXPECT_EQ(d.pn_min_memory, 3072u);
  EXPECT_STREQ(d.tres_per_node, "gres:gpu:h100:2");
  EXPECT_EQ(d.time_limit, 3u);
  EXPECT_EQ(d.warn_signal, SIGTERM);
  EXPECT_EQ(d.warn_time, 10);
  EXPECT_EQ(d.warn_flags, KILL_JOB_BATCH);
  EXPECT_EQ(d.user_id, getuid());
  EXPECT_EQ(d.group_id, getgid());
  EXPECT_EQ(d.array_inx, nullptr);
  EXPECT_EQ(std::string(d.script), sbatch->script);
  EXPECT_EQ(d.env_size, job->environment().size());
  const std::vector<std::string> environment = Environment(*job);
  for (const char* entry :
       {"HOME=/root", "LANG=C", "SLURM_JOB_NAME=drover-7-2", "SLURM_NTASKS=3", "SLURM_NPROCS=3",
        "SLURM_NTASKS_PER_NODE=1", "SLURM_CPUS_PER_TASK=3", "SLURM_OPEN_MODE=a"}) {
    EXPECT_THAT(environment, Contains(entry));
  }
  for (const char* name : {"SLURM_SUBMIT_DIR=", "SLURM_SUBMIT_HOST=", "SLURM_PRIO_PROCESS=",
                           "SLURM_UMASK=0", "SLURM_RLIMIT_NOFILE=", "SLURM_RLIMIT_AS="}) {
    EXPECT_THAT(environment, Contains(::testing::StartsWith(name)));
  }
}

TEST(JobDescription, ALoneWorkerWithoutRequeueOrLimitsLeavesThoseFieldsUnset) {
  model::ExternalLaunch launch = Gang();
  launch.requeue = false;
  launch.spec.workers = 1;
  launch.spec.timeout.reset();
  launch.spec.requirements.per_worker = {1000, 0, 0};
  launch.executor.slurm = {};
  Result<slurm::Sbatch> sbatch = slurm::RenderSbatch(launch, {"/runs/7", "", ""});
  ASSERT_TRUE(sbatch);
  Result<JobDescription> job = JobDescription::FromSbatch(*sbatch, {});
  ASSERT_TRUE(job) << job.error().message;
  job_desc_msg_t unset;
  slurm_init_job_desc_msg(&unset);
  const job_desc_msg_t& d = *job->get();
  EXPECT_EQ(d.requeue, 0);
  EXPECT_EQ(d.min_nodes, 1u);
  EXPECT_EQ(d.num_tasks, 1u);
  EXPECT_EQ(d.ntasks_per_node, unset.ntasks_per_node);
  EXPECT_EQ(d.pn_min_memory, unset.pn_min_memory);
  EXPECT_EQ(d.tres_per_node, nullptr);
  EXPECT_EQ(d.time_limit, unset.time_limit);
  EXPECT_EQ(d.warn_signal, unset.warn_signal);
  EXPECT_EQ(d.partition, nullptr);
  EXPECT_EQ(d.qos, nullptr);
  EXPECT_EQ(d.account, nullptr);
}

TEST(JobDescription, AnArrayGetsItsIndexRangeAndItsOwnNameOutputAndDirectory) {
  Result<slurm::Sbatch> one = slurm::RenderSbatch(Gang(), {"/runs/7", "", ""});
  ASSERT_TRUE(one);
  const slurm::Sbatch array = slurm::RenderArray("drover-array-7-2", "/runs/arrays", *one, 2);
  Result<JobDescription> job = JobDescription::FromSbatch(array, {});
  ASSERT_TRUE(job) << job.error().message;
  const job_desc_msg_t& d = *job->get();
  EXPECT_STREQ(d.array_inx, "0-1");
  EXPECT_STREQ(d.name, "drover-array-7-2");
  EXPECT_STREQ(d.std_out, "/runs/arrays/drover-array-7-2.out");
  EXPECT_STREQ(d.work_dir, "/runs/arrays");
  EXPECT_STREQ(d.tres_per_node, "gres:gpu:h100:2");
}

TEST(JobDescription, AJobForAnotherAccountIsThatAccountsAndSoIsItsArray) {
  // What the executor renders when it runs as root and the job's account is another.
  slurm::SbatchOptions options{"/runs/7", "", "", os::UnixAccount{"alice", 1234, 5678, "/home/a"}};
  Result<slurm::Sbatch> one = slurm::RenderSbatch(Gang(), options);
  ASSERT_TRUE(one) << one.error().message;
  for (const slurm::Sbatch& sbatch :
       {*one, slurm::RenderArray("drover-array-7-2", "/runs/arrays", *one, 2)}) {
    Result<JobDescription> job = JobDescription::FromSbatch(sbatch, {});
    ASSERT_TRUE(job) << job.error().message;
    EXPECT_EQ(job->get()->user_id, 1234u);
    EXPECT_EQ(job->get()->group_id, 5678u);
  }
}

TEST(JobDescription, AnOptionItDoesNotMapIsRefusedByName) {
  for (const char* arg : {"--exclusive", "--mem=3G", "--signal=USR1@10", "-N2"}) {
    slurm::Sbatch sbatch{{"--job-name=x", arg}, "#!/bin/sh\ntrue\n"};
    Result<JobDescription> job = JobDescription::FromSbatch(sbatch, {});
    ASSERT_FALSE(job) << arg;
    EXPECT_EQ(job.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(job.error().message, HasSubstr(std::string("'") + arg + "'"));
  }
}

TEST(JobDescription, ANumberThatDoesNotParseIsRefusedNamingTheOption) {
  for (const char* arg :
       {"--nodes=two", "--ntasks=", "--cpus-per-task=70000", "--time=-1", "--uid=alice"}) {
    slurm::Sbatch sbatch{{arg}, "#!/bin/sh\ntrue\n"};
    Result<JobDescription> job = JobDescription::FromSbatch(sbatch, {});
    ASSERT_FALSE(job) << arg;
    EXPECT_THAT(job.error().message, HasSubstr(arg));
  }
}

TEST(JobDescription, WhatSbatchRefusesInAScriptIsRefused) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "empty"},
      {" \n\t", "empty"},
      {"echo hi\n", "#!"},
      {std::string("#!/bin/sh\n\0true\n", 15), "NUL"},
      {"#!/bin/sh\r\ntrue\r\n", "DOS"},
  };
  for (const auto& [script, says] : cases) {
    Result<JobDescription> job = JobDescription::FromSbatch({{}, script}, {});
    ASSERT_FALSE(job) << says;
    EXPECT_THAT(job.error().message, HasSubstr(says));
  }
}

TEST(JobDescription, SbatchsOwnVariablesReplaceInheritedOnes) {
  Result<JobDescription> job = JobDescription::FromSbatch({{"--job-name=new"}, "#!/bin/sh\ntrue\n"},
                                                          {"SLURM_JOB_NAME=old", "KEEP=1"});
  ASSERT_TRUE(job);
  const std::vector<std::string> environment = Environment(*job);
  EXPECT_THAT(environment, Contains("SLURM_JOB_NAME=new"));
  EXPECT_THAT(environment, ::testing::Not(Contains("SLURM_JOB_NAME=old")));
  EXPECT_THAT(environment, Contains("KEEP=1"));
}

}  // namespace
}  // namespace drover::exec::libslurm
