#include "drover/sim/replay/stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace drover::sim::internal {
namespace {

TEST(Summarize, NearestRankPercentilesOfValuesInAnyOrder) {
  std::vector<double> values;
  for (int i = 1; i <= 1000; ++i) values.push_back(i);
  std::mt19937 rng(7);
  std::shuffle(values.begin(), values.end(), rng);
  const Summary summary = Summarize(values);
  EXPECT_DOUBLE_EQ(summary.mean, 500.5);
  // The smallest value with at least p% of the values at or below it.
  EXPECT_EQ(summary.p50, 500);
  EXPECT_EQ(summary.p95, 950);
  EXPECT_EQ(summary.p99, 990);
}

TEST(Summarize, FewValuesAndRepeats) {
  std::vector<double> one = {4.0};
  const Summary single = Summarize(one);
  EXPECT_EQ(single.p50, 4.0);
  EXPECT_EQ(single.p99, 4.0);

  std::vector<double> three = {9.0, 1.0, 5.0};
  const Summary small = Summarize(three);
  EXPECT_EQ(small.p50, 5.0);  // rank ceil(1.5) = 2
  EXPECT_EQ(small.p95, 9.0);
  EXPECT_EQ(small.p99, 9.0);

  std::vector<double> repeats = {2.0, 7.0, 2.0, 2.0, 7.0, 7.0, 7.0, 2.0, 2.0, 2.0};
  const Summary repeated = Summarize(repeats);
  EXPECT_EQ(repeated.p50, 2.0);  // six of ten are 2
  EXPECT_EQ(repeated.p95, 7.0);

  std::vector<double> none;
  const Summary empty = Summarize(none);
  EXPECT_EQ(empty.mean, 0.0);
  EXPECT_EQ(empty.p99, 0.0);
}

}  // namespace
}  // namespace drover::sim::internal
