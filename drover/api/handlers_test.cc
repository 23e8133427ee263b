// The API's handlers through its route table, over a fake Service (no sockets): what each group
// of endpoints answers, how the Service's errors and bad requests map to statuses and error JSON,
// and the list of routes.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "drover/api/agent_handlers.h"
#include "drover/api/job_handlers.h"
#include "drover/api/openapi.h"
#include "drover/api/request.h"
#include "drover/api/routes.h"
#include "drover/api/service.h"
#include "drover/api/views.h"
#include "drover/api/workflow_handlers.h"

namespace drover::api {
namespace {

using nlohmann::json;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

model::Identity Member(std::string user, std::string team, model::Role role) {
  model::Identity identity;
  identity.user = std::move(user);
  identity.team = std::move(team);
  identity.role = role;
  return identity;
}

// A Service over plain members: jobs and pipeline runs to find, answers to give, and the
// arguments of the last calls. Simulated time: WaitForChange advances `now` by its timeout.
class FakeService final : public Service {
 public:
  TimeMs Now() const override { return now; }

  Result<model::Identity> Authenticate(std::string_view token) const override {
    auto it = identities.find(std::string(token));
    if (it == identities.end()) return Unauthenticated("unknown token");
    return it->second;
  }
  void Audit(store::AuditRecord record) override { audited.push_back(std::move(record)); }
  Result<CreatedToken> CreateToken(const model::Identity& identity, DurationMs expires_in_ms,
                                   const model::Identity& caller) override {
    created_identity = identity;
    created_expires_in_ms = expires_in_ms;
    CreatedToken created;
    created.record.id = "tok-000000000001";
    created.record.hash = std::string(64, 'f');
    created.record.identity = identity;
    created.record.created_by = model::Describe(caller);
    created.record.created_at = now;
    created.record.expires_at = expires_in_ms > 0 ? now + expires_in_ms : 0;
    created.token = "drv_secret";
    tokens.push_back(created.record);
    return created;
  }
  std::vector<store::TokenRecord> Tokens() const override { return tokens; }
  Result<store::TokenRecord> RevokeToken(const std::string& id) override {
    for (store::TokenRecord& token : tokens) {
      if (token.id != id) continue;
      token.revoked_at = now;
      return token;
    }
    return NotFound("token " + id + " not found");
  }
  Result<std::vector<store::AuditRecord>> ListAudit(
      const store::AuditFilter& filter) const override {
    listed_audit = filter;
    std::vector<store::AuditRecord> out;
    for (const store::AuditRecord& record : audit_log) {
      if (store::Matches(filter, record)) out.push_back(record);
    }
    return out;
  }

  Result<Submission> Submit(std::string_view text, const spec::ParseOptions& options,
                            const std::string& idempotency_key,
                            const model::Identity& caller) override {
    submitted_text = std::string(text);
    submitted_options = options;
    submitted_key = idempotency_key;
    submitted_owner = caller.user;
    return submission;
  }
  std::vector<model::Job> ListJobs(const store::JobFilter& filter) const override {
    listed_filter = filter;
    std::vector<model::Job> out;
    for (const auto& [id, job] : jobs) out.push_back(job);
    return out;
  }
  JobPage ListJobPage(const JobPageRequest& request) const override {
    listed_filter = request.filter;
    listed_page = request;
    return SelectJobPage(jobs, request, [this](JobId id) -> std::optional<control::QueuePosition> {
      auto it = positions.find(id);
      if (it == positions.end()) return std::nullopt;
      return it->second;
    });
  }
  Result<model::Job> GetJob(JobId id) const override { return Find(id); }
  Result<std::shared_ptr<StreamBody>> OpenEvents(const EventQuery&) override {
    return Unavailable("no events in this fake");
  }
  Result<std::vector<model::Transition>> Transitions(JobId id) const override {
    DROVER_RETURN_IF_ERROR(Find(id));
    return std::vector<model::Transition>{};
  }
  Result<control::Explanation> Explain(JobId id) const override {
    DROVER_RETURN_IF_ERROR(Find(id));
    control::Explanation explanation;
    explanation.placement = placement;
    return explanation;
  }
  Result<std::vector<model::Decision>> Decisions(JobId id) const override {
    DROVER_RETURN_IF_ERROR(Find(id));
    return std::vector<model::Decision>{};
  }
  Result<std::vector<model::AttemptUsage>> Usage(JobId id) const override {
    DROVER_RETURN_IF_ERROR(Find(id));
    std::vector<model::AttemptUsage> out;
    for (const model::AttemptUsage& attempt : usage) {
      if (attempt.job == id) out.push_back(attempt);
    }
    return out;
  }
  Result<std::vector<model::UsageBucket>> UsageSeries(JobId id, int attempt) const override {
    DROVER_RETURN_IF_ERROR(Find(id));
    return attempt == 1 ? series : std::vector<model::UsageBucket>{};
  }
  model::DiagnosisThresholds DiagnosisThresholds() const override { return diagnosis; }
  Status ReportUsage(const NodeId& node, model::UsageBatch batch) override {
    usage_node = node;
    usage_batches.push_back(std::move(batch));
    return OkStatus();
  }
  Status Cancel(JobId id, std::string_view by, const std::string& cause) override {
    DROVER_RETURN_IF_ERROR(Find(id));
    cancel_by = by;
    cancel_cause = cause;
    jobs[id].state = model::JobState::kCancelled;
    return OkStatus();
  }
  Result<model::Job> ApplyJobVerb(JobId id, const JobVerb& verb,
                                  const model::Identity& caller) override {
    DROVER_RETURN_IF_ERROR(Find(id));
    applied_verbs.push_back(verb);
    verb_actor = caller.user;
    return jobs[id];
  }
  Result<TimeMs> ReportCheckpoint(JobId id) override {
    DROVER_RETURN_IF_ERROR(Find(id));
    return now;
  }
  Result<model::Attempt> ReportProgress(JobId id, const model::ProgressReport& report) override {
    DROVER_RETURN_IF_ERROR(Find(id));
    DROVER_RETURN_IF_ERROR(model::CheckProgressReport(report));
    model::Attempt attempt;
    attempt.number = 2;
    if (report.useful_work_began) attempt.useful_work_at = now;
    attempt.progress = report.progress.value_or(-1);
    if (report.throughput) {
      attempt.throughput = *report.throughput;
      attempt.throughput_unit = report.unit;
    }
    return attempt;
  }
  Result<LogChunk> ReadLog(JobId id, int, int, const std::string& stream, std::int64_t,
                           std::int64_t) const override {
    DROVER_RETURN_IF_ERROR(Find(id));
    log_stream = stream;
    ++log_reads;
    return log;
  }
  std::uint64_t version() const override { return 0; }
  std::uint64_t WaitForChange(std::uint64_t seen, DurationMs timeout_ms) const override {
    now += timeout_ms;
    return seen;
  }
  std::vector<std::vector<model::Job>> PipelineRuns() const override { return {}; }
  Result<std::vector<model::Job>> PipelineRun(JobId run) const override {
    auto it = runs.find(run);
    if (it == runs.end()) return NotFound("pipeline run " + std::to_string(run.value()));
    return it->second;
  }
  Status CancelPipeline(JobId, std::string_view by, const std::string& cause) override {
    cancel_by = by;
    cancel_cause = cause;
    return OkStatus();
  }
  Result<CronStatus> PutCron(const model::CronSpec& spec, const model::Identity& caller) override {
    CronStatus status;
    status.record.spec = spec;
    status.record.owner = caller.user;
    status.record.team = caller.team;
    return status;
  }
  std::vector<CronStatus> Crons() const override { return {}; }
  Status DeleteCron(const std::string& name) override {
    return NotFound("cron job " + name + " does not exist");
  }
  Result<CronStatus> SuspendCron(const std::string& name, bool) override {
    return NotFound("cron job " + name + " does not exist");
  }
  Result<ServiceStatus> PutService(const model::ServiceSpec& spec,
                                   const model::Identity& caller) override {
    ServiceStatus status;
    status.record.spec = spec;
    status.record.owner = caller.user;
    status.record.team = caller.team;
    services[spec.name] = status;
    return status;
  }
  std::vector<ServiceStatus> Services() const override {
    std::vector<ServiceStatus> out;
    for (const auto& [name, status] : services) out.push_back(status);
    return out;
  }
  Status DeleteService(const std::string& name, const model::Identity&) override {
    if (services.erase(name) == 0) return NotFound("service " + name + " does not exist");
    return OkStatus();
  }
  Status ReportServiceLoad(const std::string& name, model::LoadSignal signal) override {
    auto it = services.find(name);
    if (it == services.end()) return NotFound("service " + name + " does not exist");
    signal.received_at = now;
    it->second.load = signal;
    return OkStatus();
  }
  Status PutSecret(const std::string& team, const std::string& name,
                   std::string_view value) override {
    secrets[{team, name}] = std::string(value);
    return OkStatus();
  }
  Result<std::vector<SecretInfo>> ListSecrets(const std::string& team) const override {
    std::vector<SecretInfo> out;
    for (const auto& [key, value] : secrets) {
      if (key.first == team) out.push_back(SecretInfo{key.second, now});
    }
    return out;
  }
  Status DeleteSecret(const std::string& team, const std::string& name) override {
    if (secrets.erase({team, name}) == 0)
      return NotFound("team " + team + " has no secret " + name);
    return OkStatus();
  }
  std::vector<control::QueueReport> Queues() const override { return {}; }
  std::string MetricsText() const override { return "# HELP drover_x X.\n"; }
  model::Policy Policy() const override { return policy; }
  PolicyStatus PolicyInfo() const override { return {}; }
  Status ReloadPolicy() override { return reload; }
  std::vector<NodeStatus> Nodes() const override { return nodes; }
  std::vector<model::GpuActivity> LatestGpuActivity() const override { return gpu_samples; }
  Result<NodeStatus> ChangeNode(const NodeAction& action, const model::Identity&) override {
    for (const NodeStatus& status : nodes) {
      if (status.node.name == action.node) return status;
    }
    return NotFound("node " + action.node.value() + " does not exist");
  }
  Result<std::string> RegisterRemoteNode(const model::Node& node, const Caller& caller) override {
    registered = node.name.value();
    registered_by = caller;
    return std::string(caller.agent ? "" : "issued-credential");
  }
  std::optional<NodeId> AgentOf(std::string_view credential) const override {
    if (credential == "cred-n1") return NodeId("n1");
    if (credential == "cred-n2") return NodeId("n2");
    return std::nullopt;
  }
  bool JoinTokenAccepted(std::string_view token) const override {
    return join_token.empty() || token == join_token;
  }
  DurationMs AgentTimeout() const override { return 4'000; }
  Result<AgentCommandBatch> TakeCommands(const NodeId& node, const AgentAck& ack,
                                         DurationMs wait_ms) override {
    commands_node = node.value();
    commands_ack = ack;
    commands_wait_ms = wait_ms;
    if (no_commands) return AgentCommandBatch{7, {}};
    return AgentCommandBatch{7, {json{{"seq", 1}, {"kind", "adopt"}, {"keys", json::array()}}}};
  }
  Status ReportEvents(const NodeId& node, std::vector<model::WorkerEvent> events) override {
    events_node = node.value();
    reported_events = static_cast<int>(events.size());
    return OkStatus();
  }
  Result<RemoteLogAck> AppendRemoteLog(const NodeId& node, const model::WorkerKey& key,
                                       const std::string& stream, std::int64_t offset,
                                       std::string_view data) override {
    shipped_node = node.value();
    shipped_key = key;
    shipped_stream = stream;
    return RemoteLogAck{offset + static_cast<std::int64_t>(data.size()), false};
  }

  Result<model::Job> Find(JobId id) const {
    auto it = jobs.find(id);
    if (it == jobs.end()) return NotFound("job " + std::to_string(id.value()) + " does not exist");
    return it->second;
  }

  mutable TimeMs now = 1'000'000;
  // Tokens: "admin" is an admin; "alice" a member of team-a; "viewer" a viewer.
  std::map<std::string, model::Identity> identities = {
      {"admin", model::AdminIdentity("root")},
      {"alice", Member("alice", "team-a", model::Role::kMember)},
      {"viewer", Member("vic", "team-a", model::Role::kViewer)},
      {"carol", Member("carol", "team-a", model::Role::kCoordinator)},
      {"bob", Member("bob", "team-b", model::Role::kCoordinator)},
      {"coord-a", Member("cora", "team-a", model::Role::kCoordinator)}};
  std::map<std::pair<std::string, std::string>, std::string> secrets;  // (team, name) -> value
  std::map<std::string, ServiceStatus> services;                       // by name
  std::vector<store::AuditRecord> audited;
  std::vector<store::TokenRecord> tokens;
  model::Identity created_identity;
  DurationMs created_expires_in_ms = -1;
  std::vector<store::AuditRecord> audit_log;  // what ListAudit finds
  mutable store::AuditFilter listed_audit;
  std::map<JobId, model::Job> jobs;
  std::map<JobId, control::QueuePosition> positions;
  mutable JobPageRequest listed_page;
  std::map<JobId, std::vector<model::Job>> runs;
  std::vector<NodeStatus> nodes;
  std::vector<model::GpuActivity> gpu_samples;
  Submission submission;
  LogChunk log;
  Status reload = OkStatus();

  std::string submitted_text, submitted_key, submitted_owner;
  spec::ParseOptions submitted_options;
  mutable store::JobFilter listed_filter;
  std::string cancel_cause;
  std::string cancel_by;
  std::vector<model::AttemptUsage> usage;  // of every job (AttemptUsage::job)
  std::vector<model::UsageBucket> series;
  std::optional<sched::PendingReason> placement;  // what Explain says holds a job
  model::DiagnosisThresholds diagnosis;
  NodeId usage_node;
  std::vector<model::UsageBatch> usage_batches;
  model::Policy policy;
  std::vector<JobVerb> applied_verbs;
  std::string verb_actor;
  mutable std::string log_stream;
  mutable int log_reads = 0;
  std::string registered, commands_node, events_node, shipped_node, shipped_stream;
  model::WorkerKey shipped_key;
  Caller registered_by;
  std::string join_token;  // empty: none required
  DurationMs commands_wait_ms = -1;
  AgentAck commands_ack;
  bool no_commands = false;
  int reported_events = 0;
};

// A request as the server's adapter builds it; api::Serve finds its route and captures.
struct Call {
  Method method;
  std::string path;
  std::string body = {};
  std::map<std::string, std::string> query = {};
  std::map<std::string, std::string> headers = {};
};

json Body(const Response& response) { return json::parse(response.body); }

model::Job RunningJob(std::int64_t id) {
  model::Job job;
  job.id = JobId(id);
  job.spec.name = "train";
  job.state = model::JobState::kRunning;
  job.created_at = 1'000;
  job.attempts.emplace_back();
  return job;
}

class HandlersTest : public ::testing::Test {
 protected:
  HandlersTest() { service_.jobs[JobId(7)] = RunningJob(7); }
  // `call` with the admin's token unless it sends an Authorization header of its own or is an
  // agent's.
  Response Serve(const Call& call) {
    std::map<std::string, std::string> headers = call.headers;
    if (!call.path.starts_with("/v1/agents/")) headers.emplace("Authorization", "Bearer admin");
    Request request;
    request.method = std::string(MethodName(call.method));
    request.path = call.path;
    request.query = call.query;
    request.headers = std::move(headers);
    request.body = call.body;
    return api::Serve(service_, std::move(request));
  }

