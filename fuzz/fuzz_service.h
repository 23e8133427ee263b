#pragma once

// FuzzService: the api::Service the API harness runs the route table against. It answers like
// the server does at the boundary the handlers see, without a control plane: Submit parses the
// text with spec::ParseJobs as ControlPlane::Submit does (so a body goes through the same parser
// as in the server), job 1 and pipeline run 1 exist, every registration and event report is
// accepted, and reads answer empty. Every token is an admin's, so that every route's handler is
// reached. Nothing is kept between calls, so every input runs against the same service.
//
// Thread-safety: stateless; safe to call from many threads.

#include "drover/api/service.h"

namespace drover::fuzz {

class FuzzService final : public api::Service {
 public:
  TimeMs Now() const override;
  Result<model::Identity> Authenticate(std::string_view token) const override;
  void Audit(store::AuditRecord record) override;
  Result<api::CreatedToken> CreateToken(const model::Identity& identity, DurationMs expires_in_ms,
                                        const model::Identity& caller) override;
  std::vector<store::TokenRecord> Tokens() const override;
  Result<store::TokenRecord> RevokeToken(const std::string& id) override;
  Result<std::vector<store::AuditRecord>> ListAudit(
      const store::AuditFilter& filter) const override;
  Result<api::Submission> Submit(std::string_view text, const spec::ParseOptions& options,
                                 const std::string& idempotency_key,
                                 const model::Identity& caller) override;
  std::vector<model::Job> ListJobs(const store::JobFilter& filter) const override;
  api::JobPage ListJobPage(const api::JobPageRequest& request) const override;
  Result<model::Job> ApplyJobVerb(JobId id, const api::JobVerb& verb,
                                  const model::Identity& caller) override;
  Result<api::NodeStatus> ChangeNode(const api::NodeAction& action,
                                     const model::Identity& caller) override;
  Result<api::RemoteLogAck> AppendRemoteLog(const NodeId& node, const model::WorkerKey& key,
                                            const std::string& stream, std::int64_t offset,
                                            std::string_view data) override;
  Result<model::Job> GetJob(JobId id) const override;
  Result<std::shared_ptr<api::StreamBody>> OpenEvents(const api::EventQuery& query) override;
  Result<std::vector<model::Transition>> Transitions(JobId id) const override;
  Result<control::Explanation> Explain(JobId id) const override;
  Result<std::vector<model::Decision>> Decisions(JobId id) const override;
  Result<std::vector<model::AttemptUsage>> Usage(JobId id) const override;
  Result<std::vector<model::UsageBucket>> UsageSeries(JobId id, int attempt) const override;
  model::DiagnosisThresholds DiagnosisThresholds() const override;
  Status ReportUsage(const NodeId& node, model::UsageBatch batch) override;
  Status Cancel(JobId id, std::string_view by, const std::string& cause) override;
  Result<TimeMs> ReportCheckpoint(JobId id) override;
  Result<model::Attempt> ReportProgress(JobId id, const model::ProgressReport& report) override;
  Result<api::LogChunk> ReadLog(JobId id, int attempt, int rank, const std::string& stream,
                                std::int64_t offset, std::int64_t max_bytes) const override;
  std::uint64_t version() const override;
  std::uint64_t WaitForChange(std::uint64_t seen, DurationMs timeout_ms) const override;
  std::vector<std::vector<model::Job>> PipelineRuns() const override;
  Result<std::vector<model::Job>> PipelineRun(JobId run) const override;
  Status CancelPipeline(JobId run, std::string_view by, const std::string& cause) override;
  Result<api::CronStatus> PutCron(const model::CronSpec& spec,
                                  const model::Identity& caller) override;
  std::vector<api::CronStatus> Crons() const override;
  Status DeleteCron(const std::string& name) override;
  Result<api::CronStatus> SuspendCron(const std::string& name, bool suspend) override;
  Result<api::ServiceStatus> PutService(const model::ServiceSpec& spec,
                                        const model::Identity& caller) override;
  std::vector<api::ServiceStatus> Services() const override;
  Status DeleteService(const std::string& name, const model::Identity& caller) override;
  Status ReportServiceLoad(const std::string& name, model::LoadSignal signal) override;
  Status PutSecret(const std::string& team, const std::string& name,
                   std::string_view value) override;
  Result<std::vector<api::SecretInfo>> ListSecrets(const std::string& team) const override;
  Status DeleteSecret(const std::string& team, const std::string& name) override;
  std::vector<control::QueueReport> Queues() const override;
  std::string MetricsText() const override;
  model::Policy Policy() const override;
  api::PolicyStatus PolicyInfo() const override;
  Status ReloadPolicy() override;
  std::vector<api::NodeStatus> Nodes() const override;
  std::vector<model::GpuActivity> LatestGpuActivity() const override;
  Result<std::string> RegisterRemoteNode(const model::Node& node,
                                         const api::Caller& caller) override;
  // Every credential is node gpu-a's, so that the agent routes' handlers are reached.
  std::optional<NodeId> AgentOf(std::string_view credential) const override;
  bool JoinTokenAccepted(std::string_view token) const override;
  DurationMs AgentTimeout() const override;
  Result<api::AgentCommandBatch> TakeCommands(const NodeId& node, const api::AgentAck& ack,
                                              DurationMs wait_ms) override;
  Status ReportEvents(const NodeId& node, std::vector<model::WorkerEvent> events) override;
};

}  // namespace drover::fuzz
