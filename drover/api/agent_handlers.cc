#include "drover/api/agent_handlers.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "drover/codec/json.h"
#include "drover/spec/node_file.h"

namespace drover::api {

using nlohmann::json;

Result<Response> RegisterAgent(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(json body, JsonBody(request));
  DROVER_ASSIGN_OR_RETURN(model::Node node, codec::NodeFromJson(body));
  DROVER_RETURN_IF_ERROR(spec::CheckNode(node, "request body"));
  DROVER_ASSIGN_OR_RETURN(std::string credential, service.RegisterRemoteNode(node, request.caller));
  json reply{{"node", node.name.value()}, {"agent_timeout_ms", service.AgentTimeout()}};
  if (!credential.empty()) reply["credential"] = std::move(credential);
  return JsonResponse(200, reply);
}

Result<Response> TakeAgentCommands(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(std::int64_t wait_ms, IntQuery(request, "wait_ms", 0));
  AgentAck ack;
  DROVER_ASSIGN_OR_RETURN(ack.epoch, IntQuery(request, "epoch", 0));
  DROVER_ASSIGN_OR_RETURN(ack.seq, IntQuery(request, "ack", 0));
  const NodeId node(request.path_params.at(0));
  // A request that cannot park has waited all it will: it is answered what there is.
  const DurationMs wait = request.may_park ? std::clamp<DurationMs>(wait_ms, 0, kMaxLongPollMs) : 0;
  DROVER_ASSIGN_OR_RETURN(AgentCommandBatch batch, service.TakeCommands(node, ack, wait));
  if (batch.commands.empty() && wait > 0) return Parked(AgentCommandsWakeKey(node), wait);
  return JsonResponse(200,
                      json{{"epoch", batch.epoch}, {"commands", json(std::move(batch.commands))}});
}

std::string AgentCommandsWakeKey(const NodeId& node) { return "agent-commands/" + node.value(); }

Result<Response> ReportAgentEvents(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(json body, JsonBody(request));
  if (!body.is_object() || !body.contains("events") || !body["events"].is_array()) {
    return InvalidArgument("request body: expected {\"events\": [...]}");
  }
  std::vector<model::WorkerEvent> events;
  for (const json& item : body["events"]) {
    DROVER_ASSIGN_OR_RETURN(model::WorkerEvent event, codec::WorkerEventFromJson(item));
    events.push_back(std::move(event));
  }
  DROVER_RETURN_IF_ERROR(
      service.ReportEvents(NodeId(request.path_params.at(0)), std::move(events)));
  return JsonResponse(200, json{{"accepted", true}});
}

Result<Response> ReportAgentUsage(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(json body, JsonBody(request));
  DROVER_ASSIGN_OR_RETURN(model::UsageBatch batch, codec::UsageBatchFromJson(body, "request body"));
  DROVER_RETURN_IF_ERROR(service.ReportUsage(NodeId(request.path_params.at(0)), std::move(batch)));
  return JsonResponse(200, json{{"accepted", true}});
}

Result<Response> ShipAgentLog(Service& service, const Request& request) {
  if (request.body.size() > static_cast<std::size_t>(kMaxAgentLogChunk)) {
    return InvalidArgument(fmt::format("request body: a log chunk is at most {} bytes, not {}",
                                       kMaxAgentLogChunk, request.body.size()));
  }
  // Query parameter `name`, required, from 0 to `max`.
  auto bounded = [&request](const std::string& name, std::int64_t max) -> Result<std::int64_t> {
    DROVER_ASSIGN_OR_RETURN(std::int64_t value, IntQuery(request, name, -1));
    if (value < 0 || value > max) {
      return InvalidArgument(
          fmt::format("query parameter {}: a number from 0 to {} is required", name, max));
    }
    return value;
  };
  constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();
  DROVER_ASSIGN_OR_RETURN(std::int64_t job,
                          bounded("job", std::numeric_limits<std::int64_t>::max()));
  DROVER_ASSIGN_OR_RETURN(std::int64_t attempt, bounded("attempt", kMaxInt));
  DROVER_ASSIGN_OR_RETURN(std::int64_t rank, bounded("rank", kMaxInt));
  DROVER_ASSIGN_OR_RETURN(std::int64_t offset,
                          bounded("offset", std::numeric_limits<std::int64_t>::max()));
  const model::WorkerKey key{JobId(job), static_cast<int>(attempt), static_cast<int>(rank)};
  DROVER_ASSIGN_OR_RETURN(
      RemoteLogAck ack, service.AppendRemoteLog(NodeId(request.path_params.at(0)), key,
                                                request.Query("stream", ""), offset, request.body));
  return JsonResponse(200, json{{"size", ack.size}, {"full", ack.full}});
}

}  // namespace drover::api
