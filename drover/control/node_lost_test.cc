// Node loss (docs/workflows.md, "Node loss"): Controller::OnNodeLost reports the workers of a
// lost node exited with node_lost, retry.on decides (the first model::kFreeNodeLosses losses not
// counted against max_attempts), and the node takes no placements until it is upserted again.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drover/control/control_test_util.h"
#include "drover/control/controller.h"

namespace drover::control {
namespace {

using model::JobState;
using ::testing::ElementsAre;
using testing::Exited;
using testing::GpuNode;
using ::testing::HasSubstr;
using testing::Killed;
using testing::kT0;
using testing::Launches;
using ::testing::Not;
using testing::Spec;
using testing::Started;
using testing::Stops;

const NodeId kA("node-a");
const NodeId kB("node-b");
constexpr char kReason[] = "node node-a stopped answering for 31 s";

// `name` with 2 H100s, labelled name=NAME.
model::Node Labelled(const std::string& name) {
  model::Node node = GpuNode(name, 2);
  node.labels["name"] = name;
  return node;
}

class NodeLostTest : public testing::ControllerFixture {
 protected:
  NodeLostTest() {
    Step step;
    controller_.UpsertNode(Labelled("node-a"), kT0, step);
    controller_.UpsertNode(Labelled("node-b"), kT0, step);
  }

  // Submits a one-GPU job with `retry` that runs on node-a only, and starts it; returns its id.
  JobId StartOnA(model::RetryPolicy retry) {
    model::JobSpec spec = Spec("train", 1);
    spec.retry = retry;
    spec.requirements.node_selector["name"] = "node-a";
    JobId id = Submit({spec})[0];
    auto launches = Launches(Schedule(kT0));
    EXPECT_EQ(launches.size(), 1u);
    EXPECT_EQ(launches.at(0).spec.node, kA);
    Event(Started(id, 1, 0, kT0 + 10));
    EXPECT_EQ(State(id), JobState::kRunning);
    return id;
  }

