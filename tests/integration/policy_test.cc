// The scheduling policy, queues, the decision log and checkpoints through the real server:
// `drover server --policy FILE` (a bad file stops the start with its positions; edits are picked
// up; POST /v1/policy/reload), GET /v1/queues and `drover queues`, `drover why`, and checkpoints
// reported through the API (`drover checkpoint`) and through the checkpoint marker file.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <regex>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

// Two teams under one org, 4 GPUs of quota each.
constexpr char kTwoTeams[] = R"(kind: Policy
queues:
  - name: org
    children:
      - name: team-a
        weight: 2
        quota: {gpu: 4}
      - name: team-b
        quota: {gpu: 4}
        borrowing_limit: {gpu: 4}
)";

// Line 7, column 21: a GPU amount that is not a number.
constexpr char kBadPolicy[] = R"(kind: Policy
queues:
  - name: org
    children:
      - name: team-a
        quota:
          gpu: plenty
)";

// The queue named `name` in a GET /v1/queues body (null if absent).
json FindQueue(const json& body, const std::string& name) {
  for (const json& queue : body.value("queues", json::array())) {
    if (queue.value("name", "") == name) return queue;
  }
  return json();
}

std::vector<std::string> Details(const Error& error) { return error.details; }

// A job `name` of 100m CPU, 64Mi and `gpus` GPUs running `script` (a YAML scalar, or "|" and an
// indented block); `extra` (lines such as "queue: team-a\n") goes after its name.
std::string GpuJob(const std::string& name, int gpus, const std::string& script,
                   const std::string& extra = "") {
  return fmt::format(R"(kind: Job
name: {}
{}resources:
  cpu: 100m
  memory: 64Mi
  gpus: {}
script: {}
)",
                     name, extra, gpus, script);
}

class Policy : public IntegrationTest {
 protected:
  // Writes kTwoTeams to policy_ and starts a server of 8 GPUs under it.
  std::unique_ptr<ServerProcess> StartUnderTwoTeams() {
    WriteFile(policy_, kTwoTeams);
    return StartServer("data", "8xH100-80GB", {"--policy", policy_});
  }

  const std::string policy_ = dir_.Sub("policy.yaml");
};

TEST_F(Policy, QueuesShowTheQuotasOfThePolicyFileAndTheirUsage) {
  auto server = StartUnderTwoTeams();
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();

  auto queues = client.Queues();
  ASSERT_TRUE(queues) << queues.error().message;
  const json team_a = FindQueue(*queues, "team-a");
  ASSERT_TRUE(team_a.is_object()) << queues->dump(2);
  EXPECT_EQ(team_a["path"], "org/team-a");
  EXPECT_EQ(team_a["depth"], 1);
  EXPECT_EQ(team_a["leaf"], true);
  EXPECT_EQ(team_a["weight"], 2.0);
  EXPECT_EQ(team_a["nominal"]["gpu"], 4000);  // milli-GPUs, as in the model
  EXPECT_EQ(team_a["gpus"]["nominal"], 4.0);  // whole GPUs, for people
  EXPECT_EQ(team_a["running_jobs"], 0);
  const json org = FindQueue(*queues, "org");
  ASSERT_TRUE(org.is_object());
  EXPECT_EQ(org["depth"], 0);
  EXPECT_EQ(org["leaf"], false);
  ASSERT_TRUE((*queues)["policy"].is_object());

  auto ids = Submit(client, GpuJob("a-job", 2, "sleep 60", "queue: team-a\n"));
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_EQ(WaitForState(client, ids[0], {"running"}), "running") << server->Log();
  json used;
  ASSERT_TRUE(WaitUntil([&] {
    auto now = client.Queues();
    if (!now) return false;
    used = FindQueue(*now, "team-a");
    return used.is_object() && used["running_jobs"] == 1;
  })) << used.dump(2);
  EXPECT_EQ(used["usage"]["gpu"], 2000);
  EXPECT_EQ(used["gpus"]["usage"], 2.0);

  CommandResult table = RunDrover({"--server", server->url(), "queues"}, dir_.path());
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("QUEUE"));
  EXPECT_THAT(table.out, HasSubstr("GPU QUOTA"));
  // Children are indented under their parent; team-a: weight 2, quota 4, 2 in use, 1 running.
  EXPECT_TRUE(std::regex_search(table.out, std::regex(R"(\n  team-a +2 +4 +2 +0 +0 +\S+ +1 +0\n)")))
      << table.out;
  // The parent counts its subtree's usage.
  EXPECT_TRUE(std::regex_search(table.out, std::regex(R"(\norg +1 +\S+ +2 )"))) << table.out;

  CommandResult as_json =
      RunDrover({"--server", server->url(), "-o", "json", "queues"}, dir_.path());
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  json parsed = json::parse(as_json.out, nullptr, false);
  ASSERT_TRUE(parsed.is_object()) << as_json.out;
  EXPECT_EQ(FindQueue(parsed, "team-b")["gpus"]["nominal"], 4.0);

  auto policy_body = client.Policy();
  ASSERT_TRUE(policy_body) << policy_body.error().message;
  EXPECT_EQ((*policy_body)["file"], policy_);
  EXPECT_GT((*policy_body)["loaded_at"].get<std::int64_t>(), 0);
  EXPECT_TRUE((*policy_body)["reload_error"].is_null());
}

