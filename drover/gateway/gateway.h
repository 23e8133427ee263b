#pragma once

// Gateway: the OpenAI-compatible inference front (`drover gateway`; docs/inference.md, "The
// gateway"; the choice of libevent's evhttp is argued and measured in docs/architecture.md,
// "The inference gateway"). One event thread owns every socket, the client side and the backend
// side: a request is read, routed (router.h), sent to a backend over a pooled keep-alive
// connection, and its reply passed back chunk by chunk as it arrives (streams) or whole
// (non-streamed replies, which are buffered up to limits.max_response_bytes so that a failed
// attempt can still be retried). A failed attempt (connect error, timeout, 5xx, 429) is retried
// on another endpoint or the next backend only while no byte of the reply has reached the client
// and the model's retry budget allows it.
//
// Routes: POST /v1/chat/completions and /v1/completions (routed by the body's `model`),
// GET /v1/models (the configured models), GET /metrics (metrics.h), GET /health. Errors are
// OpenAI's shape: {"error":{"message","type","param","code"}}.
//
// With a server URL, the gateway polls GET /v1/services every poll_interval_ms for the ready
// endpoints of the services its backends name (keeping the last list while the server is
// unreachable) and posts each service's load to POST /v1/services/{name}/load.
//
// Not thread-safe: Run() on one thread; everything else happens on it.

#include <cstdint>
#include <memory>
#include <string>

#include "drover/common/result.h"
#include "drover/gateway/config.h"

namespace drover::gateway {

struct GatewayOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port
  GatewayConfig config;
  std::string server_url;  // http://HOST:PORT of the Drover server; empty: static backends only
  std::string token;       // the server's API token (never logged)
  std::uint64_t seed = 0;  // the routers' random generator
};

class Gateway {
 public:
  // Binds the listener; kUnavailable naming the address when it cannot be bound,
  // kInvalidArgument for a server URL that is not http://HOST:PORT.
  static Result<std::unique_ptr<Gateway>> Create(GatewayOptions options);
  ~Gateway();

  int port() const;
  // Serves until SIGINT or SIGTERM.
  void Run();

  class Impl;

 private:
  explicit Gateway(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace drover::gateway
