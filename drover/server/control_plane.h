#pragma once

// ControlPlane: the live driver around the deterministic controller.
//
// It owns the controller, the store and one WorkerRuntime per node, and serializes every call
// into the controller under one mutex (mu_). Each controller Step is persisted (one store
// transaction) under mu_, and only then are its effects queued; they are carried out with mu_
// released, by one effects runner at a time and in the order they were queued (so a stop never
// overtakes its launch), and what they feed back (a failed launch, published outputs) is a next
// step, persisted before its own effects. So what is stored is always at least as far along as
// what runs, and no API call waits for a launch, a file move or a signal (docs/architecture.md,
// "Control plane"). A loop thread polls the runtimes for worker events, without mu_, and runs
// the scheduler when something changed, spacing cycles so that they take at most half the time
// (ControlPlane::Loop); tests may leave it out and drive each turn with RunOnce. Files (input
// paths, the policy file, logs, outputs) are touched only through the FileSystem given, and
// never under mu_.
//
// Defined in control_plane.cc (the loop, commits and effects, jobs), control_plane_agents.cc
// (remote agents), control_plane_policy.cc (the policy and its file), control_plane_cron.cc (cron
// jobs), control_plane_services.cc (services), control_plane_identity.cc (tokens and the audit
// log), control_plane_nodes.cc (nodes and operators' changes), control_plane_logs.cc (logs),
// control_plane_metrics.cc (the timed scheduling cycle and GET /metrics), control_plane_events.cc
// (live events) and control_plane_usage.cc (usage samples).
//
// A failed store write is fatal (ControlPlaneOptions::on_store_failure: the process exits and a
// restart recovers from the store): continuing would let running work and the durable record
// disagree.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "drover/agent/runtime.h"
#include "drover/agent/sampler.h"
#include "drover/api/service.h"
#include "drover/common/clock.h"
#include "drover/common/filesystem.h"
#include "drover/common/result.h"
#include "drover/common/thread_annotations.h"
#include "drover/control/controller.h"
#include "drover/exec/executor.h"
#include "drover/model/diagnosis.h"
#include "drover/server/agent_link.h"
#include "drover/server/agent_registry.h"
#include "drover/server/audit_log.h"
#include "drover/server/crons.h"
#include "drover/server/event_hub.h"
#include "drover/server/secret_store.h"
#include "drover/server/server_metrics.h"
#include "drover/server/service_prober.h"
#include "drover/server/services.h"
#include "drover/server/token_registry.h"
#include "drover/server/usage_recorder.h"
#include "drover/spec/limits.h"
#include "drover/spec/parse.h"
#include "drover/store/store.h"
#include "drover/workflow/cron.h"

