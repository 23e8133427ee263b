#include "drover/server/api_service.h"

#include <utility>

namespace drover::server {

TimeMs ControlPlaneService::Now() const { return plane_.Now(); }

Result<model::Identity> ControlPlaneService::Authenticate(std::string_view token) const {
  return plane_.Authenticate(token);
}

void ControlPlaneService::Audit(store::AuditRecord record) { plane_.Audit(std::move(record)); }

Result<api::CreatedToken> ControlPlaneService::CreateToken(const model::Identity& identity,
                                                           DurationMs expires_in_ms,
                                                           const model::Identity& caller) {
  return plane_.CreateToken(identity, expires_in_ms, caller);
}

std::vector<store::TokenRecord> ControlPlaneService::Tokens() const { return plane_.Tokens(); }

Result<store::TokenRecord> ControlPlaneService::RevokeToken(const std::string& id) {
  return plane_.RevokeToken(id);
}

Result<std::vector<store::AuditRecord>> ControlPlaneService::ListAudit(
    const store::AuditFilter& filter) const {
  return plane_.ListAudit(filter);
}

Result<api::Submission> ControlPlaneService::Submit(std::string_view text,
                                                    const spec::ParseOptions& options,
                                                    const std::string& idempotency_key,
                                                    const model::Identity& caller) {
  return plane_.Submit(text, options, idempotency_key, caller);
}

std::vector<model::Job> ControlPlaneService::ListJobs(const store::JobFilter& filter) const {
  return plane_.ListJobs(filter);
}

api::JobPage ControlPlaneService::ListJobPage(const api::JobPageRequest& request) const {
  return plane_.ListJobPage(request);
}

Result<model::Job> ControlPlaneService::GetJob(JobId id) const { return plane_.GetJob(id); }

Result<std::shared_ptr<api::StreamBody>> ControlPlaneService::OpenEvents(
    const api::EventQuery& query) {
  return plane_.events().Open(query, plane_.Policy(), plane_.TokenExpiresAt(query.caller.token_id));
}

Result<std::vector<model::Transition>> ControlPlaneService::Transitions(JobId id) const {
  return plane_.Transitions(id);
}

Result<control::Explanation> ControlPlaneService::Explain(JobId id) const {
  return plane_.Explain(id);
}

Result<std::vector<model::Decision>> ControlPlaneService::Decisions(JobId id) const {
  return plane_.Decisions(id);
}

Result<std::vector<model::AttemptUsage>> ControlPlaneService::Usage(JobId id) const {
  DROVER_RETURN_IF_ERROR(plane_.GetJob(id));
  return plane_.JobUsage(id);
}

Result<std::vector<model::UsageBucket>> ControlPlaneService::UsageSeries(JobId id,
                                                                         int attempt) const {
  DROVER_RETURN_IF_ERROR(plane_.GetJob(id));
  return plane_.UsageSeries(id, attempt);
}

model::DiagnosisThresholds ControlPlaneService::DiagnosisThresholds() const {
  return plane_.DiagnosisThresholds();
}

Status ControlPlaneService::ReportUsage(const NodeId& node, model::UsageBatch batch) {
  return plane_.IngestUsage(node, std::move(batch));
}

Status ControlPlaneService::Cancel(JobId id, std::string_view by, const std::string& cause) {
  return plane_.Cancel(id, by, cause);
}

Result<model::Job> ControlPlaneService::ApplyJobVerb(JobId id, const api::JobVerb& verb,
                                                     const model::Identity& caller) {
  return plane_.ApplyJobVerb(id, verb, caller.user);
}

Result<TimeMs> ControlPlaneService::ReportCheckpoint(JobId id) {
  TimeMs at = 0;
  DROVER_RETURN_IF_ERROR(plane_.ReportCheckpoint(id, &at));
  return at;
}

Result<model::Attempt> ControlPlaneService::ReportProgress(JobId id,
                                                           const model::ProgressReport& report) {
  return plane_.ReportProgress(id, report);
}

Result<api::LogChunk> ControlPlaneService::ReadLog(JobId id, int attempt, int rank,
                                                   const std::string& stream, std::int64_t offset,
                                                   std::int64_t max_bytes) const {
  return plane_.ReadLog(id, attempt, rank, stream, offset, max_bytes);
}

std::uint64_t ControlPlaneService::version() const { return plane_.version(); }

std::uint64_t ControlPlaneService::WaitForChange(std::uint64_t seen, DurationMs timeout_ms) const {
  return plane_.WaitForChange(seen, timeout_ms);
}

std::vector<std::vector<model::Job>> ControlPlaneService::PipelineRuns() const {
  return plane_.PipelineRuns();
}

Result<std::vector<model::Job>> ControlPlaneService::PipelineRun(JobId run) const {
  return plane_.PipelineRun(run);
}

Status ControlPlaneService::CancelPipeline(JobId run, std::string_view by,
                                           const std::string& cause) {
  return plane_.CancelPipeline(run, by, cause);
}

Result<api::CronStatus> ControlPlaneService::PutCron(const model::CronSpec& spec,
                                                     const model::Identity& caller) {
  return plane_.PutCron(spec, caller);
}

std::vector<api::CronStatus> ControlPlaneService::Crons() const { return plane_.Crons(); }

Status ControlPlaneService::DeleteCron(const std::string& name) { return plane_.DeleteCron(name); }

Result<api::CronStatus> ControlPlaneService::SuspendCron(const std::string& name, bool suspend) {
  return plane_.SuspendCron(name, suspend);
}

Result<api::ServiceStatus> ControlPlaneService::PutService(const model::ServiceSpec& spec,
                                                           const model::Identity& caller) {
  return plane_.PutService(spec, caller);
}

std::vector<api::ServiceStatus> ControlPlaneService::Services() const { return plane_.Services(); }

Status ControlPlaneService::DeleteService(const std::string& name, const model::Identity& caller) {
  return plane_.DeleteService(name, caller);
}

Status ControlPlaneService::ReportServiceLoad(const std::string& name, model::LoadSignal signal) {
  return plane_.ReportServiceLoad(name, signal);
}

Status ControlPlaneService::PutSecret(const std::string& team, const std::string& name,
                                      std::string_view value) {
  return plane_.PutSecret(team, name, value);
}

Result<std::vector<api::SecretInfo>> ControlPlaneService::ListSecrets(
    const std::string& team) const {
  return plane_.ListSecrets(team);
}

Status ControlPlaneService::DeleteSecret(const std::string& team, const std::string& name) {
  return plane_.DeleteSecret(team, name);
}

std::vector<control::QueueReport> ControlPlaneService::Queues() const { return plane_.Queues(); }

std::string ControlPlaneService::MetricsText() const { return plane_.MetricsText(); }

model::Policy ControlPlaneService::Policy() const { return plane_.Policy(); }

api::PolicyStatus ControlPlaneService::PolicyInfo() const { return plane_.PolicyInfo(); }

Status ControlPlaneService::ReloadPolicy() { return plane_.ReloadPolicy(); }

std::vector<api::NodeStatus> ControlPlaneService::Nodes() const { return plane_.Nodes(); }

std::vector<model::GpuActivity> ControlPlaneService::LatestGpuActivity() const {
  return plane_.LatestGpuActivity();
}

Result<api::NodeStatus> ControlPlaneService::ChangeNode(const api::NodeAction& action,
                                                        const model::Identity& caller) {
  return plane_.ChangeNode(action, caller);
}

Result<std::string> ControlPlaneService::RegisterRemoteNode(const model::Node& node,
                                                            const api::Caller& caller) {
  return plane_.RegisterRemoteNode(node, caller);
}

std::optional<NodeId> ControlPlaneService::AgentOf(std::string_view credential) const {
  return plane_.AgentOf(credential);
}

bool ControlPlaneService::JoinTokenAccepted(std::string_view token) const {
  return plane_.JoinTokenAccepted(token);
}

DurationMs ControlPlaneService::AgentTimeout() const { return plane_.agent_timeout_ms(); }

Result<api::AgentCommandBatch> ControlPlaneService::TakeCommands(const NodeId& node,
                                                                 const api::AgentAck& ack,
                                                                 DurationMs wait_ms) {
  DROVER_ASSIGN_OR_RETURN(CommandBatch batch, plane_.TakeCommands(node, ack, wait_ms));
  api::AgentCommandBatch wire{batch.epoch, {}};
  wire.commands.reserve(batch.commands.size());
  for (const AgentCommand& command : batch.commands) wire.commands.push_back(ToJson(command));
  return wire;
}

Status ControlPlaneService::ReportEvents(const NodeId& node,
                                         std::vector<model::WorkerEvent> events) {
  return plane_.ReportEvents(node, std::move(events));
}

Result<api::RemoteLogAck> ControlPlaneService::AppendRemoteLog(const NodeId& node,
                                                               const model::WorkerKey& key,
                                                               const std::string& stream,
                                                               std::int64_t offset,
                                                               std::string_view data) {
  return plane_.AppendRemoteLog(node, key, stream, offset, data);
}

}  // namespace drover::server
