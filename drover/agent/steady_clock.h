#pragma once

// Milliseconds of the monotonic clock (std::chrono::steady_clock): for intervals and timers on
// this machine (polling, sampling, timeouts), never for a time that is stored or sent.

#include <chrono>
#include <cstdint>

namespace drover::agent {

inline std::int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace drover::agent
