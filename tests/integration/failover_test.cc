// Two `drover server`s on one PostgreSQL database (docs/operations.md "Two servers on
// PostgreSQL"): a standby answers 503 "standby" naming the leader, takes over when the leader's
// lease expires (SIGKILL) and adopts its running workers through their agent, and a paused
// leader that wakes up after the takeover writes nothing and comes back as a standby; a leader
// that cannot renew its lease stops leading until the database is back, then leads again; a
// leader whose COMMIT's answer is lost restarts and finds the job once; clients, event streams
// and Slurm jobs move to the new leader.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "drover/testing/loopback.h"
#include "drover/testing/postgres_cluster.h"
#include "drover/testing/tcp_proxy.h"
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
  std::unique_ptr<ChildProcess> StartStandby(const std::string& leader_data, int port,
                                             const std::vector<std::string>& extra = {}) {
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
    argv.insert(argv.end(), extra.begin(), extra.end());
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

// A fixed port of this test's range (29000-29999), by offset, different per test program run:
// for a standby, or a leader that must come back on its URL after restarting in place.
int FixedPort(int offset) { return 29000 + (getpid() * 7 + offset) % 1000; }

TEST_F(Failover, AStandbyAnswers503NamingTheLeaderAndAClientListFollowsIt) {
  ServerProcess leader(dir_.Sub("leader"), dir_.path(), ServerArgs());
  ASSERT_TRUE(leader.ok()) << leader.Log();
  const int port = FixedPort(1);
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
  // Printed just after the standby starts naming the leader (daemons.cc): waited for, not raced.
  const std::string named = "is a standby; the leader is " + leader.url();
  EXPECT_TRUE(WaitUntil([&] { return standby->Stdout().find(named) != std::string::npos; }))
      << standby->Stdout();

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
  // `drover ls -w`'s stream, given both servers: it moves to the new leader and resumes there
  // (a `reset`: the new leader's ids are newer than the old one's) until told to stop. Declared
  // before the servers, so that a failed assertion ends them first, which ends the stream (after
  // the client's timeout) before the thread is joined.
  std::vector<std::string> streamed;  // event types, in order; the stream thread's until joined
  std::atomic<bool> stop_stream{false};
  std::atomic<bool> stream_open{false};
  Status stream_status;
  std::thread stream_thread;
  struct Joiner {
    std::thread& thread;
    ~Joiner() {
      if (thread.joinable()) thread.join();
    }
  } joiner{stream_thread};
  auto leader = std::make_unique<ServerProcess>(dir_.Sub("leader"), dir_.path(), ServerArgs());
  ASSERT_TRUE(leader->ok()) << leader->Log();
  const int port = FixedPort(2);
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
  stream_thread = std::thread([&] {
    api::ApiClient stream(leader->url() + "," + standby_url, 30 * kMillisPerSecond);
    stream.SetBearer(leader->token());
    stream_status = stream.Events("/v1/events", "", [&](const api::StreamEvent& event) {
      streamed.push_back(event.type);
      stream_open = true;
      return !stop_stream;
    });
  });
  ASSERT_TRUE(WaitUntil([&] { return stream_open.load(); }));
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
  // One more event ends the stream (its callback returns false at the next event).
  stop_stream = true;
  Submit(after,
         "kind: Job\nname: last\nresources:\n  cpu: 100m\n  memory: 16Mi\nscript: \"true\"\n");
  stream_thread.join();
  EXPECT_TRUE(stream_status.has_value()) << stream_status.error().ToString();
  const auto reset = std::find(streamed.begin(), streamed.end(), "reset");
  ASSERT_NE(reset, streamed.end()) << "the stream did not resume on the new leader";
  EXPECT_NE(std::find(reset, streamed.end(), "job"), streamed.end())
      << "no job event from the new leader";
}

TEST_F(Failover, APausedLeaderWritesNothingAfterTheTakeoverAndComesBackAsAStandby) {
  ServerProcess leader(dir_.Sub("leader"), dir_.path(), ServerArgs());
  ASSERT_TRUE(leader.ok()) << leader.Log();
  auto standby = StartStandby(dir_.Sub("leader"), FixedPort(3));
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

  // A submission waits in the paused leader's socket: the kernel accepts the connection and
  // holds the request, whole, before the leader runs again; it wakes up to a newer leader.
  const std::string body =
      "kind: Job\nname: from-stale-leader\nresources:\n  cpu: 100m\n  memory: 16Mi\n"
      "script: \"true\"\n";
  const std::string request = fmt::format(
      "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n"
      "Content-Type: application/yaml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
      leader.token(), body.size(), body);
  const std::string& leader_url = leader.url();
  const int stale =
      ::drover::testing::ConnectLoopback(std::stoi(leader_url.substr(leader_url.rfind(':') + 1)));
  ASSERT_GE(stale, 0);
  ASSERT_EQ(::send(stale, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  ASSERT_EQ(kill(leader.process().pid(), SIGCONT), 0);
  // It steps down and restarts in place (the same process), as a standby naming the new leader.
  EXPECT_TRUE(WaitUntil(
      [&] {
        return leader.process().Stdout().find("is a standby; the leader is " + url) !=
               std::string::npos;
      },
      std::chrono::milliseconds(30'000)))
      << leader.Log();
  ::close(stale);  // answered or dropped: what matters is what the database holds, below
  EXPECT_TRUE(leader.process().Running());
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

// Stand-ins for Slurm's commands in `dir` (put first on PATH): sbatch appends the job name to
// dir/sbatch.log, lists it as Slurm job 1, pending, in dir/show and answers its id; scontrol
// show prints dir/show (which the test rewrites); scancel appends its arguments to
// dir/scancel.log; sacct knows nothing.
void WriteFakeSlurm(const std::string& dir) {
  const std::map<std::string, std::string> scripts = {
      {"sbatch",
       fmt::format("#!/bin/bash\ncat >/dev/null\nfor a in \"$@\"; do case $a in "
                   "--job-name=*) name=${{a#--job-name=}};; esac; done\n"
                   "echo \"$name\" >> {0}/sbatch.log\n"
                   "echo \"JobId=1 JobName=$name JobState=PENDING Reason=Priority Restarts=0 "
                   "SubmitTime=2026-11-30T12:00:00 EligibleTime=2026-11-30T12:00:00 "
                   "StartTime=Unknown EndTime=Unknown NodeList=(null)\" > {0}/show\necho 1\n",
                   dir)},
      {"scontrol", fmt::format("#!/bin/bash\n[ \"$1\" = show ] || exit 0\ncat {0}/show "
                               "2>/dev/null\nexit 0\n",
                               dir)},
      {"scancel", fmt::format("#!/bin/bash\necho \"$*\" >> {0}/scancel.log\n", dir)},
      {"sacct", "#!/bin/bash\nexit 0\n"},
  };
  for (const auto& [name, text] : scripts) {
    WriteFile(dir + "/" + name, text);
    fs::permissions(dir + "/" + name, fs::perms::owner_all);
  }
}

// Slurm job 1 as scontrol lists it: Drover's `name` in `state` (plus `extra` fields).
void ShowSlurmJob(const std::string& dir, const std::string& name, const std::string& state,
                  const std::string& extra = "") {
  WriteFile(dir + "/show.new",
            fmt::format("JobId=1 JobName={} JobState={} Reason=None Restarts=0 "
                        "SubmitTime=2026-11-30T12:00:00 EligibleTime=2026-11-30T12:00:00 "
                        "StartTime=2026-11-30T12:00:01 EndTime=Unknown NodeList=n1 {}\n",
                        name, state, extra));
  fs::rename(dir + "/show.new", dir + "/show");
}

TEST_F(Failover, ASlurmJobOfTheOldLeaderIsAdoptedByTheNewOneNotSubmittedAgain) {
  const std::string slurm = dir_.Sub("slurm");
  fs::create_directories(slurm);
  WriteFakeSlurm(slurm);
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  struct RestorePath {
    const std::string& path;
    ~RestorePath() { setenv("PATH", path.c_str(), 1); }
  } restore{path};
  setenv("PATH", (slurm + ":" + path).c_str(), 1);  // the servers' PATH
  WriteFile(dir_.Sub("policy.yaml"), "kind: Policy\nqueues:\n  - name: hpc\n    executor: slurm\n");
  // The stand-ins are commands: no submission helper, which would talk to slurmctld itself.
  const std::vector<std::string> slurm_args = {"--policy", dir_.Sub("policy.yaml"),
                                               "--slurm-submit", "sbatch"};
  std::vector<std::string> args = ServerArgs();
  args.insert(args.end(), slurm_args.begin(), slurm_args.end());
  auto leader = std::make_unique<ServerProcess>(dir_.Sub("leader"), dir_.path(), args);
  ASSERT_TRUE(leader->ok()) << leader->Log();
  const int port = FixedPort(5);
  auto standby = StartStandby(dir_.Sub("leader"), port, slurm_args);
  api::ApiClient client = leader->Client();
  const auto ids = Submit(client,
                          "kind: Job\nname: on-slurm\nqueue: hpc\nresources:\n  cpu: 100m\n"
                          "  memory: 16Mi\ncommand: [\"true\"]\n");
  ASSERT_EQ(ids.size(), 1u);
  const std::string name = fmt::format("drover-{}-1", ids[0]);
  ASSERT_TRUE(WaitUntil([&] { return ReadLines(slurm + "/sbatch.log").size() == 1; }))
      << leader->Log();
  ShowSlurmJob(slurm, name, "RUNNING");
  ASSERT_EQ(WaitForState(client, ids[0], {"running"}), "running") << leader->Log();

  leader->process().KillProcessOnly();
  const std::string url = WaitForStandbyToLead(std::chrono::milliseconds(30'000));
  ASSERT_EQ(url, fmt::format("http://127.0.0.1:{}", port))
      << standby->Stdout() << standby->Stderr();
  api::ApiClient after(url);
  after.SetBearer(leader->token());
  // The new leader follows the Slurm job it found in the store; its end ends the job.
  ShowSlurmJob(slurm, name, "COMPLETED", "ExitCode=0:0");
  EXPECT_EQ(WaitForTerminal(after, ids[0]), "succeeded")
      << GetJob(after, ids[0]).dump(2) << standby->Stderr();
  EXPECT_EQ(ReadLines(slurm + "/sbatch.log"), std::vector<std::string>{name})
      << "the new leader submitted the job again";
  EXPECT_TRUE(ReadLines(slurm + "/scancel.log").empty());
  EXPECT_EQ(GetJob(after, ids[0])["attempts"].size(), 1u);
}

// The leader's COMMIT lands but its answer is lost with the connection (libpq's in-doubt
// commit, made by a testing::TcpProxy between the server and PostgreSQL): the leader restarts in
// place and reads the store afresh, so the submission whose answer the client never got is there
// once, the client's retry with its Idempotency-Key finds it, and it runs once.
TEST_F(Failover, ACommitWhoseAnswerIsLostRestartsTheLeaderWhichFindsTheJobOnce) {
  auto proxy = testing::TcpProxy::Create(Cluster().port());
  ASSERT_TRUE(proxy.has_value()) << proxy.error().ToString();
  std::string via_proxy = uri_;
  const std::string direct = fmt::format(":{}/", Cluster().port());
  ASSERT_NE(via_proxy.find(direct), std::string::npos) << via_proxy;
  via_proxy.replace(via_proxy.find(direct), direct.size(), fmt::format(":{}/", (*proxy)->port()));
  std::vector<std::string> args = ServerArgs();
  *std::find(args.begin(), args.end(), uri_) = via_proxy;
  // A fixed port: the server comes back on it after restarting in place.
  args.insert(args.end(), {"--listen", fmt::format("127.0.0.1:{}", FixedPort(8))});
  ServerProcess leader(dir_.Sub("leader"), dir_.path(), args);
  ASSERT_TRUE(leader.ok()) << leader.Log();
  api::ApiClient client = leader.Client();
  const std::string spec =
      "kind: Job\nname: in-doubt-probe\nresources:\n  cpu: 100m\n  memory: 16Mi\n"
      "script: \"true\"\n";
  const std::map<std::string, std::string> key = {{"Idempotency-Key", "in-doubt-1"}};

  // The transaction that writes the job's name: its COMMIT's answer is lost.
  (*proxy)->LoseReplyThenReset("in-doubt-probe", "COMMIT");
  auto lost = client.Post("/v1/jobs", spec, "application/yaml", key);
  EXPECT_FALSE(lost) << "the server answered a submission whose commit it could not confirm: "
                     << lost->json.dump();
  EXPECT_EQ((*proxy)->swallowed_replies(), 1);
  // Back (the same process, the same port), it finds the job the lost COMMIT wrote: the retry
  // is answered with it, not with a second one.
  Result<api::ApiResponse> retried = lost;
  ASSERT_TRUE(WaitUntil(
      [&] {
        retried = client.Post("/v1/jobs", spec, "application/yaml", key);
        return retried.has_value();
      },
      std::chrono::seconds(30)))
      << retried.error().message << leader.Log();
  EXPECT_EQ(retried->status, 200) << retried->json.dump();
  EXPECT_TRUE(retried->json["existing"].get<bool>()) << retried->json.dump();
  ASSERT_EQ(retried->json["jobs"].size(), 1u);
  const std::int64_t id = retried->json["jobs"][0]["id"].get<std::int64_t>();
  EXPECT_EQ(WaitForTerminal(client, id), "succeeded") << leader.Log();
  EXPECT_EQ(GetJob(client, id)["attempts"].size(), 1u);
  EXPECT_THAT(leader.Log(), HasSubstr("lost the database, restarting"));
  pqxx::connection db(uri_);
  pqxx::nontransaction tx(db);
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM jobs").front().as<int>(), 1);
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
  // A fixed port, which a leader that steps down (its lease lapsed during the outage) and
  // restarts in place listens on again: its clients list it.
  std::vector<std::string> args = ServerArgs();
  args.insert(args.end(), {"--listen", fmt::format("127.0.0.1:{}", FixedPort(6))});
  ServerProcess leader(dir_.Sub("leader"), dir_.path(), args);
  ASSERT_TRUE(leader.ok()) << leader.Log();
  const int port = FixedPort(4);
  auto standby = StartStandby(dir_.Sub("leader"), port);
  // Up as a standby before the database stops (one that starts during the outage waits for the
  // database: PostgresServer.AServerStartedBeforeItsDatabaseComesUpWithIt).
  ASSERT_TRUE(WaitUntil([&] {
    return standby->Stdout().find("is a standby") != std::string::npos;
  })) << standby->Stdout()
      << standby->Stderr();
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

TEST_F(FailoverOwnCluster, ALeaderThatCannotRenewItsLeaseStopsActingAsLeader) {
  std::vector<std::string> args = ServerArgs();
  args.insert(args.end(), {"--listen", fmt::format("127.0.0.1:{}", FixedPort(7))});
  ServerProcess leader(dir_.Sub("leader"), dir_.path(), args);
  ASSERT_TRUE(leader.ok()) << leader.Log();
  api::ApiClient client = leader.Client();
  const std::string gauge = "drover_leader{server=\"" + leader.url() + "\"}";
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics.has_value()) << metrics.error().ToString();
  EXPECT_THAT(metrics->body, HasSubstr(gauge + " 1\n"));
  EXPECT_THAT(metrics->body, HasSubstr("drover_leader_epoch{server=\"" + leader.url() + "\"} 1\n"));

  Status stopped = cluster_->Stop("fast");
  ASSERT_TRUE(stopped.has_value()) << stopped.error().ToString();
  // Before its lease (3 s) can expire, it answers as a standby that knows no leader.
  httplib::Client raw(leader.url());
  int status = 0;
  std::string body;
  ASSERT_TRUE(WaitUntil([&] {
    httplib::Result answer = raw.Post("/v1/jobs",
                                      "kind: Job\nname: during-outage\nresources:\n  cpu: 100m\n"
                                      "  memory: 16Mi\nscript: \"true\"\n",
                                      "application/yaml");
    if (!answer) return false;
    status = answer->status;
    body = answer->body;
    return status == 503;
  })) << status
      << " " << body << leader.Log();
  EXPECT_EQ(nlohmann::json::parse(body)["code"], "standby");
  // SelfFence answers 503 first, then sets the gauge and prints: both waited for, not raced.
  EXPECT_TRUE(WaitUntil([&] {
    return leader.process().Stderr().find("stopped acting as the leader") != std::string::npos;
  })) << leader.process().Stderr();
  int metrics_status = 0;
  std::string standby_metrics;
  EXPECT_TRUE(WaitUntil([&] {
    httplib::Result answer = raw.Get("/metrics");
    if (!answer) return false;
    metrics_status = answer->status;
    standby_metrics = answer->body;
    return standby_metrics.find(gauge + " 0\n") != std::string::npos;
  })) << metrics_status
      << " " << standby_metrics;
  EXPECT_EQ(metrics_status, 200);

  // Once the database is back it releases the lease, steps down and restarts in place (same
  // process); with no standby, it takes the lease again, epoch 2, and serves on its URL.
  Status restarted = cluster_->Restart();
  ASSERT_TRUE(restarted.has_value()) << restarted.error().ToString();
  const std::string leads_again = " leads (lease epoch 2)";
  ASSERT_TRUE(
      WaitUntil([&] { return leader.process().Stdout().find(leads_again) != std::string::npos; },
                std::chrono::milliseconds(30'000)))
      << leader.Log();
  EXPECT_TRUE(leader.process().Running());
  EXPECT_THAT(leader.process().Stderr(), HasSubstr("lapsed unrenewed"));
  EXPECT_THAT(leader.process().Stderr(), HasSubstr("restarting as a standby"));
  pqxx::connection db(uri_);
  pqxx::nontransaction tx(db);
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM jobs WHERE name = 'during-outage'")[0].as<int>(), 0);
  EXPECT_THAT(leader.process().Stdout(), HasSubstr(leader.url() + leads_again));
  // It answers as the leader once its control plane has started (a standby's 503 until then).
  api::ApiClient again = leader.Client();
  std::string refused;
  EXPECT_TRUE(WaitUntil([&] {
    auto reply = again.Post("/v1/jobs",
                            "kind: Job\nname: after-outage\nresources:\n  cpu: 100m\n  memory: "
                            "16Mi\nscript: \"true\"\n",
                            "application/yaml");
    if (!reply) refused = reply.error().ToString();
    return reply.has_value();
  })) << refused
      << leader.Log();
}

}  // namespace
}  // namespace drover::integration