  FakeService service_;
};

TEST(Routes, ListsEveryEndpointOnceWithAHandler) {
  std::vector<std::string> listed;
  for (const Route& route : Routes()) {
    EXPECT_NE(route.handler, nullptr) << route.pattern;
    listed.push_back(std::string(MethodName(route.method)) + " " + std::string(route.pattern));
  }
  EXPECT_EQ(std::set<std::string>(listed.begin(), listed.end()).size(), listed.size());
  EXPECT_THAT(
      listed,
      ElementsAre("GET /v1/health", "GET /", "GET /index.html", R"(GET /assets/([A-Za-z0-9_.-]+))",
                  "GET /v1/openapi.json", "POST /v1/jobs", "GET /v1/jobs", R"(GET /v1/jobs/(\d+))",
                  R"(POST /v1/jobs/(\d+)/cancel)", R"(POST /v1/jobs/(\d+)/hold)",
                  R"(POST /v1/jobs/(\d+)/release)", R"(POST /v1/jobs/(\d+)/update)",
                  R"(POST /v1/jobs/(\d+)/requeue)", R"(GET /v1/jobs/(\d+)/explain)",
                  R"(GET /v1/jobs/(\d+)/decisions)", R"(GET /v1/jobs/(\d+)/usage)",
                  R"(GET /v1/jobs/(\d+)/advice)", R"(POST /v1/jobs/(\d+)/checkpoint)",
                  R"(POST /v1/jobs/(\d+)/report)", "GET /v1/pipelines",
                  R"(GET /v1/pipelines/(\d+))", R"(GET /v1/pipelines/(\d+)/advice)",
                  R"(POST /v1/pipelines/(\d+)/cancel)", "GET /v1/events", "GET /v1/goodput",
                  "GET /v1/diagnosis", "GET /metrics", "GET /v1/queues", "GET /v1/policy",
                  "POST /v1/policy/reload", R"(GET /v1/jobs/(\d+)/logs)", "POST /v1/crons",
                  "GET /v1/crons", R"(DELETE /v1/crons/([^/]+))",
                  R"(POST /v1/crons/([^/]+)/suspend)", R"(POST /v1/crons/([^/]+)/resume)",
                  "POST /v1/services", "GET /v1/services", R"(GET /v1/services/([^/]+))",
                  R"(DELETE /v1/services/([^/]+))", R"(POST /v1/services/([^/]+)/load)",
                  "GET /v1/nodes", "GET /v1/gpus", R"(POST /v1/nodes/([^/]+)/cordon)",
                  R"(POST /v1/nodes/([^/]+)/uncordon)", R"(POST /v1/nodes/([^/]+)/drain)",
                  R"(PUT /v1/nodes/([^/]+)/maintenance)", R"(DELETE /v1/nodes/([^/]+)/maintenance)",
                  R"(GET /v1/teams/([^/]+)/secrets)", R"(PUT /v1/teams/([^/]+)/secrets/([^/]+))",
                  R"(DELETE /v1/teams/([^/]+)/secrets/([^/]+))", "POST /v1/tokens",
                  "GET /v1/tokens", R"(POST /v1/tokens/([^/]+)/revoke)", "GET /v1/whoami",
                  "GET /v1/audit", "POST /v1/agents/register", R"(GET /v1/agents/([^/]+)/commands)",
                  R"(POST /v1/agents/([^/]+)/events)", R"(POST /v1/agents/([^/]+)/logs)",
                  R"(POST /v1/agents/([^/]+)/usage)"));
}

TEST_F(HandlersTest, TeamCoordinatorSetsListsAndDeletesSecretsWhoseValuesNeverComeBack) {
  const std::map<std::string, std::string> carol = {{"Authorization", "Bearer carol"}};
  Response put =
      Serve({Method::kPut, "/v1/teams/team-a/secrets/wandb-key", "s3cr3t-value\n", {}, carol});
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(Body(put),
            (json{{"team", "team-a"}, {"name", "wandb-key"}, {"updated_at", 1'000'000}}));
  EXPECT_EQ((service_.secrets[{"team-a", "wandb-key"}]), "s3cr3t-value\n");  // taken as sent

  Response list = Serve({Method::kGet, "/v1/teams/team-a/secrets", "", {}, carol});
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_EQ(Body(list), (json{{"team", "team-a"},
                              {"secrets", {{{"name", "wandb-key"}, {"updated_at", 1'000'000}}}}}));
  // Nothing any of them answers or records holds the value.
  for (const Response& response : {put, list}) {
    EXPECT_THAT(response.body, ::testing::Not(HasSubstr("s3cr3t")));
  }
  Response removed = Serve({Method::kDelete, "/v1/teams/team-a/secrets/wandb-key", "", {}, carol});
  ASSERT_EQ(removed.status, 200) << removed.body;
  EXPECT_EQ(Body(removed), (json{{"deleted", "wandb-key"}, {"team", "team-a"}}));
  EXPECT_TRUE(service_.secrets.empty());
  Response again = Serve({Method::kDelete, "/v1/teams/team-a/secrets/wandb-key", "", {}, carol});
  EXPECT_EQ(again.status, 404);
  EXPECT_EQ(Body(again)["code"], "not_found");

  ASSERT_EQ(service_.audited.size(), 3u);  // the PUT and the two DELETEs, never the body
  for (const store::AuditRecord& record : service_.audited) {
    EXPECT_EQ(record.target, "team team-a");
    EXPECT_THAT(record.action + record.caller + record.target, ::testing::Not(HasSubstr("s3cr3t")));
  }
}

TEST_F(HandlersTest, OnlyAdminsAndTheTeamsCoordinatorsTouchItsSecrets) {
  struct Case {
    std::string token;
    int status;
  };
  for (const Case& c : {Case{"admin", 200}, Case{"carol", 200}, Case{"alice", 403},
                        Case{"viewer", 403}, Case{"bob", 403}, Case{"nobody", 401}}) {
    const std::map<std::string, std::string> auth = {{"Authorization", "Bearer " + c.token}};
    Response put = Serve({Method::kPut, "/v1/teams/team-a/secrets/key", "v", {}, auth});
    EXPECT_EQ(put.status, c.status) << c.token << ": " << put.body;
    Response list = Serve({Method::kGet, "/v1/teams/team-a/secrets", "", {}, auth});
    EXPECT_EQ(list.status, c.status) << c.token << ": " << list.body;
    if (c.status != 200) {
      EXPECT_TRUE(Body(put).contains("code")) << c.token;
      Response removed = Serve({Method::kDelete, "/v1/teams/team-a/secrets/key", "", {}, auth});
      EXPECT_EQ(removed.status, c.status) << c.token;
    }
  }
  EXPECT_EQ(service_.secrets.size(), 1u);  // only the admin's and carol's PUTs (one secret)
  Response denied = Serve(
      {Method::kPut, "/v1/teams/team-a/secrets/key", "v", {}, {{"Authorization", "Bearer alice"}}});
  EXPECT_THAT(Body(denied)["message"].get<std::string>(), HasSubstr("team team-a"));
}

TEST_F(HandlersTest, SecretRoutesRefuseABadTeamNameBeforeTheService) {
  Response response = Serve({Method::kPut, "/v1/teams/.. x/secrets/key", "v"});
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(Body(response)["code"], "invalid_argument");
  EXPECT_THAT(Body(response)["message"].get<std::string>(), HasSubstr("invalid team '.. x'"));
  EXPECT_TRUE(service_.secrets.empty());
}

TEST_F(HandlersTest, UnknownJobIsNotFoundWithTheErrorJson) {
  Response response = Serve({Method::kGet, "/v1/jobs/8"});
  EXPECT_EQ(response.status, 404);
  EXPECT_EQ(response.content_type, "application/json");
  EXPECT_EQ(Body(response), (json{{"code", "not_found"},
                                  {"message", "job 8 does not exist"},
                                  {"details", json::array()}}));
}

TEST_F(HandlersTest, AnIdThatCannotBeOneIsNotFoundWithoutAskingTheService) {
  Response response = Serve({Method::kGet, "/v1/jobs/0/explain"});
  EXPECT_EQ(response.status, 404);
  EXPECT_EQ(Body(response)["message"], "job 0 does not exist");
}

TEST_F(HandlersTest, SubmitPassesTheHeadersAndAnswers201ThenExistingWith200) {
  service_.submission.jobs = {{JobId(7), "train", model::JobState::kPending}};
  Response created = Serve({Method::kPost,
                            "/v1/jobs",
                            "kind: Job",
                            {},
                            {{"Authorization", "Bearer alice"}, {"Idempotency-Key", "k1"}}});
  EXPECT_EQ(created.status, 201);
  EXPECT_EQ(Body(created), (json{{"jobs", {{{"id", 7}, {"name", "train"}, {"state", "pending"}}}},
                                 {"existing", false}}));
  EXPECT_EQ(service_.submitted_text, "kind: Job");
  EXPECT_EQ(service_.submitted_options.file_name, "<request>");
  EXPECT_EQ(service_.submitted_owner, "alice");
  EXPECT_EQ(service_.submitted_key, "k1");

  service_.submission.existing = true;
  Response again = Serve({Method::kPost,
                          "/v1/jobs",
                          "kind: Job",
                          {},
                          {{"X-Drover-File", "a.yaml"}, {"X-Drover-Base-Dir", "/w"}}});
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(service_.submitted_options.file_name, "a.yaml");
  EXPECT_EQ(service_.submitted_options.base_dir, "/w");
}

TEST_F(HandlersTest, SubmitRefusesHeadersItCannotHonourWithoutAskingTheService) {
  Response relative =
      Serve({Method::kPost, "/v1/jobs", "kind: Job", {}, {{"X-Drover-Base-Dir", "work/dir"}}});
  EXPECT_EQ(relative.status, 400);
  EXPECT_EQ(Body(relative)["code"], "invalid_argument");
  EXPECT_EQ(Body(relative)["message"],
            "X-Drover-Base-Dir header: must be an absolute directory (the one relative paths in "
            "the spec resolve against), found 'work/dir'");
  Response hold =
      Serve({Method::kPost, "/v1/jobs", "kind: Job", {}, {{"X-Drover-Hold-Infeasible", "yes"}}});
  EXPECT_EQ(hold.status, 400);
  EXPECT_EQ(Body(hold)["message"],
            "X-Drover-Hold-Infeasible header: expected true or false, found 'yes'");
  EXPECT_EQ(service_.submitted_text, "");
}

TEST_F(HandlersTest, SubmitPassesHoldInfeasible) {
  Response held =
      Serve({Method::kPost, "/v1/jobs", "kind: Job", {}, {{"X-Drover-Hold-Infeasible", "true"}}});
  EXPECT_EQ(held.status, 201);
  EXPECT_TRUE(service_.submitted_options.hold_infeasible);
}

TEST_F(HandlersTest, SubmitPassesAfterAndRefusesAMalformedOne) {
  Response after =
      Serve({Method::kPost, "/v1/jobs", "kind: Job", {}, {{"X-Drover-After", "12, 13:any"}}});
  EXPECT_EQ(after.status, 201);
  EXPECT_EQ(service_.submitted_options.after,
            (std::vector<model::Dependency>{{"job:12", model::DependencyCondition::kSucceeded},
                                            {"job:13", model::DependencyCondition::kDone}}));
  service_.submitted_text.clear();
  Response bad =
      Serve({Method::kPost, "/v1/jobs", "kind: Job", {}, {{"X-Drover-After", "12, 13:whenever"}}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(Body(bad)["code"], "invalid_argument");
  EXPECT_EQ(Body(bad)["message"],
            "X-Drover-After header: item 2: '13:whenever': unknown condition; expected ok, any or "
            "a condition name (succeeded, failed, done or skipped)");
  EXPECT_EQ(service_.submitted_text, "");
}

TEST_F(HandlersTest, ListJobsRejectsAnUnknownStateAndALimitThatIsNoInteger) {
  Response state = Serve({Method::kGet, "/v1/jobs", "", {{"state", "sleeping"}}});
  EXPECT_EQ(state.status, 400);
  EXPECT_EQ(Body(state)["message"], "query parameter state: unknown state 'sleeping'");
  Response limit = Serve({Method::kGet, "/v1/jobs", "", {{"limit", "5x"}}});
  EXPECT_EQ(limit.status, 400);
  EXPECT_EQ(Body(limit)["message"], "query parameter limit: expected an integer, got '5x'");
}

TEST_F(HandlersTest, ListJobsFiltersAsAsked) {
  service_.jobs[JobId(7)].spec.owner = "bob";
  Response response = Serve(
      {Method::kGet, "/v1/jobs", "", {{"state", "running"}, {"owner", "bob"}, {"active", "1"}}});
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(Body(response)["jobs"].size(), 1u);
  EXPECT_EQ(service_.listed_filter.state, model::JobState::kRunning);
  EXPECT_EQ(service_.listed_filter.owner, "bob");
  EXPECT_TRUE(service_.listed_filter.active_only);
}

// Ids of a GET /v1/jobs page, and its next cursor (0: none).
std::pair<std::vector<std::int64_t>, std::int64_t> Page(const Response& response) {
  std::vector<std::int64_t> ids;
  const json body = Body(response);
  for (const json& job : body["jobs"]) ids.push_back(job["id"].get<std::int64_t>());
  return {ids, body["next"].is_null() ? 0 : body["next"].get<std::int64_t>()};
}

class JobPagesTest : public HandlersTest {
 protected:
  // Jobs 1 to 7; the even ones wait in a queue (ready).
  JobPagesTest() {
    for (std::int64_t id = 1; id <= 6; ++id) {
      service_.jobs[JobId(id)] = RunningJob(id);
      if (id % 2 == 0) service_.jobs[JobId(id)].state = model::JobState::kReady;
    }
  }

  std::pair<std::vector<std::int64_t>, std::int64_t> List(
      std::map<std::string, std::string> query) {
    Response response = Serve({Method::kGet, "/v1/jobs", "", std::move(query)});
    EXPECT_EQ(response.status, 200) << response.body;
    return Page(response);
  }
};

using Ids = std::vector<std::int64_t>;

TEST_F(JobPagesTest, PagesAscendByIdWithANextCursorUntilTheLast) {
  EXPECT_EQ(List({}), std::make_pair(Ids{1, 2, 3, 4, 5, 6, 7}, std::int64_t{0}));
  EXPECT_EQ(service_.listed_page.limit, kDefaultJobPage);
  EXPECT_EQ(List({{"limit", "3"}, {"order", "asc"}}), std::make_pair(Ids{1, 2, 3}, 3l));
  EXPECT_EQ(List({{"limit", "3"}, {"order", "asc"}, {"after", "3"}}),
            std::make_pair(Ids{4, 5, 6}, 6l));
  EXPECT_EQ(List({{"limit", "3"}, {"order", "asc"}, {"after", "6"}}), std::make_pair(Ids{7}, 0l));
  // A cursor need not be a job that still exists.
  EXPECT_EQ(List({{"after", "100"}}), std::make_pair(Ids{}, 0l));
}

TEST_F(JobPagesTest, PendingListsEveryJobThatHasNotStartedWhateverItWaitsFor) {
  service_.jobs[JobId(1)].state = model::JobState::kPending;  // for its dependencies
  service_.jobs[JobId(3)].state = model::JobState::kPlaced;   // for its launch
  service_.jobs[JobId(8)] = RunningJob(8);
  service_.jobs[JobId(8)].state = model::JobState::kAdmitted;
  service_.jobs[JobId(5)].state = model::JobState::kWaiting;  // for its inputs
  // 2, 4 and 6 are ready (for quota or room); 7 runs.
  EXPECT_EQ(List({{"pending", "1"}}), std::make_pair(Ids{1, 2, 3, 4, 5, 6, 8}, std::int64_t{0}));
  EXPECT_EQ(List({{"pending", "1"}, {"limit", "2"}, {"after", "5"}}),
            std::make_pair(Ids{4, 3}, 3l));
  EXPECT_EQ(List({{"pending", "1"}, {"state", "ready"}}),
            std::make_pair(Ids{2, 4, 6}, std::int64_t{0}));
}

TEST_F(JobPagesTest, ALimitAloneListsTheNewestFirstAndPagesBackwards) {
  EXPECT_EQ(List({{"limit", "3"}}), std::make_pair(Ids{7, 6, 5}, 5l));
  EXPECT_EQ(List({{"limit", "3"}, {"after", "5"}}), std::make_pair(Ids{4, 3, 2}, 2l));
  EXPECT_EQ(List({{"limit", "3"}, {"after", "2"}}), std::make_pair(Ids{1}, 0l));
  EXPECT_EQ(List({{"order", "desc"}}), std::make_pair(Ids{7, 6, 5, 4, 3, 2, 1}, 0l));
}

TEST_F(JobPagesTest, APageHoldsOnlyMatchesAndNextOnlyWhenAnotherMatchFollows) {
  EXPECT_EQ(List({{"state", "ready"}, {"limit", "2"}, {"order", "asc"}}),
            std::make_pair(Ids{2, 4}, 4l));
  EXPECT_EQ(List({{"state", "ready"}, {"limit", "2"}, {"order", "asc"}, {"after", "4"}}),
            std::make_pair(Ids{6}, 0l));
  // Exactly a page of matches left: no next.
  EXPECT_EQ(List({{"state", "ready"}, {"limit", "3"}, {"order", "asc"}}),
            std::make_pair(Ids{2, 4, 6}, 0l));
}

TEST_F(JobPagesTest, AWaitingJobCarriesItsQueuePosition) {
  service_.positions[JobId(4)] = control::QueuePosition{"team-a", 2, 5, {JobId(2)}};
  Response response = Serve({Method::kGet, "/v1/jobs", "", {{"state", "ready"}}});
  const json jobs = Body(response)["jobs"];
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_FALSE(jobs[0].contains("position"));
  EXPECT_EQ(jobs[1]["position"], (json{{"queue", "team-a"}, {"in_queue", 2}, {"in_cluster", 5}}));
}

TEST_F(JobPagesTest, RefusesBadPageParametersNamingThem) {
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{{"limit", "0"}}, "query parameter limit: must be from 1 to 5000, got 0"},
      {{{"limit", "5001"}}, "query parameter limit: must be from 1 to 5000, got 5001"},
      {{{"limit", "-3"}}, "query parameter limit: must be from 1 to 5000, got -3"},
      {{{"order", "sideways"}}, "query parameter order: expected asc or desc, got 'sideways'"},
      {{{"after", "0"}},
       "query parameter after: expected a job id (the previous page's next), got 0"},
      {{{"after", "7x"}}, "query parameter after: expected an integer, got '7x'"},
  };
  for (const auto& [query, message] : cases) {
    Response response = Serve({Method::kGet, "/v1/jobs", "", query});
    EXPECT_EQ(response.status, 400) << message;
    EXPECT_EQ(Body(response)["code"], "invalid_argument") << message;
    EXPECT_EQ(Body(response)["message"], message);
  }
}

TEST_F(HandlersTest, ExplainShowsTheQueuePositionWithTheJobsAhead) {
  control::Explanation explanation;
  explanation.state = model::JobState::kReady;
  explanation.position = control::QueuePosition{"team-a", 3, 4, {JobId(2), JobId(5)}};
  const json view = ExplanationView(JobId(9), explanation);
  EXPECT_EQ(view["position"], (json{{"queue", "team-a"},
                                    {"in_queue", 3},
                                    {"in_cluster", 4},
                                    {"ahead", json::array({2, 5})}}));
}

TEST_F(HandlersTest, UsageAnswersEverySampledAttemptAndTheSeriesOfOne) {
  model::AttemptUsage usage;
  usage.job = JobId(7);
  usage.attempt = 1;
  usage.summary.gpu_util.Add(30);
  usage.summary.gpu_util_p95 = 30;
  service_.usage = {usage};
  model::UsageBucket bucket;
  bucket.start = 20'000;
  bucket.gpu_util.Add(30);
  service_.series = {bucket};
  Response response = Serve({Method::kGet, "/v1/jobs/7/usage"});
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(Body(response)["attempt"], 1);  // the latest sampled, by default
  EXPECT_EQ(Body(response)["bucket_ms"], 10'000);
  EXPECT_EQ(Body(response)["attempts"][0]["summary"]["gpu_util_p95"], 30);
  EXPECT_EQ(Body(response)["buckets"][0],
            (json{{"start_at", 20'000},
                  {"gpu_util", {{"count", 1}, {"sum", 30.0}, {"max", 30.0}}},
                  {"gpu_memory", {{"count", 0}, {"sum", 0.0}, {"max", 0.0}}},
                  {"power", {{"count", 0}, {"sum", 0.0}, {"max", 0.0}}},
                  {"cpu", {{"count", 0}, {"sum", 0.0}, {"max", 0.0}}},
                  {"rss", {{"count", 0}, {"sum", 0.0}, {"max", 0.0}}}}));
  EXPECT_EQ(Body(Serve({Method::kGet, "/v1/jobs/7"}))["usage"][0]["attempt"], 1);
  EXPECT_TRUE(
      Body(Serve({Method::kGet, "/v1/jobs/7/usage", "", {{"attempt", "2"}}}))["buckets"].empty());
  Response bad = Serve({Method::kGet, "/v1/jobs/7/usage", "", {{"attempt", "-1"}}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(Body(bad)["message"].get<std::string>(), HasSubstr("attempt"));
  EXPECT_EQ(Serve({Method::kGet, "/v1/jobs/8/usage"}).status, 404);
}

// The findings of the answered attempt: the job's GPU at 0% for an hour is idle, under the
// service's thresholds (a longer minimum leaves it unjudged).
TEST_F(HandlersTest, UsageSaysWhatTheAttemptsMeasurementsShow) {
  model::Job& job = service_.jobs[JobId(7)];
  job.spec.requirements.per_worker = {1000, 1 << 30, 1};
  // Running since its creation: nothing waited before work.
  job.released_at = job.created_at;
  model::Attempt& attempt = job.attempts[0];
  attempt.ready_at = attempt.dequeued_at = attempt.admitted_at = attempt.placed_at =
      attempt.running_at = job.created_at;
  model::AttemptUsage usage;
  usage.job = JobId(7);
  usage.attempt = 1;
  usage.summary.first_at = 0;
  usage.summary.last_at = kMillisPerHour;
  usage.summary.gpu_util.Add(0);
  service_.usage = {usage};
  const json findings = Body(Serve({Method::kGet, "/v1/jobs/7/usage"}))["findings"];
  ASSERT_EQ(findings.size(), 1u) << findings.dump();
  EXPECT_EQ(findings[0]["kind"], "allocated_idle");
  EXPECT_EQ(findings[0]["evidence"], "GPU activity p95 0% (mean 0.0%) over 1h");
  service_.diagnosis.min_sampled_ms = 2 * kMillisPerHour;
  EXPECT_TRUE(Body(Serve({Method::kGet, "/v1/jobs/7/usage"}))["findings"].empty());
  // An attempt without samples has nothing to say.
  EXPECT_TRUE(
      Body(Serve({Method::kGet, "/v1/jobs/7/usage", "", {{"attempt", "2"}}}))["findings"].empty());
}

// A job of `team` placed and running from 1 s on with `gpus` GPUs on one worker.
model::Job GpuJob(std::int64_t id, std::string team, int gpus) {
  model::Job job = RunningJob(id);
  job.spec.team = std::move(team);
  job.spec.owner = "owner-" + job.spec.team;
  job.spec.requirements.per_worker.gpus = gpus;
  job.released_at = 1'000;
  model::Attempt& attempt = job.attempts[0];
  attempt.ready_at = attempt.dequeued_at = attempt.admitted_at = attempt.placed_at = 1'000;
  attempt.running_at = 1'000;
  attempt.workers.emplace_back();
  for (int i = 0; i < gpus; ++i) attempt.workers[0].gpus.push_back(i);
  return job;
}

// Job 7 holds 2 idle GPUs for an hour (2 GPU-hours idle); job 8 of team-b lost a failed hour-long
// first attempt on 1 GPU and then succeeded; job 9 waits for 2 x 4 GPUs that are free, 2 per
// node: shape, not capacity.
TEST_F(HandlersTest, ClusterDiagnosisRanksTheVisibleJobsByWastedGpuHours) {
  service_.now = 10 * kMillisPerHour;
  service_.jobs[JobId(7)] = GpuJob(7, "team-a", 2);
  model::AttemptUsage idle;
  idle.job = JobId(7);
  idle.attempt = 1;
  idle.summary.first_at = kMillisPerHour;
  idle.summary.last_at = 2 * kMillisPerHour;
  idle.summary.gpu_util.Add(0);
  service_.usage = {idle};
  model::Job retried = GpuJob(8, "team-b", 1);
  retried.attempts[0].finished_at = kMillisPerHour + 1'000;
  retried.attempts[0].outcome = model::JobState::kReady;
  retried.attempts.push_back(retried.attempts[0]);
  retried.attempts[1].number = 2;
  retried.attempts[1].placed_at = kMillisPerHour + 1'000;
  retried.attempts[1].finished_at = 4 * kMillisPerHour;
  retried.attempts[1].outcome = model::JobState::kSucceeded;
  retried.state = model::JobState::kSucceeded;
  retried.finished_at = 4 * kMillisPerHour;
  service_.jobs[JobId(8)] = retried;
  model::Job waiting = GpuJob(9, "team-a", 4);
  waiting.spec.workers = 2;
  waiting.state = model::JobState::kReady;
  waiting.attempts[0] = model::Attempt{};
  waiting.attempts[0].ready_at = service_.now - 60'000;
  service_.jobs[JobId(9)] = waiting;
  sched::PendingReason reason;
  reason.workers = 2;
  reason.eligible_nodes = 4;
  reason.free_gpus = 8;
  reason.largest_free_gpus = 2;
  reason.largest_free_node = NodeId("n1");
  service_.placement = reason;

  const json all = Body(Serve({Method::kGet, "/v1/diagnosis"}));
  EXPECT_EQ(all["examined"], 3);
  EXPECT_EQ(all["more"], false);
  ASSERT_EQ(all["jobs"].size(), 3u) << all.dump();
  EXPECT_EQ(all["jobs"][0]["job_id"], 7);
  EXPECT_DOUBLE_EQ(all["jobs"][0]["wasted_gpu_hours"].get<double>(), 2.0);
  EXPECT_EQ(all["jobs"][0]["findings"][0]["kind"], "allocated_idle");
  EXPECT_EQ(all["jobs"][1]["job_id"], 8);
  EXPECT_DOUBLE_EQ(all["jobs"][1]["lost_gpu_hours"].get<double>(), 1.0);
  EXPECT_EQ(all["jobs"][1]["findings"][0]["kind"], "recovery_overhead");
  EXPECT_EQ(all["jobs"][2]["job_id"], 9);
  EXPECT_EQ(all["jobs"][2]["findings"][0]["kind"], "waiting_for_shape");
  EXPECT_EQ(all["teams"][0], (json{{"team", "team-a"},
                                   {"jobs", 2},
                                   {"jobs_with_findings", 2},
                                   {"wasted_gpu_hours", 2.0},
                                   {"idle_gpu_hours", 2.0},
                                   {"lost_gpu_hours", 0.0}}));
  EXPECT_EQ(all["teams"][1]["team"], "team-b");

  // Filters: a team; jobs not ended before `since`; the newest `limit`.
  const json team_b = Body(Serve({Method::kGet, "/v1/diagnosis", "", {{"team", "team-b"}}}));
  ASSERT_EQ(team_b["jobs"].size(), 1u);
  EXPECT_EQ(team_b["jobs"][0]["job_id"], 8);
  const json recent = Body(
      Serve({Method::kGet, "/v1/diagnosis", "", {{"since", std::to_string(5 * kMillisPerHour)}}}));
  EXPECT_EQ(recent["examined"], 2);
  const json newest = Body(Serve({Method::kGet, "/v1/diagnosis", "", {{"limit", "1"}}}));
  EXPECT_EQ(newest["examined"], 1);
  EXPECT_EQ(newest["more"], true);
  EXPECT_EQ(newest["jobs"][0]["job_id"], 9);

  // Under private_data a coordinator of team-b sees team-b's jobs alone.
  service_.policy.private_data = true;
  const json bob =
      Body(Serve({Method::kGet, "/v1/diagnosis", "", {}, {{"Authorization", "Bearer bob"}}}));
  ASSERT_EQ(bob["jobs"].size(), 1u) << bob.dump();
  EXPECT_EQ(bob["jobs"][0]["job_id"], 8);
  EXPECT_EQ(bob["examined"], 1);

  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"limit", "0"}, {"limit", "1001"}, {"since", "-1"}, {"since", "soon"}}) {
    Response bad = Serve({Method::kGet, "/v1/diagnosis", "", {{name, value}}});
    EXPECT_EQ(bad.status, 400) << name << "=" << value;
    EXPECT_EQ(Body(bad)["code"], "invalid_argument");
    EXPECT_THAT(Body(bad)["message"].get<std::string>(), HasSubstr(name));
  }
}

// Job 7 asks 8Gi; the earlier "train" jobs of its team peaked at 2Gi: advice to ask less, once
// three of them were measured; another team's "train" job is not its history.
TEST_F(HandlersTest, AdviceRightSizesAJobFromTheMeasuredHistoryOfItsName) {
  constexpr std::int64_t kGi = std::int64_t{1} << 30;
  service_.now = 10 * kMillisPerHour;
  service_.jobs[JobId(7)].spec.team = "team-a";
  service_.jobs[JobId(7)].spec.requirements.per_worker = {4000, 8 * kGi, 0};
  auto measured = [&](std::int64_t id, std::string team) {
    model::Job job = service_.jobs[JobId(7)];
    job.id = JobId(id);
    job.spec.team = std::move(team);
    service_.jobs[job.id] = job;
    model::AttemptUsage usage;
    usage.job = job.id;
    usage.attempt = 1;
    usage.summary.first_at = kMillisPerHour;
    usage.summary.last_at = 2 * kMillisPerHour;
    usage.summary.cpu_ms = 3 * kMillisPerHour;  // 3 cores
    usage.summary.peak_rss_bytes = 2 * kGi;
    service_.usage.push_back(usage);
  };
  measured(3, "team-a");
  measured(4, "team-a");
  measured(5, "team-b");
  const json few = Body(Serve({Method::kGet, "/v1/jobs/7/advice"}))["advice"][0];
  EXPECT_EQ(few["history"], 2) << few.dump();
  EXPECT_TRUE(few["recommendations"].empty());
  EXPECT_EQ(few["no_advice"],
            "2 measured attempt(s) of at least the minimum sampled time; advice needs 3");

  measured(6, "team-a");
  const json advice = Body(Serve({Method::kGet, "/v1/jobs/7/advice"}))["advice"][0];
  EXPECT_EQ(advice["history"], 3);
  EXPECT_EQ(advice["confidence"], "low");
  EXPECT_EQ(advice["job_id"], 7);
  EXPECT_EQ(advice["recommendations"][0],
            (json{{"field", "memory"},
                  {"current", "8Gi"},
                  {"target", "2356Mi"},
                  {"evidence", "peak RSS 2Gi per worker (p90 of 3 attempt(s) + 15%)"}}));
  EXPECT_EQ(advice["patch"], "resources:\n  memory: 2356Mi\n");
  EXPECT_EQ(Serve({Method::kGet, "/v1/jobs/99/advice"}).status, 404);
}

TEST_F(HandlersTest, AnAgentsUsageBatchIsCheckedBeforeTheServiceSeesIt) {
  const std::map<std::string, std::string> n1 = {{"Authorization", "Bearer cred-n1"}};
  auto post = [&](const std::string& body, const std::map<std::string, std::string>& headers) {
    return Serve({Method::kPost, "/v1/agents/n1/usage", body, {}, headers});
  };
  Response hostile =
      post(R"({"snapshots": [{"at": 5, "gpus": [{"index": 0, "utilization_pct": 300}]}]})", n1);
  EXPECT_EQ(hostile.status, 400);
  EXPECT_EQ(Body(hostile)["code"], "invalid_argument");
  EXPECT_THAT(Body(hostile)["message"].get<std::string>(),
              HasSubstr("snapshots[0].gpus[0].utilization_pct"));
  Response wrong_type = post(R"({"snapshots": [{"at": "soon"}]})", n1);
  EXPECT_EQ(wrong_type.status, 400);
  EXPECT_THAT(Body(wrong_type)["message"].get<std::string>(), HasSubstr("snapshots[0].at"));
  json many = {{"snapshots", json::array()}};
  for (std::size_t i = 0; i <= model::kMaxUsageSnapshots; ++i) many["snapshots"].push_back({});
  Response too_many = post(many.dump(), n1);
  EXPECT_EQ(too_many.status, 400);
  EXPECT_THAT(Body(too_many)["message"].get<std::string>(), HasSubstr("at most 600"));
  Response cpu = post(R"({"snapshots": [], "sampler_cpu_us": -7})", n1);
  EXPECT_EQ(cpu.status, 400);
  EXPECT_THAT(Body(cpu)["message"].get<std::string>(), HasSubstr("sampler_cpu_us"));
  EXPECT_EQ(post("{}", {{"Authorization", "Bearer cred-n2"}}).status, 403);
  EXPECT_TRUE(service_.usage_batches.empty());

  Response ok = post(
      R"({"node": "elsewhere", "sampler_cpu_us": 1200, "snapshots": [{"at": 5, "gpus": [{"index": 1,
      "uuid": "GPU-1", "utilization_pct": 40, "worker": {"job_id": 7, "attempt": 1, "rank": 0}}]}]})",
      n1);
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(service_.usage_node, NodeId("n1"));  // the path's node, whatever the body says
  ASSERT_EQ(service_.usage_batches.size(), 1u);
  EXPECT_EQ(service_.usage_batches[0].snapshots[0].gpus[0].worker,
            (model::WorkerKey{JobId(7), 1, 0}));
  EXPECT_EQ(service_.usage_batches[0].sampler_cpu_us, 1200);
}

