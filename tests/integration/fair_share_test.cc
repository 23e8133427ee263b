// Fair share through the real server (docs/scheduling.md, "Fair share"): usage is accounted
// while nothing is pending, a policy reload keeps each queue's history by name and says which
// queues' history it dropped, and a restart on the same data directory keeps it.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;

// Queues org/<each of `teams`>, a half-life of one hour.
std::string Teams(const std::vector<std::string>& teams) {
  std::string text =
      "kind: Policy\nfair_share: {half_life: 1h}\nqueues:\n  - name: org\n"
      "    children:\n";
  for (const std::string& team : teams) text += "      - name: " + team + "\n";
  return text;
}

// The share GET /v1/queues shows for queue `name`; -1 if it is not listed or on error.
double Share(api::ApiClient& client, const std::string& name) {
  auto queues = client.Queues();
  if (!queues) return -1;
  for (const json& queue : (*queues)["queues"]) {
    if (queue.value("name", "") == name) return queue.value("share", -1.0);
  }
  return -1;
}

class FairShare : public IntegrationTest {
 protected:
  const std::string policy_ = dir_.Sub("policy.yaml");
};

TEST_F(FairShare, UsageSurvivesAReloadAndARestart) {
  WriteFile(policy_, Teams({"team-a", "team-b"}));
  double used = 0;
  {
    auto server = StartServer("data", "8xH100-80GB", {"--policy", policy_});
    ASSERT_TRUE(server->ok());
    api::ApiClient client = server->Client();
    const std::vector<std::int64_t> ids = Submit(client, R"(kind: Job
name: a-train
queue: team-a
resources: {cpu: 100m, memory: 64Mi, gpus: 4}
script: sleep 1
---
kind: Job
name: b-train
queue: team-b
resources: {cpu: 100m, memory: 64Mi, gpus: 2}
script: sleep 1
)");
    ASSERT_EQ(ids.size(), 2u);
    for (std::int64_t id : ids) ASSERT_EQ(WaitForTerminal(client, id), "succeeded");

    // Nothing is pending, nothing runs: what team-a used still counts.
    used = Share(client, "team-a");
    EXPECT_GT(used, 0.0);
    EXPECT_GT(Share(client, "team-b"), 0.0);

    // A reload without team-b, with a new team-c: team-a keeps its history, team-b's is dropped
    // (the reply says so), team-c starts at 0.
    WriteFile(policy_, Teams({"team-a", "team-c"}));
    auto reload = client.ReloadPolicy();
    ASSERT_TRUE(reload) << reload.error().message;
    EXPECT_EQ((*reload)["history_dropped"], json::array({"org/team-b"})) << reload->dump(2);
    const double reloaded = Share(client, "team-a");
    EXPECT_LE(reloaded, used);        // only decayed
    EXPECT_GT(reloaded, 0.9 * used);  // a few seconds of a one-hour half-life
    EXPECT_EQ(Share(client, "team-c"), 0.0);
    EXPECT_TRUE(WaitUntil([&] {
      return server->Log().find("fair-share history of it was dropped") != std::string::npos;
    })) << server->Log();

    // Stopped as an operator stops it (SIGTERM): it saves the history on the way out.
    ASSERT_EQ(kill(server->process().pid(), SIGTERM), 0);
    ASSERT_TRUE(server->process().Wait().has_value());
  }
  auto server = StartServer("data", "8xH100-80GB", {"--policy", policy_});
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  const double restarted = Share(client, "team-a");
  EXPECT_LE(restarted, used);
  EXPECT_GT(restarted, 0.9 * used) << "the history did not survive the restart";
  EXPECT_EQ(Share(client, "team-b"), -1.0);  // not in the policy
}

}  // namespace
}  // namespace drover::integration
