#pragma once

// What an attempt's measured usage says about it (docs/observability.md, "Diagnosis"): rules
// over its usage summary and 10 s buckets (model/usage.h) against what it asked for, each
// finding with its evidence and the published threshold it applies. Pure: values in, findings
// out; the thresholds are parameters so that an operator (and a test) can move them.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "drover/common/clock.h"
#include "drover/model/job_spec.h"
#include "drover/model/names.h"
#include "drover/model/usage.h"

namespace drover::model {

enum class FindingKind {
  kAllocatedIdle,        // GPUs held with (almost) no activity, and no busy CPU either
  kIdleGpus,             // some of the attempt's GPUs idle while the others work
  kCpuStageHoldingGpus,  // GPUs idle while the CPUs are saturated: CPU work holding GPUs
  kLowGpuActivity,       // GPUs active, but little
  kInputBoundCpu,        // GPU activity low while the CPUs are saturated, much of the time
  kInputBoundIo,         // GPU activity low while the workers wait on I/O
  // GPM rules (the attempt's GPUs report GPM, UsageSummary::has_gpm):
  kLowSmActivity,           // kernels run most of the time, but on few of the SMs
  kBusyWithoutTensorCores,  // the SMs are busy, but the tensor cores almost never
  kHostMemoryOverRequested,
  kCpuOverRequested,
  kGpuMemoryOverRequested,
  // Job-level rules (model/job_diagnosis.h): over its timeline, attempts and waiting verdict.
  kWaitingForShape,    // enough GPUs free in the cluster, but not in the shape it asks for
  kWaitingBeforeWork,  // most of its time passed before useful work began: which phase
  kRecoveryOverhead,   // GPU time lost to retries and preemptions
};
inline constexpr NameTable kFindingKindNames{std::array{
    NameEntry{FindingKind::kAllocatedIdle, "allocated_idle"},
    NameEntry{FindingKind::kIdleGpus, "idle_gpus"},
    NameEntry{FindingKind::kCpuStageHoldingGpus, "cpu_stage_holding_gpus"},
    NameEntry{FindingKind::kLowGpuActivity, "low_gpu_activity"},
    NameEntry{FindingKind::kInputBoundCpu, "input_bound_cpu"},
    NameEntry{FindingKind::kInputBoundIo, "input_bound_io"},
    NameEntry{FindingKind::kLowSmActivity, "low_sm_activity"},
    NameEntry{FindingKind::kBusyWithoutTensorCores, "busy_without_tensor_cores"},
    NameEntry{FindingKind::kHostMemoryOverRequested, "host_memory_over_requested"},
    NameEntry{FindingKind::kCpuOverRequested, "cpu_over_requested"},
    NameEntry{FindingKind::kGpuMemoryOverRequested, "gpu_memory_over_requested"},
    NameEntry{FindingKind::kWaitingForShape, "waiting_for_shape"},
    NameEntry{FindingKind::kWaitingBeforeWork, "waiting_before_work"},
    NameEntry{FindingKind::kRecoveryOverhead, "recovery_overhead"},
}};
static_assert(kFindingKindNames.size() ==
              static_cast<std::size_t>(FindingKind::kRecoveryOverhead) + 1);

// The rules' thresholds, with the source each default follows (docs/observability.md).
struct DiagnosisThresholds {
  // No rule judges an attempt with less than this much sampled time (first to last sample):
  // start-up (data loading, compilation) looks idle, as SageMaker Debugger's `patience` says.
  DurationMs min_sampled_ms = 10 * kMillisPerMinute;
  // Idle: the 95th percentile of GPU activity at or below this (Job Defense Shield's
  // zero-utilization alert flags GPUs at 0%; 1% leaves room for a driver's own blips).
  int idle_p95_pct = 1;
  // Idle GPUs of a job whose other GPUs work: a GPU's own mean activity at or below this (Job
  // Defense Shield's report of GPU-hours at 0% utilization counts each GPU by its mean, as
  // Princeton's jobstats gives it per GPU; 1% as above).
  double idle_gpu_mean_pct = 1;
  // Low activity: mean GPU activity below this (Job Defense Shield's low GPU efficiency alert,
  // eff_thres_pct: 15).
  double low_activity_pct = 15;
  // CPU bottleneck (SageMaker Debugger's CPUBottleneck rule: GPU under 10% while CPU above 90%,
  // in more than 50% of the time): per 10 s bucket, GPU activity below bottleneck_gpu_pct while
  // the workers' CPU is at least busy_cpu_ratio of their request, in more than
  // bottleneck_time_ratio of the buckets that have both.
  double bottleneck_gpu_pct = 10;
  double busy_cpu_ratio = 0.9;
  double bottleneck_time_ratio = 0.5;
  // I/O bottleneck (SageMaker Debugger's IOBottleneck rule: GPU under 70% while I/O wait above
  // 50%): mean GPU activity below io_gpu_pct while the workers spent more than io_wait_ratio of
  // the sampled time waiting on block I/O.
  double io_gpu_pct = 70;
  double io_wait_ratio = 0.5;
  // Low SM activity (GPM): mean GPU activity at least low_activity_pct (kernels run) while the
  // mean SM activity is below this. DCGM's guidance for DCGM_FI_PROF_SM_ACTIVE (the metric
  // NVML_GPM_METRIC_SM_UTIL reads): "a value of 0.8 or greater is necessary, but not
  // sufficient, for effective use of the GPU. A value less than 0.5 likely indicates
  // ineffective GPU usage" (DCGM user guide, "Profiling Metrics").
  double sm_active_low_pct = 50;
  // Busy without tensor cores (GPM): mean SM activity at least sm_active_low_pct while the mean
  // tensor activity (NVML_GPM_METRIC_ANY_TENSOR_UTIL) is below this. Drover's default: DCGM
  // documents DCGM_FI_PROF_PIPE_TENSOR_ACTIVE without a threshold; below 1% the tensor pipes
  // are practically unused, the sign of FP32 math where TF32/BF16/FP16 would use them.
  double tensor_active_low_pct = 1;
  // Over-requested: the peak (memory) or mean (CPU) use below this share of the request (the
  // share below which Job Defense Shield's excess-memory and Kubernetes VPA's recommender both
  // advise a smaller request; Drover's own default).
  double used_share = 0.25;
  // Waiting before work (model/job_diagnosis.h): the time before useful work began (every phase
  // of the lifecycle split but the run and publishing) is at least wait_min_ms and more than
  // wait_share of the job's wall time (Drover's defaults: the judgement of the minimum sampled
  // time above, and "most of its time").
  DurationMs wait_min_ms = 10 * kMillisPerMinute;
  double wait_share = 0.5;
  // Recovery overhead: GPU time lost to retries and preemptions (model::ComputeAttemptCosts)
  // more than recovery_share of the job's GPU time and at least recovery_min_gpu_ms (Drover's
  // defaults: an effective training time ratio, ETTR in Kokolis et al., "Revisiting Reliability
  // in Large-Scale Machine Learning Research Clusters", 2024, below 90%).
  double recovery_share = 0.1;
  std::int64_t recovery_min_gpu_ms = 6 * kMillisPerMinute;  // a tenth of a GPU-hour
};

struct Finding {
  FindingKind kind = FindingKind::kAllocatedIdle;
  std::string evidence;   // the measured values, e.g. "GPU activity p95 0% over 42m"
  std::string threshold;  // the rule and its source, e.g. "p95 <= 1% over >= 10m (...)"

  friend bool operator==(const Finding&, const Finding&) = default;
};

// The findings for one attempt of a job asking `requirements` per worker with `workers`
// workers, measured as `summary` and `buckets` (by start), in FindingKind order. None when the
// sampled time is shorter than thresholds.min_sampled_ms. GPU rules apply to attempts holding
// GPUs (whole, shared or MIG) with GPU samples; CPU and memory rules to any attempt with
// process samples.
std::vector<Finding> Diagnose(const Requirements& requirements, int workers,
                              const UsageSummary& summary, std::span<const UsageBucket> buckets,
                              const DiagnosisThresholds& thresholds = {});

}  // namespace drover::model