TEST_F(HandlersTest, CancelNamesTheCallerAndAnswersTheSummary) {
  service_.jobs[JobId(7)].spec.owner = "alice";
  service_.jobs[JobId(7)].spec.team = "team-a";
  Response response =
      Serve({Method::kPost, "/v1/jobs/7/cancel", "", {}, {{"Authorization", "Bearer alice"}}});
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(service_.cancel_cause, "cancelled by alice (member of team-a)");
  EXPECT_EQ(service_.cancel_by, "alice");
  EXPECT_EQ(Body(response)["state"], "cancelled");
  ASSERT_EQ(service_.audited.size(), 1u);
  EXPECT_EQ(service_.audited[0].caller, "alice (member of team-a)");
  EXPECT_EQ(service_.audited[0].action, "POST /v1/jobs/7/cancel");
  EXPECT_EQ(service_.audited[0].job, JobId(7));
  EXPECT_EQ(service_.audited[0].status, 200);
}

TEST_F(HandlersTest, AnotherTeamsCancelIsRefusedNamingTheVerbAndWhoMayAndIsAudited) {
  service_.jobs[JobId(7)].spec.owner = "bob";
  service_.jobs[JobId(7)].spec.team = "team-b";
  Response response =
      Serve({Method::kPost, "/v1/jobs/7/cancel", "", {}, {{"Authorization", "Bearer alice"}}});
  EXPECT_EQ(response.status, 403);
  EXPECT_EQ(Body(response)["code"], "permission_denied");
  EXPECT_THAT(Body(response)["message"].get<std::string>(),
              HasSubstr("alice (member of team-a) may not cancel job 7 (owner bob, team team-b)"));
  EXPECT_EQ(service_.cancel_cause, "");
  ASSERT_EQ(service_.audited.size(), 1u);
  EXPECT_EQ(service_.audited[0].user, "alice");
  EXPECT_EQ(service_.audited[0].code, "permission_denied");
}

