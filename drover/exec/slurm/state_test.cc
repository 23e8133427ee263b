#include "drover/exec/slurm/state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "drover/exec/slurm/sbatch.h"
#include "drover/testing/shell.h"
#include "drover/testing/temp_dir.h"

namespace drover::exec::slurm {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

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

// A job array's pending tasks are one record ("ArrayTaskId=3-5,9%2"), a started task one of its
// own: each stands for its tasks' "ARRAYID_TASK" ids, a plain job for its JobId.
TEST(JobLineTest, AnArraysRecordStandsForEachOfItsTasks) {
  auto pending = ParseJobLine(
      "JobId=40 ArrayJobId=40 ArrayTaskId=3-5,9,10-14:2%2 JobName=drover-array-6-1 "
      "JobState=PENDING Reason=Resources",
      &FakeTime);
  ASSERT_TRUE(pending.has_value());
  EXPECT_EQ(pending->array_job_id, "40");
  EXPECT_THAT(RecordIds(*pending),
              ElementsAre("40_3", "40_4", "40_5", "40_9", "40_10", "40_12", "40_14"));
  auto started = ParseJobLine("JobId=43 ArrayJobId=40 ArrayTaskId=0 JobState=RUNNING", &FakeTime);
  ASSERT_TRUE(started.has_value());
  EXPECT_EQ(started->id, "43");
  EXPECT_THAT(RecordIds(*started), ElementsAre("40_0"));
  auto plain = ParseJobLine("JobId=12 JobName=drover-4-1 JobState=RUNNING", &FakeTime);
  ASSERT_TRUE(plain.has_value());
  EXPECT_THAT(RecordIds(*plain), ElementsAre("12"));
}

TEST(JobLineTest, AListingFindsEachRecordByEveryIdItStandsFor) {
  const JobListing listing = ParseListing(
      "JobId=40 ArrayJobId=40 ArrayTaskId=3-4 JobName=drover-array-6-1 JobState=PENDING\n"
      "No jobs in the system\n"
      "JobId=12 JobName=drover-4-1 JobState=RUNNING",
      &FakeTime);
  ASSERT_EQ(listing.records.size(), 2u);
  ASSERT_NE(listing.Find("40_4"), nullptr);
  EXPECT_EQ(listing.Find("40_3"), listing.Find("40_4")) << "one record for both tasks";
  EXPECT_EQ(listing.Find("40_4")->state, "PENDING");
  ASSERT_NE(listing.Find("12"), nullptr);
  EXPECT_EQ(listing.Find("12")->name, "drover-4-1");
  EXPECT_EQ(listing.Find("40"), nullptr);
  EXPECT_EQ(listing.Find("40_5"), nullptr);
}

// The listing's lines carry about fifty keys: of those read, a key given twice keeps its first
// value; tokens without '=' and the other keys are passed over.
TEST(JobLineTest, AKeyGivenTwiceKeepsItsFirstValue) {
  auto job = ParseJobLine(
      "JobId=7 Command=/bin/x with spaces JobState=RUNNING JobState=COMPLETED ReqNodeList=n9 "
      "NodeList=n1",
      &FakeTime);
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->state, "RUNNING");
  EXPECT_THAT(job->nodes, ElementsAre("n1"));
}

