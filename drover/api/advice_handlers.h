#pragma once

// Right-sizing advice (docs/observability.md, "Advice"; `drover advise`): what a job or each
// stage of a pipeline run should request, from the measured history of the jobs of its name.

#include <cstdint>

#include "drover/api/request.h"
#include "drover/api/service.h"

namespace drover::api {

// The history of one name is its newest jobs of the same team the caller may view, at most this
// many, each read once (its usage summaries; no series).
inline constexpr int kMaxAdviceHistoryJobs = 100;

// GET /v1/jobs/{id}/advice: {"advice": [AdviceView of the job]}: model::Advise over the
// attempts of the jobs named as it is (kMaxAdviceHistoryJobs newest, same team, visible to the
// caller) measured for at least the diagnosis' minimum sampled time.
//   AdviceView: {"name", "job_id" (whose spec is the base), "history", "span_ms", "confidence",
//                "no_advice", "recommendations": [{"field", "current", "target", "evidence"}],
//                "patch": YAML}
Result<Response> JobAdvice(Service& service, const Request& request);
// GET /v1/pipelines/{run}/advice: {"advice": [AdviceView per job of the run, in id order]}.
Result<Response> PipelineAdvice(Service& service, const Request& request);

}  // namespace drover::api