TEST_F(HandlersTest, JobVerbsPassTheCallerAndTheBodyAndAnswerTheSummary) {
  service_.jobs[JobId(7)].spec.owner = "alice";
  service_.jobs[JobId(7)].spec.team = "team-a";
  const std::map<std::string, std::string> alice = {{"Authorization", "Bearer alice"}};
  EXPECT_EQ(Serve({Method::kPost, "/v1/jobs/7/hold", R"({"reason": "data not ready"})", {}, alice})
                .status,
            200);
  EXPECT_EQ(Serve({Method::kPost, "/v1/jobs/7/release", "", {}, alice}).status, 200);
  EXPECT_EQ(Serve({Method::kPost, "/v1/jobs/7/requeue", "", {}, alice}).status, 200);
  Response updated = Serve({Method::kPost,
                            "/v1/jobs/7/update",
                            R"({"priority": "high", "timeout": "2h30m"})",
                            {},
                            alice});
  EXPECT_EQ(updated.status, 200);
  EXPECT_EQ(Body(updated)["id"], 7);
  EXPECT_EQ(service_.verb_actor, "alice");
  ASSERT_EQ(service_.applied_verbs.size(), 4u);
  EXPECT_EQ(service_.applied_verbs[0].kind, JobVerb::Kind::kHold);
  EXPECT_EQ(service_.applied_verbs[0].reason, "data not ready");
  EXPECT_EQ(service_.applied_verbs[1].kind, JobVerb::Kind::kRelease);
  EXPECT_EQ(service_.applied_verbs[2].kind, JobVerb::Kind::kRequeue);
  EXPECT_EQ(service_.applied_verbs[3].update,
            (control::JobUpdate{"high", 150 * kMillisPerMinute, std::nullopt}));
}

