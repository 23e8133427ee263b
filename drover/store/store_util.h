#pragma once

// Helpers shared by the Store implementations so that they enforce one contract.
// Internal to drover/store.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "drover/common/result.h"
#include "drover/model/decision.h"
#include "drover/model/job.h"
#include "drover/store/store.h"

namespace drover::store {

// kInvalidArgument if a job in the batch has an id below 1 ("batch.jobs[2].id: ...") or a node
// record an empty name.
Status ValidateBatchShape(const Batch& batch);

// kInvalidArgument if the record's node name is empty.
Status ValidateAgent(const AgentRecord& agent);

// kInvalidArgument if the token record's id or hash is empty.
Status ValidateToken(const TokenRecord& token);

// kInvalidArgument naming the entry and field if `history` breaks Store::PutFairShare's rules.
Status ValidateFairShare(const model::FairShareHistory& history);

// kInvalidArgument if Store::PutUsage refuses `usage` and `buckets`.
Status ValidateUsage(const model::AttemptUsage& usage,
                     const std::vector<model::UsageBucket>& buckets);

// kInvalidArgument if filter.limit is negative.
Status ValidateFilter(const JobFilter& filter);
Status ValidateFilter(const AuditFilter& filter);

// The kInvalidArgument error for batch.transitions[index] naming job `id`, which is neither
// stored nor in the batch.
tl::unexpected<Error> UnknownJobError(std::size_t index, std::int64_t id);
// The same for batch.<list>[index] ("decisions").
tl::unexpected<Error> UnknownJobError(std::string_view list, std::size_t index, std::int64_t id);

// The SQL condition "state NOT IN ('succeeded', ...)" on a `state` column that holds
// model::JobStateName: true exactly for the jobs model::IsTerminal calls unfinished. The SQLite
// store's active filter and its partial index jobs_active both use it, word for word (SQLite
// uses a partial index only for a query whose WHERE clause contains the index's).
std::string SqlUnfinishedStateCondition();

// The jobs other than decision.job that `decision` concerns (its victims), without repeats.
std::vector<std::int64_t> OtherJobsOf(const model::Decision& decision);

}  // namespace drover::store
