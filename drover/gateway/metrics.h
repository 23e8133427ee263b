#pragma once

// The gateway's own metrics, served on its GET /metrics with the drover_gateway_ prefix
// (docs/inference.md, "The gateway"; why here and not on the server's /metrics is argued in
// docs/architecture.md, "The inference gateway"). Labels are bounded: models and backends come
// from the configuration, teams from its team list ("-" for an anonymous caller), outcomes from
// a fixed set; endpoints (replicas, which come and go) appear only on gauges computed at scrape
// from the current routing state, never on counters. Thread-safe (the families lock).

#include <cstdint>
#include <string>
#include <vector>

#include "drover/common/prometheus.h"
#include "drover/gateway/router.h"

namespace drover::gateway {

// How a request ended, a label value.
inline constexpr const char* kOutcomeOk = "ok";                       // 2xx from a backend
inline constexpr const char* kOutcomeClientError = "client_error";    // 4xx (ours or a backend's)
inline constexpr const char* kOutcomeBackendError = "backend_error";  // 5xx, errors, no retry left
inline constexpr const char* kOutcomeNoBackend = "no_backend";        // none available
inline constexpr const char* kOutcomeCancelled = "cancelled";         // the client went away

// The client side's state at a scrape, gauges of the exposition.
struct ClientGauges {
  int connections = 0;      // client connections open
  int max_connections = 0;  // limits.max_connections
  bool accept_paused = false;
  std::int64_t stream_buffer_peak_bytes = 0;  // the most bytes one stream held for its client
  std::int64_t stream_pauses = 0;             // times a stream's backend was paused
};

struct GatewayMetrics {
  prometheus::CounterFamily requests{"drover_gateway_requests_total",
                                     "Requests answered, by model, backend, team and outcome.",
                                     {"model", "backend", "team", "outcome"}};
  prometheus::CounterFamily attempts{
      "drover_gateway_attempts_total",
      "Attempts sent to backends, by backend and result (ok, error, timeout, status_5xx, "
      "status_429).",
      {"model", "backend", "result"}};
  prometheus::CounterFamily retries{"drover_gateway_retries_total",
                                    "Attempts retried on another endpoint or backend.",
                                    {"model"}};
  prometheus::CounterFamily budget_exhausted{
      "drover_gateway_retry_budget_exhausted_total",
      "Failed attempts not retried because the model's retry budget was spent.",
      {"model"}};
  prometheus::CounterFamily tokens{"drover_gateway_tokens_total",
                                   "Tokens in (prompt) and out (completion), by team.",
                                   {"model", "backend", "team", "direction"}};
  prometheus::CounterFamily cost{"drover_gateway_cost_total",
                                 "Cost of answered requests (tokens / 1000 x the backend's "
                                 "cost_per_1k_tokens), by team.",
                                 {"model", "backend", "team"}};
  prometheus::HistogramFamily latency{"drover_gateway_request_duration_seconds",
                                      "From a request's arrival to the end of its reply.",
                                      {"model", "backend"},
                                      LatencyBuckets()};
  prometheus::HistogramFamily queueing{
      "drover_gateway_queue_seconds",
      "From a request's arrival to the sending of its answered attempt (routing and retries).",
      {"model"},
      LatencyBuckets()};
  prometheus::HistogramFamily ttft{"drover_gateway_time_to_first_token_seconds",
                                   "Streamed requests: arrival to the first chunk.",
                                   {"model", "backend"},
                                   LatencyBuckets()};
  prometheus::HistogramFamily tpot{"drover_gateway_time_per_output_token_seconds",
                                   "Streamed requests: first to last chunk over chunks - 1.",
                                   {"model", "backend"},
                                   LatencyBuckets()};

  // 0.5 ms to 60 s: the gateway's own overhead is sub-millisecond, a long generation a minute.
  static std::vector<double> LatencyBuckets();

  // The exposition: the families above, then the gauges of `routers` (named by `models`):
  // drover_gateway_in_flight{model}, drover_gateway_endpoint_outstanding{model,backend,endpoint}
  // and drover_gateway_endpoint_breaker{model,backend,endpoint,state} (1 for its state); then
  // `clients`: drover_gateway_client_connections, drover_gateway_client_connections_max,
  // drover_gateway_accept_paused, drover_gateway_stream_buffer_peak_bytes and
  // drover_gateway_stream_pauses_total.
  std::string Render(const std::vector<std::string>& models, const std::vector<Router*>& routers,
                     const ClientGauges& clients, TimeMs now) const;
};

}  // namespace drover::gateway
