#include "drover/workflow/cron_plan.h"

#include <date/date.h>
#include <date/tz.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace drover::workflow {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

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
