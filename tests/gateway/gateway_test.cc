// The inference gateway with real processes on loopback: `drover gateway` in front of two or
// three stand-in engines (drover-fake-engine), driven over HTTP (docs/inference.md); one of them
// serves HTTPS with a throwaway CA made here by the openssl command.

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

class GatewayTest : public IntegrationTest {
 protected:
  // Starts a stand-in engine named `name`; its URL.
  std::string StartEngine(const std::string& name, std::vector<std::string> flags = {}) {
    const std::string ready = dir_.Sub(name + ".url");
    std::vector<std::string> argv = {DROVER_FAKE_ENGINE, "--port", "0", "--name", name,
                                     "--ready-file",     ready};
    argv.insert(argv.end(), flags.begin(), flags.end());
    engines_[name] =
        std::make_unique<ChildProcess>(argv, dir_.Sub(name + ".out"), dir_.Sub(name + ".err"));
    EXPECT_TRUE(WaitUntil([&] { return !ReadFile(ready).empty(); })) << name << " did not start";
    std::string url = ReadFile(ready);
    while (!url.empty() && url.back() == '\n') url.pop_back();
    return url;
  }

  // Starts the gateway with `config`; its URL.
  // `before`: global flags (before the subcommand); `after`: the subcommand's.
  std::string StartGateway(const std::string& config, std::vector<std::string> before = {},
                           std::vector<std::string> after = {}) {
    WriteFile(dir_.Sub("gateway.yaml"), config);
    const std::string ready = dir_.Sub("gateway.url");
    std::vector<std::string> argv = {DroverBinary()};
    argv.insert(argv.end(), before.begin(), before.end());
    for (const char* arg : {"gateway", "--listen", "127.0.0.1:0", "--config"}) argv.push_back(arg);
    argv.push_back(dir_.Sub("gateway.yaml"));
    argv.push_back("--ready-file");
    argv.push_back(ready);
    argv.insert(argv.end(), after.begin(), after.end());
    gateway_ =
        std::make_unique<ChildProcess>(argv, dir_.Sub("gateway.out"), dir_.Sub("gateway.err"));
    EXPECT_TRUE(WaitUntil([&] { return !ReadFile(ready).empty(); }))
        << "the gateway did not start: " << gateway_->Stderr();
    std::string url = ReadFile(ready);
    while (!url.empty() && url.back() == '\n') url.pop_back();
    return url;
  }

  static httplib::Result Post(const std::string& url, const std::string& path, const Json& body,
                              const httplib::Headers& headers = {}) {
    httplib::Client client(url);
    client.set_read_timeout(30);
    return client.Post(path, headers, body.dump(), "application/json");
  }

  // The engine (system_fingerprint) that answered a completion of `prompt`; "" on failure,
  // with the status in `status`.
  static std::string Complete(const std::string& url, const std::string& prompt,
                              int* status = nullptr) {
    auto result = Post(url, "/v1/completions", {{"model", "stand-in"}, {"prompt", prompt}});
    if (status != nullptr) *status = result ? result->status : 0;
    if (!result || result->status != 200) return "";
    return Json::parse(result->body).value("system_fingerprint", "");
  }

  // The text of `url`'s GET /metrics; "" when it does not answer.
  static std::string Metrics(const std::string& url) {
    httplib::Client client(url);
    auto result = client.Get("/metrics");
    return result ? result->body : "";
  }

  static Json Control(const std::string& url, const Json& settings) {
    auto result = Post(url, "/control", settings);
    return result ? Json::parse(result->body) : Json();
  }

  std::map<std::string, std::unique_ptr<ChildProcess>> engines_;
  std::unique_ptr<ChildProcess> gateway_;
};

std::string Config(const std::vector<std::string>& urls, const std::string& extra = "") {
  std::string list;
  for (const std::string& url : urls) list += (list.empty() ? "" : ", ") + url;
  return "models:\n  - name: stand-in\n" + extra + "    backends:\n      - name: local\n" +
         "        endpoints: [" + list + "]\n";
}

