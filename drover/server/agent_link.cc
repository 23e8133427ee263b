#include "drover/server/agent_link.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "drover/codec/json.h"

namespace drover::server {

using nlohmann::json;

namespace {

json KeyJson(const model::WorkerKey& key) {
  return json{{"job", key.job.value()}, {"attempt", key.attempt}, {"rank", key.rank}};
}

model::WorkerKey KeyFromJson(const json& j) {
  return model::WorkerKey{JobId(j.at("job").get<std::int64_t>()), j.at("attempt").get<int>(),
                          j.at("rank").get<int>()};
}

}  // namespace

json ToJson(const AgentCommand& command) {
  json wire = json::object();
  switch (command.kind) {
    case AgentCommand::Kind::kLaunch:
      wire = json{{"kind", "launch"}, {"launch", codec::ToJson(command.launch)}};
      break;
    case AgentCommand::Kind::kStop:
      wire = json{{"kind", "stop"},
                  {"key", KeyJson(command.key)},
                  {"preempt", command.stop.preempt},
                  {"reason", command.stop.reason}};
      break;
    case AgentCommand::Kind::kSetTimeout:
      wire = json{{"kind", "set_timeout"},
                  {"key", KeyJson(command.key)},
                  {"timeout_ms", command.timeout_ms}};
      break;
    case AgentCommand::Kind::kAdopt: {
      json keys = json::array();
      for (const model::WorkerKey& key : command.keys) keys.push_back(KeyJson(key));
      wire = json{{"kind", "adopt"}, {"keys", keys}};
      break;
    }
  }
  if (command.seq > 0) wire["seq"] = command.seq;
  return wire;
}

Result<AgentCommand> AgentCommandFromJson(const json& j) {
  try {
    AgentCommand command;
    std::string kind = j.at("kind").get<std::string>();
    command.seq = j.value("seq", std::int64_t{0});
    if (kind == "launch") {
      command.kind = AgentCommand::Kind::kLaunch;
      DROVER_ASSIGN_OR_RETURN(command.launch, codec::LaunchSpecFromJson(j.at("launch")));
    } else if (kind == "stop") {
      command.kind = AgentCommand::Kind::kStop;
      command.key = KeyFromJson(j.at("key"));
      command.stop.preempt = j.value("preempt", false);
      command.stop.reason = j.value("reason", "");
    } else if (kind == "set_timeout") {
      command.kind = AgentCommand::Kind::kSetTimeout;
      command.key = KeyFromJson(j.at("key"));
      command.timeout_ms = j.at("timeout_ms").get<DurationMs>();
      if (command.timeout_ms <= 0) {
        return InvalidArgument(
            fmt::format("command.timeout_ms: must be > 0, found {}", command.timeout_ms));
      }
    } else if (kind == "adopt") {
      command.kind = AgentCommand::Kind::kAdopt;
      for (const json& key : j.at("keys")) command.keys.push_back(KeyFromJson(key));
    } else {
      return InvalidArgument("command.kind: unknown kind '" + kind + "'");
    }
    return command;
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("command: ") + e.what());
  }
}

RemoteRuntime::RemoteRuntime(NodeId node, const Clock& clock)
    : node_(std::move(node)), clock_(clock), quiet_since_(clock.Now()) {}

void RemoteRuntime::Push(AgentCommand command) {
  MutexLock lock(mu_);
  PushLocked(std::move(command));
  WakeLocked();
}

void RemoteRuntime::PushLocked(AgentCommand command) {
  if (link_ == Link::kLost) return;
  command.seq = next_seq_++;
  unacked_.push_back(std::move(command));
}

void RemoteRuntime::WakeLocked() {
  if (waker_ && !unacked_.empty()) waker_(node_);
}

void RemoteRuntime::SetWaker(Waker waker) {
  MutexLock lock(mu_);
  waker_ = std::move(waker);
}

Status RemoteRuntime::Launch(const model::LaunchSpec& spec) {
  AgentCommand command;
  command.kind = AgentCommand::Kind::kLaunch;
  command.launch = spec;
  Push(std::move(command));
  return OkStatus();
}

Status RemoteRuntime::Stop(const model::WorkerKey& key, const model::StopRequest& request) {
  AgentCommand command;
  command.kind = AgentCommand::Kind::kStop;
  command.key = key;
  command.stop = request;
  Push(std::move(command));
  return OkStatus();
}

