// A real `drover server` with declared GPUs running real `sh -c` jobs: gang environment,
// dependency order, timeouts, cancellation and unplaceable jobs.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <cerrno>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;
using ::testing::AllOf;
using ::testing::HasSubstr;

class Lifecycle : public IntegrationTest {
 protected:
  struct LongJob {
    std::int64_t id = 0;
    pid_t pid = 0;  // the job's shell
  };

  // Submits a job that sleeps for 5 minutes and waits until it runs; nullopt (with a test
  // failure recorded) if it does not.
  std::optional<LongJob> StartLongJob(api::ApiClient& client) {
    const std::string pid_file = dir_.Sub("pid");
    const std::string spec = fmt::format(R"(kind: Job
name: long
resources:
  cpu: 100m
  memory: 64Mi
script: |
  echo $$ > {0}.tmp && mv {0}.tmp {0}
  sleep 300
)",
                                         pid_file);
    auto ids = Submit(client, spec);
    if (ids.size() != 1u) {
      ADD_FAILURE() << "the long job was not submitted";
      return std::nullopt;
    }
    if (WaitForState(client, ids[0], {"running"}) != "running" ||
        !WaitUntil([&] { return ReadLines(pid_file).size() == 1; })) {
      ADD_FAILURE() << "the long job did not start";
      return std::nullopt;
    }
    return LongJob{ids[0], std::stoi(ReadLines(pid_file)[0])};
  }
};

std::vector<std::string> Split(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  std::string word;
  while (in >> word) out.push_back(word);
  return out;
}

std::set<std::string> SplitComma(const std::string& text) {
  std::set<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.insert(item);
  }
  return out;
}

TEST_F(Lifecycle, GangWorkersSeeDisjointCudaVisibleDevices) {
  auto server = StartServer("data", "4xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  const std::string out = dir_.Sub("out");
  std::filesystem::create_directories(out);
  const std::string spec = fmt::format(R"(kind: Job
name: gang
workers: 2
resources:
  cpu: 100m
  memory: 64Mi
  gpus: 2
script: |
  f={0}/rank-$DROVER_WORKER_RANK
  echo "$DROVER_WORKER_RANK $CUDA_VISIBLE_DEVICES $DROVER_NUM_WORKERS $DROVER_MASTER_ADDR $DROVER_MASTER_PORT" > $f.tmp
  mv $f.tmp $f
)",
                                       out);
  auto ids = Submit(client, spec);
  ASSERT_EQ(ids.size(), 1u);
  ASSERT_EQ(WaitForTerminal(client, ids[0]), "succeeded") << GetJob(client, ids[0]).dump(2);

  std::vector<std::vector<std::string>> fields;
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<std::string> lines = ReadLines(fmt::format("{}/rank-{}", out, rank));
    ASSERT_EQ(lines.size(), 1u) << "rank " << rank;
    fields.push_back(Split(lines[0]));
    ASSERT_EQ(fields.back().size(), 5u) << lines[0];
  }
  EXPECT_EQ(fields[0][0], "0");
  EXPECT_EQ(fields[1][0], "1");
  std::set<std::string> gpus0 = SplitComma(fields[0][1]);
  std::set<std::string> gpus1 = SplitComma(fields[1][1]);
  EXPECT_EQ(gpus0.size(), 2u) << fields[0][1];
  EXPECT_EQ(gpus1.size(), 2u) << fields[1][1];
  for (const std::string& gpu : gpus0) EXPECT_EQ(gpus1.count(gpu), 0u) << "GPU " << gpu;
  for (const auto& f : fields) EXPECT_EQ(f[2], "2");
  EXPECT_EQ(fields[0][3], fields[1][3]);
  EXPECT_FALSE(fields[0][3].empty());
  EXPECT_EQ(fields[0][4], fields[1][4]);
  EXPECT_GT(std::stoi(fields[0][4]), 0);

  // The API records the same GPUs the workers saw.
  json job = GetJob(client, ids[0]);
  ASSERT_EQ(job["attempts"].size(), 1u);
  const json& workers = job["attempts"][0]["workers"];
  ASSERT_EQ(workers.size(), 2u);
  for (int rank = 0; rank < 2; ++rank) {
    std::set<std::string> recorded;
    for (const json& gpu : workers[rank]["gpus"]) recorded.insert(std::to_string(gpu.get<int>()));
    EXPECT_EQ(recorded, rank == 0 ? gpus0 : gpus1) << "rank " << rank;
  }
}