TEST_F(Policy, ABadPolicyFileStopsTheStartWithItsPosition) {
  const std::string bad = dir_.Sub("bad-policy.yaml");
  WriteFile(bad, kBadPolicy);
  CommandResult server = RunDrover({"server", "--data", dir_.Sub("data"), "--listen", "127.0.0.1:0",
                                    "--gpus", "2xH100-80GB", "--policy", bad},
                                   dir_.path(), std::chrono::milliseconds(30'000));
  EXPECT_NE(server.exit_code, 0) << server.out;
  EXPECT_NE(server.exit_code, -1) << "the server started despite the bad policy";
  EXPECT_THAT(server.err, HasSubstr("1 error in " + bad));
  EXPECT_THAT(server.err, HasSubstr(bad + ":7:16: error: queues[0].children[0].quota.gpu"))
      << server.err;

  // `drover run` refuses it the same way, before running anything.
  const std::string spec = dir_.Sub("job.yaml");
  WriteFile(spec, "kind: Job\nname: never\nscript: touch " + dir_.Sub("ran") + "\n");
  CommandResult run = RunDrover({"run", spec, "--gpus", "0", "--policy", bad}, dir_.path());
  EXPECT_EQ(run.exit_code, 2) << run.out << run.err;
  EXPECT_THAT(run.err, HasSubstr(bad + ":7:16: error: "));
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("ran")));

  const std::string missing = dir_.Sub("no-such-policy.yaml");
  CommandResult absent = RunDrover({"run", spec, "--gpus", "0", "--policy", missing}, dir_.path());
  EXPECT_NE(absent.exit_code, 0);
  EXPECT_THAT(absent.err, HasSubstr(missing));
}

TEST_F(Policy, EditsArePickedUpAndABadEditKeepsThePolicyInForce) {
  auto server = StartUnderTwoTeams();
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();

  // A bad edit: the reload answers with its diagnostics and the policy in force stays.
  WriteFile(policy_, kBadPolicy);
  auto reload = client.ReloadPolicy();
  ASSERT_FALSE(reload);
  EXPECT_EQ(reload.error().code, ErrorCode::kInvalidArgument);
  ASSERT_EQ(Details(reload.error()).size(), 1u);
  EXPECT_THAT(Details(reload.error())[0], HasSubstr(policy_ + ":7:16: error: "));
  httplib::Client http(server->url());
  http.set_bearer_token_auth(server->token());
  auto raw = http.Post("/v1/policy/reload", "", "application/json");
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->status, 400);
  EXPECT_EQ(json::parse(raw->body, nullptr, false)["code"], "invalid_argument") << raw->body;
  auto queues = client.Queues();
  ASSERT_TRUE(queues);
  EXPECT_TRUE(FindQueue(*queues, "team-b").is_object()) << queues->dump(2);
  // The loop noticed the change too: the server log names the file and the policy stays.
  EXPECT_TRUE(WaitUntil([&] {
    auto status = client.Policy();
    return status && (*status)["reload_error"].is_object();
  }));
  EXPECT_TRUE(WaitUntil([&] { return server->Log().find(policy_ + ":7:16") != std::string::npos; }))
      << server->Log();

  // A good edit takes effect without a request.
  WriteFile(policy_, R"(kind: Policy
queues:
  - name: research
    quota: {gpu: 6}
  - name: default
)");
  json research;
  ASSERT_TRUE(WaitUntil([&] {
    auto now = client.Queues();
    if (!now) return false;
    research = FindQueue(*now, "research");
    return research.is_object();
  })) << server->Log();
  EXPECT_EQ(research["gpus"]["nominal"], 6.0);
  auto status = client.Policy();
  ASSERT_TRUE(status);
  EXPECT_TRUE((*status)["reload_error"].is_null());
  // And an explicit reload of a good file answers with the policy.
  auto again = client.ReloadPolicy();
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ((*again)["file"], policy_);
}

