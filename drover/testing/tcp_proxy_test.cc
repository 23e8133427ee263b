// TcpProxy between a client socket and an echo server on loopback: each mode does to the bytes
// what it promises, and a switch applies to open connections.

#include "drover/testing/tcp_proxy.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include "drover/testing/loopback.h"
#include "drover/testing/wait_until.h"

namespace drover::testing {
namespace {

// Echoes every byte back on every connection, one thread per connection, until destroyed.
class EchoServer {
 public:
  EchoServer() {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    EXPECT_EQ(listen(listen_fd_, 16), 0);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] {
      for (int fd; (fd = accept(listen_fd_, nullptr, nullptr)) >= 0;) {
        ++connections_;
        fds_.push_back(fd);
        echoes_.emplace_back([this, fd] {
          char buffer[4096];
          for (ssize_t n; (n = recv(fd, buffer, sizeof(buffer), 0)) > 0;) {
            received_ += static_cast<int>(n);
            send(fd, buffer, static_cast<std::size_t>(n), MSG_NOSIGNAL);
          }
        });
      }
    });
  }
  ~EchoServer() {
    shutdown(listen_fd_, SHUT_RDWR);
    acceptor_.join();
    for (int fd : fds_) shutdown(fd, SHUT_RDWR);
    for (std::thread& echo : echoes_) echo.join();
    for (int fd : fds_) close(fd);
    close(listen_fd_);
  }
  int port() const { return port_; }
  int received() const { return received_; }
  int connections() const { return connections_; }

 private:
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<int> received_ = 0;
  std::atomic<int> connections_ = 0;
  std::vector<int> fds_;  // touched by the acceptor thread only until it is joined
  std::vector<std::thread> echoes_;
  std::thread acceptor_;
};

int Connect(int port) {
  const int fd = ConnectLoopback(port);
  EXPECT_GE(fd, 0);
  return fd;
}

// Sends `text` and reads until as many bytes came back; what came back ("" on EOF or error).
std::string RoundTrip(int fd, const std::string& text) {
  send(fd, text.data(), text.size(), MSG_NOSIGNAL);
  std::string answer;
  char buffer[4096];
  while (answer.size() < text.size()) {
    ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) return "";
    answer.append(buffer, static_cast<std::size_t>(n));
  }
  return answer;
}

class TcpProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto proxy = TcpProxy::Create(echo_.port());
    ASSERT_TRUE(proxy) << proxy.error().ToString();
    proxy_ = *std::move(proxy);
  }
  void TearDown() override {
    for (int fd : fds_) close(fd);
  }
  int Open() { return fds_.emplace_back(Connect(proxy_->port())); }

  EchoServer echo_;
  std::unique_ptr<TcpProxy> proxy_;
  std::vector<int> fds_;
};

TEST_F(TcpProxyTest, PassesAndDelaysBothWays) {
  int fd = Open();
  EXPECT_EQ(RoundTrip(fd, "hello"), "hello");
  proxy_->SetMode(TcpProxy::Mode::kDelay, 20);
  EXPECT_EQ(RoundTrip(fd, "later"), "later");
  EXPECT_EQ(proxy_->swallowed_replies(), 0);
}

TEST_F(TcpProxyTest, DropsOnlyTheRepliesToMarkedRequestsAndTheirConnectionsStayMute) {
  proxy_->DropNextReplies("POST /events", 1);
  int marked = Open();
  int other = Open();
  send(marked, "POST /events", 12, MSG_NOSIGNAL);
  ASSERT_TRUE(WaitUntil([&] { return proxy_->swallowed_replies() == 1; }));
  EXPECT_EQ(echo_.received(), 12);  // the request went through; its reply did not
  EXPECT_EQ(RoundTrip(other, "GET /commands"), "GET /commands");
  // Only the next one was marked: a new connection with the same request is answered.
  EXPECT_EQ(RoundTrip(Open(), "POST /events"), "POST /events");
  send(marked, "again", 5, MSG_NOSIGNAL);
  EXPECT_TRUE(WaitUntil([&] { return proxy_->swallowed_replies() == 2; }));
}

