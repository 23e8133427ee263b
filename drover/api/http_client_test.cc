// HttpClient against a scripted server on loopback: each connection it accepts reads requests
// and answers them with the bytes the test wrote, so that every framing the client must read
// (lengths, chunks, close-delimited, interim answers) and every way an answer breaks are
// exercised byte for byte. The API's own server is covered by the integration tests, which
// talk to it through this client.

#include "drover/api/http_client.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace drover::api {
namespace {

using ::testing::HasSubstr;

// Listens on a free loopback port. Each accepted connection reads one request (head, then a
// Content-Length body) at a time and writes the next scripted answer; an answer marked `close`
// closes the connection after it. Requests are kept for the test to read.
class ScriptedServer {
 public:
  struct Answer {
    std::string bytes;
    bool close = false;
    DurationMs trickle_ms = 0;  // > 0: the bytes are sent one at a time, this far apart
  };

  ScriptedServer() {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    ::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    ::listen(listener_, 16);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedServer() {
    stopping_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    thread_.join();
    ::close(listener_);
  }

  void Script(std::vector<Answer> answers) {
    std::lock_guard lock(mutex_);
    answers_.assign(answers.begin(), answers.end());
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int accepted() const { return accepted_; }
  int closed() const { return closed_; }
  std::vector<std::string> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  void Serve() {
    while (!stopping_) {
      const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      ++accepted_;
      ServeConnection(fd);
      ::close(fd);
      ++closed_;
    }
  }

  void ServeConnection(int fd) {
    std::string buffer;
    char chunk[4096];
    for (;;) {
      std::size_t head_end;
      while ((head_end = buffer.find("\r\n\r\n")) == std::string::npos) {
        const ssize_t got = ::recv(fd, chunk, sizeof(chunk), 0);
        if (got <= 0) return;
        buffer.append(chunk, static_cast<std::size_t>(got));
      }
      std::size_t body = 0;
      if (const std::size_t at = buffer.find("Content-Length: "); at < head_end) {
        body = std::stoul(buffer.substr(at + 16));
      }
      while (buffer.size() < head_end + 4 + body) {
        const ssize_t got = ::recv(fd, chunk, sizeof(chunk), 0);
        if (got <= 0) return;
        buffer.append(chunk, static_cast<std::size_t>(got));
      }
      Answer answer;
      {
        std::lock_guard lock(mutex_);
        requests_.push_back(buffer.substr(0, head_end + 4 + body));
        if (answers_.empty()) return;
        answer = answers_.front();
        answers_.pop_front();
      }
      buffer.erase(0, head_end + 4 + body);
      if (answer.trickle_ms > 0) {
        for (const char byte : answer.bytes) {
          if (stopping_ || ::send(fd, &byte, 1, MSG_NOSIGNAL) != 1) return;
          std::this_thread::sleep_for(std::chrono::milliseconds(answer.trickle_ms));
        }
      } else if (!answer.bytes.empty()) {
        ::send(fd, answer.bytes.data(), answer.bytes.size(), MSG_NOSIGNAL);
      }
      if (answer.close) return;
    }
  }

  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  std::atomic<int> closed_{0};  // connections closed (a loopback FIN is queued to the peer by then)
  mutable std::mutex mutex_;
  std::deque<Answer> answers_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

HttpClient ClientOf(const ScriptedServer& server, DurationMs io_timeout_ms = 5000) {
  ConnectOptions options;
  options.io_timeout_ms = io_timeout_ms;
  return HttpClient(*ParseServerUrl(server.Url()), options, nullptr);
}

HttpRequest Get(std::string_view target) { return {.method = "GET", .target = target}; }

TEST(ParseServerUrl, TakesTheFormsUsersWriteAndRefusesOthersByName) {
  struct Case {
    std::string url;
    bool tls;
    std::string host;
    std::string port;
  };
  for (const Case& c : std::vector<Case>{
           {"http://127.0.0.1:8420", false, "127.0.0.1", "8420"},
           {"http://127.0.0.1:8420/", false, "127.0.0.1", "8420"},
           {"HTTPS://example.org", true, "example.org", "443"},
           {"localhost:9", false, "localhost", "9"},
           {"http://[::1]:8420", false, "::1", "8420"},
       }) {
    Result<ServerAddress> address = ParseServerUrl(c.url);
    ASSERT_TRUE(address) << c.url << ": " << address.error().message;
    EXPECT_EQ(address->tls, c.tls) << c.url;
    EXPECT_EQ(address->host, c.host) << c.url;
    EXPECT_EQ(address->port, c.port) << c.url;
  }
  EXPECT_EQ(ParseServerUrl("http://[::1]:8420")->HostHeader(), "[::1]:8420");
  for (const auto& [url, why] : std::vector<std::pair<std::string, std::string>>{
           {"ftp://a:1", "neither http nor https"},
           {"http://a:1/v1", "the port is not a number"},
           {"http://a/v1", "a path, user or space in the host"},
           {"http://user@a:1", "a path, user or space in the host"},
           {"http://a:0", "the port is not a number from 1 to 65535"},
           {"http://a:99999", "the port is not a number from 1 to 65535"},
           {"http://:1", "no host"},
           {"http://[::1", "without its ']'"},
       }) {
    Result<ServerAddress> address = ParseServerUrl(url);
    ASSERT_FALSE(address) << url;
    EXPECT_EQ(address.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(address.error().message, HasSubstr(why)) << url;
    EXPECT_THAT(address.error().message, HasSubstr("expected http://HOST:PORT")) << url;
  }
}

TEST(HttpClient, ReadsEachFramingOnOneKeptConnection) {
  ScriptedServer server;
  server.Script({
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Drover-Leader: x\r\n\r\nhello"},
      {"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
       "3;ext=1\r\nabc\r\n0A\r\n0123456789\r\n0\r\nTrailer: t\r\n\r\n"},
      {"HTTP/1.1 204 No Content\r\n\r\n"},
      {"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"},
  });
  HttpClient client = ClientOf(server);
  HttpResult<HttpResponse> first = client.Send(Get("/a"));
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(first->body, "hello");
  EXPECT_EQ(first->Header("x-drover-leader"), "x");
  HttpResult<HttpResponse> chunked = client.Send(
      {.method = "POST", .target = "/b", .body = "{}", .content_type = "application/json"});
  ASSERT_TRUE(chunked) << chunked.error().message;
  EXPECT_EQ(chunked->status, 201);
  EXPECT_EQ(chunked->body, "abc0123456789");
  HttpResult<HttpResponse> empty = client.Send({.method = "DELETE", .target = "/c"});
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_EQ(empty->status, 204);
  ASSERT_TRUE(client.Send(Get("/d")));
  EXPECT_EQ(server.accepted(), 1);
  const std::vector<std::string> requests = server.requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[0].rfind("GET /a HTTP/1.1\r\nHost: 127.0.0.1:", 0), 0u) << requests[0];
  EXPECT_THAT(requests[1], HasSubstr("Content-Type: application/json\r\nContent-Length: 2\r\n"));
  EXPECT_THAT(requests[1], ::testing::EndsWith("\r\n\r\n{}"));
}

TEST(HttpClient, ACloseDelimitedBodyEndsAtTheEndOfTheStreamAndTheNextRequestReconnects) {
  ScriptedServer server;
  server.Script({{"HTTP/1.1 200 OK\r\n\r\nall of it", /*close=*/true},
                 {"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", true},
                 {"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"},
                 {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"}});
  HttpClient client = ClientOf(server);
  HttpResult<HttpResponse> first = client.Send(Get("/"));
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->body, "all of it");
  ASSERT_TRUE(client.Send(Get("/")));  // a new connection; the server says close
  ASSERT_TRUE(client.Send(Get("/")));  // a new one; HTTP/1.0 is not kept either
  ASSERT_TRUE(client.Send(Get("/")));
  EXPECT_EQ(server.accepted(), 4);
}

// The server's idle timeout closed the kept connection: the client sees it before sending and
// opens another, so the request is sent once and answered.
TEST(HttpClient, AKeptConnectionTheServerClosedIsReplacedBeforeSending) {
  ScriptedServer server;
  server.Script({{"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na", /*close=*/true},
                 {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb"}});
  HttpClient client = ClientOf(server);
  ASSERT_TRUE(client.Send(Get("/")));
  while (server.closed() < 1) std::this_thread::yield();
  HttpResult<HttpResponse> second = client.Send(Get("/"));
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->body, "b");
  EXPECT_EQ(server.accepted(), 2);
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST(HttpClient, BrokenAnswersAreTransferErrorsNamingWhatBroke) {
  const std::string huge_header = "X: " + std::string(kMaxResponseHeadBytes, 'x') + "\r\n";
  for (const auto& [answer, why] : std::vector<std::pair<std::string, std::string>>{
           {"SPDY/3 200 OK\r\n\r\n", "not HTTP/1.x"},
           {"HTTP/1.1 2x0 OK\r\n\r\n", "not HTTP/1.x"},
           {"HTTP/1.1 200 OK\r\nno colon\r\n\r\n", "a header line without a name"},
           {"HTTP/1.1 200 OK\r\n" + huge_header + "\r\n", "the answer's head is over"},
           {"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Content-Length is not a number"},
           {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "closed the connection"},
           {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "not hexadecimal"},
           {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
            "a chunk longer than its size"},
           {"", "closed the connection"},
       }) {
    ScriptedServer server;
    server.Script({{answer, /*close=*/true}});
    HttpClient client = ClientOf(server);
    HttpResult<HttpResponse> response = client.Send(Get("/"));
    ASSERT_FALSE(response) << why;
    EXPECT_EQ(response.error().failure, HttpFailure::kTransfer) << why;
    EXPECT_THAT(response.error().message, HasSubstr(why));
  }
}

TEST(HttpClient, AServerThatDoesNotAnswerTimesOutAndOneThatIsNotThereIsAConnectFailure) {
  ScriptedServer silent;
  silent.Script({{"", /*close=*/false}});  // reads the request, answers nothing
  HttpClient waiting = ClientOf(silent, /*io_timeout_ms=*/200);
  HttpResult<HttpResponse> timed_out = waiting.Send(Get("/"));
  ASSERT_FALSE(timed_out);
  EXPECT_EQ(timed_out.error().failure, HttpFailure::kTransfer);
  EXPECT_THAT(timed_out.error().message, HasSubstr("no answer within 200 ms"));

  std::string url;
  {
    ScriptedServer gone;
    url = gone.Url();
  }
  HttpClient nobody(*ParseServerUrl(url), {}, nullptr);
  HttpResult<HttpResponse> refused = nobody.Send(Get("/"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().failure, HttpFailure::kConnect);
  EXPECT_THAT(refused.error().message, HasSubstr("cannot connect"));
}

TEST(HttpClient, AnAnswerTrickledByteByByteIsCutOffAtTheWholeAnswersBound) {
  // Each byte comes well within the io timeout, so only the whole answer's bound can stop it.
  const std::string answer =
      "HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n" + std::string(2000, 'x');
  ScriptedServer trickling;
  trickling.Script({{answer, /*close=*/true, /*trickle_ms=*/20}});
  ConnectOptions options;
  options.io_timeout_ms = 5000;
  options.answer_timeout_ms = 1500;  // the quick server's answers, below, come well within it
  HttpClient client(*ParseServerUrl(trickling.Url()), options, nullptr);
  HttpResult<HttpResponse> cut = client.Send(Get("/metrics"));
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error().failure, HttpFailure::kTransfer);
  EXPECT_THAT(cut.error().message, HasSubstr("no whole answer within 1500 ms"));

  // The same bound lets an answer that comes whole through, and a later exchange has its own.
  ScriptedServer quick;
  const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  quick.Script({{ok}, {ok}});
  HttpClient bounded(*ParseServerUrl(quick.Url()), options, nullptr);
  for (int i = 0; i < 2; ++i) {
    HttpResult<HttpResponse> whole = bounded.Send(Get("/metrics"));
    ASSERT_TRUE(whole) << whole.error().message;
    EXPECT_EQ(whole->body, "ok");
  }
}

TEST(HttpClient, AStreamGetsTheHeadThenEachPieceAndMayStop) {
  ScriptedServer server;
  server.Script({{"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\nevent: a\n\nevent: b",
                  /*close=*/true},
                 {"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nstop!!"}});
  HttpClient client = ClientOf(server);
  int status = 0;
  std::string got;
  const ResponseStream stream{.on_head =
                                  [&](const HttpResponse& head) {
                                    status = head.status;
                                    return true;
                                  },
                              .on_body =
                                  [&](std::string_view piece) {
                                    got.append(piece);
                                    return got.find("stop") == std::string::npos;
                                  }};
  HttpResult<HttpResponse> ended = client.Send(Get("/v1/events"), &stream);
  ASSERT_TRUE(ended) << ended.error().message;
  EXPECT_EQ(status, 200);
  EXPECT_EQ(got, "event: a\n\nevent: b");
  EXPECT_TRUE(ended->body.empty());
  got.clear();
  HttpResult<HttpResponse> stopped = client.Send(Get("/"), &stream);
  ASSERT_FALSE(stopped);
  EXPECT_EQ(stopped.error().failure, HttpFailure::kStopped);
}

// A value that could end its line would write a request of the caller's choosing (a header
// such as Idempotency-Key comes from the command line): a header is refused before anything is
// sent, a target's bytes are encoded.
TEST(HttpClient, ARequestThatWouldSplitItsLinesIsRefusedOrEncoded) {
  ScriptedServer server;
  server.Script({{"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"}});
  HttpClient client = ClientOf(server);
  const HttpHeaders split = {{"Idempotency-Key", "k\r\nX-Admin: 1"}};
  const HttpHeaders bad_name = {{"Bad:Name", "v"}};
  const HttpHeaders nul = {{"X", std::string("a\0b", 3)}};
  for (const auto& [request, why] : std::vector<std::pair<HttpRequest, std::string>>{
           {{.method = "GET", .target = "a"}, "does not start with /"},
           {{.method = "GET", .target = "/", .headers = &split}, "header Idempotency-Key"},
           {{.method = "GET", .target = "/", .headers = &bad_name}, "is not an HTTP token"},
           {{.method = "GET", .target = "/", .headers = &nul}, "line break or NUL"},
       }) {
    HttpResult<HttpResponse> response = client.Send(request);
    ASSERT_FALSE(response) << why;
    EXPECT_EQ(response.error().failure, HttpFailure::kRequest) << why;
    EXPECT_THAT(response.error().message, HasSubstr(why));
  }
  EXPECT_EQ(server.accepted(), 0);
  // A target's line break, space or byte above ASCII is sent encoded, never raw.
  ASSERT_TRUE(client.Send(Get("/a b\r\nX: 1?q=\xc3\xa9%41")));
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(server.requests()[0].rfind("GET /a%20b%0D%0AX:%201?q=%C3%A9%41 HTTP/1.1\r\n", 0), 0u)
      << server.requests()[0];
}

TEST(HttpClient, AnHttpsAddressWithoutATlsConnectorSaysSo) {
  HttpClient client(*ParseServerUrl("https://127.0.0.1:1"), {}, nullptr);
  HttpResult<HttpResponse> response = client.Send(Get("/"));
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().failure, HttpFailure::kTls);
  EXPECT_THAT(response.error().message, HasSubstr("drover-full speaks https"));
}

}  // namespace
}  // namespace drover::api
