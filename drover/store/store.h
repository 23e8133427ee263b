#pragma once

// The durable record of jobs, their lifecycle transitions and the scheduler's decision log.
//
// The controller is the only writer: it assigns job ids and hands the store each change as a
// Batch, which the store applies atomically (one SQLite transaction): either every job snapshot,
// transition and decision in it is stored, or nothing is. Reads may run concurrently with writes.
//
// Implementations: NewMemoryStore() for unit tests and the simulator; OpenSqliteStore() for the
// server (WAL mode, schema version and migrations; options in sqlite_store.h);
// OpenPostgresStore() (postgres_store.h) for `drover server --store postgres://...`. One contract
// test suite (store_contract_test.cc) runs against all of them. Every implementation is
// thread-safe.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "drover/common/ids.h"
#include "drover/common/result.h"
#include "drover/model/cron.h"
#include "drover/model/decision.h"
#include "drover/model/fair_share.h"
#include "drover/model/identity.h"
#include "drover/model/job.h"
#include "drover/model/launch.h"
#include "drover/model/node.h"
#include "drover/model/service.h"
#include "drover/model/usage.h"

namespace drover::store {

// A set of changes applied atomically.
// A node's operator state (model::NodeAdmin: cordon, drain, maintenance) as stored.
struct NodeAdminRecord {
  NodeId node;
  model::NodeAdmin admin;

  friend bool operator==(const NodeAdminRecord&, const NodeAdminRecord&) = default;
};

struct Batch {
  std::vector<model::Job> jobs;                // full snapshots, inserted or replacing by id
  std::vector<model::Transition> transitions;  // appended
  std::vector<model::Decision> decisions;      // appended to the decision log, in order
  std::vector<NodeAdminRecord> nodes;          // inserted or replacing by node name

  bool empty() const {
    return jobs.empty() && transitions.empty() && decisions.empty() && nodes.empty();
  }
};

struct JobFilter {
  std::optional<model::JobState> state;
  std::string owner;  // empty: any
  std::string team;
  std::string queue;
  std::string name;
  bool active_only = false;  // only non-terminal jobs
  int limit = 0;             // 0: no limit; newest (highest id) first when limited
};

// A cron job as stored (docs/workflows.md "Cron jobs").
//
// Restart safety: a due run is submitted to the controller with its run id
// (workflow::CronRunId) as the Idempotency-Key, and that submission is persisted (the jobs'
// snapshots carry the key, and Controller::Restore rebuilds its key map from them) BEFORE
// last_handled is advanced past the due time. A crash in between re-plans the same due time
// after the restart, and the resubmission with the same key returns the existing jobs: a run is
// never submitted twice, and a due time is never marked handled before its run exists.
struct CronRecord {
  model::CronSpec spec;
  std::string owner;  // who submitted the cron job; its runs are submitted as this user
  std::string team;   // and as this team
  TimeMs created_at = 0;
  // The latest due time handled (its run submitted, or skipped); created_at before the first.
  TimeMs last_handled = 0;

  friend bool operator==(const CronRecord&, const CronRecord&) = default;
};

// A service as stored (docs/inference.md): its spec, who registered it, the generation of its
// replica template (bumped when a re-submission changes the template: a rolling update) and the
// replica count the autoscaler last chose. Its replicas are ordinary jobs (JobSpec::service);
// what is live is rebuilt from them on restart.
struct ServiceRecord {
  model::ServiceSpec spec;
  std::string owner;
  std::string team;
  TimeMs created_at = 0;
  TimeMs updated_at = 0;  // the last change of spec or desired
  int generation = 1;
  int desired = 0;

  friend bool operator==(const ServiceRecord&, const ServiceRecord&) = default;
};

// A remote node's agent as stored (docs/security.md, "Agents"): the hash of the credential the
// server issued it, and, while the node is lost, what the server must do when its agent comes
// back. A restarted server thus still knows every node's credential and which orphaned workers
// to stop there.
struct AgentRecord {
  NodeId node;
  // Lowercase hex SHA-256 of the credential; never the credential itself. Empty: none issued
  // (a node known only from its jobs that was declared lost before its agent registered).
  std::string credential_hash;
  TimeMs issued_at = 0;  // when the credential was issued
  // Set from when the node is declared lost until its agent registers again and is told to stop
  // the orphans.
  struct Lost {
    TimeMs at = 0;
    std::string reason;
    // Workers reported lost with the node that may still run there: stopped when it is back.
    std::vector<model::WorkerKey> orphans;

