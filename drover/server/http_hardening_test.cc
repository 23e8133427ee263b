// One bad client cannot hurt the others (issue 15, "Connections" and "Limits"): the HTTP server
// over an in-process control plane with a fake runtime, on loopback. Slow, idle and long-polling
// clients are played with raw sockets and cpp-httplib clients; every test stops by itself.

#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "drover/api/client.h"
#include "drover/api/request.h"
#include "drover/codec/json.h"
#include "drover/server/http_server.h"
#include "drover/store/store.h"
#include "drover/testing/fake_clock.h"
#include "drover/testing/fake_runtime.h"
#include "drover/testing/loopback.h"
#include "drover/testing/temp_dir.h"
#include "drover/testing/wait_until.h"

namespace drover::server {
namespace {

using nlohmann::json;
using testing::WaitUntil;

// A generous bound for an answer on a loaded 2-core machine; the server on main took 5 s or
// more (or never answered) in each scenario below.
constexpr auto kPromptly = std::chrono::milliseconds(2000);

// A TCP connection to 127.0.0.1:`port`, closed on destruction; -1 when it could not connect.
class Socket {
 public:
  explicit Socket(int port) : fd_(testing::ConnectLoopback(port)) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  bool Send(const std::string& bytes) {
    return fd_ >= 0 && ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
                           static_cast<ssize_t>(bytes.size());
  }
  // Everything the server sends until it closes the connection (or `timeout` passes).
  std::string ReadToClose(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    timeval tv{static_cast<time_t>(timeout.count() / 1000),
               static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    std::string out;
    char buffer[4096];
    while (true) {
      ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      out.append(buffer, static_cast<std::size_t>(n));
    }
    return out;
  }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_;
};

// Connections that trickle a request's header one byte at a time (slowloris), from one thread,
// until destroyed.
class Slowloris {
 public:
  Slowloris(int port, int connections) {
    for (int i = 0; i < connections; ++i) sockets_.push_back(std::make_unique<Socket>(port));
    thread_ = std::thread([this] {
      for (auto& socket : sockets_) socket->Send("GET /v1/health HTTP/1.1\r\nHost: x\r\n");
      while (!stop_) {
        for (auto& socket : sockets_) socket->Send("X");
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }
  ~Slowloris() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::vector<std::unique_ptr<Socket>> sockets_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class HttpHardeningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ControlPlaneOptions options;
    options.poll_interval_ms = 1;
    options.idle_cycle_ms = 10;
    options.agent_timeout_ms = kAgentTimeoutMs;
    plane_ = std::make_unique<ControlPlane>(store::NewMemoryStore(), clock_, options);
    model::Node node;
    node.name = NodeId("node-a");
    node.address = "127.0.0.1";
    node.cpu_millis = 8'000;
    node.memory_bytes = std::int64_t{64} << 30;
    auto runtime = std::make_unique<testing::FakeRuntime>();
    runtime_ = runtime.get();
    plane_->AddLocalNode(node, std::move(runtime), runs_.path());
    ASSERT_TRUE(plane_->Start());
    auto token =
        plane_->CreateToken(model::AdminIdentity("alice"), 0, model::AdminIdentity("test"));
    ASSERT_TRUE(token) << token.error().ToString();
    token_ = token->token;
  }

  void Serve(const HttpOptions& options = {}) {
    auto http = HttpServer::Start(*plane_, "127.0.0.1", 0, options);
    ASSERT_TRUE(http) << http.error().ToString();
    http_ = *std::move(http);
  }

  void TearDown() override {
    JoinFollowers();
    if (http_) http_->Stop();
    plane_.reset();
  }

  int Port() const { return http_->port(); }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(http_->port()); }

  // A job whose only worker is launched and never writes a line: a log follower waits for it.
  JobId RunningJob() {
    auto submitted = plane_->Submit(
        "kind: Job\nname: quiet\nresources: {cpu: 1, memory: 64Mi}\ncommand: [\"true\"]\n",
        spec::ParseOptions{}, "", model::AdminIdentity("alice"));
    EXPECT_TRUE(submitted) << submitted.error().ToString();
    EXPECT_TRUE(WaitUntil([&] { return runtime_->Launched().size() == 1; }));
    return submitted->jobs.at(0).id;
  }

  // Starts `count` followers of `job`'s log, each waiting up to `wait_ms` of the fake clock
  // (JoinFollowers moves it on to end them).
  void FollowLogs(JobId job, int count, DurationMs wait_ms = api::kMaxLongPollMs) {
    for (int i = 0; i < count; ++i) {
      followers_.emplace_back([this, job, wait_ms] {
        httplib::Client client(Url());
        client.set_bearer_token_auth(token_);
        client.set_read_timeout(60, 0);
        client.Get("/v1/jobs/" + std::to_string(job.value()) +
                   "/logs?wait_ms=" + std::to_string(wait_ms));
      });
    }
  }
  void JoinFollowers() {
    clock_.Advance(api::kMaxLongPollMs);
    for (std::thread& follower : followers_) follower.join();
    followers_.clear();
  }

  // How long GET /v1/health takes on a fresh connection (a minute when it does not answer).
  std::chrono::milliseconds HealthLatency() {
    auto start = std::chrono::steady_clock::now();
    api::ApiClient client(Url(), /*timeout_ms=*/10 * kMillisPerSecond);
    auto reply = client.Get("/v1/health");
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    // In the test's XML report (--gtest_output=xml), for docs/benchmarks.md.
    ::testing::Test::RecordProperty("health_ms", reply ? std::to_string(took.count()) : "none");
    return reply ? took : std::chrono::minutes(1);
  }

  static constexpr DurationMs kAgentTimeoutMs = 5 * kMillisPerSecond;
  std::string token_;  // an admin's (alice)
  testing::FakeClock clock_;
  testing::TempDir runs_;
  testing::FakeRuntime* runtime_ = nullptr;
  std::unique_ptr<ControlPlane> plane_;
  std::unique_ptr<HttpServer> http_;
  std::vector<std::thread> followers_;
};

// Finding 1: 33 log followers took every request thread, and health waited for one to end.
TEST_F(HttpHardeningTest, LogFollowersDoNotDelayHealth) {
  Serve();
  FollowLogs(RunningJob(), 33);
  ASSERT_TRUE(WaitUntil([&] { return http_->Stats().long_polls == 33; }));
  EXPECT_LT(HealthLatency(), kPromptly);
  JoinFollowers();
}

// Finding 1: 40 connections trickling header bytes held every request thread.
TEST_F(HttpHardeningTest, SlowlorisDoesNotStopTheServer) {
  Serve();
  Slowloris slowloris(Port(), 40);
  ASSERT_TRUE(WaitUntil([&] { return http_->Stats().connections >= 40; }));
  EXPECT_LT(HealthLatency(), kPromptly);
}

// Finding 1: idle sockets kept a remote agent from reaching the server, and its node was lost.
// Here 150 idle sockets and 40 slowloris connections are open on the API listener and 40 log
// followers wait (from one address, as a flood from many would pass the per-client bound),
// while the agent registers and polls on its own listener; the fake clock moves
// the agent's silence up to the agent timeout twice, and the node stays.
TEST_F(HttpHardeningTest, AgentKeepsItsNodeWhileUsersFloodTheServer) {
  HttpOptions options;
  options.agent_host = "127.0.0.1";
  options.agent_port = 0;
  // All from one address here; a flood from many addresses passes the per-client bound.
  options.limits.max_client_connections = options.limits.max_connections;
  Serve(options);
  std::vector<std::unique_ptr<Socket>> idle;
  for (int i = 0; i < 150; ++i) idle.push_back(std::make_unique<Socket>(Port()));
  Slowloris slowloris(Port(), 40);
  FollowLogs(RunningJob(), 40);
  ASSERT_TRUE(WaitUntil([&] { return http_->Stats().long_polls == 40; }));
  EXPECT_LT(HealthLatency(), kPromptly);

  api::ApiClient agent("http://127.0.0.1:" + std::to_string(http_->agent_port()),
                       /*timeout_ms=*/2 * kMillisPerSecond);
  model::Node node;
  node.name = NodeId("node-r");
  node.cpu_millis = 4'000;
  node.memory_bytes = std::int64_t{8} << 30;
  auto registered =
      agent.Post("/v1/agents/register", codec::DumpJson(codec::ToJson(node)), "application/json");
  ASSERT_TRUE(registered) << registered.error().ToString();
  agent.SetBearer(registered->json.at("credential").get<std::string>());
  for (int round = 0; round < 2; ++round) {
    clock_.Advance(kAgentTimeoutMs - kMillisPerSecond);
    auto polled = agent.Get("/v1/agents/node-r/commands?wait_ms=0");
    ASSERT_TRUE(polled) << polled.error().ToString();
  }
  clock_.Advance(kAgentTimeoutMs - kMillisPerSecond);
  plane_->RunOnce();
  for (const api::NodeStatus& status : plane_->Nodes()) {
    EXPECT_FALSE(status.lost) << status.node.name.value();
  }
  JoinFollowers();
}

// The API listener's limits answer with the API's JSON errors.
class HttpLimitsTest : public HttpHardeningTest {
 protected:
  // The status and parsed JSON body of `method path` with `body` on a raw connection, sending
  // `content_type` when not empty.
  std::pair<int, json> Call(const std::string& method, const std::string& path,
                            const std::string& body, const std::string& content_type = "") {
    httplib::Client client(Url());
    httplib::Headers headers;
    httplib::Request request;
    request.method = method;
    request.path = path;
    request.body = body;
    request.set_header("Authorization", "Bearer " + token_);
    if (!content_type.empty()) request.set_header("Content-Type", content_type);
    if (!body.empty() || method == "POST") {
      request.set_header("Content-Length", std::to_string(body.size()));
    }
    auto result = client.send(request);
    if (!result) return {0, json()};
    return {result->status, json::parse(result->body, nullptr, /*allow_exceptions=*/false)};
  }
};

// Finding 3: a 20 MB body was accepted. Over --max-body (1 MiB by default) it is 413, naming the
// limit and its flag (1Mi), and nothing is created.
TEST_F(HttpLimitsTest, BodyOverTheLimitIs413NamingIt) {
  Serve();
  std::string spec = "kind: Job\nname: big\ncommand: [\"true\"]\n# ";
  spec += std::string(2 << 20, 'x') + "\n";
  auto [status, body] = Call("POST", "/v1/jobs", spec, "application/yaml");
  EXPECT_EQ(status, 413);
  ASSERT_TRUE(body.is_object());
  EXPECT_EQ(body["code"], "resource_exhausted");
  EXPECT_NE(body["message"].get<std::string>().find("1Mi"), std::string::npos) << body;
  EXPECT_NE(body["message"].get<std::string>().find("--max-body"), std::string::npos) << body;
  EXPECT_TRUE(plane_->ListJobs({}).empty());
}

// Finding 3: without a Content-Type a body over 8 KB got 413 "request failed with HTTP 413". The
// Content-Type does not matter: the body is read as YAML (JSON is YAML) whatever it says.
TEST_F(HttpLimitsTest, BodyIsReadWhateverTheContentType) {
  Serve();
  std::string spec = "kind: Job\nname: padded\nresources: {cpu: 1, memory: 64Mi}\n";
  spec += "command: [\"true\"]\n# " + std::string(16 << 10, 'x') + "\n";
  for (std::string type : {"", "text/plain", "application/x-www-form-urlencoded"}) {
    auto [status, body] = Call("POST", "/v1/jobs", spec, type);
    EXPECT_EQ(status, 201) << "Content-Type '" << type << "': " << body;
  }
  auto [status, body] =
      Call("POST", "/v1/jobs", R"({"kind": "Job", "name": "j", "command": ["true"]})", "");
  EXPECT_EQ(status, 201) << body;
}

// Finding 3: a POST without a body got "request failed with HTTP 400".
TEST_F(HttpLimitsTest, MissingBodyIsNamed) {
  Serve();
  auto [status, body] = Call("POST", "/v1/jobs", "");
  EXPECT_EQ(status, 400);
  ASSERT_TRUE(body.is_object());
  EXPECT_EQ(body["code"], "invalid_argument");
  EXPECT_NE(body["message"].get<std::string>().find("missing"), std::string::npos) << body;
}

// A wrong method on a known path is 405 naming the methods it allows; an unknown path is 404.
TEST_F(HttpLimitsTest, WrongMethodIs405) {
  Serve();
  auto [status, body] = Call("PUT", "/v1/jobs", "{}");
  EXPECT_EQ(status, 405);
  ASSERT_TRUE(body.is_object());
  EXPECT_EQ(body["code"], "invalid_argument");
  EXPECT_NE(body["message"].get<std::string>().find("GET, POST"), std::string::npos) << body;
  auto [missing, missing_body] = Call("GET", "/v1/nothing", "");
  EXPECT_EQ(missing, 404);
  EXPECT_EQ(missing_body["code"], "not_found");
}

// A request whose headers do not arrive within --header-timeout is answered 408 and closed,
// however steadily its bytes trickle.
TEST_F(HttpLimitsTest, TricklingHeadersAre408AfterTheHeaderTimeout) {
  HttpOptions options;
  options.limits.header_timeout_ms = 300;
  Serve(options);
  Socket socket(Port());
  ASSERT_TRUE(socket.Send("GET /v1/health HTTP/1.1\r\nHost: x\r\n"));
  std::string answer = socket.ReadToClose();
  EXPECT_EQ(answer.rfind("HTTP/1.1 408", 0), 0u) << answer;
  EXPECT_NE(answer.find("--header-timeout"), std::string::npos) << answer;
  EXPECT_TRUE(WaitUntil([&] { return http_->Stats().connections == 0; }));
}

// Connections over the per-client bound are answered 503 naming the flag and closed; those
// within it are served.
TEST_F(HttpLimitsTest, ConnectionsOverTheClientLimitAre503) {
  HttpOptions options;
  options.limits.max_client_connections = 3;
  Serve(options);
  std::vector<std::unique_ptr<Socket>> held;
  for (int i = 0; i < 3; ++i) held.push_back(std::make_unique<Socket>(Port()));
  ASSERT_TRUE(WaitUntil([&] { return http_->Stats().connections == 3; }));
  Socket refused(Port());
  std::string answer = refused.ReadToClose();
  EXPECT_EQ(answer.rfind("HTTP/1.1 503", 0), 0u) << answer;
  EXPECT_NE(answer.find("--max-client-connections"), std::string::npos) << answer;
  held.pop_back();
  ASSERT_TRUE(WaitUntil([&] { return http_->Stats().connections == 2; }));
  EXPECT_LT(HealthLatency(), kPromptly);
}

// Log follows over --max-long-polls are answered 429 at once; other requests are not affected.
TEST_F(HttpLimitsTest, LongPollsOverTheLimitAre429) {
  HttpOptions options;
  options.limits.max_long_polls = 2;
  Serve(options);
  const JobId job = RunningJob();
  FollowLogs(job, 2);
  ASSERT_TRUE(WaitUntil([&] { return http_->Stats().long_polls == 2; }));
  auto [status, body] =
      Call("GET", "/v1/jobs/" + std::to_string(job.value()) + "/logs?wait_ms=3000", "");
  EXPECT_EQ(status, 429);
  EXPECT_NE(body["message"].get<std::string>().find("--max-long-polls"), std::string::npos);
  auto [plain, plain_body] = Call("GET", "/v1/jobs/" + std::to_string(job.value()) + "/logs", "");
  EXPECT_EQ(plain, 200);
  JoinFollowers();
}

// Several requests on one connection, sent at once (pipelined), are answered in order.
TEST_F(HttpLimitsTest, PipelinedRequestsAreAnsweredInOrder) {
  Serve();
  Socket socket(Port());
  ASSERT_TRUE(
      socket.Send("GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"
                  "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                  token_ +
                  "\r\nContent-Length: 0\r\n\r\n"
                  "GET /v1/nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  std::string answer = socket.ReadToClose();
  std::size_t ok = answer.find("HTTP/1.1 200");
  std::size_t missing_body = answer.find("HTTP/1.1 400");
  std::size_t not_found = answer.find("HTTP/1.1 404");
  EXPECT_EQ(ok, 0u) << answer;
  EXPECT_LT(ok, missing_body) << answer;
  EXPECT_LT(missing_body, not_found) << answer;
  EXPECT_NE(not_found, std::string::npos) << answer;
}

// The load test (tests/load) saw health wait 4 s behind submissions that held every thread of
// the ordinary lane while they waited for the control plane. Health is answered on the event
// thread: here every ordinary thread is blocked until the test lets go, and health still answers.
class BlockingHandler final : public HttpHandler {
 public:
  Lane LaneFor(const api::Request& request) const override {
    return request.path == "/v1/health" ? Lane::kInline : Lane::kShort;
  }
  api::Response Serve(const api::Request& request) override {
    if (request.path == "/v1/health") return api::JsonResponse(200, nlohmann::json{{"ok", true}});
    ++blocked_;
    while (!release_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return api::JsonResponse(200, nlohmann::json{{"released", true}});
  }
  std::atomic<int> blocked_{0};
  std::atomic<bool> release_{false};
};

TEST(HttpFrontTest, AnInlineRouteAnswersWhileEveryLaneThreadIsBusy) {
  BlockingHandler handler;
  HttpLimits limits;
  limits.threads = 2;
  auto front = HttpFront::Bind(handler, limits, "127.0.0.1", 0, "", -1);
  ASSERT_TRUE(front) << front.error().ToString();
  (*front)->Start();
  std::vector<std::unique_ptr<Socket>> busy;
  for (int i = 0; i < 4; ++i) {
    busy.push_back(std::make_unique<Socket>((*front)->port()));
    ASSERT_TRUE(busy.back()->Send("GET /v1/jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  }
  ASSERT_TRUE(WaitUntil([&] { return handler.blocked_ == 2; }));  // both threads, two queued
  Socket health((*front)->port());
  ASSERT_TRUE(health.Send("GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  const std::string answer = health.ReadToClose(std::chrono::seconds(10));
  EXPECT_EQ(handler.blocked_, 2);  // the lane was still busy when health answered
  EXPECT_NE(answer.find("HTTP/1.1 200"), std::string::npos) << answer;
  handler.release_ = true;
  for (auto& socket : busy) EXPECT_NE(socket->ReadToClose().find("released"), std::string::npos);
  (*front)->Stop();
}

}  // namespace
}  // namespace drover::server
