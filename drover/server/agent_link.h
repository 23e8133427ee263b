#pragma once

// The protocol between the server and remote agents (`drover agent --server URL`), both ends.
//
// Server end: a RemoteRuntime per remote node is the WorkerRuntime the control plane drives.
// It queues commands (launch, stop, adopt) that the agent collects by long-polling
// GET /v1/agents/{node}/commands, and holds the events the agent posts to
// POST /v1/agents/{node}/events until the control plane polls them.
//
// Commands are acknowledged: each registration (Connect) opens an epoch, a number the server
// never used before for the node, and numbers its commands 1, 2, ... within it. Every poll
// answers every command the agent has not acknowledged, and says the highest it carried out
// (epoch and seq: api::AgentAck); so a command whose reply was lost is sent again, and the agent
// carries out each sequence number once (AgentCommandRunner). Commands are idempotent on the
// agent besides (a launch of a key it runs or ran answers kAlreadyExists, a stop of an exited
// worker kNotFound), for those sent again under a new epoch.
//
// Agent end: RunAgent() registers the node, then loops: collect commands, carry them out on a
// LocalRuntime, ship the workers' new output (LogShipper), post the runtime's events (started,
// checkpoint, exited; kept and re-sent until the server accepts them, so a restarted server loses
// no exit; an exit only once its worker's output is shipped).
//
// Wire form of a command: {"seq": N, "kind": "launch", "launch": LaunchSpec}, {"seq": N,
// "kind": "stop", "key": KEY, "preempt": bool, "reason": text} ("preempt" and "reason" absent
// mean a plain stop, so an older server's commands decode) or {"seq": N, "kind": "adopt",
// "keys": [KEY...]}.

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "drover/agent/runtime.h"
#include "drover/agent/sampler.h"
#include "drover/api/service.h"
#include "drover/common/clock.h"
#include "drover/common/result.h"
#include "drover/common/thread_annotations.h"
#include "drover/model/launch.h"
#include "drover/model/node.h"

namespace drover::server {

struct AgentCommand {
  enum class Kind { kLaunch, kStop, kAdopt, kSetTimeout };
  Kind kind = Kind::kLaunch;
  std::int64_t seq = 0;                // its number in its epoch; 0 before it is queued
  model::LaunchSpec launch;            // kLaunch
  model::WorkerKey key;                // kStop, kSetTimeout
  model::StopRequest stop;             // kStop: preempt and reason
  std::vector<model::WorkerKey> keys;  // kAdopt
  DurationMs timeout_ms = 0;           // kSetTimeout: the worker's new time limit, > 0
};

nlohmann::json ToJson(const AgentCommand& command);
Result<AgentCommand> AgentCommandFromJson(const nlohmann::json& json);

// The commands of one epoch not yet acknowledged, oldest first.
struct CommandBatch {
  std::int64_t epoch = 0;
  std::vector<AgentCommand> commands;
};

// Thread-safe: the control plane calls the WorkerRuntime methods while HTTP handler threads
// call TakeCommands and Report.
//
// Liveness (docs/architecture.md, "Agent liveness"): the runtime knows when its agent was last
// heard from. Each of the agent's calls counts (registration, every long poll for commands, for
// as long as it is parked, and every post of events); the control plane declares the agent lost
// when Silence() exceeds its timeout.
class RemoteRuntime final : public agent::WorkerRuntime {
 public:
  // Called with the node whenever a command is queued, under the runtime's lock (so that once
  // SetWaker returns, the previous waker is never called again): it must be quick and must not
  // call the runtime.
  using Waker = std::function<void(const NodeId&)>;

  // The server end for `node`. `clock` times the agent's calls and must outlive the runtime. A
  // new runtime waits for its agent to register (Connect), counting its silence from now.
  RemoteRuntime(NodeId node, const Clock& clock);

  // While the agent is lost, commands are dropped: they concern workers already reported lost,
  // which are stopped when the agent comes back (MarkLost).
  Status Launch(const model::LaunchSpec& spec) override;
  Status Stop(const model::WorkerKey& key, const model::StopRequest& request) override;
  Status SetTimeout(const model::WorkerKey& key, DurationMs timeout_ms) override;
  // The agent answers with an exit event ("lost") for every key it has no trace of.
  std::vector<model::WorkerKey> Adopt(const std::vector<model::WorkerKey>& keys) override;
  std::vector<model::WorkerEvent> Poll() override;

  // The agent's calls. kNotFound, doing nothing, until it has registered and again once it has
  // been declared lost (the agent then registers again).
  // Drops the commands `ack` acknowledges (none when it names another epoch) and answers the
  // others. Never waits: with none left and `wait_ms` > 0, the caller parks the agent's poll for
  // up to `wait_ms`, and the agent counts as heard from until then or until its next call.
  Result<CommandBatch> TakeCommands(const api::AgentAck& ack, DurationMs wait_ms);
  // Queues the agent's events for Poll; an event time after now (the agent's clock runs ahead)
  // reads now.
  Status Report(std::vector<model::WorkerEvent> events);
  // Replaces the waker (none: nullptr).
  void SetWaker(Waker waker);

