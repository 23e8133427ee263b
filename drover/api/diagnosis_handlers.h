#pragma once

// The cluster diagnosis (docs/observability.md, "Diagnosis"): findings across the jobs a caller
// may read, ranked by the GPU-hours they wasted, and the job-level rules the per-job usage route
// shares with it (model/job_diagnosis.h).

#include <cstdint>
#include <optional>
#include <span>

#include "drover/api/request.h"
#include "drover/api/service.h"
#include "drover/model/job_diagnosis.h"

namespace drover::api {

// GET /v1/diagnosis examines at most `limit` jobs (this many unless the query says otherwise,
// at most kMaxDiagnosisJobs): per job one read of its usage summaries, one of its latest measured
// attempt's series (at most model::kMaxUsageBuckets buckets) and, for a ready job asking whole
// GPUs, one scheduling explanation (a pass over the nodes).
inline constexpr std::int64_t kDefaultDiagnosisJobs = 200;
inline constexpr std::int64_t kMaxDiagnosisJobs = 1000;

// GET /v1/diagnosis?since=MS&team=T&limit=N: the newest `limit` jobs of `team` (any when empty)
// the caller may view that had not ended before `since` (Unix ms; 0: any), each diagnosed by
// model::DiagnoseJob; those with findings ranked by wasted GPU-hours, and per team the GPU-hours
// idle in judged attempts and lost to retries and preemptions:
//   {"since", "team", "limit", "examined", "more", "jobs": [{"job_id", "name", "owner", "team",
//    "state", "attempt", "wasted_gpu_hours", "idle_gpu_hours", "lost_gpu_hours", "findings"}],
//    "teams": [{"team", "jobs", "jobs_with_findings", "wasted_gpu_hours", "idle_gpu_hours",
//    "lost_gpu_hours"}]}
// "more" is true when further matching jobs were not examined. kInvalidArgument naming the query
// parameter for a since or limit that is not an integer in range.
Result<Response> ClusterDiagnosis(Service& service, const Request& request);

// The waiting verdict of `job` when it is ready, asks whole GPUs and the placement layer holds
// it (Service::Explain), for model::DiagnoseShapeWait; unset otherwise.
std::optional<model::ShapeWait> ShapeWaitOf(const Service& service, const model::Job& job);

// model::DiagnoseJob of `job` with the service's thresholds and clock, and ShapeWaitOf.
model::JobDiagnosis DiagnoseJob(const Service& service, const model::Job& job,
                                const model::AttemptUsage* usage,
                                std::span<const model::UsageBucket> buckets);

}  // namespace drover::api
