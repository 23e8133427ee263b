// HttpFront's event loop (http_front.h). Over the ~800-line guide: the loop's phases (read,
// dispatch, park, stream, write, expire) share one Connection record and are read together; the
// wire helpers at the top (request parsing, response bytes) are the part that could move out.

#include "drover/server/http_front.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "drover/api/views.h"
#include "drover/common/ascii.h"
#include "drover/common/quantity.h"
#include "drover/server/tls_stream.h"

namespace drover::server {
namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

SteadyTime After(DurationMs ms) {
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
}

std::string_view Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 413:
      return "Content Too Large";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
  }
  return "Status";
}

// The bytes of `response` on the wire.
std::string Serialize(const api::Response& response, bool keep_alive) {
  std::string out = fmt::format("HTTP/1.1 {} {}\r\n", response.status, Reason(response.status));
  if (!response.content_type.empty()) out += "Content-Type: " + response.content_type + "\r\n";
  out += fmt::format("Content-Length: {}\r\n", response.body.size());
  out += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  for (const auto& [name, value] : response.headers) out += name + ": " + value + "\r\n";
  out += "\r\n";
  out += response.body;
  return out;
}

// The API's JSON error with an explicit HTTP status (the front's own refusals).
api::Response FrontError(int status, ErrorCode code, std::string message) {
  return api::JsonResponse(status, api::ErrorBody(Error{code, std::move(message), {}}));
}

// Percent-decodes `text`; '+' becomes a space when `plus_is_space` (query strings).
std::string UrlDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      int value = 0;
      auto [end, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
      if (ec == std::errc() && end == text.data() + i + 3) {
        out += static_cast<char>(value);
        i += 2;
        continue;
      }
    }
    out += plus_is_space && text[i] == '+' ? ' ' : text[i];
  }
  return out;
}

// What the head of a request (request line and headers) says, beyond the api::Request.
struct Head {
  std::int64_t content_length = 0;
  bool keep_alive = true;
  bool expect_continue = false;
  bool chunked = false;
};

// Parses the request line and headers in `text` (without the blank line) into `request` and
// `head`; kInvalidArgument naming what is malformed.
Status ParseHead(std::string_view text, api::Request& request, Head& head) {
  std::size_t line_end = text.find("\r\n");
  std::string_view line = text.substr(0, line_end);
  std::size_t first = line.find(' ');
  std::size_t last = line.rfind(' ');
  if (first == std::string_view::npos || first == last || first == 0) {
    return InvalidArgument("malformed request line; expected METHOD PATH HTTP/1.1");
  }
  request.method = std::string(line.substr(0, first));
  std::string_view target = line.substr(first + 1, last - first - 1);
  std::string_view version = line.substr(last + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return InvalidArgument(fmt::format("unsupported protocol '{}'; expected HTTP/1.1", version));
  }
  head.keep_alive = version == "HTTP/1.1";
  if (target.empty() || target.front() != '/') {
    return InvalidArgument("the request target must be a path starting with '/'");
  }
  std::size_t question = target.find('?');
  request.path = UrlDecode(target.substr(0, question), /*plus_is_space=*/false);
  if (question != std::string_view::npos) {
    std::string_view query = target.substr(question + 1);
    while (!query.empty()) {
      std::size_t amp = query.find('&');
      std::string_view pair = query.substr(0, amp);
      std::size_t eq = pair.find('=');
      std::string name = UrlDecode(pair.substr(0, eq), true);
      std::string value = eq == std::string_view::npos ? "" : UrlDecode(pair.substr(eq + 1), true);
      if (!name.empty()) request.query.emplace(std::move(name), std::move(value));
      query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    }
  }
  std::string_view rest = line_end == std::string_view::npos ? "" : text.substr(line_end + 2);
  bool has_length = false;
  while (!rest.empty()) {
    std::size_t end = rest.find("\r\n");
    std::string_view header = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 2);
    std::size_t colon = header.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return InvalidArgument("malformed header line; expected NAME: VALUE");
    }
    std::string_view name = header.substr(0, colon);
    std::string_view value = TrimSpacesAndTabs(header.substr(colon + 1));
    if (EqualsIgnoringCase(name, "Content-Length")) {
      std::int64_t length = -1;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), length);
      if (ec != std::errc() || ptr != value.data() + value.size() || length < 0 ||
          (has_length && length != head.content_length)) {
        return InvalidArgument(fmt::format("Content-Length: not a byte count: '{}'", value));
      }
      head.content_length = length;
      has_length = true;
    } else if (EqualsIgnoringCase(name, "Transfer-Encoding")) {
      head.chunked = true;
    } else if (EqualsIgnoringCase(name, "Connection")) {
      if (EqualsIgnoringCase(value, "close")) head.keep_alive = false;
      if (EqualsIgnoringCase(value, "keep-alive")) head.keep_alive = true;
    } else if (EqualsIgnoringCase(name, "Expect")) {
      head.expect_continue = EqualsIgnoringCase(value, "100-continue");
    } else {
      for (std::string_view known : api::kRequestHeaders) {
        if (EqualsIgnoringCase(name, known)) request.headers.emplace(known, value);
      }
    }
  }
  return OkStatus();
}

