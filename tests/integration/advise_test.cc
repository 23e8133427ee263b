// `drover advise` end to end (docs/observability.md, "Advice"): jobs of one name that hold 64 MiB
// of their 256 Mi request, measured by the real server's process sampler; with two measured
// attempts there is no advice and it says why, with three the advice is to request less memory.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drover/common/quantity.h"
#include "drover/testing/wait_until.h"
#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class AdviseTest : public IntegrationTest {};

// `tail` keeps its whole input (one line without a newline) until the input ends: 64 MiB of RSS
// for the 6 s the sleep keeps the pipe open.
constexpr char kSpec[] = R"(kind: Job
name: holder
resources: {cpu: 100m, memory: 256Mi}
script: (head -c 67108864 /dev/zero; sleep 6) | tail > /dev/null
)";

TEST_F(AdviseTest, AJobUsingAQuarterOfItsMemoryIsAdvisedToAskLessOnceItHasHistory) {
  ServerProcess server(dir_.Sub("data"), dir_.path(),
                       {"--process-sample-interval", "500ms", "--diagnosis-min-sampled", "3s"});
  ASSERT_TRUE(server.ok());
  api::ApiClient client = server.Client();
  auto run_one = [&] {
    const std::vector<std::int64_t> ids = Submit(client, kSpec);
    ASSERT_EQ(ids.size(), 1u);
    ASSERT_EQ(WaitForState(client, ids[0], {"succeeded", "failed"}), "succeeded")
        << ProcessLogs(&server, {});
  };
  // Measured attempts of "holder", once their last batch has arrived.
  auto advice = [&] {
    auto reply = client.Get("/v1/jobs?name=holder&limit=1");
    if (!reply || reply->json["jobs"].empty()) return json();
    const std::string id = reply->json["jobs"][0]["id"].dump();
    auto answer = client.Get("/v1/jobs/" + id + "/advice");
    return answer ? answer->json["advice"][0] : json();
  };
  run_one();
  run_one();
  ASSERT_TRUE(testing::WaitUntil([&] { return advice().value("history", 0) == 2; },
                                 std::chrono::seconds(60), std::chrono::milliseconds(500)))
      << advice().dump();
  CommandResult few = RunDrover({"--server", server.url(), "advise", "holder"}, dir_.path());
  ASSERT_EQ(few.exit_code, 0) << few.err;
  EXPECT_THAT(few.out, HasSubstr("no advice for holder"));
  EXPECT_THAT(few.out, HasSubstr("2 measured attempt(s) of at least the minimum sampled time; "
                                 "advice needs 3"));

  run_one();
  ASSERT_TRUE(testing::WaitUntil([&] { return advice().value("history", 0) == 3; },
                                 std::chrono::seconds(60), std::chrono::milliseconds(500)))
      << advice().dump();
  CommandResult as_json =
      RunDrover({"--server", server.url(), "-o", "json", "advise", "holder"}, dir_.path());
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  const json advised = json::parse(as_json.out)["advice"][0];
  json memory;
  for (const json& r : advised["recommendations"]) {
    if (r["field"] == "memory") memory = r;
  }
  ASSERT_FALSE(memory.is_null()) << advised.dump();
  EXPECT_EQ(memory["current"], "256Mi");
  Result<std::int64_t> target = ParseBytes(memory["target"].get<std::string>());
  ASSERT_TRUE(target.has_value()) << memory.dump();
  EXPECT_GT(*target, 64 << 20);   // what it held, plus the margin
  EXPECT_LT(*target, 128 << 20);  // far below the request
  CommandResult text =
      RunDrover({"--server", server.url(), "advise", advised["job_id"].dump()}, dir_.path());
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("memory: 256Mi -> "));
  EXPECT_THAT(text.out, HasSubstr("spec patch:\nresources:\n"));
  CommandResult neither = RunDrover({"--server", server.url(), "advise"}, dir_.path());
  EXPECT_NE(neither.exit_code, 0);
  EXPECT_THAT(neither.err, HasSubstr("give a job id or name, or --pipeline RUN"));
}

}  // namespace
}  // namespace drover::integration
