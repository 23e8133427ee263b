// Drover on a real Slurm cluster (tests/slurm/slurm-cluster.sh: one slurmctld and four slurmd
// posing as nodes n1..n4 with 4 fake H100s each, partitions debug and high). The suite starts
// the cluster once, runs a real `drover server` whose queue "hpc" has `executor: slurm`, and
// checks the Slurm executor end to end: the environment contract, gangs across nodes, Slurm's
// pending reasons, cancel, timeout, exit codes, Slurm's own preemption and requeue with resume
// (the requeued Slurm job continues as Drover's next attempt), node loss, a server restart, and
// a pipeline whose GPU stage runs on Slurm between two local stages. The server submits through
// drover-slurm-submit (libslurm); one test compares what it submits with what `sbatch` does,
// two what it lists with what `scontrol` does and when it asks slurmctld again. It fails (never
// skips) when Slurm cannot be started.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "drover/exec/slurm/command.h"
#include "drover/exec/slurm/sbatch.h"
#include "drover/exec/slurm/state.h"
#include "drover/exec/slurm/submit_helper.h"
#include "drover/os/helper_process.h"
#include "drover/testing/shell.h"
#include "drover/testing/unix_account.h"
#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using ::testing::HasSubstr;

const std::string kClusterDir = "/tmp/drover-slurm-test";

std::string Script() { return SourceDir() + "/tests/slurm/slurm-cluster.sh"; }

using testing::Shell;

class SlurmCluster : public ::testing::Environment {
 public:
  void SetUp() override {
    setenv("DROVER_SLURM_DIR", kClusterDir.c_str(), 1);
    setenv("SLURM_CONF", (kClusterDir + "/slurm.conf").c_str(), 1);
    int code = 0;
    const std::string out = Shell(Script() + " start 2>&1", &code);
    ASSERT_EQ(code, 0) << "could not start the test Slurm cluster (run as root with slurm-wlm "
                          "and munge installed: make deps):\n"
                       << out;
  }
  void TearDown() override { Shell(Script() + " stop >/dev/null 2>&1"); }
};

const auto* const kCluster = ::testing::AddGlobalTestEnvironment(new SlurmCluster);

// Queue "hpc" on Slurm's partition debug, "local" on this machine.
const char* kPolicy = R"(kind: Policy
queues:
  - name: hpc
    executor: {kind: slurm, partition: debug}
  - name: local
)";

class SlurmTest : public IntegrationTest {
 protected:
  void SetUp() override {
    WriteFile(dir_.Sub("policy.yaml"), kPolicy);
    server_ = StartServer("data", "2xH100-80GB", {"--policy", dir_.Sub("policy.yaml")});
    ASSERT_TRUE(server_->ok());
    client_ = std::make_unique<api::ApiClient>(server_->Client());
  }

  void TearDown() override {
    // Nothing of this test may keep running in Slurm: every job named drover-*, by its id (an
    // array's whole; scancel --name takes one name, not a list).
    Shell(
        "squeue -h -o '%F %j' | awk '$2 ~ /^drover-/ {print $1}' | sort -u | "
        "xargs -r scancel --quiet 2>/dev/null");
    IntegrationTest::TearDown();
  }

  nlohmann::json Job(std::int64_t id) { return GetJob(*client_, id); }
  nlohmann::json Attempt(std::int64_t id, int index) { return Job(id)["attempts"][index]; }

  // Submits `spec`, one job, and waits until it runs: its id.
  std::int64_t SubmitRunning(const std::string& spec) {
    const std::vector<std::int64_t> ids = Submit(*client_, spec);
    EXPECT_EQ(ids.size(), 1u);
    EXPECT_EQ(WaitForState(*client_, ids.at(0), {"running"}), "running") << Job(ids.at(0)).dump(2);
    return ids.at(0);
  }

  // Kills the server (its Slurm jobs run on) and starts another over the same data.
  void RestartServer() {
    server_->process().KillProcessOnly();
    server_ = std::make_unique<ServerProcess>(
        dir_.Sub("data"), dir_.path(),
        std::vector<std::string>{"--gpus", "2xH100-80GB", "--policy", dir_.Sub("policy.yaml")});
    ASSERT_TRUE(server_->ok());
    client_ = std::make_unique<api::ApiClient>(server_->Client());
  }

  // Once Drover continues job `id`'s requeued Slurm job as its second attempt, lifts Slurm's
  // built-in delay (a requeued job is eligible 120 s later) so that the test need not wait.
  // The Slurm job id.
  std::string ContinueAtOnce(std::int64_t id) {
    std::string slurm_id;
    EXPECT_TRUE(WaitUntil(
        [&] {
          const nlohmann::json job = Job(id);
          if (job["attempts"].size() < 2) return false;
          slurm_id = job["attempts"][0]["external_id"];
          return job["attempts"][1]["external_id"] == slurm_id;
        },
        std::chrono::seconds(60)))
        << Job(id).dump(2);
    // Not within the second of the requeue: slurmd revoked the old run's credential with a
    // whole-second time, and a run started in that second dies "Job credential revoked".
    std::this_thread::sleep_for(std::chrono::seconds(2));
    Shell("scontrol update JobId=" + slurm_id + " StartTime=now");
    return slurm_id;
  }

  // Field `key` of `scontrol show job` for `slurm_id` ("Restarts", "Requeue"...).
  static std::string SlurmField(const std::string& slurm_id, const std::string& key) {
    std::string out = Shell("scontrol show job -o " + slurm_id + " 2>/dev/null");
    auto pos = out.find(" " + key + "=");
    if (pos == std::string::npos) return "";
    return Words(out.substr(pos + key.size() + 2)).at(0);
  }

