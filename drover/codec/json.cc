// The JSON codecs of json.h: one Decode and one ToJson per model type (about fifty), with the
// private helpers they share (Field, DecodeEnum over the model's name tables, Array). Its size is
// earned: the codecs are one flat list, kept in one file so those helpers stay private and each
// type's two directions are found in one place.

#include "drover/codec/json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "drover/common/nesting.h"
#include "drover/model/outputs.h"

namespace drover::codec {
namespace {

using nlohmann::json;
// The public encoders, visible beside the private ones below (which would otherwise hide them).
using ::drover::codec::ToJson;

// ---------------------------------------------------------------------------------------------
// Decoding. Every Decode overload reads `j` (known to be present and not null) into `*out`, or
// returns kInvalidArgument naming `path`. Overloads are declared up front so that the templates
// below find them whatever the element type.

tl::unexpected<Error> Expected(const std::string& path, std::string_view what) {
  return InvalidArgument(fmt::format("{}: expected {}", path, what));
}

Status Decode(const json& j, const std::string& path, std::string* out);
Status Decode(const json& j, const std::string& path, bool* out);
Status Decode(const json& j, const std::string& path, double* out);
Status Decode(const json& j, const std::string& path, std::int64_t* out);
Status Decode(const json& j, const std::string& path, int* out);
Status Decode(const json& j, const std::string& path, JobId* out);
Status Decode(const json& j, const std::string& path, NodeId* out);
Status Decode(const json& j, const std::string& path, std::vector<std::string>* out);
Status Decode(const json& j, const std::string& path, std::vector<int>* out);
Status Decode(const json& j, const std::string& path, std::vector<JobId>* out);
Status Decode(const json& j, const std::string& path, std::map<std::string, std::string>* out);
Status Decode(const json& j, const std::string& path, model::ResourceAmounts* out);
Status Decode(const json& j, const std::string& path, model::JobState* out);
Status Decode(const json& j, const std::string& path, model::WorkerState* out);
Status Decode(const json& j, const std::string& path, model::Disruption* out);
Status Decode(const json& j, const std::string& path, model::TaintEffect* out);
Status Decode(const json& j, const std::string& path, model::Toleration::Operator* out);
Status Decode(const json& j, const std::string& path, model::WorkerEvent::Kind* out);
Status Decode(const json& j, const std::string& path, model::GpuSharing* out);
Status Decode(const json& j, const std::string& path, model::Decision::Kind* out);
Status Decode(const json& j, const std::string& path, model::Scoring* out);
Status Decode(const json& j, const std::string& path, model::QueueOrder* out);
Status Decode(const json& j, const std::string& path, model::Resources* out);
Status Decode(const json& j, const std::string& path, model::Taint* out);
Status Decode(const json& j, const std::string& path, model::Toleration* out);
Status Decode(const json& j, const std::string& path, model::Requirements* out);
Status Decode(const json& j, const std::string& path, model::LabelPreference* out);
Status Decode(const json& j, const std::string& path, model::Preferences* out);
Status Decode(const json& j, const std::string& path, model::RetryPolicy* out);
Status Decode(const json& j, const std::string& path, model::FailureKind* out);
Status Decode(const json& j, const std::string& path, model::DependencyCondition* out);
Status Decode(const json& j, const std::string& path, model::Dependency* out);
Status Decode(const json& j, const std::string& path, model::InputSpec* out);
Status Decode(const json& j, const std::string& path, model::OutputSpec* out);
Status Decode(const json& j, const std::string& path, model::TrialSpec* out);
Status Decode(const json& j, const std::string& path, model::PipelineAdmission* out);
Status Decode(const json& j, const std::string& path, model::ConcurrencyPolicy* out);
Status Decode(const json& j, const std::string& path, model::CronSpec* out);
Status Decode(const json& j, const std::string& path, model::ProbeSpec* out);
Status Decode(const json& j, const std::string& path, model::SaturationSpec* out);
Status Decode(const json& j, const std::string& path, model::AutoscalingSpec* out);
Status Decode(const json& j, const std::string& path, model::ServiceSpec* out);
Status Decode(const json& j, const std::string& path, model::JobSpec* out);
Status Decode(const json& j, const std::string& path, model::ExitStatus* out);
Status Decode(const json& j, const std::string& path, model::Worker* out);
Status Decode(const json& j, const std::string& path, model::Attempt* out);
Status Decode(const json& j, const std::string& path, model::Job* out);
Status Decode(const json& j, const std::string& path, model::Transition* out);
Status Decode(const json& j, const std::string& path, model::JobHold* out);
Status Decode(const json& j, const std::string& path, model::MigSlots* out);
Status Decode(const json& j, const std::string& path, model::Gpu* out);
Status Decode(const json& j, const std::string& path, model::MaintenanceWindow* out);
Status Decode(const json& j, const std::string& path, model::NodeAdmin* out);
Status Decode(const json& j, const std::string& path, model::Node* out);
Status Decode(const json& j, const std::string& path, model::LaunchSpec* out);
Status Decode(const json& j, const std::string& path, model::WorkerEvent* out);
Status Decode(const json& j, const std::string& path, model::Victim* out);
Status Decode(const json& j, const std::string& path, model::Decision* out);
Status Decode(const json& j, const std::string& path, model::Limits* out);
Status Decode(const json& j, const std::string& path, model::ExecutorKind* out);
Status Decode(const json& j, const std::string& path, model::ExecutorConfig* out);
Status Decode(const json& j, const std::string& path, model::QueueConfig* out);
Status Decode(const json& j, const std::string& path, model::Accounts* out);
Status Decode(const json& j, const std::string& path, model::Policy* out);
Status Decode(const json& j, const std::string& path, model::WorkerKey* out);
Status Decode(const json& j, const std::string& path, model::GpmSample* out);
Status Decode(const json& j, const std::string& path, model::GpuSample* out);
Status Decode(const json& j, const std::string& path, model::GpuProcessSample* out);
Status Decode(const json& j, const std::string& path, model::ProcessSample* out);
Status Decode(const json& j, const std::string& path, model::UsageSnapshot* out);
Status Decode(const json& j, const std::string& path, model::UsageBatch* out);
Status Decode(const json& j, const std::string& path, model::Stat* out);
Status Decode(const json& j, const std::string& path, model::UsageBucket* out);
Status Decode(const json& j, const std::string& path, model::GpuUsage* out);
Status Decode(const json& j, const std::string& path, model::UsageSummary* out);
Status Decode(const json& j, const std::string& path, model::AttemptUsage* out);

// Arrays of objects: element errors name the element ("job.attempts[2].number").
template <typename T>
Status Decode(const json& j, const std::string& path, std::vector<T>* out) {
  if (!j.is_array()) return Expected(path, "an array");
  out->clear();
  out->reserve(j.size());
  for (std::size_t i = 0; i < j.size(); ++i) {
    T element{};
    DROVER_RETURN_IF_ERROR(Decode(j[i], fmt::format("{}[{}]", path, i), &element));
    out->push_back(std::move(element));
  }
  return OkStatus();
}

template <typename T>
Status Decode(const json& j, const std::string& path, std::optional<T>* out) {
  T value{};
  DROVER_RETURN_IF_ERROR(Decode(j, path, &value));
  *out = std::move(value);
  return OkStatus();
}

// Reads obj[key] into *out when present and not null; otherwise leaves *out unchanged.
template <typename T>
Status Field(const json& obj, const std::string& path, const char* key, T* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return OkStatus();
  return Decode(*it, path + "." + key, out);
}

Status RequireObject(const json& j, const std::string& path) {
  if (!j.is_object()) return Expected(path, "an object");
  return OkStatus();
}

// Reads an integral JSON number that fits int64; floats (even 1.0) are rejected.
std::optional<std::int64_t> AsInt64(const json& j) {
  if (!j.is_number_integer()) return std::nullopt;
  if (j.is_number_unsigned()) {
    const auto value = j.get<std::uint64_t>();
    if (value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return std::nullopt;
    }
    return static_cast<std::int64_t>(value);
  }
  return j.get<std::int64_t>();
}

std::optional<int> AsInt(const json& j) {
  const auto value = AsInt64(j);
  if (!value || *value < std::numeric_limits<int>::min() ||
      *value > std::numeric_limits<int>::max()) {
    return std::nullopt;
  }
  return static_cast<int>(*value);
}

Status Decode(const json& j, const std::string& path, std::string* out) {
  if (!j.is_string()) return Expected(path, "a string");
  *out = j.get_ref<const std::string&>();
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, bool* out) {
  if (!j.is_boolean()) return Expected(path, "a boolean");
  *out = j.get<bool>();
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, double* out) {
  if (!j.is_number()) return Expected(path, "a number");
  *out = j.get<double>();
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, std::int64_t* out) {
  const auto value = AsInt64(j);
  if (!value) return Expected(path, "a 64-bit integer");
  *out = *value;
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, int* out) {
  const auto value = AsInt(j);
  if (!value) return Expected(path, "a 32-bit integer");
  *out = *value;
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, JobId* out) {
  const auto value = AsInt64(j);
  if (!value) return Expected(path, "an integer job id");
  *out = JobId(*value);
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, NodeId* out) {
  if (!j.is_string()) return Expected(path, "a string node name");
  *out = NodeId(j.get<std::string>());
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, std::vector<std::string>* out) {
  if (!j.is_array()) return Expected(path, "an array of strings");
  out->clear();
  out->reserve(j.size());
  for (const json& element : j) {
    if (!element.is_string()) return Expected(path, "an array of strings");
    out->push_back(element.get<std::string>());
  }
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, std::vector<int>* out) {
  if (!j.is_array()) return Expected(path, "an array of integers");
  out->clear();
  out->reserve(j.size());
  for (const json& element : j) {
    const auto value = AsInt(element);
    if (!value) return Expected(path, "an array of integers");
    out->push_back(*value);
  }
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, std::vector<JobId>* out) {
  if (!j.is_array()) return Expected(path, "an array of integer job ids");
  out->clear();
  out->reserve(j.size());
  for (const json& element : j) {
    const auto value = AsInt64(element);
    if (!value) return Expected(path, "an array of integer job ids");
    out->push_back(JobId(*value));
  }
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, std::map<std::string, std::string>* out) {
  if (!j.is_object()) return Expected(path, "an object of strings");
  out->clear();
  for (const auto& [key, value] : j.items()) {
    if (!value.is_string()) return Expected(path + "." + key, "a string");
    out->emplace(key, value.get<std::string>());
  }
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::ResourceAmounts* out) {
  if (!j.is_object()) return Expected(path, "an object of integers");
  out->clear();
  for (const auto& [key, value] : j.items()) {
    const auto amount = AsInt64(value);
    if (!amount) return Expected(path + "." + key, "a 64-bit integer");
    out->emplace(key, *amount);
  }
  return OkStatus();
}

// Enums: the name must be a string and one of `names` (the enum's table in model/).
template <typename E, std::size_t N>
Status DecodeEnum(const json& j, const std::string& path, std::string_view what,
                  const model::NameTable<E, N>& names, E* out) {
  if (!j.is_string())
    return Expected(path, fmt::format("a {} name ({})", what, names.ChoiceList()));
  const auto& name = j.get_ref<const std::string&>();
  std::optional<E> value = names.Parse(name);
  if (!value) {
    return InvalidArgument(fmt::format("{}: unknown {} \"{}\" (expected one of {})", path, what,
                                       name, names.ChoiceList()));
  }
  *out = *value;
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::JobState* out) {
  return DecodeEnum(j, path, "job state", model::kJobStateNames, out);
}

Status Decode(const json& j, const std::string& path, model::WorkerState* out) {
  return DecodeEnum(j, path, "worker state", model::kWorkerStateNames, out);
}

Status Decode(const json& j, const std::string& path, model::Disruption* out) {
  return DecodeEnum(j, path, "disruption", model::kDisruptionNames, out);
}

Status Decode(const json& j, const std::string& path, model::TaintEffect* out) {
  return DecodeEnum(j, path, "taint effect", model::kTaintEffectNames, out);
}

Status Decode(const json& j, const std::string& path, model::Toleration::Operator* out) {
  return DecodeEnum(j, path, "toleration operator", model::kTolerationOperatorNames, out);
}

Status Decode(const json& j, const std::string& path, model::WorkerEvent::Kind* out) {
  return DecodeEnum(j, path, "worker event kind", model::kWorkerEventKindNames, out);
}

Status Decode(const json& j, const std::string& path, model::FailureKind* out) {
  return DecodeEnum(j, path, "failure kind", model::kFailureKindNames, out);
}

Status Decode(const json& j, const std::string& path, model::DependencyCondition* out) {
  return DecodeEnum(j, path, "dependency condition", model::kDependencyConditionNames, out);
}

Status Decode(const json& j, const std::string& path, model::PipelineAdmission* out) {
  return DecodeEnum(j, path, "pipeline admission", model::kPipelineAdmissionNames, out);
}

Status Decode(const json& j, const std::string& path, model::ConcurrencyPolicy* out) {
  return DecodeEnum(j, path, "concurrency policy", model::kConcurrencyPolicyNames, out);
}

Status Decode(const json& j, const std::string& path, model::GpuSharing* out) {
  return DecodeEnum(j, path, "GPU sharing mode", model::kGpuSharingNames, out);
}

Status Decode(const json& j, const std::string& path, model::Decision::Kind* out) {
  return DecodeEnum(j, path, "decision kind", model::kDecisionKindNames, out);
}

Status Decode(const json& j, const std::string& path, model::Scoring* out) {
  return DecodeEnum(j, path, "scoring", model::kScoringNames, out);
}

Status Decode(const json& j, const std::string& path, model::QueueOrder* out) {
  return DecodeEnum(j, path, "queue order", model::kQueueOrderNames, out);
}

Status Decode(const json& j, const std::string& path, model::Resources* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "cpu_millis", &out->cpu_millis));
  DROVER_RETURN_IF_ERROR(Field(j, path, "memory_bytes", &out->memory_bytes));
  DROVER_RETURN_IF_ERROR(Field(j, path, "gpus", &out->gpus));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::Taint* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "key", &out->key));
  DROVER_RETURN_IF_ERROR(Field(j, path, "value", &out->value));
  DROVER_RETURN_IF_ERROR(Field(j, path, "effect", &out->effect));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::Toleration* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "key", &out->key));
  DROVER_RETURN_IF_ERROR(Field(j, path, "operator", &out->op));
  DROVER_RETURN_IF_ERROR(Field(j, path, "value", &out->value));
  DROVER_RETURN_IF_ERROR(Field(j, path, "effect", &out->effect));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::Requirements* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "per_worker", &out->per_worker));
  DROVER_RETURN_IF_ERROR(Field(j, path, "gpu_memory_bytes", &out->gpu_memory_bytes));
  DROVER_RETURN_IF_ERROR(Field(j, path, "gpu_models", &out->gpu_models));
  DROVER_RETURN_IF_ERROR(Field(j, path, "node_selector", &out->node_selector));
  DROVER_RETURN_IF_ERROR(Field(j, path, "tolerations", &out->tolerations));
  DROVER_RETURN_IF_ERROR(Field(j, path, "same_node", &out->same_node));
  DROVER_RETURN_IF_ERROR(Field(j, path, "gpu_share_millis", &out->gpu_share_millis));
  DROVER_RETURN_IF_ERROR(Field(j, path, "mig_profile", &out->mig_profile));
  DROVER_RETURN_IF_ERROR(Field(j, path, "topology_level", &out->topology_level));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::LabelPreference* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "key", &out->key));
  DROVER_RETURN_IF_ERROR(Field(j, path, "value", &out->value));
  DROVER_RETURN_IF_ERROR(Field(j, path, "weight", &out->weight));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::Preferences* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "node_labels", &out->node_labels));
  DROVER_RETURN_IF_ERROR(Field(j, path, "topology_level", &out->topology_level));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::RetryPolicy* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "max_attempts", &out->max_attempts));
  DROVER_RETURN_IF_ERROR(Field(j, path, "backoff_ms", &out->backoff_ms));
  DROVER_RETURN_IF_ERROR(Field(j, path, "on", &out->on));
  return OkStatus();
}

