// Issue 16's check: every endpoint of the route table x {admin, coordinator of team-a, member of
// team-a (the owner of what is acted on), member of team-b, viewer, no token, a revoked token},
// against a real server, each cell asserting the documented answer (docs/security.md): allowed
// (neither 401 nor 403), 403 permission_denied or 401 unauthenticated. A route this table does
// not list fails the test, so a new endpoint cannot land without its row. Every reply to a caller
// outside team-a, and the server's log, must be free of the job's env value.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <map>
#include <string>
#include <vector>

#include "drover/api/routes.h"
#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;

enum class Caller { kAdmin, kCoordinatorA, kMemberA, kMemberB, kViewer, kNone, kRevoked };
constexpr Caller kCallers[] = {Caller::kAdmin,   Caller::kCoordinatorA, Caller::kMemberA,
                               Caller::kMemberB, Caller::kViewer,       Caller::kNone,
                               Caller::kRevoked};
std::string_view Name(Caller caller) {
  switch (caller) {
    case Caller::kAdmin:
      return "admin";
    case Caller::kCoordinatorA:
      return "coordinator of team-a";
    case Caller::kMemberA:
      return "member of team-a";
    case Caller::kMemberB:
      return "member of team-b";
    case Caller::kViewer:
      return "viewer";
    case Caller::kNone:
      return "no token";
    case Caller::kRevoked:
      return "revoked token";
  }
  return "?";
}

// The documented answer of a cell.
enum class Answer { kAllowed, kDenied, kUnauthenticated };

// Who is allowed, by rule (docs/security.md); everyone else with a token is denied (403) and
// callers without a valid token get 401 (except on the public health check).
enum class Rule {
  kPublic,     // everyone, token or not
  kAnyToken,   // every valid token
  kOwnerSide,  // admin, team-a's coordinator, the owner (member of team-a)
  kSubmitA,    // submit to q-a: admin, coordinator of team-a, member of team-a
  kTeamAdmin,  // admin, coordinator of team-a (secrets, audit)
  kAdmin,      // admin alone
  kAgent,      // an agent's credential or the join token: every user token gets 401
};

Answer Expected(Rule rule, Caller caller) {
  if (rule == Rule::kPublic) return Answer::kAllowed;
  if (caller == Caller::kNone || caller == Caller::kRevoked || rule == Rule::kAgent) {
    return Answer::kUnauthenticated;
  }
  auto allowed = [&] {
    switch (rule) {
      case Rule::kAnyToken:
        return true;
      case Rule::kOwnerSide:
      case Rule::kSubmitA:
        return caller == Caller::kAdmin || caller == Caller::kCoordinatorA ||
               caller == Caller::kMemberA;
      case Rule::kTeamAdmin:
        return caller == Caller::kAdmin || caller == Caller::kCoordinatorA;
      case Rule::kAdmin:
        return caller == Caller::kAdmin;
      case Rule::kPublic:
      case Rule::kAgent:
        break;
    }
    return false;
  };
  return allowed() ? Answer::kAllowed : Answer::kDenied;
}

