#include "drover/api/http_client.h"

#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "drover/common/ascii.h"

namespace drover::api {
namespace {

HttpError Failure(HttpFailure failure, std::string message) {
  return HttpError{failure, std::move(message)};
}

tl::unexpected<HttpError> TransferError(std::string message) {
  return tl::unexpected(Failure(HttpFailure::kTransfer, std::move(message)));
}

// The socket itself.
class PlainStream final : public ByteStream {
 public:
  explicit PlainStream(int fd) : fd_(fd) {}
  ~PlainStream() override { ::close(fd_); }
  PlainStream(const PlainStream&) = delete;
  PlainStream& operator=(const PlainStream&) = delete;

  HttpResult<void> WriteAll(std::string_view data, const WaitLimit& limit) override {
    while (!data.empty()) {
      const ssize_t sent = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (sent > 0) {
        data.remove_prefix(static_cast<std::size_t>(sent));
      } else if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        DROVER_RETURN_IF_ERROR(WaitForSocket(fd_, /*for_write=*/true, limit));
      } else if (sent < 0 && errno != EINTR) {
        return TransferError(fmt::format("sending failed: {}", std::strerror(errno)));
      }
    }
    return {};
  }

  HttpResult<std::size_t> ReadSome(char* buffer, std::size_t size,
                                   const WaitLimit& limit) override {
    for (;;) {
      const ssize_t got = ::recv(fd_, buffer, size, 0);
      if (got >= 0) return static_cast<std::size_t>(got);
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        DROVER_RETURN_IF_ERROR(WaitForSocket(fd_, /*for_write=*/false, limit));
      } else if (errno != EINTR) {
        return TransferError(fmt::format("reading failed: {}", std::strerror(errno)));
      }
    }
  }

  bool Stale() override {
    pollfd readable{fd_, POLLIN, 0};
    return ::poll(&readable, 1, 0) != 0;  // an end of stream, bytes unasked for, or an error
  }

 private:
  int fd_;
};

// A TCP connection to `address` within `timeout_ms`, each of its resolved addresses in turn:
// the socket (non-blocking, close-on-exec, TCP_NODELAY), or kConnect with the last reason.
HttpResult<int> ConnectTcp(const ServerAddress& address, DurationMs timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(address.host.c_str(), address.port.c_str(), &hints, &found);
      rc != 0) {
    return tl::unexpected(
        Failure(HttpFailure::kConnect,
                fmt::format("cannot resolve {}: {}", address.host, ::gai_strerror(rc))));
  }
  std::string reason = "no address";
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      reason = std::strerror(errno);
      continue;
    }
    int error = 0;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      error = errno;
      if (error == EINPROGRESS) {
        HttpResult<void> ready = WaitForSocket(fd, /*for_write=*/true, WaitLimit(timeout_ms));
        socklen_t length = sizeof(error);
        if (!ready) {
          error = ETIMEDOUT;
        } else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) {
          error = errno;
        }
      }
    }
    if (error == 0) {
      const int one = 1;
      // The request's head and body go in one write, but an answer to a previous one may still
      // be acknowledged late: without it, Nagle and delayed ACKs can add 40 ms.
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      ::freeaddrinfo(found);
      return fd;
    }
    reason = std::strerror(error);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return tl::unexpected(Failure(HttpFailure::kConnect, "cannot connect: " + reason));
}

// The limits of one exchange: each write or read within io_timeout_ms and, with an
// answer_timeout_ms, all of them together within that.
class ExchangeTimer {
 public:
  explicit ExchangeTimer(const ConnectOptions& options)
      : io_timeout_ms_(options.io_timeout_ms), whole_(options.answer_timeout_ms) {}

  // Writes `data` to `stream` within the time left.
  HttpResult<void> Write(ByteStream& stream, std::string_view data) const {
    DROVER_RETURN_IF_ERROR(CheckLeft());
    return Explained(stream.WriteAll(data, NextLimit()));
  }
  // Reads from `stream` within the time left.
  HttpResult<std::size_t> Read(ByteStream& stream, char* buffer, std::size_t size) const {
    DROVER_RETURN_IF_ERROR(CheckLeft());
    return Explained(stream.ReadSome(buffer, size, NextLimit()));
  }

