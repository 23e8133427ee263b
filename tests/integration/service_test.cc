// Services with a real server and real processes (docs/inference.md): a Service of two replicas
// of a tiny HTTP server becomes two ready endpoints; a killed replica is replaced and ready
// again; a load signal over the target scales up within max; `drover service delete` stops all;
// a burst reclaims the GPU a checkpointing training job borrowed, which resumes after it.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// A --service-ports range of 20 ports for `slot` (0 or 1) that differs per test program run:
// replicas' ports are the lowest free among the server's own replicas, not probed on the machine,
// so two servers of concurrent test programs (ctest -j, integration.postgres) must not share one.
// 21000-28999: below the failover tests' 29000-29999 and the kernel's ephemeral ports.
int ServicePortsFrom(int slot) { return 21000 + ((getpid() % 200) * 2 + slot) * 20; }
std::string ServicePorts(int slot) {
  return fmt::format("{}-{}", ServicePortsFrom(slot), ServicePortsFrom(slot) + 19);
}

class Services : public IntegrationTest {
 protected:
  void SetUp() override {
    pids_ = dir_.Sub("pids");
    std::filesystem::create_directories(pids_);
    server_ = StartServer("data", "2xH100-80GB", {"--service-ports", ServicePorts(0)});
    ASSERT_TRUE(server_->ok());
  }

  // The service's view (GET /v1/services/echo), null on error.
  json Echo() {
    api::ApiClient client = server_->Client();
    auto response = client.Get("/v1/services/echo");
    return response ? response->json : json();
  }

  // The ids of the ready endpoints of `service`.
  static std::set<std::int64_t> ReadyJobs(const json& service) {
    std::set<std::int64_t> ready;
    if (!service.is_object()) return ready;
    for (const json& e : service["endpoints"]) {
      if (e["ready"].get<bool>()) ready.insert(e["job"].get<std::int64_t>());
    }
    return ready;
  }

  std::string pids_;
  std::unique_ptr<ServerProcess> server_;
};

constexpr char kService[] = R"(kind: Service
name: echo
models: [tiny]
template:
  command: [python3, {script}]
  resources: {{cpu: 100m, memory: 256Mi}}
  env: {{PID_DIR: {pids}}}
replicas: {{min: 2, max: 3}}
readiness: {{path: /health, interval: 200ms, failure_threshold: 1}}
liveness: {{path: /health, interval: 1s, failure_threshold: 3, initial_delay: 1s}}
autoscaling: {{target_in_flight_per_replica: 4, scale_up_delay: 0s, scale_down_delay: 1h}}
)";

