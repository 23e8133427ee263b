// The job verbs end to end through the real server and CLI (issue 18): `drover hold` /
// `release` (a held job keeps its place and is not scheduled), `drover update` on a pending job
// and on a running one (its new time limit reaches the worker's supervisor), `drover requeue` of
// a checkpointing job that resumes from its checkpoint; each recorded with who did it, each
// refused with a JSON error naming the state where the state does not allow it.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class JobVerbs : public IntegrationTest {
 protected:
  // `drover ARGS...` against `server`.
  CommandResult Drover(const ServerProcess& server, std::vector<std::string> args) {
    args.insert(args.begin(), {"--server", server.url()});
    return RunDrover(args, dir_.path());
  }
};

// `kind: Job` text for `name` on one GPU running `command` (a YAML flow list), with `extra`
// lines.
std::string OneGpuJob(const std::string& name, const std::string& command,
                      const std::string& extra = "") {
  return fmt::format(
      "kind: Job\nname: {}\nresources: {{cpu: 100m, memory: 64Mi, gpus: 1}}\ncommand: {}\n{}", name,
      command, extra);
}

// The transition of `job` (GET /v1/jobs/{id}) whose cause contains `cause`; null if none.
json FindTransition(const json& job, const std::string& cause) {
  for (const json& t : job.value("transitions", json::array())) {
    if (t.value("cause", "").find(cause) != std::string::npos) return t;
  }
  return json();
}

