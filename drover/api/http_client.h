#pragma once

// HttpClient: the HTTP/1.1 client under ApiClient, one connection to one server at a time.
//
// Why our own, not cpp-httplib's client: the `drover` CLI is a process per command, and loading
// cpp-httplib's shared library (OpenSSL, brotli and zlib with it, and OpenSSL's initialisation)
// cost 7.4 of its 10.9 ms start (docs/benchmarks.md, "Where a CLI start goes"). This file needs
// only the C library, so the lean `drover` speaks plain HTTP without them. TLS is a ByteStream
// made by a TlsConnector (tls_client.h, OpenSSL), which only drover-full links: the lean binary
// hands a command line that names an https:// server to drover-full (drover/cli/cli.h).
//
// What it speaks: requests with a Content-Length body (or none); answers with a Content-Length,
// chunked, or close-delimited body, 1xx interim answers skipped. No compression is asked for.
// Bounds: the status line and headers within kMaxResponseHeadBytes, a collected body within
// ConnectOptions::max_body_bytes (kMaxResponseBodyBytes unless set lower; a streamed one has no
// bound: its reader decides); connecting within connect_timeout_ms, each read or write within
// io_timeout_ms and, when answer_timeout_ms is set, the whole exchange within it.
// A connection is kept between requests while the server allows it (HTTP/1.1 without
// "Connection: close"); before one is reused it is checked, and one the server closed (an idle
// timeout) is replaced before anything is sent on it. Not thread-safe.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/result.h"

namespace drover::api {

inline constexpr std::size_t kMaxResponseHeadBytes = 64 << 10;
inline constexpr std::size_t kMaxResponseBodyBytes = std::size_t{1} << 30;

// A server's URL, parsed: "http://HOST:PORT" or "https://HOST:PORT" (a missing scheme is http;
// a missing port 80 or 443; one trailing '/' allowed, no other path). HOST is a name, an IPv4
// address or a bracketed IPv6 address.
struct ServerAddress {
  std::string url;  // as given, for messages
  bool tls = false;
  std::string host;  // without brackets
  std::string port;
  // The Host header's value: host:port, an IPv6 address in brackets.
  std::string HostHeader() const;
};
// kInvalidArgument naming the URL and the form expected.
Result<ServerAddress> ParseServerUrl(std::string_view url);

// Why an exchange failed. kRequest: the request cannot be written as HTTP (a target that does
// not start with '/', a header name that is not a token, a CR, LF or NUL in a header's value);
// nothing was sent. kConnect: no connection was made (nothing was sent, so another
// server may be asked); kTls: the TLS handshake or its certificate check failed (nothing was
// sent either, but another server would not do better); kTransfer: the connection failed or
// timed out mid-exchange, or the answer broke HTTP or a bound; kStopped: a ResponseStream's
// callback returned false.
enum class HttpFailure { kRequest, kConnect, kTls, kTransfer, kStopped };
struct HttpError {
  HttpFailure failure = HttpFailure::kTransfer;
  std::string message;  // one sentence, without the server's URL (the caller adds it), or, for
                        // kTls, the whole sentence the user sees
};
template <typename T>
using HttpResult = tl::expected<T, HttpError>;

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string_view method;  // GET, POST, PUT, DELETE
  // The path and query; a space, control byte or byte above ASCII in it is sent percent-encoded.
  std::string_view target;
  const HttpHeaders* headers = nullptr;
  std::string_view body = {};
  std::string_view content_type = {};  // sent with the body when not empty
};

struct HttpResponse {
  int status = 0;
  HttpHeaders headers;
  std::string body;  // empty when streamed
  // The value of the first header named `name` (case-insensitive); "" when there is none.
  std::string Header(std::string_view name) const;
};

// Streams an answer's body instead of collecting it: `on_head` sees the status and headers
// first, `on_body` each piece as it arrives. A callback that returns false ends the exchange
// (kStopped) and the connection with it.
struct ResponseStream {
  std::function<bool(const HttpResponse& head)> on_head;
  std::function<bool(std::string_view piece)> on_body;
};

// A time limit that runs from its creation, on the monotonic clock.
class WaitLimit {
 public:
  explicit WaitLimit(DurationMs ms);
  DurationMs Left() const;  // what is left of it, at least 0
  DurationMs ms() const { return ms_; }

 private:
  DurationMs ms_;
  std::chrono::steady_clock::time_point start_;
};

// A connected byte stream: a socket, or a TLS session over one.
class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Writes all of `data` within `limit`; a kTransfer error when the connection fails or the
  // limit passes.
  virtual HttpResult<void> WriteAll(std::string_view data, const WaitLimit& limit) = 0;
  // Reads at least one byte into `buffer` (at most `size`) within `limit`; 0 at the end of the
  // stream.
  virtual HttpResult<std::size_t> ReadSome(char* buffer, std::size_t size,
                                           const WaitLimit& limit) = 0;
  // Whether the peer, between exchanges, closed the stream or sent something unasked for: then
  // it must not carry another request. Does not block.
  virtual bool Stale() = 0;
};

struct ConnectOptions {
  DurationMs connect_timeout_ms = 5 * kMillisPerSecond;
  DurationMs io_timeout_ms = kMillisPerMinute;
  // The whole exchange, from the request's first byte to the answer's last, within this: a peer
  // that trickles its answer a byte per io_timeout_ms is cut off (kTransfer). 0: no such bound
  // (for answers streamed for as long as their reader wants: logs followed, events).
  DurationMs answer_timeout_ms = 0;
  // A collected body over this is a kTransfer error (a streamed one is its reader's to bound).
  std::size_t max_body_bytes = kMaxResponseBodyBytes;
  std::string ca_file;  // TLS: the PEM bundle the server's certificate is checked against
};

// Makes the TLS session over `fd`, a socket connected to `address` and owned from now on (closed
// on failure): tls_client.h's ConnectTls.
using TlsConnector = HttpResult<std::unique_ptr<ByteStream>> (*)(int fd,
                                                                 const ServerAddress& address,
                                                                 const ConnectOptions& options);

// Waits until the non-blocking socket `fd` can be written (`for_write`) or read, within what is
// left of `limit`: a kTransfer error saying it timed out ("no answer within <limit> ms"), or why
// poll failed. For ByteStreams.
HttpResult<void> WaitForSocket(int fd, bool for_write, const WaitLimit& limit);

class HttpClient {
 public:
  // `tls` may be null; then an https address fails each request with kTls, saying so.
  HttpClient(ServerAddress address, ConnectOptions options, TlsConnector tls);
  ~HttpClient();
  HttpClient(HttpClient&&) noexcept;
  HttpClient& operator=(HttpClient&&) noexcept;

  // Sends `request` and reads its answer, collected, or handed to `stream` when it is given.
  HttpResult<HttpResponse> Send(const HttpRequest& request, const ResponseStream* stream = nullptr);

  const ServerAddress& address() const { return address_; }

 private:
  HttpResult<void> Connect();
  HttpResult<HttpResponse> Exchange(const HttpRequest& request, const ResponseStream* stream);

  ServerAddress address_;
  ConnectOptions options_;
  TlsConnector tls_;
  std::unique_ptr<ByteStream> stream_;  // null: not connected
};

}  // namespace drover::api
