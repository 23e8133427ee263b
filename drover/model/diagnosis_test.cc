// Each diagnosis rule (model/diagnosis.h) across its threshold, in both directions.

#include "drover/model/diagnosis.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace drover::model {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr std::int64_t kGi = std::int64_t{1} << 30;
constexpr TimeMs kT0 = 1'700'000'000'000;
constexpr DurationMs kHour = kMillisPerHour;

// One worker asking 4 cores, 16Gi and one GPU.
Requirements OneGpu() {
  Requirements requirements;
  requirements.per_worker = Resources{4000, 16 * kGi, 1};
  return requirements;
}

// An hour of samples at `util`% GPU activity, with the worker using `cpu_millis` and a peak RSS
// of 12Gi (75% of the request, so that no memory finding gets in the way).
UsageSummary Hour(int util, std::int64_t cpu_millis = 2000) {
  UsageSummary summary;
  summary.first_at = kT0;
  summary.last_at = kT0 + kHour;
  for (int i = 0; i < 360; ++i) summary.gpu_util.Add(util);
  summary.gpu_util_p50 = util;
  summary.gpu_util_p95 = util;
  summary.peak_rss_bytes = 12 * kGi;
  summary.cpu_ms = cpu_millis * kHour / 1000;
  return summary;
}

// 360 buckets of 10 s: GPU at `util`%, the worker at `cpu_millis`, the first `busy` buckets
// at `busy_cpu_millis` instead.
std::vector<UsageBucket> Buckets(int util, std::int64_t cpu_millis, int busy = 0,
                                 std::int64_t busy_cpu_millis = 0) {
  std::vector<UsageBucket> buckets(360);
  for (int i = 0; i < 360; ++i) {
    buckets[i].start = kT0 + i * kUsageBucketMs;
    buckets[i].gpu_util.Add(util);
    buckets[i].cpu.Add(static_cast<double>(i < busy ? busy_cpu_millis : cpu_millis));
  }
  return buckets;
}

std::vector<FindingKind> Kinds(const std::vector<Finding>& findings) {
  std::vector<FindingKind> kinds;
  for (const Finding& finding : findings) kinds.push_back(finding.kind);
  return kinds;
}

TEST(Diagnose, AGpuHeldAtZeroActivityIsIdleAndOneBarelyUsedIsNot) {
  const auto idle = Diagnose(OneGpu(), 1, Hour(0), Buckets(0, 100));
  ASSERT_THAT(Kinds(idle), ElementsAre(FindingKind::kAllocatedIdle));
  EXPECT_EQ(idle[0].evidence, "GPU activity p95 0% (mean 0.0%) over 1h");
  EXPECT_THAT(idle[0].threshold, HasSubstr("Job Defense Shield"));
  // 2% is not idle, but below 15% it is low activity.
  EXPECT_THAT(Kinds(Diagnose(OneGpu(), 1, Hour(2), Buckets(2, 100))),
              ElementsAre(FindingKind::kLowGpuActivity));
  EXPECT_THAT(Diagnose(OneGpu(), 1, Hour(15), Buckets(15, 2000)), IsEmpty());
}

// An hour of one worker on six GPUs, GPU `i` at utils[i]% in each of its 360 samples.
UsageSummary SixGpus(const std::vector<int>& utils) {
  UsageSummary summary = Hour(0);
  summary.gpu_util = {};
  for (std::size_t i = 0; i < utils.size(); ++i) {
    GpuUsage gpu{fmt::format("GPU-{}", i), static_cast<int>(i), {}};
    for (int sample = 0; sample < 360; ++sample) {
      gpu.util.Add(utils[i]);
      summary.gpu_util.Add(utils[i]);
    }
    summary.gpus.push_back(gpu);
  }
  // Each GPU has a sixth of the samples, more than the top 5%: the p95 is the busiest GPU's.
  summary.gpu_util_p95 = *std::max_element(utils.begin(), utils.end());
  return summary;
}

