// Preemption end to end through the real server (issue: scheduling policy): two teams share 8
// declared GPUs; team B borrows team A's idle quota; team A submits; B's interruptible job, which
// checkpoints through the marker file, is preempted gracefully (notice file, SIGTERM) and resumes
// from its checkpoint with DROVER_RESUME=1; `drover get` and `drover why` show both attempts
// and why. The scenario's files are in testdata/preemption (README.md there).

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class Preemption : public IntegrationTest {};

std::string Instantiate(std::string text, const std::string& worker, const std::string& dir) {
  text = std::regex_replace(text, std::regex(R"(\$\{WORKER\})"), worker);
  return std::regex_replace(text, std::regex(R"(\$\{DIR\})"), dir);
}

// The first decision of `kind` in a GET /v1/jobs/{id}/decisions body; null if none.
json FindDecision(const json& body, const std::string& kind) {
  if (!body.contains("decisions")) return json();
  for (const json& decision : body["decisions"]) {
    if (decision.value("kind", "") == kind) return decision;
  }
  return json();
}

TEST_F(Preemption, BorrowedGpusAreReclaimedAndTheVictimResumesFromItsCheckpoint) {
  const std::string testdata = SourceDir() + "/tests/integration/testdata/preemption";
  const std::string worker = testdata + "/checkpointing_worker.sh";
  auto server = StartServer("data", "8xH100-80GB", {"--policy", testdata + "/policy.yaml"});
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();

  // Team B takes 6 GPUs: its own 4 and 2 of team A's, borrowed.
  auto b_ids =
      Submit(client, Instantiate(ReadFile(testdata + "/team-b.yaml"), worker, dir_.path()));
  ASSERT_EQ(b_ids.size(), 1u);
  const std::string b = std::to_string(b_ids[0]);
  ASSERT_EQ(WaitForState(client, b_ids[0], {"running"}), "running") << server->Log();
  // Its checkpoint marker is seen by the agent and recorded on the attempt.
  ASSERT_TRUE(WaitUntil([&] {
    json job = GetJob(client, b_ids[0]);
    return job.is_object() && job["attempts"][0].value("last_checkpoint_at", std::int64_t{0}) > 0;
  })) << GetJob(client, b_ids[0]).dump(2);
  auto placed = client.Decisions(b);
  ASSERT_TRUE(placed);
  const json placement = FindDecision(*placed, "placed");
  ASSERT_TRUE(placement.is_object()) << placed->dump(2);
  EXPECT_THAT(placement["summary"].get<std::string>(), HasSubstr("borrowing"));

  // Team A asks for its 4 guaranteed GPUs: only 2 are free, so B is preempted (reclaim).
  auto a_ids =
      Submit(client, Instantiate(ReadFile(testdata + "/team-a.yaml"), worker, dir_.path()));
  ASSERT_EQ(a_ids.size(), 1u);
  const std::string a = std::to_string(a_ids[0]);
  ASSERT_NE(WaitForState(client, a_ids[0], {"running", "succeeded"}), "") << server->Log();
  EXPECT_TRUE(WaitUntil([&] {
    return ReadFile(dir_.Sub("b.log")).find("stopped at") != std::string::npos;
  })) << ReadFile(dir_.Sub("b.log"));
  const std::string b_log_after_stop = ReadFile(dir_.Sub("b.log"));
  // The worker read the preemption notice before it was killed.
  EXPECT_THAT(b_log_after_stop, HasSubstr("\"reason\""));
  EXPECT_THAT(b_log_after_stop, HasSubstr("deadline_ms"));
  EXPECT_THAT(b_log_after_stop, HasSubstr("reclaim"));

  // A finishes (20 steps); B resumes from its saved step with DROVER_RESUME=1.
  EXPECT_EQ(WaitForTerminal(client, a_ids[0]), "succeeded") << server->Log();
  ASSERT_TRUE(WaitUntil([&] {
    return ReadFile(dir_.Sub("b.log")).find("resumed at") != std::string::npos;
  })) << ReadFile(dir_.Sub("b.log"))
      << server->Log();
  std::smatch stopped, resumed;
  const std::string b_log = ReadFile(dir_.Sub("b.log"));
  ASSERT_TRUE(std::regex_search(b_log, stopped, std::regex(R"(stopped at (\d+))")));
  ASSERT_TRUE(std::regex_search(b_log, resumed, std::regex(R"(resumed at (\d+))")));
  EXPECT_GE(std::stoi(resumed[1]), std::stoi(stopped[1]) - 1) << b_log;
  EXPECT_GT(std::stoi(resumed[1]), 0) << b_log;

  // The record: two attempts, the first preempted by A, the second resumed.
  json job = GetJob(client, b_ids[0]);
  ASSERT_EQ(job["attempts"].size(), 2u) << job.dump(2);
  EXPECT_EQ(job["attempts"][0]["preempted_by"], a_ids[0]) << job.dump(2);
  EXPECT_EQ(job["attempts"][1].value("resumed", false), true) << job.dump(2);
  CommandResult get = RunDrover({"--server", server->url(), "get", b}, dir_.path());
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_THAT(get.out, HasSubstr("preempted"));
  EXPECT_THAT(get.out, HasSubstr("resume"));

  // Why: A's log names B as its victim with the work it lost; B's names A.
  auto a_decisions = client.Decisions(a);
  ASSERT_TRUE(a_decisions);
  const json preempted = FindDecision(*a_decisions, "preempted");
  ASSERT_TRUE(preempted.is_object()) << a_decisions->dump(2);
  EXPECT_EQ(preempted["reason"], "reclaim");
  ASSERT_EQ(preempted["victims"].size(), 1u);
  EXPECT_EQ(preempted["victims"][0]["job_id"], b_ids[0]);
  EXPECT_EQ(preempted["victims"][0]["has_checkpoint"], true);
  CommandResult why = RunDrover({"--server", server->url(), "why", b}, dir_.path());
  ASSERT_EQ(why.exit_code, 0) << why.err;
  EXPECT_THAT(why.out, HasSubstr("evicted"));
  EXPECT_THAT(why.out, HasSubstr("preempted for job " + a));
}

