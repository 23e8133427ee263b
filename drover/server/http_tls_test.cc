// HttpFront over TLS (issue 16, "TLS"): a throwaway CA and a server certificate for 127.0.0.1,
// made with the openssl command in a temporary directory; ApiClient (api::ConnectTls, OpenSSL)
// and raw sockets as clients, on loopback.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "drover/api/client.h"
#include "drover/api/tls_client.h"
#include "drover/server/http_front.h"
#include "drover/server/tls_stream.h"
#include "drover/testing/loopback.h"
#include "drover/testing/temp_dir.h"
#include "drover/testing/test_ca.h"
#include "drover/testing/wait_until.h"

namespace drover::server {
namespace {

using testing::WaitUntil;

// Health inline; /big answers 4 MiB (more than a socket buffer: partial TLS writes); /echo
// answers the size of the body it got.
class TestHandler final : public HttpHandler {
 public:
  Lane LaneFor(const api::Request& request) const override {
    return request.path == "/v1/health" ? Lane::kInline : Lane::kShort;
  }
  api::Response Serve(const api::Request& request) override {
    if (request.path == "/big") {
      api::Response response;
      response.status = 200;
      response.content_type = "text/plain";
      response.body = std::string(4 << 20, 'x');
      return response;
    }
    if (request.path == "/echo") {
      return api::JsonResponse(200, nlohmann::json{{"bytes", request.body.size()}});
    }
    return api::JsonResponse(200, nlohmann::json{{"ok", true}});
  }
};

class HttpTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::MakeTestCa(dir_.path(), "ca", /*with_server=*/true))
        << "the openssl command failed";
    ASSERT_TRUE(testing::MakeTestCa(dir_.path(), "other-ca", /*with_server=*/false));
  }

  void Start(HttpLimits limits = {}) {
    auto front = HttpFront::Bind(handler_, limits, "127.0.0.1", 0, "127.0.0.1", 0, Files());
    ASSERT_TRUE(front) << front.error().ToString();
    front_ = *std::move(front);
    front_->Start();
  }
  void TearDown() override {
    if (front_) front_->Stop();
  }

  TlsFiles Files() const { return TlsFiles{dir_.Sub("server.pem"), dir_.Sub("server.key")}; }
  std::string Url(int port) const { return fmt::format("https://127.0.0.1:{}", port); }
  api::ApiClient Client(const std::string& ca = "ca.pem") const {
    return api::ApiClient(Url(front_->port()), 10 * kMillisPerSecond,
                          ca.empty() ? "" : dir_.Sub(ca), api::ConnectTls);
  }

  testing::TempDir dir_{"drover-tls"};
  TestHandler handler_;
  std::unique_ptr<HttpFront> front_;
};

TEST_F(HttpTlsTest, ClientWithTheCaIsServedOnBothListeners) {
  Start();
  api::ApiClient client = Client();
  for (int i = 0; i < 3; ++i) {  // one connection, kept alive
    auto health = client.Get("/v1/health");
    ASSERT_TRUE(health) << health.error().ToString();
    EXPECT_EQ(health->json["ok"], true);
  }
  api::ApiClient agent(Url(front_->agent_port()), 10 * kMillisPerSecond, dir_.Sub("ca.pem"),
                       api::ConnectTls);
  auto health = agent.Get("/v1/health");
  ASSERT_TRUE(health) << health.error().ToString();
}

// The certificate names IP 127.0.0.1 and DNS localhost: a URL by either name is served (the
// name sent as SNI and checked against the DNS entry); "127.1" reaches the same address, but as
// a name the certificate does not carry, so the client refuses the server before sending
// anything.
TEST_F(HttpTlsTest, TheCertificateMustNameTheUrlsHost) {
  Start();
  const auto client_for = [&](const std::string& host) {
    return api::ApiClient(fmt::format("https://{}:{}", host, front_->port()), 10 * kMillisPerSecond,
                          dir_.Sub("ca.pem"), api::ConnectTls);
  };
  auto by_name = client_for("localhost").Get("/v1/health");
  ASSERT_TRUE(by_name) << by_name.error().ToString();
  auto other_name = client_for("127.1").Get("/v1/health");
  ASSERT_FALSE(other_name);
  EXPECT_EQ(other_name.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(other_name.error().message.find(fmt::format(
                "TLS: the certificate of https://127.1:{} does not name its host", front_->port())),
            std::string::npos)
      << other_name.error().message;
}

TEST_F(HttpTlsTest, LargeBodiesCrossInBothDirections) {
  Start();
  api::ApiClient client = Client();
  auto big = client.Get("/big");
  ASSERT_TRUE(big) << big.error().ToString();
  EXPECT_EQ(big->body.size(), std::size_t{4} << 20);
  auto echo = client.Post("/echo", std::string(512 << 10, 'y'), "text/plain");
  ASSERT_TRUE(echo) << echo.error().ToString();
  EXPECT_EQ(echo->json["bytes"], 512 << 10);
}

TEST_F(HttpTlsTest, CertificateFromAnotherCaFailsVerificationNamingTheFix) {
  Start();
  for (const std::string ca : {"other-ca.pem", ""}) {  // the wrong CA; the system's store
    api::ApiClient client = Client(ca);
    auto health = client.Get("/v1/health");
    ASSERT_FALSE(health);
    EXPECT_EQ(health.error().code, ErrorCode::kUnavailable);
    EXPECT_NE(
        health.error().message.find("TLS: certificate verify failed for " + Url(front_->port())),
        std::string::npos)
        << health.error().message;
    EXPECT_NE(health.error().message.find("pass --ca or DROVER_CA"), std::string::npos);
  }
  auto missing = Client("no-such-ca.pem").Get("/v1/health");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("no-such-ca.pem"), std::string::npos)
      << missing.error().message;
}

