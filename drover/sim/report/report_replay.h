#pragma once

// The time-based replay's part of the simulation reports, internal to drover/sim/report: the
// HTML page of one replay, several replays side by side (for compare and what-if), and the
// pieces that the text summary reuses. Pure and deterministic, like report_parts.h.

#include <vector>

#include "drover/sim/report/report_parts.h"

namespace drover::sim::report_internal {

// The lifecycle phases of "lifecycle_seconds", in order.
inline constexpr const char* kLifecycle[] = {"queue", "placement", "startup", "run"};

// Rows: all jobs, then each queue of "per_queue": jobs, JCT and queue-time statistics.
Table QueueStatsTable(const json* r);

// The page of one replay: facts, per-queue statistics and CDFs, the lifecycle split and the
// allocation and per-queue share over time.
void ReplayPage(Page& page, const json& result);

// Several replays on the same charts and tables: headline numbers, JCT and queue-time CDFs,
// allocation over time, queue time per queue and the lifecycle split.
void ReplayComparison(Page& page, const std::vector<Labeled>& results);

}  // namespace drover::sim::report_internal
