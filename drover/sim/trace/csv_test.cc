#include "drover/sim/trace/csv.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace drover::sim {
namespace {

using ::testing::ElementsAre;

// Every record of `text` as its fields, or the first error's message.
struct Read {
  std::vector<std::vector<std::string>> records;
  std::vector<int> lines;
  std::string error;
};

Read ReadAll(std::string text) {
  Read out;
  auto csv = CsvReader::FromText(std::move(text), "t.csv");
  if (!csv) {
    out.error = csv.error().message;
    return out;
  }
  while (true) {
    auto more = csv->Next();
    if (!more) {
      out.error = more.error().message;
      return out;
    }
    if (!*more) return out;
    std::vector<std::string> fields;
    for (int i = 0; i < static_cast<int>(csv->columns().size()); ++i) {
      fields.emplace_back(csv->Field(i));
    }
    out.records.push_back(std::move(fields));
    out.lines.push_back(csv->line());
  }
}

TEST(CsvReader, MapsHeaderNamesToColumns) {
  auto csv = CsvReader::FromText("a, b ,c\n1,2,3\n", "t.csv");
  ASSERT_TRUE(csv) << csv.error().message;
  EXPECT_THAT(csv->columns(), ElementsAre("a", "b", "c"));
  EXPECT_EQ(csv->Find("b"), 1);
  EXPECT_EQ(csv->Find("z"), -1);
  EXPECT_EQ(csv->Field(-1), "");
  auto missing = csv->Require("z");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message,
            "t.csv:1: column 'z': missing from the header (its columns are a, b, c)");
}

TEST(CsvReader, ReadsQuotedFieldsAndCountsLines) {
  Read r = ReadAll(
      "\xEF\xBB\xBFname,note\r\n"
      "a,\"x, y\"\r\n"
      "\n"
      "b,\"say \"\"hi\"\"\"\n"
      "c,\"two\nlines\"\n"
      "d, plain \n");
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.records.size(), 4u);
  EXPECT_THAT(r.records[0], ElementsAre("a", "x, y"));
  EXPECT_THAT(r.records[1], ElementsAre("b", "say \"hi\""));
  EXPECT_THAT(r.records[2], ElementsAre("c", "two\nlines"));
  EXPECT_THAT(r.records[3], ElementsAre("d", "plain"));
  EXPECT_THAT(r.lines, ElementsAre(2, 4, 5, 7));
}

TEST(CsvReader, LastLineNeedsNoNewlineAndEmptyCellsAreEmpty) {
  Read r = ReadAll("a,b,c\n1,,\n,2,");
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_THAT(r.records[0], ElementsAre("1", "", ""));
  EXPECT_THAT(r.records[1], ElementsAre("", "2", ""));
}

TEST(CsvReader, RejectsRecordsOfTheWrongWidth) {
  EXPECT_EQ(ReadAll("a,b,c\n1,2,3\n1,2\n").error,
            "t.csv:3: column 'c': missing: the record has 2 fields, the header 3");
  EXPECT_EQ(ReadAll("a,b\n1,2\n\n1,2,3\n").error,
            "t.csv:4: 3 fields, but the header has 2 columns");
}

TEST(CsvReader, RejectsBadQuotes) {
  EXPECT_EQ(ReadAll("a,b\n1,\"open\n2,3\n").error,
            "t.csv:2: column 'b': unterminated quoted field");
  EXPECT_EQ(ReadAll("a,b\n\"x\"y,2\n").error,
            "t.csv:2: column 'a': unexpected text after the closing quote");
}

TEST(CsvReader, RejectsBadHeaders) {
  EXPECT_EQ(ReadAll("").error, "t.csv:1: empty file: expected a header line naming the columns");
  EXPECT_EQ(ReadAll("\n \n").error,
            "t.csv:1: empty file: expected a header line naming the columns");
  EXPECT_EQ(ReadAll("a,,c\n").error, "t.csv:1: column 2 of the header has no name");
  EXPECT_EQ(ReadAll("a,b,a\n").error, "t.csv:1: column 'a': appears twice in the header");
}

TEST(CsvReader, ParsesNumbersWithColumnErrors) {
  auto csv = CsvReader::FromText("n,x\n12,1.5\n-1,abc\n,1e3\n99999999999999999999,x\n", "t.csv");
  ASSERT_TRUE(csv);
  ASSERT_TRUE(*csv->Next());
  EXPECT_EQ(*csv->NonNegativeInt(0), 12);
  EXPECT_DOUBLE_EQ(*csv->Number(1), 1.5);
  ASSERT_TRUE(*csv->Next());
  EXPECT_EQ(csv->NonNegativeInt(0).error().message,
            "t.csv:3: column 'n': expected a non-negative whole number, found '-1'");
  EXPECT_EQ(csv->Number(1).error().message, "t.csv:3: column 'x': expected a number, found 'abc'");
  ASSERT_TRUE(*csv->Next());
  EXPECT_EQ(csv->NonNegativeInt(0).error().message, "t.csv:4: column 'n': must not be empty");
  EXPECT_DOUBLE_EQ(*csv->Number(1), 1000);
  ASSERT_TRUE(*csv->Next());
  EXPECT_EQ(csv->NonNegativeInt(0).error().message,
            "t.csv:5: column 'n': number is too large: 99999999999999999999");
  EXPECT_FALSE(*csv->Next());
}

TEST(CsvReader, OpenReportsAMissingFileAsNotFound) {
  auto csv = CsvReader::Open("/nonexistent/drover/trace.csv");
  ASSERT_FALSE(csv);
  EXPECT_EQ(csv.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace drover::sim
