#include "drover/cli/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <optional>
#include <string>

#include "drover/agent/supervisor_spawner.h"
#include "drover/api/request.h"
#include "drover/cli/commands.h"
#include "drover/model/job.h"

namespace drover::cli {

namespace {

// A job's or a pipeline run's id as `drover ls` shows it: a positive number that fits 64 bits.
// Anything else is refused here (exit 2, naming the value) rather than sent as a path the
// server has no endpoint for.
const CLI::Validator kJobId(
    [](std::string& value) -> std::string {
      const std::optional<std::int64_t> id = api::ParseInt(value);
      if (!id || *id <= 0) {
        return "'" + value + "' is not a job id (a positive number, as drover ls shows)";
      }
      return "";
    },
    "ID");

// A count or an index given on the command line (an int): 0 or more; the message names the
// range in whole numbers (CLI::NonNegativeNumber's names the largest double).
const CLI::Range kCount(0, std::numeric_limits<int>::max());

// What the parse fills and the chosen verb runs with, in one object that outlives both (the
// parser's callbacks hold `this`).
struct CommandLine {
  // Adds the verbs `wanted` accepts to `app` (each verb's callback sets `run`), with those of
  // `add_full_verbs` when it accepts one of kFullVerbs: how many verbs (or groups) it added.
  int AddVerbs(CLI::App& app, const std::function<bool(std::string_view)>& wanted,
               AddFullVerbs add_full_verbs, char** argv);