// Every endpoint's rule, by "METHOD PATTERN" as in the route table.
const std::map<std::string, Rule>& Rules() {
  static const std::map<std::string, Rule> rules = {
      {"GET /v1/health", Rule::kPublic},
      {"GET /", Rule::kPublic},
      {"GET /index.html", Rule::kPublic},
      {"GET /assets/([A-Za-z0-9_.-]+)", Rule::kPublic},
      {"GET /v1/openapi.json", Rule::kAnyToken},
      {"POST /v1/jobs", Rule::kSubmitA},
      {"GET /v1/jobs", Rule::kAnyToken},
      {R"(GET /v1/jobs/(\d+))", Rule::kAnyToken},
      {R"(POST /v1/jobs/(\d+)/cancel)", Rule::kOwnerSide},
      {R"(POST /v1/jobs/(\d+)/hold)", Rule::kOwnerSide},
      {R"(POST /v1/jobs/(\d+)/release)", Rule::kOwnerSide},
      {R"(POST /v1/jobs/(\d+)/update)", Rule::kOwnerSide},
      {R"(POST /v1/jobs/(\d+)/requeue)", Rule::kOwnerSide},
      {R"(GET /v1/jobs/(\d+)/explain)", Rule::kAnyToken},
      {R"(GET /v1/jobs/(\d+)/decisions)", Rule::kAnyToken},
      {R"(GET /v1/jobs/(\d+)/usage)", Rule::kAnyToken},
      {R"(GET /v1/jobs/(\d+)/advice)", Rule::kAnyToken},
      {R"(POST /v1/jobs/(\d+)/checkpoint)", Rule::kOwnerSide},
      {R"(POST /v1/jobs/(\d+)/report)", Rule::kOwnerSide},
      {"GET /v1/pipelines", Rule::kAnyToken},
      {R"(GET /v1/pipelines/(\d+))", Rule::kAnyToken},
      {R"(GET /v1/pipelines/(\d+)/advice)", Rule::kAnyToken},
      {R"(POST /v1/pipelines/(\d+)/cancel)", Rule::kOwnerSide},
      {"GET /v1/events", Rule::kAnyToken},
      {"GET /v1/goodput", Rule::kAnyToken},
      {"GET /v1/diagnosis", Rule::kAnyToken},
      {"GET /metrics", Rule::kAnyToken},
      {"GET /v1/queues", Rule::kAnyToken},
      {"GET /v1/policy", Rule::kAnyToken},
      {"POST /v1/policy/reload", Rule::kAdmin},
      {R"(GET /v1/jobs/(\d+)/logs)", Rule::kOwnerSide},
      {"POST /v1/crons", Rule::kSubmitA},
      {"GET /v1/crons", Rule::kAnyToken},
      {"DELETE /v1/crons/([^/]+)", Rule::kOwnerSide},
      {"POST /v1/crons/([^/]+)/suspend", Rule::kOwnerSide},
      {"POST /v1/crons/([^/]+)/resume", Rule::kOwnerSide},
      {"POST /v1/services", Rule::kSubmitA},
      {"GET /v1/services", Rule::kAnyToken},
      {"GET /v1/services/([^/]+)", Rule::kAnyToken},
      {"DELETE /v1/services/([^/]+)", Rule::kOwnerSide},
      {"POST /v1/services/([^/]+)/load", Rule::kOwnerSide},
      {"GET /v1/nodes", Rule::kAnyToken},
      {"GET /v1/gpus", Rule::kAnyToken},
      {"POST /v1/nodes/([^/]+)/cordon", Rule::kAdmin},
      {"POST /v1/nodes/([^/]+)/uncordon", Rule::kAdmin},
      {"POST /v1/nodes/([^/]+)/drain", Rule::kAdmin},
      {"PUT /v1/nodes/([^/]+)/maintenance", Rule::kAdmin},
      {"DELETE /v1/nodes/([^/]+)/maintenance", Rule::kAdmin},
      {"POST /v1/agents/register", Rule::kAgent},
      {"GET /v1/agents/([^/]+)/commands", Rule::kAgent},
      {"POST /v1/agents/([^/]+)/events", Rule::kAgent},
      {"POST /v1/agents/([^/]+)/logs", Rule::kAgent},
      {"POST /v1/agents/([^/]+)/usage", Rule::kAgent},
      {"POST /v1/tokens", Rule::kAdmin},
      {"GET /v1/tokens", Rule::kAdmin},
      {R"(POST /v1/tokens/([^/]+)/revoke)", Rule::kAdmin},
      {"GET /v1/whoami", Rule::kAnyToken},
      {"GET /v1/audit", Rule::kTeamAdmin},
      {"GET /v1/teams/([^/]+)/secrets", Rule::kTeamAdmin},
      {"PUT /v1/teams/([^/]+)/secrets/([^/]+)", Rule::kTeamAdmin},
      {"DELETE /v1/teams/([^/]+)/secrets/([^/]+)", Rule::kTeamAdmin},
  };
  return rules;
}

constexpr char kPolicy[] = R"(kind: Policy
queues:
  - name: q-a
    access: {team-a: [submit, cancel, logs]}
  - name: q-b
    access: {team-b: [submit]}
)";

