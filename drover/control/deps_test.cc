// Dependencies across submissions (docs/workflows.md): `job:ID` in depends_on names a job of an
// earlier submission, judged with the same conditions as a job of the same file.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drover/control/control_test_util.h"
#include "drover/control/controller.h"

namespace drover::control {
namespace {

using model::DependencyCondition;
using model::JobState;
using ::testing::HasSubstr;
using testing::kT0;
using testing::Spec;
using testing::Started;

// A job `name` that depends on job `upstream` of an earlier submission with `condition`.
model::JobSpec After(const std::string& name, JobId upstream,
                     DependencyCondition condition = DependencyCondition::kSucceeded) {
  model::JobSpec spec = Spec(name);
  spec.depends_on = {{fmt::format("job:{}", upstream.value()), condition}};
  return spec;
}

class DepsTest : public testing::ControllerFixture {
 protected:
  DepsTest() {
    Step step;
    controller_.UpsertNode(testing::GpuNode("node-a", 4), kT0, step);
  }

  // Starts `id` (attempt 1, one worker) and lets it exit with `code` at `at`.
  void RunToExit(JobId id, int code, TimeMs at) {
    Schedule(at);
    Event(Started(id, 1, 0, at));
    Event(testing::Exited(id, 1, 0, code, at));
  }

