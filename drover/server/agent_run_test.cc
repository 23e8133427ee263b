// The agent end's command handling (AgentCommandRunner) on a scripted runtime, without sockets.

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "drover/server/agent_link.h"
#include "drover/testing/fake_clock.h"
#include "drover/testing/fake_runtime.h"

namespace drover::server {
namespace {

// Answers Stop with the scripted statuses in order (then OK) and Launch and Adopt as told;
// records every Stop call.
class ScriptedRuntime final : public agent::WorkerRuntime {
 public:
  Status Launch(const model::LaunchSpec&) override { return launch_status; }
  Status Stop(const model::WorkerKey& key, const model::StopRequest& request) override {
    stops.push_back({key, request.reason});
    if (stop_answers.empty()) return OkStatus();
    Status answer = stop_answers.front();
    stop_answers.pop_front();
    return answer;
  }
  std::vector<model::WorkerKey> Adopt(const std::vector<model::WorkerKey>&) override {
    return never_launched;
  }
  std::vector<model::WorkerEvent> Poll() override { return {}; }

  Status launch_status = OkStatus();
  std::deque<Status> stop_answers;
  std::vector<model::WorkerKey> never_launched;
  std::vector<std::pair<model::WorkerKey, std::string>> stops;  // key, reason
};

AgentCommand StopCommand(model::WorkerKey key, std::string reason, std::int64_t seq = 0) {
  AgentCommand command;
  command.kind = AgentCommand::Kind::kStop;
  command.seq = seq;
  command.key = key;
  command.stop.reason = std::move(reason);
  return command;
}

// Finding 8: a command whose reply was lost is sent again; the agent carries it out once.
TEST(AgentCommandRunner, CarriesOutEachSequenceNumberOnceAndAcknowledgesIt) {
  testing::FakeRuntime runtime;
  testing::FakeClock clock;
  AgentCommandRunner runner(runtime, clock, "n1");
  AgentCommand launch;
  launch.launch.key = model::WorkerKey{JobId(7), 1, 0};
  launch.seq = 1;
  std::vector<model::WorkerEvent> events;
  runner.RunBatch(CommandBatch{40, {launch}}, events);
  EXPECT_EQ(runner.ack().epoch, 40);
  EXPECT_EQ(runner.ack().seq, 1);
  // The same batch again (its acknowledgement was lost), then with a stop after it.
  runner.RunBatch(CommandBatch{40, {launch}}, events);
  runner.RunBatch(CommandBatch{40, {launch, StopCommand(launch.launch.key, "cancelled", 2)}},
                  events);
  EXPECT_EQ(runtime.Launched().size(), 1u);
  EXPECT_EQ(runtime.Stopped().size(), 1u);
  EXPECT_EQ(runner.ack().seq, 2);
  EXPECT_TRUE(events.empty());
  // A new registration numbers from 1 again: carried out, and acknowledged in its epoch.
  runner.RunBatch(CommandBatch{41, {StopCommand(launch.launch.key, "cancelled", 1)}}, events);
  EXPECT_EQ(runtime.Stopped().size(), 2u);
  EXPECT_EQ(runner.ack().epoch, 41);
  EXPECT_EQ(runner.ack().seq, 1);
}

TEST(AgentCommandRunner, RetriesAStopAnsweredUnavailableOnTheNextTurnsUntilItIsTaken) {
  ScriptedRuntime runtime;
  runtime.stop_answers = {Unavailable("supervisor starting"), Unavailable("supervisor starting")};
  testing::FakeClock clock;
  AgentCommandRunner runner(runtime, clock, "n1");
  const model::WorkerKey key{JobId(7), 1, 0};
  std::vector<model::WorkerEvent> events;

  runner.Run(StopCommand(key, "cancelled"), events);
  ASSERT_EQ(runtime.stops.size(), 1u);
  runner.RetryStops();  // unavailable again: still kept
  runner.RetryStops();  // taken
  runner.RetryStops();  // nothing kept any more
  ASSERT_EQ(runtime.stops.size(), 3u);
  for (const auto& [stopped, reason] : runtime.stops) {
    EXPECT_EQ(stopped, key);
    EXPECT_EQ(reason, "cancelled");
  }
  EXPECT_TRUE(events.empty());
}

TEST(AgentCommandRunner, DropsAStopOfAWorkerTheRuntimeDoesNotKnow) {
  ScriptedRuntime runtime;
  runtime.stop_answers = {NotFound("exited already")};
  testing::FakeClock clock;
  AgentCommandRunner runner(runtime, clock, "n1");
  std::vector<model::WorkerEvent> events;

  runner.Run(StopCommand({JobId(7), 1, 0}, ""), events);
  runner.RetryStops();
  EXPECT_EQ(runtime.stops.size(), 1u);
}

TEST(AgentCommandRunner, ReportsAFailedLaunchAsAnExit) {
  ScriptedRuntime runtime;
  runtime.launch_status = Internal("cannot spawn the supervisor");
  testing::FakeClock clock;
  AgentCommandRunner runner(runtime, clock, "n1");
  AgentCommand launch;
  launch.kind = AgentCommand::Kind::kLaunch;
  launch.launch.key = {JobId(3), 0, 1};
  std::vector<model::WorkerEvent> events;

  runner.Run(launch, events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].key, launch.launch.key);
  EXPECT_EQ(events[0].kind, model::WorkerEvent::Kind::kExited);
  EXPECT_EQ(events[0].at, clock.Now());
  EXPECT_EQ(events[0].exit.message, "launch failed: cannot spawn the supervisor");

