// Usage sampling end to end (docs/observability.md, "Sampling"): a real server that finds its
// GPUs through the fake libnvidia-ml (found as libnvidia-ml.so.1 on LD_LIBRARY_PATH) replaying a
// script, two sleep jobs each holding one GPU: the one on the idle GPU shows ~0 activity, the
// one on the busy GPU the scripted activity, both through GET /v1/jobs/{id}/usage, the job reply
// and `drover get`.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>

#include "drover/testing/wait_until.h"
#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// Sets an environment variable for the scope (the server started in it inherits it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

class UsageTest : public IntegrationTest {
 protected:
  // A server whose local agent finds its GPUs through the fake libnvidia-ml replaying `script`
  // (docs/observability.md, "Sampling"), sampling GPUs every 200 ms and processes every 500 ms,
  // and diagnosing attempts after 4 s of samples.
  std::unique_ptr<ServerProcess> StartWithScriptedGpus(const std::string& script) {
    const std::string lib_dir = dir_.Sub("nvml");
    std::filesystem::create_directories(lib_dir);
    std::filesystem::create_symlink(DROVER_FAKE_NVML, lib_dir + "/libnvidia-ml.so.1");
    const std::string script_path = dir_.Sub("nvml-script");
    std::ofstream(script_path) << script;
    ScopedEnv library_path("LD_LIBRARY_PATH", lib_dir);  // read when the server starts
    ScopedEnv nvml_script("DROVER_FAKE_NVML_SCRIPT", script_path);
    return std::make_unique<ServerProcess>(
        dir_.Sub("data"), dir_.path(),
        std::vector<std::string>{"--gpu-sample-interval", "200ms", "--process-sample-interval",
                                 "500ms", "--diagnosis-min-sampled", "4s"});
  }
};

