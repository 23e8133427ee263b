#include "drover/model/progress.h"

#include <fmt/format.h>

#include <cmath>

#include "drover/common/clock.h"

namespace drover::model {

Status CheckProgressReport(const ProgressReport& report) {
  if (!report.useful_work_began && !report.progress && !report.throughput) {
    return InvalidArgument(
        "request body: nothing to report; send useful_work_began: true, progress and/or "
        "throughput with its unit");
  }
  if (report.progress && !(*report.progress >= 0 && *report.progress <= 1)) {
    return InvalidArgument(fmt::format("progress: {} is outside [0, 1]", *report.progress));
  }
  if (!report.throughput) {
    if (!report.unit.empty()) return InvalidArgument("unit: given without a throughput");
    return OkStatus();
  }
  const double throughput = *report.throughput;
  if (!std::isfinite(throughput) || throughput < 0 || throughput > kMaxThroughput) {
    return InvalidArgument(
        fmt::format("throughput: {} is not a rate from 0 to {:g} units per second", throughput,
                    kMaxThroughput));
  }
  const std::string& unit = report.unit;
  if (unit.empty()) {
    return InvalidArgument("unit: required with a throughput (a rate such as samples/s)");
  }
  if (unit.size() > kMaxThroughputUnitBytes) {
    return InvalidArgument(
        fmt::format("unit: {} bytes, over the limit of {}", unit.size(), kMaxThroughputUnitBytes));
  }
  // Characters first, so that the message below never echoes a control character.
  for (std::size_t i = 0; i < unit.size(); ++i) {
    if (unit[i] <= ' ' || unit[i] > '~') {
      return InvalidArgument(fmt::format(
          "unit: character {} is not allowed (printable ASCII other than space)", i + 1));
    }
  }
  const std::string_view work = std::string_view(unit).substr(0, unit.size() - 2);
  if (!unit.ends_with("/s") || work.empty() || work.find('/') != std::string_view::npos) {
    return InvalidArgument(fmt::format(
        "unit: '{}' is not a rate: expected <work>/s, e.g. samples/s or tokens/s", unit));
  }
  return OkStatus();
}

std::optional<WorkRates> WorkRatesOf(const Attempt& attempt, std::int64_t gpus,
                                     const UsageSummary* usage) {
  if (attempt.throughput < 0 || !attempt.throughput_unit.ends_with("/s")) return std::nullopt;
  WorkRates rates;
  rates.throughput = attempt.throughput;
  rates.unit = attempt.throughput_unit;
  rates.work_unit = rates.unit.substr(0, rates.unit.size() - 2);
  if (gpus > 0) {
    rates.per_gpu_hour = attempt.throughput * (kMillisPerHour / 1000.0) / static_cast<double>(gpus);
  }
  if (usage != nullptr && usage->energy_joules > 0 && usage->last_at > usage->first_at) {
    const double seconds = static_cast<double>(usage->last_at - usage->first_at) / 1000.0;
    rates.per_joule = attempt.throughput * seconds / usage->energy_joules;
  }
  return rates;
}

}  // namespace drover::model
