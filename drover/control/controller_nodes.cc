// Controller, the node part: operators' node lifecycle (docs/operations.md, "Node lifecycle").
// A cordon closes a node to new placements; a drain cordons it and moves its jobs off
// (checkpointing ones at once, with notice, the others at the end of the grace); a maintenance
// window closes it for a time, and before that to any job that would still run when it begins.
// The engine sees cordons and windows as sched::NodeWindow values (NodeWindows); the operator
// state is kept per node (model::NodeAdmin) and persisted by the driver from step.nodes_changed.

#include <fmt/format.h>

#include "drover/common/quantity.h"
#include "drover/control/controller.h"

namespace drover::control {

using model::Job;
using model::JobState;

Result<model::NodeAdmin*> Controller::EditNodeAdmin(const NodeId& node, Step& step) {
  if (!nodes_.contains(node)) {
    return NotFound(fmt::format("node {} does not exist", node.value()));
  }
  step.nodes_changed.insert(node);
  return &node_admin_[node];
}

model::NodeAdmin Controller::NodeAdminOf(const NodeId& node) const {
  auto it = node_admin_.find(node);
  return it == node_admin_.end() ? model::NodeAdmin{} : it->second;
}

void Controller::RestoreNodeAdmin(const NodeId& node, model::NodeAdmin admin) {
  node_admin_[node] = std::move(admin);
  capacity_freed_ = true;
}

int Controller::LiveWorkersOn(const NodeId& node) const {
  int count = 0;
  for (const auto& [where, key] : LiveWorkers()) count += where == node ? 1 : 0;
  return count;
}

Status Controller::Cordon(const NodeId& node, const std::string& by, const std::string& reason,
                          TimeMs now, Step& step) {
  DROVER_ASSIGN_OR_RETURN(model::NodeAdmin * admin, EditNodeAdmin(node, step));
  if (admin->cordoned) return OkStatus();
  admin->cordoned = true;
  admin->cordoned_at = now;
  admin->cordoned_by = by;
  admin->reason = reason;
  return OkStatus();
}

Status Controller::Uncordon(const NodeId& node, const std::string& /*by*/, TimeMs /*now*/,
                            Step& step) {
  DROVER_ASSIGN_OR_RETURN(model::NodeAdmin * admin, EditNodeAdmin(node, step));
  std::optional<model::MaintenanceWindow> maintenance = std::move(admin->maintenance);
  *admin = model::NodeAdmin{};
  admin->maintenance = std::move(maintenance);
  capacity_freed_ = true;  // the node takes placements again
  return OkStatus();
}

Status Controller::Drain(const NodeId& node, std::optional<DurationMs> grace, const std::string& by,
                         const std::string& reason, TimeMs now, Step& step) {
  if (grace && *grace < 0) {
    return InvalidArgument(fmt::format("grace: must not be negative (got {} ms)", *grace));
  }
  DROVER_RETURN_IF_ERROR(Cordon(node, by, reason, now, step));
  model::NodeAdmin& admin = node_admin_[node];
  if (!admin.draining) {
    admin.draining = true;
    admin.draining_at = now;
    admin.drained_at = 0;
  }
  admin.drain_deadline = grace ? now + *grace : 0;
  const std::string why = fmt::format("node_drain: node {} is drained by {}{}", node.value(), by,
                                      reason.empty() ? "" : " (" + reason + ")");
  for (const auto& [where, key] : LiveWorkers()) {
    if (where != node) continue;
    Job& job = jobs_.Get(key.job);
    // Checkpointing jobs leave at once, with notice, and resume elsewhere.
    if (!job.spec.checkpoint_dir.empty()) {
      Preempt(job, std::nullopt, model::Disruption::kNodeDrain,
              why + "; preempted with notice to resume from its checkpoint elsewhere", step);
    }
  }
  EnforceNodeAdmin(now, step);
  return OkStatus();
}

Status Controller::SetMaintenance(const NodeId& node, model::MaintenanceWindow window, TimeMs now,
                                  Step& step) {
  if (window.to <= window.from) {
    return InvalidArgument(
        window.to == window.from
            ? std::string("to: the window must end after it begins (it ends when it begins)")
            : fmt::format("to: the window must end after it begins (it ends {} before it begins)",
                          FormatDuration(window.from - window.to)));
  }
  if (window.to <= now) {
    return InvalidArgument(
        fmt::format("to: the window has already ended ({} ago)", FormatDuration(now - window.to)));
  }
  DROVER_ASSIGN_OR_RETURN(model::NodeAdmin * admin, EditNodeAdmin(node, step));
  window.set_at = now;
  admin->maintenance = std::move(window);
  capacity_freed_ = true;  // a replaced window may free the node earlier
  return OkStatus();
}

Status Controller::ClearMaintenance(const NodeId& node, TimeMs /*now*/, Step& step) {
  DROVER_ASSIGN_OR_RETURN(model::NodeAdmin * admin, EditNodeAdmin(node, step));
  admin->maintenance.reset();
  capacity_freed_ = true;
  return OkStatus();
}

void Controller::EnforceNodeAdmin(TimeMs now, Step& step) {
  for (auto& [node, admin] : node_admin_) {
    if (admin.maintenance && admin.maintenance->to <= now) {
      admin.maintenance.reset();
      step.nodes_changed.insert(node);
      capacity_freed_ = true;
    }
    if (!admin.draining || admin.drained_at != 0) continue;
    if (admin.drain_deadline != 0 && now >= admin.drain_deadline) {
      const std::string why =
          fmt::format("node_drain: node {} is drained by {} and its grace ended", node.value(),
                      admin.cordoned_by);
      for (const auto& [where, key] : LiveWorkers()) {
        if (where == node) {
          Preempt(jobs_.Get(key.job), std::nullopt, model::Disruption::kNodeDrain, why, step);
        }
      }
    }
    if (admin.drained_at == 0 && LiveWorkersOn(node) == 0) {
      admin.drained_at = now;
      step.nodes_changed.insert(node);
    }
  }
}

std::vector<sched::NodeWindow> Controller::NodeWindows(TimeMs now) const {
  std::vector<sched::NodeWindow> windows;
  for (const auto& [node, admin] : node_admin_) {
    if (admin.cordoned) windows.push_back(sched::NodeWindow{node, 0, sched::kNeverEnds});
    if (admin.maintenance && admin.maintenance->to > now) {
      windows.push_back(sched::NodeWindow{node, admin.maintenance->from, admin.maintenance->to});
    }
  }
  return windows;
}

}  // namespace drover::control
