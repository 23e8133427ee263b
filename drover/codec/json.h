#pragma once

// JSON codecs for the model value types: the store's job snapshots, the HTTP API and the
// server <-> agent wire all use these, so a value has exactly one JSON spelling.
//
// Encoding conventions:
//   - keys are snake_case field names;
//   - an enum is its name in the enum's table in model/ (model::kJobStateNames
//   "pending".."skipped",
//     kTaintEffectNames "NoSchedule".., kScoringNames "binpack"..; see drover/model/names.h);
//   - quantities are integers with the unit in the key: cpu_millis, memory_bytes, timeout_ms;
//   - times are integers, milliseconds since the Unix epoch, in keys ending in "_at"
//     (0 means "not yet", as in the model);
//   - JobId is an integer ("id", "job_id", "dependencies"), NodeId a string ("node", "name");
//   - an unset std::optional is omitted;
//   - fields added after the first stored snapshots (JobSpec.pipeline and image, Requirements'
//     gpu_share_millis, mig_profile and topology_level, Preferences' node_labels and
//     topology_level, Gpu.sharing and Gpu.mig, Attempt's resumed, last_checkpoint_at and
//     preempted_by, ExitStatus.preempted, LaunchSpec.checkpoint_dir; the workflow fields:
//     JobSpec's stage, trial, admission, run_if, inputs, outputs, resume and retry.on, Job's
//     pipeline_run, released_at and outputs, Attempt's useful_work_at, progress and throughput,
//     LaunchSpec.make_dirs and value_outputs; Job's and LaunchSpec's run_as and may_run_as_root;
//     ExitStatus.output_values)
//     are omitted while they hold their default value, so a value that does not use them
//     encodes exactly as before (older agents and readers see the same JSON). Decision,
//     QueueConfig, Policy and CronSpec write every field;
//   - JobSpec.depends_on is [{"name", "condition"}] (condition: model::kDependencyConditionNames);
//     the decoder also reads the older form, a list of names;
//
// Decoding contract:
//   - the value must be an object; an absent key (or null) leaves the field at the type's default
//     value, so older snapshots and minimal API messages decode; unknown keys are ignored;
//   - a present key of the wrong type or an unknown enum name is kInvalidArgument, with a
//     message that names the field by its path, e.g.
//     "job.attempts[0].workers[1].gpus: expected an array of integers"; for an enum it lists the
//     table's choices: 'job.state: unknown job state "done" (expected one of pending, ...)';
//   - integers must be integral JSON numbers that fit the field (1.5 and 1.0 are rejected);
//   - `path` names the root in messages; callers that decode a nested document pass its path
//     ("request.body.spec").
// Decoders never throw. ToJson never throws; note that nlohmann::json::dump() throws on strings
// that are not valid UTF-8 unless called with error_handler_t::replace (see DumpJson below).

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "drover/common/result.h"
#include "drover/model/cron.h"
#include "drover/model/decision.h"
#include "drover/model/job.h"
#include "drover/model/job_spec.h"
#include "drover/model/launch.h"
#include "drover/model/node.h"
#include "drover/model/policy.h"
#include "drover/model/service.h"
#include "drover/model/usage.h"