// {"name", "condition"}, or a bare name (snapshots written before conditions existed).
Status Decode(const json& j, const std::string& path, model::Dependency* out) {
  if (j.is_string()) return Decode(j, path, &out->name);
  if (!j.is_object()) return Expected(path, "a dependency object or a job name");
  DROVER_RETURN_IF_ERROR(Field(j, path, "name", &out->name));
  DROVER_RETURN_IF_ERROR(Field(j, path, "condition", &out->condition));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::InputSpec* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "path", &out->path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "from_stage", &out->from_stage));
  DROVER_RETURN_IF_ERROR(Field(j, path, "from_output", &out->from_output));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::OutputSpec* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "name", &out->name));
  DROVER_RETURN_IF_ERROR(Field(j, path, "path", &out->path));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::TrialSpec* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "index", &out->index));
  DROVER_RETURN_IF_ERROR(Field(j, path, "count", &out->count));
  DROVER_RETURN_IF_ERROR(Field(j, path, "params", &out->params));
  DROVER_RETURN_IF_ERROR(Field(j, path, "concurrency", &out->concurrency));
  DROVER_RETURN_IF_ERROR(Field(j, path, "objective", &out->objective));
  DROVER_RETURN_IF_ERROR(Field(j, path, "maximize", &out->maximize));
  DROVER_RETURN_IF_ERROR(Field(j, path, "stop_at", &out->stop_at));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::JobSpec* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "name", &out->name));
  DROVER_RETURN_IF_ERROR(Field(j, path, "owner", &out->owner));
  DROVER_RETURN_IF_ERROR(Field(j, path, "team", &out->team));
  DROVER_RETURN_IF_ERROR(Field(j, path, "queue", &out->queue));
  DROVER_RETURN_IF_ERROR(Field(j, path, "priority_class", &out->priority_class));
  DROVER_RETURN_IF_ERROR(Field(j, path, "pipeline", &out->pipeline));
  DROVER_RETURN_IF_ERROR(Field(j, path, "stage", &out->stage));
  DROVER_RETURN_IF_ERROR(Field(j, path, "trial", &out->trial));
  DROVER_RETURN_IF_ERROR(Field(j, path, "admission", &out->admission));
  DROVER_RETURN_IF_ERROR(Field(j, path, "command", &out->command));
  DROVER_RETURN_IF_ERROR(Field(j, path, "script", &out->script));
  DROVER_RETURN_IF_ERROR(Field(j, path, "working_dir", &out->working_dir));
  DROVER_RETURN_IF_ERROR(Field(j, path, "image", &out->image));
  DROVER_RETURN_IF_ERROR(Field(j, path, "env", &out->env));
  DROVER_RETURN_IF_ERROR(Field(j, path, "secret_env", &out->secret_env));
  DROVER_RETURN_IF_ERROR(Field(j, path, "requirements", &out->requirements));
  DROVER_RETURN_IF_ERROR(Field(j, path, "preferences", &out->preferences));
  DROVER_RETURN_IF_ERROR(Field(j, path, "workers", &out->workers));
  DROVER_RETURN_IF_ERROR(Field(j, path, "min_workers", &out->min_workers));
  DROVER_RETURN_IF_ERROR(Field(j, path, "depends_on", &out->depends_on));
  DROVER_RETURN_IF_ERROR(Field(j, path, "run_if", &out->run_if));
  DROVER_RETURN_IF_ERROR(Field(j, path, "inputs", &out->inputs));
  DROVER_RETURN_IF_ERROR(Field(j, path, "outputs", &out->outputs));
  DROVER_RETURN_IF_ERROR(Field(j, path, "timeout_ms", &out->timeout));
  DROVER_RETURN_IF_ERROR(Field(j, path, "retry", &out->retry));
  DROVER_RETURN_IF_ERROR(Field(j, path, "checkpoint_dir", &out->checkpoint_dir));
  DROVER_RETURN_IF_ERROR(Field(j, path, "resume", &out->resume));
  DROVER_RETURN_IF_ERROR(Field(j, path, "interruptible", &out->interruptible));
  DROVER_RETURN_IF_ERROR(Field(j, path, "hold_infeasible", &out->hold_infeasible));
  DROVER_RETURN_IF_ERROR(Field(j, path, "service", &out->service));
  DROVER_RETURN_IF_ERROR(Field(j, path, "service_generation", &out->service_generation));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::ExitStatus* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "exit_code", &out->exit_code));
  DROVER_RETURN_IF_ERROR(Field(j, path, "signal", &out->signal));
  DROVER_RETURN_IF_ERROR(Field(j, path, "timed_out", &out->timed_out));
  DROVER_RETURN_IF_ERROR(Field(j, path, "cancelled", &out->cancelled));
  DROVER_RETURN_IF_ERROR(Field(j, path, "preempted", &out->preempted));
  DROVER_RETURN_IF_ERROR(Field(j, path, "node_lost", &out->node_lost));
  DROVER_RETURN_IF_ERROR(Field(j, path, "oom_killed", &out->oom_killed));
  DROVER_RETURN_IF_ERROR(Field(j, path, "message", &out->message));
  DROVER_RETURN_IF_ERROR(Field(j, path, "output_values", &out->output_values));
  // What an agent reports: values as a node reads them (model/outputs.h), under output names.
  for (const auto& [name, value] : out->output_values) {
    const std::string at = path + ".output_values";
    if (name.empty() || name.size() > model::kMaxOutputNameBytes ||
        name.find('/') != std::string::npos) {
      return Expected(
          at, fmt::format("output names of 1 to {} bytes without '/'", model::kMaxOutputNameBytes));
    }
    if (value.size() > model::kMaxOutputValueBytes || value.find('\n') != std::string::npos) {
      return Expected(at + "." + name,
                      fmt::format("one line of at most {} bytes", model::kMaxOutputValueBytes));
    }
  }
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::Worker* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "rank", &out->rank));
  DROVER_RETURN_IF_ERROR(Field(j, path, "node", &out->node));
  DROVER_RETURN_IF_ERROR(Field(j, path, "gpus", &out->gpus));
  DROVER_RETURN_IF_ERROR(Field(j, path, "host", &out->host));
  DROVER_RETURN_IF_ERROR(Field(j, path, "state", &out->state));
  DROVER_RETURN_IF_ERROR(Field(j, path, "launched_at", &out->launched_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "started_at", &out->started_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "finished_at", &out->finished_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "exit", &out->exit));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::Attempt* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "number", &out->number));
  DROVER_RETURN_IF_ERROR(Field(j, path, "ready_at", &out->ready_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "dequeued_at", &out->dequeued_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "admitted_at", &out->admitted_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "placed_at", &out->placed_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "workers_started_at", &out->workers_started_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "running_at", &out->running_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "finished_at", &out->finished_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "outcome", &out->outcome));
  DROVER_RETURN_IF_ERROR(Field(j, path, "outcome_reason", &out->outcome_reason));
  DROVER_RETURN_IF_ERROR(Field(j, path, "resumed", &out->resumed));
  DROVER_RETURN_IF_ERROR(Field(j, path, "last_checkpoint_at", &out->last_checkpoint_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "preempted_by", &out->preempted_by));
  DROVER_RETURN_IF_ERROR(Field(j, path, "requeued_by", &out->requeued_by));
  DROVER_RETURN_IF_ERROR(Field(j, path, "disruption", &out->disruption));
  DROVER_RETURN_IF_ERROR(Field(j, path, "useful_work_at", &out->useful_work_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "progress", &out->progress));
  DROVER_RETURN_IF_ERROR(Field(j, path, "throughput", &out->throughput));
  DROVER_RETURN_IF_ERROR(Field(j, path, "throughput_unit", &out->throughput_unit));
  DROVER_RETURN_IF_ERROR(Field(j, path, "executor", &out->executor));
  DROVER_RETURN_IF_ERROR(Field(j, path, "external_id", &out->external_id));
  DROVER_RETURN_IF_ERROR(Field(j, path, "external_reason", &out->external_reason));
  DROVER_RETURN_IF_ERROR(Field(j, path, "external_submitted_at", &out->external_submitted_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "external_eligible_at", &out->external_eligible_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "workers", &out->workers));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::Job* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "id", &out->id));
  DROVER_RETURN_IF_ERROR(Field(j, path, "spec", &out->spec));
  DROVER_RETURN_IF_ERROR(Field(j, path, "dependencies", &out->dependencies));
  DROVER_RETURN_IF_ERROR(Field(j, path, "submission_key", &out->submission_key));
  DROVER_RETURN_IF_ERROR(Field(j, path, "submission_hash", &out->submission_hash));
  DROVER_RETURN_IF_ERROR(Field(j, path, "run_as", &out->run_as));
  DROVER_RETURN_IF_ERROR(Field(j, path, "may_run_as_root", &out->may_run_as_root));
  DROVER_RETURN_IF_ERROR(Field(j, path, "pipeline_run", &out->pipeline_run));
  DROVER_RETURN_IF_ERROR(Field(j, path, "released_at", &out->released_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "outputs", &out->outputs));
  DROVER_RETURN_IF_ERROR(Field(j, path, "state", &out->state));
  DROVER_RETURN_IF_ERROR(Field(j, path, "created_at", &out->created_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "finished_at", &out->finished_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "not_before_at", &out->not_before));
  DROVER_RETURN_IF_ERROR(Field(j, path, "status_message", &out->status_message));
  DROVER_RETURN_IF_ERROR(Field(j, path, "hold", &out->hold));
  DROVER_RETURN_IF_ERROR(Field(j, path, "attempts", &out->attempts));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::Transition* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "job_id", &out->job));
  DROVER_RETURN_IF_ERROR(Field(j, path, "attempt", &out->attempt));
  DROVER_RETURN_IF_ERROR(Field(j, path, "from_state", &out->from));
  DROVER_RETURN_IF_ERROR(Field(j, path, "to_state", &out->to));
  DROVER_RETURN_IF_ERROR(Field(j, path, "at", &out->at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "cause", &out->cause));
  DROVER_RETURN_IF_ERROR(Field(j, path, "actor", &out->actor));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::JobHold* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "by", &out->by));
  DROVER_RETURN_IF_ERROR(Field(j, path, "since", &out->since));
  DROVER_RETURN_IF_ERROR(Field(j, path, "reason", &out->reason));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::MigSlots* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "profile", &out->profile));
  DROVER_RETURN_IF_ERROR(Field(j, path, "count", &out->count));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::Gpu* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "index", &out->index));
  DROVER_RETURN_IF_ERROR(Field(j, path, "uuid", &out->uuid));
  DROVER_RETURN_IF_ERROR(Field(j, path, "model", &out->model));
  DROVER_RETURN_IF_ERROR(Field(j, path, "memory_bytes", &out->memory_bytes));
  DROVER_RETURN_IF_ERROR(Field(j, path, "topology_group", &out->topology_group));
  DROVER_RETURN_IF_ERROR(Field(j, path, "sharing", &out->sharing));
  DROVER_RETURN_IF_ERROR(Field(j, path, "mig", &out->mig));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::Node* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "name", &out->name));
  DROVER_RETURN_IF_ERROR(Field(j, path, "labels", &out->labels));
  DROVER_RETURN_IF_ERROR(Field(j, path, "taints", &out->taints));
  DROVER_RETURN_IF_ERROR(Field(j, path, "cpu_millis", &out->cpu_millis));
  DROVER_RETURN_IF_ERROR(Field(j, path, "memory_bytes", &out->memory_bytes));
  DROVER_RETURN_IF_ERROR(Field(j, path, "gpus", &out->gpus));
  DROVER_RETURN_IF_ERROR(Field(j, path, "address", &out->address));
  return OkStatus();
}

