// `drover server --store postgres://...` against a real PostgreSQL (testing::PostgresCluster):
// the state lives in the database, not in the data folder; a server waits --store-wait for a
// database that cannot be reached, then stops the start with a message that does not show the
// password.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "drover/testing/postgres_cluster.h"
#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class PostgresServer : public IntegrationTest {
 protected:
  // Submits a one-job file (`true`, named `name`) and returns the ids the server answered.
  static std::vector<std::int64_t> SubmitTrueJob(api::ApiClient& client, const std::string& name) {
    return Submit(client, fmt::format("kind: Job\nname: {}\nresources:\n  cpu: 100m\n  memory: "
                                      "16Mi\nscript: \"true\"\n",
                                      name));
  }
};

TEST_F(PostgresServer, KeepsJobsInTheDatabaseAcrossDataFolders) {
  auto uri = testing::PostgresCluster::Shared().NewDatabase("server");
  ASSERT_TRUE(uri.has_value()) << uri.error().ToString();
  std::int64_t id = 0;
  {
    ServerProcess first(dir_.Sub("a"), dir_.path(), {"--gpus", "0", "--store", *uri});
    ASSERT_TRUE(first.ok()) << first.Log();
    api::ApiClient client = first.Client();
    const auto ids = SubmitTrueJob(client, "kept");
    ASSERT_EQ(ids.size(), 1u);
    id = ids[0];
    EXPECT_EQ(WaitForTerminal(client, id), "succeeded") << first.Log();
  }
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("a") + "/drover.db")) << "no SQLite file";
  // Another data folder, the same database: the job is there, and so is the admin token (its
  // hash is in the database; the server writes the token file only when it creates one).
  std::filesystem::create_directories(dir_.Sub("b"));
  std::filesystem::copy_file(dir_.Sub("a") + "/admin.token", dir_.Sub("b") + "/admin.token");
  ServerProcess second(dir_.Sub("b"), dir_.path(), {"--gpus", "0", "--store", *uri});
  ASSERT_TRUE(second.ok()) << second.Log();
  api::ApiClient client = second.Client();
  EXPECT_EQ(GetJob(client, id)["state"], "succeeded") << second.Log();
}

TEST_F(PostgresServer, UnreachableDatabaseStopsTheStartWithoutShowingThePassword) {
  // The cluster's port with a database server stopped there: nothing listens.
  auto cluster = testing::PostgresCluster::Start();
  ASSERT_TRUE(cluster.has_value()) << cluster.error().ToString();
  const int port = (*cluster)->port();
  ASSERT_TRUE((*cluster)->Stop().has_value());
  const std::string uri = fmt::format("postgres://drover:s3cret-pw@127.0.0.1:{}/drover", port);
  CommandResult result = RunDrover({"server", "--data", dir_.Sub("data"), "--listen", "127.0.0.1:0",
                                    "--gpus", "0", "--store", uri, "--store-wait", "2s"},
                                   dir_.path(), std::chrono::milliseconds(60'000));
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_THAT(result.err, HasSubstr("trying again every second for up to 2s (--store-wait)"));
  EXPECT_THAT(result.err,
              HasSubstr(fmt::format("postgres://drover:***@127.0.0.1:{}/drover", port)));
  EXPECT_THAT(result.err, HasSubstr("connect to"));
  EXPECT_THAT(result.out + result.err, Not(HasSubstr("s3cret-pw")));
}

TEST_F(PostgresServer, AServerStartedBeforeItsDatabaseComesUpWithIt) {
  auto cluster = testing::PostgresCluster::Start();
  ASSERT_TRUE(cluster.has_value()) << cluster.error().ToString();
  auto uri = (*cluster)->NewDatabase("late");
  ASSERT_TRUE(uri.has_value()) << uri.error().ToString();
  ASSERT_TRUE((*cluster)->Stop().has_value());
  // The database starts again once the server said it waits for it.
  const std::string scratch = dir_.Sub("scratch");
  std::filesystem::create_directories(scratch);
  std::thread database([&] {
    const bool waiting = WaitUntil([&] {
      for (const auto& entry : std::filesystem::directory_iterator(scratch)) {
        if (entry.path().extension() == ".err" &&
            ReadFile(entry.path().string()).find("the database is unreachable") !=
                std::string::npos) {
          return true;
        }
      }
      return false;
    });
    EXPECT_TRUE(waiting) << "the server never said it waits for the database";
    Status restarted = (*cluster)->Restart();
    EXPECT_TRUE(restarted.has_value()) << restarted.error().ToString();
  });
  ServerProcess server(dir_.Sub("data"), scratch, {"--gpus", "0", "--store", *uri});
  database.join();
  ASSERT_TRUE(server.ok()) << server.Log();
  api::ApiClient client = server.Client();
  const auto ids = SubmitTrueJob(client, "late");
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(WaitForTerminal(client, ids[0]), "succeeded") << server.Log();
}

TEST_F(PostgresServer, AStoreThatIsNotAPostgresUriIsRefused) {
  CommandResult result = RunDrover({"server", "--data", dir_.Sub("data"), "--listen", "127.0.0.1:0",
                                    "--gpus", "0", "--store", "mysql://x:pw@h/d"},
                                   dir_.path(), std::chrono::milliseconds(60'000));
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;  // an invalid argument
  EXPECT_THAT(result.err, HasSubstr("--store: 'mysql://x:***@h/d' is not a postgres://"));
}

}  // namespace
}  // namespace drover::integration
