// Agent liveness in the control plane (docs/workflows.md, "Node loss"), under a fake clock and
// with the loop driven one turn at a time (RunOnce): the test plays the remote agent through the
// control plane's agent calls.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "drover/server/control_plane.h"
#include "drover/testing/fake_clock.h"
#include "drover/testing/fake_runtime.h"
#include "drover/testing/temp_dir.h"

namespace drover::server {
namespace {

using model::JobState;
using ::testing::HasSubstr;

constexpr DurationMs kTimeout = 30'000;

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
  void SetUp() override { OpenPlane(); }

  // A control plane without its loop thread over the SQLite store in dir_ (kept across
  // OpenPlane calls).
  void OpenPlane() {
    plane_.reset();
    auto store = store::OpenSqliteStore(dir_.Sub("drover.db"));
    ASSERT_TRUE(store) << store.error().ToString();
    ControlPlaneOptions options;
    options.run_loop = false;
    options.agent_timeout_ms = kTimeout;
    options.join_token = join_token_;
    plane_ = std::make_unique<ControlPlane>(*std::move(store), clock_, options);
  }

  // node-r's agent (or `node`'s) as Authorize finds it from its credential (the tests of
  // liveness take its identity as given; those of identity below present credentials).
  static api::Caller ItsAgent(const std::string& node = "node-r") {
    api::Caller caller;
    caller.bearer = true;
    caller.agent = NodeId(node);
    caller.joined = true;
    return caller;
  }
  // A caller presenting `credential` (none when empty) and the join token if `joined`, as
  // Authorize finds it against the plane.
  api::Caller Presenting(const std::string& credential, bool joined = true) {
    api::Caller caller;
    caller.bearer = !credential.empty();
    if (caller.bearer) caller.agent = plane_->AgentOf(credential);
    caller.joined = joined;
    return caller;
  }

  // Submits a one-GPU job for a `gpu_model` GPU with `retry_on`; returns its id.
  JobId SubmitJob(const std::string& gpu_model, const std::string& retry_on) {
    auto submitted = plane_->Submit(
        "kind: Job\nname: train\nresources: {cpu: 100m, memory: 64Mi, gpus: 1, gpu_model: " +
            gpu_model + "}\nretry: {max_attempts: 2, on: [" + retry_on + "]}\nscript: sleep 100\n",
        spec::ParseOptions{}, "", model::AdminIdentity("alice"));
    EXPECT_TRUE(submitted) << submitted.error().ToString();
    return submitted ? submitted->jobs.at(0).id : JobId(0);
  }

  // Plays node-r's agent after one turn of the loop: the commands it has for node-r, which it
  // acknowledges on its next poll.
  std::vector<AgentCommand> CommandsAfterATurn() {
    plane_->RunOnce();
    auto batch = plane_->TakeCommands(NodeId("node-r"), ack_, 0);
    EXPECT_TRUE(batch) << batch.error().ToString();
    if (!batch) return {};
    if (batch->epoch != ack_.epoch) ack_ = api::AgentAck{batch->epoch, 0};
    if (!batch->commands.empty()) ack_.seq = batch->commands.back().seq;
    return std::move(batch->commands);
  }

  // True if one of `commands` matches `wanted`.
  static bool Has(const std::vector<AgentCommand>& commands,
                  const std::function<bool(const AgentCommand&)>& wanted) {
    for (const AgentCommand& command : commands) {
      if (wanted(command)) return true;
    }
    return false;
  }

  static bool IsLaunchOf(const AgentCommand& command, JobId job, int attempt) {
    return command.kind == AgentCommand::Kind::kLaunch && command.launch.key.job == job &&
           command.launch.key.attempt == attempt;
  }