TEST_F(Services, ReplicasBecomeReadyAreReplacedAndScaleUp) {
  const std::string file = dir_.Sub("echo.yaml");
  WriteFile(file,
            fmt::format(kService,
                        fmt::arg("script", SourceDir() + "/tests/integration/testdata/services/"
                                                         "health_server.py"),
                        fmt::arg("pids", pids_)));
  CommandResult submit = RunDrover({"--server", server_->url(), "submit", file}, dir_.path());
  ASSERT_EQ(submit.exit_code, 0) << submit.out << submit.err;
  EXPECT_THAT(submit.out, HasSubstr("service echo"));

  // Two ready endpoints, each answering its probe path.
  json echo;
  ASSERT_TRUE(WaitUntil([&] {
    echo = Echo();
    return ReadyJobs(echo).size() == 2;
  })) << echo.dump(2)
      << server_->Log();
  EXPECT_EQ(echo["replicas"]["desired"], 2);
  EXPECT_EQ(echo["state"], "ready");
  std::set<std::string> urls;
  for (const json& e : echo["endpoints"]) {
    const std::string url = e["url"];
    const int port = e["port"];
    EXPECT_EQ(url, fmt::format("http://127.0.0.1:{}", port));
    EXPECT_GE(port, ServicePortsFrom(0));
    EXPECT_LE(port, ServicePortsFrom(0) + 19);
    EXPECT_TRUE(e["protected"].get<bool>()) << "the first min replicas are protected";
    urls.insert(url);
    httplib::Client http(url);
    auto health = http.Get("/health");
    ASSERT_TRUE(health) << url;
    EXPECT_EQ(health->status, 200);
  }
  EXPECT_EQ(urls.size(), 2u) << "each replica has its own port";

  // Kill one replica's process: it is replaced, and two are ready again.
  const json victim = echo["endpoints"][0];
  const std::int64_t victim_job = victim["job"];
  const std::string pid_text = ReadFile(fmt::format("{}/{}", pids_, victim["port"].get<int>()));
  ASSERT_FALSE(pid_text.empty());
  ASSERT_EQ(::kill(std::stoi(pid_text), SIGKILL), 0);
  ASSERT_TRUE(WaitUntil([&] {
    echo = Echo();
    const std::set<std::int64_t> ready = ReadyJobs(echo);
    return ready.size() == 2 && !ready.contains(victim_job);
  })) << echo.dump(2);
  api::ApiClient client = server_->Client();
  EXPECT_TRUE(IsTerminalState(WaitForTerminal(client, victim_job)));

  // A load over the target (42 requests at 4 per replica ask for 11): 3 replicas, the max.
  ASSERT_TRUE(WaitUntil([&] {
    auto posted = client.Post("/v1/services/echo/load", R"({"in_flight": 40, "waiting": 2})",
                              "application/json");
    EXPECT_TRUE(posted) << (posted ? "" : posted.error().ToString());
    echo = Echo();
    return ReadyJobs(echo).size() == 3;
  })) << echo.dump(2);
  EXPECT_EQ(echo["replicas"]["desired"], 3);
  ASSERT_TRUE(echo["last_scaling"].is_object());
  EXPECT_THAT(echo["last_scaling"]["reason"].get<std::string>(), HasSubstr("in flight 40"));
  // The third replica is interruptible and carries the autoscaler's decision.
  std::int64_t third = 0;
  for (const json& e : echo["endpoints"]) {
    if (!e["protected"].get<bool>()) third = e["job"];
  }
  ASSERT_NE(third, 0) << echo.dump(2);
  auto decisions = client.Get(fmt::format("/v1/jobs/{}/decisions", third));
  ASSERT_TRUE(decisions);
  EXPECT_THAT(decisions->json.dump(), HasSubstr("scaled"));

  // Hostile load signals change nothing and name the field.
  auto bad = client.Post("/v1/services/echo/load", R"({"in_flight": -1})", "application/json");
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, HasSubstr("in_flight"));

  CommandResult list = RunDrover({"--server", server_->url(), "services"}, dir_.path());
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("echo"));
  CommandResult get =
      RunDrover({"--server", server_->url(), "service", "get", "echo"}, dir_.path());
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_THAT(get.out, HasSubstr(fmt::format("http://127.0.0.1:{}", ServicePortsFrom(0))));

  CommandResult removed =
      RunDrover({"--server", server_->url(), "service", "delete", "echo"}, dir_.path());
  ASSERT_EQ(removed.exit_code, 0) << removed.err;
  for (const json& e : echo["endpoints"]) {
    EXPECT_EQ(WaitForTerminal(client, e["job"].get<std::int64_t>()), "cancelled");
  }
  auto gone = client.Get("/v1/services/echo");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ErrorCode::kNotFound);
}

TEST_F(Services, SubmitShowsTheFilesDiagnosticsAndCreatesNothing) {
  const std::string file = dir_.Sub("bad.yaml");
  WriteFile(file,
            "kind: Service\nname: bad\nmodels: [m]\ntemplate: {script: x, timeout: 1h}\n"
            "replicas: {min: 3, max: 2}\n");
  CommandResult submit = RunDrover({"--server", server_->url(), "submit", file}, dir_.path());
  EXPECT_EQ(submit.exit_code, 2) << submit.out << submit.err;
  EXPECT_THAT(submit.err, HasSubstr("bad.yaml:4:32: error: template.timeout: not allowed"));
  EXPECT_THAT(submit.err, HasSubstr("bad.yaml:5:17: error: replicas.min: min (3) must not exceed"));
  api::ApiClient client = server_->Client();
  auto services = client.Get("/v1/services");
  ASSERT_TRUE(services);
  EXPECT_TRUE(services->json["services"].empty());
}

// docs/inference.md, "Training and serving together", with the example's own files
// (examples/serving.yaml of stand-in engines, examples/serving-policy.yaml) and a checkpointing
// training job: a burst scales the service to 2 replicas, which reclaims the GPU the training
// job borrowed (preempted with notice, its checkpoint written); when the burst ends the second
// replica is scaled down and the training job resumes from its checkpoint.
class ServingAndTraining : public IntegrationTest {};

