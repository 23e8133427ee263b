#include "drover/agent/sampler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "drover/agent/gpu/nvml.h"
#include "drover/agent/proc_tree.h"
#include "drover/agent/steady_clock.h"
#include "drover/testing/fake_clock.h"
#include "drover/testing/temp_dir.h"

namespace drover::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;

void Write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

// Points the fake NVML at `script` for the NvmlSampler opened next.
std::unique_ptr<NvmlSampler> OpenScripted(const testing::TempDir& dir, const std::string& script,
                                          NvmlSamplerOptions options = {}) {
  const std::string path = dir.Sub("nvml-script");
  Write(path, script);
  setenv("DROVER_FAKE_NVML_SCRIPT", path.c_str(), 1);
  auto sampler = NvmlSampler::Open(DROVER_FAKE_NVML, options);
  EXPECT_TRUE(sampler) << sampler.error().ToString();
  return sampler ? *std::move(sampler) : nullptr;
}

TEST(NvmlSampler, ReplaysTheScriptedSeries) {
  testing::TempDir dir;
  auto nvml = OpenScripted(dir,
                           "gpus 2\n"
                           "gpu 0 0 10 1000 50000 100000\n"
                           "gpu 1 0 90 2000 300000 400000  # step 1\n"
                           "proc 1 0 4242 77 1500\n",
                           {.energy_read_interval_ms = 1});
  ASSERT_NE(nvml, nullptr);
  ASSERT_EQ(nvml->gpu_count(), 2u);
  std::vector<model::GpuSample> gpus;
  std::vector<model::GpuProcessSample> processes;
  nvml->Sample(0, NvmlSampler::ProcessShares::kRead, gpus, processes);
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].uuid, "GPU-fake-0");
  EXPECT_EQ(gpus[0].utilization_pct, 10);
  EXPECT_EQ(gpus[0].memory_used_bytes, 1000);
  EXPECT_EQ(gpus[0].power_mw, 50000);
  EXPECT_EQ(gpus[0].energy_mj, 100000);
  EXPECT_EQ(gpus[0].temperature_c, 40);
  EXPECT_EQ(gpus[0].sm_clock_mhz, 1980);
  EXPECT_EQ(gpus[1].utilization_pct, 0);  // unscripted: idle
  EXPECT_TRUE(processes.empty());

  gpus.clear();
  nvml->Sample(1'000, NvmlSampler::ProcessShares::kRead, gpus, processes);
  EXPECT_EQ(gpus[0].utilization_pct, 90);
  EXPECT_EQ(gpus[0].energy_mj, 400000);
  ASSERT_EQ(processes.size(), 1u);
  EXPECT_EQ(processes[0].pid, 4242);
  EXPECT_EQ(processes[0].sm_pct, 77);
  EXPECT_EQ(processes[0].memory_used_bytes, 1500);

  gpus.clear();
  // Past the script: the last step repeats.
  nvml->Sample(2'000, NvmlSampler::ProcessShares::kRead, gpus, processes);
  EXPECT_EQ(gpus[0].utilization_pct, 90);
  unsetenv("DROVER_FAKE_NVML_SCRIPT");
}

TEST(NvmlSampler, ReadsGpmOnDevicesThatSupportItAndNothingElsewhere) {
  testing::TempDir dir;
  // Device 0 supports GPM (it has gpm lines); device 1 does not.
  auto nvml = OpenScripted(dir,
                           "gpus 2\n"
                           "gpu 0 0 95 1000 50000 100000\n"
                           "gpm 1 0 62.5 31.25 0.75 40\n"
                           "gpm 2 0 88 44 12.5 70\n"
                           "gpu 0 1 95 1000 50000 100000\n");
  ASSERT_NE(nvml, nullptr);
  EXPECT_EQ(nvml->gpm_gpu_count(), 1u);
  std::vector<model::GpuSample> gpus;
  std::vector<model::GpuProcessSample> processes;
  nvml->Sample(0, NvmlSampler::ProcessShares::kRead, gpus, processes);
  // A GPM metric is the difference of two samples: none on the first.
  EXPECT_FALSE(gpus[0].gpm.has_value());
  EXPECT_FALSE(gpus[1].gpm.has_value());
  gpus.clear();
  nvml->Sample(1'000, NvmlSampler::ProcessShares::kRead, gpus, processes);
  ASSERT_TRUE(gpus[0].gpm.has_value());
  EXPECT_EQ(*gpus[0].gpm, (model::GpmSample{62.5, 31.25, 0.75, 40}));
  EXPECT_FALSE(gpus[1].gpm.has_value());  // no GPM: NVML utilization only
  EXPECT_EQ(gpus[1].utilization_pct, 95);
  gpus.clear();
  nvml->Sample(2'000, NvmlSampler::ProcessShares::kRead, gpus, processes);
  ASSERT_TRUE(gpus[0].gpm.has_value());
  EXPECT_EQ(*gpus[0].gpm, (model::GpmSample{88, 44, 12.5, 70}));
  unsetenv("DROVER_FAKE_NVML_SCRIPT");
}

TEST(NvmlSampler, TheDefaultDevicesHaveNoGpm) {
  testing::TempDir dir;
  auto nvml = OpenScripted(dir, "");
  ASSERT_NE(nvml, nullptr);
  EXPECT_EQ(nvml->gpu_count(), 3u);
  EXPECT_EQ(nvml->gpm_gpu_count(), 0u);
  std::vector<model::GpuSample> gpus;
  std::vector<model::GpuProcessSample> processes;
  nvml->Sample(0, NvmlSampler::ProcessShares::kRead, gpus, processes);
  nvml->Sample(1'000, NvmlSampler::ProcessShares::kRead, gpus, processes);
  for (const model::GpuSample& gpu : gpus) EXPECT_FALSE(gpu.gpm.has_value());
  unsetenv("DROVER_FAKE_NVML_SCRIPT");
}

TEST(NvmlSampler, ReadsTheEnergyCounterOnItsIntervalAndAddsPowerTimesTimeBetween) {
  testing::TempDir dir;
  // The driver's counter jumps where the script says; only a read can see the jumps.
  auto nvml = OpenScripted(dir,
                           "gpus 1\n"
                           "gpu 0 0 50 1000 100000 5000000\n"
                           "gpu 1 0 50 1000 200000 9000000\n"
                           "gpu 3 0 50 1000 200000 12000000\n",
                           {.energy_read_interval_ms = 3'000});
  ASSERT_NE(nvml, nullptr);
  std::vector<model::GpuSample> gpus;
  std::vector<model::GpuProcessSample> processes;
  for (std::int64_t at = 0; at <= 4'000; at += 1'000) {
    nvml->Sample(at, NvmlSampler::ProcessShares::kSkip, gpus, processes);
  }
  ASSERT_EQ(gpus.size(), 5u);
  EXPECT_EQ(gpus[0].energy_mj, 5'000'000);  // read
  EXPECT_EQ(gpus[1].energy_mj, 5'200'000);  // + 200 W x 1 s, not the counter's 9,000,000
  EXPECT_EQ(gpus[2].energy_mj, 5'400'000);
  EXPECT_EQ(gpus[3].energy_mj, 12'000'000);  // 3 s after the first read: read again
  EXPECT_EQ(gpus[4].energy_mj, 12'200'000);
  unsetenv("DROVER_FAKE_NVML_SCRIPT");
}

TEST(NvmlSampler, ReadsProcessSharesOnlyWhenAskedAsTheMeanSinceTheLastRead) {
  testing::TempDir dir;
  auto nvml = OpenScripted(dir,
                           "gpus 1\n"
                           "proc 0 0 4242 20 1500\n"
                           "proc 2 0 4242 80 1500\n");
  ASSERT_NE(nvml, nullptr);
  std::vector<model::GpuSample> gpus;
  std::vector<model::GpuProcessSample> processes;
  nvml->Sample(0, NvmlSampler::ProcessShares::kSkip, gpus, processes);
  nvml->Sample(1'000, NvmlSampler::ProcessShares::kSkip, gpus, processes);
  ASSERT_EQ(processes.size(), 2u);  // listed at every sample, their share not read
  EXPECT_EQ(processes[0].sm_pct, -1);
  EXPECT_EQ(processes[1].sm_pct, -1);
  EXPECT_EQ(processes[1].memory_used_bytes, 1500);
  processes.clear();
  // Steps 0, 1 and 2 since nothing was read: 20, 20 and 80.
  nvml->Sample(2'000, NvmlSampler::ProcessShares::kRead, gpus, processes);
  ASSERT_EQ(processes.size(), 1u);
  EXPECT_EQ(processes[0].sm_pct, 40);
  processes.clear();
  nvml->Sample(3'000, NvmlSampler::ProcessShares::kRead, gpus, processes);  // step 3 only
  ASSERT_EQ(processes.size(), 1u);
  EXPECT_EQ(processes[0].sm_pct, 80);
  unsetenv("DROVER_FAKE_NVML_SCRIPT");
}

TEST(ProcessTreeReader, SumsATreeAndItsGroup) {
  testing::TempDir proc;
  // pid 10 (the worker, a group leader) -> 11 (child); 12 left the tree by parent but stays in
  // group 10; 13 is unrelated. Field 14/15 utime/stime, 42 delayacct_blkio_ticks.
  auto stat = [](int pid, int ppid, int pgrp, int utime, int stime, int blkio) {
    std::string fields =
        std::to_string(pid) + " (a (b) c) S " + std::to_string(ppid) + " " + std::to_string(pgrp);
    for (int field = 6; field <= 52; ++field) {
      int value = field == 14 ? utime : field == 15 ? stime : field == 42 ? blkio : 0;
      fields += " " + std::to_string(value);
    }
    return fields + "\n";
  };
  Write(proc.Sub("10/stat"), stat(10, 1, 10, 100, 50, 7));
  Write(proc.Sub("10/status"), "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n");
  Write(proc.Sub("10/io"), "rchar: 5\nwchar: 1\nread_bytes: 4096\nwrite_bytes: 0\n");
  Write(proc.Sub("11/stat"), stat(11, 10, 10, 10, 0, 0));
  Write(proc.Sub("11/status"), "VmHWM:\t  8192 kB\nVmRSS:\t  4096 kB\n");
  Write(proc.Sub("12/stat"), stat(12, 1, 10, 1, 1, 0));
  Write(proc.Sub("13/stat"), stat(13, 1, 13, 999, 999, 999));
  Write(proc.Sub("self/stat"), "garbage");
  ProcessTreeReader reader(proc.path());
  const model::WorkerKey key{JobId(5), 1, 0};
  std::map<std::int64_t, model::WorkerKey> pids;
  auto samples = reader.Sample({{key, 10}, {model::WorkerKey{JobId(6), 1, 0}, 99}}, pids);
  ASSERT_EQ(samples.size(), 1u);  // pid 99 is gone: no sample
  const long ticks = sysconf(_SC_CLK_TCK);
  const std::int64_t ms_per_tick = 1000 / ticks;
  EXPECT_EQ(samples[0].worker, key);
  EXPECT_EQ(samples[0].processes, 3);
  EXPECT_EQ(samples[0].cpu_ms, (150 + 10 + 2) * ms_per_tick);
  EXPECT_EQ(samples[0].iowait_ms, 7 * ms_per_tick);
  EXPECT_EQ(samples[0].rss_bytes, 5 * 1024 * 1024);
  EXPECT_EQ(samples[0].peak_rss_bytes, 8192 * 1024);
  EXPECT_EQ(samples[0].read_bytes, 4096);
  EXPECT_EQ(pids.size(), 3u);
  EXPECT_FALSE(pids.contains(13));
}

TEST(UsageSampler, AttributesGpusAndProcessesThroughTheAllocation) {
  testing::TempDir dir;
  const std::string self = std::to_string(getpid());
  auto nvml = OpenScripted(dir,
                           "gpus 3\n"
                           "gpu 0 0 80 100 1000 0\n"
                           "gpu 0 1 0 0 1000 0\n"
                           "gpu 0 2 50 0 1000 0\n"
                           "proc 0 0 " +
                               self +
                               " 80 100\n"
                               "proc 0 1 999999 20 50\n");
  ASSERT_NE(nvml, nullptr);
  testing::FakeClock clock(1'000'000);
  const model::WorkerKey worker{JobId(7), 2, 0};
  std::vector<model::UsageBatch> batches;
  UsageSampler::Options options;
  UsageSampler sampler(
      NodeId("n1"), options, std::move(nvml), {"GPU-fake-0", "GPU-fake-1"},
      [&] {
        return std::vector<LocalRuntime::RunningWorker>{{worker, getpid(), {0}}};
      },
      [&](model::UsageBatch batch) { batches.push_back(std::move(batch)); }, clock);
  sampler.RunOnce(1, /*force=*/true);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].node, NodeId("n1"));
  ASSERT_EQ(batches[0].snapshots.size(), 1u);
  const model::UsageSnapshot& snapshot = batches[0].snapshots[0];
  EXPECT_EQ(snapshot.at, 1'000'000);
  // GPU 2 is not the node's; GPU 1 is nobody's.
  ASSERT_EQ(snapshot.gpus.size(), 2u);
  EXPECT_EQ(snapshot.gpus[0].worker, worker);
  EXPECT_EQ(snapshot.gpus[0].utilization_pct, 80);
  EXPECT_EQ(snapshot.gpus[1].worker, std::nullopt);
  ASSERT_EQ(snapshot.gpu_processes.size(), 2u);
  EXPECT_EQ(snapshot.gpu_processes[0].worker, worker);  // this process: the worker's tree
  EXPECT_EQ(snapshot.gpu_processes[1].worker, std::nullopt);
  ASSERT_EQ(snapshot.processes.size(), 1u);
  EXPECT_EQ(snapshot.processes[0].worker, worker);
  EXPECT_GT(snapshot.processes[0].rss_bytes, 0);
  EXPECT_GE(snapshot.processes[0].processes, 1);
  unsetenv("DROVER_FAKE_NVML_SCRIPT");
}

TEST(UsageSampler, BatchesOnItsIntervalsAndNotBefore) {
  testing::FakeClock clock(0);
  std::vector<model::UsageBatch> batches;
  UsageSampler::Options options;
  options.gpu_interval_ms = 1'000;
  options.process_interval_ms = 5'000;
  options.batch_interval_ms = 10'000;
  UsageSampler sampler(
      NodeId("n1"), options, /*nvml=*/nullptr, {},
      [] { return std::vector<LocalRuntime::RunningWorker>{}; },
      [&](model::UsageBatch batch) { batches.push_back(std::move(batch)); }, clock);
  // Without NVML only processes are sampled: at 0 and 5 s, then the batch at 10 s.
  EXPECT_EQ(sampler.RunOnce(0), 5'000);
  EXPECT_EQ(sampler.RunOnce(5'000), 10'000);
  EXPECT_TRUE(batches.empty());
  sampler.RunOnce(10'000);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].snapshots.size(), 3u);
}

// Each batch carries the CPU time the sampling thread spent since the previous batch, without
// what the sink did with that one (the embedded agent's sink records the batch in the store).
TEST(UsageSampler, EachBatchCarriesItsSamplingCpuWithoutTheSinks) {
  testing::FakeClock clock(0);
  std::vector<model::UsageBatch> batches;
  constexpr std::int64_t kSinkCpuUs = 200'000;
  UsageSampler::Options options;
  options.process_interval_ms = 5'000;
  options.batch_interval_ms = 10'000;
  UsageSampler sampler(
      NodeId("n1"), options, /*nvml=*/nullptr, {},
      [] { return std::vector<LocalRuntime::RunningWorker>{}; },
      [&](model::UsageBatch batch) {
        batches.push_back(std::move(batch));
        const std::int64_t until = ThreadCpuMicros() + kSinkCpuUs;
        while (ThreadCpuMicros() < until) {
        }
      },
      clock);
  for (std::int64_t at = 0; at <= 20'000; at += 5'000) sampler.RunOnce(at);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_GE(batches[0].sampler_cpu_us, 0);  // measured
  EXPECT_GE(batches[1].sampler_cpu_us, 0);
  EXPECT_LT(batches[1].sampler_cpu_us, kSinkCpuUs);  // the first sink's CPU is not in it
}

}  // namespace
}  // namespace drover::agent
