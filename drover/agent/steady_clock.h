#pragma once

// The agent's local clocks: milliseconds of the monotonic clock (std::chrono::steady_clock),
// for intervals and timers on this machine (polling, sampling, timeouts), never for a time that
// is stored or sent; and the calling thread's CPU time, for what a thread's work costs.

#include <time.h>

#include <chrono>
#include <cstdint>

namespace drover::agent {

inline std::int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The calling thread's CPU time, user and system (CLOCK_THREAD_CPUTIME_ID), in microseconds.
inline std::int64_t ThreadCpuMicros() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000 + now.tv_nsec / 1'000;
}

}  // namespace drover::agent
