#include "drover/workflow/cron.h"

#include <date/date.h>
#include <date/tz.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <vector>

#include "drover/common/ascii.h"

namespace drover::workflow {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

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

bool DayMatches(const CronSchedule& schedule, const date::year_month_day& ymd,
                date::weekday weekday) {
  const bool by_month_day = schedule.days[static_cast<unsigned>(ymd.day())];
  const bool by_weekday = schedule.weekdays[weekday.c_encoding()];
  if (schedule.day_of_month_star || schedule.day_of_week_star) return by_month_day && by_weekday;
  return by_month_day || by_weekday;
}

// When a due local time fires: its instant, the first instant after a DST gap for a local time
// that does not exist, the first occurrence of one that occurs twice.
TimeMs FireTime(const date::time_zone* zone, date::local_seconds local) {
  const date::local_info info = zone->get_info(local);
  date::sys_seconds at;
  if (info.result == date::local_info::nonexistent) {
    at = info.second.begin;
  } else {
    at = date::sys_seconds{local.time_since_epoch()} - info.first.offset;
  }
  return std::chrono::duration_cast<milliseconds>(at.time_since_epoch()).count();
}

// The latest due time in (last_handled, now], if any.
std::optional<TimeMs> LatestDue(const CronSchedule& schedule, const date::time_zone* zone,
                                TimeMs last_handled, TimeMs now) {
  if (NextAfter(schedule, zone, last_handled) > now) return std::nullopt;
  // Look back over doubling windows so that a long pause does not walk every due time.
  for (DurationMs window = kMillisPerSecond;; window *= 2) {
    TimeMs due = NextAfter(schedule, zone, std::max(last_handled, now - window));
    if (due > now) continue;
    for (TimeMs next = NextAfter(schedule, zone, due); next <= now;
         next = NextAfter(schedule, zone, due)) {
      due = next;
    }
    return due;
  }
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

TimeMs NextAfter(const CronSchedule& schedule, const date::time_zone* zone, TimeMs after) {
  // The fire time of local times is non-decreasing in local time (see FireTime), so the first
  // matching local time after after's own local time whose fire time is later than `after` is
  // the answer.
  const date::sys_time<milliseconds> after_sys{milliseconds{after}};
  date::local_seconds t = date::floor<seconds>(zone->to_local(after_sys)) + seconds{1};
  while (true) {
    const date::local_days day = date::floor<date::days>(t);
    const date::year_month_day ymd{day};
    if (!schedule.months[static_cast<unsigned>(ymd.month())]) {
      t = date::local_days{date::year_month_day{ymd.year() / ymd.month() / 1} + date::months{1}};
      continue;
    }
    if (!DayMatches(schedule, ymd, date::weekday{day})) {
      t = day + date::days{1};
      continue;
    }
    const auto of_day = (t - day).count();
    const int hour = static_cast<int>(of_day / 3600);
    const int minute = static_cast<int>(of_day / 60 % 60);
    const int second = static_cast<int>(of_day % 60);
    if (!schedule.hours[hour]) {
      t = day + hours{hour + 1};
      continue;
    }
    if (!schedule.minutes[minute]) {
      t = day + hours{hour} + minutes{minute + 1};
      continue;
    }
    if (schedule.seconds[second]) {
      const TimeMs fire = FireTime(zone, t);
      if (fire > after) return fire;
    }
    t += seconds{1};
  }
}

DuePlan PlanRuns(const CronSchedule& schedule, const date::time_zone* zone, TimeMs last_handled,
                 TimeMs now, std::optional<DurationMs> starting_deadline) {
  DuePlan plan;
  plan.next = NextAfter(schedule, zone, std::max(now, last_handled));
  const std::optional<TimeMs> latest = LatestDue(schedule, zone, last_handled, now);
  if (!latest) return plan;
  plan.handled_through = latest;
  for (TimeMs due = NextAfter(schedule, zone, last_handled);
       due < *latest && plan.missed < kMaxCountedMissed; due = NextAfter(schedule, zone, due)) {
    ++plan.missed;
  }
  if (starting_deadline && now - *latest > *starting_deadline) {
    plan.missed = std::min(plan.missed + 1, kMaxCountedMissed);
  } else {
    plan.run = latest;
  }
  return plan;
}

std::string CronRunId(std::string_view cron_name, TimeMs due) {
  const date::sys_time<milliseconds> at{milliseconds{due}};
  return fmt::format("{}@{}", cron_name, date::format("%FT%TZ", date::floor<seconds>(at)));
}

}  // namespace drover::workflow
