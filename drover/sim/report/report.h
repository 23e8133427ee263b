#pragma once

// Reports of simulation results (docs/simulation.md): a self-contained HTML page and a short
// text summary, both read from the result JSON that the experiments produce:
//   {"experiment":"fgd", ...}      one placement policy on the FGD experiment (fgd/)
//   {"experiment":"replay", ...}   one time-based replay (replay/)
//   {"experiment":"compare","results":[...]}   several of the above, side by side
//   {"experiment":"what-if","before":replay,"after":replay,"per_team":{...}}
//
// Both renderers take any JSON: a missing or malformed field leaves out what needs it and says
// so in a note; they never throw and never fail. The output depends only on the JSON (no clock,
// no locale): the same result renders to the same bytes.

#include <nlohmann/json.hpp>
#include <string>

namespace drover::sim {

// A self-contained HTML page: inline CSS and inline <svg> plots, no scripts, no links or
// fetches of anything outside the page.
//  - fgd: GPU allocation ratio and fragmentation against arrived GPU demand (0..130 % of
//    capacity), the paper's published curves dashed when the result carries them, and a table of
//    allocation at 100/110/120/130 % against the published values with the difference.
//  - replay: JCT and queue-time CDFs per queue (from "job_rows"), GPU allocation and per-queue
//    share over time, tables of JCT and queue time (mean, p50, p95, p99) per queue, makespan,
//    preemptions, lost GPU-hours and the lifecycle split.
//  - compare: every policy on the same charts and in the same tables (fgd and replay results
//    grouped apart); what-if: before against after, and the per-team queue-time differences.
std::string RenderHtmlReport(const nlohmann::json& result);

// The same result as a one-screen text summary for terminals (about 30 lines at most, 100
// columns), durations written for people ("1h02m").
std::string RenderTextReport(const nlohmann::json& result);

}  // namespace drover::sim
