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

// Three attempts of a 1-GPU job, an hour of samples each, at `activity`% and `gpu_memory` bytes.
std::vector<UsageRecord> GpuHistory(double activity, std::int64_t gpu_memory) {
  std::vector<UsageRecord> history = History(3, 6 * kGi);
  for (UsageRecord& record : history) {
    record.cpu_millis = 3000;
    record.gpu_util_mean = activity;
    record.peak_gpu_memory_bytes = gpu_memory;
    record.sampled_ms = kMillisPerHour;
  }
  return history;
}

AdviceOptions H200Mig() {
  AdviceOptions options;
  for (const char* profile : {"1g.18gb", "2g.35gb", "3g.71gb"}) {
    options.mig_offers.push_back({"H200", profile});
  }
  return options;
}

TEST(Advise, AOneGpuJobThatFitsASliceIsAdvisedTheSmallestOfferedMigProfile) {
  JobSpec spec = Asking();
  spec.requirements.per_worker.gpus = 1;
  // 20% x 1.15 = 23% of the SMs needs 2 of 7 slices (1/7 is 14%); 12Gi x 1.15 = 13.8Gi fits
  // 2g.35gb (1g.18gb's 16.2Gi usable would hold it, but not its compute).
  const Advice advice = Advise(spec, GpuHistory(20, 12 * kGi), kNow, H200Mig());
  const Recommendation* mig = Find(advice, "mig");
  ASSERT_NE(mig, nullptr);
  EXPECT_EQ(mig->current, "none (1 whole GPU)");
  EXPECT_EQ(mig->target, "2g.35gb");
  EXPECT_THAT(mig->evidence, HasSubstr("mean GPU activity 20%"));
  EXPECT_THAT(mig->evidence, HasSubstr("saves 5/7 of a GPU, 0.71 GPU-hours per worker per 1.0 h"));
  EXPECT_EQ(Find(advice, "gpu_share"), nullptr);  // a MIG slice instead of a share
  EXPECT_EQ(advice.Patch(), "resources:\n  gpus: 0\n  mig: 2g.35gb\n");
  // At 10% a 1g.18gb slice holds the compute (11.5% <= 14.3%) and the memory.
  EXPECT_EQ(Find(Advise(spec, GpuHistory(10, 12 * kGi), kNow, H200Mig()), "mig")->target,
            "1g.18gb");
  // 20Gi of GPU memory (23Gi with the margin) outgrows 1g.18gb: 2g.35gb.
  EXPECT_EQ(Find(Advise(spec, GpuHistory(10, 20 * kGi), kNow, H200Mig()), "mig")->target,
            "2g.35gb");
}

TEST(Advise, NoMigProfileWithoutAnOfferAFitOrASingleGpu) {
  JobSpec spec = Asking();
  spec.requirements.per_worker.gpus = 1;
  // No MIG in the cluster: the time-sliced share, as before.
  EXPECT_EQ(Find(Advise(spec, GpuHistory(20, 12 * kGi), kNow), "mig"), nullptr);
  // 60% x 1.15 = 69% needs 5 slices: no offered profile (3g is 43%).
  EXPECT_EQ(Find(Advise(spec, GpuHistory(60, 12 * kGi), kNow, H200Mig()), "mig"), nullptr);
  // 70Gi of GPU memory fits no slice offered.
  EXPECT_EQ(Find(Advise(spec, GpuHistory(10, 70 * kGi), kNow, H200Mig()), "mig"), nullptr);
  // A job that accepts only H100s is not advised the H200's profiles.
  spec.requirements.gpu_models = {"H100"};
  EXPECT_EQ(Find(Advise(spec, GpuHistory(10, 12 * kGi), kNow, H200Mig()), "mig"), nullptr);
  // Two GPUs per worker are advised a count, never a slice.
  spec.requirements.gpu_models.clear();
  spec.requirements.per_worker.gpus = 2;
  EXPECT_EQ(Find(Advise(spec, GpuHistory(10, 12 * kGi), kNow, H200Mig()), "mig"), nullptr);
}

TEST(Advise, SmActivityDecidesTheSliceWhenEveryAttemptHasGpm) {
  JobSpec spec = Asking();
  spec.requirements.per_worker.gpus = 1;
  std::vector<UsageRecord> history = GpuHistory(45, 12 * kGi);
  // A kernel runs 45% of the time (3 slices by GPU activity), but on 10% of the SMs.
  for (UsageRecord& record : history) record.sm_active_mean = 10;
  const Advice advice = Advise(spec, history, kNow, H200Mig());
  const Recommendation* mig = Find(advice, "mig");
  ASSERT_NE(mig, nullptr);
  EXPECT_EQ(mig->target, "1g.18gb");
  EXPECT_THAT(mig->evidence, HasSubstr("mean SM activity 10%"));
}

TEST(MigOffersOf, ListsTheProfilesOfMigGpusThatNvidiasTableHas) {
  Node node;
  Gpu h200;
  h200.model = "H200";
  h200.memory_bytes = 141 * kGi;
  h200.sharing = GpuSharing::kMig;
  h200.mig = {{"1g.18gb", 3}, {"2g.35gb", 2}, {"1g.10gb", 1}};  // 1g.10gb is no H200 profile
  Gpu whole = h200;
  whole.sharing = GpuSharing::kExclusive;
  whole.mig.clear();
  node.gpus = {h200, h200, whole};
  EXPECT_EQ(MigOffersOf(std::vector<Node>{node}),
            (std::vector<MigOffer>{{"H200", "1g.18gb"}, {"H200", "2g.35gb"}}));
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