  // Slurm's state of its job `slurm_id`.
  static std::string SlurmState(const std::string& slurm_id) {
    return SlurmField(slurm_id, "JobState");
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<api::ApiClient> client_;
};

// `scontrol show job -o`'s record of `slurm_id` as KEY -> VALUE, without what differs between
// any two jobs (ids, times, nodes, state, output paths with the id in them).
std::map<std::string, std::string> JobRecord(const std::string& slurm_id) {
  static const std::set<std::string> kPerJob = {
      "JobId",         "SubmitTime", "EligibleTime",    "AccrueTime",     "StartTime",
      "EndTime",       "RunTime",    "LastSchedEval",   "NodeList",       "BatchHost",
      "StdOut",        "StdErr",     "JobState",        "Reason",         "Priority",
      "SchedNodeList", "Deadline",   "SuspendTime",     "SecsPreSuspend", "PreemptEligibleTime",
      "PreemptTime",   "ExitCode",   "DerivedExitCode", "Restarts"};
  std::map<std::string, std::string> record;
  for (const std::string& field : Words(Shell("scontrol show job -o " + slurm_id))) {
    const std::size_t equals = field.find('=');
    if (equals == std::string::npos) continue;
    const std::string key = field.substr(0, equals);
    if (!kPerJob.contains(key)) record[key] = field.substr(equals + 1);
  }
  return record;
}

// The line of Slurm job `id` in `listing` (`scontrol show job -o`'s text), or a line saying there
// is none.
std::string LineOfJob(const std::string& listing, const std::string& id) {
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("JobId=" + id + " ")) return line;
  }
  return "(no line for job " + id + ")";
}

// What a batch script saw, without what differs between any two jobs or nodes.
std::vector<std::string> SeenLines(const std::string& file) {
  std::vector<std::string> kept;
  for (const std::string& line : ReadLines(file)) {
    bool per_job = false;
    for (const char* prefix :
         {"SLURM_JOB_ID=", "SLURM_JOBID=", "SLURM_TASK_PID=", "SLURM_JOB_START_TIME=",
          "SLURM_JOB_END_TIME=", "SLURMD_NODENAME=", "HOSTNAME=", "SLURM_TOPOLOGY_ADDR=",
          "SLURM_JOB_NODELIST=", "SLURM_NODELIST=", "SLURM_JOB_GPUS=", "SLURM_STEP_GPUS=",
          "CUDA_VISIBLE_DEVICES=", "GPU_DEVICE_ORDINAL=", "ROCR_VISIBLE_DEVICES=",
          "ZE_AFFINITY_MASK=", "_=", "SHLVL=", "OLDPWD="}) {
      per_job = per_job || line.starts_with(prefix);
    }
    if (!per_job) kept.push_back(line);
  }
  return kept;
}

// What only one of two sorted ranges holds, one "helper: X" or "sbatch: X" line each.
template <typename Range>
std::string Differences(const Range& helper, const Range& sbatch) {
  auto print = [](const auto& item) {
    if constexpr (std::is_same_v<std::decay_t<decltype(item)>, std::string>) {
      return item;
    } else {
      return item.first + "=" + item.second;
    }
  };
  std::string out;
  for (const auto& item : helper) {
    if (std::find(sbatch.begin(), sbatch.end(), item) == sbatch.end()) {
      out += "helper: " + print(item) + "\n";
    }
  }
  for (const auto& item : sbatch) {
    if (std::find(helper.begin(), helper.end(), item) == helper.end()) {
      out += "sbatch: " + print(item) + "\n";
    }
  }
  return out;
}

// The server submits through drover-slurm-submit, which builds the job description in libslurm
// from the arguments `sbatch` would get. For a gang's arguments (two nodes, a GPU each, a time
// limit and signal, requeue, append), the same submission by `sbatch` (as the executor runs it,
// with the jobs' part of its environment) and by the helper gives Slurm records that agree on
// every field but the job's own, and scripts that see the same environment, limits and umask;
// neither job sees what else the submitting process's environment holds. Likewise for a job
// submitted as another account, which both run with that account's uid.
TEST_F(SlurmTest, TheSubmitHelperSubmitsWhatSbatchWould) {
  setenv("DROVER_SERVER_ONLY_PASSWORD", "not-for-jobs", 1);  // the helper inherits it too
  model::ExternalLaunch launch;
  launch.ref = {JobId(1), 1, model::ExecutorKind::kSlurm, "drover-parity-1", ""};
  launch.executor.kind = model::ExecutorKind::kSlurm;
  launch.executor.slurm.partition = "debug";
  launch.spec.command = {"true"};
  launch.spec.requirements.per_worker = {1500, 256LL << 20, 1};
  launch.spec.requirements.gpu_models = {"H100"};
  launch.spec.workers = 2;
  launch.spec.timeout = 60'000;
  launch.requeue = true;
  exec::slurm::SubmitHelper helper(
      (std::filesystem::path(DROVER_BINARY).parent_path() / "drover-slurm-submit").string());
  // As the server's own user, then as another account (as a root server submits a member's
  // job: --uid and --gid), whose folder the job writes in.
  auto account = testing::ScopedUnixAccount::Create("drover-sp");
  ASSERT_TRUE(account) << account.error().ToString();
  ASSERT_EQ(chmod(dir_.path().c_str(), 0755), 0);
  const std::optional<os::UnixAccount> accounts[] = {
      std::nullopt, os::UnixAccount{(*account)->name(), (*account)->uid(), (*account)->gid(),
                                    (*account)->home()}};
  for (const std::optional<os::UnixAccount>& as : accounts) {
    SCOPED_TRACE(as ? "as " + as->name : "as the server's user");
    const std::string job_dir = dir_.Sub(as ? "parity-" + as->name : "parity");
    std::filesystem::create_directories(exec::slurm::AttemptDir(job_dir, 1));
    if (as) {  // as the executor gives them (its attempt's folder, where Slurm writes output)
      for (const std::string& dir : {job_dir, exec::slurm::AttemptDir(job_dir, 1)}) {
        ASSERT_EQ(chown(dir.c_str(), as->uid, as->gid), 0);
      }
    }
    Result<exec::slurm::Sbatch> sbatch = exec::slurm::RenderSbatch(launch, {job_dir, "", "", as});
    ASSERT_TRUE(sbatch) << sbatch.error().message;
    sbatch->script = "#!/bin/bash\n{ id -u; env | sort; ulimit -a; umask; } > " + job_dir +
                     "/seen.$SLURM_JOB_ID.tmp && mv " + job_dir + "/seen.$SLURM_JOB_ID.tmp " +
                     job_dir + "/seen.$SLURM_JOB_ID\n";

    std::vector<std::string> argv = {"sbatch"};
    argv.insert(argv.end(), sbatch->args.begin(), sbatch->args.end());
    const exec::slurm::CommandResult by_sbatch = exec::slurm::RunCommand(
        argv, sbatch->script, exec::slurm::JobEnvironment(exec::slurm::ProcessEnvironment()));
    ASSERT_TRUE(by_sbatch.ok()) << by_sbatch.err;
    const std::string sbatch_id = Words(by_sbatch.out).at(0).substr(0, by_sbatch.out.find(';'));
    Result<std::string> helper_id = helper.Submit(*sbatch);
    ASSERT_TRUE(helper_id) << helper_id.error().message;

    const std::string sbatch_seen = job_dir + "/seen." + sbatch_id;
    const std::string helper_seen = job_dir + "/seen." + *helper_id;
    ASSERT_TRUE(WaitUntil(
        [&] {
          return std::filesystem::exists(sbatch_seen) && std::filesystem::exists(helper_seen);
        },
        std::chrono::seconds(60)))
        << "by sbatch: " << std::filesystem::exists(sbatch_seen)
        << ", by the helper: " << std::filesystem::exists(helper_seen);
    // While a gang completes, its record counts only the nodes still completing (once, the
    // helper's read NumNodes=1 and sbatch's 2): compare the records of ended jobs.
    ASSERT_TRUE(WaitUntil(
        [&] {
          return SlurmState(*helper_id) == "COMPLETED" && SlurmState(sbatch_id) == "COMPLETED";
        },
        std::chrono::seconds(60)))
        << "by sbatch: " << SlurmState(sbatch_id) << ", by the helper: " << SlurmState(*helper_id);
    EXPECT_EQ(Differences(JobRecord(*helper_id), JobRecord(sbatch_id)), "");
    EXPECT_EQ(Differences(SeenLines(helper_seen), SeenLines(sbatch_seen)), "");
    EXPECT_EQ(ReadLines(helper_seen).at(0), std::to_string(as ? as->uid : getuid()));
    EXPECT_THAT(ReadLines(helper_seen), ::testing::Contains(::testing::StartsWith("PATH=")));
    for (const std::string& seen : {helper_seen, sbatch_seen}) {
      EXPECT_THAT(ReadLines(seen),
                  ::testing::Not(::testing::Contains(HasSubstr("DROVER_SERVER_ONLY_PASSWORD"))))
          << seen;
    }
    EXPECT_EQ(SlurmField(*helper_id, "TresPerNode"), "gres:gpu:h100:1");
  }
  unsetenv("DROVER_SERVER_ONLY_PASSWORD");
}

