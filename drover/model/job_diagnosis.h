#pragma once

// Diagnosis beyond one attempt's usage (docs/observability.md, "Diagnosis"): what a job waited
// for before useful work began (its lifecycle split), the GPU time its retries and preemptions
// lost, whether a waiting job waits for the shape of its request rather than for capacity, and
// the cluster view that ranks jobs by the GPU-hours they wasted. Pure: values in, findings out;
// thresholds in model::DiagnosisThresholds, each with its source.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "drover/common/clock.h"
#include "drover/model/diagnosis.h"
#include "drover/model/job.h"
#include "drover/model/usage.h"

namespace drover::model {

// waiting_before_work: the time before useful work began (dependencies, inputs, queue and
// admission, placement and start-up, the application's own start until it reported useful work,
// retry backoff) is at least thresholds.wait_min_ms and more than thresholds.wait_share of the
// job's wall time (ComputeSplit until `now`). The evidence names each phase, the largest first.
std::optional<Finding> DiagnoseWaiting(const Job& job, TimeMs now,
                                       const DiagnosisThresholds& thresholds = {});

// recovery_overhead: the GPU time lost to retries and preemptions (ComputeAttemptCosts) exceeds
// thresholds.recovery_share of the job's GPU time and is at least recovery_min_gpu_ms.
std::optional<Finding> DiagnoseRecovery(const Job& job, TimeMs now,
                                        const DiagnosisThresholds& thresholds = {});

// A waiting job's request against the free capacity, from the scheduler's verdict
// (sched::PendingReason; filled by the caller, which may include sched).
struct ShapeWait {
  int workers = 1;
  int gpus_per_worker = 0;  // whole GPUs
  bool same_node = false;   // the gang on one node
  int fitting_workers = 0;  // workers the free capacity holds now
  int free_gpus = 0;        // free matching GPUs over every node that could hold a worker
  int largest_free_gpus = 0;
  std::string largest_free_node;
};

// waiting_for_shape: the job waits although the free matching GPUs in total cover its whole
// request (free_gpus >= workers x gpus_per_worker) while fewer than all of its workers fit:
// fragmentation, seed 000's third case (the notion of FGD, Weng et al., USENIX ATC'23: free GPUs
// that cannot serve the requested shape). Whole GPUs only; none when the request fits.
std::optional<Finding> DiagnoseShapeWait(const ShapeWait& wait);

// One job's findings for the cluster view, with the GPU time they put a number on.
struct JobDiagnosis {
  JobId job;
  int attempt = 0;  // the attempt whose usage was judged; 0: none had usage
  std::vector<Finding> findings;
  // GPU time the judged attempt held without activity when a GPU rule fired: the GPUs it held x
  // its sampled time x (1 - mean GPU activity).
  std::int64_t idle_gpu_ms = 0;
  // GPU time lost to retries and preemptions (ComputeAttemptCosts), whether or not it reached
  // the recovery_overhead threshold.
  std::int64_t lost_gpu_ms = 0;

  std::int64_t wasted_gpu_ms() const { return idle_gpu_ms + lost_gpu_ms; }
};

// The job's findings: Diagnose over `usage` (its latest measured attempt, may be null) and
// `buckets` (that attempt's series), then DiagnoseWaiting, DiagnoseRecovery and, when given,
// DiagnoseShapeWait over `shape`.
JobDiagnosis DiagnoseJob(const Job& job, const AttemptUsage* usage,
                         std::span<const UsageBucket> buckets,
                         const std::optional<ShapeWait>& shape, TimeMs now,
                         const DiagnosisThresholds& thresholds = {});

// Orders `jobs` by wasted GPU time, largest first (ties: job id).
void RankByWaste(std::vector<JobDiagnosis>& jobs);

}  // namespace drover::model
