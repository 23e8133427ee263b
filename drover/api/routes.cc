#include "drover/api/routes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <regex>

#include "drover/api/advice_handlers.h"
#include "drover/api/agent_handlers.h"
#include "drover/api/cluster_handlers.h"
#include "drover/api/diagnosis_handlers.h"
#include "drover/api/event_handlers.h"
#include "drover/api/gpu_handlers.h"
#include "drover/api/identity_handlers.h"
#include "drover/api/job_handlers.h"
#include "drover/api/job_verb_handlers.h"
#include "drover/api/node_handlers.h"
#include "drover/api/openapi.h"
#include "drover/api/secret_handlers.h"
#include "drover/api/service_handlers.h"
#include "drover/api/views.h"
#include "drover/api/web_assets.h"
#include "drover/api/workflow_handlers.h"
#include "drover/model/access.h"
#include "drover/spec/limits.h"

namespace drover::api {
namespace {

using model::Verb;

constexpr Route kRoutes[] = {
    {Method::kGet, "/v1/health", Health, Public(), RouteKind::kInstant},
    {Method::kGet, "/", GetWebIndex, Public(), RouteKind::kInstant},
    {Method::kGet, "/index.html", GetWebIndex, Public(), RouteKind::kInstant},
    {Method::kGet, R"(/assets/([A-Za-z0-9_.-]+))", GetWebAsset, Public(), RouteKind::kInstant},
    {Method::kGet, "/v1/openapi.json", GetOpenApi, ByToken(Verb::kView)},
    {Method::kPost, "/v1/jobs", SubmitJobs, ByToken(Verb::kSubmit, Target::kBody),
     RouteKind::kPlain, "a job spec (YAML or JSON)"},
    {Method::kGet, "/v1/jobs", ListJobs, ByToken(Verb::kView)},
    {Method::kGet, R"(/v1/jobs/(\d+))", GetJob, ByToken(Verb::kView, Target::kJob)},
    {Method::kPost, R"(/v1/jobs/(\d+)/cancel)", CancelJob, ByToken(Verb::kCancel, Target::kJob)},
    {Method::kPost, R"(/v1/jobs/(\d+)/hold)", HoldJob, ByToken(Verb::kHold, Target::kJob)},
    {Method::kPost, R"(/v1/jobs/(\d+)/release)", ReleaseJob, ByToken(Verb::kHold, Target::kJob)},
    {Method::kPost, R"(/v1/jobs/(\d+)/update)", UpdateJob, ByToken(Verb::kHold, Target::kJob),
     RouteKind::kPlain, "the fields to change (JSON)"},
    {Method::kPost, R"(/v1/jobs/(\d+)/requeue)", RequeueJob, ByToken(Verb::kHold, Target::kJob)},
    {Method::kGet, R"(/v1/jobs/(\d+)/explain)", ExplainJob, ByToken(Verb::kView, Target::kJob)},
    {Method::kGet, R"(/v1/jobs/(\d+)/decisions)", JobDecisions, ByToken(Verb::kView, Target::kJob)},
    {Method::kGet, R"(/v1/jobs/(\d+)/usage)", JobUsage, ByToken(Verb::kView, Target::kJob)},
    {Method::kGet, R"(/v1/jobs/(\d+)/advice)", JobAdvice, ByToken(Verb::kView, Target::kJob)},
    {Method::kPost, R"(/v1/jobs/(\d+)/checkpoint)", CheckpointJob,
     ByToken(Verb::kReport, Target::kJob)},
    {Method::kPost, R"(/v1/jobs/(\d+)/report)", ReportJob, ByToken(Verb::kReport, Target::kJob),
     RouteKind::kPlain, "a progress report (JSON)"},
    {Method::kGet, "/v1/pipelines", ListPipelines, ByToken(Verb::kView)},
    {Method::kGet, R"(/v1/pipelines/(\d+))", GetPipeline, ByToken(Verb::kView, Target::kPipeline)},
    {Method::kGet, R"(/v1/pipelines/(\d+)/advice)", PipelineAdvice,
     ByToken(Verb::kView, Target::kPipeline)},
    {Method::kPost, R"(/v1/pipelines/(\d+)/cancel)", CancelPipeline,
     ByToken(Verb::kCancel, Target::kPipeline)},
    {Method::kGet, "/v1/events", StreamEvents, ByToken(Verb::kView)},
    {Method::kGet, "/v1/goodput", GetGoodput, ByToken(Verb::kView)},
    {Method::kGet, "/v1/diagnosis", ClusterDiagnosis, ByToken(Verb::kView)},
    {Method::kGet, "/metrics", GetMetrics, ByToken(Verb::kView)},
    {Method::kGet, "/v1/queues", ListQueues, ByToken(Verb::kView)},
    {Method::kGet, "/v1/policy", GetPolicy, ByToken(Verb::kView)},
    {Method::kPost, "/v1/policy/reload", ReloadPolicy, ByToken(Verb::kAdminister)},
    {Method::kGet, R"(/v1/jobs/(\d+)/logs)", JobLogs, ByToken(Verb::kLogs, Target::kJob),
     RouteKind::kLongPoll},
    {Method::kPost, "/v1/crons", PutCron, ByToken(Verb::kSubmit, Target::kBody), RouteKind::kPlain,
     "a cron spec (JSON)"},
    {Method::kGet, "/v1/crons", ListCrons, ByToken(Verb::kView)},
    {Method::kDelete, R"(/v1/crons/([^/]+))", DeleteCron, ByToken(Verb::kCancel, Target::kCron)},
    {Method::kPost, R"(/v1/crons/([^/]+)/suspend)", SuspendCron,
     ByToken(Verb::kCancel, Target::kCron)},
    {Method::kPost, R"(/v1/crons/([^/]+)/resume)", ResumeCron,
     ByToken(Verb::kCancel, Target::kCron)},
    {Method::kPost, "/v1/services", PutService, ByToken(Verb::kSubmit, Target::kBody),
     RouteKind::kPlain, "a service spec (JSON)"},
    {Method::kGet, "/v1/services", ListServices, ByToken(Verb::kView)},
    {Method::kGet, R"(/v1/services/([^/]+))", GetService, ByToken(Verb::kView, Target::kService)},
    {Method::kDelete, R"(/v1/services/([^/]+))", DeleteService,
     ByToken(Verb::kCancel, Target::kService)},
    {Method::kPost, R"(/v1/services/([^/]+)/load)", PostServiceLoad,
     ByToken(Verb::kDetails, Target::kService), RouteKind::kPlain,
     R"({"in_flight", "waiting"?, "requests"?, "window_ms"?} (JSON))"},
    {Method::kGet, "/v1/nodes", ListNodes, ByToken(Verb::kView)},
    {Method::kGet, "/v1/gpus", ListGpus, ByToken(Verb::kView)},
    {Method::kPost, R"(/v1/nodes/([^/]+)/cordon)", CordonNode, ByToken(Verb::kAdminister)},
    {Method::kPost, R"(/v1/nodes/([^/]+)/uncordon)", UncordonNode, ByToken(Verb::kAdminister)},
    {Method::kPost, R"(/v1/nodes/([^/]+)/drain)", DrainNode, ByToken(Verb::kAdminister)},
    {Method::kPut, R"(/v1/nodes/([^/]+)/maintenance)", SetNodeMaintenance,
     ByToken(Verb::kAdminister), RouteKind::kPlain, R"({"from", "to", "reason"?} (JSON))"},
    {Method::kDelete, R"(/v1/nodes/([^/]+)/maintenance)", ClearNodeMaintenance,
     ByToken(Verb::kAdminister)},
    {Method::kGet, R"(/v1/teams/([^/]+)/secrets)", ListSecrets,
     ByToken(Verb::kSecrets, Target::kTeam)},
    {Method::kPut, R"(/v1/teams/([^/]+)/secrets/([^/]+))", PutSecret,
     ByToken(Verb::kSecrets, Target::kTeam), RouteKind::kPlain, "the secret's value (raw bytes)"},
    {Method::kDelete, R"(/v1/teams/([^/]+)/secrets/([^/]+))", DeleteSecret,
     ByToken(Verb::kSecrets, Target::kTeam)},
    {Method::kPost, "/v1/tokens", CreateToken, ByToken(Verb::kAdminister), RouteKind::kPlain,
     "a token's user, team and role (JSON)"},
    {Method::kGet, "/v1/tokens", ListTokens, ByToken(Verb::kAdminister)},
    {Method::kPost, R"(/v1/tokens/([^/]+)/revoke)", RevokeToken, ByToken(Verb::kAdminister)},
    {Method::kGet, "/v1/whoami", WhoAmI, ByToken(Verb::kView)},
    {Method::kGet, "/v1/audit", ListAudit, ByToken(Verb::kAudit)},
    {Method::kPost, "/v1/agents/register", RegisterAgent, AgentRegistration(), RouteKind::kAgent,
     "a node (JSON)"},
    {Method::kGet, R"(/v1/agents/([^/]+)/commands)", TakeAgentCommands, AgentOfNode(),
     RouteKind::kAgent},
    {Method::kPost, R"(/v1/agents/([^/]+)/events)", ReportAgentEvents, AgentOfNode(),
     RouteKind::kAgent, R"({"events": [...]} (JSON))"},
    {Method::kPost, R"(/v1/agents/([^/]+)/logs)", ShipAgentLog, AgentOfNode(), RouteKind::kAgent},
    {Method::kPost, R"(/v1/agents/([^/]+)/usage)", ReportAgentUsage, AgentOfNode(),
     RouteKind::kAgent, "a usage batch (JSON)"},
};

}  // namespace

std::string_view MethodName(Method method) {
  switch (method) {
    case Method::kGet:
      return "GET";
    case Method::kPost:
      return "POST";
    case Method::kPut:
      return "PUT";
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

namespace {

// The resource a kToken route's verb acts on. kNotFound for a job, pipeline run or cron job that
// does not exist.
Result<model::Resource> TargetOf(const Route& route, const Service& service,
                                 const Request& request) {
  switch (route.access.target) {
    case Target::kCluster:
    case Target::kBody:
      return model::Resource{"the cluster", "", "", "", std::nullopt};
    case Target::kJob: {
      DROVER_ASSIGN_OR_RETURN(JobId id, PathJobId(request));
      DROVER_ASSIGN_OR_RETURN(model::Job job, service.GetJob(id));
      return model::ResourceOf(job);
    }
    case Target::kPipeline: {
      DROVER_ASSIGN_OR_RETURN(JobId id, PathJobId(request, "pipeline run"));
      DROVER_ASSIGN_OR_RETURN(std::vector<model::Job> run, service.PipelineRun(id));
      model::Resource resource = model::ResourceOf(run.front());
      resource.what = fmt::format("pipeline run {}", id.value());
      resource.job.reset();
      return resource;
    }
    case Target::kCron: {
      const std::string& name = request.path_params.at(0);
      for (const CronStatus& cron : service.Crons()) {
        if (cron.record.spec.name == name) return CronResource(cron.record);
      }
      return NotFound(fmt::format("cron job {} does not exist", spec::EscapeForMessage(name)));
    }
    case Target::kService: {
      const std::string& name = request.path_params.at(0);
      for (const ServiceStatus& status : service.Services()) {
        if (status.record.spec.name == name) return ServiceResource(status.record);
      }
      return NotFound(fmt::format("service {} does not exist", spec::EscapeForMessage(name)));
    }
    case Target::kTeam: {
      const std::string& team = request.path_params.at(0);
      if (!spec::IsValidPrincipal(team)) {
        return InvalidArgument(spec::InvalidPrincipalMessage("team", team));
      }
      return TeamResource(team);
    }
  }
  return model::Resource{"the cluster", "", "", "", std::nullopt};
}

}  // namespace

Result<Caller> Authorize(const Route& route, const Service& service, const Request& request) {
  Caller caller;
  if (route.access.kind == Access::Kind::kPublic) return caller;
  if (route.access.kind == Access::Kind::kUnstated) {
    return PermissionDenied(fmt::format("{} {} has no access rule", request.method, request.path));
  }
  DROVER_ASSIGN_OR_RETURN(const std::string credential, BearerOf(request));
  caller.bearer = !credential.empty();
  switch (route.access.kind) {
    case Access::Kind::kUnstated:
    case Access::Kind::kPublic:
      break;
    case Access::Kind::kToken: {
      if (!caller.bearer) {
        return Unauthenticated(fmt::format(
            "{} {} needs a token ({}: Bearer TOKEN; the CLI takes --token, DROVER_TOKEN or "
            "~/.config/drover/token)",
            request.method, request.path, kAuthorizationHeader));
      }
      DROVER_ASSIGN_OR_RETURN(model::Identity identity, service.Authenticate(credential));
      DROVER_ASSIGN_OR_RETURN(model::Resource resource, TargetOf(route, service, request));
      DROVER_RETURN_IF_ERROR(
          model::Decide(identity, route.access.verb, resource, service.Policy()));
      caller.identity = std::move(identity);
      caller.target_team = std::move(resource.team);
      break;
    }
    case Access::Kind::kAgentRegistration:
      if (caller.bearer) caller.agent = service.AgentOf(credential);
      caller.joined = service.JoinTokenAccepted(request.Header(kJoinTokenHeader));
      if (!caller.agent && !caller.joined) {
        return Unauthenticated(fmt::format(
            "{} {} needs the server's join token ({}; drover agent --join-token-file) or the "
            "node's credential ({}: Bearer ...)",
            request.method, request.path, kJoinTokenHeader, kAuthorizationHeader));
      }
      break;
    case Access::Kind::kAgentOfNode: {
      if (caller.bearer) caller.agent = service.AgentOf(credential);
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

std::string DescribeAccess(const Access& access) {
  switch (access.kind) {
    case Access::Kind::kUnstated:
      return "nobody (no rule)";
    case Access::Kind::kPublic:
      return "anyone, without a token";
    case Access::Kind::kToken: {
      std::string_view on = "the cluster";
      switch (access.target) {
        case Target::kCluster:
          break;
        case Target::kJob:
          on = "the job";
          break;
        case Target::kPipeline:
          on = "the pipeline run";
          break;
        case Target::kCron:
          on = "the cron job";
          break;
        case Target::kService:
          on = "the service";
          break;
        case Target::kTeam:
          on = "the team";
          break;
        case Target::kBody:
          on = "each queue and owner the body names";
          break;
      }
      return fmt::format("`{}` on {}: {}", model::kVerbNames.Name(access.verb), on,
                         model::WhoMay(access.verb));
    }
    case Access::Kind::kAgentRegistration:
      return "an agent: the join token, or the node's credential";
    case Access::Kind::kAgentOfNode:
      return "the agent holding the node's credential";
  }
  return "nobody (no rule)";
}

namespace {

// What a request of `route` acts on, for the audit log: "job 12", "cron job nightly", ...
std::pair<std::string, std::optional<JobId>> AuditTarget(const Route& route,
                                                         const Request& request) {
  if (route.access.kind == Access::Kind::kAgentRegistration) return {"agent registration", {}};
  switch (route.access.target) {
    case Target::kJob:
      if (Result<JobId> id = PathJobId(request); id) {
        return {fmt::format("job {}", id->value()), *id};
      }
      break;
    case Target::kPipeline:
      return {fmt::format("pipeline run {}", request.path_params.at(0)), {}};
    case Target::kCron:
      return {fmt::format("cron job {}", request.path_params.at(0)), {}};
    case Target::kService:
      return {fmt::format("service {}", request.path_params.at(0)), {}};
    case Target::kTeam:
      return {TeamResource(request.path_params.at(0)).what, {}};
    case Target::kCluster:
    case Target::kBody:
      break;
  }
  return {"", {}};
}

// Records a mutating request of a user or a registering agent in the audit log (the agent
// protocol's commands and events are not: they are the agents' heartbeat).
void AuditRequest(const Route& route, Service& service, const Request& request,
                  const Response& response) {
  const bool audited = route.access.kind == Access::Kind::kToken ||
                       route.access.kind == Access::Kind::kAgentRegistration;
  if (!audited || route.method == Method::kGet) return;
  std::optional<model::Identity> identity = request.caller.identity;
  if (!identity && route.access.kind == Access::Kind::kToken) {
    // Refused after authentication (403, 404): still name who asked.
    if (Result<std::string> token = BearerOf(request); token && !token->empty()) {
      if (Result<model::Identity> known = service.Authenticate(*token)) identity = *known;
    }
  }
  store::AuditRecord record;
  record.at = service.Now();
  if (identity) {
    record.user = identity->user;
    // Filed under the team the request concerns (a job's, a secret's), else the caller's, so
    // that a coordinator sees what others did to its team.
    record.team = request.caller.target_team.empty() ? identity->team : request.caller.target_team;
    record.caller = model::Describe(*identity);
  }
  record.action = fmt::format("{} {}", request.method, request.path);
  std::tie(record.target, record.job) = AuditTarget(route, request);
  record.status = response.status;
  if (response.status >= 400) {
    if (auto body = nlohmann::json::parse(response.body, nullptr, false);
        body.is_object() && body.contains("code") && body["code"].is_string()) {
      record.code = body["code"].get<std::string>();
    }
  }
  record.address = request.peer;
  service.Audit(std::move(record));
}

Response Answer(const Route& route, Service& service, Request& request) {
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

}  // namespace

Response Handle(const Route& route, Service& service, Request request) {
  Response response = Answer(route, service, request);
  if (!response.park) AuditRequest(route, service, request, response);
  return response;
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

std::string RouteLabel(const Route& route) {
  std::string label;
  std::string_view pattern = route.pattern;
  while (!pattern.empty()) {
    const auto open = pattern.find('(');
    label += pattern.substr(0, open);
    if (open == std::string_view::npos) break;
    const auto close = pattern.find(')', open);
    const std::string_view group = pattern.substr(open, close - open + 1);
    label += group == R"((\d+))" ? "{id}" : "{name}";
    pattern = close == std::string_view::npos ? std::string_view() : pattern.substr(close + 1);
  }
  return label;
}

Response Serve(Service& service, Request request, const Route** matched) {
  if (matched) *matched = nullptr;
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
  if (matched) *matched = resolution.route;
  return Handle(*resolution.route, service, std::move(request));
}

}  // namespace drover::api
