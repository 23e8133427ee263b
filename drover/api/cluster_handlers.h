#pragma once

// Handlers of the cluster-wide endpoints (docs/api.md): health, nodes, queues, the scheduling
// policy, the goodput report and the Prometheus metrics. Each answers a request that matched its
// route in routes.cc; errors are the Service's, plus those named.

#include "drover/api/request.h"
#include "drover/api/service.h"

namespace drover::api {

// GET /v1/health: {"status": "ok", "time": now}.
Result<Response> Health(Service& service, const Request& request);
// GET /v1/nodes: {"nodes": [NodeStatusView (node_handlers.h) of each node]}.
Result<Response> ListNodes(Service& service, const Request& request);
// GET /v1/queues: {"queues": [QueueView...], "policy": the policy in force}.
Result<Response> ListQueues(Service& service, const Request& request);
// GET /v1/policy: the policy, its file, when it was loaded and the last reload error (or null).
Result<Response> GetPolicy(Service& service, const Request& request);
// POST /v1/policy/reload: re-reads the policy file; GetPolicy's body.
Result<Response> ReloadPolicy(Service& service, const Request& request);
// GET /metrics: Service::MetricsText as text/plain; version=0.0.4 (Prometheus' text format).
Result<Response> GetMetrics(Service& service, const Request& request);
// GET /v1/goodput?by=queue|team|owner&since=MS: GoodputReport over every job. kInvalidArgument
// for another `by` or a `since` that is not an integer.
Result<Response> GetGoodput(Service& service, const Request& request);

}  // namespace drover::api