  runtime.launch_status = MakeError(ErrorCode::kAlreadyExists, "launched before");
  runner.Run(launch, events);
  EXPECT_EQ(events.size(), 1u);
}

TEST(AgentCommandRunner, ReportsAnAdoptedWorkerNeverLaunchedAsLost) {
  ScriptedRuntime runtime;
  runtime.never_launched = {{JobId(4), 2, 0}};
  testing::FakeClock clock;
  AgentCommandRunner runner(runtime, clock, "n1");
  AgentCommand adopt;
  adopt.kind = AgentCommand::Kind::kAdopt;
  adopt.keys = {{JobId(4), 2, 0}, {JobId(5), 0, 0}};
  std::vector<model::WorkerEvent> events;

  runner.Run(adopt, events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].key, (model::WorkerKey{JobId(4), 2, 0}));
  EXPECT_EQ(events[0].exit.message, "lost: never launched on node n1");
}

// Self-fencing: Fence stops every worker the runner launched or adopted and has not seen exit,
// and only those.
TEST(AgentCommandRunner, FenceStopsEveryWorkerStillRunningAndNoOther) {
  ScriptedRuntime runtime;
  runtime.never_launched = {{JobId(4), 2, 0}};
  testing::FakeClock clock;
  AgentCommandRunner runner(runtime, clock, "n1");
  std::vector<model::WorkerEvent> events;
  AgentCommand launch;
  launch.launch.key = model::WorkerKey{JobId(7), 1, 0};
  runner.Run(launch, events);
  AgentCommand exits = launch;
  exits.launch.key = model::WorkerKey{JobId(8), 1, 0};
  runner.Run(exits, events);
  AgentCommand adopt;
  adopt.kind = AgentCommand::Kind::kAdopt;
  adopt.keys = {{JobId(4), 2, 0}, {JobId(5), 0, 0}};  // job 4 has no trace on the node
  runner.Run(adopt, events);
  runtime.launch_status = MakeError(ErrorCode::kInternal, "no such GPU");
  AgentCommand failed = launch;
  failed.launch.key = model::WorkerKey{JobId(9), 1, 0};
  runner.Run(failed, events);
  model::WorkerEvent exited;
  exited.key = exits.launch.key;
  exited.kind = model::WorkerEvent::Kind::kExited;
  runner.Observe({exited});

  EXPECT_EQ(runner.Fence("fenced: cut off"), 2u);
  ASSERT_EQ(runtime.stops.size(), 2u);
  EXPECT_EQ(runtime.stops[0].first, (model::WorkerKey{JobId(5), 0, 0}));
  EXPECT_EQ(runtime.stops[1].first, launch.launch.key);
  EXPECT_EQ(runtime.stops[1].second, "fenced: cut off");
}

}  // namespace
}  // namespace drover::server