TEST_F(HandlersTest, JobVerbsRefuseABadBodyNamingTheFieldWithoutAskingTheService) {
  const struct {
    std::string path, body, message;
  } cases[] = {
      {"/v1/jobs/7/hold", "[1]", "request body: expected a JSON object"},
      {"/v1/jobs/7/hold", R"({"reason": 3})", "reason: expected a string"},
      {"/v1/jobs/7/hold", R"({"priority": "high"})", "priority: unknown field"},
      {"/v1/jobs/7/requeue", "{", "request body"},
      {"/v1/jobs/7/hold", R"({"reason": ")" + std::string(2000, 'x') + R"("})",
       "reason: 2000 bytes, at most 1024"},
      {"/v1/jobs/7/update", R"({"timeout": "soon"})", "timeout: 'soon' is not a duration"},
      {"/v1/jobs/7/update", R"({"timeout": 60})", "timeout: expected a string"},
      {"/v1/jobs/7/update", R"({"queue": ["a"]})", "queue: expected a string"},
      {"/v1/jobs/7/update", R"({"gpus": 8})", "gpus: unknown field"},
      {"/v1/jobs/7/update", "", "request body: missing"},
  };
  for (const auto& c : cases) {
    Response response = Serve({Method::kPost, c.path, c.body});
    EXPECT_EQ(response.status, 400) << c.path << " " << c.body;
    EXPECT_EQ(Body(response)["code"], "invalid_argument");
    EXPECT_THAT(Body(response)["message"].get<std::string>(), HasSubstr(c.message)) << c.body;
  }
  EXPECT_THAT(service_.applied_verbs, IsEmpty());
}

TEST_F(HandlersTest, JobVerbsAreRefusedToAViewerAndAnotherTeam) {
  service_.jobs[JobId(7)].spec.owner = "alice";
  service_.jobs[JobId(7)].spec.team = "team-a";
  for (const std::string verb : {"hold", "release", "requeue"}) {
    for (const std::string token : {"viewer", "bob"}) {
      Response response = Serve(
          {Method::kPost, "/v1/jobs/7/" + verb, "", {}, {{"Authorization", "Bearer " + token}}});
      EXPECT_EQ(response.status, 403) << verb << " by " << token;
      EXPECT_EQ(Body(response)["code"], "permission_denied");
    }
  }
  EXPECT_THAT(service_.applied_verbs, IsEmpty());
}

TEST_F(HandlersTest, MovingAJobToAQueueTakesSubmitThere) {
  service_.jobs[JobId(7)].spec.owner = "alice";
  service_.jobs[JobId(7)].spec.team = "team-a";
  // The policy grants team-a submit on queue "a" only; alice holds her job in "a".
  model::QueueConfig a, b;
  a.name = "a";
  a.access = model::AccessGrants{{"team-a", {model::Verb::kSubmit}}};
  b.name = "b";
  b.access = model::AccessGrants{{"team-b", {model::Verb::kSubmit}}};
  service_.policy.queues = {a, b};
  service_.jobs[JobId(7)].spec.queue = "a";
  Response response = Serve({Method::kPost,
                             "/v1/jobs/7/update",
                             R"({"queue": "b"})",
                             {},
                             {{"Authorization", "Bearer alice"}}});
  EXPECT_EQ(response.status, 403);
  EXPECT_THAT(Body(response)["message"].get<std::string>(),
              HasSubstr("does not grant team team-a submit on queue b"));
  EXPECT_THAT(service_.applied_verbs, IsEmpty());
}

TEST_F(HandlersTest, NoTokenOrAnUnknownOneIs401) {
  Response none = Serve({Method::kGet, "/v1/jobs", "", {}, {{"Authorization", ""}}});
  EXPECT_EQ(none.status, 401);
  Response unknown = Serve({Method::kGet, "/v1/jobs", "", {}, {{"Authorization", "Bearer x"}}});
  EXPECT_EQ(unknown.status, 401);
  EXPECT_EQ(Body(unknown)["code"], "unauthenticated");
}

TEST_F(HandlersTest, AJobsEnvIsRedactedOutsideItsTeam) {
  service_.jobs[JobId(7)].spec.team = "team-b";
  service_.jobs[JobId(7)].spec.env = {{"WANDB_API_KEY", "sk-123"}};
  service_.jobs[JobId(7)].spec.command = {"train.py", "--key=sk-123"};
  Response alice = Serve({Method::kGet, "/v1/jobs/7", "", {}, {{"Authorization", "Bearer alice"}}});
  EXPECT_EQ(alice.status, 200);
  EXPECT_EQ(alice.body.find("sk-123"), std::string::npos) << alice.body;
  EXPECT_EQ(Body(alice)["spec"]["env"]["WANDB_API_KEY"], "<redacted>");
  EXPECT_FALSE(Body(alice).contains("outputs"));
  Response admin = Serve({Method::kGet, "/v1/jobs/7"});
  EXPECT_EQ(Body(admin)["spec"]["env"]["WANDB_API_KEY"], "sk-123");
}