// The env value no caller outside team-a may ever see.
constexpr char kEnvSecret[] = "sk-matrix-4f1d";

class AccessMatrix : public IntegrationTest {
 protected:
  void SetUp() override {
    WriteFile(dir_.path() + "/policy.yaml", kPolicy);
    server_ = StartServer("data", "2xH100-80GB", {"--policy", dir_.path() + "/policy.yaml"});
    ASSERT_TRUE(server_->ok());
    tokens_[Caller::kAdmin] = server_->token();
    ASSERT_FALSE(tokens_[Caller::kAdmin].empty());
    tokens_[Caller::kCoordinatorA] = CreateToken("carol", "team-a", "coordinator");
    tokens_[Caller::kMemberA] = CreateToken("alice", "team-a", "member");
    tokens_[Caller::kMemberB] = CreateToken("bob", "team-b", "member");
    tokens_[Caller::kViewer] = CreateToken("vic", "team-a", "viewer");
    std::string revoked_id;
    tokens_[Caller::kRevoked] = CreateToken("alice", "team-a", "member", &revoked_id);
    httplib::Result revoked = Call(Caller::kAdmin, "POST", "/v1/tokens/" + revoked_id + "/revoke");
    ASSERT_TRUE(revoked && revoked->status == 200) << (revoked ? revoked->body : "no reply");
  }

  std::string CreateToken(const std::string& user, const std::string& team, const std::string& role,
                          std::string* id = nullptr) {
    const json body = {{"user", user}, {"team", team}, {"role", role}};
    httplib::Result created = Call(Caller::kAdmin, "POST", "/v1/tokens", body.dump());
    if (!created || (created->status != 200 && created->status != 201)) {
      ADD_FAILURE() << "POST /v1/tokens: " << (created ? created->body : "no reply");
      return "";
    }
    const json reply = json::parse(created->body, nullptr, false);
    if (id) *id = reply.value("id", "");
    return reply.value("token", "");
  }

  httplib::Result Call(Caller caller, const std::string& method, const std::string& path,
                       const std::string& body = "") {
    httplib::Client http(server_->url());
    http.set_read_timeout(30, 0);
    httplib::Headers headers;
    if (auto it = tokens_.find(caller); it != tokens_.end()) {
      headers.emplace("Authorization", "Bearer " + it->second);
    }
    if (method == "GET") return http.Get(path, headers);
    if (method == "DELETE") return http.Delete(path, headers);
    if (method == "PUT") return http.Put(path, headers, body, "application/octet-stream");
    return http.Post(path, headers, body, "application/yaml");
  }

  // A cron job `name` that runs `true` nightly in q-a, as POST /v1/crons takes it.
  static std::string CronBody(const std::string& name) {
    return json{{"name", name},
                {"schedule", "0 3 * * *"},
                {"jobs",
                 {{{"name", "n"},
                   {"queue", "q-a"},
                   {"command", {"true"}},
                   {"resources", {{"cpu", "100m"}, {"memory", "16Mi"}}}}}}}
        .dump();
  }

  // A service `name` in q-a with no replica (min 0), as POST /v1/services takes it.
  static std::string ServiceBody(const std::string& name) {
    return json{{"name", name},
                {"models", {"m"}},
                {"replica",
                 {{"queue", "q-a"},
                  {"command", {"true"}},
                  {"requirements", {{"per_worker", {{"cpu_millis", 100}}}}}}},
                {"min_replicas", 0},
                {"max_replicas", 1}}
        .dump();
  }
  std::string AlicesService() {
    const std::string name = "svc-" + std::to_string(++services_);
    httplib::Result created = Call(Caller::kMemberA, "POST", "/v1/services", ServiceBody(name));
    EXPECT_TRUE(created && created->status == 200) << (created ? created->body : "no reply");
    return name;
  }

