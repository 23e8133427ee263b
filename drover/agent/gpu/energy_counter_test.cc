#include "drover/agent/gpu/energy_counter.h"

#include <gtest/gtest.h>

namespace drover::agent {
namespace {

TEST(EnergyCounter, ReadsTheDriversCounterFirstThenOnItsInterval) {
  EnergyCounter counter(30'000);
  EXPECT_TRUE(counter.ReadDue(0, 100'000));
  counter.Report(0, 100'000, 5'000'000);
  for (std::int64_t at = 1'000; at < 30'000; at += 1'000) {  // a sample a second
    EXPECT_FALSE(counter.ReadDue(at, 100'000)) << at;
    counter.Report(at, 100'000, std::nullopt);
  }
  EXPECT_TRUE(counter.ReadDue(30'000, 100'000));
}

TEST(EnergyCounter, BetweenReadsAddsPowerTimesTimeAndAReadPutsItBackOnTheDrivers) {
  EnergyCounter counter(30'000);
  EXPECT_EQ(counter.Report(0, 100'000, 5'000'000), 5'000'000);
  // 100 W for 1 s: 100 J = 100,000 mJ; then 300 W for 2.5 s: 750 J.
  EXPECT_EQ(counter.Report(1'000, 100'000, std::nullopt), 5'100'000);
  EXPECT_EQ(counter.Report(3'500, 300'000, std::nullopt), 5'850'000);
  // The driver's counter read again wins over the integral, up or down.
  EXPECT_EQ(counter.Report(30'000, 300'000, 13'000'000), 13'000'000);
  EXPECT_EQ(counter.Report(31'000, 200'000, std::nullopt), 13'200'000);
}

TEST(EnergyCounter, WithoutPowerItReadsEveryTimeAndCannotEstimate) {
  EnergyCounter counter(30'000);
  counter.Report(0, 100'000, 5'000'000);
  EXPECT_TRUE(counter.ReadDue(1'000, -1));  // nothing to integrate: read instead
  EXPECT_EQ(counter.Report(1'000, -1, std::nullopt), -1);
  // Nothing to advance from until the next read.
  EXPECT_EQ(counter.Report(2'000, 100'000, std::nullopt), -1);
  EXPECT_EQ(counter.Report(3'000, 100'000, 7'000'000), 7'000'000);
}

TEST(EnergyCounter, AGapLongerThanPowerCoversIsReadNotIntegrated) {
  EnergyCounter counter(30'000);
  counter.Report(0, 100'000, 5'000'000);
  EXPECT_FALSE(counter.ReadDue(EnergyCounter::kMaxIntegratedGapMs, 100'000));
  EXPECT_TRUE(counter.ReadDue(EnergyCounter::kMaxIntegratedGapMs + 1, 100'000));
  counter.Report(1'000, 100'000, std::nullopt);
  EXPECT_FALSE(counter.ReadDue(6'000, 100'000));  // measured from the last value, not the read
}

TEST(EnergyCounter, AFailedReadWaitsItsIntervalAndReportsUnknown) {
  EnergyCounter counter(30'000);
  EXPECT_EQ(counter.Report(0, 100'000, -1), -1);  // NOT_SUPPORTED, say
  EXPECT_FALSE(counter.ReadDue(1'000, 100'000));  // not asked again every second
  EXPECT_EQ(counter.Report(1'000, 100'000, std::nullopt), -1);
  EXPECT_TRUE(counter.ReadDue(30'000, 100'000));
}

}  // namespace
}  // namespace drover::agent
