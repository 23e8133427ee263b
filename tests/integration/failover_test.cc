// Two `drover server`s on one PostgreSQL database (docs/operations.md "Two servers on
// PostgreSQL"): a standby answers 503 "standby" naming the leader, takes over when the leader's
// lease expires (SIGKILL) and adopts its running workers through their agent, and a paused
// leader that wakes up after the takeover writes nothing and exits.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "drover/testing/postgres_cluster.h"
#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Short lease settings, so that a takeover happens within a few seconds.
const std::vector<std::string> kLeaseFlags = {"--lease", "3s", "--lease-renew", "500ms"};

class Failover : public IntegrationTest {
 protected:
  // The cluster this test's database is on: the test program's shared one.
  virtual testing::PostgresCluster& Cluster() { return testing::PostgresCluster::Shared(); }

  void SetUp() override {
    auto uri = Cluster().NewDatabase("failover");
    ASSERT_TRUE(uri.has_value()) << uri.error().ToString();
    uri_ = *uri;
    join_token_ = dir_.Sub("join.token");
    std::ofstream(join_token_) << "failover-join-token\n";
    fs::permissions(join_token_, fs::perms::owner_read | fs::perms::owner_write);
  }

  // A server's flags after the subcommand: no GPU of its own, the shared store and join token.
  std::vector<std::string> ServerArgs() const {
    std::vector<std::string> args = {"--gpus",   "0", "--store", uri_, "--join-token-file",
                                     join_token_};
    args.insert(args.end(), kLeaseFlags.begin(), kLeaseFlags.end());
    return args;
  }

  // Starts a second server on data folder `name` and fixed port `port`, with copies of the
  // leader's admin token and job-token key (docs/operations.md says to share these): it stays a
  // standby while the leader lives; its ready file appears once it leads.
  std::unique_ptr<ChildProcess> StartStandby(const std::string& leader_data, int port) {
    const std::string data = dir_.Sub("standby");
    fs::create_directories(data);
    for (const char* file : {"admin.token", "job-token.key"}) {
      fs::copy_file(leader_data + "/" + file, data + "/" + file);
    }
    standby_ready_ = dir_.Sub("standby.url");
    std::vector<std::string> argv = {DroverBinary(), "server",
                                     "--data",       data,
                                     "--listen",     fmt::format("127.0.0.1:{}", port),
                                     "--ready-file", standby_ready_};
    const auto args = ServerArgs();
    argv.insert(argv.end(), args.begin(), args.end());
    return std::make_unique<ChildProcess>(argv, dir_.Sub("standby.out"), dir_.Sub("standby.err"));
  }

  // The standby's URL once it leads ("" if it does not within `deadline`).
  std::string WaitForStandbyToLead(std::chrono::milliseconds deadline) {
    if (!WaitUntil([&] { return fs::exists(standby_ready_); }, deadline)) return "";
    std::string url = ReadFile(standby_ready_);
    while (!url.empty() && url.back() == '\n') url.pop_back();
    return url;
  }

  std::string uri_;
  std::string join_token_;
  std::string standby_ready_;
};

// A port of this test's range (29000-29999), different per test program run.
int StandbyPort(int offset) { return 29000 + (getpid() * 7 + offset) % 1000; }

TEST_F(Failover, AStandbyAnswers503NamingTheLeaderAndAClientListFollowsIt) {
  ServerProcess leader(dir_.Sub("leader"), dir_.path(), ServerArgs());
  ASSERT_TRUE(leader.ok()) << leader.Log();
  const int port = StandbyPort(1);
  auto standby = StartStandby(dir_.Sub("leader"), port);
  const std::string standby_url = fmt::format("http://127.0.0.1:{}", port);
  httplib::Client raw(standby_url);
  int status = 0;
  std::string leader_header, text;
  ASSERT_TRUE(WaitUntil([&] {
    httplib::Result answer = raw.Get("/v1/jobs");
    if (!answer) return false;
    status = answer->status;
    leader_header = answer->get_header_value("X-Drover-Leader");
    text = answer->body;
    return status == 503 && leader_header == leader.url();
  })) << status
      << " " << text << standby->Stdout() << standby->Stderr();
  const auto body = nlohmann::json::parse(text);
  EXPECT_EQ(body["code"], "standby");
  EXPECT_EQ(body["leader"], leader.url());
  EXPECT_THAT(standby->Stdout(), HasSubstr("is a standby; the leader is " + leader.url()));

  // A client given both servers, the standby first, is answered by the leader.
  api::ApiClient both(standby_url + "," + leader.url());
  both.SetBearer(leader.token());
  auto jobs = both.Get("/v1/jobs");
  ASSERT_TRUE(jobs.has_value()) << jobs.error().ToString();
  EXPECT_EQ(both.base_url(), leader.url());
}

