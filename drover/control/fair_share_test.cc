// Fair-share accounting in the controller (docs/scheduling.md, "Fair share"): usage accrues
// whether or not anything is pending, and its history survives policy reloads and restarts.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "drover/control/control_test_util.h"
#include "drover/control/controller.h"

namespace drover::control {
namespace {

using ::testing::ElementsAre;
using testing::Exited;
using testing::GpuNode;
using testing::kT0;
using testing::Spec;
using testing::Started;

constexpr DurationMs kHalfLife = kMillisPerHour;

// Queues team-a, team-b and team-c (the ones named), half-life one hour.
model::Policy Teams(const std::vector<std::string>& names) {
  model::Policy policy;
  policy.fair_share_half_life = kHalfLife;
  for (const std::string& name : names) {
    model::QueueConfig queue;
    queue.name = name;
    policy.queues.push_back(queue);
  }
  return policy;
}

std::map<std::string, double> Shares(const Controller& controller, TimeMs now) {
  std::map<std::string, double> out;
  for (const QueueReport& row : controller.Queues(now)) out[row.status.path] = row.status.share;
  return out;
}

class FairShareTest : public testing::ControllerFixture {
 protected:
  FairShareTest() {
    EXPECT_TRUE(controller_.SetPolicy(Teams({"team-a", "team-b"})));
    Step step;
    controller_.UpsertNode(GpuNode("node-a", 8), kT0, step);
  }

  // Runs a job of `gpus` GPUs in `queue` from `start` to `end`, with nothing else pending.
  void Run(const std::string& queue, int gpus, TimeMs start, TimeMs end) {
    const JobId id = Submit({Spec(queue + "-job", queue, gpus)}, start)[0];
    Schedule(start);
    Event(Started(id, 1, 0, start));
    Event(Exited(id, 1, 0, 0, end));
    ASSERT_EQ(controller_.Find(id)->state, model::JobState::kSucceeded);
  }
};

TEST_F(FairShareTest, UsageIsAccountedWithNothingPending) {
  Run("team-a", 4, kT0, kT0 + kHalfLife);
  Schedule(kT0 + kHalfLife + 1);  // nothing pending: no scheduling cycle runs
  const std::map<std::string, double> shares = Shares(controller_, kT0 + kHalfLife + 1);
  // 4 of 8 GPUs for one half-life: history H = u * horizon / 2, a share of 0.5 / 2.
  EXPECT_NEAR(shares.at("team-a"), 0.25, 1e-4);
  EXPECT_DOUBLE_EQ(shares.at("team-b"), 0.0);
}

TEST_F(FairShareTest, ARunningJobAccruesWhileNothingIsPending) {
  const JobId id = Submit({Spec("a", "team-a", 8)}, kT0)[0];
  Schedule(kT0);
  Event(Started(id, 1, 0, kT0));
  // All 8 GPUs for a half-life: current 1.0, history 0.5.
  EXPECT_NEAR(Shares(controller_, kT0 + kHalfLife).at("team-a"), 1.5, 1e-4);
}

TEST_F(FairShareTest, APolicyReloadKeepsEachQueuesShare) {
  Run("team-a", 4, kT0, kT0 + kHalfLife);
  Run("team-b", 2, kT0 + kHalfLife, kT0 + 2 * kHalfLife);
  const TimeMs now = kT0 + 2 * kHalfLife;
  const std::map<std::string, double> before = Shares(controller_, now);
  ASSERT_GT(before.at("team-a"), 0.0);
  ASSERT_GT(before.at("team-b"), 0.0);

  std::vector<std::string> dropped = {"stale"};
  ASSERT_TRUE(controller_.SetPolicy(Teams({"team-c", "team-b", "team-a"}), &dropped));
  EXPECT_THAT(dropped, ElementsAre());
  const std::map<std::string, double> after = Shares(controller_, now);
  EXPECT_NEAR(after.at("team-a"), before.at("team-a"), 1e-9);
  EXPECT_NEAR(after.at("team-b"), before.at("team-b"), 1e-9);
  EXPECT_DOUBLE_EQ(after.at("team-c"), 0.0);  // a new queue starts at 0
}

TEST_F(FairShareTest, AReloadThatRemovesAQueueDropsItsHistoryAndSaysSo) {
  Run("team-b", 2, kT0, kT0 + kHalfLife);
  std::vector<std::string> dropped;
  ASSERT_TRUE(controller_.SetPolicy(Teams({"team-a"}), &dropped));
  EXPECT_THAT(dropped, ElementsAre("team-b"));
  // Back again later: it starts at 0.
  ASSERT_TRUE(controller_.SetPolicy(Teams({"team-a", "team-b"}), &dropped));
  EXPECT_THAT(dropped, ElementsAre());
  EXPECT_DOUBLE_EQ(Shares(controller_, kT0 + kHalfLife).at("team-b"), 0.0);
}

TEST_F(FairShareTest, ARestartDecaysTheSavedHistoryOverTheDowntime) {
  Run("team-a", 4, kT0, kT0 + kHalfLife);
  const TimeMs stop = kT0 + kHalfLife + 10;
  const model::FairShareHistory saved = controller_.FairShareHistory(stop);
  const double at_stop = Shares(controller_, stop).at("team-a");

  // A new controller, as at server start: policy, nodes, the saved history, then the jobs.
  Controller restarted;
  ASSERT_TRUE(restarted.SetPolicy(Teams({"team-a", "team-b"})));
  Step step;
  restarted.UpsertNode(GpuNode("node-a", 8), stop, step);
  const TimeMs start = stop + kHalfLife;  // down for one half-life
  EXPECT_THAT(restarted.RestoreFairShare(saved, start), ElementsAre());
  std::vector<model::Job> jobs;
  for (const auto& [id, job] : controller_.jobs()) jobs.push_back(job);
  restarted.Restore(jobs, start, step);
  EXPECT_NEAR(Shares(restarted, start).at("team-a"), at_stop / 2, 1e-9);
}

}  // namespace
}  // namespace drover::control
