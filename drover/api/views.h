#pragma once

// The JSON the HTTP API speaks (docs/api.md): errors, job views with derived timelines and
// durations, node views, explanations, queues and decisions. Pure functions: the server and the
// CLI's `-o json` share them.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "drover/codec/json_writer.h"
#include "drover/common/clock.h"
#include "drover/common/ids.h"
#include "drover/common/result.h"
#include "drover/control/explanation.h"
#include "drover/model/access.h"
#include "drover/model/decision.h"
#include "drover/model/diagnosis.h"
#include "drover/model/job.h"
#include "drover/model/metrics.h"
#include "drover/model/node.h"
#include "drover/model/progress.h"
#include "drover/model/usage.h"

namespace drover::api {

// invalid_argument -> 400, not_found -> 404, already_exists -> 409, failed_precondition -> 409,
// aborted -> 409, resource_exhausted -> 429, unavailable -> 503, deadline_exceeded -> 504,
// internal -> 500.
int HttpStatusFor(ErrorCode code);

// {"code": "invalid_argument", "message": "...", "details": ["...", ...]}
nlohmann::json ErrorBody(const Error& error);

// What a job's summary (one row of `drover ls`) shows, taken from the job at one instant: small
// to copy, so a page of them is copied under the control plane's lock and written after it is
// released (SelectJobPage, WriteJobSummary).
struct JobSummaryRow {
  JobId id;
  std::string name;
  std::string owner;
  std::string team;
  std::string queue;
  std::string priority;  // the spec's priority class
  model::JobState state = model::JobState::kPending;
  int workers = 0;
  std::int64_t gpus = 0;  // workers x GPUs per worker
  TimeMs created_at = 0;
  TimeMs finished_at = 0;
  std::string message;
  std::optional<model::JobHold> hold;
  model::JobMetrics metrics;  // with `now` bounding unfinished phases
  // A listed ready job's queue position (GET /v1/jobs); unset: none shown.
  std::optional<control::QueuePosition> position;
};

// `job`'s summary row, its metrics as of `now`, without a position.
JobSummaryRow SummaryRowOf(const model::Job& job, TimeMs now);

// The summary as a JSON object: id, name, owner, team, queue, priority, state, attempt (the current
// number), workers, gpus, created_at, finished_at, message, hold ({by, since, reason} or null),
// metrics (queue_wait_ms, startup_ms, run_time_ms, total_ms, gpu_hours), and position ({queue,
// in_queue, in_cluster}) when the row has one. Keys in sorted order, so the bytes are DumpJson's
// of JobSummary's tree.
void WriteJobSummary(codec::JsonWriter& out, const JobSummaryRow& row);

// The same object as a tree (for the answers that add to it, e.g. JobDetail): parsed from
// WriteJobSummary's text, so both spell a summary alike.
nlohmann::json JobSummary(const model::Job& job, TimeMs now);

// How much of a job a reply shows its caller (model::Decide's details verb, docs/security.md):
// everything, or everything but the spec's command, script and env values (each replaced by
// kRedacted) and the job's outputs (absent). Summaries show neither in any case.
enum class Disclosure { kFull, kRedacted };
inline constexpr std::string_view kRedacted = "<redacted>";

// kFull when `caller` may read the details of `resource` under `policy` (model::Visible with
// the details verb), else kRedacted.
Disclosure DisclosureOf(const model::Identity& caller, const model::Resource& resource,
                        const model::Policy& policy);

// A JSON array of `view(record, disclosure)` for each of `records` whose resource
// (`resource_of(record)`) `caller` may view under `policy`, in order, each disclosed as far as
// DisclosureOf allows: the list endpoints of records with views of their own (services, crons).
template <typename Records, typename ResourceOfRecord, typename ViewOfRecord>
nlohmann::json VisibleViews(const model::Identity& caller, const model::Policy& policy,
                            const Records& records, ResourceOfRecord resource_of,
                            ViewOfRecord view) {
  nlohmann::json views = nlohmann::json::array();
  for (const auto& record : records) {
    const model::Resource resource = resource_of(record);
    if (!model::Visible(caller, model::Verb::kView, resource, policy)) continue;
    views.push_back(view(record, DisclosureOf(caller, resource, policy)));
  }
  return views;
}

// Replaces the command's arguments, the script and the env values of `spec` (a job spec's JSON,
// codec::ToJson) by kRedacted.
void RedactSpec(nlohmann::json& spec);

// `drover get`: the summary plus the spec, dependencies, the current attempt's timeline
// (created, ready, dequeued, admitted, placed, workers_started, running, useful_work, finished),
// every attempt with its workers and placement, its GoodputView fields and its cost (`cause`,
// `gpu_seconds`, `lost_gpu_seconds`: model::ComputeAttemptCosts), the job's `split`
// (SplitView of model::ComputeSplit), `outputs` (name -> published path or value),
// `pipeline_run` (only when the job belongs to one), `run_as` and `may_run_as_root` (only when
// set: docs/security.md, "Jobs run as their users") and the stored transitions, as `disclosure`
// allows.
nlohmann::json JobDetail(const model::Job& job, const std::vector<model::Transition>& transitions,
                         TimeMs now, Disclosure disclosure);

// What the job reported about an attempt (`drover report`): {"useful_work_at": ms, 0 = not
// reported, "progress": a number in [0, 1], "throughput": its latest rate and "throughput_unit" its
// unit ("samples/s"); null = not reported}.
nlohmann::json GoodputView(const model::Attempt& attempt);

// {"throughput", "unit", "work_unit", "per_gpu_hour", "per_joule"} (model::WorkRates; an unset
// rate is null), or null without a reported throughput.
nlohmann::json WorkRatesView(const std::optional<model::WorkRates>& rates);

// The phases of a lifecycle split in the order they happen; SplitView names each NAME_ms.
struct SplitPhase {
  std::string_view name;
  DurationMs model::LifecycleSplit::*field;
};
inline constexpr SplitPhase kSplitPhases[] = {
    {"dependencies", &model::LifecycleSplit::dependencies},
    {"inputs", &model::LifecycleSplit::inputs},
    {"queue", &model::LifecycleSplit::queue},
    {"admission", &model::LifecycleSplit::admission},
    {"placement", &model::LifecycleSplit::placement},
    {"startup", &model::LifecycleSplit::startup},
    {"until_useful", &model::LifecycleSplit::until_useful},
    {"run", &model::LifecycleSplit::run},
    {"backoff", &model::LifecycleSplit::backoff},
    {"publishing", &model::LifecycleSplit::publishing},
};

// A lifecycle split in milliseconds: dependencies_ms, inputs_ms, queue_ms, admission_ms,
// placement_ms, startup_ms, until_useful_ms, run_ms, backoff_ms, publishing_ms (they add up to
// split.Total()).
nlohmann::json SplitView(const model::LifecycleSplit& split);

// GPU-time accounting of a set of jobs: jobs, succeeded, gpu_hours, gpu_hours_per_result,
// retry_lost_gpu_hours, preemption_lost_gpu_hours and split (SplitView, summed over the jobs).
nlohmann::json GoodputTotals(const model::Goodput& goodput);

// GET /v1/goodput: {"by", "since", "groups": [{"name", GoodputTotals...}] by name, "total":
// GoodputTotals} over the jobs created at or after `since`, grouped by `by` (queue, team or
// owner; anything else is kInvalidArgument naming the parameter).
Result<nlohmann::json> GoodputReport(const std::vector<model::Job>& jobs, std::string_view by,
                                     TimeMs since, TimeMs now);

// One row of GET /v1/pipelines for the jobs of one pipeline run (in id order, not empty): id
// (the run), name, owner, queue, state (workflow::RollUp), created_at, finished_at, wall_ms
// (created until finished, or `now`), stages_total, stages_done (finished stages) and jobs
// (counts by job state).
nlohmann::json PipelineSummary(const std::vector<model::Job>& run, TimeMs now);

// GET /v1/pipelines/{id}: the summary plus `stages` (name, state, depends_on [{stage,
// condition}], if, started_at, finished_at, queue_wait_ms, run_time_ms and jobs with their
// trial, times and outputs), `split` (model::ComputePipelineSplit; its phases add up to
// wall_ms) and `goodput` (GoodputTotals over the run's jobs); the jobs' outputs only with
// Disclosure::kFull.
nlohmann::json PipelineDetail(const std::vector<model::Job>& run, TimeMs now,
                              Disclosure disclosure);

// A node with its capacity and what is free now.
nlohmann::json NodeView(const model::Node& node, const model::Resources& free,
                        const std::vector<int>& free_gpus);

// GET /v1/jobs/{id}/explain: id, state, layer, message, estimated_start (ms, or null when
// unknown or not waiting) and, when the placement layer holds the job, placement.
nlohmann::json ExplanationView(JobId id, const control::Explanation& explanation);
// {"queue", "in_queue", "in_cluster"}: a waiting job's place (docs/api.md, "Queue positions").
nlohmann::json PositionView(const control::QueuePosition& position);

// One row of GET /v1/queues: name, path, depth, leaf, weight, nominal, usage, borrowed, lent
// (resource maps as in model::ResourceAmounts: "cpu" millicores, "memory" bytes, "gpu" and
// "gpu:<model>" milli-GPUs), gpus (the same four in whole GPUs as numbers, nominal null when
// the queue sets no GPU quota), share, running_jobs, pending_jobs.
nlohmann::json QueueView(const control::QueueReport& report);

// GET /v1/jobs/{id}/decisions: {"decisions": [codec::ToJson(decision), ...]}.
nlohmann::json DecisionsView(const std::vector<model::Decision>& decisions);
// [{"attempt", "summary"}] (codec's UsageSummary): the usage of each sampled attempt.
nlohmann::json UsageSummariesView(const std::vector<model::AttemptUsage>& usage);
// [{"kind": "allocated_idle", "evidence": "...", "threshold": "..."}, ...]
nlohmann::json FindingsView(const std::vector<model::Finding>& findings);

}  // namespace drover::api