// Slurm's record of `id` in `listing` as the executor reads it (ParseListing), every field on
// one line; or a line saying there is none.
std::string ReadRecord(const std::string& listing, const std::string& id) {
  const exec::slurm::JobListing jobs =
      exec::slurm::ParseListing(listing, exec::slurm::ParseLocalTime);
  const exec::slurm::SlurmJob* job = jobs.Find(id);
  if (job == nullptr) return "(no record of job " + id + ")";
  return fmt::format(
      "id={} array={}_{} name={} state={} reason={} times={},{},{},{} nodes={} exit={}:{} "
      "restarts={}",
      job->id, job->array_job_id, job->array_task_ids, job->name, job->state, job->reason,
      job->submit_time, job->eligible_time, job->start_time, job->end_time,
      fmt::join(job->nodes, ","), job->exit_code, job->exit_signal, job->restarts);
}

// The submission helper's listing (exec/libslurm/job_record.h: only the keys the executor reads)
// reads as `scontrol show job -o`'s for jobs in every state the executor meets: completed,
// failed, killed by a signal, running on one node and on two, held, waiting for a dependency
// and for a begin time, an array throttled to one task at a time (its running task and its
// pending tasks' record), cancelled while pending. Both listings are taken between two of
// scontrol's that agree (a job changing in between would differ).
TEST_F(SlurmTest, TheHelpersListingReadsAsScontrolsForEveryState) {
  std::map<std::string, std::string> ids;  // what each job is -> its Slurm id
  auto sbatch = [&](const std::string& what, std::vector<std::string> options,
                    const std::string& body) {
    std::vector<std::string> argv = {"sbatch", "--parsable", "--job-name=drover-listing-" + what,
                                     "-o",     "/dev/null",  "--mem=100M"};
    argv.insert(argv.end(), options.begin(), options.end());
    const exec::slurm::CommandResult submitted =
        exec::slurm::RunCommand(argv, "#!/bin/bash\n" + body + "\n");
    EXPECT_TRUE(submitted.ok()) << what << ": " << submitted.err;
    ids[what] = Words(submitted.out).at(0);
  };
  sbatch("completed", {}, "exit 0");
  sbatch("failed", {}, "exit 3");
  sbatch("signalled", {}, "kill -9 $$");
  sbatch("running", {}, "exec sleep 300");
  sbatch("two-nodes", {"--nodes=2", "--ntasks-per-node=1"}, "exec sleep 300");
  sbatch("held", {"--hold"}, "exit 0");
  sbatch("dependent", {"--dependency=afterok:" + ids["running"]}, "exit 0");
  sbatch("later", {"--begin=now+3600"}, "exit 0");
  sbatch("array", {"--array=1-3%1"}, "exec sleep 300");
  sbatch("cancelled", {"--hold"}, "exit 0");
  Shell("scancel " + ids["cancelled"]);
  // An array's tasks have ids of their own: its first task's record once it runs, and the
  // pending tasks' shared record by any of theirs.
  ids["array task"] = ids["array"] + "_1";
  ids["array pending"] = ids["array"] + "_2";
  ids.erase("array");
  const std::map<std::string, std::string> settled = {
      {"completed", "COMPLETED"}, {"failed", "FAILED"},     {"signalled", "FAILED"},
      {"running", "RUNNING"},     {"two-nodes", "RUNNING"}, {"array task", "RUNNING"},
      {"cancelled", "CANCELLED"}};
  ASSERT_TRUE(WaitUntil(
      [&] {
        return std::all_of(settled.begin(), settled.end(), [&](const auto& entry) {
          return SlurmState(ids.at(entry.first)) == entry.second;
        });
      },
      std::chrono::seconds(60)))
      << Shell("scontrol show job -o | grep -F drover-listing");

  exec::slurm::SubmitHelper helper(
      (std::filesystem::path(DROVER_BINARY).parent_path() / "drover-slurm-submit").string());
  auto records = [&](const std::string& listing) {
    std::map<std::string, std::string> read;
    for (const auto& [what, id] : ids) read[what] = ReadRecord(listing, id);
    return read;
  };
  bool compared = false;
  for (int attempt = 0; attempt < 5 && !compared; ++attempt) {
    const std::string before = Shell("scontrol show job -o");
    Result<std::string> listing = helper.ListJobs();
    ASSERT_TRUE(listing) << listing.error().message;
    if (records(before) != records(Shell("scontrol show job -o"))) continue;
    compared = true;
    const std::map<std::string, std::string> expected = records(before);
    for (const auto& [what, read] : records(*listing)) {
      EXPECT_EQ(read, expected.at(what)) << what;
      EXPECT_THAT(read, ::testing::Not(HasSubstr("(no record"))) << what;
    }
    // What the executor acts on, as Slurm says it.
    EXPECT_THAT(LineOfJob(*listing, ids["signalled"]), HasSubstr(" ExitCode=0:9 "));
    EXPECT_THAT(LineOfJob(*listing, ids["failed"]), HasSubstr(" ExitCode=3:0 "));
    EXPECT_THAT(LineOfJob(*listing, ids["held"]), HasSubstr(" Reason=JobHeldUser "));
    EXPECT_THAT(LineOfJob(*listing, ids["dependent"]), HasSubstr(" Reason=Dependency "));
    EXPECT_THAT(LineOfJob(*listing, ids["later"]), HasSubstr(" Reason=BeginTime "));
    EXPECT_THAT(*listing, HasSubstr(" ArrayTaskId=2-3%1 "));
    EXPECT_THAT(LineOfJob(*listing, ids["two-nodes"]), ::testing::ContainsRegex(" NodeList=n\\["));
  }
  EXPECT_TRUE(compared) << "a job changed between every two of scontrol's listings";
}

