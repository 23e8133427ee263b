// Network faults between a real `drover agent` and a real server, injected by a
// testing::TcpProxy the test switches (loopback only): a partition of the agent, and the reply
// to its events lost. Each job appends a line to a file of its own at every start and finish,
// so the files count what ran: nothing is lost, completes twice or is recorded twice.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "drover/testing/tcp_proxy.h"
#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using ::drover::testing::TcpProxy;
using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class AgentFaults : public IntegrationTest {
 protected:
  // A server without GPUs of its own, and agent-a with two GPUs, which reaches it through
  // proxy_ only.
  void StartServerAndProxiedAgent(const std::string& agent_timeout) {
    server_ = StartServer("server", "0", {"--agent-timeout", agent_timeout});
    ASSERT_TRUE(server_->ok());
    client_ = std::make_unique<api::ApiClient>(server_->Client());
    const std::string& url = server_->url();
    auto proxy = TcpProxy::Create(std::stoi(url.substr(url.rfind(':') + 1)));
    ASSERT_TRUE(proxy) << proxy.error().ToString();
    proxy_ = *std::move(proxy);
    agent_a_ = StartAgent(proxy_->url(), "agent-a", "2xA100-40GB", server_->join_token_file());
    ASSERT_TRUE(WaitForNodeState("agent-a", "ready")) << Logs();
  }

  bool WaitForNodeState(const std::string& node, const std::string& state) {
    return integration::WaitForNodeState(*client_, node, state);
  }

  // Submits a one-GPU job whose every attempt appends "start N" to Runs(name), runs `body`,
  // and appends "done N" if the body succeeded. Returns its id.
  std::int64_t SubmitJob(const std::string& name, const std::string& retry,
                         const std::string& body) {
    auto ids = Submit(*client_, fmt::format(R"(kind: Job
name: {0}
resources: {{cpu: 100m, memory: 64Mi, gpus: 1}}
retry: {1}
script: |
  echo "start $DROVER_ATTEMPT" >> {2}
  {3}
  echo "done $DROVER_ATTEMPT" >> {2}
)",
                                            name, retry, RunsFile(name), body));
    return ids.empty() ? 0 : ids[0];
  }
  std::string RunsFile(const std::string& name) const { return dir_.Sub(name + ".runs"); }
  std::vector<std::string> Runs(const std::string& name) const { return ReadLines(RunsFile(name)); }

  // The transitions of job `id` into state `to` (any, if empty) whose cause contains `cause`.
  int Transitions(std::int64_t id, const std::string& to, const std::string& cause = "") {
    int count = 0;
    const json job = GetJob(*client_, id);
    for (const json& transition : job["transitions"]) {
      count += (to.empty() || transition["to_state"] == to) &&
               transition["cause"].get<std::string>().find(cause) != std::string::npos;
    }
    return count;
  }

  std::string Drover(const std::vector<std::string>& args) {
    std::vector<std::string> full = {"--server", server_->url()};
    full.insert(full.end(), args.begin(), args.end());
    CommandResult result = RunDrover(full, dir_.path());
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return result.out;
  }

  std::string Logs() {
    return ProcessLogs(server_.get(), {{"agent-a", agent_a_.get()}, {"agent-b", agent_b_.get()}});
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<api::ApiClient> client_;
  std::unique_ptr<TcpProxy> proxy_;
  std::unique_ptr<ChildProcess> agent_a_, agent_b_;
};

