#include "drover/api/routes.h"

#include <fmt/format.h>

#include <algorithm>
#include <regex>

#include "drover/api/agent_handlers.h"
#include "drover/api/cluster_handlers.h"
#include "drover/api/job_handlers.h"
#include "drover/api/views.h"
#include "drover/api/workflow_handlers.h"

namespace drover::api {
namespace {

constexpr Route kRoutes[] = {
    {Method::kGet, "/v1/health", Health},
    {Method::kPost, "/v1/jobs", SubmitJobs, RouteKind::kPlain, "a job spec (YAML or JSON)"},
    {Method::kGet, "/v1/jobs", ListJobs},
    {Method::kGet, R"(/v1/jobs/(\d+))", GetJob},
    {Method::kPost, R"(/v1/jobs/(\d+)/cancel)", CancelJob},
    {Method::kGet, R"(/v1/jobs/(\d+)/explain)", ExplainJob},
    {Method::kGet, R"(/v1/jobs/(\d+)/decisions)", JobDecisions},
    {Method::kPost, R"(/v1/jobs/(\d+)/checkpoint)", CheckpointJob},
    {Method::kPost, R"(/v1/jobs/(\d+)/report)", ReportJob, RouteKind::kPlain,
     "a progress report (JSON)"},
    {Method::kGet, "/v1/pipelines", ListPipelines},
    {Method::kGet, R"(/v1/pipelines/(\d+))", GetPipeline},
    {Method::kPost, R"(/v1/pipelines/(\d+)/cancel)", CancelPipeline},
    {Method::kGet, "/v1/goodput", GetGoodput},
    {Method::kGet, "/v1/queues", ListQueues},
    {Method::kGet, "/v1/policy", GetPolicy},
    {Method::kPost, "/v1/policy/reload", ReloadPolicy},
    {Method::kGet, R"(/v1/jobs/(\d+)/logs)", JobLogs, RouteKind::kLongPoll},
    {Method::kPost, "/v1/crons", PutCron, RouteKind::kPlain, "a cron spec (JSON)"},
    {Method::kGet, "/v1/crons", ListCrons},
    {Method::kDelete, R"(/v1/crons/([^/]+))", DeleteCron},
    {Method::kGet, "/v1/nodes", ListNodes},
    {Method::kPost, "/v1/agents/register", RegisterAgent, RouteKind::kAgent, "a node (JSON)"},
    {Method::kGet, R"(/v1/agents/([^/]+)/commands)", TakeAgentCommands, RouteKind::kAgent},
    {Method::kPost, R"(/v1/agents/([^/]+)/events)", ReportAgentEvents, RouteKind::kAgent,
     R"({"events": [...]} (JSON))"},
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

namespace {

// kRoutes' patterns, compiled once.
const std::vector<std::regex>& Patterns() {
  static const std::vector<std::regex> patterns = [] {
    std::vector<std::regex> compiled;
    for (const Route& route : kRoutes) compiled.emplace_back(std::string(route.pattern));
    return compiled;
  }();
  return patterns;
}

}  // namespace

Resolution Resolve(std::string_view method, const std::string& path) {
  Resolution resolution;
  const std::vector<std::regex>& patterns = Patterns();
  for (std::size_t i = 0; i < std::size(kRoutes); ++i) {
    std::smatch match;
    if (!std::regex_match(path, match, patterns[i])) continue;
    if (MethodName(kRoutes[i].method) != method) {
      resolution.allowed.push_back(kRoutes[i].method);
      continue;
    }
    resolution.route = &kRoutes[i];
    for (std::size_t group = 1; group < match.size(); ++group) {
      resolution.params.push_back(match[group]);
    }
    return resolution;
  }
  return resolution;
}

Response Serve(Service& service, Request request) {
  Resolution resolution = Resolve(request.method, request.path);
  if (!resolution.route && resolution.allowed.empty()) {
    return ErrorResponse(Error{ErrorCode::kNotFound,
                               fmt::format("no such endpoint: {} {}", request.method, request.path),
                               {}});
  }
  if (!resolution.route) {
    std::sort(resolution.allowed.begin(), resolution.allowed.end());
    std::string allowed;
    for (Method method : resolution.allowed) {
      allowed += (allowed.empty() ? "" : ", ") + std::string(MethodName(method));
    }
    Response response =
        JsonResponse(405, ErrorBody(Error{ErrorCode::kInvalidArgument,
                                          fmt::format("{} does not take {}; it takes {}",
                                                      request.path, request.method, allowed),
                                          {}}));
    response.headers["Allow"] = allowed;
    return response;
  }
  const Route& route = *resolution.route;
  if (!route.body.empty() && request.body.empty()) {
    return ErrorResponse(Error{ErrorCode::kInvalidArgument,
                               fmt::format("request body: missing; {} {} takes {}", request.method,
                                           request.path, route.body),
                               {}});
  }
  request.path_params = std::move(resolution.params);
  return Handle(route, service, request);
}

}  // namespace drover::api
