#pragma once

// api::Service: what the HTTP handlers (docs/api.md) need from the control plane, and the values
// it answers with. The server implements it over its ControlPlane (server/api_service.h); the
// handler tests implement it with a fake. Each method states its error codes; a handler maps
// them to HTTP statuses with HttpStatusFor (views.h).
//
// Thread-safety: handlers run on many HTTP threads at once, so an implementation must be safe to
// call concurrently.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "drover/api/request.h"
#include "drover/api/views.h"
#include "drover/common/clock.h"
#include "drover/common/ids.h"
#include "drover/common/result.h"
#include "drover/control/explanation.h"
#include "drover/control/job_update.h"
#include "drover/model/decision.h"
#include "drover/model/diagnosis.h"
#include "drover/model/job.h"
#include "drover/model/launch.h"
#include "drover/model/node.h"
#include "drover/model/policy.h"
#include "drover/model/progress.h"
#include "drover/model/service.h"
#include "drover/model/usage.h"
#include "drover/spec/parse.h"
#include "drover/store/store.h"
#include "drover/workflow/rollup.h"

namespace drover::api {

// Where the scheduling policy came from, for GET /v1/policy.
struct PolicyStatus {
  model::Policy policy;
  std::string file;      // empty: the default policy (no --policy)
  TimeMs loaded_at = 0;  // when the policy in force was read; 0 for the default
  // The last automatic re-read that failed (the policy in force stayed), until one succeeds.
  std::optional<Error> reload_error;
  // The paths of the queues whose fair-share history was dropped when the policy in force was
  // installed (they are not in it; docs/scheduling.md, "Fair share"), sorted.
  std::vector<std::string> history_dropped;
};

struct NodeStatus {
  model::Node node;
  model::Resources free;
  std::vector<int> free_gpus;
  bool remote = false;
  bool lost = false;         // its agent stopped answering and has not registered again
  TimeMs last_heard_at = 0;  // remote: the agent's last call (0: none since the server started)
  TimeMs lost_at = 0;        // lost: since when (0: unknown)
  std::string lost_reason;
  model::NodeAdmin admin;  // operators' cordon, drain and maintenance window
  int live_workers = 0;    // workers believed alive there
};

// An operator's change to a node (POST /v1/nodes/{name}/...; docs/operations.md, "Node
// lifecycle").
struct NodeAction {
  enum class Kind { kCordon, kUncordon, kDrain, kSetMaintenance, kClearMaintenance };
  Kind kind = Kind::kCordon;
  NodeId node;
  std::string reason;               // cordon, drain, maintenance: free text
  std::optional<DurationMs> grace;  // drain: unset = jobs run to their end
  TimeMs from = 0;                  // maintenance: the window [from, to)
  TimeMs to = 0;
};

// A page of GET /v1/jobs (docs/api.md, "Pages"): keyset pagination over job ids, so a page costs
// the jobs it visits from its cursor on, not the whole table.
struct JobPageRequest {
  store::JobFilter filter;  // its limit is not used
  // Whether the caller may see a job (checked after `filter`); empty: every job.
  std::function<bool(const model::Job&)> visible;
  bool newest_first = false;  // descending ids; else ascending
  // The page starts after this id in its order (the previous page's JobPage::next); unset: at
  // the first job.
  std::optional<JobId> after;
  int limit = 1;   // at most this many jobs, >= 1
  TimeMs now = 0;  // bounds the summaries' unfinished phases (SummaryRowOf)
};

struct JobPage {
  // The selected jobs' summaries; a ready job the last full scheduling pass left waiting has its
  // queue position (control::Controller::PositionOf).
  std::vector<JobSummaryRow> jobs;
  // The cursor of the next page (the last job's id) when more matching jobs follow; else unset.
  std::optional<JobId> next;
};

// The page `request` selects from `jobs`: visits the jobs from the cursor on, in the page's order,
// until the page is full and one more match shows that another page follows, and copies each
// selected job's summary row (not the job: a caller holding a lock over `jobs` holds it only that
// long). `position_of` answers each selected job's position (may be empty: none). Shared by the
// server and fakes.
JobPage SelectJobPage(
    const std::map<JobId, model::Job>& jobs, const JobPageRequest& request,
    const std::function<std::optional<control::QueuePosition>(JobId)>& position_of = {});

// A job of a submission as Service::Submit left it: what POST /v1/jobs answers.
struct SubmittedJob {
  JobId id;
  std::string name;
  model::JobState state = model::JobState::kPending;
};

// What Service::Submit created, or found for a repeated submission key.
struct Submission {
  std::vector<SubmittedJob> jobs;  // in the submission's order
  bool existing = false;           // the key was seen before; no new jobs were created