namespace drover::server {

// Logs `error` as critical and ends the process with status 70 without unwinding (std::_Exit),
// so that no effect of an unpersisted step is carried out; ControlPlaneOptions'
// on_store_failure by default.
[[noreturn]] void ExitForRestart(const Error& error);

struct ControlPlaneOptions {
  // control.server_user, when empty, is the name of the process's effective user (getpwuid).
  control::Options control;
  // How often runtimes are polled for worker events while anything runs (ControlPlane::Polling;
  // with nothing running the loop waits for a request or the next idle cycle). A scheduling
  // cycle follows at once when events arrived or a submission, cancellation or node
  // registration asked for one.
  DurationMs poll_interval_ms = 5;
  // With nothing happening, a scheduling cycle still runs this often (retry backoffs end).
  DurationMs idle_cycle_ms = 250;
  // How many launches of one batch (consecutive LaunchWorker effects, distinct workers) are
  // carried out at once, each on its own thread (docs/architecture.md, "Threads"). A launch is
  // mostly the runtime's spawn of a supervisor (CPU) and its file writes, or a queued command for
  // a remote agent. 4: on bench/'s 2-core VM, 8 gave no more jobs/s and doubled the p99 of
  // submissions made meanwhile (docs/benchmarks.md); 1: one after another.
  int max_parallel_launches = 4;
  // How often the loop looks at the policy file's modification time (LoadPolicyFile). 1 s: an
  // edit takes effect within about a second for the cost of one stat per second.
  DurationMs policy_check_interval_ms = 1'000;
  // How often the loop looks for the input paths of waiting jobs (docs/workflows.md).
  DurationMs input_check_interval_ms = 500;
  // A remote agent not heard from for longer than this is declared lost (docs/workflows.md,
  // "Node loss"): the workers believed alive on its node are reported exited with node_lost,
  // and the node takes no placements until the agent registers again. 0: never.
  DurationMs agent_timeout_ms = 30'000;
  // The token an agent must present (X-Drover-Join-Token) to be issued a node credential
  // (docs/security.md, "Agents"; `drover server --join-token-file`). Empty (the default): trust
  // on first use, the first agent to register a free name is issued its credential.
  std::string join_token;
  // Whether Start() starts the loop thread. false (tests): nothing happens between calls but
  // what the caller drives with ControlPlane::RunOnce, one turn at a time.
  bool run_loop = true;
  // The bounds every submitted spec must keep (docs/spec.md, "Limits"; the server's
  // --max-spec-size, --max-arg-size and --max-launch-size): Submit parses with these whatever
  // the caller's ParseOptions say.
  spec::SpecLimits spec_limits;
  // Called, under the plane's mutex, when the store fails to persist a step. The default,
  // ExitForRestart, ends the process at once so that a restart recovers from the store. Should
  // it return (tests), the plane stops: that step's effects and every later one are dropped
  // (those of earlier, persisted steps still queued are carried out), nothing more is written,
  // the loop ends, and calls that change state answer kUnavailable; a new ControlPlane over the
  // same store recovers. Reads of such a stopped plane still answer from memory, which may be
  // ahead of the store by the failed step (jobs it created that a restart will not know): the
  // reason a server never continues after a failed write.
  std::function<void(const Error&)> on_store_failure = ExitForRestart;
  // The secret that signs jobs' own tokens (TokenRegistry::JobToken; `drover server` keeps it in
  // DATA/job-token.key). Empty (the default): a random key for this process's life, after which
  // the tokens of jobs still running stop working.
  std::string job_token_key;
  // How often queued audit records are written (AuditLog): the crash window of the audit log.
  DurationMs audit_flush_interval_ms = 100;
  // How often the loop saves the fair-share history (Store::PutFairShare; docs/scheduling.md,
  // "Fair share"), which is also saved when a policy is installed and when the plane stops. 10 s:
  // one small write that no scheduling cycle waits for; a crash loses at most the last 10 s of
  // accrued usage (a restart then decays the history over the downtime as time without usage).
  DurationMs fair_share_save_interval_ms = 10'000;
  // Where the logs remote agents ship are kept (AppendRemoteLog; docs/architecture.md, "Logs
  // from anywhere"): DIR/<node>/<job>/<attempt>/<rank>/{stdout,stderr}.log, an agent's layout.
  // `drover server` uses DATA/remote-logs. Empty: none are kept, and reading a remote worker's
  // log answers kUnavailable.
  std::string remote_logs_dir;
  // Where the publication records of attempts whose outputs are being published are kept
  // (agent::PublicationRecord; DIR/job-ID.attempt-N, each dropped on ForgetPublication), so that
  // a publication that a crash or a step-down cut short is finished, not redone, by the next
  // try. `drover server` uses DATA/publications. Empty: none are kept (such a retry then fails
  // on the outputs already moved).
  std::string publications_dir;
  // How much of each stream of a remote worker is kept; the agent ships no more once it is
  // reached (the rest stays in the worker's directory on its node). 64 MiB.
  std::int64_t max_remote_log_bytes = std::int64_t{64} << 20;
  // The live events' bounds (GET /v1/events; EventHub).
  EventHubOptions events;
  // The diagnosis rules' thresholds (GET /v1/jobs/{id}/usage findings; docs/observability.md,
  // "Diagnosis").
  model::DiagnosisThresholds diagnosis;
  // The ports services' replicas are given as $DROVER_PORT (docs/inference.md; `drover server
  // --service-ports FROM-TO`): each live replica of every service holds one, the lowest free.
  // 30000-32767 by default (Kubernetes' NodePort range: rarely taken by other daemons).
  int service_port_from = 30'000;
  int service_port_to = 32'767;
  // Whether Start() starts the services' prober thread (ServiceProber); with run_loop false it
  // never starts, and tests hand results to OnProbeResults themselves.
  bool run_prober = true;
};

// The values ControlPlane answers with are the API's (api/service.h).
using api::JobVerb;
using api::LogChunk;
using api::NodeStatus;
using api::PolicyStatus;
using api::Submission;
using api::SubmittedJob;

class ControlPlane {
 public:
  // `fs` (default: the machine's) must outlive the plane.
  ControlPlane(std::unique_ptr<store::Store> store, const Clock& clock,
               ControlPlaneOptions options = {}, FileSystem& fs = RealFileSystem());
  ~ControlPlane();
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  // Adds a node whose workers run on this machine under `runtime`; `runs_dir` is where that
  // runtime keeps worker directories (for logs). Call before Start().
  void AddLocalNode(const model::Node& node, std::unique_ptr<agent::WorkerRuntime> runtime,
                    std::string runs_dir) EXCLUDES(mu_);

  // Usage (docs/observability.md, "Sampling"; control_plane_usage.cc).
  //
  // Owns `sampler`, the usage sampler of a local node (its sink calls IngestUsage): started by
  // Start, stopped first by Stop. Call before Start().
  void AddUsageSampler(std::unique_ptr<agent::UsageSampler> sampler);
  // Records the samples `node`'s agent took (UsageRecorder). Attribution to a worker the
  // controller does not place on `node` is cleared first, so an agent cannot charge another
  // node's jobs; mu_ is held for that look only. kInvalidArgument naming the field for a batch
  // model::ValidateUsageBatch refuses (nothing recorded); store errors (that attempt's samples
  // of this batch are lost, never a job).
  Status IngestUsage(const NodeId& node, model::UsageBatch batch) EXCLUDES(mu_);
  // The latest sample of every GPU (node, index, uuid, utilization, memory, power, worker),
  // for GET /metrics. Never takes mu_.
  std::vector<model::GpuActivity> LatestGpuActivity() const;
  // The stored usage of each attempt of `job` that has samples, by attempt (store errors), and
  // one attempt's 10 s buckets. Never take mu_.
  Result<std::vector<model::AttemptUsage>> JobUsage(JobId job) const;
  Result<std::vector<model::UsageBucket>> UsageSeries(JobId job, int attempt) const;
  const model::DiagnosisThresholds& DiagnosisThresholds() const { return options_.diagnosis; }

