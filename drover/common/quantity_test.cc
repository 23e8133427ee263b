#include "drover/common/quantity.h"

#include <gtest/gtest.h>

namespace drover {
namespace {

TEST(ParseCpuMillis, AcceptsCoresAndMillicores) {
  EXPECT_EQ(*ParseCpuMillis("8"), 8000);
  EXPECT_EQ(*ParseCpuMillis("500m"), 500);
  EXPECT_EQ(*ParseCpuMillis("0.5"), 500);
  EXPECT_EQ(*ParseCpuMillis("2.25"), 2250);
}

TEST(ParseCpuMillis, RejectsNegativeFractionalMillisAndUnknownUnits) {
  EXPECT_FALSE(ParseCpuMillis("-1"));
  EXPECT_FALSE(ParseCpuMillis("0.5m"));
  EXPECT_FALSE(ParseCpuMillis("0.0001"));
  EXPECT_FALSE(ParseCpuMillis("4 cores"));
  EXPECT_FALSE(ParseCpuMillis(""));
}

TEST(ParseBytes, AcceptsBinaryAndDecimalUnits) {
  EXPECT_EQ(*ParseBytes("64Gi"), 64LL << 30);
  EXPECT_EQ(*ParseBytes("512MiB"), 512LL << 20);
  EXPECT_EQ(*ParseBytes("80GB"), 80'000'000'000LL);
  EXPECT_EQ(*ParseBytes("1.5Gi"), 3LL << 29);
  EXPECT_EQ(*ParseBytes("1024"), 1024);
}

TEST(ParseBytes, RejectsUnknownUnitsAndOverflow) {
  auto bad = ParseBytes("64Gb");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("unknown memory unit 'Gb'"), std::string::npos);
  EXPECT_FALSE(ParseBytes("99999999999Pi"));
  EXPECT_FALSE(ParseBytes("0.3"));
}

TEST(ParseDuration, AcceptsUnitsAndSums) {
  EXPECT_EQ(*ParseDuration("500ms"), 500);
  EXPECT_EQ(*ParseDuration("30s"), 30'000);
  EXPECT_EQ(*ParseDuration("1h30m"), 5'400'000);
  EXPECT_EQ(*ParseDuration("2"), 2'000);
  EXPECT_FALSE(ParseDuration("5 minutes"));
  EXPECT_FALSE(ParseDuration("1h30"));
}

TEST(Format, RoundTripsTypicalValues) {
  EXPECT_EQ(FormatCpuMillis(8000), "8");
  EXPECT_EQ(FormatCpuMillis(500), "500m");
  EXPECT_EQ(FormatBytes(64LL << 30), "64Gi");
  EXPECT_EQ(FormatBytes(1000), "1000");
  EXPECT_EQ(FormatBytesApprox(25'275'387'904), "23.5Gi");
  EXPECT_EQ(FormatBytesApprox(64LL << 30), "64Gi");
  EXPECT_EQ(FormatBytesApprox(512), "512");
  EXPECT_EQ(FormatDuration(-1500), "-1.5s");
  EXPECT_EQ(FormatDuration(1500), "1.5s");
  EXPECT_EQ(FormatDuration(90'000), "1m30s");
  EXPECT_EQ(FormatDuration(7'200'000), "2h");
}

}  // namespace
}  // namespace drover
