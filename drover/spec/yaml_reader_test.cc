#include "drover/spec/yaml_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace drover::spec::internal {
namespace {

using ::testing::HasSubstr;

TEST(ParseMillis, ReadsWholeUnitsFractionsAndThousandths) {
  EXPECT_EQ(ParseMillis("4"), 4000);
  EXPECT_EQ(ParseMillis("0"), 0);
  EXPECT_EQ(ParseMillis("0.25"), 250);
  EXPECT_EQ(ParseMillis("1.5"), 1500);
  EXPECT_EQ(ParseMillis("0.001"), 1);
  EXPECT_EQ(ParseMillis("0.5000"), 500);
  EXPECT_EQ(ParseMillis("250m"), 250);
  EXPECT_EQ(ParseMillis("2500m"), 2500);
  EXPECT_EQ(ParseMillis("500.0m"), 500);
  EXPECT_EQ(ParseMillis("+3"), 3000);
}

TEST(ParseMillis, RejectsWhatIsNotAWholeNumberOfThousandths) {
  EXPECT_THAT(ParseMillis("0.0005").error().message, HasSubstr("at most 3 decimals"));
  EXPECT_THAT(ParseMillis("0.5m").error().message, HasSubstr("must be a whole number"));
  EXPECT_THAT(ParseMillis("-1").error().message, HasSubstr("must not be negative"));
  EXPECT_THAT(ParseMillis("99999999999999999").error().message, HasSubstr("too large"));
  for (const char* bad : {"", "m", ".", "1x", "1 m", "one", "1mm", "1e3"}) {
    auto parsed = ParseMillis(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_THAT(parsed.error().message, HasSubstr("expected a number such as 2, 0.25 or 250m"))
        << bad;
  }
}

TEST(IsValidName, FollowsTheJobNameRule) {
  EXPECT_TRUE(IsValidName("team-a"));
  EXPECT_TRUE(IsValidName("0.v_1"));
  EXPECT_TRUE(IsValidName(std::string(63, 'a')));
  EXPECT_FALSE(IsValidName(std::string(64, 'a')));
  EXPECT_FALSE(IsValidName(""));
  EXPECT_FALSE(IsValidName("-a"));
  EXPECT_FALSE(IsValidName("Team"));
  EXPECT_FALSE(IsValidName("a b"));
}

}  // namespace
}  // namespace drover::spec::internal
