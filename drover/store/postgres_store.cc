// OpenPostgresStore(): the Store contract on a PostgreSQL database (see postgres_store.h for the
// layout, the one write path, durability and thread-safety): the schema and its migrations, the
// prepared statements, then the store. The connection plumbing is in postgres_connection.h.

#include "drover/store/postgres_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "drover/codec/json.h"
#include "drover/common/thread_annotations.h"
#include "drover/store/connection_pool.h"
#include "drover/store/postgres_connection.h"
#include "drover/store/postgres_schema.h"
#include "drover/store/store_codec.h"
#include "drover/store/store_util.h"

namespace drover::store {
namespace {

using postgres::kApplication;
using postgres::kMigrationLock;
using postgres::MigrationSql;
using postgres::Session;
using postgres::Statement;
using postgres::Statements;
using postgres::Text;

// kInvalidArgument naming `field` if `value` holds a NUL byte, which PostgreSQL text cannot
// hold (libpq would silently cut the string there).
Status CheckText(std::string_view field, std::string_view value) {
  if (value.find('\0') == std::string_view::npos) return OkStatus();
  return InvalidArgument(
      fmt::format("{}: contains a NUL byte at offset {}, which the PostgreSQL store cannot hold",
                  field, value.find('\0')));
}

// Every text of `job` written to its own column, checked by CheckText ("batch.jobs[i].name").
Status CheckJobText(std::size_t i, const model::Job& job) {
  const std::pair<std::string_view, std::string_view> fields[] = {
      {"name", job.spec.name},
      {"owner", job.spec.owner},
      {"team", job.spec.team},
      {"queue", job.spec.queue},
      {"submission_key", job.submission_key}};
  for (const auto& [field, value] : fields) {
    DROVER_RETURN_IF_ERROR(CheckText(fmt::format("batch.jobs[{}].{}", i, field), value));
  }
  return OkStatus();
}

// A PostgreSQL array literal of ids: "{1,2,3}".
std::string IdArray(const std::vector<std::int64_t>& ids) {
  return fmt::format("{{{}}}", fmt::join(ids, ","));
}

// Brings the schema to kPostgresSchemaVersion in one transaction, under an advisory lock.
Status Migrate(Session& session, const std::string& redacted) {
  return session.Run("migrate", [&](pqxx::connection& db) -> Status {
    pqxx::work tx(db);
    tx.exec_params("SELECT pg_advisory_xact_lock($1)", kMigrationLock);
    tx.exec0(
        "CREATE TABLE IF NOT EXISTS drover_schema (id INTEGER PRIMARY KEY CHECK (id = 1), "
        "application TEXT NOT NULL, version BIGINT NOT NULL)");
    const pqxx::result row = tx.exec("SELECT application, version FROM drover_schema");
    std::int64_t version = 0;
    if (!row.empty()) {
      if (Text(row[0], 0) != kApplication) {
        return FailedPrecondition(
            fmt::format("{}: not a Drover database (application '{}')", redacted, Text(row[0], 0)));
      }
      version = row[0][1].as<std::int64_t>();
    }
    if (version > kPostgresSchemaVersion) {
      return FailedPrecondition(fmt::format(
          "{}: database schema version {} is newer than this build's {}; upgrade Drover", redacted,
          version, kPostgresSchemaVersion));
    }
    for (std::int64_t v = version; v < kPostgresSchemaVersion; ++v) tx.exec0(MigrationSql(v));
    if (version < kPostgresSchemaVersion) {
      tx.exec_params(
          "INSERT INTO drover_schema (id, application, version) VALUES (1, $1, $2) "
          "ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version",
          std::string(kApplication), kPostgresSchemaVersion);
    }
    tx.commit();
    return OkStatus();
  });
}

// The double as shortest text that reads back exactly.
std::string DoubleText(double value) { return fmt::format("{}", value); }

class PostgresStore final : public Store {
 public:
  PostgresStore(std::unique_ptr<Session> writer, std::unique_ptr<ConnectionPool<Session>> readers,
                const PostgresStoreOptions& options)
      : writer_(std::move(writer)),
        readers_(std::move(readers)),
        fence_(options.fence),
        write_retry_ms_(options.write_retry_ms) {}

