// Cron jobs with a real server and real processes: `drover run` of the example, the forbid
// policy, and a server restart across due times.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "drover/common/clock.h"
#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class Cron : public IntegrationTest {};

// Every run of `cron` the server lists (active runs and history), by run id.
std::map<std::string, json> Runs(api::ApiClient& client, const std::string& cron) {
  std::map<std::string, json> runs;
  auto response = client.Get("/v1/crons");
  if (!response) return runs;
  for (const json& item : response->json["crons"]) {
    if (item["name"] != cron) continue;
    for (const char* list : {"active_runs", "history"}) {
      for (const json& run : item[list]) runs[run["id"]] = run;
    }
  }
  return runs;
}

// Whether a run in `state` (a pipeline run's roll-up) has finished.
bool Finished(const json& state) {
  return state == "succeeded" || state == "failed" || state == "cancelled";
}

int CountFinished(const std::map<std::string, json>& runs) {
  int finished = 0;
  for (const auto& [id, run] : runs) finished += Finished(run["state"]) ? 1 : 0;
  return finished;
}

// The due time of run id NAME@YYYY-MM-DDTHH:MM:SSZ in seconds since the epoch.
std::int64_t DueSeconds(const std::string& run_id) {
  std::tm tm{};
  std::istringstream in(run_id.substr(run_id.find('@') + 1));
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
  EXPECT_FALSE(in.fail()) << run_id;
  return static_cast<std::int64_t>(timegm(&tm));
}

// Submits a CronJob file through the CLI, as a user would.
void SubmitCron(const std::string& url, const std::string& file, const std::string& scratch) {
  CommandResult submit = RunDrover({"--server", url, "submit", file}, scratch);
  ASSERT_EQ(submit.exit_code, 0) << submit.out << submit.err;
  EXPECT_THAT(submit.out, HasSubstr("cron job"));
}