 private:
  bool Bounded() const { return whole_.ms() > 0; }
  bool Spent() const { return Bounded() && whole_.Left() == 0; }
  HttpResult<void> CheckLeft() const {
    if (Spent()) return TransferError(fmt::format("no whole answer within {} ms", whole_.ms()));
    return {};
  }
  WaitLimit NextLimit() const {
    return WaitLimit(Bounded() ? std::min(io_timeout_ms_, whole_.Left()) : io_timeout_ms_);
  }
  // A call cut short by the whole exchange's bound fails as that, not as a read that timed out
  // after the few milliseconds it was left.
  template <typename T>
  HttpResult<T> Explained(HttpResult<T> result) const {
    if (!result && Spent()) return tl::unexpected(CheckLeft().error());
    return result;
  }

  DurationMs io_timeout_ms_;
  WaitLimit whole_;
};

// Reads an answer from a ByteStream through a buffer.
class ResponseReader {
 public:
  ResponseReader(ByteStream& stream, const ExchangeTimer& timer) : stream_(stream), timer_(timer) {}

  // The next line without its CRLF (or LF), counted against `budget`; kTransfer with
  // `too_long` when it goes past it.
  HttpResult<std::string> Line(std::size_t& budget, std::string_view too_long) {
    for (;;) {
      const std::size_t end = buffer_.find('\n', start_);
      if (end != std::string::npos) {
        std::size_t line_end = end;
        if (line_end > start_ && buffer_[line_end - 1] == '\r') --line_end;
        std::string line = buffer_.substr(start_, line_end - start_);
        if (end + 1 - start_ > budget) break;
        budget -= end + 1 - start_;
        start_ = end + 1;
        return line;
      }
      if (buffer_.size() - start_ > budget) break;
      DROVER_ASSIGN_OR_RETURN(const std::size_t got, Fill());
      if (got == 0) return TransferError("the server closed the connection mid-answer");
    }
    return TransferError(std::string(too_long));
  }

  // Hands exactly `size` bytes to `sink` (false from it: kStopped).
  template <typename Sink>
  HttpResult<void> Exactly(std::uint64_t size, Sink& sink) {
    while (size > 0) {
      if (start_ == buffer_.size()) {
        DROVER_ASSIGN_OR_RETURN(const std::size_t got, Fill());
        if (got == 0) return TransferError("the server closed the connection mid-answer");
      }
      const std::size_t take =
          static_cast<std::size_t>(std::min<std::uint64_t>(size, buffer_.size() - start_));
      DROVER_RETURN_IF_ERROR(sink(std::string_view(buffer_).substr(start_, take)));
      start_ += take;
      size -= take;
    }
    return {};
  }

  // Hands everything to the end of the stream to `sink`.
  template <typename Sink>
  HttpResult<void> ToEnd(Sink& sink) {
    for (;;) {
      if (start_ < buffer_.size()) {
        DROVER_RETURN_IF_ERROR(sink(std::string_view(buffer_).substr(start_)));
        start_ = buffer_.size();
      }
      DROVER_ASSIGN_OR_RETURN(const std::size_t got, Fill());
      if (got == 0) return {};
    }
  }

 private:
  HttpResult<std::size_t> Fill() {
    if (start_ == buffer_.size()) {
      buffer_.clear();
      start_ = 0;
    }
    const std::size_t old_size = buffer_.size();
    buffer_.resize(old_size + kReadSize);
    HttpResult<std::size_t> got = timer_.Read(stream_, buffer_.data() + old_size, kReadSize);
    buffer_.resize(old_size + (got ? *got : 0));
    return got;
  }

  static constexpr std::size_t kReadSize = 16 << 10;
  ByteStream& stream_;
  const ExchangeTimer& timer_;
  std::string buffer_;
  std::size_t start_ = 0;  // buffer_[start_..] is unread
};