  std::vector<JobId> Ids() const;
};

// A user's verb on one job besides cancel (docs/api.md, "Job verbs"), for Service::ApplyJobVerb.
struct JobVerb {
  enum class Kind { kHold, kRelease, kUpdate, kRequeue };
  Kind kind = Kind::kHold;
  std::string reason;         // why, recorded with the transition; may be empty
  control::JobUpdate update;  // kUpdate: what to change
};

// An agent's acknowledgement (docs/api.md, "Agent protocol"): it carried out every command of
// registration `epoch` up to sequence number `seq`.
struct AgentAck {
  std::int64_t epoch = 0;
  std::int64_t seq = 0;
};

// The commands an agent has not acknowledged, oldest first, in their wire form
// (server/agent_link.h) each with its "seq", and the registration their numbers belong to.
struct AgentCommandBatch {
  std::int64_t epoch = 0;
  std::vector<nlohmann::json> commands;
};

// A chunk of a worker's output.
struct LogChunk {
  std::string data;
  std::int64_t next_offset = 0;
  // The worker has exited and `data` reaches the end of the file; or the job ended without
  // starting (started false), so there will never be any.
  bool finished = false;
  bool started = true;    // false: the job has no attempt yet (then `data` is empty)
  int attempt = 0;        // the attempt read (0 when none started)
  std::string job_state;  // the job's state (model/names.h), for the reader's messages
};

// What the server keeps of a remote worker's stream after an agent shipped a chunk of it
// (Service::AppendRemoteLog).
struct RemoteLogAck {
  std::int64_t size = 0;  // the bytes kept: the agent ships from there on
  bool full = false;      // the stream reached the server's limit: the agent ships no more
};

// One run of a cron job (docs/workflows.md "Cron jobs").
struct CronRun {
  std::string id;  // the run id, also the jobs' submission key
  std::vector<JobId> jobs;
  // The run's jobs rolled up as a pipeline run's (workflow::RollUp): pending, running or
  // cancelling while unfinished; then succeeded, failed or cancelled (a run cancelled by a
  // `replace` policy's next run reads cancelled).
  workflow::RunState state = workflow::RunState::kPending;
};

// A cron job with its runs, for GET /v1/crons (CronView in views.h).
struct CronStatus {
  store::CronRecord record;
  std::optional<TimeMs> next_run;  // unset while suspended
  std::vector<CronRun> active;     // unfinished runs, oldest first
  // Finished runs, newest first: at most spec.successful_history_limit succeeded and
  // spec.failed_history_limit failed ones (older runs' jobs stay listed under `drover ls`).
  std::vector<CronRun> history;
  std::optional<CronRun> last;  // the newest run, whatever its state
};

// One live replica of a service (docs/inference.md), for GET /v1/services.
struct ServiceEndpoint {
  JobId job;
  std::string url;  // "http://ADDRESS:PORT" once placed (the node's address); empty before
  std::string node;
  int port = 0;  // its $DROVER_PORT
  model::JobState state = model::JobState::kPending;
  bool ready = false;  // running and passing its readiness probe: routable
  TimeMs since = 0;    // when `ready` last changed (the replica's creation before)
  int generation = 0;
  bool is_protected = false;  // one of the first replicas.min: never a preemption victim

  friend bool operator==(const ServiceEndpoint&, const ServiceEndpoint&) = default;
};

// A service with its live replicas, for GET /v1/services (ServiceView in service_handlers.h).
struct ServiceStatus {
  store::ServiceRecord record;
  std::vector<ServiceEndpoint> endpoints;  // live replicas, by job id
  std::optional<model::LoadSignal> load;   // the latest signal, if any
  // The autoscaler's latest change ("in flight 40 + waiting 3 ... : 2 -> 4") and when; empty
  // before the first.
  std::string last_scaling;
  TimeMs last_scaling_at = 0;
  std::string blocked;  // why a replica that should start did not; empty when none is held up
};

// A team's secret as listings show it: never its value (docs/security.md, "Secrets").
struct SecretInfo {
  std::string name;
  TimeMs updated_at = 0;  // when it was last set, ms since the epoch

