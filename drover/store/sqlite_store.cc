// OpenSqliteStore(): the Store contract on a SQLite database (see sqlite_store.h for the
// layout, durability and thread-safety contract): the schema and its migrations, then the store.
// The connection plumbing it runs on is in sqlite_connection.h.

#include "drover/store/sqlite_store.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "drover/store/sqlite_connection.h"
#include "drover/store/sqlite_fair_share.h"
#include "drover/store/sqlite_identity.h"
#include "drover/store/sqlite_usage.h"
#include "drover/store/store_codec.h"
#include "drover/store/store_util.h"

namespace drover::store {
namespace {

// Migration i takes the schema from version i to i + 1. Append only: never edit a migration
// that has shipped; add a new one and bump kSqliteSchemaVersion. "{unfinished}" in a migration
// stands for SqlUnfinishedStateCondition() (MigrationSql fills it in).
constexpr std::string_view kMigrations[] = {
    // 0 -> 1: jobs with their filter columns and JSON snapshot; the transition log.
    R"sql(
      CREATE TABLE jobs (
        id             INTEGER PRIMARY KEY,
        name           TEXT NOT NULL,
        owner          TEXT NOT NULL,
        team           TEXT NOT NULL,
        queue          TEXT NOT NULL,
        state          TEXT NOT NULL,
        submission_key TEXT,              -- NULL when the submission had no Idempotency-Key
        created_at     INTEGER NOT NULL,  -- ms since the epoch
        finished_at    INTEGER NOT NULL,
        snapshot       TEXT NOT NULL      -- codec::ToJson(model::Job)
      );
      CREATE INDEX jobs_state ON jobs(state);
      CREATE INDEX jobs_submission_key ON jobs(submission_key);
      -- The active jobs, newest first, without scanning finished ones (ListJobs active_only).
      CREATE INDEX jobs_active ON jobs(id)
        WHERE state NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out');
      CREATE TABLE transitions (
        seq        INTEGER PRIMARY KEY AUTOINCREMENT,
        job_id     INTEGER NOT NULL,
        attempt    INTEGER NOT NULL,
        from_state TEXT NOT NULL,
        to_state   TEXT NOT NULL,
        at         INTEGER NOT NULL,
        cause      TEXT NOT NULL
      );
      CREATE INDEX transitions_job ON transitions(job_id, seq);
    )sql",
    // 1 -> 2: the scheduler's decision log. A decision is one row about its job; the jobs it
    // chose as victims point at it from decision_victims.
    R"sql(
      CREATE TABLE decisions (
        seq      INTEGER PRIMARY KEY AUTOINCREMENT,
        job_id   INTEGER NOT NULL,
        attempt  INTEGER NOT NULL,
        at       INTEGER NOT NULL,  -- ms since the epoch
        kind     TEXT NOT NULL,     -- placed, reserved, preempted, evicted
        json     TEXT NOT NULL      -- codec::ToJson(model::Decision)
      );
      CREATE INDEX decisions_job ON decisions(job_id, seq);
      CREATE TABLE decision_victims (
        job_id   INTEGER NOT NULL,
        seq      INTEGER NOT NULL,  -- decisions.seq
        PRIMARY KEY (job_id, seq)
      ) WITHOUT ROWID;
    )sql",
    // 2 -> 3: cron jobs, with the latest due time handled (store.h, CronRecord).
    R"sql(
      CREATE TABLE crons (
        name         TEXT PRIMARY KEY,
        owner        TEXT NOT NULL,
        created_at   INTEGER NOT NULL,  -- ms since the epoch
        last_handled INTEGER NOT NULL,  -- ms since the epoch
        spec         TEXT NOT NULL      -- the CronSpec as JSON
      ) WITHOUT ROWID;
    )sql",
    // 3 -> 4: the active-jobs index over the states model::IsTerminal calls unfinished (schema 1
    // listed the finished ones by hand and missed `skipped`). A change to IsTerminal needs a new
    // migration that rebuilds the index the same way.
    R"sql(
      DROP INDEX jobs_active;
      CREATE INDEX jobs_active ON jobs(id) WHERE {unfinished};
    )sql",
    // 4 -> 5: remote agents (store.h, AgentRecord): the credential's hash, and a lost node's
    // time, reason and orphaned workers until its agent is back.
    R"sql(
      CREATE TABLE agents (
        node            TEXT PRIMARY KEY,
        credential_hash TEXT NOT NULL,     -- hex SHA-256; '' when none was issued
        issued_at       INTEGER NOT NULL,  -- ms since the epoch
        lost_at         INTEGER,           -- NULL while the node is not lost
        lost_reason     TEXT NOT NULL,
        orphans         TEXT NOT NULL      -- [[job, attempt, rank], ...]
      ) WITHOUT ROWID;
    )sql",
    // 5 -> 6: identity (docs/security.md): a cron job's team; API tokens (store.h TokenRecord,
    // the SHA-256 of each token, never the token); the audit log of mutating requests.
    R"sql(
      ALTER TABLE crons ADD COLUMN team TEXT NOT NULL DEFAULT '';
      CREATE TABLE tokens (
        id         TEXT PRIMARY KEY,
        hash       TEXT NOT NULL,     -- hex SHA-256 of the token
        user       TEXT NOT NULL,
        team       TEXT NOT NULL,
        role       TEXT NOT NULL,     -- model::kRoleNames
        queues     TEXT NOT NULL,     -- JSON list of queue names
        created_by TEXT NOT NULL,
        created_at INTEGER NOT NULL,  -- ms since the epoch
        expires_at INTEGER NOT NULL,  -- 0: never
        revoked_at INTEGER NOT NULL   -- 0: not revoked
      ) WITHOUT ROWID;
      CREATE TABLE audit (
        seq     INTEGER PRIMARY KEY AUTOINCREMENT,
        at      INTEGER NOT NULL,  -- ms since the epoch
        user    TEXT NOT NULL,
        team    TEXT NOT NULL,
        caller  TEXT NOT NULL,
        action  TEXT NOT NULL,
        target  TEXT NOT NULL,
        job_id  INTEGER,           -- NULL when no job was acted on
        status  INTEGER NOT NULL,
        code    TEXT NOT NULL,
        address TEXT NOT NULL
      );
      CREATE INDEX audit_at ON audit(at);
      CREATE INDEX audit_user ON audit(user, seq);
      CREATE INDEX audit_team ON audit(team, seq);
      CREATE INDEX audit_job ON audit(job_id, seq);
    )sql",
    // 6 -> 7: fair-share history (store.h PutFairShare): decayed usage by queue path, user (''
    // for the queue's own) and resource, and the time it was last advanced to.
    R"sql(
      CREATE TABLE fair_share (
        queue    TEXT NOT NULL,  -- the queue's path, "org/team-a"
        user     TEXT NOT NULL,  -- '' for the queue's own history
        resource TEXT NOT NULL,  -- "gpu", "cpu", "memory", "gpu:<model>"
        usage    REAL NOT NULL,  -- resource-milliseconds, decayed
        PRIMARY KEY (queue, user, resource)
      ) WITHOUT ROWID;
      CREATE TABLE fair_share_clock (
        id          INTEGER PRIMARY KEY CHECK (id = 1),
        advanced_at INTEGER NOT NULL  -- ms since the epoch
      );
    )sql",
    // 7 -> 8: who caused each transition (model::Transition::actor): a user, or 'system'.
    R"sql(
      ALTER TABLE transitions ADD COLUMN actor TEXT NOT NULL DEFAULT 'system';
    )sql",
    // 8 -> 9: nodes' operator state (store.h NodeAdminRecord: cordon, drain, maintenance).
    R"sql(
      CREATE TABLE node_admin (
        node  TEXT PRIMARY KEY,
        admin TEXT NOT NULL  -- codec::ToJson(model::NodeAdmin)
      ) WITHOUT ROWID;
    )sql",
    // 9 -> 10: attempts' usage (store.h PutUsage; docs/observability.md, "Sampling"): the
    // summary record and the 10 s buckets of each attempt.
    R"sql(
      CREATE TABLE attempt_usage (
        job_id  INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        usage   TEXT NOT NULL,  -- codec::ToJson(model::AttemptUsage)
        PRIMARY KEY (job_id, attempt)
      ) WITHOUT ROWID;
      CREATE TABLE usage_buckets (
        job_id   INTEGER NOT NULL,
        attempt  INTEGER NOT NULL,
        start_at INTEGER NOT NULL,  -- ms since the epoch, a multiple of 10 s
        bucket   TEXT NOT NULL,     -- codec::ToJson(model::UsageBucket)
        PRIMARY KEY (job_id, attempt, start_at)
      ) WITHOUT ROWID;
    )sql",
    // 10 -> 11: services (store.h ServiceRecord; docs/inference.md), one JSON record each; their
    // replicas are jobs.
    R"sql(
      CREATE TABLE services (
        name    TEXT PRIMARY KEY,
        record  TEXT NOT NULL  -- store_codec.h EncodeService
      ) WITHOUT ROWID;
    )sql",
};
static_assert(std::size(kMigrations) == kSqliteSchemaVersion);

