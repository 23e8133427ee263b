#include "drover/agent/sampler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "drover/agent/steady_clock.h"

namespace drover::agent {

UsageSampler::UsageSampler(NodeId node, Options options, std::unique_ptr<NvmlSampler> nvml,
                           std::vector<std::string> gpu_uuids, Workers workers, Sink sink,
                           const Clock& clock)
    : node_(std::move(node)),
      options_(std::move(options)),
      nvml_(std::move(nvml)),
      gpu_uuids_(std::move(gpu_uuids)),
      workers_(std::move(workers)),
      sink_(std::move(sink)),
      clock_(clock),
      proc_(options_.proc_root) {
  pending_.node = node_;
}

UsageSampler::~UsageSampler() { Stop(); }

void UsageSampler::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Loop(); });
}

void UsageSampler::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void UsageSampler::Loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    const std::int64_t next = RunOnce(SteadyMs());
    lock.lock();
    wake_.wait_for(lock, std::chrono::milliseconds(std::max<std::int64_t>(next - SteadyMs(), 1)),
                   [this] { return stopping_; });
  }
  lock.unlock();
  RunOnce(SteadyMs(), /*force=*/true);
}

std::int64_t UsageSampler::RunOnce(std::int64_t steady_ms, bool force) {
  if (next_batch_ == 0) next_batch_ = steady_ms + options_.batch_interval_ms;
  if (cpu_mark_us_ < 0) cpu_mark_us_ = ThreadCpuMicros();
  const bool gpus_due = nvml_ && options_.gpu_interval_ms > 0 && (force || steady_ms >= next_gpu_);
  const bool processes_due =
      options_.process_interval_ms > 0 && (force || steady_ms >= next_process_);
  if (gpus_due || processes_due) {
    const std::vector<LocalRuntime::RunningWorker> workers = workers_();
    model::UsageSnapshot snapshot;
    snapshot.at = clock_.Now();
    if (processes_due) {
      next_process_ = steady_ms + options_.process_interval_ms;
      std::map<model::WorkerKey, pid_t> roots;
      for (const LocalRuntime::RunningWorker& worker : workers) roots[worker.key] = worker.pid;
      pid_workers_.clear();
      snapshot.processes = proc_.Sample(roots, pid_workers_);
    }
    if (gpus_due) {
      next_gpu_ = steady_ms + options_.gpu_interval_ms;
      std::vector<model::GpuSample> gpus;
      std::vector<model::GpuProcessSample> processes;
      nvml_->Sample(
          steady_ms,
          processes_due ? NvmlSampler::ProcessShares::kRead : NvmlSampler::ProcessShares::kSkip,
          gpus, processes);
      std::map<int, model::WorkerKey> holders;  // GPU index -> worker
      for (const LocalRuntime::RunningWorker& worker : workers) {
        for (int index : worker.gpus) holders[index] = worker.key;
        pid_workers_[worker.pid] = worker.key;
      }
      std::set<int> sampled;
      for (model::GpuSample& gpu : gpus) {
        if (std::find(gpu_uuids_.begin(), gpu_uuids_.end(), gpu.uuid) == gpu_uuids_.end()) {
          continue;
        }
        if (auto it = holders.find(gpu.index); it != holders.end()) gpu.worker = it->second;
        sampled.insert(gpu.index);
        snapshot.gpus.push_back(std::move(gpu));
      }
      for (model::GpuProcessSample& process : processes) {
        if (!sampled.contains(process.gpu_index)) continue;
        if (auto it = pid_workers_.find(process.pid); it != pid_workers_.end()) {
          process.worker = it->second;
        }
        snapshot.gpu_processes.push_back(std::move(process));
      }
    }
    pending_.snapshots.push_back(std::move(snapshot));
  }
  const bool batch_due =
      force || steady_ms >= next_batch_ || pending_.snapshots.size() >= model::kMaxUsageSnapshots;
  if (batch_due) {
    next_batch_ = steady_ms + options_.batch_interval_ms;
    if (!pending_.snapshots.empty()) {
      model::UsageBatch batch = std::move(pending_);
      pending_ = model::UsageBatch{.node = node_, .snapshots = {}};
      batch.sampler_cpu_us = ThreadCpuMicros() - cpu_mark_us_;
      sink_(std::move(batch));
      cpu_mark_us_ = ThreadCpuMicros();  // the sink's work is not the sampler's
    }
  }
  std::int64_t next = next_batch_;
  if (nvml_ && options_.gpu_interval_ms > 0) next = std::min(next, next_gpu_);
  if (options_.process_interval_ms > 0) next = std::min(next, next_process_);
  return next;
}

std::unique_ptr<UsageSampler> MakeNodeSampler(const model::Node& node,
                                              UsageSampler::Options options, LocalRuntime& runtime,
                                              UsageSampler::Sink sink, const Clock& clock) {
  std::vector<std::string> uuids;
  for (const model::Gpu& gpu : node.gpus) {
    if (!gpu.uuid.empty()) uuids.push_back(gpu.uuid);
  }
  std::unique_ptr<NvmlSampler> nvml;
  if (!uuids.empty() && options.gpu_interval_ms > 0) {
    auto opened = NvmlSampler::Open();
    if (opened) {
      nvml = *std::move(opened);
    } else {
      spdlog::warn("node {}: GPUs are not sampled: {}", node.name.value(), opened.error().message);
    }
  }
  return std::make_unique<UsageSampler>(
      node.name, std::move(options), std::move(nvml), std::move(uuids),
      [&runtime] { return runtime.RunningWorkers(); }, std::move(sink), clock);
}

}  // namespace drover::agent
