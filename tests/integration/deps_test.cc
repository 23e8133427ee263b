// Dependencies across submissions with a real server and real processes (docs/workflows.md,
// "Dependencies across submissions"): `drover submit --after ID[:ok|:any|:failed]` and
// depends_on `job:ID`, across a server restart, explained while they wait and when they can no
// longer be met, refused when they name a job that does not exist for the caller.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class Dependencies : public IntegrationTest {
 protected:
  // Writes a one-job spec `name` running `script` to dir_/`name`.yaml; its path.
  std::string SpecFile(const std::string& name, const std::string& script) {
    const std::string path = dir_.path() + "/" + name + ".yaml";
    WriteFile(path, fmt::format("kind: Job\nname: {}\nresources: {{cpu: 100m, memory: 16Mi}}\n"
                                "script: |\n  {}\n",
                                name, script));
    return path;
  }

  // `drover submit URL FILE ARGS...` that must succeed; the id it printed.
  std::int64_t SubmitWith(const ServerProcess& server, const std::string& file,
                          const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"--server", server.url(), "submit", file};
    argv.insert(argv.end(), args.begin(), args.end());
    CommandResult result = RunDrover(argv, dir_.path());
    EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
    const std::vector<std::string> words = Words(result.out);
    return words.size() >= 3 ? std::stoll(words[2]) : -1;  // "submitted job N (NAME)"
  }

  // The row of job `id` in `drover ls` ("" when it is not listed).
  std::string LsRow(const ServerProcess& server, std::int64_t id) {
    CommandResult ls = RunDrover({"--server", server.url(), "ls"}, dir_.path());
    EXPECT_EQ(ls.exit_code, 0) << ls.err;
    std::istringstream lines(ls.out);
    for (std::string line; std::getline(lines, line);) {
      const std::vector<std::string> words = Words(line);
      if (!words.empty() && words[0] == std::to_string(id)) return line;
    }
    return "";
  }
};

TEST_F(Dependencies, AfterOkStartsOnlyOnceItsUpstreamSucceededAcrossARestart) {
  const std::string data = dir_.Sub("data");
  const std::string gate = dir_.path() + "/go";
  const std::string a_file =
      SpecFile("upstream", fmt::format("while [ ! -e {} ]; do sleep 0.1; done", gate));
  const std::string b_file = SpecFile("downstream", "true");
  std::int64_t a = 0;
  std::int64_t b = 0;
  {
    ServerProcess first(data, dir_.path(), {"--gpus", "2xH100-80GB"});
    ASSERT_TRUE(first.ok());
    api::ApiClient client = first.Client();
    a = SubmitWith(first, a_file, {});
    b = SubmitWith(first, b_file, {"--after", fmt::format("{}:ok", a)});
    ASSERT_EQ(WaitForState(client, a, {"running"}), "running") << first.Log();
    EXPECT_EQ(GetJob(client, b)["state"], "pending");
    const std::string waiting = fmt::format("waiting for job {} to succeed", a);
    EXPECT_THAT(LsRow(first, b), HasSubstr(waiting));
    CommandResult why =
        RunDrover({"--server", first.url(), "explain", std::to_string(b)}, dir_.path());
    EXPECT_EQ(why.exit_code, 0) << why.err;
    EXPECT_THAT(why.out, HasSubstr(waiting));
    // The server only: the upstream's worker lives on under its supervisor.
    first.process().KillProcessOnly();
  }
  ServerProcess second(data, dir_.path(), {"--gpus", "2xH100-80GB"});
  ASSERT_TRUE(second.ok());
  api::ApiClient client = second.Client();
  EXPECT_EQ(GetJob(client, b)["state"], "pending") << second.Log();
  EXPECT_EQ(GetJob(client, b)["message"], fmt::format("waiting for job {} to succeed", a));
  WriteFile(gate, "");
  EXPECT_EQ(WaitForTerminal(client, a), "succeeded") << second.Log();
  EXPECT_EQ(WaitForTerminal(client, b), "succeeded") << GetJob(client, b).dump(2);
  // Released only once the upstream had succeeded.
  const json up = GetJob(client, a);
  const json down = GetJob(client, b);
  EXPECT_GE(down["attempts"][0]["ready_at"].get<std::int64_t>(),
            up["finished_at"].get<std::int64_t>())
      << up.dump(2) << down.dump(2);
}