Status RemoteRuntime::SetTimeout(const model::WorkerKey& key, DurationMs timeout_ms) {
  AgentCommand command;
  command.kind = AgentCommand::Kind::kSetTimeout;
  command.key = key;
  command.timeout_ms = timeout_ms;
  Push(std::move(command));
  return OkStatus();
}

std::vector<model::WorkerKey> RemoteRuntime::Adopt(const std::vector<model::WorkerKey>& keys) {
  AgentCommand command;
  command.kind = AgentCommand::Kind::kAdopt;
  command.keys = keys;
  Push(std::move(command));
  return {};
}

std::vector<model::WorkerEvent> RemoteRuntime::Poll() {
  MutexLock lock(mu_);
  return std::exchange(events_, {});
}

Status RemoteRuntime::RequireConnected() const {
  if (link_ == Link::kConnected) return OkStatus();
  if (link_ == Link::kLost) {
    return NotFound(
        fmt::format("node {} was declared lost ({}); register again", node_.value(), lost_reason_));
  }
  return NotFound(fmt::format("node {} is not registered", node_.value()));
}

Result<CommandBatch> RemoteRuntime::TakeCommands(const api::AgentAck& ack, DurationMs wait_ms) {
  MutexLock lock(mu_);
  DROVER_RETURN_IF_ERROR(RequireConnected());
  const TimeMs now = clock_.Now();
  quiet_since_ = heard_at_ = now;
  if (ack.epoch == epoch_) {
    while (!unacked_.empty() && unacked_.front().seq <= ack.seq) unacked_.pop_front();
  }
  CommandBatch batch{epoch_, {unacked_.begin(), unacked_.end()}};
  parked_until_ = batch.commands.empty() ? now + std::max<DurationMs>(wait_ms, 0) : now;
  return batch;
}

Status RemoteRuntime::Report(std::vector<model::WorkerEvent> events) {
  MutexLock lock(mu_);
  DROVER_RETURN_IF_ERROR(RequireConnected());
  quiet_since_ = heard_at_ = clock_.Now();
  for (model::WorkerEvent& event : events) {
    // The agent's clock is its own: nothing it reports happened after it reached us (the
    // controller keeps the times from before placement out, Controller::OnWorkerEvent).
    event.at = std::min(event.at, heard_at_);
    events_.push_back(std::move(event));
  }
  return OkStatus();
}

void RemoteRuntime::Connect(const std::vector<model::WorkerKey>& live) {
  MutexLock lock(mu_);
  link_ = Link::kConnected;
  quiet_since_ = heard_at_ = clock_.Now();
  epoch_ = std::max(clock_.Now(), epoch_ + 1);
  next_seq_ = 1;
  for (AgentCommand& command : unacked_) command.seq = next_seq_++;
  AgentCommand adopt;
  adopt.kind = AgentCommand::Kind::kAdopt;
  adopt.keys = live;
  adopt.keys.insert(adopt.keys.end(), orphans_.begin(), orphans_.end());
  if (!adopt.keys.empty()) PushLocked(std::move(adopt));
  // Adopted first, so that an agent restarted meanwhile finds them (in their directories).
  for (const model::WorkerKey& key : std::exchange(orphans_, {})) {
    AgentCommand stop;
    stop.kind = AgentCommand::Kind::kStop;
    stop.key = key;
    stop.stop.reason = "its attempt ended: " + lost_reason_;
    PushLocked(std::move(stop));
  }
  WakeLocked();
}

void RemoteRuntime::MarkLost(const std::vector<model::WorkerKey>& orphans,
                             const std::string& reason) {
  MutexLock lock(mu_);
  link_ = Link::kLost;
  lost_reason_ = reason;
  unacked_.clear();
  orphans_.insert(orphans_.end(), orphans.begin(), orphans.end());
}

std::optional<DurationMs> RemoteRuntime::Silence() const {
  MutexLock lock(mu_);
  if (link_ == Link::kLost) return std::nullopt;
  const TimeMs now = clock_.Now();
  if (now < parked_until_) return 0;
  return std::max<DurationMs>(now - std::max(quiet_since_, parked_until_), 0);
}

bool RemoteRuntime::lost() const {
  MutexLock lock(mu_);
  return link_ == Link::kLost;
}

TimeMs RemoteRuntime::last_heard_at() const {
  MutexLock lock(mu_);
  return heard_at_;
}

}  // namespace drover::server
