// Agent liveness in the control plane (docs/workflows.md, "Node loss"), under a fake clock: the
// test plays the remote agent through the control plane's agent calls.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "drover/server/control_plane.h"
#include "drover/testing/fake_clock.h"

namespace drover::server {
namespace {

using model::JobState;
using ::testing::HasSubstr;

constexpr DurationMs kTimeout = 30'000;

// The embedded agent's runtime, doing nothing: its workers never report.
class SilentRuntime final : public agent::WorkerRuntime {
 public:
  Status Launch(const model::LaunchSpec&) override { return OkStatus(); }
  Status Stop(const model::WorkerKey&, const model::StopRequest&) override { return OkStatus(); }
  std::vector<model::WorkerKey> Adopt(const std::vector<model::WorkerKey>&) override { return {}; }
  std::vector<model::WorkerEvent> Poll() override { return {}; }
};

bool WaitUntil(const std::function<bool()>& condition) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return condition();
}

model::Node MakeNode(const std::string& name, const std::string& gpu_model) {
  model::Node node;
  node.name = NodeId(name);
  node.cpu_millis = 8000;
  node.memory_bytes = std::int64_t{64} << 30;
  model::Gpu gpu;
  gpu.uuid = "GPU-" + name;
  gpu.model = gpu_model;
  gpu.memory_bytes = std::int64_t{40} << 30;
  node.gpus.push_back(gpu);
  return node;
}

class AgentLivenessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/drover_agent_liveness_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    OpenPlane();
  }

  void TearDown() override {
    plane_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // A control plane over the SQLite store in dir_ (kept across OpenPlane calls).
  void OpenPlane() {
    plane_.reset();
    auto store = store::OpenSqliteStore(dir_ + "/drover.db");
    ASSERT_TRUE(store) << store.error().ToString();
    ControlPlaneOptions options;
    options.poll_interval_ms = 1;
    options.idle_cycle_ms = 10;
    options.agent_timeout_ms = kTimeout;
    plane_ = std::make_unique<ControlPlane>(*std::move(store), clock_, options);
  }

  // Submits a one-GPU job for a `gpu_model` GPU with `retry_on`; returns its id.
  JobId SubmitJob(const std::string& gpu_model, const std::string& retry_on) {
    auto submitted = plane_->Submit(
        "kind: Job\nname: train\nresources: {cpu: 100m, memory: 64Mi, gpus: 1, gpu_model: " +
            gpu_model + "}\nretry: {max_attempts: 2, on: [" + retry_on + "]}\nscript: sleep 100\n",
        spec::ParseOptions{}, "", "alice");
    EXPECT_TRUE(submitted) << submitted.error().ToString();
    return submitted ? submitted->jobs.at(0).id : JobId(0);
  }

  // Plays node-r's agent: collects its commands until one matches `wanted`; all collected.
  std::vector<AgentCommand> CommandsUntil(const std::function<bool(const AgentCommand&)>& wanted) {
    std::vector<AgentCommand> seen;
    WaitUntil([&] {
      auto commands = plane_->TakeCommands(NodeId("node-r"), 0);
      if (!commands) return false;
      bool found = false;
      for (AgentCommand& command : *commands) {
        found = found || wanted(command);
        seen.push_back(std::move(command));
      }
      return found;
    });
    return seen;
  }

  static bool IsLaunchOf(const AgentCommand& command, JobId job, int attempt) {
    return command.kind == AgentCommand::Kind::kLaunch && command.launch.key.job == job &&
           command.launch.key.attempt == attempt;
  }

  // Starts `job`'s attempt 1 on node-r, reporting its worker started; returns its key.
  model::WorkerKey StartOnRemote(JobId job) {
    CommandsUntil([&](const AgentCommand& command) { return IsLaunchOf(command, job, 1); });
    const model::WorkerKey key{job, 1, 0};
    model::WorkerEvent started{key, model::WorkerEvent::Kind::kStarted, clock_.Now(), {}};
    EXPECT_TRUE(plane_->ReportEvents(NodeId("node-r"), {started}));
    EXPECT_TRUE(WaitUntil([&] { return State(job) == JobState::kRunning; }));
    return key;
  }

  JobState State(JobId id) {
    auto job = plane_->GetJob(id);
    return job ? job->state : JobState::kPending;
  }

  std::optional<NodeStatus> Node(const std::string& name) {
    for (NodeStatus& status : plane_->Nodes()) {
      if (status.node.name.value() == name) return status;
    }
    return std::nullopt;
  }

  std::string dir_;
  testing::FakeClock clock_;
  std::unique_ptr<ControlPlane> plane_;
};