// A bounded group of threads for one lane: at most `max_threads`, started as work arrives and
// kept; work beyond them queues. A thread the system refuses to start (out of threads or memory)
// is logged and tried again at the next submission; meanwhile the task waits in the queue for the
// lane's running threads. Thread-safe.
class LanePool {
 public:
  explicit LanePool(int max_threads) : max_threads_(std::max(1, max_threads)) {}
  ~LanePool() { Stop(); }

  void Submit(std::function<void()> task) {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    queue_.push_back(std::move(task));
    if (idle_ == 0 && static_cast<int>(threads_.size()) < max_threads_) {
      try {
        threads_.emplace_back([this] { Work(); });
        return;
      } catch (const std::system_error& error) {
        spdlog::warn("HTTP front: cannot start a thread ({}); {} serve the lane", error.what(),
                     threads_.size());
      }
    }
    ready_.notify_one();
  }

  // Drops what is queued and waits for what runs.
  void Stop() {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      queue_.clear();
      threads.swap(threads_);
    }
    ready_.notify_all();
    for (std::thread& thread : threads) thread.join();
  }

 private:
  void Work() {
    std::unique_lock lock(mu_);
    while (true) {
      ++idle_;
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      --idle_;
      if (stopping_) return;
      std::function<void()> task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  const int max_threads_;
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  int idle_ = 0;
  bool stopping_ = false;
};

// The endpoint of a listening socket: "127.0.0.1", 8420 -> a bound, listening, non-blocking fd.
Result<int> Listen(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found) != 0) {
    return Unavailable(fmt::format("cannot listen on {}:{} (not an address here)", host, port));
  }
  int fd = -1;
  for (addrinfo* ai = found; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return Unavailable(
        fmt::format("cannot listen on {}:{} (in use, or not an address here)", host, port));
  }
  return fd;
}

int BoundPort(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
}

std::string PeerAddress(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (address.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr, text,
              sizeof(text));
  } else {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&address)->sin_addr, text,
              sizeof(text));
  }
  return text;
}

constexpr std::uint64_t kWakeId = 0;
constexpr std::uint64_t kApiListenerId = 1;
constexpr std::uint64_t kAgentListenerId = 2;
constexpr std::uint64_t kFirstConnectionId = 16;

}  // namespace

class HttpFront::Loop {
 public:
  Loop(HttpHandler& handler, const HttpLimits& limits)
      : handler_(handler),
        limits_(limits),
        short_(limits.threads),
        long_polls_(limits.max_long_polls),
        agent_(limits.agent_threads) {}

  ~Loop() {
    Stop();
    for (int fd : {api_listener_, agent_listener_, epoll_, wake_}) {
      if (fd >= 0) ::close(fd);
    }
  }