  // Adds the executor that runs the jobs of queues whose policy names its kind (one per kind; a
  // second replaces the first). Call before Start().
  void AddExecutor(std::unique_ptr<exec::Executor> executor) EXCLUDES(mu_);
  // Keeps the teams' secrets in `secrets` (docs/security.md, "Secrets"). Call before Start.
  // Without one, the secret methods answer kFailedPrecondition and a job with secret_env is
  // refused.
  void SetSecretStore(std::unique_ptr<SecretStore> secrets);

  // Restores jobs from the store, re-attaches to live workers and to attempts handed to
  // executors, relaunches launches that never happened, and starts the loop thread (unless
  // options.run_loop is false). The store's errors; kUnavailable if a write failed.
  Status Start() EXCLUDES(mu_);
  // Stops the loop thread; running workers are left running (their supervisors outlive us).
  void Stop() EXCLUDES(mu_);
  // One turn of the loop, with every periodic part due: retries stop requests, re-reads the
  // policy file if it changed, starts due cron runs, checks waiting jobs' inputs, polls the
  // runtimes and executors, checks agents' liveness, runs a scheduling cycle, and persists and
  // carries out the result: it returns once every effect queued so far, and what they led to,
  // is carried out. For tests that drive the plane deterministically (run_loop false); with the
  // loop thread running it is safe, only an extra turn.
  void RunOnce() EXCLUDES(mu_, turn_mu_);

  // Identity (docs/security.md; control_plane_identity.cc). None of these takes mu_.
  //
  // Whom `token` speaks for (TokenRegistry::Authenticate at the clock's now); kUnauthenticated
  // saying why for a token that is unknown, expired or revoked.
  Result<model::Identity> Authenticate(std::string_view token) const;
  // Queues `record` for the audit log (AuditLog: written in batches, never fails the request).
  void Audit(store::AuditRecord record);
  // api::Service's token and audit methods (service.h).
  Result<api::CreatedToken> CreateToken(const model::Identity& identity, DurationMs expires_in_ms,
                                        const model::Identity& caller);
  std::vector<store::TokenRecord> Tokens() const;
  Result<store::TokenRecord> RevokeToken(const std::string& id);
  // When token `token_id` expires (0: never, or not a user's token): where an event stream it
  // opens ends (EventHub::Open).
  TimeMs TokenExpiresAt(const std::string& token_id) const;
  Result<std::vector<store::AuditRecord>> ListAudit(const store::AuditFilter& filter) const;
  // Makes sure an admin can get in (docs/security.md, "Tokens"): when no admin token is live,
  // creates one for model::AdminIdentity(`user`) and writes it to `path` (mode 0600, replaced
  // atomically), logging the path, never the token. Returns whether it created one. Call after
  // Start. I/O and store errors.
  Result<bool> EnsureAdminToken(const std::string& path, const std::string& user);
  // The token of job `job` (DROVER_TOKEN of its workers).
  std::string JobToken(JobId job) const { return tokens_.JobToken(job); }

  // Team secrets: SecretStore's Put, List and Delete (api::Service's contract), without mu_.
  Status PutSecret(const std::string& team, const std::string& name, std::string_view value);
  Result<std::vector<api::SecretInfo>> ListSecrets(const std::string& team) const;
  Status DeleteSecret(const std::string& team, const std::string& name);

  // Parses and validates `text` (YAML or JSON, one or more jobs), then creates the jobs as
  // `caller`'s (ClaimSpecs) within the policy's submit limits (kResourceExhausted). An invalid
  // spec changes nothing: kInvalidArgument with every diagnostic in Error::details. A
  // dependency on an earlier job (`job:ID`) the caller may not view, or that does not exist or
  // can no longer meet its condition, is kInvalidArgument naming the job and the depends_on
  // index (Controller::ResolveDependencies). A job whose
  // secret_env names a secret its team does not have is refused (kInvalidArgument naming the
  // variable and the secret), as is one with secret_env in a queue that runs on Slurm
  // (kFailedPrecondition: Slurm cannot keep a job's environment secret).
  // Each job's name and state are taken in the same critical section as the submission, so a
  // reply built from them never waits for mu_ again.
  //
  // Methods that change state (Submit, Cancel, CancelPipeline, ReportCheckpoint, ReportProgress,
  // ...) persist their step under mu_ and leave its effects (a cancelled job's stops) to the loop
  // thread, which they wake; without a loop thread (run_loop false, or before Start) the caller
  // carries them out after releasing mu_, before returning, unless another caller is already
  // carrying out effects (then that one takes them, in order).
  Result<Submission> Submit(std::string_view text, const spec::ParseOptions& options,
                            const std::string& idempotency_key, const model::Identity& caller)
      EXCLUDES(mu_);
  Status Cancel(JobId id, std::string_view by, const std::string& cause) EXCLUDES(mu_);
  // Cancels the unfinished jobs of pipeline run `run` (Controller::CancelPipeline).
  Status CancelPipeline(JobId run, std::string_view by, const std::string& cause) EXCLUDES(mu_);
  // Holds, releases, updates or requeues job `id` for `actor` (api::Service::ApplyJobVerb) and
  // returns the job as it left it.
  Result<model::Job> ApplyJobVerb(JobId id, const JobVerb& verb, const std::string& actor)
      EXCLUDES(mu_);

