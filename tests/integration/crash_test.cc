// Crash safety: the server is SIGKILLed while jobs run; a new server on the same data
// directory (and the same store: SQLite in it, or a PostgreSQL database) finishes every job
// exactly once.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "drover/testing/postgres_cluster.h"
#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;

class CrashSafety : public IntegrationTest {};

// The same on each store: "Sqlite" (in the data folder) or "Postgres" (a fresh database of the
// test program's throwaway cluster, testing::PostgresCluster).
class CrashSafetyOnStore : public IntegrationTest,
                           public ::testing::WithParamInterface<std::string> {
 protected:
  // The server's arguments after the subcommand: its GPUs and its --store.
  std::vector<std::string> ServerArgs() {
    std::vector<std::string> args = {"--gpus", "4xH100-80GB"};
    if (GetParam() == "Postgres") {
      if (store_uri_.empty()) {
        auto uri = testing::PostgresCluster::Shared().NewDatabase("crash");
        EXPECT_TRUE(uri.has_value()) << uri.error().ToString();
        if (uri) store_uri_ = *uri;
      }
      args.insert(args.end(), {"--store", store_uri_});
    }
    return args;
  }

 private:
  std::string store_uri_;
};

int CountRunning(api::ApiClient& client) {
  auto response = client.Get("/v1/jobs?state=running");
  return response ? static_cast<int>(response->json["jobs"].size()) : 0;
}

TEST_P(CrashSafetyOnStore, EveryJobRunsExactlyOnceAcrossAServerKill) {
  constexpr int kJobs = 20;
  const std::string data = dir_.Sub("data");
  const std::string ran = dir_.Sub("ran.log");
  std::string spec;
  for (int i = 0; i < kJobs; ++i) {
    spec += fmt::format(R"(---
kind: Job
name: job-{0}
resources:
  cpu: 100m
  memory: 16Mi
script: |
  sleep $((2 + DROVER_JOB_ID % 3))
  echo $DROVER_JOB_ID >> {1}
)",
                        i, ran);
  }

  std::vector<std::int64_t> ids;
  {
    ServerProcess first(data, dir_.path(), ServerArgs());
    ASSERT_TRUE(first.ok());
    api::ApiClient client = first.Client();
    ids = Submit(client, spec);
    ASSERT_EQ(ids.size(), static_cast<std::size_t>(kJobs));
    ASSERT_TRUE(WaitUntil([&] { return CountRunning(client) >= 3; })) << first.Log();
    // The server only: the supervisors live in their own sessions and keep the workers going.
    first.process().KillProcessOnly();
  }
  const int finished_before_restart = static_cast<int>(ReadLines(ran).size());

  ServerProcess second(data, dir_.path(), ServerArgs());
  ASSERT_TRUE(second.ok());
  api::ApiClient client = second.Client();
  for (std::int64_t id : ids) {
    EXPECT_EQ(WaitForTerminal(client, id, std::chrono::milliseconds(90'000)), "succeeded")
        << GetJob(client, id).dump(2) << "\n"
        << second.Log();
  }

  std::map<std::string, int> runs;
  for (const std::string& line : ReadLines(ran)) runs[line]++;
  for (std::int64_t id : ids) {
    EXPECT_EQ(runs[std::to_string(id)], 1) << "job " << id << " ran.log entries";
  }
  EXPECT_EQ(runs.size(), static_cast<std::size_t>(kJobs));

  for (std::int64_t id : ids) {
    json job = GetJob(client, id);
    EXPECT_EQ(job["attempts"].size(), 1u) << "job " << id << ": " << job.dump(2);
    const json& transitions = job["transitions"];
    ASSERT_FALSE(transitions.empty()) << "job " << id;
    int terminal = 0;
    for (const json& t : transitions) {
      if (IsTerminalState(t["to_state"].get<std::string>())) ++terminal;
    }
    EXPECT_EQ(terminal, 1) << "job " << id << ": " << transitions.dump(2);
    EXPECT_EQ(transitions.back()["to_state"], "succeeded") << "job " << id;
  }
  // Informational: how much of the work straddled the crash.
  RecordProperty("finished_before_restart", finished_before_restart);
}

INSTANTIATE_TEST_SUITE_P(Stores, CrashSafetyOnStore, ::testing::Values("Sqlite", "Postgres"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST_F(CrashSafety, ASecondServerOnTheSameDataFolderRefusesToStart) {
  // Two servers on one folder would both write the store and hand out the same job ids.
  const std::string data = dir_.Sub("data");
  ServerProcess first(data, dir_.path(), {"--gpus", "0"});
  ASSERT_TRUE(first.ok()) << first.Log();
  CommandResult second =
      RunDrover({"server", "--data", data, "--listen", "127.0.0.1:0", "--gpus", "0"}, dir_.path(),
                std::chrono::milliseconds(30'000));
  EXPECT_EQ(second.exit_code, 1) << second.out << second.err;
  EXPECT_THAT(second.err,
              ::testing::HasSubstr(fmt::format("{} is in use by another drover server (pid {})",
                                               data, first.process().pid())));
  EXPECT_TRUE(first.process().Running()) << "the first server keeps serving";
}

}  // namespace
}  // namespace drover::integration
