#include "drover/sim/report/svg_plot.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace drover::sim::plot {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

int Occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

MATCHER_P2(IsPoint, x, y, "") { return arg.x == x && arg.y == y; }

TEST(EmpiricalCdf, StepsThroughEachDistinctValue) {
  EXPECT_THAT(EmpiricalCdf({3, 1, 2, 2}),
              ElementsAre(IsPoint(1, 0), IsPoint(1, 25), IsPoint(2, 25), IsPoint(2, 75),
                          IsPoint(3, 75), IsPoint(3, 100)));
}

TEST(EmpiricalCdf, DropsNonFiniteValuesAndIsEmptyForNone) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THAT(EmpiricalCdf({nan, 5}), ElementsAre(IsPoint(5, 0), IsPoint(5, 100)));
  EXPECT_TRUE(EmpiricalCdf({}).empty());
}

TEST(EmpiricalCdf, DenseInputIsSampledAtEvenQuantiles) {
  std::vector<double> values;
  for (int i = 1; i <= 5000; ++i) values.push_back(i);
  const std::vector<Point> cdf = EmpiricalCdf(values);
  ASSERT_EQ(cdf.size(), 1001u);
  EXPECT_EQ(cdf.front().y, 0);
  EXPECT_EQ(cdf.back().x, 5000);
  EXPECT_EQ(cdf.back().y, 100);
  EXPECT_EQ(cdf[500].x, 2500);  // the median
}

TEST(Ticks, LinearTicksAreRoundAndCoverTheRange) {
  EXPECT_THAT(LinearTicks(0, 100, 7), ElementsAre(0, 20, 40, 60, 80, 100));
  EXPECT_THAT(LinearTicks(0, 130, 7), ElementsAre(0, 25, 50, 75, 100, 125));
  EXPECT_TRUE(LinearTicks(5, 5, 7).empty());
}

TEST(Ticks, LogTicksAddTwoAndFiveOverFewDecades) {
  EXPECT_THAT(LogTicks(1, 100), ElementsAre(1, 2, 5, 10, 20, 50, 100));
  EXPECT_THAT(LogTicks(1, 10000), ElementsAre(1, 10, 100, 1000, 10000));
  EXPECT_TRUE(LogTicks(0, 10).empty());
}

TEST(Ticks, LabelsAreShort) {
  EXPECT_EQ(FormatTick(0), "0");
  EXPECT_EQ(FormatTick(0.5), "0.5");
  EXPECT_EQ(FormatTick(2.5), "2.5");
  EXPECT_EQ(FormatTick(120), "120");
  EXPECT_EQ(FormatTick(15000), "15k");
  EXPECT_EQ(FormatTick(2.5e6), "2.5M");
}

