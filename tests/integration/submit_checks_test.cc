// Submission checks end to end (issue 15): an idempotency key is bound to its request body, also
// across a restart, and a job no node can ever hold is refused unless asked to wait.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "drover/api/client.h"
#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using ::testing::HasSubstr;

class SubmitChecks : public IntegrationTest {};

constexpr std::string_view kSpec = R"(kind: Job
name: once
resources: {cpu: 100m, memory: 64Mi}
script: "true"
)";

TEST_F(SubmitChecks, AKeyReusedWithAnotherBodyIsRefusedAlsoAfterARestart) {
  const std::map<std::string, std::string> headers = {{"Idempotency-Key", "key-1"}};
  const std::string other = std::string(kSpec) + "team: vision\n";
  std::int64_t first_id = 0;
  {
    auto server = StartServer("data", "4xH100-80GB");
    ASSERT_TRUE(server->ok());
    api::ApiClient client = server->Client();
    auto first = client.Post("/v1/jobs", std::string(kSpec), "application/yaml", headers);
    ASSERT_TRUE(first) << first.error().message;
    EXPECT_EQ(first->status, 201);
    first_id = first->json["jobs"][0]["id"].get<std::int64_t>();
    auto reused = client.Post("/v1/jobs", other, "application/yaml", headers);
    ASSERT_FALSE(reused);
    EXPECT_EQ(reused.error().code, ErrorCode::kAlreadyExists);
    EXPECT_THAT(reused.error().message,
                HasSubstr("Idempotency-Key 'key-1' was used by another request"));
  }
  auto server = StartServer("data", "4xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  auto reused = client.Post("/v1/jobs", other, "application/yaml", headers);
  ASSERT_FALSE(reused);
  EXPECT_EQ(reused.error().code, ErrorCode::kAlreadyExists);
  auto retried = client.Post("/v1/jobs", std::string(kSpec), "application/yaml", headers);
  ASSERT_TRUE(retried) << retried.error().message;
  EXPECT_EQ(retried->status, 200);
  EXPECT_EQ(retried->json["jobs"][0]["id"].get<std::int64_t>(), first_id);
  auto jobs = client.Get("/v1/jobs");
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->json["jobs"].size(), 1u);
}

TEST_F(SubmitChecks, AJobNoNodeCanHoldIsRefusedUnlessHeld) {
  auto server = StartServer("data", "4xH100-80GB");
  ASSERT_TRUE(server->ok());
  const std::string file = dir_.Sub("big.yaml");
  WriteFile(file, "kind: Job\nname: big\nresources: {gpus: 16}\nscript: \"true\"\n");
  CommandResult refused = RunDrover({"--server", server->url(), "submit", file}, dir_.path());
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("job 'big' can never start: no current node can ever hold "
                                     "it: needs 16 GPUs on one node"));

  CommandResult held =
      RunDrover({"--server", server->url(), "submit", file, "--hold-infeasible"}, dir_.path());
  ASSERT_EQ(held.exit_code, 0) << held.err;
  api::ApiClient client = server->Client();
  auto jobs = client.Get("/v1/jobs");
  ASSERT_TRUE(jobs);
  ASSERT_EQ(jobs->json["jobs"].size(), 1u);
  const std::int64_t id = jobs->json["jobs"][0]["id"].get<std::int64_t>();
  ASSERT_TRUE(WaitUntil([&] {
    auto explained = client.Get(fmt::format("/v1/jobs/{}/explain", id));
    return explained && explained->json["message"].get<std::string>().find(
                            "no node can ever satisfy it") != std::string::npos;
  }));
}

}  // namespace
}  // namespace drover::integration
