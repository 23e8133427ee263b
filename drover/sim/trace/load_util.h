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

// Evaluates `expr` (a Result<T>); returns its error from the enclosing function, or moves its
// value into `lhs` (a declaration such as `auto x` or an existing variable).
#define SIM_TRACE_CONCAT_INNER(a, b) a##b
#define SIM_TRACE_CONCAT(a, b) SIM_TRACE_CONCAT_INNER(a, b)
#define SIM_TRACE_ASSIGN_OR_RETURN(lhs, expr) \
  SIM_TRACE_ASSIGN_OR_RETURN_IMPL(SIM_TRACE_CONCAT(sim_trace_result_, __LINE__), lhs, expr)
#define SIM_TRACE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)    \
  auto tmp = (expr);                                       \
  if (!tmp) return tl::unexpected(std::move(tmp).error()); \
  lhs = *std::move(tmp)

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
