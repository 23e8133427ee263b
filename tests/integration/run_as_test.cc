// Jobs run as their users, through the real binary (docs/security.md): a job submitted with the
// token of a user who has a Unix account runs with that account's uid; a checkpoint_dir that
// climbs out of the job's base directory is refused. Creating the account takes root, which CI
// has; elsewhere the first test says it is skipped.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
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

  // Submits job `name` (one attempt) running `script` with the output `output` (a flow mapping:
  // {name: N} or {name: N, path: P}); its id (0, with a test failure, when refused).
  static std::int64_t SubmitWithOutput(api::ApiClient& client, const std::string& name,
                                       const std::string& output, const std::string& script) {
    auto submitted =
        client.Post("/v1/jobs",
                    fmt::format("kind: Job\nname: {}\nresources: {{cpu: 100m, memory: 16Mi}}\n"
                                "retry: {{max_attempts: 1}}\noutputs: [{}]\nscript: {}\n",
                                name, output, script),
                    "application/yaml");
    EXPECT_TRUE(submitted) << submitted.error().ToString();
    return submitted ? submitted->json["jobs"][0]["id"].get<std::int64_t>() : 0;
  }

  // A client of `server` that sends a member token of `user` (a test failure when there is none).
  static std::unique_ptr<api::ApiClient> MemberClient(ServerProcess& server,
                                                      const std::string& user) {
    auto client = std::make_unique<api::ApiClient>(server.url());
    const std::string token = TokenFor(server, server.token(), user);
    EXPECT_FALSE(token.empty());
    client->SetBearer(token);
    return client;
  }

  // What a test of a member's jobs starts from (as root: the caller skips otherwise): a Unix
  // account "<prefix>-..." that may enter the test's directory (mkdtemp made it 0700) down to its
  // jobs' folders, a server, and a client with a member token of the account's name. Its client
  // is null, after a test failure, when one of them cannot be had.
  struct Member {
    std::unique_ptr<testing::ScopedUnixAccount> account;
    std::unique_ptr<ServerProcess> server;
    std::unique_ptr<api::ApiClient> client;
  };
  Member StartMember(const std::string& prefix) {
    Member member;
    auto account = testing::ScopedUnixAccount::Create(prefix);
    EXPECT_TRUE(account) << account.error().ToString();
    if (!account) return member;
    const bool enterable = chmod(dir_.path().c_str(), 0755) == 0;
    EXPECT_TRUE(enterable) << "chmod " << dir_.path() << ": " << std::strerror(errno);
    if (!enterable) return member;
    member.account = *std::move(account);
    member.server = StartServer("data", "1xH100-80GB");
    EXPECT_TRUE(member.server->ok());
    if (member.server->ok()) member.client = MemberClient(*member.server, member.account->name());
    return member;
  }
};

TEST_F(RunAsUser, AJobOfATokensUserRunsWithThatUsersUid) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create a Unix account";
  Member member = StartMember("drover-it");
  ASSERT_TRUE(member.client);
  api::ApiClient& client = *member.client;
  auto submitted = client.Post(
      "/v1/jobs",
      "kind: Job\nname: whoami\nresources: {cpu: 100m, memory: 16Mi}\ncommand: [id, -u]\n",
      "application/yaml", {{"X-Drover-Base-Dir", dir_.path()}});
  ASSERT_TRUE(submitted) << submitted.error().ToString();
  const std::int64_t id = submitted->json["jobs"][0]["id"].get<std::int64_t>();
  EXPECT_EQ(WaitForTerminal(client, id), "succeeded") << ProcessLogs(member.server.get(), {});
  const json job = GetJob(client, id);
  EXPECT_EQ(job["owner"], member.account->name());
  EXPECT_EQ(job["team"], "team-a");
  auto log = client.Get(fmt::format("/v1/jobs/{}/logs", id));
  ASSERT_TRUE(log) << log.error().ToString();
  EXPECT_EQ(log->body, fmt::format("{}\n", member.account->uid()));
}

