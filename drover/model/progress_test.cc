#include "drover/model/progress.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>

namespace drover::model {
namespace {

using ::testing::HasSubstr;

// Reports of one kind each (designated initializers would leave the other fields unnamed).
ProgressReport Began() {
  ProgressReport report;
  report.useful_work_began = true;
  return report;
}
ProgressReport Progress(double progress) {
  ProgressReport report;
  report.progress = progress;
  return report;
}
ProgressReport Rate(std::optional<double> throughput, std::string unit) {
  ProgressReport report;
  report.throughput = throughput;
  report.unit = std::move(unit);
  return report;
}

// The field a refusal names (its message starts with it).
std::string Refusal(const ProgressReport& report) {
  Status status = CheckProgressReport(report);
  return status ? "" : status.error().message;
}

TEST(CheckProgressReport, AcceptsEachFieldAloneAndTogether) {
  EXPECT_TRUE(CheckProgressReport(Began()));
  EXPECT_TRUE(CheckProgressReport(Progress(0)));
  EXPECT_TRUE(CheckProgressReport(Progress(1)));
  EXPECT_TRUE(CheckProgressReport(Rate(0, "samples/s")));
  EXPECT_TRUE(CheckProgressReport(Rate(kMaxThroughput, "tokens/s")));
  EXPECT_TRUE(CheckProgressReport({true, 0.5, 1250, "img/s"}));
  EXPECT_TRUE(CheckProgressReport(Rate(1, std::string(30, 'x') + "/s")));
}

TEST(CheckProgressReport, RefusesEachBadFieldByName) {
  EXPECT_THAT(Refusal(ProgressReport{}), HasSubstr("nothing to report"));
  EXPECT_THAT(Refusal(Progress(1.0001)), HasSubstr("progress: "));
  EXPECT_THAT(Refusal(Progress(-0.1)), HasSubstr("progress: "));
  EXPECT_THAT(Refusal(Rate(-1, "samples/s")), HasSubstr("throughput: "));
  EXPECT_THAT(Refusal(Rate(kMaxThroughput * 2, "samples/s")), HasSubstr("throughput: "));
  EXPECT_THAT(Refusal(Rate(std::numeric_limits<double>::quiet_NaN(), "a/s")),
              HasSubstr("throughput: "));
  EXPECT_THAT(Refusal(Rate(5, "")), HasSubstr("unit: required"));
  ProgressReport unit_alone = Began();
  unit_alone.unit = "samples/s";
  EXPECT_THAT(Refusal(unit_alone), HasSubstr("unit: given without a throughput"));
  EXPECT_THAT(Refusal(Rate(5, "samples")), HasSubstr("is not a rate"));
  EXPECT_THAT(Refusal(Rate(5, "/s")), HasSubstr("is not a rate"));
  EXPECT_THAT(Refusal(Rate(5, "a b/s")), HasSubstr("character 2"));
  EXPECT_THAT(Refusal(Rate(5, "a/b/s")), HasSubstr("is not a rate"));
  EXPECT_THAT(Refusal(Rate(5, "\x1b[2J/s")), HasSubstr("character 1"));
  EXPECT_THAT(Refusal(Rate(1, std::string(31, 'x') + "/s")), HasSubstr("over the limit of 32"));
}

TEST(WorkRatesOf, PerGpuHourAndPerJouleFromTheLatestRate) {
  Attempt attempt;
  EXPECT_FALSE(WorkRatesOf(attempt, 4, nullptr));  // nothing reported
  attempt.throughput = 1000;
  attempt.throughput_unit = "samples/s";
  UsageSummary usage;
  usage.first_at = 0;
  usage.last_at = 10'000;        // 10 s sampled
  usage.energy_joules = 20'000;  // 2 kW over 4 GPUs
  const std::optional<WorkRates> rates = WorkRatesOf(attempt, 4, &usage);
  ASSERT_TRUE(rates);
  EXPECT_EQ(rates->work_unit, "samples");
  EXPECT_DOUBLE_EQ(*rates->per_gpu_hour, 1000.0 * 3600 / 4);
  EXPECT_DOUBLE_EQ(*rates->per_joule, 0.5);  // 1000 samples/s at 2000 J/s
  // No GPUs, no energy: those rates are unknown, not zero.
  const std::optional<WorkRates> bare = WorkRatesOf(attempt, 0, nullptr);
  ASSERT_TRUE(bare);
  EXPECT_FALSE(bare->per_gpu_hour);
  EXPECT_FALSE(bare->per_joule);
  usage.energy_joules = 0;
  EXPECT_FALSE(WorkRatesOf(attempt, 4, &usage)->per_joule);
}

}  // namespace
}  // namespace drover::model