TEST(JobLineTest, AMemoReadsEachTimeAsParseLocalTimeDoes) {
  LocalTimeMemo memo;
  for (std::string_view text : {"2026-11-30T12:46:09", "Unknown", "2026-11-30T12:46:09",
                                "2026-07-01T03:00:00", "N/A", "", "2026-13-01T00:00:00"}) {
    EXPECT_EQ(memo(text), ParseLocalTime(text)) << text;
  }
  EXPECT_NE(memo("2026-11-30T12:46:09"), 0);
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

TEST(RunEndsTest, OneLinePerRunOfTheJobOldestFirst) {
  const std::string sacct =
      "8|drover-3-1|PREEMPTED|0:0|2026-11-30T15:20:11|2026-11-30T15:20:13|n[1-2]\n"
      "9|other|COMPLETED|0:0|Unknown|Unknown|n1\n"
      "8|drover-1-1|COMPLETED|0:0|Unknown|Unknown|n1\n"  // an earlier cluster's job 8
      "8|drover-3-1|NODE_FAIL|0:9|2026-11-30T15:20:23|2026-11-30T15:20:32|n2\n"
      "8|drover-3-1|CANCELLED by 0|0:15|Unknown|Unknown|None assigned\n"
      "8|short|line\n";
  std::vector<SlurmJob> runs = ParseRunEnds(sacct, "8", "drover-3-1", &FakeTime);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].state, "PREEMPTED");
  EXPECT_THAT(runs[0].nodes, ElementsAre("n1", "n2"));
  EXPECT_EQ(runs[0].end_time, 1000);
  EXPECT_EQ(runs[1].state, "NODE_FAIL");
  EXPECT_EQ(runs[1].exit_signal, 9);
  EXPECT_EQ(runs[2].state, "CANCELLED");
  EXPECT_EQ(runs[2].start_time, 0);
}

TEST(RunEndsTest, ARequeuedRunEndsPreemptedOrNodeLost) {
  SlurmJob run;
  run.state = "NODE_FAIL";
  run.nodes = {"n2"};
  model::ExitStatus lost = RequeuedExit(&run, "8");
  EXPECT_TRUE(lost.node_lost);
  EXPECT_FALSE(lost.preempted);
  EXPECT_THAT(lost.message, HasSubstr("NODE_FAIL on n2"));
  EXPECT_THAT(lost.message, HasSubstr("requeued job 8"));
  run.state = "PREEMPTED";
  EXPECT_TRUE(RequeuedExit(&run, "8").preempted);
  EXPECT_EQ(RequeuedExit(&run, "8").Describe(),
            "preempted (Slurm requeued job 8 after preempting it)");
  run.state = "PENDING";  // scontrol requeue
  EXPECT_THAT(RequeuedExit(&run, "8").message, HasSubstr("scontrol requeue"));
  model::ExitStatus unknown = RequeuedExit(nullptr, "8");
  EXPECT_TRUE(unknown.preempted);
  EXPECT_THAT(unknown.message, HasSubstr("no jobcomp record"));
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
  auto sbatch =
      RenderSbatch(Launch(), {"/runs/7", "http://127.0.0.1:8420", "/opt/drover/bin/drover"});
  ASSERT_TRUE(sbatch.has_value()) << sbatch.error().ToString();
  EXPECT_THAT(sbatch->args,
              ::testing::IsSupersetOf({"--job-name=drover-7-2", "--no-requeue", "--partition=gpu",
                                       "--qos=normal", "--account=ml", "--nodes=3", "--ntasks=3",
                                       "--ntasks-per-node=1", "--cpus-per-task=3", "--mem=3072M",
                                       "--gres=gpu:h100:2", "--time=3",
                                       "--output=/runs/7/2/slurm-%j.out", "--open-mode=append"}));
  const std::string& script = sbatch->script;
  EXPECT_THAT(script, HasSubstr("export LR='a b'\n"));
  EXPECT_THAT(script, HasSubstr("export DROVER_SERVER='http://127.0.0.1:8420'\n"));
  EXPECT_THAT(script, HasSubstr("export DROVER_BIN='/opt/drover/bin/drover'\n"));
  EXPECT_THAT(script, HasSubstr("export PATH='/opt/drover/bin':\"$PATH\"\n"));
  EXPECT_THAT(script, HasSubstr("mkdir -p '/ckpt/7'"));
  EXPECT_THAT(script, HasSubstr("'python3' 'train.py' '--name' 'it'\\''s'"));
  EXPECT_THAT(script, HasSubstr("DROVER_WORKER_RANK=$SLURM_PROCID"));
  EXPECT_THAT(script, HasSubstr("timeout_marker='/runs/7/2/timed-out'\n"));
  EXPECT_THAT(script, HasSubstr("sleep 90.000 & sleeper=$!; wait $sleeper || exit 0\n"
                                "  touch \"$timeout_marker\""));
}

