// The HTTP API and the CLI against a real server: spec diagnostics, idempotent submission,
// not-found errors, and an unreachable server.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class Api : public IntegrationTest {};

constexpr char kBadSpec[] = R"(kind: Job
name: bad
gpu: 1
script: echo hi
resources:
  gpus: 0.5
depends_on: [nonexistent]
)";

TEST_F(Api, MalformedSpecGetsPositionedErrorsAndLeavesTheStoreUntouched) {
  auto server = StartServer("data", "4xH100-80GB");
  ASSERT_TRUE(server->ok());
  httplib::Client http(server->url());
  http.set_bearer_token_auth(server->token());
  httplib::Headers headers = {{"X-Drover-File", "bad.yaml"}};
  auto response = http.Post("/v1/jobs", headers, kBadSpec, "application/yaml");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 400);
  json body = json::parse(response->body, nullptr, false);
  ASSERT_TRUE(body.is_object()) << response->body;
  EXPECT_EQ(body["code"], "invalid_argument");
  EXPECT_THAT(body["message"].get<std::string>(), HasSubstr("bad.yaml"));
  ASSERT_TRUE(body["details"].is_array());
  std::vector<std::string> details;
  for (const json& d : body["details"]) details.push_back(d.get<std::string>());
  ASSERT_EQ(details.size(), 3u) << body.dump(2);
  const std::regex shape(R"(bad\.yaml:\d+:\d+: error: [A-Za-z0-9_.\[\]]+: .+)");
  for (const std::string& d : details) EXPECT_TRUE(std::regex_match(d, shape)) << d;
  EXPECT_THAT(details, Contains(AllOf(StartsWith("bad.yaml:3:1: error: gpu: "),
                                      HasSubstr("resources.gpus"))));
  EXPECT_THAT(details, Contains(StartsWith("bad.yaml:6:9: error: resources.gpus: ")));
  EXPECT_THAT(details, Contains(AllOf(StartsWith("bad.yaml:7:14: error: depends_on[0]: "),
                                      HasSubstr("nonexistent"))));

  api::ApiClient client = server->Client();
  auto jobs = client.Get("/v1/jobs");
  ASSERT_TRUE(jobs) << jobs.error().message;
  EXPECT_TRUE(jobs->json["jobs"].is_array());
  EXPECT_TRUE(jobs->json["jobs"].empty()) << jobs->json.dump(2);
}

TEST_F(Api, ValidateReportsDiagnosticsAndAcceptsTheQuickstart) {
  const std::string bad = dir_.Sub("bad.yaml");
  WriteFile(bad, kBadSpec);
  CommandResult invalid = RunDrover({"validate", bad}, dir_.path());
  EXPECT_EQ(invalid.exit_code, 2) << invalid.out << invalid.err;
  EXPECT_THAT(invalid.err, HasSubstr("bad.yaml:3:1: error: gpu: "));
  EXPECT_THAT(invalid.err, HasSubstr("bad.yaml:6:9: error: resources.gpus: "));
  EXPECT_THAT(invalid.err, HasSubstr("bad.yaml:7:14: error: depends_on[0]: "));
  EXPECT_THAT(invalid.err, HasSubstr("3 errors"));

  CommandResult valid =
      RunDrover({"validate", SourceDir() + "/examples/quickstart.yaml"}, dir_.path());
  EXPECT_EQ(valid.exit_code, 0) << valid.out << valid.err;
  EXPECT_THAT(valid.out, HasSubstr("3 jobs valid (prep, train, eval)"));

  // A time zone this machine's tz database does not know, at its position; a known one passes.
  const std::string cron = dir_.Sub("cron.yaml");
  WriteFile(cron,
            "kind: CronJob\nname: c\nschedule: \"@daily\"\ntime_zone: Europe/Nowhere\n"
            "job: {script: x}\n");
  CommandResult zone = RunDrover({"validate", cron}, dir_.path());
  EXPECT_EQ(zone.exit_code, 2) << zone.out << zone.err;
  EXPECT_THAT(zone.err, HasSubstr("cron.yaml:4:12: error: time_zone: unknown time zone "
                                  "\"Europe/Nowhere\""));
  WriteFile(cron,
            "kind: CronJob\nname: c\nschedule: \"@daily\"\ntime_zone: Europe/Berlin\n"
            "job: {script: x}\n");
  zone = RunDrover({"validate", cron}, dir_.path());
  EXPECT_EQ(zone.exit_code, 0) << zone.out << zone.err;
}

