#include "fuzz/fuzz_service.h"

namespace drover::fuzz {
namespace {

constexpr TimeMs kNow = 1'700'000'000'000;
const JobId kJob(1);

model::Job TheJob() {
  model::Job job;
  job.id = kJob;
  job.spec.name = "job";
  job.state = model::JobState::kRunning;
  return job;
}

Status FindJob(JobId id) {
  if (id == kJob) return OkStatus();
  return NotFound("job " + std::to_string(id.value()) + " does not exist");
}

}  // namespace

TimeMs FuzzService::Now() const { return kNow; }

Result<model::Identity> FuzzService::Authenticate(std::string_view) const {
  return model::AdminIdentity("fuzz");
}

void FuzzService::Audit(store::AuditRecord) {}

Result<api::CreatedToken> FuzzService::CreateToken(const model::Identity& identity, DurationMs,
                                                   const model::Identity&) {
  api::CreatedToken created;
  created.record.id = "tok-000000000001";
  created.record.identity = identity;
  created.token = "drv_fuzz";
  return created;
}

std::vector<store::TokenRecord> FuzzService::Tokens() const { return {}; }

Result<store::TokenRecord> FuzzService::RevokeToken(const std::string& id) {
  return NotFound("token " + id + " does not exist");
}

Result<std::vector<store::AuditRecord>> FuzzService::ListAudit(const store::AuditFilter&) const {
  return std::vector<store::AuditRecord>{};
}

Result<api::Submission> FuzzService::Submit(std::string_view text,
                                            const spec::ParseOptions& options, const std::string&,
                                            const model::Identity&) {
  DROVER_ASSIGN_OR_RETURN(std::vector<model::JobSpec> specs, spec::ParseJobs(text, options));
  api::Submission submission;
  std::int64_t next = kJob.value();
  for (model::JobSpec& spec : specs) {
    submission.jobs.push_back({JobId(next++), std::move(spec.name), model::JobState::kPending});
  }
  return submission;
}

std::vector<model::Job> FuzzService::ListJobs(const store::JobFilter&) const { return {TheJob()}; }

api::JobPage FuzzService::ListJobPage(const api::JobPageRequest& request) const {
  const model::Job job = TheJob();
  return api::SelectJobPage({{job.id, job}}, request);
}

Result<model::Job> FuzzService::ApplyJobVerb(JobId id, const api::JobVerb&,
                                             const model::Identity&) {
  DROVER_RETURN_IF_ERROR(FindJob(id));
  return TheJob();
}

Result<api::NodeStatus> FuzzService::ChangeNode(const api::NodeAction& action,
                                                const model::Identity&) {
  return NotFound("node " + action.node.value() + " does not exist");
}

Result<api::RemoteLogAck> FuzzService::AppendRemoteLog(const NodeId& node, const model::WorkerKey&,
                                                       const std::string&, std::int64_t,
                                                       std::string_view) {
  return NotFound("node " + node.value() + " is not registered");
}

Result<std::shared_ptr<api::StreamBody>> FuzzService::OpenEvents(const api::EventQuery&) {
  return Unavailable("the fuzzed service keeps no events");
}

Result<model::Job> FuzzService::GetJob(JobId id) const {
  DROVER_RETURN_IF_ERROR(FindJob(id));
  return TheJob();
}

Result<std::vector<model::Transition>> FuzzService::Transitions(JobId id) const {
  DROVER_RETURN_IF_ERROR(FindJob(id));
  return std::vector<model::Transition>{};
}

Result<control::Explanation> FuzzService::Explain(JobId id) const {
  DROVER_RETURN_IF_ERROR(FindJob(id));
  return control::Explanation{};
}

Result<std::vector<model::Decision>> FuzzService::Decisions(JobId id) const {
  DROVER_RETURN_IF_ERROR(FindJob(id));
  return std::vector<model::Decision>{};
}

Result<std::vector<model::AttemptUsage>> FuzzService::Usage(JobId id) const {
  DROVER_RETURN_IF_ERROR(FindJob(id));
  return std::vector<model::AttemptUsage>{};
}

Result<std::vector<model::UsageBucket>> FuzzService::UsageSeries(JobId id, int) const {
  DROVER_RETURN_IF_ERROR(FindJob(id));
  return std::vector<model::UsageBucket>{};
}

model::DiagnosisThresholds FuzzService::DiagnosisThresholds() const { return {}; }

Status FuzzService::ReportUsage(const NodeId&, model::UsageBatch) { return OkStatus(); }

Status FuzzService::Cancel(JobId id, std::string_view, const std::string&) { return FindJob(id); }

Result<TimeMs> FuzzService::ReportCheckpoint(JobId id) {
  DROVER_RETURN_IF_ERROR(FindJob(id));
  return kNow;
}

Result<model::Attempt> FuzzService::ReportProgress(JobId id, const model::ProgressReport& report) {
  DROVER_RETURN_IF_ERROR(FindJob(id));
  DROVER_RETURN_IF_ERROR(model::CheckProgressReport(report));
  model::Attempt attempt;
  attempt.number = 1;
  if (report.useful_work_began) attempt.useful_work_at = kNow;
  if (report.progress) attempt.progress = *report.progress;
  if (report.throughput) {
    attempt.throughput = *report.throughput;
    attempt.throughput_unit = report.unit;
  }
  return attempt;
}

Result<api::LogChunk> FuzzService::ReadLog(JobId id, int, int, const std::string&, std::int64_t,
                                           std::int64_t) const {
  DROVER_RETURN_IF_ERROR(FindJob(id));
  return api::LogChunk{};
}

std::uint64_t FuzzService::version() const { return 0; }

std::uint64_t FuzzService::WaitForChange(std::uint64_t seen, DurationMs) const { return seen; }

std::vector<std::vector<model::Job>> FuzzService::PipelineRuns() const { return {}; }

Result<std::vector<model::Job>> FuzzService::PipelineRun(JobId run) const {
  DROVER_RETURN_IF_ERROR(FindJob(run));
  return std::vector<model::Job>{TheJob()};
}

Status FuzzService::CancelPipeline(JobId run, std::string_view, const std::string&) {
  return FindJob(run);
}

Result<api::CronStatus> FuzzService::PutCron(const model::CronSpec& spec,
                                             const model::Identity& caller) {
  api::CronStatus status;
  status.record.spec = spec;
  status.record.owner = caller.user;
  status.record.team = caller.team;
  return status;
}

Status FuzzService::PutSecret(const std::string&, const std::string&, std::string_view) {
  return OkStatus();
}

Result<std::vector<api::SecretInfo>> FuzzService::ListSecrets(const std::string&) const {
  return std::vector<api::SecretInfo>{};
}

Status FuzzService::DeleteSecret(const std::string& team, const std::string& name) {
  return NotFound("team " + team + " has no secret " + name);
}

std::vector<api::CronStatus> FuzzService::Crons() const { return {}; }

Status FuzzService::DeleteCron(const std::string& name) {
  return NotFound("cron job " + name + " does not exist");
}

Result<api::CronStatus> FuzzService::SuspendCron(const std::string& name, bool) {
  return NotFound("cron job " + name + " does not exist");
}

Result<api::ServiceStatus> FuzzService::PutService(const model::ServiceSpec& spec,
                                                   const model::Identity& caller) {
  api::ServiceStatus status;
  status.record.spec = spec;
  status.record.owner = caller.user;
  status.record.team = caller.team;
  return status;
}

std::vector<api::ServiceStatus> FuzzService::Services() const { return {}; }

Status FuzzService::DeleteService(const std::string& name, const model::Identity&) {
  return NotFound("service " + name + " does not exist");
}

Status FuzzService::ReportServiceLoad(const std::string& name, model::LoadSignal) {
  return NotFound("service " + name + " does not exist");
}

std::vector<control::QueueReport> FuzzService::Queues() const { return {}; }

std::string FuzzService::MetricsText() const { return ""; }

model::Policy FuzzService::Policy() const { return {}; }

api::PolicyStatus FuzzService::PolicyInfo() const { return {}; }

Status FuzzService::ReloadPolicy() { return FailedPrecondition("the server has no policy file"); }

std::vector<api::NodeStatus> FuzzService::Nodes() const { return {}; }

std::vector<model::GpuActivity> FuzzService::LatestGpuActivity() const { return {}; }

Result<std::string> FuzzService::RegisterRemoteNode(const model::Node&, const api::Caller&) {
  return std::string();
}

std::optional<NodeId> FuzzService::AgentOf(std::string_view) const { return NodeId("gpu-a"); }

bool FuzzService::JoinTokenAccepted(std::string_view) const { return true; }

DurationMs FuzzService::AgentTimeout() const { return 30 * kMillisPerSecond; }

Result<api::AgentCommandBatch> FuzzService::TakeCommands(const NodeId&, const api::AgentAck&,
                                                         DurationMs) {
  return api::AgentCommandBatch{};
}

Status FuzzService::ReportEvents(const NodeId&, std::vector<model::WorkerEvent>) {
  return OkStatus();
}

}  // namespace drover::fuzz