// "HTTP/1.x NNN reason": the status, or kTransfer.
HttpResult<int> ParseStatusLine(const std::string& line, bool& http_1_0) {
  int status = 0;
  if (line.size() < 12 || line.compare(0, 7, "HTTP/1.") != 0 || line[8] != ' ' ||
      std::from_chars(line.data() + 9, line.data() + 12, status).ptr != line.data() + 12 ||
      status < 100 || (line.size() > 12 && line[12] != ' ')) {
    return TransferError(fmt::format("the server's answer is not HTTP/1.x: {:.80}", line));
  }
  http_1_0 = line[7] == '0';
  return status;
}

bool HasToken(std::string_view list, std::string_view token) {
  for (std::size_t start = 0; start <= list.size();) {
    std::size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    if (EqualsIgnoringCase(TrimSpacesAndTabs(list.substr(start, end - start)), token)) return true;
    start = end + 1;
  }
  return false;
}

// Refuses what would let a header end its line and write more of the request: a header name
// must be a token, its value free of CR, LF and NUL. (The target is made safe by
// EncodedTarget.)
HttpResult<void> CheckRequest(const HttpRequest& request) {
  const auto refuse = [](std::string message) {
    return tl::unexpected(Failure(HttpFailure::kRequest, std::move(message)));
  };
  if (request.target.empty() || request.target.front() != '/') {
    return refuse(fmt::format("the request's path {:?} does not start with /",
                              request.target.substr(0, 200)));
  }
  if (request.headers == nullptr) return {};
  for (const auto& [name, value] : *request.headers) {
    const bool token =
        !name.empty() &&
        name.find_first_not_of(
            "!#$%&'*+-.^_`|~0123456789"
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") == std::string::npos;
    if (!token) return refuse(fmt::format("header name {:?} is not an HTTP token", name));
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
      return refuse(fmt::format("header {}: its value holds a line break or NUL", name));
    }
  }
  return {};
}

// `target` with each byte that may not stand in a request line (a space, a control byte, a byte
// above ASCII) percent-encoded, as cpp-httplib's client did; the rest, '%' included, as it is.
std::string EncodedTarget(std::string_view target) {
  std::string out;
  out.reserve(target.size());
  for (const char c : target) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte >= 0x7f) {
      fmt::format_to(std::back_inserter(out), "%{:02X}", byte);
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

WaitLimit::WaitLimit(DurationMs ms) : ms_(ms), start_(std::chrono::steady_clock::now()) {}

DurationMs WaitLimit::Left() const {
  const DurationMs spent = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::now() - start_)
                               .count();
  return std::max<DurationMs>(ms_ - spent, 0);
}

HttpResult<void> WaitForSocket(int fd, bool for_write, const WaitLimit& limit) {
  pollfd ready{fd, static_cast<short>(for_write ? POLLOUT : POLLIN), 0};
  for (;;) {
    const int rc = ::poll(&ready, 1, static_cast<int>(std::min<DurationMs>(limit.Left(), 1 << 30)));
    if (rc > 0) return {};
    if (rc == 0) {
      return TransferError(fmt::format("no answer within {} ms", limit.ms()));
    }
    if (errno != EINTR) return TransferError(fmt::format("poll: {}", std::strerror(errno)));
  }
}

std::string ServerAddress::HostHeader() const {
  return host.find(':') == std::string::npos ? host + ":" + port : "[" + host + "]:" + port;
}

