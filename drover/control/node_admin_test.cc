// The controller's node lifecycle (controller_nodes.cc): cordon, drain, uncordon and maintenance
// windows, and the disruption causes recorded on attempts.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drover/control/control_test_util.h"
#include "drover/control/controller.h"

namespace drover::control {
namespace {

using model::Disruption;
using model::JobState;
using testing::GpuNode;
using ::testing::HasSubstr;
using testing::kT0;
using testing::Launches;
using testing::Spec;
using testing::Stops;

constexpr DurationMs kHourMs = kMillisPerHour;

class NodeAdminTest : public testing::ControllerFixture {
 protected:
  NodeAdminTest() {
    Step step;
    controller_.UpsertNode(GpuNode("node-a", 4), kT0, step);
    controller_.UpsertNode(GpuNode("node-b", 4), kT0, step);
  }

  // Submits `spec` and schedules; the node its one worker was placed on (started at `now`).
  NodeId RunOne(JobId* id, model::JobSpec spec, TimeMs now = kT0) {
    *id = Submit({std::move(spec)}, now).at(0);
    Step step = Schedule(now);
    EXPECT_EQ(Launches(step).size(), 1u);
    if (Launches(step).empty()) return NodeId();
    const LaunchWorker launch = Launches(step).at(0);
    Event({launch.spec.key, model::WorkerEvent::Kind::kStarted, now, {}});
    return launch.spec.node;
  }

  NodeId NodeOf(JobId id) { return controller_.Find(id)->current_attempt()->workers.at(0).node; }

  // The worker of `id`'s current attempt exits as its agent reports a stop with notice.
  Step StopReported(JobId id, TimeMs at) {
    model::WorkerEvent event =
        testing::Killed(id, controller_.Find(id)->current_attempt()->number, 0, at);
    event.exit.preempted = true;
    return Event(event);
  }

