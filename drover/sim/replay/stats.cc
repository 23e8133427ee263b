#include "drover/sim/replay/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace drover::sim::internal {

double Round(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  const double rounded = std::round(value * scale) / scale;
  return rounded == 0.0 ? 0.0 : rounded;  // never "-0.0"
}

Summary Summarize(std::vector<double>& values) {
  Summary summary;
  if (values.empty()) return summary;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  auto rank = [&](double percent) {
    const auto k = static_cast<std::size_t>(std::ceil(percent / 100.0 * static_cast<double>(n)));
    return values[std::clamp<std::size_t>(k, 1, n) - 1];
  };
  summary.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(n);
  summary.p50 = rank(50);
  summary.p95 = rank(95);
  summary.p99 = rank(99);
  return summary;
}

nlohmann::json ToJson(const Summary& summary) {
  return {{"mean", Round(summary.mean)},
          {"p50", Round(summary.p50)},
          {"p95", Round(summary.p95)},
          {"p99", Round(summary.p99)}};
}

}  // namespace drover::sim::internal