TEST(SbatchTest, RequeueOnlyWhenDroverWouldRetry) {
  model::ExternalLaunch launch = Launch();
  launch.requeue = true;
  EXPECT_THAT(RenderSbatch(launch, {"/runs/7", "", ""})->args, Contains("--requeue"));
  launch.requeue = false;
  EXPECT_THAT(RenderSbatch(launch, {"/runs/7", "", ""})->args, Contains("--no-requeue"));
}

TEST(SbatchTest, SameNodeAsksForOneNodeWithAllGpus) {
  model::ExternalLaunch launch = Launch();
  launch.spec.requirements.same_node = true;
  launch.spec.requirements.gpu_models.clear();
  launch.spec.timeout.reset();
  auto sbatch = RenderSbatch(launch, {"/runs/7", "", ""});
  ASSERT_TRUE(sbatch.has_value());
  EXPECT_THAT(sbatch->args,
              ::testing::IsSupersetOf({"--nodes=1", "--ntasks=3", "--gres=gpu:6", "--mem=9216M"}));
  for (const std::string& arg : sbatch->args) EXPECT_THAT(arg, ::testing::Not(HasSubstr("--time")));
  EXPECT_THAT(sbatch->script, ::testing::Not(HasSubstr("DROVER_SERVER")));
  EXPECT_THAT(sbatch->script, ::testing::Not(HasSubstr("DROVER_BIN")));
}

