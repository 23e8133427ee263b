#include "drover/model/mig.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace drover::model {
namespace {

using ::testing::HasSubstr;

TEST(ParseMigProfile, ReadsComputeSlicesAndMemory) {
  auto profile = ParseMigProfile("3g.40gb");
  ASSERT_TRUE(profile) << profile.error().ToString();
  EXPECT_EQ(profile->compute_slices, 3);
  EXPECT_EQ(profile->memory_gb, 40);
  auto big = ParseMigProfile("7g.141gb");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->compute_slices, 7);
  EXPECT_EQ(big->memory_gb, 141);
}

TEST(ParseMigProfile, RejectsOtherSpellings) {
  for (const char* bad : {"", "3g", "3g40gb", "3g.40", "3g.40GB", "g.40gb", "3g.gb", "3x.40gb",
                          "3g.40gb+me", "1c.3g.40gb"}) {
    auto profile = ParseMigProfile(bad);
    ASSERT_FALSE(profile) << bad;
    EXPECT_THAT(profile.error().message, HasSubstr("is not a MIG profile")) << bad;
  }
  EXPECT_THAT(ParseMigProfile("8g.80gb").error().message,
              HasSubstr("the compute slices (8g) must be 1 to 7"));
  EXPECT_THAT(ParseMigProfile("0g.80gb").error().message, HasSubstr("must be 1 to 7"));
  EXPECT_THAT(ParseMigProfile("1g.0gb").error().message, HasSubstr("memory must not be 0"));
}

TEST(CheckMigLayout, AllowsUpToSevenComputeSlices) {
  EXPECT_TRUE(CheckMigLayout({{"3g.20gb", 2}, {"1g.5gb", 1}}));
  EXPECT_TRUE(CheckMigLayout({{"1g.10gb", 7}}));
  EXPECT_TRUE(CheckMigLayout({{"7g.80gb", 1}}));
  auto too_many = CheckMigLayout({{"3g.40gb", 2}, {"2g.20gb", 1}});
  ASSERT_FALSE(too_many);
  EXPECT_EQ(too_many.error().message, "the MIG layout uses 8 compute slices; a GPU has 7");
}

TEST(CheckMigLayout, RejectsBadEntries) {
  EXPECT_THAT(CheckMigLayout({}).error().message, HasSubstr("the MIG layout is empty"));
  EXPECT_THAT(CheckMigLayout({{"3g.40gb", 1}, {"3g.40gb", 1}}).error().message,
              HasSubstr("listed twice"));
  EXPECT_THAT(CheckMigLayout({{"1g.10gb", 0}}).error().message,
              HasSubstr("the count must be 1 to 7, found 0"));
  EXPECT_THAT(CheckMigLayout({{"1g10gb", 1}}).error().message, HasSubstr("is not a MIG profile"));
}

TEST(MigProfilesOf, FollowsNvidiasTablesByModelAndMemory) {
  constexpr std::int64_t kGiB = std::int64_t{1} << 30;
  auto names = [](std::span<const MigProfileSpec> profiles) {
    std::vector<std::string> out;
    for (const MigProfileSpec& p : profiles) out.emplace_back(p.name);
    return out;
  };
  EXPECT_EQ(names(MigProfilesOf("H200", 140 * kGiB)),
            (std::vector<std::string>{"1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb",
                                      "7g.141gb"}));
  EXPECT_EQ(names(MigProfilesOf("A100", 39 * kGiB)).front(), "1g.5gb");
  EXPECT_EQ(names(MigProfilesOf("A100", 79 * kGiB)).front(), "1g.10gb");
  EXPECT_EQ(names(MigProfilesOf("H100", 79 * kGiB)).back(), "7g.80gb");
  EXPECT_EQ(names(MigProfilesOf("H100", 93 * kGiB)).back(), "7g.94gb");
  EXPECT_TRUE(MigProfilesOf("RTX4090", 24 * kGiB).empty());
  // Every listed profile parses, and its slices match its name.
  for (auto [model, memory] : {std::pair{"A100", 39}, {"A100", 79}, {"H100", 93}, {"H200", 140}}) {
    for (const MigProfileSpec& p : MigProfilesOf(model, memory * kGiB)) {
      Result<MigProfile> parsed = ParseMigProfile(p.name);
      ASSERT_TRUE(parsed) << p.name;
      EXPECT_EQ(parsed->compute_slices, p.compute_slices) << p.name;
      EXPECT_GE(p.max_instances, 1) << p.name;
    }
  }
}

}  // namespace
}  // namespace drover::model
