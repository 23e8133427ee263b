#pragma once

// Handlers of the remote agents' endpoints (docs/api.md, "Agents"; the protocol is described in
// server/agent_link.h): registration, the long poll for commands, and worker events. Each
// answers a request that matched its route in routes.cc; errors are the Service's, plus those
// named.

#include <string>

#include "drover/api/request.h"
#include "drover/api/service.h"

namespace drover::api {

// POST /v1/agents/register with the node as JSON: {"node": name}, with "credential" when the
// server issued one (the first registration of the name, or a takeover of a lost node).
// kInvalidArgument, changing nothing, for a body that is not a node or breaks spec::CheckNode's
// rules (each detail naming the field); the Service's errors.
Result<Response> RegisterAgent(Service& service, const Request& request);
// Routes of Access::kAgentOfNode: Authorize checked the node's credential before these run.
// GET /v1/agents/{node}/commands?wait_ms=&epoch=&ack=: {"epoch": E, "commands": [...]}, every
// command not acknowledged (epoch and ack: AgentAck). With none and a wait_ms (cut to 0 ..
// kMaxLongPollMs) on a request that may_park: Parked under AgentCommandsWakeKey(node) for
// wait_ms. kInvalidArgument for a wait_ms, epoch or ack that is not an integer.
Result<Response> TakeAgentCommands(Service& service, const Request& request);
// The key a parked poll of `node`'s agent waits under: a transport wakes it when a command is
// queued for the node.
std::string AgentCommandsWakeKey(const NodeId& node);
// The largest chunk of a log an agent ships in one request (ShipAgentLog): 256 KiB, so that one
// post stays short next to the agent's polls and a server holds little per request.
inline constexpr std::int64_t kMaxAgentLogChunk = 256 << 10;
// POST /v1/agents/{node}/logs?job=&attempt=&rank=&stream=&offset= with the raw bytes of a
// worker's stream from offset (at most kMaxAgentLogChunk): {"size": N, "full": bool}, what the
// server keeps (Service::AppendRemoteLog, with its errors). kInvalidArgument naming the query
// parameter that is missing, not a number or out of range, or a body over the limit.
Result<Response> ShipAgentLog(Service& service, const Request& request);
// POST /v1/agents/{node}/events with {"events": [WorkerEvent...]}: {"accepted": true}.
// kInvalidArgument for another body or an event that does not decode.
Result<Response> ReportAgentEvents(Service& service, const Request& request);
// POST /v1/agents/{node}/usage with a usage batch (codec's UsageBatch; docs/api.md, "Agent
// protocol"): {"accepted": true}. kInvalidArgument naming the field for a batch that does not
// decode or is out of bounds (nothing recorded).
Result<Response> ReportAgentUsage(Service& service, const Request& request);

}  // namespace drover::api
