#pragma once

// A GPU's energy counter as the sampler reports it, kept between reads of the driver's counter.
// nvmlDeviceGetTotalEnergyConsumption costs milliseconds of CPU a call (3.3 to 3.9 ms on an
// H200 with driver 580; docs/benchmarks.md, "GPU check (H200)") where board power costs a
// fraction of a microsecond, so the driver's counter is read every `read_interval_ms` and, in
// between, the last value is advanced by power times time. NVML's board power is a 1 s average
// on Ampere and newer (instantaneous before), so at 1 s samples the integral follows the counter
// closely; each read puts the figure back on the driver's.

#include <cstdint>
#include <optional>

#include "drover/common/clock.h"

namespace drover::agent {

class EnergyCounter {
 public:
  explicit EnergyCounter(DurationMs read_interval_ms) : read_interval_ms_(read_interval_ms) {}

  // Power is integrated over gaps up to this long: NVML's power is an average over the last
  // second, so it says little about a longer gap (a sampler held up, a slow interval).
  static constexpr DurationMs kMaxIntegratedGapMs = 5'000;

  // Whether the driver's counter is to be read at steady time `steady_ms`: at the first sample,
  // once `read_interval_ms` has passed since the last read (successful or not), whenever there
  // is no power reading to integrate (`power_mw` < 0), and after a gap longer than
  // kMaxIntegratedGapMs since the last value.
  bool ReadDue(std::int64_t steady_ms, int power_mw) const;

  // The value to report for the sample at `steady_ms` (millijoules since the driver loaded; -1:
  // unknown). `read_mj` is the driver's counter when ReadDue said to read it (-1 when the read
  // failed), std::nullopt when it was not read: then the last value plus `power_mw` times the
  // time since it, or -1 when there is no last value or no power. `steady_ms` never decreases.
  std::int64_t Report(std::int64_t steady_ms, int power_mw, std::optional<std::int64_t> read_mj);

 private:
  const DurationMs read_interval_ms_;
  std::optional<std::int64_t> last_read_at_ms_;  // the last read (or failed read) of the driver's
  std::int64_t value_mj_ = -1;                   // the value last reported
  std::int64_t value_at_ms_ = 0;                 // its steady time
};

}  // namespace drover::agent