  Result<model::Job> GetJob(JobId id) const EXCLUDES(mu_);
  std::vector<model::Job> ListJobs(const store::JobFilter& filter) const EXCLUDES(mu_);
  // One page of jobs (api::SelectJobPage over the controller's jobs) with the waiting ones'
  // queue positions; costs the jobs it visits, under the lock.
  api::JobPage ListJobPage(const api::JobPageRequest& request) const EXCLUDES(mu_);
  // The jobs of pipeline run `run` (Job::pipeline_run), in id order; kNotFound when no job
  // belongs to it.
  Result<std::vector<model::Job>> PipelineRun(JobId run) const EXCLUDES(mu_);
  // Every pipeline run's jobs (each in id order), oldest run first.
  std::vector<std::vector<model::Job>> PipelineRuns() const EXCLUDES(mu_);
  Result<std::vector<model::Transition>> Transitions(JobId id) const EXCLUDES(mu_);
  Result<control::Explanation> Explain(JobId id) const EXCLUDES(mu_);
  std::vector<NodeStatus> Nodes() const EXCLUDES(mu_);
  // api::Service::ChangeNode (control_plane_nodes.cc): the controller's Cordon, Uncordon, Drain,
  // SetMaintenance or ClearMaintenance, persisted, and a scheduling cycle asked for.
  Result<NodeStatus> ChangeNode(const api::NodeAction& action, const model::Identity& caller)
      EXCLUDES(mu_);

  // Records a checkpoint of a running job now (POST /v1/jobs/{id}/checkpoint); `at`, when not
  // null, receives the time recorded. kNotFound for an unknown job; kFailedPrecondition if it
  // is not starting or running. Checkpoints the agents see (kCheckpoint events) take the same
  // path from the loop, where one for a job no longer running is ignored.
  Status ReportCheckpoint(JobId id, TimeMs* at = nullptr) EXCLUDES(mu_);
  // The job reports from inside (POST /v1/jobs/{id}/report): useful work began now, its progress
  // in [0, 1] and/or its throughput; returns its current attempt as recorded.
  // Controller::ReportProgress's errors: kNotFound, kFailedPrecondition (not starting or
  // running), kInvalidArgument.
  Result<model::Attempt> ReportProgress(JobId id, const model::ProgressReport& report)
      EXCLUDES(mu_);
  // The decision log of a job (store::Store::ListDecisions). kNotFound for an unknown job.
  Result<std::vector<model::Decision>> Decisions(JobId id) const EXCLUDES(mu_);
  // The queue tree with usage, shares (usage accrued up to now) and pending counts, in tree
  // order.
  std::vector<control::QueueReport> Queues() const EXCLUDES(mu_);
  // GET /metrics (ServerMetrics): MetricsSnapshot, rendered with the event series after mu_ is
  // released.
  std::string MetricsText() const EXCLUDES(mu_);
  // The gauges' state, taken under mu_ in one pass over the queue tree, the ready and held jobs
  // and the nodes (ServerMetrics::Gather): the whole time a scrape holds mu_; with each GPU's
  // latest sample (LatestGpuActivity, read before mu_), its holder's team looked up under it.
  ServerMetrics::Snapshot MetricsSnapshot() const EXCLUDES(mu_);
  // The event series, thread-safe themselves: the HTTP server counts requests there.
  ServerMetrics& metrics() { return metrics_; }

  // Replaces the scheduling policy (Controller::SetPolicy) and asks for a scheduling cycle.
  // kInvalidArgument, changing nothing, for a malformed policy.
  Status SetPolicy(const model::Policy& policy) EXCLUDES(mu_);
  // The policy in force, as last installed: read without mu_ (every request's authorization
  // reads it, and must not wait for a scheduling cycle that holds mu_).
  model::Policy Policy() const EXCLUDES(published_policy_mu_);
  PolicyStatus PolicyInfo() const EXCLUDES(mu_);
  // Reads, parses and installs the policy file at `path`, and remembers it: from then on the
  // loop re-reads it whenever its modification time (or size) changes, logging a bad version
  // with its diagnostics and keeping the policy in force. kInvalidArgument with one detail per
  // diagnostic ("FILE:LINE:COL: error: FIELD: message") for a file that does not parse or
  // validate; kInvalidArgument naming the file when it cannot be read. On error nothing changes
  // (and the file is not remembered).
  Status LoadPolicyFile(const std::string& path) EXCLUDES(mu_);
  // Re-reads the remembered policy file now (POST /v1/policy/reload), with LoadPolicyFile's
  // errors; kFailedPrecondition when the server was started without one.
  Status ReloadPolicy() EXCLUDES(mu_);

