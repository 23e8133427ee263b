// The HTTP server over an in-process control plane with a fake runtime and the memory store:
// the reply of POST /v1/jobs (docs/api.md).

#include "drover/server/http_server.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "drover/api/client.h"
#include "drover/testing/fake_clock.h"

namespace drover::server {
namespace {

using nlohmann::json;

// A runtime whose launches block until Release(): while they block, the control loop waits for
// its batch of launches (ControlPlane::CarryOutEffects), without the control plane's mutex.
class GatedRuntime final : public agent::WorkerRuntime {
 public:
  struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    bool released = false;
    int entered = 0;  // launches that began

    void Release() {
      {
        std::lock_guard lock(mu);
        released = true;
      }
      cv.notify_all();
    }
    int Entered() {
      std::lock_guard lock(mu);
      return entered;
    }
  };

  explicit GatedRuntime(std::shared_ptr<Gate> gate) : gate_(std::move(gate)) {}
  Status Launch(const model::LaunchSpec&) override {
    std::unique_lock lock(gate_->mu);
    ++gate_->entered;
    gate_->cv.wait(lock, [&] { return gate_->released; });
    return OkStatus();
  }
  Status Stop(const model::WorkerKey&, const model::StopRequest&) override { return OkStatus(); }
  std::vector<model::WorkerKey> Adopt(const std::vector<model::WorkerKey>&) override { return {}; }
  std::vector<model::WorkerEvent> Poll() override { return {}; }

 private:
  std::shared_ptr<Gate> gate_;
};

bool WaitUntil(const std::function<bool()>& condition) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return condition();
}

// `count` one-CPU jobs j1..jCOUNT in one file.
std::string JobsFile(int count) {
  std::string text;
  for (int i = 1; i <= count; ++i) {
    if (i > 1) text += "---\n";
    text += "kind: Job\nname: j" + std::to_string(i) +
            "\nresources: {cpu: 1, memory: 64Mi}\ncommand: [\"true\"]\n";
  }
  return text;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ControlPlaneOptions options;
    options.poll_interval_ms = 1;
    options.idle_cycle_ms = 10;
    plane_ = std::make_unique<ControlPlane>(store::NewMemoryStore(), clock_, options);
    model::Node node;
    node.name = NodeId("node-a");
    node.address = "127.0.0.1";
    node.cpu_millis = 64'000;
    node.memory_bytes = std::int64_t{64} << 30;
    plane_->AddLocalNode(node, std::make_unique<GatedRuntime>(gate_), "/nonexistent");
    ASSERT_TRUE(plane_->Start());
    auto token =
        plane_->CreateToken(model::AdminIdentity("alice"), 0, model::AdminIdentity("test"));
    ASSERT_TRUE(token) << token.error().ToString();
    token_ = token->token;
    auto http = HttpServer::Start(*plane_, "127.0.0.1", 0);
    ASSERT_TRUE(http) << http.error().ToString();
    http_ = *std::move(http);
  }

  void TearDown() override {
    gate_->Release();  // lets the loop finish its launches, so that it can stop
    if (http_) http_->Stop();
    plane_.reset();
  }

  std::string Url() const { return "http://127.0.0.1:" + std::to_string(http_->port()); }

  std::string token_;  // an admin's, alice
  testing::FakeClock clock_;
  std::shared_ptr<GatedRuntime::Gate> gate_ = std::make_shared<GatedRuntime::Gate>();
  std::unique_ptr<ControlPlane> plane_;
  std::unique_ptr<HttpServer> http_;
};

// The reply is built from what the submission returned: it lists every job, in the file's
// order, with its id, name and state as the submission left it, and asks the control plane for
// nothing more. The loop's first launch blocks (holding the control plane's mutex) until the
// reply has come; a handler that asked the control plane for each job, as it once did, would
// wait for that launch whenever the loop got there first.
TEST_F(HttpServerTest, SubmitReplyListsEveryJobWithoutWaitingForLaunches) {
  constexpr int kJobs = 500;
  api::ApiClient client(Url());
  client.SetBearer(token_);
  auto reply = client.Post("/v1/jobs", JobsFile(kJobs), "application/yaml",
                           {{"X-Drover-File", "jobs.yaml"}});
  ASSERT_TRUE(reply) << reply.error().ToString();
  EXPECT_EQ(reply->status, 201);
  ASSERT_TRUE(reply->json.is_object()) << reply->body;
  EXPECT_EQ(reply->json.size(), 2u) << reply->body;  // jobs and existing, nothing else
  EXPECT_EQ(reply->json["existing"], false);
  const json& jobs = reply->json["jobs"];
  ASSERT_TRUE(jobs.is_array());
  ASSERT_EQ(jobs.size(), static_cast<std::size_t>(kJobs));
  const std::int64_t first = jobs[0]["id"].get<std::int64_t>();
  for (int i = 0; i < kJobs; ++i) {
    EXPECT_EQ(
        jobs[i],
        (json{{"id", first + i}, {"name", "j" + std::to_string(i + 1)}, {"state", "pending"}}))
        << i;
  }
  // The loop goes on to place them: as many as the node's 64 CPUs hold (launched several at a
  // time: ControlPlaneOptions::max_parallel_launches).
  EXPECT_TRUE(WaitUntil([&] { return gate_->Entered() >= 1; }));
  gate_->Release();
  EXPECT_TRUE(WaitUntil([&] { return gate_->Entered() == 64; }));
  auto job = plane_->GetJob(JobId(first));
  ASSERT_TRUE(job);
  EXPECT_EQ(job->spec.name, "j1");
  EXPECT_EQ(job->spec.owner, "alice");
}

}  // namespace
}  // namespace drover::server
