// The node lifecycle end to end through the real server and CLI (issue 18): `drover node drain`
// moves a checkpointing job to the other node, where it resumes from its checkpoint; a
// maintenance window holds off a job that EASY backfill would otherwise start; cordon and
// uncordon; node state survives a restart; an OOM-killed worker reads oom_killed where the
// machine lets the test set a memory limit (the test says why when it cannot).

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class NodeLifecycle : public IntegrationTest {
 protected:
  std::unique_ptr<ServerProcess> StartTwoNodes(const std::string& data = "data") {
    return std::make_unique<ServerProcess>(
        dir_.Sub(data), dir_.path(),
        std::vector<std::string>{"--nodes",
                                 SourceDir() + "/tests/integration/testdata/nodes/two_nodes.yaml"});
  }

  CommandResult Cli(const ServerProcess& server, std::vector<std::string> args) {
    args.insert(args.begin(), {"--server", server.url()});
    return RunDrover(args, dir_.path());
  }

  // The node the worker of `attempt` (0-based) of job `id` ran on; "" if none.
  static std::string NodeOf(const json& job, std::size_t attempt) {
    if (!job.is_object() || job["attempts"].size() <= attempt) return "";
    return job["attempts"][attempt]["workers"][0].value("node", "");
  }

  // The first condition of `node` (GET /v1/nodes) of `type`; null if none.
  static json ConditionOf(const json& node, const std::string& type) {
    if (!node.is_object()) return json();
    for (const json& condition : node["conditions"]) {
      if (condition.value("type", "") == type) return condition;
    }
    return json();
  }
};

TEST_F(NodeLifecycle, DrainMovesACheckpointingJobThatResumesOnTheOtherNode) {
  const std::string worker =
      SourceDir() + "/tests/integration/testdata/preemption/checkpointing_worker.sh";
  auto server = StartTwoNodes();
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  auto ids = Submit(client, fmt::format("kind: Job\nname: ckpt\ncheckpoint_dir: {}/ckpt\n"
                                        "resources: {{cpu: 100m, memory: 64Mi, gpus: 2}}\n"
                                        "command: [sh, \"{}\", \"{}/ckpt.log\", \"100000\"]\n",
                                        dir_.path(), worker, dir_.path()));
  ASSERT_EQ(ids.size(), 1u);
  const std::int64_t id = ids[0];
  ASSERT_EQ(WaitForState(client, id, {"running"}), "running") << server->Log();
  ASSERT_TRUE(WaitUntil([&] {
    json job = GetJob(client, id);
    return job.is_object() && job["attempts"][0].value("last_checkpoint_at", std::int64_t{0}) > 0;
  })) << GetJob(client, id).dump(2);
  const std::string first = NodeOf(GetJob(client, id), 0);
  ASSERT_FALSE(first.empty());

  CommandResult drain = Cli(*server, {"node", "drain", first, "--reason", "disk swap"});
  ASSERT_EQ(drain.exit_code, 0) << drain.err;
  EXPECT_THAT(drain.out, HasSubstr("drain"));

  // It stopped with the notice and resumed on the other node from its checkpoint.
  ASSERT_TRUE(WaitUntil([&] {
    return ReadFile(dir_.Sub("ckpt.log")).find("resumed at") != std::string::npos;
  })) << ReadFile(dir_.Sub("ckpt.log"))
      << server->Log();
  EXPECT_THAT(ReadFile(dir_.Sub("ckpt.log")), HasSubstr("node_drain"));
  json job = GetJob(client, id);
  ASSERT_EQ(job["attempts"].size(), 2u) << job.dump(2);
  EXPECT_EQ(job["attempts"][0].value("disruption", ""), "node_drain") << job.dump(2);
  EXPECT_EQ(job["attempts"][1].value("resumed", false), true) << job.dump(2);
  EXPECT_NE(NodeOf(job, 1), first) << job.dump(2);
  EXPECT_FALSE(NodeOf(job, 1).empty()) << job.dump(2);

  // The drained node reads drained, since when and by whom, in the API and in `drover nodes`.
  ASSERT_TRUE(WaitForNodeState(client, first, "drained")) << GetNode(client, first).dump(2);
  const json drained = ConditionOf(GetNode(client, first), "drained");
  ASSERT_TRUE(drained.is_object());
  EXPECT_TRUE(drained["since"].is_number());
  EXPECT_THAT(drained.value("by", ""), HasSubstr("admin"));
  EXPECT_EQ(drained.value("message", ""), "disk swap");
  CommandResult nodes = Cli(*server, {"nodes"});
  ASSERT_EQ(nodes.exit_code, 0) << nodes.err;
  EXPECT_THAT(nodes.out, HasSubstr("drained"));

  // Node state survives a restart; uncordon makes it ready again.
  server.reset();
  server = StartTwoNodes();
  ASSERT_TRUE(server->ok());
  api::ApiClient restarted = server->Client();
  EXPECT_EQ(GetNode(restarted, first).value("state", ""), "drained") << GetNode(restarted, first);
  CommandResult uncordon = Cli(*server, {"node", "uncordon", first});
  ASSERT_EQ(uncordon.exit_code, 0) << uncordon.err;
  EXPECT_EQ(GetNode(restarted, first).value("state", ""), "ready");
  ASSERT_EQ(Cli(*server, {"cancel", std::to_string(id)}).exit_code, 0);
}

