#pragma once

// Fair-share usage history as it outlives one queue tree: carried across policy reloads and
// saved in the store across server restarts (docs/scheduling.md, "Fair share"). Queues are
// named by path ("org/team-a/batch"), so a new tree takes the history of each queue of the
// same path; resources by name ("gpu", "cpu", ...), so the amounts do not depend on a tree's
// internal resource order.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "drover/common/clock.h"

namespace drover::model {

struct FairShareHistory {
  // One queue's decayed usage, or one user's within a leaf queue.
  struct Entry {
    std::string queue;  // the queue's path
    std::string user;   // empty: the queue's own history
    // Decayed usage in resource-milliseconds (sched::QueueTree), by resource name; every value
    // is finite and positive (zeros are left out).
    std::map<std::string, double> usage;

    friend bool operator==(const Entry&, const Entry&) = default;
  };
  // The time the history was last advanced to; unset if it never was (then entries is empty).
  std::optional<TimeMs> advanced_at;
  // Sorted by (queue, user), one per pair.
  std::vector<Entry> entries;

  friend bool operator==(const FairShareHistory&, const FairShareHistory&) = default;
};

}  // namespace drover::model
