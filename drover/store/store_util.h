#pragma once

// Helpers shared by the Store implementations so that they enforce one contract.
// Internal to drover/store.

#include <cstddef>
#include <cstdint>

#include "drover/common/result.h"
#include "drover/model/job.h"
#include "drover/store/store.h"

namespace drover::store {

// kInvalidArgument if a job in the batch has an id below 1 ("batch.jobs[2].id: ...").
Status ValidateBatchShape(const Batch& batch);

// kInvalidArgument if filter.limit is negative.
Status ValidateFilter(const JobFilter& filter);

// The kInvalidArgument error for batch.transitions[index] naming job `id`, which is neither
// stored nor in the batch.
tl::unexpected<Error> UnknownJobError(std::size_t index, std::int64_t id);

}  // namespace drover::store
