#include "drover/api/cluster_handlers.h"

#include <string>
#include <vector>

#include "drover/api/node_handlers.h"
#include "drover/api/views.h"
#include "drover/codec/json.h"
#include "drover/model/access.h"

namespace drover::api {
namespace {

using nlohmann::json;

// GET /v1/policy and a successful POST /v1/policy/reload.
json PolicyBody(const PolicyStatus& status) {
  return json{
      {"policy", codec::ToJson(status.policy)},
      {"file", status.file},
      {"loaded_at", status.loaded_at},
      {"reload_error", status.reload_error ? ErrorBody(*status.reload_error) : json(nullptr)},
      {"history_dropped", status.history_dropped}};
}

}  // namespace

Result<Response> Health(Service& service, const Request&) {
  return JsonResponse(200, json{{"status", "ok"}, {"time", service.Now()}});
}

Result<Response> GetMetrics(Service& service, const Request&) {
  Response response;
  response.body = service.MetricsText();
  response.content_type = "text/plain; version=0.0.4; charset=utf-8";
  return response;
}

Result<Response> ListNodes(Service& service, const Request&) {
  json nodes = json::array();
  const TimeMs now = service.Now();
  for (const NodeStatus& status : service.Nodes()) nodes.push_back(NodeStatusView(status, now));
  return JsonResponse(200, json{{"nodes", nodes}});
}

Result<Response> ListQueues(Service& service, const Request&) {
  json queues = json::array();
  for (const control::QueueReport& report : service.Queues()) queues.push_back(QueueView(report));
  return JsonResponse(200, json{{"queues", queues}, {"policy", codec::ToJson(service.Policy())}});
}

Result<Response> GetPolicy(Service& service, const Request&) {
  return JsonResponse(200, PolicyBody(service.PolicyInfo()));
}

Result<Response> ReloadPolicy(Service& service, const Request&) {
  DROVER_RETURN_IF_ERROR(service.ReloadPolicy());
  return JsonResponse(200, PolicyBody(service.PolicyInfo()));
}

Result<Response> GetGoodput(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(std::int64_t since, IntQuery(request, "since", 0));
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  const model::Policy policy = service.Policy();
  std::vector<model::Job> jobs = service.ListJobs(store::JobFilter{});
  // GET /v1/jobs's rule: under private_data another team's jobs (their names and totals) stay out.
  std::erase_if(jobs, [&](const model::Job& job) {
    return !model::Visible(caller, model::Verb::kView, model::ResourceOf(job), policy);
  });
  DROVER_ASSIGN_OR_RETURN(json report,
                          GoodputReport(jobs, request.Query("by", "queue"), since, service.Now()));
  return JsonResponse(200, report);
}

}  // namespace drover::api
