#include "drover/api/node_handlers.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <initializer_list>
#include <string>

#include "drover/api/views.h"
#include "drover/common/quantity.h"

namespace drover::api {
namespace {

using nlohmann::json;

json Condition(std::string_view type, TimeMs since, const std::string& by,
               const std::string& message) {
  return json{{"type", std::string(type)},
              {"since", since != 0 ? json(since) : json(nullptr)},
              {"by", by},
              {"message", message}};
}

// The request body as a JSON object with only `allowed` fields; an empty body is {}.
Result<json> ActionBody(const Request& request, std::initializer_list<std::string_view> allowed) {
  if (request.body.empty()) return json::object();
  DROVER_ASSIGN_OR_RETURN(json body, JsonBody(request));
  if (!body.is_object()) return InvalidArgument("request body: expected a JSON object");
  for (const auto& [field, value] : body.items()) {
    if (std::find(allowed.begin(), allowed.end(), field) == allowed.end()) {
      return InvalidArgument(
          allowed.size() == 0
              ? fmt::format("{}: unknown field; this request takes no fields", field)
              : fmt::format("{}: unknown field; this request takes {}", field,
                            fmt::join(allowed, ", ")));
    }
  }
  if (body.contains("reason") && !body["reason"].is_string()) {
    return InvalidArgument("reason: expected a string");
  }
  return body;
}

// A field that must be an integer of milliseconds, at least `min`.
Result<std::int64_t> MillisField(const json& body, const char* field, std::int64_t min) {
  const json& value = body.at(field);
  if (!value.is_number_integer() || value.get<std::int64_t>() < min) {
    return InvalidArgument(
        fmt::format("{}: expected an integer of milliseconds, at least {}", field, min));
  }
  return value.get<std::int64_t>();
}

Result<Response> Act(Service& service, const Request& request, NodeAction action) {
  DROVER_ASSIGN_OR_RETURN(model::Identity caller, CallerIdentity(request));
  action.node = NodeId(request.path_params.at(0));
  DROVER_ASSIGN_OR_RETURN(NodeStatus status, service.ChangeNode(action, caller));
  return JsonResponse(200, NodeStatusView(status, service.Now()));
}

}  // namespace

json NodeStatusView(const NodeStatus& status, TimeMs now) {
  json view = NodeView(status.node, status.free, status.free_gpus);
  view["remote"] = status.remote;
  if (status.remote) view["last_heard_at"] = status.last_heard_at;
  view["live_workers"] = status.live_workers;
  const model::NodeAdmin& admin = status.admin;
  json conditions = json::array();
  if (status.lost) conditions.push_back(Condition("lost", status.lost_at, "", status.lost_reason));
  if (admin.draining && admin.drained_at != 0) {
    conditions.push_back(Condition("drained", admin.drained_at, admin.cordoned_by, admin.reason));
  } else if (admin.draining) {
    conditions.push_back(Condition(
        "draining", admin.draining_at, admin.cordoned_by,
        fmt::format("{} worker{} left; {}", status.live_workers,
                    status.live_workers == 1 ? "" : "s",
                    admin.drain_deadline == 0
                        ? std::string("no grace: they run to their end")
                        : fmt::format("the grace ends {}",
                                      admin.drain_deadline > now
                                          ? "in " + FormatDuration(admin.drain_deadline - now)
                                          : std::string("now")))));
  } else if (admin.cordoned) {
    conditions.push_back(Condition("cordoned", admin.cordoned_at, admin.cordoned_by, admin.reason));
  }
  if (admin.maintenance) {
    const model::MaintenanceWindow& window = *admin.maintenance;
    const bool active = window.from <= now && now < window.to;
    json entry = Condition("maintenance", window.set_at, window.by, window.reason);
    entry["from"] = window.from;
    entry["to"] = window.to;
    entry["active"] = active;
    conditions.push_back(std::move(entry));
  }
  bool ready = true;
  for (const json& condition : conditions) {
    if (condition["type"] != "maintenance" || condition["active"].get<bool>()) ready = false;
  }
  if (ready) conditions.insert(conditions.begin(), Condition("ready", 0, "", ""));
  view["state"] = conditions.front()["type"];
  view["conditions"] = std::move(conditions);
  return view;
}

Result<Response> CordonNode(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(json body, ActionBody(request, {"reason"}));
  NodeAction action;
  action.kind = NodeAction::Kind::kCordon;
  action.reason = body.value("reason", "");
  return Act(service, request, std::move(action));
}

Result<Response> UncordonNode(Service& service, const Request& request) {
  DROVER_RETURN_IF_ERROR(ActionBody(request, {}));
  NodeAction action;
  action.kind = NodeAction::Kind::kUncordon;
  return Act(service, request, std::move(action));
}

Result<Response> DrainNode(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(json body, ActionBody(request, {"reason", "grace_ms"}));
  NodeAction action;
  action.kind = NodeAction::Kind::kDrain;
  action.reason = body.value("reason", "");
  if (body.contains("grace_ms")) {
    DROVER_ASSIGN_OR_RETURN(action.grace, MillisField(body, "grace_ms", 0));
  }
  return Act(service, request, std::move(action));
}

Result<Response> SetNodeMaintenance(Service& service, const Request& request) {
  DROVER_ASSIGN_OR_RETURN(json body, ActionBody(request, {"from", "to", "reason"}));
  for (const char* field : {"from", "to"}) {
    if (!body.contains(field)) {
      return InvalidArgument(
          fmt::format("{}: missing; a window needs from and to (ms since the epoch)", field));
    }
  }
  NodeAction action;
  action.kind = NodeAction::Kind::kSetMaintenance;
  action.reason = body.value("reason", "");
  DROVER_ASSIGN_OR_RETURN(action.from, MillisField(body, "from", 0));
  DROVER_ASSIGN_OR_RETURN(action.to, MillisField(body, "to", 0));
  return Act(service, request, std::move(action));
}

Result<Response> ClearNodeMaintenance(Service& service, const Request& request) {
  DROVER_RETURN_IF_ERROR(ActionBody(request, {}));
  NodeAction action;
  action.kind = NodeAction::Kind::kClearMaintenance;
  return Act(service, request, std::move(action));
}

}  // namespace drover::api
