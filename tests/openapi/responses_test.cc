// docs/openapi.json against a real server's answers (docs/architecture.md, "OpenAPI"): one
// scenario calls every route of the route table with a success and at least one error each
// (a 401 without a token for every route that takes one, and the 400, 403, 404 and 409 answers
// that are practical to provoke), records each answer's method, path, status, content type,
// X-Drover-* headers and body,
// and hands the records to tests/openapi/validate_responses.mjs, which validates each body
// against the document's schema for its path, method and status (Ajv, JSON Schema 2020-12)
// and fails on a status the document does not list or an operation no answer covered.
// Node.js and the npm packages of tests/openapi (`make test` installs them) are required: the
// test fails without them, it is never skipped.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "drover/api/routes.h"
#include "drover/codec/json.h"
#include "drover/spec/parse.h"
#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;

constexpr char kPolicy[] = R"(kind: Policy
queues:
  - name: q-a
    access: {team-a: [submit, cancel, logs]}
)";

// A window in 2100, so that it holds nothing off now.
constexpr std::int64_t kFarFrom = 4102444800000;
constexpr std::int64_t kFarTo = 4102448400000;

class OpenApiResponses : public IntegrationTest {
 protected:
  void SetUp() override {
    WriteFile(policy_file(), kPolicy);
    server_ = StartServer("data", "2xH100-80GB", {"--policy", policy_file()});
    ASSERT_TRUE(server_->ok());
  }

  std::string policy_file() const { return dir_.path() + "/policy.yaml"; }

  // Sends the request with `bearer` ("": no Authorization header), records the answer and
  // returns it (status 0 and a null body when there was none).
  struct Answer {
    int status = 0;
    json body;
    std::string text;
  };
  Answer Call(const std::string& method, const std::string& path_and_query, const std::string& body,
              const std::string& bearer, httplib::Headers headers = {}) {
    httplib::Client http(server_->url());
    http.set_read_timeout(30, 0);
    if (!bearer.empty()) headers.emplace("Authorization", "Bearer " + bearer);
    httplib::Result result = [&] {
      if (method == "GET") return http.Get(path_and_query, headers);
      if (method == "DELETE") return http.Delete(path_and_query, headers);
      if (method == "PUT") {
        return http.Put(path_and_query, headers, body, "application/octet-stream");
      }
      return http.Post(path_and_query, headers, body, "application/json");
    }();
    Answer answer;
    if (!result) {
      ADD_FAILURE() << method << " " << path_and_query << ": no reply";
      return answer;
    }
    answer.status = result->status;
    answer.text = result->body;
    const std::string type = result->get_header_value("Content-Type");
    if (type.starts_with("application/json"))
      answer.body = json::parse(result->body, nullptr, false);
    json headers_seen = json::object();
    for (const auto& [name, value] : result->headers) {
      if (name.starts_with("X-Drover-")) headers_seen[name] = value;
    }
    const std::size_t query = path_and_query.find('?');
    records_.push_back(
        json{{"method", method},
             {"path", path_and_query.substr(0, query)},
             {"query", query == std::string::npos ? "" : path_and_query.substr(query)},
             {"status", answer.status},
             {"content_type", type},
             {"headers", headers_seen},
             {"body", type.starts_with("application/json") ? answer.body : json(result->body)}});
    return answer;
  }
  // Calls as `bearer` (default: the admin), expecting `status`; the body.
  json Expect(int status, const std::string& method, const std::string& path,
              const std::string& body = "", std::optional<std::string> bearer = std::nullopt) {
    Answer answer = Call(method, path, body, bearer.value_or(server_->token()));
    EXPECT_EQ(answer.status, status) << method << " " << path << ": " << answer.text;
    return answer.body;
  }

