// Tests of the report's shared pieces (report_parts.h): the JSON readers, the formatting, the
// tables in both renderings, the page and the labels.

#include "drover/sim/report/report_parts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace drover::sim::report_internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

MATCHER_P2(PointIs, x, y, "") { return arg.x == x && arg.y == y; }

TEST(ReadJson, MissingOrWrongTypesAnswerNothingOrTheFallback) {
  const json object = json::parse(R"({"n": 2.5, "s": "text", "o": {"k": 1}})");
  EXPECT_EQ(NumberAt(&object, "n"), 2.5);
  EXPECT_EQ(NumberAt(&object, "s"), std::nullopt);
  EXPECT_EQ(NumberAt(nullptr, "n"), std::nullopt);
  EXPECT_EQ(Field(&object["s"], "k"), nullptr);
  EXPECT_EQ(TextAt(&object, "s"), "text");
  EXPECT_EQ(TextAt(&object, "n", "none"), "none");
  EXPECT_EQ(TextAt(&object, "missing"), "");
  EXPECT_TRUE(IsObject(Field(&object, "o")));
  EXPECT_FALSE(IsObject(Field(&object, "n")));
  const json not_finite = std::nan("");
  EXPECT_EQ(Number(&not_finite), std::nullopt);
}

TEST(ReadJson, AtCurveSortsByDemandAndSkipsBadEntries) {
  const json map =
      json::parse(R"({"130": 3, "0": 1, "abc": 5, "10": "x", "-5x": 1, "20": 2, "7": null})");
  EXPECT_THAT(AtCurve(&map), ElementsAre(PointIs(0, 1), PointIs(20, 2), PointIs(130, 3)));
  EXPECT_EQ(AtValue(&map, 130), 3);
  EXPECT_EQ(AtValue(&map, 10), std::nullopt);
  const json not_a_map = json::array({1, 2});
  EXPECT_TRUE(AtCurve(&not_a_map).empty());
}

TEST(ReadJson, PairSeriesSkipsBadPairsAndThinsLongSeriesKeepingBothEnds) {
  const json pairs = json::parse(R"([[1], [2, "a"], "z", [3, 40], [4, 50, 9]])");
  EXPECT_THAT(PairSeries(&pairs), ElementsAre(PointIs(3, 40), PointIs(4, 50)));

  json long_series = json::array();
  for (int i = 0; i < 5000; ++i) long_series.push_back({i, i % 7});
  const std::vector<Point> thin = PairSeries(&long_series);
  EXPECT_LE(thin.size(), 2000u);
  EXPECT_GE(thin.size(), 1000u);
  EXPECT_EQ(thin.front().x, 0);
  EXPECT_EQ(thin.back().x, 4999);
}

TEST(Format, NumbersDropTheSignOfZeroAndCountsTheirDecimals) {
  EXPECT_EQ(Fixed(-0.001, 2), "0.00");
  EXPECT_EQ(Fixed(-1.5, 1), "-1.5");
  EXPECT_EQ(Fixed(std::nullopt, 2), "n/a");
  EXPECT_EQ(SignedFixed(0.5, 2), "+0.50");
  EXPECT_EQ(SignedFixed(-0.001, 2), "+0.00");
  EXPECT_EQ(SignedFixed(-2, 1), "-2.0");
  EXPECT_EQ(Count(42.0), "42");
  EXPECT_EQ(Count(2.5), "2.50");
  EXPECT_EQ(Count(std::nullopt), "n/a");
}

TEST(Format, HumanDurationsRoundIntoTheNextUnit) {
  EXPECT_EQ(Human(45.24), "45.2s");
  EXPECT_EQ(Human(59.96), "1m00s");
  EXPECT_EQ(Human(192), "3m12s");
  EXPECT_EQ(Human(7500), "2h05m");
  EXPECT_EQ(Human(27 * 3600), "1d03h");
  EXPECT_EQ(Human(-100), "-1m40s");
  EXPECT_EQ(Human(std::nullopt), "n/a");
}

