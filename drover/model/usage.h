#pragma once

// What the GPUs and worker processes do (docs/observability.md, "Sampling"): the samples an
// agent takes, the batches it sends to the server, and what the server keeps per attempt (a
// downsampled series and a summary), with the pure accumulator that turns the former into the
// latter. Values only; the sampler (agent/sampler.h) and the recorder (server/usage_recorder.h)
// are the drivers.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/ids.h"
#include "drover/model/launch.h"

namespace drover::model {

// NVML's GPU Performance Monitoring metrics (nvmlGpmMetricsGet, Hopper and newer) over one
// sample period: percentages from 0 to 100 of the period, as NVML defines them.
struct GpmSample {
  double sm_active_pct = 0;       // NVML_GPM_METRIC_SM_UTIL: SMs busy (DCGM's SM activity)
  double sm_occupancy_pct = 0;    // NVML_GPM_METRIC_SM_OCCUPANCY: warps resident of the maximum
  double tensor_active_pct = 0;   // NVML_GPM_METRIC_ANY_TENSOR_UTIL: SMs issuing tensor work
  double dram_bandwidth_pct = 0;  // NVML_GPM_METRIC_DRAM_BW_UTIL: of the theoretical maximum

  friend bool operator==(const GpmSample&, const GpmSample&) = default;
};

// One GPU at one instant, as NVML reports it. A value NVML does not give for the device is -1.
struct GpuSample {
  int index = 0;     // NVML index on the node (LaunchSpec::gpus numbers the same)
  std::string uuid;  // "GPU-..."
  // nvmlDeviceGetUtilizationRates: percent of the last sample period in which a kernel ran
  // ("GPU activity", not SM occupancy), and in which device memory was read or written.
  int utilization_pct = -1;
  int memory_activity_pct = -1;
  std::int64_t memory_used_bytes = -1;
  int power_mw = -1;            // nvmlDeviceGetPowerUsage, milliwatts
  std::int64_t energy_mj = -1;  // nvmlDeviceGetTotalEnergyConsumption, mJ since driver load
  int temperature_c = -1;       // nvmlDeviceGetTemperature (GPU die)
  int sm_clock_mhz = -1;        // nvmlDeviceGetClockInfo (SM)
  // GPM metrics since the previous sample; unset where the device does not support GPM
  // (nvmlGpmQueryDeviceSupport: before Hopper), the driver lacks it, or on a device's first
  // sample (a GPM metric is the difference of two samples).
  std::optional<GpmSample> gpm;
  // The worker Drover gave this GPU to; unset: no job holds it.
  std::optional<WorkerKey> worker;

  friend bool operator==(const GpuSample&, const GpuSample&) = default;
};

// One process NVML sees on a GPU (nvmlDeviceGetComputeRunningProcesses, with its SM share from
// nvmlDeviceGetProcessUtilization where the device reports one).
struct GpuProcessSample {
  int gpu_index = 0;
  std::int64_t pid = 0;
  int sm_pct = -1;                      // -1: not reported
  std::int64_t memory_used_bytes = -1;  // -1: not reported (NVML_VALUE_NOT_AVAILABLE)
  // The worker whose process tree holds `pid`; unset: a process Drover did not start.
  std::optional<WorkerKey> worker;

  friend bool operator==(const GpuProcessSample&, const GpuProcessSample&) = default;
};

// A worker's whole process tree (the worker and its descendants) read from /proc. Counters are
// cumulative over the tree's live processes; -1 where /proc does not give it.
struct ProcessSample {
  WorkerKey worker;
  int processes = 0;                // live processes in the tree
  std::int64_t cpu_ms = 0;          // utime + stime
  std::int64_t rss_bytes = 0;       // VmRSS summed
  std::int64_t peak_rss_bytes = 0;  // the largest VmHWM of one process in the tree
  std::int64_t read_bytes = -1;     // /proc/PID/io read_bytes (needs the same user or root)
  std::int64_t iowait_ms = -1;      // delayacct_blkio_ticks (needs delay accounting on)

  friend bool operator==(const ProcessSample&, const ProcessSample&) = default;
};

// Everything sampled on a node at one instant.
struct UsageSnapshot {
  TimeMs at = 0;
  std::vector<GpuSample> gpus;  // empty when GPUs were not sampled this time
  std::vector<GpuProcessSample> gpu_processes;
  std::vector<ProcessSample> processes;  // empty when processes were not sampled this time