  ClientFlags client;
  std::function<int()> run;
  std::string file, id, idempotency_key;
  bool hold_infeasible = false;
  std::vector<std::string> after;
  ListFlags list_flags;
  bool get_watch = false;
  LogFlags log_flags;
  bool cancel_pipeline = false;
  JobVerbFlags verb_flags;
  std::string goodput_by = "queue";
  std::string goodput_since;
  ClusterDiagnosisFlags diagnosis_flags;
  std::string advise_target, advise_pipeline;
  NodeFlags node_flags;
  ReportFlags report_flags;
  SecretFlags secret_flags;
  std::string cron_name, service_name;
  TokenCreateFlags token_flags;
  AuditFlags audit_flags;
};

int CommandLine::AddVerbs(CLI::App& app, const std::function<bool(std::string_view)>& wanted,
                          AddFullVerbs add_full_verbs, char** argv) {
  int added = 0;
  if (wanted("validate")) {
    auto* validate = app.add_subcommand("validate", "check a spec file; exit 2 if invalid");
    validate->add_option("file", file, "spec file (YAML or JSON)")->required();
    validate->callback([&] { run = [&] { return ValidateCommand(file); }; });
    ++added;
  }

  if (wanted("submit")) {
    auto* submit = app.add_subcommand("submit", "submit the jobs of a spec file");
    submit->add_option("file", file, "spec file (YAML or JSON, - for stdin)")->required();
    submit->add_option("--idempotency-key", idempotency_key,
                       "resubmitting with the same key returns the same jobs");
    submit->add_flag("--hold-infeasible", hold_infeasible,
                     "accept jobs that no current node or queue limit can ever hold (they wait "
                     "for the cluster to grow) instead of refusing them");
    submit
        ->add_option("--after", after,
                     "ID[:ok|:any|:failed]: every job of the file waits for job ID (of an earlier "
                     "submission) to succeed (ok, the default), to end in any way (any) or to "
                     "fail; repeatable")
        ->allow_extra_args(false);
    submit->callback([&] {
      run = [&] { return SubmitCommand(client, file, idempotency_key, hold_infeasible, after); };
    });
    ++added;
  }

  if (wanted("ls")) {
    auto* ls = app.add_subcommand("ls", "list jobs");
    ls->add_option("--state", list_flags.state, "only jobs in this state")
        ->check(CLI::IsMember(model::kJobStateNames.Choices()));
    ls->add_option("--owner", list_flags.owner);
    ls->add_option("--team", list_flags.team);
    ls->add_option("--queue", list_flags.queue);
    ls->add_option("--name", list_flags.name);
    ls->add_flag("--active", list_flags.active, "only jobs that have not finished");
    ls->add_option("--limit", list_flags.limit, "the newest N jobs")->check(kCount);
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
    ++added;
  }

  if (wanted("get")) {
    auto* get = app.add_subcommand(
        "get", "show a job (timeline, attempts, workers, transitions) and its pipeline run");
    get->add_option("id", id)->required()->check(kJobId);
    get->add_flag("-w,--watch", get_watch,
                  "draw the job again on each of its events (GET /v1/events) until it ends");
    get->callback([&] { run = [&] { return GetCommand(client, id, get_watch); }; });
    ++added;
  }

  if (wanted("logs")) {
    auto* logs = app.add_subcommand("logs", "print a worker's output");
    logs->add_option("id", id)->required()->check(kJobId);
    logs->add_flag("-f,--follow", log_flags.follow,
                   "keep printing until the worker exits (a job not started yet: wait for it)");
    logs->add_option("--attempt", log_flags.attempt, "attempt number (default: the latest)")
        ->check(kCount);
    logs->add_option("--rank", log_flags.rank, "worker rank (default 0)")->check(kCount);
    logs->add_flag("--stderr", log_flags.stderr_stream, "standard error instead of output");
    logs->add_option("--tail", log_flags.tail_lines, "start with the last N lines")->check(kCount);
    logs->callback([&] { run = [&] { return LogsCommand(client, id, log_flags); }; });
    ++added;
  }

  if (wanted("cancel")) {
    auto* cancel =
        app.add_subcommand("cancel", "cancel a job, or a pipeline run's unfinished jobs");
    cancel->add_option("id", id)->required()->check(kJobId);
    cancel->add_flag("--pipeline", cancel_pipeline, "ID is a pipeline run: cancel its stages");
    cancel->callback([&] { run = [&] { return CancelCommand(client, id, cancel_pipeline); }; });
    ++added;
  }

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
    if (!wanted(verb.name)) continue;
    ++added;
    auto* sub = app.add_subcommand(verb.name, verb.help);
    sub->add_option("id", id)->required()->check(kJobId);
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

  if (wanted("goodput")) {
    auto* goodput = app.add_subcommand(
        "goodput",
        "GPU-hours, per result, lost to retries and preemptions, and the lifecycle split");
    goodput->add_option("--by", goodput_by, "group by queue (default), team or owner")
        ->check(CLI::IsMember({"queue", "team", "owner"}));
    goodput->add_option("--since", goodput_since,
                        "only jobs created since an RFC 3339 time or a duration ago (24h)");
    goodput->callback(
        [&] { run = [&] { return GoodputCommand(client, goodput_by, goodput_since); }; });
    ++added;
  }

  // The verbs that read what the scheduler says of one job.
  const struct {
    const char* name;
    const char* help;
    int (*command)(const ClientFlags& flags, const std::string& id);
  } job_readers[] = {
      {"explain", "say why a job is where it is", ExplainCommand},
      {"why", "show a job's scheduling decisions", WhyCommand},
  };
  for (const auto& reader : job_readers) {
    if (!wanted(reader.name)) continue;
    auto* sub = app.add_subcommand(reader.name, reader.help);
    sub->add_option("id", id)->required()->check(kJobId);
    sub->callback([this, command = reader.command] {
      run = [this, command] { return command(client, id); };
    });
    ++added;
  }

  if (wanted("diagnose")) {
    auto* diagnose = app.add_subcommand(
        "diagnose",
        "say what a job's measured GPU, CPU and memory use and its timeline show; without an ID, "
        "the findings across jobs ranked by wasted GPU-hours");
    diagnose->add_option("id", id, "a job id; none: every job the token may view")->check(kJobId);
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
    ++added;
  }

  if (wanted("advise")) {
    auto* advise = app.add_subcommand(
        "advise",
        "recommend requests (CPU, memory, GPU, timeout) from a job name's measured history");
    auto* advise_what =
        advise->add_option("target", advise_target, "a job id, or a job name (its newest job)");
    advise->add_option("--pipeline", advise_pipeline, "advice for each job of this pipeline run")
        ->excludes(advise_what);
    advise->callback(
        [&] { run = [&] { return AdviseCommand(client, advise_target, advise_pipeline); }; });
    ++added;
  }

  // The verbs without arguments.
  const struct {
    const char* name;
    const char* help;
    int (*command)(const ClientFlags& flags);
  } plain_verbs[] = {
      {"nodes", "list nodes with free and total resources", NodesCommand},
      {"queues", "list queues with quotas, usage and borrowing", QueuesCommand},
      {"whoami", "whom the token speaks for", WhoAmICommand},
  };
  for (const auto& verb : plain_verbs) {
    if (!wanted(verb.name)) continue;
    app.add_subcommand(verb.name, verb.help)->callback([this, command = verb.command] {
      run = [this, command] { return command(client); };
    });
    ++added;
  }

  if (wanted("node")) {
    auto* node =
        app.add_subcommand("node", "cordon, drain or uncordon a node; maintenance windows");
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
    ++added;
  }

  if (wanted("checkpoint")) {
    auto* checkpoint =
        app.add_subcommand("checkpoint", "report that a running job saved a checkpoint now");
    checkpoint->add_option("id", id, "the job (default: $DROVER_JOB_ID, inside a job)")
        ->check(kJobId);
    checkpoint->callback([&] { run = [&] { return CheckpointCommand(client, id); }; });
    ++added;
  }

  if (wanted("report")) {
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
    ++added;
  }

  if (wanted("secret")) {
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
    ++added;
  }

  if (wanted("cron") || wanted("crons")) {
    AddCronCommands(app, client, cron_name, run);
    ++added;
  }
  if (wanted("service") || wanted("services")) {
    AddServiceCommands(app, client, service_name, run);
    ++added;
  }

  if (wanted("token")) {
    auto* token = app.add_subcommand("token", "create, list and revoke API tokens (admin)");
    token->require_subcommand(1);
    auto* token_create = token->add_subcommand("create", "create a token; prints it once");
    token_create->add_option("--user", token_flags.user, "whom it speaks for")->required();
    token_create->add_option("--team", token_flags.team, "the user's team (optional for admin)");
    token_create->add_option("--role", token_flags.role, "admin, coordinator, member or viewer")
        ->required();
    token_create->add_option("--queues", token_flags.queues, "submit only to these queues")
        ->delimiter(',');
    token_create->add_option("--expires", token_flags.expires,
                             "lifetime, e.g. 30d (default: never)");
    token_create->callback([&] { run = [&] { return TokenCreateCommand(client, token_flags); }; });
    auto* token_ls = token->add_subcommand("ls", "list tokens (never the tokens themselves)");
    token_ls->callback([&] { run = [&] { return TokenListCommand(client); }; });
    auto* token_revoke = token->add_subcommand("revoke", "revoke a token by its id, at once");
    token_revoke->add_option("id", id, "the token's id (tok-...)")->required();
    token_revoke->callback([&] { run = [&] { return TokenRevokeCommand(client, id); }; });
    ++added;
  }

  if (wanted("audit")) {
    auto* audit = app.add_subcommand("audit", "list the audit log of mutating requests");
    audit->add_option("--since", audit_flags.since, "an ISO time, or a duration ago (2h)");
    audit->add_option("--user", audit_flags.user, "only this user's requests");
    audit->add_option("--team", audit_flags.team, "only this team's requests");
    audit->add_option("--job", audit_flags.job, "only requests on this job");
    audit->add_option("--limit", audit_flags.limit, "only the newest N");
    audit->callback([&] { run = [&] { return AuditCommand(client, audit_flags); }; });
    ++added;
  }

  if (std::any_of(std::begin(kFullVerbs), std::end(kFullVerbs),
                  [&](const FullVerb& verb) { return wanted(verb.name); })) {
    add_full_verbs(app, client, run, argv);
    ++added;
  }
  return added;
}

}  // namespace

void AddGlobalOptions(CLI::App& app, ClientFlags& client) {
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
}

std::string_view VerbOf(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!arg.starts_with('-') || arg == "-") return argv[i];
    if (app.get_help_ptr() != nullptr && app.get_help_ptr()->check_name(arg)) return {};
    if (arg.find('=') != std::string::npos) continue;  // --server=URL
    for (const CLI::Option* option : app.get_options()) {
      if (option->get_expected_min() > 0 && option->check_name(arg)) {
        ++i;  // its value
        break;
      }
    }
  }
  return {};
}