// Asked for a listing if changed, the helper passes slurmctld the time of its last listing, and
// slurmctld packs the records only when some job changed since: the helper then answers `same`
// (which SubmitHelper turns into its last listing again), and after a change (here a cancel) a
// whole listing that shows it. Another job of the shared cluster changing between two listings
// (an earlier test's, purged) gives a whole listing: a few tries.
TEST_F(SlurmTest, TheHelpersListingIfChangedIsPackedAgainOnlyWhenAJobChanged) {
  const exec::slurm::CommandResult submitted = exec::slurm::RunCommand(
      {"sbatch", "--parsable", "--job-name=drover-listing", "-o", "/dev/null", "--mem=100M"},
      "#!/bin/bash\nexec sleep 300\n");
  ASSERT_TRUE(submitted.ok()) << submitted.err;
  const std::string slurm_id = Words(submitted.out).at(0);
  ASSERT_TRUE(
      WaitUntil([&] { return SlurmState(slurm_id) == "RUNNING"; }, std::chrono::seconds(60)));
  // The helper spoken to as SubmitHelper speaks to it, to see its answers themselves.
  os::HelperProcess helper(
      {(std::filesystem::path(DROVER_BINARY).parent_path() / "drover-slurm-submit").string(),
       {},
       SOCK_STREAM,
       {}});
  ASSERT_TRUE(helper.Start());
  auto ask = [&](std::string_view request) {
    std::string reply;
    EXPECT_TRUE(exec::slurm::WriteAll(helper.socket(), exec::slurm::Frame(request)));
    EXPECT_EQ(
        exec::slurm::ReadFrame(helper.socket(), reply, 60'000, exec::slurm::kMaxListingFrameBytes),
        1);
    return reply;
  };
  // The first listing is a whole one, asked if changed or not.
  const std::string first = ask(exec::slurm::kListChangedJobsRequest);
  EXPECT_THAT(LineOfJob(first, slurm_id), HasSubstr(" JobState=RUNNING "));
  bool unchanged = false;
  for (int attempt = 0; attempt < 10 && !unchanged; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100 * attempt));
    unchanged = ask(exec::slurm::kListChangedJobsRequest) == exec::slurm::kListingUnchanged;
  }
  EXPECT_TRUE(unchanged) << "every listing asked if changed was packed anew";
  // Asked for every record, the helper lists them though none changed.
  EXPECT_THAT(LineOfJob(ask(exec::slurm::kListJobsRequest), slurm_id),
              HasSubstr(" JobState=RUNNING "));

  Shell("scancel " + slurm_id);
  EXPECT_TRUE(WaitUntil(
      [&] {
        const std::string listing = ask(exec::slurm::kListChangedJobsRequest);
        return LineOfJob(listing, slurm_id).find(" JobState=CANCELLED ") != std::string::npos;
      },
      std::chrono::seconds(30)));
}