Status DecodeWorkerKey(const json& j, const std::string& path, model::WorkerKey* out) {
  DROVER_RETURN_IF_ERROR(Field(j, path, "job_id", &out->job));
  DROVER_RETURN_IF_ERROR(Field(j, path, "attempt", &out->attempt));
  DROVER_RETURN_IF_ERROR(Field(j, path, "rank", &out->rank));
  return OkStatus();
}

void EncodeWorkerKey(const model::WorkerKey& key, json* out) {
  (*out)["job_id"] = key.job.value();
  (*out)["attempt"] = key.attempt;
  (*out)["rank"] = key.rank;
}

Status Decode(const json& j, const std::string& path, model::LaunchSpec* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(DecodeWorkerKey(j, path, &out->key));
  DROVER_RETURN_IF_ERROR(Field(j, path, "node", &out->node));
  DROVER_RETURN_IF_ERROR(Field(j, path, "argv", &out->argv));
  DROVER_RETURN_IF_ERROR(Field(j, path, "working_dir", &out->working_dir));
  DROVER_RETURN_IF_ERROR(Field(j, path, "env", &out->env));
  DROVER_RETURN_IF_ERROR(Field(j, path, "gpus", &out->gpus));
  DROVER_RETURN_IF_ERROR(Field(j, path, "timeout_ms", &out->timeout_ms));
  DROVER_RETURN_IF_ERROR(Field(j, path, "kill_grace_ms", &out->kill_grace_ms));
  DROVER_RETURN_IF_ERROR(Field(j, path, "checkpoint_dir", &out->checkpoint_dir));
  DROVER_RETURN_IF_ERROR(Field(j, path, "make_dirs", &out->make_dirs));
  DROVER_RETURN_IF_ERROR(Field(j, path, "value_outputs", &out->value_outputs));
  DROVER_RETURN_IF_ERROR(Field(j, path, "run_as", &out->run_as));
  DROVER_RETURN_IF_ERROR(Field(j, path, "may_run_as_root", &out->may_run_as_root));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::CronSpec* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "name", &out->name));
  DROVER_RETURN_IF_ERROR(Field(j, path, "schedule", &out->schedule));
  DROVER_RETURN_IF_ERROR(Field(j, path, "time_zone", &out->time_zone));
  DROVER_RETURN_IF_ERROR(Field(j, path, "concurrency_policy", &out->concurrency_policy));
  DROVER_RETURN_IF_ERROR(Field(j, path, "starting_deadline_ms", &out->starting_deadline));
  DROVER_RETURN_IF_ERROR(
      Field(j, path, "successful_history_limit", &out->successful_history_limit));
  DROVER_RETURN_IF_ERROR(Field(j, path, "failed_history_limit", &out->failed_history_limit));
  DROVER_RETURN_IF_ERROR(Field(j, path, "suspend", &out->suspend));
  DROVER_RETURN_IF_ERROR(Field(j, path, "jobs", &out->jobs));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::ProbeSpec* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "path", &out->path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "interval_ms", &out->interval_ms));
  DROVER_RETURN_IF_ERROR(Field(j, path, "timeout_ms", &out->timeout_ms));
  DROVER_RETURN_IF_ERROR(Field(j, path, "failure_threshold", &out->failure_threshold));
  DROVER_RETURN_IF_ERROR(Field(j, path, "initial_delay_ms", &out->initial_delay_ms));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::SaturationSpec* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "metric", &out->metric));
  DROVER_RETURN_IF_ERROR(Field(j, path, "target_per_replica", &out->target_per_replica));
  DROVER_RETURN_IF_ERROR(Field(j, path, "path", &out->path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "interval_ms", &out->interval_ms));
  DROVER_RETURN_IF_ERROR(Field(j, path, "timeout_ms", &out->timeout_ms));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::AutoscalingSpec* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(
      Field(j, path, "target_in_flight_per_replica", &out->target_in_flight_per_replica));
  DROVER_RETURN_IF_ERROR(Field(j, path, "scale_up_delay_ms", &out->scale_up_delay_ms));
  DROVER_RETURN_IF_ERROR(Field(j, path, "scale_down_delay_ms", &out->scale_down_delay_ms));
  DROVER_RETURN_IF_ERROR(Field(j, path, "scale_to_zero_after_ms", &out->scale_to_zero_after_ms));
  DROVER_RETURN_IF_ERROR(Field(j, path, "saturation", &out->saturation));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::ServiceSpec* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "name", &out->name));
  DROVER_RETURN_IF_ERROR(Field(j, path, "models", &out->models));
  DROVER_RETURN_IF_ERROR(Field(j, path, "replica", &out->replica));
  DROVER_RETURN_IF_ERROR(Field(j, path, "min_replicas", &out->min_replicas));
  DROVER_RETURN_IF_ERROR(Field(j, path, "max_replicas", &out->max_replicas));
  DROVER_RETURN_IF_ERROR(Field(j, path, "readiness", &out->readiness));
  DROVER_RETURN_IF_ERROR(Field(j, path, "liveness", &out->liveness));
  DROVER_RETURN_IF_ERROR(Field(j, path, "autoscaling", &out->autoscaling));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::WorkerEvent* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(DecodeWorkerKey(j, path, &out->key));
  DROVER_RETURN_IF_ERROR(Field(j, path, "kind", &out->kind));
  DROVER_RETURN_IF_ERROR(Field(j, path, "at", &out->at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "exit", &out->exit));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::Victim* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "job_id", &out->job));
  DROVER_RETURN_IF_ERROR(Field(j, path, "queue", &out->queue));
  DROVER_RETURN_IF_ERROR(Field(j, path, "gpus", &out->gpus));
  DROVER_RETURN_IF_ERROR(Field(j, path, "lost_gpu_seconds", &out->lost_gpu_seconds));
  DROVER_RETURN_IF_ERROR(Field(j, path, "has_checkpoint", &out->has_checkpoint));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::Decision* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "job_id", &out->job));
  DROVER_RETURN_IF_ERROR(Field(j, path, "attempt", &out->attempt));
  DROVER_RETURN_IF_ERROR(Field(j, path, "at", &out->at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "kind", &out->kind));
  DROVER_RETURN_IF_ERROR(Field(j, path, "queue", &out->queue));
  DROVER_RETURN_IF_ERROR(Field(j, path, "summary", &out->summary));
  DROVER_RETURN_IF_ERROR(Field(j, path, "candidates", &out->candidates));
  DROVER_RETURN_IF_ERROR(Field(j, path, "nodes", &out->nodes));
  DROVER_RETURN_IF_ERROR(Field(j, path, "score", &out->score));
  DROVER_RETURN_IF_ERROR(Field(j, path, "reason", &out->reason));
  DROVER_RETURN_IF_ERROR(Field(j, path, "victims", &out->victims));
  DROVER_RETURN_IF_ERROR(Field(j, path, "preemptor", &out->preemptor));
  DROVER_RETURN_IF_ERROR(Field(j, path, "reserved_start_at", &out->reserved_start));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::Limits* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "max_running_jobs", &out->max_running_jobs));
  DROVER_RETURN_IF_ERROR(Field(j, path, "max_resources", &out->max_resources));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::ExecutorKind* out) {
  return DecodeEnum(j, path, "executor", model::kExecutorKindNames, out);
}

