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
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "drover/agent/runtime.h"
#include "drover/common/clock.h"
#include "drover/common/result.h"
#include "drover/common/thread_annotations.h"
#include "drover/model/launch.h"
#include "drover/model/node.h"

namespace drover::server {

struct AgentCommand {
  enum class Kind { kLaunch, kStop, kAdopt };
  Kind kind = Kind::kLaunch;
  model::LaunchSpec launch;            // kLaunch
  model::WorkerKey key;                // kStop
  model::StopRequest stop;             // kStop: preempt and reason
  std::vector<model::WorkerKey> keys;  // kAdopt
};

nlohmann::json ToJson(const AgentCommand& command);
Result<AgentCommand> AgentCommandFromJson(const nlohmann::json& json);

// Thread-safe: the control plane calls the WorkerRuntime methods while HTTP handler threads
// call TakeCommands and Report.
//
// Liveness (docs/architecture.md, "Agent liveness"): the runtime knows when its agent was last
// heard from. Each of the agent's calls counts (registration, every long poll for commands, for
// as long as it waits, and every post of events); the control plane declares the agent lost
// when Silence() exceeds its timeout.
class RemoteRuntime final : public agent::WorkerRuntime {
 public:
  // The server end for `node`. `clock` times the agent's calls and must outlive the runtime. A
  // new runtime waits for its agent to register (Connect), counting its silence from now.
  RemoteRuntime(NodeId node, const Clock& clock);

  // While the agent is lost, commands are dropped: they concern workers already reported lost,
  // which are stopped when the agent comes back (MarkLost).
  Status Launch(const model::LaunchSpec& spec) override;
  Status Stop(const model::WorkerKey& key, const model::StopRequest& request) override;
  // The agent answers with an exit event ("lost") for every key it has no trace of.
  std::vector<model::WorkerKey> Adopt(const std::vector<model::WorkerKey>& keys) override;
  std::vector<model::WorkerEvent> Poll() override;

  // The agent's calls. kNotFound, doing nothing, until it has registered and again once it has
  // been declared lost (the agent then registers again).
  // Commands queued for the agent; waits up to `wait_ms` for one when there are none.
  Result<std::vector<AgentCommand>> TakeCommands(DurationMs wait_ms);
  Status Report(std::vector<model::WorkerEvent> events);

  // The agent registered (again): connected, and heard from now. Queues an adopt of `live` (the
  // workers the server believes alive on the node: the agent reports on each) and of the
  // workers left from when it was lost, then a stop of each of the latter.
  void Connect(const std::vector<model::WorkerKey>& live);
  // The agent is declared lost (`reason`): its calls are refused until it registers again,
  // queued commands are dropped, and `orphans` (workers that may still run on the node, already
  // reported lost) are stopped when it comes back.
  void MarkLost(const std::vector<model::WorkerKey>& orphans, const std::string& reason);
  // How long the agent has not been heard from: 0 while one of its long polls waits; nullopt
  // once it is lost (there is nothing more to detect).
  std::optional<DurationMs> Silence() const;
  bool lost() const;
  // When the agent was last heard from (0: never).
  TimeMs last_heard_at() const;

  // Wakes every TakeCommands waiter (shutdown).
  void Close();

 private:
  enum class Link { kAwaiting, kConnected, kLost };

  void Push(AgentCommand command) EXCLUDES(mu_);
  void PushLocked(AgentCommand command) REQUIRES(mu_);
  Status RequireConnected() const REQUIRES(mu_);

  const NodeId node_;
  const Clock& clock_;
  mutable Mutex mu_;
  std::condition_variable_any commands_ready_;
  std::deque<AgentCommand> commands_ GUARDED_BY(mu_);
  std::vector<model::WorkerEvent> events_ GUARDED_BY(mu_);
  Link link_ GUARDED_BY(mu_) = Link::kAwaiting;
  TimeMs quiet_since_ GUARDED_BY(mu_) = 0;  // the last call ended, or the runtime was created
  TimeMs heard_at_ GUARDED_BY(mu_) = 0;     // the last call ended; 0: none yet
  int waiting_ GUARDED_BY(mu_) = 0;         // long polls in progress
  std::vector<model::WorkerKey> orphans_ GUARDED_BY(mu_);  // workers lost with the agent, to stop
  std::string lost_reason_ GUARDED_BY(mu_);
  bool closed_ GUARDED_BY(mu_) = false;
};

// The agent end's handling of the server's commands on its node's runtime, one turn of
// RunAgent's loop at a time. Not thread-safe: RunAgent's loop owns it.
class AgentCommandRunner {
 public:
  // `runtime` and `clock` must outlive the runner; `node` names the node in exit messages.
  AgentCommandRunner(agent::WorkerRuntime& runtime, const Clock& clock, std::string node);

  // Carries out `command`. A launch that fails (other than kAlreadyExists: launched before) and
  // an adopted key with no trace on the node become exit events appended to `events`. A stop the
  // runtime cannot carry out yet (kUnavailable: an adopted worker whose supervisor is still
  // starting) is kept for RetryStops; other stop errors (kNotFound: exited already) drop it.
  void Run(const AgentCommand& command, std::vector<model::WorkerEvent>& events);
  // Sends each kept stop again, once per turn of the loop, as ControlPlane retries its stops;
  // those answered kUnavailable again stay kept.
  void RetryStops();

 private:
  struct PendingStop {
    model::WorkerKey key;
    model::StopRequest request;
  };
  void Stop(const model::WorkerKey& key, const model::StopRequest& request);

  agent::WorkerRuntime& runtime_;
  const Clock& clock_;
  const std::string node_;
  std::vector<PendingStop> pending_stops_;
};

struct AgentOptions {
  std::string server_url;       // e.g. http://127.0.0.1:8420; also the workers' DROVER_SERVER
  model::Node node;             // what this agent offers
  std::string runs_dir;         // where worker directories and logs live
  std::string supervisor_path;  // the drover binary
  DurationMs poll_ms = 50;
  // Where the node credential the server issues is kept (mode 0600; docs/security.md, "Agents"):
  // read at start, sent as `Authorization: Bearer` on every call, replaced when the server
  // issues a new one. Empty: kept in memory only.
  std::string credential_file;
  // Sent (X-Drover-Join-Token) when registering, for a server started with --join-token-file.
  std::string join_token;
};

// Runs the agent until `stop` becomes true (defined in agent_run.cc). Returns an error only for a
// setup failure; a server that is down is retried.
Status RunAgent(const AgentOptions& options, const Clock& clock, const std::atomic<bool>& stop);

}  // namespace drover::server
