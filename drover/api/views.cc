#include "drover/api/views.h"

#include "drover/codec/json.h"
#include "drover/model/metrics.h"

namespace drover::api {

using nlohmann::json;

int HttpStatusFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return 400;
    case ErrorCode::kNotFound:
      return 404;
    case ErrorCode::kAlreadyExists:
    case ErrorCode::kFailedPrecondition:
    case ErrorCode::kAborted:
      return 409;
    case ErrorCode::kResourceExhausted:
      return 429;
    case ErrorCode::kUnavailable:
      return 503;
    case ErrorCode::kDeadlineExceeded:
      return 504;
    case ErrorCode::kInternal:
      return 500;
  }
  return 500;
}

json ErrorBody(const Error& error) {
  return json{
      {"code", ErrorCodeName(error.code)}, {"message", error.message}, {"details", error.details}};
}

json JobSummary(const model::Job& job, TimeMs now) {
  model::JobMetrics metrics = model::ComputeMetrics(job, now);
  const model::JobSpec& spec = job.spec;
  return json{
      {"id", job.id.value()},
      {"name", spec.name},
      {"owner", spec.owner},
      {"team", spec.team},
      {"queue", spec.queue},
      {"priority", spec.priority_class},
      {"state", model::JobStateName(job.state)},
      {"attempt", metrics.attempts},
      {"workers", spec.workers},
      {"gpus", spec.workers * spec.requirements.per_worker.gpus},
      {"created_at", job.created_at},
      {"finished_at", job.finished_at},
      {"message", job.status_message},
      {"metrics",
       {{"queue_wait_ms", metrics.queue_wait},
        {"startup_ms", metrics.startup},
        {"run_time_ms", metrics.run_time},
        {"total_ms", metrics.total},
        {"gpu_hours", metrics.gpu_hours()}}},
  };
}

json JobDetail(const model::Job& job, const std::vector<model::Transition>& transitions,
               TimeMs now) {
  json out = JobSummary(job, now);
  json stored = codec::ToJson(job);
  out["spec"] = stored["spec"];
  out["dependencies"] = stored["dependencies"];
  out["attempts"] = stored["attempts"];
  json timeline = {{"created", job.created_at}};
  if (const model::Attempt* attempt = job.current_attempt()) {
    timeline["ready"] = attempt->ready_at;
    timeline["dequeued"] = attempt->dequeued_at;
    timeline["admitted"] = attempt->admitted_at;
    timeline["placed"] = attempt->placed_at;
    timeline["workers_started"] = attempt->workers_started_at;
    timeline["running"] = attempt->running_at;
    timeline["finished"] = attempt->finished_at;
  }
  out["timeline"] = timeline;
  json history = json::array();
  for (const model::Transition& transition : transitions) {
    history.push_back(codec::ToJson(transition));
  }
  out["transitions"] = history;
  return out;
}

json NodeView(const model::Node& node, const model::Resources& free,
              const std::vector<int>& free_gpus) {
  json out = codec::ToJson(node);
  out["free"] = {{"cpu_millis", free.cpu_millis},
                 {"memory_bytes", free.memory_bytes},
                 {"gpus", free.gpus},
                 {"gpu_indices", free_gpus}};
  return out;
}

}  // namespace drover::api
