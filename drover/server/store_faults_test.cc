// A faulty disk under the HTTP API (issue 15, "Fault injection"): the control plane over a
// testing::FaultyStore, served on loopback. A write that stalls holds the control plane's
// mutex for as long as it stalls: health still answers, and every request made meanwhile is
// answered, correctly and once, when the write completes. A write that fails stops the plane as
// on_store_failure documents: changes are refused with a JSON error, and a new plane over the
// same store recovers every job and runs each once. The plane's loop is driven by RunOnce.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "drover/api/client.h"
#include "drover/server/http_server.h"
#include "drover/testing/fake_clock.h"
#include "drover/testing/fake_runtime.h"
#include "drover/testing/faulty_store.h"
#include "drover/testing/temp_dir.h"
#include "drover/testing/wait_until.h"

namespace drover::server {
namespace {

using ::testing::HasSubstr;

constexpr char kJob[] = R"({"kind": "Job", "name": "train", "command": ["true"],
  "resources": {"cpu": "100m", "memory": "64Mi"}})";

class StoreFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override { OpenPlane(); }
  void TearDown() override { Close(); }

  // A plane without its loop thread over a FaultyStore of store_ (kept across calls: a new
  // plane over it is a restarted server), served by HTTP on a free port.
  void OpenPlane() {
    Close();
    auto faulty = std::make_unique<testing::FaultyStore>(*store_);
    faulty_ = faulty.get();
    ControlPlaneOptions options;
    options.run_loop = false;
    options.on_store_failure = [this](const Error& error) { store_failures_.push_back(error); };
    plane_ = std::make_unique<ControlPlane>(std::move(faulty), clock_, options);
    model::Node node;
    node.name = NodeId("node-a");
    node.cpu_millis = 8'000;
    node.memory_bytes = std::int64_t{1} << 30;
    auto runtime = std::make_unique<testing::FakeRuntime>();
    runtime_ = runtime.get();
    plane_->AddLocalNode(node, std::move(runtime), runs_.path());
    ASSERT_TRUE(plane_->Start());
    auto token =
        plane_->CreateToken(model::AdminIdentity("alice"), 0, model::AdminIdentity("test"));
    ASSERT_TRUE(token) << token.error().ToString();
    token_ = token->token;
    auto http = HttpServer::Start(*plane_, "127.0.0.1", 0);
    ASSERT_TRUE(http) << http.error().ToString();
    http_ = *std::move(http);
  }

  void Close() {
    if (http_) http_->Stop();
    http_.reset();
    plane_.reset();
  }

  // A client whose requests give up after a minute: a request that blocks is a failure, not a
  // hung test.
  api::ApiClient Client() const {
    api::ApiClient client("http://127.0.0.1:" + std::to_string(http_->port()), kMillisPerMinute);
    client.SetBearer(token_);
    return client;
  }

  // Submits kJob with `key` in another thread; the reply once it comes.
  std::future<Result<api::ApiResponse>> SubmitAsync(const std::string& key) {
    return std::async(std::launch::async, [this, key] {
      return Client().Post("/v1/jobs", kJob, "application/json", {{"Idempotency-Key", key}});
    });
  }

  std::map<JobId, int> LaunchesPerJob() const {
    std::map<JobId, int> count;
    for (const model::LaunchSpec& launch : runtime_->Launched()) ++count[launch.key.job];
    return count;
  }

  std::string token_;  // an admin's (alice), for the plane open now
  testing::FakeClock clock_;
  testing::TempDir runs_;
  std::unique_ptr<store::Store> store_ = store::NewMemoryStore();
  testing::FaultyStore* faulty_ = nullptr;  // owned by plane_
  std::vector<Error> store_failures_;
  testing::FakeRuntime* runtime_ = nullptr;  // owned by plane_
  std::unique_ptr<ControlPlane> plane_;
  std::unique_ptr<HttpServer> http_;
};

TEST_F(StoreFaultsTest, WhileAWriteStallsHealthAnswersAndEveryWaitingRequestIsAnsweredOnce) {
  api::ApiClient client = Client();
  auto first = client.Post("/v1/jobs", kJob, "application/json", {{"Idempotency-Key", "k0"}});
  ASSERT_TRUE(first) << first.error().ToString();

  faulty_->SetStalled(true);
  auto stalled = SubmitAsync("k1");
  ASSERT_TRUE(testing::WaitUntil([&] { return faulty_->stalled_applies() == 1; }));
  // Health does not need the control plane's mutex, which the stalled write holds.
  auto health = client.Get("/v1/health");
  ASSERT_TRUE(health) << health.error().ToString();
  EXPECT_EQ(health->json["status"], "ok");
  // A read and a retry of the stalled submission (same key), made meanwhile.
  auto read = std::async(std::launch::async, [this] { return Client().Get("/v1/jobs/1"); });
  auto retried = SubmitAsync("k1");

  faulty_->SetStalled(false);
  auto submitted = stalled.get();
  ASSERT_TRUE(submitted) << submitted.error().ToString();
  EXPECT_EQ(submitted->status, 201);
  auto again = retried.get();
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(again->json["jobs"], submitted->json["jobs"]);
  EXPECT_EQ(again->json["existing"], true);
  auto job = read.get();
  ASSERT_TRUE(job) << job.error().ToString();
  EXPECT_EQ(job->json["name"], "train");

  plane_->RunOnce();
  EXPECT_EQ(LaunchesPerJob(), (std::map<JobId, int>{{JobId(1), 1}, {JobId(2), 1}}));
  EXPECT_TRUE(store_failures_.empty());
}

TEST_F(StoreFaultsTest, AFailedWriteRefusesChangesWithAJsonErrorAndARestartRecoversAll) {
  api::ApiClient client = Client();
  ASSERT_TRUE(client.Post("/v1/jobs", kJob, "application/json", {{"Idempotency-Key", "k0"}}));
  // The disk is full: the submission's write fails and the plane stops.
  faulty_->FailNthApply(1, ErrorCode::kResourceExhausted);
  auto refused = client.Post("/v1/jobs", kJob, "application/json", {{"Idempotency-Key", "k1"}});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
  ASSERT_EQ(store_failures_.size(), 1u);
  EXPECT_THAT(store_failures_[0].message, HasSubstr("injected failure"));
  // Every later change is refused, though the disk is fine again; reads and health answer.
  auto later = client.Post("/v1/jobs", kJob, "application/json", {{"Idempotency-Key", "k2"}});
  ASSERT_FALSE(later);
  EXPECT_EQ(later.error().code, ErrorCode::kUnavailable);
  EXPECT_TRUE(client.Get("/v1/health"));
  EXPECT_TRUE(client.Get("/v1/jobs"));
  plane_->RunOnce();
  EXPECT_TRUE(runtime_->Launched().empty());

  // Restarted over the same store: the stored job runs once; the refused ones never existed,
  // and their keys are free for the client's retry, which creates each once.
  OpenPlane();
  api::ApiClient restarted = Client();
  for (const char* key : {"k1", "k1", "k0"}) {
    ASSERT_TRUE(restarted.Post("/v1/jobs", kJob, "application/json", {{"Idempotency-Key", key}}));
  }
  plane_->RunOnce();
  EXPECT_EQ(LaunchesPerJob(), (std::map<JobId, int>{{JobId(1), 1}, {JobId(2), 1}}));
  EXPECT_EQ(store_failures_.size(), 1u);
}

}  // namespace
}  // namespace drover::server