// The server publishes a job's outputs with its account's file permissions (docs/security.md,
// "Outputs are published as the job's account"). A job that turns its staging directory into a
// link to a folder only root may enter cannot make the server move the file of that name there
// onto its output (before, the server, as root, followed the link and did); an output the
// account staged itself publishes as before.
TEST_F(RunAsUser, AJobsOutputsArePublishedWithItsAccountsPermissionsOnly) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create a Unix account";
  Member member = StartMember("drover-io");
  ASSERT_TRUE(member.client);
  api::ApiClient& client = *member.client;
  const std::string out = dir_.Sub("out");  // where the account may write its outputs
  std::filesystem::create_directories(out);
  ASSERT_EQ(chmod(out.c_str(), 0777), 0);
  const std::string root_only = dir_.Sub("root-only");
  std::filesystem::create_directories(root_only);
  ASSERT_EQ(chmod(root_only.c_str(), 0700), 0);
  WriteFile(root_only + "/result", "root's\n");
  auto submit = [&](const std::string& name, const std::string& script) {
    return SubmitWithOutput(client, name,
                            fmt::format("{{name: result, path: {}/{}/result}}", out, name), script);
  };
  // Its staging directory (…/.drover-staging/job-ID.attempt-1) becomes a link to root_only.
  const std::int64_t moving = submit(
      "moving", "staging=$(dirname \"$DROVER_OUTPUT_RESULT\") && rmdir \"$staging\" && ln -s " +
                    root_only + " \"$staging\"");
  const std::int64_t own = submit("own", "echo 42 > \"$DROVER_OUTPUT_RESULT\"");

  EXPECT_EQ(WaitForTerminal(client, moving), "failed") << ProcessLogs(member.server.get(), {});
  EXPECT_NE(GetJob(client, moving).dump().find("Permission denied"), std::string::npos)
      << GetJob(client, moving).dump(2);
  EXPECT_EQ(ReadFile(root_only + "/result"), "root's\n") << "root's file was moved";
  EXPECT_FALSE(std::filesystem::exists(out + "/moving/result"));
  EXPECT_EQ(WaitForTerminal(client, own), "succeeded") << GetJob(client, own).dump(2);
  EXPECT_EQ(ReadFile(out + "/own/result"), "42\n");
}

// A value output stages in the worker's folder on its node, in an `outputs` folder the agent
// creates and gives to the job's account; the node reads it with the account's permissions
// after the worker exited and reports it: a value the job wrote publishes, one it made a link to
// a file only root may read does not (before 2026-12-06, when the server read it as root, that
// file's first line became the job's output), and a FIFO in its place fails at once rather than
// holding a thread.
TEST_F(RunAsUser, AValueOutputIsTheAccountsOwnToWriteAndOnlyItsOwnIsRead) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create a Unix account";
  Member member = StartMember("drover-iv");
  ASSERT_TRUE(member.client);
  api::ApiClient& client = *member.client;
  const std::string secret = dir_.Sub("root-only");
  WriteFile(secret, "TOPSECRET\n");
  ASSERT_EQ(chmod(secret.c_str(), 0600), 0);
  auto submit = [&](const std::string& name, const std::string& script) {
    return SubmitWithOutput(client, name, "{name: value}", script);
  };
  const std::int64_t own = submit("own", "echo 42 > \"$DROVER_OUTPUT_VALUE\"");
  const std::int64_t leak = submit("leak", "ln -s " + secret + " \"$DROVER_OUTPUT_VALUE\"");
  const std::int64_t fifo = submit("fifo", "mkfifo \"$DROVER_OUTPUT_VALUE\"");

  EXPECT_EQ(WaitForTerminal(client, own), "succeeded") << GetJob(client, own).dump(2);
  EXPECT_EQ(GetJob(client, own)["outputs"]["value"], "42");
  EXPECT_EQ(WaitForTerminal(client, leak), "failed") << GetJob(client, leak).dump(2);
  const std::string leaked = GetJob(client, leak).dump();
  EXPECT_EQ(leaked.find("TOPSECRET"), std::string::npos) << leaked;
  EXPECT_NE(leaked.find("Permission denied"), std::string::npos) << leaked;
  EXPECT_EQ(WaitForTerminal(client, fifo), "failed") << GetJob(client, fifo).dump(2);
  EXPECT_NE(GetJob(client, fifo).dump().find("not a regular file"), std::string::npos)
      << GetJob(client, fifo).dump(2);
}

