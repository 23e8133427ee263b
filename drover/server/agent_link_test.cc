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

TEST(AgentCommand, SetTimeoutRoundTripsAndRefusesALimitNotAboveZero) {
  AgentCommand command;
  command.kind = AgentCommand::Kind::kSetTimeout;
  command.key = model::WorkerKey{JobId(7), 2, 1};
  command.timeout_ms = 7'200'000;
  auto decoded = AgentCommandFromJson(json::parse(codec::DumpJson(ToJson(command))));
  ASSERT_TRUE(decoded) << decoded.error().ToString();
  EXPECT_EQ(decoded->kind, AgentCommand::Kind::kSetTimeout);
  EXPECT_EQ(decoded->key, command.key);
  EXPECT_EQ(decoded->timeout_ms, 7'200'000);
  for (const char* bad :
       {R"({"kind": "set_timeout", "key": {"job": 3, "attempt": 1, "rank": 0},
                             "timeout_ms": 0})",
        R"({"kind": "set_timeout", "key": {"job": 3, "attempt": 1, "rank": 0},
                             "timeout_ms": "1h"})",
        R"({"kind": "set_timeout", "key": {"job": 3, "attempt": 1, "rank": 0}})"}) {
    auto refused = AgentCommandFromJson(json::parse(bad));
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  }
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
  auto commands = runtime.TakeCommands({}, 0);
  ASSERT_TRUE(commands) << commands.error().ToString();
  ASSERT_EQ(commands->commands.size(), 1u);
  EXPECT_TRUE(commands->commands[0].stop.preempt);

  model::WorkerEvent checkpoint;
  checkpoint.key = model::WorkerKey{JobId(1), 1, 0};
  checkpoint.kind = model::WorkerEvent::Kind::kCheckpoint;
  checkpoint.at = clock.Now() - 877;
  auto wire = codec::WorkerEventFromJson(json::parse(codec::DumpJson(codec::ToJson(checkpoint))));
  ASSERT_TRUE(wire) << wire.error().ToString();
  ASSERT_TRUE(runtime.Report({*wire}));
  auto events = runtime.Poll();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], checkpoint);
}

// A hostile or skewed agent's clock cannot put an event in the future: it reads the time the
// server heard it.
TEST(RemoteRuntime, AnEventFromTheAgentsFutureReadsNow) {
  testing::FakeClock clock;
  RemoteRuntime runtime(NodeId("node-r"), clock);
  runtime.Connect({});
  model::WorkerEvent started;
  started.key = model::WorkerKey{JobId(1), 1, 0};
  started.kind = model::WorkerEvent::Kind::kStarted;
  started.at = clock.Now() + 365 * kMillisPerDay;
  ASSERT_TRUE(runtime.Report({started}));
  auto events = runtime.Poll();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].at, clock.Now());
}

model::LaunchSpec LaunchOf(JobId job) {
  model::LaunchSpec spec;
  spec.key = model::WorkerKey{job, 1, 0};
  return spec;
}

