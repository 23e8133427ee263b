#include "drover/workflow/cron_plan.h"

#include <date/date.h>
#include <date/tz.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace drover::workflow {
namespace {

// "2024-03-31T01:00:00Z" (UTC) as TimeMs.
TimeMs Utc(const std::string& text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  EXPECT_EQ(std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%dZ", &y, &mo, &d, &h, &mi, &s), 6) << text;
  const date::sys_seconds at = date::sys_days{date::year{y} / mo / d} + std::chrono::hours{h} +
                               std::chrono::minutes{mi} + std::chrono::seconds{s};
  return std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
}

std::string Format(TimeMs at) {
  return date::format(
      "%FT%TZ", date::floor<std::chrono::seconds>(
                    date::sys_time<std::chrono::milliseconds>{std::chrono::milliseconds{at}}));
}

// The schedule of a valid expression (cron_test.cc tests the parsing).
CronSchedule Parse(const std::string& text) { return ParseCronSchedule(text).value(); }

// The next due time after `after` in `zone`, as UTC text.
std::string Next(const std::string& expression, const std::string& zone, const std::string& after) {
  return Format(NextAfter(Parse(expression), date::locate_zone(zone), Utc(after)));
}

TEST(NextAfter, IsStrictlyAfterAndWholeSeconds) {
  EXPECT_EQ(Next("* * * * *", "UTC", "2024-05-01T10:00:00Z"), "2024-05-01T10:01:00Z");
  const CronSchedule every_minute = Parse("* * * * *");
  const auto* utc = date::locate_zone("UTC");
  EXPECT_EQ(NextAfter(every_minute, utc, Utc("2024-05-01T10:01:00Z") - 1),
            Utc("2024-05-01T10:01:00Z"));
  EXPECT_EQ(NextAfter(every_minute, utc, Utc("2024-05-01T10:01:00Z") + 1),
            Utc("2024-05-01T10:02:00Z"));
}

TEST(NextAfter, SecondsField) {
  EXPECT_EQ(Next("*/5 * * * * *", "UTC", "2024-05-01T10:00:03Z"), "2024-05-01T10:00:05Z");
  EXPECT_EQ(Next("*/5 * * * * *", "UTC", "2024-05-01T10:59:55Z"), "2024-05-01T11:00:00Z");
}

TEST(NextAfter, AcrossMonthsAndYears) {
  EXPECT_EQ(Next("0 0 31 * *", "UTC", "2024-04-01T00:00:00Z"), "2024-05-31T00:00:00Z");
  EXPECT_EQ(Next("15 10 1 * *", "UTC", "2024-12-01T10:15:00Z"), "2025-01-01T10:15:00Z");
  EXPECT_EQ(Next("@yearly", "UTC", "2024-06-01T00:00:00Z"), "2025-01-01T00:00:00Z");
  EXPECT_EQ(Next("0 12 * FEB,AUG *", "UTC", "2024-02-29T12:00:00Z"), "2024-08-01T12:00:00Z");
}

TEST(NextAfter, LeapYears) {
  EXPECT_EQ(Next("0 0 29 2 *", "UTC", "2023-03-01T00:00:00Z"), "2024-02-29T00:00:00Z");
  EXPECT_EQ(Next("0 0 29 2 *", "UTC", "2024-02-29T00:00:00Z"), "2028-02-29T00:00:00Z");
  // 2100 is not a leap year.
  EXPECT_EQ(Next("0 0 29 2 *", "UTC", "2096-03-01T00:00:00Z"), "2104-02-29T00:00:00Z");
}

TEST(NextAfter, DayOfMonthOrDayOfWeekWhenBothRestricted) {
  // 2024-09-13 is a Friday; 2024-09-20 the next Friday; 2024-10-13 a Sunday.
  const std::string friday_or_13th = "0 0 13 * FRI";
  EXPECT_EQ(Next(friday_or_13th, "UTC", "2024-09-12T00:00:00Z"), "2024-09-13T00:00:00Z");
  EXPECT_EQ(Next(friday_or_13th, "UTC", "2024-09-13T00:00:00Z"), "2024-09-20T00:00:00Z");
  EXPECT_EQ(Next(friday_or_13th, "UTC", "2024-10-11T00:00:00Z"), "2024-10-13T00:00:00Z");
  // A star (even stepped) in either day field: both must match.
  EXPECT_EQ(Next("0 0 */1 * FRI", "UTC", "2024-09-13T00:00:00Z"), "2024-09-20T00:00:00Z");
  EXPECT_EQ(Next("0 0 13 * *", "UTC", "2024-09-13T00:00:00Z"), "2024-10-13T00:00:00Z");
}

TEST(NextAfter, LocalTimeOfTheZone) {
  // 02:30 in Berlin is 00:30Z in summer (CEST, +2) and 01:30Z in winter (CET, +1).
  EXPECT_EQ(Next("30 2 * * *", "Europe/Berlin", "2024-07-01T12:00:00Z"), "2024-07-02T00:30:00Z");
  EXPECT_EQ(Next("30 2 * * *", "Europe/Berlin", "2024-01-01T12:00:00Z"), "2024-01-02T01:30:00Z");
  EXPECT_EQ(Next("0 9 * * MON", "America/New_York", "2024-07-01T14:00:00Z"),
            "2024-07-08T13:00:00Z");
}

TEST(NextAfter, BerlinSpringForwardFiresAfterTheGap) {
  // 2024-03-31: 02:00 CET -> 03:00 CEST (01:00Z). 02:30 does not exist: it fires at 03:00.
  EXPECT_EQ(Next("30 2 * * *", "Europe/Berlin", "2024-03-30T12:00:00Z"), "2024-03-31T01:00:00Z");
  EXPECT_EQ(Next("30 2 * * *", "Europe/Berlin", "2024-03-31T01:00:00Z"), "2024-04-01T00:30:00Z");
  // Every 15 minutes: 02:00, 02:15, 02:30 and 02:45 all fall into the gap: one run at 03:00,
  // then 03:15.
  EXPECT_EQ(Next("*/15 * * * *", "Europe/Berlin", "2024-03-31T00:45:00Z"), "2024-03-31T01:00:00Z");
  EXPECT_EQ(Next("*/15 * * * *", "Europe/Berlin", "2024-03-31T01:00:00Z"), "2024-03-31T01:15:00Z");
}

TEST(NextAfter, BerlinFallBackFiresOnce) {
  // 2024-10-27: 03:00 CEST -> 02:00 CET (01:00Z); 02:00-02:59 occurs twice. 02:30 fires at its
  // first occurrence (00:30Z) only.
  EXPECT_EQ(Next("30 2 * * *", "Europe/Berlin", "2024-10-26T12:00:00Z"), "2024-10-27T00:30:00Z");
  EXPECT_EQ(Next("30 2 * * *", "Europe/Berlin", "2024-10-27T00:30:00Z"), "2024-10-28T01:30:00Z");
  // Every 30 minutes: 02:00 and 02:30 of the repeated hour are not run again; next is 03:00 CET.
  EXPECT_EQ(Next("*/30 * * * *", "Europe/Berlin", "2024-10-27T00:30:00Z"), "2024-10-27T02:00:00Z");
  EXPECT_EQ(Next("*/30 * * * *", "Europe/Berlin", "2024-10-27T01:10:00Z"), "2024-10-27T02:00:00Z");
}

TEST(NextAfter, NewYorkTransitions) {
  // 2024-03-10: 02:00 EST -> 03:00 EDT (07:00Z).
  EXPECT_EQ(Next("30 2 * * *", "America/New_York", "2024-03-09T12:00:00Z"), "2024-03-10T07:00:00Z");
  EXPECT_EQ(Next("30 2 * * *", "America/New_York", "2024-03-10T07:00:00Z"), "2024-03-11T06:30:00Z");
  // 2024-11-03: 02:00 EDT -> 01:00 EST (06:00Z); 01:30 first occurs at 05:30Z.
  EXPECT_EQ(Next("30 1 * * *", "America/New_York", "2024-11-02T12:00:00Z"), "2024-11-03T05:30:00Z");
  EXPECT_EQ(Next("30 1 * * *", "America/New_York", "2024-11-03T05:30:00Z"), "2024-11-04T06:30:00Z");
}

class PlanRunsTest : public ::testing::Test {
 protected:
  DuePlan Plan(const std::string& last_handled, const std::string& now,
               std::optional<DurationMs> deadline = std::nullopt) {
    return PlanRuns(hourly_, utc_, Utc(last_handled), Utc(now), deadline);
  }

  CronSchedule hourly_ = Parse("@hourly");
  const date::time_zone* utc_ = date::locate_zone("UTC");
};

TEST_F(PlanRunsTest, NothingDue) {
  DuePlan plan = Plan("2024-05-01T10:00:00Z", "2024-05-01T10:59:59Z");
  EXPECT_FALSE(plan.run);
  EXPECT_FALSE(plan.handled_through);
  EXPECT_EQ(plan.missed, 0);
  EXPECT_EQ(Format(plan.next), "2024-05-01T11:00:00Z");
}

TEST_F(PlanRunsTest, OneDueRunStarts) {
  DuePlan plan = Plan("2024-05-01T10:00:00Z", "2024-05-01T11:00:00Z", 60'000);
  ASSERT_TRUE(plan.run);
  EXPECT_EQ(Format(*plan.run), "2024-05-01T11:00:00Z");
  EXPECT_EQ(plan.handled_through, plan.run);
  EXPECT_EQ(plan.missed, 0);
  EXPECT_EQ(Format(plan.next), "2024-05-01T12:00:00Z");
}

TEST_F(PlanRunsTest, AfterDowntimeOnlyTheLatestMissedRunStarts) {
  // Down from 10:05 to 13:20: 11:00, 12:00 and 13:00 were missed.
  DuePlan plan = Plan("2024-05-01T10:00:00Z", "2024-05-01T13:20:00Z");
  ASSERT_TRUE(plan.run);
  EXPECT_EQ(Format(*plan.run), "2024-05-01T13:00:00Z");
  EXPECT_EQ(plan.missed, 2);
  EXPECT_EQ(Format(*plan.handled_through), "2024-05-01T13:00:00Z");
  EXPECT_EQ(Format(plan.next), "2024-05-01T14:00:00Z");
}

TEST_F(PlanRunsTest, WithinTheStartingDeadline) {
  DuePlan plan = Plan("2024-05-01T10:00:00Z", "2024-05-01T13:20:00Z", 30 * 60'000);
  ASSERT_TRUE(plan.run);
  EXPECT_EQ(Format(*plan.run), "2024-05-01T13:00:00Z");
  EXPECT_EQ(plan.missed, 2);
}

TEST_F(PlanRunsTest, PastTheStartingDeadlineNothingStarts) {
  DuePlan plan = Plan("2024-05-01T10:00:00Z", "2024-05-01T13:20:00Z", 10 * 60'000);
  EXPECT_FALSE(plan.run);
  EXPECT_EQ(plan.missed, 3);
  // Handled all the same: the same due times are not planned again.
  EXPECT_EQ(Format(*plan.handled_through), "2024-05-01T13:00:00Z");
  EXPECT_EQ(Format(plan.next), "2024-05-01T14:00:00Z");
  DuePlan again =
      PlanRuns(hourly_, utc_, *plan.handled_through, Utc("2024-05-01T13:21:00Z"), 10 * 60'000);
  EXPECT_FALSE(again.run);
  EXPECT_FALSE(again.handled_through);
  EXPECT_EQ(again.missed, 0);
}

TEST_F(PlanRunsTest, LongPauseOfADenseSchedule) {
  // Every second for a year: the latest due time is found without walking all of them, and the
  // count stops at kMaxCountedMissed.
  const CronSchedule every_second = Parse("* * * * * *");
  DuePlan plan = PlanRuns(every_second, utc_, Utc("2023-05-01T00:00:00Z"),
                          Utc("2024-05-01T00:00:00Z") + 500, std::nullopt);
  ASSERT_TRUE(plan.run);
  EXPECT_EQ(Format(*plan.run), "2024-05-01T00:00:00Z");
  EXPECT_EQ(plan.missed, kMaxCountedMissed);
  EXPECT_EQ(Format(plan.next), "2024-05-01T00:00:01Z");
}

TEST_F(PlanRunsTest, ClockBehindTheLastHandledTime) {
  DuePlan plan = Plan("2024-05-01T12:00:00Z", "2024-05-01T11:30:00Z");
  EXPECT_FALSE(plan.run);
  EXPECT_FALSE(plan.handled_through);
  EXPECT_EQ(Format(plan.next), "2024-05-01T13:00:00Z");
}

TEST(PlanRuns, MissedRunInBerlinAcrossTheGap) {
  // Down over the spring-forward night: 02:30 (fired at 03:00 CEST, 01:00Z) is the one run.
  const CronSchedule nightly = Parse("30 2 * * *");
  DuePlan plan = PlanRuns(nightly, date::locate_zone("Europe/Berlin"), Utc("2024-03-30T01:30:00Z"),
                          Utc("2024-03-31T05:00:00Z"), std::nullopt);
  ASSERT_TRUE(plan.run);
  EXPECT_EQ(Format(*plan.run), "2024-03-31T01:00:00Z");
  EXPECT_EQ(plan.missed, 0);
  EXPECT_EQ(Format(plan.next), "2024-04-01T00:30:00Z");
}

TEST(CronRunId, NameAndUtcDueTime) {
  EXPECT_EQ(CronRunId("nightly", Utc("2024-03-31T01:00:00Z")), "nightly@2024-03-31T01:00:00Z");
}

}  // namespace
}  // namespace drover::workflow
