#pragma once

// Handlers of the remote agents' endpoints (docs/api.md, "Agents"; the protocol is described in
// server/agent_link.h): registration, the long poll for commands, and worker events. Each
// answers a request that matched its route in routes.cc; errors are the Service's, plus those
// named.

#include "drover/api/request.h"
#include "drover/api/service.h"

namespace drover::api {

// POST /v1/agents/register with the node as JSON: {"node": name}, with "credential" when the
// server issued one (the first registration of the name, or a takeover of a lost node).
// kInvalidArgument, changing nothing, for a body that is not a node or breaks spec::CheckNode's
// rules (each detail naming the field); the Service's errors.
Result<Response> RegisterAgent(Service& service, const Request& request);
// Routes of Access::kAgentOfNode: Authorize checked the node's credential before these run.
// GET /v1/agents/{node}/commands?wait_ms=: {"commands": [...]}, waiting up to wait_ms (0 to
// kMaxLongPollMs) for one. kInvalidArgument for a wait_ms that is not an integer.
Result<Response> TakeAgentCommands(Service& service, const Request& request);
// POST /v1/agents/{node}/events with {"events": [WorkerEvent...]}: {"accepted": true}.
// kInvalidArgument for another body or an event that does not decode.
Result<Response> ReportAgentEvents(Service& service, const Request& request);

}  // namespace drover::api