TEST(Format, SeedsAsARangeAListOrACount) {
  auto seeds = [](const json& value) { return Seeds(&value); };
  EXPECT_EQ(seeds(json{42, 43, 44, 45, 46, 47, 48, 49, 50, 51}), "42..51 (10 seeds)");
  EXPECT_EQ(seeds(json::array({42})), "42");
  EXPECT_EQ(seeds(json{1, 5, 9}), "1, 5, 9");
  EXPECT_EQ(seeds(json{1, 3, 5, 7, 9, 11, 13, 15, 17, 19}),
            "1, 3, 5, 7, 9, 11, 13, 15, ... (10 seeds)");
  EXPECT_EQ(seeds(json{1, "a"}), "2 seeds");
  EXPECT_EQ(seeds(json::array()), "n/a");
  EXPECT_EQ(seeds(json("all")), "n/a");
}

TEST(Format, WidthCountsCodePoints) {
  EXPECT_EQ(Width("abc"), 3u);
  EXPECT_EQ(Width("\xC2\xB5s"), 2u);     // "µs"
  EXPECT_EQ(Width("\xE2\x94\x80"), 1u);  // "─"
}

Table SampleTable() {
  return Table{{"name", "n"}, {{Plain("a"), Num("10")}, {Plain("long"), Seconds(90)}}};
}

TEST(Tables, TextPadsColumnsAndRightAlignsAllButTheFirst) {
  EXPECT_EQ(RenderTextTable(SampleTable()),
            "name      n\n"
            "a        10\n"
            "long  1m30s\n");
  EXPECT_EQ(RenderTextTable(Table{{"x"}, {{Plain("abc")}}}), "x\nabc\n");
}

TEST(Tables, HtmlShowsSecondsWithThePeoplesFormAsideFromAMinuteOn) {
  const std::string html = RenderHtmlTable(SampleTable());
  EXPECT_THAT(html, HasSubstr("<thead><tr><th>name</th><th>n</th></tr></thead>"));
  EXPECT_THAT(html, HasSubstr("<tr><td>a</td><td class=\"num\">10</td></tr>"));
  EXPECT_THAT(html, HasSubstr("<td class=\"num\">90.0<span class=\"human\">1m30s</span></td>"));
  EXPECT_THAT(RenderHtmlTable(Table{{"s"}, {{Seconds(30)}}}),
              HasSubstr("<td class=\"num\">30.0</td>"));
  EXPECT_THAT(RenderHtmlTable(SampleTable(), /*header=*/false), Not(HasSubstr("<thead>")));
}

TEST(HtmlPage, EscapesTextAndWritesNoUrl) {
  Page page;
  page.Heading(1, "a<b");
  page.Paragraph("see https://example.com");
  page.Note("careful");
  const std::string html = page.Finish("title & more");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>\n", 0), 0u);
  EXPECT_THAT(html, HasSubstr("<title>title &amp; more</title>"));
  EXPECT_THAT(html, HasSubstr("<h1>a&lt;b</h1>\n"));
  EXPECT_THAT(html, HasSubstr("<p>see https&#58;//example.com</p>\n"));
  EXPECT_THAT(html, HasSubstr("<p class=\"note\">careful</p>\n"));
  EXPECT_THAT(html, Not(HasSubstr("://")));
}

TEST(Labels, PolicyThenPolicyNameThenPositionAndRepeatsNumbered) {
  const json results = json::parse(
      R"([{"policy": "fifo"}, {"policy": "fifo"}, {"policy_name": "x"}, {}, {"policy": "fifo"}])");
  std::vector<const json*> pointers;
  for (const json& r : results) pointers.push_back(&r);
  std::vector<std::string> labels;
  for (const Labeled& l : LabelResults(pointers)) labels.push_back(l.label);
  EXPECT_THAT(labels, ElementsAre("fifo", "fifo #2", "x", "result 4", "fifo #3"));
  EXPECT_EQ(LabelResults(pointers)[2].result, &results[2]);
}

}  // namespace
}  // namespace drover::sim::report_internal
