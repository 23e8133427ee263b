#include "drover/sched/flat_amounts.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace drover::sched {
namespace {

std::vector<std::pair<std::string, std::int64_t>> Entries(const FlatAmounts& amounts) {
  return {amounts.begin(), amounts.end()};
}

TEST(FlatAmounts, KeepsNamesInOrderWhateverOrderTheyCameIn) {
  const FlatAmounts amounts{{"memory", 3}, {"cpu", 1}, {"gpu:h100", 4}, {"gpu", 2}};
  EXPECT_EQ(Entries(amounts), (std::vector<std::pair<std::string, std::int64_t>>{
                                  {"cpu", 1}, {"gpu", 2}, {"gpu:h100", 4}, {"memory", 3}}));
  EXPECT_EQ(amounts.size(), 4u);
}

TEST(FlatAmounts, ANameGivenTwiceKeepsItsFirstAmountAsAMapWould) {
  const FlatAmounts amounts{{"gpu", 2}, {"gpu", 5}};
  const std::map<std::string, std::int64_t> map{{"gpu", 2}, {"gpu", 5}};
  EXPECT_EQ(amounts.at("gpu"), map.at("gpu"));
  EXPECT_EQ(amounts.size(), map.size());
}

TEST(FlatAmounts, FindsPresentNamesAndOnlyThose) {
  const FlatAmounts amounts{{"cpu", 1}, {"gpu", 2}};
  ASSERT_NE(amounts.find("gpu"), amounts.end());
  EXPECT_EQ(amounts.find("gpu")->second, 2);
  EXPECT_EQ(amounts.find("gp"), amounts.end());
  EXPECT_EQ(amounts.find("gpu:a100"), amounts.end());
  EXPECT_TRUE(amounts.contains("cpu"));
  EXPECT_FALSE(amounts.contains("memory"));
  EXPECT_EQ(FlatAmounts{}.find("cpu"), FlatAmounts{}.end());
}

TEST(FlatAmounts, SubscriptAddsAMissingNameAtItsPlaceAsZero) {
  FlatAmounts amounts{{"cpu", 1}, {"memory", 3}};
  EXPECT_EQ(amounts["gpu"], 0);
  amounts["gpu"] = 7;
  amounts["cpu"] += 1;
  EXPECT_EQ(amounts, (FlatAmounts{{"cpu", 2}, {"gpu", 7}, {"memory", 3}}));
}

TEST(FlatAmounts, AppendTakesNamesInAscendingOrderOnly) {
  FlatAmounts amounts;
  amounts.Append("cpu", 1);
  amounts.Append("gpu", 2);
  EXPECT_EQ(amounts, (FlatAmounts{{"gpu", 2}, {"cpu", 1}}));
  EXPECT_DEATH(amounts.Append("cpu", 3), "");
  EXPECT_DEATH(amounts.Append("gpu", 3), "");
}

TEST(FlatAmounts, AtOfAMissingNameIsACallerBug) {
  const FlatAmounts amounts{{"cpu", 1}};
  EXPECT_DEATH((void)amounts.at("gpu"), "");
}

TEST(FlatAmounts, ChangingAmountsInPlaceKeepsTheOrder) {
  FlatAmounts amounts{{"gpu", 2}, {"cpu", 1}};
  for (auto& [name, amount] : amounts) amount *= 3;
  EXPECT_EQ(amounts, (FlatAmounts{{"cpu", 3}, {"gpu", 6}}));
}

// Random inserts through the subscript read back as a std::map given the same ones does.
TEST(FlatAmounts, ReadsAsAMapUnderRandomInserts) {
  std::mt19937 rng(17);
  for (int round = 0; round < 50; ++round) {
    FlatAmounts flat;
    std::map<std::string, std::int64_t> map;
    for (int i = 0; i < 12; ++i) {
      const std::string name = "r" + std::to_string(rng() % 9);
      const std::int64_t amount = static_cast<std::int64_t>(rng() % 100);
      flat[name] += amount;
      map[name] += amount;
    }
    EXPECT_EQ(Entries(flat),
              (std::vector<std::pair<std::string, std::int64_t>>(map.begin(), map.end())));
    for (int n = 0; n < 10; ++n) {
      const std::string name = "r" + std::to_string(n);
      EXPECT_EQ(flat.contains(name), map.contains(name)) << name;
    }
  }
}

}  // namespace
}  // namespace drover::sched
