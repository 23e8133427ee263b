#include "drover/common/clock.h"

#include <chrono>

namespace drover {

TimeMs SystemClock::Now() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace drover