TEST_F(Failover, LeaderKilledWithJobsInFlightEveryJobEndsOnceAndWorkersAreAdopted) {
  constexpr int kJobs = 4;
  const std::string started = dir_.Sub("started.log");
  const std::string ran = dir_.Sub("ran.log");
  auto leader = std::make_unique<ServerProcess>(dir_.Sub("leader"), dir_.path(), ServerArgs());
  ASSERT_TRUE(leader->ok()) << leader->Log();
  const int port = StandbyPort(2);
  auto standby = StartStandby(dir_.Sub("leader"), port);
  const std::string standby_url = fmt::format("http://127.0.0.1:{}", port);
  auto agent =
      StartAgent(leader->url() + "," + standby_url, "gpu-node", "4xA100-40GB", join_token_);
  api::ApiClient client = leader->Client();
  ASSERT_TRUE(WaitForNodeState(client, "gpu-node", "ready")) << agent->Stderr() << leader->Log();
  std::string spec;
  for (int i = 0; i < kJobs; ++i) {
    spec += fmt::format(R"(---
kind: Job
name: job-{0}
resources:
  cpu: 100m
  memory: 16Mi
  gpus: 1
script: |
  echo $DROVER_JOB_ID >> {1}
  sleep 8
  echo $DROVER_JOB_ID >> {2}
)",
                        i, started, ran);
  }
  const auto ids = Submit(client, spec);
  ASSERT_EQ(ids.size(), static_cast<std::size_t>(kJobs));
  ASSERT_TRUE(WaitUntil([&] { return ReadLines(started).size() == kJobs; }))
      << agent->Stderr() << leader->Log();

  leader->process().KillProcessOnly();
  const auto killed_at = std::chrono::steady_clock::now();
  const std::string url = WaitForStandbyToLead(std::chrono::milliseconds(30'000));
  ASSERT_EQ(url, standby_url) << standby->Stdout() << standby->Stderr();
  RecordProperty("failover_ms",
                 static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::steady_clock::now() - killed_at)
                                      .count()));
  api::ApiClient after(url);
  after.SetBearer(leader->token());
  for (std::int64_t id : ids) {
    EXPECT_EQ(WaitForTerminal(after, id, std::chrono::milliseconds(60'000)), "succeeded")
        << GetJob(after, id).dump(2) << "\n"
        << standby->Stderr() << agent->Stderr();
  }
  std::map<std::string, int> starts, ends;
  for (const std::string& line : ReadLines(started)) starts[line]++;
  for (const std::string& line : ReadLines(ran)) ends[line]++;
  for (std::int64_t id : ids) {
    EXPECT_EQ(starts[std::to_string(id)], 1) << "job " << id << " started again";
    EXPECT_EQ(ends[std::to_string(id)], 1) << "job " << id;
    const auto job = GetJob(after, id);
    EXPECT_EQ(job["attempts"].size(), 1u) << job.dump(2);
    int terminal = 0;
    for (const auto& t : job["transitions"]) {
      if (IsTerminalState(t["to_state"].get<std::string>())) ++terminal;
    }
    EXPECT_EQ(terminal, 1) << job["transitions"].dump(2);
  }
}

TEST_F(Failover, APausedLeaderWritesNothingAfterTheTakeoverAndExits) {
  ServerProcess leader(dir_.Sub("leader"), dir_.path(), ServerArgs());
  ASSERT_TRUE(leader.ok()) << leader.Log();
  auto standby = StartStandby(dir_.Sub("leader"), StandbyPort(3));
  ASSERT_EQ(kill(leader.process().pid(), SIGSTOP), 0);
  const std::string url = WaitForStandbyToLead(std::chrono::milliseconds(30'000));
  ASSERT_FALSE(url.empty()) << standby->Stdout() << standby->Stderr();
  std::int64_t epoch = 0;
  {
    pqxx::connection db(uri_);
    pqxx::nontransaction tx(db);
    epoch = tx.exec1("SELECT epoch FROM leader")[0].as<std::int64_t>();
  }
  EXPECT_EQ(epoch, 2);

  // A submission waits in the paused leader's socket; it wakes up to a newer leader.
  std::thread stale([&] {
    api::ApiClient old_leader(leader.url(), 20 * kMillisPerSecond);
    old_leader.SetBearer(leader.token());
    static_cast<void>(old_leader.Post("/v1/jobs",
                                      "kind: Job\nname: from-stale-leader\nresources:\n  cpu: "
                                      "100m\n  memory: 16Mi\nscript: \"true\"\n",
                                      "application/yaml"));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the request is sent
  ASSERT_EQ(kill(leader.process().pid(), SIGCONT), 0);
  const std::optional<int> status = leader.process().Wait(std::chrono::milliseconds(30'000));
  stale.join();
  EXPECT_EQ(status, 75) << leader.Log();
  EXPECT_THAT(leader.Log(), HasSubstr("no longer the leader"));

  pqxx::connection db(uri_);
  pqxx::nontransaction tx(db);
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM jobs WHERE name = 'from-stale-leader'")[0].as<int>(), 0);
  EXPECT_EQ(tx.exec1("SELECT epoch FROM leader")[0].as<std::int64_t>(), epoch);
  // The new leader serves.
  api::ApiClient client(url);
  client.SetBearer(leader.token());
  const auto ids = Submit(client,
                          "kind: Job\nname: after\nresources:\n  cpu: 100m\n  memory: 16Mi\n"
                          "script: \"true\"\n");
  EXPECT_EQ(ids.size(), 1u);
}

// On a cluster of its own, which the test restarts.
class FailoverOwnCluster : public Failover {
 protected:
  void SetUp() override {
    auto cluster = testing::PostgresCluster::Start();
    ASSERT_TRUE(cluster.has_value()) << cluster.error().ToString();
    cluster_ = *std::move(cluster);
    Failover::SetUp();
  }
  testing::PostgresCluster& Cluster() override { return *cluster_; }

  std::unique_ptr<testing::PostgresCluster> cluster_;
};

TEST_F(FailoverOwnCluster, PostgresRestartedUnderLoadLosesNoAcknowledgedSubmission) {
  ServerProcess leader(dir_.Sub("leader"), dir_.path(), ServerArgs());
  ASSERT_TRUE(leader.ok()) << leader.Log();
  const int port = StandbyPort(4);
  auto standby = StartStandby(dir_.Sub("leader"), port);
  api::ApiClient client(fmt::format("{},http://127.0.0.1:{}", leader.url(), port),
                        10 * kMillisPerSecond);
  client.SetBearer(leader.token());
  std::vector<std::int64_t> acknowledged;
  std::atomic<int> refused{0};
  std::atomic<int> before_restart{0};
  std::atomic<bool> restarted{false};
  std::atomic<int> after_restart{0};
  std::thread load([&] {
    // Until 20 submissions were acknowledged after the database came back (or 60 s).
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (after_restart < 20 && std::chrono::steady_clock::now() < end) {
      auto reply = client.Post("/v1/jobs",
                               "kind: Job\nname: load\nresources:\n  cpu: 100m\n  memory: 16Mi\n"
                               "script: \"true\"\n",
                               "application/yaml");
      if (!reply) {
        ++refused;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      for (const auto& job : reply->json["jobs"]) {
        acknowledged.push_back(job["id"].get<std::int64_t>());
      }
      ++(restarted ? after_restart : before_restart);
    }
  });
  // acknowledged is the load thread's until it is joined.
  EXPECT_TRUE(WaitUntil([&] { return before_restart >= 5; }));
  Status stopped = cluster_->Stop("fast");
  EXPECT_TRUE(stopped.has_value()) << stopped.error().ToString();
  // Down until the load met the outage (at most a few seconds).
  WaitUntil([&] { return refused > 0; }, std::chrono::milliseconds(5'000));
  Status restart = cluster_->Restart();
  EXPECT_TRUE(restart.has_value()) << restart.error().ToString();
  restarted = true;
  load.join();
  EXPECT_GE(after_restart, 20) << "the servers did not resume: " << leader.Log()
                               << standby->Stdout() << standby->Stderr();
  pqxx::connection db(uri_);
  pqxx::nontransaction tx(db);
  for (std::int64_t id : acknowledged) {
    EXPECT_EQ(tx.exec_params1("SELECT count(*) FROM jobs WHERE id = $1", id)[0].as<int>(), 1)
        << "acknowledged job " << id << " lost";
  }
  RecordProperty("acknowledged", static_cast<int>(acknowledged.size()));
  RecordProperty("refused", refused.load());
}

}  // namespace
}  // namespace drover::integration
