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
  for (std::size_t i = 0; i < job.attempts.size(); ++i) {
    out["attempts"][i].update(GoodputView(job.attempts[i]));
  }
  json timeline = {{"created", job.created_at}};
  if (const model::Attempt* attempt = job.current_attempt()) {
    timeline["ready"] = attempt->ready_at;
    timeline["dequeued"] = attempt->dequeued_at;
    timeline["admitted"] = attempt->admitted_at;
    timeline["placed"] = attempt->placed_at;
    timeline["workers_started"] = attempt->workers_started_at;
    timeline["running"] = attempt->running_at;
    timeline["useful_work"] = attempt->useful_work_at;
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

json GoodputView(const model::Attempt& attempt) {
  return json{{"useful_work_at", attempt.useful_work_at},
              {"progress", attempt.progress >= 0 ? json(attempt.progress) : json(nullptr)}};
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

json ExplanationView(JobId id, const control::Explanation& explanation) {
  json body{{"id", id.value()},
            {"state", model::JobStateName(explanation.state)},
            {"layer", explanation.layer},
            {"message", explanation.message},
            {"estimated_start", nullptr}};
  if (explanation.estimated_start) body["estimated_start"] = *explanation.estimated_start;
  if (explanation.placement) {
    const sched::PendingReason& reason = *explanation.placement;
    json excluded = json::object();
    for (const auto& [cause, count] : reason.excluded) excluded[cause] = count;
    body["placement"] = {
        {"eligible_nodes", reason.eligible_nodes},
        {"largest_free_gpus", reason.largest_free_gpus},
        {"largest_free_node", reason.largest_free_node ? reason.largest_free_node->value() : ""},
        {"excluded", excluded}};
  }
  return body;
}

namespace {

json Amounts(const model::ResourceAmounts& amounts) {
  json out = json::object();
  for (const auto& [name, amount] : amounts) out[name] = amount;
  return out;
}

// The "gpu" amount (milli-GPUs) in whole GPUs; 0 when absent.
double WholeGpus(const model::ResourceAmounts& amounts) {
  auto it = amounts.find("gpu");
  return it == amounts.end() ? 0.0 : static_cast<double>(it->second) / 1000.0;
}

}  // namespace

json QueueView(const control::QueueReport& report) {
  const sched::QueueStatus& q = report.status;
  json gpus{{"nominal", nullptr},
            {"usage", WholeGpus(q.usage)},
            {"borrowed", WholeGpus(q.borrowed)},
            {"lent", WholeGpus(q.lent)}};
  if (q.nominal.contains("gpu")) gpus["nominal"] = WholeGpus(q.nominal);
  return json{{"name", q.name},
              {"path", q.path},
              {"depth", q.depth},
              {"leaf", q.leaf},
              {"weight", q.weight},
              {"nominal", Amounts(q.nominal)},
              {"usage", Amounts(q.usage)},
              {"borrowed", Amounts(q.borrowed)},
              {"lent", Amounts(q.lent)},
              {"gpus", gpus},
              {"share", q.share},
              {"running_jobs", q.running_jobs},
              {"pending_jobs", report.pending_jobs}};
}

json DecisionsView(const std::vector<model::Decision>& decisions) {
  json out = json::array();
  for (const model::Decision& decision : decisions) out.push_back(codec::ToJson(decision));
  return json{{"decisions", out}};
}

}  // namespace drover::api
