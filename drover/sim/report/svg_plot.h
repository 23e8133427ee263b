#pragma once

// Small SVG plotting helpers for the simulator's reports: line charts (several series, solid or
// dashed, linear or logarithmic x) and the points of empirical CDFs drawn as steps.
//
// The output is an inline <svg> element meant for an HTML page: no xmlns, no scripts, no
// external references, no ids (so any number of charts can share a page). Every element is
// closed and every text is escaped, so the element is well-formed XML. Output depends only on
// the arguments: the same chart renders to the same bytes.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace drover::sim::plot {

struct Point {
  double x = 0;
  double y = 0;
};

struct Series {
  std::string label;  // its legend entry
  // Joined by straight lines in this order. A non-finite coordinate breaks the line there.
  std::vector<Point> points;
  bool dashed = false;  // drawn dashed (a reference curve), unless it repeats a line (below)
  int color = -1;       // index into the palette (taken modulo its size); -1: the series' position
};

struct Chart {
  std::string title;
  std::string x_label;
  std::string y_label;
  // Logarithmic x, from the smallest positive x rounded down to 1, 2 or 5 times a power of ten
  // to the largest rounded up likewise; x <= 0 is drawn at the left edge (a CDF of waits that
  // start at 0 then begins at the left border with its share of zeros). With no positive x at
  // all the axis is linear. The x label gets " (log scale)" exactly when the axis is
  // logarithmic: callers do not write it.
  bool log_x = false;
  // The axis ranges; unset: from the data, widened to round tick values. Points outside an
  // explicit range are clamped to the border.
  std::optional<double> x_min, x_max, y_min, y_max;
  int width = 760;  // the whole element, legend included
  int height = 360;
};

// The chart as one <svg class="chart"> element: a frame, ticks with labels on both axes, both
// axis labels, the title, one <path class="series"> per series (in order, carrying its label in
// a <title>) and a legend with one <g class="legend-entry"> per series. A chart without any
// finite point still draws its axes and says "no data".
// Lines that coincide stay distinguishable without moving them (an offset would misstate the
// data): each series carries up to 6 markers (class "marker") of its own shape (circle, square,
// triangle, diamond, plus, cross by position), spread along its points and staggered by its
// position; a series whose drawn path equals an earlier one's is drawn over it with a dash
// pattern of its own, so the earlier line shows through the gaps; and the legend adds one
// <text class="legend-note"> per group of such series: "fifo = las" when their points are
// equal, "fifo ~ las (same line)" when different points land on the same pixels.
std::string RenderLineChart(const Chart& chart, const std::vector<Series>& series);

// The empirical CDF of `values` (non-finite ones dropped) as the corners of its step function:
// y is the percentage of values <= x, from 0 at the smallest value to 100 at the largest.
// Empty for no values.
std::vector<Point> EmpiricalCdf(std::vector<double> values);

// Round tick values covering [lo, hi] (1, 2, 2.5 or 5 times a power of ten apart), at most about
// `max_ticks` of them.
std::vector<double> LinearTicks(double lo, double hi, int max_ticks);

// Tick values for a logarithmic axis over [lo, hi] (lo > 0): the powers of ten inside, plus 2x
// and 5x when the range spans fewer than three decades.
std::vector<double> LogTicks(double lo, double hi);

// A short tick label: "0", "2.5", "120", "15k", "2.5M".
std::string FormatTick(double value);

// `text` with &, <, >, " and ' replaced by entities.
std::string EscapeXml(std::string_view text);

// The palette color (#rrggbb) of index `i` (taken modulo the palette size).
std::string_view PaletteColor(int i);

}  // namespace drover::sim::plot