  // The agent registered (again): connected, and heard from now, in a new epoch. The commands
  // not acknowledged in the previous one are numbered again in it, then come an adopt of `live`
  // (the workers the server believes alive on the node: the agent reports on each) and of the
  // workers left from when it was lost, then a stop of each of the latter. The epoch is
  // max(now, previous + 1): after a server restart, later than any the agent saw before.
  void Connect(const std::vector<model::WorkerKey>& live);
  // The agent is declared lost (`reason`): its calls are refused until it registers again,
  // queued commands are dropped, and `orphans` (workers that may still run on the node, already
  // reported lost) are stopped when it comes back.
  void MarkLost(const std::vector<model::WorkerKey>& orphans, const std::string& reason);
  // How long the agent has not been heard from: 0 while one of its long polls is parked;
  // nullopt once it is lost (there is nothing more to detect).
  std::optional<DurationMs> Silence() const;
  bool lost() const;
  // When the agent was last heard from (0: never).
  TimeMs last_heard_at() const;

 private:
  enum class Link { kAwaiting, kConnected, kLost };

  void Push(AgentCommand command) EXCLUDES(mu_);
  // Numbers and queues `command` (dropped while lost); the caller wakes.
  void PushLocked(AgentCommand command) REQUIRES(mu_);
  void WakeLocked() REQUIRES(mu_);
  Status RequireConnected() const REQUIRES(mu_);

  const NodeId node_;
  const Clock& clock_;
  mutable Mutex mu_;
  std::deque<AgentCommand> unacked_ GUARDED_BY(mu_);  // numbered, oldest first
  std::int64_t epoch_ GUARDED_BY(mu_) = 0;
  std::int64_t next_seq_ GUARDED_BY(mu_) = 1;
  Waker waker_ GUARDED_BY(mu_);
  std::vector<model::WorkerEvent> events_ GUARDED_BY(mu_);
  Link link_ GUARDED_BY(mu_) = Link::kAwaiting;
  TimeMs quiet_since_ GUARDED_BY(mu_) = 0;   // the last call ended, or the runtime was created
  TimeMs heard_at_ GUARDED_BY(mu_) = 0;      // the last call ended; 0: none yet
  TimeMs parked_until_ GUARDED_BY(mu_) = 0;  // the deadline of the agent's parked poll
  std::vector<model::WorkerKey> orphans_ GUARDED_BY(mu_);  // workers lost with the agent, to stop
  std::string lost_reason_ GUARDED_BY(mu_);
};

// The agent end's handling of the server's commands on its node's runtime, one turn of
// RunAgent's loop at a time. Not thread-safe: RunAgent's loop owns it.
class AgentCommandRunner {
 public:
  // `runtime` and `clock` must outlive the runner; `node` names the node in exit messages.
  AgentCommandRunner(agent::WorkerRuntime& runtime, const Clock& clock, std::string node);

  // Carries out each command of `batch` the runner has not carried out before (one of a new
  // epoch, or with a higher seq than the last of its epoch), in order, as Run does.
  void RunBatch(const CommandBatch& batch, std::vector<model::WorkerEvent>& events);
  // What to acknowledge on the next poll: the epoch and the last seq carried out in it.
  api::AgentAck ack() const { return ack_; }
  // Carries out `command`. A launch that fails (other than kAlreadyExists: launched before) and
  // an adopted key with no trace on the node become exit events appended to `events`. A stop the
  // runtime cannot carry out yet (kUnavailable: an adopted worker whose supervisor is still
  // starting) is kept for RetryStops; other stop errors (kNotFound: exited already) drop it.
  void Run(const AgentCommand& command, std::vector<model::WorkerEvent>& events);
  // Sends each kept stop again, once per turn of the loop, as ControlPlane retries its stops;
  // those answered kUnavailable again stay kept.
  void RetryStops();

  // The workers the runner launched or adopted and has not seen exit (Observe), so that it can
  // stop them all (Fence).
  // Forgets the workers `events` report exited.
  void Observe(const std::vector<model::WorkerEvent>& events);
  // Stops every worker still running, for `reason` (self-fencing: RunAgent); the number stopped.
  std::size_t Fence(const std::string& reason);
  // The workers launched or adopted and not seen exit.
  const std::set<model::WorkerKey>& running() const { return running_; }

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
  api::AgentAck ack_;
  std::set<model::WorkerKey> running_;  // launched or adopted, not seen exit
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
  // An https server's certificate is checked against this PEM bundle (--ca, DROVER_CA); empty:
  // the system's store.
  std::string ca_file;
  // The node's usage sampler (agent::MakeNodeSampler): its batches are posted to
  // POST /v1/agents/{node}/usage; at most kMaxUnsentUsageBatches wait while the server cannot
  // be reached (the oldest are dropped: samples are lost, never jobs).
  agent::UsageSampler::Options sampling;
};

inline constexpr std::size_t kMaxUnsentUsageBatches = 30;  // 5 minutes of 10 s batches

// Runs the agent until `stop` becomes true (defined in agent_run.cc). Returns an error only for a
// setup failure; a server that is down is retried.
Status RunAgent(const AgentOptions& options, const Clock& clock, const std::atomic<bool>& stop);

}  // namespace drover::server
