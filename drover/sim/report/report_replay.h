#pragma once

// The time-based replay's part of the simulation reports, internal to drover/sim/report: the
// HTML page of one replay, several replays side by side (for compare and what-if), and the
// pieces that the text summary reuses. Pure and deterministic, like report_parts.h.

#include <string>
#include <vector>

#include "drover/sim/report/report_parts.h"

namespace drover::sim::report_internal {

// The lifecycle phases of "lifecycle_seconds", in order.
inline constexpr const char* kLifecycle[] = {"queue", "placement", "startup", "run"};

// "32 nodes x 8 GPUs (256 GPUs)" ("N nodes, G GPUs" when the nodes differ).
std::string ClusterLine(const json* r);

// The trace and cluster a replay ran on: "<trace>: <ClusterLine>, <jobs> jobs".
std::string TraceLine(const json* r);

// The columns of GpuHoursTable: a key of "gpu_hours_by_result" and its header.
struct GpuHoursColumn {
  const char* key;
  const char* header;
};
inline constexpr GpuHoursColumn kGpuHoursColumns[] = {
    {"succeeded", "succeeded"},  {"failed", "failed"},         {"timed_out", "timed out"},
    {"cancelled", "cancelled"},  {"unfinished", "unfinished"}, {"preemption_lost", "preempt-lost"},
    {"retry_lost", "retry-lost"}};

// Rows per result: GPU-hours allocated by the jobs' results, those lost, and all allocated
// GPU-hours per job that succeeded ("per success").
Table GpuHoursTable(const std::vector<Labeled>& results);

// Rows per queue (every queue of any result's "per_queue", by name): for each result, the
// queue-time statistics `keys` ("mean", "p50", "p95", "p99"), columns "<label> <key> (s)".
Table QueueWaitTable(const std::vector<Labeled>& results, const std::vector<std::string>& keys);

// Rows: all jobs, then each queue of "per_queue": jobs, JCT and queue-time statistics.
Table QueueStatsTable(const json* r);

// The page of one replay: facts, per-queue statistics and CDFs, the lifecycle split and the
// allocation and per-queue share over time.
void ReplayPage(Page& page, const json& result);

// Several replays on the same charts and tables: headline numbers, JCT and queue-time CDFs,
// allocation over time, queue time per queue and the lifecycle split.
void ReplayComparison(Page& page, const std::vector<Labeled>& results);

}  // namespace drover::sim::report_internal