  // Reads a worker's stdout or stderr from `offset` (at most `max_bytes`; a negative offset counts
  // from the end), from the worker's directory for a local node and from what its agent shipped
  // for a remote one. attempt 0 means the current attempt; when the job has none yet, or one with
  // no workers, it answers an empty chunk with started false (finished when the job ended).
  // kInvalidArgument for a bad stream; kNotFound for unknown jobs, attempts and workers;
  // kUnavailable for a remote worker when the plane keeps no remote logs. Takes mu_ for the look
  // up only, then reads through the file system.
  Result<LogChunk> ReadLog(JobId id, int attempt, int rank, const std::string& stream,
                           std::int64_t offset, std::int64_t max_bytes) const EXCLUDES(mu_);

  // Remote agents: (re-)register a node for `caller` (api::Service::RegisterRemoteNode, with its
  // errors and answer: the credential issued, or ""). The caller keeps its credential when it
  // presented the node's; it is issued a new one (with the join token, if the server has one)
  // when the name is free: never registered, or its agent was declared lost (a re-imaged node
  // takes over; the old credential stops working). A node whose live (not lost) agent holds a
  // credential is refused to anyone else, changing nothing. Its RemoteRuntime receives the
  // node's commands; a node that was lost takes placements again, and its agent is told to stop
  // the workers reported lost with it (also those a restarted server restored from the store),
  // after which the lost record is cleared.
  Result<std::string> RegisterRemoteNode(const model::Node& node, const api::Caller& caller)
      EXCLUDES(mu_);
  // The node whose agent credential `credential` is (AgentRegistry::AgentOf). Does not take mu_.
  std::optional<NodeId> AgentOf(std::string_view credential) const {
    return agents_.AgentOf(credential);
  }
  // AgentRegistry::JoinTokenAccepted. Does not take mu_.
  bool JoinTokenAccepted(std::string_view token) const { return agents_.JoinTokenAccepted(token); }
  // ControlPlaneOptions::agent_timeout_ms. Does not take mu_.
  DurationMs agent_timeout_ms() const { return options_.agent_timeout_ms; }
  // kNotFound for a node that is not registered, or was declared lost since it registered: the
  // agent registers (again).
  // RemoteRuntime::TakeCommands of the node's runtime.
  Result<CommandBatch> TakeCommands(const NodeId& node, const api::AgentAck& ack,
                                    DurationMs wait_ms) EXCLUDES(mu_);
  // Every remote runtime's waker, now and for those registered later (RemoteRuntime::Waker;
  // nullptr: none). The HTTP server wakes its parked agent polls with it.
  void SetAgentWaker(RemoteRuntime::Waker waker) EXCLUDES(mu_);
  // The live events (GET /v1/events): every transition, decision and node change the plane
  // persists is published there after it is written (control_plane_events.cc). Thread-safe.
  EventHub& events() { return events_; }
  Status ReportEvents(const NodeId& node, std::vector<model::WorkerEvent> events) EXCLUDES(mu_);
  // api::Service::AppendRemoteLog, with its errors: keeps what the agent of `node` ships of a
  // worker's stream under options.remote_logs_dir, up to options.max_remote_log_bytes. Takes mu_
  // to check that the worker is the node's, then log_mu_ (alone) for the file's stat and append.
  Result<api::RemoteLogAck> AppendRemoteLog(const NodeId& node, const model::WorkerKey& key,
                                            const std::string& stream, std::int64_t offset,
                                            std::string_view data) EXCLUDES(mu_, log_mu_);

  // A counter that increases with every persisted change; WaitForChange blocks until it
  // exceeds `seen` or `timeout_ms` passes, and returns the current value.
  std::uint64_t version() const EXCLUDES(mu_);
  std::uint64_t WaitForChange(std::uint64_t seen, DurationMs timeout_ms) const EXCLUDES(mu_);

  TimeMs Now() const { return clock_.Now(); }

  // Cron jobs (docs/workflows.md "Cron jobs"; control_plane_cron.cc). The loop starts each due
  // run through Controller::Submit with the run id as the submission key, persists it, and only
  // then advances and stores the cron job's last handled time (store::CronRecord).
  //
  // Creates the cron job spec.name, or replaces it keeping its creation and last handled times
  // (so a suspended one resumes with the latest missed run, if within its starting deadline).
  // kInvalidArgument naming the field: name, schedule, time_zone (not in the tz database),
  // jobs (none), starting_deadline or history limits (negative). Owned by `caller`, whose
  // submit rights its jobs need (ClaimSpecs; kPermissionDenied); replacing one takes cancel
  // rights on it.
  Result<CronStatus> PutCron(model::CronSpec spec, const model::Identity& caller) EXCLUDES(mu_);
  // Removes a cron job; its runs' jobs stay. kNotFound for an unknown name.
  Status DeleteCron(const std::string& name) EXCLUDES(mu_);
  // Suspends or resumes a cron job and stores it (api::Service::SuspendCron): resuming moves its
  // last handled time to now, so that runs due while it was suspended are not started.
  // kNotFound for an unknown name; a store error as it is.
  Result<CronStatus> SuspendCron(const std::string& name, bool suspend) EXCLUDES(mu_);
  // Every cron job, by name, with its runs.
  std::vector<CronStatus> Crons() const EXCLUDES(mu_);