TEST_F(HandlersTest, ReportRejectsABadBodyNamingTheProblem) {
  Response not_json = Serve({Method::kPost, "/v1/jobs/7/report", "{"});
  EXPECT_EQ(not_json.status, 400);
  EXPECT_THAT(Body(not_json)["message"].get<std::string>(), HasSubstr("request body: "));
  Response unknown = Serve({Method::kPost, "/v1/jobs/7/report", R"({"eta": 3})"});
  EXPECT_EQ(unknown.status, 400);
  EXPECT_EQ(Body(unknown)["message"],
            "eta: unknown field; a report has useful_work_began, progress, throughput and unit");
  Response empty = Serve({Method::kPost, "/v1/jobs/7/report", "{}"});
  EXPECT_EQ(empty.status, 400);
}

TEST_F(HandlersTest, ReportAnswersTheAttemptsGoodput) {
  Response response = Serve(
      {Method::kPost, "/v1/jobs/7/report", R"({"useful_work_began": true, "progress": 0.5})"});
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(Body(response), (json{{"job", 7},
                                  {"attempt", 2},
                                  {"useful_work_at", service_.now},
                                  {"progress", 0.5},
                                  {"throughput", nullptr},
                                  {"throughput_unit", nullptr}}));
}

TEST_F(HandlersTest, CheckpointAnswersItsTime) {
  Response response = Serve({Method::kPost, "/v1/jobs/7/checkpoint"});
  EXPECT_EQ(Body(response), (json{{"job", 7}, {"checkpoint_at", service_.now}}));
}

TEST_F(HandlersTest, LogsAnswerTextWithTheOffsetHeaders) {
  service_.log = LogChunk{"hello\n", 6, true, true, 2, "succeeded"};
  Response response = Serve({Method::kGet, "/v1/jobs/7/logs", "", {{"stream", "stderr"}}});
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "hello\n");
  EXPECT_EQ(response.content_type, "text/plain; charset=utf-8");
  EXPECT_EQ(response.headers,
            (std::map<std::string, std::string>{{"X-Drover-Attempt", "2"},
                                                {"X-Drover-Finished", "1"},
                                                {"X-Drover-Job-State", "succeeded"},
                                                {"X-Drover-Next-Offset", "6"},
                                                {"X-Drover-Started", "1"}}));
  EXPECT_EQ(service_.log_stream, "stderr");
}

TEST_F(HandlersTest, LogsWaitForOutputAtMostTheLongPollLimit) {
  service_.log = LogChunk{"", 0, false, true, 1, "running"};
  const TimeMs start = service_.now;
  Response response = Serve({Method::kGet, "/v1/jobs/7/logs", "", {{"wait_ms", "999999"}}});
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.headers.at("X-Drover-Finished"), "0");
  EXPECT_EQ(service_.now - start, kMaxLongPollMs);
  EXPECT_EQ(service_.log_reads, kMaxLongPollMs / 100 + 1);
}

TEST_F(HandlersTest, AShippedLogChunkNamesItsWorkerAndIsAnsweredTheKeptSize) {
  Response response = Serve(
      {Method::kPost,
       "/v1/agents/n1/logs",
       "hello",
       {{"job", "7"}, {"attempt", "2"}, {"rank", "1"}, {"stream", "stderr"}, {"offset", "10"}},
       {{"Authorization", "Bearer cred-n1"}}});
  EXPECT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(Body(response), (json{{"size", 15}, {"full", false}}));
  EXPECT_EQ(service_.shipped_node, "n1");
  EXPECT_EQ(service_.shipped_key, (model::WorkerKey{JobId(7), 2, 1}));
  EXPECT_EQ(service_.shipped_stream, "stderr");
}

TEST_F(HandlersTest, AShippedLogChunkWithABadParameterIsRefusedNamingIt) {
  const std::map<std::string, std::string> kAgentN1 = {{"Authorization", "Bearer cred-n1"}};
  const std::map<std::string, std::string> good = {
      {"job", "7"}, {"attempt", "1"}, {"rank", "0"}, {"stream", "stdout"}, {"offset", "0"}};
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"job", ""}, {"attempt", "-1"}, {"rank", "4294967296"}, {"offset", "x"}}) {
    std::map<std::string, std::string> query = good;
    if (value.empty()) {
      query.erase(name);
    } else {
      query[name] = value;
    }
    Response response = Serve({Method::kPost, "/v1/agents/n1/logs", "x", query, kAgentN1});
    EXPECT_EQ(response.status, 400) << name;
    EXPECT_EQ(Body(response)["code"], "invalid_argument") << name;
    EXPECT_THAT(Body(response)["message"].get<std::string>(), HasSubstr("query parameter " + name))
        << Body(response);
  }
  Response big = Serve({Method::kPost, "/v1/agents/n1/logs",
                        std::string(kMaxAgentLogChunk + 1, 'x'), good, kAgentN1});
  EXPECT_EQ(big.status, 400);
  EXPECT_THAT(Body(big)["message"].get<std::string>(), HasSubstr("request body: a log chunk"));
  EXPECT_EQ(service_.shipped_node, "");  // none reached the service
}

TEST_F(HandlersTest, LogsRejectAParameterThatIsNoInteger) {
  Response response = Serve({Method::kGet, "/v1/jobs/7/logs", "", {{"rank", "one"}}});
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(Body(response)["message"], "query parameter rank: expected an integer, got 'one'");
}

TEST_F(HandlersTest, CancellingAFinishedPipelineRunIsAFailedPrecondition) {
  model::Job done = RunningJob(3);
  done.pipeline_run = JobId(3);
  done.state = model::JobState::kSucceeded;
  done.finished_at = 2'000;
  service_.runs[JobId(3)] = {done};
  Response response = Serve({Method::kPost, "/v1/pipelines/3/cancel"});
  EXPECT_EQ(response.status, 409);
  EXPECT_EQ(Body(response)["code"], "failed_precondition");
  EXPECT_THAT(Body(response)["message"].get<std::string>(),
              HasSubstr("pipeline run 3 has already finished"));
  EXPECT_EQ(service_.cancel_cause, "");
}

TEST_F(HandlersTest, AnUnknownPipelineRunIsNotFound) {
  EXPECT_EQ(Serve({Method::kGet, "/v1/pipelines/4"}).status, 404);
  EXPECT_EQ(Body(Serve({Method::kGet, "/v1/pipelines/0"}))["message"],
            "pipeline run 0 does not exist");
}

TEST_F(HandlersTest, CronsRejectABodyThatIsNoJsonAndDeleteMapsNotFound) {
  EXPECT_EQ(Serve({Method::kPost, "/v1/crons", "not json"}).status, 400);
  Response deleted = Serve({Method::kDelete, "/v1/crons/nightly"});
  EXPECT_EQ(deleted.status, 404);
  EXPECT_EQ(Body(deleted)["message"], "cron job nightly does not exist");
}

TEST(CronView, ShowsTheRunsAndNullsWhatIsUnset) {
  CronStatus status;
  status.record.spec.name = "nightly";
  status.record.owner = "alice";
  status.active = {CronRun{"nightly@1", {JobId(4), JobId(5)}, workflow::RunState::kRunning}};
  json view = CronView(status, Disclosure::kFull);
  EXPECT_EQ(view["name"], "nightly");
  EXPECT_EQ(view["owner"], "alice");
  EXPECT_EQ(view["next_run_at"], nullptr);
  EXPECT_EQ(view["last_run"], nullptr);
  EXPECT_EQ(view["active_runs"],
            (json::array({{{"id", "nightly@1"}, {"state", "running"}, {"jobs", {4, 5}}}})));
  EXPECT_EQ(view["history"], json::array());
}

TEST_F(HandlersTest, HealthAnswersTheTime) {
  EXPECT_EQ(Body(Serve({Method::kGet, "/v1/health"})),
            (json{{"status", "ok"}, {"time", service_.now}}));
}

TEST_F(HandlersTest, OpenApiAnswersTheBuiltInDocumentToATokenOnly) {
  Response response = Serve({Method::kGet, "/v1/openapi.json"});
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.content_type, "application/json");
  EXPECT_EQ(response.body, OpenApiDocument());
  EXPECT_EQ(Body(response)["openapi"], "3.1.0");
  Response anonymous = Serve({Method::kGet, "/v1/openapi.json", "", {}, {{"Authorization", ""}}});
  EXPECT_EQ(anonymous.status, 401);
}

TEST_F(HandlersTest, MetricsAnswerPrometheusTextFormat) {
  Response response = Serve({Method::kGet, "/metrics"});
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(response.body, service_.MetricsText());
}

TEST(Routes, RouteLabelsArePatternsWithPlaceholdersNeverPaths) {
  std::vector<std::string> labels;
  for (const Route& route : Routes()) labels.push_back(RouteLabel(route));
  EXPECT_THAT(labels, Contains("/v1/jobs/{id}/logs"));
  EXPECT_THAT(labels, Contains("/v1/teams/{name}/secrets/{name}"));
  EXPECT_THAT(labels, Contains("/metrics"));
  for (const std::string& label : labels) EXPECT_EQ(label.find_first_of("()\\"), std::string::npos);
  const api::Route* matched = nullptr;
  FakeService service;
  Request request;
  request.method = "GET";
  request.path = "/v1/jobs/123/nothing";
  Serve(service, request, &matched);
  EXPECT_EQ(matched, nullptr);  // the HTTP server files it under "unmatched"
}

TEST_F(HandlersTest, GoodputRejectsAnUnknownGrouping) {
  Response response = Serve({Method::kGet, "/v1/goodput", "", {{"by", "colour"}}});
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(Body(response)["code"], "invalid_argument");
}

// Under private_data the goodput report, like GET /v1/jobs, leaves out another team's jobs: their
// team's name and totals.
TEST_F(HandlersTest, GoodputUnderPrivateDataCountsOnlyTheCallersVisibleJobs) {
  service_.jobs[JobId(7)].spec.team = "team-a";
  service_.jobs[JobId(8)] = service_.jobs[JobId(7)];
  service_.jobs[JobId(8)].id = JobId(8);
  service_.jobs[JobId(8)].spec.team = "team-b";
  service_.policy.private_data = true;
  const std::string everything =
      Body(Serve({Method::kGet, "/v1/goodput", "", {{"by", "team"}}})).dump();
  EXPECT_THAT(everything, HasSubstr("team-a"));  // the admin sees both teams
  EXPECT_THAT(everything, HasSubstr("team-b"));
  const std::string bobs = Body(Serve({Method::kGet,
                                       "/v1/goodput",
                                       "",
                                       {{"by", "team"}},
                                       {{"Authorization", "Bearer bob"}}}))
                               .dump();
  EXPECT_THAT(bobs, HasSubstr("team-b"));
  EXPECT_THAT(bobs, Not(HasSubstr("team-a")));
}

TEST_F(HandlersTest, AReloadErrorKeepsItsCodeAndDetails) {
  service_.reload = MakeError(ErrorCode::kInvalidArgument, "policy.yaml: invalid",
                              {"policy.yaml:1:1: error: queues: expected a list"});
  Response response = Serve({Method::kPost, "/v1/policy/reload"});
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(Body(response)["details"],
            json::array({"policy.yaml:1:1: error: queues: expected a list"}));
}