TEST_F(GatewayTest, LoadSpreadsAcrossEngines) {
  std::vector<std::string> urls;
  for (const char* name : {"e1", "e2", "e3"}) {
    urls.push_back(StartEngine(name, {"--ttft-ms", "30", "--tokens", "2"}));
  }
  const std::string gateway = StartGateway(Config(urls));
  std::mutex mu;
  std::map<std::string, int> counts;
  std::vector<std::thread> clients;
  for (int c = 0; c < 12; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < 10; ++i) {
        const std::string engine = Complete(gateway, "prompt " + std::to_string(c * 10 + i));
        std::lock_guard<std::mutex> lock(mu);
        ++counts[engine];
      }
    });
  }
  for (std::thread& client : clients) client.join();
  EXPECT_EQ(counts[""], 0) << "failed requests";
  for (const char* name : {"e1", "e2", "e3"}) EXPECT_GE(counts[name], 20) << name;
}

TEST_F(GatewayTest, PrefixAffinitySendsRepeatPrefixesToOneEngine) {
  std::vector<std::string> urls;
  for (const char* name : {"e1", "e2", "e3"}) urls.push_back(StartEngine(name));
  const std::string gateway =
      StartGateway(Config(urls, "    policy: prefix-affinity\n    prefix_bytes: 16\n"));
  // Sequential requests (nothing in flight, so the load bound never binds): one prefix, one
  // engine, whatever follows the prefix.
  const std::string home = Complete(gateway, "shared system prompt A");
  ASSERT_FALSE(home.empty());
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(Complete(gateway, "shared system prompt A, question " + std::to_string(i)), home);
  }
  std::set<std::string> engines;
  for (int i = 0; i < 30; ++i) engines.insert(Complete(gateway, "prefix " + std::to_string(i)));
  EXPECT_GE(engines.size(), 2u) << "different prefixes should reach different engines";
}

TEST_F(GatewayTest, KilledEngineIsRoutedAroundWithoutFailedRequests) {
  const std::string a = StartEngine("e1");
  const std::string b = StartEngine("e2");
  const std::string gateway = StartGateway(Config({a, b}));
  ASSERT_FALSE(Complete(gateway, "warm up").empty());
  engines_["e1"]->KillGroup();
  std::map<std::string, int> counts;
  for (int i = 0; i < 30; ++i) {
    int status = 0;
    ++counts[Complete(gateway, "after the kill " + std::to_string(i), &status)];
    EXPECT_EQ(status, 200) << "request " << i;
  }
  EXPECT_EQ(counts["e2"], 30);
  EXPECT_THAT(Metrics(gateway), HasSubstr("endpoint=\"" + a + "\",state=\"open\"} 1"));
}

TEST_F(GatewayTest, FailsOverToTheSecondBackendAndBackWhenTheFirstRecovers) {
  const std::string primary = StartEngine("primary");
  const std::string secondary = StartEngine("secondary");
  const std::string gateway = StartGateway(
      "models:\n  - name: stand-in\n    backends:\n"
      "      - {name: first, endpoints: [" +
      primary +
      "]}\n"
      "      - {name: second, endpoints: [" +
      secondary +
      "]}\n"
      "breaker: {failure_threshold: 2, open_ms: 300, max_open_ms: 600}\n"
      "retry_budget: {min_retries: 20}\nprobe_interval_ms: 200\n");
  EXPECT_EQ(Complete(gateway, "before"), "primary");
  Control(primary, {{"fail_rate", 1.0}, {"fail_status", 500}});
  for (int i = 0; i < 20; ++i) {
    int status = 0;
    EXPECT_EQ(Complete(gateway, "during " + std::to_string(i), &status), "secondary");
    EXPECT_EQ(status, 200);
  }
  Control(primary, {{"fail_rate", 0.0}});
  EXPECT_TRUE(WaitUntil([&] { return Complete(gateway, "after") == "primary"; }))
      << "the gateway did not return to the recovered primary";
  // Once back, it stays.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Complete(gateway, "after " + std::to_string(i)), "primary");
}

TEST_F(GatewayTest, CheapestRouteChoosesTheLowestCostBackendWhenAllowed) {
  const std::string dear = StartEngine("dear");
  const std::string cheap = StartEngine("cheap");
  const std::string gateway = StartGateway(
      "models:\n  - name: stand-in\n    backends:\n"
      "      - {name: dear, endpoints: [" +
      dear +
      "], cost_per_1k_tokens: 2.0}\n"
      "      - {name: cheap, endpoints: [" +
      cheap + "], cost_per_1k_tokens: 0.1}\n");
  EXPECT_EQ(Complete(gateway, "in order"), "dear");
  auto result = Post(gateway, "/v1/completions", {{"model", "stand-in"}, {"prompt", "x"}},
                     {{"X-Drover-Route", "cheapest"}});
  ASSERT_TRUE(result);
  EXPECT_EQ(Json::parse(result->body)["system_fingerprint"], "cheap");
}