TEST_F(UsageTest, SamplesOfScriptedGpusReachEachJobsUsage) {
  // GPU 0 idle, GPU 1 at 80% with 2 GiB used and 300 W; GPU 1 supports GPM (its SMs 85% busy,
  // the tensor cores at 0.4%), GPU 0 does not.
  std::string script =
      "gpus 2\n"
      "gpu 0 0 0 0 60000 0\n"
      "gpu 0 1 80 2147483648 300000 0\n"
      "gpm 0 1 85 40 0.4 30\n";
  for (int step = 1; step < 400; ++step) {
    script += fmt::format("gpu {} 1 80 2147483648 300000 {}\n", step, step * 60'000);
  }
  std::unique_ptr<ServerProcess> started = StartWithScriptedGpus(script);
  ServerProcess& server = *started;
  ASSERT_TRUE(server.ok());
  api::ApiClient client = server.Client();
  const json node = client.Get("/v1/nodes").value().json["nodes"].at(0);
  ASSERT_EQ(node["gpus"].size(), 2u) << node.dump();  // found through the fake NVML

  const std::vector<std::int64_t> ids = Submit(client, R"(kind: Job
name: sleeper
team: vision
resources: {cpu: 100m, memory: 64Mi, gpus: 1}
script: sleep 12
---
kind: Job
name: sleeper-2
team: speech
resources: {cpu: 100m, memory: 64Mi, gpus: 1}
script: sleep 12
)");
  ASSERT_EQ(ids.size(), 2u);
  std::map<int, std::int64_t> job_on_gpu;
  for (std::int64_t id : ids) {
    ASSERT_EQ(WaitForState(client, id, {"running"}), "running");
    const json job = GetJob(client, id);
    job_on_gpu[job["attempts"][0]["workers"][0]["gpus"][0].get<int>()] = id;
  }
  ASSERT_EQ(job_on_gpu.size(), 2u);
  // Samples arrive in 10 s batches; wait for the first of each job.
  auto usage_of = [&](std::int64_t id) {
    auto reply = client.Get("/v1/jobs/" + std::to_string(id) + "/usage");
    return reply ? reply->json : json();
  };
  for (std::int64_t id : ids) {
    ASSERT_TRUE(
        testing::WaitUntil([&] { return !usage_of(id).value("attempts", json::array()).empty(); },
                           std::chrono::seconds(60), std::chrono::milliseconds(200)))
        << ProcessLogs(&server, {});
  }
  const json idle = usage_of(job_on_gpu[0]);
  const json busy = usage_of(job_on_gpu[1]);
  const json& idle_summary = idle["attempts"][0]["summary"];
  const json& busy_summary = busy["attempts"][0]["summary"];
  EXPECT_GT(idle_summary["gpu_util"]["count"].get<int>(), 0) << idle.dump();
  EXPECT_EQ(idle_summary["gpu_util"]["max"].get<double>(), 0) << idle.dump();
  EXPECT_EQ(idle_summary["gpu_util_p95"].get<int>(), 0);
  EXPECT_EQ(busy_summary["gpu_util_p50"].get<int>(), 80) << busy.dump();
  EXPECT_EQ(busy_summary["peak_gpu_memory_bytes"].get<std::int64_t>(), 2147483648);
  EXPECT_GT(busy_summary["energy_joules"].get<double>(), 0);
  EXPECT_GT(busy_summary["peak_rss_bytes"].get<std::int64_t>(), 0);  // the sleep's tree
  ASSERT_FALSE(busy["buckets"].empty());
  EXPECT_EQ(busy["bucket_ms"].get<int>(), 10'000);
  EXPECT_EQ(busy["buckets"][0]["gpu_util"]["max"].get<double>(), 80);
  // GPM where the GPU has it, and the summary says which GPUs had only NVML utilization.
  EXPECT_EQ(busy_summary["activity_source"], "gpm") << busy.dump();
  EXPECT_EQ(busy_summary["sm_active"]["max"].get<double>(), 85);
  EXPECT_EQ(busy_summary["tensor_active"]["max"].get<double>(), 0.4);
  EXPECT_EQ(idle_summary["activity_source"], "utilization") << idle.dump();
  EXPECT_EQ(idle_summary["sm_active"]["count"].get<int>(), 0);

  // The job reply and `drover get` carry the summary.
  EXPECT_EQ(GetJob(client, job_on_gpu[1])["usage"][0]["summary"]["gpu_util_p50"], 80);
  CommandResult get =
      RunDrover({"--server", server.url(), "get", std::to_string(job_on_gpu[1])}, dir_.path());
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_THAT(get.out, HasSubstr("usage: GPU activity mean 80% (p50 80%, p95 80%)"));
  EXPECT_THAT(get.out, HasSubstr("SM activity 85% (occupancy 40%), tensor 0.4%, DRAM 30%"));
  const std::string metrics = client.Get("/metrics").value().body;
  EXPECT_THAT(metrics, HasSubstr("drover_gpu_sm_active_ratio{node="));
  EXPECT_THAT(metrics, HasSubstr("drover_gpu_tensor_active_ratio{node="));

  // Diagnosis: the sleep holding the idle GPU is an idle allocation; the one on the busy GPU
  // is not, whatever else it shows (its 64Mi are over-requested by a sleep).
  auto kinds_of = [&](std::int64_t id) {
    std::set<std::string> kinds;
    for (const json& finding : usage_of(id).value("findings", json::array())) {
      kinds.insert(finding.value("kind", ""));
    }
    return kinds;
  };
  ASSERT_TRUE(testing::WaitUntil([&] { return kinds_of(job_on_gpu[0]).contains("allocated_idle"); },
                                 std::chrono::seconds(60), std::chrono::milliseconds(500)))
      << usage_of(job_on_gpu[0]).dump();
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        return usage_of(job_on_gpu[1])["attempts"][0]["summary"]["last_at"].get<std::int64_t>() -
                   usage_of(job_on_gpu[1])["attempts"][0]["summary"]["first_at"]
                       .get<std::int64_t>() >=
               4'000;
      },
      std::chrono::seconds(60), std::chrono::milliseconds(500)));
  for (const std::string& kind : kinds_of(job_on_gpu[1])) {
    EXPECT_TRUE(kind.find("gpu") == std::string::npos && kind != "allocated_idle") << kind;
  }
  // Its SMs are busy without tensor work (GPM): the finding only GPM can give.
  EXPECT_TRUE(kinds_of(job_on_gpu[1]).contains("busy_without_tensor_cores"))
      << usage_of(job_on_gpu[1]).dump();
  CommandResult diagnose =
      RunDrover({"--server", server.url(), "diagnose", std::to_string(job_on_gpu[0])}, dir_.path());
  ASSERT_EQ(diagnose.exit_code, 0) << diagnose.err;
  EXPECT_THAT(diagnose.out, HasSubstr("allocated_idle: GPU activity p95 0%"));
  EXPECT_THAT(diagnose.out, HasSubstr("rule: GPU p95 <= 1%"));

  // The cluster view by team: the idle sleeper's team sees it ranked with its idle GPU time;
  // the busy one's team sees no idle allocation.
  const std::string idle_team = GetJob(client, job_on_gpu[0])["team"];
  const std::string busy_team = GetJob(client, job_on_gpu[1])["team"];
  CommandResult by_team = RunDrover(
      {"--server", server.url(), "-o", "json", "diagnose", "--team", idle_team, "--since", "1h"},
      dir_.path());
  ASSERT_EQ(by_team.exit_code, 0) << by_team.err;
  const json cluster = json::parse(by_team.out);
  EXPECT_EQ(cluster["examined"], 1) << cluster.dump();
  ASSERT_EQ(cluster["jobs"].size(), 1u) << cluster.dump();
  EXPECT_EQ(cluster["jobs"][0]["job_id"], job_on_gpu[0]);
  EXPECT_EQ(cluster["jobs"][0]["findings"][0]["kind"], "allocated_idle");
  EXPECT_GT(cluster["jobs"][0]["idle_gpu_hours"].get<double>(), 0);
  EXPECT_EQ(cluster["teams"][0]["team"], idle_team);
  CommandResult other_team =
      RunDrover({"--server", server.url(), "diagnose", "--team", busy_team}, dir_.path());
  ASSERT_EQ(other_team.exit_code, 0) << other_team.err;
  EXPECT_THAT(other_team.out, HasSubstr("1 job(s) examined"));
  EXPECT_THAT(other_team.out, ::testing::Not(HasSubstr("allocated_idle")));
  EXPECT_THAT(other_team.out, HasSubstr("teams:\n  " + busy_team + ": 0.00 GPU-hours wasted"));
  CommandResult both =
      RunDrover({"--server", server.url(), "diagnose", "7", "--team", "x"}, dir_.path());
  EXPECT_NE(both.exit_code, 0);  // --team is for the cluster view, not one job

  // An unknown job and a bad attempt are refused with JSON errors.
  auto unknown = client.Get("/v1/jobs/999/usage");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ErrorCode::kNotFound);
  auto bad = client.Get("/v1/jobs/" + std::to_string(ids[0]) + "/usage?attempt=x");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
}

