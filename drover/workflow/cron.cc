#include "drover/workflow/cron.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <vector>

#include "drover/common/ascii.h"

namespace drover::workflow {
namespace {

constexpr std::array<std::string_view, 12> kMonthNames = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                                          "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr std::array<std::string_view, 7> kWeekdayNames = {"SUN", "MON", "TUE", "WED",
                                                           "THU", "FRI", "SAT"};

struct Field {
  std::string_view name;
  int min;
  int max;
  // Names for min, min + 1, ... (months: JAN = 1; weekdays: SUN = 0).
  const std::string_view* names = nullptr;
  int name_count = 0;
};

constexpr Field kSecond{"second", 0, 59};
constexpr Field kMinute{"minute", 0, 59};
constexpr Field kHour{"hour", 0, 23};
constexpr Field kDayOfMonth{"day-of-month", 1, 31};
constexpr Field kMonth{"month", 1, 12, kMonthNames.data(), 12};
// 7 is Sunday as well; folded onto 0 after parsing.
constexpr Field kDayOfWeek{"day-of-week", 0, 7, kWeekdayNames.data(), 7};

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> out;
  while (true) {
    const std::size_t at = text.find(separator);
    out.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return out;
    text.remove_prefix(at + 1);
  }
}

std::vector<std::string_view> Words(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    const std::size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

// One value of `field`: a number in range, or one of its names.
Result<int> ParseValue(const Field& field, std::string_view text) {
  for (int i = 0; i < field.name_count; ++i) {
    if (EqualsIgnoringCase(text, field.names[i])) return field.min + i;
  }
  int value = 0;
  const bool digits =
      !text.empty() && text.size() <= 4 && std::all_of(text.begin(), text.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) != 0;
      });
  if (!digits) {
    return InvalidArgument(field.name_count > 0
                               ? fmt::format("{}: \"{}\" is not a number or a name ({}-{})",
                                             field.name, text, field.names[0],
                                             field.names[field.name_count - 1])
                               : fmt::format("{}: \"{}\" is not a number", field.name, text));
  }
  for (char c : text) value = value * 10 + (c - '0');
  if (value < field.min || value > field.max) {
    return InvalidArgument(
        fmt::format("{}: \"{}\" is out of range {}-{}", field.name, text, field.min, field.max));
  }
  return value;
}

// The values a field's text allows, as bits (bit v for value v).
Result<std::uint64_t> ParseField(const Field& field, std::string_view text) {
  std::uint64_t bits = 0;
  for (std::string_view item : Split(text, ',')) {
    if (item.empty()) {
      return InvalidArgument(fmt::format("{}: empty item in \"{}\"", field.name, text));
    }
    std::string_view range = item;
    int step = 1;
    if (const std::size_t slash = item.find('/'); slash != std::string_view::npos) {
      range = item.substr(0, slash);
      const std::string_view step_text = item.substr(slash + 1);
      const bool digits = !step_text.empty() && step_text.size() <= 4 &&
                          std::all_of(step_text.begin(), step_text.end(), [](char c) {
                            return std::isdigit(static_cast<unsigned char>(c)) != 0;
                          });
      step = 0;
      if (digits) {
        for (char c : step_text) step = step * 10 + (c - '0');
      }
      if (step < 1) {
        return InvalidArgument(
            fmt::format("{}: the step in \"{}\" must be a whole number of at "
                        "least 1",
                        field.name, item));
      }
    }
    int low = field.min;
    int high = field.max;
    if (range != "*") {
      const std::size_t dash = range.find('-');
      DROVER_ASSIGN_OR_RETURN(low, ParseValue(field, range.substr(0, dash)));
      if (dash != std::string_view::npos) {
        DROVER_ASSIGN_OR_RETURN(high, ParseValue(field, range.substr(dash + 1)));
        if (high < low) {
          return InvalidArgument(
              fmt::format("{}: the range \"{}\" runs backwards", field.name, range));
        }
      } else if (range.size() == item.size()) {
        high = low;  // a single value; "N/STEP" runs from N to the maximum
      }
    }
    for (int v = low; v <= high; v += step) bits |= std::uint64_t{1} << v;
  }
  return bits;
}

// The expression a macro stands for; empty for an unknown macro.
std::string_view ExpandMacro(std::string_view macro) {
  struct Macro {
    std::string_view name, expression;
  };
  static constexpr Macro kMacros[] = {
      {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
      {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
      {"@hourly", "0 * * * *"},
  };
  for (const Macro& m : kMacros) {
    if (EqualsIgnoringCase(macro, m.name)) return m.expression;
  }
  return {};
}

// The most days month `month` (1-12) can have (February: 29).
int MaxDays(int month) {
  static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return kDays[month - 1];
}

}  // namespace

Result<CronSchedule> ParseCronSchedule(std::string_view text) {
  std::vector<std::string_view> words = Words(text);
  if (words.size() == 1 && words[0].starts_with('@')) {
    const std::string_view expression = ExpandMacro(words[0]);
    if (expression.empty()) {
      return InvalidArgument(
          fmt::format("unknown macro \"{}\" (expected @yearly, @annually, @monthly, @weekly, "
                      "@daily, @midnight or @hourly)",
                      words[0]));
    }
    words = Words(expression);
  }
  if (words.size() != 5 && words.size() != 6) {
    return InvalidArgument(fmt::format(
        "expected 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first), "
        "got {} in \"{}\"",
        words.size(), text));
  }
  const std::size_t base = words.size() - 5;
  CronSchedule schedule;
  if (base == 1) {
    DROVER_ASSIGN_OR_RETURN(schedule.seconds, ParseField(kSecond, words[0]));
  } else {
    schedule.seconds = 1;
  }
  DROVER_ASSIGN_OR_RETURN(schedule.minutes, ParseField(kMinute, words[base]));
  DROVER_ASSIGN_OR_RETURN(schedule.hours, ParseField(kHour, words[base + 1]));
  DROVER_ASSIGN_OR_RETURN(schedule.days, ParseField(kDayOfMonth, words[base + 2]));
  DROVER_ASSIGN_OR_RETURN(schedule.months, ParseField(kMonth, words[base + 3]));
  DROVER_ASSIGN_OR_RETURN(const std::uint64_t weekdays, ParseField(kDayOfWeek, words[base + 4]));
  schedule.weekdays = (weekdays & 0x7f) | (weekdays >> 7);  // 7 is Sunday
  schedule.day_of_month_star = words[base + 2].starts_with('*');
  schedule.day_of_week_star = words[base + 4].starts_with('*');

  // Matched through day-of-month alone (the other field is a star), the day must exist in some
  // listed month, or the schedule would never run.
  if (schedule.day_of_month_star || schedule.day_of_week_star) {
    bool occurs = false;
    for (int month = 1; month <= 12 && !occurs; ++month) {
      for (int day = 1; day <= MaxDays(month) && schedule.months[month] && !occurs; ++day) {
        occurs = schedule.days[day];
      }
    }
    if (!occurs) {
      return InvalidArgument(fmt::format("day-of-month: \"{}\" never occurs in month \"{}\"",
                                         words[base + 2], words[base + 3]));
    }
  }
  return schedule;
}

}  // namespace drover::workflow
