#pragma once

// The subcommands of `drover`. Each returns the process exit status: 0 success, 1 failure,
// 2 invalid input (a spec that does not validate, a bad flag).

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "drover/api/client.h"
#include "drover/api/job_handlers.h"
#include "drover/common/clock.h"
#include "drover/model/cron.h"

namespace CLI {
class App;
}

namespace drover::cli {

struct ClientFlags {
  std::string server;            // base URL of the API
  std::string output = "table";  // "table" or "json"
  // --ca, else $DROVER_CA: the PEM bundle an https server's certificate is checked against;
  // empty: the system's store.
  std::string ca_file;
  std::string token;  // --token; empty: ResolveToken looks further
  // Makes TLS sessions for https:// servers; null in the lean binary (cli.h, Main).
  api::TlsConnector tls = nullptr;
};
// The API client `flags` name: their server, checked against their CA bundle, sending the token
// ResolveToken finds (and, on a 401, saying where it came from: AuthHint).
api::ApiClient ClientOf(const ClientFlags& flags);

// Where `drover server` with the default --data keeps its admin token; readable only by the
// server's user, so reading it from the current directory gives nobody else anything.
inline constexpr char kLocalAdminTokenPath[] = ".drover/admin.token";

// The token the CLI sends and where it came from (identity.cc).
struct ResolvedToken {
  std::string token;   // empty: none found
  std::string source;  // "--token", "DROVER_TOKEN" or the file's path
};
// The first of: `flag` (--token), $DROVER_TOKEN, ~/.config/drover/token, kLocalAdminTokenPath.
ResolvedToken ResolveToken(const std::string& flag);
// The sentence a 401 adds: which token was sent (its source, never the token) and how to get
// one.
std::string AuthHint(const ResolvedToken& token);

// `drover token create|ls|revoke`, `drover whoami`, `drover audit` (identity.cc).
struct TokenCreateFlags {
  std::string user, team, role;
  std::vector<std::string> queues;
  std::string expires;  // a duration ("30d"); empty: never
};
int TokenCreateCommand(const ClientFlags& flags, const TokenCreateFlags& create);
int TokenListCommand(const ClientFlags& flags);
int TokenRevokeCommand(const ClientFlags& flags, const std::string& id);
int WhoAmICommand(const ClientFlags& flags);
struct AuditFlags {
  std::string since;  // an ISO time, or a duration ago ("2h")
  std::string user, team, job;
  int limit = 0;
};
int AuditCommand(const ClientFlags& flags, const AuditFlags& audit);

// `drover node cordon|uncordon|drain|maintenance NAME` (nodes.cc): the node's conditions
// afterwards, one line (or its JSON).
struct NodeFlags {
  std::string action;  // "cordon", "uncordon", "drain" or "maintenance"
  std::string name;
  std::string reason;
  std::string grace;     // drain: a duration ("30m"); empty: jobs run to their end
  std::string from, to;  // maintenance: "now", a duration from now ("+2h") or an ISO time
  bool clear = false;    // maintenance: remove the window
};
int NodeCommand(const ClientFlags& flags, const NodeFlags& node);
// The conditions of one node of GET /v1/nodes as one line: "cordoned 5m ago by admin; ...".
std::string NodeConditionsText(const nlohmann::json& node, TimeMs now);

int ValidateCommand(const std::string& file);
// `hold_infeasible`: jobs that can never start on the current cluster wait instead of being
// refused (X-Drover-Hold-Infeasible: true). `after`: `--after` items (spec::ParseAfter), sent
// as X-Drover-After; a malformed one exits 2 before anything is sent, as does one with a file of
// cron jobs.
int SubmitCommand(const ClientFlags& flags, const std::string& file,
                  const std::string& idempotency_key, bool hold_infeasible,
                  const std::vector<std::string>& after);
struct ListFlags {
  std::string state, owner, team, queue, name;
  bool active = false;
  int limit = 0;           // > 0: the newest N; else every matching job (fetched page by page)
  bool pipelines = false;  // list pipeline runs instead of jobs (the other filters do not apply)
  // Jobs waiting in a queue (state ready), in the cluster's order, with their positions.
  bool pending = false;
  bool wide = false;                          // whole messages, not cut to 70 columns
  std::int64_t page_size = api::kMaxJobPage;  // jobs per request, 1 to api::kMaxJobPage
  bool watch = false;  // -w: drawn again on each job transition until interrupted
};
int ListCommand(const ClientFlags& flags, const ListFlags& list);
// `drover get ID`: the job and, when it belongs to a pipeline run, the run as a tree. With
// `watch`, drawn again on each of the job's events until it ends.
int GetCommand(const ClientFlags& flags, const std::string& id, bool watch = false);
struct LogFlags {
  bool follow = false;
  int attempt = 0;
  int rank = 0;
  bool stderr_stream = false;
  int tail_lines = 0;  // > 0: start with the last N lines (of the last 1 MiB)
};
// `drover logs ID`: a worker's output, wherever it ran (remote agents ship theirs to the server).
// With follow, until the worker exits; a job not started yet is waited for (a note on stderr),
// one that ended without starting has nothing to print. With -o json, JSON Lines: one object per
// chunk read, {"job", "attempt", "rank", "stream", "offset", "next_offset", "data", "started",
// "finished", "state"}: without follow exactly one, with it each chunk with output and the last.
int LogsCommand(const ClientFlags& flags, const std::string& id, const LogFlags& logs);
// `drover cancel ID`, or with `pipeline` `drover cancel --pipeline RUN`: cancels the run's
// unfinished jobs.
int CancelCommand(const ClientFlags& flags, const std::string& id, bool pipeline);
// `drover goodput [--by queue|team|owner] [--since T]`: GPU-hours, per result, lost to retries
// and preemptions, and the lifecycle split, per group, of the jobs created since T (ParseSince;
// empty: all). Exit 2 for a --since that does not parse.
int GoodputCommand(const ClientFlags& flags, const std::string& by, const std::string& since);
int ExplainCommand(const ClientFlags& flags, const std::string& id);
int NodesCommand(const ClientFlags& flags);
// `drover queues`: the queue tree with quotas, usage, borrowing and pending jobs.
int QueuesCommand(const ClientFlags& flags);
// `drover why ID`: the job's scheduling decisions (placements, reservations, preemptions).
int WhyCommand(const ClientFlags& flags, const std::string& id);
// `drover checkpoint [ID]`: reports that a running job saved a checkpoint now; without ID, the
// job it runs in ($DROVER_JOB_ID).
int CheckpointCommand(const ClientFlags& flags, const std::string& id);
struct ReportFlags {
  std::string job;                   // empty: $DROVER_JOB_ID
  bool began = false;                // useful work began now
  std::optional<double> progress;    // in [0, 1] (the server checks)
  std::optional<double> throughput;  // units of `unit` per second
  std::string unit;                  // "<work>/s", with throughput
};
// `drover report --began | --progress X | --throughput R --unit U [--job ID]`: from inside a job,
// reports that useful work began (after data loading, compilation, rendezvous), its progress
// and/or its rate of useful work. Exit 2 without a job id or anything to report.
int ReportCommand(const ClientFlags& flags, const ReportFlags& report);

// `drover secret set|ls|rm` (docs/security.md, "Secrets"). The value of `set` is read from
// `from_file` ("-": standard input) and sent as it is (a trailing newline included); it is never
// printed.
struct SecretFlags {
  std::string action;  // "set", "ls" or "rm"
  std::string name;    // set, rm
  std::string team;
  std::string from_file;  // set
};
int SecretCommand(const ClientFlags& flags, const SecretFlags& secret);

// `drover hold|release|requeue ID [--reason R]` and `drover update ID [--priority P]
// [--timeout D] [--queue Q] [--reason R]` (job_verbs.cc): one job verb through the API
// (docs/api.md, "Job verbs"); prints the job as it left it, or its summary as JSON.
struct JobVerbFlags {
  std::string name;  // the verb: "hold", "release", "update" or "requeue"
  std::string reason;
  std::string priority, timeout, queue;  // update only; empty: unchanged
};
int JobVerbCommand(const ClientFlags& flags, const std::string& id, const JobVerbFlags& verb);
// `drover diagnose ID [-o json]`: the findings of the job's latest attempt with samples, each
// with its evidence and rule (docs/observability.md, "Diagnosis"); 0 also when there are none.
int DiagnoseCommand(const ClientFlags& flags, const std::string& id);
// `drover advise ID|NAME|--pipeline RUN [-o json]` (advise.cc): right-sizing advice for a job,
// the newest job named NAME, or each job of a pipeline run, with the spec patch to apply
// (docs/observability.md, "Advice"). Refused unless exactly one of `target` and `pipeline` is
// non-empty.
int AdviseCommand(const ClientFlags& flags, const std::string& target, const std::string& pipeline);
// "INDENTKIND: EVIDENCE\nINDENT  rule: THRESHOLD\n" for each finding of a findings array
// (GET /v1/jobs/{id}/usage, GET /v1/diagnosis).
std::string DescribeFindings(const nlohmann::json& findings, std::string_view indent);
// `drover diagnose [--since T] [--team T] [--limit N] [-o json]` (no ID): GET /v1/diagnosis, the
// findings across the jobs the token may view, ranked by wasted GPU-hours, with the totals per
// team (docs/observability.md, "Cluster diagnosis"). T of --since as ParseSince reads it.
struct ClusterDiagnosisFlags {
  std::string since;
  std::string team;
  int limit = 0;  // 0: the server's default
};
int ClusterDiagnoseCommand(const ClientFlags& flags, const ClusterDiagnosisFlags& diagnosis);

// `drover cron ls` (and `drover crons`): every cron job with its schedule, zone, state
// (suspended or scheduled), next run, last run with its state, and active runs.
int CronsCommand(const ClientFlags& flags);
// Adds `drover cron ls|suspend NAME|resume NAME|delete NAME` and `drover crons` to `app`: the
// parse fills `name` and the chosen command sets `run`; `flags`, `name` and `run` must outlive
// the parse and the run.
void AddCronCommands(CLI::App& app, const ClientFlags& flags, std::string& name,
                     std::function<int()>& run);
// `drover submit` of a file of CronJob documents: creates or replaces each (POST /v1/crons).
int SubmitCrons(const ClientFlags& flags, const std::vector<model::CronSpec>& crons);

// `drover services` and `drover service ls` (services.cc; docs/inference.md): every service with
// its models, state and replica counts.
int ServicesCommand(const ClientFlags& flags);
// Adds `drover service ls|get NAME|delete NAME` and `drover services` to `app`, as
// AddCronCommands does.
void AddServiceCommands(CLI::App& app, const ClientFlags& flags, std::string& name,
                        std::function<int()>& run);
// `drover submit` of a file of Service documents: creates or updates each (POST /v1/services).
int SubmitServices(const ClientFlags& flags, const std::vector<model::ServiceSpec>& services);

}  // namespace drover::cli