Status Decode(const json& j, const std::string& path, model::ExecutorConfig* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "kind", &out->kind));
  DROVER_RETURN_IF_ERROR(Field(j, path, "partition", &out->slurm.partition));
  DROVER_RETURN_IF_ERROR(Field(j, path, "qos", &out->slurm.qos));
  DROVER_RETURN_IF_ERROR(Field(j, path, "account", &out->slurm.account));
  model::KubernetesQueueOptions& k = out->kubernetes;
  DROVER_RETURN_IF_ERROR(Field(j, path, "namespace", &k.namespace_name));
  DROVER_RETURN_IF_ERROR(Field(j, path, "scheduler_name", &k.scheduler_name));
  DROVER_RETURN_IF_ERROR(Field(j, path, "kueue_queue", &k.kueue_queue));
  DROVER_RETURN_IF_ERROR(Field(j, path, "gang_scheduler", &k.gang_scheduler));
  DROVER_RETURN_IF_ERROR(Field(j, path, "dra", &k.dra));
  DROVER_RETURN_IF_ERROR(Field(j, path, "gang_scheduler_version", &k.gang_scheduler_version));
  DROVER_RETURN_IF_ERROR(Field(j, path, "device_class", &k.device_class));
  DROVER_RETURN_IF_ERROR(Field(j, path, "mig_device_class", &k.mig_device_class));
  DROVER_RETURN_IF_ERROR(Field(j, path, "dra_driver", &k.dra_driver));
  DROVER_RETURN_IF_ERROR(Field(j, path, "image", &k.image));
  DROVER_RETURN_IF_ERROR(Field(j, path, "service_account", &k.service_account));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::QueueConfig* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "executor", &out->executor));
  DROVER_RETURN_IF_ERROR(Field(j, path, "name", &out->name));
  DROVER_RETURN_IF_ERROR(Field(j, path, "weight", &out->weight));
  DROVER_RETURN_IF_ERROR(Field(j, path, "nominal", &out->nominal));
  DROVER_RETURN_IF_ERROR(Field(j, path, "borrowing_limit", &out->borrowing_limit));
  DROVER_RETURN_IF_ERROR(Field(j, path, "lending_limit", &out->lending_limit));
  DROVER_RETURN_IF_ERROR(Field(j, path, "limits", &out->limits));
  DROVER_RETURN_IF_ERROR(Field(j, path, "user_limits", &out->user_limits));
  DROVER_RETURN_IF_ERROR(Field(j, path, "children", &out->children));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::Accounts* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "map", &out->map));
  DROVER_RETURN_IF_ERROR(Field(j, path, "allow_root", &out->allow_root));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::Policy* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "queues", &out->queues));
  DROVER_RETURN_IF_ERROR(Field(j, path, "pipeline_limits", &out->pipeline_limits));
  DROVER_RETURN_IF_ERROR(Field(j, path, "fair_share_half_life_ms", &out->fair_share_half_life));
  DROVER_RETURN_IF_ERROR(Field(j, path, "aging_interval_ms", &out->aging_interval));
  DROVER_RETURN_IF_ERROR(Field(j, path, "aging_step", &out->aging_step));
  DROVER_RETURN_IF_ERROR(Field(j, path, "aging_max", &out->aging_max));
  DROVER_RETURN_IF_ERROR(Field(j, path, "scoring", &out->scoring));
  DROVER_RETURN_IF_ERROR(Field(j, path, "preemption", &out->preemption));
  DROVER_RETURN_IF_ERROR(Field(j, path, "min_run_time_ms", &out->min_run_time));
  DROVER_RETURN_IF_ERROR(Field(j, path, "preemption_grace_ms", &out->preemption_grace));
  DROVER_RETURN_IF_ERROR(Field(j, path, "backfill", &out->backfill));
  DROVER_RETURN_IF_ERROR(Field(j, path, "order", &out->order));
  DROVER_RETURN_IF_ERROR(Field(j, path, "las_thresholds_gpu_seconds", &out->las_thresholds));
  DROVER_RETURN_IF_ERROR(Field(j, path, "accounts", &out->accounts));
  return OkStatus();
}

// Usage (model/usage.h).

Status Decode(const json& j, const std::string& path, model::WorkerKey* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  return DecodeWorkerKey(j, path, out);
}