  Status Apply(const Batch& batch) override {
    if (batch.empty()) return OkStatus();
    DROVER_RETURN_IF_ERROR(ValidateBatchShape(batch));
    for (std::size_t i = 0; i < batch.jobs.size(); ++i) {
      DROVER_RETURN_IF_ERROR(CheckJobText(i, batch.jobs[i]));
    }
    for (std::size_t i = 0; i < batch.transitions.size(); ++i) {
      DROVER_RETURN_IF_ERROR(
          CheckText(fmt::format("batch.transitions[{}].cause", i), batch.transitions[i].cause));
      DROVER_RETURN_IF_ERROR(
          CheckText(fmt::format("batch.transitions[{}].actor", i), batch.transitions[i].actor));
    }
    for (std::size_t i = 0; i < batch.nodes.size(); ++i) {
      DROVER_RETURN_IF_ERROR(
          CheckText(fmt::format("batch.nodes[{}].node", i), batch.nodes[i].node.value()));
    }
    // Encode before taking the writer: it is the expensive part and needs no database.
    std::vector<std::string> snapshots;
    snapshots.reserve(batch.jobs.size());
    for (const model::Job& job : batch.jobs) snapshots.push_back(EncodeJob(job));
    std::vector<std::string> decisions;
    decisions.reserve(batch.decisions.size());
    for (const model::Decision& decision : batch.decisions) {
      decisions.push_back(EncodeDecision(decision));
    }
    return Write("apply batch", [&](pqxx::work& tx) {
      return ApplyInTransaction(tx, batch, snapshots, decisions);
    });
  }

  Result<std::vector<model::Job>> ListJobs(const JobFilter& filter) const override {
    DROVER_RETURN_IF_ERROR(ValidateFilter(filter));
    const std::string state =
        filter.state ? std::string(model::JobStateName(*filter.state)) : std::string();
    std::vector<std::pair<std::int64_t, std::string>> rows;
    DROVER_RETURN_IF_ERROR(Read("list jobs", [&](pqxx::connection& db) -> Status {
      pqxx::nontransaction tx(db);
      const pqxx::result result =
          filter.limit > 0
              ? tx.exec_prepared("list_jobs_newest", state, filter.owner, filter.team, filter.queue,
                                 filter.name, filter.active_only, filter.limit)
              : tx.exec_prepared("list_jobs", state, filter.owner, filter.team, filter.queue,
                                 filter.name, filter.active_only);
      for (const pqxx::row& row : result) {
        rows.emplace_back(row[0].as<std::int64_t>(), Text(row, 1));
      }
      return OkStatus();
    }));
    std::vector<model::Job> jobs;
    jobs.reserve(rows.size());
    for (const auto& [id, snapshot] : rows) {
      DROVER_ASSIGN_OR_RETURN(auto job, DecodeJob("postgres", id, snapshot));
      jobs.push_back(std::move(job));
    }
    return jobs;
  }

  Result<model::Job> GetJob(JobId id) const override {
    std::optional<std::string> snapshot;
    DROVER_RETURN_IF_ERROR(Read("get job", [&](pqxx::connection& db) -> Status {
      pqxx::nontransaction tx(db);
      const pqxx::result result = tx.exec_prepared("get_job", id.value());
      if (!result.empty()) snapshot = Text(result[0], 0);
      return OkStatus();
    }));
    if (!snapshot) return NotFound(fmt::format("job {} not found", id.value()));
    return DecodeJob("postgres", id.value(), *snapshot);
  }

  Result<std::vector<model::Transition>> ListTransitions(JobId id) const override {
    std::vector<model::Transition> out;
    DROVER_RETURN_IF_ERROR(Read("list transitions", [&](pqxx::connection& db) -> Status {
      pqxx::nontransaction tx(db);
      for (const pqxx::row& row : tx.exec_prepared("list_transitions", id.value())) {
        model::Transition transition;
        transition.job = id;
        transition.attempt = row[0].as<int>();
        const std::string from = Text(row, 1);
        const std::string to = Text(row, 2);
        auto from_state = model::ParseJobState(from);
        auto to_state = model::ParseJobState(to);
        if (!from_state || !to_state) {
          return Internal(fmt::format(
              "postgres store: job {}: stored transition has unknown state \"{}\" -> \"{}\"",
              id.value(), from, to));
        }
        transition.from = *from_state;
        transition.to = *to_state;
        transition.at = row[3].as<std::int64_t>();
        transition.cause = Text(row, 4);
        transition.actor = Text(row, 5);
        out.push_back(std::move(transition));
      }
      return OkStatus();
    }));
    return out;
  }

