#pragma once

// Parsing and printing of the quantities users write in specs and inventories. All quantities
// are integers: CPU in millicores, memory in bytes, durations in milliseconds.
// Errors are kInvalidArgument with a message that says what was expected; callers add the
// field name and position.

#include <cstdint>
#include <string>
#include <string_view>

#include "drover/common/clock.h"
#include "drover/common/result.h"

namespace drover {

// "8" -> 8000, "500m" -> 500, "0.5" -> 500, "2.25" -> 2250. Negative values are rejected.
Result<std::int64_t> ParseCpuMillis(std::string_view text);

// Binary suffixes Ki Mi Gi Ti Pi (powers of 1024) and decimal K M G T P (powers of 1000), with
// an optional trailing "B" ("80GB", "64Gi", "512MiB"); a bare number is bytes. Fractions are
// allowed when the result is a whole number of bytes ("1.5Gi").
Result<std::int64_t> ParseBytes(std::string_view text);

// "500ms", "30s", "5m", "2h", "1d", and sums such as "1h30m". A bare number is seconds.
Result<DurationMs> ParseDuration(std::string_view text);

// 8000 -> "8", 500 -> "500m", 2250 -> "2250m".
std::string FormatCpuMillis(std::int64_t millis);
// The largest binary unit that divides exactly: 68719476736 -> "64Gi"; otherwise bytes.
std::string FormatBytes(std::int64_t bytes);
// For people, rounded to one decimal of the largest binary unit: 25275387904 -> "23.5Gi".
std::string FormatBytesApprox(std::int64_t bytes);
// Compact human form: 1500 -> "1.5s", 90000 -> "1m30s", 7200000 -> "2h".
std::string FormatDuration(DurationMs duration);

}  // namespace drover