  friend bool operator==(const SecretInfo&, const SecretInfo&) = default;
};

// A token just created: the only value that holds a token in clear (POST /v1/tokens answers it
// once).
struct CreatedToken {
  store::TokenRecord record;
  std::string token;
};

// The kinds of event GET /v1/events sends (docs/api.md, "Events"): a job's transition, a
// scheduling decision (placed, reserved, preempted, evicted) and a node's change (registered,
// lost, cordoned, drained...).
inline constexpr std::string_view kEventTypes[] = {"job", "decision", "node"};

// What a client of GET /v1/events asks for.
struct EventQuery {
  model::Identity caller;
  // Resume after this event id (Last-Event-ID or ?since=); none: from the next event.
  std::optional<std::uint64_t> since;
  std::optional<JobId> job;     // only events about this job (no node events)
  std::set<std::string> types;  // among kEventTypes; empty: every type
};

class Service {
 public:
  virtual ~Service() = default;

  // The server's clock.
  virtual TimeMs Now() const = 0;

  // Identity and audit (docs/security.md).
  // Whom `token` (a user's token, or a job's DROVER_TOKEN) speaks for. kUnauthenticated, saying
  // why (unknown, expired at T, revoked at T) but never echoing the token, for any other.
  virtual Result<model::Identity> Authenticate(std::string_view token) const = 0;
  // Records one mutating request in the audit log. Never fails the request: a record the store
  // cannot keep is logged.
  virtual void Audit(store::AuditRecord record) = 0;
  // Creates a token speaking for `identity` (user, team, role, queues; validated by the caller),
  // expiring `expires_in_ms` from now (0: never), created by `caller`. kUnavailable if no
  // randomness; the store's errors.
  virtual Result<CreatedToken> CreateToken(const model::Identity& identity,
                                           DurationMs expires_in_ms,
                                           const model::Identity& caller) = 0;
  // Every token's record (never the token; the hash is for the store alone), by id.
  virtual std::vector<store::TokenRecord> Tokens() const = 0;
  // Revokes token `id` at once and returns its record. kNotFound for an unknown id.
  virtual Result<store::TokenRecord> RevokeToken(const std::string& id) = 0;
  // The audit records matching `filter`, in seq order, every record appended before the call
  // included. kInvalidArgument for a negative limit; the store's errors.
  virtual Result<std::vector<store::AuditRecord>> ListAudit(
      const store::AuditFilter& filter) const = 0;

  // Events (docs/api.md, "Events"): a stream of the events `query` selects that query.caller may
  // view (a job's events: model::Visible view on the job; node events: view on the cluster),
  // resumed after query.since from the events the server keeps. kResourceExhausted when the
  // caller's token has its limit of streams open; kUnavailable when the server has its limit.
  virtual Result<std::shared_ptr<StreamBody>> OpenEvents(const EventQuery& query) = 0;

  // Jobs.
  // Parses, validates and creates the jobs of `text` (YAML or JSON). kInvalidArgument, creating
  // nothing, with every diagnostic in Error::details. A repeated `idempotency_key` answers the
  // jobs it created (existing = true). A spec without owner or team gets the caller's; each job
  // must then pass model::Decide(caller, submit, its queue, owner and team) and the policy's
  // submit limits (kPermissionDenied, kResourceExhausted naming the limit; nothing created).
  virtual Result<Submission> Submit(std::string_view text, const spec::ParseOptions& options,
                                    const std::string& idempotency_key,
                                    const model::Identity& caller) = 0;
  // Every job matching `filter` (as store::Store::ListJobs orders and limits them).
  virtual std::vector<model::Job> ListJobs(const store::JobFilter& filter) const = 0;
  // One page of jobs (JobPageRequest), with the positions of waiting jobs.
  virtual JobPage ListJobPage(const JobPageRequest& request) const = 0;
  // kNotFound for an unknown job (also Transitions, Explain, Decisions).
  virtual Result<model::Job> GetJob(JobId id) const = 0;
  virtual Result<std::vector<model::Transition>> Transitions(JobId id) const = 0;
  virtual Result<control::Explanation> Explain(JobId id) const = 0;
  virtual Result<std::vector<model::Decision>> Decisions(JobId id) const = 0;
  // Usage (docs/observability.md, "Sampling"): the stored usage of each attempt of job `id`
  // that has samples, by attempt, and one attempt's 10 s buckets (empty when it has none).
  // kNotFound for an unknown job; store errors.
  virtual Result<std::vector<model::AttemptUsage>> Usage(JobId id) const = 0;
  virtual Result<std::vector<model::UsageBucket>> UsageSeries(JobId id, int attempt) const = 0;
  // The thresholds the usage route's findings apply (docs/observability.md, "Diagnosis").
  virtual model::DiagnosisThresholds DiagnosisThresholds() const = 0;
  // Cancels job `id` for user `by` (its transitions' actor) with `cause`. kNotFound for an
  // unknown job; kFailedPrecondition for a finished one.
  virtual Status Cancel(JobId id, std::string_view by, const std::string& cause) = 0;
  // Holds, releases, updates or requeues job `id` for `caller` (the transitions' actor:
  // caller.user), as control::Controller::HoldJob, ReleaseJob, UpdateJob and RequeueJob say;
  // returns the job as the verb left it. Their errors: kNotFound, kFailedPrecondition naming the
  // job's state, kInvalidArgument naming the field of an update.
  virtual Result<model::Job> ApplyJobVerb(JobId id, const JobVerb& verb,
                                          const model::Identity& caller) = 0;
  // Records a checkpoint now and returns its time. kNotFound for an unknown job;
  // kFailedPrecondition if it is not starting or running.
  virtual Result<TimeMs> ReportCheckpoint(JobId id) = 0;
  // The job reports that useful work began, its progress in [0, 1] and/or its throughput;
  // returns its current attempt. kNotFound, kFailedPrecondition (not starting or running),
  // kInvalidArgument (model::CheckProgressReport).
  virtual Result<model::Attempt> ReportProgress(JobId id, const model::ProgressReport& report) = 0;
  // A worker's stdout or stderr from `offset` (at most `max_bytes`); attempt 0 is the current
  // one. kNotFound for unknown jobs or workers, kUnavailable for workers on remote nodes.
  virtual Result<LogChunk> ReadLog(JobId id, int attempt, int rank, const std::string& stream,
                                   std::int64_t offset, std::int64_t max_bytes) const = 0;
  // A counter that increases with every persisted change; WaitForChange blocks until it exceeds
  // `seen` or `timeout_ms` passes, and returns the current value. For long polls.
  virtual std::uint64_t version() const = 0;
  virtual std::uint64_t WaitForChange(std::uint64_t seen, DurationMs timeout_ms) const = 0;

