// ControlPlane's remote agents (control_plane.h, docs/architecture.md "Agent liveness" and
// "Agent identity"): registration with its credential rules, the agents' calls for commands
// and with events, their liveness, and the lost nodes remembered across restarts.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "drover/server/control_plane.h"

namespace drover::server {

void ControlPlane::RestoreLostNodes() {
  for (const store::AgentRecord& record : agents_.LostNodes()) {
    if (nodes_.count(record.node) > 0) continue;  // live workers there: RegisterRemoteNode
    auto remote = std::make_shared<RemoteRuntime>(record.node, clock_);
    nodes_.emplace(record.node, NodeEntry{remote, remote, ""});
    remote->MarkLost(record.lost->orphans, record.lost->reason);
    spdlog::info(
        "node {} is lost since before this server started ({}); {} worker(s) to stop "
        "there when its agent registers",
        record.node.value(), record.lost->reason, record.lost->orphans.size());
  }
}

bool ControlPlane::CheckAgents(control::Step& step) {
  if (options_.agent_timeout_ms <= 0) return false;
  bool any = false;
  for (auto& [name, entry] : nodes_) {
    if (!entry.remote) continue;  // the embedded agent is never lost
    std::optional<DurationMs> silence = entry.remote->Silence();
    if (!silence || *silence <= options_.agent_timeout_ms) continue;
    const std::string reason =
        fmt::format("node {} stopped answering for {} s", name.value(), *silence / 1000);
    std::vector<model::WorkerKey> lost = controller_.OnNodeLost(name, reason, clock_.Now(), step);
    // The runtime holds no orphans while its agent is not lost; the record may (restored at
    // Start on a node with live workers), so the runtime is given every recorded one.
    entry.remote->MarkLost(agents_.RecordLost(name, clock_.Now(), reason, lost), reason);
    PublishNodeEvent(name, "lost", reason);
    spdlog::warn("{}: {} worker(s) reported lost; no placements there until its agent registers",
                 reason, lost.size());
    any = true;
  }
  return any;
}

Result<std::string> ControlPlane::RegisterRemoteNode(const model::Node& node,
                                                     const api::Caller& caller) {
  MutexLock lock(mu_);
  const std::string& name = node.name.value();
  auto it = nodes_.find(node.name);
  if (it != nodes_.end() && !it->second.remote) {
    return MakeError(ErrorCode::kAlreadyExists,
                     fmt::format("node {} is served by the embedded agent", name));
  }
  const bool runtime_lost = it != nodes_.end() && it->second.remote->lost();
  std::string issued;
  if (caller.agent != node.name) {
    if (agents_.HasCredential(node.name) && !runtime_lost) {
      const std::string held = fmt::format(
          "node {} is held by another agent, which is live; an agent may take over a node's name "
          "once the server has declared it lost (docs/security.md, \"Agents\")",
          name);
      if (!caller.bearer) {
        return Unauthenticated(held + "; the agent that holds it presents its credential");
      }
      return MakeError(ErrorCode::kAlreadyExists, held + "; the credential presented is not its");
    }
    if (!caller.joined) {
      return Unauthenticated(fmt::format(
          "registering node {} needs the server's join token (drover agent --join-token-file)",
          name));
    }
    DROVER_ASSIGN_OR_RETURN(issued, agents_.Issue(node.name, clock_.Now()));
    if (runtime_lost) spdlog::info("node {} is taken over by a new agent", name);
  }
  control::Step step;
  const bool was_lost = controller_.IsLost(node.name);
  controller_.UpsertNode(node, clock_.Now(), step);
  if (it == nodes_.end()) {
    AddRemote(node.name);
    it = nodes_.find(node.name);
  }
  // The agent may have been restarted, or the server: in both cases it reports what became of
  // the workers the controller believes alive on it.
  std::vector<model::WorkerKey> keys;
  for (const auto& [worker_node, key] : controller_.LiveWorkers()) {
    if (worker_node == node.name) keys.push_back(key);
  }
  RemoteRuntime& remote = *it->second.remote;
  remote.Connect(keys);
  if (std::optional<store::AgentRecord::Lost> lost = agents_.LostRecord(node.name)) {
    // A lost runtime held the recorded orphans, and Connect queued their stops; one restored
    // with live workers (RestoreLostNodes) did not: queue the stops of those not adopted live.
    if (!runtime_lost) {
      std::vector<model::WorkerKey> orphans;
      for (const model::WorkerKey& key : lost->orphans) {
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) orphans.push_back(key);
      }
      if (!orphans.empty()) static_cast<void>(remote.Adopt(orphans));
      for (const model::WorkerKey& key : orphans) {
        static_cast<void>(
            remote.Stop(key, model::StopRequest{false, "its attempt ended: " + lost->reason}));
      }
    }
    if (Status cleared = agents_.ClearLost(node.name); !cleared) {
      spdlog::warn("node {}: cannot clear its lost record: {}", name, cleared.error().ToString());
    }
  }
  if (was_lost || runtime_lost) spdlog::info("node {} registered again after it was lost", name);
  DROVER_RETURN_IF_ERROR(Commit(step));
  PublishNodeEvent(node.name, "registered", was_lost || runtime_lost ? "after it was lost" : "");
  RequestSchedule();
  return issued;
}

Result<std::shared_ptr<RemoteRuntime>> ControlPlane::RemoteOf(const NodeId& node) const {
  auto it = nodes_.find(node);
  if (it == nodes_.end() || !it->second.remote) {
    return NotFound(fmt::format("node {} is not registered", node.value()));
  }
  return it->second.remote;
}

Result<CommandBatch> ControlPlane::TakeCommands(const NodeId& node, const api::AgentAck& ack,
                                                DurationMs wait_ms) {
  std::shared_ptr<RemoteRuntime> remote;
  {
    MutexLock lock(mu_);
    DROVER_ASSIGN_OR_RETURN(remote, RemoteOf(node));
  }
  return remote->TakeCommands(ack, wait_ms);
}

void ControlPlane::SetAgentWaker(RemoteRuntime::Waker waker) {
  MutexLock lock(mu_);
  agent_waker_ = std::move(waker);
  for (auto& [name, entry] : nodes_) {
    if (entry.remote) entry.remote->SetWaker(agent_waker_);
  }
}

std::shared_ptr<RemoteRuntime> ControlPlane::AddRemote(const NodeId& node) {
  auto remote = std::make_shared<RemoteRuntime>(node, clock_);
  remote->SetWaker(agent_waker_);
  nodes_.emplace(node, NodeEntry{remote, remote, ""});
  return remote;
}

Status ControlPlane::ReportEvents(const NodeId& node, std::vector<model::WorkerEvent> events) {
  MutexLock lock(mu_);
  DROVER_ASSIGN_OR_RETURN(std::shared_ptr<RemoteRuntime> remote, RemoteOf(node));
  DROVER_RETURN_IF_ERROR(remote->Report(std::move(events)));
  RequestSchedule();
  return OkStatus();
}

}  // namespace drover::server
