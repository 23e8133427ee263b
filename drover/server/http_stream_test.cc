// Streaming responses on the HTTP front (http_front.h): a stream holds no lane thread, is sent
// as its body has bytes, and a reader that stops reading costs a bounded buffer, then is dropped
// when its stream ends. The handler is a fake; the clients are raw loopback sockets.

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "drover/server/http_front.h"
#include "drover/testing/loopback.h"
#include "drover/testing/wait_until.h"

namespace drover::server {
namespace {

using testing::WaitUntil;

// A stream whose bytes the test pushes; ended by End(). Thread-safe.
class FakeStream final : public api::StreamBody {
 public:
  void Push(const std::string& bytes) {
    std::lock_guard lock(mu_);
    ready_ += bytes;
  }
  void End() {
    std::lock_guard lock(mu_);
    ended_ = true;
  }
  bool Pull(std::string& out, std::size_t max_bytes) override {
    std::lock_guard lock(mu_);
    if (max_bytes == 0) return !ended_;
    const std::size_t n = std::min(max_bytes, ready_.size());
    out += ready_.substr(0, n);
    ready_.erase(0, n);
    return !(ended_ && ready_.empty());
  }
  std::string Heartbeat() const override { return ": hb\n\n"; }
  std::size_t remaining() {
    std::lock_guard lock(mu_);
    return ready_.size();
  }

 private:
  std::mutex mu_;
  std::string ready_;
  bool ended_ = false;
};

// GET /stream answers a new FakeStream (kept in `streams`); anything else a JSON 200.
class StreamingHandler final : public HttpHandler {
 public:
  Lane LaneFor(const api::Request&) const override { return Lane::kShort; }
  api::Response Serve(const api::Request& request) override {
    if (request.path != "/stream") return api::JsonResponse(200, {{"ok", true}});
    auto stream = std::make_shared<FakeStream>();
    {
      std::lock_guard lock(mu_);
      streams_.push_back(stream);
    }
    api::Response response;
    response.content_type = "text/event-stream";
    response.body = "first\n";
    response.stream = stream;
    return response;
  }
  std::shared_ptr<FakeStream> stream(std::size_t i) {
    std::lock_guard lock(mu_);
    return i < streams_.size() ? streams_[i] : nullptr;
  }

 private:
  std::mutex mu_;
  std::vector<std::shared_ptr<FakeStream>> streams_;
};

class Client {
 public:
  explicit Client(int port, int receive_buffer = 0) {
    fd_ = testing::ConnectLoopback(port);
    if (receive_buffer > 0) {
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
    }
  }
  ~Client() { ::close(fd_); }
  void Send(const std::string& path) {
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(::send(fd_, request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
  }
  // Reads until `text` has arrived (true) or the peer closes or 30 s pass (false).
  bool ReadUntil(const std::string& text) {
    return WaitUntil([&] {
             ReadSome();
             return in_.find(text) != std::string::npos || closed_;
           }) &&
           in_.find(text) != std::string::npos;
  }
  bool WaitClosed() {
    return WaitUntil([&] {
      ReadSome();
      return closed_;
    });
  }
  const std::string& in() const { return in_; }

 private:
  void ReadSome() {
    char buffer[16 << 10];
    const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n == 0) closed_ = true;
    if (n > 0) in_.append(buffer, static_cast<std::size_t>(n));
  }
  int fd_;
  std::string in_;
  bool closed_ = false;
};

std::unique_ptr<HttpFront> Front(StreamingHandler& handler, HttpLimits limits) {
  auto front = HttpFront::Bind(handler, limits, "127.0.0.1", 0, "", -1);
  EXPECT_TRUE(front) << front.error().ToString();
  (*front)->Start();
  return *std::move(front);
}

TEST(HttpStream, StreamsHoldNoLaneThreadAndAreSentAsTheyHaveBytes) {
  StreamingHandler handler;
  HttpLimits limits;
  limits.threads = 1;
  auto front = Front(handler, limits);
  std::vector<std::unique_ptr<Client>> streams;
  for (int i = 0; i < 4; ++i) {
    streams.push_back(std::make_unique<Client>(front->port()));
    streams.back()->Send("/stream");
    ASSERT_TRUE(streams.back()->ReadUntil("first\n"));
  }
  EXPECT_EQ(front->Stats().streams, 4);
  // The one lane thread is free for everyone else.
  Client plain(front->port());
  plain.Send("/plain");
  EXPECT_TRUE(plain.ReadUntil("{\"ok\":true}"));
  EXPECT_NE(streams[0]->in().find("Content-Type: text/event-stream"), std::string::npos);
  EXPECT_EQ(streams[0]->in().find("Content-Length"), std::string::npos);
  handler.stream(2)->Push("event two\n");
  front->WakeStreams();
  EXPECT_TRUE(streams[2]->ReadUntil("event two\n"));
  // An ended stream's last bytes are sent, then the connection is closed.
  handler.stream(1)->Push("last\n");
  handler.stream(1)->End();
  front->WakeStreams();
  EXPECT_TRUE(streams[1]->ReadUntil("last\n"));
  EXPECT_TRUE(streams[1]->WaitClosed());
  EXPECT_TRUE(WaitUntil([&] { return front->Stats().streams == 3; }));
  front->Stop();
}

TEST(HttpStream, AnIdleStreamGetsHeartbeats) {
  StreamingHandler handler;
  HttpLimits limits;
  limits.stream_heartbeat_ms = 100;
  auto front = Front(handler, limits);
  Client client(front->port());
  client.Send("/stream");
  EXPECT_TRUE(client.ReadUntil(": hb\n\n"));
  front->Stop();
}

TEST(HttpStream, AReaderThatStopsCostsABoundedBufferAndIsDroppedWhenItsStreamEnds) {
  StreamingHandler handler;
  HttpLimits limits;
  limits.stream_buffer_bytes = 4096;
  auto front = Front(handler, limits);
  Client stalled(front->port(), 1024);
  stalled.Send("/stream");
  ASSERT_TRUE(stalled.ReadUntil("first\n"));
  std::shared_ptr<FakeStream> stream = handler.stream(0);
  // Far more than the socket buffers hold: the front reads the stream no further than its
  // buffer, so what it has not taken stays in the stream.
  const std::size_t total = std::size_t{4} << 20;
  stream->Push(std::string(total, 'x'));
  front->WakeStreams();
  ASSERT_TRUE(WaitUntil([&] { return stream->remaining() < total; }));
  EXPECT_GT(stream->remaining(), total - (std::size_t{256} << 10));
  // The stream ends while the reader is stalled: the connection is closed at once.
  stream->End();
  front->WakeStreams();
  EXPECT_TRUE(WaitUntil([&] { return front->Stats().streams == 0; }));
  front->Stop();
}

}  // namespace
}  // namespace drover::server