  // Services (docs/inference.md; control_plane_services.cc). Each turn of the loop runs the
  // autoscaler and the replica plan of every service (ReconcileServices); the prober thread's
  // results come back through OnProbeResults.
  //
  // Creates service spec.name or replaces it (a changed replica template is a new generation,
  // rolled out one replica at a time), stores it and starts its first replicas. kInvalidArgument
  // naming the field; kPermissionDenied as Submit (ClaimSpecs), or to replace a service without
  // cancel rights on it; a store error as it is.
  Result<api::ServiceStatus> PutService(model::ServiceSpec spec, const model::Identity& caller)
      EXCLUDES(mu_);
  // Stops every replica of `name` (for `caller`) and removes it. kNotFound for an unknown name.
  Status DeleteService(const std::string& name, const model::Identity& caller) EXCLUDES(mu_);
  // Every service, by name, with its live replicas.
  std::vector<api::ServiceStatus> Services() const EXCLUDES(mu_);
  // Keeps `signal` (received now) as `name`'s latest load. kNotFound for an unknown name.
  Status ReportServiceLoad(const std::string& name, model::LoadSignal signal) EXCLUDES(mu_);
  // The probes due now (each marked as sent: its next is one interval away): running replicas
  // past their probe's initial delay.
  std::vector<ProbeTarget> DueProbes() EXCLUDES(mu_);
  // Applies probe results: readiness flips (recorded as transitions from == to), liveness
  // failures past the threshold cancel the replica (replaced by the next turn).
  void OnProbeResults(std::vector<ProbeResult> results) EXCLUDES(mu_);

 private:
  // Gives each spec without an owner or team the caller's, then checks that the caller may
  // submit it (model::Decide: kPermissionDenied naming the queue and who may).
  // OK when every secret each spec's secret_env names exists in its team and its queue's
  // executor can keep it secret (Submit's refusals).
  Status CheckSecretEnv(const std::vector<model::JobSpec>& specs) const REQUIRES(mu_);
  Status ClaimSpecs(std::vector<model::JobSpec>& specs, const model::Identity& caller) const
      REQUIRES(mu_);
  // OK unless a spec's depends_on names (`job:ID`) a job that `caller` may not view: refused as
  // if it did not exist (control::UnknownUpstream), so that the answer tells nothing of it.
  Status CheckUpstreamsVisible(const std::vector<model::JobSpec>& specs,
                               const model::Identity& caller) const REQUIRES(mu_);
  struct NodeEntry {
    std::shared_ptr<agent::WorkerRuntime> runtime;  // shared: HTTP threads wait on remote ones
    std::shared_ptr<RemoteRuntime> remote;          // set for remote nodes
    std::string runs_dir;                           // set for local nodes
  };

  // Carries out a batch of queued effects without mu_, and keeps what they feed back (a failed
  // launch, published outputs, a stop to retry) for the next step (CarryOutEffects).
  class EffectRunner;
  // What a turn of the loop looked at without mu_ (Gather), for Absorb.
  struct Observation;
  // A policy file as read: the stamp (modification time and size) taken before reading it, and
  // the policy it holds.
  struct PolicyFile {
    FileInfo stamp;
    model::Policy policy;
  };

