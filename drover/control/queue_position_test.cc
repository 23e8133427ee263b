// Queue positions (Controller::PositionOf, `drover ls --pending`): the order of the last full
// scheduling pass, per queue and over the cluster, and `explain` naming the jobs ahead.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "drover/control/control_test_util.h"
#include "drover/control/controller.h"

namespace drover::control {
namespace {

using ::testing::ElementsAre;
using ::testing::EndsWith;
using testing::GpuNode;
using ::testing::HasSubstr;
using testing::kT0;
using testing::Spec;
using testing::Started;

// A pass at this time is a full one (Options::full_cycle_interval_ms after the first).
constexpr TimeMs kFull = kT0 + Options{}.full_cycle_interval_ms;

class QueuePositionTest : public testing::ControllerFixture {
 protected:
  // Queues `queues` (none: the default queue) and one node of two GPUs, one of them taken by a
  // running job of the first queue, so that two-GPU jobs wait.
  void Install(const std::vector<std::string>& queues) {
    model::Policy policy;
    for (const std::string& name : queues) {
      model::QueueConfig queue;
      queue.name = name;
      policy.queues.push_back(queue);
    }
    ASSERT_TRUE(controller_.SetPolicy(policy).has_value());
    Step step;
    controller_.UpsertNode(GpuNode("node-a", 2), kT0, step);
    model::JobSpec holder = Spec("holder", 1);
    if (!queues.empty()) holder.queue = queues.front();
    const JobId id = Submit({holder}, kT0)[0];
    Schedule(kT0);
    Event(Started(id, 1, 0, kT0));
  }

  JobId Waiting(const std::string& name, const std::string& queue, TimeMs at,
                const std::string& priority = "") {
    model::JobSpec spec = Spec(name, 2);
    if (!queue.empty()) spec.queue = queue;
    if (!priority.empty()) spec.priority_class = priority;
    return Submit({spec}, at)[0];
  }

  // (in_queue, in_cluster) of `id`, or (0, 0) without a position.
  std::pair<int, int> At(JobId id) {
    std::optional<QueuePosition> position = controller_.PositionOf(id);
    if (!position) return {0, 0};
    return {position->in_queue, position->in_cluster};
  }
};

TEST_F(QueuePositionTest, FollowsPriorityThenTheTimeQueued) {
  Install({});
  const JobId first = Waiting("first", "", kT0 + 1);
  const JobId second = Waiting("second", "", kT0 + 2);
  const JobId urgent = Waiting("urgent", "", kT0 + 3, "high");
  Schedule(kFull);
  EXPECT_EQ(At(urgent), std::make_pair(1, 1));
  EXPECT_EQ(At(first), std::make_pair(2, 2));
  EXPECT_EQ(At(second), std::make_pair(3, 3));
  std::optional<QueuePosition> position = controller_.PositionOf(second);
  ASSERT_TRUE(position);
  EXPECT_EQ(position->queue, "default");
  EXPECT_THAT(position->ahead, ElementsAre(urgent, first));

  Result<Explanation> explained = controller_.Explain(second, kFull);
  ASSERT_TRUE(explained);
  EXPECT_EQ(explained->position, position);
  EXPECT_THAT(explained->message,
              EndsWith(fmt::format("2 jobs are ahead of it in queue default: {}, {}",
                                   urgent.value(), first.value())));
  EXPECT_THAT(controller_.Explain(urgent, kFull)->message,
              EndsWith("it is first in queue default"));
}

TEST_F(QueuePositionTest, CountsPerQueueAndAcrossQueuesInFairShareOrder) {
  Install({"team-a", "team-b"});  // team-a holds a GPU, so team-b goes first
  const JobId a1 = Waiting("a1", "team-a", kT0 + 1);
  const JobId a2 = Waiting("a2", "team-a", kT0 + 2);
  const JobId b1 = Waiting("b1", "team-b", kT0 + 3);
  Schedule(kFull);
  EXPECT_EQ(At(b1), std::make_pair(1, 1));
  EXPECT_EQ(At(a1), std::make_pair(1, 2));
  EXPECT_EQ(At(a2), std::make_pair(2, 3));
  EXPECT_THAT(controller_.Explain(a2, kFull)->message,
              HasSubstr(fmt::format("1 job is ahead of it in queue team-a: {}", a1.value())));
}

TEST_F(QueuePositionTest, NamesTheFirstFewJobsAheadAndCountsTheRest) {
  Install({});
  std::vector<JobId> ids;
  for (int i = 0; i < 8; ++i) ids.push_back(Waiting("job", "", kT0 + 1 + i));
  Schedule(kFull);
  std::vector<std::string> first_five;
  for (int i = 0; i < 5; ++i) first_five.push_back(std::to_string(ids[i].value()));
  EXPECT_THAT(controller_.Explain(ids[7], kFull)->message,
              EndsWith(fmt::format("7 jobs are ahead of it in queue default: {} and 2 more",
                                   fmt::join(first_five, ", "))));
}

TEST_F(QueuePositionTest, ComesFromTheLastFullPassAndOnlyForJobsStillWaiting) {
  Install({});
  const JobId first = Waiting("first", "", kT0 + 1);
  const JobId second = Waiting("second", "", kT0 + 2);
  Schedule(kFull);
  // A pass over only the newcomer (nothing freed, the full pass is recent) leaves the order.
  const JobId late = Waiting("late", "", kFull + 10);
  Schedule(kFull + 10);
  EXPECT_EQ(At(late), std::make_pair(0, 0));
  EXPECT_EQ(At(second), std::make_pair(2, 2));
  // A cancelled job has no position; the others keep theirs until the next full pass...
  Step step;
  ASSERT_TRUE(controller_.Cancel(first, "alice", "test", kFull + 20, step).has_value());
  EXPECT_EQ(At(first), std::make_pair(0, 0));
  EXPECT_EQ(At(second), std::make_pair(2, 2));
  // ...which numbers them again.
  Schedule(kFull + Options{}.full_cycle_interval_ms);
  EXPECT_EQ(At(second), std::make_pair(1, 1));
  EXPECT_EQ(At(late), std::make_pair(2, 2));
}

TEST_F(QueuePositionTest, APlacedJobHasNoPosition) {
  Install({});
  const JobId small = Submit({Spec("small", 1)}, kT0 + 1)[0];
  const JobId big = Waiting("big", "", kT0 + 2);
  Schedule(kFull);
  EXPECT_NE(controller_.Find(small)->state, model::JobState::kReady);  // launched
  EXPECT_EQ(At(small), std::make_pair(0, 0));
  EXPECT_EQ(At(big), std::make_pair(1, 1));
}

}  // namespace
}  // namespace drover::control
