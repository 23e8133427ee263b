// NewMemoryStore(): the Store contract over in-process maps, for unit tests and the simulator.
//
// Thread-safety: one std::shared_mutex; Apply takes it exclusively, reads share it. Apply
// validates the whole batch before changing anything, so a failed Apply leaves no trace.

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <tuple>
#include <unordered_set>
#include <vector>

#include "drover/store/store.h"
#include "drover/store/store_util.h"

namespace drover::store {
namespace {

class MemoryStore final : public Store {
 public:
  Status Apply(const Batch& batch) override {
    DROVER_RETURN_IF_ERROR(ValidateBatchShape(batch));
    std::unique_lock lock(mutex_);
    std::unordered_set<std::int64_t> batch_ids;
    for (const model::Job& job : batch.jobs) batch_ids.insert(job.id.value());
    for (std::size_t i = 0; i < batch.transitions.size(); ++i) {
      const std::int64_t id = batch.transitions[i].job.value();
      if (!batch_ids.contains(id) && !jobs_.contains(id)) return UnknownJobError(i, id);
    }
    for (std::size_t i = 0; i < batch.decisions.size(); ++i) {
      const std::int64_t id = batch.decisions[i].job.value();
      if (!batch_ids.contains(id) && !jobs_.contains(id)) {
        return UnknownJobError("decisions", i, id);
      }
    }
    for (const model::Job& job : batch.jobs) {
      const std::int64_t id = job.id.value();
      auto it = jobs_.find(id);
      if (it != jobs_.end() && !it->second.submission_key.empty()) {
        submissions_.erase({it->second.submission_key, id});
      }
      if (!job.submission_key.empty()) submissions_.insert({job.submission_key, id});
      jobs_.insert_or_assign(id, job);
    }
    for (const model::Transition& transition : batch.transitions) {
      transitions_[transition.job.value()].push_back(transition);
    }
    for (const NodeAdminRecord& record : batch.nodes) {
      node_admin_.insert_or_assign(record.node.value(), record);
    }
    for (const model::Decision& decision : batch.decisions) {
      const std::size_t index = decisions_.size();
      decisions_.push_back(decision);
      decisions_by_job_[decision.job.value()].push_back(index);
      for (std::int64_t other : OtherJobsOf(decision)) decisions_by_job_[other].push_back(index);
    }
    return OkStatus();
  }

  Result<std::vector<model::Job>> ListJobs(const JobFilter& filter) const override {
    DROVER_RETURN_IF_ERROR(ValidateFilter(filter));
    std::shared_lock lock(mutex_);
    std::vector<model::Job> out;
    auto visit = [&](const model::Job& job) {
      if (!Matches(filter, job)) return true;
      out.push_back(job);
      return filter.limit == 0 || static_cast<int>(out.size()) < filter.limit;
    };
    if (filter.limit > 0) {
      for (auto it = jobs_.rbegin(); it != jobs_.rend(); ++it) {
        if (!visit(it->second)) break;
      }
    } else {
      for (const auto& [id, job] : jobs_) visit(job);
    }
    return out;
  }

  Result<model::Job> GetJob(JobId id) const override {
    std::shared_lock lock(mutex_);
    auto it = jobs_.find(id.value());
    if (it == jobs_.end()) return NotFound(fmt::format("job {} not found", id.value()));
    return it->second;
  }

  Result<std::vector<model::Transition>> ListTransitions(JobId id) const override {
    std::shared_lock lock(mutex_);
    auto it = transitions_.find(id.value());
    if (it == transitions_.end()) return std::vector<model::Transition>{};
    return it->second;
  }

  Result<std::vector<model::Decision>> ListDecisions(JobId id) const override {
    std::shared_lock lock(mutex_);
    std::vector<model::Decision> out;
    auto it = decisions_by_job_.find(id.value());
    if (it == decisions_by_job_.end()) return out;
    for (std::size_t index : it->second) out.push_back(decisions_[index]);
    return out;
  }

  Result<std::vector<JobId>> FindSubmission(const std::string& key) const override {
    std::vector<JobId> out;
    if (key.empty()) return out;
    std::shared_lock lock(mutex_);
    for (auto it = submissions_.lower_bound({key, 0}); it != submissions_.end() && it->first == key;
         ++it) {
      out.push_back(JobId(it->second));
    }
    return out;
  }

  Result<std::int64_t> MaxJobId() const override {
    std::shared_lock lock(mutex_);
    return jobs_.empty() ? 0 : jobs_.rbegin()->first;
  }

  Status PutCron(const CronRecord& cron) override {
    std::unique_lock lock(mutex_);
    crons_.insert_or_assign(cron.spec.name, cron);
    return OkStatus();
  }

  Status DeleteCron(const std::string& name) override {
    std::unique_lock lock(mutex_);
    if (crons_.erase(name) == 0) return NotFound(fmt::format("cron job {} not found", name));
    return OkStatus();
  }

  Result<std::vector<CronRecord>> ListCrons() const override {
    std::shared_lock lock(mutex_);
    std::vector<CronRecord> out;
    for (const auto& [name, cron] : crons_) out.push_back(cron);
    return out;
  }

  Status PutService(const ServiceRecord& service) override {
    if (service.spec.name.empty()) return InvalidArgument("service.spec.name: must not be empty");
    std::unique_lock lock(mutex_);
    services_.insert_or_assign(service.spec.name, service);
    return OkStatus();
  }

  Status DeleteService(const std::string& name) override {
    std::unique_lock lock(mutex_);
    if (services_.erase(name) == 0) return NotFound(fmt::format("service {} not found", name));
    return OkStatus();
  }