Result<ServerAddress> ParseServerUrl(std::string_view url) {
  const auto bad = [&](std::string_view why) {
    return InvalidArgument(fmt::format(
        "server URL {:?}: {}; expected http://HOST:PORT or https://HOST:PORT", url, why));
  };
  ServerAddress address;
  address.url = std::string(url);
  std::string_view rest = url;
  if (const std::size_t scheme = rest.find("://"); scheme != std::string_view::npos) {
    const std::string_view name = rest.substr(0, scheme);
    if (EqualsIgnoringCase(name, "https")) {
      address.tls = true;
    } else if (!EqualsIgnoringCase(name, "http")) {
      return bad("the scheme is neither http nor https");
    }
    rest.remove_prefix(scheme + 3);
  }
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  std::string_view port;
  if (!rest.empty() && rest.front() == '[') {
    const std::size_t close = rest.find(']');
    if (close == std::string_view::npos) return bad("an IPv6 address without its ']'");
    address.host = std::string(rest.substr(1, close - 1));
    rest.remove_prefix(close + 1);
    if (!rest.empty() && rest.front() != ':') return bad("a path or text after the host");
    if (!rest.empty()) port = rest.substr(1);
  } else {
    const std::size_t colon = rest.find(':');
    address.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) port = rest.substr(colon + 1);
  }
  if (address.host.empty()) return bad("no host");
  if (address.host.find_first_of("/?#@ \t\r\n") != std::string::npos) {
    return bad("a path, user or space in the host");
  }
  if (port.empty()) {
    address.port = address.tls ? "443" : "80";
    return address;
  }
  int number = 0;
  if (std::from_chars(port.data(), port.data() + port.size(), number).ptr !=
          port.data() + port.size() ||
      number < 1 || number > 65535) {
    return bad("the port is not a number from 1 to 65535");
  }
  address.port = std::to_string(number);
  return address;
}

std::string HttpResponse::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (EqualsIgnoringCase(key, name)) return value;
  }
  return "";
}

HttpClient::HttpClient(ServerAddress address, ConnectOptions options, TlsConnector tls)
    : address_(std::move(address)), options_(std::move(options)), tls_(tls) {}
HttpClient::~HttpClient() = default;
HttpClient::HttpClient(HttpClient&&) noexcept = default;
HttpClient& HttpClient::operator=(HttpClient&&) noexcept = default;

HttpResult<void> HttpClient::Connect() {
  stream_.reset();
  if (address_.tls && tls_ == nullptr) {
    return tl::unexpected(
        Failure(HttpFailure::kTls,
                fmt::format("{}: this binary speaks plain HTTP only; drover-full speaks https",
                            address_.url)));
  }
  DROVER_ASSIGN_OR_RETURN(const int fd, ConnectTcp(address_, options_.connect_timeout_ms));
  if (address_.tls) {
    DROVER_ASSIGN_OR_RETURN(stream_, tls_(fd, address_, options_));
  } else {
    stream_ = std::make_unique<PlainStream>(fd);
  }
  return {};
}

HttpResult<HttpResponse> HttpClient::Send(const HttpRequest& request,
                                          const ResponseStream* stream) {
  DROVER_RETURN_IF_ERROR(CheckRequest(request));
  if (stream_ != nullptr && stream_->Stale()) stream_.reset();
  if (stream_ == nullptr) DROVER_RETURN_IF_ERROR(Connect());
  HttpResult<HttpResponse> response = Exchange(request, stream);
  if (!response) stream_.reset();  // mid-answer: the connection's state is unknown
  return response;
}

