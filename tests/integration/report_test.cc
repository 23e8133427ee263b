// Goodput reporting from inside a job (`drover report`, POST /v1/jobs/{id}/report): the job
// finds itself and the server through the environment its agent gives it (DROVER_JOB_ID,
// DROVER_SERVER), and its attempt shows what it reported.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>

#include <string>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class Report : public IntegrationTest {};

// POSTs `body` to /v1/jobs/ID/report with the server's admin token; returns the HTTP status and the
// parsed body.
std::pair<int, json> PostReport(const ServerProcess& server, std::int64_t id,
                                const std::string& body) {
  httplib::Client http(server.url());
  http.set_bearer_token_auth(server.token());
  auto response = http.Post(fmt::format("/v1/jobs/{}/report", id), body, "application/json");
  if (!response) return {0, json()};
  return {response->status, json::parse(response->body, nullptr, false)};
}

TEST_F(Report, AJobReportsUsefulWorkAndProgressFromInside) {
  auto server = StartServer("data", "4xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  const std::string spec = fmt::format(R"(kind: Job
name: reporter
resources:
  cpu: 100m
  memory: 64Mi
script: |
  {0} report --began && {0} report --progress 0.5 && {0} report --throughput 1250 --unit samples/s
)",
                                       DroverBinary());
  auto ids = Submit(client, spec);
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_EQ(WaitForTerminal(client, ids[0]), "succeeded") << GetJob(client, ids[0]).dump(2);

  json job = GetJob(client, ids[0]);
  ASSERT_EQ(job["attempts"].size(), 1u) << job.dump(2);
  const json& attempt = job["attempts"][0];
  const std::int64_t useful = attempt["useful_work_at"].get<std::int64_t>();
  EXPECT_GE(useful, attempt["placed_at"].get<std::int64_t>()) << attempt.dump(2);
  EXPECT_LE(useful, attempt["finished_at"].get<std::int64_t>()) << attempt.dump(2);
  EXPECT_EQ(attempt["progress"], 0.5);
  EXPECT_EQ(attempt["throughput"], 1250);
  EXPECT_EQ(attempt["throughput_unit"], "samples/s");
  EXPECT_EQ(job["timeline"]["useful_work"], useful);
  // The usage view turns the rate into work per GPU-hour and per joule where it can: this job
  // holds no GPU and drew no sampled energy, so both are unknown (null), not zero.
  auto usage = client.Get(fmt::format("/v1/jobs/{}/usage", ids[0]));
  ASSERT_TRUE(usage) << usage.error().message;
  EXPECT_EQ(usage->json["work"]["throughput"], 1250) << usage->body;
  EXPECT_EQ(usage->json["work"]["work_unit"], "samples");
  EXPECT_TRUE(usage->json["work"]["per_gpu_hour"].is_null());
  CommandResult get =
      RunDrover({"--server", server->url(), "get", std::to_string(ids[0])}, dir_.path());
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_THAT(get.out, HasSubstr("throughput: 1250 samples/s\n"));
  EXPECT_THAT(get.out, HasSubstr("progress 50%; throughput 1250 samples/s"));

  // What `drover report` printed inside the job.
  auto log = client.Get(fmt::format("/v1/jobs/{}/logs", ids[0]));
  ASSERT_TRUE(log) << log.error().message;
  EXPECT_THAT(log->body, HasSubstr(fmt::format("job {} attempt 1: useful work began at", ids[0])));
  EXPECT_THAT(log->body, HasSubstr("; progress 50%\n"));
  EXPECT_THAT(log->body, HasSubstr("; throughput 1250 samples/s\n"));
}

TEST_F(Report, ReportsAreCheckedAndErrorsNameTheField) {
  auto server = StartServer("data", "4xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  auto ids = Submit(client, R"(kind: Job
name: long
resources:
  cpu: 100m
  memory: 64Mi
script: sleep 300
)");
  ASSERT_EQ(ids.size(), 1u);
  const std::int64_t id = ids[0];
  ASSERT_EQ(WaitForState(client, id, {"running"}), "running");

  // From outside the job: --job names it.
  CommandResult set = RunDrover({"--server", server->url(), "-o", "json", "report", "--job",
                                 std::to_string(id), "--progress", "0.25"},
                                dir_.path());
  ASSERT_EQ(set.exit_code, 0) << set.out << set.err;
  json reply = json::parse(set.out, nullptr, false);
  EXPECT_EQ(reply["job"], id);
  EXPECT_EQ(reply["attempt"], 1);
  EXPECT_EQ(reply["useful_work_at"], 0);
  EXPECT_EQ(reply["progress"], 0.25);
  EXPECT_EQ(GetJob(client, id)["attempts"][0]["progress"], 0.25);

  struct Case {
    std::string body;
    int status;
    std::string code;
    std::string message_start;
  };
  for (const Case& c : {
           Case{R"({"progress": 1.5})", 400, "invalid_argument", "progress: "},
           Case{R"({"progress": "half"})", 400, "invalid_argument", "progress: "},
           Case{R"({"useful_work_began": 1})", 400, "invalid_argument", "useful_work_began: "},
           Case{R"({"usefull_work_began": true})", 400, "invalid_argument",
                "usefull_work_began: unknown field"},
           Case{R"({})", 400, "invalid_argument", "request body: "},
           Case{R"([0.5])", 400, "invalid_argument", "request body: "},
           Case{R"({"throughput": 5})", 400, "invalid_argument", "unit: required"},
           Case{R"({"throughput": 5, "unit": "samples"})", 400, "invalid_argument", "unit: "},
           Case{R"({"throughput": "fast", "unit": "a/s"})", 400, "invalid_argument",
                "throughput: "},
           Case{R"({"throughput": -1, "unit": "a/s", "progress": 0.75})", 400, "invalid_argument",
                "throughput: "},
       }) {
    auto [status, body] = PostReport(*server, id, c.body);
    EXPECT_EQ(status, c.status) << c.body << " -> " << body.dump();
    EXPECT_EQ(body["code"], c.code) << c.body;
    EXPECT_THAT(body["message"].get<std::string>(), StartsWith(c.message_start)) << c.body;
  }
  EXPECT_EQ(GetJob(client, id)["attempts"][0]["progress"], 0.25);  // nothing above changed it

  EXPECT_EQ(PostReport(*server, id + 100, R"({"progress": 0.5})").first, 404);
  ASSERT_TRUE(client.Post(fmt::format("/v1/jobs/{}/cancel", id), "", "application/json"));
  ASSERT_EQ(WaitForTerminal(client, id), "cancelled");
  auto [status, body] = PostReport(*server, id, R"({"useful_work_began": true})");
  EXPECT_EQ(status, 409) << body.dump();
  EXPECT_EQ(body["code"], "failed_precondition");

  // The CLI without a job or without anything to report is a usage error.
  unsetenv("DROVER_JOB_ID");
  CommandResult no_job = RunDrover({"--server", server->url(), "report", "--began"}, dir_.path());
  EXPECT_EQ(no_job.exit_code, 2);
  EXPECT_THAT(no_job.err, HasSubstr("DROVER_JOB_ID"));
  CommandResult nothing =
      RunDrover({"--server", server->url(), "report", "--job", std::to_string(id)}, dir_.path());
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_THAT(nothing.err, HasSubstr("nothing to report"));
}

}  // namespace
}  // namespace drover::integration
