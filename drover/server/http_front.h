#pragma once

// HttpFront: the HTTP/1.1 transport of the API server (docs/architecture.md, "Threads"): one
// epoll thread owns every socket, reads requests without blocking and hands each complete
// request to a lane, a bounded group of threads, so that no client that is slow, idle or
// waiting holds a thread another client needs.
//
// - A connection is read on the event thread only: its request line and headers must arrive
//   within HttpLimits::header_timeout_ms, its body within body_timeout_ms, and an idle
//   keep-alive connection is closed after idle_timeout_ms. A slow client therefore costs a
//   socket and its buffer, never a thread.
// - Connections are bounded per listener (max_connections) and, on the API listener, per client
//   address (max_client_connections); one over a bound is answered 503 and closed.
// - A complete request goes to the lane its handler names: kInline (answered on the event
//   thread at once: health, which must answer however busy the other lanes are), kShort (a
//   fixed pool of `threads`), kLongPoll (a thread each, at most max_long_polls at once; one more is
//   answered 429 at once) or kAgent (the agent protocol, its own pool of agent_threads, so that
//   user traffic never queues in front of an agent's heartbeat).
// - A handler may answer "not yet" (api::Response::park; the request says it may_park): the
//   connection is then parked on the event thread, holding no lane thread, until WakeParked
//   names its key (the handler runs again on its lane, may_park still set) or the park's
//   wait_ms passes since it was first parked (it runs again with may_park false, and answers).
//   A parked connection whose peer hangs up is closed. This is how an agent's long poll for
//   commands waits: a thousand waiting agents cost sockets, not threads.
// - With TLS (TlsFiles: the same certificate and key on both listeners), each connection's
//   handshake is run on the event thread like a request's head, without blocking and within
//   header_timeout_ms; a stalled handshake costs a socket. A plain HTTP request to a TLS
//   listener is answered 400 (in plain text) and closed; a connection over a bound is closed
//   without the 503. tls_stream.h has the details.
// - A response with a stream (api::Response::stream: GET /v1/events) is sent from the event
//   thread without a lane thread: its head at once (close-delimited, no Content-Length), then
//   what the stream's Pull gives whenever WakeStreams is called, while fewer than
//   stream_buffer_bytes wait unsent (the socket's kernel send buffer is set to that size too),
//   so a reader that stops reading costs at most that much. A stream whose reader takes no byte
//   for write_timeout_ms is closed; one with nothing to send for stream_heartbeat_ms gets the
//   stream's heartbeat (an SSE comment) so that proxies and clients see it is alive.
// - Errors the front answers itself (400, 408, 413, 429, 431, 501, 503) are the API's JSON
//   errors; a request over max_body_bytes is answered 413 as soon as its header says so, and
//   its body is read and dropped so that the client sees the answer.
// The handler is called from the lanes' threads, concurrently; the front is otherwise
// single-threaded. Start/Stop from one thread.

#include <cstdint>
#include <memory>
#include <string>

#include "drover/api/request.h"
#include "drover/common/clock.h"
#include "drover/common/result.h"
#include "drover/server/tls_stream.h"

namespace drover::server {

// Every bound of the front, with its default; docs/api.md ("Limits") lists the flags.
struct HttpLimits {
  // Connections open at once per listener (--max-connections).
  int max_connections = 1024;
  // Connections open at once from one client address on the API listener
  // (--max-client-connections). Not applied on the agent listener, where many agents may share
  // an address.
  int max_client_connections = 128;
  // The request line and headers must arrive within this, from their first byte
  // (--header-timeout); 408 after.
  DurationMs header_timeout_ms = 10 * kMillisPerSecond;
  // The body must arrive within this, from the end of the headers (--body-timeout); 408 after.
  DurationMs body_timeout_ms = 30 * kMillisPerSecond;
  // A keep-alive connection with no request in progress is closed after this (--idle-timeout).
  DurationMs idle_timeout_ms = 15 * kMillisPerSecond;
  // A response the client does not read within this is dropped with its connection.
  DurationMs write_timeout_ms = 30 * kMillisPerSecond;
  // The request line and headers together (431 beyond).
  std::int64_t max_header_bytes = 16 << 10;
  // A request's body (--max-body); 413 beyond.
  std::int64_t max_body_bytes = 1 << 20;
  // Threads that answer ordinary requests (--http-threads).
  int threads = 16;
  // Long polls (GET .../logs?wait_ms=) waiting at once (--max-long-polls); 429 beyond.
  int max_long_polls = 256;
  // Threads that answer the agent protocol; more agent requests queue for them. A waiting poll
  // for commands is parked and holds none, so a few serve thousands of agents.
  int agent_threads = 16;
  // A streaming response's bytes waiting unsent, and its socket's send buffer
  // (--event-stream-buffer); the stream is read no further while they wait.
  std::int64_t stream_buffer_bytes = 64 << 10;
  // A stream with nothing to send for this gets a heartbeat (--event-heartbeat).
  DurationMs stream_heartbeat_ms = 15 * kMillisPerSecond;
};

// Which threads answer a request. kInline: the event thread itself, at once, for a handler that
// takes no lock and does no I/O (health), so that it answers however busy the lanes are.
enum class Lane { kInline, kShort, kLongPoll, kAgent };

// What the front serves. Both methods may be called concurrently from several threads.
class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  // On the event thread, so cheap and non-blocking: the lane that answers `request`.
  virtual Lane LaneFor(const api::Request& request) const = 0;
  // On the lane's thread: the answer to `request`.
  virtual api::Response Serve(const api::Request& request) = 0;
};

// Counts for tests and metrics; a snapshot, read without stopping the front.
struct HttpStats {
  int connections = 0;  // open, both listeners
  int long_polls = 0;   // long polls being answered
  int parked = 0;       // requests parked (api::Response::park), holding no thread
  int streams = 0;      // streaming responses being sent
};

class HttpFront {
 public:
  // Binds the API listener on `host:port` and, when `agent_port` >= 0, the agent listener on
  // `agent_host:agent_port` (port 0: any free port), both speaking TLS with `tls` when it names
  // files. Nothing is served before Start(). kUnavailable naming the address when one cannot be
  // bound; TlsContext::Load's kInvalidArgument naming a TLS file that does not load. `handler`
  // must outlive the front.
  static Result<std::unique_ptr<HttpFront>> Bind(HttpHandler& handler, const HttpLimits& limits,
                                                 const std::string& host, int port,
                                                 const std::string& agent_host, int agent_port,
                                                 const TlsFiles& tls = {});
  ~HttpFront();

  // Starts the event thread and the lanes.
  void Start();
  // Stops accepting, closes every connection, and waits for the lanes' running requests (a long
  // poll ends within api::kMaxLongPollMs). Idempotent.
  void Stop();

  int port() const;
  // The agent listener's port; -1 without one.
  int agent_port() const;
  HttpStats Stats() const;
  // Runs again every request parked under `key`; one still being answered when this is called
  // runs again as soon as it parks. Thread-safe and non-blocking (for RemoteRuntime's waker).
  void WakeParked(const std::string& key);
  // Has every streaming response read what its stream has ready. Thread-safe and non-blocking
  // (the event hub's on_publish).
  void WakeStreams();

 private:
  class Loop;
  explicit HttpFront(std::unique_ptr<Loop> loop);
  std::unique_ptr<Loop> loop_;
};

}  // namespace drover::server
