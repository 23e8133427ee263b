// The agent protocol's command codec and RemoteRuntime's queueing.

#include "drover/server/agent_link.h"

#include <gtest/gtest.h>

#include "drover/codec/json.h"

namespace drover::server {
namespace {

using nlohmann::json;

TEST(AgentCommand, StopCarriesPreemptionAndReason) {
  AgentCommand stop;
  stop.kind = AgentCommand::Kind::kStop;
  stop.key = model::WorkerKey{JobId(7), 2, 1};
  stop.stop = agent::StopRequest{.preempt = true, .reason = "preempted by job 12 (reclaim)"};
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
  RemoteRuntime runtime;
  ASSERT_TRUE(runtime.Stop(model::WorkerKey{JobId(1), 1, 0}, {.preempt = true, .reason = "r"}));
  auto commands = runtime.TakeCommands(0);
  ASSERT_EQ(commands.size(), 1u);
  EXPECT_TRUE(commands[0].stop.preempt);

  model::WorkerEvent checkpoint;
  checkpoint.key = model::WorkerKey{JobId(1), 1, 0};
  checkpoint.kind = model::WorkerEvent::Kind::kCheckpoint;
  checkpoint.at = 1'700'000'000'123;
  auto wire = codec::WorkerEventFromJson(json::parse(codec::DumpJson(codec::ToJson(checkpoint))));
  ASSERT_TRUE(wire) << wire.error().ToString();
  runtime.Report({*wire});
  auto events = runtime.Poll();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], checkpoint);
}

}  // namespace
}  // namespace drover::server