TEST_F(NodeLifecycle, CordonKeepsRunningJobsAndRefusesNewOnesAndBadInputIsExplained) {
  auto server = StartTwoNodes();
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  ASSERT_EQ(Cli(*server, {"node", "cordon", "node-b"}).exit_code, 0);
  auto running = Submit(client,
                        "kind: Job\nname: on-a\nresources: {cpu: 100m, memory: 64Mi, gpus: 1}\n"
                        "command: [sleep, \"600\"]\n");
  ASSERT_EQ(WaitForState(client, running[0], {"running"}), "running");
  ASSERT_EQ(Cli(*server, {"node", "cordon", "node-a"}).exit_code, 0);
  auto waiting = Submit(client,
                        "kind: Job\nname: waits\nresources: {cpu: 100m, memory: 64Mi, gpus: 1}\n"
                        "command: [\"true\"]\n");
  // Nothing takes it while both nodes are cordoned (binpack would choose node-a's free GPU);
  // the running job keeps running.
  std::string message;
  ASSERT_TRUE(WaitUntil([&] {
    auto explained = client.Explain(std::to_string(waiting[0]));
    message = explained ? explained->value("message", "") : explained.error().message;
    return message.find("cordoned") != std::string::npos;
  })) << message;
  EXPECT_EQ(GetJob(client, waiting[0]).value("state", ""), "ready");
  EXPECT_EQ(GetJob(client, running[0]).value("state", ""), "running");
  EXPECT_EQ(GetNode(client, "node-a").value("state", ""), "cordoned");
  ASSERT_EQ(Cli(*server, {"node", "uncordon", "node-b"}).exit_code, 0);
  EXPECT_EQ(WaitForTerminal(client, waiting[0]), "succeeded") << server->Log();
  EXPECT_EQ(NodeOf(GetJob(client, waiting[0]), 0), "node-b");

  // Errors name what is wrong and change nothing.
  CommandResult unknown = Cli(*server, {"node", "cordon", "nope"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_THAT(unknown.err, HasSubstr("node nope does not exist"));
  CommandResult backwards =
      Cli(*server, {"node", "maintenance", "node-a", "--from", "+2h", "--to", "+1h"});
  EXPECT_NE(backwards.exit_code, 0);
  EXPECT_THAT(backwards.err, HasSubstr("to:"));
  auto bad = client.Post("/v1/nodes/node-a/drain", R"({"grace_ms": -5})", "application/json");
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, HasSubstr("grace_ms"));
  auto extra = client.Post("/v1/nodes/node-a/cordon", R"({"colour": "red"})", "application/json");
  ASSERT_FALSE(extra);
  EXPECT_THAT(extra.error().message, HasSubstr("colour: unknown field"));
  ASSERT_EQ(Cli(*server, {"cancel", std::to_string(running[0])}).exit_code, 0);
}

// node-a is busy for an hour and reserved for `big`; node-b goes into maintenance in 30
// minutes. EASY backfill would start `long` (1h) on node-b, outside the reservation; the window
// holds it off while `short` (10m) starts there. Once the window is cleared, `long` starts.
TEST_F(NodeLifecycle, AMaintenanceWindowIsHonouredByBackfill) {
  auto server = StartTwoNodes();
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  auto job = [](const std::string& name, int gpus, const std::string& timeout,
                const std::string& pool) {
    return fmt::format(
        "kind: Job\nname: {}\ntimeout: {}\n{}resources: {{cpu: 100m, memory: 64Mi, gpus: {}}}\n"
        "command: [sleep, \"600\"]\n",
        name, timeout, pool.empty() ? "" : "placement: {node_selector: {pool: " + pool + "}}\n",
        gpus);
  };
  auto busy = Submit(client, job("busy", 2, "1h", "a"));
  ASSERT_EQ(WaitForState(client, busy[0], {"running"}), "running") << server->Log();
  CommandResult window = Cli(*server, {"node", "maintenance", "node-b", "--from", "+30m", "--to",
                                       "+3h", "--reason", "firmware"});
  ASSERT_EQ(window.exit_code, 0) << window.err;
  EXPECT_THAT(window.out, HasSubstr("maintenance"));
  auto big = Submit(client, job("big", 2, "10m", "a"));
  auto long_job = Submit(client, job("long", 2, "1h", ""));
  auto short_job = Submit(client, job("short", 2, "10m", ""));
  ASSERT_EQ(WaitForState(client, short_job[0], {"running"}), "running") << server->Log();
  EXPECT_EQ(NodeOf(GetJob(client, short_job[0]), 0), "node-b");
  // `short` was tried after `long` in the same order, so `long` has been judged: held.
  EXPECT_EQ(GetJob(client, long_job[0]).value("state", ""), "ready");
  EXPECT_EQ(GetJob(client, big[0]).value("state", ""), "ready");
  auto explained = client.Explain(std::to_string(long_job[0]));
  ASSERT_TRUE(explained);
  EXPECT_THAT(explained->value("message", ""), HasSubstr("maintenance window"))
      << explained->dump(2);
  const json maintenance = ConditionOf(GetNode(client, "node-b"), "maintenance");
  ASSERT_TRUE(maintenance.is_object()) << GetNode(client, "node-b").dump(2);
  EXPECT_EQ(maintenance.value("active", true), false);
  EXPECT_EQ(maintenance.value("message", ""), "firmware");

  CommandResult clear = Cli(*server, {"node", "maintenance", "node-b", "--clear"});
  ASSERT_EQ(clear.exit_code, 0) << clear.err;
  EXPECT_EQ(WaitForState(client, long_job[0], {"running"}), "running") << server->Log();
  EXPECT_EQ(NodeOf(GetJob(client, long_job[0]), 0), "node-b");
  for (auto id : {busy[0], big[0], long_job[0], short_job[0]}) {
    RunDrover({"--server", server->url(), "cancel", std::to_string(id)}, dir_.path());
  }
}

// The memory cgroup (v1) path of this process, from /proc/self/cgroup; "" when it has none.
std::string OwnMemoryCgroup() {
  std::istringstream lines(ReadFile("/proc/self/cgroup"));
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (std::regex_match(line, match, std::regex(R"(\d+:([^:]*):(.*))"))) {
      std::istringstream controllers(match[1].str());
      for (std::string name; std::getline(controllers, name, ',');) {
        if (name == "memory") return match[2].str();
      }
    }
  }
  return "";
}