// A socket connected to 127.0.0.1:`port`; -1 on failure.
int ConnectTo(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Reads a streamed completion over a raw socket (HTTP/1.0: the reply is close-delimited); the
// seconds from the request to the first `data:` and to the end of the stream.
std::pair<double, double> StreamTimes(int port, const std::string& body) {
  const int fd = ConnectTo(port);
  if (fd < 0) return {-1, -1};
  const std::string request =
      "POST /v1/completions HTTP/1.0\r\nHost: x\r\nContent-Type: "
      "application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    return {-1, -1};
  }
  const auto start = std::chrono::steady_clock::now();
  double first = -1;
  std::string received;
  char buffer[4096];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    received.append(buffer, static_cast<std::size_t>(n));
    if (first < 0 && received.find("data: {") != std::string::npos) {
      first = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  }
  close(fd);
  const double end =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_THAT(received, HasSubstr("data: [DONE]"));
  return {first, end};
}

TEST_F(GatewayTest, StreamingChunksArriveAsTheEngineProducesThem) {
  // Four tokens 400 ms apart: the first chunk must reach the client long before the last one is
  // produced (a gateway that buffered the stream would deliver all of them at the end).
  const std::string engine =
      StartEngine("e1", {"--ttft-ms", "10", "--tpot-ms", "400", "--tokens", "4"});
  const std::string gateway = StartGateway(Config({engine}));
  const int port = std::stoi(gateway.substr(gateway.rfind(':') + 1));
  const auto [first, end] =
      StreamTimes(port, Json{{"model", "stand-in"}, {"prompt", "p"}, {"stream", true}}.dump());
  ASSERT_GE(first, 0);
  EXPECT_GE(end - first, 0.6) << "first chunk at " << first << " s, end at " << end << " s";
}

TEST_F(GatewayTest, AClientThatLeavesMidStreamFreesTheEngineSequence) {
  const std::string engine =
      StartEngine("e1", {"--ttft-ms", "10", "--tpot-ms", "200", "--tokens", "50"});
  const std::string gateway = StartGateway(Config({engine}));
  const int port = std::stoi(gateway.substr(gateway.rfind(':') + 1));
  const int fd = ConnectTo(port);
  ASSERT_GE(fd, 0);
  const std::string body = Json{{"model", "stand-in"}, {"prompt", "p"}, {"stream", true}}.dump();
  const std::string request =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n" + body;
  ASSERT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  char buffer[4096];
  ASSERT_GT(read(fd, buffer, sizeof(buffer)), 0);  // the stream has started
  close(fd);
  // The gateway cancels its attempt, and the engine stops generating for it.
  EXPECT_TRUE(WaitUntil([&] {
    return Metrics(engine).find("vllm:num_requests_running{model_name=\"stand-in\"} 0") !=
           std::string::npos;
  }));
  EXPECT_TRUE(WaitUntil(
      [&] { return Metrics(gateway).find("outcome=\"cancelled\"} 1") != std::string::npos; }));
  auto short_reply = Post(gateway, "/v1/completions",
                          {{"model", "stand-in"}, {"prompt", "after"}, {"max_tokens", 1}});
  ASSERT_TRUE(short_reply);
  EXPECT_EQ(short_reply->status, 200);
}

TEST_F(GatewayTest, AHangingEngineTimesOutAndIsRoutedAround) {
  const std::string hung = StartEngine("hung", {"--hang-rate", "1"});
  const std::string good = StartEngine("good", {"--tokens", "2"});
  const std::string gateway = StartGateway(
      Config({hung, good}) + "backend_timeout_ms: 1000\nretry_budget: {min_retries: 10}\n");
  // The router draws between two idle endpoints at random (the daemon seeds it at random), so
  // the hung one is picked in about half of the requests: each of its timeouts is retried on the
  // good one, and its third opens its breaker. 60 requests leave fewer than three picks of the
  // hung one with a chance of about 1e-15; 10 left it with 5%.
  const std::string open_breaker = "endpoint=\"" + hung + "\",state=\"open\"} 1";
  int sent = 0;
  for (; sent < 60 && Metrics(gateway).find(open_breaker) == std::string::npos; ++sent) {
    int status = 0;
    EXPECT_EQ(Complete(gateway, "q" + std::to_string(sent), &status), "good");
    EXPECT_EQ(status, 200);
  }
  EXPECT_THAT(Metrics(gateway), HasSubstr(open_breaker)) << "after " << sent << " requests";
}

