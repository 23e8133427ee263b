#include "drover/api/routes.h"

#include "drover/api/agent_handlers.h"
#include "drover/api/cluster_handlers.h"
#include "drover/api/job_handlers.h"
#include "drover/api/workflow_handlers.h"

namespace drover::api {
namespace {

constexpr Route kRoutes[] = {
    {Method::kGet, "/v1/health", Health},
    {Method::kPost, "/v1/jobs", SubmitJobs},
    {Method::kGet, "/v1/jobs", ListJobs},
    {Method::kGet, R"(/v1/jobs/(\d+))", GetJob},
    {Method::kPost, R"(/v1/jobs/(\d+)/cancel)", CancelJob},
    {Method::kGet, R"(/v1/jobs/(\d+)/explain)", ExplainJob},
    {Method::kGet, R"(/v1/jobs/(\d+)/decisions)", JobDecisions},
    {Method::kPost, R"(/v1/jobs/(\d+)/checkpoint)", CheckpointJob},
    {Method::kPost, R"(/v1/jobs/(\d+)/report)", ReportJob},
    {Method::kGet, "/v1/pipelines", ListPipelines},
    {Method::kGet, R"(/v1/pipelines/(\d+))", GetPipeline},
    {Method::kPost, R"(/v1/pipelines/(\d+)/cancel)", CancelPipeline},
    {Method::kGet, "/v1/goodput", GetGoodput},
    {Method::kGet, "/v1/queues", ListQueues},
    {Method::kGet, "/v1/policy", GetPolicy},
    {Method::kPost, "/v1/policy/reload", ReloadPolicy},
    {Method::kGet, R"(/v1/jobs/(\d+)/logs)", JobLogs},
    {Method::kPost, "/v1/crons", PutCron},
    {Method::kGet, "/v1/crons", ListCrons},
    {Method::kDelete, R"(/v1/crons/([^/]+))", DeleteCron},
    {Method::kGet, "/v1/nodes", ListNodes},
    {Method::kPost, "/v1/agents/register", RegisterAgent},
    {Method::kGet, R"(/v1/agents/([^/]+)/commands)", TakeAgentCommands},
    {Method::kPost, R"(/v1/agents/([^/]+)/events)", ReportAgentEvents},
};

}  // namespace

std::string_view MethodName(Method method) {
  switch (method) {
    case Method::kGet:
      return "GET";
    case Method::kPost:
      return "POST";
    case Method::kDelete:
      return "DELETE";
  }
  return "?";
}

std::span<const Route> Routes() { return kRoutes; }

Response Handle(const Route& route, Service& service, const Request& request) {
  Result<Response> response = route.handler(service, request);
  if (!response) return ErrorResponse(response.error());
  return *std::move(response);
}

}  // namespace drover::api
