#include "drover/common/clock.h"

#include <fmt/format.h>

#include <cctype>
#include <chrono>
#include <ctime>
#include <optional>

namespace drover {

TimeMs SystemClock::Now() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<TimeMs> ParseIsoTime(const std::string& text) {
  auto bad = [&] {
    return InvalidArgument(
        fmt::format("'{}' is not a time: expected YYYY-MM-DD[THH:MM[:SS[.fff]]][Z|+HH:MM]", text));
  };
  std::size_t i = 0;
  auto number = [&](int width, int* out) {
    if (i + width > text.size()) return false;
    int value = 0;
    for (int k = 0; k < width; ++k) {
      const char c = text[i + k];
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
      value = value * 10 + (c - '0');
    }
    i += width;
    *out = value;
    return true;
  };
  auto take = [&](char c) {
    if (i < text.size() && text[i] == c) {
      ++i;
      return true;
    }
    return false;
  };
  int year = 0, mon = 0, mday = 0, hour = 0, minute = 0, second = 0, millis = 0;
  if (!number(4, &year) || !take('-') || !number(2, &mon) || !take('-') || !number(2, &mday)) {
    return bad();
  }
  if (take('T') || take(' ')) {
    if (!number(2, &hour) || !take(':') || !number(2, &minute)) return bad();
    if (take(':')) {
      if (!number(2, &second)) return bad();
      if (take('.')) {
        int digits = 0;
        while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
          if (digits < 3) millis = millis * 10 + (text[i] - '0');
          ++digits;
          ++i;
        }
        if (digits == 0) return bad();
        for (int d = digits; d < 3; ++d) millis *= 10;
      }
    }
  }
  std::optional<int> offset_minutes;
  if (take('Z') || take('z')) {
    offset_minutes = 0;
  } else if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
    const int sign = text[i] == '-' ? -1 : 1;
    ++i;
    int oh = 0, om = 0;
    if (!number(2, &oh)) return bad();
    take(':');
    if (i < text.size() && !number(2, &om)) return bad();
    if (oh > 23 || om > 59) return bad();
    offset_minutes = sign * (oh * 60 + om);
  }
  if (i != text.size()) return bad();
  const std::chrono::year_month_day date{std::chrono::year(year),
                                         std::chrono::month(static_cast<unsigned>(mon)),
                                         std::chrono::day(static_cast<unsigned>(mday))};
  if (!date.ok() || hour > 23 || minute > 59 || second > 59) return bad();
  if (offset_minutes) {
    const auto at = std::chrono::sys_days(date) + std::chrono::hours(hour) +
                    std::chrono::minutes(minute - *offset_minutes) + std::chrono::seconds(second) +
                    std::chrono::milliseconds(millis);
    return std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
  }
  std::tm local{};
  local.tm_year = year - 1900;
  local.tm_mon = mon - 1;
  local.tm_mday = mday;
  local.tm_hour = hour;
  local.tm_min = minute;
  local.tm_sec = second;
  local.tm_isdst = -1;
  const std::time_t seconds = std::mktime(&local);
  if (seconds == static_cast<std::time_t>(-1)) return bad();
  return static_cast<TimeMs>(seconds) * 1000 + millis;
}

}  // namespace drover
