#pragma once

// Summary statistics and number formatting shared by the replay report and its comparison.

#include <nlohmann/json.hpp>
#include <vector>

namespace drover::sim::internal {

// `value` rounded to `decimals` places, so that reports print the same bytes for the same runs.
double Round(double value, int decimals = 3);

struct Summary {
  double mean = 0.0;
  double p50 = 0.0;
  double p95 = 0.0;
  double p99 = 0.0;
};

// Mean and nearest-rank percentiles (the smallest value with at least p% of the values at or
// below it) of `values`; all 0 when there are none. Reorders `values`.
Summary Summarize(std::vector<double>& values);

// {"mean","p50","p95","p99"}, rounded.
nlohmann::json ToJson(const Summary& summary);

}  // namespace drover::sim::internal