TEST_F(ServingAndTraining, ABurstReclaimsTheBorrowedGpuAndTrainingResumesFromItsCheckpoint) {
  // The service's command is drover-fake-engine, found on the servers' PATH, beside drover.
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  struct RestorePath {
    const std::string& path;
    ~RestorePath() { setenv("PATH", path.c_str(), 1); }
  } restore{path};
  const std::string bin = std::filesystem::path(DroverBinary()).parent_path().string();
  setenv("PATH", (bin + ":" + path).c_str(), 1);
  auto server = StartServer("data", "2xH100-80GB",
                            {"--service-ports", ServicePorts(1), "--policy",
                             SourceDir() + "/examples/serving-policy.yaml"});
  ASSERT_TRUE(server->ok());
  api::ApiClient client = server->Client();
  const std::string train_log = dir_.Sub("train.log");
  const auto train = Submit(
      client, fmt::format("kind: Job\nname: train\nqueue: training\ninterruptible: true\n"
                          "checkpoint_dir: {}\nresources: {{cpu: 100m, memory: 64Mi, gpus: 1}}\n"
                          "command: [sh, {}/tests/integration/testdata/preemption/"
                          "checkpointing_worker.sh, {}, \"100000\"]\n",
                          dir_.Sub("ckpt"), SourceDir(), train_log));
  ASSERT_EQ(train.size(), 1u);
  ASSERT_EQ(WaitForState(client, train[0], {"running"}), "running") << server->Log();
  // Training has saved a step before the burst, so that resuming from it is visible (a worker
  // preempted before its first step, as on a loaded CI machine, resumes at 0 and proves nothing).
  ASSERT_TRUE(WaitUntil([&] {
    const std::string saved = ReadFile(dir_.Sub("ckpt") + "/step");
    return !saved.empty() && std::stoi(saved) >= 1;
  })) << ReadFile(train_log);
  CommandResult submit = RunDrover(
      {"--server", server->url(), "submit", SourceDir() + "/examples/serving.yaml"}, dir_.path());
  ASSERT_EQ(submit.exit_code, 0) << submit.out << submit.err;
  const auto chat = [&] {
    auto response = client.Get("/v1/services/chat");
    return response ? response->json : json();
  };
  const auto ready = [](const json& service) {
    std::size_t count = 0;
    if (service.is_object()) {
      for (const json& e : service["endpoints"]) count += e["ready"].get<bool>() ? 1 : 0;
    }
    return count;
  };
  json service;
  ASSERT_TRUE(WaitUntil([&] { return ready(service = chat()) == 1; })) << service.dump(2);

  // The burst: 16 in flight at 8 per replica asks for 2; the second reclaims the training GPU.
  const auto report = [&](int in_flight) {
    auto posted = client.Post("/v1/services/chat/load",
                              fmt::format(R"({{"in_flight": {}}})", in_flight), "application/json");
    EXPECT_TRUE(posted) << (posted ? "" : posted.error().ToString());
  };
  ASSERT_TRUE(WaitUntil([&] {
    report(16);
    return ready(service = chat()) == 2;
  })) << service.dump(2)
      << server->Log();
  json job = GetJob(client, train[0]);
  ASSERT_GE(job["attempts"].size(), 1u) << job.dump(2);
  EXPECT_EQ(job["attempts"][0]["outcome"], "preempted") << job.dump(2);
  EXPECT_THAT(job["attempts"][0]["cause"].get<std::string>(), HasSubstr("reclaim"));
  EXPECT_THAT(ReadFile(train_log), HasSubstr("stopped at"));

  // The burst ends: after scale_down_delay (3 s) one replica again, and training resumes.
  ASSERT_TRUE(WaitUntil(
      [&] {
        report(0);
        job = GetJob(client, train[0]);
        return job["attempts"].size() == 2 && job["state"] == "running";
      },
      std::chrono::milliseconds(60'000)))
      << job.dump(2) << chat().dump(2);
  EXPECT_EQ(ready(chat()), 1u);
  EXPECT_EQ(job["attempts"][1].value("resumed", false), true) << job.dump(2);
  ASSERT_TRUE(
      WaitUntil([&] { return ReadFile(train_log).find("resumed at") != std::string::npos; }));
  // At most the step in progress is lost: it resumes at the step it saved when stopped.
  const std::string log = ReadFile(train_log);
  std::smatch stopped, resumed;
  ASSERT_TRUE(std::regex_search(log, stopped, std::regex(R"(stopped at (\d+))"))) << log;
  ASSERT_TRUE(std::regex_search(log, resumed, std::regex(R"(resumed at (\d+))"))) << log;
  EXPECT_GE(std::stoi(resumed[1]), std::stoi(stopped[1]) - 1) << log;
  EXPECT_GT(std::stoi(resumed[1]), 0) << log;
}

}  // namespace
}  // namespace drover::integration