// Every verb that takes a job (or a pipeline run) id refuses one that is not a positive number
// before it sends anything: no server runs here, so a request would fail differently.
TEST_F(Api, AnIdThatIsNotAJobIdOrANegativeCountIsRefusedBeforeAnyRequest) {
  for (const std::string verb : {"get", "logs", "cancel", "hold", "release", "update", "requeue",
                                 "explain", "why", "diagnose", "checkpoint"}) {
    for (const std::string id : {"abc", "-1", "0", "7x", "99999999999999999999"}) {
      CommandResult refused =
          RunDrover({"--server", "http://127.0.0.1:1", verb, "--", id}, dir_.path());
      EXPECT_EQ(refused.exit_code, 2) << verb << " " << id << ": " << refused.err;
      EXPECT_THAT(refused.err, HasSubstr("'" + id + "' is not a job id")) << verb;
    }
  }
  // Nor is a negative count or index sent (--tail -5 printed the whole log).
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"logs", "1", "--tail", "-5"},
        {"logs", "1", "--rank", "-1"},
        {"logs", "1", "--attempt", "-2"},
        {"ls", "--limit", "-1"}}) {
    std::vector<std::string> line = {"--server", "http://127.0.0.1:1"};
    line.insert(line.end(), args.begin(), args.end());
    CommandResult refused = RunDrover(line, dir_.path());
    const std::string& option = args[args.size() - 2];
    EXPECT_EQ(refused.exit_code, 2) << option << ": " << refused.err;
    EXPECT_THAT(refused.err,
                HasSubstr(option + ": Value " + args.back() + " not in range 0 to 2147483647"));
  }
}

TEST_F(Api, LogsAreServedWholeFromTheTailAndFollowedToTheEnd) {
  auto server = StartServer("data", "4xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  auto ids = Submit(client, R"(kind: Job
name: talk
resources:
  cpu: 100m
  memory: 64Mi
script: |
  for i in 1 2 3 4 5; do echo "line $i"; sleep 0.2; done
  echo "to stderr" >&2
)");
  ASSERT_EQ(ids.size(), 1u);
  const std::string id = std::to_string(ids[0]);
  // Following starts while the job runs and ends when the worker has exited.
  CommandResult follow = RunDrover({"--server", server->url(), "logs", id, "-f"}, dir_.path());
  EXPECT_EQ(follow.exit_code, 0) << follow.err;
  EXPECT_EQ(follow.out, "line 1\nline 2\nline 3\nline 4\nline 5\n");
  EXPECT_EQ(WaitForTerminal(client, ids[0]), "succeeded");

  CommandResult tail =
      RunDrover({"--server", server->url(), "logs", id, "--tail", "2"}, dir_.path());
  EXPECT_EQ(tail.out, "line 4\nline 5\n");
  CommandResult err = RunDrover({"--server", server->url(), "logs", id, "--stderr"}, dir_.path());
  EXPECT_EQ(err.out, "to stderr\n");

  auto missing = client.Get("/v1/jobs/" + id + "/logs?rank=3");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

TEST_F(Api, IdempotencyKeyReturnsTheSameJobs) {
  auto server = StartServer("data", "4xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  const std::string spec = R"(kind: Job
name: once
resources:
  cpu: 100m
  memory: 64Mi
script: "true"
)";
  std::map<std::string, std::string> headers = {{"Idempotency-Key", "key-1"},
                                                {"X-Drover-File", "once.yaml"}};
  auto first = client.Post("/v1/jobs", spec, "application/yaml", headers);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->status, 201);
  EXPECT_FALSE(first->json["existing"].get<bool>());
  auto second = client.Post("/v1/jobs", spec, "application/yaml", headers);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->status, 200);
  EXPECT_TRUE(second->json["existing"].get<bool>());
  ASSERT_EQ(first->json["jobs"].size(), 1u);
  ASSERT_EQ(second->json["jobs"].size(), 1u);
  EXPECT_EQ(first->json["jobs"][0]["id"], second->json["jobs"][0]["id"]);

  auto jobs = client.Get("/v1/jobs");
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->json["jobs"].size(), 1u) << jobs->json.dump(2);

  // The CLI's --idempotency-key reaches the same jobs.
  const std::string file = dir_.Sub("once.yaml");
  WriteFile(file, spec);
  CommandResult cli = RunDrover(
      {"--server", server->url(), "submit", file, "--idempotency-key", "key-1"}, dir_.path());
  EXPECT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_THAT(cli.out, HasSubstr(fmt::format("already submitted: job {} (once)",
                                             first->json["jobs"][0]["id"].get<std::int64_t>())));
  jobs = client.Get("/v1/jobs");
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->json["jobs"].size(), 1u);
}