  Result<std::vector<model::Decision>> ListDecisions(JobId id) const override {
    std::vector<std::string> rows;
    DROVER_RETURN_IF_ERROR(Read("list decisions", [&](pqxx::connection& db) -> Status {
      pqxx::nontransaction tx(db);
      for (const pqxx::row& row : tx.exec_prepared("list_decisions", id.value())) {
        rows.push_back(Text(row, 0));
      }
      return OkStatus();
    }));
    std::vector<model::Decision> out;
    out.reserve(rows.size());
    for (const std::string& text : rows) {
      DROVER_ASSIGN_OR_RETURN(auto decision, DecodeDecision("postgres", id.value(), text));
      out.push_back(std::move(decision));
    }
    return out;
  }

  Result<std::vector<JobId>> FindSubmission(const std::string& key) const override {
    std::vector<JobId> out;
    if (key.empty() || key.find('\0') != std::string::npos) return out;  // never stored
    DROVER_RETURN_IF_ERROR(Read("find submission", [&](pqxx::connection& db) -> Status {
      pqxx::nontransaction tx(db);
      for (const pqxx::row& row : tx.exec_prepared("find_submission", key)) {
        out.push_back(JobId(row[0].as<std::int64_t>()));
      }
      return OkStatus();
    }));
    return out;
  }

  Result<std::int64_t> MaxJobId() const override {
    std::int64_t max = 0;
    DROVER_RETURN_IF_ERROR(Read("max job id", [&](pqxx::connection& db) -> Status {
      pqxx::nontransaction tx(db);
      max = tx.exec_prepared1("max_job_id")[0].as<std::int64_t>();
      return OkStatus();
    }));
    return max;
  }

  Status PutCron(const CronRecord& cron) override {
    DROVER_RETURN_IF_ERROR(CheckText("cron.spec.name", cron.spec.name));
    DROVER_RETURN_IF_ERROR(CheckText("cron.owner", cron.owner));
    DROVER_RETURN_IF_ERROR(CheckText("cron.team", cron.team));
    const std::string spec = EncodeCronSpec(cron.spec);
    return Write(fmt::format("store cron job {}", cron.spec.name), [&](pqxx::work& tx) {
      tx.exec_prepared0("put_cron", cron.spec.name, cron.owner, cron.team, cron.created_at,
                        cron.last_handled, spec);
      return OkStatus();
    });
  }

  Status DeleteCron(const std::string& name) override {
    if (name.find('\0') != std::string::npos) {
      return NotFound(fmt::format("cron job {} not found", name));
    }
    return Write(fmt::format("delete cron job {}", name), [&](pqxx::work& tx) -> Status {
      if (tx.exec_prepared0("delete_cron", name).affected_rows() == 0) {
        return NotFound(fmt::format("cron job {} not found", name));
      }
      return OkStatus();
    });
  }

  Status PutService(const ServiceRecord& service) override {
    if (service.spec.name.empty()) return InvalidArgument("service.spec.name: must not be empty");
    DROVER_RETURN_IF_ERROR(CheckText("service.spec.name", service.spec.name));
    const std::string record = EncodeService(service);
    DROVER_RETURN_IF_ERROR(CheckText("service", record));
    return Write(fmt::format("store service {}", service.spec.name), [&](pqxx::work& tx) {
      tx.exec_prepared0("put_service", service.spec.name, record);
      return OkStatus();
    });
  }

  Status DeleteService(const std::string& name) override {
    if (name.find('\0') != std::string::npos) {
      return NotFound(fmt::format("service {} not found", name));
    }
    return Write(fmt::format("delete service {}", name), [&](pqxx::work& tx) -> Status {
      if (tx.exec_prepared0("delete_service", name).affected_rows() == 0) {
        return NotFound(fmt::format("service {} not found", name));
      }
      return OkStatus();
    });
  }

  Result<std::vector<ServiceRecord>> ListServices() const override {
    std::vector<std::string> rows;
    DROVER_RETURN_IF_ERROR(Read("list services", [&](pqxx::connection& db) -> Status {
      pqxx::nontransaction tx(db);
      for (const pqxx::row& row : tx.exec_prepared("list_services")) rows.push_back(Text(row, 0));
      return OkStatus();
    }));
    std::vector<ServiceRecord> out;
    for (const std::string& text : rows) {
      DROVER_ASSIGN_OR_RETURN(ServiceRecord service, DecodeService("postgres", text));
      out.push_back(std::move(service));
    }
    return out;
  }