Requirements SixGpuRequest() {
  Requirements requirements = OneGpu();
  requirements.per_worker.gpus = 6;
  return requirements;
}

TEST(Diagnose, SomeIdleGpusOfAJobWhoseOthersWorkAreNamedWithTheirGpuHours) {
  const auto findings =
      Diagnose(SixGpuRequest(), 1, SixGpus({90, 0, 0, 1, 0, 85}), Buckets(29, 2000));
  ASSERT_THAT(Kinds(findings), ElementsAre(FindingKind::kIdleGpus));
  EXPECT_EQ(findings[0].evidence,
            "4 of its 6 GPUs had mean activity <= 1% over 1h while the others ran at a mean "
            "87.5%: 4.00 GPU-hours held without work; idle GPUs by index (uuid): 1 (GPU-1), "
            "2 (GPU-2), 3 (GPU-3), 4 (GPU-4)");
  EXPECT_THAT(findings[0].threshold, HasSubstr("GPU-hours at 0% utilization"));
  // At 2% each GPU works, if little; every GPU busy: nothing.
  EXPECT_THAT(Kinds(Diagnose(SixGpuRequest(), 1, SixGpus({90, 2, 2, 2, 2, 85}), Buckets(31, 2000))),
              IsEmpty());
  // All six idle: the attempt is idle as a whole, and only that is said.
  EXPECT_THAT(Kinds(Diagnose(SixGpuRequest(), 1, SixGpus({0, 0, 0, 0, 0, 0}), Buckets(0, 100))),
              ElementsAre(FindingKind::kAllocatedIdle));
}

// Hour(util) whose GPUs gave GPM: SM activity `sm`%, tensor activity `tensor`%.
UsageSummary WithGpm(int util, double sm, double tensor) {
  UsageSummary summary = Hour(util);
  for (int i = 0; i < 360; ++i) {
    summary.sm_active.Add(sm);
    summary.sm_occupancy.Add(sm / 2);
    summary.tensor_active.Add(tensor);
    summary.dram_bandwidth.Add(10);
  }
  return summary;
}

TEST(Diagnose, KernelsOnFewSmsAreLowSmActivityOnlyWhereGpmSaysSo) {
  const auto low = Diagnose(OneGpu(), 1, WithGpm(90, 49, 20), Buckets(90, 2000));
  ASSERT_THAT(Kinds(low), ElementsAre(FindingKind::kLowSmActivity));
  EXPECT_EQ(low[0].evidence,
            "mean SM activity 49.0% (SM occupancy 24.5%) while a kernel ran 90.0% of the time "
            "over 1h: the kernels keep few of the SMs busy");
  EXPECT_THAT(low[0].threshold, HasSubstr("DCGM"));
  EXPECT_THAT(Diagnose(OneGpu(), 1, WithGpm(90, 50, 20), Buckets(90, 2000)), IsEmpty());
  // Without GPM, GPU activity at 90% raises nothing.
  EXPECT_THAT(Diagnose(OneGpu(), 1, Hour(90), Buckets(90, 2000)), IsEmpty());
  // Low GPU activity is the finding when kernels rarely run; the GPM rules stay quiet.
  EXPECT_THAT(Kinds(Diagnose(OneGpu(), 1, WithGpm(10, 5, 0), Buckets(10, 2000))),
              ElementsAre(FindingKind::kLowGpuActivity));
}