  // The error of submitting `specs`, which must be refused.
  Error Refusal(std::vector<model::JobSpec> specs) {
    Step step;
    Result<SubmitResult> result = controller_.Submit(std::move(specs), "", "alice", kT0, step);
    EXPECT_FALSE(result);
    EXPECT_TRUE(step.transitions.empty());
    return result ? Error{} : result.error();
  }
};

TEST_F(DepsTest, WaitsForAnEarlierJobToSucceedAndSaysSo) {
  const JobId a = Submit({Spec("a")})[0];
  const JobId b = Submit({After("b", a)})[0];
  Schedule(kT0 + 1);
  Event(Started(a, 1, 0, kT0 + 1));
  EXPECT_EQ(State(b), JobState::kPending);
  EXPECT_EQ(controller_.Find(b)->dependencies, std::vector<JobId>{a});
  EXPECT_EQ(controller_.Find(b)->status_message,
            fmt::format("waiting for job {} to succeed", a.value()));
  Result<Explanation> why = controller_.Explain(b, kT0 + 1);
  ASSERT_TRUE(why);
  EXPECT_EQ(why->layer, model::HoldLayer::kDependency);
  EXPECT_EQ(why->message,
            fmt::format("waiting for job {0} to succeed; unfinished: a ({0}, running)", a.value()));

  Event(testing::Exited(a, 1, 0, 0, kT0 + 2));
  Schedule(kT0 + 3);
  EXPECT_EQ(State(b), JobState::kStarting);
}

TEST_F(DepsTest, SkipsWithTheCauseWhenTheEarlierJobCanNoLongerMeetTheCondition) {
  const JobId fails = Submit({Spec("fails")})[0];
  const JobId cancelled = Submit({Spec("cancelled")})[0];
  const JobId succeeds = Submit({Spec("succeeds")})[0];
  const JobId on_ok = Submit({After("on-ok", fails)})[0];
  const JobId on_cancel = Submit({After("on-cancel", cancelled)})[0];
  const JobId on_failure = Submit({After("on-failure", succeeds, DependencyCondition::kFailed)})[0];
  const JobId cleanup = Submit({After("cleanup", fails, DependencyCondition::kDone)})[0];

  Step step;
  ASSERT_TRUE(controller_.Cancel(cancelled, "alice", "cancelled by alice", kT0 + 1, step));
  RunToExit(fails, 3, kT0 + 2);
  Schedule(kT0 + 3);
  Event(Started(succeeds, 1, 0, kT0 + 3));
  Event(testing::Exited(succeeds, 1, 0, 0, kT0 + 3));
  Schedule(kT0 + 4);

  EXPECT_EQ(State(on_ok), JobState::kSkipped);
  EXPECT_EQ(controller_.Find(on_ok)->status_message,
            fmt::format("dependency job {} failed; this job needed it to succeed", fails.value()));
  EXPECT_EQ(State(on_cancel), JobState::kSkipped);
  EXPECT_EQ(
      controller_.Find(on_cancel)->status_message,
      fmt::format("dependency job {} failed; this job needed it to succeed", cancelled.value()));
  EXPECT_EQ(State(on_failure), JobState::kSkipped);
  EXPECT_EQ(
      controller_.Find(on_failure)->status_message,
      fmt::format("dependency job {} succeeded; this job needed it to fail", succeeds.value()));
  EXPECT_EQ(State(cleanup), JobState::kStarting);  // `done` holds for any end
}

TEST_F(DepsTest, RefusesAnIdThatIsNotAnEarlierJob) {
  const JobId a = Submit({Spec("a")})[0];
  const JobId next(a.value() + 1);
  // Missing, its own id (the next one), and one from the future: the same answer.
  for (JobId id : {JobId(a.value() + 100), next, JobId(next.value() + 1)}) {
    const Error error = Refusal({Spec("first"), After("b", id)});
    EXPECT_EQ(error.code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(error.message,
              fmt::format("job 'b': depends_on[0] (job:{0}): job {0} does not exist", id.value()));
  }
  EXPECT_EQ(Submit({Spec("c")})[0], next);  // nothing was created
}

TEST_F(DepsTest, RefusesAConditionThatCanAlreadyNeverHold) {
  const JobId a = Submit({Spec("a")})[0];
  RunToExit(a, 1, kT0 + 1);
  ASSERT_EQ(State(a), JobState::kFailed);
  const Error error = Refusal({After("b", a)});
  EXPECT_EQ(error.code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(error.message,
            fmt::format("job 'b': depends_on[0] (job:{0}): job {0} has failed, so it can no "
                        "longer succeed as this job needs",
                        a.value()));
  // A condition that holds is met at once.
  const JobId handler = Submit({After("handler", a, DependencyCondition::kFailed)})[0];
  Schedule(kT0 + 2);
  EXPECT_EQ(State(handler), JobState::kStarting);
}

// An in-file name means the job of the same submission, even when an earlier job named in
// depends_on by id has that name too.
TEST_F(DepsTest, AnEarlierJobIsNamedByIdOnly) {
  const JobId old_prep = Submit({Spec("prep")})[0];
  model::JobSpec train = Spec("train");
  train.depends_on = {{"prep"}, {fmt::format("job:{}", old_prep.value())}};
  const std::vector<JobId> ids = Submit({Spec("prep"), train});
  Schedule(kT0 + 1);
  Event(Started(old_prep, 1, 0, kT0 + 1));
  Event(testing::Exited(old_prep, 1, 0, 0, kT0 + 1));
  Schedule(kT0 + 2);
  EXPECT_EQ(State(ids[1]), JobState::kPending);
  EXPECT_EQ(controller_.Find(ids[1])->status_message, "waiting for 'prep' to succeed");
  Event(Started(ids[0], 1, 0, kT0 + 2));
  Event(testing::Exited(ids[0], 1, 0, 0, kT0 + 3));
  Schedule(kT0 + 4);
  EXPECT_EQ(State(ids[1]), JobState::kStarting);
}

TEST_F(DepsTest, AWaitOutlivesARestart) {
  const JobId a = Submit({Spec("a")})[0];
  const JobId b = Submit({After("b", a)})[0];
  Schedule(kT0 + 1);
  Event(Started(a, 1, 0, kT0 + 1));

  Controller after;
  Step restore;
  after.UpsertNode(testing::GpuNode("node-a", 4), kT0 + 5, restore);
  std::vector<model::Job> stored;
  for (const auto& [id, job] : controller_.jobs()) stored.push_back(job);
  after.Restore(stored, kT0 + 5, restore);
  controller_ = std::move(after);
  Schedule(kT0 + 6);
  EXPECT_EQ(State(b), JobState::kPending);
  Event(testing::Exited(a, 1, 0, 0, kT0 + 7));
  Schedule(kT0 + 8);
  EXPECT_EQ(State(b), JobState::kStarting);
}

}  // namespace
}  // namespace drover::control