  // Persists `step`, then queues its effects after those queued before and wakes the loop to
  // carry them out. kUnavailable, queuing nothing, if the store failed (now or before:
  // on_store_failure); effects queued before, of persisted steps, are still carried out.
  [[nodiscard]] Status Commit(control::Step& step) REQUIRES(mu_);
  // Publishes what `batch`, just written, changed: each transition and decision, with its job
  // as the resource that decides who sees it, and each node's operator state.
  void PublishEvents(const store::Batch& batch) REQUIRES(mu_);
  // Publishes a node's change that no batch records: "registered", "lost".
  void PublishNodeEvent(const NodeId& node, std::string_view change, const std::string& reason)
      REQUIRES(mu_);
  // Carries out the queued effects, in order and without mu_, a batch at a time, each batch's
  // feedback committed under mu_ as a next step, until none is left. One runner at a time
  // (effects_running_): when another is at work, returns at once if !wait (that runner takes
  // what is queued before it stops), else waits for it to finish and then runs what is left.
  void CarryOutEffects(bool wait) EXCLUDES(mu_);
  // For a public method that changes state: runs `change` on the controller under mu_ into a
  // step, persists it, and then, with mu_ released, CarryOutIfNoLoop. change's errors (nothing
  // is persisted), then Commit's.
  Status Change(const std::function<Status(control::Step&)>& change) EXCLUDES(mu_);
  // For a public method after its commit, with mu_ released: carries out what it queued when no
  // loop thread runs (tests, or before Start); with the loop, Commit has woken it for them.
  void CarryOutIfNoLoop() EXCLUDES(mu_);
  // The runtime of node `node` (null: no such node) and the executor of `kind` (null: none);
  // take mu_ for the look-up only. Nodes and executors are never removed, so what they return
  // stays valid.
  std::shared_ptr<agent::WorkerRuntime> RuntimeOf(const NodeId& node) const EXCLUDES(mu_);
  exec::Executor* ExecutorOf(model::ExecutorKind kind) const EXCLUDES(mu_);
  // The loop thread (ControlPlaneOptions::run_loop): a turn is Gather (without mu_), Absorb and
  // the scheduling cycle and Commit (under mu_), then CarryOutEffects; then it waits.
  void Loop() EXCLUDES(mu_, turn_mu_);
  // The part of a turn that looks without mu_: polls every runtime and executor, looks for the
  // input paths of waiting jobs when `check_inputs`, and at the policy file when `check_policy`
  // (reading it when it changed since the last look).
  Observation Gather(bool check_policy, bool check_inputs) REQUIRES(turn_mu_) EXCLUDES(mu_);
  // Feeds what Gather saw to the controller into `step`, after queuing the stops to retry and
  // starting due cron runs, and checks agents' liveness; asks for a scheduling cycle when
  // something may have freed or taken capacity.
  void Absorb(Observation& seen, control::Step& step) REQUIRES(turn_mu_, mu_);
  // Runs a scheduling cycle into `step` and times it for metrics_ (ObserveCycle).
  void ScheduleCycle(control::Step& step) REQUIRES(mu_);
  // Wakes the loop for a scheduling cycle.
  void RequestSchedule() REQUIRES(mu_);
  // Whether polling can find something: a job holds capacity (its workers or external job
  // report through Poll), a service is defined (its reconciling and autoscaling run at every
  // turn) or stops wait to be sent. Otherwise only a request, which wakes the loop, or the next
  // idle cycle can change anything, and the loop waits for those instead of polling.
  bool Polling() const REQUIRES(mu_);
  // Where the publication record of (job, attempt) is kept (options_.publications_dir); empty
  // when none is. Thread-safe (reads only the options).
  std::string PublicationRecordPath(JobId job, int attempt) const;
  // Feeds a runtime's event, about a worker placed on that runtime's node (Absorb checks), to
  // the controller; true if it may have freed or taken capacity (started, exited).
  bool OnRuntimeEvent(const model::WorkerEvent& event, control::Step& step) REQUIRES(mu_);
  // Declares lost every remote agent silent for longer than options_.agent_timeout_ms, and
  // records each in the store with its orphans (AgentRegistry::RecordLost); true if any was.
  bool CheckAgents(control::Step& step) REQUIRES(mu_);
  // The server end of remote node `node`; kNotFound if there is none.
  Result<std::shared_ptr<RemoteRuntime>> RemoteOf(const NodeId& node) const REQUIRES(mu_);
  // A new remote node's runtime, with the agent waker, in nodes_.
  std::shared_ptr<RemoteRuntime> AddRemote(const NodeId& node) REQUIRES(mu_);
  struct CronEntry {
    store::CronRecord record;
    workflow::CronSchedule schedule;
    const date::time_zone* zone = nullptr;
    TimeMs next_due = 0;  // planned again at this time
  };
  // Restores the nodes the store records lost (Start, after live workers are re-attached): a
  // node the controller holds no live worker on is lost again, its orphans stopped when its
  // agent registers; on one where it does (its loss was recorded but the step declaring it was
  // not persisted) those workers are adopted, and RegisterRemoteNode stops the other orphans.
  void RestoreLostNodes() REQUIRES(mu_);
  // The status of `name` (a node the controller knows) as Nodes() reports it, with
  // `live_workers` workers believed alive there.
  NodeStatus StatusOf(const NodeId& name, int live_workers) const REQUIRES(mu_);
  // Loads the stored cron jobs (Start).
  Status RestoreCrons() REQUIRES(mu_);
  // Loads the stored services and adopts their live replicas (Start, after the jobs).
  Status RestoreServices() REQUIRES(mu_);
  // Runs the autoscaler and the replica plan of every service into `step` (Absorb, after the
  // turn's worker events, so that a replica that just ended is replaced in the same turn).
  void ReconcileServices(control::Step& step) REQUIRES(mu_);
  // The same for one service into `step`; `ports` (those live replicas hold) gains the new ones.
  void ReconcileService(ServiceEntry& entry, std::set<int>& ports, control::Step& step)
      REQUIRES(mu_);
  std::set<int> PortsInUse() const REQUIRES(mu_);
  api::ServiceStatus StatusOf(const ServiceEntry& entry) const REQUIRES(mu_);
  // Where a replica listens once placed: its node's name and address, and its port.
  struct ReplicaAddress {
    std::string node;
    std::string host;
    int port = 0;
  };
  std::optional<ReplicaAddress> AddressOf(const model::Job& job) const REQUIRES(mu_);
  // Saves the controller's fair-share history (Store::PutFairShare); nothing before Start has
  // loaded the saved one. A failure is logged, not fatal: it loses at most the history accrued
  // since the last save, retried at the next.
  void SaveFairShare() REQUIRES(mu_);
  // Records (PolicyInfo) and logs the queues whose fair-share history the policy just
  // installed dropped, then saves the history.
  void OnPolicyInstalled(const std::vector<std::string>& dropped_history) REQUIRES(mu_);
  // Makes the controller's policy the one Policy() answers.
  void PublishPolicy() REQUIRES(mu_) EXCLUDES(published_policy_mu_);
  // Plans every cron job that is due and starts its run (the loop).
  void RunDueCrons() REQUIRES(mu_);
  // Submits the run of `entry` due at `due` under its concurrency policy.
  void StartCronRun(const CronEntry& entry, TimeMs due) REQUIRES(mu_);
  CronStatus StatusOf(const CronEntry& entry) const REQUIRES(mu_);
  // Reads and parses the policy file at `path`, without mu_; LoadPolicyFile's errors.
  Result<PolicyFile> ReadPolicyFile(const std::string& path) const EXCLUDES(mu_);
  // Installs `file`, read from `path`, and remembers the file (SetPolicy's errors, naming it).
  Status InstallPolicyFile(const std::string& path, PolicyFile file) REQUIRES(mu_);
  // The loop saw the policy file at `path` changed (`stamp`: what the look saw) and read it:
  // installs what it read, or records and logs why not, once for an unchanged bad file.
  void OnPolicyFileChanged(const std::string& path, const std::optional<FileInfo>& stamp,
                           Result<PolicyFile> read) REQUIRES(mu_);

