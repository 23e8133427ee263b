#pragma once

// The FGD placement experiment's part of the simulation reports, internal to drover/sim/report:
// the HTML page of one FGD result, and the charts and tables that the comparison page and the
// text summary reuse. Pure and deterministic, like report_parts.h.

#include <string>
#include <vector>

#include "drover/sim/report/report_parts.h"

namespace drover::sim::report_internal {

// The arrived GPU demands (% of capacity) at which the tables set allocation against the
// published values.
inline constexpr int kDemandLevels[] = {100, 110, 120, 130};

// The published curves' label: "<policy> (published)", "FGD paper (published)" without one.
std::string PublishedLabel(const json* published);

// Rows per result and demand level: ours, published and the difference, for allocation and
// fragmentation; `with_policy` adds a first column naming the result.
Table FgdLevelTable(const std::vector<Labeled>& results, bool with_policy);

// "9000 arrived, 8800 placed, 200 failed".
std::string PodsLine(const json* r);

// Allocation and fragmentation against demand for every result on the same charts, published
// curves dashed; the fragmentation ratio chart only when some result carries it.
void FgdCharts(Page& page, const std::vector<Labeled>& results);

// The page of one FGD result: facts, charts, the table against the published results and the
// per-seed runs.
void FgdPage(Page& page, const json& result);

// Rows per result: policy, workload, seeds, inflate and the pod counts.
Table FgdCompareTable(const std::vector<Labeled>& results);

}  // namespace drover::sim::report_internal