Status Decode(const json& j, const std::string& path, model::GpmSample* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "sm_active_pct", &out->sm_active_pct));
  DROVER_RETURN_IF_ERROR(Field(j, path, "sm_occupancy_pct", &out->sm_occupancy_pct));
  DROVER_RETURN_IF_ERROR(Field(j, path, "tensor_active_pct", &out->tensor_active_pct));
  DROVER_RETURN_IF_ERROR(Field(j, path, "dram_bandwidth_pct", &out->dram_bandwidth_pct));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::GpuSample* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "index", &out->index));
  DROVER_RETURN_IF_ERROR(Field(j, path, "uuid", &out->uuid));
  DROVER_RETURN_IF_ERROR(Field(j, path, "utilization_pct", &out->utilization_pct));
  DROVER_RETURN_IF_ERROR(Field(j, path, "memory_activity_pct", &out->memory_activity_pct));
  DROVER_RETURN_IF_ERROR(Field(j, path, "memory_used_bytes", &out->memory_used_bytes));
  DROVER_RETURN_IF_ERROR(Field(j, path, "power_mw", &out->power_mw));
  DROVER_RETURN_IF_ERROR(Field(j, path, "energy_mj", &out->energy_mj));
  DROVER_RETURN_IF_ERROR(Field(j, path, "temperature_c", &out->temperature_c));
  DROVER_RETURN_IF_ERROR(Field(j, path, "sm_clock_mhz", &out->sm_clock_mhz));
  DROVER_RETURN_IF_ERROR(Field(j, path, "gpm", &out->gpm));
  DROVER_RETURN_IF_ERROR(Field(j, path, "worker", &out->worker));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::GpuProcessSample* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "gpu_index", &out->gpu_index));
  DROVER_RETURN_IF_ERROR(Field(j, path, "pid", &out->pid));
  DROVER_RETURN_IF_ERROR(Field(j, path, "sm_pct", &out->sm_pct));
  DROVER_RETURN_IF_ERROR(Field(j, path, "memory_used_bytes", &out->memory_used_bytes));
  DROVER_RETURN_IF_ERROR(Field(j, path, "worker", &out->worker));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::ProcessSample* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(DecodeWorkerKey(j, path, &out->worker));
  DROVER_RETURN_IF_ERROR(Field(j, path, "processes", &out->processes));
  DROVER_RETURN_IF_ERROR(Field(j, path, "cpu_ms", &out->cpu_ms));
  DROVER_RETURN_IF_ERROR(Field(j, path, "rss_bytes", &out->rss_bytes));
  DROVER_RETURN_IF_ERROR(Field(j, path, "peak_rss_bytes", &out->peak_rss_bytes));
  DROVER_RETURN_IF_ERROR(Field(j, path, "read_bytes", &out->read_bytes));
  DROVER_RETURN_IF_ERROR(Field(j, path, "iowait_ms", &out->iowait_ms));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::UsageSnapshot* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "at", &out->at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "gpus", &out->gpus));
  DROVER_RETURN_IF_ERROR(Field(j, path, "gpu_processes", &out->gpu_processes));
  DROVER_RETURN_IF_ERROR(Field(j, path, "processes", &out->processes));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::UsageBatch* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "node", &out->node));
  // The bound is checked before the elements are decoded, so a huge batch costs no decoding.
  if (auto it = j.find("snapshots");
      it != j.end() && it->is_array() && it->size() > model::kMaxUsageSnapshots) {
    return InvalidArgument(fmt::format("{}.snapshots: at most {} entries, not {}", path,
                                       model::kMaxUsageSnapshots, it->size()));
  }
  DROVER_RETURN_IF_ERROR(Field(j, path, "snapshots", &out->snapshots));
  DROVER_RETURN_IF_ERROR(Field(j, path, "sampler_cpu_us", &out->sampler_cpu_us));
  return model::ValidateUsageBatch(*out);
}

Status Decode(const json& j, const std::string& path, model::Stat* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "count", &out->count));
  DROVER_RETURN_IF_ERROR(Field(j, path, "sum", &out->sum));
  DROVER_RETURN_IF_ERROR(Field(j, path, "max", &out->max));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::UsageBucket* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "start_at", &out->start));
  DROVER_RETURN_IF_ERROR(Field(j, path, "gpu_util", &out->gpu_util));
  DROVER_RETURN_IF_ERROR(Field(j, path, "gpu_memory", &out->gpu_memory));
  DROVER_RETURN_IF_ERROR(Field(j, path, "power", &out->power));
  DROVER_RETURN_IF_ERROR(Field(j, path, "cpu", &out->cpu));
  DROVER_RETURN_IF_ERROR(Field(j, path, "rss", &out->rss));
  DROVER_RETURN_IF_ERROR(Field(j, path, "sm_active", &out->sm_active));
  DROVER_RETURN_IF_ERROR(Field(j, path, "tensor_active", &out->tensor_active));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::GpuUsage* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "uuid", &out->uuid));
  DROVER_RETURN_IF_ERROR(Field(j, path, "index", &out->index));
  DROVER_RETURN_IF_ERROR(Field(j, path, "util", &out->util));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::UsageSummary* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "first_at", &out->first_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "last_at", &out->last_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "gpu_util", &out->gpu_util));
  DROVER_RETURN_IF_ERROR(Field(j, path, "gpu_util_p50", &out->gpu_util_p50));
  DROVER_RETURN_IF_ERROR(Field(j, path, "gpu_util_p95", &out->gpu_util_p95));
  DROVER_RETURN_IF_ERROR(Field(j, path, "peak_gpu_memory_bytes", &out->peak_gpu_memory_bytes));
  DROVER_RETURN_IF_ERROR(
      Field(j, path, "peak_process_gpu_memory_bytes", &out->peak_process_gpu_memory_bytes));
  DROVER_RETURN_IF_ERROR(
      Field(j, path, "peak_other_gpu_processes", &out->peak_other_gpu_processes));
  DROVER_RETURN_IF_ERROR(Field(j, path, "peak_rss_bytes", &out->peak_rss_bytes));
  DROVER_RETURN_IF_ERROR(Field(j, path, "cpu_ms", &out->cpu_ms));
  DROVER_RETURN_IF_ERROR(Field(j, path, "energy_joules", &out->energy_joules));
  DROVER_RETURN_IF_ERROR(Field(j, path, "read_bytes", &out->read_bytes));
  DROVER_RETURN_IF_ERROR(Field(j, path, "iowait_ms", &out->iowait_ms));
  DROVER_RETURN_IF_ERROR(Field(j, path, "series_truncated", &out->series_truncated));
  DROVER_RETURN_IF_ERROR(Field(j, path, "sm_active", &out->sm_active));
  DROVER_RETURN_IF_ERROR(Field(j, path, "sm_occupancy", &out->sm_occupancy));
  DROVER_RETURN_IF_ERROR(Field(j, path, "tensor_active", &out->tensor_active));
  DROVER_RETURN_IF_ERROR(Field(j, path, "dram_bandwidth", &out->dram_bandwidth));
  DROVER_RETURN_IF_ERROR(Field(j, path, "gpus", &out->gpus));
  if (out->gpus.size() > model::kMaxUsageGpusPerAttempt) {
    return Expected(path + ".gpus", fmt::format("at most {} GPUs", model::kMaxUsageGpusPerAttempt));
  }
  // model::Accumulate looks GPUs up by uuid in a sorted list.
  std::sort(out->gpus.begin(), out->gpus.end(),
            [](const model::GpuUsage& a, const model::GpuUsage& b) { return a.uuid < b.uuid; });
  return OkStatus();
}

// The store's record of an attempt's usage (not an API shape): "util_histogram" as 101 counts,
// "energy_mj" as {uuid: [first, last]}, "workers" as [{rank..., "at", sample}].
Status Decode(const json& j, const std::string& path, model::AttemptUsage* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "job_id", &out->job));
  DROVER_RETURN_IF_ERROR(Field(j, path, "attempt", &out->attempt));
  DROVER_RETURN_IF_ERROR(Field(j, path, "summary", &out->summary));
  std::int64_t buckets = 0;
  DROVER_RETURN_IF_ERROR(Field(j, path, "buckets", &buckets));
  out->buckets = static_cast<std::size_t>(std::max<std::int64_t>(buckets, 0));
  if (auto it = j.find("util_histogram"); it != j.end()) {
    if (!it->is_array() || it->size() != out->util_histogram.size()) {
      return Expected(path + ".util_histogram", "an array of 101 integers");
    }
    for (std::size_t i = 0; i < it->size(); ++i) {
      DROVER_RETURN_IF_ERROR(
          Decode((*it)[i], fmt::format("{}.util_histogram[{}]", path, i), &out->util_histogram[i]));
    }
  }
  if (auto it = j.find("energy_mj"); it != j.end()) {
    if (!it->is_object()) return Expected(path + ".energy_mj", "an object");
    for (const auto& [uuid, pair] : it->items()) {
      std::vector<std::int64_t> first_last;
      DROVER_RETURN_IF_ERROR(Decode(pair, path + ".energy_mj." + uuid, &first_last));
      if (first_last.size() != 2) return Expected(path + ".energy_mj." + uuid, "[first, last]");
      out->energy_mj[uuid] = {first_last[0], first_last[1]};
    }
  }
  if (auto it = j.find("workers"); it != j.end()) {
    if (!it->is_array()) return Expected(path + ".workers", "an array");
    for (std::size_t i = 0; i < it->size(); ++i) {
      const std::string at = fmt::format("{}.workers[{}]", path, i);
      model::ProcessSample sample;
      TimeMs sampled_at = 0;
      DROVER_RETURN_IF_ERROR(Decode((*it)[i], at, &sample));
      DROVER_RETURN_IF_ERROR(Field((*it)[i], at, "at", &sampled_at));
      out->last_process[sample.worker.rank] = sample;
      out->last_process_at[sample.worker.rank] = sampled_at;
    }
  }
  return OkStatus();
}

// Runs a decoder for a public entry point; nlohmann should not throw on the accessors used
// above, but any exception is turned into an error rather than escaping.
template <typename T>
Result<T> DecodeRoot(const json& j, std::string_view path) {
  try {
    T value{};
    DROVER_RETURN_IF_ERROR(Decode(j, std::string(path), &value));
    return value;
  } catch (const std::exception& e) {
    return InvalidArgument(fmt::format("{}: {}", path, e.what()));
  }
}