  friend bool operator==(const UsageSnapshot&, const UsageSnapshot&) = default;
};

// What an agent sends: its node's snapshots in time order.
struct UsageBatch {
  NodeId node;
  std::vector<UsageSnapshot> snapshots;
  // CPU time the agent's sampling thread used since its previous batch, handing batches over
  // left out (CLOCK_THREAD_CPUTIME_ID): the sampler's own cost, which the server counts per
  // node (drover_agent_sampler_cpu_seconds_total). -1: not measured.
  std::int64_t sampler_cpu_us = -1;

  friend bool operator==(const UsageBatch&, const UsageBatch&) = default;
};

// Bounds on a batch from an agent (each refused whole, naming the field, beyond them).
inline constexpr std::size_t kMaxUsageSnapshots = 600;      // 10 minutes at 1 s
inline constexpr std::size_t kMaxUsageGpus = 64;            // per snapshot
inline constexpr std::size_t kMaxUsageGpuProcesses = 1024;  // per snapshot
inline constexpr std::size_t kMaxUsageProcesses = 1024;     // per snapshot
// The most sampling CPU one batch may claim: an hour (a batch spans 10 s, or up to 10 minutes
// of snapshots kept while the server was away).
inline constexpr std::int64_t kMaxSamplerCpuUsPerBatch = 3'600'000'000;
// How far a snapshot's time may be from the server's clock (ControlPlane::IngestUsage): an
// agent's clock a minute ahead, and batches an agent kept for up to a day while the server was
// away; a batch with a snapshot outside is refused.
inline constexpr DurationMs kMaxUsageClockAheadMs = kMillisPerMinute;
inline constexpr DurationMs kMaxUsageAgeMs = 24 * kMillisPerHour;

// A checked batch: kInvalidArgument naming the first offending field ("snapshots[3].gpus[1]
// .utilization_pct: ...") for a bound exceeded, a percentage outside [-1, 100], a negative
// quantity other than -1, or snapshots out of time order.
Status ValidateUsageBatch(const UsageBatch& batch);

// One metric over a bucket or an attempt: mean and max of its samples (count 0: none).
struct Stat {
  std::int64_t count = 0;
  double sum = 0;
  double max = 0;

  void Add(double value);
  double mean() const { return count == 0 ? 0 : sum / static_cast<double>(count); }
  friend bool operator==(const Stat&, const Stat&) = default;
};

// One 10 s bucket of an attempt's series. GPU metrics are per GPU sample (one per GPU of the
// attempt per GPU sample period), process metrics per worker sample.
struct UsageBucket {
  TimeMs start = 0;  // a multiple of kUsageBucketMs
  Stat gpu_util;     // percent
  Stat gpu_memory;   // bytes used on one GPU
  Stat power;        // milliwatts of one GPU
  Stat cpu;          // millicores a worker's tree used since its previous sample
  Stat rss;          // bytes of a worker's tree
  // GPM percentages per GPU sample that has them (count 0: no GPM on the attempt's GPUs).
  Stat sm_active;
  Stat tensor_active;

  friend bool operator==(const UsageBucket&, const UsageBucket&) = default;
};

inline constexpr DurationMs kUsageBucketMs = 10'000;
// Buckets kept per attempt: 24 hours at 10 s. Later samples still count in the summary; the
// series stops (UsageSummary::series_truncated).
inline constexpr std::size_t kMaxUsageBuckets = 8'640;

// One GPU's activity over an attempt, as Princeton's jobstats reports it per GPU: what tells
// one idle GPU of a multi-GPU job apart from a job that uses all of its GPUs a little
// (FindingKind::kIdleGpus).
struct GpuUsage {
  std::string uuid;  // "GPU-..." (unique across nodes, so the key)
  int index = 0;     // NVML index on its node, for people
  Stat util;         // percent, per sample

