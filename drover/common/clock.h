#pragma once

// Time in Drover is an integer count of milliseconds. The pure core never reads a clock: time
// is a parameter. Drivers read it through Clock so that tests and the simulator can substitute
// a simulated one (drover/testing/fake_clock.h).

#include <cstdint>
#include <string>

#include "drover/common/result.h"

namespace drover {

// Milliseconds since the Unix epoch (UTC). 0 means "not yet" in timelines.
using TimeMs = std::int64_t;
// A span of time in milliseconds.
using DurationMs = std::int64_t;

inline constexpr DurationMs kMillisPerSecond = 1'000;
inline constexpr DurationMs kMillisPerMinute = 60 * kMillisPerSecond;
inline constexpr DurationMs kMillisPerHour = 60 * kMillisPerMinute;
inline constexpr DurationMs kMillisPerDay = 24 * kMillisPerHour;

class Clock {
 public:
  virtual ~Clock() = default;
  // Current wall time. Thread-safe in every implementation.
  virtual TimeMs Now() const = 0;
};

// The system's real-time clock.
class SystemClock final : public Clock {
 public:
  TimeMs Now() const override;
};

// "2026-05-01", "2026-05-01T12:30", "2026-05-01 12:30:15.250", each optionally followed by
// "Z" or an offset ("+02:00", "-0500"), as ms since the epoch; without a zone, local time in the
// process's time zone (as `drover` prints timestamps, and as Slurm prints its times).
// kInvalidArgument quoting the text otherwise.
Result<TimeMs> ParseIsoTime(const std::string& text);

}  // namespace drover
