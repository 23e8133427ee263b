#include "drover/api/workflow_handlers.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "drover/api/views.h"
#include "drover/codec/json.h"
#include "drover/model/access.h"

namespace drover::api {
namespace {

using nlohmann::json;

// The jobs of the pipeline run named in the path.
Result<std::vector<model::Job>> PathPipelineRun(const Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(JobId id, PathJobId(request, "pipeline run"));
  return service.PipelineRun(id);
}

json RunView(const CronRun& run) {
  json jobs = json::array();
  for (JobId id : run.jobs) jobs.push_back(id.value());
  return json{{"id", run.id}, {"state", workflow::kRunStateNames.Name(run.state)}, {"jobs", jobs}};
}

json RunsView(const std::vector<CronRun>& runs) {
  json out = json::array();
  for (const CronRun& run : runs) out.push_back(RunView(run));
  return out;
}

}  // namespace

Result<Response> ListPipelines(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  const model::Policy policy = service.Policy();
  json runs = json::array();
  const TimeMs now = service.Now();
  for (const std::vector<model::Job>& run : service.PipelineRuns()) {
    if (!model::Visible(caller, model::Verb::kView, model::ResourceOf(run.front()), policy)) {
      continue;
    }
    runs.push_back(PipelineSummary(run, now));
  }
  return JsonResponse(200, json{{"pipelines", runs}});
}

Result<Response> GetPipeline(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(auto run, PathPipelineRun(service, request));
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  const Disclosure disclosure =
      DisclosureOf(caller, model::ResourceOf(run.front()), service.Policy());
  return JsonResponse(200, PipelineDetail(run, service.Now(), disclosure));
}

Result<Response> CancelPipeline(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(auto run, PathPipelineRun(service, request));
  const JobId id = run.front().pipeline_run;
  const json before = PipelineSummary(run, service.Now());
  if (before["finished_at"].get<TimeMs>() != 0) {
    return FailedPrecondition(fmt::format("pipeline run {} has already finished ({})", id.value(),
                                          before["state"].get<std::string>()));
  }
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  DROVER_RETURN_IF_ERROR(
      service.CancelPipeline(id, caller.user, "pipeline cancelled by " + model::Describe(caller)));
  DROVER_ASSIGN_OR_RETURN(auto after, service.PipelineRun(id));
  return JsonResponse(200, PipelineSummary(after, service.Now()));
}

Result<Response> PutCron(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(json body, JsonBody(request));
  DROVER_ASSIGN_OR_RETURN(model::CronSpec spec, codec::CronSpecFromJson(body, "request.body"));
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  DROVER_ASSIGN_OR_RETURN(CronStatus status, service.PutCron(spec, caller));
  return JsonResponse(200, CronView(status, Disclosure::kFull));  // the caller's own
}

Result<Response> ListCrons(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  json crons = VisibleViews(
      caller, service.Policy(), service.Crons(),
      [](const CronStatus& status) { return CronResource(status.record); }, &CronView);
  return JsonResponse(200, json{{"crons", std::move(crons)}});
}

Result<Response> DeleteCron(Service& service, const Request& request) {
  const std::string& name = request.path_params.at(0);
  DROVER_RETURN_IF_ERROR(service.DeleteCron(name));
  return JsonResponse(200, json{{"deleted", name}});
}

namespace {

// POST /v1/crons/{name}/suspend or /resume.
Result<Response> SetCronSuspended(Service& service, const Request& request, bool suspend) {
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  DROVER_ASSIGN_OR_RETURN(CronStatus status,
                          service.SuspendCron(request.path_params.at(0), suspend));
  return JsonResponse(
      200, CronView(status, DisclosureOf(caller, CronResource(status.record), service.Policy())));
}

}  // namespace

Result<Response> SuspendCron(Service& service, const Request& request) {
  return SetCronSuspended(service, request, true);
}

Result<Response> ResumeCron(Service& service, const Request& request) {
  return SetCronSuspended(service, request, false);
}

model::Resource CronResource(const store::CronRecord& cron) {
  const std::vector<model::JobSpec>& jobs = cron.spec.jobs;
  return model::Resource{fmt::format("cron job {}", cron.spec.name), cron.owner, cron.team,
                         jobs.empty() ? "" : jobs.front().queue, std::nullopt};
}

json CronView(const CronStatus& status, Disclosure disclosure) {
  const model::CronSpec& spec = status.record.spec;
  json spec_json = codec::ToJson(spec);
  if (disclosure == Disclosure::kRedacted && spec_json["jobs"].is_array()) {
    for (json& job : spec_json["jobs"]) RedactSpec(job);
  }
  return json{{"name", spec.name},
              {"schedule", spec.schedule},
              {"time_zone", spec.time_zone},
              {"concurrency_policy", model::ConcurrencyPolicyName(spec.concurrency_policy)},
              {"suspend", spec.suspend},
              {"owner", status.record.owner},
              {"team", status.record.team},
              {"created_at", status.record.created_at},
              {"last_handled_at", status.record.last_handled},
              {"next_run_at", status.next_run ? json(*status.next_run) : json(nullptr)},
              {"last_run", status.last ? RunView(*status.last) : json(nullptr)},
              {"active_runs", RunsView(status.active)},
              {"history", RunsView(status.history)},
              {"spec", spec_json}};
}

}  // namespace drover::api