// ---------------------------------------------------------------------------------------------
// Encoding.

json StringMap(const std::map<std::string, std::string>& map) {
  json out = json::object();
  for (const auto& [key, value] : map) out[key] = value;
  return out;
}

json ToJson(const model::Resources& resources) {
  return json{{"cpu_millis", resources.cpu_millis},
              {"memory_bytes", resources.memory_bytes},
              {"gpus", resources.gpus}};
}

json ToJson(const model::Taint& taint) {
  return json{
      {"key", taint.key}, {"value", taint.value}, {"effect", model::TaintEffectName(taint.effect)}};
}

json ToJson(const model::Toleration& toleration) {
  json out{{"key", toleration.key},
           {"operator", model::kTolerationOperatorNames.Name(toleration.op)},
           {"value", toleration.value}};
  if (toleration.effect) out["effect"] = model::TaintEffectName(*toleration.effect);
  return out;
}

// The private encoders Array() below uses, declared before it so that it finds them.
json ToJson(const model::LabelPreference& preference);
json ToJson(const model::Dependency& dependency);
json ToJson(const model::InputSpec& input);
json ToJson(const model::OutputSpec& output);
json ToJson(const model::MigSlots& slots);
json ToJson(const model::Gpu& gpu);
json ToJson(const model::Victim& victim);

template <typename T>
json Array(const std::vector<T>& values) {
  json out = json::array();
  for (const auto& value : values) out.push_back(ToJson(value));
  return out;
}

json ToJson(const model::Requirements& requirements) {
  json tolerations = json::array();
  for (const auto& toleration : requirements.tolerations) tolerations.push_back(ToJson(toleration));
  json out{{"per_worker", ToJson(requirements.per_worker)},
           {"gpu_memory_bytes", requirements.gpu_memory_bytes},
           {"gpu_models", requirements.gpu_models},
           {"node_selector", StringMap(requirements.node_selector)},
           {"tolerations", std::move(tolerations)},
           {"same_node", requirements.same_node}};
  if (requirements.gpu_share_millis != 0) out["gpu_share_millis"] = requirements.gpu_share_millis;
  if (!requirements.mig_profile.empty()) out["mig_profile"] = requirements.mig_profile;
  if (!requirements.topology_level.empty()) out["topology_level"] = requirements.topology_level;
  return out;
}

json ToJson(const model::Dependency& dependency) {
  return json{{"name", dependency.name},
              {"condition", model::DependencyConditionName(dependency.condition)}};
}

// {"path"} or {"from_stage", "from_output"}.
json ToJson(const model::InputSpec& input) {
  if (input.from_stage.empty() && input.from_output.empty()) return json{{"path", input.path}};
  json out{{"from_stage", input.from_stage}, {"from_output", input.from_output}};
  if (!input.path.empty()) out["path"] = input.path;
  return out;
}

json ToJson(const model::OutputSpec& output) {
  return json{{"name", output.name}, {"path", output.path}};
}

json ToJson(const model::TrialSpec& trial) {
  json out{{"index", trial.index},
           {"count", trial.count},
           {"params", StringMap(trial.params)},
           {"concurrency", trial.concurrency},
           {"objective", trial.objective},
           {"maximize", trial.maximize}};
  if (trial.stop_at) out["stop_at"] = *trial.stop_at;
  return out;
}

json ToJson(const model::RetryPolicy& retry) {
  json out{{"max_attempts", retry.max_attempts}, {"backoff_ms", retry.backoff_ms}};
  if (retry.on != model::RetryPolicy{}.on) {
    json on = json::array();
    for (model::FailureKind kind : retry.on) on.push_back(model::FailureKindName(kind));
    out["on"] = std::move(on);
  }
  return out;
}

json ToJson(const model::LabelPreference& preference) {
  return json{{"key", preference.key}, {"value", preference.value}, {"weight", preference.weight}};
}

json ToJson(const model::Preferences& preferences) {
  json out = json::object();
  if (!preferences.node_labels.empty()) out["node_labels"] = Array(preferences.node_labels);
  if (!preferences.topology_level.empty()) out["topology_level"] = preferences.topology_level;
  return out;
}

json ToJson(const model::MigSlots& slots) {
  return json{{"profile", slots.profile}, {"count", slots.count}};
}

json ToJson(const model::Gpu& gpu) {
  json out{{"index", gpu.index},
           {"uuid", gpu.uuid},
           {"model", gpu.model},
           {"memory_bytes", gpu.memory_bytes},
           {"topology_group", gpu.topology_group}};
  if (gpu.sharing != model::GpuSharing::kExclusive)
    out["sharing"] = model::GpuSharingName(gpu.sharing);
  if (!gpu.mig.empty()) out["mig"] = Array(gpu.mig);
  return out;
}

json ToJson(const model::Victim& victim) {
  return json{{"job_id", victim.job.value()},
              {"queue", victim.queue},
              {"gpus", victim.gpus},
              {"lost_gpu_seconds", victim.lost_gpu_seconds},
              {"has_checkpoint", victim.has_checkpoint}};
}

json ToJson(const model::ResourceAmounts& amounts) {
  json out = json::object();
  for (const auto& [resource, amount] : amounts) out[resource] = amount;
  return out;
}

json ToJson(const model::Limits& limits) {
  json out{{"max_resources", ToJson(limits.max_resources)}};
  if (limits.max_running_jobs) out["max_running_jobs"] = *limits.max_running_jobs;
  return out;
}

}  // namespace

json ToJson(const model::JobSpec& spec) {
  json out{{"name", spec.name},
           {"owner", spec.owner},
           {"team", spec.team},
           {"queue", spec.queue},
           {"priority_class", spec.priority_class},
           {"command", spec.command},
           {"script", spec.script},
           {"working_dir", spec.working_dir},
           {"env", StringMap(spec.env)},
           {"requirements", ToJson(spec.requirements)},
           {"preferences", ToJson(spec.preferences)},
           {"workers", spec.workers},
           {"min_workers", spec.min_workers},
           {"depends_on", Array(spec.depends_on)},
           {"retry", ToJson(spec.retry)},
           {"checkpoint_dir", spec.checkpoint_dir},
           {"interruptible", spec.interruptible}};
  if (spec.timeout) out["timeout_ms"] = *spec.timeout;
  if (!spec.pipeline.empty()) out["pipeline"] = spec.pipeline;
  if (!spec.stage.empty()) out["stage"] = spec.stage;
  if (!spec.image.empty()) out["image"] = spec.image;
  if (!spec.secret_env.empty()) out["secret_env"] = StringMap(spec.secret_env);
  if (spec.hold_infeasible) out["hold_infeasible"] = true;
  if (spec.trial != model::TrialSpec{}) out["trial"] = ToJson(spec.trial);
  if (spec.admission != model::PipelineAdmission::kStagewise) {
    out["admission"] = model::kPipelineAdmissionNames.Name(spec.admission);
  }
  if (!spec.run_if.empty()) out["run_if"] = spec.run_if;
  if (!spec.inputs.empty()) out["inputs"] = Array(spec.inputs);
  if (!spec.outputs.empty()) out["outputs"] = Array(spec.outputs);
  if (spec.resume) out["resume"] = true;
  if (!spec.service.empty()) {
    out["service"] = spec.service;
    out["service_generation"] = spec.service_generation;
  }
  return out;
}

Result<model::JobSpec> JobSpecFromJson(const json& j, std::string_view path) {
  return DecodeRoot<model::JobSpec>(j, path);
}

json ToJson(const model::ExitStatus& exit) {
  json out{{"exit_code", exit.exit_code},
           {"signal", exit.signal},
           {"timed_out", exit.timed_out},
           {"cancelled", exit.cancelled},
           {"message", exit.message}};
  if (exit.preempted) out["preempted"] = true;
  if (exit.node_lost) out["node_lost"] = true;
  if (exit.oom_killed) out["oom_killed"] = true;
  if (!exit.output_values.empty()) out["output_values"] = StringMap(exit.output_values);
  return out;
}

Result<model::ExitStatus> ExitStatusFromJson(const json& j, std::string_view path) {
  return DecodeRoot<model::ExitStatus>(j, path);
}

json ToJson(const model::Worker& worker) {
  json out{{"rank", worker.rank},
           {"node", worker.node.value()},
           {"gpus", worker.gpus},
           {"state", model::WorkerStateName(worker.state)},
           {"launched_at", worker.launched_at},
           {"started_at", worker.started_at},
           {"finished_at", worker.finished_at}};
  if (!worker.host.empty()) out["host"] = worker.host;
  if (worker.exit) out["exit"] = ToJson(*worker.exit);
  return out;
}

Result<model::Worker> WorkerFromJson(const json& j, std::string_view path) {
  return DecodeRoot<model::Worker>(j, path);
}

json ToJson(const model::Attempt& attempt) {
  json out{{"number", attempt.number},
           {"ready_at", attempt.ready_at},
           {"dequeued_at", attempt.dequeued_at},
           {"admitted_at", attempt.admitted_at},
           {"placed_at", attempt.placed_at},
           {"workers_started_at", attempt.workers_started_at},
           {"running_at", attempt.running_at},
           {"finished_at", attempt.finished_at},
           {"outcome_reason", attempt.outcome_reason},
           {"workers", Array(attempt.workers)}};
  if (attempt.outcome) out["outcome"] = model::JobStateName(*attempt.outcome);
  if (attempt.resumed) out["resumed"] = true;
  if (attempt.last_checkpoint_at != 0) out["last_checkpoint_at"] = attempt.last_checkpoint_at;
  if (attempt.preempted_by) out["preempted_by"] = attempt.preempted_by->value();
  if (!attempt.requeued_by.empty()) out["requeued_by"] = attempt.requeued_by;
  if (attempt.disruption != model::Disruption::kNone) {
    out["disruption"] = model::DisruptionName(attempt.disruption);
  }
  if (attempt.useful_work_at != 0) out["useful_work_at"] = attempt.useful_work_at;
  if (attempt.progress != model::Attempt{}.progress) out["progress"] = attempt.progress;
  if (attempt.throughput != model::Attempt{}.throughput) {
    out["throughput"] = attempt.throughput;
    out["throughput_unit"] = attempt.throughput_unit;
  }
  if (!attempt.executor.empty()) {
    out["executor"] = attempt.executor;
    out["external_id"] = attempt.external_id;
    out["external_reason"] = attempt.external_reason;
    out["external_submitted_at"] = attempt.external_submitted_at;
    out["external_eligible_at"] = attempt.external_eligible_at;
  }
  return out;
}