TEST(EscapeXml, ReplacesMarkupCharacters) {
  EXPECT_EQ(EscapeXml("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
}

TEST(LineChart, DrawsEverySeriesWithALegendEntryAndBothAxisLabels) {
  Chart chart;
  chart.title = "Allocation";
  chart.x_label = "demand (%)";
  chart.y_label = "allocated (%)";
  const std::string svg = RenderLineChart(chart, {{"fgd", {{0, 0}, {50, 49}, {100, 90}}, false, -1},
                                                  {"published", {{0, 0}, {100, 91}}, true, 0}});
  EXPECT_EQ(svg.rfind("<svg class=\"chart\"", 0), 0u);
  EXPECT_EQ(Occurrences(svg, "class=\"series\""), 2);
  EXPECT_EQ(Occurrences(svg, "class=\"legend-entry\""), 2);
  EXPECT_EQ(Occurrences(svg, "stroke-dasharray"), 2);  // the dashed line and its legend sample
  EXPECT_THAT(svg, HasSubstr(">demand (%)</text>"));
  EXPECT_THAT(svg, HasSubstr(">allocated (%)</text>"));
  EXPECT_THAT(svg, HasSubstr(">Allocation</text>"));
  EXPECT_THAT(svg, HasSubstr(">100</text>"));  // an x tick label
  EXPECT_THAT(svg, Not(HasSubstr("no data")));
  EXPECT_THAT(svg, Not(HasSubstr("xmlns")));
}

TEST(LineChart, EscapesLabelsAndSaysNoDataWhenEmpty) {
  Chart chart;
  chart.title = "a<b";
  const std::string svg = RenderLineChart(chart, {{"x&y", {}, false, -1}});
  EXPECT_THAT(svg, HasSubstr("a&lt;b"));
  EXPECT_THAT(svg, HasSubstr("x&amp;y"));
  EXPECT_THAT(svg, Not(HasSubstr("x&y")));
  EXPECT_THAT(svg, HasSubstr("no data"));
  EXPECT_EQ(Occurrences(svg, "class=\"series\""), 1);
}

TEST(LineChart, LogAxisToleratesZerosAndNonFinitePoints) {
  Chart chart;
  chart.log_x = true;
  const double inf = std::numeric_limits<double>::infinity();
  const std::string svg = RenderLineChart(
      chart, {{"waits", {{0, 0}, {0, 40}, {3, 40}, {inf, 50}, {2000, 100}}, false, -1}});
  EXPECT_THAT(svg, Not(HasSubstr("nan")));
  EXPECT_THAT(svg, Not(HasSubstr("inf")));
  EXPECT_THAT(svg, HasSubstr(">1000</text>"));  // a decade tick
}

// The x pixel of the x tick labelled `label`, or -1.
double TickX(const std::string& svg, const std::string& label) {
  const std::string end = "\" text-anchor=\"middle\">" + label + "</text>";
  const auto at = svg.find(end);
  if (at == std::string::npos) return -1;
  const auto start = svg.rfind("x=\"", at);
  return std::stod(svg.substr(start + 3, at - start - 3));
}

// The "d" of every <path class="series">, in order.
std::vector<std::string> SeriesPaths(const std::string& svg) {
  std::vector<std::string> paths;
  const std::string open = "<path class=\"series\" d=\"";
  for (auto at = svg.find(open); at != std::string::npos; at = svg.find(open, at + 1)) {
    const auto start = at + open.size();
    paths.push_back(svg.substr(start, svg.find('"', start) - start));
  }
  return paths;
}

TEST(LineChart, LogAxisMapsLog10OfXAndSaysSo) {
  Chart chart;
  chart.x_label = "JCT (seconds)";
  chart.log_x = true;
  const std::string svg = RenderLineChart(chart, {{"jct", {{1, 0}, {10, 50}, {1000, 100}}}});
  // Decades are equally far apart: 1 -> 10 -> 100 -> 1000.
  const double x1 = TickX(svg, "1"), x10 = TickX(svg, "10"), x100 = TickX(svg, "100"),
               x1000 = TickX(svg, "1000");
  ASSERT_GT(x1, 0);
  EXPECT_NEAR(x10 - x1, x100 - x10, 0.11);
  EXPECT_NEAR(x100 - x10, x1000 - x100, 0.11);
  EXPECT_GT(x10 - x1, 100);
  // The points sit on their ticks: x = 10 at the tick "10", not a tenth of the way along.
  const std::vector<std::string> paths = SeriesPaths(svg);
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_THAT(paths[0], HasSubstr(fmt::format("L{:.1f} ", x10)));
  EXPECT_THAT(svg, HasSubstr(">JCT (seconds) (log scale)</text>"));
}

TEST(LineChart, LogAxisWithoutPositiveXIsLinearAndDoesNotClaimLog) {
  Chart chart;
  chart.x_label = "queue time (seconds)";
  chart.log_x = true;
  // A replay where nothing waited: every queue time is 0.
  const std::string svg = RenderLineChart(chart, {{"fifo", {{0, 0}, {0, 100}}}});
  EXPECT_THAT(svg, HasSubstr(">queue time (seconds)</text>"));
  EXPECT_THAT(svg, Not(HasSubstr("log scale")));
}

TEST(LineChart, IdenticalSeriesStayDistinguishableWithoutMovingThem) {
  Chart chart;
  const std::vector<Point> same = {{0, 0}, {10, 20}, {20, 50}, {30, 70}, {40, 90}, {50, 100}};
  const std::string svg =
      RenderLineChart(chart, {{"fifo", same}, {"las", same}, {"sjf", {{0, 0}, {50, 60}}}});
  const std::vector<std::string> paths = SeriesPaths(svg);
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_EQ(paths[0], paths[1]);  // drawn where the data are: no offset
  // The repeat is dashed over the first (which shows through its gaps); the others are solid.
  std::vector<std::string> elements;
  for (auto at = svg.find("<path class=\"series\""); at != std::string::npos;
       at = svg.find("<path class=\"series\"", at + 1)) {
    elements.push_back(svg.substr(at, svg.find("</path>", at) - at));
  }
  ASSERT_EQ(elements.size(), 3u);
  EXPECT_THAT(elements[0], Not(HasSubstr("stroke-dasharray")));
  EXPECT_THAT(elements[1], HasSubstr("stroke-dasharray"));
  EXPECT_THAT(elements[2], Not(HasSubstr("stroke-dasharray")));
  // Markers of a shape per series (circles for the first, squares for the second: paths).
  EXPECT_EQ(Occurrences(svg, "<circle class=\"marker\""), 6 + 1);  // + its legend sample
  EXPECT_GE(Occurrences(svg, "<path class=\"marker\""), 6 + 1);
  // The legend says which lines coincide.
  EXPECT_THAT(svg, HasSubstr(">fifo = las</text>"));
  EXPECT_THAT(svg, Not(HasSubstr("sjf</text></text>")));
  EXPECT_EQ(Occurrences(svg, "class=\"legend-note\""), 1);
}

TEST(LineChart, DifferentPointsOnTheSamePixelsAreCalledTheSameLine) {
  Chart chart;
  chart.x_min = 0;
  chart.x_max = 100;
  const std::string svg =
      RenderLineChart(chart, {{"fifo", {{0, 0}, {100, 100}}}, {"las", {{0, 0}, {100.0001, 100}}}});
  EXPECT_THAT(svg, HasSubstr(">fifo ~ las (same line)</text>"));
}

TEST(LineChart, SameInputSameBytes) {
  Chart chart;
  chart.title = "t";
  const std::vector<Series> series = {{"a", {{1, 2}, {3, 4}}, false, -1}};
  EXPECT_EQ(RenderLineChart(chart, series), RenderLineChart(chart, series));
}

TEST(LineChart, LegendGrowsTheChartForManySeries) {
  Chart chart;
  chart.height = 200;
  std::vector<Series> series;
  for (int i = 0; i < 20; ++i) series.push_back({"s" + std::to_string(i), {{0, 1}}, false, -1});
  const std::string svg = RenderLineChart(chart, series);
  EXPECT_EQ(Occurrences(svg, "class=\"legend-entry\""), 20);
  EXPECT_THAT(svg, Not(HasSubstr("height=\"200\"")));
}

}  // namespace
}  // namespace drover::sim::plot