TEST_F(GatewayTest, HostileInputIsRefusedWithOpenAiErrors) {
  const std::string engine = StartEngine("e1");
  const std::string gateway =
      StartGateway(Config({engine}) + "limits: {max_body_bytes: 4096, max_json_depth: 8}\n");
  httplib::Client client(gateway);
  auto big = client.Post("/v1/completions", std::string(10000, ' '), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  auto deep = client.Post("/v1/completions", std::string(20, '[') + std::string(20, ']'),
                          "application/json");
  ASSERT_TRUE(deep);
  EXPECT_EQ(deep->status, 400);
  EXPECT_EQ(Json::parse(deep->body)["error"]["code"], "json_too_deep");
  auto garbage = client.Post("/v1/completions", "{not json", "application/json");
  ASSERT_TRUE(garbage);
  EXPECT_EQ(garbage->status, 400);
  EXPECT_EQ(Json::parse(garbage->body)["error"]["code"], "invalid_json");
  auto unknown = client.Post("/v1/completions", R"({"model":"nope"})", "application/json");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(Json::parse(unknown->body)["error"]["type"], "invalid_request_error");
  // Nothing of it reached the engine, and the gateway still serves.
  EXPECT_EQ(Complete(gateway, "still fine"), "e1");
}

TEST_F(GatewayTest, TeamsAreTakenFromTheCallersKeyAndAccounted) {
  const std::string engine = StartEngine("e1");
  WriteFile(dir_.Sub("ml.key"), "key-of-ml\n");
  const std::string gateway = StartGateway(
      Config({engine}) + "teams:\n  - {name: ml, key_file: " + dir_.Sub("ml.key") + "}\n");
  const Json body = {{"model", "stand-in"}, {"prompt", "hello"}};
  auto anonymous = Post(gateway, "/v1/completions", body);
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401);
  auto ml = Post(gateway, "/v1/completions", body, {{"Authorization", "Bearer key-of-ml"}});
  ASSERT_TRUE(ml);
  EXPECT_EQ(ml->status, 200);
  const std::string metrics = Metrics(gateway);
  EXPECT_THAT(metrics,
              HasSubstr("drover_gateway_requests_total{model=\"stand-in\",backend=\"local\","
                        "team=\"ml\",outcome=\"ok\"} 1"));
  EXPECT_THAT(metrics, Not(HasSubstr("key-of-ml")));
}

// The value of the unlabelled sample `name` in an exposition; -1 when absent.
double MetricValue(const std::string& metrics, const std::string& name) {
  const std::size_t at = metrics.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(metrics.substr(at + name.size() + 2));
}

// Sends `request` on the keep-alive socket `fd` and reads one reply framed by Content-Length;
// "" when the connection fails.
std::string Exchange(int fd, const std::string& request) {
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) return "";
  std::string received;
  char buffer[4096];
  while (true) {
    const std::size_t head_end = received.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      const std::size_t length_at = received.find("Content-Length: ");
      const std::size_t length =
          length_at < head_end ? std::stoul(received.substr(length_at + 16)) : 0;
      if (received.size() >= head_end + 4 + length) return received;
    }
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n <= 0) return "";
    received.append(buffer, static_cast<std::size_t>(n));
  }
}

