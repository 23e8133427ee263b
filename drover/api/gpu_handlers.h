#pragma once

// GET /v1/gpus (docs/api.md, "GPUs"): every GPU of every node as the dashboard's GPU map shows
// it, what the scheduler gave it to joined with what the node's sampler last saw it do.

#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "drover/api/request.h"
#include "drover/api/service.h"
#include "drover/model/access.h"
#include "drover/model/usage.h"

namespace drover::api {

// A GPU counts as active when a job holds it and its latest sample, no older than
// kGpuSampleMaxAgeMs, shows a kernel running at least kGpuActivePct of the sample period.
inline constexpr int kGpuActivePct = 1;
inline constexpr DurationMs kGpuSampleMaxAgeMs = 5 * kMillisPerMinute;

// The text of {"gpus": [...]}, one entry per GPU of `nodes` in node order then index order:
// "node", "index", "model", "memory_bytes", "state" ("idle": no job holds it; "allocated": a job
// holds it and the latest sample shows no activity, or there is none; "active": see
// kGpuActivePct), "job" and "owner" (of the job holding it, null when none does or `may_see`
// says the caller may not see that job; asked once per job), "utilization_pct",
// "memory_used_bytes" and "sampled_at" (the latest sample no older than kGpuSampleMaxAgeMs at
// `now`, null without one). `jobs` are the jobs that may hold GPUs (placed, starting or
// running); a worker that exited holds none. Written with codec::JsonWriter, without a JSON tree
// (8,000 GPUs are 8,000 objects): the bytes codec::DumpJson would write for the same document.
std::string GpuMapJson(const std::vector<NodeStatus>& nodes, const std::vector<model::Job>& jobs,
                       std::span<const model::GpuActivity> samples,
                       const std::function<bool(const model::Job&)>& may_see, TimeMs now);

// GET /v1/gpus: GpuMapJson of the service's nodes, active jobs and latest samples, the caller's
// view rights (model::Visible) deciding which jobs it names.
Result<Response> ListGpus(Service& service, const Request& request);

}  // namespace drover::api