TEST(Diagnose, BusySmsWithoutTensorWorkAreReportedAcrossTheThreshold) {
  const auto fp32 = Diagnose(OneGpu(), 1, WithGpm(95, 85, 0.4), Buckets(95, 2000));
  ASSERT_THAT(Kinds(fp32), ElementsAre(FindingKind::kBusyWithoutTensorCores));
  EXPECT_THAT(fp32[0].evidence, HasSubstr("tensor-core activity 0.40%"));
  EXPECT_THAT(fp32[0].threshold, HasSubstr("tensor activity < 1%"));
  EXPECT_THAT(Diagnose(OneGpu(), 1, WithGpm(95, 85, 1), Buckets(95, 2000)), IsEmpty());
  DiagnosisThresholds strict;
  strict.tensor_active_low_pct = 5;
  EXPECT_THAT(Kinds(Diagnose(OneGpu(), 1, WithGpm(95, 85, 1), Buckets(95, 2000), strict)),
              ElementsAre(FindingKind::kBusyWithoutTensorCores));
}

TEST(Diagnose, NothingIsJudgedBeforeTheMinimumSampledTime) {
  UsageSummary short_one = Hour(0);
  short_one.last_at = kT0 + 9 * kMillisPerMinute;
  EXPECT_THAT(Diagnose(OneGpu(), 1, short_one, Buckets(0, 100)), IsEmpty());
  DiagnosisThresholds quick;
  quick.min_sampled_ms = 5 * kMillisPerMinute;
  EXPECT_THAT(Kinds(Diagnose(OneGpu(), 1, short_one, Buckets(0, 100), quick)),
              ElementsAre(FindingKind::kAllocatedIdle));
}

TEST(Diagnose, IdleGpusWithBusyCpusAreACpuStageHoldingThem) {
  // 4 cores asked, 3.8 used (95% >= 90%) in every bucket.
  EXPECT_THAT(Kinds(Diagnose(OneGpu(), 1, Hour(0, 3800), Buckets(0, 3800))),
              ElementsAre(FindingKind::kCpuStageHoldingGpus));
}

TEST(Diagnose, LowGpuWithSaturatedCpuMostOfTheTimeIsInputBound) {
  // GPU at 5%, CPU at 3.8 of 4 cores in 200 of 360 buckets (56% > 50%).
  const auto bound = Diagnose(OneGpu(), 1, Hour(5, 2500), Buckets(5, 1000, 200, 3800));
  ASSERT_THAT(Kinds(bound), ElementsAre(FindingKind::kInputBoundCpu));
  EXPECT_THAT(bound[0].evidence, HasSubstr("in 56% of the 10 s buckets"));
  EXPECT_THAT(bound[0].threshold, HasSubstr("SageMaker Debugger, CPUBottleneck"));
  // In 170 of 360 (47%): not most of the time; what remains is low activity.
  EXPECT_THAT(Kinds(Diagnose(OneGpu(), 1, Hour(5, 2500), Buckets(5, 1000, 170, 3800))),
              ElementsAre(FindingKind::kLowGpuActivity));
  // At 3.5 of 4 cores (87% < 90%) the CPU is not saturated.
  EXPECT_THAT(Kinds(Diagnose(OneGpu(), 1, Hour(5, 2500), Buckets(5, 1000, 360, 3500))),
              ElementsAre(FindingKind::kLowGpuActivity));
}

TEST(Diagnose, LowGpuWhileWaitingOnIoIsInputBoundOnIo) {
  UsageSummary waiting = Hour(40);
  waiting.iowait_ms = kHour * 6 / 10;  // 60% of the hour
  waiting.read_bytes = 500 * kGi;
  const auto bound = Diagnose(OneGpu(), 1, waiting, Buckets(40, 2000));
  ASSERT_THAT(Kinds(bound), ElementsAre(FindingKind::kInputBoundIo));
  EXPECT_THAT(bound[0].evidence, HasSubstr("waited on I/O 60% of the time"));
  waiting.iowait_ms = kHour * 4 / 10;  // 40%
  EXPECT_THAT(Diagnose(OneGpu(), 1, waiting, Buckets(40, 2000)), IsEmpty());
  waiting.iowait_ms = kHour * 6 / 10;  // GPU at 80%: busy enough whatever the I/O
  UsageSummary busy = waiting;
  busy.gpu_util = {};
  for (int i = 0; i < 360; ++i) busy.gpu_util.Add(80);
  EXPECT_THAT(Diagnose(OneGpu(), 1, busy, Buckets(80, 2000)), IsEmpty());
}