TEST_F(HandlersTest, NodesShowWhetherRemoteAndLost) {
  NodeStatus remote;
  remote.node.name = NodeId("n2");
  remote.remote = true;
  remote.lost = true;
  remote.last_heard_at = 900;
  service_.nodes = {remote};
  json node = Body(Serve({Method::kGet, "/v1/nodes"}))["nodes"][0];
  EXPECT_EQ(node["remote"], true);
  EXPECT_EQ(node["state"], "lost");
  EXPECT_EQ(node["last_heard_at"], 900);
}

TEST_F(HandlersTest, GpusNameTheHolderOnlyToWhoMaySeeItsJob) {
  NodeStatus status;
  status.node.name = NodeId("n1");
  status.node.gpus.resize(2);
  status.node.gpus[0].model = "H100";
  status.node.gpus[1].index = 1;
  service_.nodes = {status};
  model::Job job = RunningJob(8);
  job.spec.owner = "alice";
  job.spec.team = "team-a";
  job.attempts.back().workers.resize(1);
  job.attempts.back().workers[0].node = NodeId("n1");
  job.attempts.back().workers[0].gpus = {1};
  service_.jobs[job.id] = job;
  json admin = Body(Serve({Method::kGet, "/v1/gpus"}))["gpus"];
  ASSERT_EQ(admin.size(), 2u) << admin.dump(2);
  EXPECT_EQ(admin[0]["state"], "idle");
  EXPECT_EQ(admin[0]["model"], "H100");
  EXPECT_EQ(admin[1]["state"], "allocated");
  EXPECT_EQ(admin[1]["job"], 8);
  EXPECT_EQ(admin[1]["owner"], "alice");
  // Under private_data, another team's caller sees that the GPU is held, not by whom.
  service_.policy.private_data = true;
  json other =
      Body(Serve({Method::kGet, "/v1/gpus", "", {}, {{"Authorization", "Bearer bob"}}}))["gpus"];
  ASSERT_EQ(other.size(), 2u) << other.dump(2);
  EXPECT_EQ(other[1]["state"], "allocated");
  EXPECT_EQ(other[1]["job"], nullptr);
  EXPECT_EQ(other[1]["owner"], nullptr);
  EXPECT_EQ(Serve({Method::kGet, "/v1/gpus", "", {}, {{"Authorization", "Bearer nobody"}}}).status,
            401);
}

TEST_F(HandlersTest, NodeConditionsSayWhatHoldsSinceWhenAndByWhom) {
  NodeStatus status;
  status.node.name = NodeId("n1");
  status.admin.cordoned = true;
  status.admin.cordoned_at = 500;
  status.admin.cordoned_by = "root (admin)";
  status.admin.reason = "disk swap";
  status.admin.draining = true;
  status.admin.draining_at = 600;
  status.admin.drain_deadline = 10'000;
  status.live_workers = 2;
  status.admin.maintenance =
      model::MaintenanceWindow{4'102'444'800'000, 4'102'448'400'000, "root (admin)", 700, ""};
  service_.nodes = {status};
  json node = Body(Serve({Method::kGet, "/v1/nodes"}))["nodes"][0];
  EXPECT_EQ(node["state"], "draining");
  ASSERT_EQ(node["conditions"].size(), 2u) << node.dump(2);
  EXPECT_EQ(node["conditions"][0]["type"], "draining");
  EXPECT_EQ(node["conditions"][0]["since"], 600);
  EXPECT_EQ(node["conditions"][0]["by"], "root (admin)");
  EXPECT_EQ(node["conditions"][1]["type"], "maintenance");
  EXPECT_EQ(node["conditions"][1]["active"], false);
  EXPECT_EQ(node["live_workers"], 2);
}

TEST_F(HandlersTest, NodeActionsNameTheBadFieldAndUnknownNodes) {
  NodeStatus status;
  status.node.name = NodeId("n1");
  service_.nodes = {status};
  struct Case {
    Call call;
    std::string field;
  } cases[] = {
      {{Method::kPost, "/v1/nodes/n1/drain", R"({"grace_ms": "soon"})"}, "grace_ms"},
      {{Method::kPost, "/v1/nodes/n1/drain", R"({"grace_ms": -1})"}, "grace_ms"},
      {{Method::kPost, "/v1/nodes/n1/cordon", R"({"reason": 3})"}, "reason"},
      {{Method::kPost, "/v1/nodes/n1/cordon", R"([1])"}, "request body"},
      {{Method::kPost, "/v1/nodes/n1/uncordon", R"({"reason": "x"})"}, "reason: unknown field"},
      {{Method::kPut, "/v1/nodes/n1/maintenance", R"({"from": 1})"}, "to: missing"},
      {{Method::kPut, "/v1/nodes/n1/maintenance", R"({"from": 1, "to": 1.5})"}, "to:"},
  };
  for (const Case& c : cases) {
    Response response = Serve(c.call);
    EXPECT_EQ(response.status, 400) << c.call.path << " " << c.call.body;
    EXPECT_EQ(Body(response)["code"], "invalid_argument");
    EXPECT_THAT(Body(response)["message"].get<std::string>(), ::testing::HasSubstr(c.field))
        << c.call.body;
  }
  EXPECT_EQ(Serve({Method::kPost, "/v1/nodes/nope/cordon"}).status, 404);
  Response ok = Serve({Method::kPost, "/v1/nodes/n1/cordon"});
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(Body(ok)["name"], "n1");
}

// A poll as the HTTP front hands it over: it may park.
Request ParkablePoll(std::map<std::string, std::string> query) {
  Request request;
  request.method = "GET";
  request.path = "/v1/agents/n1/commands";
  request.query = std::move(query);
  request.headers = {{"Authorization", "Bearer cred-n1"}};
  request.may_park = true;
  return request;
}

TEST_F(HandlersTest, AgentCommandsClampTheWaitAndAnswerTheWireForm) {
  Response response =
      api::Serve(service_, ParkablePoll({{"wait_ms", "999999"}, {"epoch", "7"}, {"ack", "3"}}));
  EXPECT_EQ(response.status, 200);
  EXPECT_FALSE(response.park);
  EXPECT_EQ(service_.commands_node, "n1");
  EXPECT_EQ(service_.commands_wait_ms, kMaxLongPollMs);
  EXPECT_EQ(service_.commands_ack.epoch, 7);
  EXPECT_EQ(service_.commands_ack.seq, 3);
  EXPECT_EQ(Body(response)["epoch"], 7);
  EXPECT_EQ(Body(response)["commands"][0]["kind"], "adopt");
  EXPECT_EQ(Body(response)["commands"][0]["seq"], 1);
  api::Serve(service_, ParkablePoll({{"wait_ms", "-5"}}));
  EXPECT_EQ(service_.commands_wait_ms, 0);
  Response bad = api::Serve(service_, ParkablePoll({{"ack", "x"}}));
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(Body(bad)["message"].get<std::string>(), HasSubstr("ack"));
}

TEST_F(HandlersTest, AnAgentPollWithNothingToSendParksOnlyWhereItMay) {
  service_.no_commands = true;
  Response parked = api::Serve(service_, ParkablePoll({{"wait_ms", "5000"}}));
  ASSERT_TRUE(parked.park);
  EXPECT_EQ(parked.park->key, AgentCommandsWakeKey(NodeId("n1")));
  EXPECT_EQ(parked.park->wait_ms, 5000);
  // Without a transport that parks (or at the park's deadline), it answers at once.
  Response answered = Serve({Method::kGet,
                             "/v1/agents/n1/commands",
                             "",
                             {{"wait_ms", "5000"}},
                             {{"Authorization", "Bearer cred-n1"}}});
  EXPECT_FALSE(answered.park);
  EXPECT_EQ(service_.commands_wait_ms, 0);
  EXPECT_EQ(Body(answered)["commands"], json::array());
}

TEST_F(HandlersTest, AgentEventsRejectABodyWithoutAnEventList) {
  Response response = Serve({Method::kPost,
                             "/v1/agents/n1/events",
                             R"({"event": 1})",
                             {},
                             {{"Authorization", "Bearer cred-n1"}}});
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(Body(response)["message"], R"(request body: expected {"events": [...]})");
  Response none = Serve({Method::kPost,
                         "/v1/agents/n1/events",
                         R"({"events": []})",
                         {},
                         {{"Authorization", "Bearer cred-n1"}}});
  EXPECT_EQ(Body(none), (json{{"accepted", true}}));
  EXPECT_EQ(service_.events_node, "n1");
}

TEST_F(HandlersTest, RegisteringSomethingThatIsNoNodeIsABadRequest) {
  EXPECT_EQ(Serve({Method::kPost, "/v1/agents/register", "[]"}).status, 400);
  EXPECT_EQ(service_.registered, "");
}

TEST(Routes, EveryRouteStatesWhoMayCallItAndTheAgentProtocolIsAgentsOnly) {
  for (const Route& route : Routes()) {
    EXPECT_NE(route.access.kind, Access::Kind::kUnstated) << route.pattern;
    const bool agents = std::string_view(route.pattern).starts_with("/v1/agents/");
    const bool agent_rule = route.access.kind == Access::Kind::kAgentRegistration ||
                            route.access.kind == Access::Kind::kAgentOfNode;
    EXPECT_EQ(agents, agent_rule) << route.pattern;
    // Health (load balancers and probes have no token) and the dashboard's files (they hold no
    // data) alone answer without a token; nothing under /v1 but health.
    const std::string_view pattern = route.pattern;
    const bool dashboard = !pattern.starts_with("/v1/") && pattern != "/metrics";
    EXPECT_EQ(route.access.kind == Access::Kind::kPublic, pattern == "/v1/health" || dashboard)
        << route.pattern;
  }
}

TEST(Routes, ARouteWithoutARuleRefusesEveryCall) {
  const Route unstated{Method::kGet, "/v1/new", nullptr, Access{}};
  FakeService service;
  Request request;
  request.method = "GET";
  request.path = "/v1/new";
  request.headers["Authorization"] = "Bearer admin";
  Result<Caller> caller = Authorize(unstated, service, request);
  ASSERT_FALSE(caller);
  EXPECT_EQ(caller.error().code, ErrorCode::kPermissionDenied);
}

TEST(ErrorCodes, IdentityErrorsAre401And403WithTheirNames) {
  EXPECT_EQ(HttpStatusFor(ErrorCode::kUnauthenticated), 401);
  EXPECT_EQ(HttpStatusFor(ErrorCode::kPermissionDenied), 403);
  EXPECT_EQ(ErrorCodeName(ErrorCode::kUnauthenticated), "unauthenticated");
  EXPECT_EQ(ErrorCodeName(ErrorCode::kPermissionDenied), "permission_denied");
  std::set<std::string_view> names;
  for (ErrorCode code : kErrorCodes) names.insert(ErrorCodeName(code));
  EXPECT_EQ(names.size(), std::size(kErrorCodes));
}

// Issue 16's "a fake agent without a credential gets no launch spec", from issue 15's agent
// identity: the agent protocol's per-node calls need that node's credential.
TEST_F(HandlersTest, AnAgentsCallsNeedItsNodesCredential) {
  Response none = Serve({Method::kGet, "/v1/agents/n1/commands"});
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(Body(none)["code"], "unauthenticated");
  EXPECT_THAT(Body(none)["message"].get<std::string>(), HasSubstr("node n1"));
  Response unknown = Serve(
      {Method::kGet, "/v1/agents/n1/commands", "", {}, {{"Authorization", "Bearer guessed"}}});
  EXPECT_EQ(unknown.status, 401);
  Response not_bearer =
      Serve({Method::kGet, "/v1/agents/n1/commands", "", {}, {{"Authorization", "Basic cred-n1"}}});
  EXPECT_EQ(not_bearer.status, 401);
  Response other = Serve({Method::kPost,
                          "/v1/agents/n1/events",
                          R"({"events": []})",
                          {},
                          {{"Authorization", "Bearer cred-n2"}}});
  EXPECT_EQ(other.status, 403);
  EXPECT_EQ(Body(other)["code"], "permission_denied");
  EXPECT_EQ(service_.commands_node, "");  // no handler ran
  EXPECT_EQ(service_.events_node, "");
  EXPECT_EQ(
      Serve({Method::kGet, "/v1/agents/n1/commands", "", {}, {{"Authorization", "bearer cred-n1"}}})
          .status,
      200);
}