  Result<std::vector<ServiceRecord>> ListServices() const override {
    std::shared_lock lock(mutex_);
    std::vector<ServiceRecord> out;
    for (const auto& [name, service] : services_) out.push_back(service);
    return out;
  }

  Status PutAgent(const AgentRecord& agent) override {
    DROVER_RETURN_IF_ERROR(ValidateAgent(agent));
    std::unique_lock lock(mutex_);
    agents_.insert_or_assign(agent.node.value(), agent);
    return OkStatus();
  }

  Result<std::vector<AgentRecord>> ListAgents() const override {
    std::shared_lock lock(mutex_);
    std::vector<AgentRecord> out;
    for (const auto& [name, agent] : agents_) out.push_back(agent);
    return out;
  }

  Result<std::vector<NodeAdminRecord>> ListNodeAdmin() const override {
    std::shared_lock lock(mutex_);
    std::vector<NodeAdminRecord> out;
    for (const auto& [name, record] : node_admin_) out.push_back(record);
    return out;
  }

  Status PutToken(const TokenRecord& token) override {
    DROVER_RETURN_IF_ERROR(ValidateToken(token));
    std::unique_lock lock(mutex_);
    tokens_.insert_or_assign(token.id, token);
    return OkStatus();
  }

  Result<std::vector<TokenRecord>> ListTokens() const override {
    std::shared_lock lock(mutex_);
    std::vector<TokenRecord> out;
    for (const auto& [id, token] : tokens_) out.push_back(token);
    return out;
  }

  Status AppendAudit(const std::vector<AuditRecord>& records) override {
    std::unique_lock lock(mutex_);
    for (AuditRecord record : records) {
      record.seq = static_cast<std::int64_t>(audit_.size()) + 1;
      audit_.push_back(std::move(record));
    }
    return OkStatus();
  }

  Result<std::vector<AuditRecord>> ListAudit(const AuditFilter& filter) const override {
    DROVER_RETURN_IF_ERROR(ValidateFilter(filter));
    std::shared_lock lock(mutex_);
    std::vector<AuditRecord> out;
    for (auto it = audit_.rbegin(); it != audit_.rend(); ++it) {
      if (filter.limit > 0 && static_cast<int>(out.size()) == filter.limit) break;
      if (Matches(filter, *it)) out.push_back(*it);
    }
    std::reverse(out.begin(), out.end());
    return out;
  }

  Status PutFairShare(const model::FairShareHistory& history) override {
    DROVER_RETURN_IF_ERROR(ValidateFairShare(history));
    model::FairShareHistory sorted = history;
    std::sort(sorted.entries.begin(), sorted.entries.end(), [](const auto& a, const auto& b) {
      return std::tie(a.queue, a.user) < std::tie(b.queue, b.user);
    });
    std::unique_lock lock(mutex_);
    fair_share_ = std::move(sorted);
    return OkStatus();
  }

  Status PutUsage(const model::AttemptUsage& usage,
                  const std::vector<model::UsageBucket>& buckets) override {
    DROVER_RETURN_IF_ERROR(ValidateUsage(usage, buckets));
    std::unique_lock lock(mutex_);
    const auto key = std::pair(usage.job, usage.attempt);
    usage_[key] = usage;
    for (const model::UsageBucket& bucket : buckets) series_[key][bucket.start] = bucket;
    return OkStatus();
  }

  Result<std::vector<model::AttemptUsage>> ListUsage(JobId job) const override {
    std::shared_lock lock(mutex_);
    std::vector<model::AttemptUsage> out;
    for (auto it = usage_.lower_bound(std::pair(job, 0));
         it != usage_.end() && it->first.first == job; ++it) {
      out.push_back(it->second);
    }
    return out;
  }

  Result<std::vector<model::UsageBucket>> GetUsageSeries(JobId job, int attempt) const override {
    std::shared_lock lock(mutex_);
    std::vector<model::UsageBucket> out;
    if (auto it = series_.find(std::pair(job, attempt)); it != series_.end()) {
      for (const auto& [start, bucket] : it->second) out.push_back(bucket);
    }
    return out;
  }

  Result<model::FairShareHistory> GetFairShare() const override {
    std::shared_lock lock(mutex_);
    return fair_share_;
  }

 private:
  mutable std::shared_mutex mutex_;
  std::map<std::int64_t, model::Job> jobs_;                             // by id
  std::map<std::int64_t, std::vector<model::Transition>> transitions_;  // by job, applied order
  std::set<std::pair<std::string, std::int64_t>> submissions_;          // (key, job id)
  std::vector<model::Decision> decisions_;                              // applied order
  std::map<std::int64_t, std::vector<std::size_t>> decisions_by_job_;   // job -> decisions_ index
  std::map<std::string, ServiceRecord> services_;                       // by name
  std::map<std::string, CronRecord> crons_;                             // by name
  std::map<std::string, AgentRecord> agents_;                           // by node name
  std::map<std::string, NodeAdminRecord> node_admin_;                   // by node name
  std::map<std::string, TokenRecord> tokens_;                           // by id
  std::vector<AuditRecord> audit_;                                      // by seq (index + 1)
  std::map<std::pair<JobId, int>, model::AttemptUsage> usage_;          // by (job, attempt)
  std::map<std::pair<JobId, int>, std::map<TimeMs, model::UsageBucket>> series_;  // and start
  model::FairShareHistory fair_share_;                                            // the last saved
};

}  // namespace

std::unique_ptr<Store> NewMemoryStore() { return std::make_unique<MemoryStore>(); }

}  // namespace drover::store
