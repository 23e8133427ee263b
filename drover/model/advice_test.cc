#include "drover/model/advice.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace drover::model {
namespace {

using ::testing::HasSubstr;

constexpr std::int64_t kGi = std::int64_t{1} << 30;
constexpr TimeMs kNow = 100 * kMillisPerDay;

// A spec asking 4 CPU and 8Gi per worker.
JobSpec Asking() {
  JobSpec spec;
  spec.workers = 1;
  spec.requirements.per_worker.cpu_millis = 4000;
  spec.requirements.per_worker.memory_bytes = 8 * kGi;
  return spec;
}

// `n` attempts an hour apart up to kNow, each using 3.6 CPU and `rss` bytes.
std::vector<UsageRecord> History(int n, std::int64_t rss) {
  std::vector<UsageRecord> history;
  for (int i = 0; i < n; ++i) {
    UsageRecord record;
    record.attempt = 1;
    record.at = kNow - i * kMillisPerHour;
    record.cpu_millis = 3600;
    record.peak_rss_bytes = rss;
    history.push_back(record);
  }
  return history;
}

const Recommendation* Find(const Advice& advice, const std::string& field) {
  for (const Recommendation& r : advice.recommendations) {
    if (r.field == field) return &r;
  }
  return nullptr;
}

TEST(Advise, AJobUsingAQuarterOfItsMemoryIsToldToAskLess) {
  const Advice advice = Advise(Asking(), History(3, 2 * kGi), kNow);
  EXPECT_TRUE(advice.no_advice.empty());
  EXPECT_EQ(advice.confidence, "low");
  const Recommendation* memory = Find(advice, "memory");
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ(memory->current, "8Gi");
  EXPECT_EQ(memory->target, "2356Mi");  // 2Gi + 15%, rounded up to a MiB
  EXPECT_THAT(memory->evidence, HasSubstr("peak RSS 2Gi per worker (p90 of 3 attempt(s) + 15%)"));
  // 3.6 CPU + 15% = 4.14 is above the 4 asked: more.
  const Recommendation* cpu = Find(advice, "cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->target, "4140m");
  EXPECT_EQ(advice.Patch(), "resources:\n  cpu: 4140m\n  memory: 2356Mi\n");
}

TEST(Advise, TooLittleHistoryGivesNoAdviceAndSaysTheMinimum) {
  const Advice advice = Advise(Asking(), History(2, 2 * kGi), kNow);
  EXPECT_TRUE(advice.recommendations.empty());
  EXPECT_EQ(advice.no_advice,
            "2 measured attempt(s) of at least the minimum sampled time; advice needs 3");
  EXPECT_EQ(advice.Patch(), "");
}

TEST(Advise, LeavesARequestWithinTheChangeShareAlone) {
  // Target 5.4Gi x 1.15 = 6.21Gi: above 75% of 8Gi, so unchanged; 5.2Gi x 1.15 = 5.98Gi: below.
  EXPECT_EQ(
      Find(Advise(Asking(), History(3, static_cast<std::int64_t>(5.4 * kGi)), kNow), "memory"),
      nullptr);
  EXPECT_NE(
      Find(Advise(Asking(), History(3, static_cast<std::int64_t>(5.2 * kGi)), kNow), "memory"),
      nullptr);
}

TEST(Advise, OldHistoryWeighsLessThanNew) {
  // Ten attempts 10 days old at 7Gi and three recent at 1Gi: the decayed p90 is the recent use.
  std::vector<UsageRecord> history = History(3, kGi);
  for (UsageRecord& record : History(10, 7 * kGi)) {
    record.at -= 10 * kMillisPerDay;
    history.push_back(record);
  }
  const Recommendation* memory = Find(Advise(Asking(), history, kNow), "memory");
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ(memory->target, "1178Mi");
}

TEST(Advise, AnIdleWholeGpuBecomesATimeSlicedShareAndARunTimeATimeout) {
  JobSpec spec = Asking();
  spec.requirements.per_worker.gpus = 1;
  std::vector<UsageRecord> history = History(3, 6 * kGi);
  for (UsageRecord& record : history) {
    record.cpu_millis = 3000;  // 3450m with the margin: within the change share of 4
    record.gpu_util_mean = 20;
    record.peak_gpu_memory_bytes = 4 * kGi;
    record.run_ms = 40 * kMillisPerMinute;
  }
  const Advice advice = Advise(spec, history, kNow);
  ASSERT_NE(Find(advice, "gpu_share"), nullptr);
  EXPECT_EQ(Find(advice, "gpu_share")->target, "250m");  // 23% rounded up to a quarter
  EXPECT_EQ(Find(advice, "gpu_memory")->target, "4711Mi");
  EXPECT_EQ(Find(advice, "timeout")->target, "1h");  // 40m x 1.5
  EXPECT_EQ(advice.Patch(),
            "resources:\n  gpus: 0\n  gpu_share: 250m\n  gpu_memory: 4711Mi\ntimeout: 1h\n");
  // A busy GPU stays whole.
  for (UsageRecord& record : history) record.gpu_util_mean = 60;
  EXPECT_EQ(Find(Advise(spec, history, kNow), "gpu_share"), nullptr);
}

TEST(UsageRecordsOf, KeepsAttemptsMeasuredLongEnoughWithTheirRunTime) {
  Job job;
  job.spec.workers = 2;
  Attempt attempt;
  attempt.number = 1;
  attempt.running_at = 1000;
  attempt.finished_at = 1000 + kMillisPerHour;
  attempt.outcome = JobState::kSucceeded;
  job.attempts = {attempt};
  AttemptUsage usage;
  usage.attempt = 1;
  usage.summary.first_at = 1000;
  usage.summary.last_at = 1000 + kMillisPerHour;
  usage.summary.cpu_ms = 2 * kMillisPerHour;  // 2 cores' worth over 2 workers: 1 core each
  std::vector<AttemptUsage> measured = {usage};
  std::vector<UsageRecord> records = UsageRecordsOf(job, measured, kMillisPerHour);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_DOUBLE_EQ(records[0].cpu_millis, 1000);
  EXPECT_EQ(records[0].run_ms, kMillisPerHour);
  EXPECT_EQ(records[0].gpu_util_mean, -1);
  EXPECT_TRUE(UsageRecordsOf(job, measured, kMillisPerHour + 1).empty());
}

}  // namespace
}  // namespace drover::model
