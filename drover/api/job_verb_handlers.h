#pragma once

// Handlers of the job verbs (docs/api.md, "Job verbs"): POST /v1/jobs/{id}/hold, /release,
// /update and /requeue. Each answers with the job's summary (views.h JobSummary) as the verb left
// it; errors are the Service's (request.h maps them to statuses), plus kInvalidArgument naming
// the field of a body that is not as described.

#include "drover/api/request.h"
#include "drover/api/service.h"

namespace drover::api {

// POST /v1/jobs/{id}/hold, optional body {"reason": "..."}.
Result<Response> HoldJob(Service& service, const Request& request);
// POST /v1/jobs/{id}/release, optional body {"reason": "..."}.
Result<Response> ReleaseJob(Service& service, const Request& request);
// POST /v1/jobs/{id}/update, body {"priority": CLASS, "timeout": DURATION ("2h30m"),
// "queue": NAME, "reason": "..."}: at least one of the first three. Moving the job to another
// queue also takes `submit` there (model::Decide), as submitting to it would: kPermissionDenied.
Result<Response> UpdateJob(Service& service, const Request& request);
// POST /v1/jobs/{id}/requeue, optional body {"reason": "..."}.
Result<Response> RequeueJob(Service& service, const Request& request);

}  // namespace drover::api