  Result<std::vector<CronRecord>> ListCrons() const override {
    std::vector<std::pair<CronRecord, std::string>> rows;
    DROVER_RETURN_IF_ERROR(Read("list cron jobs", [&](pqxx::connection& db) -> Status {
      pqxx::nontransaction tx(db);
      for (const pqxx::row& row : tx.exec_prepared("list_crons")) {
        CronRecord cron;
        cron.owner = Text(row, 0);
        cron.team = Text(row, 1);
        cron.created_at = row[2].as<std::int64_t>();
        cron.last_handled = row[3].as<std::int64_t>();
        rows.emplace_back(std::move(cron), Text(row, 4));
      }
      return OkStatus();
    }));
    std::vector<CronRecord> out;
    for (auto& [cron, text] : rows) {
      DROVER_ASSIGN_OR_RETURN(cron.spec, DecodeCronSpec("postgres", text));
      out.push_back(std::move(cron));
    }
    return out;
  }

  Status PutAgent(const AgentRecord& agent) override {
    DROVER_RETURN_IF_ERROR(ValidateAgent(agent));
    DROVER_RETURN_IF_ERROR(CheckText("agent.node", agent.node.value()));
    DROVER_RETURN_IF_ERROR(CheckText("agent.credential_hash", agent.credential_hash));
    const std::string reason = agent.lost ? agent.lost->reason : "";
    DROVER_RETURN_IF_ERROR(CheckText("agent.lost.reason", reason));
    const std::string orphans = EncodeOrphans(agent);
    return Write(fmt::format("store agent {}", agent.node.value()), [&](pqxx::work& tx) {
      tx.exec_prepared0("put_agent", agent.node.value(), agent.credential_hash, agent.issued_at,
                        agent.lost.has_value(), agent.lost ? agent.lost->at : 0, reason, orphans);
      return OkStatus();
    });
  }

  Result<std::vector<AgentRecord>> ListAgents() const override {
    std::vector<AgentRecord> out;
    DROVER_RETURN_IF_ERROR(Read("list agents", [&](pqxx::connection& db) -> Status {
      pqxx::nontransaction tx(db);
      for (const pqxx::row& row : tx.exec_prepared("list_agents")) {
        AgentRecord agent;
        agent.node = NodeId(Text(row, 0));
        agent.credential_hash = Text(row, 1);
        agent.issued_at = row[2].as<std::int64_t>();
        if (!row[3].is_null()) {
          AgentRecord::Lost lost;
          lost.at = row[3].as<std::int64_t>();
          lost.reason = Text(row, 4);
          DROVER_ASSIGN_OR_RETURN(lost.orphans,
                                  DecodeOrphans("postgres", agent.node.value(), Text(row, 5)));
          agent.lost = std::move(lost);
        }
        out.push_back(std::move(agent));
      }
      return OkStatus();
    }));
    return out;
  }

  Result<std::vector<NodeAdminRecord>> ListNodeAdmin() const override {
    std::vector<NodeAdminRecord> out;
    DROVER_RETURN_IF_ERROR(Read("list node admin", [&](pqxx::connection& db) -> Status {
      pqxx::nontransaction tx(db);
      for (const pqxx::row& row : tx.exec_prepared("list_node_admin")) {
        NodeAdminRecord record;
        record.node = NodeId(Text(row, 0));
        DROVER_ASSIGN_OR_RETURN(record.admin,
                                DecodeNodeAdmin("postgres", record.node.value(), Text(row, 1)));
        out.push_back(std::move(record));
      }
      return OkStatus();
    }));
    return out;
  }

