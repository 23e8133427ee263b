#include "drover/workflow/cron.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace drover::workflow {
namespace {

using ::testing::HasSubstr;

CronSchedule Parse(const std::string& text) {
  auto schedule = ParseCronSchedule(text);
  EXPECT_TRUE(schedule) << text << ": " << schedule.error().message;
  return schedule.value_or(CronSchedule{});
}

std::string ParseError(const std::string& text) {
  auto schedule = ParseCronSchedule(text);
  EXPECT_FALSE(schedule) << text;
  return schedule ? "" : schedule.error().message;
}

TEST(ParseCronSchedule, FiveFieldsListsRangesAndSteps) {
  CronSchedule s = Parse("0,30 9-17/4 1,15 * MON-FRI");
  EXPECT_EQ(s.seconds.to_ullong(), 1u);  // five fields: at second 0
  EXPECT_EQ(s.minutes.to_ullong(), (1ull << 0) | (1ull << 30));
  EXPECT_EQ(s.hours.to_ullong(), (1ull << 9) | (1ull << 13) | (1ull << 17));
  EXPECT_EQ(s.days.to_ullong(), (1ull << 1) | (1ull << 15));
  EXPECT_EQ(s.months.count(), 12u);
  EXPECT_EQ(s.weekdays.to_ullong(), 0b0111110u);
  EXPECT_FALSE(s.day_of_month_star);
  EXPECT_FALSE(s.day_of_week_star);
}

TEST(ParseCronSchedule, SecondsFieldStepFromValueAndNames) {
  CronSchedule s = Parse("*/20 5/20 0 * jan,Jul sun");
  EXPECT_EQ(s.seconds.to_ullong(), (1ull << 0) | (1ull << 20) | (1ull << 40));
  EXPECT_EQ(s.minutes.to_ullong(), (1ull << 5) | (1ull << 25) | (1ull << 45));
  EXPECT_EQ(s.months.to_ullong(), (1ull << 1) | (1ull << 7));
  EXPECT_EQ(s.weekdays.to_ullong(), 1u);
  EXPECT_TRUE(s.day_of_month_star);
}

TEST(ParseCronSchedule, SevenIsSunday) {
  EXPECT_EQ(Parse("0 0 * * 7"), Parse("0 0 * * 0"));
  EXPECT_EQ(Parse("0 0 * * 5-7").weekdays.to_ullong(), 0b1100001u);
}

TEST(ParseCronSchedule, Macros) {
  EXPECT_EQ(Parse("@yearly"), Parse("0 0 1 1 *"));
  EXPECT_EQ(Parse("@annually"), Parse("0 0 1 1 *"));
  EXPECT_EQ(Parse("@monthly"), Parse("0 0 1 * *"));
  EXPECT_EQ(Parse("@weekly"), Parse("0 0 * * 0"));
  EXPECT_EQ(Parse("@daily"), Parse("0 0 * * *"));
  EXPECT_EQ(Parse("@midnight"), Parse("0 0 * * *"));
  EXPECT_EQ(Parse(" @hourly "), Parse("0 * * * *"));
}

TEST(ParseCronSchedule, ErrorsNameTheFieldAndValue) {
  EXPECT_THAT(ParseError("61 * * * *"), HasSubstr("minute: \"61\" is out of range 0-59"));
  EXPECT_THAT(ParseError("* 24 * * *"), HasSubstr("hour: \"24\" is out of range 0-23"));
  EXPECT_THAT(ParseError("* * 0 * *"), HasSubstr("day-of-month: \"0\" is out of range 1-31"));
  EXPECT_THAT(ParseError("* * * 13 *"), HasSubstr("month: \"13\" is out of range 1-12"));
  EXPECT_THAT(ParseError("* * * * 8"), HasSubstr("day-of-week: \"8\" is out of range 0-7"));
  EXPECT_THAT(ParseError("60 * * * * *"), HasSubstr("second: \"60\" is out of range 0-59"));
  EXPECT_THAT(ParseError("* * * FOO *"),
              HasSubstr("month: \"FOO\" is not a number or a name (JAN-DEC)"));
  EXPECT_THAT(ParseError("* * * * MON-FUN"),
              HasSubstr("day-of-week: \"FUN\" is not a number or a name (SUN-SAT)"));
  EXPECT_THAT(ParseError("x * * * *"), HasSubstr("minute: \"x\" is not a number"));
  EXPECT_THAT(ParseError("* 5-2 * * *"), HasSubstr("hour: the range \"5-2\" runs backwards"));
  EXPECT_THAT(ParseError("*/0 * * * *"), HasSubstr("minute: the step in \"*/0\""));
  EXPECT_THAT(ParseError("1,,2 * * * *"), HasSubstr("minute: empty item in \"1,,2\""));
  EXPECT_THAT(ParseError("* * *"), HasSubstr("expected 5 fields"));
  EXPECT_THAT(ParseError("* * * * * * *"), HasSubstr("got 7"));
  EXPECT_THAT(ParseError(""), HasSubstr("got 0"));
  EXPECT_THAT(ParseError("@reboot"), HasSubstr("unknown macro \"@reboot\""));
  EXPECT_THAT(ParseError("0 0 30 2 *"),
              HasSubstr("day-of-month: \"30\" never occurs in month \"2\""));
  EXPECT_THAT(ParseError("0 0 31 APR,JUN *"), HasSubstr("never occurs"));
}

TEST(ParseCronSchedule, DayThatOccursOnlyThroughTheWeekdayIsValid) {
  // Both day fields restricted: 30 February never comes, but Mondays in February do.
  EXPECT_TRUE(ParseCronSchedule("0 0 30 2 MON"));
  EXPECT_TRUE(ParseCronSchedule("0 0 29 2 *"));
}

}  // namespace
}  // namespace drover::workflow
