#include "drover/exec/slurm/state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drover/exec/slurm/sbatch.h"

namespace drover::exec::slurm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TimeMs FakeTime(std::string_view text) { return text == "Unknown" ? 0 : 1000; }

TEST(HostListTest, ExpandsRangesListsAndPadding) {
  EXPECT_THAT(ExpandHostList("n[1-3,7],gpu-a"), ElementsAre("n1", "n2", "n3", "n7", "gpu-a"));
  EXPECT_THAT(ExpandHostList("node[08-10]"), ElementsAre("node08", "node09", "node10"));
  EXPECT_THAT(ExpandHostList("a1"), ElementsAre("a1"));
  EXPECT_TRUE(ExpandHostList("").empty());
}

TEST(JobLineTest, ReadsScontrolOneLineOutput) {
  auto job = ParseJobLine(
      "JobId=12 JobName=drover-4-1 UserId=root(0) JobState=FAILED Reason=NonZeroExitCode "
      "Restarts=0 ExitCode=3:0 SubmitTime=2026-11-30T12:46:09 EligibleTime=2026-11-30T12:46:09 "
      "StartTime=2026-11-30T12:46:10 EndTime=Unknown NodeList=n[1-2] BatchHost=n1",
      &FakeTime);
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->id, "12");
  EXPECT_EQ(job->name, "drover-4-1");
  EXPECT_EQ(job->state, "FAILED");
  EXPECT_EQ(job->exit_code, 3);
  EXPECT_EQ(job->start_time, 1000);
  EXPECT_EQ(job->end_time, 0);
  EXPECT_THAT(job->nodes, ElementsAre("n1", "n2"));
  EXPECT_FALSE(ParseJobLine("No jobs in the system", &FakeTime).has_value());
}

TEST(JobLineTest, LocalTimesReadInTheProcessZone) {
  EXPECT_EQ(ParseLocalTime("garbage"), 0);
  // One second apart whatever the zone.
  EXPECT_EQ(ParseLocalTime("2026-11-30T12:46:10") - ParseLocalTime("2026-11-30T12:46:09"), 1000);
}

TEST(ExitTest, SlurmEndStatesMapToDroversTerms) {
  SlurmJob job;
  job.state = "COMPLETED";
  EXPECT_TRUE(ExitOf(job, false).Succeeded());
  EXPECT_TRUE(ExitOf(job, /*timeout_marker=*/true).timed_out);
  job.state = "FAILED";
  job.exit_code = 3;
  EXPECT_EQ(ExitOf(job, false).Describe(), "exit 3");
  job.exit_code = 0;
  EXPECT_FALSE(ExitOf(job, false).Succeeded());  // FAILED never reads as success
  job.state = "TIMEOUT";
  EXPECT_TRUE(ExitOf(job, false).timed_out);
  job.state = "CANCELLED";
  EXPECT_TRUE(ExitOf(job, false).cancelled);
  job.state = "PREEMPTED";
  EXPECT_TRUE(ExitOf(job, false).preempted);
  job.state = "NODE_FAIL";
  job.nodes = {"n3"};
  EXPECT_TRUE(ExitOf(job, false).node_lost);
  EXPECT_THAT(ExitOf(job, false).message, HasSubstr("n3"));
  EXPECT_TRUE(IsFinalState("OUT_OF_MEMORY"));
  EXPECT_FALSE(IsFinalState("PENDING"));
  EXPECT_FALSE(IsFinalState("RUNNING"));
}

TEST(ReasonTest, KnownCodesAreExplained) {
  EXPECT_THAT(DescribeReason("Resources"), HasSubstr("Resources: "));
  EXPECT_EQ(DescribeReason("SomethingNew"), "SomethingNew");
}

model::ExternalLaunch Launch() {
  model::ExternalLaunch launch;
  launch.ref = {JobId(7), 2, model::ExecutorKind::kSlurm, "drover-7-2", ""};
  launch.executor.kind = model::ExecutorKind::kSlurm;
  launch.executor.slurm = {"gpu", "normal", "ml"};
  launch.spec.command = {"python3", "train.py", "--name", "it's"};
  launch.spec.requirements.per_worker = {2500, 3LL << 30, 2};
  launch.spec.requirements.gpu_models = {"H100"};
  launch.spec.workers = 3;
  launch.spec.timeout = 90'000;
  launch.env = {{"DROVER_JOB_ID", "7"}, {"LR", "a b"}};
  launch.make_dirs = {"/ckpt/7"};
  launch.kill_grace_ms = 10'000;
  return launch;
}

TEST(SbatchTest, GangMapsToOneTaskPerNodeWithTheQueuesPlacement) {
  auto sbatch = RenderSbatch(Launch(), {"/runs/7/2", "http://127.0.0.1:8420"});
  ASSERT_TRUE(sbatch.has_value()) << sbatch.error().ToString();
  EXPECT_THAT(
      sbatch->args,
      ::testing::IsSupersetOf(
          {"--job-name=drover-7-2", "--no-requeue", "--partition=gpu", "--qos=normal",
           "--account=ml", "--nodes=3", "--ntasks=3", "--ntasks-per-node=1", "--cpus-per-task=3",
           "--mem=3072M", "--gres=gpu:h100:2", "--time=3", "--output=/runs/7/2/slurm-%j.out"}));
  const std::string& script = sbatch->script;
  EXPECT_THAT(script, HasSubstr("export LR='a b'\n"));
  EXPECT_THAT(script, HasSubstr("export DROVER_SERVER='http://127.0.0.1:8420'\n"));
  EXPECT_THAT(script, HasSubstr("mkdir -p '/ckpt/7'"));
  EXPECT_THAT(script, HasSubstr("'python3' 'train.py' '--name' 'it'\\''s'"));
  EXPECT_THAT(script, HasSubstr("DROVER_WORKER_RANK=$SLURM_PROCID"));
  EXPECT_THAT(script, HasSubstr("sleep 90.000 && touch '/runs/7/2/timed-out'"));
}

TEST(SbatchTest, SameNodeAsksForOneNodeWithAllGpus) {
  model::ExternalLaunch launch = Launch();
  launch.spec.requirements.same_node = true;
  launch.spec.requirements.gpu_models.clear();
  launch.spec.timeout.reset();
  auto sbatch = RenderSbatch(launch, {"/runs/7/2", ""});
  ASSERT_TRUE(sbatch.has_value());
  EXPECT_THAT(sbatch->args,
              ::testing::IsSupersetOf({"--nodes=1", "--ntasks=3", "--gres=gpu:6", "--mem=9216M"}));
  for (const std::string& arg : sbatch->args) EXPECT_THAT(arg, ::testing::Not(HasSubstr("--time")));
  EXPECT_THAT(sbatch->script, ::testing::Not(HasSubstr("DROVER_SERVER")));
}

TEST(SbatchTest, WhatSlurmCannotExpressIsRefusedNamingTheField) {
  model::ExternalLaunch share = Launch();
  share.spec.requirements.gpu_share_millis = 250;
  auto refused = RenderSbatch(share, {});
  ASSERT_FALSE(refused.has_value());
  EXPECT_THAT(refused.error().message, HasSubstr("requirements.gpu_share"));
  model::ExternalLaunch models = Launch();
  models.spec.requirements.gpu_models = {"H100", "A100"};
  EXPECT_THAT(RenderSbatch(models, {}).error().message, HasSubstr("requirements.gpu_model"));
}

}  // namespace
}  // namespace drover::exec::slurm