  Status Bind(const std::string& host, int port, const std::string& agent_host, int agent_port,
              const TlsFiles& tls) {
    if (tls.enabled()) {
      DROVER_ASSIGN_OR_RETURN(tls_, TlsContext::Load(tls));
    }
    DROVER_ASSIGN_OR_RETURN(api_listener_, Listen(host, port));
    if (agent_port >= 0) {
      DROVER_ASSIGN_OR_RETURN(agent_listener_, Listen(agent_host, agent_port));
    }
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
    wake_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_ < 0 || wake_ < 0) return Internal("cannot create the HTTP event loop");
    Watch(wake_, kWakeId, EPOLLIN);
    Watch(api_listener_, kApiListenerId, EPOLLIN);
    if (agent_listener_ >= 0) Watch(agent_listener_, kAgentListenerId, EPOLLIN);
    return OkStatus();
  }

  void Start() {
    thread_ = std::thread([this] { Run(); });
  }

  void Stop() {
    if (!thread_.joinable()) return;
    stopping_ = true;
    Wake();
    thread_.join();
    short_.Stop();
    long_polls_.Stop();
    agent_.Stop();
  }

  int port() const { return BoundPort(api_listener_); }
  int agent_port() const { return agent_listener_ >= 0 ? BoundPort(agent_listener_) : -1; }
  HttpStats Stats() const {
    return HttpStats{open_.load(), long_polls_busy_.load(), parked_count_.load(),
                     streams_count_.load()};
  }

  void WakeParked(const std::string& key) {
    {
      std::lock_guard lock(completed_mu_);
      woken_.push_back(key);
    }
    Wake();
  }

  void WakeStreams() {
    streams_woken_ = true;
    Wake();
  }

 private:
  // kHandshake: a TLS connection before its first request, under header_timeout_ms.
  // kStreaming: a streaming response's head was sent; its stream is read as WakeStreams says.
  enum class Phase { kHandshake, kIdle, kHeaders, kBody, kServing, kParked, kWriting, kStreaming };

  struct Connection {
    Stream stream;
    bool agent = false;  // accepted on the agent listener
    std::string peer;
    Phase phase = Phase::kIdle;
    SteadyTime deadline;
    std::string in;
    std::size_t scanned = 0;  // bytes of `in` searched for the end of the head
    std::size_t head_end = 0;
    Head head;
    api::Request request;
    std::string out;
    std::size_t written = 0;
    bool close_after_write = false;
    std::int64_t drain_left = 0;  // body bytes to read and drop after a refusal
    std::uint32_t interest = 0;
    bool gone = false;  // the peer hung up while its request was answered
    // Parking (kParked): the key, when the park ends, and wake_tick_ when the request was last
    // handed to its lane (a wake of the key after that tick must run it again).
    std::string park_key;
    std::optional<SteadyTime> park_deadline;
    std::uint64_t dispatched_tick = 0;
    // Streaming (kStreaming): the stream, and when it last had bytes to send.
    std::shared_ptr<api::StreamBody> stream_body;
    SteadyTime last_sent;
  };

  struct Completion {
    std::uint64_t id;
    Lane lane;
    api::Response response;
    api::Request request;  // given back when the response parks it
  };

  void Watch(int fd, std::uint64_t id, std::uint32_t events) {
    epoll_event event{};
    event.events = events;
    event.data.u64 = id;
    ::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &event);
  }

  void Wake() {
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_, &one, sizeof(one));
  }

  void Run() {
    if (tls_) BlockSigpipeInThisThread();  // OpenSSL writes without MSG_NOSIGNAL
    epoll_event events[256];
    auto last_scan = std::chrono::steady_clock::now();
    while (!stopping_) {
      int n = ::epoll_wait(epoll_, events, 256, 50);
      for (int i = 0; i < n; ++i) {
        const std::uint64_t id = events[i].data.u64;
        if (id == kWakeId) {
          std::uint64_t count;
          [[maybe_unused]] ssize_t r = ::read(wake_, &count, sizeof(count));
        } else if (id == kApiListenerId || id == kAgentListenerId) {
          Accept(id == kAgentListenerId);
        } else {
          OnEvent(id, events[i].events);
        }
      }
      Complete();
      auto now = std::chrono::steady_clock::now();
      if (now - last_scan >= std::chrono::milliseconds(50)) {
        last_scan = now;
        Expire(now);
      }
    }
    connections_.clear();  // closes their sockets
    open_ = 0;
  }

  void Accept(bool agent) {
    const int listener = agent ? agent_listener_ : api_listener_;
    while (true) {
      sockaddr_storage address{};
      socklen_t length = sizeof(address);
      int fd = ::accept4(listener, reinterpret_cast<sockaddr*>(&address), &length,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      int yes = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
      std::string peer = PeerAddress(address);
      int& on_listener = agent ? agent_open_ : api_open_;
      std::optional<std::string> refusal;
      if (on_listener >= limits_.max_connections) {
        refusal = fmt::format(
            "the server has {} connections open on this listener, its limit "
            "(--max-connections); try again later",
            on_listener);
      } else if (!agent && per_client_[peer] >= limits_.max_client_connections) {
        refusal = fmt::format(
            "{} has {} connections open, the limit per client "
            "(--max-client-connections); close some or reuse them",
            peer, per_client_[peer]);
      }
      if (refusal) {
        if (!agent && per_client_[peer] == 0) per_client_.erase(peer);
        // Over TLS the refusal would cost a handshake on this thread: the socket is just closed.
        if (!tls_) {
          std::string bytes = Serialize(FrontError(503, ErrorCode::kUnavailable, *refusal), false);
          [[maybe_unused]] ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        }
        DrainAndClose(fd);
        continue;
      }
      Result<Stream> stream = tls_ ? Stream::NewTls(fd, *tls_) : Stream(fd);
      if (!stream) {
        spdlog::warn("HTTP front: {}", stream.error().message);
        DrainAndClose(fd);
        continue;
      }
      ++on_listener;
      if (!agent) ++per_client_[peer];
      ++open_;
      const std::uint64_t id = next_id_++;
      Connection& connection = connections_[id];
      connection.stream = *std::move(stream);
      connection.agent = agent;
      connection.peer = std::move(peer);
      connection.phase = tls_ ? Phase::kHandshake : Phase::kIdle;
      connection.deadline = After(tls_ ? limits_.header_timeout_ms : limits_.idle_timeout_ms);
      connection.interest = EPOLLIN;
      Watch(fd, id, EPOLLIN);
    }
  }

  void OnEvent(std::uint64_t id, std::uint32_t events) {
    auto it = connections_.find(id);
    if (it == connections_.end()) return;
    Connection& connection = it->second;
    if (connection.phase == Phase::kParked) return Close(id);  // only hang-ups are watched
    if (connection.phase == Phase::kStreaming) return OnStreamEvent(id, connection, events);
    if (events & (EPOLLERR | EPOLLHUP)) {
      if (connection.phase != Phase::kServing) return Close(id);
      // Gone while its request is answered: unwatched, and closed when the answer comes.
      ::epoll_ctl(epoll_, EPOLL_CTL_DEL, connection.stream.fd(), nullptr);
      connection.gone = true;
      return;
    }
    if (connection.phase == Phase::kHandshake) return Handshake(id, connection);
    if (events & EPOLLIN) {
      if (!Read(id, connection)) return;
    }
    if ((events & EPOLLOUT) && connection.phase == Phase::kWriting) Flush(id, connection);
  }

  // Takes a TLS handshake one step on; on its end the connection waits for its first request
  // (which may already be there). A plain HTTP request to a TLS listener is answered 400 in
  // plain text, as Go's net/http does, so that the user reads what to change.
  void Handshake(std::uint64_t id, Connection& connection) {
    switch (connection.stream.Accept()) {
      case HandshakeStep::kDone:
        connection.phase = Phase::kIdle;
        connection.deadline = After(limits_.idle_timeout_ms);
        SetInterest(id, connection, EPOLLIN);
        Read(id, connection);
        return;
      case HandshakeStep::kWantRead:
        return SetInterest(id, connection, EPOLLIN);
      case HandshakeStep::kWantWrite:
        return SetInterest(id, connection, EPOLLOUT);
      case HandshakeStep::kPlainHttp: {
        std::string bytes =
            Serialize(FrontError(400, ErrorCode::kInvalidArgument,
                                 "this server speaks HTTPS on this port: use an https:// URL"),
                      false);
        [[maybe_unused]] ssize_t n =
            ::send(connection.stream.fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
        return Close(id);
      }
      case HandshakeStep::kFailed:
        return Close(id);
    }
  }

  // Reads what is there; false when the connection was closed.
  bool Read(std::uint64_t id, Connection& connection) {
    char buffer[16 << 10];
    while (true) {
      IoResult read = connection.stream.Read(buffer, sizeof(buffer));
      if (read.closed) {
        Close(id);
        return false;
      }
      if (read.bytes == 0) break;
      const std::size_t n = read.bytes;
      if (connection.close_after_write) {  // a refusal's body: read and dropped
        connection.drain_left -= static_cast<std::int64_t>(n);
        continue;
      }
      connection.in.append(buffer, n);
      if (connection.in.size() > static_cast<std::size_t>(limits_.max_header_bytes) +
                                     static_cast<std::size_t>(limits_.max_body_bytes)) {
        break;  // more than any request may hold: Advance refuses it
      }
    }
    if (connection.close_after_write && connection.drain_left <= 0 &&
        connection.phase != Phase::kWriting) {
      Close(id);
      return false;
    }
    Advance(id, connection);
    return connections_.count(id) > 0;
  }

  // Moves a connection's request on with what `in` holds.
  void Advance(std::uint64_t id, Connection& connection) {
    if (connection.phase == Phase::kIdle && !connection.in.empty()) {
      connection.phase = Phase::kHeaders;
      connection.deadline = After(limits_.header_timeout_ms);
    }
    if (connection.phase == Phase::kHeaders) {
      std::size_t from = connection.scanned >= 3 ? connection.scanned - 3 : 0;
      std::size_t end = connection.in.find("\r\n\r\n", from);
      if (end == std::string::npos) {
        connection.scanned = connection.in.size();
        if (connection.in.size() > static_cast<std::size_t>(limits_.max_header_bytes)) {
          Refuse(id, connection, 431, ErrorCode::kResourceExhausted,
                 fmt::format("the request line and headers exceed {}",
                             FormatBytes(limits_.max_header_bytes)));
        }
        return;
      }
      connection.request = api::Request{};
      connection.request.peer = connection.peer;  // for the audit log
      connection.head = Head{};
      connection.head_end = end + 4;
      Status parsed = ParseHead(std::string_view(connection.in).substr(0, end), connection.request,
                                connection.head);
      if (!parsed) {
        return Refuse(id, connection, 400, ErrorCode::kInvalidArgument, parsed.error().message);
      }
      if (connection.head.chunked) {
        return Refuse(id, connection, 501, ErrorCode::kInvalidArgument,
                      "chunked request bodies are not supported; send Content-Length");
      }
      if (connection.head.content_length > limits_.max_body_bytes) {
        connection.drain_left =
            connection.head.content_length -
            static_cast<std::int64_t>(connection.in.size() - connection.head_end);
        return Refuse(
            id, connection, 413, ErrorCode::kResourceExhausted,
            fmt::format("request body of {} bytes is over the limit of {} "
                        "(the server's --max-body)",
                        connection.head.content_length, FormatBytes(limits_.max_body_bytes)));
      }
      if (connection.head.expect_continue && connection.head.content_length > 0) {
        constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        connection.stream.Write(kContinue.data(), kContinue.size());
      }
      connection.phase = Phase::kBody;
      connection.deadline = After(limits_.body_timeout_ms);
    }
    if (connection.phase == Phase::kBody) {
      const std::size_t total =
          connection.head_end + static_cast<std::size_t>(connection.head.content_length);
      if (connection.in.size() < total) return;
      connection.request.body =
          connection.in.substr(connection.head_end, total - connection.head_end);
      connection.in.erase(0, total);
      connection.scanned = 0;
      connection.request.may_park = true;
      Dispatch(id, connection);
    }
  }

  // Hands a complete request to its lane.
  void Dispatch(std::uint64_t id, Connection& connection) {
    Lane lane = handler_.LaneFor(connection.request);
    if (lane == Lane::kLongPoll && long_polls_busy_ >= limits_.max_long_polls) {
      return Respond(id, connection,
                     FrontError(429, ErrorCode::kResourceExhausted,
                                fmt::format("{} long polls are waiting, the server's limit "
                                            "(--max-long-polls); try again without wait_ms or "
                                            "later",
                                            limits_.max_long_polls)));
    }
    if (lane == Lane::kInline) return Respond(id, connection, handler_.Serve(connection.request));
    connection.phase = Phase::kServing;
    connection.dispatched_tick = wake_tick_;
    SetInterest(id, connection, 0);
    if (lane == Lane::kLongPoll) ++long_polls_busy_;
    LanePool& pool = lane == Lane::kShort ? short_ : lane == Lane::kLongPoll ? long_polls_ : agent_;
    pool.Submit([this, id, lane, request = std::move(connection.request)]() mutable {
      Completion done{id, lane, handler_.Serve(request), {}};
      if (done.response.park) done.request = std::move(request);
      {
        std::lock_guard lock(completed_mu_);
        completed_.push_back(std::move(done));
      }
      Wake();
    });
  }

  // Runs the requests parked under the keys woken, then sends the lanes' answers or parks them.
  void Complete() {
    std::vector<Completion> completed;
    std::vector<std::string> woken;
    {
      std::lock_guard lock(completed_mu_);
      completed.swap(completed_);
      woken.swap(woken_);
    }
    if (streams_woken_.exchange(false)) {
      for (std::uint64_t id : std::vector<std::uint64_t>(streams_.begin(), streams_.end())) {
        Pump(id, connections_.at(id));
      }
    }
    for (const std::string& key : woken) {
      last_wake_[key] = ++wake_tick_;
      auto [begin, end] = parked_.equal_range(key);
      std::vector<std::uint64_t> ids;
      for (auto it = begin; it != end; ++it) ids.push_back(it->second);
      for (std::uint64_t id : ids) Resume(id, connections_.at(id), /*may_park=*/true);
    }
    for (Completion& done : completed) {
      if (done.lane == Lane::kLongPoll) --long_polls_busy_;
      auto it = connections_.find(done.id);
      if (it == connections_.end()) continue;
      if (it->second.gone) {
        Close(done.id);
        continue;
      }
      if (done.response.park) {
        Park(done.id, it->second, std::move(done.request), *done.response.park);
      } else {
        Respond(done.id, it->second, done.response);
      }
    }
  }

  // Holds `request` under `park` until its key is woken or its deadline passes; at once when
  // its key was woken since the request went to its lane (the wake may concern what the
  // handler did not see).
  void Park(std::uint64_t id, Connection& connection, api::Request request, const api::Park& park) {
    connection.request = std::move(request);
    if (!connection.park_deadline) connection.park_deadline = After(park.wait_ms);
    auto woken = last_wake_.find(park.key);
    if (woken != last_wake_.end() && woken->second > connection.dispatched_tick) {
      return Dispatch(id, connection);
    }
    connection.phase = Phase::kParked;
    connection.park_key = park.key;
    parked_.emplace(park.key, id);
    ++parked_count_;
    SetInterest(id, connection, EPOLLRDHUP);
  }

  // Hands a parked request to its lane again.
  void Resume(std::uint64_t id, Connection& connection, bool may_park) {
    Unpark(id, connection);
    connection.request.may_park = may_park;
    Dispatch(id, connection);
  }

  void Unpark(std::uint64_t id, Connection& connection) {
    if (connection.phase != Phase::kParked) return;
    auto [begin, end] = parked_.equal_range(connection.park_key);
    for (auto it = begin; it != end; ++it) {
      if (it->second == id) {
        parked_.erase(it);
        break;
      }
    }
    --parked_count_;
  }

  void Respond(std::uint64_t id, Connection& connection, const api::Response& response) {
    connection.park_deadline.reset();
    if (response.stream) return StartStream(id, connection, response);
    connection.out = Serialize(response, connection.head.keep_alive);
    connection.written = 0;
    connection.close_after_write = !connection.head.keep_alive;
    connection.phase = Phase::kWriting;
    connection.deadline = After(limits_.write_timeout_ms);
    Flush(id, connection);
  }

  // Sends `response`'s head and first bytes, then its stream as Pump reads it. The connection
  // ends with the stream (close-delimited: no request follows on it).
  void StartStream(std::uint64_t id, Connection& connection, const api::Response& response) {
    std::string head = fmt::format("HTTP/1.1 {} {}\r\n", response.status, Reason(response.status));
    head += "Content-Type: " + response.content_type + "\r\n";
    head += "Cache-Control: no-cache\r\nConnection: close\r\n";
    for (const auto& [name, value] : response.headers) head += name + ": " + value + "\r\n";
    connection.out = head + "\r\n" + response.body;
    connection.written = 0;
    connection.close_after_write = false;
    connection.in.clear();
    connection.stream_body = response.stream;
    connection.phase = Phase::kStreaming;
    connection.deadline = After(limits_.write_timeout_ms);
    connection.last_sent = std::chrono::steady_clock::now();
    // The kernel keeps no more than the front does for a reader that stops reading.
    const int buffer =
        static_cast<int>(std::min<std::int64_t>(limits_.stream_buffer_bytes, 1 << 30));
    ::setsockopt(connection.stream.fd(), SOL_SOCKET, SO_SNDBUF, &buffer, sizeof(buffer));
    streams_.insert(id);
    ++streams_count_;
    Pump(id, connection);
  }

  // Reads what the stream has ready, while fewer than stream_buffer_bytes wait unsent, and sends
  // it, until the socket is full or the stream has nothing more; closes the connection once an
  // ended stream's last bytes are sent.
  void Pump(std::uint64_t id, Connection& connection) {
    const auto budget = static_cast<std::size_t>(limits_.stream_buffer_bytes);
    while (true) {
      const std::size_t waiting = connection.out.size() - connection.written;
      if (connection.close_after_write) return Flush(id, connection);
      if (waiting >= budget) {
        // Full: nothing more is read, but a reader this far behind that the stream ended (it
        // fell behind the ring) is dropped now; it would not read the final frame soon.
        std::string ignored;
        if (!connection.stream_body->Pull(ignored, 0)) return Close(id);
        return Flush(id, connection);
      }
      connection.out.erase(0, connection.written);
      connection.written = 0;
      if (!connection.stream_body->Pull(connection.out, budget - waiting)) {
        connection.close_after_write = true;
      }
      const bool pulled = connection.out.size() > waiting;
      if (pulled) connection.last_sent = std::chrono::steady_clock::now();
      Flush(id, connection);
      if (connections_.count(id) == 0) return;  // closed
      if (!pulled || connection.written < connection.out.size()) return;
    }
  }

  // A streaming connection's socket event: a hang-up closes it; what the client sends is read
  // and dropped; room to write sends more.
  void OnStreamEvent(std::uint64_t id, Connection& connection, std::uint32_t events) {
    if (events & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)) return Close(id);
    if (events & EPOLLIN) {
      char buffer[4096];
      while (true) {
        IoResult read = connection.stream.Read(buffer, sizeof(buffer));
        if (read.closed) return Close(id);
        if (read.bytes == 0) break;
      }
    }
    if (events & EPOLLOUT) Pump(id, connection);
  }

  // Answers with the front's own error and closes the connection once it is sent (and, for a
  // body over the limit, once the body has been read and dropped).
  void Refuse(std::uint64_t id, Connection& connection, int status, ErrorCode code,
              std::string message) {
    connection.out = Serialize(FrontError(status, code, std::move(message)), false);
    connection.written = 0;
    connection.close_after_write = true;
    connection.in.clear();
    connection.phase = Phase::kWriting;
    connection.deadline = After(limits_.body_timeout_ms);
    Flush(id, connection);
  }

  void Flush(std::uint64_t id, Connection& connection) {
    while (connection.written < connection.out.size()) {
      IoResult sent = connection.stream.Write(connection.out.data() + connection.written,
                                              connection.out.size() - connection.written);
      if (sent.closed) return Close(id);
      if (sent.bytes == 0) {
        if (connection.phase == Phase::kStreaming) {
          return SetInterest(id, connection, EPOLLOUT | EPOLLIN | EPOLLRDHUP);
        }
        return SetInterest(id, connection,
                           EPOLLOUT | (connection.close_after_write ? EPOLLIN : 0u));
      }
      connection.written += sent.bytes;
      if (connection.phase == Phase::kStreaming) {
        connection.deadline = After(limits_.write_timeout_ms);  // the reader takes bytes
      }
    }
    connection.out.clear();
    connection.written = 0;
    if (connection.phase == Phase::kStreaming) {
      if (connection.close_after_write) return Close(id);
      return SetInterest(id, connection, EPOLLIN | EPOLLRDHUP);
    }
    if (connection.close_after_write) {
      if (connection.drain_left <= 0) return Close(id);
      connection.phase = Phase::kIdle;  // reading only to drop the refused body
      return SetInterest(id, connection, EPOLLIN);
    }
    connection.phase = Phase::kIdle;
    connection.deadline = After(limits_.idle_timeout_ms);
    SetInterest(id, connection, EPOLLIN);
    if (!connection.in.empty()) Advance(id, connection);  // a pipelined request
  }

  void SetInterest(std::uint64_t id, Connection& connection, std::uint32_t events) {
    if (connection.interest == events) return;
    connection.interest = events;
    epoll_event event{};
    event.events = events;
    event.data.u64 = id;
    ::epoll_ctl(epoll_, EPOLL_CTL_MOD, connection.stream.fd(), &event);
  }

  // Ends connections past their deadline: a parked request runs to its answer; a request that
  // did not arrive in time is answered 408; an idle connection, an unread response or a refused
  // body is closed.
  void Expire(SteadyTime now) {
    std::vector<std::uint64_t> expired;
    std::vector<std::uint64_t> unparked;
    std::vector<std::uint64_t> heartbeats;
    for (auto& [id, connection] : connections_) {
      if (connection.phase == Phase::kParked) {
        if (*connection.park_deadline <= now) unparked.push_back(id);
      } else if (connection.phase == Phase::kStreaming) {
        const bool waiting = connection.written < connection.out.size();
        if (waiting && connection.deadline <= now) {
          expired.push_back(id);  // its reader took nothing for write_timeout_ms
        } else if (!waiting && now - connection.last_sent >=
                                   std::chrono::milliseconds(limits_.stream_heartbeat_ms)) {
          heartbeats.push_back(id);
        }
      } else if (connection.phase != Phase::kServing && connection.deadline <= now) {
        expired.push_back(id);
      }
    }
    for (std::uint64_t id : unparked) Resume(id, connections_.at(id), /*may_park=*/false);
    for (std::uint64_t id : heartbeats) {
      // An idle stream is read before its heartbeat: one that has ended meanwhile without an
      // event to wake it (its token expired) sends its last frame instead, and closes.
      Connection& connection = connections_.at(id);
      if (connection.stream_body->Pull(connection.out, 0)) {
        connection.out += connection.stream_body->Heartbeat();
      } else {
        connection.close_after_write = true;
      }
      connection.last_sent = now;
      Flush(id, connection);
    }
    for (std::uint64_t id : expired) {
      Connection& connection = connections_.at(id);
      if (connection.phase == Phase::kHeaders && !connection.close_after_write) {
        Refuse(id, connection, 408, ErrorCode::kDeadlineExceeded,
               fmt::format("the request's headers did not arrive within {} (--header-timeout)",
                           FormatDuration(limits_.header_timeout_ms)));
      } else if (connection.phase == Phase::kBody) {
        Refuse(id, connection, 408, ErrorCode::kDeadlineExceeded,
               fmt::format("the request's body did not arrive within {} (--body-timeout)",
                           FormatDuration(limits_.body_timeout_ms)));
      } else {
        Close(id);
      }
    }
  }

  void Close(std::uint64_t id) {
    auto it = connections_.find(id);
    if (it == connections_.end()) return;
    Connection& connection = it->second;
    Unpark(id, connection);
    if (streams_.erase(id) > 0) --streams_count_;
    if (!connection.gone) ::epoll_ctl(epoll_, EPOLL_CTL_DEL, connection.stream.fd(), nullptr);
    connection.stream.Close();
    --(connection.agent ? agent_open_ : api_open_);
    if (!connection.agent && --per_client_[connection.peer] <= 0) {
      per_client_.erase(connection.peer);
    }
    --open_;
    connections_.erase(it);
  }

  HttpHandler& handler_;
  const HttpLimits limits_;
  int api_listener_ = -1;
  int agent_listener_ = -1;
  int epoll_ = -1;
  int wake_ = -1;
  std::unique_ptr<TlsContext> tls_;  // both listeners speak TLS when set
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  // The event thread's own state.
  std::map<std::uint64_t, Connection> connections_;
  std::map<std::string, int> per_client_;  // API listener connections per client address
  int api_open_ = 0;
  int agent_open_ = 0;
  std::uint64_t next_id_ = kFirstConnectionId;

  std::atomic<int> open_{0};
  std::atomic<int> long_polls_busy_{0};

  // Parked requests by key; the tick of each key's last wake (kept per key: the keys are the
  // remote nodes, a bounded set).
  std::multimap<std::string, std::uint64_t> parked_;
  std::map<std::string, std::uint64_t> last_wake_;
  std::uint64_t wake_tick_ = 0;
  std::atomic<int> parked_count_{0};

  // Connections sending a streaming response (kStreaming), and whether WakeStreams was called
  // since the event thread last read their streams.
  std::set<std::uint64_t> streams_;
  std::atomic<int> streams_count_{0};
  std::atomic<bool> streams_woken_{false};

  std::mutex completed_mu_;
  std::vector<Completion> completed_;  // GUARDED_BY(completed_mu_)
  std::vector<std::string> woken_;     // keys woken by WakeParked; GUARDED_BY(completed_mu_)

  LanePool short_;
  LanePool long_polls_;
  LanePool agent_;
};

HttpFront::HttpFront(std::unique_ptr<Loop> loop) : loop_(std::move(loop)) {}

HttpFront::~HttpFront() = default;

Result<std::unique_ptr<HttpFront>> HttpFront::Bind(HttpHandler& handler, const HttpLimits& limits,
                                                   const std::string& host, int port,
                                                   const std::string& agent_host, int agent_port,
                                                   const TlsFiles& tls) {
  auto loop = std::make_unique<Loop>(handler, limits);
  DROVER_RETURN_IF_ERROR(loop->Bind(host, port, agent_host, agent_port, tls));
  return std::unique_ptr<HttpFront>(new HttpFront(std::move(loop)));
}

void HttpFront::Start() { loop_->Start(); }
void HttpFront::Stop() { loop_->Stop(); }
int HttpFront::port() const { return loop_->port(); }
int HttpFront::agent_port() const { return loop_->agent_port(); }
HttpStats HttpFront::Stats() const { return loop_->Stats(); }
void HttpFront::WakeParked(const std::string& key) { loop_->WakeParked(key); }
void HttpFront::WakeStreams() { loop_->WakeStreams(); }

}  // namespace drover::server