  // A job of alice's (member of team-a) in q-a carrying kEnvSecret in its env.
  std::int64_t AlicesJob() {
    const std::string spec = fmt::format(
        "kind: Job\nname: matrix\nqueue: q-a\nresources: {{cpu: 100m, memory: 16Mi}}\n"
        "env: {{API_KEY: {}}}\ncommand: [sleep, '300']\n",
        kEnvSecret);
    httplib::Result created = Call(Caller::kMemberA, "POST", "/v1/jobs", spec);
    EXPECT_TRUE(created && created->status == 201) << (created ? created->body : "no reply");
    return json::parse(created->body)["jobs"][0]["id"].get<std::int64_t>();
  }
  std::int64_t AlicesPipeline() {
    httplib::Result created = Call(Caller::kMemberA, "POST", "/v1/jobs",
                                   "kind: Pipeline\nname: p\nqueue: q-a\nstages:\n"
                                   "  - {name: one, command: [sleep, '300'], resources: {cpu: "
                                   "100m, memory: 16Mi}}\n"
                                   "  - {name: two, depends_on: [one], command: ['true'], "
                                   "resources: {cpu: 100m, memory: 16Mi}}\n");
    EXPECT_TRUE(created && created->status == 201) << (created ? created->body : "no reply");
    return json::parse(created->body)["jobs"][0]["id"].get<std::int64_t>();
  }
  std::string AlicesCron() {
    static int counter = 0;
    const std::string name = "nightly-" + std::to_string(++counter);
    httplib::Result created = Call(Caller::kMemberA, "POST", "/v1/crons", CronBody(name));
    EXPECT_TRUE(created && created->status == 200) << (created ? created->body : "no reply");
    return name;
  }

  // The concrete request for `route` by `caller`, with fresh targets for verbs that change them.
  struct Concrete {
    std::string path, body;
  };
  Concrete Instantiate(const api::Route& route, std::int64_t job, std::int64_t run) {
    std::string pattern(route.pattern);
    std::string body;
    auto replace = [&](const std::string& group, const std::string& value) {
      if (auto at = pattern.find(group); at != std::string::npos) {
        pattern.replace(at, group.size(), value);
      }
    };
    const bool mutating = route.method != api::Method::kGet;
    if (pattern.starts_with("/v1/jobs/")) {
      replace(R"((\d+))", std::to_string(mutating ? AlicesJob() : job));
    } else if (pattern.starts_with("/v1/pipelines/")) {
      replace(R"((\d+))", std::to_string(mutating ? AlicesPipeline() : run));
    } else if (pattern.starts_with("/v1/crons/")) {
      replace("([^/]+)", AlicesCron());
    } else if (pattern.starts_with("/v1/services/")) {
      replace("([^/]+)", AlicesService());
      if (pattern.ends_with("/load")) body = R"({"in_flight": 3})";
    } else if (pattern.starts_with("/v1/tokens/")) {
      std::string id;
      CreateToken("dave", "team-a", "member", &id);
      replace("([^/]+)", id);
    } else if (pattern.starts_with("/v1/agents/")) {
      replace("([^/]+)", "fake-node");
    } else if (pattern.starts_with("/v1/nodes/")) {
      replace("([^/]+)", NodeName());
      // A window in 2100, so that it holds nothing off now.
      if (route.method == api::Method::kPut)
        body = R"({"from": 4102444800000, "to": 4102448400000})";
    } else if (pattern.starts_with("/assets/")) {
      replace("([A-Za-z0-9_.-]+)", "app.js");
    } else if (pattern.starts_with("/v1/teams/")) {
      replace("([^/]+)", "team-a");
      replace("([^/]+)", "wandb-key");
      body = "sv-matrix-value";
    }
    if (pattern == "/v1/events") {
      // A stream does not end: an unknown type is answered 400 by the handler, which runs only
      // once Authorize has let the caller through (401 and 403 come before it).
      pattern += "?types=none";
    }
    if (pattern == "/v1/jobs") {
      body =
          "kind: Job\nname: m\nqueue: q-a\nresources: {cpu: 100m, memory: 16Mi}\n"
          "command: ['true']\n";
    } else if (pattern == "/v1/crons") {
      body = CronBody("c-" + std::to_string(++crons_));
    } else if (pattern == "/v1/services") {
      body = ServiceBody("s-" + std::to_string(++services_));
    } else if (pattern == "/v1/tokens") {
      body = json{{"user", "erin"}, {"team", "team-a"}, {"role", "member"}}.dump();
    } else if (pattern.ends_with("/update")) {
      body = R"({"priority": "high"})";
    } else if (pattern.ends_with("/report")) {
      body = R"({"progress": 0.5})";
    } else if (pattern == "/v1/agents/register") {
      body = R"({"name": "fake-node", "cpu": "64", "memory": "256Gi", "gpus": "8xH100-80GB"})";
    } else if (pattern.ends_with("/events")) {
      body = R"({"events": []})";
    }
    return {pattern, body};
  }

