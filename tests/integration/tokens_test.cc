// Tokens from the CLI against the real server (docs/security.md, "Tokens" and "Audit log"): the
// first admin token, creating, using and revoking a member's token, and the audit log.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

class Tokens : public IntegrationTest {};

TEST_F(Tokens, TheAdminCreatesAMembersTokenWhichWorksUntilRevokedAndEverythingIsAudited) {
  auto server = StartServer("data", "1xH100-80GB");
  ASSERT_TRUE(server->ok());
  struct stat info {};
  ASSERT_EQ(stat((dir_.path() + "/data/admin.token").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  EXPECT_THAT(server->Log(), HasSubstr("admin.token"));
  EXPECT_THAT(server->Log(), Not(HasSubstr(server->token())));

  CommandResult admin = RunDrover({"--server", server->url(), "whoami"}, dir_.path());
  ASSERT_EQ(admin.exit_code, 0) << admin.err;
  EXPECT_THAT(admin.out, HasSubstr("(admin)"));

  CommandResult created =
      RunDrover({"--server", server->url(), "-o", "json", "token", "create", "--user", "ann",
                 "--team", "team-a", "--role", "member", "--expires", "1d"},
                dir_.path());
  ASSERT_EQ(created.exit_code, 0) << created.err;
  const nlohmann::json token = nlohmann::json::parse(created.out);
  const std::string secret = token["token"].get<std::string>();
  EXPECT_THAT(secret, MatchesRegex("drv_[0-9a-f]{64}"));

  CommandResult ann =
      RunDrover({"--server", server->url(), "--token", secret, "whoami"}, dir_.path());
  ASSERT_EQ(ann.exit_code, 0) << ann.err;
  EXPECT_EQ(ann.out, "ann (member of team-a)\n");
  CommandResult refused =
      RunDrover({"--server", server->url(), "--token", secret, "token", "ls"}, dir_.path());
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("administer"));

  CommandResult listed = RunDrover({"--server", server->url(), "token", "ls"}, dir_.path());
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_THAT(listed.out, HasSubstr(token["id"].get<std::string>()));
  EXPECT_THAT(listed.out, Not(HasSubstr(secret)));

  CommandResult revoked = RunDrover(
      {"--server", server->url(), "token", "revoke", token["id"].get<std::string>()}, dir_.path());
  ASSERT_EQ(revoked.exit_code, 0) << revoked.err;
  CommandResult after =
      RunDrover({"--server", server->url(), "--token", secret, "whoami"}, dir_.path());
  EXPECT_EQ(after.exit_code, 1);
  EXPECT_THAT(after.err, HasSubstr("was revoked at"));
  EXPECT_THAT(after.err, HasSubstr("the token sent came from --token"));
  EXPECT_THAT(after.err, Not(HasSubstr(secret)));

  CommandResult audit = RunDrover({"--server", server->url(), "-o", "json", "audit"}, dir_.path());
  ASSERT_EQ(audit.exit_code, 0) << audit.err;
  const nlohmann::json records = nlohmann::json::parse(audit.out)["records"];
  std::vector<std::string> actions;
  for (const nlohmann::json& record : records) {
    actions.push_back(record["action"].get<std::string>() + " " +
                      std::to_string(record["status"].get<int>()));
    EXPECT_EQ(record["address"], "127.0.0.1");
  }
  EXPECT_THAT(actions, ::testing::ElementsAre(
                           "POST /v1/tokens 200",
                           "POST /v1/tokens/" + token["id"].get<std::string>() + "/revoke 200"));
  EXPECT_THAT(audit.out, Not(HasSubstr(secret)));
}

TEST_F(Tokens, ARestartedServerKeepsItsAdminTokenAndTheCliSaysWhereItLookedOnA401) {
  {
    auto first = StartServer("data", "1xH100-80GB");
    ASSERT_TRUE(first->ok());
    const std::string token = first->token();
    first->process().KillGroup();
    auto second = StartServer("data", "1xH100-80GB");
    ASSERT_TRUE(second->ok());
    EXPECT_EQ(second->token(), token);
    CommandResult bad =
        RunDrover({"--server", second->url(), "--token", "drv_nonsense", "ls"}, dir_.path());
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_THAT(bad.err, HasSubstr("token unknown"));
    EXPECT_THAT(bad.err, HasSubstr("drover token create"));
  }
}

}  // namespace
}  // namespace drover::integration
