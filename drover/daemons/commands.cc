#include "drover/daemons/commands.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "drover/cli/commands.h"
#include "drover/daemons/daemons.h"
#include "drover/daemons/gateway_command.h"
#include "drover/daemons/render.h"
#include "drover/daemons/simulate.h"
#include "drover/model/executor.h"
#include "drover/model/policy.h"

namespace drover::daemons {
namespace {

std::string Help(std::string_view verb) { return std::string(cli::FullVerbHelp(verb)); }

void AddNodeFlags(CLI::App* command, server::LocalNodeFlags& nodes) {
  command->add_option("--gpus", nodes.gpus,
                      "declared GPUs instead of discovery, e.g. 8xH100-80GB or 0 for none");
  command->add_option("--nodes", nodes.nodes_file, "a YAML file of declared nodes");
  command->add_option("--name", nodes.node_name, "this node's name (default: the host name)");
  command->add_option("--address", nodes.address,
                      "address other nodes reach this one at (default 127.0.0.1)");
  command->add_option("--gpu-sample-interval", nodes.gpu_sample_interval,
                      "how often GPUs are sampled through NVML (default 1s; 0: never)");
  command->add_option("--process-sample-interval", nodes.process_sample_interval,
                      "how often workers' process trees, and GPU processes' SM shares, are "
                      "sampled (default 5s; 0: never)");
}

void AddServerCommand(CLI::App& app, std::function<int()>& run) {
  auto flags = std::make_shared<ServerFlags>();
  auto* server = app.add_subcommand("server", Help("server"));
  server->add_option("--data", flags->data_dir, "state directory (SQLite, worker logs)");
  server->add_option("--store", flags->store,
                     "the state's database: postgres://USER[:PASSWORD]@HOST[:PORT]/DB (default: "
                     "SQLite in --data)");
  server->add_option("--listen", flags->listen, "HOST:PORT to serve the API on");
  server->add_option("--advertise-url", flags->advertise_url,
                     "this server's API URL as clients and agents reach it, shown by standbys "
                     "(PostgreSQL store; default: the --listen URL)");
  server->add_option("--lease", flags->lease,
                     "how long the leader's lease lasts unrenewed: a standby takes over after "
                     "this (PostgreSQL store; default 10s)");
  server->add_option("--lease-renew", flags->lease_renew,
                     "how often the leader renews its lease and a standby tries to take it "
                     "(PostgreSQL store; default 2s; less than --lease)");
  server->add_option("--store-wait", flags->store_wait,
                     "how long to keep trying to reach the database at start (PostgreSQL "
                     "store; default 60s)");
  server->add_option("--ready-file", flags->ready_file,
                     "write the API URL to this file once listening");
  server->add_option("--policy", flags->policy_file,
                     "scheduling policy file (queues, quotas, preemption); re-read when it "
                     "changes");
  server->add_option("--join-token-file", flags->join_token_file,
                     "a file holding the token agents present to be issued a node credential "
                     "(default: DATA/join.token, created on the first start)");
  server->add_option("--agent-timeout", flags->agent_timeout,
                     "declare a remote agent's node lost after this long without a word from it "
                     "(default 30s; 0: never)");
  server->add_option("--service-ports", flags->service_ports,
                     "the ports services' replicas are given as $DROVER_PORT, FROM-TO (default "
                     "30000-32767; docs/inference.md)");
  server->add_option("--tls-cert", flags->tls.cert_file,
                     "PEM certificate (chain) to serve HTTPS with, on both listeners; with "
                     "--tls-key (docs/security.md, \"TLS\")");
  server->add_option("--tls-key", flags->tls.key_file, "PEM private key of --tls-cert");
  server->add_option("--agent-listen", flags->agent_listen,
                     "HOST:PORT of a listener for remote agents alone (docs/api.md, \"Limits\")");
  server->add_option("--max-body", flags->max_body,
                     "largest request body, e.g. 1Mi (default 1Mi; 413 beyond)");
  server->add_option("--max-spec-size", flags->max_spec_size,
                     "largest job spec after YAML aliases are expanded (default 4Mi)");
  server->add_option("--max-arg-size", flags->max_arg_size,
                     "largest command[i], script or env entry of a job (default and most: "
                     "131071 bytes)");
  server->add_option("--max-launch-size", flags->max_launch_size,
                     "a job's command, script and env together (default 1Mi)");
  server->add_option("--diagnosis-min-sampled", flags->diagnosis_min_sampled,
                     "sampled time below which no diagnosis rule judges an attempt (default "
                     "10m; docs/observability.md, \"Diagnosis\")");
  server->add_option("--max-remote-log-size", flags->max_remote_log_size,
                     "what the server keeps of one remote worker's stdout or stderr (default "
                     "64Mi; the rest stays on the agent's node)");
  server->add_option("--max-connections", flags->limits.max_connections,
                     "connections open at once per listener (default 1024)");
  server->add_option("--max-client-connections", flags->limits.max_client_connections,
                     "connections open at once from one address on the API listener (default 128)");
  server->add_option("--max-long-polls", flags->limits.max_long_polls,
                     "log follows waiting at once (default 256; 429 beyond)");
  server->add_option("--http-threads", flags->limits.threads,
                     "threads answering ordinary requests (default 16)");
  server->add_option("--header-timeout", flags->header_timeout,
                     "a request's line and headers must arrive within this (default 10s)");
  server->add_option("--body-timeout", flags->body_timeout,
                     "a request's body must arrive within this (default 30s)");
  server->add_option("--idle-timeout", flags->idle_timeout,
                     "close a keep-alive connection idle for this long (default 15s)");
  server->add_option("--event-ring", flags->events.ring_events,
                     "events kept for resuming GET /v1/events (default 4096)");
  server->add_option("--max-event-streams", flags->events.max_streams,
                     "event streams open at once (default 256; 503 beyond)");
  server->add_option("--max-event-streams-per-token", flags->events.max_streams_per_token,
                     "event streams open at once per token (default 8; 429 beyond)");
  server->add_option("--event-stream-buffer", flags->event_stream_buffer,
                     "an event stream's unsent bytes before it is read no further (default 64Ki)");
  server->add_option("--event-heartbeat", flags->event_heartbeat,
                     "a keep-alive comment on an event stream idle this long (default 15s)");
  server->add_option("--kubeconfig", flags->kubeconfig,
                     "kubeconfig for queues with executor: kubernetes (default: $KUBECONFIG, "
                     "else ~/.kube/config when present)");
  server->add_option("--kube-context", flags->kube_context,
                     "context of the kubeconfig (default: its current context)");
  server
      ->add_option("--slurm-submit", flags->slurm_submit,
                   "how Slurm queues submit: helper (drover-slurm-submit, libslurm; default) or "
                   "sbatch (a process per submission)")
      ->check(CLI::IsMember({std::string(kSlurmSubmitHelper), std::string(kSlurmSubmitSbatch)}));
  AddNodeFlags(server, flags->nodes);
  server->callback([flags, &run] { run = [flags] { return ServerCommand(*flags); }; });
}

void AddAgentCommand(CLI::App& app, const cli::ClientFlags& client, std::function<int()>& run) {
  auto flags = std::make_shared<AgentFlags>();
  auto* agent = app.add_subcommand("agent", Help("agent"));
  agent->add_option("--credential-file", flags->credential_file,
                    "where the node credential the server issues is kept (default: "
                    "DATA/node.credential, mode 0600)");
  agent->add_option("--join-token-file", flags->join_token_file,
                    "the server's join token file (its DATA/join.token or its --join-token-file; "
                    "default: $DROVER_JOIN_TOKEN), needed until the node has a credential");
  agent->add_option("--data", flags->data_dir, "where worker directories and logs live");
  AddNodeFlags(agent, flags->nodes);
  agent->callback([flags, &client, &run] {
    flags->server = client.server;
    flags->ca_file = client.ca_file;
    run = [flags] { return AgentCommand(*flags); };
  });
}

void AddRunCommand(CLI::App& app, std::function<int()>& run) {
  auto flags = std::make_shared<RunFlags>();
  auto* run_command = app.add_subcommand("run", Help("run"));
  run_command->add_option("file", flags->file, "spec file")->required();
  run_command->add_option("--data", flags->data_dir,
                          "state directory (default: a new temporary one)");
  run_command->add_option("--policy", flags->policy_file,
                          "scheduling policy file (queues, quotas, preemption)");
  run_command->add_option("--runs", flags->cron_runs,
                          "with cron jobs: finish after each has completed this many runs "
                          "(default 1)");
  run_command->add_flag("--hold-infeasible", flags->hold_infeasible,
                        "as for submit: keep jobs that can never start waiting");
  AddNodeFlags(run_command, flags->nodes);
  run_command->callback([flags, &run] { run = [flags] { return RunCommand(*flags); }; });
}

void AddRenderCommand(CLI::App& app, const cli::ClientFlags& client, std::function<int()>& run) {
  auto flags = std::make_shared<RenderFlags>();
  auto* render = app.add_subcommand("render", Help("render"));
  render->add_option("file", flags->file, "spec file (YAML or JSON, - for stdin)")->required();
  const std::string kubernetes(model::ExecutorKindName(model::ExecutorKind::kKubernetes));
  render->add_option("--executor", flags->executor, kubernetes)->check(CLI::IsMember({kubernetes}));
  render->add_option("--policy", flags->policy_file,
                     "take each queue's executor options from this policy file");
  render->add_option("--queue", flags->queue,
                     "with --policy: use this queue's executor for every job");
  render->add_option("--namespace", flags->namespace_name, "Kubernetes namespace");
  render->add_option("--scheduler", flags->scheduler_name,
                     "the pods' schedulerName (e.g. kai-scheduler, volcano)");
  render->add_option("--kueue-queue", flags->kueue_queue,
                     "the Kueue LocalQueue (label kueue.x-k8s.io/queue-name)");
  render
      ->add_option("--gang", flags->gang_scheduler,
                   "PodGroup for gangs: none, volcano, kai or coscheduling")
      ->check(CLI::IsMember({"none", "volcano", "kai", "coscheduling"}));
  render->add_option("--gang-version", flags->gang_scheduler_version,
                     "the gang scheduler's version, e.g. v0.14.1 (default: the newest known)");
  render->add_flag("--dra", flags->dra, "GPUs as a DRA ResourceClaimTemplate");
  render->add_option("--device-class", flags->device_class,
                     "the DRA device class (default gpu.nvidia.com)");
  render->add_option("--mig-device-class", flags->mig_device_class,
                     "the DRA device class of MIG instances (default mig.nvidia.com)");
  render->add_option("--dra-driver", flags->dra_driver,
                     "the DRA driver whose attributes the selectors read (default gpu.nvidia.com)");
  render->add_option("--image", flags->image, "the image of jobs that name none");
  render->add_option("--service-account", flags->service_account, "the pods' service account");
  render->callback([flags, &client, &run] {
    flags->output = client.output == "json" ? "json" : "yaml";
    run = [flags] { return RenderCommand(*flags); };
  });
}

void AddSimulateCommand(CLI::App& app, const cli::ClientFlags& client, std::function<int()>& run) {
  auto flags = std::make_shared<SimulateFlags>();
  auto* simulate = app.add_subcommand("simulate", Help("simulate"));
  simulate->add_option("--format", flags->format, "trace format: openb, tiresias or drover")
      ->check(CLI::IsMember({"openb", "tiresias", "drover"}));
  simulate->add_option("--nodes", flags->nodes_file, "openb node list (CSV)");
  simulate->add_option("--pods", flags->pods_file, "openb pod list (CSV)");
  simulate->add_option("--cluster", flags->cluster_file,
                       "the cluster: Tiresias cluster CSV or Drover node YAML");
  simulate->add_option("--jobs", flags->jobs_file, "the jobs: Tiresias CSV, Drover CSV or JSONL");
  simulate->add_option("--synthetic", flags->synthetic_summary,
                       "draw a synthetic trace from this cluster summary CSV");
  simulate->add_option("--cluster-id", flags->cluster_id, "the summary's row (--synthetic)");
  simulate->add_option("--nodes-count", flags->nodes_count, "nodes (--synthetic)");
  simulate->add_option("--gpus-per-node", flags->gpus_per_node, "GPUs per node (--synthetic)");
  simulate->add_option("--jobs-count", flags->jobs_count, "jobs (--synthetic)");
  simulate->add_option("--load", flags->load, "offered GPU load, e.g. 0.9 (--synthetic)");
  simulate->add_option("--queues", flags->queues, "queues q0.. (--synthetic)");
  simulate->add_option("--from-server", flags->from_server,
                       "what-if: replay the jobs a server recorded in this data directory");
  simulate->add_option("--since", flags->since,
                       "start of the recorded window, ISO time (no zone: local time)");
  simulate->add_option("--window", flags->window,
                       "length of the recorded window, e.g. 24h (alone: the last 24h)");
  simulate->add_option("--baseline-policy", flags->baseline_policy,
                       fmt::format("the server's current policy file (default: {})",
                                   model::QueueOrderName(model::Policy{}.order)));
  simulate
      ->add_option("--experiment", flags->experiment,
                   "fgd or replay (default: fgd for openb, else replay)")
      ->check(CLI::IsMember({"fgd", "replay"}));
  simulate->add_option("--policy", flags->policies,
                       fmt::format("placement policy (fgd experiment; default: the server's, "
                                   "fragmentation, as fgd) or {}|POLICY.yaml (replay); repeat to "
                                   "compare",
                                   fmt::join(model::kQueueOrderNames.Choices(), "|")));
  simulate->add_option("--seed", flags->seed, "first random seed (default 42)");
  simulate->add_option("--seeds", flags->seeds, "seeds to average over (fgd; default 1)");
  simulate->add_option("--inflate", flags->inflate,
                       "arrived demand up to this multiple of capacity (fgd; default 1.3)");
  simulate->add_option("--published", flags->published_dir,
                       "FGD paper results folder (default: fgd-expected-results beside --pods)");
  simulate->add_option("--tick", flags->tick, "scheduling pass interval of a replay (1m)");
  simulate->add_option("--pass-interval", flags->pass_interval,
                       "replay: scheduling passes at most this often (default: every instant)");
  simulate->add_flag("--no-timing", flags->no_timing,
                     "leave out wall-clock fields: same input, same output");
  simulate->add_option("-o,--output", flags->output, "json, text (default) or html")
      ->check(CLI::IsMember({"json", "text", "html"}));
  simulate->add_option("--report", flags->report_file, "also write the HTML report here");
  simulate->callback([flags, &client, &run] {
    // `drover -o json simulate ...` works too.
    if (flags->output.empty() && client.output == "json") flags->output = "json";
    run = [flags] { return SimulateCommand(*flags); };
  });
}

}  // namespace

void AddFullCommands(CLI::App& app, const cli::ClientFlags& client, std::function<int()>& run,
                     char** /*argv*/) {
  AddServerCommand(app, run);
  AddAgentCommand(app, client, run);
  AddRunCommand(app, run);
  AddGatewayCommand(app, client, run);
  AddRenderCommand(app, client, run);
  AddSimulateCommand(app, client, run);
}

}  // namespace drover::daemons