  // Starts `job`'s attempt 1 on node-r, reporting its worker started; returns its key.
  model::WorkerKey StartOnRemote(JobId job) {
    EXPECT_TRUE(Has(CommandsAfterATurn(),
                    [&](const AgentCommand& command) { return IsLaunchOf(command, job, 1); }));
    const model::WorkerKey key{job, 1, 0};
    model::WorkerEvent started{key, model::WorkerEvent::Kind::kStarted, clock_.Now(), {}};
    EXPECT_TRUE(plane_->ReportEvents(NodeId("node-r"), {started}));
    plane_->RunOnce();
    EXPECT_EQ(State(job), JobState::kRunning);
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

  std::string join_token_;  // ControlPlaneOptions::join_token of OpenPlane
  testing::TempDir dir_{"drover-agent-liveness"};
  testing::FakeClock clock_;
  std::unique_ptr<ControlPlane> plane_;
  api::AgentAck ack_;  // what the played agent acknowledges on its next poll
};

TEST_F(AgentLivenessTest, ASilentAgentsWorkersAreLostItsNodeTooUntilItRegistersAgain) {
  // The embedded agent's workers never report.
  plane_->AddLocalNode(MakeNode("node-a", "H100"), std::make_unique<testing::FakeRuntime>(),
                       dir_.path());
  ASSERT_TRUE(plane_->Start());
  ASSERT_TRUE(plane_->RegisterRemoteNode(MakeNode("node-r", "A100"), ItsAgent()));
  JobId local = SubmitJob("H100", "node_lost");
  JobId retried = SubmitJob("A100", "node_lost");
  const model::WorkerKey orphan = StartOnRemote(retried);
  ASSERT_EQ(State(local), JobState::kStarting);
  EXPECT_GT(Node("node-r")->last_heard_at, 0);

  // Silent up to the timeout: nothing happens.
  clock_.Advance(kTimeout);
  plane_->RunOnce();
  EXPECT_EQ(State(retried), JobState::kRunning);
  EXPECT_FALSE(Node("node-r")->lost);

  clock_.Advance(1'000);
  plane_->RunOnce();
  ASSERT_EQ(State(retried), JobState::kReady);
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
  auto refused = plane_->TakeCommands(NodeId("node-r"), {}, 0);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kNotFound);
  Status report = plane_->ReportEvents(NodeId("node-r"), {});
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().code, ErrorCode::kNotFound);
  plane_->RunOnce();
  EXPECT_EQ(State(retried), JobState::kReady);