  // The name of the server's first node (GET /v1/nodes).
  std::string NodeName() {
    httplib::Result reply = Call(Caller::kAdmin, "GET", "/v1/nodes");
    if (!reply) return "";
    json nodes = json::parse(reply->body, nullptr, false);
    if (!nodes.is_object() || nodes["nodes"].empty()) return "";
    return nodes["nodes"][0].value("name", "");
  }

  std::unique_ptr<ServerProcess> server_;
  std::map<Caller, std::string> tokens_;
  int crons_ = 0;
  int services_ = 0;
};

TEST_F(AccessMatrix, EveryEndpointAnswersEachCallerAsDocumented) {
  const std::int64_t job = AlicesJob();
  const std::int64_t run = AlicesPipeline();
  int cells = 0;
  for (const api::Route& route : api::Routes()) {
    const std::string key = fmt::format("{} {}", api::MethodName(route.method), route.pattern);
    auto rule = Rules().find(key);
    ASSERT_NE(rule, Rules().end()) << key << " has no row in the access matrix: add its rule";
    for (Caller caller : kCallers) {
      const Concrete request = Instantiate(route, job, run);
      httplib::Result reply =
          Call(caller, std::string(api::MethodName(route.method)), request.path, request.body);
      ASSERT_TRUE(reply) << key << " by " << Name(caller) << ": no reply";
      const Answer expected = Expected(rule->second, caller);
      const std::string cell = fmt::format("{} ({}) by {}: {} {}", key, request.path, Name(caller),
                                           reply->status, reply->body.substr(0, 300));
      switch (expected) {
        case Answer::kAllowed:
          EXPECT_NE(reply->status, 401) << cell;
          EXPECT_NE(reply->status, 403) << cell;
          break;
        case Answer::kDenied:
          EXPECT_EQ(reply->status, 403) << cell;
          EXPECT_EQ(json::parse(reply->body, nullptr, false).value("code", ""), "permission_denied")
              << cell;
          break;
        case Answer::kUnauthenticated:
          EXPECT_EQ(reply->status, 401) << cell;
          EXPECT_EQ(json::parse(reply->body, nullptr, false).value("code", ""), "unauthenticated")
              << cell;
          break;
      }
      const bool outside_team = caller == Caller::kMemberB || caller == Caller::kViewer ||
                                caller == Caller::kNone || caller == Caller::kRevoked;
      if (outside_team) {
        EXPECT_EQ(reply->body.find(kEnvSecret), std::string::npos) << cell;
      }
      EXPECT_EQ(reply->body.find("sv-matrix-value"), std::string::npos) << cell;
      ++cells;
    }
  }
  EXPECT_EQ(cells, static_cast<int>(api::Routes().size() * std::size(kCallers)));
  // The owner's team sees the env value; the log never holds it or a secret's value.
  httplib::Result own = Call(Caller::kMemberA, "GET", "/v1/jobs/" + std::to_string(job));
  ASSERT_TRUE(own);
  EXPECT_NE(own->body.find(kEnvSecret), std::string::npos);
  EXPECT_EQ(server_->Log().find(kEnvSecret), std::string::npos);
  EXPECT_EQ(server_->Log().find("sv-matrix-value"), std::string::npos);
  for (const auto& [caller, token] : tokens_) {
    EXPECT_EQ(server_->Log().find(token), std::string::npos) << Name(caller) << "'s token logged";
  }
}

}  // namespace
}  // namespace drover::integration
