#pragma once

// Cron schedules (docs/workflows.md "Cron jobs"): the parsing of a cron expression. Their due
// times in a time zone are workflow/cron_plan.h's, apart so that what parses a spec (the client
// too) needs no time zone database.
//
// Pure: no clock, no I/O.

#include <bitset>
#include <string_view>

#include "drover/common/result.h"

namespace drover::workflow {

// A parsed cron expression: the set of values each field allows.
struct CronSchedule {
  std::bitset<60> seconds;  // 0-59; {0} for a five-field expression
  std::bitset<60> minutes;  // 0-59
  std::bitset<24> hours;    // 0-23
  std::bitset<32> days;     // day of month 1-31 (bit 0 unused)
  std::bitset<13> months;   // 1-12 (bit 0 unused)
  std::bitset<7> weekdays;  // 0-6, Sunday = 0
  // Vixie cron: a day-of-month or day-of-week field that starts with '*' does not restrict the
  // day. When both restrict it, a day matches if EITHER matches ("0 0 13 * FRI" runs on every
  // 13th and every Friday); otherwise a day must match both.
  bool day_of_month_star = true;
  bool day_of_week_star = true;

  friend bool operator==(const CronSchedule&, const CronSchedule&) = default;
};

// Parses a cron expression:
//   - five fields "minute hour day-of-month month day-of-week", or six with a leading seconds
//     field ("*/5 * * * * *": every 5 seconds);
//   - each field a comma list of `*`, `N`, `N-M`, each optionally with `/STEP` (`N/STEP` means
//     `N-MAX/STEP`); months may be JAN-DEC and weekdays SUN-SAT (any case); weekday 7 is Sunday;
//   - or one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly.
// kInvalidArgument naming the field and the value, e.g. `minute: "61" is out of range 0-59`;
// also for a day-of-month that no listed month has (`0 0 30 2 *`), which would never run.
Result<CronSchedule> ParseCronSchedule(std::string_view text);

}  // namespace drover::workflow
