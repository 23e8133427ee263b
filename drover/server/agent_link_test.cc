// The agent protocol's command codec, RemoteRuntime's queueing and its agent's liveness.

#include "drover/server/agent_link.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "drover/codec/json.h"
#include "drover/testing/fake_clock.h"
#include "drover/testing/wait_until.h"

namespace drover::server {
namespace {

using nlohmann::json;

TEST(AgentCommand, StopCarriesPreemptionAndReason) {
  AgentCommand stop;
  stop.kind = AgentCommand::Kind::kStop;
  stop.key = model::WorkerKey{JobId(7), 2, 1};
  stop.stop = model::StopRequest{.preempt = true, .reason = "preempted by job 12 (reclaim)"};
  json wire = ToJson(stop);
  EXPECT_EQ(wire["preempt"], true);
  auto decoded = AgentCommandFromJson(json::parse(codec::DumpJson(wire)));
  ASSERT_TRUE(decoded) << decoded.error().ToString();
  EXPECT_EQ(decoded->kind, AgentCommand::Kind::kStop);
  EXPECT_EQ(decoded->key, stop.key);
  EXPECT_TRUE(decoded->stop.preempt);
  EXPECT_EQ(decoded->stop.reason, "preempted by job 12 (reclaim)");
}

TEST(AgentCommand, StopWithoutPreemptionFieldsIsAPlainStop) {
  // What a server older than preemption sends.
  auto decoded = AgentCommandFromJson(
      json::parse(R"({"kind": "stop", "key": {"job": 3, "attempt": 1, "rank": 0}})"));
  ASSERT_TRUE(decoded) << decoded.error().ToString();
  EXPECT_FALSE(decoded->stop.preempt);
  EXPECT_EQ(decoded->stop.reason, "");
}

TEST(RemoteRuntime, QueuesStopsAndPassesCheckpointEventsThrough) {
  testing::FakeClock clock;
  RemoteRuntime runtime(NodeId("node-r"), clock);
  runtime.Connect({});
  ASSERT_TRUE(runtime.Stop(model::WorkerKey{JobId(1), 1, 0}, {.preempt = true, .reason = "r"}));
  auto commands = runtime.TakeCommands(0);
  ASSERT_TRUE(commands) << commands.error().ToString();
  ASSERT_EQ(commands->size(), 1u);
  EXPECT_TRUE((*commands)[0].stop.preempt);

  model::WorkerEvent checkpoint;
  checkpoint.key = model::WorkerKey{JobId(1), 1, 0};
  checkpoint.kind = model::WorkerEvent::Kind::kCheckpoint;
  checkpoint.at = 1'700'000'000'123;
  auto wire = codec::WorkerEventFromJson(json::parse(codec::DumpJson(codec::ToJson(checkpoint))));
  ASSERT_TRUE(wire) << wire.error().ToString();
  ASSERT_TRUE(runtime.Report({*wire}));
  auto events = runtime.Poll();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], checkpoint);
}

TEST(RemoteRuntime, CountsTheAgentsSilenceFromItsLastCall) {
  testing::FakeClock clock;
  RemoteRuntime runtime(NodeId("node-r"), clock);
  // Before registration: silent since the runtime was created, and its calls are refused.
  clock.Advance(4'000);
  EXPECT_EQ(runtime.Silence(), 4'000);
  EXPECT_EQ(runtime.last_heard_at(), 0);
  auto refused = runtime.TakeCommands(0);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(runtime.Silence(), 4'000);

  runtime.Connect({});
  EXPECT_EQ(runtime.Silence(), 0);
  EXPECT_EQ(runtime.last_heard_at(), clock.Now());
  clock.Advance(3'000);
  EXPECT_EQ(runtime.Silence(), 3'000);
  ASSERT_TRUE(runtime.TakeCommands(0));
  EXPECT_EQ(runtime.Silence(), 0);
  clock.Advance(1'000);
  ASSERT_TRUE(runtime.Report({}));
  EXPECT_EQ(runtime.Silence(), 0);
  EXPECT_EQ(runtime.last_heard_at(), clock.Now());
}

TEST(RemoteRuntime, AnAgentWaitingInALongPollIsNotSilent) {
  testing::FakeClock clock;
  RemoteRuntime runtime(NodeId("node-r"), clock);
  runtime.Connect({});
  std::thread poll([&] { EXPECT_TRUE(runtime.TakeCommands(60'000)); });
  // Time passes while the poll waits; the agent is there all along.
  clock.Advance(120'000);
  EXPECT_TRUE(testing::WaitUntil([&] { return runtime.Silence() == 0; }));
  runtime.Close();
  poll.join();
  EXPECT_EQ(runtime.Silence(), 0);  // the poll's answer is a call too
}

TEST(RemoteRuntime, ALostAgentIsRefusedUntilItRegistersAndThenStopsWhatWasLost) {
  testing::FakeClock clock;
  RemoteRuntime runtime(NodeId("node-r"), clock);
  runtime.Connect({});
  const model::WorkerKey orphan{JobId(3), 1, 0};
  const model::WorkerKey live{JobId(4), 2, 0};
  ASSERT_TRUE(runtime.Stop(orphan, {}));  // queued before the loss: dropped with it

  runtime.MarkLost({orphan}, "node node-r stopped answering for 31 s");
  EXPECT_TRUE(runtime.lost());
  EXPECT_EQ(runtime.Silence(), std::nullopt);
  auto refused = runtime.TakeCommands(0);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(refused.error().message, ::testing::HasSubstr("node node-r was declared lost"));
  EXPECT_FALSE(runtime.Report({}));
  ASSERT_TRUE(runtime.Stop(orphan, {}));  // dropped too: the orphan is stopped on return

  runtime.Connect({live});
  EXPECT_FALSE(runtime.lost());
  auto commands = runtime.TakeCommands(0);
  ASSERT_TRUE(commands) << commands.error().ToString();
  ASSERT_EQ(commands->size(), 2u);
  EXPECT_EQ((*commands)[0].kind, AgentCommand::Kind::kAdopt);
  EXPECT_EQ((*commands)[0].keys, (std::vector<model::WorkerKey>{live, orphan}));
  EXPECT_EQ((*commands)[1].kind, AgentCommand::Kind::kStop);
  EXPECT_EQ((*commands)[1].key, orphan);
  EXPECT_FALSE((*commands)[1].stop.preempt);
  EXPECT_THAT((*commands)[1].stop.reason, ::testing::HasSubstr("stopped answering"));

  // Registering again later stops nothing more.
  runtime.Connect({});
  commands = runtime.TakeCommands(0);
  ASSERT_TRUE(commands);
  EXPECT_TRUE(commands->empty());
}

}  // namespace
}  // namespace drover::server
