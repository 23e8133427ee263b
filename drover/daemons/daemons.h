#pragma once

// Long-running subcommands: `drover server`, `drover agent` and `drover run` (the embedded
// default: a private control plane for one spec file).

#include <string>
#include <string_view>
#include <utility>

#include "drover/common/result.h"
#include "drover/server/control_plane.h"
#include "drover/server/http_front.h"
#include "drover/server/http_server.h"
#include "drover/server/local_nodes.h"

namespace drover::daemons {

// "HOST:PORT" split; kInvalidArgument naming `flag` when it is not that or the port is not 0 to
// 65535.
Result<std::pair<std::string, int>> SplitHostPort(const std::string& listen,
                                                  std::string_view flag = "--listen");
// The token in the file at `path`, surrounding white space trimmed; kInvalidArgument naming
// `flag` when it cannot be read or holds none.
Result<std::string> ReadTokenFile(const std::string& path, std::string_view flag);

inline constexpr std::string_view kSlurmSubmitHelper = "helper";
inline constexpr std::string_view kSlurmSubmitSbatch = "sbatch";

struct ServerFlags {
  std::string data_dir = ".drover";
  // Where the control plane's state lives (docs/operations.md, "PostgreSQL store"): empty for
  // SQLite in data_dir (drover.db), or a "postgres://" / "postgresql://" URI. Files (outputs,
  // logs, secrets, the admin token) stay in data_dir either way.
  std::string store;
  // With a PostgreSQL store, the servers sharing it elect a leader (docs/operations.md "Two
  // servers on PostgreSQL"): --advertise-url is this server's API URL as clients and agents
  // reach it (empty: the --listen URL), shown by standbys; --lease and --lease-renew are
  // server::LeaseOptions (durations; empty keeps the default).
  std::string advertise_url;
  std::string lease;
  std::string lease_renew;
  // --store-wait: how long a server that starts keeps trying to reach an unreachable PostgreSQL
  // store (a duration; empty: 60s).
  std::string store_wait;
  std::string listen = "127.0.0.1:8420";
  server::LocalNodeFlags nodes;
  std::string ready_file;  // written with the base URL once listening (for scripts and tests)
  // The scheduling policy (docs/scheduling.md); empty: one queue "default" without quota. A bad
  // file stops the start with its diagnostics; later edits are picked up within a second.
  std::string policy_file;
  // A remote agent silent for longer than this is declared lost (docs/workflows.md, "Node
  // loss"); "0" never.
  std::string agent_timeout = "30s";
  // --service-ports FROM-TO: the ports services' replicas get as $DROVER_PORT
  // (ControlPlaneOptions::service_port_from/to; docs/inference.md).
  std::string service_ports = "30000-32767";
  // A file holding the token agents must present to be issued a node credential
  // (docs/security.md, "Agents"); empty: trust on first use.
  std::string join_token_file;
  // The agent listener, HOST:PORT (server::HttpOptions); empty: none.
  std::string agent_listen;
  // --tls-cert and --tls-key: both listeners speak HTTPS (docs/security.md, "TLS"); both or
  // neither.
  server::TlsFiles tls;
  // The HTTP front's bounds (docs/api.md, "Limits"); the counts are set directly, the sizes and
  // durations are parsed, an empty one keeping HttpLimits' default.
  server::HttpLimits limits;
  std::string max_body;
  std::string header_timeout;
  std::string body_timeout;
  std::string idle_timeout;
  // The bounds of a submitted spec (spec::SpecLimits, docs/spec.md "Limits"): parsed like
  // max_body; empty keeps the default.
  std::string max_spec_size;    // --max-spec-size: the text after YAML aliases are expanded
  std::string max_arg_size;     // --max-arg-size: one command[i], script or env entry
  std::string max_launch_size;  // --max-launch-size: a job's command, script and env together
  // --max-remote-log-size: what the server keeps of one remote worker's stdout or stderr
  // (ControlPlaneOptions::max_remote_log_bytes); empty keeps the default.
  std::string max_remote_log_size;
  // --diagnosis-min-sampled: the sampled time below which no diagnosis rule judges an attempt
  // (model::DiagnosisThresholds::min_sampled_ms); empty keeps the default.
  std::string diagnosis_min_sampled;
  // The live events' bounds (GET /v1/events; docs/api.md, "Events"): the counts set directly,
  // the buffer and heartbeat parsed into `limits` (empty: HttpLimits' default).
  server::EventHubOptions events;
  std::string event_stream_buffer;  // --event-stream-buffer
  std::string event_heartbeat;      // --event-heartbeat
  // The Kubernetes API for queues with `executor: kubernetes` (docs/operations.md): this
  // kubeconfig (and context), else $KUBECONFIG or ~/.kube/config when present.
  std::string kubeconfig;
  std::string kube_context;
  // How Slurm queues submit (exec/slurm/submit_helper.h): kSlurmSubmitHelper, through
  // drover-slurm-submit (libslurm, no process per job), or kSlurmSubmitSbatch, an `sbatch` each.
  std::string slurm_submit = std::string(kSlurmSubmitHelper);
};
int ServerCommand(const ServerFlags& flags);
// The HTTP front's options of `flags` (--agent-listen, --tls-cert/--tls-key, --max-body, the
// timeouts and counts). kInvalidArgument naming the flag that does not parse or is out of range,
// or the TLS flag missing from its pair. The TLS files are read at bind.
Result<server::HttpOptions> HttpOptionsOf(const ServerFlags& flags);
// The control plane's options of `flags` (--agent-timeout, the spec limits); kInvalidArgument
// naming the flag that does not parse or is out of range. --max-arg-size may not exceed
// spec::kMaxArgBytes, the kernel's own bound on one argv or environment string.
Result<server::ControlPlaneOptions> PlaneOptionsOf(const ServerFlags& flags);

struct AgentFlags {
  std::string server;
  std::string data_dir = ".drover-agent";
  server::LocalNodeFlags nodes;
  // Where the node credential is kept; empty: DATA/node.credential.
  std::string credential_file;
  // The server's join token: this file, else $DROVER_JOIN_TOKEN; empty: none.
  std::string join_token_file;
  // As ClientFlags::ca_file (--ca, DROVER_CA).
  std::string ca_file;
};
int AgentCommand(const AgentFlags& flags);

struct RunFlags {
  std::string file;
  std::string data_dir;     // default: a new directory under $TMPDIR
  std::string policy_file;  // as ServerFlags::policy_file
  server::LocalNodeFlags nodes;
  int cron_runs = 1;  // a file of cron jobs: finish after each has completed this many runs
  bool hold_infeasible = false;  // as `drover submit --hold-infeasible`
};
int RunCommand(const RunFlags& flags);

}  // namespace drover::daemons