  std::unique_ptr<store::Store> store_;  // thread-safe itself: read outside mu_
  const Clock& clock_;
  ControlPlaneOptions options_;  // not changed after construction
  FileSystem& fs_;
  AgentRegistry agents_;  // thread-safe itself: read outside mu_ by Authorize
  // Thread-safe itself (a leaf lock): read by Submit under mu_ (its in-memory index) and by the
  // effect runner without it; set before Start. Null: no secrets.
  std::unique_ptr<SecretStore> secrets_;
  TokenRegistry tokens_;  // thread-safe itself: never under mu_
  // Thread-safe itself; mutable: ListAudit flushes it first. Stopped by Stop.
  mutable AuditLog audit_;
  ServerMetrics metrics_;  // thread-safe itself; fed by Commit and the cycles under mu_
  UsageRecorder usage_;    // thread-safe itself: never under mu_
  // Local nodes' samplers, set before Start; started by Start, stopped by Stop.
  std::vector<std::unique_ptr<agent::UsageSampler>> samplers_;
  EventHub events_;  // thread-safe itself: published to under mu_, read without it

  // Serializes turns of the loop (Loop, RunOnce), so that the events of one Poll are fed to the
  // controller before those of the next. Taken before mu_; public methods other than RunOnce
  // never take it.
  Mutex turn_mu_;
  // Guards the members marked GUARDED_BY. Held for in-memory work and store writes only: never
  // through a runtime's or executor's call, a file system call or a wait. Each public method
  // takes it for its critical section (none calls another with it held).
  mutable Mutex mu_;
  // Serializes AppendRemoteLog's look at a log's size and its append, so that two posts of the
  // same chunk keep it once. Never held with mu_.
  Mutex log_mu_;
  mutable std::condition_variable_any changed_;  // version_ grew, or the plane stopped
  // A schedule is requested, effects were queued, or the plane stopped.
  std::condition_variable_any wake_loop_;
  std::map<model::ExecutorKind, std::unique_ptr<exec::Executor>> executors_ GUARDED_BY(mu_);
  control::Controller controller_ GUARDED_BY(mu_);
  std::map<NodeId, NodeEntry> nodes_ GUARDED_BY(mu_);
  RemoteRuntime::Waker agent_waker_ GUARDED_BY(mu_);
  std::vector<control::StopWorker> pending_stops_ GUARDED_BY(mu_);  // retried by the loop
  // Effects of persisted steps not yet carried out, in order (CarryOutEffects).
  std::vector<control::Effect> effects_ GUARDED_BY(mu_);
  bool effects_running_ GUARDED_BY(mu_) = false;  // a CarryOutEffects is at work
  std::condition_variable_any effects_idle_;      // effects_running_ became false
  bool loop_started_ GUARDED_BY(mu_) = false;     // Start started the loop thread
  // The policy file (empty: none) and what the last look at it saw (mtime and size), so that an
  // unchanged bad file is reported once.
  std::string policy_file_ GUARDED_BY(mu_);
  std::optional<FileInfo> policy_file_seen_ GUARDED_BY(mu_);  // nullopt: it could not be looked at
  TimeMs policy_loaded_at_ GUARDED_BY(mu_) = 0;
  std::optional<Error> policy_reload_error_ GUARDED_BY(mu_);
  // The controller's policy as of its last installation (PublishPolicy, under mu_), for
  // Policy(): a copy that readers share, swapped whole, never changed in place. Its mutex is
  // taken alone, or after mu_, never before it.
  mutable Mutex published_policy_mu_;
  std::shared_ptr<const model::Policy> published_policy_ GUARDED_BY(published_policy_mu_);
  // The queues whose fair-share history the last installed policy dropped (PolicyInfo).
  std::vector<std::string> policy_history_dropped_ GUARDED_BY(mu_);
  TimeMs fair_share_saved_at_ GUARDED_BY(mu_) = 0;                // the last SaveFairShare
  bool fair_share_loaded_ GUARDED_BY(mu_) = false;                // Start loaded the saved history
  std::map<std::string, CronEntry> crons_ GUARDED_BY(mu_);        // by name
  std::map<std::string, ServiceEntry> services_ GUARDED_BY(mu_);  // by name
  // Started by Start (options.run_loop and run_prober), stopped by Stop before the loop.
  std::unique_ptr<ServiceProber> prober_;
  std::uint64_t version_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  // A write failed and on_store_failure returned: see there.
  bool store_failed_ GUARDED_BY(mu_) = false;
  bool schedule_requested_ GUARDED_BY(mu_) = false;
  // Started by Start and joined by Stop (or the destructor), both called by the plane's owner.
  std::thread loop_;
};

}  // namespace drover::server