  Status Cordon(const std::string& node, TimeMs now = kT0) {
    Step step;
    return controller_.Cordon(NodeId(node), "admin", "disk swap", now, step);
  }
};

// A job only cordoned nodes could take: its verdict and explain name the cordon, not capacity.
TEST_F(NodeAdminTest, ExplainSaysTheNodesThatCouldRunAJobAreCordoned) {
  ASSERT_TRUE(Cordon("node-a").has_value());
  ASSERT_TRUE(Cordon("node-b").has_value());
  const JobId waiting = Submit({Spec("waiting", 4)}, kT0 + 1).at(0);
  EXPECT_TRUE(Launches(Schedule(kT0 + 1)).empty());
  EXPECT_EQ(State(waiting), JobState::kReady);
  auto explanation = controller_.Explain(waiting, kT0 + 1);
  ASSERT_TRUE(explanation.has_value());
  EXPECT_THAT(explanation->message, HasSubstr("cordoned, taking no new jobs: node-a, node-b"));
}

TEST_F(NodeAdminTest, ACordonedNodeTakesNoNewJobsButKeepsItsRunningOnes) {
  JobId running;
  const NodeId node = RunOne(&running, Spec("first", 4));
  ASSERT_TRUE(Cordon(node.value()).has_value());
  EXPECT_TRUE(controller_.NodeAdminOf(node).cordoned);
  EXPECT_EQ(controller_.NodeAdminOf(node).cordoned_by, "admin");
  // The other node takes the next job; a third one waits, though the cordoned node's GPUs
  // would be free once `running` ends.
  JobId second;
  EXPECT_NE(RunOne(&second, Spec("second", 4), kT0 + 1), node);
  EXPECT_EQ(State(running), JobState::kRunning);
  Event(testing::Exited(running, 1, 0, 0, kT0 + 2));
  const JobId third = Submit({Spec("third", 4)}, kT0 + 3).at(0);
  EXPECT_TRUE(Launches(Schedule(kT0 + 3)).empty());
  EXPECT_EQ(State(third), JobState::kReady);
  // Uncordoned, it takes the job.
  Step step;
  ASSERT_TRUE(controller_.Uncordon(node, "admin", kT0 + 4, step).has_value());
  EXPECT_TRUE(step.nodes_changed.contains(node));
  EXPECT_EQ(controller_.NodeAdminOf(node), model::NodeAdmin{});
  ASSERT_EQ(Launches(Schedule(kT0 + 4)).size(), 1u);
  EXPECT_EQ(NodeOf(third), node);
}

TEST_F(NodeAdminTest, UnknownNodesAreNotFoundAndBadArgumentsChangeNothing) {
  Step step;
  EXPECT_EQ(controller_.Cordon(NodeId("nope"), "admin", "", kT0, step).error().code,
            ErrorCode::kNotFound);
  EXPECT_EQ(controller_.Drain(NodeId("node-a"), -1, "admin", "", kT0, step).error().code,
            ErrorCode::kInvalidArgument);
  model::MaintenanceWindow backwards{kT0 + kHourMs, kT0, "admin", 0, ""};
  Status refused = controller_.SetMaintenance(NodeId("node-a"), backwards, kT0, step);
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(refused.error().message,
            "to: the window must end after it begins (it ends 1h before it begins)");
  model::MaintenanceWindow over{kT0 - 2 * kHourMs, kT0 - kHourMs, "admin", 0, ""};
  EXPECT_EQ(controller_.SetMaintenance(NodeId("node-a"), over, kT0, step).error().code,
            ErrorCode::kInvalidArgument);
  EXPECT_TRUE(step.nodes_changed.empty());
  EXPECT_EQ(controller_.NodeAdminOf(NodeId("node-a")), model::NodeAdmin{});
}

TEST_F(NodeAdminTest, DrainPreemptsACheckpointingJobWithNoticeAndItResumesElsewhere) {
  model::JobSpec spec = Spec("ckpt", 4);
  spec.checkpoint_dir = "/ckpt";
  JobId job;
  const NodeId node = RunOne(&job, spec);
  Step report;
  ASSERT_TRUE(controller_.ReportCheckpoint(job, kT0 + 10, report).has_value());
  Step step;
  ASSERT_TRUE(controller_.Drain(node, std::nullopt, "admin", "", kT0 + 20, step).has_value());
  const std::vector<StopWorker> stops = Stops(step);
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_TRUE(stops[0].preempt);  // with notice
  EXPECT_THAT(stops[0].reason, HasSubstr("node_drain"));
  EXPECT_TRUE(controller_.NodeAdminOf(node).draining);
  EXPECT_EQ(controller_.NodeAdminOf(node).drained_at, 0);
  // The worker exits; the job requeues to resume from its checkpoint and lands on the other
  // node; the drained node reads drained.
  Step exited = StopReported(job, kT0 + 30);
  const model::Attempt& first = controller_.Find(job)->attempts.at(0);
  EXPECT_EQ(first.disruption, Disruption::kNodeDrain);
  EXPECT_EQ(first.outcome, JobState::kReady);
  ASSERT_FALSE(exited.transitions.empty());
  EXPECT_THAT(exited.transitions.back().cause, HasSubstr("node_drain"));
  EXPECT_THAT(exited.transitions.back().cause, HasSubstr("resume from its checkpoint"));
  Step next = Schedule(kT0 + 40);
  ASSERT_EQ(Launches(next).size(), 1u);
  EXPECT_NE(Launches(next)[0].spec.node, node);
  EXPECT_TRUE(controller_.Find(job)->current_attempt()->resumed);
  EXPECT_TRUE(next.nodes_changed.contains(node));
  EXPECT_EQ(controller_.NodeAdminOf(node).drained_at, kT0 + 40);
}

TEST_F(NodeAdminTest, DrainLetsOtherJobsRunUntilTheGraceThenStopsThemWithCauseNodeDrain) {
  JobId job;
  const NodeId node = RunOne(&job, Spec("plain", 4));
  Step step;
  ASSERT_TRUE(controller_.Drain(node, kHourMs, "admin", "", kT0, step).has_value());
  EXPECT_TRUE(Stops(step).empty());
  EXPECT_TRUE(Stops(Schedule(kT0 + kHourMs - 1)).empty());
  EXPECT_EQ(State(job), JobState::kRunning);
  const std::vector<StopWorker> stops = Stops(Schedule(kT0 + kHourMs));
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_THAT(stops[0].reason, HasSubstr("node_drain"));
  StopReported(job, kT0 + kHourMs + 5);
  EXPECT_EQ(controller_.Find(job)->attempts.at(0).disruption, Disruption::kNodeDrain);
  EXPECT_EQ(State(job), JobState::kReady);  // requeued, from scratch
  ASSERT_EQ(Launches(Schedule(kT0 + kHourMs + 10)).size(), 1u);
  EXPECT_NE(NodeOf(job), node);
}

TEST_F(NodeAdminTest, ADrainWithoutGraceWaitsForJobsToEndThenReadsDrained) {
  JobId job;
  const NodeId node = RunOne(&job, Spec("plain", 4));
  Step step;
  ASSERT_TRUE(controller_.Drain(node, std::nullopt, "admin", "", kT0, step).has_value());
  EXPECT_TRUE(Stops(Schedule(kT0 + 100 * kHourMs)).empty());
  EXPECT_EQ(controller_.NodeAdminOf(node).drained_at, 0);
  Event(testing::Exited(job, 1, 0, 0, kT0 + 100 * kHourMs + 1));
  EXPECT_EQ(State(job), JobState::kSucceeded);
  EXPECT_EQ(controller_.Find(job)->attempts.at(0).disruption, Disruption::kNone);
  Schedule(kT0 + 100 * kHourMs + 2);
  EXPECT_EQ(controller_.NodeAdminOf(node).drained_at, kT0 + 100 * kHourMs + 2);
}

TEST_F(NodeAdminTest, AMaintenanceWindowHoldsOffJobsThatWouldRunIntoIt) {
  Step step;
  for (const char* node : {"node-a", "node-b"}) {
    ASSERT_TRUE(controller_
                    .SetMaintenance(NodeId(node),
                                    model::MaintenanceWindow{kT0 + kHourMs, kT0 + 2 * kHourMs,
                                                             "admin", 0, "firmware"},
                                    kT0, step)
                    .has_value());
  }
  model::JobSpec long_job = Spec("long", 1);
  long_job.timeout = 2 * kHourMs;
  model::JobSpec short_job = Spec("short", 1);
  short_job.timeout = kHourMs / 2;
  const JobId held = Submit({long_job}, kT0).at(0);
  const JobId placed = Submit({short_job}, kT0).at(0);
  Schedule(kT0);
  EXPECT_EQ(State(held), JobState::kReady);
  EXPECT_EQ(State(placed), JobState::kStarting);
  // Explain names when it could start: after the window.
  auto explanation = controller_.Explain(held, kT0);
  ASSERT_TRUE(explanation.has_value());
  EXPECT_EQ(explanation->estimated_start, std::optional<TimeMs>(kT0 + 2 * kHourMs));
  // Once the window is over it starts, and the window is forgotten.
  Step after = Schedule(kT0 + 2 * kHourMs);
  EXPECT_EQ(State(held), JobState::kStarting);
  EXPECT_FALSE(controller_.NodeAdminOf(NodeId("node-a")).maintenance.has_value());
  EXPECT_TRUE(after.nodes_changed.contains(NodeId("node-a")));
}

TEST_F(NodeAdminTest, CancelTimeoutAndOomAreRecordedAsDistinctDisruptions) {
  JobId cancelled, timed_out, oom;
  RunOne(&cancelled, Spec("c", 1));
  RunOne(&timed_out, Spec("t", 1));
  RunOne(&oom, Spec("o", 1));
  Step step;
  ASSERT_TRUE(
      controller_.Cancel(cancelled, "alice", "cancelled by alice", kT0 + 1, step).has_value());
  model::WorkerEvent killed = testing::Killed(cancelled, 1, 0, kT0 + 2);
  killed.exit.cancelled = true;
  Event(killed);
  model::WorkerEvent late = testing::Killed(timed_out, 1, 0, kT0 + 2);
  late.exit.timed_out = true;
  Event(late);
  model::WorkerEvent oom_killed = testing::Killed(oom, 1, 0, kT0 + 2);
  oom_killed.exit.signal = 9;
  oom_killed.exit.oom_killed = true;
  Step oom_step = Event(oom_killed);
  EXPECT_EQ(controller_.Find(cancelled)->attempts.at(0).disruption, Disruption::kUserCancel);
  EXPECT_EQ(controller_.Find(timed_out)->attempts.at(0).disruption, Disruption::kTimeout);
  EXPECT_EQ(controller_.Find(oom)->attempts.at(0).disruption, Disruption::kOomKilled);
  EXPECT_EQ(State(oom), JobState::kFailed);
  ASSERT_FALSE(oom_step.transitions.empty());
  EXPECT_THAT(oom_step.transitions.back().cause, HasSubstr("OOM-killed"));
}

TEST_F(NodeAdminTest, OperatorStateRestoredAfterARestartStillHoldsJobsOff) {
  ASSERT_TRUE(Cordon("node-a").has_value());
  ASSERT_TRUE(Cordon("node-b").has_value());
  const model::NodeAdmin saved = controller_.NodeAdminOf(NodeId("node-a"));
  Controller restarted;
  Step step;
  restarted.RestoreNodeAdmin(NodeId("node-a"), saved);
  restarted.RestoreNodeAdmin(NodeId("node-b"), controller_.NodeAdminOf(NodeId("node-b")));
  restarted.UpsertNode(GpuNode("node-a", 4), kT0, step);
  restarted.UpsertNode(GpuNode("node-b", 4), kT0, step);
  restarted.Restore({}, kT0, step);
  EXPECT_EQ(restarted.NodeAdminOf(NodeId("node-a")), saved);
  auto submitted = restarted.Submit({Spec("x", 1)}, "", "alice", kT0, step);
  ASSERT_TRUE(submitted.has_value());
  Step scheduled;
  restarted.Schedule(kT0, scheduled);
  EXPECT_TRUE(Launches(scheduled).empty());
}

}  // namespace
}  // namespace drover::control
