#include "drover/sched/victims.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <vector>

#include "drover/sched/sched_test_util.h"

namespace drover::sched {
namespace {

using ::testing::ElementsAre;
using testing::MakeJob;
using testing::OneWorker;

constexpr TimeMs kNow = 10 * kMillisPerHour;

// Running jobs with the specs, placements and charges they borrow.
class Running {
 public:
  // A job of `gpus` GPUs started `ran` ago, checkpointed `since_checkpoint` ago (or never).
  RunningJob& Add(std::int64_t id, int gpus, DurationMs ran,
                  std::optional<DurationMs> since_checkpoint = std::nullopt, int priority = 0,
                  bool interruptible = true) {
    model::JobSpec& spec = specs_.emplace_back(MakeJob(gpus));
    spec.interruptible = interruptible;
    std::vector<int> indices(gpus);
    for (int i = 0; i < gpus; ++i) indices[i] = i;
    const Placement& placement = placements_.emplace_back(OneWorker("n1", indices, id));
    Charge& charge = charges_.emplace_back();
    charge.amounts["gpu"] = std::int64_t{gpus} * 1000;
    RunningJob& job = jobs_.emplace_back();
    job.job = JobId(id);
    job.spec = &spec;
    job.placement = &placement;
    job.charge = &charge;
    job.priority = priority;
    job.started_at = kNow - ran;
    job.last_checkpoint_at = since_checkpoint ? kNow - *since_checkpoint : 0;
    return job;
  }
  std::vector<RunningJob> jobs() const { return {jobs_.begin(), jobs_.end()}; }

