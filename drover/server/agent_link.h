#pragma once

// The protocol between the server and remote agents (`drover agent --server URL`), both ends.
//
// Server end: a RemoteRuntime per remote node is the WorkerRuntime the control plane drives.
// It queues commands (launch, stop, adopt) that the agent collects by long-polling
// GET /v1/agents/{node}/commands, and holds the events the agent posts to
// POST /v1/agents/{node}/events until the control plane polls them.
//
// Agent end: RunAgent() registers the node, then loops: collect commands, carry them out on a
// LocalRuntime, post the runtime's events (started, checkpoint, exited; kept and re-sent until
// the server accepts them, so a restarted server loses no exit).
//
// Wire form of a command: {"kind": "launch", "launch": LaunchSpec}, {"kind": "stop", "key": KEY,
// "preempt": bool, "reason": text} ("preempt" and "reason" absent mean a plain stop, so an
// older server's commands decode) or {"kind": "adopt", "keys": [KEY...]}.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "drover/agent/runtime.h"
#include "drover/common/clock.h"
#include "drover/common/result.h"
#include "drover/model/launch.h"
#include "drover/model/node.h"

namespace drover::server {

struct AgentCommand {
  enum class Kind { kLaunch, kStop, kAdopt };
  Kind kind = Kind::kLaunch;
  model::LaunchSpec launch;            // kLaunch
  model::WorkerKey key;                // kStop
  agent::StopRequest stop;             // kStop: preempt and reason
  std::vector<model::WorkerKey> keys;  // kAdopt
};

nlohmann::json ToJson(const AgentCommand& command);
Result<AgentCommand> AgentCommandFromJson(const nlohmann::json& json);

// Thread-safe: the control plane calls the WorkerRuntime methods while HTTP handler threads
// call TakeCommands and Report.
class RemoteRuntime final : public agent::WorkerRuntime {
 public:
  Status Launch(const model::LaunchSpec& spec) override;
  Status Stop(const model::WorkerKey& key, const agent::StopRequest& request) override;
  // The agent answers with an exit event ("lost") for every key it has no trace of.
  std::vector<model::WorkerKey> Adopt(const std::vector<model::WorkerKey>& keys) override;
  std::vector<model::WorkerEvent> Poll() override;

  // Commands queued for the agent; waits up to `wait_ms` for one when there are none.
  std::vector<AgentCommand> TakeCommands(DurationMs wait_ms);
  void Report(std::vector<model::WorkerEvent> events);
  // Wakes every TakeCommands waiter (shutdown).
  void Close();

 private:
  void Push(AgentCommand command);

  std::mutex mu_;
  std::condition_variable commands_ready_;
  std::deque<AgentCommand> commands_;
  std::vector<model::WorkerEvent> events_;
  bool closed_ = false;
};

struct AgentOptions {
  std::string server_url;       // e.g. http://127.0.0.1:8420; also the workers' DROVER_SERVER
  model::Node node;             // what this agent offers
  std::string runs_dir;         // where worker directories and logs live
  std::string supervisor_path;  // the drover binary
  DurationMs poll_ms = 50;
};

// Runs the agent until `stop` becomes true (defined in agent_run.cc). Returns an error only for a
// setup failure; a server that is down is retried.
Status RunAgent(const AgentOptions& options, const Clock& clock, const std::atomic<bool>& stop);

}  // namespace drover::server