HttpResult<HttpResponse> HttpClient::Exchange(const HttpRequest& request,
                                              const ResponseStream* stream) {
  std::string head = fmt::format("{} {} HTTP/1.1\r\nHost: {}\r\n", request.method,
                                 EncodedTarget(request.target), address_.HostHeader());
  if (request.headers != nullptr) {
    for (const auto& [name, value] : *request.headers) {
      fmt::format_to(std::back_inserter(head), "{}: {}\r\n", name, value);
    }
  }
  if (!request.content_type.empty()) {
    fmt::format_to(std::back_inserter(head), "Content-Type: {}\r\n", request.content_type);
  }
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT") {
    fmt::format_to(std::back_inserter(head), "Content-Length: {}\r\n", request.body.size());
  }
  head += "\r\n";
  head.append(request.body);
  const ExchangeTimer timer(options_);
  DROVER_RETURN_IF_ERROR(timer.Write(*stream_, head));

  ResponseReader reader(*stream_, timer);
  HttpResponse response;
  bool http_1_0 = false;
  std::size_t budget = kMaxResponseHeadBytes;
  const std::string head_too_long =
      fmt::format("the answer's head is over {} bytes", kMaxResponseHeadBytes);
  do {  // 1xx answers come before the real one
    DROVER_ASSIGN_OR_RETURN(const std::string status_line, reader.Line(budget, head_too_long));
    DROVER_ASSIGN_OR_RETURN(response.status, ParseStatusLine(status_line, http_1_0));
    response.headers.clear();
    for (;;) {
      DROVER_ASSIGN_OR_RETURN(const std::string line, reader.Line(budget, head_too_long));
      if (line.empty()) break;
      const std::size_t colon = line.find(':');
      if (colon == std::string::npos || colon == 0) {
        return TransferError(fmt::format("a header line without a name: {:.80}", line));
      }
      response.headers.emplace_back(
          line.substr(0, colon),
          std::string(TrimSpacesAndTabs(std::string_view(line).substr(colon + 1))));
    }
  } while (response.status < 200);

  bool keep = !http_1_0 && !HasToken(response.Header("Connection"), "close");
  const bool stop_at_head = stream != nullptr && !stream->on_head(response);
  if (stop_at_head) return tl::unexpected(Failure(HttpFailure::kStopped, "stopped"));
  const auto sink = [&](std::string_view piece) -> HttpResult<void> {
    if (stream != nullptr) {
      if (!stream->on_body(piece)) {
        return tl::unexpected(Failure(HttpFailure::kStopped, "stopped"));
      }
      return {};
    }
    if (response.body.size() + piece.size() > options_.max_body_bytes) {
      return TransferError(
          fmt::format("the answer's body is over {} bytes", options_.max_body_bytes));
    }
    response.body.append(piece);
    return {};
  };

  const std::string length = response.Header("Content-Length");
  if (response.status == 204 || response.status == 304 || request.method == "HEAD") {
    // no body
  } else if (HasToken(response.Header("Transfer-Encoding"), "chunked")) {
    for (;;) {
      std::size_t line_budget = 1024;
      DROVER_ASSIGN_OR_RETURN(const std::string size_line,
                              reader.Line(line_budget, "a chunk's size line is over 1024 bytes"));
      std::uint64_t size = 0;
      const std::string_view digits = TrimSpacesAndTabs(
          std::string_view(size_line).substr(0, std::min(size_line.find(';'), size_line.size())));
      const auto [end, error] =
          std::from_chars(digits.data(), digits.data() + digits.size(), size, 16);
      if (digits.empty() || error != std::errc() || end != digits.data() + digits.size()) {
        return TransferError(fmt::format("a chunk's size is not hexadecimal: {:.40}", size_line));
      }
      if (size == 0) break;
      DROVER_RETURN_IF_ERROR(reader.Exactly(size, sink));
      std::size_t crlf_budget = 2;
      DROVER_ASSIGN_OR_RETURN(const std::string crlf,
                              reader.Line(crlf_budget, "a chunk longer than its size"));
      if (!crlf.empty()) return TransferError("a chunk longer than its size");
    }
    for (std::size_t trailer_budget = kMaxResponseHeadBytes;;) {
      DROVER_ASSIGN_OR_RETURN(const std::string trailer,
                              reader.Line(trailer_budget, "the answer's trailers are over 64 KiB"));
      if (trailer.empty()) break;
    }
  } else if (!length.empty()) {
    std::uint64_t size = 0;
    const auto [end, error] = std::from_chars(length.data(), length.data() + length.size(), size);
    if (error != std::errc() || end != length.data() + length.size()) {
      return TransferError(fmt::format("Content-Length is not a number: {:.40}", length));
    }
    DROVER_RETURN_IF_ERROR(reader.Exactly(size, sink));
  } else {
    keep = false;  // close-delimited
    DROVER_RETURN_IF_ERROR(reader.ToEnd(sink));
  }
  if (!keep) stream_.reset();
  return response;
}

}  // namespace drover::api
