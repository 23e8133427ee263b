#include "drover/model/diagnosis.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "drover/common/quantity.h"

namespace drover::model {
namespace {

bool HoldsGpus(const Requirements& requirements) {
  return requirements.per_worker.gpus > 0 || requirements.gpu_share_millis > 0 ||
         !requirements.mig_profile.empty();
}

// The share of the buckets with both GPU and CPU samples in which GPU activity was below
// `gpu_pct` while the workers' CPU was at least `busy_cpu_ratio` of `cpu_millis` (0 when no
// bucket has both).
double BottleneckShare(std::span<const UsageBucket> buckets, std::int64_t cpu_millis,
                       double gpu_pct, double busy_cpu_ratio) {
  if (cpu_millis <= 0) return 0;
  int judged = 0;
  int bottlenecked = 0;
  for (const UsageBucket& bucket : buckets) {
    if (bucket.gpu_util.count == 0 || bucket.cpu.count == 0) continue;
    ++judged;
    if (bucket.gpu_util.mean() < gpu_pct &&
        bucket.cpu.mean() >= busy_cpu_ratio * static_cast<double>(cpu_millis)) {
      ++bottlenecked;
    }
  }
  return judged == 0 ? 0 : static_cast<double>(bottlenecked) / judged;
}

std::string Percent(double share) { return fmt::format("{:.0f}%", share * 100); }

// The GPM rules over an attempt whose GPUs are active (mean GPU activity >= low_activity_pct):
// low_sm_activity, else busy_without_tensor_cores.
std::optional<Finding> DiagnoseGpm(const UsageSummary& summary, const std::string& over,
                                   const std::string& judged_over,
                                   const DiagnosisThresholds& thresholds) {
  const double gpu = summary.gpu_util.mean();
  const double sm = summary.sm_active.mean();
  const double tensor = summary.tensor_active.mean();
  if (sm < thresholds.sm_active_low_pct) {
    return Finding{
        FindingKind::kLowSmActivity,
        fmt::format("mean SM activity {:.1f}% (SM occupancy {:.1f}%) while a kernel ran {:.1f}% "
                    "of the time over {}: the kernels keep few of the SMs busy",
                    sm, summary.sm_occupancy.mean(), gpu, over),
        fmt::format("GPU activity >= {:.0f}% and SM activity < {:.0f}% {} (DCGM profiling "
                    "metrics: SM activity below 0.5 likely indicates ineffective GPU usage)",
                    thresholds.low_activity_pct, thresholds.sm_active_low_pct, judged_over)};
  }
  if (tensor < thresholds.tensor_active_low_pct) {
    return Finding{
        FindingKind::kBusyWithoutTensorCores,
        fmt::format("mean SM activity {:.1f}% but tensor-core activity {:.2f}% over {}: the math "
                    "runs on the CUDA cores (FP32?), not on the tensor cores",
                    sm, tensor, over),
        fmt::format("SM activity >= {:.0f}% and tensor activity < {:.0f}% {} (Drover's default; "
                    "DCGM documents tensor activity without a threshold)",
                    thresholds.sm_active_low_pct, thresholds.tensor_active_low_pct, judged_over)};
  }
  return std::nullopt;
}

// idle_gpus: the GPUs of summary.gpus whose own mean activity is at most the threshold, when
// others of the attempt's GPUs work (a wholly idle attempt is allocated_idle's). Listed by
// index and uuid, at most kListed of them.
std::optional<Finding> DiagnoseIdleGpus(const UsageSummary& summary, DurationMs sampled,
                                        const std::string& over, const std::string& judged_over,
                                        const DiagnosisThresholds& thresholds) {
  constexpr std::size_t kListed = 8;
  std::vector<const GpuUsage*> idle;
  Stat working;  // the other GPUs' samples
  for (const GpuUsage& gpu : summary.gpus) {
    if (gpu.util.count == 0) continue;
    if (gpu.util.mean() <= thresholds.idle_gpu_mean_pct) {
      idle.push_back(&gpu);
    } else {
      working.count += gpu.util.count;
      working.sum += gpu.util.sum;
    }
  }
  if (idle.empty() || working.count == 0) return std::nullopt;
  std::string listed;
  for (std::size_t i = 0; i < idle.size() && i < kListed; ++i) {
    listed += fmt::format("{}{} ({})", i == 0 ? "" : ", ", idle[i]->index, idle[i]->uuid);
  }
  if (idle.size() > kListed) listed += fmt::format(" and {} more", idle.size() - kListed);
  const double idle_gpu_hours =
      static_cast<double>(idle.size()) * static_cast<double>(sampled) / kMillisPerHour;
  return Finding{
      FindingKind::kIdleGpus,
      fmt::format(
          "{} of its {} GPUs had mean activity <= {:.0f}% over {} while the others ran at "
          "a mean {:.1f}%: {:.2f} GPU-hours held without work; idle GPUs by index (uuid): {}",
          idle.size(), summary.gpus.size(), thresholds.idle_gpu_mean_pct, over, working.mean(),
          idle_gpu_hours, listed),
      fmt::format("a GPU's mean <= {:.0f}% {} while others work (Job Defense Shield, GPU-hours "
                  "at 0% utilization, per GPU as jobstats reports it)",
                  thresholds.idle_gpu_mean_pct, judged_over)};
}

}  // namespace

std::vector<Finding> Diagnose(const Requirements& requirements, int workers,
                              const UsageSummary& summary, std::span<const UsageBucket> buckets,
                              const DiagnosisThresholds& thresholds) {
  std::vector<Finding> findings;
  const DurationMs sampled = summary.last_at - summary.first_at;
  if (sampled < thresholds.min_sampled_ms || workers < 1) return findings;
  const std::string over = FormatDuration(sampled);
  const std::string judged_over =
      fmt::format("over >= {}", FormatDuration(thresholds.min_sampled_ms));
  const Resources& asked = requirements.per_worker;

  if (HoldsGpus(requirements) && summary.gpu_util.count > 0) {
    const double mean = summary.gpu_util.mean();
    const double busy_share = BottleneckShare(
        buckets, asked.cpu_millis, thresholds.bottleneck_gpu_pct, thresholds.busy_cpu_ratio);
    const bool cpu_bound = busy_share > thresholds.bottleneck_time_ratio;
    if (summary.gpu_util_p95 <= thresholds.idle_p95_pct) {
      if (cpu_bound) {
        findings.push_back(
            {FindingKind::kCpuStageHoldingGpus,
             fmt::format("GPU activity p95 {}% over {} while the CPUs were at >= {} of the "
                         "request in {} of the time: CPU work holds the GPUs",
                         summary.gpu_util_p95, over, Percent(thresholds.busy_cpu_ratio),
                         Percent(busy_share)),
             fmt::format("GPU p95 <= {}% {} (Job Defense Shield, zero GPU utilization) with "
                         "the CPU bottleneck rule below",
                         thresholds.idle_p95_pct, judged_over)});
      } else {
        findings.push_back(
            {FindingKind::kAllocatedIdle,
             fmt::format("GPU activity p95 {}% (mean {:.1f}%) over {}", summary.gpu_util_p95, mean,
                         over),
             fmt::format("GPU p95 <= {}% {} (Job Defense Shield, zero GPU utilization)",
                         thresholds.idle_p95_pct, judged_over)});
      }
    } else if (cpu_bound) {
      findings.push_back(
          {FindingKind::kInputBoundCpu,
           fmt::format("GPU activity below {:.0f}% while the CPUs were at >= {} of the request "
                       "in {} of the 10 s buckets (mean GPU activity {:.1f}%)",
                       thresholds.bottleneck_gpu_pct, Percent(thresholds.busy_cpu_ratio),
                       Percent(busy_share), mean),
           fmt::format("GPU < {:.0f}% and CPU >= {} of the request in > {} of the time "
                       "(SageMaker Debugger, CPUBottleneck)",
                       thresholds.bottleneck_gpu_pct, Percent(thresholds.busy_cpu_ratio),
                       Percent(thresholds.bottleneck_time_ratio))});
    } else if (mean < thresholds.low_activity_pct) {
      findings.push_back({FindingKind::kLowGpuActivity,
                          fmt::format("mean GPU activity {:.1f}% (p50 {}%, p95 {}%) over {}", mean,
                                      summary.gpu_util_p50, summary.gpu_util_p95, over),
                          fmt::format("mean < {:.0f}% {} (Job Defense Shield, low GPU efficiency)",
                                      thresholds.low_activity_pct, judged_over)});
    }
    // Only when no activity rule above fired: the GPUs run kernels much of the time.
    if (summary.has_gpm() && findings.empty() && mean >= thresholds.low_activity_pct) {
      if (auto finding = DiagnoseGpm(summary, over, judged_over, thresholds)) {
        findings.push_back(std::move(*finding));
      }
    }
    // Judged apart from the rules over all of its GPUs: some GPUs idle while the others work.
    if (summary.gpu_util_p95 > thresholds.idle_p95_pct) {
      if (auto idle = DiagnoseIdleGpus(summary, sampled, over, judged_over, thresholds)) {
        findings.push_back(std::move(*idle));
      }
    }
    const double io_share =
        static_cast<double>(summary.iowait_ms) / (static_cast<double>(sampled) * workers);
    if (mean < thresholds.io_gpu_pct && io_share > thresholds.io_wait_ratio) {
      findings.push_back(
          {FindingKind::kInputBoundIo,
           fmt::format("the workers waited on I/O {} of the time while mean GPU activity was "
                       "{:.1f}% ({} read)",
                       Percent(io_share), mean, FormatBytesApprox(summary.read_bytes)),
           fmt::format("GPU < {:.0f}% and I/O wait > {} of the time (SageMaker Debugger, "
                       "IOBottleneck)",
                       thresholds.io_gpu_pct, Percent(thresholds.io_wait_ratio))});
    }
  }

  if (asked.memory_bytes > 0 && summary.peak_rss_bytes > 0 &&
      static_cast<double>(summary.peak_rss_bytes) <
          thresholds.used_share * static_cast<double>(asked.memory_bytes)) {
    findings.push_back(
        {FindingKind::kHostMemoryOverRequested,
         fmt::format("peak RSS {} of {} requested per worker ({})",
                     FormatBytesApprox(summary.peak_rss_bytes), FormatBytes(asked.memory_bytes),
                     Percent(static_cast<double>(summary.peak_rss_bytes) /
                             static_cast<double>(asked.memory_bytes))),
         fmt::format("peak < {} of the request", Percent(thresholds.used_share))});
  }
  if (asked.cpu_millis > 0 && summary.cpu_ms > 0) {
    // Mean cores per worker over the sampled time, against the request.
    const double used_millis =
        static_cast<double>(summary.cpu_ms) * 1000 / (static_cast<double>(sampled) * workers);
    if (used_millis < thresholds.used_share * static_cast<double>(asked.cpu_millis)) {
      findings.push_back({FindingKind::kCpuOverRequested,
                          fmt::format("mean CPU {} of {} requested per worker ({})",
                                      FormatCpuMillis(static_cast<std::int64_t>(used_millis)),
                                      FormatCpuMillis(asked.cpu_millis),
                                      Percent(used_millis / static_cast<double>(asked.cpu_millis))),
                          fmt::format("mean < {} of the request", Percent(thresholds.used_share))});
    }
  }
  const std::int64_t gpu_memory = summary.gpu_memory_used_bytes();
  if (requirements.gpu_memory_bytes > 0 && gpu_memory > 0 &&
      static_cast<double>(gpu_memory) <
          thresholds.used_share * static_cast<double>(requirements.gpu_memory_bytes)) {
    findings.push_back(
        {FindingKind::kGpuMemoryOverRequested,
         fmt::format("peak GPU memory {}{} of {} requested", FormatBytesApprox(gpu_memory),
                     summary.peak_process_gpu_memory_bytes > 0 ? " (its processes)" : "",
                     FormatBytes(requirements.gpu_memory_bytes)),
         fmt::format("peak < {} of the request", Percent(thresholds.used_share))});
  }
  std::stable_sort(findings.begin(), findings.end(),
                   [](const Finding& a, const Finding& b) { return a.kind < b.kind; });
  return findings;
}

}  // namespace drover::model
