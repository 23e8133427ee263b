#include "drover/model/usage.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace drover::model {
namespace {

using ::testing::HasSubstr;

const WorkerKey kWorker{JobId(4), 2, 0};

GpuSample Gpu(const std::string& uuid, int util, std::int64_t memory, std::int64_t energy_mj,
              std::optional<WorkerKey> worker = kWorker) {
  GpuSample gpu;
  gpu.uuid = uuid;
  gpu.utilization_pct = util;
  gpu.memory_used_bytes = memory;
  gpu.power_mw = 100'000;
  gpu.energy_mj = energy_mj;
  gpu.worker = worker;
  return gpu;
}

ProcessSample Process(std::int64_t cpu_ms, std::int64_t peak_rss_bytes) {
  ProcessSample process;
  process.worker = kWorker;
  process.processes = 2;
  process.cpu_ms = cpu_ms;
  process.rss_bytes = 100;
  process.peak_rss_bytes = peak_rss_bytes;
  process.read_bytes = 7;
  process.iowait_ms = 3;
  return process;
}

AttemptUsage Empty() {
  AttemptUsage usage;
  usage.job = kWorker.job;
  usage.attempt = kWorker.attempt;
  return usage;
}

TEST(Accumulate, SummarizesOnlyTheAttemptsOwnSamples) {
  AttemptUsage usage = Empty();
  std::vector<UsageBucket> buckets;
  UsageSnapshot snapshot;
  snapshot.at = 100'000;
  snapshot.gpus = {Gpu("a", 80, 1000, 5'000), Gpu("b", 100, 9000, 0, std::nullopt),
                   Gpu("c", 100, 9000, 0, WorkerKey{JobId(4), 1, 0})};
  EXPECT_TRUE(Accumulate(snapshot, usage, buckets));
  snapshot.at = 101'000;
  snapshot.gpus = {Gpu("a", 20, 3000, 7'500)};
  EXPECT_TRUE(Accumulate(snapshot, usage, buckets));
  snapshot.gpus = {Gpu("z", 50, 1, 1, std::nullopt)};
  EXPECT_FALSE(Accumulate(snapshot, usage, buckets));  // nobody's GPU: nothing added

  EXPECT_EQ(usage.summary.gpu_util.count, 2);
  EXPECT_DOUBLE_EQ(usage.summary.gpu_util.mean(), 50);
  EXPECT_EQ(usage.summary.gpu_util_p50, 20);
  EXPECT_EQ(usage.summary.gpu_util_p95, 80);
  EXPECT_EQ(usage.summary.peak_gpu_memory_bytes, 3000);
  EXPECT_DOUBLE_EQ(usage.summary.energy_joules, 2.5);  // 7.5 J - 5 J on GPU a
  EXPECT_EQ(usage.summary.first_at, 100'000);
  EXPECT_EQ(usage.summary.last_at, 101'000);
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_EQ(buckets[0].start, 100'000);
  EXPECT_DOUBLE_EQ(buckets[0].gpu_util.max, 80);
  EXPECT_DOUBLE_EQ(buckets[0].gpu_memory.mean(), 2000);
}

GpuProcessSample GpuProcess(int gpu_index, std::int64_t pid, std::int64_t memory,
                            std::optional<WorkerKey> worker = kWorker) {
  GpuProcessSample process;
  process.gpu_index = gpu_index;
  process.pid = pid;
  process.memory_used_bytes = memory;
  process.worker = worker;
  return process;
}

// What an H200 showed (docs/benchmarks.md, "GPU check (H200)"): the device's used memory is
// its process's plus about 0.6 GiB the driver reserves; the attempt's own figure leaves that
// out, and other processes on its GPUs are counted, those on GPUs it does not hold are not.
TEST(Accumulate, ItsOwnProcessesGpuMemoryAndTheOthersOnItsGpus) {
  AttemptUsage usage = Empty();
  std::vector<UsageBucket> buckets;
  UsageSnapshot snapshot;
  snapshot.at = 100'000;
  GpuSample first = Gpu("a", 90, 2'271'084'544, 0);
  first.index = 0;
  GpuSample second = Gpu("b", 90, 5'000, 0);
  second.index = 1;
  GpuSample nobodys = Gpu("c", 10, 9'000, 0, std::nullopt);
  nobodys.index = 2;
  snapshot.gpus = {first, second, nobodys};
  snapshot.gpu_processes = {GpuProcess(0, 619, 1'616'904'192),
                            GpuProcess(0, 620, 1'000),
                            GpuProcess(1, 621, 4'000),
                            GpuProcess(1, 700, 500, std::nullopt),
                            GpuProcess(2, 701, 500, std::nullopt),
                            GpuProcess(2, 702, 500, std::nullopt),
                            GpuProcess(1, 703, -1, WorkerKey{JobId(9), 1, 0})};
  EXPECT_TRUE(Accumulate(snapshot, usage, buckets));
  EXPECT_EQ(usage.summary.peak_gpu_memory_bytes, 2'271'084'544);
  EXPECT_EQ(usage.summary.peak_process_gpu_memory_bytes, 1'616'905'192);  // both on GPU 0
  EXPECT_EQ(usage.summary.peak_other_gpu_processes, 2);  // GPU 1: pid 700 and job 9's
  EXPECT_EQ(usage.summary.gpu_memory_used_bytes(), 1'616'905'192);

  // Peaks stay when a later sample is lower.
  snapshot.at = 101'000;
  snapshot.gpu_processes = {GpuProcess(0, 619, 10)};
  EXPECT_TRUE(Accumulate(snapshot, usage, buckets));
  EXPECT_EQ(usage.summary.peak_process_gpu_memory_bytes, 1'616'905'192);
  EXPECT_EQ(usage.summary.peak_other_gpu_processes, 2);
}

TEST(Accumulate, WithoutProcessFiguresTheDevicesMemoryIsTheAttempts) {
  AttemptUsage usage = Empty();
  std::vector<UsageBucket> buckets;
  UsageSnapshot snapshot;
  snapshot.at = 100'000;
  snapshot.gpus = {Gpu("a", 90, 3'000, 0)};
  snapshot.gpu_processes = {GpuProcess(0, 619, -1)};  // NVML_VALUE_NOT_AVAILABLE
  EXPECT_TRUE(Accumulate(snapshot, usage, buckets));
  EXPECT_EQ(usage.summary.peak_process_gpu_memory_bytes, 0);
  EXPECT_EQ(usage.summary.gpu_memory_used_bytes(), 3'000);
}

TEST(Accumulate, EachGpuOfTheAttemptKeepsItsOwnActivityUpToTheBound) {
  AttemptUsage usage = Empty();
  std::vector<UsageBucket> buckets;
  UsageSnapshot snapshot;
  snapshot.at = 100'000;
  snapshot.gpus = {Gpu("GPU-b", 90, 0, 0), Gpu("GPU-a", 0, 0, 0),
                   Gpu("GPU-z", 70, 0, 0, std::nullopt)};  // not the attempt's
  snapshot.gpus[0].index = 1;
  ASSERT_TRUE(Accumulate(snapshot, usage, buckets));
  snapshot.at = 101'000;
  snapshot.gpus[0].utilization_pct = 70;
  ASSERT_TRUE(Accumulate(snapshot, usage, buckets));
  ASSERT_EQ(usage.summary.gpus.size(), 2u);  // by uuid
  EXPECT_EQ(usage.summary.gpus[0].uuid, "GPU-a");
  EXPECT_EQ(usage.summary.gpus[0].util.count, 2);
  EXPECT_DOUBLE_EQ(usage.summary.gpus[0].util.mean(), 0);
  EXPECT_EQ(usage.summary.gpus[1].uuid, "GPU-b");
  EXPECT_EQ(usage.summary.gpus[1].index, 1);
  EXPECT_DOUBLE_EQ(usage.summary.gpus[1].util.mean(), 80);

  // An agent naming more GPUs than the bound for one attempt: the rest count in the totals.
  snapshot.gpus.clear();
  for (std::size_t i = 0; i < kMaxUsageGpusPerAttempt; ++i) {
    snapshot.gpus.push_back(Gpu(fmt::format("GPU-x{:04}", i), 50, 0, 0));
  }
  snapshot.at = 102'000;
  ASSERT_TRUE(Accumulate(snapshot, usage, buckets));
  EXPECT_EQ(usage.summary.gpus.size(), kMaxUsageGpusPerAttempt);
  EXPECT_EQ(usage.summary.gpu_util.count, 4 + static_cast<std::int64_t>(kMaxUsageGpusPerAttempt));
  EXPECT_EQ(usage.summary.gpus[1].util.count, 2);  // GPU-b, still tracked
}

TEST(Accumulate, PercentilesFollowTheDistribution) {
  AttemptUsage usage = Empty();
  std::vector<UsageBucket> buckets;
  // 90 samples at 0% and 10 at 100%: p50 is 0, p95 is 100.
  for (int i = 0; i < 100; ++i) {
    UsageSnapshot snapshot;
    snapshot.at = 1'000'000 + i * 1'000;
    snapshot.gpus = {Gpu("a", i < 90 ? 0 : 100, 0, 0)};
    Accumulate(snapshot, usage, buckets);
  }
  EXPECT_EQ(usage.summary.gpu_util_p50, 0);
  EXPECT_EQ(usage.summary.gpu_util_p95, 100);
  EXPECT_EQ(buckets.size(), 10u);  // 100 s in 10 s buckets
  EXPECT_EQ(usage.buckets, 10u);
}

TEST(Accumulate, CpuRateRssAndPeaksFromProcessSamples) {
  AttemptUsage usage = Empty();
  std::vector<UsageBucket> buckets;
  UsageSnapshot snapshot;
  snapshot.at = 10'000;
  snapshot.processes = {Process(1'000, 150)};
  Accumulate(snapshot, usage, buckets);
  snapshot.at = 15'000;  // 5 s later, 10 s more CPU: two cores
  snapshot.processes[0].cpu_ms = 11'000;
  snapshot.processes[0].peak_rss_bytes = 400;
  Accumulate(snapshot, usage, buckets);
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_EQ(buckets[0].cpu.count, 1);
  EXPECT_DOUBLE_EQ(buckets[0].cpu.max, 2000);  // millicores
  EXPECT_EQ(usage.summary.cpu_ms, 11'000);
  EXPECT_EQ(usage.summary.peak_rss_bytes, 400);
  EXPECT_EQ(usage.summary.read_bytes, 7);
  EXPECT_EQ(usage.summary.iowait_ms, 3);
  EXPECT_EQ(usage.summary.gpu_util.count, 0);
}

TEST(Accumulate, TheSeriesStopsAtItsCapAndTheSummaryGoesOn) {
  AttemptUsage usage = Empty();
  usage.buckets = kMaxUsageBuckets;  // as if the attempt had run 24 h already
  std::vector<UsageBucket> buckets;
  UsageSnapshot snapshot;
  snapshot.at = 50'000;
  snapshot.gpus = {Gpu("a", 60, 0, 0)};
  EXPECT_TRUE(Accumulate(snapshot, usage, buckets));
  EXPECT_TRUE(buckets.empty());
  EXPECT_TRUE(usage.summary.series_truncated);
  EXPECT_EQ(usage.summary.gpu_util.count, 1);
  EXPECT_EQ(usage.buckets, kMaxUsageBuckets);
}

TEST(Accumulate, GpmMetricsWhereTheGpuGivesThemAndNoneWhereItDoesNot) {
  AttemptUsage usage = Empty();
  std::vector<UsageBucket> buckets;
  UsageSnapshot snapshot;
  snapshot.at = 100'000;
  snapshot.gpus = {Gpu("a", 90, 1000, 0)};  // a GPU without GPM (or its first sample)
  ASSERT_TRUE(Accumulate(snapshot, usage, buckets));
  EXPECT_FALSE(usage.summary.has_gpm());
  snapshot.at = 101'000;
  snapshot.gpus[0].gpm = GpmSample{60, 30, 0.5, 20};
  ASSERT_TRUE(Accumulate(snapshot, usage, buckets));
  snapshot.at = 102'000;
  snapshot.gpus[0].gpm = GpmSample{80, 50, 1.5, 40};
  ASSERT_TRUE(Accumulate(snapshot, usage, buckets));

  EXPECT_TRUE(usage.summary.has_gpm());
  EXPECT_EQ(usage.summary.gpu_util.count, 3);  // GPU activity counts every sample
  EXPECT_EQ(usage.summary.sm_active.count, 2);
  EXPECT_DOUBLE_EQ(usage.summary.sm_active.mean(), 70);
  EXPECT_DOUBLE_EQ(usage.summary.sm_occupancy.max, 50);
  EXPECT_DOUBLE_EQ(usage.summary.tensor_active.mean(), 1);
  EXPECT_DOUBLE_EQ(usage.summary.dram_bandwidth.mean(), 30);
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_EQ(buckets[0].sm_active.count, 2);
  EXPECT_DOUBLE_EQ(buckets[0].tensor_active.max, 1.5);
}

TEST(ValidateUsageBatch, NamesTheFirstBadField) {
  UsageBatch batch;
  batch.snapshots.resize(2);
  batch.snapshots[0].at = 5;
  batch.snapshots[1].at = 6;
  batch.snapshots[1].gpus = {Gpu("a", 101, 0, 0)};
  auto bad = ValidateUsageBatch(batch);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(bad.error().message, HasSubstr("snapshots[1].gpus[0].utilization_pct"));

  batch.snapshots[1].gpus.clear();
  batch.snapshots[1].processes = {Process(-5, 0)};
  EXPECT_THAT(ValidateUsageBatch(batch).error().message,
              HasSubstr("snapshots[1].processes[0].cpu_ms"));

  batch.snapshots[1].processes.clear();
  batch.snapshots[1].at = 4;
  EXPECT_THAT(ValidateUsageBatch(batch).error().message, HasSubstr("snapshots[1].at"));

  batch.snapshots[1].at = 6;
  batch.snapshots[1].gpu_processes.resize(kMaxUsageGpuProcesses + 1);
  EXPECT_THAT(ValidateUsageBatch(batch).error().message,
              HasSubstr("snapshots[1].gpu_processes: at most"));

  batch.snapshots[1].gpu_processes.clear();
  EXPECT_TRUE(ValidateUsageBatch(batch));

  for (const std::int64_t cpu : {std::int64_t{-2}, kMaxSamplerCpuUsPerBatch + 1}) {
    batch.sampler_cpu_us = cpu;
    EXPECT_THAT(ValidateUsageBatch(batch).error().message, HasSubstr("sampler_cpu_us")) << cpu;
  }
  for (const std::int64_t cpu : {std::int64_t{-1}, std::int64_t{0}, kMaxSamplerCpuUsPerBatch}) {
    batch.sampler_cpu_us = cpu;
    EXPECT_TRUE(ValidateUsageBatch(batch)) << cpu;
  }

  // GPM percentages have no "unknown" value: an absent metric is an absent gpm.
  batch.snapshots[1].gpus = {Gpu("a", 50, 0, 0)};
  batch.snapshots[1].gpus[0].gpm = GpmSample{50, 20, -1, 10};
  EXPECT_THAT(ValidateUsageBatch(batch).error().message,
              HasSubstr("snapshots[1].gpus[0].gpm.tensor_active_pct"));
  batch.snapshots[1].gpus[0].gpm = GpmSample{50, 100.5, 0, 10};
  EXPECT_THAT(ValidateUsageBatch(batch).error().message,
              HasSubstr("snapshots[1].gpus[0].gpm.sm_occupancy_pct"));
  batch.snapshots[1].gpus[0].gpm = GpmSample{50, 100, 0, 10};
  EXPECT_TRUE(ValidateUsageBatch(batch));

  // A uuid reaches terminals (drover get, idle_gpus' evidence): no escape sequence, no space.
  batch.snapshots[1].gpus[0].uuid = "GPU-\x1b[2J";
  EXPECT_THAT(ValidateUsageBatch(batch).error().message,
              HasSubstr("snapshots[1].gpus[0].uuid: printable ASCII without spaces only (as "
                        "NVML's GPU-/MIG- UUIDs), byte 4 is 0x1b"));
  batch.snapshots[1].gpus[0].uuid = "GPU a";
  EXPECT_FALSE(ValidateUsageBatch(batch));
  batch.snapshots[1].gpus[0].uuid = "MIG-GPU-6fa1e2c4/1/0";
  EXPECT_TRUE(ValidateUsageBatch(batch));
}

}  // namespace
}  // namespace drover::model