TEST_F(SlurmTest, GpuJobGetsTheEnvironmentContractAndSlurmsTimeline) {
  const std::string out = dir_.Sub("env.txt");
  auto ids = Submit(*client_,
                    "kind: Job\nname: env\nqueue: hpc\nresources: {gpus: 2, cpu: 2, memory: 1Gi}\n"
                    "checkpoint_dir: " +
                        dir_.Sub("ckpt") +
                        "\n"
                        "script: env | grep -E '^(CUDA_VISIBLE_DEVICES|DROVER_|SLURM_JOB_ID)' > " +
                        out + "\n");
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(WaitForTerminal(*client_, ids[0]), "succeeded") << Job(ids[0]).dump(2);
  std::map<std::string, std::string> env;
  for (const std::string& line : ReadLines(out)) {
    env[line.substr(0, line.find('='))] = line.substr(line.find('=') + 1);
  }
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "0,1");
  EXPECT_EQ(env["DROVER_JOB_ID"], std::to_string(ids[0]));
  EXPECT_EQ(env["DROVER_ATTEMPT"], "1");
  EXPECT_EQ(env["DROVER_WORKER_RANK"], "0");
  EXPECT_EQ(env["DROVER_NUM_WORKERS"], "1");
  EXPECT_EQ(env["DROVER_CHECKPOINT_DIR"], dir_.Sub("ckpt"));
  EXPECT_EQ(env["DROVER_SERVER"], server_->url());
  // The `drover` beside the server's binary, for `drover report` from inside the job (its folder
  // is on PATH).
  EXPECT_EQ(std::filesystem::canonical(env["DROVER_BIN"]),
            std::filesystem::canonical(DroverBinary()));
  EXPECT_FALSE(env["DROVER_MASTER_ADDR"].empty());
  const nlohmann::json attempt = Attempt(ids[0], 0);
  EXPECT_EQ(attempt["executor"], "slurm");
  EXPECT_EQ(attempt["external_id"], env["SLURM_JOB_ID"]);
  // The server handed it to Slurm through its submission helper, which stays for the next.
  EXPECT_NE(Shell(fmt::format("pgrep -P {} -f drover-slurm-submit", server_->process().pid())), "");
  EXPECT_GT(attempt["external_submitted_at"].get<std::int64_t>(), 0);
  // The timeline is complete and ordered.
  const std::int64_t admitted = attempt["admitted_at"], placed = attempt["placed_at"],
                     running = attempt["running_at"], finished = attempt["finished_at"];
  EXPECT_GT(admitted, 0);
  EXPECT_LE(admitted, placed);
  EXPECT_LE(placed, running);
  EXPECT_LE(running, finished);
  EXPECT_EQ(attempt["workers"][0]["host"].get<std::string>().substr(0, 1), "n");
  EXPECT_TRUE(std::filesystem::exists(dir_.Sub("ckpt")));  // make_dirs ran under Slurm
}

