#pragma once

// How sentences say that a job is in a state: "job 2 has succeeded", "job 4 was cancelled",
// "job 7 is pending", never "job 2 is succeeded". One entry per JobState, beside the names of
// kJobStateNames (model/job.h).

#include <array>
#include <cstddef>

#include "drover/model/job.h"
#include "drover/model/names.h"

namespace drover::model {

// kJobStatePhrases.Name(state): the verb phrase for "job N <phrase>".
inline constexpr NameTable kJobStatePhrases{std::array{
    NameEntry{JobState::kPending, "is pending"},
    NameEntry{JobState::kReady, "is ready"},
    NameEntry{JobState::kAdmitted, "is admitted"},
    NameEntry{JobState::kPlaced, "is placed"},
    NameEntry{JobState::kStarting, "is starting"},
    NameEntry{JobState::kRunning, "is running"},
    NameEntry{JobState::kSucceeded, "has succeeded"},
    NameEntry{JobState::kFailed, "has failed"},
    NameEntry{JobState::kCancelled, "was cancelled"},
    NameEntry{JobState::kTimedOut, "timed out"},
    NameEntry{JobState::kWaiting, "is waiting for its inputs"},
    NameEntry{JobState::kSkipped, "was skipped"},
}};
static_assert(kJobStatePhrases.size() == kJobStateNames.size());

}  // namespace drover::model
