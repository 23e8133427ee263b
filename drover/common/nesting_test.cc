#include "drover/common/nesting.h"

#include <gtest/gtest.h>

#include <string>

namespace drover {
namespace {

TEST(FindExcessNesting, NamesTheBracketThatOpensOneLevelTooMany) {
  EXPECT_EQ(FindExcessNesting("[[]]", NestingSyntax::kJson, 2), std::nullopt);
  EXPECT_EQ(FindExcessNesting("[{\"a\": [1]}]", NestingSyntax::kJson, 2), 7u);
  EXPECT_EQ(FindExcessNesting("[][][][]", NestingSyntax::kYaml, 1), std::nullopt);
  EXPECT_EQ(FindExcessNesting(std::string(1 << 20, '['), NestingSyntax::kYaml),
            static_cast<std::size_t>(kMaxNestingDepth));
  EXPECT_EQ(FindExcessNesting(std::string(kMaxNestingDepth, '{'), NestingSyntax::kJson),
            std::nullopt);
}

TEST(FindExcessNesting, ClosersWithoutOpenersDoNotLowerTheDepthBelowZero) {
  EXPECT_EQ(FindExcessNesting("]]]][[[", NestingSyntax::kYaml, 2), 6u);
}

TEST(FindExcessNesting, SkipsJsonStringsAndTheirEscapesButCountsEveryBracketInYaml) {
  const std::string in_string = "[\"[[[\\\"[[[\", 1]";
  EXPECT_EQ(FindExcessNesting(in_string, NestingSyntax::kJson, 1), std::nullopt);
  EXPECT_EQ(FindExcessNesting(in_string, NestingSyntax::kYaml, 1), 2u);
}

}  // namespace
}  // namespace drover
