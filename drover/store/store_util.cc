#include "drover/store/store_util.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

namespace drover::store {

Status ValidateBatchShape(const Batch& batch) {
  for (std::size_t i = 0; i < batch.jobs.size(); ++i) {
    if (batch.jobs[i].id.value() < 1) {
      return InvalidArgument(fmt::format("batch.jobs[{}].id: job ids start at 1, got {}", i,
                                         batch.jobs[i].id.value()));
    }
  }
  for (std::size_t i = 0; i < batch.nodes.size(); ++i) {
    if (batch.nodes[i].node.value().empty()) {
      return InvalidArgument(fmt::format("batch.nodes[{}].node: empty node name", i));
    }
  }
  return OkStatus();
}

Status ValidateAgent(const AgentRecord& agent) {
  if (agent.node.value().empty()) return InvalidArgument("agent.node: empty node name");
  return OkStatus();
}

Status ValidateToken(const TokenRecord& token) {
  if (token.id.empty()) return InvalidArgument("token.id: empty token id");
  if (token.hash.empty()) return InvalidArgument(fmt::format("token {}: empty hash", token.id));
  return OkStatus();
}

Status ValidateUsage(const model::AttemptUsage& usage,
                     const std::vector<model::UsageBucket>& buckets) {
  if (usage.job.value() < 1) return InvalidArgument("usage.job_id: must be at least 1");
  if (usage.attempt < 1) return InvalidArgument("usage.attempt: must be at least 1");
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    if (buckets[i].start % model::kUsageBucketMs != 0) {
      return InvalidArgument(
          fmt::format("buckets[{}].start_at: not a multiple of {} ms", i, model::kUsageBucketMs));
    }
  }
  return OkStatus();
}

Status ValidateFairShare(const model::FairShareHistory& history) {
  std::set<std::pair<std::string, std::string>> seen;
  for (std::size_t i = 0; i < history.entries.size(); ++i) {
    const model::FairShareHistory::Entry& entry = history.entries[i];
    if (entry.queue.empty()) {
      return InvalidArgument(fmt::format("entries[{}].queue: must not be empty", i));
    }
    if (!seen.emplace(entry.queue, entry.user).second) {
      return InvalidArgument(fmt::format("entries[{}]: a second entry of queue {}{}", i,
                                         entry.queue,
                                         entry.user.empty() ? "" : " and user " + entry.user));
    }
    for (const auto& [resource, amount] : entry.usage) {
      if (resource.empty()) {
        return InvalidArgument(fmt::format("entries[{}].usage: empty resource name", i));
      }
      if (!(amount > 0.0) || !std::isfinite(amount)) {
        return InvalidArgument(fmt::format(
            "entries[{}].usage.{}: must be finite and above 0 (is {})", i, resource, amount));
      }
    }
  }
  return OkStatus();
}

namespace {

Status ValidateLimit(int limit) {
  if (limit < 0) {
    return InvalidArgument(fmt::format("filter.limit: must be 0 or more, got {}", limit));
  }
  return OkStatus();
}

}  // namespace

Status ValidateFilter(const JobFilter& filter) { return ValidateLimit(filter.limit); }

Status ValidateFilter(const AuditFilter& filter) { return ValidateLimit(filter.limit); }

bool Matches(const AuditFilter& filter, const AuditRecord& record) {
  if (record.at < filter.since) return false;
  if (!filter.user.empty() && record.user != filter.user) return false;
  if (!filter.team.empty() && record.team != filter.team) return false;
  if (filter.job && record.job != filter.job) return false;
  return true;
}

bool Matches(const JobFilter& filter, const model::Job& job) {
  if (filter.state && job.state != *filter.state) return false;
  if (!filter.owner.empty() && job.spec.owner != filter.owner) return false;
  if (!filter.team.empty() && job.spec.team != filter.team) return false;
  if (!filter.queue.empty() && job.spec.queue != filter.queue) return false;
  if (!filter.name.empty() && job.spec.name != filter.name) return false;
  if (filter.active_only && model::IsTerminal(job.state)) return false;
  return true;
}

std::string SqlUnfinishedStateCondition() {
  std::vector<std::string> finished;
  for (const auto& [state, name] : model::kJobStateNames.entries()) {
    if (model::IsTerminal(state)) finished.push_back(fmt::format("'{}'", name));
  }
  return fmt::format("state NOT IN ({})", fmt::join(finished, ", "));
}

tl::unexpected<Error> UnknownJobError(std::size_t index, std::int64_t id) {
  return UnknownJobError("transitions", index, id);
}

tl::unexpected<Error> UnknownJobError(std::string_view list, std::size_t index, std::int64_t id) {
  return InvalidArgument(fmt::format(
      "batch.{}[{}].job_id: job {} is neither stored nor in the batch", list, index, id));
}

std::vector<std::int64_t> OtherJobsOf(const model::Decision& decision) {
  std::vector<std::int64_t> out;
  for (const model::Victim& victim : decision.victims) {
    const std::int64_t id = victim.job.value();
    if (id == decision.job.value() || std::find(out.begin(), out.end(), id) != out.end()) continue;
    out.push_back(id);
  }
  return out;
}

}  // namespace drover::store
