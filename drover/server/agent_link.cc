#include "drover/server/agent_link.h"

#include <chrono>

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
      auto launch = codec::LaunchSpecFromJson(j.at("launch"));
      if (!launch) return tl::unexpected(launch.error());
      command.launch = *std::move(launch);
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

void RemoteRuntime::Push(AgentCommand command) {
  {
    std::lock_guard lock(mu_);
    commands_.push_back(std::move(command));
  }
  commands_ready_.notify_all();
}

Status RemoteRuntime::Launch(const model::LaunchSpec& spec) {
  AgentCommand command;
  command.kind = AgentCommand::Kind::kLaunch;
  command.launch = spec;
  Push(std::move(command));
  return OkStatus();
}

Status RemoteRuntime::Stop(const model::WorkerKey& key, const agent::StopRequest& request) {
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
  std::lock_guard lock(mu_);
  return std::exchange(events_, {});
}

std::vector<AgentCommand> RemoteRuntime::TakeCommands(DurationMs wait_ms) {
  std::unique_lock lock(mu_);
  commands_ready_.wait_for(lock, std::chrono::milliseconds(wait_ms),
                           [&] { return closed_ || !commands_.empty(); });
  std::vector<AgentCommand> out(std::make_move_iterator(commands_.begin()),
                                std::make_move_iterator(commands_.end()));
  commands_.clear();
  return out;
}

void RemoteRuntime::Report(std::vector<model::WorkerEvent> events) {
  std::lock_guard lock(mu_);
  for (model::WorkerEvent& event : events) events_.push_back(std::move(event));
}

void RemoteRuntime::Close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  commands_ready_.notify_all();
}

}  // namespace drover::server