  Status PutToken(const TokenRecord& token) override {
    DROVER_RETURN_IF_ERROR(ValidateToken(token));
    const std::pair<std::string_view, std::string_view> fields[] = {
        {"token.id", token.id},
        {"token.hash", token.hash},
        {"token.identity.user", token.identity.user},
        {"token.identity.team", token.identity.team},
        {"token.created_by", token.created_by}};
    for (const auto& [field, value] : fields) DROVER_RETURN_IF_ERROR(CheckText(field, value));
    const std::string queues = EncodeQueues(token.identity.queues);
    return Write(fmt::format("store token {}", token.id), [&](pqxx::work& tx) {
      tx.exec_prepared0("put_token", token.id, token.hash, token.identity.user, token.identity.team,
                        std::string(model::kRoleNames.Name(token.identity.role)), queues,
                        token.created_by, token.created_at, token.expires_at, token.revoked_at);
      return OkStatus();
    });
  }

  Result<std::vector<TokenRecord>> ListTokens() const override {
    std::vector<TokenRecord> out;
    DROVER_RETURN_IF_ERROR(Read("list tokens", [&](pqxx::connection& db) -> Status {
      pqxx::nontransaction tx(db);
      for (const pqxx::row& row : tx.exec_prepared("list_tokens")) {
        TokenRecord token;
        token.id = Text(row, 0);
        token.hash = Text(row, 1);
        token.identity.user = Text(row, 2);
        token.identity.team = Text(row, 3);
        const std::string role = Text(row, 4);
        const auto parsed_role = model::kRoleNames.Parse(role);
        if (!parsed_role) {
          return Internal(
              fmt::format("postgres store: token {}: unknown role '{}'", token.id, role));
        }
        token.identity.role = *parsed_role;
        DROVER_ASSIGN_OR_RETURN(token.identity.queues,
                                DecodeQueues("postgres", token.id, Text(row, 5)));
        token.identity.token_id = token.id;
        token.created_by = Text(row, 6);
        token.created_at = row[7].as<std::int64_t>();
        token.expires_at = row[8].as<std::int64_t>();
        token.revoked_at = row[9].as<std::int64_t>();
        out.push_back(std::move(token));
      }
      return OkStatus();
    }));
    return out;
  }

  Status AppendAudit(const std::vector<AuditRecord>& records) override {
    if (records.empty()) return OkStatus();
    for (std::size_t i = 0; i < records.size(); ++i) {
      const AuditRecord& r = records[i];
      const std::pair<std::string_view, std::string_view> fields[] = {
          {"user", r.user},     {"team", r.team}, {"caller", r.caller},  {"action", r.action},
          {"target", r.target}, {"code", r.code}, {"address", r.address}};
      for (const auto& [field, value] : fields) {
        DROVER_RETURN_IF_ERROR(CheckText(fmt::format("records[{}].{}", i, field), value));
      }
    }
    return Write("append audit records", [&](pqxx::work& tx) {
      for (const AuditRecord& r : records) {
        tx.exec_prepared0("insert_audit", r.at, r.user, r.team, r.caller, r.action, r.target,
                          r.job.has_value(), r.job ? r.job->value() : 0, r.status, r.code,
                          r.address);
      }
      return OkStatus();
    });
  }

  Result<std::vector<AuditRecord>> ListAudit(const AuditFilter& filter) const override {
    DROVER_RETURN_IF_ERROR(ValidateFilter(filter));
    std::vector<AuditRecord> out;
    if (filter.user.find('\0') != std::string::npos ||
        filter.team.find('\0') != std::string::npos) {
      return out;  // never stored
    }
    DROVER_RETURN_IF_ERROR(Read("list audit records", [&](pqxx::connection& db) -> Status {
      pqxx::nontransaction tx(db);
      const pqxx::result result = tx.exec_prepared(
          "list_audit", filter.since, filter.user, filter.team, filter.job.has_value(),
          filter.job ? filter.job->value() : 0, static_cast<std::int64_t>(filter.limit));
      for (auto it = result.rbegin(); it != result.rend(); ++it) {
        const pqxx::row& row = *it;
        AuditRecord record;
        record.seq = row[0].as<std::int64_t>();
        record.at = row[1].as<std::int64_t>();
        record.user = Text(row, 2);
        record.team = Text(row, 3);
        record.caller = Text(row, 4);
        record.action = Text(row, 5);
        record.target = Text(row, 6);
        if (!row[7].is_null()) record.job = JobId(row[7].as<std::int64_t>());
        record.status = row[8].as<int>();
        record.code = Text(row, 9);
        record.address = Text(row, 10);
        out.push_back(std::move(record));
      }
      return OkStatus();
    }));
    return out;
  }

