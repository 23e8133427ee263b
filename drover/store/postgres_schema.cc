// The PostgreSQL store's schema (its migrations) and the statements prepared on each of its
// connections (postgres_schema.h).

#include "drover/store/postgres_schema.h"

#include <string>
#include <string_view>

#include "drover/store/postgres_store.h"
#include "drover/store/store_util.h"

namespace drover::store::postgres {
namespace {

// Migration i takes the schema from version i to i + 1. Append only: never edit a migration
// that has shipped; add one and bump kPostgresSchemaVersion. "{unfinished}" stands for
// SqlUnfinishedStateCondition().
constexpr std::string_view kMigrations[] = {
    // 0 -> 1: the logical schema of SQLite schema 9 (sqlite_store.cc has each table's story).
    R"sql(
      CREATE TABLE jobs (
        id             BIGINT PRIMARY KEY,
        name           TEXT NOT NULL,
        owner          TEXT NOT NULL,
        team           TEXT NOT NULL,
        queue          TEXT NOT NULL,
        state          TEXT NOT NULL,
        submission_key TEXT,              -- NULL when the submission had no Idempotency-Key
        created_at     BIGINT NOT NULL,   -- ms since the epoch
        finished_at    BIGINT NOT NULL,
        snapshot       TEXT NOT NULL      -- codec::ToJson(model::Job)
      );
      CREATE INDEX jobs_state ON jobs(state);
      CREATE INDEX jobs_submission_key ON jobs(submission_key);
      CREATE INDEX jobs_active ON jobs(id) WHERE {unfinished};
      CREATE TABLE transitions (
        seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        job_id     BIGINT NOT NULL,
        attempt    INTEGER NOT NULL,
        from_state TEXT NOT NULL,
        to_state   TEXT NOT NULL,
        at         BIGINT NOT NULL,
        cause      TEXT NOT NULL,
        actor      TEXT NOT NULL
      );
      CREATE INDEX transitions_job ON transitions(job_id, seq);
      CREATE TABLE decisions (
        seq     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        job_id  BIGINT NOT NULL,
        attempt INTEGER NOT NULL,
        at      BIGINT NOT NULL,
        kind    TEXT NOT NULL,
        json    TEXT NOT NULL      -- codec::ToJson(model::Decision)
      );
      CREATE INDEX decisions_job ON decisions(job_id, seq);
      CREATE TABLE decision_victims (
        job_id BIGINT NOT NULL,
        seq    BIGINT NOT NULL,    -- decisions.seq
        PRIMARY KEY (job_id, seq)
      );
      CREATE TABLE crons (
        name         TEXT COLLATE "C" PRIMARY KEY,
        owner        TEXT NOT NULL,
        team         TEXT NOT NULL,
        created_at   BIGINT NOT NULL,
        last_handled BIGINT NOT NULL,
        spec         TEXT NOT NULL      -- the CronSpec as JSON
      );
      CREATE TABLE agents (
        node            TEXT COLLATE "C" PRIMARY KEY,
        credential_hash TEXT NOT NULL,
        issued_at       BIGINT NOT NULL,
        lost_at         BIGINT,           -- NULL while the node is not lost
        lost_reason     TEXT NOT NULL,
        orphans         TEXT NOT NULL     -- [[job, attempt, rank], ...]
      );
      CREATE TABLE tokens (
        id         TEXT COLLATE "C" PRIMARY KEY,
        hash       TEXT NOT NULL,
        user_name  TEXT NOT NULL,
        team       TEXT NOT NULL,
        role       TEXT NOT NULL,
        queues     TEXT NOT NULL,     -- JSON list of queue names
        created_by TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,   -- 0: never
        revoked_at BIGINT NOT NULL    -- 0: not revoked
      );
      CREATE TABLE audit (
        seq       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        at        BIGINT NOT NULL,
        user_name TEXT NOT NULL,
        team      TEXT NOT NULL,
        caller    TEXT NOT NULL,
        action    TEXT NOT NULL,
        target    TEXT NOT NULL,
        job_id    BIGINT,             -- NULL when no job was acted on
        status    INTEGER NOT NULL,
        code      TEXT NOT NULL,
        address   TEXT NOT NULL
      );
      CREATE INDEX audit_at ON audit(at);
      CREATE INDEX audit_user ON audit(user_name, seq);
      CREATE INDEX audit_team ON audit(team, seq);
      CREATE INDEX audit_job ON audit(job_id, seq);
      CREATE TABLE fair_share (
        queue     TEXT COLLATE "C" NOT NULL,
        user_name TEXT COLLATE "C" NOT NULL,
        resource  TEXT COLLATE "C" NOT NULL,
        usage     DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (queue, user_name, resource)
      );
      CREATE TABLE fair_share_clock (
        id          INTEGER PRIMARY KEY CHECK (id = 1),
        advanced_at BIGINT NOT NULL
      );
      CREATE TABLE node_admin (
        node  TEXT COLLATE "C" PRIMARY KEY,
        admin TEXT NOT NULL  -- codec::ToJson(model::NodeAdmin)
      );
    )sql",
    // 1 -> 2 (SQLite 9 -> 10): attempts' usage (store.h PutUsage; docs/observability.md,
    // "Sampling"): the summary record and the 10 s buckets of each attempt.
    R"sql(
      CREATE TABLE attempt_usage (
        job_id  BIGINT NOT NULL,
        attempt INTEGER NOT NULL,
        usage   TEXT NOT NULL,  -- codec::ToJson(model::AttemptUsage)
        PRIMARY KEY (job_id, attempt)
      );
      CREATE TABLE usage_buckets (
        job_id   BIGINT NOT NULL,
        attempt  INTEGER NOT NULL,
        start_at BIGINT NOT NULL,  -- ms since the epoch, a multiple of 10 s
        bucket   TEXT NOT NULL,    -- codec::ToJson(model::UsageBucket)
        PRIMARY KEY (job_id, attempt, start_at)
      );
    )sql",
    // 2 -> 3: the leader lease (postgres_lease.h; docs/architecture.md "Leader lease"): one row,
    // taken and renewed by the servers sharing the database; every write of the leader checks
    // its epoch against it (fencing).
    R"sql(
      CREATE TABLE leader (
        id         INTEGER PRIMARY KEY CHECK (id = 1),
        holder     TEXT NOT NULL,         -- the holding server's instance id
        url        TEXT NOT NULL,         -- its --advertise-url
        epoch      BIGINT NOT NULL,       -- +1 at each takeover
        expires_at TIMESTAMPTZ NOT NULL   -- the database's clock
      );
    )sql",
    // 3 -> 4 (SQLite 10 -> 11): services (store.h ServiceRecord; docs/inference.md).
    R"sql(
      CREATE TABLE services (
        name   TEXT COLLATE "C" PRIMARY KEY,
        record TEXT NOT NULL  -- store_codec.h EncodeService
      );
    )sql",
};
static_assert(std::size(kMigrations) == kPostgresSchemaVersion);

}  // namespace

