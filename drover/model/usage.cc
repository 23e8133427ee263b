#include "drover/model/usage.h"

#include <fmt/format.h>

#include <algorithm>

namespace drover::model {
namespace {

Status CheckPercent(int value, const std::string& path) {
  if (value < -1 || value > 100) {
    return InvalidArgument(
        fmt::format("{}: a percentage from 0 to 100 (or -1) is required, not {}", path, value));
  }
  return OkStatus();
}

Status CheckGpmPercent(double value, const std::string& path) {
  if (!(value >= 0 && value <= 100)) {
    return InvalidArgument(
        fmt::format("{}: a percentage from 0 to 100 is required, not {}", path, value));
  }
  return OkStatus();
}

Status CheckQuantity(std::int64_t value, const std::string& path) {
  if (value < -1) {
    return InvalidArgument(fmt::format("{}: must be >= 0 (or -1: unknown), not {}", path, value));
  }
  return OkStatus();
}

template <typename T>
Status CheckCount(const std::vector<T>& values, std::size_t max, const std::string& path) {
  if (values.size() > max) {
    return InvalidArgument(fmt::format("{}: at most {} entries, not {}", path, max, values.size()));
  }
  return OkStatus();
}

Status ValidateSnapshot(const UsageSnapshot& snapshot, const std::string& path) {
  DROVER_RETURN_IF_ERROR(CheckCount(snapshot.gpus, kMaxUsageGpus, path + ".gpus"));
  DROVER_RETURN_IF_ERROR(
      CheckCount(snapshot.gpu_processes, kMaxUsageGpuProcesses, path + ".gpu_processes"));
  DROVER_RETURN_IF_ERROR(CheckCount(snapshot.processes, kMaxUsageProcesses, path + ".processes"));
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i) {
    const GpuSample& gpu = snapshot.gpus[i];
    const std::string at = fmt::format("{}.gpus[{}]", path, i);
    DROVER_RETURN_IF_ERROR(CheckQuantity(gpu.index, at + ".index"));
    DROVER_RETURN_IF_ERROR(CheckPercent(gpu.utilization_pct, at + ".utilization_pct"));
    DROVER_RETURN_IF_ERROR(CheckPercent(gpu.memory_activity_pct, at + ".memory_activity_pct"));
    DROVER_RETURN_IF_ERROR(CheckQuantity(gpu.memory_used_bytes, at + ".memory_used_bytes"));
    DROVER_RETURN_IF_ERROR(CheckQuantity(gpu.power_mw, at + ".power_mw"));
    DROVER_RETURN_IF_ERROR(CheckQuantity(gpu.energy_mj, at + ".energy_mj"));
    if (gpu.gpm) {
      DROVER_RETURN_IF_ERROR(CheckGpmPercent(gpu.gpm->sm_active_pct, at + ".gpm.sm_active_pct"));
      DROVER_RETURN_IF_ERROR(
          CheckGpmPercent(gpu.gpm->sm_occupancy_pct, at + ".gpm.sm_occupancy_pct"));
      DROVER_RETURN_IF_ERROR(
          CheckGpmPercent(gpu.gpm->tensor_active_pct, at + ".gpm.tensor_active_pct"));
      DROVER_RETURN_IF_ERROR(
          CheckGpmPercent(gpu.gpm->dram_bandwidth_pct, at + ".gpm.dram_bandwidth_pct"));
    }
    if (gpu.uuid.size() > 128) return InvalidArgument(at + ".uuid: at most 128 characters");
    // Findings and `drover get` print it: nothing that a terminal would act on.
    for (std::size_t c = 0; c < gpu.uuid.size(); ++c) {
      const auto byte = static_cast<unsigned char>(gpu.uuid[c]);
      if (byte <= ' ' || byte > '~') {
        return InvalidArgument(fmt::format(
            "{}.uuid: printable ASCII without spaces only (as NVML's GPU-/MIG- UUIDs), byte {} "
            "is 0x{:02x}",
            at, c, byte));
      }
    }
  }
  for (std::size_t i = 0; i < snapshot.gpu_processes.size(); ++i) {
    const GpuProcessSample& process = snapshot.gpu_processes[i];
    const std::string at = fmt::format("{}.gpu_processes[{}]", path, i);
    DROVER_RETURN_IF_ERROR(CheckQuantity(process.gpu_index, at + ".gpu_index"));
    DROVER_RETURN_IF_ERROR(CheckPercent(process.sm_pct, at + ".sm_pct"));
    DROVER_RETURN_IF_ERROR(CheckQuantity(process.memory_used_bytes, at + ".memory_used_bytes"));
  }
  for (std::size_t i = 0; i < snapshot.processes.size(); ++i) {
    const ProcessSample& process = snapshot.processes[i];
    const std::string at = fmt::format("{}.processes[{}]", path, i);
    DROVER_RETURN_IF_ERROR(CheckQuantity(process.processes, at + ".processes"));
    DROVER_RETURN_IF_ERROR(CheckQuantity(process.cpu_ms, at + ".cpu_ms"));
    DROVER_RETURN_IF_ERROR(CheckQuantity(process.rss_bytes, at + ".rss_bytes"));
    DROVER_RETURN_IF_ERROR(CheckQuantity(process.peak_rss_bytes, at + ".peak_rss_bytes"));
    DROVER_RETURN_IF_ERROR(CheckQuantity(process.read_bytes, at + ".read_bytes"));
    DROVER_RETURN_IF_ERROR(CheckQuantity(process.iowait_ms, at + ".iowait_ms"));
  }
  return OkStatus();
}

bool Attributed(const std::optional<WorkerKey>& worker, const AttemptUsage& usage) {
  return worker && worker->job == usage.job && worker->attempt == usage.attempt;
}

// The percentile `fraction` of the histogram's samples (the smallest value with at least that
// share of samples at or below it).
int Percentile(const std::array<std::int64_t, 101>& histogram, std::int64_t total,
               double fraction) {
  if (total == 0) return 0;
  const auto rank = static_cast<std::int64_t>(fraction * static_cast<double>(total) + 0.999999);
  std::int64_t seen = 0;
  for (int value = 0; value <= 100; ++value) {
    seen += histogram[value];
    if (seen >= std::max<std::int64_t>(rank, 1)) return value;
  }
  return 100;
}

// The entry of `gpu` in `gpus` (sorted by uuid), added when new; null when the attempt already
// tracks kMaxUsageGpusPerAttempt others.
GpuUsage* GpuOf(const GpuSample& gpu, std::vector<GpuUsage>& gpus) {
  auto it = std::lower_bound(
      gpus.begin(), gpus.end(), gpu.uuid,
      [](const GpuUsage& entry, const std::string& uuid) { return entry.uuid < uuid; });
  if (it != gpus.end() && it->uuid == gpu.uuid) return &*it;
  if (gpus.size() >= kMaxUsageGpusPerAttempt) return nullptr;
  return &*gpus.insert(it, GpuUsage{gpu.uuid, gpu.index, {}});
}

// The bucket of `at`, appended when new and there is room; nullptr when there is none.
UsageBucket* BucketOf(TimeMs at, AttemptUsage& usage, std::vector<UsageBucket>& buckets) {
  const TimeMs start = at - at % kUsageBucketMs;
  if (!buckets.empty() && buckets.back().start == start) return &buckets.back();
  if (!buckets.empty() && buckets.back().start > start)
    return nullptr;  // out of order: summary only
  if (usage.buckets >= kMaxUsageBuckets) {
    usage.summary.series_truncated = true;
    return nullptr;
  }
  UsageBucket bucket;
  bucket.start = start;
  buckets.push_back(bucket);
  ++usage.buckets;
  return &buckets.back();
}

}  // namespace