  Status PutFairShare(const model::FairShareHistory& history) override {
    DROVER_RETURN_IF_ERROR(ValidateFairShare(history));
    for (std::size_t i = 0; i < history.entries.size(); ++i) {
      const model::FairShareHistory::Entry& entry = history.entries[i];
      DROVER_RETURN_IF_ERROR(CheckText(fmt::format("entries[{}].queue", i), entry.queue));
      DROVER_RETURN_IF_ERROR(CheckText(fmt::format("entries[{}].user", i), entry.user));
      for (const auto& [resource, amount] : entry.usage) {
        DROVER_RETURN_IF_ERROR(CheckText(fmt::format("entries[{}].usage", i), resource));
      }
    }
    return Write("store fair share", [&](pqxx::work& tx) {
      tx.exec_prepared0("clear_fair_share");
      tx.exec_prepared0("clear_fair_share_clock");
      if (history.advanced_at) tx.exec_prepared0("put_fair_share_clock", *history.advanced_at);
      for (const model::FairShareHistory::Entry& entry : history.entries) {
        for (const auto& [resource, amount] : entry.usage) {
          tx.exec_prepared0("put_fair_share", entry.queue, entry.user, resource,
                            DoubleText(amount));
        }
      }
      return OkStatus();
    });
  }

  Result<model::FairShareHistory> GetFairShare() const override {
    model::FairShareHistory out;
    DROVER_RETURN_IF_ERROR(Read("read fair share", [&](pqxx::connection& db) -> Status {
      // Two statements: one REPEATABLE READ transaction makes them one snapshot.
      pqxx::transaction<pqxx::isolation_level::repeatable_read, pqxx::readwrite_policy::read_only>
          tx(db);
      const pqxx::result clock = tx.exec_prepared("get_fair_share_clock");
      if (!clock.empty()) out.advanced_at = clock[0][0].as<std::int64_t>();
      for (const pqxx::row& row : tx.exec_prepared("list_fair_share")) {
        std::string queue = Text(row, 0);
        std::string user = Text(row, 1);
        if (out.entries.empty() || out.entries.back().queue != queue ||
            out.entries.back().user != user) {
          out.entries.push_back({std::move(queue), std::move(user), {}});
        }
        out.entries.back().usage[Text(row, 2)] = row[3].as<double>();
      }
      tx.commit();
      return OkStatus();
    }));
    return out;
  }

  Status PutUsage(const model::AttemptUsage& usage,
                  const std::vector<model::UsageBucket>& buckets) override {
    DROVER_RETURN_IF_ERROR(ValidateUsage(usage, buckets));
    const std::string record = codec::DumpJson(codec::ToJson(usage));
    std::vector<std::string> texts;
    texts.reserve(buckets.size());
    for (const model::UsageBucket& bucket : buckets) {
      texts.push_back(codec::DumpJson(codec::ToJson(bucket)));
    }
    return Write(fmt::format("store usage of job {} attempt {}", usage.job.value(), usage.attempt),
                 [&](pqxx::work& tx) {
                   tx.exec_prepared0("put_usage", usage.job.value(), usage.attempt, record);
                   for (std::size_t i = 0; i < buckets.size(); ++i) {
                     tx.exec_prepared0("put_usage_bucket", usage.job.value(), usage.attempt,
                                       buckets[i].start, texts[i]);
                   }
                   return OkStatus();
                 });
  }

  Result<std::vector<model::AttemptUsage>> ListUsage(JobId job) const override {
    return ReadJsonColumn<model::AttemptUsage>(
        "list usage", "list_usage",
        [](const auto& json) { return codec::AttemptUsageFromJson(json); }, job.value());
  }

  Result<std::vector<model::UsageBucket>> GetUsageSeries(JobId job, int attempt) const override {
    return ReadJsonColumn<model::UsageBucket>(
        "read usage series", "usage_series",
        [](const auto& json) { return codec::UsageBucketFromJson(json); }, job.value(), attempt);
  }

