#include "drover/server/agent_link.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
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
  switch (command.kind) {
    case AgentCommand::Kind::kLaunch:
      return json{{"kind", "launch"}, {"launch", codec::ToJson(command.launch)}};
    case AgentCommand::Kind::kStop:
      return json{{"kind", "stop"},
                  {"key", KeyJson(command.key)},
                  {"preempt", command.stop.preempt},
                  {"reason", command.stop.reason}};
    case AgentCommand::Kind::kAdopt: {
      json keys = json::array();
      for (const model::WorkerKey& key : command.keys) keys.push_back(KeyJson(key));
      return json{{"kind", "adopt"}, {"keys", keys}};
    }
  }
  return json::object();
}

Result<AgentCommand> AgentCommandFromJson(const json& j) {
  try {
    AgentCommand command;
    std::string kind = j.at("kind").get<std::string>();
    if (kind == "launch") {
      command.kind = AgentCommand::Kind::kLaunch;
      DROVER_ASSIGN_OR_RETURN(command.launch, codec::LaunchSpecFromJson(j.at("launch")));
    } else if (kind == "stop") {
      command.kind = AgentCommand::Kind::kStop;
      command.key = KeyFromJson(j.at("key"));
      command.stop.preempt = j.value("preempt", false);
      command.stop.reason = j.value("reason", "");
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
  {
    MutexLock lock(mu_);
    PushLocked(std::move(command));
  }
  commands_ready_.notify_all();
}

void RemoteRuntime::PushLocked(AgentCommand command) {
  if (link_ != Link::kLost) commands_.push_back(std::move(command));
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

Result<std::vector<AgentCommand>> RemoteRuntime::TakeCommands(DurationMs wait_ms) {
  MutexLock lock(mu_);
  DROVER_RETURN_IF_ERROR(RequireConnected());
  ++waiting_;
  commands_ready_.wait_for(lock, std::chrono::milliseconds(wait_ms),
                           [this]() REQUIRES(mu_) { return closed_ || !commands_.empty(); });
  --waiting_;
  quiet_since_ = heard_at_ = clock_.Now();
  std::vector<AgentCommand> out(std::make_move_iterator(commands_.begin()),
                                std::make_move_iterator(commands_.end()));
  commands_.clear();
  return out;
}

Status RemoteRuntime::Report(std::vector<model::WorkerEvent> events) {
  MutexLock lock(mu_);
  DROVER_RETURN_IF_ERROR(RequireConnected());
  quiet_since_ = heard_at_ = clock_.Now();
  for (model::WorkerEvent& event : events) events_.push_back(std::move(event));
  return OkStatus();
}

void RemoteRuntime::Connect(const std::vector<model::WorkerKey>& live) {
  {
    MutexLock lock(mu_);
    link_ = Link::kConnected;
    quiet_since_ = heard_at_ = clock_.Now();
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
  }
  commands_ready_.notify_all();
}

void RemoteRuntime::MarkLost(const std::vector<model::WorkerKey>& orphans,
                             const std::string& reason) {
  MutexLock lock(mu_);
  link_ = Link::kLost;
  lost_reason_ = reason;
  commands_.clear();
  orphans_.insert(orphans_.end(), orphans.begin(), orphans.end());
}

std::optional<DurationMs> RemoteRuntime::Silence() const {
  MutexLock lock(mu_);
  if (link_ == Link::kLost) return std::nullopt;
  if (waiting_ > 0) return 0;
  return std::max<DurationMs>(clock_.Now() - quiet_since_, 0);
}

bool RemoteRuntime::lost() const {
  MutexLock lock(mu_);
  return link_ == Link::kLost;
}

TimeMs RemoteRuntime::last_heard_at() const {
  MutexLock lock(mu_);
  return heard_at_;
}

void RemoteRuntime::Close() {
  {
    MutexLock lock(mu_);
    closed_ = true;
  }
  commands_ready_.notify_all();
}

}  // namespace drover::server
