#pragma once

// The due times of a cron schedule (docs/workflows.md "Cron jobs"): the next one in a time zone,
// and the planning of due runs after a pause or downtime.
//
// Pure: no clock, no I/O. Time zones are Howard Hinnant's date::time_zone, which the caller
// looks up (date::locate_zone reads the OS tz database) and passes in.
//
// Local time rules (the zone's local wall clock decides what is due):
//   - a local time that does not exist (spring forward, e.g. 02:30 in Europe/Berlin on the last
//     Sunday of March) fires at the first instant after the gap (03:00 local), once, however
//     many due times fell into the gap;
//   - a local time that occurs twice (fall back) fires once, at its first occurrence.
// So no due time is lost and none fires twice.

#include <optional>
#include <string>
#include <string_view>

#include "drover/common/clock.h"
#include "drover/workflow/cron.h"

namespace date {
class time_zone;
}

namespace drover::workflow {

// The first due instant strictly after `after`, evaluated on the local clock of `zone` (with the
// DST rules above). Always a whole second.
TimeMs NextAfter(const CronSchedule& schedule, const date::time_zone* zone, TimeMs after);

// What a cron job should do at `now`.
struct DuePlan {
  // The due time to start a run for now: the latest due time in (last_handled, now], if it is
  // no older than the starting deadline.
  std::optional<TimeMs> run;
  // Due times in (last_handled, now] that are not started (older ones, and the latest when it
  // is past the deadline). Counted up to kMaxCountedMissed.
  int missed = 0;
  // The latest due time in (last_handled, now]: the new last handled time. nullopt: nothing was
  // due, last_handled stays.
  std::optional<TimeMs> handled_through;
  // The first due time after max(now, last_handled).
  TimeMs next = 0;
};
inline constexpr int kMaxCountedMissed = 10'000;

// Plans the runs of a schedule. `last_handled` is the latest due time already handled (started
// or skipped), or the cron job's creation time before its first. `starting_deadline`: a due
// time older than this at `now` is not started; nullopt: no deadline. At most one run is
// started however long the pause was: after downtime only the latest missed run starts.
DuePlan PlanRuns(const CronSchedule& schedule, const date::time_zone* zone, TimeMs last_handled,
                 TimeMs now, std::optional<DurationMs> starting_deadline);

// "NAME@YYYY-MM-DDTHH:MM:SSZ" with the UTC due time: the run's id and idempotency key.
std::string CronRunId(std::string_view cron_name, TimeMs due);

}  // namespace drover::workflow
