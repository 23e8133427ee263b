// The controller's side of the queue orders (model::QueueOrder): submission times and attained
// service handed to the engine, and LAS preemption as jobs run.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drover/control/control_test_util.h"
#include "drover/control/controller.h"

namespace drover::control {
namespace {

using model::JobState;
using testing::GpuNode;
using ::testing::HasSubstr;
using testing::kT0;
using testing::Launches;
using testing::Preempted;
using testing::Spec;
using testing::Started;
using testing::Stops;

constexpr DurationMs kSecond = 1'000;

model::Attempt Placed(int number, TimeMs placed_at, TimeMs finished_at, int workers) {
  model::Attempt attempt;
  attempt.number = number;
  attempt.placed_at = placed_at;
  attempt.finished_at = finished_at;
  attempt.workers.resize(workers);
  return attempt;
}

TEST(AttainedGpuMs, CountsEveryPlacedAttemptsGpusTimesTheTimeHeld) {
  model::Job job;
  job.spec = Spec("train", /*gpus=*/2, /*workers=*/2);
  job.attempts.push_back(Placed(1, 1'000, 11'000, 2));  // 4 GPUs x 10 s, preempted
  model::Attempt never_placed;                          // cancelled before placement
  never_placed.number = 2;
  never_placed.finished_at = 12'000;
  job.attempts.push_back(never_placed);
  job.attempts.push_back(Placed(3, 20'000, 0, 1));  // elastic: 1 worker of 2 GPUs, running
  EXPECT_EQ(AttainedGpuMs(job, 25'000), 4 * 10'000 + 2 * 5'000);
  EXPECT_EQ(AttainedGpuMs(model::Job{}, 25'000), 0);
}

TEST(AttainedGpuMs, CountsSharesInThousandthsAndMigInstancesInSevenths) {
  model::Job share;
  share.spec = Spec("notebook");
  share.spec.requirements.gpu_share_millis = 250;
  share.attempts.push_back(Placed(1, 1'000, 0, 1));  // times are never 0 (0 is "not reached")
  EXPECT_EQ(AttainedGpuMs(share, 5'000), 1'000);     // a quarter GPU for 4 s
  model::Job mig;
  mig.spec = Spec("infer");
  mig.spec.requirements.mig_profile = "3g.40gb";
  mig.attempts.push_back(Placed(1, 1'000, 8'000, 1));
  EXPECT_EQ(AttainedGpuMs(mig, 9'000), 428 * 7);  // 3/7 of a GPU (428m) for 7 s
}

class QueueOrderTest : public testing::ControllerFixture {
 protected:
  void Install(model::QueueOrder order) {
    model::Policy policy;
    policy.order = order;
    policy.las_thresholds = {60};  // GPU-seconds: one GPU for a minute
    ASSERT_TRUE(controller_.SetPolicy(policy).has_value());
    Step step;
    controller_.UpsertNode(GpuNode("node-a", 1), kT0, step);
  }

  JobId Submit(model::JobSpec spec, TimeMs now) {
    return ControllerFixture::Submit({std::move(spec)}, now).at(0);
  }
};

TEST_F(QueueOrderTest, LasDemotesTheRunningJobAndANewcomerPreemptsIt) {
  Install(model::QueueOrder::kLas);
  model::JobSpec long_job = Spec("long", 1);
  long_job.interruptible = true;
  const JobId a = Submit(long_job, kT0);
  ASSERT_EQ(Launches(Schedule(kT0)).size(), 1u);
  Event(Started(a, 1, 0, kT0 + 100));
  const JobId b = Submit(Spec("short", 1), kT0 + 30 * kSecond);
  // 30 GPU-seconds: both jobs are in LAS queue 0; the newcomer waits.
  EXPECT_TRUE(Schedule(kT0 + 30 * kSecond).effects.empty());
  EXPECT_EQ(State(b), JobState::kReady);
  // 61 GPU-seconds: the running job is demoted to queue 1 and preempted for the newcomer.
  Step demoted = Schedule(kT0 + 61 * kSecond);
  ASSERT_EQ(Stops(demoted).size(), 1u);
  EXPECT_EQ(Stops(demoted)[0].key.job, a);
  EXPECT_TRUE(Stops(demoted)[0].preempt);
  ASSERT_FALSE(demoted.decisions.empty());
  EXPECT_THAT(demoted.decisions[0].summary, HasSubstr("least attained service"));
  Event(Preempted(a, 1, 0, kT0 + 62 * kSecond));
  EXPECT_EQ(State(a), JobState::kReady);
  Step placed = Schedule(kT0 + 62 * kSecond);
  ASSERT_EQ(Launches(placed).size(), 1u);
  EXPECT_EQ(Launches(placed)[0].spec.key.job, b);
  // The preempted job keeps the service it attained: it stays in queue 1, behind newcomers.
  EXPECT_EQ(AttainedGpuMs(*controller_.Find(a), kT0 + 70 * kSecond), 62 * kSecond);
}

TEST_F(QueueOrderTest, LasNeverPreemptsAJobThatIsNotInterruptible) {
  Install(model::QueueOrder::kLas);
  const JobId a = Submit(Spec("long", 1), kT0);
  ASSERT_EQ(Launches(Schedule(kT0)).size(), 1u);
  Event(Started(a, 1, 0, kT0 + 100));
  const JobId b = Submit(Spec("short", 1), kT0 + 30 * kSecond);
  Schedule(kT0 + 30 * kSecond);
  EXPECT_TRUE(Stops(Schedule(kT0 + 120 * kSecond)).empty());
  EXPECT_EQ(State(a), JobState::kRunning);
  EXPECT_EQ(State(b), JobState::kReady);
}

TEST_F(QueueOrderTest, FifoStartsTheEarlierSubmissionBeforeAHigherPriority) {
  for (model::QueueOrder order : {model::QueueOrder::kFairShare, model::QueueOrder::kFifo}) {
    controller_ = Controller();
    Install(order);
    const JobId running = Submit(Spec("running", 1), kT0);
    ASSERT_EQ(Launches(Schedule(kT0)).size(), 1u);
    Event(Started(running, 1, 0, kT0 + 100));
    const JobId first = Submit(Spec("first", 1), kT0 + 1'000);
    model::JobSpec urgent = Spec("urgent", 1);
    urgent.priority_class = "high";
    const JobId second = Submit(urgent, kT0 + 2'000);
    Schedule(kT0 + 2'000);
    Event(testing::Exited(running, 1, 0, 0, kT0 + 3'000));
    Step step = Schedule(kT0 + 3'000);
    ASSERT_EQ(Launches(step).size(), 1u);
    EXPECT_EQ(Launches(step)[0].spec.key.job, order == model::QueueOrder::kFifo ? first : second)
        << model::QueueOrderName(order);
  }
}

}  // namespace
}  // namespace drover::control
