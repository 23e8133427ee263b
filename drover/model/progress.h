#pragma once

// What a job reports about its own work (`drover report`, POST /v1/jobs/{id}/report; docs/api.md,
// "Progress reports"), and what a reported rate of useful work comes to against what the attempt
// held and drew (docs/observability.md, "Useful throughput"). Pure values and functions.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "drover/common/result.h"
#include "drover/model/job.h"
#include "drover/model/usage.h"

namespace drover::model {

// A job's report: any of the fields, at least one.
struct ProgressReport {
  bool useful_work_began = false;    // useful work began now (kept once set)
  std::optional<double> progress;    // in [0, 1]
  std::optional<double> throughput;  // units of `unit` per second, from 0 to kMaxThroughput
  std::string unit;                  // "<work>/s" (e.g. "samples/s"); given with throughput only
};

inline constexpr double kMaxThroughput = 1e15;
inline constexpr std::size_t kMaxThroughputUnitBytes = 32;

// OK, or kInvalidArgument naming the field: progress outside [0, 1]; throughput not a finite
// number from 0 to kMaxThroughput; a unit without a throughput or a throughput without one; a
// unit that is not "<work>/s" with <work> of 1 to kMaxThroughputUnitBytes - 2 printable ASCII
// characters other than space and '/' (a control character is named by position, never echoed);
// nothing reported.
Status CheckProgressReport(const ProgressReport& report);

// An attempt's reported rate against its cost.
struct WorkRates {
  double throughput = 0;
  std::string unit;       // "samples/s"
  std::string work_unit;  // "samples"
  // Work per GPU-hour: throughput x 3600 / the GPUs the attempt holds; unset without GPUs.
  std::optional<double> per_gpu_hour;
  // Work per joule: throughput / the attempt's mean GPU power (its GPUs' energy over the sampled
  // span); unset without energy samples.
  std::optional<double> per_joule;
};

// The rates of `attempt`'s latest reported throughput, holding `gpus` GPUs in all, with `usage`
// its usage summary (may be null); none when it reported no throughput.
std::optional<WorkRates> WorkRatesOf(const Attempt& attempt, std::int64_t gpus,
                                     const UsageSummary* usage);

}  // namespace drover::model
