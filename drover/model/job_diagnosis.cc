#include "drover/model/job_diagnosis.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "drover/common/quantity.h"
#include "drover/model/metrics.h"

namespace drover::model {
namespace {

std::string GpuHours(std::int64_t gpu_ms) {
  return fmt::format("{:.2f} GPU-hours", static_cast<double>(gpu_ms) / kMillisPerHour);
}

std::string Percent(double share) { return fmt::format("{:.0f}%", share * 100); }

bool IsGpuFinding(FindingKind kind) {
  switch (kind) {
    case FindingKind::kAllocatedIdle:
    case FindingKind::kIdleGpus:
    case FindingKind::kCpuStageHoldingGpus:
    case FindingKind::kLowGpuActivity:
    case FindingKind::kInputBoundCpu:
    case FindingKind::kInputBoundIo:
      return true;
    // GPM findings judge how active GPUs are used, not idle time.
    case FindingKind::kLowSmActivity:
    case FindingKind::kBusyWithoutTensorCores:
    case FindingKind::kHostMemoryOverRequested:
    case FindingKind::kCpuOverRequested:
    case FindingKind::kGpuMemoryOverRequested:
    case FindingKind::kWaitingForShape:
    case FindingKind::kWaitingBeforeWork:
    case FindingKind::kRecoveryOverhead:
      return false;
  }
  return false;
}

}  // namespace

std::optional<Finding> DiagnoseWaiting(const Job& job, TimeMs now,
                                       const DiagnosisThresholds& thresholds) {
  const LifecycleSplit split = ComputeSplit(job, now);
  const DurationMs total = split.Total();
  std::vector<std::pair<DurationMs, std::string_view>> phases = {
      {split.dependencies, "dependencies"},
      {split.inputs, "inputs"},
      {split.queue + split.admission, "policy (queue and admission)"},
      {split.placement + split.startup, "start-up (placement and worker launch)"},
      {split.until_useful, "application start (until it reported useful work)"},
      {split.backoff, "retry backoff"},
  };
  DurationMs before = 0;
  for (const auto& [ms, name] : phases) before += ms;
  if (total <= 0 || before < thresholds.wait_min_ms ||
      static_cast<double>(before) <= thresholds.wait_share * static_cast<double>(total)) {
    return std::nullopt;
  }
  std::stable_sort(phases.begin(), phases.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string parts;
  for (const auto& [ms, name] : phases) {
    if (ms == 0) continue;
    if (!parts.empty()) parts += ", ";
    parts += fmt::format("{} {}", name, FormatDuration(ms));
  }
  return Finding{
      FindingKind::kWaitingBeforeWork,
      fmt::format("{} of {} ({}) before useful work, mostly waiting for {}: {}",
                  FormatDuration(before), FormatDuration(total),
                  Percent(static_cast<double>(before) / static_cast<double>(total)),
                  phases.front().second, parts),
      fmt::format("time before useful work >= {} and > {} of the wall time (Drover's default)",
                  FormatDuration(thresholds.wait_min_ms), Percent(thresholds.wait_share))};
}

std::optional<Finding> DiagnoseRecovery(const Job& job, TimeMs now,
                                        const DiagnosisThresholds& thresholds) {
  std::int64_t gpu_ms = 0;
  std::int64_t retry_ms = 0;
  std::int64_t preempt_ms = 0;
  int retried = 0;
  int preempted = 0;
  for (const AttemptCost& cost : ComputeAttemptCosts(job, now)) {
    gpu_ms += cost.gpu_ms;
    if (cost.lost_gpu_ms == 0) continue;
    (cost.preempted ? preempt_ms : retry_ms) += cost.lost_gpu_ms;
    ++(cost.preempted ? preempted : retried);
  }
  const std::int64_t lost = retry_ms + preempt_ms;
  if (gpu_ms <= 0 || lost < thresholds.recovery_min_gpu_ms ||
      static_cast<double>(lost) <= thresholds.recovery_share * static_cast<double>(gpu_ms)) {
    return std::nullopt;
  }
  return Finding{
      FindingKind::kRecoveryOverhead,
      fmt::format("{} of {} lost ({}): {} to {} failed, timed-out or cancelled attempt(s), {} "
                  "to {} preemption(s)",
                  GpuHours(lost), GpuHours(gpu_ms),
                  Percent(static_cast<double>(lost) / static_cast<double>(gpu_ms)),
                  GpuHours(retry_ms), retried, GpuHours(preempt_ms), preempted),
      fmt::format("lost > {} of the job's GPU time and >= {} (Drover's default; an effective "
                  "training time ratio below {}, Kokolis et al. 2024)",
                  Percent(thresholds.recovery_share), GpuHours(thresholds.recovery_min_gpu_ms),
                  Percent(1 - thresholds.recovery_share))};
}

std::optional<Finding> DiagnoseShapeWait(const ShapeWait& wait) {
  const int needed = wait.workers * wait.gpus_per_worker;
  if (needed <= 0 || wait.fitting_workers >= wait.workers || wait.free_gpus < needed) {
    return std::nullopt;
  }
  const int on_one_node = wait.same_node ? needed : wait.gpus_per_worker;
  return Finding{
      FindingKind::kWaitingForShape,
      fmt::format("needs {} GPU(s) as {} worker(s) of {}{}; {} matching GPUs are free in total, "
                  "at most {} on one node ({}), so only {} worker(s) fit",
                  needed, wait.workers, wait.gpus_per_worker,
                  wait.same_node ? fmt::format(" on one node ({} there)", on_one_node) : "",
                  wait.free_gpus, wait.largest_free_gpus,
                  wait.largest_free_node.empty() ? "none" : wait.largest_free_node,
                  wait.fitting_workers),
      "free GPUs in total >= the request while it does not fit: fragmentation (FGD, Weng et al., "
      "USENIX ATC'23)"};
}

JobDiagnosis DiagnoseJob(const Job& job, const AttemptUsage* usage,
                         std::span<const UsageBucket> buckets,
                         const std::optional<ShapeWait>& shape, TimeMs now,
                         const DiagnosisThresholds& thresholds) {
  JobDiagnosis out;
  out.job = job.id;
  if (usage != nullptr) {
    out.attempt = usage->attempt;
    out.findings =
        Diagnose(job.spec.requirements, job.spec.workers, usage->summary, buckets, thresholds);
    const bool gpu_finding = std::any_of(out.findings.begin(), out.findings.end(),
                                         [](const Finding& f) { return IsGpuFinding(f.kind); });
    if (gpu_finding) {
      const double sampled = static_cast<double>(usage->summary.last_at - usage->summary.first_at);
      const double held =
          static_cast<double>(MilliGpusPerWorker(job.spec.requirements) * job.spec.workers) / 1000;
      const double idle = 1 - std::clamp(usage->summary.gpu_util.mean(), 0.0, 100.0) / 100;
      out.idle_gpu_ms = static_cast<std::int64_t>(held * sampled * idle);
    }
  }
  if (shape) {
    if (auto finding = DiagnoseShapeWait(*shape)) out.findings.push_back(std::move(*finding));
  }
  if (auto finding = DiagnoseWaiting(job, now, thresholds)) {
    out.findings.push_back(std::move(*finding));
  }
  for (const AttemptCost& cost : ComputeAttemptCosts(job, now)) out.lost_gpu_ms += cost.lost_gpu_ms;
  if (auto finding = DiagnoseRecovery(job, now, thresholds)) {
    out.findings.push_back(std::move(*finding));
  }
  return out;
}

void RankByWaste(std::vector<JobDiagnosis>& jobs) {
  std::sort(jobs.begin(), jobs.end(), [](const JobDiagnosis& a, const JobDiagnosis& b) {
    if (a.wasted_gpu_ms() != b.wasted_gpu_ms()) return a.wasted_gpu_ms() > b.wasted_gpu_ms();
    return a.job < b.job;
  });
}

}  // namespace drover::model
