#include "drover/cli/cli.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "drover/agent/supervisor.h"
#include "drover/cli/commands.h"
#include "drover/cli/daemons.h"
#include "drover/cli/gateway_command.h"
#include "drover/cli/render.h"
#include "drover/cli/simulate.h"
#include "drover/model/executor.h"
#include "drover/model/job.h"
#include "drover/model/policy.h"

namespace drover::cli {
namespace {

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
                      "how often workers' process trees are sampled (default 5s; 0: never)");
}

}  // namespace

int Main(int argc, char** argv) {
  // The supervisor is an internal entry point, exec'd by agents; it parses its own arguments.
  if (argc >= 2 && std::strcmp(argv[1], "supervise") == 0) {
    return agent::SupervisorMain(argc - 1, argv + 1);
  }
  CLI::App app{"drover: run GPU workloads from an explicit contract, on one machine or many"};
  app.require_subcommand(1);
  app.fallthrough();
  ClientFlags client;
  const char* env_server = std::getenv("DROVER_SERVER");
  client.server = env_server && *env_server ? env_server : "http://127.0.0.1:8420";
  app.add_option("--server", client.server, "API base URL (env DROVER_SERVER)");
  const char* env_ca = std::getenv("DROVER_CA");
  client.ca_file = env_ca ? env_ca : "";
  app.add_option("--ca", client.ca_file,
                 "PEM CA bundle an https server's certificate is checked against (env DROVER_CA; "
                 "default: the system's store)");
  app.add_option("--token", client.token,
                 "API token (default: $DROVER_TOKEN, ~/.config/drover/token, then "
                 ".drover/admin.token)");
  app.add_option("-o,--output", client.output, "table or json")
      ->check(CLI::IsMember({"table", "json"}));

  std::function<int()> run;
  std::string file, id, idempotency_key;

  ServerFlags server_flags;
  auto* server = app.add_subcommand("server", "run the control plane with an embedded agent");
  server->add_option("--data", server_flags.data_dir, "state directory (SQLite, worker logs)");
  server->add_option("--store", server_flags.store,
                     "the state's database: postgres://USER[:PASSWORD]@HOST[:PORT]/DB (default: "
                     "SQLite in --data)");
  server->add_option("--listen", server_flags.listen, "HOST:PORT to serve the API on");
  server->add_option("--advertise-url", server_flags.advertise_url,
                     "this server's API URL as clients and agents reach it, shown by standbys "
                     "(PostgreSQL store; default: the --listen URL)");
  server->add_option("--lease", server_flags.lease,
                     "how long the leader's lease lasts unrenewed: a standby takes over after "
                     "this (PostgreSQL store; default 10s)");
  server->add_option("--lease-renew", server_flags.lease_renew,
                     "how often the leader renews its lease and a standby tries to take it "
                     "(PostgreSQL store; default 2s; less than --lease)");
  server->add_option("--store-wait", server_flags.store_wait,
                     "how long to keep trying to reach the database at start (PostgreSQL "
                     "store; default 60s)");
  server->add_option("--ready-file", server_flags.ready_file,
                     "write the API URL to this file once listening");
  server->add_option("--policy", server_flags.policy_file,
                     "scheduling policy file (queues, quotas, preemption); re-read when it "
                     "changes");
  server->add_option("--join-token-file", server_flags.join_token_file,
                     "a file holding the token agents present to be issued a node credential "
                     "(default: DATA/join.token, created on the first start)");
  server->add_option("--agent-timeout", server_flags.agent_timeout,
                     "declare a remote agent's node lost after this long without a word from it "
                     "(default 30s; 0: never)");
  server->add_option("--service-ports", server_flags.service_ports,
                     "the ports services' replicas are given as $DROVER_PORT, FROM-TO (default "
                     "30000-32767; docs/inference.md)");
  server->add_option("--tls-cert", server_flags.tls.cert_file,
                     "PEM certificate (chain) to serve HTTPS with, on both listeners; with "
                     "--tls-key (docs/security.md, \"TLS\")");
  server->add_option("--tls-key", server_flags.tls.key_file, "PEM private key of --tls-cert");
  server->add_option("--agent-listen", server_flags.agent_listen,
                     "HOST:PORT of a listener for remote agents alone (docs/api.md, \"Limits\")");
  server->add_option("--max-body", server_flags.max_body,
                     "largest request body, e.g. 1Mi (default 1Mi; 413 beyond)");
  server->add_option("--max-spec-size", server_flags.max_spec_size,
                     "largest job spec after YAML aliases are expanded (default 4Mi)");
  server->add_option("--max-arg-size", server_flags.max_arg_size,
                     "largest command[i], script or env entry of a job (default and most: "
                     "131071 bytes)");
  server->add_option("--max-launch-size", server_flags.max_launch_size,
                     "a job's command, script and env together (default 1Mi)");
  server->add_option("--diagnosis-min-sampled", server_flags.diagnosis_min_sampled,
                     "sampled time below which no diagnosis rule judges an attempt (default "
                     "10m; docs/observability.md, \"Diagnosis\")");
  server->add_option("--max-remote-log-size", server_flags.max_remote_log_size,
                     "what the server keeps of one remote worker's stdout or stderr (default "
                     "64Mi; the rest stays on the agent's node)");
  server->add_option("--max-connections", server_flags.limits.max_connections,
                     "connections open at once per listener (default 1024)");
  server->add_option("--max-client-connections", server_flags.limits.max_client_connections,
                     "connections open at once from one address on the API listener (default 128)");
  server->add_option("--max-long-polls", server_flags.limits.max_long_polls,
                     "log follows waiting at once (default 256; 429 beyond)");
  server->add_option("--http-threads", server_flags.limits.threads,
                     "threads answering ordinary requests (default 16)");
  server->add_option("--header-timeout", server_flags.header_timeout,
                     "a request's line and headers must arrive within this (default 10s)");
  server->add_option("--body-timeout", server_flags.body_timeout,
                     "a request's body must arrive within this (default 30s)");
  server->add_option("--idle-timeout", server_flags.idle_timeout,
                     "close a keep-alive connection idle for this long (default 15s)");
  server->add_option("--event-ring", server_flags.events.ring_events,
                     "events kept for resuming GET /v1/events (default 4096)");
  server->add_option("--max-event-streams", server_flags.events.max_streams,
                     "event streams open at once (default 256; 503 beyond)");
  server->add_option("--max-event-streams-per-token", server_flags.events.max_streams_per_token,
                     "event streams open at once per token (default 8; 429 beyond)");
  server->add_option("--event-stream-buffer", server_flags.event_stream_buffer,
                     "an event stream's unsent bytes before it is read no further (default 64Ki)");
  server->add_option("--event-heartbeat", server_flags.event_heartbeat,
                     "a keep-alive comment on an event stream idle this long (default 15s)");
  server->add_option("--kubeconfig", server_flags.kubeconfig,
                     "kubeconfig for queues with executor: kubernetes (default: $KUBECONFIG, "
                     "else ~/.kube/config when present)");
  server->add_option("--kube-context", server_flags.kube_context,
                     "context of the kubeconfig (default: its current context)");
  AddNodeFlags(server, server_flags.nodes);
  server->callback([&] { run = [&] { return ServerCommand(server_flags); }; });

  AgentFlags agent_flags;
  auto* agent = app.add_subcommand("agent", "serve one more node to a server over HTTP");
  agent->add_option("--credential-file", agent_flags.credential_file,
                    "where the node credential the server issues is kept (default: "
                    "DATA/node.credential, mode 0600)");
  agent->add_option("--join-token-file", agent_flags.join_token_file,
                    "the server's join token file (its DATA/join.token or its --join-token-file; "
                    "default: $DROVER_JOIN_TOKEN), needed until the node has a credential");
  agent->add_option("--data", agent_flags.data_dir, "where worker directories and logs live");
  AddNodeFlags(agent, agent_flags.nodes);
  agent->callback([&] {
    agent_flags.server = client.server;
    agent_flags.ca_file = client.ca_file;
    run = [&] { return AgentCommand(agent_flags); };
  });

  auto* validate = app.add_subcommand("validate", "check a spec file; exit 2 if invalid");
  validate->add_option("file", file, "spec file (YAML or JSON)")->required();
  validate->callback([&] { run = [&] { return ValidateCommand(file); }; });

  auto* submit = app.add_subcommand("submit", "submit the jobs of a spec file");
  submit->add_option("file", file, "spec file (YAML or JSON, - for stdin)")->required();
  submit->add_option("--idempotency-key", idempotency_key,
                     "resubmitting with the same key returns the same jobs");
  bool hold_infeasible = false;
  submit->add_flag("--hold-infeasible", hold_infeasible,
                   "accept jobs that no current node or queue limit can ever hold (they wait "
                   "for the cluster to grow) instead of refusing them");
  std::vector<std::string> after;
  submit
      ->add_option("--after", after,
                   "ID[:ok|:any|:failed]: every job of the file waits for job ID (of an earlier "
                   "submission) to succeed (ok, the default), to end in any way (any) or to "
                   "fail; repeatable")
      ->allow_extra_args(false);
  submit->callback([&] {
    run = [&] { return SubmitCommand(client, file, idempotency_key, hold_infeasible, after); };
  });

  ListFlags list_flags;
  auto* ls = app.add_subcommand("ls", "list jobs");
  ls->add_option("--state", list_flags.state, "only jobs in this state")
      ->check(CLI::IsMember(model::kJobStateNames.Choices()));
  ls->add_option("--owner", list_flags.owner);
  ls->add_option("--team", list_flags.team);
  ls->add_option("--queue", list_flags.queue);
  ls->add_option("--name", list_flags.name);
  ls->add_flag("--active", list_flags.active, "only jobs that have not finished");
  ls->add_option("--limit", list_flags.limit, "the newest N jobs")->check(CLI::NonNegativeNumber);
  ls->add_flag("--pending", list_flags.pending,
               "jobs that have not started (pending, waiting, ready, admitted or placed), "
               "those in a queue in the order the scheduler considers them, with their "
               "position in their queue and in the cluster")
      ->excludes("--state");
  ls->add_flag("--wide", list_flags.wide, "whole messages (not cut to 70 columns)");
  ls->add_option("--page-size", list_flags.page_size, "jobs per request to the server")
      ->check(CLI::Range(std::int64_t{1}, api::kMaxJobPage))
      ->capture_default_str();
  ls->add_flag("--pipeline", list_flags.pipelines, "list pipeline runs instead of jobs");
  ls->add_flag("-w,--watch", list_flags.watch,
               "draw the list again on each job transition (GET /v1/events), until Ctrl-C");
  ls->callback([&] { run = [&] { return ListCommand(client, list_flags); }; });

  auto* get = app.add_subcommand(
      "get", "show a job (timeline, attempts, workers, transitions) and its pipeline run");
  get->add_option("id", id)->required();
  bool get_watch = false;
  get->add_flag("-w,--watch", get_watch,
                "draw the job again on each of its events (GET /v1/events) until it ends");
  get->callback([&] { run = [&] { return GetCommand(client, id, get_watch); }; });

  LogFlags log_flags;
  auto* logs = app.add_subcommand("logs", "print a worker's output");
  logs->add_option("id", id)->required();
  logs->add_flag("-f,--follow", log_flags.follow,
                 "keep printing until the worker exits (a job not started yet: wait for it)");
  logs->add_option("--attempt", log_flags.attempt, "attempt number (default: the latest)");
  logs->add_option("--rank", log_flags.rank, "worker rank (default 0)");
  logs->add_flag("--stderr", log_flags.stderr_stream, "standard error instead of output");
  logs->add_option("--tail", log_flags.tail_lines, "start with the last N lines");
  logs->callback([&] { run = [&] { return LogsCommand(client, id, log_flags); }; });

  bool cancel_pipeline = false;
  auto* cancel = app.add_subcommand("cancel", "cancel a job, or a pipeline run's unfinished jobs");
  cancel->add_option("id", id)->required();
  cancel->add_flag("--pipeline", cancel_pipeline, "ID is a pipeline run: cancel its stages");
  cancel->callback([&] { run = [&] { return CancelCommand(client, id, cancel_pipeline); }; });

  JobVerbFlags verb_flags;
  const struct {
    const char* name;
    const char* help;
  } job_verbs[] = {
      {"hold", "hold a job not yet running: it keeps its place but is not scheduled"},
      {"release", "release a held job"},
      {"update", "change a job's priority, timeout or queue (once running: its timeout)"},
      {"requeue", "stop a running job and queue it again, resuming from its checkpoint"},
  };
  for (const auto& verb : job_verbs) {
    auto* sub = app.add_subcommand(verb.name, verb.help);
    sub->add_option("id", id)->required();
    sub->add_option("--reason", verb_flags.reason, "why, recorded with the transition");
    if (std::string_view(verb.name) == "update") {
      sub->add_option("--priority", verb_flags.priority, "critical, high, normal or low");
      sub->add_option("--timeout", verb_flags.timeout, "the time limit per attempt, e.g. 2h30m");
      sub->add_option("--queue", verb_flags.queue, "move it to this queue (before it runs)");
    }
    sub->callback([&, sub] {
      verb_flags.name = sub->get_name();
      run = [&] { return JobVerbCommand(client, id, verb_flags); };
    });
  }

  std::string goodput_by = "queue";
  auto* goodput = app.add_subcommand(
      "goodput", "GPU-hours, per result, lost to retries and preemptions, and the lifecycle split");
  goodput->add_option("--by", goodput_by, "group by queue (default), team or owner")
      ->check(CLI::IsMember({"queue", "team", "owner"}));
  std::string goodput_since;
  goodput->add_option("--since", goodput_since,
                      "only jobs created since an RFC 3339 time or a duration ago (24h)");
  goodput->callback(
      [&] { run = [&] { return GoodputCommand(client, goodput_by, goodput_since); }; });

  auto* explain = app.add_subcommand("explain", "say why a job is where it is");
  explain->add_option("id", id)->required();
  explain->callback([&] { run = [&] { return ExplainCommand(client, id); }; });

  ClusterDiagnosisFlags diagnosis_flags;
  auto* diagnose = app.add_subcommand(
      "diagnose",
      "say what a job's measured GPU, CPU and memory use and its timeline show; without an ID, "
      "the findings across jobs ranked by wasted GPU-hours");
  diagnose->add_option("id", id, "a job id; none: every job the token may view");
  auto* diagnose_since = diagnose->add_option(
      "--since", diagnosis_flags.since,
      "without ID: only jobs not ended before an RFC 3339 time or a duration ago (24h)");
  auto* diagnose_team =
      diagnose->add_option("--team", diagnosis_flags.team, "without ID: only this team's jobs");
  auto* diagnose_limit =
      diagnose->add_option("--limit", diagnosis_flags.limit,
                           "without ID: examine the newest N jobs (default 200, at most 1000)");
  for (auto* option : {diagnose_since, diagnose_team, diagnose_limit}) option->excludes("id");
  diagnose->callback([&] {
    run = [&] {
      return id.empty() ? ClusterDiagnoseCommand(client, diagnosis_flags)
                        : DiagnoseCommand(client, id);
    };
  });

  std::string advise_target, advise_pipeline;
  auto* advise = app.add_subcommand(
      "advise",
      "recommend requests (CPU, memory, GPU, timeout) from a job name's measured history");
  auto* advise_what =
      advise->add_option("target", advise_target, "a job id, or a job name (its newest job)");
  advise->add_option("--pipeline", advise_pipeline, "advice for each job of this pipeline run")
      ->excludes(advise_what);
  advise->callback(
      [&] { run = [&] { return AdviseCommand(client, advise_target, advise_pipeline); }; });

  auto* nodes = app.add_subcommand("nodes", "list nodes with free and total resources");
  nodes->callback([&] { run = [&] { return NodesCommand(client); }; });

  NodeFlags node_flags;
  auto* node = app.add_subcommand("node", "cordon, drain or uncordon a node; maintenance windows");
  node->require_subcommand(1);
  auto* node_cordon =
      node->add_subcommand("cordon", "no new placements; running jobs keep running");
  auto* node_drain = node->add_subcommand(
      "drain", "cordon, then move jobs off: checkpointing ones at once, the others at the grace");
  node_drain->add_option("--grace", node_flags.grace,
                         "stop what still runs after this long (default: let it end)");
  auto* node_uncordon = node->add_subcommand("uncordon", "take placements again (ends a drain)");
  auto* node_maintenance = node->add_subcommand(
      "maintenance", "set a maintenance window the scheduler keeps clear (or --clear it)");
  node_maintenance->add_option("--from", node_flags.from, "now, +DURATION or an ISO time");
  node_maintenance->add_option("--to", node_flags.to, "+DURATION (from now) or an ISO time");
  node_maintenance->add_flag("--clear", node_flags.clear, "remove the node's window");
  for (auto* sub : {node_cordon, node_drain, node_uncordon, node_maintenance}) {
    sub->add_option("name", node_flags.name, "the node")->required();
    if (sub != node_uncordon) sub->add_option("--reason", node_flags.reason, "why, for others");
    sub->callback([&, sub] {
      node_flags.action = sub->get_name();
      run = [&] { return NodeCommand(client, node_flags); };
    });
  }

  auto* queues = app.add_subcommand("queues", "list queues with quotas, usage and borrowing");
  queues->callback([&] { run = [&] { return QueuesCommand(client); }; });

  auto* why = app.add_subcommand("why", "show a job's scheduling decisions");
  why->add_option("id", id)->required();
  why->callback([&] { run = [&] { return WhyCommand(client, id); }; });

  auto* checkpoint =
      app.add_subcommand("checkpoint", "report that a running job saved a checkpoint now");
  checkpoint->add_option("id", id, "the job (default: $DROVER_JOB_ID, inside a job)");
  checkpoint->callback([&] { run = [&] { return CheckpointCommand(client, id); }; });

  ReportFlags report_flags;
  auto* report = app.add_subcommand(
      "report",
      "from inside a job: report that useful work began, its progress and/or its throughput");
  report->add_flag("--began", report_flags.began, "useful work began now");
  report->add_option("--progress", report_flags.progress, "progress from 0 to 1");
  report->add_option("--throughput", report_flags.throughput,
                     "the job's current rate of useful work, in --unit");
  report->add_option("--unit", report_flags.unit, "the throughput's unit, a rate: samples/s");
  report->add_option("--job", report_flags.job, "the job (default: $DROVER_JOB_ID)");
  report->callback([&] { run = [&] { return ReportCommand(client, report_flags); }; });

  SecretFlags secret_flags;
  auto* secret = app.add_subcommand("secret", "set, list or remove a team's secrets");
  secret->require_subcommand(1);
  auto* secret_set = secret->add_subcommand("set", "set secret NAME from a file (- : stdin)");
  secret_set->add_option("name", secret_flags.name, "secret name")->required();
  secret_set
      ->add_option("--from-file", secret_flags.from_file, "file holding the value; - for stdin")
      ->required();
  auto* secret_ls = secret->add_subcommand("ls", "list the team's secrets (names only)");
  auto* secret_rm = secret->add_subcommand("rm", "remove secret NAME");
  secret_rm->add_option("name", secret_flags.name, "secret name")->required();
  for (auto* sub : {secret_set, secret_ls, secret_rm}) {
    sub->add_option("--team", secret_flags.team, "the team the secret belongs to")->required();
    sub->callback([&, sub] {
      secret_flags.action = sub->get_name();
      run = [&] { return SecretCommand(client, secret_flags); };
    });
  }

  std::string cron_name;
  AddCronCommands(app, client, cron_name, run);
  AddGatewayCommand(app, client, run);
  std::string service_name;
  AddServiceCommands(app, client, service_name, run);

  auto* token = app.add_subcommand("token", "create, list and revoke API tokens (admin)");
  token->require_subcommand(1);
  TokenCreateFlags token_flags;
  auto* token_create = token->add_subcommand("create", "create a token; prints it once");
  token_create->add_option("--user", token_flags.user, "whom it speaks for")->required();
  token_create->add_option("--team", token_flags.team, "the user's team (optional for admin)");
  token_create->add_option("--role", token_flags.role, "admin, coordinator, member or viewer")
      ->required();
  token_create->add_option("--queues", token_flags.queues, "submit only to these queues")
      ->delimiter(',');
  token_create->add_option("--expires", token_flags.expires, "lifetime, e.g. 30d (default: never)");
  token_create->callback([&] { run = [&] { return TokenCreateCommand(client, token_flags); }; });
  auto* token_ls = token->add_subcommand("ls", "list tokens (never the tokens themselves)");
  token_ls->callback([&] { run = [&] { return TokenListCommand(client); }; });
  auto* token_revoke = token->add_subcommand("revoke", "revoke a token by its id, at once");
  token_revoke->add_option("id", id, "the token's id (tok-...)")->required();
  token_revoke->callback([&] { run = [&] { return TokenRevokeCommand(client, id); }; });

  auto* whoami = app.add_subcommand("whoami", "whom the token speaks for");
  whoami->callback([&] { run = [&] { return WhoAmICommand(client); }; });

  AuditFlags audit_flags;
  auto* audit = app.add_subcommand("audit", "list the audit log of mutating requests");
  audit->add_option("--since", audit_flags.since, "an ISO time, or a duration ago (2h)");
  audit->add_option("--user", audit_flags.user, "only this user's requests");
  audit->add_option("--team", audit_flags.team, "only this team's requests");
  audit->add_option("--job", audit_flags.job, "only requests on this job");
  audit->add_option("--limit", audit_flags.limit, "only the newest N");
  audit->callback([&] { run = [&] { return AuditCommand(client, audit_flags); }; });

  RunFlags run_flags;
  auto* run_command = app.add_subcommand(
      "run", "run a spec file to the end on a private control plane, with progress");
  run_command->add_option("file", run_flags.file, "spec file")->required();
  run_command->add_option("--data", run_flags.data_dir,
                          "state directory (default: a new temporary one)");
  run_command->add_option("--policy", run_flags.policy_file,
                          "scheduling policy file (queues, quotas, preemption)");
  run_command->add_option("--runs", run_flags.cron_runs,
                          "with cron jobs: finish after each has completed this many runs "
                          "(default 1)");
  run_command->add_flag("--hold-infeasible", run_flags.hold_infeasible,
                        "as for submit: keep jobs that can never start waiting");
  AddNodeFlags(run_command, run_flags.nodes);
  run_command->callback([&] { run = [&] { return RunCommand(run_flags); }; });

  RenderFlags render_flags;
  auto* render = app.add_subcommand(
      "render", "print the manifests an external executor would create for a spec file");
  render->add_option("file", render_flags.file, "spec file (YAML or JSON, - for stdin)")
      ->required();
  const std::string kubernetes(model::ExecutorKindName(model::ExecutorKind::kKubernetes));
  render->add_option("--executor", render_flags.executor, kubernetes)
      ->check(CLI::IsMember({kubernetes}));
  render->add_option("--policy", render_flags.policy_file,
                     "take each queue's executor options from this policy file");
  render->add_option("--queue", render_flags.queue,
                     "with --policy: use this queue's executor for every job");
  render->add_option("--namespace", render_flags.namespace_name, "Kubernetes namespace");
  render->add_option("--scheduler", render_flags.scheduler_name,
                     "the pods' schedulerName (e.g. kai-scheduler, volcano)");
  render->add_option("--kueue-queue", render_flags.kueue_queue,
                     "the Kueue LocalQueue (label kueue.x-k8s.io/queue-name)");
  render
      ->add_option("--gang", render_flags.gang_scheduler,
                   "PodGroup for gangs: none, volcano, kai or coscheduling")
      ->check(CLI::IsMember({"none", "volcano", "kai", "coscheduling"}));
  render->add_option("--gang-version", render_flags.gang_scheduler_version,
                     "the gang scheduler's version, e.g. v0.14.1 (default: the newest known)");
  render->add_flag("--dra", render_flags.dra, "GPUs as a DRA ResourceClaimTemplate");
  render->add_option("--device-class", render_flags.device_class,
                     "the DRA device class (default gpu.nvidia.com)");
  render->add_option("--mig-device-class", render_flags.mig_device_class,
                     "the DRA device class of MIG instances (default mig.nvidia.com)");
  render->add_option("--dra-driver", render_flags.dra_driver,
                     "the DRA driver whose attributes the selectors read (default gpu.nvidia.com)");
  render->add_option("--image", render_flags.image, "the image of jobs that name none");
  render->add_option("--service-account", render_flags.service_account,
                     "the pods' service account");
  render->callback([&] {
    render_flags.output = client.output == "json" ? "json" : "yaml";
    run = [&] { return RenderCommand(render_flags); };
  });

  SimulateFlags sim_flags;
  auto* simulate = app.add_subcommand(
      "simulate", "run the simulator on a trace: FGD placement experiment, replays, what-if");
  simulate->add_option("--format", sim_flags.format, "trace format: openb, tiresias or drover")
      ->check(CLI::IsMember({"openb", "tiresias", "drover"}));
  simulate->add_option("--nodes", sim_flags.nodes_file, "openb node list (CSV)");
  simulate->add_option("--pods", sim_flags.pods_file, "openb pod list (CSV)");
  simulate->add_option("--cluster", sim_flags.cluster_file,
                       "the cluster: Tiresias cluster CSV or Drover node YAML");
  simulate->add_option("--jobs", sim_flags.jobs_file,
                       "the jobs: Tiresias CSV, Drover CSV or JSONL");
  simulate->add_option("--synthetic", sim_flags.synthetic_summary,
                       "draw a synthetic trace from this cluster summary CSV");
  simulate->add_option("--cluster-id", sim_flags.cluster_id, "the summary's row (--synthetic)");
  simulate->add_option("--nodes-count", sim_flags.nodes_count, "nodes (--synthetic)");
  simulate->add_option("--gpus-per-node", sim_flags.gpus_per_node, "GPUs per node (--synthetic)");
  simulate->add_option("--jobs-count", sim_flags.jobs_count, "jobs (--synthetic)");
  simulate->add_option("--load", sim_flags.load, "offered GPU load, e.g. 0.9 (--synthetic)");
  simulate->add_option("--queues", sim_flags.queues, "queues q0.. (--synthetic)");
  simulate->add_option("--from-server", sim_flags.from_server,
                       "what-if: replay the jobs a server recorded in this data directory");
  simulate->add_option("--since", sim_flags.since,
                       "start of the recorded window, ISO time (no zone: local time)");
  simulate->add_option("--window", sim_flags.window,
                       "length of the recorded window, e.g. 24h (alone: the last 24h)");
  simulate->add_option("--baseline-policy", sim_flags.baseline_policy,
                       fmt::format("the server's current policy file (default: {})",
                                   model::QueueOrderName(model::Policy{}.order)));
  simulate
      ->add_option("--experiment", sim_flags.experiment,
                   "fgd or replay (default: fgd for openb, else replay)")
      ->check(CLI::IsMember({"fgd", "replay"}));
  simulate->add_option("--policy", sim_flags.policies,
                       fmt::format("placement policy (fgd experiment; default: the server's, "
                                   "fragmentation, as fgd) or {}|POLICY.yaml (replay); repeat to "
                                   "compare",
                                   fmt::join(model::kQueueOrderNames.Choices(), "|")));
  simulate->add_option("--seed", sim_flags.seed, "first random seed (default 42)");
  simulate->add_option("--seeds", sim_flags.seeds, "seeds to average over (fgd; default 1)");
  simulate->add_option("--inflate", sim_flags.inflate,
                       "arrived demand up to this multiple of capacity (fgd; default 1.3)");
  simulate->add_option("--published", sim_flags.published_dir,
                       "FGD paper results folder (default: fgd-expected-results beside --pods)");
  simulate->add_option("--tick", sim_flags.tick, "scheduling pass interval of a replay (1m)");
  simulate->add_option("--pass-interval", sim_flags.pass_interval,
                       "replay: scheduling passes at most this often (default: every instant)");
  simulate->add_flag("--no-timing", sim_flags.no_timing,
                     "leave out wall-clock fields: same input, same output");
  simulate->add_option("-o,--output", sim_flags.output, "json, text (default) or html")
      ->check(CLI::IsMember({"json", "text", "html"}));
  simulate->add_option("--report", sim_flags.report_file, "also write the HTML report here");
  simulate->callback([&] {
    // `drover -o json simulate ...` works too.
    if (sim_flags.output.empty() && client.output == "json") sim_flags.output = "json";
    run = [&] { return SimulateCommand(sim_flags); };
  });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int status = app.exit(e);
    return status == 0 ? 0 : 2;
  }
  return run ? run() : 2;
}

}  // namespace drover::cli