  // Opens GET `path_and_query` as the admin, reads the event stream until its first frame has
  // arrived, hangs up, and records the answer as Call does (the body: the bytes read).
  void RecordStreamStart(const std::string& path_and_query) {
    httplib::Client http(server_->url());
    http.set_read_timeout(30, 0);
    std::string received;
    httplib::Result result =
        http.Get(path_and_query, {{"Authorization", "Bearer " + server_->token()}},
                 [&](const char* data, std::size_t size) {
                   received.append(data, size);
                   return received.find("\n\n") == std::string::npos;  // one whole frame: stop
                 });
    // Stopping the read cancels the request: httplib reports kCanceled with the response.
    ASSERT_TRUE(result || result.error() == httplib::Error::Canceled) << path_and_query;
    EXPECT_NE(received.find("event: open"), std::string::npos) << received;
    records_.push_back(json{{"method", "GET"},
                            {"path", path_and_query.substr(0, path_and_query.find('?'))},
                            {"query", ""},
                            {"status", 200},
                            {"content_type", "text/event-stream"},
                            {"headers", json::object()},
                            {"body", received}});
  }

  static std::int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  std::int64_t SubmitOne(const std::string& spec) {
    const json reply = Expect(201, "POST", "/v1/jobs", spec);
    return reply.is_object() ? reply["jobs"][0].value("id", std::int64_t{0}) : 0;
  }