namespace drover::codec {

nlohmann::json ToJson(const model::JobSpec& spec);
Result<model::JobSpec> JobSpecFromJson(const nlohmann::json& json, std::string_view path = "spec");

nlohmann::json ToJson(const model::ExitStatus& exit);
Result<model::ExitStatus> ExitStatusFromJson(const nlohmann::json& json,
                                             std::string_view path = "exit");

nlohmann::json ToJson(const model::Worker& worker);
Result<model::Worker> WorkerFromJson(const nlohmann::json& json, std::string_view path = "worker");

nlohmann::json ToJson(const model::Attempt& attempt);
Result<model::Attempt> AttemptFromJson(const nlohmann::json& json,
                                       std::string_view path = "attempt");

nlohmann::json ToJson(const model::Job& job);
Result<model::Job> JobFromJson(const nlohmann::json& json, std::string_view path = "job");

// {"job_id", "attempt", "from_state", "to_state", "at", "cause"}.
nlohmann::json ToJson(const model::Transition& transition);
Result<model::Transition> TransitionFromJson(const nlohmann::json& json,
                                             std::string_view path = "transition");

nlohmann::json ToJson(const model::Node& node);
Result<model::Node> NodeFromJson(const nlohmann::json& json, std::string_view path = "node");

// A node's operator state as stored: {"cordoned", "cordoned_at", "cordoned_by", "reason",
// "draining", "draining_at", "drain_deadline", "drained_at", "maintenance": {"from", "to", "by",
// "set_at", "reason"} or absent}.
nlohmann::json ToJson(const model::NodeAdmin& admin);
Result<model::NodeAdmin> NodeAdminFromJson(const nlohmann::json& json,
                                           std::string_view path = "node_admin");

// The worker key is flattened: {"job_id", "attempt", "rank", "node", "argv", ...}.
nlohmann::json ToJson(const model::LaunchSpec& launch);
Result<model::LaunchSpec> LaunchSpecFromJson(const nlohmann::json& json,
                                             std::string_view path = "launch");

// {"name", "schedule", "time_zone", "concurrency_policy", "starting_deadline_ms" (omitted when
// unset), "successful_history_limit", "failed_history_limit", "suspend", "jobs": [JobSpec]}.
nlohmann::json ToJson(const model::CronSpec& cron);
Result<model::CronSpec> CronSpecFromJson(const nlohmann::json& json,
                                         std::string_view path = "cron");

// {"name", "models", "replica": JobSpec, "min_replicas", "max_replicas", "readiness" and
// "liveness" ({"path", "interval_ms", "timeout_ms", "failure_threshold", "initial_delay_ms"},
// omitted when unset), "autoscaling": {"target_in_flight_per_replica", "scale_up_delay_ms",
// "scale_down_delay_ms", "scale_to_zero_after_ms", "saturation" ({"metric",
// "target_per_replica", "path", "interval_ms", "timeout_ms"}, omitted when unset)}}. The decoder
// checks types only; ControlPlane::PutService the rules.
nlohmann::json ToJson(const model::ProbeSpec& probe);
nlohmann::json ToJson(const model::AutoscalingSpec& autoscaling);
nlohmann::json ToJson(const model::ServiceSpec& service);
Result<model::ServiceSpec> ServiceSpecFromJson(const nlohmann::json& json,
                                               std::string_view path = "service");

// Usage (model/usage.h; docs/api.md, "Usage"). A batch is {"node", "snapshots": [{"at", "gpus":
// [{"index", "uuid", "utilization_pct", "memory_activity_pct", "memory_used_bytes", "power_mw",
// "energy_mj", "temperature_c", "sm_clock_mhz", "worker"?: KEY}], "gpu_processes": [{"gpu_index",
// "pid", "sm_pct", "memory_used_bytes", "worker"?}], "processes": [{KEY..., "processes", "cpu_ms",
// "rss_bytes", "peak_rss_bytes", "read_bytes", "iowait_ms"}]}]}; its decoder also checks the
// bounds and ranges of model::ValidateUsageBatch (kInvalidArgument naming the field), and refuses
// more than kMaxUsageSnapshots snapshots before decoding any. A Stat is {"count", "sum", "max"}.
nlohmann::json ToJson(const model::UsageBatch& batch);
Result<model::UsageBatch> UsageBatchFromJson(const nlohmann::json& json,
                                             std::string_view path = "usage");
// {"start_at", "gpu_util", "gpu_memory", "power", "cpu", "rss"} (each a Stat).
nlohmann::json ToJson(const model::UsageBucket& bucket);
Result<model::UsageBucket> UsageBucketFromJson(const nlohmann::json& json,
                                               std::string_view path = "bucket");
// {"first_at", "last_at", "gpu_util" (a Stat), "gpu_util_p50", "gpu_util_p95",
// "peak_gpu_memory_bytes", "peak_process_gpu_memory_bytes", "peak_other_gpu_processes",
// "peak_rss_bytes", "cpu_ms", "energy_joules", "read_bytes",
// "iowait_ms", "series_truncated", "activity_source", the GPM Stats, "gpus" (per GPU:
// {"uuid", "index", "util" (a Stat)})}.
nlohmann::json ToJson(const model::UsageSummary& summary);
// The store's record: {"job_id", "attempt", "summary", "buckets", "util_histogram" (101
// counts), "energy_mj" ({uuid: [first, last]}), "workers" (process samples with "at")}.
nlohmann::json ToJson(const model::AttemptUsage& usage);
Result<model::AttemptUsage> AttemptUsageFromJson(const nlohmann::json& json,
                                                 std::string_view path = "usage");

// {"job_id", "attempt", "rank", "kind", "at", "exit"}; "exit" is always written (it is the
// default ExitStatus for "started") so that every event round-trips exactly.
nlohmann::json ToJson(const model::WorkerEvent& event);
Result<model::WorkerEvent> WorkerEventFromJson(const nlohmann::json& json,
                                               std::string_view path = "event");

// One scheduling decision (GET /v1/jobs/{id}/decisions): {"job_id", "attempt", "at", "kind",
// "queue", "summary", "candidates", "nodes", "score", "reason", "victims": [{"job_id", "queue",
// "gpus", "lost_gpu_seconds", "has_checkpoint"}], "preemptor" (a job id, 0 for none),
// "reserved_start_at"}.
nlohmann::json ToJson(const model::Decision& decision);
Result<model::Decision> DecisionFromJson(const nlohmann::json& json,
                                         std::string_view path = "decision");

// {"name", "weight", "nominal", "borrowing_limit", "lending_limit", "limits", "user_limits",
// "children"}. Resource amounts are objects keyed by resource name as in model::ResourceAmounts
// ({"gpu": 4000, "gpu:h100": 2000, "cpu": 64000, "memory": 549755813888}); limits are
// {"max_running_jobs" (omitted when unset), "max_resources"}.
nlohmann::json ToJson(const model::ExecutorConfig& executor);
nlohmann::json ToJson(const model::QueueConfig& queue);
Result<model::QueueConfig> QueueConfigFromJson(const nlohmann::json& json,
                                               std::string_view path = "queue");

// {"queues", "pipeline_limits", "fair_share_half_life_ms", "aging_interval_ms", "aging_step",
// "aging_max", "scoring", "preemption", "min_run_time_ms", "preemption_grace_ms", "backfill"}.
nlohmann::json ToJson(const model::Policy& policy);
Result<model::Policy> PolicyFromJson(const nlohmann::json& json, std::string_view path = "policy");

// Compact serialization that never throws: invalid UTF-8 in strings is replaced by U+FFFD.
std::string DumpJson(const nlohmann::json& json);
// Parses `text`; kInvalidArgument with nlohmann's position message if it is not JSON, and
// "invalid JSON: nested too deeply at byte N (more than 499 levels)" for text nested more than
// kMaxNestingDepth levels (common/nesting.h), refused before nlohmann builds any of it.
Result<nlohmann::json> ParseJson(std::string_view text);

}  // namespace drover::codec