TEST_F(HandlersTest, RegistrationAnswersTheIssuedCredentialAndNeedsTheJoinTokenWhenSet) {
  const std::string node = R"({"name": "n3", "cpu_millis": 1000, "memory_bytes": 1024})";
  Response first = Serve({Method::kPost, "/v1/agents/register", node});
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(
      Body(first),
      (json{{"node", "n3"}, {"credential", "issued-credential"}, {"agent_timeout_ms", 4'000}}));
  service_.join_token = "s3cret";
  service_.registered.clear();
  Response refused = Serve({Method::kPost, "/v1/agents/register", node});
  EXPECT_EQ(refused.status, 401);
  EXPECT_EQ(service_.registered, "");
  Response joined =
      Serve({Method::kPost, "/v1/agents/register", node, {}, {{"X-Drover-Join-Token", "s3cret"}}});
  EXPECT_EQ(joined.status, 200);
  EXPECT_TRUE(service_.registered_by.joined);
  Response own = Serve({Method::kPost,
                        "/v1/agents/register",
                        R"({"name": "n1"})",
                        {},
                        {{"Authorization", "Bearer cred-n1"}}});
  EXPECT_EQ(Body(own), (json{{"node", "n1"}, {"agent_timeout_ms", 4'000}}));
  EXPECT_EQ(service_.registered_by.agent, NodeId("n1"));
}

// Issue 15, "Agents are not who they say": {} registered node "", negative CPU and memory
// registered as ready, a name with '/' registered a node no agent could poll. Each is refused
// naming the field, and nothing is registered.
TEST_F(HandlersTest, RegistrationValidatesEveryFieldOfTheNode) {
  struct Case {
    std::string body;
    std::string detail;
  };
  const Case cases[] = {
      {"{}", "request body: name: node name is empty"},
      {R"({"name": "n3", "cpu_millis": -4000})", "request body: cpu_millis: must be from 0"},
      {R"({"name": "n3", "memory_bytes": -1})", "request body: memory_bytes: must be from 0"},
      {R"({"name": "a/b"})", "request body: name: invalid node name 'a/b'"},
      {R"({"name": "n\u001b[2J"})", "request body: name: invalid node name 'n\\x1b[2J'"},
      {R"({"name": "n3", "address": ""})", "request body: address: invalid address ''"},
      {R"({"name": "n3", "gpus": [{"index": 0, "model": "H100", "memory_bytes": 1},
                                  {"index": 0, "model": "H100", "memory_bytes": 1}]})",
       "request body: gpus[1].index: GPU index 0 is negative or repeated"},
      {R"({"name": "n3", "gpus": [{"index": 0, "model": "", "memory_bytes": 0}]})",
       "request body: gpus[0].memory_bytes: GPU memory must be from 1"},
      {R"({"name": "n3", "gpus": [{"index": 0, "model": "A100", "memory_bytes": 1,
                                   "sharing": "mig"}]})",
       "request body: gpus[0].mig: a MIG layout is given exactly when sharing is mig"},
  };
  for (const Case& c : cases) {
    Response response = Serve({Method::kPost, "/v1/agents/register", c.body});
    EXPECT_EQ(response.status, 400) << c.body;
    EXPECT_EQ(Body(response)["code"], "invalid_argument");
    const json body = Body(response);
    EXPECT_THAT(body["message"].get<std::string>(), HasSubstr("in request body"));
    std::string details;
    for (const json& detail : body["details"]) details += detail.get<std::string>() + "\n";
    EXPECT_THAT(details, HasSubstr(c.detail)) << c.body << " -> " << response.body;
  }
  EXPECT_EQ(service_.registered, "");
}

TEST_F(HandlersTest, AnAdminCreatesATokenWhichOnlyThatReplyHolds) {
  Response created =
      Serve({Method::kPost, "/v1/tokens",
             R"({"user": "ann", "team": "team-a", "role": "member", "queues": ["gpu"],
                 "expires_in_ms": 3600000})"});
  ASSERT_EQ(created.status, 200) << created.body;
  EXPECT_EQ(Body(created)["token"], "drv_secret");
  EXPECT_EQ(Body(created)["id"], "tok-000000000001");
  EXPECT_EQ(Body(created)["role"], "member");
  EXPECT_EQ(Body(created)["expires_at"], service_.now + 3'600'000);
  EXPECT_EQ(service_.created_identity.user, "ann");
  EXPECT_EQ(service_.created_identity.team, "team-a");
  EXPECT_THAT(service_.created_identity.queues, ElementsAre("gpu"));
  EXPECT_EQ(service_.created_expires_in_ms, 3'600'000);
  ASSERT_EQ(service_.audited.size(), 1u);
  EXPECT_EQ(service_.audited[0].action, "POST /v1/tokens");

  Response listed = Serve({Method::kGet, "/v1/tokens"});
  ASSERT_EQ(listed.status, 200);
  EXPECT_THAT(listed.body, Not(HasSubstr("drv_secret")));
  EXPECT_THAT(listed.body, Not(HasSubstr(std::string(64, 'f'))));  // nor the hash
  EXPECT_EQ(Body(listed)["tokens"][0]["state"], "active");

  Response revoked = Serve({Method::kPost, "/v1/tokens/tok-000000000001/revoke"});
  ASSERT_EQ(revoked.status, 200) << revoked.body;
  EXPECT_EQ(Body(revoked)["state"], "revoked");
  EXPECT_THAT(revoked.body, Not(HasSubstr("drv_secret")));
  EXPECT_EQ(Serve({Method::kPost, "/v1/tokens/tok-nope/revoke"}).status, 404);
}

TEST_F(HandlersTest, ATokenRequestNamesTheBadField) {
  struct Case {
    std::string body;
    std::string message;
  };
  const Case cases[] = {
      {R"({"team": "team-a", "role": "member"})", "user: missing"},
      {R"({"user": "a/b", "team": "team-a", "role": "member"})", "user: invalid user"},
      {R"({"user": "ann", "role": "member"})", "team: missing"},
      {R"({"user": "ann", "team": "team-a", "role": "boss"})", "role: 'boss' is not one of"},
      {R"({"user": "ann", "team": "team-a", "role": "member", "queues": "gpu"})",
       "queues: expected a list"},
      {R"({"user": "ann", "team": "team-a", "role": "member", "queues": ["GPU!"]})",
       "queues[0]: invalid queue"},
      {R"({"user": "ann", "team": "team-a", "role": "member", "expires_in_ms": -5})",
       "expires_in_ms: expected a whole number"},
      {R"({"user": "ann", "team": "team-a", "role": "member", "admin": true})",
       "admin: unknown field"},
      {R"([1])", "request body: expected a JSON object"},
  };
  for (const Case& c : cases) {
    Response response = Serve({Method::kPost, "/v1/tokens", c.body});
    EXPECT_EQ(response.status, 400) << c.body;
    EXPECT_EQ(Body(response)["code"], "invalid_argument");
    EXPECT_THAT(Body(response)["message"].get<std::string>(), HasSubstr(c.message)) << c.body;
  }
  EXPECT_THAT(service_.tokens, IsEmpty());
  // An admin may be of no team.
  EXPECT_EQ(Serve({Method::kPost, "/v1/tokens", R"({"user": "ops", "role": "admin"})"}).status,
            200);
}

TEST_F(HandlersTest, OnlyAnAdminManagesTokens) {
  for (const Call& call :
       {Call{Method::kPost, "/v1/tokens", R"({"user": "x", "role": "admin"})"},
        Call{Method::kGet, "/v1/tokens"}, Call{Method::kPost, "/v1/tokens/tok-1/revoke"}}) {
    Call as_member = call;
    as_member.headers = {{"Authorization", "Bearer alice"}};
    Response response = Serve(as_member);
    EXPECT_EQ(response.status, 403) << call.path;
    EXPECT_EQ(Body(response)["code"], "permission_denied");
    Call anonymous = call;
    anonymous.headers = {{"Authorization", "Bearer nobody"}};
    EXPECT_EQ(Serve(anonymous).status, 401) << call.path;
  }
  EXPECT_THAT(service_.tokens, IsEmpty());
}

TEST_F(HandlersTest, WhoAmIAnswersTheCallersIdentity) {
  Response response =
      Serve({Method::kGet, "/v1/whoami", "", {}, {{"Authorization", "Bearer alice"}}});
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(Body(response)["user"], "alice");
  EXPECT_EQ(Body(response)["team"], "team-a");
  EXPECT_EQ(Body(response)["role"], "member");
  EXPECT_EQ(Body(response)["describe"], "alice (member of team-a)");
  EXPECT_EQ(Serve({Method::kGet, "/v1/whoami", "", {}, {}}).status, 200);  // the admin
}

TEST_F(HandlersTest, TheAuditLogFiltersAndKeepsTheNewestVisibleRecords) {
  for (int i = 1; i <= 4; ++i) {
    store::AuditRecord record;
    record.seq = i;
    record.at = i * 1000;
    record.user = i % 2 == 1 ? "alice" : "bob";
    record.team = i % 2 == 1 ? "team-a" : "team-b";
    record.action = "POST /v1/jobs";
    if (i == 3) record.job = JobId(7);
    service_.audit_log.push_back(record);
  }
  Response all = Serve({Method::kGet, "/v1/audit"});
  ASSERT_EQ(all.status, 200) << all.body;
  EXPECT_EQ(Body(all)["records"].size(), 4u);

  Response limited = Serve({Method::kGet, "/v1/audit", "", {{"limit", "2"}, {"since", "1500"}}});
  ASSERT_EQ(limited.status, 200);
  ASSERT_EQ(Body(limited)["records"].size(), 2u);
  EXPECT_EQ(Body(limited)["records"][0]["seq"], 3);
  EXPECT_EQ(Body(limited)["records"][1]["seq"], 4);
  EXPECT_EQ(service_.listed_audit.since, 1500);

  Response by_job = Serve({Method::kGet, "/v1/audit", "", {{"job", "7"}, {"user", "alice"}}});
  ASSERT_EQ(Body(by_job)["records"].size(), 1u);
  EXPECT_EQ(Body(by_job)["records"][0]["job"], 7);

  EXPECT_EQ(Serve({Method::kGet, "/v1/audit", "", {{"limit", "-1"}}}).status, 400);
  EXPECT_EQ(Serve({Method::kGet, "/v1/audit", "", {}, {{"Authorization", "Bearer alice"}}}).status,
            403);
}

TEST(Request, AQueryParameterAbsentFallsBackAndAnIntegerMustBeWhole) {
  Request request;
  request.query = {{"offset", "12"}, {"wait_ms", "1.5"}};
  EXPECT_EQ(IntQuery(request, "offset", 0).value(), 12);
  EXPECT_EQ(IntQuery(request, "rank", 3).value(), 3);
  EXPECT_EQ(IntQuery(request, "wait_ms", 0).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(request.Query("stream", "stdout"), "stdout");
}

}  // namespace
}  // namespace drover::api