using sqlite::BindText;
using sqlite::Checkpointer;
using sqlite::ColumnText;
using sqlite::Connection;
using sqlite::ConnectionPool;
using sqlite::SqliteError;
using sqlite::StatementScope;

// The SQL of migration `from` -> `from` + 1, its placeholders filled in.
std::string MigrationSql(std::int64_t from) {
  constexpr std::string_view kPlaceholder = "{unfinished}";
  const std::string unfinished = SqlUnfinishedStateCondition();
  std::string sql(kMigrations[from]);
  for (auto at = sql.find(kPlaceholder); at != std::string::npos;
       at = sql.find(kPlaceholder, at + unfinished.size())) {
    sql.replace(at, kPlaceholder.size(), unfinished);
  }
  return sql;
}

// Brings the schema of `db` to kSqliteSchemaVersion in one transaction.
Status Migrate(Connection& db, const std::string& path) {
  DROVER_RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE", "begin migration"));
  auto migrate = [&]() -> Status {
    DROVER_ASSIGN_OR_RETURN(auto version, db.QueryInt("PRAGMA user_version"));
    if (version > kSqliteSchemaVersion) {
      return FailedPrecondition(fmt::format(
          "{}: database schema version {} is newer than this build's {}; upgrade Drover", path,
          version, kSqliteSchemaVersion));
    }
    DROVER_ASSIGN_OR_RETURN(auto application_id, db.QueryInt("PRAGMA application_id"));
    if (application_id != 0 && application_id != kSqliteApplicationId) {
      return FailedPrecondition(
          fmt::format("{}: not a Drover database (application_id {})", path, application_id));
    }
    if (version > 0 && application_id != kSqliteApplicationId) {
      return FailedPrecondition(
          fmt::format("{}: not a Drover database (user_version {} without Drover's application_id)",
                      path, version));
    }
    for (std::int64_t v = version; v < kSqliteSchemaVersion; ++v) {
      DROVER_RETURN_IF_ERROR(
          db.Exec(MigrationSql(v), fmt::format("migrate {} schema {} -> {}", path, v, v + 1)));
    }
    if (version < kSqliteSchemaVersion) {
      DROVER_RETURN_IF_ERROR(
          db.Exec(fmt::format("PRAGMA user_version = {}; PRAGMA application_id = {};",
                              kSqliteSchemaVersion, kSqliteApplicationId),
                  "set schema version"));
    }
    return db.Exec("COMMIT", "commit migration");
  };
  Status status = migrate();
  if (!status && !sqlite3_get_autocommit(db.db())) {
    sqlite3_exec(db.db(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
  return status;
}

class SqliteStore final : public Store {
 public:
  SqliteStore(std::unique_ptr<Connection> writer, std::unique_ptr<ConnectionPool> readers,
              std::unique_ptr<Checkpointer> checkpointer)
      : writer_(std::move(writer)),
        readers_(std::move(readers)),
        checkpointer_(std::move(checkpointer)) {
    if (checkpointer_ != nullptr) {
      sqlite3_wal_hook(
          writer_->db(),
          [](void* checkpointer, sqlite3* db, const char*, int pages) {
            static_cast<Checkpointer*>(checkpointer)->OnCommit(db, pages);
            return SQLITE_OK;
          },
          checkpointer_.get());
    }
  }

  ~SqliteStore() override {
    // Readers and the checkpointer first; the writer closes last, and as the last connection
    // it checkpoints the WAL into the database and removes it.
    sqlite3_wal_hook(writer_->db(), nullptr, nullptr);
    checkpointer_.reset();
    readers_.reset();
    writer_.reset();
  }

  Status Apply(const Batch& batch) override {
    if (batch.empty()) return OkStatus();
    DROVER_RETURN_IF_ERROR(ValidateBatchShape(batch));
    try {
      // Encode outside the lock: it is the expensive part and needs no database.
      std::vector<std::string> snapshots;
      snapshots.reserve(batch.jobs.size());
      for (const model::Job& job : batch.jobs) {
        snapshots.push_back(EncodeJob(job));
      }
      std::vector<std::string> decisions;
      decisions.reserve(batch.decisions.size());
      for (const model::Decision& decision : batch.decisions) {
        decisions.push_back(EncodeDecision(decision));
      }
      std::lock_guard lock(writer_mutex_);
      DROVER_RETURN_IF_ERROR(Step(*writer_, "BEGIN IMMEDIATE", "begin"));
      Status status = ApplyInTransaction(batch, snapshots, decisions);
      if (status) status = Step(*writer_, "COMMIT", "commit");
      if (!status) RollbackIfActive();
      return status;
    } catch (const std::exception& e) {
      RollbackIfActive();
      return Internal(fmt::format("sqlite store: Apply: {}", e.what()));
    }
  }

  Result<std::vector<model::Job>> ListJobs(const JobFilter& filter) const override {
    DROVER_RETURN_IF_ERROR(ValidateFilter(filter));
    // Build the query from the criteria present; each shape is prepared once and cached.
    std::string sql = "SELECT id, snapshot FROM jobs WHERE 1";
    std::vector<std::string_view> texts;
    auto add_text = [&](std::string_view column, std::string_view value) {
      if (value.empty()) return;
      texts.push_back(value);
      sql += fmt::format(" AND {} = ?{}", column, texts.size());
    };
    std::string state_name;
    if (filter.state) state_name = std::string(model::JobStateName(*filter.state));
    add_text("state", state_name);
    add_text("owner", filter.owner);
    add_text("team", filter.team);
    add_text("queue", filter.queue);
    add_text("name", filter.name);
    if (filter.active_only) {
      static const std::string kActive = " AND " + SqlUnfinishedStateCondition();
      sql += kActive;
    }
    // The limit is a parameter, not text, so the statement cache holds at most 2^7 shapes.
    const int limit_index = static_cast<int>(texts.size()) + 1;
    sql += filter.limit > 0 ? fmt::format(" ORDER BY id DESC LIMIT ?{}", limit_index)
                            : std::string(" ORDER BY id ASC");

    std::vector<std::pair<std::int64_t, std::string>> rows;
    {
      auto lease = BorrowReader();
      DROVER_ASSIGN_OR_RETURN(auto stmt, lease->Prepare(sql));
      StatementScope scope(stmt);
      for (std::size_t i = 0; i < texts.size(); ++i) {
        BindText(stmt, static_cast<int>(i + 1), texts[i]);
      }
      if (filter.limit > 0) sqlite3_bind_int(stmt, limit_index, filter.limit);
      int rc;
      while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        rows.emplace_back(sqlite3_column_int64(stmt, 0), ColumnText(stmt, 1));
      }
      if (rc != SQLITE_DONE) return SqliteError(lease->db(), rc, "list jobs");
    }
    std::vector<model::Job> jobs;
    jobs.reserve(rows.size());
    for (const auto& [id, snapshot] : rows) {
      DROVER_ASSIGN_OR_RETURN(auto job, DecodeJob("sqlite", id, snapshot));
      jobs.push_back(std::move(job));
    }
    return jobs;
  }

  Result<model::Job> GetJob(JobId id) const override {
    std::string snapshot;
    {
      auto lease = BorrowReader();
      DROVER_ASSIGN_OR_RETURN(auto stmt, lease->Prepare("SELECT snapshot FROM jobs WHERE id = ?1"));
      StatementScope scope(stmt);
      sqlite3_bind_int64(stmt, 1, id.value());
      const int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) return NotFound(fmt::format("job {} not found", id.value()));
      if (rc != SQLITE_ROW) return SqliteError(lease->db(), rc, "get job");
      snapshot = ColumnText(stmt, 0);
    }
    return DecodeJob("sqlite", id.value(), snapshot);
  }

  Result<std::vector<model::Transition>> ListTransitions(JobId id) const override {
    auto lease = BorrowReader();
    DROVER_ASSIGN_OR_RETURN(
        auto stmt,
        lease->Prepare(
            "SELECT attempt, from_state, to_state, at, cause, actor FROM transitions WHERE "
            "job_id = ?1 ORDER BY seq"));
    StatementScope scope(stmt);
    sqlite3_bind_int64(stmt, 1, id.value());
    std::vector<model::Transition> out;
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      model::Transition transition;
      transition.job = id;
      transition.attempt = sqlite3_column_int(stmt, 0);
      const std::string from = ColumnText(stmt, 1);
      const std::string to = ColumnText(stmt, 2);
      auto from_state = model::ParseJobState(from);
      auto to_state = model::ParseJobState(to);
      if (!from_state || !to_state) {
        return Internal(
            fmt::format("sqlite store: job {}: stored transition has unknown state "
                        "\"{}\" -> \"{}\"",
                        id.value(), from, to));
      }
      transition.from = *from_state;
      transition.to = *to_state;
      transition.at = sqlite3_column_int64(stmt, 3);
      transition.cause = ColumnText(stmt, 4);
      transition.actor = ColumnText(stmt, 5);
      out.push_back(std::move(transition));
    }
    if (rc != SQLITE_DONE) return SqliteError(lease->db(), rc, "list transitions");
    return out;
  }

  Result<std::vector<model::Decision>> ListDecisions(JobId id) const override {
    std::vector<std::string> rows;
    {
      auto lease = BorrowReader();
      DROVER_ASSIGN_OR_RETURN(
          auto stmt,
          lease->Prepare("SELECT json FROM decisions WHERE job_id = ?1 OR seq IN "
                         "(SELECT seq FROM decision_victims WHERE job_id = ?1) ORDER BY seq"));
      StatementScope scope(stmt);
      sqlite3_bind_int64(stmt, 1, id.value());
      int rc;
      while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) rows.push_back(ColumnText(stmt, 0));
      if (rc != SQLITE_DONE) return SqliteError(lease->db(), rc, "list decisions");
    }
    std::vector<model::Decision> out;
    out.reserve(rows.size());
    for (const std::string& text : rows) {
      DROVER_ASSIGN_OR_RETURN(auto decision, DecodeDecision("sqlite", id.value(), text));
      out.push_back(std::move(decision));
    }
    return out;
  }

  Result<std::vector<JobId>> FindSubmission(const std::string& key) const override {
    std::vector<JobId> out;
    if (key.empty()) return out;
    auto lease = BorrowReader();
    DROVER_ASSIGN_OR_RETURN(
        auto stmt, lease->Prepare("SELECT id FROM jobs WHERE submission_key = ?1 ORDER BY id"));
    StatementScope scope(stmt);
    BindText(stmt, 1, key);
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      out.push_back(JobId(sqlite3_column_int64(stmt, 0)));
    }
    if (rc != SQLITE_DONE) return SqliteError(lease->db(), rc, "find submission");
    return out;
  }

  Result<std::int64_t> MaxJobId() const override {
    auto lease = BorrowReader();
    DROVER_ASSIGN_OR_RETURN(auto stmt, lease->Prepare("SELECT COALESCE(MAX(id), 0) FROM jobs"));
    StatementScope scope(stmt);
    const int rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW) return SqliteError(lease->db(), rc, "max job id");
    return sqlite3_column_int64(stmt, 0);
  }

  Status PutCron(const CronRecord& cron) override {
    try {
      const std::string spec = EncodeCronSpec(cron.spec);
      std::lock_guard lock(writer_mutex_);
      DROVER_ASSIGN_OR_RETURN(
          auto stmt,
          writer_->Prepare("INSERT INTO crons (name, owner, team, created_at, last_handled, "
                           "spec) VALUES (?1, ?2, ?6, ?3, ?4, ?5) ON CONFLICT (name) DO UPDATE "
                           "SET owner = excluded.owner, team = excluded.team, "
                           "created_at = excluded.created_at, "
                           "last_handled = excluded.last_handled, spec = excluded.spec"));
      StatementScope scope(stmt);
      BindText(stmt, 1, cron.spec.name);
      BindText(stmt, 2, cron.owner);
      sqlite3_bind_int64(stmt, 3, cron.created_at);
      sqlite3_bind_int64(stmt, 4, cron.last_handled);
      BindText(stmt, 5, spec);
      BindText(stmt, 6, cron.team);
      const int rc = sqlite3_step(stmt);
      if (rc != SQLITE_DONE) {
        return SqliteError(writer_->db(), rc, fmt::format("store cron job {}", cron.spec.name));
      }
      return OkStatus();
    } catch (const std::exception& e) {
      return Internal(fmt::format("sqlite store: PutCron: {}", e.what()));
    }
  }

  Status DeleteCron(const std::string& name) override {
    std::lock_guard lock(writer_mutex_);
    DROVER_ASSIGN_OR_RETURN(auto stmt, writer_->Prepare("DELETE FROM crons WHERE name = ?1"));
    StatementScope scope(stmt);
    BindText(stmt, 1, name);
    const int rc = sqlite3_step(stmt);
    if (rc != SQLITE_DONE) {
      return SqliteError(writer_->db(), rc, fmt::format("delete cron job {}", name));
    }
    if (sqlite3_changes(writer_->db()) == 0) {
      return NotFound(fmt::format("cron job {} not found", name));
    }
    return OkStatus();
  }

  Status PutService(const ServiceRecord& service) override {
    if (service.spec.name.empty()) return InvalidArgument("service.spec.name: must not be empty");
    try {
      const std::string record = EncodeService(service);
      std::lock_guard lock(writer_mutex_);
      DROVER_ASSIGN_OR_RETURN(
          auto stmt, writer_->Prepare("INSERT INTO services (name, record) VALUES (?1, ?2) "
                                      "ON CONFLICT (name) DO UPDATE SET record = "
                                      "excluded.record"));
      StatementScope scope(stmt);
      BindText(stmt, 1, service.spec.name);
      BindText(stmt, 2, record);
      const int rc = sqlite3_step(stmt);
      if (rc != SQLITE_DONE) {
        return SqliteError(writer_->db(), rc, fmt::format("store service {}", service.spec.name));
      }
      return OkStatus();
    } catch (const std::exception& e) {
      return Internal(fmt::format("sqlite store: PutService: {}", e.what()));
    }
  }

  Status DeleteService(const std::string& name) override {
    std::lock_guard lock(writer_mutex_);
    DROVER_ASSIGN_OR_RETURN(auto stmt, writer_->Prepare("DELETE FROM services WHERE name = ?1"));
    StatementScope scope(stmt);
    BindText(stmt, 1, name);
    const int rc = sqlite3_step(stmt);
    if (rc != SQLITE_DONE) {
      return SqliteError(writer_->db(), rc, fmt::format("delete service {}", name));
    }
    if (sqlite3_changes(writer_->db()) == 0) {
      return NotFound(fmt::format("service {} not found", name));
    }
    return OkStatus();
  }

  Result<std::vector<ServiceRecord>> ListServices() const override {
    std::vector<std::string> rows;
    {
      auto lease = BorrowReader();
      DROVER_ASSIGN_OR_RETURN(auto stmt,
                              lease->Prepare("SELECT record FROM services ORDER BY name"));
      StatementScope scope(stmt);
      int rc;
      while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) rows.push_back(ColumnText(stmt, 0));
      if (rc != SQLITE_DONE) return SqliteError(lease->db(), rc, "list services");
    }
    std::vector<ServiceRecord> out;
    for (const std::string& text : rows) {
      DROVER_ASSIGN_OR_RETURN(ServiceRecord service, DecodeService("sqlite", text));
      out.push_back(std::move(service));
    }
    return out;
  }

  Status PutAgent(const AgentRecord& agent) override {
    DROVER_RETURN_IF_ERROR(ValidateAgent(agent));
    // Bound without copies (BindText): they must outlive the statement's step.
    const std::string orphans_text = EncodeOrphans(agent);
    const std::string reason = agent.lost ? agent.lost->reason : "";
    std::lock_guard lock(writer_mutex_);
    DROVER_ASSIGN_OR_RETURN(
        auto stmt,
        writer_->Prepare("INSERT OR REPLACE INTO agents (node, credential_hash, issued_at, "
                         "lost_at, lost_reason, orphans) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
    StatementScope scope(stmt);
    BindText(stmt, 1, agent.node.value());
    BindText(stmt, 2, agent.credential_hash);
    sqlite3_bind_int64(stmt, 3, agent.issued_at);
    if (agent.lost) {
      sqlite3_bind_int64(stmt, 4, agent.lost->at);
    } else {
      sqlite3_bind_null(stmt, 4);
    }
    BindText(stmt, 5, reason);
    BindText(stmt, 6, orphans_text);
    const int rc = sqlite3_step(stmt);
    if (rc != SQLITE_DONE) {
      return SqliteError(writer_->db(), rc, fmt::format("store agent {}", agent.node.value()));
    }
    return OkStatus();
  }

  Result<std::vector<AgentRecord>> ListAgents() const override {
    auto lease = BorrowReader();
    DROVER_ASSIGN_OR_RETURN(auto stmt, lease->Prepare("SELECT node, credential_hash, issued_at, "
                                                      "lost_at, lost_reason, orphans FROM agents "
                                                      "ORDER BY node"));
    StatementScope scope(stmt);
    std::vector<AgentRecord> out;
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      AgentRecord agent;
      agent.node = NodeId(ColumnText(stmt, 0));
      agent.credential_hash = ColumnText(stmt, 1);
      agent.issued_at = sqlite3_column_int64(stmt, 2);
      if (sqlite3_column_type(stmt, 3) != SQLITE_NULL) {
        AgentRecord::Lost lost;
        lost.at = sqlite3_column_int64(stmt, 3);
        lost.reason = ColumnText(stmt, 4);
        DROVER_ASSIGN_OR_RETURN(lost.orphans,
                                DecodeOrphans("sqlite", agent.node.value(), ColumnText(stmt, 5)));
        agent.lost = std::move(lost);
      }
      out.push_back(std::move(agent));
    }
    if (rc != SQLITE_DONE) return SqliteError(lease->db(), rc, "list agents");
    return out;
  }

  Result<std::vector<NodeAdminRecord>> ListNodeAdmin() const override {
    auto lease = BorrowReader();
    DROVER_ASSIGN_OR_RETURN(auto stmt,
                            lease->Prepare("SELECT node, admin FROM node_admin ORDER BY node"));
    StatementScope scope(stmt);
    std::vector<NodeAdminRecord> out;
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      NodeAdminRecord record;
      record.node = NodeId(ColumnText(stmt, 0));
      DROVER_ASSIGN_OR_RETURN(record.admin,
                              DecodeNodeAdmin("sqlite", record.node.value(), ColumnText(stmt, 1)));
      out.push_back(std::move(record));
    }
    if (rc != SQLITE_DONE) return SqliteError(lease->db(), rc, "list node admin");
    return out;
  }

  Result<std::vector<CronRecord>> ListCrons() const override {
    std::vector<std::pair<CronRecord, std::string>> rows;
    {
      auto lease = BorrowReader();
      DROVER_ASSIGN_OR_RETURN(
          auto stmt, lease->Prepare("SELECT owner, created_at, last_handled, spec, team FROM crons "
                                    "ORDER BY name"));
      StatementScope scope(stmt);
      int rc;
      while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        CronRecord cron;
        cron.owner = ColumnText(stmt, 0);
        cron.created_at = sqlite3_column_int64(stmt, 1);
        cron.last_handled = sqlite3_column_int64(stmt, 2);
        cron.team = ColumnText(stmt, 4);
        rows.emplace_back(std::move(cron), ColumnText(stmt, 3));
      }
      if (rc != SQLITE_DONE) return SqliteError(lease->db(), rc, "list cron jobs");
    }
    std::vector<CronRecord> out;
    for (auto& [cron, text] : rows) {
      DROVER_ASSIGN_OR_RETURN(cron.spec, DecodeCronSpec("sqlite", text));
      out.push_back(std::move(cron));
    }
    return out;
  }

  Status PutToken(const TokenRecord& token) override {
    std::lock_guard lock(writer_mutex_);
    return sqlite::PutToken(*writer_, token);
  }

  Result<std::vector<TokenRecord>> ListTokens() const override {
    auto lease = BorrowReader();
    return sqlite::ListTokens(*lease);
  }

  Status AppendAudit(const std::vector<AuditRecord>& records) override {
    std::lock_guard lock(writer_mutex_);
    return sqlite::AppendAudit(*writer_, records);
  }

  Result<std::vector<AuditRecord>> ListAudit(const AuditFilter& filter) const override {
    auto lease = BorrowReader();
    return sqlite::ListAudit(*lease, filter);
  }

  Status PutFairShare(const model::FairShareHistory& history) override {
    std::lock_guard lock(writer_mutex_);
    return sqlite::PutFairShare(*writer_, history);
  }

  Result<model::FairShareHistory> GetFairShare() const override {
    auto lease = BorrowReader();
    return sqlite::GetFairShare(*lease);
  }

  Status PutUsage(const model::AttemptUsage& usage,
                  const std::vector<model::UsageBucket>& buckets) override {
    std::lock_guard lock(writer_mutex_);
    return sqlite::PutUsage(*writer_, usage, buckets);
  }

  Result<std::vector<model::AttemptUsage>> ListUsage(JobId job) const override {
    auto lease = BorrowReader();
    return sqlite::ListUsage(*lease, job);
  }

  Result<std::vector<model::UsageBucket>> GetUsageSeries(JobId job, int attempt) const override {
    auto lease = BorrowReader();
    return sqlite::GetUsageSeries(*lease, job, attempt);
  }

 private:
  // A reader connection from the pool, or the writer (under its mutex) when there is no pool.
  class ReaderLease {
   public:
    ReaderLease(ConnectionPool* pool, Connection* writer, std::mutex* writer_mutex) : pool_(pool) {
      if (pool_ != nullptr) {
        connection_ = pool_->Acquire();
      } else {
        writer_lock_ = std::unique_lock(*writer_mutex);
        connection_ = writer;
      }
    }
    ~ReaderLease() {
      if (pool_ != nullptr) pool_->Release(connection_);
    }
    ReaderLease(const ReaderLease&) = delete;
    ReaderLease& operator=(const ReaderLease&) = delete;
    Connection* operator->() const { return connection_; }
    Connection& operator*() const { return *connection_; }

   private:
    ConnectionPool* pool_;
    std::unique_lock<std::mutex> writer_lock_;
    Connection* connection_ = nullptr;
  };

  ReaderLease BorrowReader() const {
    return ReaderLease(readers_.get(), writer_.get(), &writer_mutex_);
  }

  // Runs a cached statement that returns no rows on the writer.
  Status Step(Connection& db, const std::string& sql, std::string_view what) {
    DROVER_ASSIGN_OR_RETURN(auto stmt, db.Prepare(sql));
    StatementScope scope(stmt);
    const int rc = sqlite3_step(stmt);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) return SqliteError(db.db(), rc, what);
    return OkStatus();
  }

  void RollbackIfActive() {
    if (!sqlite3_get_autocommit(writer_->db())) {
      sqlite3_exec(writer_->db(), "ROLLBACK", nullptr, nullptr, nullptr);
    }
  }

  // Validates and writes the batch; the caller has begun the transaction and commits or rolls
  // back.
  Status ApplyInTransaction(const Batch& batch, const std::vector<std::string>& snapshots,
                            const std::vector<std::string>& decisions) {
    Connection& db = *writer_;
    // Every transition and decision must name a job in the batch or already stored.
    std::unordered_set<std::int64_t> known;
    for (const model::Job& job : batch.jobs) known.insert(job.id.value());
    auto check = [&](std::string_view list, std::size_t i, std::int64_t id) -> Status {
      if (known.contains(id)) return OkStatus();
      DROVER_ASSIGN_OR_RETURN(auto exists, db.Prepare("SELECT 1 FROM jobs WHERE id = ?1"));
      StatementScope scope(exists);
      sqlite3_bind_int64(exists, 1, id);
      const int rc = sqlite3_step(exists);
      if (rc == SQLITE_DONE) return UnknownJobError(list, i, id);
      if (rc != SQLITE_ROW) return SqliteError(db.db(), rc, "check job");
      known.insert(id);
      return OkStatus();
    };
    for (std::size_t i = 0; i < batch.transitions.size(); ++i) {
      DROVER_RETURN_IF_ERROR(check("transitions", i, batch.transitions[i].job.value()));
    }
    for (std::size_t i = 0; i < batch.decisions.size(); ++i) {
      DROVER_RETURN_IF_ERROR(check("decisions", i, batch.decisions[i].job.value()));
    }

    if (!batch.jobs.empty()) {
      DROVER_ASSIGN_OR_RETURN(
          auto upsert,
          db.Prepare(
              "INSERT INTO jobs (id, name, owner, team, queue, state, submission_key, created_at, "
              "finished_at, snapshot) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) "
              "ON CONFLICT (id) DO UPDATE SET name = excluded.name, owner = excluded.owner, "
              "team = excluded.team, queue = excluded.queue, state = excluded.state, "
              "submission_key = excluded.submission_key, created_at = excluded.created_at, "
              "finished_at = excluded.finished_at, snapshot = excluded.snapshot"));
      for (std::size_t i = 0; i < batch.jobs.size(); ++i) {
        const model::Job& job = batch.jobs[i];
        StatementScope scope(upsert);
        sqlite3_bind_int64(upsert, 1, job.id.value());
        BindText(upsert, 2, job.spec.name);
        BindText(upsert, 3, job.spec.owner);
        BindText(upsert, 4, job.spec.team);
        BindText(upsert, 5, job.spec.queue);
        BindText(upsert, 6, model::JobStateName(job.state));
        if (job.submission_key.empty()) {
          sqlite3_bind_null(upsert, 7);
        } else {
          BindText(upsert, 7, job.submission_key);
        }
        sqlite3_bind_int64(upsert, 8, job.created_at);
        sqlite3_bind_int64(upsert, 9, job.finished_at);
        BindText(upsert, 10, snapshots[i]);
        const int rc = sqlite3_step(upsert);
        if (rc != SQLITE_DONE) {
          return SqliteError(db.db(), rc, fmt::format("store job {}", job.id.value()));
        }
      }
    }

    if (!batch.nodes.empty()) {
      DROVER_ASSIGN_OR_RETURN(
          auto upsert, db.Prepare("INSERT INTO node_admin (node, admin) VALUES (?1, ?2) "
                                  "ON CONFLICT (node) DO UPDATE SET admin = excluded.admin"));
      for (const NodeAdminRecord& record : batch.nodes) {
        // Bound without a copy: the text must outlive the step.
        const std::string admin = EncodeNodeAdmin(record.admin);
        StatementScope scope(upsert);
        BindText(upsert, 1, record.node.value());
        BindText(upsert, 2, admin);
        const int rc = sqlite3_step(upsert);
        if (rc != SQLITE_DONE) {
          return SqliteError(db.db(), rc, fmt::format("store node {}", record.node.value()));
        }
      }
    }

    if (!batch.transitions.empty()) {
      DROVER_ASSIGN_OR_RETURN(
          auto insert,
          db.Prepare("INSERT INTO transitions (job_id, attempt, from_state, to_state, at, cause, "
                     "actor) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
      for (const model::Transition& transition : batch.transitions) {
        StatementScope scope(insert);
        sqlite3_bind_int64(insert, 1, transition.job.value());
        sqlite3_bind_int(insert, 2, transition.attempt);
        BindText(insert, 3, model::JobStateName(transition.from));
        BindText(insert, 4, model::JobStateName(transition.to));
        sqlite3_bind_int64(insert, 5, transition.at);
        BindText(insert, 6, transition.cause);
        BindText(insert, 7, transition.actor);
        const int rc = sqlite3_step(insert);
        if (rc != SQLITE_DONE) return SqliteError(db.db(), rc, "store transition");
      }
    }

    if (!batch.decisions.empty()) {
      DROVER_ASSIGN_OR_RETURN(auto insert, db.Prepare("INSERT INTO decisions (job_id, attempt, at, "
                                                      "kind, json) VALUES (?1, ?2, ?3, ?4, ?5)"));
      DROVER_ASSIGN_OR_RETURN(
          auto victim,
          db.Prepare("INSERT OR IGNORE INTO decision_victims (job_id, seq) VALUES (?1, ?2)"));
      for (std::size_t i = 0; i < batch.decisions.size(); ++i) {
        const model::Decision& decision = batch.decisions[i];
        {
          StatementScope scope(insert);
          sqlite3_bind_int64(insert, 1, decision.job.value());
          sqlite3_bind_int(insert, 2, decision.attempt);
          sqlite3_bind_int64(insert, 3, decision.at);
          BindText(insert, 4, model::DecisionKindName(decision.kind));
          BindText(insert, 5, decisions[i]);
          const int rc = sqlite3_step(insert);
          if (rc != SQLITE_DONE) return SqliteError(db.db(), rc, "store decision");
        }
        const std::int64_t seq = sqlite3_last_insert_rowid(db.db());
        for (std::int64_t other : OtherJobsOf(decision)) {
          StatementScope scope(victim);
          sqlite3_bind_int64(victim, 1, other);
          sqlite3_bind_int64(victim, 2, seq);
          const int rc = sqlite3_step(victim);
          if (rc != SQLITE_DONE) return SqliteError(db.db(), rc, "store decision victim");
        }
      }
    }
    return OkStatus();
  }

  std::unique_ptr<Connection> writer_;
  mutable std::mutex writer_mutex_;
  std::unique_ptr<ConnectionPool> readers_;     // null: reads use the writer
  std::unique_ptr<Checkpointer> checkpointer_;  // null for in-memory databases
};

Result<std::unique_ptr<Store>> Open(const std::string& path, const SqliteStoreOptions& options) {
  if (options.readers < 1) {
    return InvalidArgument(
        fmt::format("sqlite options: readers must be at least 1, got {}", options.readers));
  }
  if (options.checkpoint_pages < 1) {
    return InvalidArgument(fmt::format(
        "sqlite options: checkpoint_pages must be at least 1, got {}", options.checkpoint_pages));
  }
  if (options.busy_timeout_ms < 0) {
    return InvalidArgument(fmt::format("sqlite options: busy_timeout_ms must be 0 or more, got {}",
                                       options.busy_timeout_ms));
  }
  DROVER_ASSIGN_OR_RETURN(auto writer,
                          Connection::Open(path, /*read_only=*/false, options.busy_timeout_ms));
  Connection& db = *writer;

  // journal_mode=WAL is the first statement that reads the file, so a file that is not a
  // database fails here (SQLITE_NOTADB -> kFailedPrecondition).
  auto mode = db.QueryText("PRAGMA journal_mode = WAL");
  if (!mode) {
    Error error = mode.error();
    error.message = fmt::format("{} (is {} a Drover database?)", error.message, path);
    return tl::unexpected(error);
  }
  const bool in_memory = path.empty() || path == ":memory:" || *mode == "memory";
  if (!in_memory && *mode != "wal") {
    return FailedPrecondition(
        fmt::format("{}: could not enable WAL mode (journal_mode is {})", path, *mode));
  }
  DROVER_RETURN_IF_ERROR(db.Exec("PRAGMA synchronous = NORMAL", "set synchronous"));
  DROVER_RETURN_IF_ERROR(Migrate(db, path));

  std::unique_ptr<ConnectionPool> pool;
  std::unique_ptr<Checkpointer> checkpointer;
  if (!in_memory) {
    std::vector<std::unique_ptr<Connection>> readers;
    for (int i = 0; i < options.readers; ++i) {
      DROVER_ASSIGN_OR_RETURN(auto reader,
                              Connection::Open(path, /*read_only=*/true, options.busy_timeout_ms));
      readers.push_back(std::move(reader));
    }
    pool = std::make_unique<ConnectionPool>(std::move(readers));
    DROVER_ASSIGN_OR_RETURN(auto connection,
                            Connection::Open(path, /*read_only=*/false, options.busy_timeout_ms));
    checkpointer = std::make_unique<Checkpointer>(std::move(connection), options.checkpoint_pages);
  }
  return std::make_unique<SqliteStore>(std::move(writer), std::move(pool), std::move(checkpointer));
}

}  // namespace

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path,
                                               const SqliteStoreOptions& options) {
  try {
    return Open(path, options);
  } catch (const std::exception& e) {
    return Internal(fmt::format("sqlite store: open {}: {}", path, e.what()));
  }
}

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path) {
  return OpenSqliteStore(path, SqliteStoreOptions{});
}

}  // namespace drover::store