// `kind: Job` text for job `name` of `queue` on `gpus` GPUs that sleeps until stopped.
std::string SleepingJob(const std::string& name, const std::string& queue, int gpus,
                        bool interruptible = false) {
  return fmt::format(
      "kind: Job\nname: {}\nqueue: {}\ninterruptible: {}\nresources: {{cpu: 100m, memory: "
      "64Mi, gpus: {}}}\ncommand: [sleep, \"600\"]\n",
      name, queue, interruptible ? "true" : "false", gpus);
}

// The GPU indices attempt `attempt` (0-based) of `job` holds, sorted.
std::vector<int> GpusOf(const json& job, std::size_t attempt) {
  std::vector<int> gpus;
  if (!job.is_object() || job["attempts"].size() <= attempt) return gpus;
  for (const json& worker : job["attempts"][attempt]["workers"]) {
    for (const json& gpu : worker["gpus"]) gpus.push_back(gpu.get<int>());
  }
  std::sort(gpus.begin(), gpus.end());
  return gpus;
}

// Issue 17, finding 1: the GPUs reclaimed from b-borrow go to a-train, which reclaimed them, not
// to d-job, whose queue goes first by fair share and which waited before a-train arrived.
TEST_F(Preemption, ReclaimedGpusGoToTheReclaimerNotToAJobAheadByFairShare) {
  const std::string policy =
      SourceDir() + "/tests/integration/testdata/preemption/nomination_policy.yaml";
  auto server = StartServer("data", "8xH100-80GB", {"--policy", policy});
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  const std::int64_t base = Submit(client, SleepingJob("b-base", "team-b", 4)).at(0);
  const std::int64_t borrow = Submit(client, SleepingJob("b-borrow", "team-b", 3, true)).at(0);
  ASSERT_EQ(WaitForState(client, base, {"running"}), "running") << server->Log();
  ASSERT_EQ(WaitForState(client, borrow, {"running"}), "running") << server->Log();
  const std::vector<int> borrowed = GpusOf(GetJob(client, borrow), 0);
  ASSERT_EQ(borrowed.size(), 3u);

  // d-job waits on the org limit (7 of 8 GPUs held).
  const std::int64_t d_job = Submit(client, SleepingJob("d-job", "default", 2)).at(0);
  ASSERT_TRUE(WaitUntil([&] {
    json job = GetJob(client, d_job);
    return job.is_object() && job.value("message", "").find("org") != std::string::npos;
  })) << GetJob(client, d_job).dump(2);

  // a-train reclaims team-a's lent quota: b-borrow is preempted; its GPUs go to a-train.
  const std::int64_t a_train = Submit(client, SleepingJob("a-train", "team-a-batch", 3)).at(0);
  const std::set<std::string> placed = {"placed", "starting", "running"};
  ASSERT_TRUE(WaitUntil([&] {
    json a = GetJob(client, a_train);
    json d = GetJob(client, d_job);
    return (a.is_object() && placed.contains(a.value("state", ""))) ||
           (d.is_object() && placed.contains(d.value("state", "")));
  })) << server->Log();
  json a = GetJob(client, a_train);
  json d = GetJob(client, d_job);
  EXPECT_TRUE(placed.contains(a.value("state", ""))) << a.dump(2);
  EXPECT_EQ(d.value("state", ""), "ready") << d.dump(2);
  EXPECT_EQ(GpusOf(a, 0), borrowed) << a.dump(2);
  json victim = GetJob(client, borrow);
  ASSERT_FALSE(victim["attempts"].empty());
  EXPECT_EQ(victim["attempts"][0]["preempted_by"], a_train) << victim.dump(2);
  // Running, a-train keeps d-job and b-borrow waiting: their quota is a-train's now.
  ASSERT_EQ(WaitForState(client, a_train, {"running"}), "running") << server->Log();
  EXPECT_EQ(GetJob(client, d_job).value("state", ""), "ready");
  EXPECT_EQ(GetJob(client, borrow).value("state", ""), "ready");
}

}  // namespace
}  // namespace drover::integration
