#pragma once

// Time in Drover is an integer count of milliseconds. The pure core never reads a clock: time
// is a parameter. Drivers read it through Clock so that tests and the simulator can substitute
// a simulated one (drover/testing/fake_clock.h).

#include <cstdint>

namespace drover {

// Milliseconds since the Unix epoch (UTC). 0 means "not yet" in timelines.
using TimeMs = std::int64_t;
// A span of time in milliseconds.
using DurationMs = std::int64_t;

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

}  // namespace drover