// The OOM killer: this test process, and so the server it starts with the server's supervisors
// and workers, moves into a memory cgroup of its own with a 256 MiB limit, and a worker
// allocates 1 GiB. Where the machine gives no writable cgroup v1 memory hierarchy, or does not
// enforce the limit, the test says so and checks nothing more (docs/operations.md,
// "Disruptions", says what is detectable and what CI runs).
TEST_F(NodeLifecycle, AnOomKilledWorkerIsReportedAsOomKilled) {
  const std::string root = "/sys/fs/cgroup/memory";
  const std::string own = OwnMemoryCgroup();
  const std::string cgroup = fmt::format("{}/drover-oom-test-{}", root, getpid());
  std::error_code error;
  if (own.empty() || !std::filesystem::create_directory(cgroup, error)) {
    GTEST_SKIP() << "no writable cgroup v1 memory hierarchy at " << root << " ("
                 << (own.empty() ? "this process has no memory cgroup" : error.message())
                 << "): the OOM test cannot set a memory limit here";
  }
  auto join = [](const std::string& dir) {
    std::ofstream procs(dir + "/cgroup.procs");
    procs << getpid() << "\n";
    return static_cast<bool>(procs.flush());
  };
  WriteFile(cgroup + "/memory.limit_in_bytes", std::to_string(256 << 20));
  if (!join(cgroup)) {
    rmdir(cgroup.c_str());
    GTEST_SKIP() << "cannot move this process into " << cgroup;
  }
  std::unique_ptr<ServerProcess> server = std::make_unique<ServerProcess>(
      dir_.Sub("data"), dir_.path(), std::vector<std::string>{"--gpus", "0"});
  join(root + own);  // back where it was; the server and its children stay in the cgroup
  struct Cleanup {
    std::string dir, cgroup;
    ~Cleanup() {
      KillProcessesUnder(dir);
      rmdir(cgroup.c_str());
    }
  } cleanup{dir_.path(), cgroup};
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  auto ids = Submit(client,
                    "kind: Job\nname: hog\nresources: {cpu: 100m, memory: 64Mi}\n"
                    "command: [python3, -c, \"b = bytearray(1 << 30)\\nfor i in range(0, len(b), "
                    "4096): b[i] = 1\"]\n");
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(WaitForTerminal(client, ids[0]), "failed") << server->Log();
  json job = GetJob(client, ids[0]);
  const json& exit = job["attempts"][0]["workers"][0]["exit"];
  if (exit.value("signal", 0) != 9) {
    GTEST_SKIP() << "this machine did not enforce the cgroup's 256 MiB memory limit with the OOM "
                 << "killer (the worker ended with " << exit.dump()
                 << "); nothing to report as oom_killed";
  }
  EXPECT_EQ(exit.value("oom_killed", false), true) << job.dump(2);
  EXPECT_EQ(job["attempts"][0].value("disruption", ""), "oom_killed") << job.dump(2);
}

}  // namespace
}  // namespace drover::integration
