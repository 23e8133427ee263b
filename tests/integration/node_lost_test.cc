// Node loss with real processes (docs/workflows.md, "Node loss"): a server with a short
// --agent-timeout and two remote agents; agent-a hangs (SIGSTOP) or dies (SIGKILL) under running
// jobs, which end with the cause "node lost" and retry on agent-b when retry.on names node_lost
// (as the default retry does).
// When agent-a is back, the workers it still runs for ended attempts are stopped.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <string>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class NodeLost : public IntegrationTest {
 protected:
  // A server whose embedded agent has no GPU, so GPU jobs run on remote agents only.
  void StartServerAndAgentA() {
    // 4 s: an agent's calls may take 500 ms each and it fences itself after 2 s without the
    // server, which a loaded machine does not reach by accident before the fault is injected.
    server_ = StartServer("server", "0", {"--agent-timeout", "4s"});
    ASSERT_TRUE(server_->ok());
    client_ = std::make_unique<api::ApiClient>(server_->Client());
    agent_a_ = StartAgent(*server_, "agent-a", "2xA100-40GB");
    ASSERT_TRUE(WaitForNodeState("agent-a", "ready")) << Logs();
  }

  bool WaitForNodeState(const std::string& node, const std::string& state) {
    return integration::WaitForNodeState(*client_, node, state);
  }

  // Submits a one-GPU job: attempt 1 writes its pid to dir_/NAME.pid and sleeps; later attempts
  // exit 0. Returns its id.
  std::int64_t SubmitSleeper(const std::string& name, const std::string& retry) {
    auto ids = Submit(*client_, fmt::format(R"(kind: Job
name: {0}
resources: {{cpu: 100m, memory: 64Mi, gpus: 1}}
retry: {1}
script: |
  if [ "$DROVER_ATTEMPT" = 1 ]; then
    echo $$ > {2}.tmp && mv {2}.tmp {2}
    exec sleep 600
  fi
  echo "attempt $DROVER_ATTEMPT"
)",
                                            name, retry, PidFile(name)));
    return ids.empty() ? 0 : ids[0];
  }

  std::string PidFile(const std::string& name) const { return dir_.Sub(name + ".pid"); }

  // The pid attempt 1 of `name` wrote, once it has (0 if it never did).
  pid_t WorkerPid(const std::string& name) {
    pid_t pid = 0;
    WaitUntil([&] {
      std::vector<std::string> lines = ReadLines(PidFile(name));
      if (!lines.empty()) pid = std::stoi(lines[0]);
      return pid > 0;
    });
    return pid;
  }

  // The node that worker 0 of attempt `attempt` (1-based) of job `id` was placed on.
  std::string NodeOf(std::int64_t id, std::size_t attempt) {
    json job = GetJob(*client_, id);
    if (!job.is_object() || job["attempts"].size() < attempt) return "";
    return job["attempts"][attempt - 1]["workers"][0]["node"].get<std::string>();
  }

  std::string Logs() {
    return ProcessLogs(server_.get(), {{"agent-a", agent_a_.get()}, {"agent-b", agent_b_.get()}});
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<api::ApiClient> client_;
  std::unique_ptr<ChildProcess> agent_a_, agent_b_;
};

