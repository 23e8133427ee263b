#include "drover/common/utf8.h"

#include <gtest/gtest.h>

namespace drover {
namespace {

TEST(Utf8, AcceptsWellFormedText) {
  EXPECT_EQ(FindInvalidUtf8(""), std::nullopt);
  EXPECT_EQ(FindInvalidUtf8("plain ascii"), std::nullopt);
  EXPECT_EQ(FindInvalidUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x9A\x80"), std::nullopt);
  EXPECT_EQ(FindInvalidUtf8("\xEF\xBF\xBD"), std::nullopt);      // U+FFFD itself is valid
  EXPECT_EQ(FindInvalidUtf8("\xF4\x8F\xBF\xBF"), std::nullopt);  // U+10FFFF
}

TEST(Utf8, FindsTheFirstInvalidByte) {
  EXPECT_EQ(FindInvalidUtf8("ab\xFF"), 2u);
  EXPECT_EQ(FindInvalidUtf8("\x80"), 0u);              // stray continuation
  EXPECT_EQ(FindInvalidUtf8("x\xC3"), 1u);             // truncated
  EXPECT_EQ(FindInvalidUtf8("\xC0\xAF"), 0u);          // overlong '/'
  EXPECT_EQ(FindInvalidUtf8("\xE0\x80\xAF"), 0u);      // overlong, 3 bytes
  EXPECT_EQ(FindInvalidUtf8("ok\xED\xA0\x80"), 2u);    // surrogate U+D800
  EXPECT_EQ(FindInvalidUtf8("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(FindInvalidUtf8("\xC3\xA9\xE2\x82"), 2u);  // valid, then truncated
}

TEST(Utf8, SequenceLengthCountsTheBytesOfOneCodePoint) {
  EXPECT_EQ(Utf8SequenceLength("a", 0), 1u);
  EXPECT_EQ(Utf8SequenceLength("\xC3\xA9", 0), 2u);
  EXPECT_EQ(Utf8SequenceLength("\xE2\x82\xAC", 0), 3u);
  EXPECT_EQ(Utf8SequenceLength("\xF0\x9F\x9A\x80", 0), 4u);
  EXPECT_EQ(Utf8SequenceLength("\xF0\x9F\x9A", 0), 0u);
}

}  // namespace
}  // namespace drover
