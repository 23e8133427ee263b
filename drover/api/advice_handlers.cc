#include "drover/api/advice_handlers.h"

#include <string>
#include <utility>
#include <vector>

#include "drover/model/access.h"
#include "drover/model/advice.h"

namespace drover::api {
namespace {

using nlohmann::json;

// AdviceView (advice_handlers.h) of `job` from the history of its name.
Result<json> AdviceOf(const Service& service, const model::Identity& caller,
                      const model::Job& job) {
  JobPageRequest history_request;
  history_request.filter.name = job.spec.name;
  history_request.filter.team = job.spec.team;
  history_request.newest_first = true;
  history_request.limit = kMaxAdviceHistoryJobs;
  history_request.visible = [caller, policy = service.Policy()](const model::Job& other) {
    return model::Visible(caller, model::Verb::kView, model::ResourceOf(other), policy);
  };
  const DurationMs min_sampled = service.DiagnosisThresholds().min_sampled_ms;
  std::vector<model::UsageRecord> history;
  for (const JobSummaryRow& row : service.ListJobPage(history_request).jobs) {
    // The page holds summaries; the history needs whole jobs (at most kMaxAdviceHistoryJobs).
    DROVER_ASSIGN_OR_RETURN(model::Job listed, service.GetJob(row.id));
    DROVER_ASSIGN_OR_RETURN(std::vector<model::AttemptUsage> usage, service.Usage(listed.id));
    for (model::UsageRecord& record : model::UsageRecordsOf(listed, usage, min_sampled)) {
      history.push_back(std::move(record));
    }
  }
  model::AdviceOptions options;
  std::vector<model::Node> nodes;
  for (NodeStatus& status : service.Nodes()) nodes.push_back(std::move(status.node));
  options.mig_offers = model::MigOffersOf(nodes);
  const model::Advice advice = model::Advise(job.spec, history, service.Now(), options);
  json recommendations = json::array();
  for (const model::Recommendation& r : advice.recommendations) {
    recommendations.push_back(json{{"field", r.field},
                                   {"current", r.current},
                                   {"target", r.target},
                                   {"evidence", r.evidence}});
  }
  return json{{"name", job.spec.name},
              {"job_id", job.id.value()},
              {"history", advice.history},
              {"span_ms", advice.span_ms},
              {"confidence", advice.confidence},
              {"no_advice", advice.no_advice},
              {"recommendations", std::move(recommendations)},
              {"patch", advice.Patch()}};
}

}  // namespace

Result<Response> JobAdvice(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(JobId id, PathJobId(request));
  DROVER_ASSIGN_OR_RETURN(model::Job job, service.GetJob(id));
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  DROVER_ASSIGN_OR_RETURN(json advice, AdviceOf(service, caller, job));
  return JsonResponse(200, json{{"advice", json::array({std::move(advice)})}});
}

Result<Response> PipelineAdvice(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(JobId id, PathJobId(request, "pipeline run"));
  DROVER_ASSIGN_OR_RETURN(std::vector<model::Job> run, service.PipelineRun(id));
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  json advice = json::array();
  for (const model::Job& job : run) {
    DROVER_ASSIGN_OR_RETURN(json one, AdviceOf(service, caller, job));
    advice.push_back(std::move(one));
  }
  return JsonResponse(200, json{{"advice", std::move(advice)}});
}

}  // namespace drover::api
