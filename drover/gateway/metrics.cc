#include "drover/gateway/metrics.h"

namespace drover::gateway {

std::vector<double> GatewayMetrics::LatencyBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

std::string GatewayMetrics::Render(const std::vector<std::string>& models,
                                   const std::vector<Router*>& routers, const ClientGauges& clients,
                                   TimeMs now) const {
  prometheus::ExpositionWriter writer;
  requests.WriteTo(writer);
  attempts.WriteTo(writer);
  retries.WriteTo(writer);
  budget_exhausted.WriteTo(writer);
  tokens.WriteTo(writer);
  cost.WriteTo(writer);
  latency.WriteTo(writer);
  queueing.WriteTo(writer);
  ttft.WriteTo(writer);
  tpot.WriteTo(writer);
  std::vector<std::pair<prometheus::Labels, double>> in_flight, outstanding, breaker;
  for (std::size_t m = 0; m < routers.size(); ++m) {
    int total = 0;
    for (const Backend& backend : routers[m]->backends()) {
      for (const Endpoint& endpoint : backend.endpoints) {
        total += endpoint.outstanding;
        const prometheus::Labels labels = {
            {"model", models[m]}, {"backend", backend.name}, {"endpoint", endpoint.name}};
        outstanding.emplace_back(labels, endpoint.outstanding);
        prometheus::Labels state = labels;
        state.emplace_back("state", BreakerStateName(endpoint.breaker.state(now)));
        breaker.emplace_back(std::move(state), 1);
      }
    }
    in_flight.emplace_back(prometheus::Labels{{"model", models[m]}}, total);
  }
  writer.Gauge("drover_gateway_in_flight", "Attempts in flight to backends, by model.", in_flight);
  writer.Gauge("drover_gateway_endpoint_outstanding", "Attempts in flight to each endpoint.",
               outstanding);
  writer.Gauge("drover_gateway_endpoint_breaker",
               "Each endpoint's circuit breaker: 1 on the series of its state.", breaker);
  auto one = [](double value) {
    return std::vector<std::pair<prometheus::Labels, double>>{{prometheus::Labels{}, value}};
  };
  writer.Gauge("drover_gateway_client_connections", "Client connections open.",
               one(clients.connections));
  writer.Gauge("drover_gateway_client_connections_max",
               "limits.max_connections: at it, new connections wait in the listen backlog.",
               one(clients.max_connections));
  writer.Gauge("drover_gateway_accept_paused",
               "1 while the gateway does not accept connections (at max_connections).",
               one(clients.accept_paused ? 1 : 0));
  writer.Gauge("drover_gateway_stream_buffer_peak_bytes",
               "The most bytes of a streamed reply held for one slow client since the start.",
               one(static_cast<double>(clients.stream_buffer_peak_bytes)));
  writer.Counter("drover_gateway_stream_pauses_total",
                 "Times a stream's backend stopped being read because its client was slow.",
                 one(static_cast<double>(clients.stream_pauses)));
  return writer.Take();
}

}  // namespace drover::gateway