void Stat::Add(double value) {
  max = count == 0 ? value : std::max(max, value);
  sum += value;
  ++count;
}

Status ValidateUsageBatch(const UsageBatch& batch) {
  if (batch.sampler_cpu_us < -1 || batch.sampler_cpu_us > kMaxSamplerCpuUsPerBatch) {
    return InvalidArgument(fmt::format("sampler_cpu_us: -1 (not measured) or 0 to {}, not {}",
                                       kMaxSamplerCpuUsPerBatch, batch.sampler_cpu_us));
  }
  DROVER_RETURN_IF_ERROR(CheckCount(batch.snapshots, kMaxUsageSnapshots, "snapshots"));
  for (std::size_t i = 0; i < batch.snapshots.size(); ++i) {
    if (i > 0 && batch.snapshots[i].at < batch.snapshots[i - 1].at) {
      return InvalidArgument(fmt::format("snapshots[{}].at: earlier than the snapshot before", i));
    }
    DROVER_RETURN_IF_ERROR(ValidateSnapshot(batch.snapshots[i], fmt::format("snapshots[{}]", i)));
  }
  return OkStatus();
}

bool Accumulate(const UsageSnapshot& snapshot, AttemptUsage& usage,
                std::vector<UsageBucket>& buckets) {
  UsageSummary& summary = usage.summary;
  UsageBucket* bucket = nullptr;
  bool added = false;
  auto touch = [&] {
    if (!added) {
      if (summary.first_at == 0 || snapshot.at < summary.first_at) summary.first_at = snapshot.at;
      summary.last_at = std::max(summary.last_at, snapshot.at);
      bucket = BucketOf(snapshot.at, usage, buckets);
      added = true;
    }
  };
  std::map<int, int> others;  // per GPU the attempt holds: processes not its own (below)
  for (const GpuSample& gpu : snapshot.gpus) {
    if (!Attributed(gpu.worker, usage)) continue;
    touch();
    others.emplace(gpu.index, 0);
    if (gpu.utilization_pct >= 0) {
      summary.gpu_util.Add(gpu.utilization_pct);
      ++usage.util_histogram[gpu.utilization_pct];
      summary.gpu_util_p50 = Percentile(usage.util_histogram, summary.gpu_util.count, 0.5);
      summary.gpu_util_p95 = Percentile(usage.util_histogram, summary.gpu_util.count, 0.95);
      if (bucket) bucket->gpu_util.Add(gpu.utilization_pct);
      if (GpuUsage* one = GpuOf(gpu, summary.gpus)) one->util.Add(gpu.utilization_pct);
    }
    if (gpu.memory_used_bytes >= 0) {
      summary.peak_gpu_memory_bytes =
          std::max(summary.peak_gpu_memory_bytes, gpu.memory_used_bytes);
      if (bucket) bucket->gpu_memory.Add(static_cast<double>(gpu.memory_used_bytes));
    }
    if (gpu.power_mw >= 0 && bucket) bucket->power.Add(gpu.power_mw);
    if (gpu.gpm) {
      summary.sm_active.Add(gpu.gpm->sm_active_pct);
      summary.sm_occupancy.Add(gpu.gpm->sm_occupancy_pct);
      summary.tensor_active.Add(gpu.gpm->tensor_active_pct);
      summary.dram_bandwidth.Add(gpu.gpm->dram_bandwidth_pct);
      if (bucket) {
        bucket->sm_active.Add(gpu.gpm->sm_active_pct);
        bucket->tensor_active.Add(gpu.gpm->tensor_active_pct);
      }
    }
    if (gpu.energy_mj >= 0) {
      auto [it, inserted] =
          usage.energy_mj.try_emplace(gpu.uuid, std::array{gpu.energy_mj, gpu.energy_mj});
      it->second[1] = std::max(it->second[1], gpu.energy_mj);
    }
  }
  // The attempt's own processes' memory per GPU, and the others' count on the GPUs it holds.
  std::map<int, std::int64_t> own_memory;
  for (const GpuProcessSample& process : snapshot.gpu_processes) {
    if (Attributed(process.worker, usage)) {
      if (process.memory_used_bytes > 0) own_memory[process.gpu_index] += process.memory_used_bytes;
    } else if (auto it = others.find(process.gpu_index); it != others.end()) {
      ++it->second;
    }
  }
  for (const auto& [index, bytes] : own_memory) {
    touch();
    summary.peak_process_gpu_memory_bytes = std::max(summary.peak_process_gpu_memory_bytes, bytes);
  }
  for (const auto& [index, count] : others) {
    summary.peak_other_gpu_processes = std::max(summary.peak_other_gpu_processes, count);
  }
  for (const ProcessSample& process : snapshot.processes) {
    if (process.worker.job != usage.job || process.worker.attempt != usage.attempt) continue;
    touch();
    auto previous = usage.last_process.find(process.worker.rank);
    const TimeMs previous_at = usage.last_process_at[process.worker.rank];
    if (previous != usage.last_process.end() && bucket && snapshot.at > previous_at) {
      const std::int64_t cpu_ms =
          std::max<std::int64_t>(process.cpu_ms - previous->second.cpu_ms, 0);
      bucket->cpu.Add(1000.0 * static_cast<double>(cpu_ms) /
                      static_cast<double>(snapshot.at - previous_at));
    }
    if (bucket) bucket->rss.Add(static_cast<double>(process.rss_bytes));
    summary.peak_rss_bytes = std::max(summary.peak_rss_bytes, process.peak_rss_bytes);
    usage.last_process[process.worker.rank] = process;
    usage.last_process_at[process.worker.rank] = snapshot.at;
  }
  if (!added) return false;
  double energy_mj = 0;
  for (const auto& [uuid, first_last] : usage.energy_mj) {
    energy_mj += static_cast<double>(first_last[1] - first_last[0]);
  }
  summary.energy_joules = energy_mj / 1000.0;
  summary.cpu_ms = summary.read_bytes = summary.iowait_ms = 0;
  for (const auto& [rank, process] : usage.last_process) {
    summary.cpu_ms += process.cpu_ms;
    summary.read_bytes += std::max<std::int64_t>(process.read_bytes, 0);
    summary.iowait_ms += std::max<std::int64_t>(process.iowait_ms, 0);
  }
  return true;
}

}  // namespace drover::model
