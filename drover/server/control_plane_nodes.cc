// ControlPlane's node lifecycle (control_plane.h, docs/operations.md "Node lifecycle"): what
// `drover nodes` shows and the operators' cordon, drain and maintenance windows, carried out by
// the controller (control/controller_nodes.cc) and persisted with the step.

#include <fmt/format.h>

#include <map>

#include "drover/server/control_plane.h"

namespace drover::server {

std::vector<NodeStatus> ControlPlane::Nodes() const {
  MutexLock lock(mu_);
  std::map<NodeId, int> live;  // one pass over the jobs for every node
  for (const auto& [node, key] : controller_.LiveWorkers()) ++live[node];
  std::vector<NodeStatus> out;
  out.reserve(controller_.nodes().size());
  for (const auto& [name, node] : controller_.nodes()) {
    auto count = live.find(name);
    out.push_back(StatusOf(name, count == live.end() ? 0 : count->second));
  }
  return out;
}

NodeStatus ControlPlane::StatusOf(const NodeId& name, int live_workers) const {
  NodeStatus status;
  if (auto node = controller_.nodes().find(name); node != controller_.nodes().end()) {
    status.node = node->second;
  }
  status.free = controller_.cluster().Free(name).value_or(model::Resources{});
  status.free_gpus = controller_.cluster().FreeGpus(name);
  auto it = nodes_.find(name);
  status.remote = it != nodes_.end() && it->second.remote != nullptr;
  if (status.remote) status.last_heard_at = it->second.remote->last_heard_at();
  status.lost = controller_.IsLost(name);
  if (status.lost) {
    if (std::optional<store::AgentRecord::Lost> lost = agents_.LostRecord(name)) {
      status.lost_at = lost->at;
      status.lost_reason = lost->reason;
    }
  }
  status.admin = controller_.NodeAdminOf(name);
  status.live_workers = live_workers;
  return status;
}

Result<NodeStatus> ControlPlane::ChangeNode(const api::NodeAction& action,
                                            const model::Identity& caller) {
  using Kind = api::NodeAction::Kind;
  NodeStatus status;
  DROVER_RETURN_IF_ERROR(Change([&](control::Step& step) REQUIRES(mu_) -> Status {
    const TimeMs now = clock_.Now();
    const std::string by = model::Describe(caller);
    switch (action.kind) {
      case Kind::kCordon:
        DROVER_RETURN_IF_ERROR(controller_.Cordon(action.node, by, action.reason, now, step));
        break;
      case Kind::kUncordon:
        DROVER_RETURN_IF_ERROR(controller_.Uncordon(action.node, by, now, step));
        break;
      case Kind::kDrain:
        DROVER_RETURN_IF_ERROR(
            controller_.Drain(action.node, action.grace, by, action.reason, now, step));
        break;
      case Kind::kSetMaintenance:
        DROVER_RETURN_IF_ERROR(controller_.SetMaintenance(
            action.node, model::MaintenanceWindow{action.from, action.to, by, now, action.reason},
            now, step));
        break;
      case Kind::kClearMaintenance:
        DROVER_RETURN_IF_ERROR(controller_.ClearMaintenance(action.node, now, step));
        break;
    }
    RequestSchedule();
    status = StatusOf(action.node, controller_.LiveWorkersOn(action.node));
    return OkStatus();
  }));
  return status;
}

}  // namespace drover::server