void ExpectNotFound(httplib::Client& http, const std::string& method, const std::string& path) {
  auto response = method == "GET" ? http.Get(path) : http.Post(path, "", "application/json");
  ASSERT_TRUE(response) << method << " " << path;
  EXPECT_EQ(response->status, 404) << method << " " << path;
  json body = json::parse(response->body, nullptr, false);
  ASSERT_TRUE(body.is_object()) << method << " " << path << ": " << response->body;
  EXPECT_EQ(body["code"], "not_found") << method << " " << path;
  EXPECT_FALSE(body["message"].get<std::string>().empty());
}

TEST_F(Api, UnknownEndpointsAndJobsAreNotFound) {
  auto server = StartServer("data", "4xH100-80GB");
  ASSERT_TRUE(server->ok());
  httplib::Client http(server->url());
  http.set_bearer_token_auth(server->token());
  ExpectNotFound(http, "GET", "/v1/no-such-endpoint");
  ExpectNotFound(http, "GET", "/v1/jobs/424242");
  ExpectNotFound(http, "GET", "/v1/jobs/0");
  ExpectNotFound(http, "GET", "/v1/jobs/not-a-number");
  ExpectNotFound(http, "GET", "/v1/jobs/424242/explain");
  ExpectNotFound(http, "POST", "/v1/jobs/424242/cancel");

  CommandResult cli = RunDrover({"--server", server->url(), "get", "424242"}, dir_.path());
  EXPECT_EQ(cli.exit_code, 1);
  EXPECT_THAT(cli.err, HasSubstr("job 424242 does not exist"));
}

// A loopback port where nothing listens (bound, read, then closed).
int UnusedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return 0;
  }
  close(fd);
  return ntohs(addr.sin_port);
}

TEST_F(Api, LsWithoutAServerSaysItCannotReachIt) {
  int port = UnusedPort();
  ASSERT_GT(port, 0);
  const std::string url = fmt::format("http://127.0.0.1:{}", port);
  CommandResult cli = RunDrover({"--server", url, "ls"}, dir_.path());
  EXPECT_NE(cli.exit_code, 0);
  EXPECT_TRUE(cli.out.empty()) << cli.out;
  std::istringstream err(cli.err);
  std::string line;
  int count = 0;
  while (std::getline(err, line)) count += line.empty() ? 0 : 1;
  EXPECT_EQ(count, 1) << cli.err;
  EXPECT_THAT(cli.err, HasSubstr("cannot reach"));
  EXPECT_THAT(cli.err, HasSubstr(url));
}

}  // namespace
}  // namespace drover::integration