TEST_F(Lifecycle, DependenciesOrderTheStartTimes) {
  auto server = StartServer("data", "4xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  const std::string out = dir_.Sub("out");
  std::filesystem::create_directories(out);
  std::string spec;
  const char* names[] = {"a", "b", "c"};
  for (int i = 0; i < 3; ++i) {
    spec +=
        fmt::format(R"(---
kind: Job
name: {0}
{1}resources:
  cpu: 100m
  memory: 64Mi
script: |
  date +%s%N > {2}/{0}.start
  sleep 0.3
  date +%s%N > {2}/{0}.end
)",
                    names[i], i == 0 ? "" : fmt::format("depends_on: [{}]\n", names[i - 1]), out);
  }
  auto ids = Submit(client, spec);
  ASSERT_EQ(ids.size(), 3u);
  for (std::int64_t id : ids) {
    ASSERT_EQ(WaitForTerminal(client, id), "succeeded") << GetJob(client, id).dump(2);
  }
  auto read_ns = [&](const std::string& name) -> long long {
    std::vector<std::string> lines = ReadLines(out + "/" + name);
    EXPECT_EQ(lines.size(), 1u) << name;
    return lines.empty() ? 0 : std::stoll(lines[0]);
  };
  for (int i = 1; i < 3; ++i) {
    const std::string dep = names[i - 1], self = names[i];
    EXPECT_GE(read_ns(self + ".start"), read_ns(dep + ".end"))
        << self << " started before " << dep << " ended";
  }
  std::vector<json> jobs;
  for (std::int64_t id : ids) jobs.push_back(GetJob(client, id));
  for (int i = 1; i < 3; ++i) {
    const json& dep = jobs[i - 1];
    const json& self = jobs[i];
    ASSERT_GT(dep["finished_at"].get<std::int64_t>(), 0);
    EXPECT_GE(self["timeline"]["ready"].get<std::int64_t>(), dep["finished_at"].get<std::int64_t>())
        << self["name"] << " became ready before " << dep["name"] << " finished";
    EXPECT_GE(self["timeline"]["running"].get<std::int64_t>(),
              dep["finished_at"].get<std::int64_t>());
    ASSERT_EQ(self["dependencies"].size(), 1u);
  }
}

