#pragma once

// Handlers of the /v1/jobs endpoints (docs/api.md, "Jobs"): submit, list, get, cancel,
// explain, decisions, checkpoint, report and logs. Each answers a request that matched its route
// in routes.cc; errors are the Service's (request.h maps them to statuses), plus those named.

#include <cstdint>

#include "drover/api/request.h"
#include "drover/api/service.h"

namespace drover::api {

// POST /v1/jobs: the spec text in the body, X-Drover-File (default "<request>"),
// X-Drover-Base-Dir and Idempotency-Key; the owner and team default to the caller's. 201 with the
// created jobs, 200 for a repeated key.
Result<Response> SubmitJobs(Service& service, const Request& request);
// GET /v1/jobs?state=&owner=&team=&queue=&name=&active=1&pending=1&limit=&order=&after=: one
// page of job summaries the caller may see (pending=1: only jobs that HasNotStarted), with `next`
// (docs/api.md, "Pages"); a waiting job's summary carries its queue position. kInvalidArgument
// naming the parameter for an unknown state, a limit outside [1, kMaxJobPage], an order other than
// asc or desc, an after that is no job id.
Result<Response> ListJobs(Service& service, const Request& request);

// The rule of GET /v1/jobs?pending=1, `drover ls --pending` and the dashboard's pending jobs: a
// job that has not started yet, whatever it waits for (its dependencies or inputs: pending or
// waiting; quota or room: ready; its launch: admitted or placed).
bool HasNotStarted(model::JobState state);

// GET /v1/jobs pages: kDefaultJobPage jobs unless `limit` says otherwise, at most kMaxJobPage.
inline constexpr std::int64_t kDefaultJobPage = 500;
inline constexpr std::int64_t kMaxJobPage = 5000;

// GET /v1/jobs/{id}: the job's detail with its transitions.
Result<Response> GetJob(Service& service, const Request& request);
// POST /v1/jobs/{id}/cancel: the job's summary after the cancel ("cancelled by USER").
Result<Response> CancelJob(Service& service, const Request& request);
// GET /v1/jobs/{id}/explain.
Result<Response> ExplainJob(Service& service, const Request& request);
// GET /v1/jobs/{id}/decisions.
Result<Response> JobDecisions(Service& service, const Request& request);
// GET /v1/jobs/{id}/usage[?attempt=N] (docs/api.md, "Usage"): {"job_id", "attempts": [{"attempt",
// "summary"}], "attempt", "bucket_ms", "buckets": [UsageBucket...]}: every sampled attempt's
// summary and the series of `attempt` (default: the latest sampled; 0 and no buckets when none
// is). kNotFound for an unknown job; kInvalidArgument for an attempt that is not a number >= 0.
Result<Response> JobUsage(Service& service, const Request& request);
// POST /v1/jobs/{id}/checkpoint: {"job", "checkpoint_at"}.
Result<Response> CheckpointJob(Service& service, const Request& request);
// POST /v1/jobs/{id}/report with {"useful_work_began": bool, "progress": number} (either or
// both): {"job", "attempt", GoodputView...}. kInvalidArgument naming the field for a body that is
// not such an object.
Result<Response> ReportJob(Service& service, const Request& request);
// GET /v1/jobs/{id}/logs?attempt=&rank=&stream=&offset=&wait_ms=: a chunk of a worker's output
// as text, with X-Drover-Next-Offset, X-Drover-Finished, X-Drover-Started (0: the job has no
// attempt yet; the body is then empty), X-Drover-Attempt (the attempt read) and
// X-Drover-Job-State. A long poll: with no output yet it waits up to wait_ms (at most
// kMaxLongPollMs) for some, or for the worker's end (a job not started yet: for its start).
Result<Response> JobLogs(Service& service, const Request& request);

}  // namespace drover::api
