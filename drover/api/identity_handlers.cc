#include "drover/api/identity_handlers.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "drover/api/views.h"
#include "drover/model/access.h"
#include "drover/spec/limits.h"

namespace drover::api {
namespace {

using nlohmann::json;

// GET /v1/audit answers at most this many records unless `limit` says otherwise (0: all).
constexpr std::int64_t kDefaultAuditLimit = 1000;

// The body of POST /v1/tokens. Errors are kInvalidArgument naming the field.
struct TokenRequest {
  model::Identity identity;
  DurationMs expires_in_ms = 0;
};

Result<std::string> PrincipalField(const json& body, const std::string& field, bool required) {
  if (!body.contains(field)) {
    if (required) return InvalidArgument(fmt::format("{}: missing", field));
    return std::string();
  }
  const json& value = body.at(field);
  if (!value.is_string()) return InvalidArgument(fmt::format("{}: expected a string", field));
  const std::string name = value.get<std::string>();
  if (name.empty() && !required) return name;
  if (!spec::IsValidPrincipal(name)) {
    return InvalidArgument(
        fmt::format("{}: {}", field, spec::InvalidPrincipalMessage(field, name)));
  }
  return name;
}

Result<TokenRequest> ParseTokenRequest(const Request& request) {
  DROVER_ASSIGN_OR_RETURN(json body, JsonBody(request));
  if (!body.is_object()) return InvalidArgument("request body: expected a JSON object");
  for (const auto& [field, value] : body.items()) {
    if (field != "user" && field != "team" && field != "role" && field != "queues" &&
        field != "expires_in_ms") {
      return InvalidArgument(
          fmt::format("{}: unknown field; a token has user, team, role, queues and expires_in_ms",
                      spec::EscapeForMessage(field)));
    }
  }
  TokenRequest out;
  DROVER_ASSIGN_OR_RETURN(out.identity.user, PrincipalField(body, "user", /*required=*/true));
  if (!body.contains("role") || !body["role"].is_string()) {
    return InvalidArgument("role: expected one of " + model::kRoleNames.ChoiceList());
  }
  const std::string role = body["role"].get<std::string>();
  const auto parsed = model::kRoleNames.Parse(role);
  if (!parsed) {
    return InvalidArgument(fmt::format("role: '{}' is not one of {}", spec::EscapeForMessage(role),
                                       model::kRoleNames.ChoiceList()));
  }
  out.identity.role = *parsed;
  // Only an admin may be of no team: every other role's rights are its team's.
  DROVER_ASSIGN_OR_RETURN(out.identity.team,
                          PrincipalField(body, "team", out.identity.role != model::Role::kAdmin));
  if (body.contains("queues")) {
    const json& queues = body["queues"];
    if (!queues.is_array()) return InvalidArgument("queues: expected a list of queue names");
    for (std::size_t i = 0; i < queues.size(); ++i) {
      if (!queues[i].is_string() || !spec::IsValidPrincipal(queues[i].get<std::string>())) {
        return InvalidArgument(
            fmt::format("queues[{}]: {}", i,
                        queues[i].is_string()
                            ? spec::InvalidPrincipalMessage("queue", queues[i].get<std::string>())
                            : std::string("expected a queue name")));
      }
      out.identity.queues.push_back(queues[i].get<std::string>());
    }
  }
  if (body.contains("expires_in_ms")) {
    const json& expires = body["expires_in_ms"];
    if (!expires.is_number_integer() || expires.get<std::int64_t>() < 0) {
      return InvalidArgument("expires_in_ms: expected a whole number of milliseconds, 0 or more");
    }
    out.expires_in_ms = expires.get<std::int64_t>();
  }
  return out;
}

json IdentityView(const model::Identity& identity) {
  json view = {{"user", identity.user},
               {"team", identity.team},
               {"role", model::kRoleNames.Name(identity.role)},
               {"queues", identity.queues},
               {"describe", model::Describe(identity)}};
  view["job"] = identity.job ? json(identity.job->value()) : json(nullptr);
  view["token_id"] = identity.token_id;
  return view;
}

// A token's listing entry: never the token or its hash.
json TokenView(const store::TokenRecord& record, TimeMs now) {
  json view = IdentityView(record.identity);
  view.erase("describe");
  view.erase("job");
  view.erase("token_id");
  view["id"] = record.id;
  view["created_by"] = record.created_by;
  view["created_at"] = record.created_at;
  view["expires_at"] = record.expires_at;
  view["revoked_at"] = record.revoked_at;
  std::string state = "active";
  if (record.revoked_at != 0) {
    state = "revoked";
  } else if (record.expires_at != 0 && now >= record.expires_at) {
    state = "expired";
  }
  view["state"] = state;
  return view;
}

json AuditView(const store::AuditRecord& record) {
  return {
      {"seq", record.seq},        {"at", record.at},
      {"user", record.user},      {"team", record.team},
      {"caller", record.caller},  {"action", record.action},
      {"target", record.target},  {"job", record.job ? json(record.job->value()) : json(nullptr)},
      {"status", record.status},  {"code", record.code},
      {"address", record.address}};
}

}  // namespace

Result<Response> CreateToken(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  DROVER_ASSIGN_OR_RETURN(TokenRequest wanted, ParseTokenRequest(request));
  DROVER_ASSIGN_OR_RETURN(CreatedToken created,
                          service.CreateToken(wanted.identity, wanted.expires_in_ms, caller));
  json body = TokenView(created.record, service.Now());
  body["token"] = created.token;
  return JsonResponse(200, body);
}

Result<Response> ListTokens(Service& service, const Request&) {
  json tokens = json::array();
  const TimeMs now = service.Now();
  for (const store::TokenRecord& record : service.Tokens()) {
    tokens.push_back(TokenView(record, now));
  }
  return JsonResponse(200, {{"tokens", tokens}});
}

Result<Response> RevokeToken(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(store::TokenRecord record,
                          service.RevokeToken(request.path_params.at(0)));
  return JsonResponse(200, TokenView(record, service.Now()));
}

Result<Response> WhoAmI(Service&, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  return JsonResponse(200, IdentityView(caller));
}

Result<Response> ListAudit(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  store::AuditFilter filter;
  DROVER_ASSIGN_OR_RETURN(filter.since, IntQuery(request, "since", 0));
  DROVER_ASSIGN_OR_RETURN(std::int64_t limit, IntQuery(request, "limit", kDefaultAuditLimit));
  DROVER_ASSIGN_OR_RETURN(std::int64_t job, IntQuery(request, "job", 0));
  if (filter.since < 0 || limit < 0 || job < 0) {
    return InvalidArgument("since, job and limit: expected whole numbers, 0 or more");
  }
  if (job > 0) filter.job = JobId(job);
  filter.user = request.Query("user");
  filter.team = request.Query("team");
  // The limit applies to what the caller may read, so it is applied after Visible.
  DROVER_ASSIGN_OR_RETURN(std::vector<store::AuditRecord> records, service.ListAudit(filter));
  const model::Policy policy = service.Policy();
  std::vector<const store::AuditRecord*> visible;
  for (const store::AuditRecord& record : records) {
    model::Resource resource;
    resource.what = fmt::format("audit record {}", record.seq);
    resource.team = record.team;
    if (model::Visible(caller, model::Verb::kAudit, resource, policy)) visible.push_back(&record);
  }
  const std::size_t skip =
      limit > 0 && visible.size() > static_cast<std::size_t>(limit) ? visible.size() - limit : 0;
  json out = json::array();
  for (std::size_t i = skip; i < visible.size(); ++i) out.push_back(AuditView(*visible[i]));
  return JsonResponse(200, {{"records", out}});
}

}  // namespace drover::api
