#pragma once

// Handlers of the workflow endpoints (docs/api.md, "Pipelines" and "Cron jobs"): pipeline runs
// and cron jobs. Each answers a request that matched its route in routes.cc; errors are the
// Service's, plus those named.

#include "drover/api/request.h"
#include "drover/api/service.h"
#include "drover/api/views.h"
#include "drover/model/access.h"

namespace drover::api {

// GET /v1/pipelines: every run's PipelineSummary, oldest first.
Result<Response> ListPipelines(Service& service, const Request& request);
// GET /v1/pipelines/{id}: the run's PipelineDetail.
Result<Response> GetPipeline(Service& service, const Request& request);
// POST /v1/pipelines/{id}/cancel: the run's summary after the cancel ("pipeline cancelled by
// USER"). kFailedPrecondition for a run that has already finished.
Result<Response> CancelPipeline(Service& service, const Request& request);

// POST /v1/crons with a cron job spec as JSON: its CronView. kInvalidArgument naming the field.
Result<Response> PutCron(Service& service, const Request& request);
// GET /v1/crons: {"crons": [CronView...]} by name.
Result<Response> ListCrons(Service& service, const Request& request);
// DELETE /v1/crons/{name}: {"deleted": name}.
Result<Response> DeleteCron(Service& service, const Request& request);
// POST /v1/crons/{name}/suspend and /resume: the cron job's CronView once suspended (it starts
// no run) or resumed (from the next due time after now); idempotent. kNotFound for an unknown
// name.
Result<Response> SuspendCron(Service& service, const Request& request);
Result<Response> ResumeCron(Service& service, const Request& request);

// The API's view of a cron job: name, schedule, time_zone, concurrency_policy, suspend, owner,
// team, created_at, last_handled_at, next_run_at (null while suspended), last_run, active_runs
// and history (each run {id, state, jobs}) and spec (its jobs' commands, scripts and env values
// redacted unless `disclosure` is kFull).
nlohmann::json CronView(const CronStatus& status, Disclosure disclosure);

// A cron job as a resource (model/access.h): "cron job NAME", its owner and team, and the queue
// of its first job.
model::Resource CronResource(const store::CronRecord& cron);

}  // namespace drover::api
