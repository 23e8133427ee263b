#pragma once

// Helpers the loaders share. Internal to drover/sim/trace.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "drover/common/clock.h"
#include "drover/common/result.h"

namespace drover::sim::internal {

// Seconds -> milliseconds; nullopt if the result does not fit.
inline std::optional<DurationMs> SecondsToMs(std::int64_t seconds) {
  if (seconds > std::numeric_limits<DurationMs>::max() / 1000 ||
      seconds < std::numeric_limits<DurationMs>::min() / 1000) {
    return std::nullopt;
  }
  return seconds * 1000;
}

// The '|'-separated names of `text`, trimmed, without empty names or repeats, in order.
std::vector<std::string> SplitModels(std::string_view text);

// Remembers names and the line each was first seen on.
class NameSet {
 public:
  // The line `name` was first seen on, or nullopt (and `name` is recorded at `line`).
  std::optional<int> Insert(const std::string& name, int line) {
    auto [it, inserted] = lines_.emplace(name, line);
    if (inserted) return std::nullopt;
    return it->second;
  }

 private:
  std::unordered_map<std::string, int> lines_;
};

}  // namespace drover::sim::internal