TEST_F(AgentLivenessTest, ASilentAgentsWorkersAreLostItsNodeTooUntilItRegistersAgain) {
  plane_->AddLocalNode(MakeNode("node-a", "H100"), std::make_unique<SilentRuntime>(), dir_);
  ASSERT_TRUE(plane_->Start());
  ASSERT_TRUE(plane_->RegisterRemoteNode(MakeNode("node-r", "A100")));
  JobId local = SubmitJob("H100", "node_lost");
  JobId retried = SubmitJob("A100", "node_lost");
  const model::WorkerKey orphan = StartOnRemote(retried);
  ASSERT_TRUE(WaitUntil([&] { return State(local) == JobState::kStarting; }));
  EXPECT_GT(Node("node-r")->last_heard_at, 0);

  // Silent up to the timeout: nothing happens.
  clock_.Advance(kTimeout);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(State(retried), JobState::kRunning);
  EXPECT_FALSE(Node("node-r")->lost);

  clock_.Advance(1'000);
  ASSERT_TRUE(WaitUntil([&] { return State(retried) == JobState::kReady; }));
  model::Job job = *plane_->GetJob(retried);
  ASSERT_EQ(job.attempts.size(), 2u);
  ASSERT_TRUE(job.attempts[0].workers.at(0).exit.has_value());
  EXPECT_TRUE(job.attempts[0].workers[0].exit->node_lost);
  EXPECT_THAT(job.attempts[0].outcome_reason,
              HasSubstr("node lost (node node-r stopped answering for 31 s)"));
  EXPECT_TRUE(Node("node-r")->lost);
  // The embedded agent is never lost, and neither is its job.
  EXPECT_FALSE(Node("node-a")->lost);
  EXPECT_EQ(State(local), JobState::kStarting);

  // The agent's calls are refused until it registers again; the retry waits for a node.
  auto refused = plane_->TakeCommands(NodeId("node-r"), 0);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kNotFound);
  Status report = plane_->ReportEvents(NodeId("node-r"), {});
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().code, ErrorCode::kNotFound);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(State(retried), JobState::kReady);

  // Back: the agent adopts and stops attempt 1's worker, then runs attempt 2.
  ASSERT_TRUE(plane_->RegisterRemoteNode(MakeNode("node-r", "A100")));
  EXPECT_FALSE(Node("node-r")->lost);
  std::vector<AgentCommand> commands =
      CommandsUntil([&](const AgentCommand& command) { return IsLaunchOf(command, retried, 2); });
  ASSERT_GE(commands.size(), 3u);
  EXPECT_EQ(commands[0].kind, AgentCommand::Kind::kAdopt);
  EXPECT_EQ(commands[0].keys, std::vector<model::WorkerKey>{orphan});
  EXPECT_EQ(commands[1].kind, AgentCommand::Kind::kStop);
  EXPECT_EQ(commands[1].key, orphan);
  // Its late report changes nothing.
  model::WorkerEvent stopped{orphan, model::WorkerEvent::Kind::kExited, clock_.Now(), {}};
  stopped.exit.cancelled = true;
  ASSERT_TRUE(plane_->ReportEvents(NodeId("node-r"), {stopped}));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(State(retried), JobState::kStarting);
  EXPECT_EQ(plane_->GetJob(retried)->current_attempt()->number, 2);
}

TEST_F(AgentLivenessTest, AJobWhoseRetryOnLeavesNodeLostOutFails) {
  ASSERT_TRUE(plane_->Start());
  ASSERT_TRUE(plane_->RegisterRemoteNode(MakeNode("node-r", "A100")));
  JobId id = SubmitJob("A100", "exit");
  StartOnRemote(id);
  clock_.Advance(kTimeout + 1);
  ASSERT_TRUE(WaitUntil([&] { return State(id) == JobState::kFailed; }));
  EXPECT_THAT(plane_->GetJob(id)->status_message, HasSubstr("node lost (node node-r stopped"));
}

TEST_F(AgentLivenessTest, AnAgentThatDoesNotComeBackAfterARestartIsLost) {
  ASSERT_TRUE(plane_->Start());
  ASSERT_TRUE(plane_->RegisterRemoteNode(MakeNode("node-r", "A100")));
  JobId id = SubmitJob("A100", "node_lost");
  const model::WorkerKey orphan = StartOnRemote(id);

  // The server restarts; node-r's agent never registers with the new one.
  OpenPlane();
  ASSERT_TRUE(plane_->Start());
  EXPECT_EQ(State(id), JobState::kRunning);
  clock_.Advance(kTimeout - 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(State(id), JobState::kRunning);
  clock_.Advance(2);
  ASSERT_TRUE(WaitUntil([&] { return State(id) == JobState::kReady; }));
  EXPECT_FALSE(Node("node-r").has_value());  // never registered with this server

  // When it does come, it stops the worker and runs the retry.
  ASSERT_TRUE(plane_->RegisterRemoteNode(MakeNode("node-r", "A100")));
  std::vector<AgentCommand> commands =
      CommandsUntil([&](const AgentCommand& command) { return IsLaunchOf(command, id, 2); });
  ASSERT_GE(commands.size(), 3u);
  EXPECT_EQ(commands[0].kind, AgentCommand::Kind::kAdopt);
  EXPECT_EQ(commands[1].kind, AgentCommand::Kind::kStop);
  EXPECT_EQ(commands[1].key, orphan);
}

}  // namespace
}  // namespace drover::server
