#pragma once

// The JSON the HTTP API speaks (docs/api.md): errors, job views with derived timelines and
// durations, node views, explanations, queues and decisions. Pure functions: the server and the
// CLI's `-o json` share them.

#include <nlohmann/json.hpp>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/ids.h"
#include "drover/common/result.h"
#include "drover/control/controller.h"
#include "drover/model/decision.h"
#include "drover/model/job.h"
#include "drover/model/node.h"

namespace drover::api {

// invalid_argument -> 400, not_found -> 404, already_exists -> 409, failed_precondition -> 409,
// aborted -> 409, resource_exhausted -> 429, unavailable -> 503, deadline_exceeded -> 504,
// internal -> 500.
int HttpStatusFor(ErrorCode code);

// {"code": "invalid_argument", "message": "...", "details": ["...", ...]}
nlohmann::json ErrorBody(const Error& error);

// One row of `drover ls`: id, name, owner, team, queue, priority, state, attempt (the current
// number), workers, gpus, created_at, finished_at, message, and metrics (queue_wait_ms, startup_ms,
// run_time_ms, total_ms, gpu_hours), with `now` bounding unfinished phases.
nlohmann::json JobSummary(const model::Job& job, TimeMs now);

// `drover get`: the summary plus the spec, dependencies, the current attempt's timeline
// (created, ready, dequeued, admitted, placed, workers_started, running, useful_work, finished),
// every attempt with its workers and placement and its GoodputView fields, and the stored
// transitions.
nlohmann::json JobDetail(const model::Job& job, const std::vector<model::Transition>& transitions,
                         TimeMs now);

// What the job reported about an attempt (`drover report`): {"useful_work_at": ms, 0 = not
// reported, "progress": a number in [0, 1], null = not reported}.
nlohmann::json GoodputView(const model::Attempt& attempt);

// A node with its capacity and what is free now.
nlohmann::json NodeView(const model::Node& node, const model::Resources& free,
                        const std::vector<int>& free_gpus);

// GET /v1/jobs/{id}/explain: id, state, layer, message, estimated_start (ms, or null when
// unknown or not waiting) and, when the placement layer holds the job, placement.
nlohmann::json ExplanationView(JobId id, const control::Explanation& explanation);

// One row of GET /v1/queues: name, path, depth, leaf, weight, nominal, usage, borrowed, lent
// (resource maps as in model::ResourceAmounts: "cpu" millicores, "memory" bytes, "gpu" and
// "gpu:<model>" milli-GPUs), gpus (the same four in whole GPUs as numbers, nominal null when
// the queue sets no GPU quota), share, running_jobs, pending_jobs.
nlohmann::json QueueView(const control::QueueReport& report);

// GET /v1/jobs/{id}/decisions: {"decisions": [codec::ToJson(decision), ...]}.
nlohmann::json DecisionsView(const std::vector<model::Decision>& decisions);

}  // namespace drover::api
