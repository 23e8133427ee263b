#pragma once

// FaultyStore: a Store that passes every call to another one, and fails or stalls the writes
// (Apply) a test chooses, for tests of what a driver does when the store fails mid-step
// (leveldb's fault_injection_test, for the state journal).

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "drover/store/store.h"

namespace drover::testing {

// Wraps `base`, which it does not own and which must outlive it: a test keeps the base store
// (a memory store survives the "crash") and opens a new driver over it. A failed Apply applies
// nothing to the base, as a failed transaction. Thread-safe.
class FaultyStore final : public store::Store {
 public:
  explicit FaultyStore(store::Store& base) : base_(base) {}

  // The `n`th Apply from now (1: the next one) fails with `code`.
  void FailNthApply(int n, ErrorCode code = ErrorCode::kUnavailable);
  // While `failing`, every Apply fails with `code`.
  void SetFailing(bool failing, ErrorCode code = ErrorCode::kUnavailable);
  // While `stalled`, every Apply waits (before it applies) until stalled is cleared.
  void SetStalled(bool stalled);
  // How many Apply calls are waiting in a stall now.
  int stalled_applies() const;
  // How many Apply calls were made, and how many of them failed by an injected fault.
  int applies() const;
  int failed_applies() const;

  Status Apply(const store::Batch& batch) override;
  Result<std::vector<model::Job>> ListJobs(const store::JobFilter& filter) const override {
    return base_.ListJobs(filter);
  }
  Result<model::Job> GetJob(JobId id) const override { return base_.GetJob(id); }
  Result<std::vector<model::Transition>> ListTransitions(JobId id) const override {
    return base_.ListTransitions(id);
  }
  Result<std::vector<model::Decision>> ListDecisions(JobId id) const override {
    return base_.ListDecisions(id);
  }
  Result<std::vector<JobId>> FindSubmission(const std::string& key) const override {
    return base_.FindSubmission(key);
  }
  Result<std::int64_t> MaxJobId() const override { return base_.MaxJobId(); }
  Status PutCron(const store::CronRecord& cron) override { return base_.PutCron(cron); }
  Status DeleteCron(const std::string& name) override { return base_.DeleteCron(name); }
  Result<std::vector<store::CronRecord>> ListCrons() const override { return base_.ListCrons(); }
  Status PutService(const store::ServiceRecord& service) override {
    return base_.PutService(service);
  }
  Status DeleteService(const std::string& name) override { return base_.DeleteService(name); }
  Result<std::vector<store::ServiceRecord>> ListServices() const override {
    return base_.ListServices();
  }
  Status PutAgent(const store::AgentRecord& agent) override { return base_.PutAgent(agent); }
  Result<std::vector<store::AgentRecord>> ListAgents() const override { return base_.ListAgents(); }
  Result<std::vector<store::NodeAdminRecord>> ListNodeAdmin() const override {
    return base_.ListNodeAdmin();
  }
  Status PutToken(const store::TokenRecord& token) override { return base_.PutToken(token); }
  Result<std::vector<store::TokenRecord>> ListTokens() const override { return base_.ListTokens(); }
  // Fails while SetFailing is on (the store is down), with the same code; never stalls and is
  // not counted among the applies, so the Apply numbers a test injects at stay those of Apply.
  Status AppendAudit(const std::vector<store::AuditRecord>& records) override;
  Result<std::vector<store::AuditRecord>> ListAudit(
      const store::AuditFilter& filter) const override {
    return base_.ListAudit(filter);
  }
  Status PutFairShare(const model::FairShareHistory& history) override {
    return base_.PutFairShare(history);
  }
  Result<model::FairShareHistory> GetFairShare() const override { return base_.GetFairShare(); }
  Status PutUsage(const model::AttemptUsage& usage,
                  const std::vector<model::UsageBucket>& buckets) override {
    return base_.PutUsage(usage, buckets);
  }
  Result<std::vector<model::AttemptUsage>> ListUsage(JobId job) const override {
    return base_.ListUsage(job);
  }
  Result<std::vector<model::UsageBucket>> GetUsageSeries(JobId job, int attempt) const override {
    return base_.GetUsageSeries(job, attempt);
  }

 private:
  store::Store& base_;
  mutable std::mutex mu_;
  std::condition_variable unstalled_;
  int applies_ = 0;
  int failed_ = 0;
  int stalled_now_ = 0;
  std::optional<int> fail_at_;  // the Apply number (applies_ after counting it) that fails
  ErrorCode fail_at_code_ = ErrorCode::kUnavailable;
  std::optional<ErrorCode> failing_;
  bool stalled_ = false;
};

}  // namespace drover::testing
