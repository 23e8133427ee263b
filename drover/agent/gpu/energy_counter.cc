#include "drover/agent/gpu/energy_counter.h"

namespace drover::agent {

bool EnergyCounter::ReadDue(std::int64_t steady_ms, int power_mw) const {
  return !last_read_at_ms_ || power_mw < 0 || steady_ms - *last_read_at_ms_ >= read_interval_ms_ ||
         steady_ms - value_at_ms_ > kMaxIntegratedGapMs;
}

std::int64_t EnergyCounter::Report(std::int64_t steady_ms, int power_mw,
                                   std::optional<std::int64_t> read_mj) {
  if (read_mj) {
    last_read_at_ms_ = steady_ms;
    value_mj_ = *read_mj;
  } else if (value_mj_ >= 0 && power_mw >= 0) {
    // mW x ms = µJ: divided by 1,000 for mJ.
    value_mj_ += static_cast<std::int64_t>(power_mw) * (steady_ms - value_at_ms_) / 1000;
  } else {
    value_mj_ = -1;
  }
  value_at_ms_ = steady_ms;
  return value_mj_;
}

}  // namespace drover::agent