std::string CompletionRequest(const std::string& version, const std::string& prompt,
                              bool stream = false) {
  const std::string body =
      Json{{"model", "stand-in"}, {"prompt", prompt}, {"stream", stream}}.dump();
  return "POST /v1/completions HTTP/" + version +
         "\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

TEST_F(GatewayTest, AtMaxConnectionsNewClientsWaitWhileConnectedOnesAreServed) {
  const std::string engine = StartEngine("e1", {"--tokens", "2"});
  const std::string gateway = StartGateway(Config({engine}) + "limits: {max_connections: 2}\n");
  const int port = std::stoi(gateway.substr(gateway.rfind(':') + 1));
  const int first = ConnectTo(port);
  const int second = ConnectTo(port);
  ASSERT_GE(first, 0);
  ASSERT_GE(second, 0);
  const std::string scrape = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  EXPECT_TRUE(WaitUntil([&] {
    const std::string metrics = Exchange(first, scrape);
    return MetricValue(metrics, "drover_gateway_client_connections") == 2 &&
           MetricValue(metrics, "drover_gateway_accept_paused") == 1;
  }));
  // A third client's connection waits in the backlog with its request...
  const int third = ConnectTo(port);
  ASSERT_GE(third, 0);
  const std::string request = CompletionRequest("1.0", "third");
  ASSERT_EQ(write(third, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  // ...while the connected clients are served as before.
  EXPECT_THAT(Exchange(second, CompletionRequest("1.1", "second")), HasSubstr("HTTP/1.1 200"));
  EXPECT_EQ(MetricValue(Exchange(first, scrape), "drover_gateway_client_connections"), 2);
  // One leaves: the third is accepted and answered.
  close(second);
  std::string received;
  char buffer[4096];
  for (ssize_t n; (n = read(third, buffer, sizeof(buffer))) > 0;) {
    received.append(buffer, static_cast<std::size_t>(n));
  }
  EXPECT_THAT(received, HasSubstr("200 OK"));
  EXPECT_THAT(received, HasSubstr("\"system_fingerprint\":\"e1\""));
  close(third);
  EXPECT_TRUE(WaitUntil(
      [&] { return MetricValue(Exchange(first, scrape), "drover_gateway_accept_paused") == 0; }));
  close(first);
}

TEST_F(GatewayTest, ASlowStreamingClientPausesTheBackendInsteadOfBufferingTheStream) {
  // About 8 MiB of stream, produced as fast as the engine can; the client takes 4 KiB a
  // millisecond through a small receive buffer, so the gateway must hold back the rest.
  constexpr int kTokens = 2000, kTokenBytes = 4096;
  constexpr std::int64_t kBound = 64 << 10;
  const std::string engine =
      StartEngine("e1", {"--ttft-ms", "1", "--tpot-ms", "0", "--tokens", std::to_string(kTokens),
                         "--token-bytes", std::to_string(kTokenBytes)});
  const std::string gateway = StartGateway(
      Config({engine}) + "limits: {stream_buffer_bytes: " + std::to_string(kBound) + "}\n");
  const int port = std::stoi(gateway.substr(gateway.rfind(':') + 1));
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  const int receive_buffer = 4096;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  const std::string request = CompletionRequest("1.0", "p", true);
  ASSERT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  std::int64_t received = 0;
  std::string tail;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) {
    received += n;
    tail = (tail + std::string(buffer, static_cast<std::size_t>(n)));
    if (tail.size() > 64) tail = tail.substr(tail.size() - 64);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the slow reader
  }
  close(fd);
  EXPECT_THAT(tail, HasSubstr("data: [DONE]"));
  EXPECT_GT(received, std::int64_t{kTokens} * kTokenBytes);
  const std::string metrics = Metrics(gateway);
  EXPECT_GE(MetricValue(metrics, "drover_gateway_stream_pauses_total"), 1);
  // The bound, overshot by at most what evhttp had already read from the backend when it paused
  // (one socket read, 16 KiB, and the chunk in hand), far below the stream's 8 MiB.
  const double peak = MetricValue(metrics, "drover_gateway_stream_buffer_peak_bytes");
  EXPECT_GT(peak, 0);
  EXPECT_LE(peak, static_cast<double>(2 * kBound));
}

TEST_F(GatewayTest, ANameTheResolverNeverAnswersDelaysOnlyItsOwnRequests) {
  // The nameserver: a UDP socket that takes queries and never answers.
  const int nameserver = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  ASSERT_EQ(bind(nameserver, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  socklen_t length = sizeof(address);
  getsockname(nameserver, reinterpret_cast<sockaddr*>(&address), &length);
  const std::string engine = StartEngine("e1", {"--tokens", "2"});
  const std::string gateway = StartGateway(
      Config({engine}) +
      "  - name: far\n    backends:\n"
      "      - {name: far, endpoints: [http://never-answered.example:80], model: stand-in}\n"
      "dns: {nameservers: [127.0.0.1:" +
      std::to_string(ntohs(address.sin_port)) + "], timeout_ms: 8000, attempts: 1}\n");
  std::atomic<int> far_status = -1;
  std::thread far([&] {
    auto result = Post(gateway, "/v1/completions", {{"model", "far"}, {"prompt", "x"}});
    far_status = result ? result->status : 0;
  });
  // The gateway is waiting for the name...
  EXPECT_TRUE(WaitUntil([&] {
    char query[512];
    return recv(nameserver, query, sizeof(query), MSG_DONTWAIT) > 0;
  }));
  // ...and serves the other model meanwhile, well within the resolver's 8 s timeout.
  httplib::Client client(gateway);
  client.set_read_timeout(4);
  auto near = client.Post("/v1/completions", Json{{"model", "stand-in"}, {"prompt", "y"}}.dump(),
                          "application/json");
  ASSERT_TRUE(near);
  EXPECT_EQ(near->status, 200);
  EXPECT_EQ(far_status, -1) << "the far request should still be waiting for its name";
  far.join();
  EXPECT_EQ(far_status, 503);  // the name failed, and no other backend is left to try
  close(nameserver);
}

TEST_F(GatewayTest, HttpsProvidersAreVerifiedAndGetTheKeyWhichIsNeverShown) {
  // A throwaway CA and a certificate for localhost signed by it.
  const std::string d = dir_.Sub("tls");
  const std::string make =
      "set -e; mkdir -p " + d + "; cd " + d +
      "; openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1"
      " -subj /CN=drover-test-ca -keyout ca.key -out ca.pem 2>/dev/null"
      "; openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
      " -subj /CN=localhost -keyout server.key -out server.csr 2>/dev/null"
      "; printf 'subjectAltName=DNS:localhost\\n' > san"
      "; openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1"
      " -extfile san -out server.pem 2>/dev/null";
  ASSERT_EQ(std::system(make.c_str()), 0);
  const std::string provider =
      StartEngine("provider", {"--host", "localhost", "--tls-cert", d + "/server.pem", "--tls-key",
                               d + "/server.key", "--api-key", "sk-provider-secret"});
  ASSERT_EQ(provider.rfind("https://localhost:", 0), 0u) << provider;
  WriteFile(dir_.Sub("provider.key"), "sk-provider-secret\n");
  const std::string backend = "endpoints: [" + provider +
                              "], api_key_file: " + dir_.Sub("provider.key") + ", model: stand-in";
  const std::string gateway = StartGateway(
      "models:\n"
      "  - name: stand-in\n    backends:\n"
      "      - {name: provider, " +
      backend + ", ca_file: " + d +
      "/ca.pem}\n"
      "  - name: unverified\n    backends:\n"
      "      - {name: provider, " +
      backend + "}\n");
  EXPECT_EQ(Complete(gateway, "over tls"), "provider");
  // The system's store does not know the throwaway CA: the handshake fails before a byte of the
  // request is sent, and no other backend is left to try.
  auto unverified = Post(gateway, "/v1/completions", {{"model", "unverified"}, {"prompt", "x"}});
  ASSERT_TRUE(unverified);
  EXPECT_EQ(unverified->status, 503);
  EXPECT_THAT(unverified->body, Not(HasSubstr("sk-provider-secret")));
  EXPECT_THAT(Metrics(gateway), Not(HasSubstr("sk-provider-secret")));
  EXPECT_THAT(gateway_->Stderr() + gateway_->Stdout(), Not(HasSubstr("sk-provider-secret")));
}

// A stand-in for the server's services API: GET /v1/services lists service "llm" with the
// endpoints set by SetEndpoints; POST /v1/services/llm/load records the load signals.
class FakeServices {
 public:
  FakeServices() {
    server_.Get("/v1/services", [this](const httplib::Request& request, httplib::Response& reply) {
      std::lock_guard<std::mutex> lock(mu_);
      authorization_ = request.get_header_value("Authorization");
      const Json services = {
          {"services", {{{"name", "llm"}, {"models", {"stand-in"}}, {"endpoints", endpoints_}}}}};
      reply.set_content(services.dump(), "application/json");
    });
    server_.Post("/v1/services/llm/load",
                 [this](const httplib::Request& request, httplib::Response& reply) {
                   std::lock_guard<std::mutex> lock(mu_);
                   loads_.push_back(Json::parse(request.body));
                   reply.set_content("{}", "application/json");
                 });
    port_ = server_.bind_to_any_port("127.0.0.1");
    serving_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeServices() { Stop(); }
  void Stop() {
    server_.stop();
    if (serving_.joinable()) serving_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void SetEndpoints(Json endpoints) {
    std::lock_guard<std::mutex> lock(mu_);
    endpoints_ = std::move(endpoints);
  }
  // Whether some load signal posted so far satisfies `condition`.
  bool AnyLoad(const std::function<bool(const Json&)>& condition) {
    std::lock_guard<std::mutex> lock(mu_);
    return std::any_of(loads_.begin(), loads_.end(), condition);
  }
  std::string authorization() {
    std::lock_guard<std::mutex> lock(mu_);
    return authorization_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread serving_;
  std::mutex mu_;
  Json endpoints_ = Json::array();
  std::vector<Json> loads_;
  std::string authorization_;
};

TEST_F(GatewayTest, RoutesToTheServersReadyEndpointsAndPostsTheirLoad) {
  const std::string ready = StartEngine("ready");
  const std::string not_ready = StartEngine("not-ready");
  FakeServices services;
  services.SetEndpoints({{{"job", 7}, {"url", ready}, {"node", "n1"}, {"ready", true}},
                         {{"job", 8}, {"url", not_ready}, {"node", "n1"}, {"ready", false}}});
  WriteFile(dir_.Sub("token"), "the-token\n");
  const std::string gateway = StartGateway(
      "models:\n  - name: stand-in\n    backends:\n      - {name: llm, service: llm}\n"
      "poll_interval_ms: 100\n",
      {"--server", services.url()}, {"--token-file", dir_.Sub("token")});
  EXPECT_TRUE(WaitUntil([&] { return Complete(gateway, "x") == "ready"; }));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(Complete(gateway, "y" + std::to_string(i)), "ready");
  EXPECT_TRUE(WaitUntil([&] {
    return services.AnyLoad([](const Json& load) {
      return load.value("requests", 0) > 0 && load.contains("in_flight") &&
             load.contains("waiting") && load.contains("window_ms");
    });
  }));
  EXPECT_EQ(services.authorization(), "Bearer the-token");
  services.Stop();
  // The server is gone: the gateway keeps serving its last list.
  EXPECT_EQ(Complete(gateway, "z"), "ready");
}

TEST_F(GatewayTest, RequestsWaitForAServiceScaledToZeroUpToTheBound) {
  const std::string engine = StartEngine("replica");
  FakeServices services;  // no endpoints yet: scaled to zero
  const std::string gateway = StartGateway(
      "models:\n  - name: stand-in\n    max_waiting: 1\n    max_wait_ms: 30000\n"
      "    backends:\n      - {name: llm, service: llm}\npoll_interval_ms: 100\n",
      {"--server", services.url()});
  int status = 0;
  std::string answered_by;
  std::thread waiting([&] { answered_by = Complete(gateway, "first", &status); });
  // The waiting request is reported to the autoscaler.
  EXPECT_TRUE(WaitUntil([&] {
    return services.AnyLoad([](const Json& load) { return load.value("waiting", 0) == 1; });
  }));
  // The bound: a second request finds the queue full and is answered 503 at once.
  int second = 0;
  Complete(gateway, "second", &second);
  EXPECT_EQ(second, 503);
  services.SetEndpoints({{{"job", 9}, {"url", engine}, {"node", "n1"}, {"ready", true}}});
  waiting.join();
  EXPECT_EQ(status, 200);
  EXPECT_EQ(answered_by, "replica");
}

TEST_F(GatewayTest, DemandForAServiceAtZeroIsPostedAtOnceNotAtTheNextPoll) {
  FakeServices services;  // no endpoints: scaled to zero
  // A poll interval far longer than the test: only the immediate post can carry the demand.
  const std::string gateway = StartGateway(
      "models:\n  - name: stand-in\n    max_waiting: 4\n    max_wait_ms: 1000\n"
      "    backends:\n      - {name: llm, service: llm}\npoll_interval_ms: 600000\n",
      {"--server", services.url()});
  int status = 0;
  std::thread waiting([&] { Complete(gateway, "wake up", &status); });
  EXPECT_TRUE(WaitUntil([&] {
    return services.AnyLoad([](const Json& load) { return load.value("waiting", 0) == 1; });
  }));
  waiting.join();
  EXPECT_EQ(status, 503);  // no replica came within max_wait_ms
}

}  // namespace
}  // namespace drover::integration
