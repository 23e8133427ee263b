#include "drover/workflow/trials.h"

#include <gtest/gtest.h>

#include <vector>

namespace drover::workflow {
namespace {

using model::JobState;

TEST(Trials, NamesTrialJobs) { EXPECT_EQ(TrialJobName("train", 12), "train.12"); }

TEST(Trials, PicksTheBestSucceededTrialTiesToTheLowestIndex) {
  const std::vector<TrialResult> trials = {
      {1, JobState::kSucceeded, "0.80"}, {2, JobState::kFailed, "0.99"},
      {3, JobState::kSucceeded, "0.91"}, {4, JobState::kSucceeded, "0.910"},
      {5, JobState::kSucceeded, "n/a"},  {6, JobState::kSucceeded, std::nullopt},
      {7, JobState::kSucceeded, "0.5"}};
  EXPECT_EQ(BestTrial(trials, /*maximize=*/true), 3);
  EXPECT_EQ(BestTrial(trials, /*maximize=*/false), 7);
  EXPECT_EQ(BestTrial(std::vector<TrialResult>{{1, JobState::kFailed, "1"}}, true), std::nullopt);
}

TEST(Trials, StopsEarlyWhenTheObjectiveReachesStopAt) {
  model::TrialSpec trial;
  EXPECT_FALSE(ReachesStopAt(trial, "1"));  // no stop_at
  trial.stop_at = 0.99;
  EXPECT_TRUE(ReachesStopAt(trial, "0.99"));
  EXPECT_TRUE(ReachesStopAt(trial, "0.995\n"));
  EXPECT_FALSE(ReachesStopAt(trial, "0.98"));
  EXPECT_FALSE(ReachesStopAt(trial, "high"));
  trial.maximize = false;
  trial.stop_at = 0.1;
  EXPECT_TRUE(ReachesStopAt(trial, "0.05"));
  EXPECT_FALSE(ReachesStopAt(trial, "0.2"));
}

}  // namespace
}  // namespace drover::workflow