TEST_F(TcpProxyTest, DropsTheFirstAnswerThatSaysTheContentAndMutesItsConnection) {
  int early = Open();
  int other = Open();
  send(early, "GET /commands", 13, MSG_NOSIGNAL);  // sent before the drop is armed
  ASSERT_TRUE(WaitUntil([&] { return echo_.received() == 13; }));
  char buffer[32];
  ASSERT_EQ(recv(early, buffer, sizeof(buffer), 0), 13);
  proxy_->DropReplyContaining("launch 7");
  EXPECT_EQ(RoundTrip(other, "GET /commands"), "GET /commands");
  send(early, "launch 7", 8, MSG_NOSIGNAL);
  ASSERT_TRUE(WaitUntil([&] { return proxy_->swallowed_replies() == 1; }));
  // Once only: another answer saying it goes through.
  EXPECT_EQ(RoundTrip(other, "launch 7"), "launch 7");
  send(early, "again", 5, MSG_NOSIGNAL);  // the connection that lost one stays mute
  EXPECT_TRUE(WaitUntil([&] { return proxy_->swallowed_replies() == 2; }));
}

TEST_F(TcpProxyTest, LosesTheAnswerToTheMarkerAfterTheArmThenResetsThatConnection) {
  proxy_->LoseReplyThenReset("INSERT probe", "COMMIT");
  int armed = Open();
  int other = Open();
  EXPECT_EQ(RoundTrip(other, "COMMIT"), "COMMIT");  // not armed: answered
  EXPECT_EQ(RoundTrip(armed, "INSERT probe"), "INSERT probe");
  EXPECT_EQ(RoundTrip(armed, "UPDATE"), "UPDATE");
  send(armed, "COMMIT", 6, MSG_NOSIGNAL);
  ASSERT_TRUE(WaitUntil([&] { return proxy_->swallowed_replies() == 1; }));
  EXPECT_EQ(echo_.received(), 6 + 12 + 6 + 6);  // the marker reached the target
  // The connection was reset, its answer never written.
  char buffer[16];
  EXPECT_LT(recv(armed, buffer, sizeof(buffer), 0), 0);
  EXPECT_EQ(errno, ECONNRESET);
  // Once only: another connection arming again is answered.
  int again = Open();
  EXPECT_EQ(RoundTrip(again, "INSERT probe"), "INSERT probe");
  EXPECT_EQ(RoundTrip(again, "COMMIT"), "COMMIT");
  EXPECT_EQ(RoundTrip(other, "COMMIT"), "COMMIT");
}

TEST_F(TcpProxyTest, DropRepliesModeForwardsRequestsAndSwallowsEveryAnswer) {
  int fd = Open();
  EXPECT_EQ(RoundTrip(fd, "one"), "one");
  proxy_->SetMode(TcpProxy::Mode::kDropReplies);
  send(fd, "two", 3, MSG_NOSIGNAL);
  ASSERT_TRUE(WaitUntil([&] { return proxy_->swallowed_replies() == 1; }));
  EXPECT_EQ(echo_.received(), 6);
  proxy_->SetMode(TcpProxy::Mode::kPass);
  EXPECT_EQ(RoundTrip(Open(), "three"), "three");
}

TEST_F(TcpProxyTest, AResetClosesOpenAndNewConnectionsUntilThePartitionHeals) {
  int open = Open();
  EXPECT_EQ(RoundTrip(open, "before"), "before");
  proxy_->SetMode(TcpProxy::Mode::kReset);
  EXPECT_EQ(RoundTrip(open, "during"), "");
  EXPECT_EQ(RoundTrip(Open(), "during"), "");
  proxy_->SetMode(TcpProxy::Mode::kPass);
  EXPECT_EQ(RoundTrip(Open(), "after"), "after");
}

TEST_F(TcpProxyTest, ABlackholedConnectionStaysSilentAfterThePartitionHeals) {
  int open = Open();
  EXPECT_EQ(RoundTrip(open, "before"), "before");
  proxy_->SetMode(TcpProxy::Mode::kBlackhole);
  Open();  // accepted during the partition
  ASSERT_TRUE(WaitUntil([&] { return proxy_->accepted() == 2; }));
  proxy_->SetMode(TcpProxy::Mode::kPass);
  EXPECT_EQ(RoundTrip(Open(), "after"), "after");
  // The connection accepted during the partition was never connected to the target.
  EXPECT_EQ(echo_.connections(), 2);
}

}  // namespace
}  // namespace drover::testing