// A job whose env sets PATH or DROVER_BIN keeps its own, as on Drover's own nodes.
TEST(SbatchTest, TheJobsOwnPathAndDroverBinWin) {
  model::ExternalLaunch launch = Launch();
  launch.env["PATH"] = "/usr/bin";
  launch.env["DROVER_BIN"] = "/mine/drover";
  auto sbatch = RenderSbatch(launch, {"/runs/7", "", "/opt/drover/bin/drover"});
  ASSERT_TRUE(sbatch.has_value());
  EXPECT_THAT(sbatch->script, HasSubstr("export PATH='/usr/bin'\n"));
  EXPECT_THAT(sbatch->script, HasSubstr("export DROVER_BIN='/mine/drover'\n"));
  EXPECT_THAT(sbatch->script, ::testing::Not(HasSubstr("/opt/drover")));
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

// Attempts of one shape share every sbatch argument but name, output and directory; their array
// takes those from the first and its own name, output and tasks.
TEST(SbatchTest, LikeAttemptsGoAsTheTasksOfOneArray) {
  model::ExternalLaunch other = Launch();
  other.ref = {JobId(8), 1, model::ExecutorKind::kSlurm, "drover-8-1", ""};
  other.env = {{"DROVER_JOB_ID", "8"}};
  auto first = RenderSbatch(Launch(), {"/runs/7", "", ""});
  auto second = RenderSbatch(other, {"/runs/8", "", ""});
  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_EQ(ArrayShape(*first), ArrayShape(*second));
  model::ExternalLaunch bigger = Launch();
  bigger.spec.requirements.per_worker.gpus = 4;
  EXPECT_NE(ArrayShape(*first), ArrayShape(*RenderSbatch(bigger, {"/runs/7", "", ""})));

  const Sbatch array = RenderArray("drover-array-7-2", "/runs/arrays", *first, 2);
  EXPECT_THAT(array.args, ::testing::IsSupersetOf({"--job-name=drover-array-7-2", "--array=0-1",
                                                   "--output=/runs/arrays/drover-array-7-2.out",
                                                   "--chdir=/runs/arrays", "--partition=gpu",
                                                   "--gres=gpu:h100:2", "--no-requeue"}));
  EXPECT_THAT(array.args, Not(Contains(HasSubstr("drover-7-2"))));
  EXPECT_THAT(array.script,
              HasSubstr("dir='/runs/arrays/drover-array-7-2.tasks'/$SLURM_ARRAY_TASK_ID\n"));
  EXPECT_THAT(array.script, Not(HasSubstr("/runs/7/2"))) << "no row per task in the script";
  // A task's script enters the directory a lone job's --chdir names.
  EXPECT_THAT(RenderArrayTask("/runs/7/2", *first),
              ::testing::StartsWith("#!/bin/bash\ncd '/runs/7/2' || exit 1\n"));
  model::ExternalLaunch elsewhere = Launch();
  elsewhere.spec.working_dir = "/data/it's here";
  EXPECT_THAT(RenderArrayTask("/runs/7/2", *RenderSbatch(elsewhere, {"/runs/7", "", ""})),
              ::testing::StartsWith("#!/bin/bash\ncd '/data/it'\\''s here' || exit 1\n"));
}

// An executor that runs as root submits a job as its account (docs/security.md): Slurm runs it
// under the account's uid and gid, and its script sets the account's HOME, USER and LOGNAME
// before the job's env (which may set them too); like attempts of two accounts never share an
// array, which Slurm runs as one user.
TEST(SbatchTest, AJobForAnotherAccountGoesAsItsUidWithItsHome) {
  const os::UnixAccount alice{"alice", 1234, 5678, "/home/alice"};
  auto own = RenderSbatch(Launch(), {"/runs/7", "", ""});
  auto as_alice = RenderSbatch(Launch(), {"/runs/7", "", "", alice});
  auto as_bob =
      RenderSbatch(Launch(), {"/runs/7", "", "", os::UnixAccount{"bob", 1235, 5678, "/"}});
  ASSERT_TRUE(own && as_alice && as_bob);
  EXPECT_THAT(as_alice->args, ::testing::IsSupersetOf({"--uid=1234", "--gid=5678"}));
  const std::string& script = as_alice->script;
  const std::size_t account =
      script.find("export HOME='/home/alice' USER='alice' LOGNAME='alice'\n");
  ASSERT_NE(account, std::string::npos) << script;
  EXPECT_LT(account, script.find("export LR='a b'\n")) << "the job's env comes after";
  EXPECT_THAT(own->args, Not(Contains(HasSubstr("--uid"))));
  EXPECT_THAT(own->args, Not(Contains(HasSubstr("--gid"))));
  EXPECT_THAT(own->script, Not(HasSubstr("export HOME")));
  EXPECT_NE(ArrayShape(*as_alice), ArrayShape(*own));
  EXPECT_NE(ArrayShape(*as_alice), ArrayShape(*as_bob));
  EXPECT_THAT(RenderArray("drover-array-7-2", "/runs/arrays", *as_alice, 2).args,
              ::testing::IsSupersetOf({"--uid=1234", "--gid=5678"}));
}

// Of the server's environment a Slurm job gets what the local runtime gives its workers and
// Slurm's own variables; a password or token in it, or an SBATCH_* option, does not pass.
TEST(SbatchTest, AJobTakesOnlyItsPartOfTheServersEnvironment) {
  EXPECT_THAT(JobEnvironment({"PGPASSWORD=secret", "PATH=/usr/bin:/bin", "DROVER_JOIN_TOKEN=t",
                              "LANG=C.UTF-8", "SBATCH_PARTITION=other", "HOME=/var/lib/drover",
                              "SLURM_CONF=/etc/slurm/slurm.conf", "PATHS=x", "SLURM=y",
                              "LD_PRELOAD=/tmp/x.so"}),
              ElementsAre("PATH=/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/var/lib/drover",
                          "SLURM_CONF=/etc/slurm/slurm.conf"));
  EXPECT_THAT(JobEnvironment({}), ::testing::IsEmpty());
}

// A marker's first word names files under the arrays' directory only when it is an array's name.
TEST(SbatchTest, OnlyAnArraysOwnNameIsTakenFromAMarker) {
  EXPECT_EQ(ArrayName(JobId(7), 2), "drover-array-7-2");
  EXPECT_TRUE(IsArrayName(ArrayName(JobId(123456), 10)));
  for (const char* name : {"", "drover-array-", "drover-array-7", "drover-array-7-",
                           "drover-array--2", "drover-array-7-2/..", "drover-array-7-2-3",
                           "drover-array-a-1", "../../etc/drover-array-7-2", "drover-7-2"}) {
    EXPECT_FALSE(IsArrayName(name)) << name;
  }
}

// The batch script run as Slurm runs it (by its "#!" line), with an srun that runs the worker
// here as task 0 and logs each call to srun.log.
class BatchScriptTest : public ::testing::Test {
 protected:
  // Writes an executable script.
  static void WriteScript(const std::string& path, const std::string& content) {
    std::ofstream(path) << content;
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  }

  void SetUp() override {
    std::filesystem::create_directories(dir_ + "/bin");
    std::ofstream(dir_ + "/bin/srun") << "#!/bin/bash\necho srun >> " << dir_
                                      << "/srun.log\nwhile [[ $1 == --* ]]; do shift; done\n"
                                         "SLURM_PROCID=0 exec \"$@\"\n";
    std::filesystem::permissions(dir_ + "/bin/srun", std::filesystem::perms::owner_all);
  }

  model::ExternalLaunch LaunchOf(int attempt) const {
    model::ExternalLaunch launch;
    launch.ref = {JobId(7), attempt, model::ExecutorKind::kSlurm,
                  model::ExternalName(JobId(7), attempt), ""};
    launch.spec.command = {"sh", "-c", "echo attempt=$DROVER_ATTEMPT rank=$DROVER_WORKER_RANK"};
    launch.env = {{"DROVER_ATTEMPT", std::to_string(attempt)}};
    launch.make_dirs = {dir_ + "/staging/" + std::to_string(attempt)};
    return launch;
  }

  // Runs the script of attempt 2's submission (or of `launch`) as Slurm's run `restart`: its
  // output, and the exit code in *code.
  std::string Run(int restart, int* code, std::optional<model::ExternalLaunch> launch = {},
                  std::optional<os::UnixAccount> account = {}) {
    Result<Sbatch> sbatch =
        RenderSbatch(launch ? *launch : LaunchOf(2), {dir_ + "/job", "", "", std::move(account)});
    EXPECT_TRUE(sbatch.has_value());
    WriteScript(dir_ + "/batch.sh", sbatch->script);
    const std::string command = "cd " + dir_ + " && PATH=" + dir_ + "/bin:$PATH" +
                                " SLURM_RESTART_COUNT=" + std::to_string(restart) +
                                " ./batch.sh 2>&1";
    return testing::Shell(command, code);
  }

  testing::TempDir temp_{"drover-batch"};
  const std::string dir_ = temp_.path();  // bin/srun, the script, its staging directories
};

// The account's HOME, USER and LOGNAME replace the submitting side's; the job's env has the last
// word.
TEST_F(BatchScriptTest, AJobForAnotherAccountRunsWithItsHomeUnlessItsEnvSaysOtherwise) {
  model::ExternalLaunch launch = LaunchOf(2);
  launch.spec.command = {"sh", "-c", "echo home=$HOME user=$USER logname=$LOGNAME"};
  const os::UnixAccount alice{"alice", getuid(), getgid(), "/home/alice"};
  int code = -1;
  EXPECT_THAT(Run(0, &code, launch, alice), HasSubstr("home=/home/alice user=alice logname=alice"));
  EXPECT_EQ(code, 0);
  launch.env["HOME"] = "/scratch/alice";
  EXPECT_THAT(Run(0, &code, launch, alice),
              HasSubstr("home=/scratch/alice user=alice logname=alice"));
  EXPECT_EQ(code, 0);
}

TEST_F(BatchScriptTest, ALoneWorkerRunsWithoutAJobStepAndSeveralWithSrun) {
  int code = -1;
  EXPECT_THAT(Run(0, &code), HasSubstr("attempt=2 rank=0"));
  EXPECT_EQ(code, 0);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/srun.log"));
  model::ExternalLaunch gang = LaunchOf(2);
  gang.spec.workers = 2;
  EXPECT_THAT(Run(0, &code, gang), HasSubstr("attempt=2 rank=0"));
  EXPECT_EQ(code, 0);
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/srun.log"));
}

// Without a timeout to keep, a lone worker replaces the batch shell (one process fewer per job):
// its PID is the shell's, and its exit status is the script's.
TEST_F(BatchScriptTest, ALoneWorkerWithoutATimeoutReplacesTheBatchShell) {
  model::ExternalLaunch launch = LaunchOf(2);
  launch.spec.command = {"sh", "-c", "echo worker=$$; exit 3"};
  Result<Sbatch> sbatch = RenderSbatch(launch, {dir_ + "/job", "", ""});
  ASSERT_TRUE(sbatch.has_value());
  WriteScript(dir_ + "/batch.sh", sbatch->script);
  int code = -1;
  const std::string output = testing::Shell(
      "cd " + dir_ + " && { ./batch.sh & echo shell=$!; wait $!; echo status=$?; }", &code);
  const std::size_t shell = output.find("shell=");
  const std::size_t worker = output.find("worker=");
  ASSERT_NE(shell, std::string::npos) << output;
  ASSERT_NE(worker, std::string::npos) << output;
  EXPECT_EQ(std::stol(output.substr(shell + 6)), std::stol(output.substr(worker + 7))) << output;
  EXPECT_THAT(output, HasSubstr("status=3"));
  // With a timeout the shell stays to enforce it, the worker its child.
  launch.spec.timeout = 60'000;
  sbatch = RenderSbatch(launch, {dir_ + "/job", "", ""});
  ASSERT_TRUE(sbatch.has_value());
  EXPECT_THAT(sbatch->script, HasSubstr("wait $step"));
  EXPECT_THAT(sbatch->script, Not(HasSubstr("exec 'sh'")));
}

// The timeout stops the lone worker's whole process group: a child it started is not left
// running after the batch script ends (as srun's signal reaches every process of a step).
TEST_F(BatchScriptTest, TheTimeoutStopsEveryProcessOfALoneWorker) {
  model::ExternalLaunch launch = LaunchOf(2);
  launch.spec.timeout = 2000;  // the worker has started its child and written its pid by then
  launch.kill_grace_ms = 1000;
  launch.spec.command = {"sh", "-c", "sleep 300 & echo $! > " + dir_ + "/child.pid; wait"};
  std::filesystem::create_directories(AttemptDir(dir_ + "/job", 2));  // the executor's part
  int code = -1;
  Run(0, &code, launch);
  EXPECT_NE(code, 0);
  EXPECT_TRUE(std::filesystem::exists(TimeoutMarker(AttemptDir(dir_ + "/job", 2))));
  std::ifstream pid_file(dir_ + "/child.pid");
  pid_t child = 0;
  ASSERT_TRUE(pid_file >> child);
  // Signalled as the script stopped its worker, it dies a moment later (a zombie until init
  // reaps it counts as gone).
  const auto dead = [](pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string pid_field, comm, state;
    return !(stat >> pid_field >> comm >> state) || state == "Z";
  };
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = dead(child);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone) << "the worker's child " << child << " outlived the batch script";
  if (!gone) kill(child, SIGKILL);
}