int Main(int argc, char** argv, AddFullVerbs add_full_verbs, api::TlsConnector tls) {
  // The supervisor and its spawner are internal entry points, exec'd by agents; they parse
  // their own arguments.
  if (std::optional<int> status = agent::RunSupervisorVerb(argc, argv)) return *status;
  CLI::App app{"drover: run GPU workloads from an explicit contract, on one machine or many"};
  app.require_subcommand(1);
  app.fallthrough();
  CommandLine line;
  ClientFlags& client = line.client;
  client.tls = tls;
  AddGlobalOptions(app, client);

  // Only the verb named is built: CLI11 makes an object per option, and all of them cost a
  // `drover get` more than the rest of its start (docs/benchmarks.md, "The client's parser
  // built for its verb"). A command line without a verb, or whose verb is none of them, gets
  // them all, for its help or its error.
  const std::string verb(VerbOf(app, argc, argv));
  const auto named = [&](std::string_view name) { return name == verb; };
  const auto every = [](std::string_view) { return true; };
  if (verb.empty() || line.AddVerbs(app, named, add_full_verbs, argv) == 0) {
    line.AddVerbs(app, every, add_full_verbs, argv);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int status = app.exit(e);
    return status == 0 ? 0 : 2;
  }
  std::string servers = client.server;  // the list, in lower case, to find a scheme
  std::transform(servers.begin(), servers.end(), servers.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (line.run && tls == nullptr && servers.find("https://") != std::string::npos) {
    return RunFull(argv, "an https:// server is spoken to by drover-full");
  }
  return line.run ? line.run() : 2;
}

}  // namespace drover::cli
