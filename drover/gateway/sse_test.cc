#include "drover/gateway/sse.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drover/gateway/json_depth.h"

namespace drover::gateway {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(SseReader, ReadsEventsSplitAtAnyByte) {
  const std::string stream =
      "data: {\"a\":1}\n\n: comment\n\ndata: {\"b\":2}\r\n\r\nevent: x\ndata: [DONE]\n\n";
  for (std::size_t split = 0; split <= stream.size(); ++split) {
    SseReader reader;
    std::vector<std::string> events = reader.Feed(stream.substr(0, split));
    for (std::string& event : reader.Feed(stream.substr(split))) events.push_back(event);
    EXPECT_THAT(events, ElementsAre("{\"a\":1}", "{\"b\":2}")) << "split at " << split;
    EXPECT_TRUE(reader.done());
  }
}

TEST(SseReader, JoinsMultiLineDataAndWaitsForTheBlankLine) {
  SseReader reader;
  EXPECT_THAT(reader.Feed("data: one\ndata: two\n"), IsEmpty());
  EXPECT_FALSE(reader.done());
  EXPECT_THAT(reader.Feed("\n"), ElementsAre("one\ntwo"));
}

TEST(SseReader, DropsAnOverlongLineWithoutGrowingWithoutBound) {
  SseReader reader;
  const std::string huge(SseReader::kMaxLineBytes + 10, 'x');
  EXPECT_THAT(reader.Feed("data: " + huge), IsEmpty());
  EXPECT_THAT(reader.Feed(huge), IsEmpty());
  EXPECT_THAT(reader.Feed("\n\ndata: ok\n\n"), ElementsAre("ok"));
  EXPECT_EQ(reader.dropped_lines(), 1);
}

TEST(JsonDepth, FindsTheFirstBracketTooDeepOutsideStrings) {
  EXPECT_EQ(ExceedsJsonDepth(R"({"a":[1,{"b":2}]})", 3), std::nullopt);
  EXPECT_EQ(ExceedsJsonDepth(R"({"a":[1,{"b":2}]})", 2), 8u);
  EXPECT_EQ(ExceedsJsonDepth(R"({"a":"[[[[[\"[[["})", 1), std::nullopt);
  EXPECT_EQ(ExceedsJsonDepth(std::string(100000, '['), 32), 32u);
}

}  // namespace
}  // namespace drover::gateway