  // Writes the records and runs the validator on them; its output on failure.
  void Validate() {
    const std::string records = dir_.path() + "/responses.json";
    WriteFile(records, json(records_).dump(2));
    const std::string source = SourceDir();
    ChildProcess node({"/usr/bin/env", "node", source + "/tests/openapi/validate_responses.mjs",
                       source + "/docs/openapi.json", records},
                      dir_.path() + "/validate.out", dir_.path() + "/validate.err");
    const std::optional<int> exit = node.Wait(std::chrono::milliseconds(120'000));
    EXPECT_EQ(exit, 0) << node.Stdout() << node.Stderr();
    std::cout << node.Stdout();
  }

  std::unique_ptr<ServerProcess> server_;
  std::vector<json> records_;
};

TEST_F(OpenApiResponses, EveryRouteAnswersAsTheDocumentSays) {
  api::ApiClient client = server_->Client();
  const std::string admin = server_->token();

  // Server, identity, audit.
  Expect(200, "GET", "/v1/health", "", "");
  // The dashboard: its page, a file it names (a bundle built into the binary: `make build`
  // builds web/ first) and one it lacks.
  Expect(200, "GET", "/index.html", "", "");
  const std::string page = Call("GET", "/", "", "").text;
  const std::size_t script = page.find("/assets/");
  ASSERT_NE(script, std::string::npos) << "the dashboard was not built into the binary:\n" << page;
  Expect(200, "GET", page.substr(script, page.find('"', script) - script), "", "");
  Expect(404, "GET", "/assets/no-such-file.js", "", "");
  // The document served is the one validated against below, as the binary was built.
  EXPECT_EQ(Expect(200, "GET", "/v1/openapi.json"),
            json::parse(ReadFile(SourceDir() + "/docs/openapi.json")));
  const json bob =
      Expect(200, "POST", "/v1/tokens", R"({"user": "bob", "team": "team-b", "role": "member"})");
  const std::string bob_token = bob.value("token", "");
  Expect(400, "POST", "/v1/tokens", R"({"user": "bob", "role": "boss"})");
  const json temp = Expect(200, "POST", "/v1/tokens",
                           R"({"user": "tim", "team": "team-a", "role": "viewer",
                               "queues": ["q-a"], "expires_in_ms": 3600000})");
  Expect(200, "POST", "/v1/tokens/" + temp.value("id", "") + "/revoke");
  Expect(404, "POST", "/v1/tokens/tok-000000000000/revoke");
  Expect(200, "GET", "/v1/tokens");
  Expect(200, "GET", "/v1/whoami");
  Expect(200, "GET", "/v1/whoami", "", bob_token);
  Expect(400, "GET", "/v1/audit?since=x");
  Expect(403, "GET", "/v1/audit", "", bob_token);

  // Jobs: one running on both GPUs, one waiting behind it, one finished.
  const std::int64_t running = SubmitOne(
      "kind: Job\nname: hog\nqueue: q-a\nresources: {cpu: 100m, memory: 16Mi, gpus: 2}\n"
      "command: [sleep, '300']\n");
  ASSERT_EQ(WaitForState(client, running, {"running"}), "running");
  const std::int64_t waiting = SubmitOne(
      "kind: Job\nname: waiter\nqueue: q-a\nresources: {cpu: 100m, memory: 16Mi, gpus: 1}\n"
      "command: [sleep, '300']\ntimeout: 1h\n");
  ASSERT_EQ(WaitForState(client, waiting, {"ready"}), "ready");
  const std::string quick_spec =
      "kind: Job\nname: quick\nqueue: q-a\nresources: {cpu: 100m, memory: 16Mi}\n"
      "script: echo hello\n";
  httplib::Headers key = {{"Idempotency-Key", "openapi-1"}};
  const Answer first = Call("POST", "/v1/jobs", quick_spec, admin, key);
  ASSERT_EQ(first.status, 201) << first.text;
  const std::int64_t done = first.body["jobs"][0]["id"].get<std::int64_t>();
  EXPECT_EQ(Call("POST", "/v1/jobs", quick_spec, admin, key).status, 200);
  Expect(400, "POST", "/v1/jobs", "kind: Job\nname: bad\ngpu: 1\n");
  Expect(403, "POST", "/v1/jobs", quick_spec, bob_token);
  ASSERT_EQ(WaitForTerminal(client, done), "succeeded");

  Expect(200, "GET", "/v1/jobs");
  Expect(200, "GET", "/v1/jobs?limit=1&state=ready");
  Expect(200, "GET", "/v1/jobs?active=1&order=asc&after=1");
  Expect(200, "GET", "/v1/jobs?pending=1&limit=2");
  Expect(400, "GET", "/v1/jobs?limit=0");
  for (std::int64_t id : {running, waiting, done})
    Expect(200, "GET", fmt::format("/v1/jobs/{}", id));
  Expect(200, "GET", fmt::format("/v1/jobs/{}", done), "", bob_token);  // redacted
  Expect(404, "GET", "/v1/jobs/999999");
  Expect(200, "GET", fmt::format("/v1/jobs/{}/explain", waiting));
  Expect(200, "GET", fmt::format("/v1/jobs/{}/explain", running));
  Expect(404, "GET", "/v1/jobs/999999/explain");
  Expect(200, "GET", fmt::format("/v1/jobs/{}/decisions", running));
  Expect(404, "GET", "/v1/jobs/999999/decisions");
  Expect(200, "GET", fmt::format("/v1/jobs/{}/usage", running));
  Expect(200, "GET", fmt::format("/v1/jobs/{}/usage?attempt=1", running));
  Expect(400, "GET", fmt::format("/v1/jobs/{}/usage?attempt=-1", running));
  Expect(404, "GET", "/v1/jobs/999999/usage");
  Expect(200, "GET", fmt::format("/v1/jobs/{}/advice", running));
  Expect(404, "GET", "/v1/jobs/999999/advice");
  RecordStreamStart("/v1/events");
  Expect(400, "GET", "/v1/events?types=bogus");
  Expect(404, "GET", "/v1/events?job=999999");
  Expect(200, "POST", fmt::format("/v1/jobs/{}/hold", waiting), R"({"reason": "wait"})");
  Expect(200, "GET", "/v1/jobs?state=ready");
  Expect(409, "POST", fmt::format("/v1/jobs/{}/hold", waiting));
  Expect(200, "POST", fmt::format("/v1/jobs/{}/release", waiting));
  Expect(409, "POST", fmt::format("/v1/jobs/{}/release", waiting));
  Expect(200, "POST", fmt::format("/v1/jobs/{}/update", waiting), R"({"priority": "high"})");
  Expect(400, "POST", fmt::format("/v1/jobs/{}/update", waiting), R"({"speed": 1})");
  Expect(200, "POST", fmt::format("/v1/jobs/{}/checkpoint", running));
  Expect(409, "POST", fmt::format("/v1/jobs/{}/checkpoint", done));
  Expect(200, "POST", fmt::format("/v1/jobs/{}/report", running),
         R"({"useful_work_began": true, "progress": 0.5})");
  Expect(400, "POST", fmt::format("/v1/jobs/{}/report", running), R"({"progress": 2})");
  Expect(200, "GET", fmt::format("/v1/jobs/{}", running));
  Expect(200, "GET", fmt::format("/v1/jobs/{}/logs?stream=stdout", done));
  Expect(200, "GET", fmt::format("/v1/jobs/{}/logs?offset=-3&wait_ms=0", running));
  Expect(400, "GET", fmt::format("/v1/jobs/{}/logs?attempt=x", done));
  Expect(404, "GET", "/v1/jobs/999999/logs");
  Expect(409, "POST", fmt::format("/v1/jobs/{}/requeue", done));
  Expect(409, "POST", fmt::format("/v1/jobs/{}/cancel", done));
  Expect(200, "POST", fmt::format("/v1/jobs/{}/cancel", waiting));
  Expect(200, "POST", fmt::format("/v1/jobs/{}/requeue", running), R"({"reason": "move"})");
  Expect(200, "GET", fmt::format("/v1/jobs/{}", running));

  // Pipelines and goodput.
  const std::int64_t run = SubmitOne(
      "kind: Pipeline\nname: p\nqueue: q-a\nstages:\n"
      "  - {name: one, command: [sleep, '300'], resources: {cpu: 100m, memory: 16Mi}}\n"
      "  - {name: two, depends_on: [one], command: ['true'], resources: {cpu: 100m, memory: "
      "16Mi},\n"
      "     matrix: {grid: {lr: [1, 2]}}, objective: {metric: loss, goal: minimize},\n"
      "     outputs: [{name: loss}]}\n");
  Expect(200, "GET", "/v1/pipelines");
  Expect(200, "GET", fmt::format("/v1/pipelines/{}", run));
  Expect(404, "GET", "/v1/pipelines/999999");
  Expect(200, "GET", fmt::format("/v1/pipelines/{}/advice", run));
  Expect(404, "GET", "/v1/pipelines/999999/advice");
  Expect(200, "POST", fmt::format("/v1/pipelines/{}/cancel", run));
  Expect(404, "POST", "/v1/pipelines/999999/cancel");
  Expect(200, "GET", fmt::format("/v1/pipelines/{}", run));
  Expect(200, "GET", "/v1/goodput?by=team&since=0");
  Expect(400, "GET", "/v1/goodput?by=colour");
  Expect(200, "GET", "/v1/diagnosis?since=0&team=team-a&limit=50");
  Expect(400, "GET", "/v1/diagnosis?limit=0");
  Expect(200, "GET", "/metrics");

  // Queues and the policy.
  Expect(200, "GET", "/v1/queues");
  Expect(200, "GET", "/v1/policy");
  Expect(200, "POST", "/v1/policy/reload");
  WriteFile(policy_file(), "kind: Policy\nqueues: 7\n");
  Expect(400, "POST", "/v1/policy/reload");
  WriteFile(policy_file(), kPolicy);
  Expect(200, "POST", "/v1/policy/reload");
  Expect(403, "POST", "/v1/policy/reload", "", bob_token);

  // Cron jobs.
  const json cron = {{"name", "nightly"},
                     {"schedule", "0 3 * * *"},
                     {"time_zone", "UTC"},
                     {"starting_deadline_ms", 60000},
                     {"jobs",
                      {{{"name", "n"},
                        {"queue", "q-a"},
                        {"command", {"true"}},
                        {"resources", {{"cpu", "100m"}, {"memory", "16Mi"}}}}}}};
  Expect(200, "POST", "/v1/crons", cron.dump());
  json bad_cron = cron;
  bad_cron["schedule"] = "61 * * * *";
  Expect(400, "POST", "/v1/crons", bad_cron.dump());
  Expect(200, "GET", "/v1/crons");
  Expect(200, "POST", "/v1/crons/nightly/suspend");
  Expect(200, "GET", "/v1/crons");
  Expect(404, "POST", "/v1/crons/daily/suspend");
  Expect(200, "POST", "/v1/crons/nightly/resume");
  Expect(404, "POST", "/v1/crons/daily/resume");
  Expect(200, "DELETE", "/v1/crons/nightly");
  Expect(404, "DELETE", "/v1/crons/nightly");

  // Services (docs/inference.md): the body is the spec as `drover submit` sends it. Its replicas
  // sleep and are never ready, which is all the answers' shapes need.
  Result<spec::Documents> documents = spec::ParseDocuments(
      "kind: Service\nname: echo\nmodels: [tiny]\nqueue: q-a\n"
      "template: {command: [sleep, '600'], resources: {cpu: 100m, memory: 16Mi}}\n"
      "replicas: {min: 1, max: 2}\n",
      spec::ParseOptions{});
  ASSERT_TRUE(documents && documents->services.size() == 1u);
  const json service = codec::ToJson(documents->services.front());
  Expect(200, "POST", "/v1/services", service.dump());
  json bad_service = service;
  bad_service["max_replicas"] = 0;
  Expect(400, "POST", "/v1/services", bad_service.dump());
  Expect(200, "GET", "/v1/services");
  Expect(200, "GET", "/v1/services/echo");
  Expect(404, "GET", "/v1/services/nothing");
  Expect(200, "POST", "/v1/services/echo/load", R"({"in_flight": 3, "waiting": 0})");
  Expect(400, "POST", "/v1/services/echo/load", R"({"in_flight": -1})");
  Expect(200, "DELETE", "/v1/services/echo");
  Expect(404, "DELETE", "/v1/services/echo");

  // The agent protocol: a remote node, and a job on it whose launch, events and log the test
  // plays as its agent would.
  const std::string join_token = ReadLines(server_->join_token_file()).at(0);
  const json node = {
      {"name", "remote-1"},      {"address", "10.0.0.9"}, {"labels", {{"pool", "remote"}}},
      {"taints", json::array()}, {"cpu_millis", 4000},    {"memory_bytes", 8LL << 30},
      {"gpus", json::array()}};
  const httplib::Headers join = {{"X-Drover-Join-Token", join_token}};
  Expect(401, "POST", "/v1/agents/register", node.dump(), "");
  EXPECT_EQ(Call("POST", "/v1/agents/register", R"({"name": ""})", "", join).status, 400);
  const Answer registered = Call("POST", "/v1/agents/register", node.dump(), "", join);
  ASSERT_EQ(registered.status, 200) << registered.text;
  const std::string credential = registered.body.value("credential", "");
  Expect(200, "GET", "/v1/agents/remote-1/commands?wait_ms=0", "", credential);
  Expect(400, "GET", "/v1/agents/remote-1/commands?epoch=x", "", credential);
  Expect(403, "GET", "/v1/agents/other/commands", "", credential);
  Expect(400, "POST", "/v1/agents/remote-1/events", R"({"events": 3})", credential);
  Expect(404, "POST", "/v1/agents/remote-1/logs?job=999999&attempt=1&rank=0&stream=stdout&offset=0",
         "x", credential);
  Expect(400, "POST", "/v1/agents/remote-1/logs?job=1", "x", credential);
  const std::int64_t remote = SubmitOne(
      "kind: Job\nname: far\nqueue: q-a\nresources: {cpu: 100m, memory: 16Mi}\n"
      "placement: {node_selector: {pool: remote}}\ncommand: [echo, far]\n");
  json launch;
  ASSERT_TRUE(WaitUntil([&] {
    const json batch =
        Expect(200, "GET", "/v1/agents/remote-1/commands?wait_ms=0&epoch=0&ack=0", "", credential);
    for (const json& command : batch.value("commands", json::array())) {
      if (command.value("kind", "") == "launch") launch = command["launch"];
    }
    return launch.is_object();
  }));
  const std::int64_t attempt = launch.value("attempt", 1);
  auto event = [&](const std::string& kind) {
    return json{{"events",
                 {{{"job_id", remote},
                   {"attempt", attempt},
                   {"rank", 0},
                   {"kind", kind},
                   {"at", NowMs()},
                   {"exit",
                    {{"exit_code", 0},
                     {"signal", 0},
                     {"timed_out", false},
                     {"cancelled", false},
                     {"message", ""}}}}}}}
        .dump();
  };
  Expect(200, "POST", "/v1/agents/remote-1/events", event("started"), credential);
  Expect(200, "POST", "/v1/agents/remote-1/usage",
         json{{"node", "remote-1"},
              {"snapshots",
               {{{"at", NowMs()},
                 {"gpus", json::array()},
                 {"gpu_processes", json::array()},
                 {"processes", json::array()}}}}}
             .dump(),
         credential);
  Expect(400, "POST", "/v1/agents/remote-1/usage", R"({"node": "remote-1", "snapshots": 3})",
         credential);
  Expect(200, "POST",
         fmt::format("/v1/agents/remote-1/logs?job={}&attempt={}&rank=0&stream=stdout&offset=0",
                     remote, attempt),
         "far\n", credential);
  Expect(200, "POST", "/v1/agents/remote-1/events", event("exited"), credential);
  EXPECT_EQ(WaitForTerminal(client, remote), "succeeded");
  Expect(200, "GET", fmt::format("/v1/jobs/{}", remote));

  // Nodes.
  Expect(200, "GET", "/v1/nodes");
  Expect(200, "GET", "/v1/gpus");
  Expect(200, "POST", "/v1/nodes/remote-1/cordon", R"({"reason": "check"})");
  Expect(200, "POST", "/v1/nodes/remote-1/uncordon");
  Expect(400, "POST", "/v1/nodes/remote-1/uncordon", R"({"reason": "x"})");
  Expect(200, "POST", "/v1/nodes/remote-1/drain", R"({"grace_ms": 0})");
  Expect(200, "GET", "/v1/nodes");
  Expect(200, "POST", "/v1/nodes/remote-1/uncordon");
  Expect(400, "POST", "/v1/nodes/remote-1/drain", R"({"grace_ms": -1})");
  Expect(200, "PUT", "/v1/nodes/remote-1/maintenance",
         fmt::format(R"({{"from": {}, "to": {}, "reason": "bios"}})", kFarFrom, kFarTo));
  Expect(200, "GET", "/v1/nodes");
  Expect(400, "PUT", "/v1/nodes/remote-1/maintenance",
         fmt::format(R"({{"from": {}, "to": {}}})", kFarTo, kFarFrom));
  Expect(200, "DELETE", "/v1/nodes/remote-1/maintenance");
  Expect(404, "POST", "/v1/nodes/nowhere/cordon");

  // Secrets.
  Expect(200, "PUT", "/v1/teams/team-a/secrets/wandb-key", "sv-value");
  Expect(400, "PUT", "/v1/teams/team-a/secrets/wandb-key", "");
  Expect(200, "GET", "/v1/teams/team-a/secrets");
  Expect(400, "GET", "/v1/teams/.bad/secrets");
  Expect(200, "DELETE", "/v1/teams/team-a/secrets/wandb-key");
  Expect(404, "DELETE", "/v1/teams/team-a/secrets/wandb-key");

  // Every route that takes a token or a credential, without one.
  for (const api::Route& route : api::Routes()) {
    if (route.access.kind == api::Access::Kind::kPublic) continue;
    std::string path(route.pattern);
    for (const auto& [group, value] :
         std::vector<std::pair<std::string, std::string>>{{R"((\d+))", "1"}, {"([^/]+)", "x"}}) {
      for (std::size_t at; (at = path.find(group)) != std::string::npos;) {
        path.replace(at, group.size(), value);
      }
    }
    Expect(401, std::string(api::MethodName(route.method)), path, "", "");
  }
  Expect(200, "GET", "/v1/audit?limit=5&job=0&since=0");

  Validate();
}

}  // namespace
}  // namespace drover::integration
