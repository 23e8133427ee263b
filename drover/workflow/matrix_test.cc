#include "drover/workflow/matrix.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <set>

namespace drover::workflow {
namespace {

using ::testing::ElementsAre;
using ::testing::SizeIs;

TEST(Matrix, GridIsTheCartesianProductInNameOrderLastNameFastest) {
  Matrix m;
  m.grid = {{"lr", {"0.1", "0.01"}}, {"batch", {"32", "64", "128"}}};
  EXPECT_EQ(TrialCount(m), 6);
  EXPECT_THAT(Expand(m), ElementsAre(ParamSet{{"batch", "32"}, {"lr", "0.1"}},
                                     ParamSet{{"batch", "32"}, {"lr", "0.01"}},
                                     ParamSet{{"batch", "64"}, {"lr", "0.1"}},
                                     ParamSet{{"batch", "64"}, {"lr", "0.01"}},
                                     ParamSet{{"batch", "128"}, {"lr", "0.1"}},
                                     ParamSet{{"batch", "128"}, {"lr", "0.01"}}));
}

TEST(Matrix, GridCountSaturatesInsteadOfOverflowing) {
  Matrix m;
  for (int i = 0; i < 70; ++i) m.grid["p" + std::to_string(i)] = {"a", "b"};
  EXPECT_EQ(TrialCount(m), std::numeric_limits<std::int64_t>::max());
}

TEST(Matrix, ListIsKeptAsWritten) {
  Matrix m;
  m.kind = Matrix::Kind::kList;
  m.list = {{{"model", "b"}}, {{"model", "a"}}};
  EXPECT_EQ(TrialCount(m), 2);
  EXPECT_EQ(Expand(m), m.list);
}

Matrix RandomMatrix(std::uint64_t seed) {
  Matrix m;
  m.kind = Matrix::Kind::kRandom;
  m.count = 50;
  m.seed = seed;
  m.params["lr"] = {.kind = Distribution::Kind::kLogUniform, .lo = 1e-5, .hi = 1e-1, .choices = {}};
  m.params["dropout"] = {.kind = Distribution::Kind::kUniform, .lo = 0.1, .hi = 0.5, .choices = {}};
  m.params["opt"] = {.kind = Distribution::Kind::kChoice, .choices = {"adam", "sgd", "lion"}};
  return m;
}

TEST(Matrix, RandomIsDeterministicAndWithinBounds) {
  const std::vector<ParamSet> sets = Expand(RandomMatrix(7));
  ASSERT_THAT(sets, SizeIs(50));
  EXPECT_EQ(sets, Expand(RandomMatrix(7)));
  EXPECT_NE(sets, Expand(RandomMatrix(8)));
  std::set<std::string> choices;
  for (const ParamSet& set : sets) {
    const double lr = std::stod(set.at("lr"));
    const double dropout = std::stod(set.at("dropout"));
    EXPECT_GE(lr, 1e-5);
    EXPECT_LE(lr, 1e-1);
    EXPECT_GE(dropout, 0.1);
    EXPECT_LE(dropout, 0.5);
    choices.insert(set.at("opt"));
  }
  EXPECT_EQ(choices, (std::set<std::string>{"adam", "lion", "sgd"}));
}

// The generator is std::mt19937_64's raw output, fully specified by the standard, so the first
// draws are fixed forever; a change here changes every stored random sweep.
TEST(Matrix, RandomDrawsArePinned) {
  std::mt19937_64 generator(0);
  EXPECT_DOUBLE_EQ(UnitDraw(generator),
                   static_cast<double>(2947667278772165694ULL >> 11) * 0x1.0p-53);
  Matrix m;
  m.kind = Matrix::Kind::kRandom;
  m.count = 2;
  m.seed = 0;
  m.params["x"] = {.kind = Distribution::Kind::kUniform, .lo = 0, .hi = 1, .choices = {}};
  EXPECT_THAT(Expand(m), ElementsAre(ParamSet{{"x", "0.159793"}}, ParamSet{{"x", "0.992145"}}));
}

TEST(Matrix, FormatsNumbersWithSixSignificantDigits) {
  EXPECT_EQ(FormatNumber(0.001), "0.001");
  EXPECT_EQ(FormatNumber(1e-5), "1e-05");
  EXPECT_EQ(FormatNumber(123456.7), "123457");
  EXPECT_EQ(FormatNumber(2), "2");
}

}  // namespace
}  // namespace drover::workflow