// A job holding three GPUs of which only one works: its usage keeps each GPU's activity, and
// the diagnosis names the two idle ones (idle_gpus) where the attempt as a whole is not idle.
TEST_F(UsageTest, IdleGpusOfAMultiGpuJobAreFoundOneByOne) {
  std::unique_ptr<ServerProcess> started = StartWithScriptedGpus(
      "gpus 3\n"
      "gpu 0 0 0 0 60000 0\n"
      "gpu 0 1 90 2147483648 300000 0\n"
      "gpu 0 2 0 0 60000 0\n");
  ServerProcess& server = *started;
  ASSERT_TRUE(server.ok());
  api::ApiClient client = server.Client();
  const std::vector<std::int64_t> ids = Submit(client, R"(kind: Job
name: three-gpus
resources: {cpu: 100m, memory: 64Mi, gpus: 3}
script: sleep 12
)");
  ASSERT_EQ(ids.size(), 1u);
  const std::string id = std::to_string(ids[0]);
  auto usage = [&] {
    auto reply = client.Get("/v1/jobs/" + id + "/usage");
    return reply ? reply->json : json();
  };
  auto finding = [&](const std::string& kind) {
    for (const json& f : usage().value("findings", json::array())) {
      if (f.value("kind", "") == kind) return f;
    }
    return json();
  };
  ASSERT_TRUE(testing::WaitUntil([&] { return finding("idle_gpus").is_object(); },
                                 std::chrono::seconds(60), std::chrono::milliseconds(500)))
      << usage().dump() << ProcessLogs(&server, {});
  const json summary = usage()["attempts"][0]["summary"];
  ASSERT_EQ(summary["gpus"].size(), 3u) << summary.dump();
  EXPECT_THAT(finding("idle_gpus")["evidence"].get<std::string>(),
              HasSubstr("2 of its 3 GPUs had mean activity <= 1%"));
  EXPECT_THAT(finding("idle_gpus")["evidence"].get<std::string>(), HasSubstr("a mean 90.0%"));
  EXPECT_FALSE(finding("allocated_idle").is_object());
  CommandResult get = RunDrover({"--server", server.url(), "get", id}, dir_.path());
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_THAT(get.out, HasSubstr("; per GPU 0 0%, 1 90%, 2 0%"));
  CommandResult diagnose = RunDrover({"--server", server.url(), "diagnose", id}, dir_.path());
  ASSERT_EQ(diagnose.exit_code, 0) << diagnose.err;
  EXPECT_THAT(diagnose.out, HasSubstr("idle_gpus: 2 of its 3 GPUs"));
}