TEST_F(Policy, ReloadWithoutAPolicyFileIsAFailedPrecondition) {
  auto server = StartServer("data", "2xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  auto reload = client.ReloadPolicy();
  ASSERT_FALSE(reload);
  EXPECT_EQ(reload.error().code, ErrorCode::kFailedPrecondition);
  auto status = client.Policy();
  ASSERT_TRUE(status) << status.error().message;
  EXPECT_EQ((*status)["file"], "");
  // Without a policy there is one queue, "default", without quota.
  auto queues = client.Queues();
  ASSERT_TRUE(queues);
  const json fallback = FindQueue(*queues, "default");
  ASSERT_TRUE(fallback.is_object()) << queues->dump(2);
  EXPECT_TRUE(fallback["gpus"]["nominal"].is_null());
}

class Decisions : public IntegrationTest {};

TEST_F(Decisions, WhyShowsWhereAndHowAJobWasPlaced) {
  auto server = StartServer("data", "4xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  auto ids = Submit(client, GpuJob("placed", 2, "\"true\""));
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_EQ(WaitForTerminal(client, ids[0]), "succeeded") << server->Log();
  const std::string id = std::to_string(ids[0]);

  auto decisions = client.Decisions(id);
  ASSERT_TRUE(decisions) << decisions.error().message;
  ASSERT_TRUE((*decisions)["decisions"].is_array());
  json placed;
  for (const json& d : (*decisions)["decisions"]) {
    if (d["kind"] == "placed") placed = d;
  }
  ASSERT_TRUE(placed.is_object()) << decisions->dump(2);
  EXPECT_EQ(placed["attempt"], 1);
  ASSERT_TRUE(placed["nodes"].is_array());
  ASSERT_EQ(placed["nodes"].size(), 1u);
  const std::string node = placed["nodes"][0].get<std::string>();
  EXPECT_FALSE(placed["summary"].get<std::string>().empty());

  CommandResult why = RunDrover({"--server", server->url(), "why", id}, dir_.path());
  ASSERT_EQ(why.exit_code, 0) << why.err;
  EXPECT_THAT(why.out, HasSubstr("placed"));
  EXPECT_THAT(why.out, HasSubstr("nodes: " + node));
  EXPECT_THAT(why.out, HasSubstr("score"));
  CommandResult as_json =
      RunDrover({"--server", server->url(), "-o", "json", "why", id}, dir_.path());
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  EXPECT_EQ(json::parse(as_json.out, nullptr, false), *decisions);

  auto missing = client.Decisions("424242");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  CommandResult unknown = RunDrover({"--server", server->url(), "why", "424242"}, dir_.path());
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("424242"));
}