  // Back: the agent adopts and stops attempt 1's worker, then runs attempt 2.
  ASSERT_TRUE(plane_->RegisterRemoteNode(MakeNode("node-r", "A100"), ItsAgent()));
  EXPECT_FALSE(Node("node-r")->lost);
  std::vector<AgentCommand> commands = CommandsAfterATurn();
  ASSERT_EQ(commands.size(), 3u);
  EXPECT_TRUE(IsLaunchOf(commands[2], retried, 2));
  EXPECT_EQ(commands[0].kind, AgentCommand::Kind::kAdopt);
  EXPECT_EQ(commands[0].keys, std::vector<model::WorkerKey>{orphan});
  EXPECT_EQ(commands[1].kind, AgentCommand::Kind::kStop);
  EXPECT_EQ(commands[1].key, orphan);
  // Its late report changes nothing.
  model::WorkerEvent stopped{orphan, model::WorkerEvent::Kind::kExited, clock_.Now(), {}};
  stopped.exit.cancelled = true;
  ASSERT_TRUE(plane_->ReportEvents(NodeId("node-r"), {stopped}));
  plane_->RunOnce();
  EXPECT_EQ(State(retried), JobState::kStarting);
  EXPECT_EQ(plane_->GetJob(retried)->current_attempt()->number, 2);
}

// As Kubernetes' NodeRestriction has a kubelet change only its own pods: another agent, broken or
// hostile, cannot end, start or checkpoint node-r's worker, nor give its job output values.
TEST_F(AgentLivenessTest, AnAgentReportsOnlyTheWorkersPlacedOnItsNode) {
  ASSERT_TRUE(plane_->Start());
  ASSERT_TRUE(plane_->RegisterRemoteNode(MakeNode("node-r", "A100"), ItsAgent()));
  ASSERT_TRUE(plane_->RegisterRemoteNode(MakeNode("node-x", "H100"), ItsAgent("node-x")));
  const JobId id = SubmitJob("A100", "exit");
  const model::WorkerKey key = StartOnRemote(id);

  model::WorkerEvent forged{key, model::WorkerEvent::Kind::kExited, clock_.Now(), {}};
  forged.exit.exit_code = 0;
  forged.exit.output_values = {{"accuracy", "0.99"}};
  const model::WorkerEvent checkpoint{key, model::WorkerEvent::Kind::kCheckpoint, clock_.Now(), {}};
  ASSERT_TRUE(plane_->ReportEvents(NodeId("node-x"), {checkpoint, forged}));
  plane_->RunOnce();
  EXPECT_EQ(State(id), JobState::kRunning);
  model::Job job = *plane_->GetJob(id);
  EXPECT_FALSE(job.attempts.at(0).workers.at(0).exit.has_value());
  EXPECT_EQ(job.attempts[0].last_checkpoint_at, 0);

  // Its own agent's report ends it.
  model::WorkerEvent exited{key, model::WorkerEvent::Kind::kExited, clock_.Now(), {}};
  exited.exit.exit_code = 0;
  ASSERT_TRUE(plane_->ReportEvents(NodeId("node-r"), {exited}));
  plane_->RunOnce();
  EXPECT_EQ(State(id), JobState::kSucceeded);
}

TEST_F(AgentLivenessTest, AJobWhoseRetryOnLeavesNodeLostOutFails) {
  ASSERT_TRUE(plane_->Start());
  ASSERT_TRUE(plane_->RegisterRemoteNode(MakeNode("node-r", "A100"), ItsAgent()));
  JobId id = SubmitJob("A100", "exit");
  StartOnRemote(id);
  clock_.Advance(kTimeout + 1);
  plane_->RunOnce();
  ASSERT_EQ(State(id), JobState::kFailed);
  EXPECT_THAT(plane_->GetJob(id)->status_message, HasSubstr("node lost (node node-r stopped"));
}

TEST_F(AgentLivenessTest, AnAgentThatDoesNotComeBackAfterARestartIsLost) {
  ASSERT_TRUE(plane_->Start());
  ASSERT_TRUE(plane_->RegisterRemoteNode(MakeNode("node-r", "A100"), ItsAgent()));
  JobId id = SubmitJob("A100", "node_lost");
  const model::WorkerKey orphan = StartOnRemote(id);

  // The server restarts; node-r's agent never registers with the new one.
  OpenPlane();
  ASSERT_TRUE(plane_->Start());
  EXPECT_EQ(State(id), JobState::kRunning);
  clock_.Advance(kTimeout - 1);
  plane_->RunOnce();
  EXPECT_EQ(State(id), JobState::kRunning);
  clock_.Advance(2);
  plane_->RunOnce();
  ASSERT_EQ(State(id), JobState::kReady);
  EXPECT_FALSE(Node("node-r").has_value());  // never registered with this server

  // When it does come, it stops the worker and runs the retry.
  ASSERT_TRUE(plane_->RegisterRemoteNode(MakeNode("node-r", "A100"), ItsAgent()));
  std::vector<AgentCommand> commands = CommandsAfterATurn();
  ASSERT_EQ(commands.size(), 3u);
  EXPECT_TRUE(IsLaunchOf(commands[2], id, 2));
  EXPECT_EQ(commands[0].kind, AgentCommand::Kind::kAdopt);
  EXPECT_EQ(commands[1].kind, AgentCommand::Kind::kStop);
  EXPECT_EQ(commands[1].key, orphan);
}

// Issue 15, "Agents are not who they say": two agents with one --name merged (the node showed
// the second's GPUs while launches went to the first). A live node's name is now refused to an
// agent without its credential, changing nothing, before and after a server restart.
TEST_F(AgentLivenessTest, ALiveNodesNameIsRefusedToAnotherAgentEvenAfterARestart) {
  ASSERT_TRUE(plane_->Start());
  auto first = plane_->RegisterRemoteNode(MakeNode("node-r", "A100"), Presenting(""));
  ASSERT_TRUE(first) << first.error().ToString();
  ASSERT_EQ(first->size(), 64u);  // 32 random bytes in hex
  EXPECT_EQ(plane_->AgentOf(*first), NodeId("node-r"));

  auto bare = plane_->RegisterRemoteNode(MakeNode("node-r", "H100"), Presenting(""));
  ASSERT_FALSE(bare);
  EXPECT_EQ(bare.error().code, ErrorCode::kUnauthenticated);
  EXPECT_THAT(bare.error().message, HasSubstr("node node-r is held by another agent"));
  auto other = plane_->RegisterRemoteNode(MakeNode("node-r", "H100"), Presenting("not-it"));
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, ErrorCode::kAlreadyExists);
  EXPECT_EQ(Node("node-r")->node.gpus.at(0).model, "A100");

  OpenPlane();
  ASSERT_TRUE(plane_->Start());
  auto after = plane_->RegisterRemoteNode(MakeNode("node-r", "H100"), Presenting("not-it"));
  ASSERT_FALSE(after);
  EXPECT_EQ(after.error().code, ErrorCode::kAlreadyExists);
  auto again = plane_->RegisterRemoteNode(MakeNode("node-r", "A100"), Presenting(*first));
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(*again, "");  // it keeps its credential
}