TEST(RemoteRuntime, SendsACommandAgainUntilItIsAcknowledged) {
  testing::FakeClock clock;
  clock.Set(1'000);
  RemoteRuntime runtime(NodeId("node-r"), clock);
  runtime.Connect({});
  ASSERT_TRUE(runtime.Launch(LaunchOf(JobId(1))));
  auto first = runtime.TakeCommands({}, 0);  // its reply is lost
  ASSERT_TRUE(first) << first.error().ToString();
  ASSERT_EQ(first->commands.size(), 1u);
  EXPECT_EQ(first->commands[0].seq, 1);
  EXPECT_EQ(first->epoch, 1'000);

  ASSERT_TRUE(runtime.Launch(LaunchOf(JobId(2))));
  auto again = runtime.TakeCommands({}, 0);  // acknowledges nothing: both come
  ASSERT_EQ(again->commands.size(), 2u);
  EXPECT_EQ(again->commands[0].launch.key.job, JobId(1));
  EXPECT_EQ(again->commands[1].seq, 2);

  // An acknowledgement of another epoch (an earlier registration) drops nothing.
  EXPECT_EQ(runtime.TakeCommands({999, 2}, 0)->commands.size(), 2u);
  // The first acknowledged: only the second comes again; both: none.
  auto rest = runtime.TakeCommands({1'000, 1}, 0);
  ASSERT_EQ(rest->commands.size(), 1u);
  EXPECT_EQ(rest->commands[0].launch.key.job, JobId(2));
  EXPECT_TRUE(runtime.TakeCommands({1'000, 2}, 0)->commands.empty());
  EXPECT_TRUE(runtime.TakeCommands({1'000, 2}, 0)->commands.empty());
}

TEST(RemoteRuntime, ARegistrationStartsANewEpochThatCarriesWhatWasNotAcknowledged) {
  testing::FakeClock clock;
  clock.Set(5'000);
  RemoteRuntime runtime(NodeId("node-r"), clock);
  runtime.Connect({});
  ASSERT_TRUE(runtime.Launch(LaunchOf(JobId(1))));
  ASSERT_TRUE(runtime.Launch(LaunchOf(JobId(2))));
  auto first = runtime.TakeCommands({}, 0);
  ASSERT_TRUE(first);
  // The agent carried out the first, then registered again in the same millisecond.
  runtime.Connect({});
  auto second = runtime.TakeCommands({first->epoch, 1}, 0);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->epoch, 5'001);  // never an epoch the agent saw before
  ASSERT_EQ(second->commands.size(), 2u);
  EXPECT_EQ(second->commands[0].seq, 1);  // numbered again: the agent finds the launch ran
  EXPECT_EQ(second->commands[1].launch.key.job, JobId(2));
}

TEST(AgentCommand, TheSequenceNumberTravels) {
  AgentCommand launch;
  launch.launch = LaunchOf(JobId(4));
  launch.seq = 12;
  auto decoded = AgentCommandFromJson(json::parse(codec::DumpJson(ToJson(launch))));
  ASSERT_TRUE(decoded) << decoded.error().ToString();
  EXPECT_EQ(decoded->seq, 12);
}

TEST(RemoteRuntime, CountsTheAgentsSilenceFromItsLastCall) {
  testing::FakeClock clock;
  RemoteRuntime runtime(NodeId("node-r"), clock);
  // Before registration: silent since the runtime was created, and its calls are refused.
  clock.Advance(4'000);
  EXPECT_EQ(runtime.Silence(), 4'000);
  EXPECT_EQ(runtime.last_heard_at(), 0);
  auto refused = runtime.TakeCommands({}, 0);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(runtime.Silence(), 4'000);

  runtime.Connect({});
  EXPECT_EQ(runtime.Silence(), 0);
  EXPECT_EQ(runtime.last_heard_at(), clock.Now());
  clock.Advance(3'000);
  EXPECT_EQ(runtime.Silence(), 3'000);
  ASSERT_TRUE(runtime.TakeCommands({}, 0));
  EXPECT_EQ(runtime.Silence(), 0);
  clock.Advance(1'000);
  ASSERT_TRUE(runtime.Report({}));
  EXPECT_EQ(runtime.Silence(), 0);
  EXPECT_EQ(runtime.last_heard_at(), clock.Now());
}

TEST(RemoteRuntime, AnAgentWhosePollIsParkedIsNotSilentUntilItsDeadline) {
  testing::FakeClock clock;
  RemoteRuntime runtime(NodeId("node-r"), clock);
  runtime.Connect({});
  std::vector<NodeId> woken;
  runtime.SetWaker([&](const NodeId& node) { woken.push_back(node); });
  auto parked = runtime.TakeCommands({}, 60'000);  // nothing to send: the caller parks the poll
  ASSERT_TRUE(parked);
  EXPECT_TRUE(parked->commands.empty());
  clock.Advance(59'999);
  EXPECT_EQ(runtime.Silence(), 0);
  clock.Advance(1'001);  // the poll's deadline passed a second ago, and no call came
  EXPECT_EQ(runtime.Silence(), 1'000);

  // A command wakes the parked poll; the poll's answer ends its wait.
  ASSERT_TRUE(runtime.TakeCommands({}, 60'000));
  ASSERT_TRUE(runtime.Stop(model::WorkerKey{JobId(1), 1, 0}, {}));
  EXPECT_EQ(woken, std::vector<NodeId>{NodeId("node-r")});
  ASSERT_EQ(runtime.TakeCommands({}, 60'000)->commands.size(), 1u);
  clock.Advance(5'000);
  EXPECT_EQ(runtime.Silence(), 5'000);
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
  auto refused = runtime.TakeCommands({}, 0);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(refused.error().message, ::testing::HasSubstr("node node-r was declared lost"));
  EXPECT_FALSE(runtime.Report({}));
  ASSERT_TRUE(runtime.Stop(orphan, {}));  // dropped too: the orphan is stopped on return

  runtime.Connect({live});
  EXPECT_FALSE(runtime.lost());
  auto commands = runtime.TakeCommands({}, 0);
  ASSERT_TRUE(commands) << commands.error().ToString();
  ASSERT_EQ(commands->commands.size(), 2u);
  EXPECT_EQ(commands->commands[0].kind, AgentCommand::Kind::kAdopt);
  EXPECT_EQ(commands->commands[0].keys, (std::vector<model::WorkerKey>{live, orphan}));
  EXPECT_EQ(commands->commands[1].kind, AgentCommand::Kind::kStop);
  EXPECT_EQ(commands->commands[1].key, orphan);
  EXPECT_FALSE(commands->commands[1].stop.preempt);
  EXPECT_THAT(commands->commands[1].stop.reason, ::testing::HasSubstr("stopped answering"));

  // Registering again later, once they were carried out, stops nothing more.
  ASSERT_TRUE(runtime.TakeCommands({commands->epoch, 2}, 0));
  runtime.Connect({});
  commands = runtime.TakeCommands({}, 0);
  ASSERT_TRUE(commands);
  EXPECT_TRUE(commands->commands.empty());
}

}  // namespace
}  // namespace drover::server