 private:
  std::deque<model::JobSpec> specs_;
  std::deque<Placement> placements_;
  std::deque<Charge> charges_;
  std::deque<RunningJob> jobs_;
};

// Rules under which every candidate is taken for priority and a set frees enough when its
// victims hold at least `gpus` GPUs.
VictimRules NeedGpus(int gpus, DurationMs min_run_time = 0) {
  VictimRules rules;
  rules.now = kNow;
  rules.min_run_time = min_run_time;
  rules.reason = [](const RunningJob&) { return VictimReason::kPriority; };
  rules.frees_enough = [gpus](std::span<const RunningJob* const> victims) {
    std::int64_t held = 0;
    for (const RunningJob* victim : victims) held += victim->charge->amounts.at("gpu");
    return held >= std::int64_t{gpus} * 1000;
  };
  return rules;
}

std::vector<std::int64_t> Ids(const VictimSelection& selection) {
  std::vector<std::int64_t> ids;
  for (const Victim& victim : selection.victims) ids.push_back(victim.job->job.value());
  return ids;
}

TEST(SelectVictims, PicksTheJobsLosingTheLeastWorkSinceTheirLastCheckpoint) {
  Running running;
  running.Add(1, 1, 5 * kMillisPerHour, 2 * kMillisPerMinute);  // loses 120 GPU-s
  running.Add(2, 1, 30 * kMillisPerMinute);                     // 1800 GPU-s, no checkpoint
  running.Add(3, 1, 3 * kMillisPerHour, kMillisPerHour);        // 3600 GPU-s
  running.Add(4, 1, 10 * kMillisPerMinute);                     // 600 GPU-s
  const std::vector<RunningJob> jobs = running.jobs();
  const VictimSelection selection = SelectVictims(jobs, NeedGpus(2));
  EXPECT_EQ(selection.candidates, 4);
  EXPECT_THAT(Ids(selection), ElementsAre(1, 4));
  ASSERT_EQ(selection.victims.size(), 2u);
  EXPECT_DOUBLE_EQ(selection.victims[0].lost_gpu_seconds, 120.0);
  EXPECT_DOUBLE_EQ(selection.victims[1].lost_gpu_seconds, 600.0);
}

TEST(SelectVictims, NeverPicksANonInterruptibleJob) {
  Running running;
  running.Add(1, 1, kMillisPerMinute, std::nullopt, 0, /*interruptible=*/false);  // cheapest
  running.Add(2, 1, kMillisPerHour);
  const std::vector<RunningJob> jobs = running.jobs();
  VictimRules rules = NeedGpus(1);
  std::vector<std::int64_t> asked;
  rules.reason = [&asked](const RunningJob& job) {
    asked.push_back(job.job.value());
    return VictimReason::kPriority;
  };
  const VictimSelection selection = SelectVictims(jobs, rules);
  EXPECT_EQ(selection.candidates, 1);
  EXPECT_THAT(Ids(selection), ElementsAre(2));
  EXPECT_THAT(asked, ElementsAre(2));  // the policy is not even asked about job 1
}

TEST(SelectVictims, RespectsMinRunTimeAndNeverTakesAJobStartedNow) {
  Running running;
  running.Add(1, 1, 0);                     // started at this instant
  running.Add(2, 1, 9 * kMillisPerMinute);  // below min_run_time
  running.Add(3, 1, 10 * kMillisPerMinute);
  const std::vector<RunningJob> jobs = running.jobs();
  EXPECT_THAT(Ids(SelectVictims(jobs, NeedGpus(1, 10 * kMillisPerMinute))), ElementsAre(3));
  // A min_run_time of 0 still spares the job started now.
  const VictimSelection no_minimum = SelectVictims(jobs, NeedGpus(1, 0));
  EXPECT_EQ(no_minimum.candidates, 2);
  EXPECT_THAT(Ids(no_minimum), ElementsAre(2));
}

TEST(SelectVictims, ReturnsNoVictimWhenNoSetFreesEnough) {
  Running running;
  running.Add(1, 1, kMillisPerHour);
  running.Add(2, 2, kMillisPerHour);
  const std::vector<RunningJob> jobs = running.jobs();
  const VictimSelection selection = SelectVictims(jobs, NeedGpus(4));
  EXPECT_EQ(selection.candidates, 2);
  EXPECT_TRUE(selection.victims.empty());
}

TEST(SelectVictims, ReturnsNoVictimWhenThePolicyAllowsNone) {
  Running running;
  running.Add(1, 1, kMillisPerHour);
  const std::vector<RunningJob> jobs = running.jobs();
  VictimRules rules = NeedGpus(1);
  rules.reason = [](const RunningJob&) { return std::optional<VictimReason>(); };
  bool asked_to_fit = false;
  rules.frees_enough = [&asked_to_fit](std::span<const RunningJob* const>) {
    asked_to_fit = true;
    return true;
  };
  const VictimSelection selection = SelectVictims(jobs, rules);
  EXPECT_EQ(selection.candidates, 0);
  EXPECT_TRUE(selection.victims.empty());
  EXPECT_FALSE(asked_to_fit);
}

TEST(SelectVictims, DropsVictimsItDoesNotNeedCostliestFirst) {
  Running running;
  running.Add(1, 1, kMillisPerMinute);       // 60 GPU-s
  running.Add(2, 1, 2 * kMillisPerMinute);   // 120 GPU-s
  running.Add(3, 4, 10 * kMillisPerMinute);  // 2400 GPU-s
  const std::vector<RunningJob> jobs = running.jobs();
  // Greedy takes 1, 2 (2 GPUs: not enough), then 3; job 3 alone frees 4, so 1 and 2 go back.
  EXPECT_THAT(Ids(SelectVictims(jobs, NeedGpus(4))), ElementsAre(3));
  // With 5 needed, job 3 stays and so does the cheaper of the two others.
  EXPECT_THAT(Ids(SelectVictims(jobs, NeedGpus(5))), ElementsAre(1, 3));
}

TEST(SelectVictims, BreaksTiesByPriorityThenLaterStartThenIdWhateverTheInputOrder) {
  Running running;
  // Every job loses 600 GPU-s: a checkpoint 10 minutes ago.
  running.Add(7, 1, 2 * kMillisPerHour, 10 * kMillisPerMinute, /*priority=*/0);
  running.Add(5, 1, 3 * kMillisPerHour, 10 * kMillisPerMinute, /*priority=*/0);
  running.Add(6, 1, 3 * kMillisPerHour, 10 * kMillisPerMinute, /*priority=*/0);
  running.Add(4, 1, 1 * kMillisPerHour, 10 * kMillisPerMinute, /*priority=*/1);
  running.Add(3, 1, 1 * kMillisPerHour, 10 * kMillisPerMinute, /*priority=*/-1);
  std::vector<RunningJob> jobs = running.jobs();
  // Lower priority first (3), then the later start (7), then the lower id (5 before 6), then 4.
  const std::vector<std::int64_t> expected = {3, 7, 5, 6, 4};
  VictimRules rules = NeedGpus(5);  // all five are needed: none is dropped
  EXPECT_EQ(Ids(SelectVictims(jobs, rules)), expected);
  std::reverse(jobs.begin(), jobs.end());
  EXPECT_EQ(Ids(SelectVictims(jobs, rules)), expected);
  std::rotate(jobs.begin(), jobs.begin() + 2, jobs.end());
  const VictimSelection rotated = SelectVictims(jobs, NeedGpus(2));
  EXPECT_THAT(Ids(rotated), ElementsAre(3, 7));
}

TEST(SelectVictims, KeepsThePolicysReasonForEachVictim) {
  Running running;
  running.Add(1, 1, kMillisPerMinute);
  running.Add(2, 1, 2 * kMillisPerMinute);
  const std::vector<RunningJob> jobs = running.jobs();
  VictimRules rules = NeedGpus(2);
  rules.reason = [](const RunningJob& job) {
    return job.job == JobId(2) ? VictimReason::kReclaim : VictimReason::kPriority;
  };
  const VictimSelection selection = SelectVictims(jobs, rules);
  ASSERT_EQ(selection.victims.size(), 2u);
  EXPECT_EQ(selection.victims[0].reason, VictimReason::kPriority);
  EXPECT_EQ(selection.victims[1].reason, VictimReason::kReclaim);
}

TEST(LostGpuSeconds, CountsMilliGpusSinceTheLastCheckpointOrStart) {
  Running running;
  RunningJob& checkpointed = running.Add(1, 2, kMillisPerHour, 90 * kMillisPerSecond);
  EXPECT_DOUBLE_EQ(LostGpuSeconds(checkpointed, kNow), 180.0);
  RunningJob& fresh = running.Add(2, 1, 30 * kMillisPerSecond);
  EXPECT_DOUBLE_EQ(LostGpuSeconds(fresh, kNow), 30.0);
  Charge share;
  share.amounts["gpu"] = 250;  // a quarter of a timeslice GPU
  fresh.charge = &share;
  EXPECT_DOUBLE_EQ(LostGpuSeconds(fresh, kNow), 7.5);
  fresh.charge = nullptr;
  EXPECT_DOUBLE_EQ(LostGpuSeconds(fresh, kNow), 0.0);
}

}  // namespace
}  // namespace drover::sched