  // Pipelines.
  // Every pipeline run's jobs (each in id order), oldest run first.
  virtual std::vector<std::vector<model::Job>> PipelineRuns() const = 0;
  // The jobs of pipeline run `run` in id order; kNotFound when no job belongs to it.
  virtual Result<std::vector<model::Job>> PipelineRun(JobId run) const = 0;
  // Cancels the run's unfinished jobs for user `by` (Cancel). kNotFound for an unknown run; a
  // finished run is no error.
  virtual Status CancelPipeline(JobId run, std::string_view by, const std::string& cause) = 0;

  // Cron jobs.
  // Creates or replaces cron job spec.name, owned by the caller (whose submit rights its runs
  // use, as Submit judges them). kInvalidArgument naming the field; kPermissionDenied as Submit,
  // or to replace another owner's cron job without cancel rights on it.
  virtual Result<CronStatus> PutCron(const model::CronSpec& spec,
                                     const model::Identity& caller) = 0;
  // Every cron job, by name.
  virtual std::vector<CronStatus> Crons() const = 0;
  // kNotFound for an unknown name.
  virtual Status DeleteCron(const std::string& name) = 0;
  // Suspends (`suspend`) or resumes cron job `name` and stores it: a suspended cron job starts
  // no run; a resumed one starts its next run at the schedule's next due time after now (runs
  // due while it was suspended are not started). Idempotent. kNotFound for an unknown name.
  virtual Result<CronStatus> SuspendCron(const std::string& name, bool suspend) = 0;

  // Services (docs/inference.md).
  // Creates service spec.name, or replaces it: a changed replica template is a rolling update.
  // kInvalidArgument naming the field; kPermissionDenied as Submit, or to replace another
  // owner's service without cancel rights on it.
  virtual Result<ServiceStatus> PutService(const model::ServiceSpec& spec,
                                           const model::Identity& caller) = 0;
  // Every service, by name.
  virtual std::vector<ServiceStatus> Services() const = 0;
  // Stops every replica of `name` and removes it, for `caller`. kNotFound for an unknown name.
  virtual Status DeleteService(const std::string& name, const model::Identity& caller) = 0;
  // Records a gateway's load signal for `name` (received_at set by the server). kNotFound for
  // an unknown name.
  virtual Status ReportServiceLoad(const std::string& name, model::LoadSignal signal) = 0;