Result<model::Attempt> AttemptFromJson(const json& j, std::string_view path) {
  return DecodeRoot<model::Attempt>(j, path);
}

json ToJson(const model::Job& job) {
  json dependencies = json::array();
  for (const JobId& id : job.dependencies) dependencies.push_back(id.value());
  json out{{"id", job.id.value()},
           {"spec", ToJson(job.spec)},
           {"dependencies", std::move(dependencies)},
           {"submission_key", job.submission_key},
           {"state", model::JobStateName(job.state)},
           {"created_at", job.created_at},
           {"finished_at", job.finished_at},
           {"not_before_at", job.not_before},
           {"status_message", job.status_message},
           {"attempts", Array(job.attempts)}};
  if (job.pipeline_run.value() != 0) out["pipeline_run"] = job.pipeline_run.value();
  if (job.released_at != 0) out["released_at"] = job.released_at;
  if (!job.outputs.empty()) out["outputs"] = StringMap(job.outputs);
  if (!job.submission_hash.empty()) out["submission_hash"] = job.submission_hash;
  if (!job.run_as.empty()) out["run_as"] = job.run_as;
  if (job.may_run_as_root) out["may_run_as_root"] = true;
  if (job.hold) {
    out["hold"] =
        json{{"by", job.hold->by}, {"since", job.hold->since}, {"reason", job.hold->reason}};
  }
  return out;
}

Result<model::Job> JobFromJson(const json& j, std::string_view path) {
  return DecodeRoot<model::Job>(j, path);
}

json ToJson(const model::Transition& transition) {
  return json{{"job_id", transition.job.value()},
              {"attempt", transition.attempt},
              {"from_state", model::JobStateName(transition.from)},
              {"to_state", model::JobStateName(transition.to)},
              {"at", transition.at},
              {"cause", transition.cause},
              {"actor", transition.actor}};
}

Result<model::Transition> TransitionFromJson(const json& j, std::string_view path) {
  return DecodeRoot<model::Transition>(j, path);
}

json ToJson(const model::Node& node) {
  return json{{"name", node.name.value()},
              {"labels", StringMap(node.labels)},
              {"taints", Array(node.taints)},
              {"cpu_millis", node.cpu_millis},
              {"memory_bytes", node.memory_bytes},
              {"gpus", Array(node.gpus)},
              {"address", node.address}};
}

Result<model::Node> NodeFromJson(const json& j, std::string_view path) {
  return DecodeRoot<model::Node>(j, path);
}

namespace {

Status Decode(const json& j, const std::string& path, model::MaintenanceWindow* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "from", &out->from));
  DROVER_RETURN_IF_ERROR(Field(j, path, "to", &out->to));
  DROVER_RETURN_IF_ERROR(Field(j, path, "by", &out->by));
  DROVER_RETURN_IF_ERROR(Field(j, path, "set_at", &out->set_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "reason", &out->reason));
  return OkStatus();
}

Status Decode(const json& j, const std::string& path, model::NodeAdmin* out) {
  DROVER_RETURN_IF_ERROR(RequireObject(j, path));
  DROVER_RETURN_IF_ERROR(Field(j, path, "cordoned", &out->cordoned));
  DROVER_RETURN_IF_ERROR(Field(j, path, "cordoned_at", &out->cordoned_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "cordoned_by", &out->cordoned_by));
  DROVER_RETURN_IF_ERROR(Field(j, path, "reason", &out->reason));
  DROVER_RETURN_IF_ERROR(Field(j, path, "draining", &out->draining));
  DROVER_RETURN_IF_ERROR(Field(j, path, "draining_at", &out->draining_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "drain_deadline", &out->drain_deadline));
  DROVER_RETURN_IF_ERROR(Field(j, path, "drained_at", &out->drained_at));
  DROVER_RETURN_IF_ERROR(Field(j, path, "maintenance", &out->maintenance));
  return OkStatus();
}

}  // namespace

json ToJson(const model::NodeAdmin& admin) {
  json out{{"cordoned", admin.cordoned},
           {"cordoned_at", admin.cordoned_at},
           {"cordoned_by", admin.cordoned_by},
           {"reason", admin.reason},
           {"draining", admin.draining},
           {"draining_at", admin.draining_at},
           {"drain_deadline", admin.drain_deadline},
           {"drained_at", admin.drained_at}};
  if (admin.maintenance) {
    const model::MaintenanceWindow& window = *admin.maintenance;
    out["maintenance"] = json{{"from", window.from},
                              {"to", window.to},
                              {"by", window.by},
                              {"set_at", window.set_at},
                              {"reason", window.reason}};
  }
  return out;
}

Result<model::NodeAdmin> NodeAdminFromJson(const json& j, std::string_view path) {
  return DecodeRoot<model::NodeAdmin>(j, path);
}

json ToJson(const model::LaunchSpec& launch) {
  json out = json::object();
  EncodeWorkerKey(launch.key, &out);
  out["node"] = launch.node.value();
  out["argv"] = launch.argv;
  out["working_dir"] = launch.working_dir;
  out["env"] = StringMap(launch.env);
  out["gpus"] = launch.gpus;
  out["timeout_ms"] = launch.timeout_ms;
  out["kill_grace_ms"] = launch.kill_grace_ms;
  if (!launch.checkpoint_dir.empty()) out["checkpoint_dir"] = launch.checkpoint_dir;
  if (!launch.make_dirs.empty()) out["make_dirs"] = launch.make_dirs;
  if (!launch.value_outputs.empty()) out["value_outputs"] = launch.value_outputs;
  if (!launch.run_as.empty()) out["run_as"] = launch.run_as;
  if (launch.may_run_as_root) out["may_run_as_root"] = true;
  return out;
}

Result<model::LaunchSpec> LaunchSpecFromJson(const json& j, std::string_view path) {
  return DecodeRoot<model::LaunchSpec>(j, path);
}

json ToJson(const model::CronSpec& cron) {
  json jobs = json::array();
  for (const model::JobSpec& spec : cron.jobs) jobs.push_back(ToJson(spec));
  json out{{"name", cron.name},
           {"schedule", cron.schedule},
           {"time_zone", cron.time_zone},
           {"concurrency_policy", model::ConcurrencyPolicyName(cron.concurrency_policy)},
           {"successful_history_limit", cron.successful_history_limit},
           {"failed_history_limit", cron.failed_history_limit},
           {"suspend", cron.suspend},
           {"jobs", std::move(jobs)}};
  if (cron.starting_deadline) out["starting_deadline_ms"] = *cron.starting_deadline;
  return out;
}

Result<model::CronSpec> CronSpecFromJson(const json& j, std::string_view path) {
  return DecodeRoot<model::CronSpec>(j, path);
}

json ToJson(const model::ProbeSpec& probe) {
  return json{{"path", probe.path},
              {"interval_ms", probe.interval_ms},
              {"timeout_ms", probe.timeout_ms},
              {"failure_threshold", probe.failure_threshold},
              {"initial_delay_ms", probe.initial_delay_ms}};
}

json ToJson(const model::AutoscalingSpec& autoscaling) {
  json out{{"target_in_flight_per_replica", autoscaling.target_in_flight_per_replica},
           {"scale_up_delay_ms", autoscaling.scale_up_delay_ms},
           {"scale_down_delay_ms", autoscaling.scale_down_delay_ms},
           {"scale_to_zero_after_ms", autoscaling.scale_to_zero_after_ms}};
  if (const auto& s = autoscaling.saturation) {
    out["saturation"] = json{{"metric", s->metric},
                             {"target_per_replica", s->target_per_replica},
                             {"path", s->path},
                             {"interval_ms", s->interval_ms},
                             {"timeout_ms", s->timeout_ms}};
  }
  return out;
}

json ToJson(const model::ServiceSpec& service) {
  json out{{"name", service.name},
           {"models", service.models},
           {"replica", ToJson(service.replica)},
           {"min_replicas", service.min_replicas},
           {"max_replicas", service.max_replicas},
           {"autoscaling", ToJson(service.autoscaling)}};
  if (service.readiness) out["readiness"] = ToJson(*service.readiness);
  if (service.liveness) out["liveness"] = ToJson(*service.liveness);
  return out;
}

Result<model::ServiceSpec> ServiceSpecFromJson(const json& j, std::string_view path) {
  return DecodeRoot<model::ServiceSpec>(j, path);
}

json ToJson(const model::WorkerEvent& event) {
  json out = json::object();
  EncodeWorkerKey(event.key, &out);
  out["kind"] = model::kWorkerEventKindNames.Name(event.kind);
  out["at"] = event.at;
  out["exit"] = ToJson(event.exit);
  return out;
}

Result<model::WorkerEvent> WorkerEventFromJson(const json& j, std::string_view path) {
  return DecodeRoot<model::WorkerEvent>(j, path);
}

json ToJson(const model::Decision& decision) {
  return json{{"job_id", decision.job.value()},
              {"attempt", decision.attempt},
              {"at", decision.at},
              {"kind", model::DecisionKindName(decision.kind)},
              {"queue", decision.queue},
              {"summary", decision.summary},
              {"candidates", decision.candidates},
              {"nodes", decision.nodes},
              {"score", decision.score},
              {"reason", decision.reason},
              {"victims", Array(decision.victims)},
              {"preemptor", decision.preemptor.value()},
              {"reserved_start_at", decision.reserved_start}};
}