TEST_F(NodeLost, AHungAgentsJobsRetryElsewhereOrFailAndItsWorkersStopWhenItIsBack) {
  StartServerAndAgentA();
  // Both jobs start on agent-a, the only node with GPUs.
  // The default retry (one attempt, every kind) survives a node loss: it is not counted.
  const std::int64_t survivor = SubmitSleeper("survivor", "{max_attempts: 1}");
  const std::int64_t fragile = SubmitSleeper("fragile", "{max_attempts: 3, on: [exit]}");
  ASSERT_EQ(WaitForState(*client_, survivor, {"running"}), "running") << Logs();
  ASSERT_EQ(WaitForState(*client_, fragile, {"running"}), "running") << Logs();
  ASSERT_EQ(NodeOf(survivor, 1), "agent-a");
  ASSERT_EQ(NodeOf(fragile, 1), "agent-a");
  const pid_t survivor_pid = WorkerPid("survivor");
  const pid_t fragile_pid = WorkerPid("fragile");
  ASSERT_GT(survivor_pid, 0);
  ASSERT_GT(fragile_pid, 0);
  agent_b_ = StartAgent(*server_, "agent-b", "2xA100-40GB");
  ASSERT_TRUE(WaitForNodeState("agent-b", "ready")) << Logs();

  // agent-a hangs.
  ASSERT_EQ(kill(agent_a_->pid(), SIGSTOP), 0);
  ASSERT_EQ(WaitForTerminal(*client_, survivor), "succeeded")
      << GetJob(*client_, survivor).dump(2) << Logs();
  json job = GetJob(*client_, survivor);
  ASSERT_EQ(job["attempts"].size(), 2u);
  EXPECT_THAT(job["attempts"][0]["cause"].get<std::string>(),
              HasSubstr("node lost (node agent-a stopped answering for "));
  EXPECT_THAT(job["transitions"].dump(), HasSubstr("node loss 1 of 3 not counted against"));
  EXPECT_EQ(NodeOf(survivor, 2), "agent-b");
  ASSERT_EQ(WaitForTerminal(*client_, fragile), "failed") << Logs();
  job = GetJob(*client_, fragile);
  EXPECT_EQ(job["attempts"].size(), 1u);
  EXPECT_THAT(job["message"].get<std::string>(), HasSubstr("node lost (node agent-a stopped"));
  EXPECT_THAT(job["attempts"][0]["cause"].get<std::string>(), HasSubstr("node lost"));
  EXPECT_EQ(GetNode(*client_, "agent-a")["state"], "lost");
  // Their processes still run on the hung node: nobody there to stop them.
  EXPECT_TRUE(ProcessAlive(survivor_pid));
  EXPECT_TRUE(ProcessAlive(fragile_pid));

  // agent-a wakes up: it registers again and stops what it runs for the ended attempts.
  ASSERT_EQ(kill(agent_a_->pid(), SIGCONT), 0);
  ASSERT_TRUE(WaitForNodeState("agent-a", "ready")) << Logs();
  EXPECT_TRUE(WaitUntil([&] { return !ProcessAlive(survivor_pid) && !ProcessAlive(fragile_pid); }))
      << Logs();
  // Their late exits changed nothing.
  job = GetJob(*client_, survivor);
  EXPECT_EQ(job["state"], "succeeded");
  EXPECT_EQ(job["attempts"].size(), 2u);
  EXPECT_EQ(GetJob(*client_, fragile)["state"], "failed");
}

TEST_F(NodeLost, ADeadAgentsJobRetriesElsewhereAndARestartedAgentStopsItsOrphan) {
  StartServerAndAgentA();
  const std::int64_t survivor = SubmitSleeper("survivor", "{max_attempts: 2, on: [node_lost]}");
  ASSERT_EQ(WaitForState(*client_, survivor, {"running"}), "running") << Logs();
  const pid_t orphan = WorkerPid("survivor");
  ASSERT_GT(orphan, 0);
  agent_b_ = StartAgent(*server_, "agent-b", "2xA100-40GB");
  ASSERT_TRUE(WaitForNodeState("agent-b", "ready")) << Logs();

  // agent-a dies; its worker lives on under its supervisor.
  agent_a_->KillProcessOnly();
  ASSERT_EQ(WaitForTerminal(*client_, survivor), "succeeded") << Logs();
  EXPECT_EQ(NodeOf(survivor, 2), "agent-b");
  EXPECT_THAT(GetJob(*client_, survivor)["attempts"][0]["cause"].get<std::string>(),
              HasSubstr("node lost (node agent-a stopped answering"));
  EXPECT_EQ(GetNode(*client_, "agent-a")["state"], "lost");
  EXPECT_TRUE(ProcessAlive(orphan));

  // A new agent for the node takes over its directory and stops the orphan.
  agent_a_ = StartAgent(*server_, "agent-a", "2xA100-40GB");
  ASSERT_TRUE(WaitForNodeState("agent-a", "ready")) << Logs();
  EXPECT_TRUE(WaitUntil([&] { return !ProcessAlive(orphan); })) << Logs();
  EXPECT_EQ(GetJob(*client_, survivor)["attempts"].size(), 2u);
}

}  // namespace
}  // namespace drover::integration
