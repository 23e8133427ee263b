// ControlPlane's cron jobs under a FakeClock and the memory store, driven one turn at a time
// (RunOnce, no loop thread): submission with the run id as the key, the concurrency policies,
// and validation errors.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "drover/server/control_plane.h"
#include "drover/testing/fake_clock.h"

namespace drover::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// 2023-11-14T22:13:20Z, 0 s past a 10-second due time.
constexpr TimeMs kStart = 1'700'000'000'000;

class ControlPlaneCronTest : public ::testing::Test {
 protected:
  // No nodes: a run's job stays pending, which keeps its run active.
  void SetUp() override {
    ControlPlaneOptions options;
    options.run_loop = false;
    plane_ = std::make_unique<ControlPlane>(store::NewMemoryStore(), clock_, options);
    ASSERT_TRUE(plane_->Start().has_value());
  }

  model::CronSpec Spec(model::ConcurrencyPolicy policy) {
    model::CronSpec spec;
    spec.name = "tick";
    spec.schedule = "*/10 * * * * *";
    spec.concurrency_policy = policy;
    model::JobSpec job;
    job.name = "tick";
    job.command = {"true"};
    spec.jobs = {job};
    return spec;
  }

  std::vector<std::string> Keys() {
    std::vector<std::string> keys;
    for (const model::Job& job : plane_->ListJobs({})) keys.push_back(job.submission_key);
    return keys;
  }

  // Moves the clock to `to` and runs one turn of the loop, which starts the runs due by then.
  void AdvanceTo(TimeMs to) {
    clock_.Set(to);
    plane_->RunOnce();
  }

  testing::FakeClock clock_{kStart + 1};
  std::unique_ptr<ControlPlane> plane_;
};

TEST_F(ControlPlaneCronTest, DueRunIsSubmittedOnceUnderItsRunId) {
  auto status =
      plane_->PutCron(Spec(model::ConcurrencyPolicy::kAllow), model::AdminIdentity("alice"));
  ASSERT_TRUE(status.has_value()) << status.error().ToString();
  EXPECT_EQ(status->next_run, kStart + 10'000);
  EXPECT_TRUE(Keys().empty());

  AdvanceTo(kStart + 10'500);
  ASSERT_EQ(Keys().size(), 1u);
  EXPECT_THAT(Keys(), ElementsAre("tick@2023-11-14T22:13:30Z"));
  AdvanceTo(kStart + 12'000);
  EXPECT_EQ(Keys().size(), 1u);

  AdvanceTo(kStart + 20'000);
  ASSERT_EQ(Keys().size(), 2u);
  std::vector<CronStatus> crons = plane_->Crons();
  ASSERT_EQ(crons.size(), 1u);
  EXPECT_EQ(crons[0].record.last_handled, kStart + 20'000);
  EXPECT_EQ(crons[0].record.owner, "alice");
  ASSERT_TRUE(crons[0].last.has_value());
  EXPECT_EQ(crons[0].last->id, "tick@2023-11-14T22:13:40Z");
  EXPECT_EQ(crons[0].active.size(), 2u);
}

TEST_F(ControlPlaneCronTest, ForbidSkipsWhileTheRunIsActive) {
  ASSERT_TRUE(
      plane_->PutCron(Spec(model::ConcurrencyPolicy::kForbid), model::AdminIdentity("alice"))
          .has_value());
  AdvanceTo(kStart + 10'000);
  ASSERT_EQ(Keys().size(), 1u);
  AdvanceTo(kStart + 20'000);
  ASSERT_EQ(plane_->Crons()[0].record.last_handled, kStart + 20'000);
  EXPECT_EQ(Keys().size(), 1u);
}

TEST_F(ControlPlaneCronTest, ReplaceCancelsTheActiveRun) {
  ASSERT_TRUE(
      plane_->PutCron(Spec(model::ConcurrencyPolicy::kReplace), model::AdminIdentity("alice"))
          .has_value());
  AdvanceTo(kStart + 10'000);
  ASSERT_EQ(Keys().size(), 1u);
  AdvanceTo(kStart + 20'000);
  ASSERT_EQ(Keys().size(), 2u);
  std::vector<model::Job> jobs = plane_->ListJobs({});
  EXPECT_EQ(jobs[0].state, model::JobState::kCancelled);
  EXPECT_FALSE(model::IsTerminal(jobs[1].state));
  std::vector<CronStatus> crons = plane_->Crons();
  ASSERT_EQ(crons[0].history.size(), 1u);
  // A replaced run was cancelled, not failed.
  EXPECT_EQ(crons[0].history[0].state, workflow::RunState::kCancelled);
  ASSERT_EQ(crons[0].active.size(), 1u);
  EXPECT_FALSE(workflow::IsFinished(crons[0].active[0].state));
}

TEST_F(ControlPlaneCronTest, SuspendedCronStartsNoRunAndResumesAtTheNextDueTime) {
  ASSERT_TRUE(plane_->PutCron(Spec(model::ConcurrencyPolicy::kAllow), model::AdminIdentity("alice"))
                  .has_value());
  auto suspended = plane_->SuspendCron("tick", true);
  ASSERT_TRUE(suspended.has_value()) << suspended.error().ToString();
  EXPECT_TRUE(suspended->record.spec.suspend);
  EXPECT_FALSE(suspended->next_run.has_value());
  // Twice is the same.
  ASSERT_TRUE(plane_->SuspendCron("tick", true).has_value());

  AdvanceTo(kStart + 10'000);
  AdvanceTo(kStart + 20'000);
  EXPECT_TRUE(Keys().empty());
  EXPECT_TRUE(plane_->Crons()[0].record.spec.suspend);

  // The runs due at +10 s and +20 s were missed while suspended: none starts on resume.
  clock_.Set(kStart + 25'000);
  auto resumed = plane_->SuspendCron("tick", false);
  ASSERT_TRUE(resumed.has_value()) << resumed.error().ToString();
  EXPECT_FALSE(resumed->record.spec.suspend);
  EXPECT_EQ(resumed->next_run, kStart + 30'000);
  AdvanceTo(kStart + 25'500);
  EXPECT_TRUE(Keys().empty());
  AdvanceTo(kStart + 30'000);
  EXPECT_THAT(Keys(), ElementsAre("tick@2023-11-14T22:13:50Z"));

  EXPECT_EQ(plane_->SuspendCron("nope", true).error().code, ErrorCode::kNotFound);
}

TEST_F(ControlPlaneCronTest, ErrorsNameTheField) {
  model::CronSpec spec = Spec(model::ConcurrencyPolicy::kAllow);
  spec.time_zone = "Mars/Olympus_Mons";
  auto zone = plane_->PutCron(spec, model::AdminIdentity("alice"));
  ASSERT_FALSE(zone.has_value());
  EXPECT_EQ(zone.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(zone.error().message, HasSubstr("time_zone: unknown time zone"));

  spec = Spec(model::ConcurrencyPolicy::kAllow);
  spec.schedule = "61 * * * *";
  auto schedule = plane_->PutCron(spec, model::AdminIdentity("alice"));
  ASSERT_FALSE(schedule.has_value());
  EXPECT_THAT(schedule.error().message, HasSubstr("schedule: minute: \"61\""));
  EXPECT_TRUE(plane_->Crons().empty());
  EXPECT_EQ(plane_->DeleteCron("tick").error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace drover::server