Result<model::Decision> DecisionFromJson(const json& j, std::string_view path) {
  return DecodeRoot<model::Decision>(j, path);
}

json ToJson(const model::ExecutorConfig& executor) {
  json out{{"kind", model::ExecutorKindName(executor.kind)}};
  if (executor.kind == model::ExecutorKind::kSlurm) {
    out["partition"] = executor.slurm.partition;
    out["qos"] = executor.slurm.qos;
    out["account"] = executor.slurm.account;
  }
  if (executor.kind == model::ExecutorKind::kKubernetes) {
    const model::KubernetesQueueOptions& k = executor.kubernetes;
    out["namespace"] = k.namespace_name;
    out["scheduler_name"] = k.scheduler_name;
    out["kueue_queue"] = k.kueue_queue;
    out["gang_scheduler"] = k.gang_scheduler;
    out["dra"] = k.dra;
    out["gang_scheduler_version"] = k.gang_scheduler_version;
    out["device_class"] = k.device_class;
    out["mig_device_class"] = k.mig_device_class;
    out["dra_driver"] = k.dra_driver;
    out["image"] = k.image;
    out["service_account"] = k.service_account;
  }
  return out;
}

json ToJson(const model::QueueConfig& queue) {
  json out{{"name", queue.name},
           {"weight", queue.weight},
           {"nominal", ToJson(queue.nominal)},
           {"borrowing_limit", ToJson(queue.borrowing_limit)},
           {"lending_limit", ToJson(queue.lending_limit)},
           {"limits", ToJson(queue.limits)},
           {"user_limits", ToJson(queue.user_limits)},
           {"children", Array(queue.children)}};
  if (queue.executor) out["executor"] = ToJson(*queue.executor);
  return out;
}

Result<model::QueueConfig> QueueConfigFromJson(const json& j, std::string_view path) {
  return DecodeRoot<model::QueueConfig>(j, path);
}

json ToJson(const model::Policy& policy) {
  return json{{"queues", Array(policy.queues)},
              {"pipeline_limits", ToJson(policy.pipeline_limits)},
              {"fair_share_half_life_ms", policy.fair_share_half_life},
              {"aging_interval_ms", policy.aging_interval},
              {"aging_step", policy.aging_step},
              {"aging_max", policy.aging_max},
              {"scoring", model::ScoringName(policy.scoring)},
              {"preemption", policy.preemption},
              {"min_run_time_ms", policy.min_run_time},
              {"preemption_grace_ms", policy.preemption_grace},
              {"backfill", policy.backfill},
              {"order", model::QueueOrderName(policy.order)},
              {"las_thresholds_gpu_seconds", policy.las_thresholds},
              {"accounts", json{{"map", StringMap(policy.accounts.map)},
                                {"allow_root", policy.accounts.allow_root}}}};
}

Result<model::Policy> PolicyFromJson(const json& j, std::string_view path) {
  return DecodeRoot<model::Policy>(j, path);
}

// Usage (model/usage.h).

namespace {

json StatJson(const model::Stat& stat) {
  return json{{"count", stat.count}, {"sum", stat.sum}, {"max", stat.max}};
}

json GpmJson(const model::GpmSample& gpm) {
  return json{{"sm_active_pct", gpm.sm_active_pct},
              {"sm_occupancy_pct", gpm.sm_occupancy_pct},
              {"tensor_active_pct", gpm.tensor_active_pct},
              {"dram_bandwidth_pct", gpm.dram_bandwidth_pct}};
}

void EncodeWorker(const std::optional<model::WorkerKey>& worker, json* out) {
  if (!worker) return;
  json key = json::object();
  EncodeWorkerKey(*worker, &key);
  (*out)["worker"] = std::move(key);
}

json ProcessJson(const model::ProcessSample& process) {
  json out = json::object();
  EncodeWorkerKey(process.worker, &out);
  out["processes"] = process.processes;
  out["cpu_ms"] = process.cpu_ms;
  out["rss_bytes"] = process.rss_bytes;
  out["peak_rss_bytes"] = process.peak_rss_bytes;
  out["read_bytes"] = process.read_bytes;
  out["iowait_ms"] = process.iowait_ms;
  return out;
}

}  // namespace

json ToJson(const model::UsageBatch& batch) {
  json snapshots = json::array();
  for (const model::UsageSnapshot& snapshot : batch.snapshots) {
    json gpus = json::array();
    for (const model::GpuSample& gpu : snapshot.gpus) {
      json out{{"index", gpu.index},
               {"uuid", gpu.uuid},
               {"utilization_pct", gpu.utilization_pct},
               {"memory_activity_pct", gpu.memory_activity_pct},
               {"memory_used_bytes", gpu.memory_used_bytes},
               {"power_mw", gpu.power_mw},
               {"energy_mj", gpu.energy_mj},
               {"temperature_c", gpu.temperature_c},
               {"sm_clock_mhz", gpu.sm_clock_mhz}};
      if (gpu.gpm) out["gpm"] = GpmJson(*gpu.gpm);
      EncodeWorker(gpu.worker, &out);
      gpus.push_back(std::move(out));
    }
    json gpu_processes = json::array();
    for (const model::GpuProcessSample& process : snapshot.gpu_processes) {
      json out{{"gpu_index", process.gpu_index},
               {"pid", process.pid},
               {"sm_pct", process.sm_pct},
               {"memory_used_bytes", process.memory_used_bytes}};
      EncodeWorker(process.worker, &out);
      gpu_processes.push_back(std::move(out));
    }
    json processes = json::array();
    for (const model::ProcessSample& process : snapshot.processes) {
      processes.push_back(ProcessJson(process));
    }
    snapshots.push_back(json{{"at", snapshot.at},
                             {"gpus", std::move(gpus)},
                             {"gpu_processes", std::move(gpu_processes)},
                             {"processes", std::move(processes)}});
  }
  return json{{"node", batch.node.value()},
              {"snapshots", std::move(snapshots)},
              {"sampler_cpu_us", batch.sampler_cpu_us}};
}

Result<model::UsageBatch> UsageBatchFromJson(const json& j, std::string_view path) {
  return DecodeRoot<model::UsageBatch>(j, path);
}

json ToJson(const model::UsageBucket& bucket) {
  json out{{"start_at", bucket.start},
           {"gpu_util", StatJson(bucket.gpu_util)},
           {"gpu_memory", StatJson(bucket.gpu_memory)},
           {"power", StatJson(bucket.power)},
           {"cpu", StatJson(bucket.cpu)},
           {"rss", StatJson(bucket.rss)}};
  // Only GPUs with GPM fill these: the series of other GPUs stays as small as before.
  if (bucket.sm_active.count > 0) out["sm_active"] = StatJson(bucket.sm_active);
  if (bucket.tensor_active.count > 0) out["tensor_active"] = StatJson(bucket.tensor_active);
  return out;
}

Result<model::UsageBucket> UsageBucketFromJson(const json& j, std::string_view path) {
  return DecodeRoot<model::UsageBucket>(j, path);
}

json ToJson(const model::UsageSummary& summary) {
  json gpus = json::array();
  for (const model::GpuUsage& gpu : summary.gpus) {
    gpus.push_back({{"uuid", gpu.uuid}, {"index", gpu.index}, {"util", StatJson(gpu.util)}});
  }
  return json{{"first_at", summary.first_at},
              {"last_at", summary.last_at},
              {"gpu_util", StatJson(summary.gpu_util)},
              {"gpu_util_p50", summary.gpu_util_p50},
              {"gpu_util_p95", summary.gpu_util_p95},
              {"peak_gpu_memory_bytes", summary.peak_gpu_memory_bytes},
              {"peak_process_gpu_memory_bytes", summary.peak_process_gpu_memory_bytes},
              {"peak_other_gpu_processes", summary.peak_other_gpu_processes},
              {"peak_rss_bytes", summary.peak_rss_bytes},
              {"cpu_ms", summary.cpu_ms},
              {"energy_joules", summary.energy_joules},
              {"read_bytes", summary.read_bytes},
              {"iowait_ms", summary.iowait_ms},
              {"series_truncated", summary.series_truncated},
              {"activity_source", summary.has_gpm() ? "gpm" : "utilization"},
              {"sm_active", StatJson(summary.sm_active)},
              {"sm_occupancy", StatJson(summary.sm_occupancy)},
              {"tensor_active", StatJson(summary.tensor_active)},
              {"dram_bandwidth", StatJson(summary.dram_bandwidth)},
              {"gpus", std::move(gpus)}};
}

json ToJson(const model::AttemptUsage& usage) {
  json energy = json::object();
  for (const auto& [uuid, first_last] : usage.energy_mj) {
    energy[uuid] = json::array({first_last[0], first_last[1]});
  }
  json workers = json::array();
  for (const auto& [rank, process] : usage.last_process) {
    json out = ProcessJson(process);
    auto at = usage.last_process_at.find(rank);
    out["at"] = at == usage.last_process_at.end() ? 0 : at->second;
    workers.push_back(std::move(out));
  }
  return json{{"job_id", usage.job.value()},
              {"attempt", usage.attempt},
              {"summary", ToJson(usage.summary)},
              {"buckets", usage.buckets},
              {"util_histogram", usage.util_histogram},
              {"energy_mj", std::move(energy)},
              {"workers", std::move(workers)}};
}

Result<model::AttemptUsage> AttemptUsageFromJson(const json& j, std::string_view path) {
  return DecodeRoot<model::AttemptUsage>(j, path);
}

std::string DumpJson(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<json> ParseJson(std::string_view text) {
  if (std::optional<std::size_t> at = FindExcessNesting(text, NestingSyntax::kJson)) {
    return InvalidArgument(fmt::format(
        "invalid JSON: nested too deeply at byte {} (more than {} levels)", *at, kMaxNestingDepth));
  }
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    return InvalidArgument(fmt::format("invalid JSON: {}", e.what()));
  }
}

}  // namespace drover::codec
