#include "drover/api/views.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "drover/codec/json.h"
#include "drover/model/metrics.h"
#include "drover/workflow/rollup.h"
#include "drover/workflow/trials.h"

namespace drover::api {

using nlohmann::json;

int HttpStatusFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return 400;
    case ErrorCode::kUnauthenticated:
      return 401;
    case ErrorCode::kPermissionDenied:
      return 403;
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

JobSummaryRow SummaryRowOf(const model::Job& job, TimeMs now) {
  const model::JobSpec& spec = job.spec;
  return JobSummaryRow{
      .id = job.id,
      .name = spec.name,
      .owner = spec.owner,
      .team = spec.team,
      .queue = spec.queue,
      .priority = spec.priority_class,
      .state = job.state,
      .workers = spec.workers,
      .gpus = static_cast<std::int64_t>(spec.workers) * spec.requirements.per_worker.gpus,
      .created_at = job.created_at,
      .finished_at = job.finished_at,
      .message = job.status_message,
      .hold = job.hold,
      .metrics = model::ComputeMetrics(job, now),
      .position = std::nullopt};
}

void WriteJobSummary(codec::JsonWriter& out, const JobSummaryRow& row) {
  const model::JobMetrics& metrics = row.metrics;
  out.BeginObject();
  out.IntMember("attempt", metrics.attempts);
  out.IntMember("created_at", row.created_at);
  out.IntMember("finished_at", row.finished_at);
  out.IntMember("gpus", row.gpus);
  out.Key("hold");
  if (row.hold) {
    out.BeginObject();
    out.StringMember("by", row.hold->by);
    out.StringMember("reason", row.hold->reason);
    out.IntMember("since", row.hold->since);
    out.EndObject();
  } else {
    out.Null();
  }
  out.IntMember("id", row.id.value());
  out.StringMember("message", row.message);
  out.Key("metrics");
  out.BeginObject();
  out.DoubleMember("gpu_hours", metrics.gpu_hours());
  out.IntMember("queue_wait_ms", metrics.queue_wait);
  out.IntMember("run_time_ms", metrics.run_time);
  out.IntMember("startup_ms", metrics.startup);
  out.IntMember("total_ms", metrics.total);
  out.EndObject();
  out.StringMember("name", row.name);
  out.StringMember("owner", row.owner);
  if (row.position) {
    out.Key("position");
    out.BeginObject();
    out.IntMember("in_cluster", row.position->in_cluster);
    out.IntMember("in_queue", row.position->in_queue);
    out.StringMember("queue", row.position->queue);
    out.EndObject();
  }
  out.StringMember("priority", row.priority);
  out.StringMember("queue", row.queue);
  out.StringMember("state", model::JobStateName(row.state));
  out.StringMember("team", row.team);
  out.IntMember("workers", row.workers);
  out.EndObject();
}

json JobSummary(const model::Job& job, TimeMs now) {
  std::string text;
  codec::JsonWriter writer(text);
  WriteJobSummary(writer, SummaryRowOf(job, now));
  return json::parse(text);
}

Disclosure DisclosureOf(const model::Identity& caller, const model::Resource& resource,
                        const model::Policy& policy) {
  return model::Visible(caller, model::Verb::kDetails, resource, policy) ? Disclosure::kFull
                                                                         : Disclosure::kRedacted;
}

void RedactSpec(json& spec) {
  if (spec.contains("command") && spec["command"].is_array()) {
    for (json& arg : spec["command"]) arg = kRedacted;
  }
  if (spec.contains("script") && spec["script"].is_string() &&
      !spec["script"].get<std::string>().empty()) {
    spec["script"] = kRedacted;
  }
  if (spec.contains("env") && spec["env"].is_object()) {
    for (auto& [name, value] : spec["env"].items()) value = kRedacted;
  }
}

json JobDetail(const model::Job& job, const std::vector<model::Transition>& transitions, TimeMs now,
               Disclosure disclosure) {
  json out = JobSummary(job, now);
  json stored = codec::ToJson(job);
  out["spec"] = stored["spec"];
  if (disclosure == Disclosure::kRedacted) RedactSpec(out["spec"]);
  out["dependencies"] = stored["dependencies"];
  out["attempts"] = stored["attempts"];
  const std::vector<model::AttemptCost> costs = model::ComputeAttemptCosts(job, now);
  for (std::size_t i = 0; i < job.attempts.size(); ++i) {
    json& attempt = out["attempts"][i];
    attempt.update(GoodputView(job.attempts[i]));
    attempt["cause"] = costs[i].cause;
    // The job's state after an attempt it came back from is ready; the attempt was not.
    if (job.attempts[i].outcome == model::JobState::kReady) {
      attempt["outcome"] = model::WasPreempted(job.attempts[i]) ? "preempted" : "requeued";
    }
    attempt["gpu_seconds"] = static_cast<double>(costs[i].gpu_ms) / 1000.0;
    attempt["lost_gpu_seconds"] = static_cast<double>(costs[i].lost_gpu_ms) / 1000.0;
    // The values a worker's node reported are the job's outputs: for those who may see them.
    if (disclosure != Disclosure::kFull && attempt.contains("workers")) {
      for (json& worker : attempt["workers"]) {
        if (worker.contains("exit")) worker["exit"].erase("output_values");
      }
    }
  }
  out["split"] = SplitView(model::ComputeSplit(job, now));
  if (disclosure == Disclosure::kFull) out["outputs"] = json(job.outputs);
  if (job.pipeline_run != JobId()) out["pipeline_run"] = job.pipeline_run.value();
  if (!job.run_as.empty()) out["run_as"] = job.run_as;
  if (job.may_run_as_root) out["may_run_as_root"] = true;
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
  json out{{"useful_work_at", attempt.useful_work_at},
           {"progress", attempt.progress >= 0 ? json(attempt.progress) : json(nullptr)},
           {"throughput", nullptr},
           {"throughput_unit", nullptr}};
  if (attempt.throughput >= 0) {
    out["throughput"] = attempt.throughput;
    out["throughput_unit"] = attempt.throughput_unit;
  }
  return out;
}

json WorkRatesView(const std::optional<model::WorkRates>& rates) {
  if (!rates) return nullptr;
  auto optional = [](const std::optional<double>& value) { return value ? json(*value) : json(); };
  return json{{"throughput", rates->throughput},
              {"unit", rates->unit},
              {"work_unit", rates->work_unit},
              {"per_gpu_hour", optional(rates->per_gpu_hour)},
              {"per_joule", optional(rates->per_joule)}};
}

json SplitView(const model::LifecycleSplit& split) {
  json out = json::object();
  for (const SplitPhase& phase : kSplitPhases) {
    out[std::string(phase.name) + "_ms"] = split.*phase.field;
  }
  return out;
}

namespace {

double Hours(std::int64_t gpu_ms) { return static_cast<double>(gpu_ms) / 3'600'000.0; }

}  // namespace

json GoodputTotals(const model::Goodput& goodput) {
  return json{{"jobs", goodput.jobs},
              {"succeeded", goodput.succeeded},
              {"gpu_hours", Hours(goodput.gpu_ms)},
              {"gpu_hours_per_result", goodput.GpuHoursPerResult()},
              {"retry_lost_gpu_hours", Hours(goodput.retry_lost_gpu_ms)},
              {"preemption_lost_gpu_hours", Hours(goodput.preemption_lost_gpu_ms)},
              {"split", SplitView(goodput.split)}};
}

Result<json> GoodputReport(const std::vector<model::Job>& jobs, std::string_view by, TimeMs since,
                           TimeMs now) {
  std::string model::JobSpec::*key = nullptr;
  if (by == "queue") key = &model::JobSpec::queue;
  if (by == "team") key = &model::JobSpec::team;
  if (by == "owner") key = &model::JobSpec::owner;
  if (key == nullptr) {
    return InvalidArgument(
        fmt::format("query parameter by: expected queue, team or owner, got '{}'", by));
  }
  std::map<std::string, model::Goodput> groups;
  model::Goodput total;
  for (const model::Job& job : jobs) {
    if (job.created_at < since) continue;
    groups[job.spec.*key].Add(job, now);
    total.Add(job, now);
  }
  json rows = json::array();
  for (const auto& [name, goodput] : groups) {
    json row = {{"name", name}};
    row.update(GoodputTotals(goodput));
    rows.push_back(row);
  }
  return json{{"by", by}, {"since", since}, {"groups", rows}, {"total", GoodputTotals(total)}};
}

namespace {

// A job of a pipeline stage: its trial, times and outputs.
json StageJobView(const model::Job& job, TimeMs now, Disclosure disclosure) {
  const model::JobMetrics metrics = model::ComputeMetrics(job, now);
  const model::TrialSpec& trial = job.spec.trial;
  const model::Attempt* first = job.attempts.empty() ? nullptr : &job.attempts.front();
  const model::Attempt* last = job.current_attempt();
  return json{
      {"id", job.id.value()},
      {"name", job.spec.name},
      {"state", model::JobStateName(job.state)},
      {"trial",
       trial.index == 0
           ? json(nullptr)
           : json{{"index", trial.index}, {"count", trial.count}, {"params", trial.params}}},
      {"attempts", metrics.attempts},
      {"created_at", job.created_at},
      {"released_at", job.released_at},
      {"ready_at", first ? first->ready_at : 0},
      {"running_at", last ? last->running_at : 0},
      {"finished_at", job.finished_at},
      {"queue_wait_ms", metrics.queue_wait},
      {"run_time_ms", metrics.run_time},
      {"gpu_hours", metrics.gpu_hours()},
      {"outputs", disclosure == Disclosure::kFull ? json(job.outputs) : json(nullptr)},
      {"message", job.status_message},
  };
}

json StageView(const workflow::StageStatus& stage, TimeMs now, Disclosure disclosure) {
  const model::JobSpec& spec = stage.jobs.front()->spec;
  json depends_on = json::array();
  for (const model::Dependency& dependency : spec.depends_on) {
    depends_on.push_back({{"stage", dependency.name},
                          {"condition", model::DependencyConditionName(dependency.condition)}});
  }
  json jobs = json::array();
  TimeMs started_at = 0;
  TimeMs finished_at = 0;
  DurationMs queue_wait = 0;
  DurationMs run_time = 0;
  for (const model::Job* job : stage.jobs) {
    json view = StageJobView(*job, now, disclosure);
    const TimeMs running_at = view["running_at"].get<TimeMs>();
    if (running_at != 0 && (started_at == 0 || running_at < started_at)) started_at = running_at;
    finished_at = std::max(finished_at, job->finished_at);
    queue_wait += view["queue_wait_ms"].get<DurationMs>();
    run_time += view["run_time_ms"].get<DurationMs>();
    jobs.push_back(std::move(view));
  }
  // A sweep with an objective: its metric, goal and best trial (shown only with the outputs).
  json objective = nullptr;
  if (const model::TrialSpec& trial = spec.trial; trial.index != 0 && !trial.objective.empty()) {
    const std::optional<int> best =
        disclosure == Disclosure::kFull ? workflow::BestTrialOf(stage.jobs) : std::nullopt;
    objective = json{{"metric", trial.objective},
                     {"goal", trial.maximize ? "maximize" : "minimize"},
                     {"best_trial", best ? json(*best) : json(nullptr)}};
  }
  const bool finished = stage.upstream != workflow::UpstreamState::kUnfinished;
  return json{
      {"name", stage.name},          {"state", workflow::kStageStateNames.Name(stage.state)},
      {"depends_on", depends_on},    {"if", spec.run_if},
      {"started_at", started_at},    {"finished_at", finished ? finished_at : 0},
      {"queue_wait_ms", queue_wait}, {"run_time_ms", run_time},
      {"objective", objective},      {"jobs", jobs}};
}

std::vector<const model::Job*> Pointers(const std::vector<model::Job>& jobs) {
  std::vector<const model::Job*> out;
  for (const model::Job& job : jobs) out.push_back(&job);
  return out;
}

json SummaryOf(const std::vector<const model::Job*>& run, const workflow::RunStatus& status,
               TimeMs now) {
  const model::JobSpec& first = run.front()->spec;
  std::map<std::string, int> counts;
  for (const model::Job* job : run) ++counts[std::string(model::JobStateName(job->state))];
  const int done = static_cast<int>(std::count_if(
      status.stages.begin(), status.stages.end(),
      [](const auto& stage) { return stage.upstream != workflow::UpstreamState::kUnfinished; }));
  const TimeMs end = status.finished_at != 0 ? status.finished_at : now;
  return json{{"id", run.front()->pipeline_run.value()},
              {"name", first.pipeline.empty() ? first.name : first.pipeline},
              {"owner", first.owner},
              {"queue", first.queue},
              {"state", workflow::kRunStateNames.Name(status.state)},
              {"created_at", status.created_at},
              {"finished_at", status.finished_at},
              {"wall_ms", std::max<DurationMs>(end - status.created_at, 0)},
              {"stages_total", status.stages.size()},
              {"stages_done", done},
              {"jobs", counts}};
}

}  // namespace

json PipelineSummary(const std::vector<model::Job>& jobs, TimeMs now) {
  const std::vector<const model::Job*> run = Pointers(jobs);
  return SummaryOf(run, workflow::RollUp(run), now);
}

json PipelineDetail(const std::vector<model::Job>& jobs, TimeMs now, Disclosure disclosure) {
  const std::vector<const model::Job*> run = Pointers(jobs);
  const workflow::RunStatus status = workflow::RollUp(run);
  json out = SummaryOf(run, status, now);
  json stages = json::array();
  for (const workflow::StageStatus& stage : status.stages) {
    stages.push_back(StageView(stage, now, disclosure));
  }
  out["stages"] = stages;
  out["split"] = SplitView(model::ComputePipelineSplit(run, now));
  model::Goodput goodput;
  for (const model::Job* job : run) goodput.Add(*job, now);
  out["goodput"] = GoodputTotals(goodput);
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

json PositionView(const control::QueuePosition& position) {
  return json{{"queue", position.queue},
              {"in_queue", position.in_queue},
              {"in_cluster", position.in_cluster}};
}

json ExplanationView(JobId id, const control::Explanation& explanation) {
  json body{{"id", id.value()},
            {"state", model::JobStateName(explanation.state)},
            {"layer", model::kHoldLayerNames.Name(explanation.layer)},
            {"message", explanation.message},
            {"estimated_start", nullptr},
            {"estimate_basis", explanation.estimate_basis}};
  if (explanation.estimated_start) body["estimated_start"] = *explanation.estimated_start;
  if (explanation.position) {
    body["position"] = PositionView(*explanation.position);
    json ahead = json::array();
    for (JobId job : explanation.position->ahead) ahead.push_back(job.value());
    body["position"]["ahead"] = std::move(ahead);
  }
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

json FindingsView(const std::vector<model::Finding>& findings) {
  json out = json::array();
  for (const model::Finding& finding : findings) {
    out.push_back(json{{"kind", model::kFindingKindNames.Name(finding.kind)},
                       {"evidence", finding.evidence},
                       {"threshold", finding.threshold}});
  }
  return out;
}

json UsageSummariesView(const std::vector<model::AttemptUsage>& usage) {
  json out = json::array();
  for (const model::AttemptUsage& attempt : usage) {
    out.push_back(json{{"attempt", attempt.attempt}, {"summary", codec::ToJson(attempt.summary)}});
  }
  return out;
}

}  // namespace drover::api