std::string MigrationSql(std::int64_t from) {
  constexpr std::string_view kPlaceholder = "{unfinished}";
  std::string sql(kMigrations[from]);
  if (auto at = sql.find(kPlaceholder); at != std::string::npos) {
    sql.replace(at, kPlaceholder.size(), SqlUnfinishedStateCondition());
  }
  return sql;
}

const std::vector<Statement>& Statements() {
  static const auto* const kStatements = new std::vector<Statement>{
      {"known_jobs", "SELECT id FROM jobs WHERE id = ANY($1::bigint[])"},
      {"upsert_job",
       "INSERT INTO jobs (id, name, owner, team, queue, state, submission_key, created_at, "
       "finished_at, snapshot) VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7, ''), $8, $9, $10) "
       "ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, owner = EXCLUDED.owner, "
       "team = EXCLUDED.team, queue = EXCLUDED.queue, state = EXCLUDED.state, "
       "submission_key = EXCLUDED.submission_key, created_at = EXCLUDED.created_at, "
       "finished_at = EXCLUDED.finished_at, snapshot = EXCLUDED.snapshot"},
      {"upsert_node_admin",
       "INSERT INTO node_admin (node, admin) VALUES ($1, $2) "
       "ON CONFLICT (node) DO UPDATE SET admin = EXCLUDED.admin"},
      {"insert_transition",
       "INSERT INTO transitions (job_id, attempt, from_state, to_state, at, cause, actor) "
       "VALUES ($1, $2, $3, $4, $5, $6, $7)"},
      {"insert_decision",
       "INSERT INTO decisions (job_id, attempt, at, kind, json) VALUES ($1, $2, $3, $4, $5) "
       "RETURNING seq"},
      {"insert_victim",
       "INSERT INTO decision_victims (job_id, seq) VALUES ($1, $2) ON CONFLICT DO NOTHING"},
      // The job filter: '' (false for $6) leaves a criterion out. PostgreSQL plans each call
      // with its values (custom plans), so the active filter still uses jobs_active.
      {"list_jobs",
       "SELECT id, snapshot FROM jobs WHERE ($1 = '' OR state = $1) AND ($2 = '' OR owner = $2) "
       "AND ($3 = '' OR team = $3) AND ($4 = '' OR queue = $4) AND ($5 = '' OR name = $5) AND "
       "(NOT $6::boolean OR " +
           SqlUnfinishedStateCondition() + ") ORDER BY id"},
      {"list_jobs_newest",
       "SELECT id, snapshot FROM jobs WHERE ($1 = '' OR state = $1) AND ($2 = '' OR owner = $2) "
       "AND ($3 = '' OR team = $3) AND ($4 = '' OR queue = $4) AND ($5 = '' OR name = $5) AND "
       "(NOT $6::boolean OR " +
           SqlUnfinishedStateCondition() + ") ORDER BY id DESC LIMIT $7"},
      {"get_job", "SELECT snapshot FROM jobs WHERE id = $1"},
      {"list_transitions",
       "SELECT attempt, from_state, to_state, at, cause, actor FROM transitions WHERE job_id = $1 "
       "ORDER BY seq"},
      {"list_decisions",
       "SELECT json FROM decisions WHERE job_id = $1 OR seq IN "
       "(SELECT seq FROM decision_victims WHERE job_id = $1) ORDER BY seq"},
      {"find_submission", "SELECT id FROM jobs WHERE submission_key = $1 ORDER BY id"},
      {"max_job_id", "SELECT COALESCE(MAX(id), 0) FROM jobs"},
      {"put_cron",
       "INSERT INTO crons (name, owner, team, created_at, last_handled, spec) VALUES ($1, $2, $3, "
       "$4, $5, $6) ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, team = "
       "EXCLUDED.team, created_at = EXCLUDED.created_at, last_handled = EXCLUDED.last_handled, "
       "spec = EXCLUDED.spec"},
      {"delete_cron", "DELETE FROM crons WHERE name = $1"},
      {"put_service",
       "INSERT INTO services (name, record) VALUES ($1, $2) "
       "ON CONFLICT (name) DO UPDATE SET record = EXCLUDED.record"},
      {"delete_service", "DELETE FROM services WHERE name = $1"},
      {"list_services", "SELECT record FROM services ORDER BY name"},
      {"list_crons", "SELECT owner, team, created_at, last_handled, spec FROM crons ORDER BY name"},
      {"put_agent",
       "INSERT INTO agents (node, credential_hash, issued_at, lost_at, lost_reason, orphans) "
       "VALUES ($1, $2, $3, CASE WHEN $4::boolean THEN $5::bigint END, $6, $7) "
       "ON CONFLICT (node) DO UPDATE SET credential_hash = EXCLUDED.credential_hash, "
       "issued_at = EXCLUDED.issued_at, lost_at = EXCLUDED.lost_at, "
       "lost_reason = EXCLUDED.lost_reason, orphans = EXCLUDED.orphans"},
      {"list_agents",
       "SELECT node, credential_hash, issued_at, lost_at, lost_reason, orphans FROM agents "
       "ORDER BY node"},
      {"list_node_admin", "SELECT node, admin FROM node_admin ORDER BY node"},
      {"put_usage",
       "INSERT INTO attempt_usage (job_id, attempt, usage) VALUES ($1, $2, $3) "
       "ON CONFLICT (job_id, attempt) DO UPDATE SET usage = EXCLUDED.usage"},
      {"put_usage_bucket",
       "INSERT INTO usage_buckets (job_id, attempt, start_at, bucket) VALUES ($1, $2, $3, $4) "
       "ON CONFLICT (job_id, attempt, start_at) DO UPDATE SET bucket = EXCLUDED.bucket"},
      {"list_usage", "SELECT usage FROM attempt_usage WHERE job_id = $1 ORDER BY attempt"},
      {"usage_series",
       "SELECT bucket FROM usage_buckets WHERE job_id = $1 AND attempt = $2 ORDER BY start_at"},
      {"put_token",
       "INSERT INTO tokens (id, hash, user_name, team, role, queues, created_by, created_at, "
       "expires_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) "
       "ON CONFLICT (id) DO UPDATE SET hash = EXCLUDED.hash, user_name = EXCLUDED.user_name, "
       "team = EXCLUDED.team, role = EXCLUDED.role, queues = EXCLUDED.queues, "
       "created_by = EXCLUDED.created_by, created_at = EXCLUDED.created_at, "
       "expires_at = EXCLUDED.expires_at, revoked_at = EXCLUDED.revoked_at"},
      {"list_tokens",
       "SELECT id, hash, user_name, team, role, queues, created_by, created_at, expires_at, "
       "revoked_at FROM tokens ORDER BY id"},
      {"insert_audit",
       "INSERT INTO audit (at, user_name, team, caller, action, target, job_id, status, code, "
       "address) VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $7::boolean THEN $8::bigint END, $9, "
       "$10, $11)"},
      // Newest first so that LIMIT keeps the newest (0: no limit); reversed into seq order.
      {"list_audit",
       "SELECT seq, at, user_name, team, caller, action, target, job_id, status, code, address "
       "FROM audit WHERE at >= $1 AND ($2 = '' OR user_name = $2) AND ($3 = '' OR team = $3) "
       "AND (NOT $4::boolean OR job_id = $5) ORDER BY seq DESC LIMIT NULLIF($6::bigint, 0)"},
      {"clear_fair_share", "DELETE FROM fair_share"},
      {"clear_fair_share_clock", "DELETE FROM fair_share_clock"},
      {"put_fair_share_clock", "INSERT INTO fair_share_clock (id, advanced_at) VALUES (1, $1)"},
      {"put_fair_share",
       "INSERT INTO fair_share (queue, user_name, resource, usage) VALUES ($1, $2, $3, "
       "$4::double precision)"},
      {"get_fair_share_clock", "SELECT advanced_at FROM fair_share_clock WHERE id = 1"},
      {"list_fair_share",
       "SELECT queue, user_name, resource, usage FROM fair_share ORDER BY queue, user_name, "
       "resource"},
  };
  return *kStatements;
}

}  // namespace drover::store::postgres
