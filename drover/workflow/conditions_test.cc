#include "drover/workflow/conditions.h"

#include <gtest/gtest.h>

#include <vector>

namespace drover::workflow {
namespace {

using model::DependencyCondition;
using model::JobState;
using Kind = DependencyVerdict::Kind;

TEST(Conditions, MapsJobStates) {
  EXPECT_EQ(StateOf(JobState::kRunning), UpstreamState::kUnfinished);
  EXPECT_EQ(StateOf(JobState::kWaiting), UpstreamState::kUnfinished);
  EXPECT_EQ(StateOf(JobState::kSucceeded), UpstreamState::kSucceeded);
  EXPECT_EQ(StateOf(JobState::kTimedOut), UpstreamState::kFailed);
  EXPECT_EQ(StateOf(JobState::kCancelled), UpstreamState::kFailed);
  EXPECT_EQ(StateOf(JobState::kSkipped), UpstreamState::kSkipped);
}

TEST(Conditions, AggregatesASweep) {
  using S = JobState;
  auto agg = [](std::vector<S> states) { return AggregateStage(states); };
  EXPECT_EQ(agg({}), UpstreamState::kUnfinished);
  EXPECT_EQ(agg({S::kSucceeded, S::kRunning}), UpstreamState::kUnfinished);
  EXPECT_EQ(agg({S::kFailed, S::kSucceeded, S::kFailed}), UpstreamState::kSucceeded);
  // Early stopping: the rest were cancelled after one trial reached stop_at.
  EXPECT_EQ(agg({S::kCancelled, S::kSucceeded, S::kCancelled}), UpstreamState::kSucceeded);
  EXPECT_EQ(agg({S::kSkipped, S::kSkipped}), UpstreamState::kSkipped);
  EXPECT_EQ(agg({S::kSkipped, S::kFailed}), UpstreamState::kFailed);
  EXPECT_EQ(agg({S::kTimedOut, S::kCancelled}), UpstreamState::kFailed);
}

TEST(Conditions, FollowsTheConditionTable) {
  const UpstreamState kSucc = UpstreamState::kSucceeded;
  const UpstreamState kFail = UpstreamState::kFailed;
  const UpstreamState kSkip = UpstreamState::kSkipped;
  EXPECT_TRUE(Holds(DependencyCondition::kSucceeded, kSucc));
  EXPECT_TRUE(CannotHold(DependencyCondition::kSucceeded, kFail));
  EXPECT_TRUE(CannotHold(DependencyCondition::kSucceeded, kSkip));
  EXPECT_TRUE(Holds(DependencyCondition::kFailed, kFail));
  EXPECT_TRUE(CannotHold(DependencyCondition::kFailed, kSucc));
  EXPECT_TRUE(CannotHold(DependencyCondition::kFailed, kSkip));
  for (UpstreamState s : {kSucc, kFail, kSkip}) {
    EXPECT_TRUE(Holds(DependencyCondition::kDone, s));
    EXPECT_FALSE(CannotHold(DependencyCondition::kDone, s));
  }
  EXPECT_TRUE(Holds(DependencyCondition::kSkipped, kSkip));
  EXPECT_TRUE(CannotHold(DependencyCondition::kSkipped, kSucc));
  EXPECT_TRUE(CannotHold(DependencyCondition::kSkipped, kFail));
  for (auto c : {DependencyCondition::kSucceeded, DependencyCondition::kFailed,
                 DependencyCondition::kDone, DependencyCondition::kSkipped}) {
    EXPECT_FALSE(Holds(c, UpstreamState::kUnfinished));
    EXPECT_FALSE(CannotHold(c, UpstreamState::kUnfinished));
  }
}

JudgedDependency Dep(std::string name, DependencyCondition condition, UpstreamState state) {
  return {{std::move(name), condition}, state};
}

TEST(Conditions, JudgesWaitReleaseAndSkip) {
  EXPECT_EQ(Judge({}), (DependencyVerdict{Kind::kRelease, ""}));

  std::vector<JudgedDependency> deps = {
      Dep("prep", DependencyCondition::kSucceeded, UpstreamState::kSucceeded),
      Dep("train", DependencyCondition::kSucceeded, UpstreamState::kUnfinished),
      Dep("lint", DependencyCondition::kDone, UpstreamState::kUnfinished)};
  EXPECT_EQ(Judge(deps),
            (DependencyVerdict{Kind::kWait, "waiting for 'train' to succeed, 'lint' to finish"}));

  deps[1].upstream = UpstreamState::kSucceeded;
  deps[2].upstream = UpstreamState::kFailed;
  EXPECT_EQ(Judge(deps).kind, Kind::kRelease);

  // A cleanup stage that runs only when training failed.
  std::vector<JudgedDependency> cleanup = {
      Dep("train", DependencyCondition::kFailed, UpstreamState::kSucceeded)};
  EXPECT_EQ(Judge(cleanup), (DependencyVerdict{Kind::kSkip,
                                               "dependency 'train' succeeded; this job "
                                               "needed it to fail"}));
}

TEST(Conditions, SkipsAsSoonAsAConditionCanNoLongerHold) {
  std::vector<JudgedDependency> deps = {
      Dep("slow", DependencyCondition::kSucceeded, UpstreamState::kUnfinished),
      Dep("prep", DependencyCondition::kSucceeded, UpstreamState::kFailed)};
  EXPECT_EQ(
      Judge(deps),
      (DependencyVerdict{Kind::kSkip, "dependency 'prep' failed; this job needed it to succeed"}));
}

// A job of an earlier submission (`job:ID`) is judged as a job of the same file is, and named by
// its id.
TEST(Conditions, NamesAnEarlierSubmissionsJobByItsId) {
  EXPECT_EQ(
      Judge(std::vector{Dep("job:12", DependencyCondition::kSucceeded, UpstreamState::kUnfinished),
                        Dep("job:13", DependencyCondition::kFailed, UpstreamState::kUnfinished)}),
      (DependencyVerdict{Kind::kWait, "waiting for job 12 to succeed, job 13 to fail"}));
  EXPECT_EQ(
      Judge(std::vector{Dep("job:12", DependencyCondition::kSucceeded, UpstreamState::kFailed)}),
      (DependencyVerdict{Kind::kSkip, "dependency job 12 failed; this job needed it to succeed"}));
  EXPECT_EQ(
      Judge(std::vector{Dep("job:12", DependencyCondition::kFailed, UpstreamState::kSucceeded)}),
      (DependencyVerdict{Kind::kSkip, "dependency job 12 succeeded; this job needed it to fail"}));
  EXPECT_EQ(
      Judge(std::vector{Dep("job:12", DependencyCondition::kDone, UpstreamState::kFailed)}).kind,
      Kind::kRelease);
}

// a -> b -> c with the default condition: a skipped b skips c, while a `skipped` or `done`
// condition downstream still runs.
TEST(Conditions, SkippingPropagates) {
  const UpstreamState b = UpstreamState::kSkipped;  // b was skipped because a failed
  EXPECT_EQ(Judge(std::vector{Dep("b", DependencyCondition::kSucceeded, b)}),
            (DependencyVerdict{Kind::kSkip,
                               "dependency 'b' was skipped; this job needed it to succeed"}));
  EXPECT_EQ(Judge(std::vector{Dep("b", DependencyCondition::kSkipped, b)}).kind, Kind::kRelease);
  EXPECT_EQ(Judge(std::vector{Dep("b", DependencyCondition::kDone, b)}).kind, Kind::kRelease);
  EXPECT_EQ(Judge(std::vector{Dep("b", DependencyCondition::kFailed, b)}).kind, Kind::kSkip);
}

}  // namespace
}  // namespace drover::workflow