  friend bool operator==(const GpuUsage&, const GpuUsage&) = default;
};
// GPUs an attempt's summary tracks one by one (a 64-node gang of 8 GPUs holds 512); samples of
// further GPUs count in the attempt's totals only. Bounds what an agent's samples can make the
// server keep.
inline constexpr std::size_t kMaxUsageGpusPerAttempt = 1024;

// An attempt's summary (what `drover get` shows).
struct UsageSummary {
  TimeMs first_at = 0;  // first and last sample attributed to the attempt
  TimeMs last_at = 0;
  Stat gpu_util;  // per GPU sample, percent
  int gpu_util_p50 = 0;
  int gpu_util_p95 = 0;
  std::int64_t peak_gpu_memory_bytes = 0;  // largest on one GPU (the device's used memory)
  // Largest the attempt's own processes held on one GPU at once (their
  // nvmlDeviceGetComputeRunningProcesses memory, summed per GPU); 0: NVML listed none of them
  // with a figure. Unlike peak_gpu_memory_bytes it leaves out what the driver reserves
  // (nvmlDeviceGetMemoryInfo's `used` is reserved plus allocated: about 0.6 GiB more on an
  // H200) and other processes on a shared GPU.
  std::int64_t peak_process_gpu_memory_bytes = 0;
  // Most processes not of this attempt seen at once on one of its GPUs (another job's on a
  // time-sliced GPU, or one Drover did not start).
  int peak_other_gpu_processes = 0;
  std::int64_t peak_rss_bytes = 0;  // largest VmHWM of one process of a worker
  std::int64_t cpu_ms = 0;          // CPU time of every worker's tree (as last sampled)
  double energy_joules = 0;         // summed over its GPUs, first to last sample
  std::int64_t read_bytes = 0;      // summed over workers, as last sampled
  std::int64_t iowait_ms = 0;
  bool series_truncated = false;  // more than kMaxUsageBuckets buckets
  // GPM percentages per GPU sample that has them (GpmSample); count 0: the attempt's GPUs gave
  // none, so GPU activity (gpu_util) is all there is.
  Stat sm_active;
  Stat sm_occupancy;
  Stat tensor_active;
  Stat dram_bandwidth;
  std::vector<GpuUsage> gpus;  // by uuid; at most kMaxUsageGpusPerAttempt

  bool has_gpm() const { return sm_active.count > 0; }
  // The GPU memory the attempt used on one GPU: its own processes' peak where NVML reported
  // it, else the device's (what diagnosis and advice judge against the request).
  std::int64_t gpu_memory_used_bytes() const {
    return peak_process_gpu_memory_bytes > 0 ? peak_process_gpu_memory_bytes
                                             : peak_gpu_memory_bytes;
  }
  friend bool operator==(const UsageSummary&, const UsageSummary&) = default;
};

// What the store keeps per attempt besides its buckets: the summary and what it takes to go on
// accumulating after a server restart.
struct AttemptUsage {
  JobId job;
  int attempt = 0;
  UsageSummary summary;
  std::array<std::int64_t, 101> util_histogram{};  // GPU samples per utilization percent
  std::map<std::string, std::array<std::int64_t, 2>> energy_mj;  // per GPU uuid: first, last
  std::map<int, ProcessSample> last_process;                     // per rank: latest sample
  std::map<int, TimeMs> last_process_at;                         // per rank: its time
  std::size_t buckets = 0;                                       // buckets stored

  friend bool operator==(const AttemptUsage&, const AttemptUsage&) = default;
};

// An attempt's stored usage with its series, for GET /v1/jobs/{id}/usage.
struct AttemptSeries {
  AttemptUsage usage;
  std::vector<UsageBucket> buckets;  // by start
};

// The latest sample of one GPU, for GET /metrics (ControlPlane::LatestGpuActivity).
struct GpuActivity {
  NodeId node;
  int index = 0;
  std::string uuid;
  TimeMs at = 0;
  int utilization_pct = -1;
  std::int64_t memory_used_bytes = -1;
  int power_mw = -1;
  std::optional<GpmSample> gpm;     // unset: the GPU gave no GPM metrics
  std::optional<WorkerKey> worker;  // unset: no job holds the GPU
  // Processes NVML listed on the GPU in that sample: those of a Drover worker placed on the
  // node, and the others (a process Drover did not start).
  int attributed_processes = 0;
  int unattributed_processes = 0;

  friend bool operator==(const GpuActivity&, const GpuActivity&) = default;
};

// Adds the samples of `snapshot` attributed to usage.job/attempt to `usage` and to `buckets`
// (the attempt's buckets, by start: the bucket of snapshot.at is updated or appended; none is
// appended beyond kMaxUsageBuckets). Pure. Returns whether anything was added.
bool Accumulate(const UsageSnapshot& snapshot, AttemptUsage& usage,
                std::vector<UsageBucket>& buckets);

}  // namespace drover::model
