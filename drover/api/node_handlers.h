#pragma once

// Handlers of the node lifecycle (docs/api.md, "Node lifecycle"): cordon, uncordon, drain and
// maintenance windows, and the node view with its conditions that GET /v1/nodes lists. Each
// answers a request that matched its route in routes.cc; errors are the Service's, plus those
// named.

#include <nlohmann/json.hpp>

#include "drover/api/request.h"
#include "drover/api/service.h"

namespace drover::api {

// One node of GET /v1/nodes: NodeView plus remote, last_heard_at (remote nodes), live_workers,
// state (the first of lost, drained, draining, cordoned, maintenance, ready that holds) and
// conditions: [{"type", "since" (ms or null), "by", "message"}] with one entry per condition
// that holds, in that order ("ready" only when no other holds); maintenance entries add "from",
// "to" and "active" (false while the window is ahead).
nlohmann::json NodeStatusView(const NodeStatus& status, TimeMs now);

// POST /v1/nodes/{name}/cordon, /uncordon, /drain: the body, optional, is a JSON object with
// "reason" (a string; not for uncordon) and for drain "grace_ms" (a non-negative integer; absent:
// jobs run to their end). Answers NodeStatusView. kInvalidArgument naming the field for anything
// else.
Result<Response> CordonNode(Service& service, const Request& request);
Result<Response> UncordonNode(Service& service, const Request& request);
Result<Response> DrainNode(Service& service, const Request& request);
// PUT /v1/nodes/{name}/maintenance: {"from": ms, "to": ms, "reason"?}; DELETE removes the
// window. Answers NodeStatusView.
Result<Response> SetNodeMaintenance(Service& service, const Request& request);
Result<Response> ClearNodeMaintenance(Service& service, const Request& request);

}  // namespace drover::api