TEST_F(Lifecycle, TimeoutKillsTheWholeProcessTree) {
  auto server = StartServer("data", "4xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  const std::string pids = dir_.Sub("pids");
  const std::string spec = fmt::format(R"(kind: Job
name: sleepy
resources:
  cpu: 100m
  memory: 64Mi
timeout: 2s
script: |
  sleep 300 & echo $! >> {0}
  sleep 300 & echo $! >> {0}
  echo $$ >> {0}
  wait
)",
                                       pids);
  auto ids = Submit(client, spec);
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(WaitForTerminal(client, ids[0]), "timed_out") << GetJob(client, ids[0]).dump(2);
  std::vector<std::string> recorded = ReadLines(pids);
  ASSERT_EQ(recorded.size(), 3u) << "the script did not record its processes";
  for (const std::string& text : recorded) {
    pid_t pid = std::stoi(text);
    EXPECT_TRUE(WaitUntil([&] { return !ProcessAlive(pid); }, std::chrono::milliseconds(10'000)))
        << "process " << pid << " of the timed-out job is still running";
    // Gone entirely (not even a zombie), once whoever adopted it has reaped it.
    EXPECT_TRUE(WaitUntil([&] { return kill(pid, 0) != 0 && errno == ESRCH; },
                          std::chrono::milliseconds(10'000)))
        << "process " << pid << " still exists";
  }
  json job = GetJob(client, ids[0]);
  ASSERT_EQ(job["attempts"].size(), 1u);
  EXPECT_TRUE(job["attempts"][0]["workers"][0]["exit"]["timed_out"].get<bool>()) << job.dump(2);
}

TEST_F(Lifecycle, CancelStopsARunningJobAndASecondCancelIsRejected) {
  auto server = StartServer("data", "4xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  auto job = StartLongJob(client);
  ASSERT_TRUE(job);
  const std::int64_t id = job->id;
  const pid_t pid = job->pid;
  const std::string path = "/v1/jobs/" + std::to_string(id) + "/cancel";
  ASSERT_TRUE(ProcessAlive(pid));

  auto cancelled = client.Post(path, "", "application/json");
  ASSERT_TRUE(cancelled) << cancelled.error().message;
  EXPECT_EQ(cancelled->status, 200);
  EXPECT_EQ(cancelled->json["id"].get<std::int64_t>(), id);
  EXPECT_EQ(WaitForTerminal(client, id), "cancelled");
  EXPECT_TRUE(WaitUntil([&] { return !ProcessAlive(pid); }))
      << "the cancelled job's process " << pid << " is still running";

  // Cancelling a finished job: 409 with a JSON error.
  httplib::Client http(server->url());
  http.set_bearer_token_auth(server->token());
  auto again = http.Post(path, "", "application/json");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 409);
  json body = json::parse(again->body, nullptr, false);
  ASSERT_TRUE(body.is_object()) << again->body;
  EXPECT_EQ(body["code"], "failed_precondition") << again->body;
  EXPECT_FALSE(body["message"].get<std::string>().empty());

  // The CLI says so too, and fails.
  CommandResult cli =
      RunDrover({"--server", server->url(), "cancel", std::to_string(id)}, dir_.path());
  EXPECT_EQ(cli.exit_code, 1) << cli.out << cli.err;
  EXPECT_THAT(cli.err, HasSubstr("drover: ")) << cli.err;
}

TEST_F(Lifecycle, CancelFromTheCliStopsARunningJob) {
  auto server = StartServer("data", "4xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  auto job = StartLongJob(client);
  ASSERT_TRUE(job);
  const std::int64_t id = job->id;
  const pid_t pid = job->pid;

  CommandResult cli =
      RunDrover({"--server", server->url(), "cancel", std::to_string(id)}, dir_.path());
  EXPECT_EQ(cli.exit_code, 0) << cli.out << cli.err;
  EXPECT_THAT(cli.out, HasSubstr(fmt::format("job {} (long)", id)));
  EXPECT_EQ(WaitForTerminal(client, id), "cancelled");
  EXPECT_TRUE(WaitUntil([&] { return !ProcessAlive(pid); }))
      << "the cancelled job's process " << pid << " is still running";
}

TEST_F(Lifecycle, UnplaceableJobStaysReadyWithItsReason) {
  auto server = StartServer("data", "4xH100-80GB");
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  auto big = Submit(client, R"(kind: Job
name: big
resources:
  cpu: 100m
  memory: 64Mi
  gpus: 8
script: "true"
hold_infeasible: true
)");
  ASSERT_EQ(big.size(), 1u);
  // A job submitted later runs to the end: the scheduler has passed over `big` several times.
  auto small = Submit(client, R"(kind: Job
name: small
resources:
  cpu: 100m
  memory: 64Mi
  gpus: 1
script: "true"
)");
  ASSERT_EQ(small.size(), 1u);
  ASSERT_EQ(WaitForTerminal(client, small[0]), "succeeded");
  EXPECT_EQ(GetJob(client, big[0])["state"], "ready");

  auto explained = client.Get("/v1/jobs/" + std::to_string(big[0]) + "/explain");
  ASSERT_TRUE(explained) << explained.error().message;
  const json& body = explained->json;
  EXPECT_EQ(body["state"], "ready");
  EXPECT_EQ(body["layer"], "node fit");
  const std::string message = body["message"].get<std::string>();
  EXPECT_THAT(message, HasSubstr("8 GPUs"));
  // The user needs to know the most the cluster offers on one node: a block of 4 GPUs.
  EXPECT_THAT(message, AllOf(HasSubstr("largest"), HasSubstr("4 GPUs"))) << message;

  CommandResult cli =
      RunDrover({"--server", server->url(), "explain", std::to_string(big[0])}, dir_.path());
  EXPECT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_THAT(cli.out, HasSubstr(fmt::format("job {} is ready (node fit): ", big[0])));
  EXPECT_THAT(cli.out, HasSubstr(message));
}

}  // namespace
}  // namespace drover::integration