// The job never runs on both sides of the partition: agent-a, cut off, stops its own workers
// after half the agent timeout (self-fencing), before the server declares the node lost and
// starts attempt 2 elsewhere.
TEST_F(AgentFaults, APartitionedAgentsJobRetriesElsewhereOnceAndNeverRunsTwiceAtATime) {
  StartServerAndProxiedAgent("4s");  // as node_lost_test.cc, for a loaded machine
  // Attempt 1 writes its pid and sleeps; attempt 2 notes whether attempt 1 still runs, and
  // finishes at once.
  const std::string pid_file = dir_.Sub("survivor.pid");
  const std::string overlap_file = dir_.Sub("survivor.overlap");
  const std::int64_t survivor = SubmitJob(
      "survivor", "{max_attempts: 2, on: [node_lost]}",
      fmt::format("if [ \"$DROVER_ATTEMPT\" = 1 ]; then echo $$ > {0}.tmp && mv {0}.tmp {0} "
                  "&& exec sleep 600; elif kill -0 $(cat {0}) 2>/dev/null; then "
                  "echo attempt 1 still runs > {1}; fi",
                  pid_file, overlap_file));
  // A job that does not retry on node loss, running beside it.
  const std::int64_t fragile = SubmitJob("fragile", "{on: [exit]}", "exec sleep 600");
  ASSERT_EQ(WaitForState(*client_, survivor, {"running"}), "running") << Logs();
  ASSERT_EQ(WaitForState(*client_, fragile, {"running"}), "running") << Logs();
  ASSERT_TRUE(WaitUntil([&] { return !ReadLines(pid_file).empty(); })) << Logs();
  const pid_t orphan = std::stoi(ReadLines(pid_file)[0]);
  agent_b_ = StartAgent(*server_, "agent-b", "2xA100-40GB");
  ASSERT_TRUE(WaitForNodeState("agent-b", "ready")) << Logs();

  // The partition: agent-a keeps running, and neither side hears the other.
  proxy_->SetMode(TcpProxy::Mode::kBlackhole);
  ASSERT_EQ(WaitForTerminal(*client_, survivor), "succeeded") << Logs();
  EXPECT_EQ(GetNode(*client_, "agent-a")["state"], "lost");
  json job = GetJob(*client_, survivor);
  ASSERT_EQ(job["attempts"].size(), 2u) << job.dump(2);
  EXPECT_THAT(job["attempts"][0]["cause"].get<std::string>(),
              HasSubstr("node lost (node agent-a stopped answering for "));
  EXPECT_EQ(job["attempts"][1]["workers"][0]["node"], "agent-b");
  EXPECT_THAT(Drover({"get", std::to_string(survivor)}), HasSubstr("node lost"));
  ASSERT_EQ(WaitForTerminal(*client_, fragile), "failed") << Logs();
  EXPECT_THAT(Drover({"get", std::to_string(fragile)}), HasSubstr("node lost"));
  EXPECT_THAT(Drover({"explain", std::to_string(fragile)}), HasSubstr("node lost"));
  // Jobs submitted during the partition run on agent-b, each once.
  std::vector<std::int64_t> during;
  for (int i = 0; i < 3; ++i) during.push_back(SubmitJob(fmt::format("during-{}", i), "{}", ""));
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(WaitForTerminal(*client_, during[i]), "succeeded") << Logs();
    EXPECT_THAT(Runs(fmt::format("during-{}", i)), ElementsAre("start 1", "done 1"));
  }
  // agent-a stopped attempt 1 itself, before attempt 2 started (the server on main left it
  // running until the partition healed).
  EXPECT_FALSE(ProcessAlive(orphan));
  EXPECT_TRUE(ReadLines(overlap_file).empty()) << ReadLines(overlap_file)[0];

  // The partition heals: agent-a registers again; the job completed once, by attempt 2.
  proxy_->SetMode(TcpProxy::Mode::kPass);
  ASSERT_TRUE(WaitForNodeState("agent-a", "ready")) << Logs();
  EXPECT_THAT(Runs("survivor"), ElementsAre("start 1", "start 2", "done 2"));
  EXPECT_THAT(Runs("fragile"), ElementsAre("start 1"));
  EXPECT_EQ(Transitions(fragile, "failed"), 1);
  job = GetJob(*client_, survivor);
  EXPECT_EQ(job["state"], "succeeded");
  EXPECT_EQ(job["attempts"].size(), 2u);
  EXPECT_EQ(Transitions(survivor, "succeeded"), 1);
  for (std::int64_t id : during) EXPECT_EQ(Transitions(id, "succeeded"), 1);
}

// The server queued a launch and answered the agent's poll with it, but the answer was lost:
// the launch is sent again on the next poll (acknowledged commands), and runs once.
TEST_F(AgentFaults, ALaunchWhoseReplyWasLostStillRunsOnce) {
  StartServerAndProxiedAgent("30s");
  // Whichever poll carries the launch (its script names the runs file) loses its answer; the
  // agent gives that call up after its request timeout and polls again.
  proxy_->DropReplyContaining(RunsFile("lost-launch"));
  const std::int64_t id = SubmitJob("lost-launch", "{}", "");
  ASSERT_TRUE(WaitUntil([&] { return proxy_->swallowed_replies() > 0; })) << Logs();
  EXPECT_EQ(WaitForTerminal(*client_, id), "succeeded") << Logs();
  EXPECT_THAT(Runs("lost-launch"), ElementsAre("start 1", "done 1"));
  EXPECT_EQ(GetJob(*client_, id)["attempts"].size(), 1u);
}

TEST_F(AgentFaults, AnExitWhoseReplyWasLostIsSentAgainAndRecordedOnce) {
  // Longer than the agent's request timeout (an eighth of it, 3.75 s), which the lost reply
  // makes it wait.
  StartServerAndProxiedAgent("30s");
  // Attempt 1 fails with exit 3 once released; attempt 2 succeeds once released.
  const std::string release = dir_.Sub("release");
  const std::int64_t id =
      SubmitJob("flaky", "{max_attempts: 3, on: [exit]}",
                fmt::format("until [ -e {0}.$DROVER_ATTEMPT ]; do sleep 0.05; done; "
                            "[ \"$DROVER_ATTEMPT\" = 1 ] && exit 3",
                            release));
  ASSERT_EQ(WaitForState(*client_, id, {"running"}), "running") << Logs();

  // The answer to agent-a's next events POST (attempt 1's exit) is lost: the server took the
  // exit, the agent does not know it and sends it again.
  proxy_->DropNextReplies("POST /v1/agents/agent-a/events", 1);
  WriteFile(release + ".1", "");
  ASSERT_TRUE(WaitUntil([&] { return proxy_->swallowed_replies() > 0; })) << Logs();
  ASSERT_TRUE(WaitUntil([&] { return GetJob(*client_, id)["attempts"].size() == 2u; })) << Logs();
  ASSERT_EQ(WaitForState(*client_, id, {"running"}), "running") << Logs();
  WriteFile(release + ".2", "");
  ASSERT_EQ(WaitForTerminal(*client_, id), "succeeded") << Logs();

  // One exit of attempt 1, one retry, one success.
  json job = GetJob(*client_, id);
  ASSERT_EQ(job["attempts"].size(), 2u) << job.dump(2);
  EXPECT_THAT(job["attempts"][0]["cause"].get<std::string>(), HasSubstr("3"));
  EXPECT_EQ(Transitions(id, "", "attempt 1 failed"), 1);
  EXPECT_EQ(Transitions(id, "succeeded"), 1);
  EXPECT_THAT(Runs("flaky"), ElementsAre("start 1", "start 2", "done 2"));
}

}  // namespace
}  // namespace drover::integration
