#pragma once

// The gateway's configuration file (`drover gateway --config FILE`; docs/inference.md, "The
// gateway", lists every field with its default and why). YAML (JSON is YAML too):
//
//   models:
//     - name: llama-3-8b                 # the request's `model`
//       policy: least-outstanding        # or prefix-affinity
//       backends:                        # in failover order
//         - name: local
//           service: llama               # replicas from the server's GET /v1/services
//           endpoints: [http://127.0.0.1:8000]   # and/or a static list
//           cost_per_1k_tokens: 0
//         - name: provider
//           endpoints: [https://provider.example:443]   # TLS, verified against the CA store
//           api_key_file: /etc/drover/provider.key   # or api_key_env: NAME (a secret)
//           model: their-model-name      # the `model` sent to this backend
//           cost_per_1k_tokens: 0.6
//   teams:                               # optional: callers must present one of these keys
//     - {name: ml, key_file: /etc/drover/ml.key}

#include <cstdint>
#include <string>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/result.h"
#include "drover/gateway/router.h"

namespace drover::gateway {

struct BackendConfig {
  std::string name;
  std::string service;                 // empty: static endpoints only
  std::vector<std::string> endpoints;  // http://HOST:PORT or https://HOST:PORT
  // https endpoints: the PEM file of the CAs that may sign the backend's certificate; empty: the
  // system's store (OpenSSL's default paths). The certificate must name the URL's host.
  std::string ca_file;
  double cost_per_1k_tokens = 0;
  std::string model;  // rewrites the request's model; empty keeps it
  // The active probe's path (GET, 200 is healthy): vLLM and the stand-in answer /health,
  // Triton's OpenAI frontend /health/ready.
  std::string health_path = "/health";
  // The provider's key, sent as "Authorization: Bearer KEY"; read from api_key_file or
  // api_key_env at load. Never logged or written to metrics.
  std::string api_key;
};

struct ModelConfig {
  std::string name;
  RouteOptions route;
  // Prefix affinity hashes this many bytes of the prompt (the chat messages' contents joined).
  int prefix_bytes = 256;
  // Requests that find no available endpoint wait for one (a service scaled to zero, or every
  // replica's breaker open) up to this many at once and this long each; 0: answered 503 at once.
  int max_waiting = 0;
  DurationMs max_wait_ms = 30 * kMillisPerSecond;
  std::vector<BackendConfig> backends;
};

struct TeamConfig {
  std::string name;
  std::string key;  // read from key_file; compared in constant time
};

// Bounds on what a client may send and a backend may answer.
struct GatewayLimits {
  std::int64_t max_body_bytes = 1 << 20;       // 413 beyond
  std::int64_t max_header_bytes = 16 << 10;    // 431 beyond (libevent answers 400)
  int max_json_depth = 32;                     // 400 beyond
  std::int64_t max_response_bytes = 16 << 20;  // a non-streamed reply; 502 beyond
  int max_in_flight = 4096;                    // requests at once; 429 beyond
  // Client connections at once. At the cap the gateway stops accepting: new connections wait in
  // the kernel's listen backlog until one closes, and the connected clients are served as before.
  int max_connections = 4096;
  // A streamed reply's bytes waiting for a slow client above which the gateway stops reading
  // from the backend; it reads again once the client has taken them all.
  std::int64_t stream_buffer_bytes = 256 << 10;
};

// Name resolution of backend hosts, asynchronous on the event thread (libevent's evdns): a slow
// or dead resolver delays only the requests to the names it resolves.
struct DnsOptions {
  std::vector<std::string> nameservers;          // IP[:PORT]; empty: /etc/resolv.conf's
  DurationMs timeout_ms = 5 * kMillisPerSecond;  // per query attempt
  int attempts = 2;                              // tries per query before the name fails
};

struct GatewayConfig {
  std::vector<ModelConfig> models;
  std::vector<TeamConfig> teams;
  BreakerOptions breaker;
  RetryBudgetOptions retry_budget;
  GatewayLimits limits;
  DnsOptions dns;
  DurationMs probe_interval_ms = kMillisPerSecond;
  // A backend that sends nothing for this long (connect, first byte, between chunks) fails the
  // attempt (libevent's connection timeout covers the connect too).
  DurationMs backend_timeout_ms = 60 * kMillisPerSecond;
  DurationMs poll_interval_ms = kMillisPerSecond;  // GET /v1/services and the load signal
};

// Parses `text` (`file` names it in messages); `getenv` reads api_key_env. kInvalidArgument
// "FILE:LINE:COL: FIELD: reason" for the first error: unknown field, wrong type, a model without
// backends, a backend without endpoints or service, a URL that is not http://HOST:PORT, a key
// file that cannot be read, a duplicate model name.
Result<GatewayConfig> ParseConfig(const std::string& text, const std::string& file);
Result<GatewayConfig> LoadConfig(const std::string& path);

// A backend endpoint's address: http://HOST:PORT or https://HOST:PORT (TLS).
struct EndpointAddress {
  bool tls = false;
  std::string host;
  int port = 0;
};
// Parses http[s]://HOST:PORT[/]; kInvalidArgument otherwise.
Result<EndpointAddress> ParseEndpointUrl(const std::string& url);
// Splits http://HOST:PORT[/] (plain HTTP only) into host and port; kInvalidArgument otherwise.
Result<std::pair<std::string, int>> SplitHttpUrl(const std::string& url);

}  // namespace drover::gateway