 private:
  // The rows of prepared statement `statement` (with `params`), each column 0 a JSON document
  // decoded by `decode`; kInternal naming `what` for a document that does not decode.
  template <typename T, typename Decode, typename... Params>
  Result<std::vector<T>> ReadJsonColumn(std::string_view what, const char* statement, Decode decode,
                                        const Params&... params) const {
    std::vector<std::string> texts;
    DROVER_RETURN_IF_ERROR(Read(what, [&](pqxx::connection& db) -> Status {
      pqxx::nontransaction tx(db);
      for (const pqxx::row& row : tx.exec_prepared(statement, params...)) {
        texts.push_back(Text(row, 0));
      }
      return OkStatus();
    }));
    std::vector<T> out;
    out.reserve(texts.size());
    for (const std::string& text : texts) {
      auto json = codec::ParseJson(text);
      if (!json) return Internal(fmt::format("postgres store: {}: {}", what, json.error().message));
      auto value = decode(*json);
      if (!value) {
        return Internal(fmt::format("postgres store: {}: {}", what, value.error().message));
      }
      out.push_back(*std::move(value));
    }
    return out;
  }

  // THE write path: every write of the store runs `body(pqxx::work&)` (returning Status) here,
  // in one transaction on the writer connection, committed if body succeeds and rolled back
  // otherwise. The leader's epoch check (fencing, docs/operations.md) goes here, into the same
  // transaction, before `body`.
  template <typename Body>
  Status Write(std::string_view what, Body&& body) {
    const std::int64_t epoch = fence_ ? fence_->epoch() : WriteFence::kUnfenced;
    if (epoch == WriteFence::kNotLeader) {
      return FailedPrecondition(
          fmt::format("{}: this server is a standby, not the leader; it writes nothing", what));
    }
    bool fenced = false;
    bool committing = false;  // a failure from here on leaves the outcome unknown
    Status status;
    MutexLock lock(writer_mutex_);
    // A write that fails for want of the database before its COMMIT was sent committed nothing:
    // it is tried again on a new connection (the database restarting) for up to write_retry_ms.
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(write_retry_ms_);
    for (DurationMs pause = 50;; pause = std::min<DurationMs>(pause * 2, kMillisPerSecond)) {
      status = writer_->Run(what, [&](pqxx::connection& db) -> Status {
        pqxx::work tx(db);
        if (epoch != WriteFence::kUnfenced) {
          // FOR SHARE: a takeover's UPDATE of the row waits for this transaction, so that this
          // write commits before the takeover or sees the new epoch and writes nothing.
          const pqxx::result row = tx.exec("SELECT epoch FROM leader WHERE id = 1 FOR SHARE");
          const std::int64_t current = row.empty() ? 0 : row[0][0].as<std::int64_t>();
          if (current != epoch) {
            fenced = true;
            return MakeError(ErrorCode::kAborted,
                             fmt::format("{}: fenced: this server's leader epoch {} was superseded "
                                         "by epoch {}; it is no "
                                         "longer the leader and writes nothing",
                                         what, epoch, current));
          }
        }
        DROVER_RETURN_IF_ERROR(body(tx));
        committing = true;
        tx.commit();
        return OkStatus();
      });
      if (status || fenced || committing || status.error().code != ErrorCode::kUnavailable ||
          std::chrono::steady_clock::now() >= give_up) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(pause));
      if (fence_ && fence_->epoch() != epoch) {
        // The server stopped leading while the write waited (its lease lapsed: self-fencing):
        // the write is not tried again, even if the database came back and the lease is still
        // its.
        return FailedPrecondition(fmt::format(
            "{}: this server stopped leading while the database was unreachable; it writes "
            "nothing",
            what));
      }
    }
    if (fenced) fence_->Refused(status.error());
    return status;
  }

  // Runs `body(pqxx::connection&)` (returning Status) on a reader connection. A read that finds
  // no database is tried once more on a new connection at once: a pooled connection may have
  // broken while idle (PostgreSQL restarted since it was last used), which says nothing about
  // the database now, and a read changes nothing (each body runs its query whole before it
  // appends to its caller's output, so a body that failed for want of the database appended
  // nothing). A standby taking over after a restart of the database reads the whole store
  // (ControlPlane::Start), and a failed read there would stop it.
  template <typename Body>
  Status Read(std::string_view what, Body&& body) const {
    Session* session = readers_->Acquire();
    Status status = session->Run(what, body);
    if (!status && status.error().code == ErrorCode::kUnavailable) {
      status = session->Run(what, body);
    }
    readers_->Release(session);
    return status;
  }