TEST_F(Decisions, ExplainSaysTheLayerAndTheEstimatedStart) {
  auto server = StartServer("data", "2xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  // Never fits (held: it would be refused): its start cannot be estimated.
  auto ids = Submit(client, GpuJob("too-big", 4, "\"true\"", "hold_infeasible: true\n"));
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_EQ(WaitForState(client, ids[0], {"ready"}), "ready");
  auto body = client.Explain(std::to_string(ids[0]));
  ASSERT_TRUE(body) << body.error().message;
  EXPECT_TRUE(body->contains("estimated_start")) << body->dump(2);
  EXPECT_FALSE((*body)["layer"].get<std::string>().empty());
  CommandResult explain =
      RunDrover({"--server", server->url(), "explain", std::to_string(ids[0])}, dir_.path());
  ASSERT_EQ(explain.exit_code, 0) << explain.err;
  EXPECT_THAT(explain.out, HasSubstr(fmt::format("job {} is ready ({}): ", ids[0],
                                                 (*body)["layer"].get<std::string>())));
  if ((*body)["estimated_start"].is_null()) {
    EXPECT_THAT(explain.out, HasSubstr("estimated start: unknown"));
  } else {
    EXPECT_THAT(explain.out, HasSubstr("estimated start: "));
  }
}

class Checkpoints : public IntegrationTest {};

TEST_F(Checkpoints, ReportedForARunningJobAndRefusedForAFinishedOne) {
  auto server = StartServer("data", "2xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  const std::string go = dir_.Sub("go");
  auto ids = Submit(
      client, GpuJob("long", 1, fmt::format("|\n  while [ ! -e {} ]; do sleep 0.05; done", go)));
  ASSERT_EQ(ids.size(), 1u);
  const std::string id = std::to_string(ids[0]);
  ASSERT_EQ(WaitForState(client, ids[0], {"running"}), "running") << server->Log();

  auto checkpoint = client.Checkpoint(id);
  ASSERT_TRUE(checkpoint) << checkpoint.error().message;
  EXPECT_EQ((*checkpoint)["job"], ids[0]);
  const std::int64_t at = (*checkpoint)["checkpoint_at"].get<std::int64_t>();
  EXPECT_GT(at, 1'600'000'000'000);
  json job = GetJob(client, ids[0]);
  EXPECT_EQ(job["attempts"][0]["last_checkpoint_at"], at) << job.dump(2);

  CommandResult cli = RunDrover({"--server", server->url(), "checkpoint", id}, dir_.path());
  EXPECT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_THAT(cli.out, HasSubstr("job " + id + ": checkpoint recorded at "));
  CommandResult get = RunDrover({"--server", server->url(), "get", id}, dir_.path());
  EXPECT_THAT(get.out, HasSubstr("last checkpoint +"));

  WriteFile(go, "x");
  ASSERT_EQ(WaitForTerminal(client, ids[0]), "succeeded");
  httplib::Client http(server->url());
  http.set_bearer_token_auth(server->token());
  auto finished = http.Post("/v1/jobs/" + id + "/checkpoint", "", "application/json");
  ASSERT_TRUE(finished);
  EXPECT_EQ(finished->status, 409);
  json error = json::parse(finished->body, nullptr, false);
  EXPECT_EQ(error["code"], "failed_precondition") << finished->body;
  EXPECT_THAT(error["message"].get<std::string>(), HasSubstr(id));
  auto unknown = http.Post("/v1/jobs/424242/checkpoint", "", "application/json");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(json::parse(unknown->body, nullptr, false)["code"], "not_found");
  CommandResult refused = RunDrover({"--server", server->url(), "checkpoint", id}, dir_.path());
  EXPECT_EQ(refused.exit_code, 1);
}

TEST_F(Checkpoints, TheCheckpointMarkerFileIsReportedByTheAgent) {
  auto server = StartServer("data", "2xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  const std::string go = dir_.Sub("go");
  const std::string env = dir_.Sub("env");
  // The worker saves a checkpoint, touches the marker, and waits.
  auto ids = Submit(client, fmt::format(R"(kind: Job
name: saver
checkpoint_dir: {0}
resources:
  cpu: 100m
  memory: 64Mi
script: |
  echo "$DROVER_PREEMPT_NOTICE" > {1}
  mkdir -p "$DROVER_CHECKPOINT_DIR"
  echo step-1 > "$DROVER_CHECKPOINT_DIR/state"
  touch "$DROVER_CHECKPOINT_DIR/.drover-checkpoint"
  while [ ! -e {2} ]; do sleep 0.05; done
)",
                                        dir_.Sub("ckpt"), env, go));
  ASSERT_EQ(ids.size(), 1u);
  json job;
  ASSERT_TRUE(WaitUntil([&] {
    job = GetJob(client, ids[0]);
    return job.is_object() && !job["attempts"].empty() &&
           job["attempts"][0].value("last_checkpoint_at", std::int64_t{0}) > 0;
  })) << job.dump(2)
      << server->Log();
  // The notice file the worker would find on a preemption lies in its worker directory.
  std::vector<std::string> lines = ReadLines(env);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], MatchesRegex(".*/" + std::to_string(ids[0]) + "/1/0/preempt-notice"));
  WriteFile(go, "x");
  EXPECT_EQ(WaitForTerminal(client, ids[0]), "succeeded");
}

}  // namespace
}  // namespace drover::integration