TEST_F(Dependencies, AConditionThatCanNoLongerHoldIsExplainedOrRefused) {
  auto server = StartServer("data", "2xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  const std::string gate = dir_.path() + "/go";
  const std::int64_t a = SubmitWith(
      *server, SpecFile("upstream", fmt::format("while [ ! -e {} ]; do sleep 0.1; done", gate)),
      {});
  const std::string handler = SpecFile("on-failure", "true");
  const std::int64_t b = SubmitWith(*server, handler, {"--after", fmt::format("{}:failed", a)});
  WriteFile(gate, "");
  EXPECT_EQ(WaitForTerminal(client, a), "succeeded");
  EXPECT_EQ(WaitForTerminal(client, b), "skipped");
  const std::string cause =
      fmt::format("dependency job {} succeeded; this job needed it to fail", a);
  EXPECT_EQ(GetJob(client, b)["message"], cause);
  CommandResult get = RunDrover({"--server", server->url(), "get", std::to_string(b)}, dir_.path());
  EXPECT_THAT(get.out, HasSubstr(cause));

  // Now that it succeeded, `failed` can never hold: refused, naming the job and the field.
  CommandResult refused = RunDrover(
      {"--server", server->url(), "submit", handler, "--after", fmt::format("{}:failed", a)},
      dir_.path());
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.err,
              HasSubstr(fmt::format("job 'on-failure': depends_on[0] (job:{0}): job {0} "
                                    "has succeeded, so it can no longer fail as this job needs",
                                    a)));
  // `any` holds: it runs.
  const std::int64_t c = SubmitWith(*server, handler, {"--after", fmt::format("{}:any", a)});
  EXPECT_EQ(WaitForTerminal(client, c), "succeeded");

  // An id that is no job's, and a malformed one.
  CommandResult missing =
      RunDrover({"--server", server->url(), "submit", handler, "--after", "99999"}, dir_.path());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err,
              HasSubstr("job 'on-failure': depends_on[0] (job:99999): job 99999 does not exist"));
  CommandResult malformed = RunDrover(
      {"--server", server->url(), "submit", handler, "--after", "12:sometimes"}, dir_.path());
  EXPECT_EQ(malformed.exit_code, 2);
  EXPECT_THAT(malformed.err, HasSubstr("--after '12:sometimes': unknown condition"));
}

TEST_F(Dependencies, AJobTheCallerMayNotViewDoesNotExistForIt) {
  WriteFile(dir_.path() + "/policy.yaml", kPrivateTeamsPolicy);
  auto server = StartServer("data", "2xH100-80GB", {"--policy", dir_.path() + "/policy.yaml"});
  ASSERT_TRUE(server->ok());
  api::ApiClient admin = server->Client();
  api::ApiClient alice(server->url());
  alice.SetBearer(CreateMemberToken(admin, "alice", "team-a"));
  api::ApiClient bob(server->url());
  bob.SetBearer(CreateMemberToken(admin, "bob", "team-b"));
  const std::string spec = "kind: Job\nname: mine\nscript: 'true'\n";
  auto submitted = alice.Post("/v1/jobs", spec, "application/yaml");
  ASSERT_TRUE(submitted) << submitted.error().ToString();
  const std::int64_t hidden = submitted->json["jobs"][0]["id"].get<std::int64_t>();

  auto after = [&](api::ApiClient& client, std::int64_t id) {
    return client.Post("/v1/jobs", spec, "application/yaml",
                       {{"X-Drover-After", std::to_string(id)}});
  };
  auto seen = after(alice, hidden);
  EXPECT_TRUE(seen) << seen.error().ToString();
  auto unseen = after(bob, hidden);
  ASSERT_FALSE(unseen);
  EXPECT_EQ(unseen.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(unseen.error().message,
            fmt::format("job 'mine': depends_on[0] (job:{0}): job {0} does not exist", hidden));
  auto missing = after(bob, 99999);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message,
            "job 'mine': depends_on[0] (job:99999): job 99999 does not exist");
}

}  // namespace
}  // namespace drover::integration