  // Team secrets (docs/security.md, "Secrets"); a value goes in and never comes out.
  // Sets `team`'s secret `name`. kInvalidArgument naming the team or name, or saying what is
  // wrong with the value (empty, over 64 KiB, a NUL byte) without quoting it; kInternal when it
  // cannot be written.
  virtual Status PutSecret(const std::string& team, const std::string& name,
                           std::string_view value) = 0;
  // `team`'s secrets by name. kInvalidArgument for a bad team name.
  virtual Result<std::vector<SecretInfo>> ListSecrets(const std::string& team) const = 0;
  // kNotFound when `team` has no secret `name`; kInvalidArgument for a bad team or name.
  virtual Status DeleteSecret(const std::string& team, const std::string& name) = 0;

  // Queues and policy.
  // The queue tree with usage and pending counts, in tree order.
  virtual std::vector<control::QueueReport> Queues() const = 0;
  // GET /metrics: the Prometheus text exposition (docs/observability.md, "Metrics"). Never fails.
  virtual std::string MetricsText() const = 0;
  virtual model::Policy Policy() const = 0;
  virtual PolicyStatus PolicyInfo() const = 0;
  // Re-reads the policy file. kFailedPrecondition without one; kInvalidArgument (one detail per
  // diagnostic) for a file that does not parse or validate, changing nothing.
  virtual Status ReloadPolicy() = 0;

  // Nodes and remote agents.
  virtual std::vector<NodeStatus> Nodes() const = 0;
  // The latest sample of every GPU any node's sampler reported (one per node and index).
  virtual std::vector<model::GpuActivity> LatestGpuActivity() const = 0;
  // Carries out `action` for `caller` (named in the node's state as who did it) and returns the
  // node as it is then. kNotFound for an unknown node; kInvalidArgument, changing nothing, for a
  // negative grace or a window that does not end after it begins or has ended.
  virtual Result<NodeStatus> ChangeNode(const NodeAction& action,
                                        const model::Identity& caller) = 0;
  // (Re-)registers a remote node (docs/security.md, "Agents") for `caller`, whose credentials
  // Authorize read. Returns the credential issued to the caller ("" when it keeps its own: it
  // presented the node's). Errors, each changing nothing: kAlreadyExists for the embedded
  // agent's node, or a node a live agent holds when the caller presented another credential;
  // kUnauthenticated for a node a live agent holds when the caller presented none, or for a
  // credential to issue without the join token.
  virtual Result<std::string> RegisterRemoteNode(const model::Node& node, const Caller& caller) = 0;
  // The node whose agent credential `credential` is; nullopt for any other string.
  virtual std::optional<NodeId> AgentOf(std::string_view credential) const = 0;
  // Whether `token` is the server's join token; true for any when the server requires none.
  virtual bool JoinTokenAccepted(std::string_view token) const = 0;
  // How long an agent may go unheard before its node is declared lost (0: never); told to each
  // agent at registration, which stops its own workers after half of it without reaching the
  // server (docs/architecture.md, "Agent liveness").
  virtual DurationMs AgentTimeout() const = 0;
  // The commands the node's agent has not acknowledged, after dropping those `ack` acknowledges
  // (docs/api.md, "Agent protocol"). Does not wait: with none left and `wait_ms` > 0, the caller
  // parks the agent's poll for up to `wait_ms` (the agent counts as heard from meanwhile) and
  // is woken (ControlPlane::SetAgentWaker) when a command comes. kNotFound for a node that is
  // not registered or was declared lost.
  virtual Result<AgentCommandBatch> TakeCommands(const NodeId& node, const AgentAck& ack,
                                                 DurationMs wait_ms) = 0;
  // The samples the node's agent took (ControlPlane::IngestUsage): kInvalidArgument naming the
  // field for a batch out of bounds; store errors (samples lost, nothing else).
  virtual Status ReportUsage(const NodeId& node, model::UsageBatch batch) = 0;
  // The agent's worker events. kNotFound as for TakeCommands.
  virtual Status ReportEvents(const NodeId& node, std::vector<model::WorkerEvent> events) = 0;
  // The node's agent ships `data`, the bytes of worker `key`'s `stream` ("stdout" or "stderr")
  // from `offset` (docs/api.md, "Agent protocol"; docs/architecture.md, "Logs from anywhere").
  // Idempotent: bytes the server already keeps are skipped, and a chunk past its end is not
  // kept; either way the answer says where the agent continues. kInvalidArgument for a bad
  // stream or offset; kNotFound for a worker that is not the node's; kFailedPrecondition when
  // the server keeps no remote logs; kInternal when the file cannot be written.
  virtual Result<RemoteLogAck> AppendRemoteLog(const NodeId& node, const model::WorkerKey& key,
                                               const std::string& stream, std::int64_t offset,
                                               std::string_view data) = 0;
};

}  // namespace drover::api