TEST_F(SlurmTest, GangRunsOneWorkerPerNodeWithRanks) {
  const std::string out = dir_.Sub("ranks.txt");
  auto ids = Submit(*client_,
                    "kind: Job\nname: gang\nqueue: hpc\nworkers: 3\nresources: {gpus: 4}\n"
                    "script: echo $DROVER_WORKER_RANK $SLURMD_NODENAME $CUDA_VISIBLE_DEVICES "
                    "$DROVER_NUM_WORKERS >> " +
                        out + "\n");
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(WaitForTerminal(*client_, ids[0]), "succeeded") << Job(ids[0]).dump(2);
  std::set<std::string> ranks, nodes;
  for (const std::string& line : ReadLines(out)) {
    auto words = Words(line);
    ASSERT_EQ(words.size(), 4u) << line;
    ranks.insert(words[0]);
    nodes.insert(words[1]);
    EXPECT_EQ(words[2], "0,1,2,3");
    EXPECT_EQ(words[3], "3");
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1", "2"}));
  EXPECT_EQ(nodes.size(), 3u);  // 4 GPUs each on nodes of 4: one worker per node
  std::set<std::string> hosts;
  const nlohmann::json attempt = Attempt(ids[0], 0);
  for (const auto& worker : attempt["workers"]) hosts.insert(worker["host"]);
  EXPECT_EQ(hosts, nodes);
}

TEST_F(SlurmTest, PendingReasonIsSlurmsThenCancelEndsItInSlurm) {
  // 16 GPUs: the whole cluster.
  const std::int64_t big = SubmitRunning(
      "kind: Job\nname: big\nqueue: hpc\nworkers: 4\nresources: {gpus: 4}\n"
      "command: [sleep, '300']\n");
  auto small = Submit(
      *client_, "kind: Job\nname: small\nqueue: hpc\nresources: {gpus: 1}\ncommand: [true]\n");
  ASSERT_EQ(small.size(), 1u);
  EXPECT_TRUE(WaitUntil([&] {
    return Job(small[0])["message"].get<std::string>().find("pending: Resources") !=
           std::string::npos;
  })) << Job(small[0]).dump(2);
  EXPECT_EQ(Job(small[0])["state"], "admitted");
  const CommandResult get =
      RunDrover({"--server", server_->url(), "get", std::to_string(small[0])}, dir_.path());
  EXPECT_THAT(get.out, HasSubstr("slurm"));
  EXPECT_THAT(get.out, HasSubstr(Attempt(small[0], 0)["external_id"].get<std::string>()));
  EXPECT_THAT(get.out, HasSubstr("Resources"));

  const std::string slurm_id = Attempt(big, 0)["external_id"];
  ASSERT_TRUE(client_->Post("/v1/jobs/" + std::to_string(big) + "/cancel", "", "application/json")
                  .has_value());
  EXPECT_EQ(WaitForTerminal(*client_, big), "cancelled");
  EXPECT_EQ(SlurmState(slurm_id), "CANCELLED");
  EXPECT_EQ(WaitForTerminal(*client_, small[0]), "succeeded");
}

TEST_F(SlurmTest, TimeoutAndExitCodesMapToDroverStates) {
  auto ids = Submit(*client_,
                    "kind: Job\nname: slow\nqueue: hpc\ntimeout: 2s\ncommand: [sleep, '120']\n---\n"
                    "kind: Job\nname: three\nqueue: hpc\nscript: exit 3\n");
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(WaitForTerminal(*client_, ids[0]), "timed_out") << Job(ids[0]).dump(2);
  EXPECT_EQ(WaitForTerminal(*client_, ids[1]), "failed");
  EXPECT_THAT(Job(ids[1])["message"].get<std::string>(), HasSubstr("exit 3"));
}

TEST_F(SlurmTest, SlurmPreemptionRequeuesAndTheJobResumesFromItsCheckpoint) {
  const std::string steps = dir_.Sub("steps.txt"), log = dir_.Sub("attempts.txt");
  const std::string program =
      "ck=$DROVER_CHECKPOINT_DIR/step; i=0\n"
      "if [ \"$DROVER_RESUME\" = 1 ] && [ -f $ck ]; then i=$(cat $ck); fi\n"
      "echo \"$DROVER_ATTEMPT ${DROVER_RESUME:-0} $i\" >> " +
      log +
      "\n"
      // The checkpoint is written whole or not at all (a new file renamed over the old): a
      // preemption between the truncation and the write of `echo $i > $ck` left it empty once.
      "while [ $i -lt 12 ]; do i=$((i+1)); echo $i >> " +
      steps + "; echo $i > $ck.new; mv $ck.new $ck; " + DroverBinary() +
      " checkpoint $DROVER_JOB_ID >/dev/null; sleep 0.5; done\n";
  WriteFile(dir_.Sub("steps.sh"), program);
  auto ids = Submit(*client_,
                    "kind: Job\nname: resumable\nqueue: hpc\nresources: {gpus: 1}\n"
                    "checkpoint_dir: " +
                        dir_.Sub("ckpt") +
                        "\nresume: true\n"
                        "command: [sh, " +
                        dir_.Sub("steps.sh") + "]\n");
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_TRUE(WaitUntil([&] { return ReadLines(steps).size() >= 3; }));
  // A job of the high partition needs every GPU: Slurm preempts Drover's.
  int code = 0;
  const std::string high = Shell(
      "sbatch --parsable -p high -N 4 --ntasks-per-node=1 --gres=gpu:4 -o /dev/null "
      "--wrap 'sleep 3'",
      &code);
  ASSERT_EQ(code, 0) << high;
  // Slurm requeues the job (--requeue: Drover retries after preemption) and Drover continues
  // the same Slurm job as attempt 2.
  const std::string slurm_id = ContinueAtOnce(ids[0]);
  EXPECT_EQ(WaitForTerminal(*client_, ids[0], std::chrono::seconds(90)), "succeeded")
      << Job(ids[0]).dump(2);
  const nlohmann::json job = Job(ids[0]);
  ASSERT_EQ(job["attempts"].size(), 2u) << job.dump(2);
  EXPECT_THAT(job["attempts"][0]["cause"].get<std::string>(),
              HasSubstr("Slurm requeued job " + slurm_id + " after preempting it"));
  EXPECT_EQ(job["attempts"][1]["external_id"], slurm_id);
  EXPECT_EQ(SlurmField(slurm_id, "Requeue"), "1");
  EXPECT_EQ(SlurmField(slurm_id, "Restarts"), "1");
  // The second attempt resumed where the checkpoint said: every step is done, none twice.
  auto attempts = ReadLines(log);
  ASSERT_EQ(attempts.size(), 2u);
  auto second = Words(attempts[1]);
  ASSERT_EQ(second.size(), 3u) << attempts[1];
  EXPECT_EQ(second[0], "2");
  EXPECT_EQ(second[1], "1");
  EXPECT_GE(std::stoi(second[2]), 3);
  std::vector<std::string> done = ReadLines(steps);
  std::set<std::string> distinct(done.begin(), done.end());
  EXPECT_EQ(distinct.size(), 12u);
  EXPECT_LE(done.size(), 13u);  // at most the step in flight at preemption runs again
}

TEST_F(SlurmTest, NodeLossRetriesOnAnotherNode) {
  const std::int64_t id = SubmitRunning(
      "kind: Job\nname: survivor\nqueue: hpc\nresources: {gpus: 1}\n"
      "script: '[ $DROVER_ATTEMPT = 2 ] || sleep 300'\n");  // the default retry: 1 attempt
  const std::string node = Attempt(id, 0)["workers"][0]["host"];
  ASSERT_FALSE(node.empty());
  int code = 0;
  // DOWN ends its jobs (NODE_FAIL); DRAIN keeps the node out until the test resumes it (a live
  // slurmd would otherwise bring it straight back).
  Shell("scontrol update NodeName=" + node +
            " State=DOWN Reason=drover-test && scontrol update NodeName=" + node +
            " State=DRAIN Reason=drover-test",
        &code);
  ASSERT_EQ(code, 0);
  // Slurm requeues it (NODE_FAIL); attempt 2 continues the same Slurm job on another node.
  const std::string slurm_id = ContinueAtOnce(id);
  const std::string state = WaitForTerminal(*client_, id, std::chrono::seconds(60));
  Shell("scontrol update NodeName=" + node + " State=RESUME");
  EXPECT_EQ(state, "succeeded") << Job(id).dump(2);
  const nlohmann::json job = Job(id);
  ASSERT_EQ(job["attempts"].size(), 2u);
  EXPECT_THAT(job["attempts"][0]["cause"].get<std::string>(), HasSubstr("node lost"));
  EXPECT_THAT(job["attempts"][0]["cause"].get<std::string>(), HasSubstr("NODE_FAIL on " + node));
  EXPECT_EQ(job["attempts"][1]["external_id"], slurm_id);
  EXPECT_NE(job["attempts"][1]["workers"][0]["host"], node);
}

TEST_F(SlurmTest, WithoutRetryAfterPreemptionSlurmDoesNotRequeueAndTheJobFails) {
  const std::int64_t id = SubmitRunning(
      "kind: Job\nname: fragile\nqueue: hpc\nresources: {gpus: 4}\n"
      "retry: {max_attempts: 2, on: [exit]}\ncommand: [sleep, '300']\n");
  const std::string slurm_id = Attempt(id, 0)["external_id"];
  EXPECT_EQ(SlurmField(slurm_id, "Requeue"), "0");
  const std::string node = Attempt(id, 0)["workers"][0]["host"];
  int code = 0;
  const std::string high =
      Shell("sbatch --parsable -p high -w " + node + " --gres=gpu:4 -o /dev/null --wrap 'sleep 1'",
            &code);
  ASSERT_EQ(code, 0) << high;
  EXPECT_EQ(WaitForTerminal(*client_, id, std::chrono::seconds(60)), "failed");
  const nlohmann::json job = Job(id);
  EXPECT_EQ(job["attempts"].size(), 1u);
  EXPECT_THAT(job["message"].get<std::string>(), HasSubstr("preempted"));
  EXPECT_EQ(SlurmState(slurm_id), "PREEMPTED");
}

TEST_F(SlurmTest, ARestartedServerReattachesToItsSlurmJobs) {
  const std::int64_t id =
      SubmitRunning("kind: Job\nname: long\nqueue: hpc\ncommand: [sleep, '300']\n");
  const std::string slurm_id = Attempt(id, 0)["external_id"];
  ASSERT_NO_FATAL_FAILURE(RestartServer());
  EXPECT_EQ(Job(id)["state"], "running");
  EXPECT_EQ(SlurmState(slurm_id), "RUNNING");
  ASSERT_TRUE(client_->Post("/v1/jobs/" + std::to_string(id) + "/cancel", "", "application/json")
                  .has_value());
  EXPECT_EQ(WaitForTerminal(*client_, id), "cancelled");
  EXPECT_EQ(SlurmState(slurm_id), "CANCELLED");
}

// A file of 12 like jobs goes to Slurm as a job array (one sbatch, each job a task of it: at most
// two arrays, should the first job have gone before the others arrived). 16 CPUs each, so 4 run
// on the 4 nodes and 8 wait in the array's pending record when the server restarts: the new
// server adopts every task, running or pending, by its "ARRAYID_TASK", and all succeed as the
// attempts they were, none submitted again.
TEST_F(SlurmTest, AFileOfJobsGoesAsAnArrayAndARestartMidArrayAdoptsItsTasks) {
  constexpr int kJobs = 12;
  const std::string release = dir_.Sub("release");
  std::string file;
  for (int i = 0; i < kJobs; ++i) {
    file += fmt::format(
        "kind: Job\nname: task{}\nqueue: hpc\nresources: {{cpu: 16, memory: 100Mi}}\n"
        "script: while [ ! -e {} ]; do sleep 0.2; done; echo ok\n---\n",
        i, release);
  }
  const std::vector<std::int64_t> ids = Submit(*client_, file);
  ASSERT_EQ(ids.size(), static_cast<std::size_t>(kJobs));
  std::map<std::int64_t, std::string> slurm_ids;
  ASSERT_TRUE(WaitUntil(
      [&] {
        int running = 0;
        for (std::int64_t id : ids) {
          const nlohmann::json job = Job(id);
          if (job["attempts"].empty() || !job["attempts"][0]["external_id"].is_string()) {
            return false;
          }
          slurm_ids[id] = job["attempts"][0]["external_id"];
          running += job["state"] == "running";
        }
        return running == 4;
      },
      std::chrono::seconds(60)));
  std::set<std::string> arrays;
  for (const auto& [id, slurm_id] : slurm_ids)
    arrays.insert(slurm_id.substr(0, slurm_id.find('_')));
  EXPECT_LE(arrays.size(), 2u);
  EXPECT_THAT(slurm_ids[ids.back()], HasSubstr("_")) << "the last job is not an array's task";
  EXPECT_EQ(SlurmState(slurm_ids[ids.back()]), "PENDING");

  ASSERT_NO_FATAL_FAILURE(RestartServer());
  WriteFile(release, "");
  for (std::int64_t id : ids) {
    EXPECT_EQ(WaitForTerminal(*client_, id), "succeeded") << Job(id).dump(2);
    const nlohmann::json job = Job(id);
    EXPECT_EQ(job["attempts"].size(), 1u);
    EXPECT_EQ(job["attempts"][0]["external_id"], slurm_ids[id]);
  }
  // Every task ended: the new server removed the arrays' task links (operations.md).
  const std::filesystem::path arrays_dir =
      std::filesystem::path(dir_.Sub("data")) / "runs/slurm/arrays";
  auto links_left = [&] {
    int left = 0;
    for (const auto& entry : std::filesystem::directory_iterator(arrays_dir)) {
      left += entry.path().extension() == ".tasks";
    }
    return left;
  };
  EXPECT_TRUE(WaitUntil([&] { return links_left() == 0; }, std::chrono::seconds(10)))
      << links_left() << " arrays' links left in " << arrays_dir;
}

TEST_F(SlurmTest, AnAdministratorsRequeueIsContinuedAcrossAServerRestart) {
  const std::string log = dir_.Sub("attempts.txt");
  const std::int64_t id = SubmitRunning(
      "kind: Job\nname: requeued\nqueue: hpc\nresources: {gpus: 1}\n"
      "script: 'echo $DROVER_ATTEMPT >> " +
      log + "; [ $DROVER_ATTEMPT = 2 ] || sleep 300'\n");
  const std::string slurm_id = Attempt(id, 0)["external_id"];
  ASSERT_TRUE(WaitUntil([&] { return !ReadLines(log).empty(); }));
  int code = 0;
  Shell("scontrol requeue " + slurm_id, &code);
  ASSERT_EQ(code, 0);
  // Drover continues the Slurm job as attempt 2 and the executor releases it; Slurm's 120 s
  // delay keeps it pending meanwhile. Then the server dies and comes back.
  ASSERT_TRUE(WaitUntil(
      [&] {
        const nlohmann::json job = Job(id);
        return job["attempts"].size() == 2 &&
               job["attempts"][1]["external_submitted_at"].get<std::int64_t>() > 0;
      },
      std::chrono::seconds(30)))
      << Job(id).dump(2);
  EXPECT_EQ(SlurmState(slurm_id), "PENDING");
  ASSERT_NO_FATAL_FAILURE(RestartServer());
  EXPECT_EQ(ContinueAtOnce(id), slurm_id);
  EXPECT_EQ(WaitForTerminal(*client_, id, std::chrono::seconds(60)), "succeeded")
      << Job(id).dump(2);
  const nlohmann::json job = Job(id);
  ASSERT_EQ(job["attempts"].size(), 2u);
  EXPECT_THAT(job["attempts"][0]["cause"].get<std::string>(), HasSubstr("scontrol requeue"));
  EXPECT_EQ(job["attempts"][1]["external_id"], slurm_id);
  EXPECT_EQ(ReadLines(log), (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(SlurmField(slurm_id, "Restarts"), "1");
  const CommandResult get =
      RunDrover({"--server", server_->url(), "get", std::to_string(id)}, dir_.path());
  EXPECT_THAT(get.out, HasSubstr("slurm job " + slurm_id + " (continued after slurm requeued it)"))
      << get.out;
}

// Jobs run as their users (docs/security.md) on Slurm too: the server, as root, submits a
// member's jobs as the member's Unix account, a lone job and a file of like jobs (an array)
// alike. Each runs with the account's uid, gid, HOME and USER, in an attempt folder the account
// owns, where Slurm wrote its output as the account, and publishes a value output.
TEST_F(SlurmTest, AMembersJobsRunAsItsUnixAccountAloneOrAsAnArray) {
  auto account = testing::ScopedUnixAccount::Create("drover-su");
  ASSERT_TRUE(account) << account.error().ToString();
  // The account must reach its attempt folders under the test's (mkdtemp: 0700) directory.
  ASSERT_EQ(chmod(dir_.path().c_str(), 0755), 0);
  const std::string out = dir_.Sub("out");
  std::filesystem::create_directories(out);
  ASSERT_EQ(chmod(out.c_str(), 0777), 0);
  const std::string token = CreateMemberToken(*client_, (*account)->name(), "team-a");
  ASSERT_FALSE(token.empty());
  api::ApiClient member(server_->url());
  member.SetBearer(token);
  auto job = [&](int i) {
    return fmt::format(
        "kind: Job\nname: who{0}\nqueue: hpc\nresources: {{cpu: 1, memory: 100Mi}}\n"
        "outputs: [{{name: greeting}}]\n"
        "script: echo $(id -u) $(id -g) $HOME $USER > {1}/who{0} && touch mine && echo done && "
        "echo hello{0} > \"$DROVER_OUTPUT_GREETING\"\n",
        i, out);
  };
  std::vector<std::int64_t> ids = Submit(member, job(0));
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(WaitForTerminal(*client_, ids[0]), "succeeded") << Job(ids[0]).dump(2);
  const std::vector<std::int64_t> file = Submit(member, job(1) + "---\n" + job(2));
  ASSERT_EQ(file.size(), 2u);
  ids.insert(ids.end(), file.begin(), file.end());
  const std::string expected = fmt::format("{} {} {} {}", (*account)->uid(), (*account)->gid(),
                                           (*account)->home(), (*account)->name());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(WaitForTerminal(*client_, ids[i]), "succeeded") << Job(ids[i]).dump(2);
    EXPECT_EQ(ReadFile(fmt::format("{}/who{}", out, i)), expected + "\n") << i;
    // A value output, in a folder of the server's given to the account, read as the account.
    EXPECT_EQ(Job(ids[i])["outputs"]["greeting"], fmt::format("hello{}", i)) << Job(ids[i]).dump(2);
    if (i == 2) {
      EXPECT_THAT(Attempt(ids[i], 0)["external_id"].get<std::string>(), HasSubstr("_"))
          << "the file went as an array";
    }
    const std::filesystem::path attempt =
        std::filesystem::path(dir_.Sub("data")) / "runs/slurm" / std::to_string(ids[i]) / "1";
    struct stat info {};
    for (const std::string& name : {std::string("."), std::string("mine")}) {
      ASSERT_EQ(stat((attempt / name).c_str(), &info), 0) << attempt / name;
      EXPECT_EQ(info.st_uid, (*account)->uid()) << attempt / name;
    }
    int outputs = 0;
    for (const auto& entry : std::filesystem::directory_iterator(attempt)) {
      const std::string name = entry.path().filename().string();
      if (!name.starts_with("slurm-") || !name.ends_with(".out")) continue;
      ++outputs;
      ASSERT_EQ(stat(entry.path().c_str(), &info), 0);
      EXPECT_EQ(info.st_uid, (*account)->uid()) << entry.path();
      EXPECT_THAT(ReadFile(entry.path().string()), HasSubstr("done")) << entry.path();
    }
    EXPECT_EQ(outputs, 1) << attempt;
  }
}

TEST_F(SlurmTest, PipelineRunsItsGpuStageOnSlurmAndItsCpuStagesLocally) {
  const std::string out = dir_.Sub("stages.txt");
  auto ids = Submit(
      *client_,
      "kind: Pipeline\nname: mixed\nstages:\n"
      "  - name: prep\n    queue: local\n    script: echo prep $SLURM_JOB_ID >> " +
          out +
          "\n"
          "  - name: train\n    queue: hpc\n    depends_on: [prep]\n    resources: {gpus: 2}\n"
          "    script: echo train $SLURM_JOB_ID >> " +
          out +
          "\n"
          "  - name: eval\n    queue: local\n    depends_on: [train]\n"
          "    script: echo eval $SLURM_JOB_ID >> " +
          out + "\n");
  ASSERT_EQ(ids.size(), 3u);
  for (auto id : ids) EXPECT_EQ(WaitForTerminal(*client_, id), "succeeded") << Job(id).dump(2);
  auto lines = ReadLines(out);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(Words(lines[0]), std::vector<std::string>{"prep"});
  EXPECT_EQ(Words(lines[1]).size(), 2u);  // under Slurm: a job id
  EXPECT_EQ(Words(lines[2]), std::vector<std::string>{"eval"});
  EXPECT_FALSE(Attempt(ids[0], 0).contains("executor"));
  EXPECT_EQ(Attempt(ids[1], 0)["executor"], "slurm");
  const CommandResult get =
      RunDrover({"--server", server_->url(), "get", std::to_string(ids[1])}, dir_.path());
  EXPECT_THAT(get.out, HasSubstr("slurm job " + Words(lines[1])[1]));
}

}  // namespace
}  // namespace drover::integration
