#include "drover/api/routes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <regex>

#include "drover/api/agent_handlers.h"
#include "drover/api/cluster_handlers.h"
#include "drover/api/job_handlers.h"
#include "drover/api/views.h"
#include "drover/api/workflow_handlers.h"

namespace drover::api {
namespace {

constexpr Route kRoutes[] = {
    {Method::kGet, "/v1/health", Health, Access::kAnyone, RouteKind::kInstant},
    {Method::kPost, "/v1/jobs", SubmitJobs, Access::kAnyone, RouteKind::kPlain,
     "a job spec (YAML or JSON)"},
    {Method::kGet, "/v1/jobs", ListJobs, Access::kAnyone},
    {Method::kGet, R"(/v1/jobs/(\d+))", GetJob, Access::kAnyone},
    {Method::kPost, R"(/v1/jobs/(\d+)/cancel)", CancelJob, Access::kAnyone},
    {Method::kGet, R"(/v1/jobs/(\d+)/explain)", ExplainJob, Access::kAnyone},
    {Method::kGet, R"(/v1/jobs/(\d+)/decisions)", JobDecisions, Access::kAnyone},
    {Method::kPost, R"(/v1/jobs/(\d+)/checkpoint)", CheckpointJob, Access::kAnyone},
    {Method::kPost, R"(/v1/jobs/(\d+)/report)", ReportJob, Access::kAnyone, RouteKind::kPlain,
     "a progress report (JSON)"},
    {Method::kGet, "/v1/pipelines", ListPipelines, Access::kAnyone},
    {Method::kGet, R"(/v1/pipelines/(\d+))", GetPipeline, Access::kAnyone},
    {Method::kPost, R"(/v1/pipelines/(\d+)/cancel)", CancelPipeline, Access::kAnyone},
    {Method::kGet, "/v1/goodput", GetGoodput, Access::kAnyone},
    {Method::kGet, "/v1/queues", ListQueues, Access::kAnyone},
    {Method::kGet, "/v1/policy", GetPolicy, Access::kAnyone},
    {Method::kPost, "/v1/policy/reload", ReloadPolicy, Access::kAnyone},
    {Method::kGet, R"(/v1/jobs/(\d+)/logs)", JobLogs, Access::kAnyone, RouteKind::kLongPoll},
    {Method::kPost, "/v1/crons", PutCron, Access::kAnyone, RouteKind::kPlain, "a cron spec (JSON)"},
    {Method::kGet, "/v1/crons", ListCrons, Access::kAnyone},
    {Method::kDelete, R"(/v1/crons/([^/]+))", DeleteCron, Access::kAnyone},
    {Method::kGet, "/v1/nodes", ListNodes, Access::kAnyone},
    {Method::kPost, "/v1/agents/register", RegisterAgent, Access::kAgentRegistration,
     RouteKind::kAgent, "a node (JSON)"},
    {Method::kGet, R"(/v1/agents/([^/]+)/commands)", TakeAgentCommands, Access::kAgentOfNode,
     RouteKind::kAgent},
    {Method::kPost, R"(/v1/agents/([^/]+)/events)", ReportAgentEvents, Access::kAgentOfNode,
     RouteKind::kAgent, R"({"events": [...]} (JSON))"},
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

namespace {

// The credential of "Authorization: Bearer CREDENTIAL" (the scheme in any case, as RFC 9110
// says); "" without the header. kUnauthenticated for another form.
Result<std::string> BearerOf(const Request& request) {
  if (!request.HasHeader(kAuthorizationHeader)) return std::string();
  const std::string value = request.Header(kAuthorizationHeader);
  constexpr std::string_view kScheme = "bearer ";
  const bool bearer = value.size() > kScheme.size() &&
                      std::equal(kScheme.begin(), kScheme.end(), value.begin(), [](char a, char b) {
                        return a == std::tolower(static_cast<unsigned char>(b));
                      });
  if (!bearer) {
    return Unauthenticated(fmt::format("{}: expected 'Bearer CREDENTIAL'", kAuthorizationHeader));
  }
  return value.substr(kScheme.size());
}

}  // namespace

Result<Caller> Authorize(const Route& route, const Service& service, const Request& request) {
  Caller caller;
  if (route.access == Access::kAnyone) return caller;
  if (route.access == Access::kUnstated) {
    return PermissionDenied(fmt::format("{} {} has no access rule", request.method, request.path));
  }
  DROVER_ASSIGN_OR_RETURN(const std::string credential, BearerOf(request));
  caller.bearer = !credential.empty();
  if (caller.bearer) caller.agent = service.AgentOf(credential);
  switch (route.access) {
    case Access::kUnstated:
    case Access::kAnyone:
      break;
    case Access::kAgentRegistration:
      caller.joined = service.JoinTokenAccepted(request.Header(kJoinTokenHeader));
      if (!caller.agent && !caller.joined) {
        return Unauthenticated(fmt::format(
            "{} {} needs the server's join token ({}; drover agent --join-token-file) or the "
            "node's credential ({}: Bearer ...)",
            request.method, request.path, kJoinTokenHeader, kAuthorizationHeader));
      }
      break;
    case Access::kAgentOfNode: {
      const std::string& node = request.path_params.at(0);
      if (!caller.bearer) {
        return Unauthenticated(fmt::format(
            "{} {} needs the credential node {} was issued at registration ({}: Bearer ...)",
            request.method, request.path, node, kAuthorizationHeader));
      }
      if (!caller.agent) {
        return Unauthenticated(fmt::format(
            "{} {}: the credential presented is no node's (replaced when the node was taken over, "
            "or unknown to this server); register again",
            request.method, request.path));
      }
      if (caller.agent->value() != node) {
        return PermissionDenied(
            fmt::format("{} {}: the credential of node {} does not act for "
                        "node {}",
                        request.method, request.path, caller.agent->value(), node));
      }
      break;
    }
  }
  return caller;
}

Response Handle(const Route& route, Service& service, Request request) {
  Result<Caller> caller = Authorize(route, service, request);
  if (!caller) return ErrorResponse(caller.error());
  request.caller = *std::move(caller);
  if (!route.body.empty() && request.body.empty()) {
    return ErrorResponse(Error{ErrorCode::kInvalidArgument,
                               fmt::format("request body: missing; {} {} takes {}", request.method,
                                           request.path, route.body),
                               {}});
  }
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
  request.path_params = std::move(resolution.params);
  return Handle(*resolution.route, service, std::move(request));
}

}  // namespace drover::api