// A job that ends before its timeout leaves nothing of the watchdog running: before, its
// `sleep` outlived the script until the timeout, a process per job outside the job for a Slurm
// that tracks processes by parentage (proctrack/linuxproc, this project's test cluster).
TEST_F(BatchScriptTest, AJobThatEndsBeforeItsTimeoutLeavesNoWatchdogBehind) {
  model::ExternalLaunch launch = LaunchOf(2);
  launch.spec.timeout = 3'599'125;  // the watchdog's `sleep 3599.125`: this test's own
  std::filesystem::create_directories(AttemptDir(dir_ + "/job", 2));
  const Result<Sbatch> sbatch = RenderSbatch(launch, {dir_ + "/job", "", ""});
  ASSERT_TRUE(sbatch.has_value());
  WriteScript(dir_ + "/batch.sh", sbatch->script);
  int code = -1;
  // Into a file: a leftover sleep would hold a pipe open for an hour.
  const std::string output = testing::Shell(
      "cd " + dir_ + " && ./batch.sh >out 2>&1; status=$?; cat out; exit $status", &code);
  EXPECT_EQ(code, 0) << output;
  EXPECT_THAT(output, HasSubstr("attempt=2 rank=0"));
  // The script returns once its watchdog is gone: no sleep of this test's is left.
  std::vector<pid_t> left;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream cmdline(entry.path() / "cmdline");
    std::string text((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    if (text == std::string("sleep\0003599.125\0", 15)) {
      left.push_back(std::stoi(entry.path().filename().string()));
    }
  }
  for (pid_t pid : left) kill(pid, SIGKILL);
  EXPECT_TRUE(left.empty()) << left.size() << " watchdog sleep(s) outlived the batch script";
}

// A lone worker without a timeout is exec'd by POSIX sh (it starts faster than bash); job
// control (a timeout) and srun's wrapper (several workers) need bash; an array's script, which
// sources its tasks', runs under theirs, and only tasks of one interpreter share an array.
TEST_F(BatchScriptTest, OnlyWhatNeedsBashRunsUnderBash) {
  const SbatchOptions options{dir_ + "/job", "", ""};
  model::ExternalLaunch lone = LaunchOf(2);
  model::ExternalLaunch timed = LaunchOf(2);
  timed.spec.timeout = 60'000;
  model::ExternalLaunch gang = LaunchOf(2);
  gang.spec.workers = 2;
  const Result<Sbatch> lone_sbatch = RenderSbatch(lone, options);
  ASSERT_TRUE(lone_sbatch.has_value());
  EXPECT_THAT(lone_sbatch->script, ::testing::StartsWith("#!/bin/sh\n"));
  EXPECT_THAT(RenderArray("drover-array-7-2", dir_, *lone_sbatch, 2).script,
              ::testing::StartsWith("#!/bin/sh\n"));
  for (const model::ExternalLaunch& launch : {timed, gang}) {
    const Result<Sbatch> sbatch = RenderSbatch(launch, options);
    ASSERT_TRUE(sbatch.has_value());
    EXPECT_THAT(sbatch->script, ::testing::StartsWith("#!/bin/bash\n"));
    EXPECT_THAT(RenderArray("drover-array-7-2", dir_, *sbatch, 2).script,
                ::testing::StartsWith("#!/bin/bash\n"));
  }
  // Shapes that differed only by interpreter would still be kept apart.
  Sbatch under_bash = *lone_sbatch;
  under_bash.script.replace(0, std::string_view("#!/bin/sh").size(), "#!/bin/bash");
  EXPECT_NE(ArrayShape(under_bash), ArrayShape(*lone_sbatch));
}

// DROVER_MASTER_ADDR is the batch host's name as its kernel has it, also where the job's
// environment (inherited from the submitting side, a container's, say) carries another HOSTNAME,
// which bash would take as its own.
TEST_F(BatchScriptTest, TheMasterAddressIsTheBatchHostsOwnName) {
  std::string host;
  ASSERT_TRUE(std::ifstream("/proc/sys/kernel/hostname") >> host);
  model::ExternalLaunch lone = LaunchOf(2);
  lone.spec.command = {"sh", "-c", "echo master=$DROVER_MASTER_ADDR"};
  model::ExternalLaunch timed = lone;
  timed.spec.timeout = 60'000;
  model::ExternalLaunch gang = lone;
  gang.spec.workers = 2;
  for (const model::ExternalLaunch& launch : {lone, timed, gang}) {
    const Result<Sbatch> sbatch = RenderSbatch(launch, {dir_ + "/job", "", ""});
    ASSERT_TRUE(sbatch.has_value());
    WriteScript(dir_ + "/batch.sh", sbatch->script);
    int code = -1;
    const std::string output = testing::Shell(
        "cd " + dir_ + " && PATH=" + dir_ + "/bin:$PATH HOSTNAME=not-this-host ./batch.sh 2>&1",
        &code);
    EXPECT_EQ(code, 0) << output;
    EXPECT_THAT(output, HasSubstr("master=" + host + "\n")) << launch.spec.workers;
    EXPECT_THAT(output, HasSubstr(" on " + host + "\n"));
  }
}

TEST_F(BatchScriptTest, TheFirstRunIsTheSubmittingAttempt) {
  int code = -1;
  EXPECT_THAT(Run(0, &code), HasSubstr("attempt=2 rank=0"));
  EXPECT_EQ(code, 0);
  EXPECT_TRUE(std::filesystem::is_directory(dir_ + "/staging/2"));
}

// Task 1 of an array runs its attempt's own script in the attempt's directory, its output in the
// attempt's slurm-<own job id>.out, and records that id; a task without a link refuses to run.
// (The executor writes the scripts and links so: slurm_executor_test.cc.)
TEST_F(BatchScriptTest, AnArrayTaskRunsTheScriptItsLinkLeadsTo) {
  std::optional<Sbatch> shape;
  const std::string links = ArrayTasksDir(dir_, "drover-array-7-2");
  std::filesystem::create_directories(links);
  for (int attempt : {2, 3}) {
    const SbatchOptions options{dir_ + "/job", "", ""};
    const std::string attempt_dir = AttemptDir(options.job_dir, attempt);
    std::filesystem::create_directories(attempt_dir);
    model::ExternalLaunch launch = LaunchOf(attempt);
    launch.spec.command.back() += "; pwd > pwd";
    Result<Sbatch> sbatch = RenderSbatch(launch, options);
    ASSERT_TRUE(sbatch.has_value());
    WriteScript(TaskScript(attempt_dir), RenderArrayTask(attempt_dir, *sbatch));
    std::filesystem::create_directory_symlink(attempt_dir,
                                              links + "/" + std::to_string(attempt - 2));
    shape = *sbatch;
  }
  WriteScript(dir_ + "/array.sh", RenderArray("drover-array-7-2", dir_, *shape, 2).script);
  const auto run_task = [&](int task, int* code) {
    // Started elsewhere than the attempt's directory, as Slurm starts it in the array's.
    const std::string command = "cd / && SLURM_ARRAY_TASK_ID=" + std::to_string(task) +
                                " SLURM_JOB_ID=77 " + dir_ + "/array.sh 2>&1";
    return testing::Shell(command, code);
  };
  int code = -1;
  EXPECT_EQ(run_task(1, &code), "");  // all of it in the attempt's own output
  EXPECT_EQ(code, 0);
  const std::string attempt_dir = AttemptDir(dir_ + "/job", 3);
  std::ifstream output(attempt_dir + "/slurm-77.out");
  std::stringstream text;
  text << output.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("attempt=3 rank=0"));
  std::ifstream id_file(TaskJobIdFile(attempt_dir));
  std::string id;
  EXPECT_TRUE(id_file >> id);
  EXPECT_EQ(id, "77");
  EXPECT_TRUE(std::filesystem::is_directory(dir_ + "/staging/3"));
  std::ifstream pwd_file(attempt_dir + "/pwd");
  std::string pwd;
  EXPECT_TRUE(pwd_file >> pwd);
  EXPECT_EQ(pwd, attempt_dir) << "the task runs in its attempt's directory";
  EXPECT_THAT(run_task(2, &code), HasSubstr("array task 2 has no attempt"));
  EXPECT_EQ(code, 1);
}

TEST_F(BatchScriptTest, ARequeuedRunIsTheAttemptWhoseContractTheExecutorWrote) {
  const SbatchOptions options{dir_ + "/job", "", ""};
  const std::string attempt_dir = AttemptDir(options.job_dir, 3);
  std::filesystem::create_directories(attempt_dir);
  std::ofstream(ContractFile(attempt_dir)) << RenderContract(LaunchOf(3), options);
  int code = -1;
  EXPECT_THAT(Run(1, &code), HasSubstr("attempt=3 rank=0"));
  EXPECT_EQ(code, 0);
  EXPECT_TRUE(std::filesystem::is_directory(dir_ + "/staging/3"));
  // Run 2 would be attempt 4, which Drover has not continued: it refuses to run.
  const std::string refused = Run(2, &code);
  EXPECT_EQ(code, 1);
  EXPECT_THAT(refused, HasSubstr("Slurm restarted the job before Drover continued it"));
  EXPECT_THAT(refused, ::testing::Not(HasSubstr("attempt=")));
}

}  // namespace
}  // namespace drover::exec::slurm
