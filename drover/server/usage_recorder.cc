#include "drover/server/usage_recorder.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <set>

namespace drover::server {

Result<UsageRecorder::Open*> UsageRecorder::Find(const model::WorkerKey& key) {
  const auto id = std::pair(key.job, key.attempt);
  if (auto it = open_.find(id); it != open_.end()) return &it->second;
  Open open;
  open.usage.job = key.job;
  open.usage.attempt = key.attempt;
  DROVER_ASSIGN_OR_RETURN(std::vector<model::AttemptUsage> stored, store_.ListUsage(key.job));
  for (model::AttemptUsage& usage : stored) {
    if (usage.attempt == key.attempt) open.usage = std::move(usage);
  }
  return &open_.emplace(id, std::move(open)).first->second;
}

Status UsageRecorder::Record(const NodeId& node, const model::UsageBatch& batch) {
  MutexLock lock(mu_);
  std::set<std::pair<JobId, int>> attempts;
  for (const model::UsageSnapshot& snapshot : batch.snapshots) {
    for (const model::GpuSample& gpu : snapshot.gpus) {
      model::GpuActivity& latest = gpus_[std::pair(node, gpu.index)];
      latest = model::GpuActivity{node,
                                  gpu.index,
                                  gpu.uuid,
                                  snapshot.at,
                                  gpu.utilization_pct,
                                  gpu.memory_used_bytes,
                                  gpu.power_mw,
                                  gpu.gpm,
                                  gpu.worker};
      if (gpu.worker) attempts.emplace(gpu.worker->job, gpu.worker->attempt);
    }
    for (const model::GpuProcessSample& process : snapshot.gpu_processes) {
      auto it = gpus_.find(std::pair(node, process.gpu_index));
      if (it == gpus_.end() || it->second.at != snapshot.at) continue;  // its GPU not sampled
      ++(process.worker ? it->second.attributed_processes : it->second.unattributed_processes);
    }
    for (const model::ProcessSample& process : snapshot.processes) {
      attempts.emplace(process.worker.job, process.worker.attempt);
    }
  }
  Status result = OkStatus();
  TimeMs newest = 0;
  for (const auto& [job, attempt] : attempts) {
    auto open = Find(model::WorkerKey{job, attempt, 0});
    if (!open) {
      result = tl::unexpected(open.error());
      continue;
    }
    Open& entry = **open;
    std::vector<model::UsageBucket> buckets = std::move(entry.last);
    for (const model::UsageSnapshot& snapshot : batch.snapshots) {
      model::Accumulate(snapshot, entry.usage, buckets);
    }
    // Write the buckets this batch touched: the kept newest one and those it opened.
    Status written = store_.PutUsage(entry.usage, buckets);
    if (!written) {
      spdlog::warn("usage of job {} attempt {} from node {} not stored: {}", job.value(), attempt,
                   node.value(), written.error().message);
      result = written;
    }
    newest = std::max(newest, entry.usage.summary.last_at);
    entry.last.clear();
    if (!buckets.empty()) entry.last.push_back(buckets.back());
  }
  // Forget attempts that have gone quiet (they stay stored).
  for (auto it = open_.begin(); it != open_.end();) {
    const bool idle = newest > 0 && it->second.usage.summary.last_at + kIdleMs < newest;
    it = idle ? open_.erase(it) : std::next(it);
  }
  return result;
}

std::vector<model::GpuActivity> UsageRecorder::LatestGpuActivity() const {
  MutexLock lock(mu_);
  std::vector<model::GpuActivity> out;
  out.reserve(gpus_.size());
  for (const auto& [key, activity] : gpus_) out.push_back(activity);
  return out;
}

}  // namespace drover::server