  // The writes of Apply, inside Write's transaction.
  Status ApplyInTransaction(pqxx::work& tx, const Batch& batch,
                            const std::vector<std::string>& snapshots,
                            const std::vector<std::string>& decisions) {
    // Every transition and decision must name a job in the batch or already stored: one query
    // for the ids not in the batch, then the first offender in batch order.
    std::unordered_set<std::int64_t> known;
    for (const model::Job& job : batch.jobs) known.insert(job.id.value());
    std::vector<std::int64_t> others;
    for (const model::Transition& t : batch.transitions) {
      if (!known.contains(t.job.value())) others.push_back(t.job.value());
    }
    for (const model::Decision& d : batch.decisions) {
      if (!known.contains(d.job.value())) others.push_back(d.job.value());
    }
    if (!others.empty()) {
      for (const pqxx::row& row : tx.exec_prepared("known_jobs", IdArray(others))) {
        known.insert(row[0].as<std::int64_t>());
      }
      for (std::size_t i = 0; i < batch.transitions.size(); ++i) {
        const std::int64_t id = batch.transitions[i].job.value();
        if (!known.contains(id)) return UnknownJobError("transitions", i, id);
      }
      for (std::size_t i = 0; i < batch.decisions.size(); ++i) {
        const std::int64_t id = batch.decisions[i].job.value();
        if (!known.contains(id)) return UnknownJobError("decisions", i, id);
      }
    }
    for (std::size_t i = 0; i < batch.jobs.size(); ++i) {
      const model::Job& job = batch.jobs[i];
      tx.exec_prepared0("upsert_job", job.id.value(), job.spec.name, job.spec.owner, job.spec.team,
                        job.spec.queue, std::string(model::JobStateName(job.state)),
                        job.submission_key, job.created_at, job.finished_at, snapshots[i]);
    }
    for (const NodeAdminRecord& record : batch.nodes) {
      tx.exec_prepared0("upsert_node_admin", record.node.value(), EncodeNodeAdmin(record.admin));
    }
    for (const model::Transition& t : batch.transitions) {
      tx.exec_prepared0("insert_transition", t.job.value(), t.attempt,
                        std::string(model::JobStateName(t.from)),
                        std::string(model::JobStateName(t.to)), t.at, t.cause, t.actor);
    }
    for (std::size_t i = 0; i < batch.decisions.size(); ++i) {
      const model::Decision& decision = batch.decisions[i];
      const std::int64_t seq =
          tx.exec_prepared1("insert_decision", decision.job.value(), decision.attempt, decision.at,
                            std::string(model::DecisionKindName(decision.kind)), decisions[i])[0]
              .as<std::int64_t>();
      for (std::int64_t other : OtherJobsOf(decision)) {
        tx.exec_prepared0("insert_victim", other, seq);
      }
    }
    return OkStatus();
  }

  Mutex writer_mutex_;
  std::unique_ptr<Session> writer_ GUARDED_BY(writer_mutex_);
  std::unique_ptr<ConnectionPool<Session>> readers_;
  const std::shared_ptr<const WriteFence> fence_;  // null: writes are not fenced
  const DurationMs write_retry_ms_;
};

}  // namespace

bool IsPostgresUri(const std::string& store_flag) {
  return store_flag.starts_with("postgres://") || store_flag.starts_with("postgresql://");
}

Result<std::unique_ptr<Store>> OpenPostgresStore(const std::string& connection,
                                                 const PostgresStoreOptions& options) {
  if (options.readers < 1) {
    return InvalidArgument(
        fmt::format("postgres options: readers must be at least 1, got {}", options.readers));
  }
  const std::string redacted = RedactConnectionString(connection);
  auto writer = std::make_unique<Session>(connection, &Statements());
  // Connect first, for a clear message when the database cannot be reached.
  Status connected = writer->Run(fmt::format("connect to {}", redacted),
                                 [](pqxx::connection&) -> Status { return OkStatus(); });
  if (!connected) {
    // Any failure to connect (refused, unknown host, bad password) is the database's absence.
    return Unavailable(connected.error().message);
  }
  DROVER_RETURN_IF_ERROR(Migrate(*writer, redacted));
  std::vector<std::unique_ptr<Session>> readers;
  for (int i = 0; i < options.readers; ++i) {
    readers.push_back(std::make_unique<Session>(connection, &Statements()));
  }
  return std::make_unique<PostgresStore>(
      std::move(writer), std::make_unique<ConnectionPool<Session>>(std::move(readers)), options);
}

}  // namespace drover::store
