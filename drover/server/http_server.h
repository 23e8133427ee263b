#pragma once

// HttpServer: the HTTP API (docs/api.md) over a ControlPlane, a thin adapter between the HTTP
// transport (HttpFront: connections, limits, lanes of threads) and the API's route table
// (api/routes.h): each request is answered by api::Serve over a ControlPlaneService. Every
// error, including an unknown endpoint, a wrong method and a refused request, is JSON
// {code, message, details} with the matching status.

#include <memory>
#include <optional>
#include <string>

#include "drover/common/result.h"
#include "drover/server/api_service.h"
#include "drover/server/control_plane.h"
#include "drover/server/http_front.h"

namespace drover::server {

struct HttpOptions {
  HttpLimits limits;
  // The agent listener (--agent-listen HOST:PORT): a port of its own for remote agents, with
  // its own connection budget, so that no load on the API listener keeps an agent from
  // heartbeating. agent_port < 0: none (agents use the API listener; their requests still have
  // their own threads). Every route is served on both.
  std::string agent_host;
  int agent_port = -1;
  // --tls-cert and --tls-key: both listeners speak HTTPS with these; empty: plain HTTP.
  TlsFiles tls;
};

class HttpServer {
 public:
  // Binds `host:port` (port 0: any free port), and the agent listener if `options` name one,
  // without serving yet: connections wait until Serve(). Lets the caller learn the port (for
  // DROVER_SERVER) before the control plane starts. kUnavailable naming an address that cannot
  // be bound.
  static Result<std::unique_ptr<HttpServer>> Bind(ControlPlane& plane, const std::string& host,
                                                  int port, const HttpOptions& options = {});
  // Serves until Stop().
  void Serve();
  // While `leader` is set this server is a standby (docs/api.md "Standby"): every request is
  // answered 503 {"code":"standby","leader":URL} with headers X-Drover-Leader: URL (when known:
  // `leader` may be empty) and Retry-After, and the plane is not touched. nullopt: served.
  // Thread-safe.
  void SetStandby(std::optional<std::string> leader);
  // Bind, then Serve.
  static Result<std::unique_ptr<HttpServer>> Start(ControlPlane& plane, const std::string& host,
                                                   int port, const HttpOptions& options = {});
  ~HttpServer();

  int port() const { return front_->port(); }
  // The agent listener's port; -1 without one.
  int agent_port() const { return front_->agent_port(); }
  HttpStats Stats() const { return front_->Stats(); }
  // Stops serving (and waking parked agent polls); the plane must be alive for the first call
  // (the destructor's, without an earlier one), not after. Waits for the requests being answered (a
  // long poll for at most api::kMaxLongPollMs). Idempotent.
  void Stop();

 private:
  class Handler;
  explicit HttpServer(ControlPlane& plane);

  ControlPlane& plane_;
  bool stopped_ = false;
  std::unique_ptr<Handler> handler_;
  std::unique_ptr<HttpFront> front_;
};

}  // namespace drover::server