TEST_F(Cron, ExampleRunsToTheEndWithDrover) {
  CommandResult run = RunDrover({"run", SourceDir() + "/examples/cron.yaml", "--gpus",
                                 "2xH100-80GB", "--data", dir_.Sub("data")},
                                dir_.path(), std::chrono::milliseconds(120'000));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("heartbeat@"));
  EXPECT_THAT(run.out, HasSubstr("succeeded"));
  EXPECT_THAT(run.out, HasSubstr("1 run(s) finished, 0 failed"));
}

TEST_F(Cron, ForbidNeverRunsTwoAtOnce) {
  auto server = StartServer("data", "4xH100-80GB");
  ASSERT_TRUE(server->ok());
  const std::string timeline = dir_.Sub("timeline.log");
  // Due every 2 s, each run takes 5 s: with allow, runs would overlap.
  const std::string file = dir_.Sub("forbid.yaml");
  WriteFile(file, fmt::format(R"yaml(kind: CronJob
name: overlap
schedule: "*/2 * * * * *"
concurrency_policy: forbid
history: {{succeeded: 100, failed: 100}}
job:
  resources: {{cpu: 100m, memory: 16Mi, gpus: 1}}
  script: |
    echo "start $DROVER_JOB_ID $(date +%s%N)" >> {0}
    sleep 5
    echo "end $DROVER_JOB_ID $(date +%s%N)" >> {0}
)yaml",
                              timeline));
  SubmitCron(server->url(), file, dir_.path());
  api::ApiClient client = server->Client();
  ASSERT_TRUE(WaitUntil([&] { return CountFinished(Runs(client, "overlap")) >= 3; },
                        std::chrono::milliseconds(90'000)))
      << server->Log();

  // Every start comes after the previous run's end.
  std::int64_t previous_end = 0;
  std::set<std::string> started;
  int ended = 0;
  for (const std::string& line : ReadLines(timeline)) {
    std::istringstream in(line);
    std::string what, job;
    std::int64_t at = 0;
    in >> what >> job >> at;
    if (what == "start") {
      EXPECT_GE(at, previous_end) << "job " << job << " started while another ran";
      EXPECT_TRUE(started.insert(job).second) << "job " << job << " started twice";
    } else {
      previous_end = at;
      ++ended;
    }
  }
  EXPECT_GE(ended, 3);
  // One job per run, and a run id never repeats (the map would merge repeats).
  for (const auto& [id, run] : Runs(client, "overlap")) EXPECT_EQ(run["jobs"].size(), 1u) << id;
}

TEST_F(Cron, ServerRestartStartsTheLatestMissedRunOnce) {
  const std::string data = dir_.Sub("data");
  const std::string ran = dir_.Sub("ran.log");
  const std::string file = dir_.Sub("restart.yaml");
  WriteFile(file, fmt::format(R"(kind: CronJob
name: ticker
schedule: "*/6 * * * * *"
history: {{succeeded: 100, failed: 100}}
job:
  resources: {{cpu: 100m, memory: 16Mi}}
  script: echo $DROVER_JOB_ID >> {0}
)",
                              ran));
  std::map<std::string, json> before;
  std::int64_t stopped_at = 0;
  {
    ServerProcess first(data, dir_.path(), {"--gpus", "0"});
    ASSERT_TRUE(first.ok());
    SubmitCron(first.url(), file, dir_.path());
    api::ApiClient client = first.Client();
    ASSERT_TRUE(WaitUntil([&] { return CountFinished(Runs(client, "ticker")) >= 1; },
                          std::chrono::milliseconds(60'000)))
        << first.Log();
    before = Runs(client, "ticker");
    first.process().KillProcessOnly();
    stopped_at = SystemClock().Now() / 1000;
  }
  ASSERT_FALSE(before.empty());

  // Down across at least two due times; restarted a second after the last of them, so that the
  // new server is up well before the next (5 s later).
  std::int64_t now = SystemClock().Now() / 1000;
  while (now < stopped_at + 7 || now % 6 != 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    now = SystemClock().Now() / 1000;
  }
  const std::int64_t latest_missed = now - 1;
  ServerProcess second(data, dir_.path(), {"--gpus", "0"});
  ASSERT_TRUE(second.ok());
  ASSERT_LT(SystemClock().Now() / 1000, latest_missed + 6) << "the server took too long to start";
  api::ApiClient client = second.Client();
  // The missed run, and then a regular one after the restart.
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (const auto& [id, run] : Runs(client, "ticker")) {
          if (DueSeconds(id) > latest_missed && Finished(run["state"])) return true;
        }
        return false;
      },
      std::chrono::milliseconds(60'000)))
      << second.Log();

  std::map<std::string, json> after = Runs(client, "ticker");
  std::vector<std::int64_t> missed_runs;
  for (const auto& [id, run] : after) {
    EXPECT_EQ(run["jobs"].size(), 1u) << id;
    // Runs from before the stop are the same runs (same jobs), not fired again.
    if (before.contains(id)) {
      EXPECT_EQ(run["jobs"], before[id]["jobs"]) << id;
    }
    // Due while no server ran (the first may have fired one more between the listing and the
    // kill, due at stopped_at at the latest).
    const std::int64_t due = DueSeconds(id);
    if (due > stopped_at && due <= latest_missed) missed_runs.push_back(due);
  }
  // Only the latest missed due time got a run, once.
  EXPECT_THAT(missed_runs, ::testing::ElementsAre(latest_missed)) << json(after).dump(2);
  // Every run's job ran exactly once.
  std::map<std::string, int> runs_of_job;
  for (const std::string& line : ReadLines(ran)) runs_of_job[line]++;
  for (const auto& [job, count] : runs_of_job) EXPECT_EQ(count, 1) << "job " << job;
}

// The row `drover cron ls` prints for `name`, or "" when it is not listed.
std::string ListedRow(const std::string& url, const std::string& name, const std::string& scratch) {
  CommandResult ls = RunDrover({"--server", url, "cron", "ls"}, scratch);
  EXPECT_EQ(ls.exit_code, 0) << ls.out << ls.err;
  std::istringstream lines(ls.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(name + " ")) return line;
  }
  return "";
}

TEST_F(Cron, SuspendResumeAndDeleteThroughTheCli) {
  const std::string data = dir_.Sub("data");
  const std::string file = dir_.Sub("tick.yaml");
  WriteFile(file, R"(kind: CronJob
name: tick
schedule: "*/2 * * * * *"
job:
  resources: {cpu: 100m, memory: 16Mi}
  command: ["true"]
)");
  {
    ServerProcess server(data, dir_.path(), {"--gpus", "0"});
    ASSERT_TRUE(server.ok());
    SubmitCron(server.url(), file, dir_.path());
    EXPECT_THAT(ListedRow(server.url(), "tick", dir_.path()), HasSubstr(" scheduled "));

    CommandResult suspend =
        RunDrover({"--server", server.url(), "cron", "suspend", "tick"}, dir_.path());
    ASSERT_EQ(suspend.exit_code, 0) << suspend.out << suspend.err;
    EXPECT_THAT(suspend.out, HasSubstr("cron job tick suspended"));
    EXPECT_THAT(ListedRow(server.url(), "tick", dir_.path()), HasSubstr(" suspended "));

    CommandResult unknown =
        RunDrover({"--server", server.url(), "cron", "suspend", "nope"}, dir_.path());
    EXPECT_EQ(unknown.exit_code, 1);
    EXPECT_THAT(unknown.err, HasSubstr("cron job nope does not exist"));
    server.process().KillProcessOnly();
  }

  // Suspension is stored: a restarted server keeps it, with no next run.
  ServerProcess server(data, dir_.path(), {"--gpus", "0"});
  ASSERT_TRUE(server.ok());
  EXPECT_THAT(ListedRow(server.url(), "tick", dir_.path()), HasSubstr(" suspended "));
  api::ApiClient client = server.Client();
  auto listed = client.Get("/v1/crons");
  ASSERT_TRUE(listed.has_value());
  EXPECT_TRUE(listed->json["crons"][0]["suspend"].get<bool>());
  EXPECT_TRUE(listed->json["crons"][0]["next_run_at"].is_null());

  const std::int64_t resumed_at = SystemClock().Now() / 1000;
  CommandResult resume =
      RunDrover({"--server", server.url(), "cron", "resume", "tick"}, dir_.path());
  ASSERT_EQ(resume.exit_code, 0) << resume.out << resume.err;
  EXPECT_THAT(resume.out, HasSubstr("cron job tick resumed: next run"));
  // A run due after the resume starts and finishes.
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (const auto& [id, run] : Runs(client, "tick")) {
          if (DueSeconds(id) >= resumed_at && run["state"] == "succeeded") return true;
        }
        return false;
      },
      std::chrono::milliseconds(60'000)))
      << server.Log();
  EXPECT_THAT(ListedRow(server.url(), "tick", dir_.path()), HasSubstr(" scheduled "));

  CommandResult remove =
      RunDrover({"--server", server.url(), "cron", "delete", "tick"}, dir_.path());
  ASSERT_EQ(remove.exit_code, 0) << remove.out << remove.err;
  EXPECT_THAT(remove.out, HasSubstr("cron job tick deleted"));
  EXPECT_EQ(ListedRow(server.url(), "tick", dir_.path()), "");
  CommandResult again =
      RunDrover({"--server", server.url(), "cron", "delete", "tick"}, dir_.path());
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, HasSubstr("cron job tick does not exist"));
}

}  // namespace
}  // namespace drover::integration