// Values the workers' nodes reported touch no file on the server, so the server needs no account
// for them: a job whose account the server's machine does not know (here removed while the job
// ran, as an account that exists only on the agents' nodes would be) publishes its values. Before,
// the server looked the account up to publish and failed the job ("no such Unix account ...").
TEST_F(RunAsUser, ReportedValuesPublishWithoutTheAccountOnTheServersMachine) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create a Unix account";
  Member member = StartMember("drover-ir");
  ASSERT_TRUE(member.client);
  api::ApiClient& client = *member.client;
  const std::string go = dir_.Sub("go");
  const std::int64_t id = SubmitWithOutput(
      client, "evaluate", "{name: accuracy}",
      "echo 0.9 > \"$DROVER_OUTPUT_ACCURACY\" && while [ ! -e " + go + " ]; do sleep 0.05; done");
  ASSERT_TRUE(WaitUntil([&] { return GetJob(client, id)["state"] == "running"; }))
      << GetJob(client, id).dump(2);
  ASSERT_TRUE(member.account->RemoveNow());
  WriteFile(go, "");
  EXPECT_EQ(WaitForTerminal(client, id), "succeeded") << GetJob(client, id).dump(2);
  EXPECT_EQ(GetJob(client, id)["outputs"]["accuracy"], "0.9");
}

// A job's inputs are looked for with its account's permissions: a path in a folder only root may
// enter is not there for it (before, the server, as root, saw it, so any member could learn which
// paths exist where it may not look). Both jobs are looked at in the same pass: once the one whose
// input the account can see is ready, the other was found waiting in that pass.
TEST_F(RunAsUser, AJobsInputsAreLookedForWithItsAccountsPermissions) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create a Unix account";
  Member member = StartMember("drover-in");
  ASSERT_TRUE(member.client);
  api::ApiClient& client = *member.client;
  const std::string hidden = dir_.Sub("root-only");
  std::filesystem::create_directories(hidden);
  ASSERT_EQ(chmod(hidden.c_str(), 0700), 0);
  WriteFile(hidden + "/data.csv", "x\n");
  const std::string visible = dir_.Sub("visible.csv");
  auto submit = [&](const std::string& name, const std::string& input) {
    auto submitted =
        client.Post("/v1/jobs",
                    fmt::format("kind: Job\nname: {}\nresources: {{cpu: 100m, memory: 16Mi}}\n"
                                "inputs: [{{path: {}}}]\ncommand: ['true']\n",
                                name, input),
                    "application/yaml");
    EXPECT_TRUE(submitted) << submitted.error().ToString();
    return submitted ? submitted->json["jobs"][0]["id"].get<std::int64_t>() : 0;
  };
  const std::int64_t hidden_job = submit("hidden", hidden + "/data.csv");
  const std::int64_t visible_job = submit("visible", visible);
  ASSERT_TRUE(WaitUntil([&] { return GetJob(client, hidden_job)["state"] == "waiting"; }));
  WriteFile(visible, "y\n");
  EXPECT_EQ(WaitForTerminal(client, visible_job), "succeeded");
  const json waiting = GetJob(client, hidden_job);
  EXPECT_EQ(waiting["state"], "waiting") << waiting.dump(2);
  EXPECT_EQ(waiting["message"], "waiting for input " + hidden + "/data.csv") << waiting.dump(2);
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