TEST_F(AgentLivenessTest, ALostNodeIsTakenOverByANewAgentWithANewCredential) {
  ASSERT_TRUE(plane_->Start());
  auto old = plane_->RegisterRemoteNode(MakeNode("node-r", "A100"), Presenting(""));
  ASSERT_TRUE(old);
  clock_.Advance(kTimeout + 1);
  plane_->RunOnce();
  ASSERT_TRUE(Node("node-r")->lost);

  auto fresh = plane_->RegisterRemoteNode(MakeNode("node-r", "H100"), Presenting(""));
  ASSERT_TRUE(fresh) << fresh.error().ToString();
  EXPECT_NE(*fresh, *old);
  EXPECT_EQ(plane_->AgentOf(*fresh), NodeId("node-r"));
  EXPECT_EQ(plane_->AgentOf(*old), std::nullopt);
  EXPECT_EQ(Node("node-r")->node.gpus.at(0).model, "H100");
}

TEST_F(AgentLivenessTest, AJoinTokenIsNeededForACredentialAndNoAgentClaimsTheEmbeddedNode) {
  join_token_ = "s3cret";
  OpenPlane();
  plane_->AddLocalNode(MakeNode("node-a", "H100"), std::make_unique<testing::FakeRuntime>(),
                       dir_.path());
  ASSERT_TRUE(plane_->Start());
  EXPECT_FALSE(plane_->JoinTokenAccepted(""));
  EXPECT_TRUE(plane_->JoinTokenAccepted("s3cret"));
  auto unjoined = plane_->RegisterRemoteNode(MakeNode("node-r", "A100"), Presenting("", false));
  ASSERT_FALSE(unjoined);
  EXPECT_EQ(unjoined.error().code, ErrorCode::kUnauthenticated);
  EXPECT_FALSE(Node("node-r").has_value());
  auto embedded = plane_->RegisterRemoteNode(MakeNode("node-a", "A100"), Presenting(""));
  ASSERT_FALSE(embedded);
  EXPECT_EQ(embedded.error().code, ErrorCode::kAlreadyExists);
  EXPECT_TRUE(plane_->RegisterRemoteNode(MakeNode("node-r", "A100"), Presenting("")));
}

// Issue 15, "Restart gaps": a server restarted while a node was lost forgot which orphaned
// workers to stop there. The lost record is stored, restored at Start, and the stops are queued
// when the agent registers.
TEST_F(AgentLivenessTest, ARestartedServerStillStopsTheOrphansOfANodeLostBeforeIt) {
  ASSERT_TRUE(plane_->Start());
  auto credential = plane_->RegisterRemoteNode(MakeNode("node-r", "A100"), Presenting(""));
  ASSERT_TRUE(credential);
  JobId id = SubmitJob("A100", "node_lost");
  const model::WorkerKey orphan = StartOnRemote(id);
  clock_.Advance(kTimeout + 1);
  plane_->RunOnce();
  ASSERT_EQ(State(id), JobState::kReady);

  OpenPlane();
  ASSERT_TRUE(plane_->Start());
  auto polled = plane_->TakeCommands(NodeId("node-r"), api::AgentAck{}, 0);
  ASSERT_FALSE(polled);  // lost: the agent registers again
  EXPECT_EQ(polled.error().code, ErrorCode::kNotFound);
  ASSERT_TRUE(plane_->RegisterRemoteNode(MakeNode("node-r", "A100"), Presenting(*credential)));
  std::vector<AgentCommand> commands = CommandsAfterATurn();
  ASSERT_GE(commands.size(), 2u);
  EXPECT_EQ(commands[0].kind, AgentCommand::Kind::kAdopt);
  EXPECT_EQ(commands[0].keys, std::vector<model::WorkerKey>{orphan});
  EXPECT_EQ(commands[1].kind, AgentCommand::Kind::kStop);
  EXPECT_EQ(commands[1].key, orphan);

  // Once queued, the record is cleared: a further restart does not stop it again.
  OpenPlane();
  ASSERT_TRUE(plane_->Start());
  ASSERT_TRUE(plane_->RegisterRemoteNode(MakeNode("node-r", "A100"), Presenting(*credential)));
  for (const AgentCommand& command : CommandsAfterATurn()) {
    EXPECT_NE(command.kind, AgentCommand::Kind::kStop);
  }
}

}  // namespace
}  // namespace drover::server