// A remote agent's samples travel over the agent link (POST /v1/agents/{node}/usage). Its GPUs are
// declared (no NVML UUIDs), so it samples the worker's processes only.
TEST_F(UsageTest, ARemoteAgentsProcessSamplesReachTheJobsUsage) {
  auto server = StartServer("server", "0");
  ASSERT_TRUE(server->ok());
  std::unique_ptr<ChildProcess> agent = StartAgent(*server, "remote-1", "1xA100-40GB");
  api::ApiClient client = server->Client();
  ASSERT_TRUE(testing::WaitUntil([&] {
    const json node = GetNode(client, "remote-1");
    return node.is_object() && node["state"] == "ready";
  })) << agent->Stdout()
      << agent->Stderr();
  const std::vector<std::int64_t> ids = Submit(client, R"(kind: Job
name: remote-sleeper
resources: {cpu: 100m, memory: 64Mi, gpus: 1}
script: sleep 15
)");
  ASSERT_EQ(ids.size(), 1u);
  json usage;
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        auto reply = client.Get("/v1/jobs/" + std::to_string(ids[0]) + "/usage");
        usage = reply ? reply->json : json();
        return !usage.value("attempts", json::array()).empty();
      },
      std::chrono::seconds(60), std::chrono::milliseconds(200)))
      << ProcessLogs(server.get(), {{"agent", agent.get()}});
  const json& summary = usage["attempts"][0]["summary"];
  EXPECT_GT(summary["peak_rss_bytes"].get<std::int64_t>(), 0) << usage.dump();
  EXPECT_EQ(summary["gpu_util"]["count"].get<int>(), 0);  // declared GPUs are not sampled
  // The agent's own sampling cost arrived with its batches.
  EXPECT_THAT(client.Get("/metrics").value().body,
              HasSubstr("drover_agent_sampler_cpu_seconds_total{node=\"remote-1\"} "));
}

}  // namespace
}  // namespace drover::integration