TEST(Diagnose, AJobUsingAQuarterOfItsMemoryOrCpuIsOverRequested) {
  UsageSummary small = Hour(50, 900);  // 0.9 of 4 cores: 22%
  small.peak_rss_bytes = 3 * kGi;      // 3Gi of 16Gi: 19%
  const auto over = Diagnose(OneGpu(), 1, small, Buckets(50, 900));
  ASSERT_THAT(Kinds(over),
              ElementsAre(FindingKind::kHostMemoryOverRequested, FindingKind::kCpuOverRequested));
  EXPECT_EQ(over[0].evidence, "peak RSS 3Gi of 16Gi requested per worker (19%)");
  EXPECT_EQ(over[1].evidence, "mean CPU 900m of 4 requested per worker (22%)");
  UsageSummary enough = Hour(50, 1100);  // 27%
  enough.peak_rss_bytes = 5 * kGi;       // 31%
  EXPECT_THAT(Diagnose(OneGpu(), 1, enough, Buckets(50, 1100)), IsEmpty());
}

TEST(Diagnose, GpuMemoryFarBelowTheRequestIsOverRequested) {
  Requirements asked = OneGpu();
  asked.gpu_memory_bytes = 80 * kGi;
  UsageSummary used = Hour(60);
  used.peak_gpu_memory_bytes = 10 * kGi;
  EXPECT_THAT(Diagnose(asked, 1, used, Buckets(60, 2000)),
              ElementsAre(Field(&Finding::kind, FindingKind::kGpuMemoryOverRequested)));
  used.peak_gpu_memory_bytes = 30 * kGi;
  EXPECT_THAT(Diagnose(asked, 1, used, Buckets(60, 2000)), IsEmpty());
}

// The device's used memory counts the driver's reservation and other processes on a shared
// GPU; where NVML gave the attempt's own processes' memory, that is what is judged.
TEST(Diagnose, GpuMemoryIsJudgedByTheAttemptsOwnProcessesWhereReported) {
  Requirements asked = OneGpu();
  asked.gpu_memory_bytes = 80 * kGi;
  UsageSummary used = Hour(60);
  used.peak_gpu_memory_bytes = 30 * kGi;  // the device: 37% of the request
  used.peak_process_gpu_memory_bytes = 10 * kGi;
  const auto over = Diagnose(asked, 1, used, Buckets(60, 2000));
  ASSERT_THAT(Kinds(over), ElementsAre(FindingKind::kGpuMemoryOverRequested));
  EXPECT_EQ(over[0].evidence, "peak GPU memory 10Gi (its processes) of 80Gi requested");
  used.peak_process_gpu_memory_bytes = 25 * kGi;  // 31%
  EXPECT_THAT(Diagnose(asked, 1, used, Buckets(60, 2000)), IsEmpty());
}

TEST(Diagnose, GpuRulesNeedGpusAndGpuSamples) {
  Requirements cpu_only = OneGpu();
  cpu_only.per_worker.gpus = 0;
  EXPECT_THAT(Diagnose(cpu_only, 1, Hour(0), Buckets(0, 2000)), IsEmpty());
  UsageSummary no_gpu_samples = Hour(0);
  no_gpu_samples.gpu_util = {};
  EXPECT_THAT(Diagnose(OneGpu(), 1, no_gpu_samples, {}), IsEmpty());
  // A time-sliced share holds a GPU too.
  Requirements share = cpu_only;
  share.gpu_share_millis = 250;
  EXPECT_THAT(Kinds(Diagnose(share, 1, Hour(0), Buckets(0, 100))),
              ElementsAre(FindingKind::kAllocatedIdle));
}

}  // namespace
}  // namespace drover::model