TEST_F(HttpTlsTest, PlainHttpToTheTlsPortIsAnsweredAndTheServerServesOn) {
  HttpLimits limits;
  limits.header_timeout_ms = 2 * kMillisPerSecond;
  Start(limits);
  api::ApiClient plain(fmt::format("http://127.0.0.1:{}", front_->port()), 10 * kMillisPerSecond);
  auto refused = plain.Get("/v1/health");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("https://"), std::string::npos) << refused.error().message;
  // Bytes that are neither HTTP nor TLS: the connection is closed, within the header timeout.
  int garbage = testing::ConnectLoopback(front_->port());
  ASSERT_GE(garbage, 0);
  ASSERT_EQ(::send(garbage, "\x16\x03\x01\x00\x05hello", 10, MSG_NOSIGNAL), 10);
  timeval tv{10, 0};
  ::setsockopt(garbage, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char buffer[256];
  while (::recv(garbage, buffer, sizeof(buffer), 0) > 0) {
  }
  ::close(garbage);
  EXPECT_TRUE(WaitUntil([&] { return front_->Stats().connections == 0; }));
  auto health = Client().Get("/v1/health");
  EXPECT_TRUE(health) << health.error().ToString();
}

// A client that opens TCP and sends nothing (or half a ClientHello) holds a socket, not the
// event thread: others are served meanwhile, and the stalled ones are closed after the header
// timeout.
TEST_F(HttpTlsTest, StalledHandshakesDoNotBlockOthersAndAreClosedAtTheHeaderTimeout) {
  HttpLimits limits;
  // Long enough for 40 connects and a full handshake and request on a loaded machine (under the
  // sanitizers) before the first stalled connection expires; short enough to wait out.
  limits.header_timeout_ms = 3 * kMillisPerSecond;
  Start(limits);
  std::vector<int> stalled;
  for (int i = 0; i < 40; ++i) {
    stalled.push_back(testing::ConnectLoopback(front_->port()));
    ASSERT_GE(stalled.back(), 0);
    if (i % 2 == 1) {
      ASSERT_EQ(::send(stalled.back(), "\x16\x03\x01\x02\x00\x01", 6, MSG_NOSIGNAL), 6);
    }
  }
  ASSERT_TRUE(WaitUntil([&] { return front_->Stats().connections == 40; }));
  api::ApiClient client = Client();
  auto health = client.Get("/v1/health");
  ASSERT_TRUE(health) << health.error().ToString();
  EXPECT_GE(front_->Stats().connections, 40);  // answered while the stalled ones were open
  EXPECT_TRUE(WaitUntil([&] { return front_->Stats().connections <= 1; }));
  for (int fd : stalled) ::close(fd);
}

TEST(TlsContextTest, FilesThatDoNotLoadAreNamed) {
  testing::TempDir dir("drover-tls");
  ASSERT_TRUE(testing::MakeTestCa(dir.path(), "ca", /*with_server=*/true));
  ASSERT_TRUE(testing::MakeTestCa(dir.path(), "other", /*with_server=*/false));
  struct Case {
    TlsFiles files;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{dir.Sub("server.pem"), ""}, "--tls-key: required with --tls-cert"},
      {{"", dir.Sub("server.key")}, "--tls-cert: required with --tls-key"},
      {{dir.Sub("nothing.pem"), dir.Sub("server.key")}, "--tls-cert " + dir.Sub("nothing.pem")},
      {{dir.Sub("server.key"), dir.Sub("server.key")}, "not a PEM certificate"},
      {{dir.Sub("server.pem"), dir.Sub("server.pem")}, "not an unencrypted PEM private key"},
      {{dir.Sub("server.pem"), dir.Sub("other.key")},
       "--tls-key " + dir.Sub("other.key") + ": does not match the certificate in " +
           dir.Sub("server.pem")},
  };
  for (const Case& c : cases) {
    auto context = TlsContext::Load(c.files);
    ASSERT_FALSE(context) << c.expected;
    EXPECT_EQ(context.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(context.error().message.find(c.expected), std::string::npos)
        << context.error().message;
  }
  EXPECT_TRUE(TlsContext::Load({dir.Sub("server.pem"), dir.Sub("server.key")}));
}

}  // namespace
}  // namespace drover::server
