#pragma once

#include <atomic>

#include "drover/common/clock.h"

namespace drover::testing {

// A clock that moves only when told. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimeMs start = 1'700'000'000'000) : now_(start) {}
  TimeMs Now() const override { return now_.load(); }
  void Advance(DurationMs by) { now_ += by; }
  void Set(TimeMs to) { now_ = to; }

 private:
  std::atomic<TimeMs> now_;
};

}  // namespace drover::testing
