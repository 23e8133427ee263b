#pragma once

// The gateway's insides, shared by its two files: gateway.cc (the client side and the proxying
// of attempts) and gateway_upstream.cc (active probes, the server's services and the load
// signal). Not a public interface: include gateway.h.

#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <openssl/ssl.h>
#include <sys/time.h>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "drover/gateway/gateway.h"
#include "drover/gateway/metrics.h"
#include "drover/gateway/sse.h"

namespace drover::gateway {

using Json = nlohmann::json;

inline TimeMs NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline timeval ToTimeval(DurationMs ms) {
  return timeval{static_cast<time_t>(ms / kMillisPerSecond),
                 static_cast<suseconds_t>((ms % kMillisPerSecond) * 1000)};
}

struct Call;

// One client connection, from its accept to its close (the closecb's argument).
struct ClientConnection {
  Gateway::Impl* gateway = nullptr;
  evhttp_connection* connection = nullptr;
  Call* call = nullptr;  // the request being answered on it, if any
};

// One client request through its attempts.
struct Call {
  Gateway::Impl* gateway = nullptr;
  evhttp_request* client = nullptr;               // libevent's; finished by exactly one Reply/End
  ClientConnection* client_connection = nullptr;  // null once the client has gone
  int model = -1;
  std::string team = "-";
  bool stream = false;
  bool cheapest = false;
  Json body;
  std::string prefix;
  std::int64_t prompt_bytes = 0;
  std::vector<Pick> tried;
  double arrived = 0;  // seconds, steady clock

  // The attempt in flight.
  Pick pick;
  evhttp_request* upstream = nullptr;
  evhttp_connection* connection = nullptr;
  int status = 0;
  bool upstream_failed = false;  // connect error, timeout or a cut reply
  std::string content_type;
  std::string buffer;  // a non-streamed reply, or a failed one's body
  bool too_large = false;
  double sent_at = 0;

  // The reply to the client.
  bool started = false;  // a byte went to the client: no retry from here
  bool waiting = false;  // in its model's waiting queue (no endpoint was available)
  bool paused = false;   // reading from the backend stopped: the client has not taken the stream
  SseReader sse;
  std::int64_t chunks = 0;
  std::int64_t prompt_tokens = -1, completion_tokens = -1;  // from `usage`, when sent
  double first_chunk = 0, last_chunk = 0;
};

// One probe of GET /health on one endpoint.
struct ProbeCall {
  Gateway::Impl* gateway;
  std::string url;
  evhttp_connection* connection;
};

class Gateway::Impl {
 public:
  Impl(GatewayOptions options) : options_(std::move(options)) {}
  ~Impl();

  Status Bind();
  void Run();
  int port() const { return port_; }

 private:
  struct Route {
    ModelConfig config;
    std::unique_ptr<Router> router;
  };

  static void OnRequest(evhttp_request* request, void* self);
  // A client connection accepted: counted, and the listener paused at max_connections.
  static bufferevent* OnAccept(event_base* base, void* self);
  // After the accept: each new connection gets its ClientConnection and close callback.
  static void OnAccepted(evutil_socket_t, short, void* self);
  static void OnClientClose(evhttp_connection* connection, void* client);
  // The client's output buffer emptied: a paused stream's backend is read again.
  static void OnClientDrained(evhttp_connection* connection, void* client);
  static int OnUpstreamHeaders(evhttp_request* request, void* call);
  static void OnUpstreamChunk(evhttp_request* request, void* call);
  static void OnUpstreamError(evhttp_request_error error, void* call);
  static void OnUpstreamDone(evhttp_request* request, void* call);
  static void OnProbeTimer(evutil_socket_t, short, void* self);
  static void OnPollTimer(evutil_socket_t, short, void* self);
  static void OnSignal(evutil_socket_t, short, void* self);

  void Serve(evhttp_request* request);
  void Completion(evhttp_request* request);
  void Attempt(Call* call);
  void UpstreamDone(Call* call, evhttp_request* request);
  void Finish(Call* call, const char* outcome);
  void Abort(Call* call);
  void Reply(evhttp_request* request, int status, const std::string& content_type,
             const std::string& body);
  void ReplyError(Call* call, int status, const std::string& message, const std::string& type,
                  const std::string& code, const char* outcome);
  std::string Team(evhttp_request* request, bool& authorized) const;
  void Account(Call* call, const char* outcome);

  // A pooled or new connection to `url` (https: TLS verified against `ca_file`, empty: the
  // system's store, with SNI and the host name checked; never pooled).
  evhttp_connection* Connection(const std::string& url, const std::string& ca_file);
  // The TLS context verifying against `ca_file`; null (logged once) when it cannot be made.
  SSL_CTX* TlsContext(const std::string& ca_file);
  // Passes a streamed reply's bytes to the client, pausing the backend above the bound.
  void Stream(Call* call, evbuffer* bytes);
  void Release(const std::string& url, evhttp_connection* connection);
  void Probe();
  void ProbeDone(const ProbeCall& probe, bool healthy);
  evhttp_request* ServerRequest(void (*done)(evhttp_request*, void*));
  void Poll();
  void PostLoad();
  void ApplyServices(const Json& services);
  // Sends the waiting requests that now find an endpoint, and answers 503 those that waited
  // max_wait_ms.
  void DrainWaiting();
  static void OnDrainTimer(evutil_socket_t, short, void* self);

  std::string BackendName(const Call* call) const {
    return call->pick.backend < 0
               ? "-"
               : routes_[call->model].router->backends()[call->pick.backend].name;
  }
  const BackendConfig& BackendOf(const Call* call) const {
    return routes_[call->model].config.backends[call->pick.backend];
  }

  GatewayOptions options_;
  event_base* base_ = nullptr;
  evhttp* http_ = nullptr;
  evdns_base* dns_ = nullptr;
  evconnlistener* listener_ = nullptr;
  event* accepted_event_ = nullptr;
  std::vector<bufferevent*> accepted_;  // connections accepted since OnAccepted last ran
  std::unordered_map<evhttp_connection*, ClientConnection*> clients_;
  int connections_ = 0;  // client connections open (accepted, not yet closed)
  bool accept_paused_ = false;
  std::int64_t stream_buffer_peak_ = 0;
  std::int64_t stream_pauses_ = 0;
  std::map<std::string, SSL_CTX*> tls_contexts_;  // by ca_file ("" = the system's store)
  event* probe_timer_ = nullptr;
  event* poll_timer_ = nullptr;
  event* drain_timer_ = nullptr;
  std::map<int, std::deque<Call*>> waiting_;  // by model, oldest first
  std::vector<event*> signals_;
  int port_ = 0;
  std::vector<Route> routes_;
  std::map<std::string, int> route_index_;
  GatewayMetrics metrics_;
  std::unordered_map<evhttp_request*, Call*> calls_;  // by client request, while in progress
  std::map<std::string, std::vector<evhttp_connection*>> idle_;  // keep-alive, by URL
  std::set<std::string> probing_;                                // URLs with a probe in flight
  // The server's side: its connection, and the load window's start and request counts.
  std::string server_host_;
  int server_port_ = 0;
  evhttp_connection* server_ = nullptr;
  bool poll_in_flight_ = false;
  TimeMs load_window_start_ = 0;
  std::map<std::string, std::int64_t> service_requests_;
  TimeMs last_poll_warning_ = 0;
};

}  // namespace drover::gateway
