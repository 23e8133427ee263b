// GET /metrics of a real server, read by the real Prometheus tools (Debian's prometheus package,
// installed by `make deps`; both tests fail when it is missing, they never skip): promtool lints
// the exposition, and a Prometheus on loopback scrapes the server with a bearer token until the
// pending count of a queue is ingested. Waits are bounded (kPrometheusDeadline) and poll.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace drover::integration {
namespace {

// Prometheus starts, scrapes every second and answers queries within this on a loaded machine.
constexpr std::chrono::milliseconds kPrometheusDeadline{60'000};

// One job that holds the server's only GPU for a minute, then two that wait for it.
constexpr char kHolder[] =
    "kind: Job\nname: holder\nresources: {cpu: 100m, memory: 64Mi, gpus: 1}\nscript: sleep 60\n";
constexpr char kWaiter[] =
    "kind: Job\nname: waiter\nresources: {cpu: 100m, memory: 64Mi, gpus: 1}\nscript: 'true'\n";

// The absolute path of `program` on PATH ("" when absent).
std::string Which(const std::string& program) {
  for (std::string dir : {"/usr/bin", "/usr/local/bin", "/bin"}) {
    const std::string path = dir + "/" + program;
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

// A TCP port free on 127.0.0.1 now (the kernel's pick for port 0).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(address);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), size) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

class MetricsTest : public IntegrationTest {
 protected:
  // A server with one GPU running kHolder, with two kWaiter jobs waiting behind it.
  void StartBusyServer() {
    server_ = StartServer("server", "1xH100-80GB");
    ASSERT_TRUE(server_->ok());
    client_.emplace(server_->Client());
    const std::vector<std::int64_t> holder = Submit(*client_, kHolder);
    ASSERT_EQ(holder.size(), 1u);
    ASSERT_EQ(WaitForState(*client_, holder[0], {"running"}), "running") << server_->Log();
    ASSERT_EQ(Submit(*client_, kWaiter).size(), 1u);
    ASSERT_EQ(Submit(*client_, kWaiter).size(), 1u);
  }

  std::unique_ptr<ServerProcess> server_;
  std::optional<api::ApiClient> client_;
};

TEST_F(MetricsTest, PromtoolFindsNothingToSayAboutTheExposition) {
  const std::string promtool = Which("promtool");
  ASSERT_FALSE(promtool.empty()) << "promtool is missing: `make deps` installs Debian's prometheus";
  StartBusyServer();
  // The waiters count as pending once the control plane has made them ready (its next cycle
  // after their submission).
  Result<api::ApiResponse> metrics = client_->Get("/metrics");
  const bool pending = WaitUntil([&] {
    metrics = client_->Get("/metrics");
    return metrics && metrics->body.find(
                          "drover_pending_workloads{cluster_queue=\"default\","
                          "status=\"active\"} 2\n") != std::string::npos;
  });
  ASSERT_TRUE(metrics) << metrics.error().ToString();
  EXPECT_TRUE(pending) << metrics->body;
  // Requests are counted by route pattern (WaitForState read GET /v1/jobs/{id}), never by path.
  EXPECT_NE(metrics->body.find("drover_api_requests_total{method=\"GET\",route=\"/v1/jobs/{id}\","
                               "code=\"200\"}"),
            std::string::npos);
  EXPECT_EQ(metrics->body.find("route=\"/v1/jobs/1\""), std::string::npos);
  const std::string exposition = dir_.path() + "/metrics.txt";
  WriteFile(exposition, metrics->body);
  // promtool reads the exposition on stdin; any line it prints is a finding.
  const std::string out = dir_.path() + "/promtool.out";
  const std::string command =
      promtool + " check metrics < '" + exposition + "' > '" + out + "' 2>&1";
  const int status = std::system(command.c_str());
  EXPECT_EQ(status, 0) << ReadFile(out);
  EXPECT_EQ(ReadFile(out), "");
}

TEST_F(MetricsTest, PrometheusScrapesTheServerWithABearerToken) {
  const std::string prometheus = Which("prometheus");
  ASSERT_FALSE(prometheus.empty())
      << "prometheus is missing: `make deps` installs Debian's prometheus";
  StartBusyServer();
  const std::string token_file = dir_.path() + "/scrape.token";
  WriteFile(token_file, server_->token());
  const std::string target = server_->url().substr(server_->url().find("//") + 2);
  const std::string config = dir_.path() + "/prometheus.yml";
  WriteFile(config,
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "scrape_configs:\n"
            "  - job_name: drover\n"
            "    authorization: {credentials_file: '" +
                token_file +
                "'}\n"
                "    static_configs: [{targets: ['" +
                target + "']}]\n");
  const int port = FreePort();
  ASSERT_NE(port, 0);
  ChildProcess process(
      {prometheus, "--config.file=" + config, "--storage.tsdb.path=" + dir_.path() + "/tsdb",
       "--web.listen-address=127.0.0.1:" + std::to_string(port)},
      dir_.path() + "/prometheus.out", dir_.path() + "/prometheus.err");
  api::ApiClient prom("http://127.0.0.1:" + std::to_string(port));

  // The target is up: the token was accepted and the exposition parsed.
  std::string last;
  const bool up = WaitUntil(
      [&] {
        auto targets = prom.Get("/api/v1/targets");
        if (!targets) return false;
        last = targets->body;
        for (const auto& active : targets->json["data"]["activeTargets"]) {
          if (active.value("health", "") == "up") return true;
        }
        return false;
      },
      kPrometheusDeadline);
  ASSERT_TRUE(up) << last << "\n" << process.Stderr();

  // The series is ingested with the server's value: two jobs wait in queue default.
  const bool ingested = WaitUntil(
      [&] {
        auto query = prom.Get(
            "/api/v1/query?query=drover_pending_workloads%7Bcluster_queue%3D%22default%22"
            "%7D");
        if (!query) return false;
        last = query->body;
        const auto& result = query->json["data"]["result"];
        return result.is_array() && result.size() == 1 &&
               result[0]["value"][1].get<std::string>() == "2";
      },
      kPrometheusDeadline);
  EXPECT_TRUE(ingested) << last;

  auto admitted = prom.Get("/api/v1/query?query=drover_admitted_workloads_total");
  ASSERT_TRUE(admitted);
  EXPECT_NE(admitted->body.find("\"cluster_queue\":\"default\""), std::string::npos)
      << admitted->body;
}

}  // namespace
}  // namespace drover::integration