    friend bool operator==(const Lost&, const Lost&) = default;
  };
  std::optional<Lost> lost;

  friend bool operator==(const AgentRecord&, const AgentRecord&) = default;
};

// An API token as stored (docs/security.md, "Tokens"): whom it speaks for and the SHA-256 of the
// token, never the token itself.
struct TokenRecord {
  std::string id;            // public: "tok-" and 12 hex digits; listed, revoked and audited by it
  std::string hash;          // lowercase hex SHA-256 of the token
  model::Identity identity;  // identity.token_id == id; identity.job unset
  std::string created_by;    // model::Describe of the creator
  TimeMs created_at = 0;
  TimeMs expires_at = 0;  // 0: never
  TimeMs revoked_at = 0;  // 0: not revoked

  friend bool operator==(const TokenRecord&, const TokenRecord&) = default;
};

// One mutating API request (docs/security.md, "Audit log"): who, what, on what, with which
// result, when and from where.
struct AuditRecord {
  std::int64_t seq = 0;  // assigned by the store on append: 1, 2, ... in append order
  TimeMs at = 0;
  std::string user;          // the caller's user; "" when unauthenticated
  std::string team;          // the team acted on (a job's, a secret's), else the caller's
  std::string caller;        // model::Describe of the caller ("user-a (coordinator of team-a)")
  std::string action;        // method and route, e.g. "POST /v1/jobs/12/cancel"
  std::string target;        // "job 12", "token tok-1a2b...", "policy"; "" for none
  std::optional<JobId> job;  // the job acted on, for --job
  int status = 0;            // the HTTP status answered
  std::string code;          // the error code ("permission_denied"); "" on success
  std::string address;       // the client's address

  friend bool operator==(const AuditRecord&, const AuditRecord&) = default;
};

struct AuditFilter {
  TimeMs since = 0;          // records at or after this
  std::string user;          // empty: any
  std::string team;          // empty: any
  std::optional<JobId> job;  // unset: any
  int limit = 0;             // 0: no limit; the newest N when limited (still in seq order)
};

// True if `job` passes every criterion of `filter` (limit is not a criterion). Stores and
// in-memory views of jobs filter with it alike.
bool Matches(const JobFilter& filter, const model::Job& job);
// The same for an audit record.
bool Matches(const AuditFilter& filter, const AuditRecord& record);

class Store {
 public:
  virtual ~Store() = default;

  // Applies `batch` in one transaction. kInvalidArgument if a transition or a decision (its
  // `job`; victims are not checked) names a job that is neither stored nor in the batch, or a
  // job id is below 1; kUnavailable/kInternal on I/O
  // failure (nothing applied). Jobs are applied in order (a later snapshot of the same id in
  // one batch wins); an empty batch is a no-op.
  virtual Status Apply(const Batch& batch) = 0;

  // Jobs matching `filter`, ascending by id (descending when filter.limit > 0).
  // kInvalidArgument if filter.limit < 0.
  virtual Result<std::vector<model::Job>> ListJobs(const JobFilter& filter) const = 0;
  // kNotFound if there is no such job.
  virtual Result<model::Job> GetJob(JobId id) const = 0;
  // Every transition of a job, in the order applied.
  virtual Result<std::vector<model::Transition>> ListTransitions(JobId id) const = 0;
  // The decisions that concern a job, in the order applied: those about it (Decision::job == id)
  // and those that chose it as a victim (id among Decision::victims). A decision is stored once
  // and returned for each job it concerns. Empty for an unknown job.
  virtual Result<std::vector<model::Decision>> ListDecisions(JobId id) const = 0;
  // Ids of the jobs submitted with this Idempotency-Key, ascending; empty if none or if `key`
  // is empty (a job with an empty submission_key has no key).
  virtual Result<std::vector<JobId>> FindSubmission(const std::string& key) const = 0;
  // The largest job id stored, 0 if none.
  virtual Result<std::int64_t> MaxJobId() const = 0;

