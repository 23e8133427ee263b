#pragma once

// Nodes closed to new work for a time (docs/scheduling.md, "Maintenance windows and cordons"):
// an operator's maintenance window [from, to), and a cordon, which is a window that never ends.
// Pure values; the engine (CycleInput::maintenance) and the start-time projection
// (EstimateLayers::maintenance) read them, the controller builds them from the nodes' operator
// state. No clock is read here: every function takes the instant it judges.

#include <limits>
#include <optional>

#include "drover/common/clock.h"
#include "drover/common/ids.h"

namespace drover::sched {

// `node` takes no job that would run at any instant of [from, to).
struct NodeWindow {
  NodeId node;
  TimeMs from = 0;
  TimeMs to = 0;

  friend bool operator==(const NodeWindow&, const NodeWindow&) = default;
};

// The `to` of a window that never ends (a cordon).
inline constexpr TimeMs kNeverEnds = std::numeric_limits<TimeMs>::max();

// Whether a job started at `start` that runs at most `limit` (nullopt: no time limit, it may run
// forever) would run inside `window`: start < window.to and start + limit > window.from. So a
// job without a limit runs into every window that has not ended, and a job that ends exactly
// at `from` does not.
bool RunsInto(const NodeWindow& window, TimeMs start, std::optional<DurationMs> limit);
}  // namespace drover::sched
