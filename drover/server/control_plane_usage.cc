// ControlPlane's usage methods (docs/observability.md, "Sampling"): the samples agents send,
// checked against the controller's placements, recorded by the UsageRecorder without mu_.

#include <fmt/format.h>

#include <set>

#include "drover/agent/sampler.h"
#include "drover/server/control_plane.h"

namespace drover::server {

void ControlPlane::AddUsageSampler(std::unique_ptr<agent::UsageSampler> sampler) {
  samplers_.push_back(std::move(sampler));
}

Status ControlPlane::IngestUsage(const NodeId& node, model::UsageBatch batch) {
  DROVER_RETURN_IF_ERROR(model::ValidateUsageBatch(batch));
  // Times within reach of the server's clock: a hostile or broken agent's cannot stretch an
  // attempt's sampled span (or overflow it) or open buckets years away.
  const TimeMs now = clock_.Now();
  for (std::size_t i = 0; i < batch.snapshots.size(); ++i) {
    const TimeMs at = batch.snapshots[i].at;
    if (at > now + model::kMaxUsageClockAheadMs || at < now - model::kMaxUsageAgeMs) {
      return InvalidArgument(fmt::format(
          "snapshots[{}].at: {} is not within a day before and a minute after the server's "
          "clock ({})",
          i, at, now));
    }
  }
  batch.node = node;
  if (batch.sampler_cpu_us > 0) {
    metrics_.CountSamplerCpu(node, static_cast<double>(batch.sampler_cpu_us) / 1e6);
  }
  std::set<model::WorkerKey> named;
  for (const model::UsageSnapshot& snapshot : batch.snapshots) {
    for (const model::GpuSample& gpu : snapshot.gpus) {
      if (gpu.worker) named.insert(*gpu.worker);
    }
    for (const model::GpuProcessSample& process : snapshot.gpu_processes) {
      if (process.worker) named.insert(*process.worker);
    }
    for (const model::ProcessSample& process : snapshot.processes) named.insert(process.worker);
  }
  std::set<model::WorkerKey> placed;  // those of `named` the controller placed on `node`
  {
    MutexLock lock(mu_);
    for (const model::WorkerKey& key : named) {
      const model::Worker* worker = controller_.FindWorker(key);
      if (worker != nullptr && worker->node == node) placed.insert(key);
    }
  }
  auto keep = [&placed](std::optional<model::WorkerKey>& worker) {
    if (worker && !placed.contains(*worker)) worker.reset();
  };
  for (model::UsageSnapshot& snapshot : batch.snapshots) {
    for (model::GpuSample& gpu : snapshot.gpus) keep(gpu.worker);
    for (model::GpuProcessSample& process : snapshot.gpu_processes) keep(process.worker);
    std::erase_if(snapshot.processes, [&placed](const model::ProcessSample& process) {
      return !placed.contains(process.worker);
    });
  }
  return usage_.Record(node, batch);
}

std::vector<model::GpuActivity> ControlPlane::LatestGpuActivity() const {
  return usage_.LatestGpuActivity();
}

Result<std::vector<model::AttemptUsage>> ControlPlane::JobUsage(JobId job) const {
  return store_->ListUsage(job);
}

Result<std::vector<model::UsageBucket>> ControlPlane::UsageSeries(JobId job, int attempt) const {
  return store_->GetUsageSeries(job, attempt);
}

}  // namespace drover::server
