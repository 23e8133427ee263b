// The CLI's token (commands.h ResolveToken) and the identity commands: `drover token create|ls|
// revoke`, `drover whoami` and `drover audit` (docs/security.md).

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "drover/api/client.h"
#include "drover/cli/commands.h"
#include "drover/cli/table.h"
#include "drover/cli/text.h"
#include "drover/common/clock.h"
#include "drover/common/quantity.h"

namespace drover::cli {
namespace {

using nlohmann::json;

// The first line of `path`, trimmed; "" when it cannot be read.
std::string ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

// Prints `body` as JSON, or as `describe` renders it; 0, or the error's status.
template <typename Describe>
int Print(const ClientFlags& flags, const Result<api::ApiResponse>& response, Describe describe) {
  if (!response) return ReportError(response.error());
  if (flags.output == "json") {
    std::cout << response->json.dump(2) << "\n";
  } else {
    std::cout << describe(response->json);
  }
  return 0;
}

std::string OrDash(const std::string& text) { return text.empty() ? "-" : text; }

}  // namespace

ResolvedToken ResolveToken(const std::string& flag) {
  if (!flag.empty()) return {flag, "--token"};
  if (const char* env = std::getenv("DROVER_TOKEN"); env != nullptr && *env != '\0') {
    return {env, "DROVER_TOKEN"};
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    const std::string path = std::string(home) + "/.config/drover/token";
    if (std::string token = ReadTokenFile(path); !token.empty()) return {token, path};
  }
  if (std::string token = ReadTokenFile(kLocalAdminTokenPath); !token.empty()) {
    return {token, kLocalAdminTokenPath};
  }
  return {};
}

std::string AuthHint(const ResolvedToken& token) {
  const std::string how =
      "get a token from an admin (drover token create), then pass --token, set DROVER_TOKEN or "
      "write it to ~/.config/drover/token; a server's admin token is in DATA/admin.token";
  if (token.token.empty()) return "no token was sent (none found); " + how;
  return fmt::format("the token sent came from {}; {}", token.source, how);
}

int TokenCreateCommand(const ClientFlags& flags, const TokenCreateFlags& create) {
  json body = {{"user", create.user}, {"team", create.team}, {"role", create.role}};
  if (!create.queues.empty()) body["queues"] = create.queues;
  if (!create.expires.empty()) {
    Result<DurationMs> expires = ParseDuration(create.expires);
    if (!expires || *expires <= 0) {
      return ReportError(
          Error{ErrorCode::kInvalidArgument,
                fmt::format("--expires: '{}' is not a duration such as 30d or 12h", create.expires),
                {}});
    }
    body["expires_in_ms"] = *expires;
  }
  api::ApiClient client = ClientOf(flags);
  return Print(flags, client.Post("/v1/tokens", body.dump(), "application/json"),
               [](const json& token) {
                 const TimeMs expires = token["expires_at"].get<TimeMs>();
                 return fmt::format(
                     "token {} for {} ({} of {}), {}:\n\n  {}\n\nIt is shown only now. Use it "
                     "with --token, DROVER_TOKEN or ~/.config/drover/token (mode 0600).\n",
                     token["id"].get<std::string>(), token["user"].get<std::string>(),
                     token["role"].get<std::string>(), OrDash(token["team"].get<std::string>()),
                     expires == 0 ? "never expires" : "expires " + FormatTimestamp(expires),
                     token["token"].get<std::string>());
               });
}

int TokenListCommand(const ClientFlags& flags) {
  api::ApiClient client = ClientOf(flags);
  return Print(flags, client.Get("/v1/tokens"), [](const json& body) {
    Table table({"ID", "USER", "TEAM", "ROLE", "QUEUES", "STATE", "CREATED", "EXPIRES"});
    for (const json& token : body["tokens"]) {
      std::string queues;
      for (const json& queue : token["queues"]) {
        queues += (queues.empty() ? "" : ",") + queue.get<std::string>();
      }
      const TimeMs expires = token["expires_at"].get<TimeMs>();
      table.AddRow({token["id"], token["user"], OrDash(token["team"].get<std::string>()),
                    token["role"], OrDash(queues), token["state"],
                    FormatTimestamp(token["created_at"].get<TimeMs>()),
                    expires == 0 ? std::string("never") : FormatTimestamp(expires)});
    }
    return table.Render();
  });
}

int TokenRevokeCommand(const ClientFlags& flags, const std::string& id) {
  api::ApiClient client = ClientOf(flags);
  return Print(flags, client.Post("/v1/tokens/" + api::UrlEncode(id) + "/revoke", "", "text/plain"),
               [](const json& token) {
                 return fmt::format("token {} of {} revoked\n", token["id"].get<std::string>(),
                                    token["user"].get<std::string>());
               });
}

int WhoAmICommand(const ClientFlags& flags) {
  api::ApiClient client = ClientOf(flags);
  return Print(flags, client.Get("/v1/whoami"),
               [](const json& identity) { return identity["describe"].get<std::string>() + "\n"; });
}

int AuditCommand(const ClientFlags& flags, const AuditFlags& audit) {
  std::string query;
  auto add = [&](const std::string& name, const std::string& value) {
    if (value.empty()) return;
    query += (query.empty() ? "?" : "&") + name + "=" + api::UrlEncode(value);
  };
  if (!audit.since.empty()) {
    Result<TimeMs> since = ParseSince(audit.since, SystemClock().Now());
    if (!since) return ReportError(since.error());
    add("since", std::to_string(*since));
  }
  add("user", audit.user);
  add("job", audit.job);
  add("team", audit.team);
  if (audit.limit > 0) add("limit", std::to_string(audit.limit));
  api::ApiClient client = ClientOf(flags);
  return Print(flags, client.Get("/v1/audit" + query), [](const json& body) {
    Table table({"SEQ", "TIME", "CALLER", "ACTION", "TARGET", "STATUS", "FROM"});
    for (const json& record : body["records"]) {
      const std::string code = record["code"].get<std::string>();
      table.AddRow({record["seq"].dump(), FormatTimestamp(record["at"].get<TimeMs>()),
                    OrDash(record["caller"].get<std::string>()), record["action"],
                    OrDash(record["target"].get<std::string>()),
                    record["status"].dump() + (code.empty() ? "" : " " + code),
                    OrDash(record["address"].get<std::string>())});
    }
    return table.Render();
  });
}

}  // namespace drover::cli
