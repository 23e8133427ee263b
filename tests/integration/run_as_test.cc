// Jobs run as their users, through the real binary (docs/security.md): a job submitted with the
// token of a user who has a Unix account runs with that account's uid; a checkpoint_dir that
// climbs out of the job's base directory is refused. Creating the account takes root, which CI
// has; elsewhere the first test says it is skipped.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "drover/testing/unix_account.h"
#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;

class RunAsUser : public IntegrationTest {
 protected:
  // A token for `user` of team-a with `role`, created with the server's admin token.
  static std::string TokenFor(ServerProcess& server, const std::string& admin_token,
                              const std::string& user, const std::string& role = "member") {
    httplib::Client http(server.url());
    const json body = {{"user", user}, {"team", "team-a"}, {"role", role}};
    auto created = http.Post("/v1/tokens", {{"Authorization", "Bearer " + admin_token}},
                             body.dump(), "application/json");
    if (!created || (created->status != 200 && created->status != 201)) {
      ADD_FAILURE() << "POST /v1/tokens: " << (created ? created->body : "no reply");
      return "";
    }
    return json::parse(created->body).value("token", "");
  }
};

TEST_F(RunAsUser, AJobOfATokensUserRunsWithThatUsersUid) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create a Unix account";
  auto account = testing::ScopedUnixAccount::Create("drover-it");
  ASSERT_TRUE(account) << account.error().ToString();
  // The account must reach its worker directory under the test's (mkdtemp: 0700) directory.
  ASSERT_EQ(chmod(dir_.path().c_str(), 0755), 0);
  auto server = StartServer("data", "1xH100-80GB");
  ASSERT_TRUE(server->ok());
  const std::string token = TokenFor(*server, server->token(), (*account)->name());
  ASSERT_FALSE(token.empty());
  api::ApiClient client(server->url());
  client.SetBearer(token);
  auto submitted = client.Post(
      "/v1/jobs",
      "kind: Job\nname: whoami\nresources: {cpu: 100m, memory: 16Mi}\ncommand: [id, -u]\n",
      "application/yaml", {{"X-Drover-Base-Dir", dir_.path()}});
  ASSERT_TRUE(submitted) << submitted.error().ToString();
  const std::int64_t id = submitted->json["jobs"][0]["id"].get<std::int64_t>();
  EXPECT_EQ(WaitForTerminal(client, id), "succeeded") << ProcessLogs(server.get(), {});
  const json job = GetJob(client, id);
  EXPECT_EQ(job["owner"], (*account)->name());
  EXPECT_EQ(job["team"], "team-a");
  auto log = client.Get(fmt::format("/v1/jobs/{}/logs", id));
  ASSERT_TRUE(log) << log.error().ToString();
  EXPECT_EQ(log->body, fmt::format("{}\n", (*account)->uid()));
}

TEST_F(RunAsUser, ACheckpointDirThatClimbsOutOfTheBaseDirectoryIsRefused) {
  auto server = StartServer("data", "1xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client(server->url());
  client.SetBearer(server->token());
  auto refused = client.Post("/v1/jobs",
                             "kind: Job\nname: escape\ncommand: ['true']\n"
                             "checkpoint_dir: ../../../../../../etc/drover-ck\n",
                             "application/yaml", {{"X-Drover-Base-Dir", dir_.path()}});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().ToString().find("climbs out of the job's base directory"),
            std::string::npos)
      << refused.error().ToString();
  EXPECT_FALSE(std::filesystem::exists("/etc/drover-ck"));
}

}  // namespace
}  // namespace drover::integration