TEST_F(JobVerbs, AHeldJobIsPassedOverUntilReleasedAndTheRecordNamesWhoHeldIt) {
  auto server = StartServer("data", "1xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  const auto blocker = Submit(client, OneGpuJob("blocker", "[sleep, '600']"));
  ASSERT_EQ(WaitForState(client, blocker.at(0), {"running"}), "running") << server->Log();
  const std::int64_t first = Submit(client, OneGpuJob("first", "['true']")).at(0);
  const std::int64_t second = Submit(client, OneGpuJob("second", "['true']")).at(0);
  ASSERT_EQ(WaitForState(client, first, {"ready"}), "ready");
  const std::string id = std::to_string(first);

  CommandResult held = Drover(*server, {"hold", id, "--reason", "input not ready"});
  ASSERT_EQ(held.exit_code, 0) << held.err;
  EXPECT_THAT(held.out, HasSubstr("job " + id + " (first) is held"));
  CommandResult shown = Drover(*server, {"get", id});
  EXPECT_THAT(shown.out, HasSubstr("held:      by "));
  CommandResult explain = Drover(*server, {"explain", id});
  EXPECT_THAT(explain.out, HasSubstr("(held): held by"));
  EXPECT_THAT(explain.out, HasSubstr("input not ready"));

  // The blocker ends: the second job, queued after the held one, takes the GPU.
  ASSERT_TRUE(client.Post("/v1/jobs/" + std::to_string(blocker[0]) + "/cancel", "", "text/plain"));
  EXPECT_EQ(WaitForTerminal(client, second), "succeeded") << server->Log();
  json job = GetJob(client, first);
  EXPECT_EQ(job["state"], "ready") << job.dump(2);
  ASSERT_TRUE(job["hold"].is_object()) << job.dump(2);
  EXPECT_EQ(job["hold"]["reason"], "input not ready");
  const json hold = FindTransition(job, "held: input not ready");
  ASSERT_TRUE(hold.is_object()) << job.dump(2);
  EXPECT_EQ(hold["from_state"], "ready");
  EXPECT_EQ(hold["to_state"], "ready");
  const std::string actor = hold["actor"];
  EXPECT_NE(actor, "system");
  EXPECT_EQ(FindTransition(job, "submitted")["actor"], actor);

  // Refusals: hold twice, release what is not held, hold a finished job; JSON errors.
  CommandResult twice = Drover(*server, {"hold", id});
  EXPECT_NE(twice.exit_code, 0);
  EXPECT_THAT(twice.err, HasSubstr("is already held"));
  auto finished = client.Post("/v1/jobs/" + std::to_string(second) + "/hold", "", "text/plain");
  ASSERT_FALSE(finished);
  EXPECT_EQ(finished.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(finished.error().message, HasSubstr("has succeeded: only a job not yet admitted"));

  CommandResult released = Drover(*server, {"-o", "json", "release", id});
  ASSERT_EQ(released.exit_code, 0) << released.err;
  const json summary = json::parse(released.out, nullptr, false);
  ASSERT_TRUE(summary.is_object()) << released.out;
  EXPECT_TRUE(summary["hold"].is_null()) << released.out;
  EXPECT_EQ(WaitForTerminal(client, first), "succeeded") << server->Log();
  CommandResult again = Drover(*server, {"release", id});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_THAT(again.err, HasSubstr("is not held (it has succeeded)"));

  // `get` and `why` show who did what.
  CommandResult get = Drover(*server, {"get", id});
  EXPECT_THAT(get.out, HasSubstr("held: input not ready  (ready) by " + actor));
  CommandResult why = Drover(*server, {"why", id});
  EXPECT_THAT(why.out, HasSubstr(actor + ": held: input not ready"));
}

TEST_F(JobVerbs, UpdateChangesAPendingJobAndOnlyTheTimeLimitOfARunningOne) {
  auto server = StartServer("data", "1xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  // A running job with a 6 s limit whose command needs 9 s: updated to 1h, it succeeds.
  const std::int64_t longer =
      Submit(client, OneGpuJob("longer", "[sleep, '9']", "timeout: 6s\n")).at(0);
  ASSERT_EQ(WaitForState(client, longer, {"running"}), "running") << server->Log();
  // Extended first, well within the 6 s on a loaded machine.
  CommandResult extended = Drover(*server, {"update", std::to_string(longer), "--timeout", "1h"});
  ASSERT_EQ(extended.exit_code, 0) << extended.err;
  CommandResult refused = Drover(*server, {"update", std::to_string(longer), "--priority", "high"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("is running: once admitted only its timeout may change"));
  const std::int64_t pending = Submit(client, OneGpuJob("pending", "['true']")).at(0);

  // The pending job: priority, timeout; an unknown queue is refused naming the field.
  CommandResult bad = Drover(*server, {"update", std::to_string(pending), "--queue", "nope"});
  EXPECT_NE(bad.exit_code, 0) << bad.out;
  EXPECT_THAT(bad.err, HasSubstr("queue: nope does not exist"));
  CommandResult updated = Drover(*server, {"-o", "json", "update", std::to_string(pending),
                                           "--priority", "high", "--timeout", "30m"});
  ASSERT_EQ(updated.exit_code, 0) << updated.err;
  EXPECT_EQ(json::parse(updated.out, nullptr, false).value("priority", ""), "high") << updated.out;
  json job = GetJob(client, pending);
  EXPECT_EQ(job["spec"]["timeout_ms"], 30 * 60 * 1000) << job["spec"].dump();
  EXPECT_TRUE(
      FindTransition(job, "updated: priority normal -> high, timeout none -> 30m").is_object())
      << job.dump(2);

  EXPECT_EQ(WaitForTerminal(client, longer), "succeeded") << GetJob(client, longer).dump(2);
  EXPECT_EQ(WaitForTerminal(client, pending), "succeeded");

  // A shorter limit ends a running job: timed out after the new limit.
  const std::int64_t shorter =
      Submit(client, OneGpuJob("shorter", "[sleep, '600']", "timeout: 1h\n")).at(0);
  ASSERT_EQ(WaitForState(client, shorter, {"running"}), "running") << server->Log();
  ASSERT_EQ(Drover(*server, {"update", std::to_string(shorter), "--timeout", "1s"}).exit_code, 0);
  EXPECT_EQ(WaitForTerminal(client, shorter), "timed_out") << GetJob(client, shorter).dump(2);
  job = GetJob(client, shorter);
  EXPECT_THAT(job["attempts"][0]["workers"][0]["exit"].value("message", ""),
              HasSubstr("timed out after 1s"))
      << job.dump(2);
}

TEST_F(JobVerbs, RequeueStopsACheckpointingJobWhichResumesFromItsCheckpoint) {
  const std::string worker =
      SourceDir() + "/tests/integration/testdata/preemption/checkpointing_worker.sh";
  auto server = StartServer("data", "1xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  const std::string log = dir_.Sub("train.log");
  const std::int64_t id =
      Submit(client, OneGpuJob("train", fmt::format("[sh, '{}', '{}', '150']", worker, log),
                               fmt::format("checkpoint_dir: {}\n", dir_.Sub("ckpt"))))
          .at(0);
  const std::string job_id = std::to_string(id);
  ASSERT_EQ(WaitForState(client, id, {"running"}), "running") << server->Log();
  ASSERT_TRUE(WaitUntil([&] {
    json job = GetJob(client, id);
    return job.is_object() && job["attempts"].back().value("last_checkpoint_at", 0) > 0;
  })) << GetJob(client, id).dump(2);
  const std::size_t attempts_before = GetJob(client, id)["attempts"].size();

  CommandResult requeued = Drover(*server, {"requeue", job_id, "--reason", "bad node"});
  ASSERT_EQ(requeued.exit_code, 0) << requeued.err;
  EXPECT_THAT(requeued.out, HasSubstr("is being stopped and requeued"));
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(log).find("resumed at") != std::string::npos; }))
      << ReadFile(log) << server->Log();
  EXPECT_THAT(ReadFile(log), HasSubstr("requeued by"));  // the notice the worker read
  std::smatch stopped, resumed;
  const std::string text = ReadFile(log);
  ASSERT_TRUE(std::regex_search(text, stopped, std::regex(R"(stopped at (\d+))"))) << text;
  ASSERT_TRUE(std::regex_search(text, resumed, std::regex(R"(resumed at (\d+))"))) << text;
  EXPECT_GT(std::stoi(resumed[1]), 0) << text;
  EXPECT_GE(std::stoi(resumed[1]), std::stoi(stopped[1]) - 1) << text;
  EXPECT_EQ(WaitForTerminal(client, id, std::chrono::milliseconds(120'000)), "succeeded")
      << ReadFile(log);

  json job = GetJob(client, id);
  ASSERT_EQ(job["attempts"].size(), attempts_before + 1) << job.dump(2);
  const json& first = job["attempts"][attempts_before - 1];
  EXPECT_FALSE(first.value("requeued_by", "").empty()) << job.dump(2);
  EXPECT_THAT(first.value("cause", ""), HasSubstr("bad node"));
  EXPECT_TRUE(job["attempts"].back().value("resumed", false)) << job.dump(2);
  const json transition = FindTransition(job, "requeue requested: bad node");
  ASSERT_TRUE(transition.is_object()) << job.dump(2);
  EXPECT_NE(transition["actor"], "system");

  // A finished job is not requeued; the error is JSON with its code.
  auto refused = client.Post("/v1/jobs/" + job_id + "/requeue", "", "text/plain");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(refused.error().message,
              HasSubstr("has succeeded: only a starting or running job can be requeued"));
}

}  // namespace
}  // namespace drover::integration