  std::vector<model::WorkerKey> Lose(const NodeId& node, TimeMs now, Step* out = nullptr) {
    Step step;
    auto lost = controller_.OnNodeLost(node, kReason, now, step);
    if (out != nullptr) *out = std::move(step);
    return lost;
  }
};

TEST_F(NodeLostTest, RetriesElsewhereWhenRetryOnNamesNodeLost) {
  JobId id = StartOnA({2, 0, {model::FailureKind::kNodeLost}});

  EXPECT_THAT(Lose(kA, kT0 + 1'000), ElementsAre(model::WorkerKey{id, 1, 0}));
  EXPECT_TRUE(controller_.IsLost(kA));
  EXPECT_FALSE(controller_.IsLost(kB));
  EXPECT_EQ(State(id), JobState::kReady);
  const model::Attempt& first = controller_.Find(id)->attempts.at(0);
  ASSERT_TRUE(first.workers.at(0).exit.has_value());
  EXPECT_TRUE(first.workers.at(0).exit->node_lost);
  EXPECT_THAT(first.outcome_reason,
              HasSubstr("node lost (node node-a stopped answering for 31 s)"));
  EXPECT_TRUE(controller_.LiveWorkers().empty());
}

TEST_F(NodeLostTest, ALostNodeTakesNoPlacementsUntilItIsUpsertedAgain) {
  JobId id = StartOnA({2, 0, {model::FailureKind::kNodeLost}});
  Lose(kA, kT0 + 1'000);
  // The retry asks for node-a, which is lost: it waits.
  EXPECT_TRUE(Launches(Schedule(kT0 + 2'000)).empty());
  EXPECT_EQ(State(id), JobState::kReady);
  EXPECT_FALSE(controller_.cluster().Free(kA).has_value());

  Step back;
  controller_.UpsertNode(Labelled("node-a"), kT0 + 3'000, back);
  EXPECT_FALSE(controller_.IsLost(kA));
  EXPECT_EQ(controller_.cluster().FreeGpus(kA).size(), 2u);  // nothing held there any more
  auto launches = Launches(Schedule(kT0 + 3'000));
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].spec.key, (model::WorkerKey{id, 2, 0}));
}

TEST_F(NodeLostTest, ExplainNamesTheOnlyNodeAbleToRunTheJobWhenItIsLost) {
  JobId id = StartOnA({2, 0, {model::FailureKind::kNodeLost}});
  Lose(kA, kT0 + 1'000);
  Schedule(kT0 + 2'000);
  Result<Explanation> explained = controller_.Explain(id, kT0 + 2'000);
  ASSERT_TRUE(explained.has_value()) << explained.error().ToString();
  EXPECT_THAT(explained->message, HasSubstr("the only node able to run it, node-a, is lost"));

  // A job node-b can run says nothing of node-a.
  model::JobSpec anywhere = Spec("any", 1);
  anywhere.requirements.node_selector["name"] = "node-b";
  JobId other = Submit({anywhere})[0];
  Result<Explanation> fine = controller_.Explain(other, kT0 + 2'000);
  ASSERT_TRUE(fine.has_value());
  EXPECT_THAT(fine->message, Not(HasSubstr("lost")));

  // Both lost: a job either could run names both.
  Lose(kB, kT0 + 3'000);
  JobId either = Submit({Spec("either", 1)})[0];
  Schedule(kT0 + 3'000);
  Result<Explanation> both = controller_.Explain(either, kT0 + 3'000);
  ASSERT_TRUE(both.has_value());
  EXPECT_THAT(both->message, HasSubstr("every node able to run it is lost (node-a, node-b)"));
}

TEST_F(NodeLostTest, TheRetryGoesToAnotherNode) {
  model::JobSpec spec = Spec("train", 2);
  spec.retry = {2, 0, {model::FailureKind::kNodeLost}};
  JobId id = Submit({spec})[0];
  auto first = Launches(Schedule(kT0));
  ASSERT_EQ(first.size(), 1u);
  const NodeId lost_node = first[0].spec.node;
  Lose(lost_node, kT0 + 1'000);
  auto second = Launches(Schedule(kT0 + 1'000));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].spec.key.attempt, 2);
  EXPECT_NE(second[0].spec.node, lost_node);
  Event(Exited(id, 2, 0, 0, kT0 + 2'000));
  EXPECT_EQ(State(id), JobState::kSucceeded);
}

TEST_F(NodeLostTest, EndsFailedWithTheCauseWhenRetryOnLeavesNodeLostOut) {
  JobId id = StartOnA({3, 0, {model::FailureKind::kExit}});
  Lose(kA, kT0 + 1'000);
  EXPECT_EQ(State(id), JobState::kFailed);
  const model::Job& job = *controller_.Find(id);
  ASSERT_EQ(job.attempts.size(), 1u);
  EXPECT_EQ(job.attempts[0].outcome, JobState::kFailed);
  EXPECT_THAT(job.status_message, HasSubstr("node lost (node node-a stopped answering"));
}

TEST_F(NodeLostTest, LateEventsOfTheLostAttemptChangeNothing) {
  JobId id = StartOnA({2, 0, {model::FailureKind::kNodeLost}});
  Lose(kA, kT0 + 1'000);
  Step back;
  controller_.UpsertNode(Labelled("node-a"), kT0 + 2'000, back);
  ASSERT_EQ(Launches(Schedule(kT0 + 2'000)).size(), 1u);  // attempt 2
  // The agent comes back and reports what became of attempt 1's worker.
  model::WorkerEvent stopped = Killed(id, 1, 0, kT0 + 2'500);
  stopped.exit.cancelled = true;
  EXPECT_TRUE(Event(stopped).empty());
  EXPECT_TRUE(Event(Exited(id, 1, 0, 0, kT0 + 2'600)).empty());
  EXPECT_EQ(State(id), JobState::kStarting);
  EXPECT_EQ(controller_.Find(id)->current_attempt()->number, 2);
  // Losing the node again ends only what runs there now.
  EXPECT_THAT(Lose(kA, kT0 + 3'000), ElementsAre(model::WorkerKey{id, 2, 0}));
  EXPECT_EQ(State(id), JobState::kReady);  // node loss 2 of 3: not counted
  EXPECT_EQ(controller_.Find(id)->current_attempt()->number, 3);
}

TEST_F(NodeLostTest, TheFirstThreeNodeLossesRequeueAtOnceWithoutCountingAgainstMaxAttempts) {
  JobId id = StartOnA({});  // the default: max_attempts 1, every kind retried
  for (int loss = 1; loss <= model::kFreeNodeLosses; ++loss) {
    const TimeMs at = kT0 + loss * 1'000;
    Lose(kA, at);
    ASSERT_EQ(State(id), JobState::kReady) << "loss " << loss;
    const model::Job& job = *controller_.Find(id);
    EXPECT_EQ(job.current_attempt()->ready_at, at);  // at once: no backoff
    EXPECT_THAT(job.status_message,
                HasSubstr(fmt::format("retrying (node loss {} of {} not counted against "
                                      "max_attempts)",
                                      loss, model::kFreeNodeLosses)));
    Step back;
    controller_.UpsertNode(Labelled("node-a"), at, back);
    ASSERT_EQ(Launches(Schedule(at)).size(), 1u);
    Event(Started(id, loss + 1, 0, at + 10));
  }
  // The fourth counts: with max_attempts 1 nothing is left.
  Lose(kA, kT0 + 10'000);
  EXPECT_EQ(State(id), JobState::kFailed);
  EXPECT_EQ(controller_.Find(id)->attempts.size(), 4u);
}

TEST_F(NodeLostTest, NodeLossesLeaveTheAttemptsForTheJobsOwnFailures) {
  // max_attempts 2: a node loss, then an exit 1 (the first counted), then an exit 1 (the last).
  JobId id = StartOnA({2, 5'000, {model::FailureKind::kExit, model::FailureKind::kNodeLost}});
  Lose(kA, kT0 + 1'000);
  Step back;
  controller_.UpsertNode(Labelled("node-a"), kT0 + 1'000, back);
  ASSERT_EQ(Launches(Schedule(kT0 + 1'000)).size(), 1u);
  Event(Started(id, 2, 0, kT0 + 1'010));
  Event(Exited(id, 2, 0, 1, kT0 + 2'000));
  ASSERT_EQ(State(id), JobState::kReady);
  EXPECT_EQ(controller_.Find(id)->current_attempt()->ready_at, kT0 + 7'000);  // the backoff
  ASSERT_EQ(Launches(Schedule(kT0 + 7'000)).size(), 1u);
  Event(Started(id, 3, 0, kT0 + 7'010));
  Event(Exited(id, 3, 0, 1, kT0 + 8'000));
  EXPECT_EQ(State(id), JobState::kFailed);
  EXPECT_EQ(controller_.Find(id)->attempts.size(), 3u);
}

TEST_F(NodeLostTest, AGangStopsItsOtherWorkersAndHoldsNothingOnTheLostNode) {
  JobId id = Submit({Spec("gang", 2, 2)})[0];  // 2 GPUs a worker: one worker per node
  auto launches = Launches(Schedule(kT0));
  ASSERT_EQ(launches.size(), 2u);
  ASSERT_NE(launches[0].spec.node, launches[1].spec.node);
  const int rank_on_a = launches[0].spec.node == kA ? 0 : 1;
  const int rank_on_b = 1 - rank_on_a;

  Step step;
  EXPECT_THAT(Lose(kA, kT0 + 1'000, &step), ElementsAre(model::WorkerKey{id, 1, rank_on_a}));
  auto stops = Stops(step);
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].node, kB);
  EXPECT_EQ(stops[0].key.rank, rank_on_b);
  EXPECT_EQ(State(id), JobState::kStarting);  // until the worker on node-b exits
  EXPECT_EQ(controller_.cluster().FreeGpus(kB).size(), 0u);

  // node-a comes back before node-b's worker is gone: it is all free, and another job takes it.
  Step back;
  controller_.UpsertNode(Labelled("node-a"), kT0 + 2'000, back);
  EXPECT_EQ(controller_.cluster().FreeGpus(kA).size(), 2u);
  model::JobSpec other = Spec("other", 2);
  other.requirements.node_selector["name"] = "node-a";
  Submit({other}, kT0 + 2'000);
  ASSERT_EQ(Launches(Schedule(kT0 + 2'000)).size(), 1u);
  // The gang ends; releasing it gives back node-b only, not what the other job holds on node-a.
  model::WorkerEvent killed = Killed(id, 1, rank_on_b, kT0 + 3'000);
  killed.exit.cancelled = true;
  Event(killed);
  EXPECT_EQ(State(id), JobState::kReady);  // a node loss within the free ones: requeued
  EXPECT_EQ(controller_.cluster().FreeGpus(kA).size(), 0u);
  EXPECT_EQ(controller_.cluster().FreeGpus(kB).size(), 2u);
}

TEST_F(NodeLostTest, ANodeWithoutWorkersIsOnlyMarked) {
  Step step;
  EXPECT_TRUE(controller_.OnNodeLost(kB, kReason, kT0, step).empty());
  EXPECT_TRUE(step.empty());
  EXPECT_TRUE(controller_.IsLost(kB));
  EXPECT_EQ(controller_.nodes().count(kB), 1u);  // still known, for `drover nodes`
}

TEST(NodeLostRestore, ANodeThatNeverCameBackAfterARestartIsLostLikeAnother) {
  Controller before;
  Step step;
  before.UpsertNode(Labelled("node-a"), kT0, step);
  before.UpsertNode(Labelled("node-b"), kT0, step);
  JobId gang = before.Submit({Spec("gang", 2, 2)}, "", "alice", kT0, step)->ids[0];
  before.Schedule(kT0, step);
  const model::Attempt& attempt = *before.Find(gang)->current_attempt();
  const int rank_on_a = attempt.workers.at(0).node == kA ? 0 : 1;

  // Restarted; node-b's agent is back, node-a's never comes.
  Controller after;
  Step restore;
  after.UpsertNode(Labelled("node-b"), kT0 + 10, restore);
  std::vector<model::Job> stored;
  for (const auto& [id, job] : before.jobs()) stored.push_back(job);
  after.Restore(stored, kT0 + 10, restore);
  model::JobSpec other = Spec("other", 2);
  other.requirements.node_selector["name"] = "node-b";
  JobId next = after.Submit({other}, "", "alice", kT0 + 20, step)->ids[0];
  Step placed;
  after.Schedule(kT0 + 20, placed);
  ASSERT_EQ(Launches(placed).size(), 1u);
  EXPECT_EQ(after.Find(next)->state, JobState::kStarting);

  Step lost;
  EXPECT_THAT(after.OnNodeLost(kA, kReason, kT0 + 30'000, lost),
              ElementsAre(model::WorkerKey{gang, 1, rank_on_a}));
  ASSERT_EQ(Stops(lost).size(), 1u);
  model::WorkerEvent killed = Killed(gang, 1, 1 - rank_on_a, kT0 + 31'000);
  killed.exit.cancelled = true;
  Step ended;
  after.OnWorkerEvent(killed, ended);
  EXPECT_EQ(after.Find(gang)->state, JobState::kReady);  // requeued: node loss 1 of 3
  // The gang never held node-b's GPUs in this controller: ending it gives back nothing of the
  // other job's.
  EXPECT_EQ(after.cluster().FreeGpus(kB).size(), 0u);
}

}  // namespace
}  // namespace drover::control
