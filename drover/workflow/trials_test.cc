#include "drover/workflow/trials.h"

#include <gtest/gtest.h>

#include <string>
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

TEST(Trials, ReadsEachTrialsObjectiveOutputByItsGoal) {
  std::vector<model::Job> jobs(3);
  const std::vector<std::string> loss = {"0.4", "0.2", "0.3"};
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    model::TrialSpec& trial = jobs[i].spec.trial;
    trial.index = static_cast<int>(i) + 1;
    trial.count = 3;
    trial.objective = "loss";
    trial.maximize = false;
    jobs[i].state = JobState::kSucceeded;
    jobs[i].outputs = {{"loss", loss[i]}, {"accuracy", "0.9"}};
  }
  jobs[1].outputs.erase("loss");  // the lowest, not published: not a candidate
  const std::vector<const model::Job*> trials = {&jobs[0], &jobs[1], &jobs[2]};
  EXPECT_EQ(BestTrialOf(trials), 3);
  for (model::Job& job : jobs) job.spec.trial.maximize = true;
  EXPECT_EQ(BestTrialOf(trials), 1);
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