  // Inserts a cron job or replaces the one of the same spec.name (each write is atomic).
  virtual Status PutCron(const CronRecord& cron) = 0;
  // Removes a cron job (its runs' jobs stay). kNotFound if there is none of that name.
  virtual Status DeleteCron(const std::string& name) = 0;
  // Every cron job, by name.
  virtual Result<std::vector<CronRecord>> ListCrons() const = 0;

  // Inserts a service or replaces the one of the same spec.name (atomic). kInvalidArgument for
  // an empty name; kUnavailable/kInternal on I/O failure.
  virtual Status PutService(const ServiceRecord& service) = 0;
  // Removes a service (its replicas' jobs stay). kNotFound if there is none of that name.
  virtual Status DeleteService(const std::string& name) = 0;
  // Every service, by name.
  virtual Result<std::vector<ServiceRecord>> ListServices() const = 0;

  // Inserts a remote node's agent record or replaces the one of the same node (atomic).
  // kInvalidArgument for an empty node name; kUnavailable/kInternal on I/O failure.
  virtual Status PutAgent(const AgentRecord& agent) = 0;
  // Every agent record, by node name.
  virtual Result<std::vector<AgentRecord>> ListAgents() const = 0;

  // Every node's operator state written by Apply (Batch::nodes), by node name.
  virtual Result<std::vector<NodeAdminRecord>> ListNodeAdmin() const = 0;

  // Inserts an API token record or replaces the one of the same id (atomic). kInvalidArgument
  // for an empty id or hash; kUnavailable/kInternal on I/O failure.
  virtual Status PutToken(const TokenRecord& token) = 0;
  // Every token record (revoked and expired ones too), by id.
  virtual Result<std::vector<TokenRecord>> ListTokens() const = 0;

  // Appends `records` to the audit log in one transaction (all or none), in order; the store
  // assigns each its seq (1, 2, ... over the log's life; the records' own seq is ignored). An
  // empty list is a no-op. kUnavailable/kInternal on I/O failure.
  virtual Status AppendAudit(const std::vector<AuditRecord>& records) = 0;
  // The audit records matching `filter`, in seq order (the newest filter.limit of them when
  // limited). kInvalidArgument if filter.limit < 0.
  virtual Result<std::vector<AuditRecord>> ListAudit(const AuditFilter& filter) const = 0;

  // Replaces the saved fair-share history with `history`, atomically (docs/scheduling.md, "Fair
  // share": the server saves it at most every few seconds and loads it at start).
  // kInvalidArgument, saving nothing, for an entry with an empty queue, two entries of one
  // (queue, user), an empty resource name or an amount that is not finite and positive
  // ("entries[2].usage.gpu: ..."); kUnavailable/kInternal on I/O failure.
  virtual Status PutFairShare(const model::FairShareHistory& history) = 0;
  // The history last saved (entries sorted by (queue, user)); an empty one (advanced_at unset,
  // no entries) if none was.
  virtual Result<model::FairShareHistory> GetFairShare() const = 0;

  // Usage of attempts (docs/observability.md, "Sampling"; the server's UsageRecorder writes
  // them). Inserts or replaces the record of (usage.job, usage.attempt) and inserts or replaces
  // each of `buckets` of that attempt by its start, in one transaction; the job need not be
  // stored. kInvalidArgument, storing nothing, for a job id or attempt below 1 or a bucket start
  // that is not a multiple of model::kUsageBucketMs; kUnavailable/kInternal on I/O failure.
  virtual Status PutUsage(const model::AttemptUsage& usage,
                          const std::vector<model::UsageBucket>& buckets) = 0;
  // The records of every attempt of `job` that has one, by attempt (empty if none).
  virtual Result<std::vector<model::AttemptUsage>> ListUsage(JobId job) const = 0;
  // The buckets of one attempt, by start (empty if none).
  virtual Result<std::vector<model::UsageBucket>> GetUsageSeries(JobId job, int attempt) const = 0;
};

std::unique_ptr<Store> NewMemoryStore();

// Opens (creating if needed) the SQLite database at `path`, in WAL mode, migrating its schema
// to the current version. kFailedPrecondition if the file has a newer schema than this build.
Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path);

}  // namespace drover::store
