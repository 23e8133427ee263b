#include "drover/sched/sorted_blocks.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <random>
#include <set>
#include <vector>

namespace drover::sched::internal {
namespace {

using Blocks = SortedBlocks<std::int64_t>;

std::vector<std::int64_t> Forwards(const Blocks& blocks) {
  return std::vector<std::int64_t>(blocks.begin(), blocks.end());
}

std::vector<std::int64_t> Backwards(const Blocks& blocks) {
  std::vector<std::int64_t> out;
  for (auto it = blocks.end(); it != blocks.begin();) out.push_back(*--it);
  return out;
}

TEST(SortedBlocks, StartsEmpty) {
  Blocks blocks;
  EXPECT_TRUE(blocks.empty());
  EXPECT_EQ(blocks.begin(), blocks.end());
  EXPECT_EQ(blocks.lower_bound(7), blocks.end());
  EXPECT_EQ(blocks.erase(7), 0U);
}

TEST(SortedBlocks, KeepsOneOfEqualValues) {
  Blocks blocks;
  EXPECT_TRUE(blocks.insert(3));
  EXPECT_FALSE(blocks.insert(3));
  EXPECT_EQ(blocks.size(), 1U);
  EXPECT_EQ(blocks.erase(3), 1U);
  EXPECT_EQ(blocks.erase(3), 0U);
  EXPECT_TRUE(blocks.empty());
}

// Ascending inserts (how an index is built) split the last block again and again; every value
// stays reachable in order from both ends.
TEST(SortedBlocks, AscendingInsertsSplitBlocksInOrder) {
  Blocks blocks;
  const std::int64_t n = 10 * Blocks::kMaxBlock + 3;
  for (std::int64_t v = 0; v < n; ++v) ASSERT_TRUE(blocks.insert(2 * v));
  std::vector<std::int64_t> expected;
  for (std::int64_t v = 0; v < n; ++v) expected.push_back(2 * v);
  EXPECT_EQ(Forwards(blocks), expected);
  EXPECT_EQ(Backwards(blocks), std::vector<std::int64_t>(expected.rbegin(), expected.rend()));
  EXPECT_EQ(*blocks.lower_bound(5), 6);
  EXPECT_EQ(*blocks.lower_bound(6), 6);
  EXPECT_EQ(blocks.lower_bound(2 * n), blocks.end());
}

// Against std::set under a random mix of inserts, erasures and moves (an erase then an insert,
// as an allocation change moves a node's key): the same values in the same order, the same
// lower_bound for every probe, the same answers to insert and erase.
TEST(SortedBlocks, MatchesStdSetUnderRandomChanges) {
  std::mt19937_64 rng(20261204);
  for (int round = 0; round < 4; ++round) {
    Blocks blocks;
    std::set<std::int64_t> reference;
    const std::int64_t range = round % 2 == 0 ? 600 : 6000;
    std::uniform_int_distribution<std::int64_t> value(0, range);
    for (int step = 0; step < 20000; ++step) {
      const std::int64_t v = value(rng);
      switch (rng() % 3) {
        case 0:
          ASSERT_EQ(blocks.insert(v), reference.insert(v).second);
          break;
        case 1:
          ASSERT_EQ(blocks.erase(v), reference.erase(v));
          break;
        default: {
          const std::int64_t to = value(rng);
          ASSERT_EQ(blocks.erase(v), reference.erase(v));
          ASSERT_EQ(blocks.insert(to), reference.insert(to).second);
        }
      }
      ASSERT_EQ(blocks.size(), reference.size());
      const std::int64_t probe = value(rng);
      auto got = blocks.lower_bound(probe);
      auto want = reference.lower_bound(probe);
      ASSERT_EQ(got == blocks.end(), want == reference.end()) << "probe " << probe;
      if (want != reference.end()) {
        ASSERT_EQ(*got, *want);
        if (want != reference.begin()) {
          ASSERT_EQ(*--got, *std::prev(want));
        }
      }
    }
    EXPECT_EQ(Forwards(blocks), std::vector<std::int64_t>(reference.begin(), reference.end()));
    EXPECT_EQ(Backwards(blocks), std::vector<std::int64_t>(reference.rbegin(), reference.rend()));
  }
}

}  // namespace
}  // namespace drover::sched::internal
